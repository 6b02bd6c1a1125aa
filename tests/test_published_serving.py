"""Part 6's reality check: published serving measurements beside scalebook.inference
(scalebook.published's serving predictors, book/data/published/serving.json)."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from scalebook import inference, published
from scalebook.published import get_measurement, predict, ratio, reality_check

ROWS = reality_check("inference")


def test_part_6_has_at_least_five_published_serving_measurements_each_inside_its_band():
    assert len(ROWS) >= 5
    assert {r.measurement.system.chip for r in ROWS} >= {"H100", "H200", "TPU v5e"}
    assert {r.measurement.quantity for r in ROWS} == {"serving_throughput", "prefill_time"}
    for row in ROWS:
        assert row.inside, (row.measurement.id, row.ratio, row.band)
        # the solver is a bound on time: a measurement never beats it here
        assert row.ratio <= 1.05, row.measurement.id


def test_a_static_batch_throughput_is_prefill_then_decode_by_hand():
    m = get_measurement("trtllm-llama2-70b-h100x2-b96-2048-128")
    cfg = published.serving_model("LLaMA-2 70B")
    dtypes = dict(weight_dtype="fp8", cache_dtype="fp8", compute_dtype="fp8")
    pf = inference.prefill(cfg, "H100", prompt_len=2048, batch=96, n_chips=2, causal=True, **dtypes)
    step = inference.decode_step(cfg, "H100", batch=96, context_len=2048 + 63, n_chips=2, **dtypes)
    assert predict(m) == pytest.approx(96 * 128 / (pf.time + 128 * step.time) / 2)
    assert ratio(m, predict(m)) == pytest.approx(306 / predict(m))


def test_a_decode_server_is_its_decode_steps_and_ttft_is_the_prefill():
    m = get_measurement("jetstream-llama3-8b-v5e8-bf16")
    step = inference.decode_step(published.serving_model("LLaMA-3 8B"), "TPU v5e", batch=128,
                                 context_len=1024, n_chips=8)
    assert predict(m) == pytest.approx(128 / step.time / 8)
    ttft = get_measurement("trtllm-llama2-70b-h100x4-ttft-2048")
    pf = inference.prefill(published.serving_model("LLaMA-2 70B"), "H100", prompt_len=2048,
                           n_chips=4, causal=True, weight_dtype="fp8", cache_dtype="fp8",
                           compute_dtype="fp8")
    assert predict(ttft) == pytest.approx(pf.time)
    assert ratio(ttft, pf.time) == pytest.approx(pf.time / 0.109)


def test_a_model_twice_as_fast_would_leave_the_bands():
    # the bands are tight enough to notice a model that is off by a factor of about two:
    # halving every predicted time pushes the compute-bound 70B rows below their bands
    outside = [r for r in ROWS
               if not r.band[0] <= r.measured / (2 * r.predicted) <= r.band[1]
               and r.measurement.quantity == "serving_throughput"]
    assert len(outside) >= 3


@pytest.mark.parametrize("change, match", [
    ({"model": "GPT-5"}, "no serving model"),
    ({"batch": 0}, "'batch' must be an integer"),
    ({"schedule": "dynamic"}, "'schedule' must be one of"),
    ({"weight_dtype": None}, "'weight_dtype' must name a dtype"),
])
def test_a_broken_setting_gets_a_clear_error(change, match):
    m = get_measurement("trtllm-llama2-70b-h100x2-b96-2048-128")
    broken = dataclasses.replace(m, setting=MappingProxyType({**m.setting, **change}))
    with pytest.raises(ValueError, match=match):
        predict(broken)

"""Part 7's reality check (book/data/published/moe.json): the MoE predictors read their
settings, price what the source ran, and are computed by hand here."""

from __future__ import annotations

import pytest

from scalebook import moe, published
from scalebook.published import get_measurement, predict, reality_check

H100_FP8 = 1.979e15


def test_part7_has_at_least_five_rows_from_three_sources_all_inside_their_bands():
    rows = reality_check("moe-long-context")
    assert len(rows) >= 5
    assert len({r.measurement.source.key for r in rows}) >= 3
    assert all(r.inside for r in rows), [(r.measurement.id, r.ratio) for r in rows if not r.inside]
    assert all(r.ratio <= 1.05 for r in rows if r.measurement.quantity != "moe_dispatch_bandwidth")


def test_low_latency_dispatch_is_128_tokens_times_8_copies_through_the_nic():
    m = get_measurement("deepep-ll-dispatch-ep64")
    copies = 128 * 8 * 7168 * 1          # fp8, one copy per expert, no deduplication
    by_hand = copies * 63 / 64 / 50e9 + 1e-6
    assert predict(m) == pytest.approx(by_hand, rel=0.01)
    combine = get_measurement("deepep-ll-combine-ep64")     # bf16: twice the bytes
    assert predict(combine) == pytest.approx(2 * copies * 63 / 64 / 50e9 + 1e-6, rel=0.01)


def test_intranode_dispatch_runs_at_the_h800_nvlink_the_system_states():
    m = get_measurement("deepep-normal-dispatch-intranode-ep8")
    assert m.system.label == "H800" and m.system.nvlink_bandwidth == 160e9
    assert predict(m) == pytest.approx(160e9, rel=0.01)
    assert "8x H800" in published.reality_check_markdown("moe-long-context")


def test_serving_rows_price_the_stated_deployment():
    decode = get_measurement("deepseek-day6-decode")
    ds = moe.deepseek_v3()
    step = moe.moe_decode_step(ds, "H100", batch=88 * 144, context_len=4989, n_chips=144,
                               weight_dtype="fp8", compute_dtype="fp8", attention="dp",
                               gpus_per_node=8)
    assert predict(decode) == pytest.approx(8 * 88 / step.time)
    prefill = get_measurement("sglang-large-ep-prefill-h100")
    p = moe.moe_param_count(ds)
    per_token = 2 * p.active_matmul / H100_FP8 + 1000 * moe.attention_flops_per_key(ds) / 9.89e14
    assert predict(prefill) == pytest.approx(8 / per_token)


def test_a_serving_row_without_its_setting_is_refused_clearly():
    m = get_measurement("deepseek-day6-decode")
    broken = published.Measurement(**{**m.__dict__, "setting": {"model": "DeepSeek-V3",
                                                                "phase": "decode"}})
    with pytest.raises(ValueError, match="batch_per_gpu"):
        predict(broken)

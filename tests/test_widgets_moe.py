"""The MoE explorer driven through its controls, as a reader would: its numbers are the
solver's (scalebook.moe), the Jupyter picture and the browser's come from one chart
description, and bad input shows a message and keeps the picture."""

from __future__ import annotations

import json

import pytest

from scalebook import moe
from scalebook.live import render
from scalebook.live.moe import DEFAULTS, moe_chart, moe_state
from scalebook.widgets.moe import moe_explorer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def explorer():
    return moe_explorer(dpi=40)


def _check_against_solver(state) -> None:
    cfg = state.cfg
    chip = state.chip.name
    roof = moe.moe_layer_roofline(cfg, chip, tokens=state.tokens_per_chip * state.ep,
                                  n_chips=state.ep)
    assert state.expert_time == pytest.approx(cfg.base.n_layers * roof.time)
    assert state.memory == pytest.approx(moe.expert_memory_per_chip(cfg, ep=state.ep))
    assert state.critical == pytest.approx(moe.moe_critical_batch(chip, cfg.n_experts, cfg.top_k))
    assert state.dropped == pytest.approx(moe.expected_dropped_fraction(
        round(state.tokens_per_chip), cfg.n_experts, cfg.top_k, state.capacity_factor))
    if state.ep > 1:
        a2a = moe.moe_all_to_all(state.tokens_per_chip, cfg.base.d_model, cfg.top_k,
                                 [state.ep] if chip in ("H100", "H200", "B200", "A100", "V100")
                                 else moe.tpu_ep_axes(chip, state.ep), chip,
                                 capacity_factor=state.capacity_factor)
        assert state.a2a_time == pytest.approx(cfg.base.n_layers * a2a.forward)
    else:
        assert state.a2a_time == 0


def test_default_is_deepseek_v3_on_64_h100s(explorer):
    state = explorer.state
    assert (state.chip.name, state.ep, state.cfg.n_experts, state.cfg.top_k) == ("H100", 64, 256, 8)
    _check_against_solver(state)
    assert explorer.png.startswith(PNG_SIGNATURE)
    assert "9,447 tokens" in explorer.summary.value
    assert "20.4 GB" in explorer.summary.value


@pytest.mark.parametrize("changes", [
    {"ep": 8}, {"top_k": 16}, {"capacity_factor": 2.0}, {"chip": "TPU v5p"},
    {"chip": "TPU v5p", "ep": 16, "tokens_per_chip": 2 ** 12.5}, {"ep": 1, "n_experts": 8},
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_moving_controls_follows_the_solver(explorer, changes):
    for name, value in changes.items():
        explorer.controls[name].value = value
    assert explorer.error == ""
    assert {name: explorer.values()[name] for name in changes} == changes
    _check_against_solver(explorer.state)


def test_more_experts_per_token_halve_the_critical_batch_and_double_the_alltoall(explorer):
    before = explorer.state
    explorer.controls["top_k"].value = 16
    after = explorer.state
    assert after.critical == pytest.approx(before.critical / 2)
    assert after.a2a_time == pytest.approx(2 * before.a2a_time, rel=0.01)


def test_bad_input_shows_a_message_and_keeps_the_picture(explorer):
    png, state = explorer.png, explorer.state
    explorer.controls["n_experts"].value = 32
    explorer.controls["ep"].value = 64
    assert "must divide the experts" in explorer.error
    assert explorer.png == png or explorer.state is not state
    assert "must divide" in explorer.message.value


def test_live_view_is_the_widgets_numbers_as_json(explorer):
    out = render("scalebook.live.moe", dict(DEFAULTS))
    assert out["summary_html"] == explorer.summary.value
    assert out["chart"] == moe_chart(moe_state())
    json.dumps(out, allow_nan=False)
    assert render("scalebook.live.moe", {**DEFAULTS, "top_k": 512}) == {
        "error": "top-k (512) cannot exceed the experts (256)"}
    bundle = explorer._repr_mimebundle_()
    assert "scalebook.live.moe" in bundle["text/html"]


def test_summary_prices_padded_buffers_and_ragged_sends_side_by_side():
    from scalebook.live.moe import moe_state, moe_summary
    state = moe_state()
    assert state.a2a_ragged_time < state.a2a_time
    # bandwidth terms scale by c; the per-hop latency does not
    assert state.a2a_time / state.a2a_ragged_time == pytest.approx(state.capacity_factor, rel=0.02)
    assert "ragged" in moe_summary(state)

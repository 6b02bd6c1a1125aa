"""The serving simulator widget driven through its controls: its numbers are the solver's
(scalebook.service.simulate), the Jupyter picture and the browser's come from one chart
description, and bad input shows a message and keeps the picture."""

from __future__ import annotations

import json

import pytest

from scalebook.live import render
from scalebook.live.service import DEFAULTS, SWEEP_FACTORS, service_chart, service_state
from scalebook.service import SLO, Scheduler, Server, Workload, simulate
from scalebook.widgets.service import service_simulator

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sim():
    return service_simulator()


def _same_as_solver(state, **c) -> None:
    c = {**DEFAULTS, **c}
    r = simulate(Server(model=c["model"], chip=c["chip"], n_chips=c["n_chips"]),
                 Workload(arrival_rate=c["rate"], prompt_len=c["prompt_len"],
                          reply_len=c["reply_len"], distribution=c["distribution"]),
                 Scheduler(policy=c["policy"], max_batch=c["max_batch"],
                           chunk_size=c["chunk_size"], paged=c["kv"] == "paged",
                           spec_k=c["spec_k"], spec_alpha=c["spec_alpha"]),
                 slo=SLO(ttft=c["ttft_slo"], tpot=c["tpot_slo_ms"] / 1e3), duration=60.0)
    assert state.result.requests == r.requests
    assert state.result.goodput == r.goodput


def test_default_is_the_solvers_trace(sim):
    _same_as_solver(sim.state)
    assert sim.png.startswith(PNG_SIGNATURE)
    assert len(sim.state.sweep) == len(SWEEP_FACTORS)
    assert "goodput" in sim.summary.value and "what binds" in sim.summary.value


def test_moving_controls_follows_the_solver(sim):
    sim.controls["rate"].value = 16.0
    sim.controls["chunk_size"].value = 512
    assert sim.error == ""
    _same_as_solver(sim.state, rate=16.0, chunk_size=512)
    sim.controls["policy"].value = "static"
    assert "chunked prefill needs continuous batching" in sim.error
    sim.controls["chunk_size"].value = 0
    assert sim.error == ""
    _same_as_solver(sim.state, rate=16.0, policy="static")
    assert sim.state.result.ttft(50) > 1.0        # a static server makes arrivals wait
    for name in ("rate", "chunk_size", "policy"):
        sim.controls[name].value = DEFAULTS[name]


def test_bad_input_keeps_the_picture(sim):
    png = sim.png
    sim.controls["model"].value = "LLaMA-3 405B"
    sim.controls["n_chips"].value = 1
    assert "not even one request fits" in sim.error
    assert sim.png == png
    sim.controls["n_chips"].value = DEFAULTS["n_chips"]
    sim.controls["model"].value = DEFAULTS["model"]
    assert sim.error == ""


def test_live_view_is_the_widgets_numbers_as_json(sim):
    out = render("scalebook.live.service", dict(DEFAULTS))
    assert out["summary_html"] == sim.summary.value
    assert out["chart"] == service_chart(service_state())
    json.dumps(out, allow_nan=False)
    assert "error" in render("scalebook.live.service", {**DEFAULTS, "chip": "V100"})
    assert "unknown control" in render("scalebook.live.service", {"colour": "red"})["error"]
    assert "scalebook.live.service" in sim._repr_mimebundle_()["text/html"]

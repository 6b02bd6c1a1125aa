"""Disaggregated prefill and decode (scalebook.service.disaggregated): the decode-only server,
the cache hand-off, and goodput against colocated replicas on the same chips."""

from __future__ import annotations

import math

import pytest

from scalebook import service as sv
from scalebook.service.disaggregated import (compare_disaggregation, link_bandwidth,
                                             simulate_disaggregated, simulate_replicas,
                                             transfer_time)
from scalebook.service.reality import OPT_13B
from scalebook.service.simulator import run_trace

SERVER = sv.Server(model="LLaMA-3 70B", chip="H100", n_chips=8)
SMALL = sv.Server(model=OPT_13B, chip="A100", n_chips=1)
DIST_SLO = sv.SLO(ttft=0.4, tpot=0.04)


def lone(prompt=512, reply=64):
    """One request in a long quiet trace (the next arrives long after it is done)."""
    return sv.Workload(arrival_rate=0.01, prompt_len=prompt, reply_len=reply,
                       distribution="fixed")


def test_simulate_is_the_event_loop_unchanged():
    w = sv.Workload(arrival_rate=6.0, prompt_len=1024, reply_len=256)
    a = sv.simulate(SERVER, w, duration=20.0)
    b, done = run_trace(SERVER, w, duration=20.0)
    assert a == b
    assert tuple(r for r in done if r is not None) == a.requests


def test_decode_only_server_skips_the_prefill_pass():
    m = sv.step_model(SMALL)
    arrivals = [(1.0, 512, 64, 0)]
    res, done = run_trace(SMALL, lone(), duration=10.0, model=m, arrivals=arrivals,
                          ready_first=[0.9])
    r = done[0]
    assert r.first == 0.9                        # the first token came from elsewhere
    assert res.steps == 63                       # 63 decode steps, no prefill pass
    steps = sum(m.decode_time(1, 513 + i) for i in range(63))
    assert r.done == pytest.approx(1.0 + steps, rel=1e-9)
    assert r.max_gap >= 0.1                      # the hand-off shows in the gap


def test_transfer_time_is_the_cache_over_each_chips_link():
    m = sv.step_model(SERVER)
    nvlink, nic = link_bandwidth(SERVER, "nvlink"), link_bandwidth(SERVER, "nic")
    assert nvlink == pytest.approx(450e9) and nic == pytest.approx(50e9)
    # LLaMA-3 70B: 327,680 bytes per token, 8 KV heads over 8 chips: no copies
    assert transfer_time(m, m, 1024, nvlink) == pytest.approx(1024 * 327680 / 8 / 450e9)
    assert transfer_time(m, m, 1024, nic) == pytest.approx(9 * transfer_time(m, m, 1024, nvlink))
    # a decode side on 4 chips holds twice the bytes per chip: it sets the time
    m4 = sv.step_model(SERVER.with_(n_chips=4))
    assert transfer_time(m, m4, 1024, nvlink) == pytest.approx(2 * transfer_time(m, m, 1024,
                                                                                 nvlink))


def test_a_lone_request_pays_prefill_then_handoff_then_decode():
    m = sv.step_model(SMALL)
    res = simulate_disaggregated(SMALL, SMALL, lone(), link="nic", slo=DIST_SLO,
                                 duration=200.0)
    r = res.requests[0]
    xfer = transfer_time(m, m, 512, link_bandwidth(SMALL, "nic"))
    assert r.ttft == pytest.approx(m.prefill_time(512), rel=1e-9)
    decode = sum(m.decode_time(1, 513 + i) for i in range(63))
    assert r.done - r.first == pytest.approx(xfer + decode, rel=1e-9)
    assert res.transfer == pytest.approx(xfer)
    assert res.chips == 2


def test_every_request_comes_out_of_the_pools():
    w = sv.Workload(arrival_rate=5.0, prompt_len=512, reply_len=64)
    res = simulate_disaggregated(SMALL, SMALL, w, prefill_servers=2, decode_servers=1,
                                 slo=DIST_SLO, duration=30.0)
    assert len(res.requests) == res.arrived > 100
    assert all(r.first >= r.arrive and r.done >= r.first for r in res.requests)
    assert len(res.servers) == 3
    col = simulate_replicas(SMALL, w, 3, slo=DIST_SLO, duration=30.0)
    assert len(col.requests) == col.arrived == res.arrived      # the same arrivals


def test_disaggregation_removes_the_prefill_stall_from_tpot():
    """Colocated, a prefill pass stalls every decoder (vLLM's prefill-first rule); split, the
    decode server never prefills, so its tail TPOT is lower at the same load per chip."""
    w = sv.Workload(arrival_rate=12.0, prompt_len=512, reply_len=64, distribution="fixed")
    col = simulate_replicas(SMALL, w, 2, slo=DIST_SLO, duration=30.0)
    dis = simulate_disaggregated(SMALL, SMALL, w, prefill_servers=1, decode_servers=1,
                                 slo=DIST_SLO, duration=30.0)
    assert dis.tpot(90) < 0.8 * col.tpot(90)


def test_distserve_setting_gains_and_tighter_slos_gain_more():
    w = sv.Workload(prompt_len=512, reply_len=64, distribution="fixed")
    loose = compare_disaggregation(SMALL, w, prefill_servers=2, decode_servers=1,
                                   slo=DIST_SLO, duration=30.0)
    assert loose.chips == 3
    assert loose.colocated_rate > 0 and 1.1 < loose.gain < 2.1
    tight = compare_disaggregation(SMALL, w, prefill_servers=1, decode_servers=1,
                                   slo=sv.SLO(ttft=0.2, tpot=0.02), duration=30.0)
    at_loose = compare_disaggregation(SMALL, w, prefill_servers=1, decode_servers=1,
                                      slo=DIST_SLO, duration=30.0)
    assert tight.gain > 1.3 > at_loose.gain


def test_bad_input_is_refused():
    w = lone()
    with pytest.raises(ValueError, match="continuous"):
        simulate_disaggregated(SMALL, SMALL, w, decode_scheduler=sv.Scheduler(policy="static"))
    with pytest.raises(ValueError, match="same model"):
        simulate_disaggregated(SMALL, SMALL.with_(model="LLaMA-3 8B"), w)
    with pytest.raises(ValueError, match="link"):
        link_bandwidth(SMALL, "carrier pigeon")
    with pytest.raises(ValueError):
        simulate_disaggregated(SMALL, SMALL, w, prefill_servers=0)
    with pytest.raises(ValueError, match="one time per arrival"):
        run_trace(SMALL, w, arrivals=[(0.0, 10, 10, 0)], ready_first=[])
    assert math.isfinite(link_bandwidth(SMALL, 1e9))

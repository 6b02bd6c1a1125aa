"""The serving simulator and the capacity functions built on it: conservation, agreement with
the one-step formulas at low load, and each mechanism's effect in the direction (and roughly
the size) the chapter claims."""

from __future__ import annotations

import pytest

from scalebook.service import (SLO, Scheduler, Server, Workload, chips_needed, draw_requests,
                               goodput, max_rate, meets_slo, simulate, step_model)

H100 = Server()                                   # LLaMA-3 70B on 8 H100s


def test_deterministic_and_conserving():
    w = Workload(arrival_rate=6.0)
    a = simulate(H100, w, duration=20, seed=3)
    b = simulate(H100, w, duration=20, seed=3)
    assert a.requests == b.requests and a.samples == b.samples
    assert a.arrived == len(draw_requests(w, 20, 3)) and a.unfinished == 0
    assert all(r.first >= r.arrive and r.done >= r.first for r in a.requests)
    assert simulate(H100, w, duration=20, seed=4).requests != a.requests


def test_low_load_agrees_with_one_step_formulas():
    m = step_model(H100)
    w = Workload(arrival_rate=0.05, prompt_len=1000, reply_len=200, distribution="fixed")
    r = simulate(H100, w, duration=200, seed=1)
    assert r.requests
    one = r.requests[0]
    assert one.ttft == pytest.approx(m.prefill_time(1000), rel=1e-9)   # alone: no queue
    # alone, each decode step is B = 1 at contexts 1001 … 1199
    expect = sum(m.decode_time(1, 1001 + j) for j in range(199)) / 199
    assert one.tpot == pytest.approx(expect, rel=1e-9)


def test_littles_law():
    w = Workload(arrival_rate=8.0)
    r = simulate(H100, w, duration=60, seed=0)
    in_system = sum(q.latency for q in r.requests) / r.end          # time-average of L
    mean_w = sum(q.latency for q in r.requests) / len(r.requests)
    assert in_system == pytest.approx(r.throughput * mean_w, rel=1e-9)
    assert r.throughput == pytest.approx(8.0, rel=0.15)


def test_static_batching_queues():
    w = Workload(arrival_rate=8.0)
    cont = simulate(H100, w, duration=60)
    stat = simulate(H100, w, Scheduler(policy="static"), duration=60)
    assert stat.ttft(50) > 5 * cont.ttft(50)
    assert stat.goodput < cont.goodput


def test_chunked_prefill_cuts_tail_tpot():
    w = Workload(arrival_rate=3.0, prompt_len=4096, reply_len=256)
    whole = simulate(H100, w, duration=60)
    chunked = simulate(H100, w, Scheduler(chunk_size=512), duration=60)
    assert chunked.tpot(99) < 0.7 * whole.tpot(99)
    assert chunked.ttft(50) > whole.ttft(50)                          # the price: TTFT


def test_paged_holds_more_than_reserved():
    tight = H100.with_(n_chips=4)                                      # 141 GB of weights on 320 GB
    w = Workload(arrival_rate=20.0, prompt_len=2048, reply_len=1024)
    paged = simulate(tight, w, Scheduler(max_batch=1024), duration=30)
    reserved = simulate(tight, w, Scheduler(max_batch=1024, paged=False), duration=30)
    peak = lambda r: max(s.batch for s in r.samples)                  # noqa: E731
    assert peak(paged) > 1.3 * peak(reserved)
    assert reserved.binding.startswith("HBM")
    assert paged.tokens_per_s > reserved.tokens_per_s


def test_speculation_and_prefix_caching_help_when_they_should():
    w = Workload(arrival_rate=1.0)
    plain = simulate(H100, w, duration=60)
    spec = simulate(H100, w, Scheduler(spec_k=4, spec_alpha=0.8), duration=60)
    assert spec.tpot(50) < 0.6 * plain.tpot(50)
    shared = Workload(arrival_rate=4.0, prompt_len=2500, shared_prefix=2000, prefix_hit_rate=0.9)
    cold = simulate(H100, Workload(arrival_rate=4.0, prompt_len=2500), duration=60)
    warm = simulate(H100, shared, duration=60)
    assert warm.ttft(50) < 0.5 * cold.ttft(50)


def test_bad_input():
    with pytest.raises(ValueError, match="policy"):
        Scheduler(policy="fifo")
    with pytest.raises(ValueError, match="chunked"):
        Scheduler(policy="static", chunk_size=256)
    with pytest.raises(ValueError, match="distribution"):
        Workload(distribution="zipf")
    with pytest.raises(ValueError, match="fits"):
        simulate(Server(model="LLaMA-3 405B", n_chips=4), Workload(), duration=1)
    with pytest.raises(ValueError, match="another server"):
        simulate(H100, Workload(), duration=1, model=step_model(H100.with_(n_chips=4)))


def test_capacity_functions_agree():
    w, slo = Workload(prompt_len=1024, reply_len=256), SLO(ttft=1.0, tpot=0.05)
    rate = max_rate(H100, w, slo=slo, duration=20, tolerance=0.05)
    assert rate > 1.0
    ok = Workload(arrival_rate=rate * 0.8, prompt_len=1024, reply_len=256)
    bad = Workload(arrival_rate=rate * 1.5, prompt_len=1024, reply_len=256)
    assert meets_slo(H100, ok, slo=slo, duration=20)
    assert not meets_slo(H100, bad, slo=slo, duration=20)
    assert goodput(H100, ok, slo=slo, duration=20) == pytest.approx(
        simulate(H100, ok, slo=slo, duration=20).goodput)
    tight = max_rate(H100, w, slo=SLO(ttft=1.0, tpot=0.02), duration=20, tolerance=0.05)
    assert tight < rate
    plans = chips_needed(H100, w, 3 * rate, slo=slo, slice_sizes=(4, 8), duration=20)
    assert [p.cost_per_hour for p in plans] == sorted(p.cost_per_hour for p in plans)
    assert all(p.replicas * p.rate_per_replica >= 3 * rate for p in plans)

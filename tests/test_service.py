"""The serving-systems solver (scalebook.service), one-step formulas: each against the solver
it wraps, a brute-force count or a hand calculation."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from scalebook import inference
from scalebook.service import (SCHEMES, SLO, RequestResult, Server, batch_that_fits,
                               best_draft_length, blocks_needed, cached_prefill_time,
                               chunked_prefill, compare_batching, expected_max_uniform,
                               expected_tokens, goodput_of, kv_layout, largest_chunk,
                               little_queue, md1_wait, mean_context_continuous, mixed_step_time,
                               mm1_wait, percentile, prefill_queue_ttft, prefix_caching,
                               quantized_serving, shared_sampling, speculative_decoding,
                               speedup_memory_bound, static_slot_use, step_model, attainment)
from scalebook.service.steps import COMM_GRID
from scalebook.training import PRESETS

H100 = Server()                                   # LLaMA-3 70B on 8 H100s, bf16
V5E = Server(model="LLaMA-3 8B", chip="TPU v5e", n_chips=4)
ONE = Server(model="LLaMA-3 8B", n_chips=1)


@pytest.fixture(scope="module")
def m():
    return step_model(H100)


# --------------------------------------------------------------------------- steps
@pytest.mark.parametrize("server", [H100, V5E, ONE], ids=["h100x8", "v5ex4", "h100x1"])
@pytest.mark.parametrize("batch,context", [(1, 1), (16, 2048), (64, 4096), (256, 512)])
def test_decode_time_is_the_solvers(server, batch, context):
    model = step_model(server)
    ref = inference.decode_step(server.config, server.chip, batch=batch, context_len=context,
                                n_chips=server.n_chips)
    assert model.decode_time(batch, batch * context) == pytest.approx(ref.time, rel=1e-12)


@pytest.mark.parametrize("server", [H100, V5E, ONE], ids=["h100x8", "v5ex4", "h100x1"])
@pytest.mark.parametrize("prompt,batch", [(512, 1), (2048, 2), (1024, 4)])
def test_prefill_time_is_the_solvers(server, prompt, batch):
    model = step_model(server)
    ref = inference.prefill(server.config, server.chip, prompt_len=prompt, batch=batch,
                            n_chips=server.n_chips)
    assert model.prefill_time(prompt, batch) == pytest.approx(ref.time, rel=1e-12)


def test_comm_exact_on_grid_and_close_between(m):
    cfg = H100.config
    for t in COMM_GRID[:14]:
        assert m.comm_time(t) == inference.tp_comm_time(cfg, "H100", n_chips=8, tokens=t)
    for t in (3, 100, 777, 3000):
        exact = inference.tp_comm_time(cfg, "H100", n_chips=8, tokens=t)
        assert m.comm_time(t) == pytest.approx(exact, rel=0.15)
    assert m.comm_time(0) == 0.0


def test_capacity_is_max_batch_at_one_token():
    for server in (H100, V5E):
        model = step_model(server)
        assert model.kv_capacity_tokens == inference.max_batch(
            server.config, server.chip, context_len=1, n_chips=server.n_chips,
            reserve=server.reserve)


def test_server_checks():
    with pytest.raises(ValueError, match="unknown model"):
        step_model(Server(model="GPT-9"))
    with pytest.raises(ValueError, match="reserve"):
        step_model(Server(reserve=1.0))
    with pytest.raises(ValueError, match="Server"):
        step_model("H100")  # type: ignore[arg-type]
    # step models are kept per server (a pure function of a frozen Server); a field that cannot
    # be a key still gets the checks' message, not a TypeError from the cache
    with pytest.raises(ValueError, match="n_chips"):
        step_model(Server(n_chips=[8]))  # type: ignore[arg-type]
    assert step_model(Server(n_chips=4)) == step_model(Server(n_chips=4)) != step_model(Server(n_chips=8))
    assert Server().with_(n_chips=4).n_chips == 4
    assert Server(model=PRESETS["LLaMA-3 8B"]).config.name == PRESETS["LLaMA-3 8B"].name


# --------------------------------------------------------------------------- metrics
def test_request_result_metrics():
    r = RequestResult(arrive=1.0, first=1.5, done=3.5, prompt_len=100, reply_len=101)
    assert (r.ttft, r.tpot, r.latency) == (0.5, pytest.approx(0.02), 2.5)
    assert r.meets(SLO(ttft=0.5, tpot=0.02)) and not r.meets(SLO(ttft=0.4, tpot=0.02))
    assert RequestResult(0, 1, 1, 5, 1).tpot == 0.0
    assert goodput_of([r, r], SLO(ttft=1, tpot=1), 4.0) == 0.5
    assert attainment([r], SLO(ttft=0.1, tpot=1)) == 0.0 and attainment([], SLO()) == 0.0
    with pytest.raises(ValueError):
        SLO(ttft=0)


def test_percentile_matches_statistics():
    xs = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for q in (0, 25, 50, 90, 100):
        ref = statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if 0 < q < 100 else (
            min(xs) if q == 0 else max(xs))
        assert percentile(xs, q) == pytest.approx(ref)
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(xs, 101)


def test_queues():
    assert little_queue(5.0, 20.0) == 100.0
    assert md1_wait(9.0, 0.1) == pytest.approx(0.9 * 0.1 / (2 * 0.1))
    assert mm1_wait(9.0, 0.1) == pytest.approx(2 * md1_wait(9.0, 0.1))
    assert prefill_queue_ttft(9.0, 0.1) == pytest.approx(0.55)
    with pytest.raises(ValueError, match="unstable"):
        md1_wait(10.0, 0.1)


# --------------------------------------------------------------------------- batching
def test_expected_max_uniform_brute_force():
    for b, lo, hi in ((1, 1, 6), (2, 1, 6), (3, 2, 5)):
        draws = list(itertools.product(range(lo, hi + 1), repeat=b))
        ref = sum(max(d) for d in draws) / len(draws)
        assert expected_max_uniform(b, lo, hi) == pytest.approx(ref)
    assert static_slot_use(1, 1, 100) == pytest.approx(1.0)
    assert static_slot_use(32, 1, 2048) == pytest.approx(1024.5 / expected_max_uniform(32, 1, 2048))
    assert mean_context_continuous(2048, 2048) == 3071.5
    with pytest.raises(ValueError):
        expected_max_uniform(4, 10, 5)


def test_continuous_beats_static(m):
    c = compare_batching(m, prompt_len=1024, reply_min=1, reply_max=2048, batch_cap=512)
    assert c.continuous_batch > c.static_batch            # memory: mean vs max length
    assert c.gain > 1.5
    fixed = compare_batching(m, prompt_len=1024, reply_min=512, reply_max=512, batch_cap=64)
    assert fixed.slot_use == pytest.approx(1.0)            # equal replies: no padding waste
    assert fixed.gain < c.gain


# --------------------------------------------------------------------------- paged
def test_paged_layout():
    assert [blocks_needed(n, 16) for n in (0, 1, 16, 17)] == [0, 1, 1, 2]
    lay = kv_layout([1, 16, 17, 100], block_size=16, max_len=128)
    assert (lay.used, lay.paged, lay.reserved) == (134, 16 + 16 + 32 + 112, 512)
    assert lay.paged - lay.used <= 4 * 15                  # at most b − 1 per sequence
    assert lay.reserved_waste > lay.paged_waste
    with pytest.raises(ValueError, match="longer"):
        kv_layout([200], max_len=128)


def test_batch_that_fits_and_sharing():
    fit = batch_that_fits(1_000_000, mean_len=3072, max_len=4096, block_size=16)
    assert fit.reserved == 1_000_000 // 4096 and fit.paged == int(1_000_000 // 3079.5)
    s = shared_sampling(prompt_len=1000, reply_len=200, n_samples=4, block_size=16)
    assert s.separate == 4 * 75 and s.shared == 62 + 4 * 13   # 1000 = 62·16 + 8; ceil((8 + 200)/16) = 13
    assert shared_sampling(prompt_len=32, reply_len=1, n_samples=1).shared == 3


# --------------------------------------------------------------------------- prefix
def test_prefix_caching(m):
    p = prefix_caching(m, prompt_len=2500, shared_len=2000, hit_rate=0.9)
    assert p.ttft_hit < p.ttft_cold and p.ttft_mean == pytest.approx(0.9 * p.ttft_hit + 0.1 * p.ttft_cold)
    assert p.memory_held == 2000 * m.kv_bytes_per_token
    a, c = m.t_token_compute, m.t_pair_compute
    assert p.compute_saved == pytest.approx(0.9 * (2000 * a + 2000 * 2500 * c) / (2500 * a + 2500 ** 2 * c))
    none = prefix_caching(m, prompt_len=2500, shared_len=2000, hit_rate=0.0)
    assert none.compute_saved == 0 and none.ttft_mean == none.ttft_cold
    assert cached_prefill_time(m, 100, 0) == m.prefill_time(100)
    with pytest.raises(ValueError):
        prefix_caching(m, prompt_len=100, shared_len=100, hit_rate=0.5)


# --------------------------------------------------------------------------- chunked
def test_mixed_step_reduces_to_decode_and_prefill(m):
    assert mixed_step_time(m, decode_batch=32, context_len=1000, chunk=0) == m.decode_time(32, 32000)
    assert mixed_step_time(m, decode_batch=0, context_len=0, chunk=512) == m.prefill_time(512)
    with pytest.raises(ValueError):
        mixed_step_time(m, decode_batch=0, context_len=0, chunk=0)


def test_chunked_prefill_trade(m):
    small = chunked_prefill(m, prompt_len=4096, chunk=256, decode_batch=64, context_len=2048)
    big = chunked_prefill(m, prompt_len=4096, chunk=2048, decode_batch=64, context_len=2048)
    assert small.tpot_chunked < big.tpot_chunked < small.tpot_stall
    assert small.ttft_chunked > big.ttft_chunked >= big.ttft_whole
    assert small.n_chunks == 16


def test_largest_chunk_is_the_boundary(m):
    slo = 0.03
    c = largest_chunk(m, decode_batch=64, context_len=2048, tpot_slo=slo, prompt_len=4096)

    def step(x):
        return mixed_step_time(m, decode_batch=64, context_len=2048, chunk=x, chunk_offset=4096 - x)
    assert step(c) <= slo < step(c + 1)
    assert largest_chunk(m, decode_batch=64, context_len=2048, tpot_slo=1e-4) == 0


# --------------------------------------------------------------------------- speculative
def test_expected_tokens_is_the_geometric_sum():
    for a, k in ((0.5, 3), (0.8, 5), (0.0, 4)):
        assert expected_tokens(a, k) == pytest.approx(sum(a ** i for i in range(k + 1)))
    assert expected_tokens(1.0, 4) == 5 and expected_tokens(0.7, 0) == 1
    assert speedup_memory_bound(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    with pytest.raises(ValueError):
        expected_tokens(1.5, 2)


def test_speculation_pays_at_small_batch_not_large():
    draft = H100.with_(model="LLaMA-3 8B")
    small = speculative_decoding(H100, draft=draft, batch=1, context_len=2048, alpha=0.8, k=4)
    large = speculative_decoding(H100, draft=draft, batch=512, context_len=2048, alpha=0.8, k=4)
    assert small.speedup > 2.0 and large.speedup < 1.0
    assert small.tpot == pytest.approx(small.round_time / small.tokens_per_round)
    plain = speculative_decoding(H100, draft=None, batch=8, context_len=2048, alpha=0.8, k=0)
    assert plain.speedup == 1.0
    best = best_draft_length(H100, draft=draft, batch=512, context_len=2048, alpha=0.8)
    assert best.k == 0 or best.speedup >= 1.0
    b1 = best_draft_length(H100, draft=draft, batch=1, context_len=2048, alpha=0.8)
    assert b1.k >= 3 and b1.speedup >= small.speedup


# --------------------------------------------------------------------------- quantization
def test_quantization_moves_the_right_roofline():
    q = {s: quantized_serving(H100, s, batch=64, context_len=4096, prompt_len=2048) for s in SCHEMES}
    bf, w4, w8 = q["bf16"], q["int4 weights (AWQ/GPTQ)"], q["W8A8 int8"]
    assert w4.decode_step < bf.decode_step and w4.prefill == bf.prefill   # memory only
    assert w8.prefill < bf.prefill                                        # int8 matmuls
    assert w4.weight_bytes == bf.weight_bytes / 4
    kv = q["fp8 + fp8 KV cache"]
    assert kv.batch_fits > q["fp8 weights+activations"].batch_fits * 1.9
    assert w4.cost_per_million < bf.cost_per_million
    with pytest.raises(ValueError, match="unknown scheme"):
        quantized_serving(H100, "int2", batch=1, context_len=10, prompt_len=10)

"""The tiny KV-cache decoder: the cache gives the same logits and tokens as recomputing without
one, it is as big as the solver says, a step does the FLOPs and reads the bytes the solver
counts, and the measuring helpers give the solver a chip it can price."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scalebook import decoding as dec
from scalebook import inference, transformer

SMALL = dec.DecoderConfig(vocab=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128)

# compiled once per shape: op-by-op dispatch would make these tests slow
forward = jax.jit(dec.forward, static_argnums=2)
prefill = jax.jit(dec.prefill, static_argnums=2, static_argnames="max_len")
decode_step = jax.jit(dec.decode_step, static_argnums=4)


@pytest.fixture(scope="module")
def small_params():
    return dec.init_params(SMALL)


@pytest.fixture(scope="module")
def tokens():
    return jax.random.randint(jax.random.key(1), (3, 12), 0, SMALL.vocab)


# --------------------------------------------------------------------------- shape and counts


@pytest.mark.parametrize("cfg", [SMALL, pytest.param(dec.DecoderConfig(), marks=pytest.mark.slow)])
def test_matmul_weights_are_the_solvers(cfg):
    params = dec.init_params(cfg)
    assert dec.matmul_weight_count(params) == transformer.param_count(cfg.shape()).matmul
    # the embedding table is the only array left out
    total = sum(leaf.size for leaf in jax.tree.leaves(params))
    assert total - dec.matmul_weight_count(params) == cfg.vocab * cfg.d_model


def test_cache_bytes_are_the_solvers():
    cache = dec.empty_cache(SMALL, batch=5, max_len=7)
    nbytes = sum(leaf.nbytes for leaf in jax.tree.leaves(cache))
    assert nbytes == 5 * 7 * inference.kv_bytes_per_token(SMALL.shape(), "fp32")
    bf16 = dec.empty_cache(SMALL, batch=5, max_len=7, dtype=jnp.bfloat16)
    assert sum(leaf.nbytes for leaf in jax.tree.leaves(bf16)) == nbytes // 2
    # grouped-query attention: K heads in the cache, not H
    assert cache[0]["k"].shape == (5, SMALL.n_kv_heads, 7, SMALL.d_head)


def test_init_is_deterministic_in_the_key():
    a = dec.init_params(SMALL, key=jax.random.key(3))
    b = dec.init_params(SMALL, key=jax.random.key(3))
    c = dec.init_params(SMALL, key=jax.random.key(4))
    assert all(bool(jnp.array_equal(x, y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
    assert not bool(jnp.array_equal(a["embed"], c["embed"]))


# --------------------------------------------------------------------------- the cache is exact


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_prefill_then_decode_matches_the_full_forward(small_params, tokens):
    full = forward(small_params, tokens, SMALL)
    logits, cache = prefill(small_params, tokens[:, :7], SMALL, max_len=12)
    np.testing.assert_allclose(logits, full[:, :7], atol=1e-5)
    for t in range(7, 12):
        step, new = decode_step(small_params, cache, tokens[:, t], t, SMALL)
        np.testing.assert_allclose(step, full[:, t], atol=1e-5, err_msg=f"position {t}")
        cache = dec.write_cache(cache, new, t)


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_decode_ignores_what_lies_past_the_position(small_params, tokens):
    _, cache = prefill(small_params, tokens[:, :5], SMALL, max_len=12)
    garbage = tuple({name: c[name].at[:, :, 5:].set(1e3) for name in ("k", "v")} for c in cache)
    a, _ = decode_step(small_params, cache, tokens[:, 5], 5, SMALL)
    b, _ = decode_step(small_params, garbage, tokens[:, 5], 5, SMALL)
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_the_position_matters(small_params, tokens):
    # rotary embeddings: the same cache and token at another position give other logits, so a
    # decoder that lost track of positions would fail the test above
    _, cache = prefill(small_params, tokens[:, :5], SMALL, max_len=12)
    a, _ = decode_step(small_params, cache, tokens[:, 5], 5, SMALL)
    cache6 = tuple({name: c[name].at[:, :, 5].set(c[name][:, :, 4]) for name in ("k", "v")}
                   for c in cache)
    b, _ = decode_step(small_params, cache6, tokens[:, 5], 6, SMALL)
    assert float(jnp.max(jnp.abs(a - b))) > 1e-3


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_generate_equals_greedy_recomputation(small_params, tokens):
    prompt = tokens[:, :4]
    out = dec.generate(small_params, prompt, 6, SMALL)
    assert out.shape == (3, 6) and out.dtype == jnp.int32
    seq = prompt
    for _ in range(6):
        nxt = jnp.argmax(forward(small_params, seq, SMALL)[:, -1], axis=-1)
        seq = jnp.concatenate([seq, nxt[:, None].astype(seq.dtype)], axis=1)
    np.testing.assert_array_equal(out, seq[:, 4:])


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_multi_head_attention_is_the_k_equals_h_case():
    mha = dec.DecoderConfig(vocab=32, d_model=32, n_layers=1, n_heads=4, n_kv_heads=4, d_ff=64)
    params = dec.init_params(mha)
    toks = jnp.arange(16, dtype=jnp.int32).reshape(2, 8) % 32
    full = forward(params, toks, mha)
    _, cache = prefill(params, toks[:, :7], mha, max_len=8)
    step, _ = decode_step(params, cache, toks[:, 7], 7, mha)
    np.testing.assert_allclose(step, full[:, 7], atol=1e-5)


# --------------------------------------------------------------------------- what a step costs


def _analysis(params, cfg, batch, context_len):
    cache = dec.random_cache(cfg, batch, context_len)
    toks = jnp.zeros((batch,), jnp.int32)
    compiled = jax.jit(dec.decode_step, static_argnums=4).lower(
        params, cache, toks, context_len, cfg).compile()
    analysis = compiled.cost_analysis()
    return analysis[0] if isinstance(analysis, list) else analysis


@pytest.mark.slow  # JAX compiles and runs a decoder
@pytest.mark.parametrize("batch, context_len", [(1, 64), (8, 256)])
def test_xla_counts_the_solvers_flops_and_bytes(batch, context_len):
    cfg = dec.DecoderConfig(vocab=512, d_model=256, n_layers=2, n_heads=8, n_kv_heads=2,
                            d_ff=768)
    params = dec.init_params(cfg)
    analysis = _analysis(params, cfg, batch, context_len)
    chip = dec.measured_chip(1e11, 1e10)
    step = inference.decode_step(cfg.shape(), chip, batch=batch, context_len=context_len,
                                 weight_dtype="fp32", cache_dtype="fp32", compute_dtype="fp32")
    assert analysis["flops"] == pytest.approx(step.flops, rel=0.02)
    # every weight and every cached key and value read once; the rest is activations and
    # attention scores, which the solver leaves out (a few tens of percent at most here)
    ratio = analysis["bytes accessed"] / (step.weight_bytes + step.kv_bytes)
    assert 0.98 < ratio < 1.4, ratio


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_a_step_reads_the_whole_cache_whatever_the_position():
    # the cache's length sets the bytes: twice the context, about twice the cache bytes
    cfg = dec.DecoderConfig(vocab=64, d_model=256, n_layers=1, n_heads=4, n_kv_heads=4, d_ff=64)
    params = dec.init_params(cfg)
    short, long = _analysis(params, cfg, 4, 512), _analysis(params, cfg, 4, 1024)
    cache_short = 4 * 512 * inference.kv_bytes_per_token(cfg.shape(), "fp32")
    extra = long["bytes accessed"] - short["bytes accessed"]
    assert extra == pytest.approx(cache_short, rel=0.15)
    assert extra > 0.9 * cache_short


# --------------------------------------------------------------------------- measuring


def test_measured_chip_prices_a_step_with_the_measured_figures():
    chip = dec.measured_chip(2e11, 4e10, dtype="fp32")
    shape = SMALL.shape()
    step = inference.decode_step(shape, chip, batch=3, context_len=10, weight_dtype="fp32",
                                 cache_dtype="fp32", compute_dtype="fp32")
    assert step.t_memory == pytest.approx((step.weight_bytes + step.kv_bytes) / 4e10)
    assert step.t_compute == pytest.approx(step.flops / 2e11)
    assert chip.flops("fp32") == 2e11 and chip.dtypes == ("fp32",)
    with pytest.raises(ValueError, match="NVLink node"):
        inference.tp_comm_time(shape, chip, n_chips=2, tokens=1)
    b_star = inference.decode_critical_batch(shape, chip, weight_dtype="fp32",
                                             cache_dtype="fp32", compute_dtype="fp32")
    assert b_star == pytest.approx(2e11 * 4 / (2 * 4e10))


def test_measured_chip_refuses_nonsense():
    with pytest.raises(ValueError, match="bandwidth"):
        dec.measured_chip(1e11, 0.0)
    with pytest.raises(ValueError, match="peak_flops"):
        dec.measured_chip(-1.0, 1e10)
    with pytest.raises(ValueError, match="unknown dtype"):
        dec.measured_chip(1e11, 1e10, dtype="fp13")


@pytest.mark.slow  # JAX compiles and runs a decoder
def test_measurements_are_positive_and_finite():
    peak = dec.measure_peak_flops(128, repeats=2)
    bandwidth = dec.measure_bandwidth(1e6, repeats=2)
    t = dec.time_decode_step(dec.init_params(SMALL), SMALL, batch=2, context_len=8, repeats=2)
    for value in (peak, bandwidth, t):
        assert math.isfinite(value) and value > 0
    with pytest.raises(ValueError, match="nbytes"):
        dec.measure_bandwidth(0)
    with pytest.raises(ValueError, match="batch"):
        dec.time_decode_step(dec.init_params(SMALL), SMALL, batch=0, context_len=8)


def test_knee_fit_claims_a_knee_only_when_the_data_bend():
    batches = [1, 2, 4, 8, 16, 32, 64]
    # flat to 8, then proportional: the knee model fits exactly, a power law does not
    roofline = [max(1.0, b / 8) for b in batches]
    fit = dec.knee_fit(batches, roofline)
    assert fit.knee == pytest.approx(8.0, rel=0.01) and fit.rms == pytest.approx(0.0, abs=1e-3)
    assert fit.power_law_rms > 0.2 and fit.supported
    # a smooth power law t ∝ B^0.47 (what the CPU measured): no bend to claim
    smooth = [b ** 0.47 for b in batches]
    fit = dec.knee_fit(batches, smooth)
    assert fit.slope == pytest.approx(0.47) and fit.power_law_rms == pytest.approx(0.0, abs=1e-9)
    assert not fit.supported
    # flat throughout: no knee inside the sweep
    assert not dec.knee_fit(batches, [2.0] * 7).supported


def test_knee_of_a_roofline_shaped_curve():
    batches = [1, 2, 4, 8, 16, 32, 64]
    times = [max(10.0, 0.5 * b) for b in batches]          # flat at 10, then 0.5 per sequence
    assert dec.knee_batch(batches, times) == pytest.approx(20.0, rel=0.01)
    # noise of a few percent moves it little
    noisy = [t * f for t, f in zip(times, (1.03, 0.97, 1.02, 0.98, 1.04, 0.96, 1.01))]
    assert dec.knee_batch(batches, noisy) == pytest.approx(20.0, rel=0.2)
    # proportional from the start: the knee is the first batch; flat throughout: no knee
    assert dec.knee_batch(batches, [float(b) for b in batches]) == pytest.approx(1.0)
    assert math.isinf(dec.knee_batch([1, 2, 3], [3.0, 3.0, 3.0]))
    with pytest.raises(ValueError, match="at least three"):
        dec.knee_batch([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="increasing"):
        dec.knee_batch([1, 4, 2], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("changes, match", [
    (dict(d_model=65), "divisible by n_heads"),
    (dict(n_kv_heads=3), "must divide n_heads"),
    (dict(d_model=12, n_heads=4, n_kv_heads=4), "even"),
    (dict(vocab=0), "vocab"),
    (dict(rope_base=-1.0), "rope_base"),
])
def test_config_refuses_bad_shapes(changes, match):
    with pytest.raises(ValueError, match=match):
        dec.DecoderConfig(**{**dict(vocab=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                                    d_ff=128), **changes})


def test_prefill_refuses_a_short_cache(small_params, tokens):
    with pytest.raises(ValueError, match="max_len"):
        dec.prefill(small_params, tokens, SMALL, max_len=4)
    with pytest.raises(ValueError, match="DecoderConfig"):
        dec.forward(small_params, tokens, transformer.llama3_8b())

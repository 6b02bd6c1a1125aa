"""Part 8's JAX mechanisms, checked exactly on tiny shapes: paged attention equals dense
attention, speculative decoding equals the target's greedy output, and continuous batching
serves every request as if alone."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scalebook import decoding, service_jax

CFG = decoding.DecoderConfig(vocab=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=64)


@pytest.fixture(scope="module")
def params():
    return decoding.init_params(CFG)


def test_paged_attention_is_dense_attention():
    rng = np.random.default_rng(1)
    lengths = [3, 16, 17, 40]
    keys = [rng.standard_normal((n, 2, 8)).astype(np.float32) for n in lengths]
    values = [rng.standard_normal((n, 2, 8)).astype(np.float32) for n in lengths]
    cache = service_jax.paged_cache(keys, values, block_size=8)
    assert cache.tables.shape == (4, 5) and int(cache.k_pool.shape[0]) == 1 + 2 + 3 + 5
    assert len(set(np.asarray(cache.tables[3]).tolist())) == 5      # distinct blocks
    q = jnp.asarray(rng.standard_normal((4, 4, 8)).astype(np.float32))
    err = jnp.max(jnp.abs(service_jax.paged_attention(q, cache)
                          - service_jax.dense_attention(q, keys, values)))
    assert float(err) < 1e-5
    # a wrong table gives a different answer: the check can fail
    swapped = service_jax.PagedCache(cache.k_pool, cache.v_pool, cache.tables[::-1],
                                     cache.lengths, cache.block_size)
    assert float(jnp.max(jnp.abs(service_jax.paged_attention(q, swapped)
                                 - service_jax.dense_attention(q, keys, values)))) > 1e-3


def test_speculative_output_is_greedy(params):
    draft, draft_cfg = service_jax.layer_draft(params, CFG, 1)
    prompt = np.arange(1, 6, dtype=np.int32)
    run = service_jax.speculative_generate(params, CFG, draft, draft_cfg, prompt, 10, k=3)
    greedy = np.asarray(decoding.generate(params, jnp.asarray(prompt[None]), 10, CFG))[0]
    assert (run.tokens == greedy).all()
    assert sum(a + 1 for a in run.accepted) >= 10 and run.rounds <= 10
    assert 0.0 <= run.alpha <= 1.0 and 1.0 <= run.tokens_per_round <= 4.0
    with pytest.raises(ValueError):
        service_jax.layer_draft(params, CFG, 3)


def test_continuous_batching_serves_each_as_if_alone(params):
    mesh = jax.make_mesh((2,), ("batch",), devices=jax.devices()[:2])
    rng = np.random.default_rng(2)
    prompts = [rng.integers(1, CFG.vocab, size=n).astype(np.int32) for n in (3, 2, 4)]
    lens = [3, 1, 2]
    replies, log = service_jax.continuous_batching(params, CFG, prompts, lens, mesh=mesh)
    assert [s.slots for s in log][:2] == [(0, 1), (0, 2)]     # 2 takes 1's slot after step 0
    assert log[0].left == (1,) and log[1].joined == (2,)
    for p, n, r in zip(prompts, lens, replies):
        alone = np.asarray(decoding.generate(params, jnp.asarray(p[None]), n, CFG))[0]
        assert (alone == r).all()

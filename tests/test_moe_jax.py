"""scalebook.moe_jax on 8 simulated devices: the expert-parallel layer equals the dense
reference on every kept choice and drops exactly what the router's loads and the capacity say;
ring attention equals full causal attention; and the compiled HLO's AllToAll and
CollectivePermute bytes are the solver's (scalebook.moe, scalebook.long_context)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from scalebook import hlo, long_context, moe, moe_jax

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mesh():
    return moe_jax.line_mesh(8)


@pytest.mark.parametrize("top_k, cf", [(2, 1.25), (1, 1.0), (4, 2.0)])
def test_moe_layer_matches_reference_up_to_counted_drops(mesh, top_k, cf):
    T, D, F, E = 256, 16, 32, 16
    params = moe_jax.init_moe(jax.random.key(0), d_model=D, d_ff=F, n_experts=E)
    x = jax.random.normal(jax.random.key(1), (T, D))
    out = moe_jax.moe_layer(x, params, top_k=top_k, capacity_factor=cf, mesh=mesh)
    assert out.capacity == moe.expert_capacity(T // 8, E, top_k, cf)
    kept_ref = moe_jax.moe_reference(x, params, top_k, keep=out.kept)
    np.testing.assert_allclose(out.y, kept_ref, atol=1e-5)
    loads = moe_jax.expert_loads(x, params.w_router, top_k, 8)
    predicted = sum(moe.dropped_fraction(row, out.capacity) * row.sum() for row in loads)
    assert int((~out.kept).sum()) == round(predicted)
    clean = np.asarray(out.kept).all(axis=1)
    full = moe_jax.moe_reference(x, params, top_k)
    np.testing.assert_allclose(np.asarray(out.y)[clean], np.asarray(full)[clean], atol=1e-5)


def test_moe_layer_alltoall_bytes_are_the_solvers(mesh):
    T, D, F, E, k, cf = 512, 32, 64, 16, 2, 1.25
    params = moe_jax.init_moe(jax.random.key(0), d_model=D, d_ff=F, n_experts=E)
    x = jax.device_put(jax.random.normal(jax.random.key(1), (T, D)), NamedSharding(mesh, P("x")))

    def layer(x, wr, w1, w2):
        return moe_jax.moe_layer(x, moe_jax.MoEParams(wr, w1, w2), top_k=k,
                                 capacity_factor=cf, mesh=mesh).y

    found = hlo.compiled_collectives(layer, x, params.w_router, params.w1, params.w2, mesh=mesh)
    a2a = [c for c in found if c.kind == "AllToAll"]
    solver = moe.moe_all_to_all(T // 8, D, k, 8, "TPU v5p", dtype="fp32", capacity_factor=cf)
    assert len(a2a) == 2 and all(c.axes == ("x",) for c in a2a)
    assert all(c.nbytes == solver.nbytes / 8 for c in a2a)


@pytest.mark.parametrize("zigzag", [False, True])
def test_ring_attention_equals_causal_attention_and_sends_the_solvers_bytes(mesh, zigzag):
    T, H, K, d = 128, 4, 2, 8
    keys = jax.random.split(jax.random.key(3), 3)
    q = jax.random.normal(keys[0], (T, H, d))
    k = jax.random.normal(keys[1], (T, K, d))
    v = jax.random.normal(keys[2], (T, K, d))
    full = moe_jax.causal_attention(q, k, v)
    order = moe_jax.zigzag_order(T, 8) if zigzag else np.arange(T)
    out = moe_jax.ring_attention(q[order], k[order], v[order], mesh=mesh, zigzag=zigzag)
    np.testing.assert_allclose(out, full[order], atol=1e-5)
    seq = NamedSharding(mesh, P("x"))
    found = hlo.compiled_collectives(
        lambda q, k, v: moe_jax.ring_attention(q, k, v, mesh=mesh, zigzag=zigzag),
        *(jax.device_put(a, seq) for a in (q, k, v)), mesh=mesh)
    solver = long_context.ring_attention(T, 8, long_context.AttentionShape(
        n_heads=H, n_kv_heads=K, d_head=d), "TPU v5p", dtype="fp32", compute_dtype="bf16")
    assert [c.kind for c in found] == ["CollectivePermute"] * solver.steps
    assert all(c.nbytes == solver.kv_block_bytes for c in found)


def test_bad_shapes_are_refused(mesh):
    params = moe_jax.init_moe(jax.random.key(0), d_model=8, d_ff=8, n_experts=12)
    with pytest.raises(ValueError, match="split"):
        moe_jax.moe_layer(jnp.ones((64, 8)), params, top_k=1, capacity_factor=1.0, mesh=mesh)
    with pytest.raises(ValueError, match="chunks"):
        moe_jax.ring_attention(jnp.ones((24, 2, 4)), jnp.ones((24, 2, 4)), jnp.ones((24, 2, 4)),
                               mesh=mesh)

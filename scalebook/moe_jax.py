"""A mixture-of-experts layer and ring attention in plain JAX, on a 1-D device mesh.

Small, readable implementations of Part 7's two parallel forms, written with ``jax.shard_map``
so every collective is explicit:

- :func:`moe_layer` — expert parallelism. Tokens are sharded over the mesh axis, the ``E``
  experts too (``E/N`` per device). A top-``k`` router picks each token's experts; each device
  packs its tokens into fixed-shape buffers of ``C = ceil(c·k·t/E)`` slots per expert
  (``t`` = its tokens, ``c`` = capacity factor), sends them with ``jax.lax.all_to_all``
  (dispatch), runs its experts, sends the results back with a second ``all_to_all`` (combine),
  and sums each token's ``k`` outputs weighted by the router. Assignments past ``C`` are dropped
  and counted. :func:`moe_reference` is the same layer without sharding or capacity.
- :func:`ring_attention` — context parallelism. Queries stay; key/value blocks travel round the
  ring with ``jax.lax.ppermute``; an online softmax folds each block in. With ``zigzag=True``
  device ``i`` holds chunks ``i`` and ``2N−1−i`` of the sequence (balanced causal work).
  :func:`causal_attention` is the unsharded reference.

The experts are plain two-matrix MLPs (``relu(x·W1)·W2``); the point is the data movement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

__all__ = [
    "MoEParams", "init_moe", "route", "moe_layer", "moe_reference", "MoEResult",
    "expert_loads", "zigzag_order", "ring_attention", "causal_attention", "line_mesh",
]

AXIS = "x"


def line_mesh(n: int | None = None) -> jax.sharding.Mesh:
    """A 1-D mesh named ``x`` over the first ``n`` devices (all by default)."""
    devices = jax.devices() if n is None else jax.devices()[:n]
    return jax.make_mesh((len(devices),), (AXIS,), axis_types=(AxisType.Auto,),
                         devices=devices)


# --------------------------------------------------------------------------- MoE


@dataclass(frozen=True)
class MoEParams:
    """Router ``w_router[D, E]`` and experts ``w1[E, D, F]``, ``w2[E, F, D]``."""

    w_router: jax.Array
    w1: jax.Array
    w2: jax.Array


def init_moe(key: jax.Array, *, d_model: int, d_ff: int, n_experts: int,
             dtype=jnp.float32) -> MoEParams:
    """Random weights scaled so activations stay of order one."""
    k1, k2, k3 = jax.random.split(key, 3)
    return MoEParams(
        jax.random.normal(k1, (d_model, n_experts), dtype),
        jax.random.normal(k2, (n_experts, d_model, d_ff), dtype) / math.sqrt(d_model),
        jax.random.normal(k3, (n_experts, d_ff, d_model), dtype) / math.sqrt(d_ff))


def route(x: jax.Array, w_router: jax.Array, top_k: int) -> tuple[jax.Array, jax.Array]:
    """Top-``k`` experts of each token and their gates (softmax over the ``k`` chosen logits):
    ``(experts[T, k] int32, gates[T, k])``."""
    logits = x @ w_router
    top, experts = jax.lax.top_k(logits, top_k)
    return experts.astype(jnp.int32), jax.nn.softmax(top, axis=-1)


def _expert(h: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    return jax.nn.relu(h @ w1) @ w2


def moe_reference(x: jax.Array, params: MoEParams, top_k: int,
                  keep: jax.Array | None = None) -> jax.Array:
    """Each token through its own ``k`` experts, no sharding, no capacity:
    ``y_t = Σ_j gate_tj · expert_{e_tj}(x_t)`` over the choices ``keep[t, j]`` (all by default)."""
    experts, gates = route(x, params.w_router, top_k)
    every = jax.vmap(lambda w1, w2: _expert(x, w1, w2))(params.w1, params.w2)  # [E, T, D]
    chosen = every[experts, jnp.arange(x.shape[0])[:, None]]                   # [T, k, D]
    if keep is not None:
        gates = gates * keep
    return jnp.einsum("tk,tkd->td", gates, chosen)


def _slots(experts: jax.Array, n_experts: int) -> jax.Array:
    """Each (token, choice)'s place in its expert's queue on this device, token-major:
    the number of earlier assignments to the same expert."""
    onehot = jax.nn.one_hot(experts.reshape(-1), n_experts, dtype=jnp.int32)  # [t·k, E]
    before = jnp.cumsum(onehot, axis=0) - onehot
    return jnp.sum(before * onehot, axis=-1).reshape(experts.shape)


@dataclass(frozen=True)
class MoEResult:
    """Output ``y[T, D]``, ``kept[T, k]`` (True where the choice got a slot) and ``capacity``."""

    y: jax.Array
    kept: jax.Array
    capacity: int


def moe_layer(x: jax.Array, params: MoEParams, *, top_k: int, capacity_factor: float,
              mesh: jax.sharding.Mesh) -> MoEResult:
    """Expert-parallel MoE layer over the mesh's one axis (module docstring).

    ``x[T, D]`` is split ``T/N`` per device, experts ``E/N`` per device. The send buffer on
    each device is ``[E, C, D]``: the all_to_all splits it into ``N`` pieces of ``E/N``
    experts, one per device, so each device receives ``[N, E/N, C, D]``: its experts' slots
    from every sender. The combine reverses it.
    """
    n = mesh.shape[AXIS]
    T, D = x.shape
    E = params.w1.shape[0]
    if T % n or E % n:
        raise ValueError(f"tokens ({T}) and experts ({E}) must both split over {n} devices")
    t = T // n
    capacity = math.ceil(capacity_factor * top_k * t / E - 1e-9)

    def local(x, w_router, w1, w2):
        experts, gates = route(x, w_router, top_k)                     # [t, k]
        slot = _slots(experts, E)
        kept = slot < capacity
        where = jnp.where(kept, experts * capacity + slot, E * capacity)   # overflow row
        rows = jnp.broadcast_to(x[:, None, :], (t, top_k, D)).reshape(-1, D)
        send = jnp.zeros((E * capacity + 1, D), x.dtype).at[where.reshape(-1)].set(rows)
        send = send[:-1].reshape(n, E // n, capacity, D)
        got = jax.lax.all_to_all(send, AXIS, 0, 0, tiled=True)            # dispatch
        out = jax.vmap(_expert, in_axes=(1, 0, 0), out_axes=1)(got, w1, w2)
        back = jax.lax.all_to_all(out, AXIS, 0, 0, tiled=True)            # combine
        back = jnp.concatenate([back.reshape(E * capacity, D), jnp.zeros((1, D), x.dtype)])
        picked = back[where]                                              # [t, k, D]
        y = jnp.einsum("tk,tkd->td", gates * kept, picked)
        return y, kept

    run = jax.shard_map(local, mesh=mesh,
                        in_specs=(P(AXIS), P(), P(AXIS), P(AXIS)),
                        out_specs=(P(AXIS), P(AXIS)))
    y, kept = jax.jit(run)(x, params.w_router, params.w1, params.w2)
    return MoEResult(y, kept, capacity)


def expert_loads(x: jax.Array, w_router: jax.Array, top_k: int, n_devices: int) -> np.ndarray:
    """Tokens each device's router sends each expert: ``loads[device, expert]`` (NumPy)."""
    experts, _ = route(x, w_router, top_k)
    E = w_router.shape[1]
    per = np.asarray(experts).reshape(n_devices, -1)
    return np.stack([np.bincount(row, minlength=E) for row in per])


# --------------------------------------------------------------------------- ring attention


def zigzag_order(seq_len: int, n: int) -> np.ndarray:
    """Positions in zig-zag order: device ``i`` gets chunks ``i`` and ``2n−1−i`` of ``2n``."""
    chunks = np.arange(seq_len).reshape(2 * n, -1)
    return np.concatenate([np.concatenate([chunks[i], chunks[2 * n - 1 - i]])
                           for i in range(n)])


def causal_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """Full causal attention: ``q[T, H, d]``, ``k, v[T, K, d]`` (``K`` divides ``H``)."""
    g = q.shape[1] // k.shape[1]
    k, v = jnp.repeat(k, g, axis=1), jnp.repeat(v, g, axis=1)
    s = jnp.einsum("qhd,khd->hqk", q, k) / math.sqrt(q.shape[-1])
    T = q.shape[0]
    s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
    return jnp.einsum("hqk,khd->qhd", jax.nn.softmax(s, axis=-1), v)


def _positions(device: jax.Array, t: int, n: int, zigzag: bool) -> jax.Array:
    """Global positions of the ``t`` tokens device ``device`` holds."""
    if not zigzag:
        return device * t + jnp.arange(t)
    half = t // 2
    return jnp.concatenate([device * half + jnp.arange(half),
                            (2 * n - 1 - device) * half + jnp.arange(half)])


def ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, *, mesh: jax.sharding.Mesh,
                   zigzag: bool = False) -> jax.Array:
    """Causal attention with the sequence split over the mesh axis (module docstring).

    ``q[T, H, d]``, ``k, v[T, K, d]`` in the order the devices hold them: natural order, or
    :func:`zigzag_order` when ``zigzag``. At each of ``N`` steps a device attends its queries to
    the key/value block it holds, then (``N − 1`` times) passes the block, stacked as one
    ``kv[2, T/N, K, d]`` array, to the next device with ``ppermute``.
    """
    n = mesh.shape[AXIS]
    T, H, d = q.shape
    if T % (2 * n):
        raise ValueError(f"sequence length {T} must split into 2·{n} chunks")
    t, g = T // n, H // k.shape[1]
    ring = [(i, (i + 1) % n) for i in range(n)]

    def local(q, k, v):
        me = jax.lax.axis_index(AXIS)
        qpos = _positions(me, t, n, zigzag)
        kv = jnp.stack([k, v])
        m = jnp.full((H, t), -jnp.inf, q.dtype)
        l = jnp.zeros((H, t), q.dtype)
        acc = jnp.zeros((H, t, d), q.dtype)
        for step in range(n):
            src = (me - step) % n
            kpos = _positions(src, t, n, zigzag)
            kb, vb = jnp.repeat(kv[0], g, axis=1), jnp.repeat(kv[1], g, axis=1)
            s = jnp.einsum("qhd,khd->hqk", q, kb) / math.sqrt(d)
            s = jnp.where(kpos[None, None, :] <= qpos[None, :, None], s, -jnp.inf)
            m_new = jnp.maximum(m, s.max(-1))
            safe = jnp.where(jnp.isinf(m_new), 0.0, m_new)
            p = jnp.exp(s - safe[..., None])
            scale = jnp.exp(jnp.where(jnp.isinf(m), -jnp.inf, m - safe))
            l = l * scale + p.sum(-1)
            acc = acc * scale[..., None] + jnp.einsum("hqk,khd->hqd", p, vb)
            m = m_new
            if step < n - 1:
                kv = jax.lax.ppermute(kv, AXIS, ring)
        return jnp.transpose(acc / l[..., None], (1, 0, 2))

    run = jax.shard_map(local, mesh=mesh, in_specs=(P(AXIS), P(AXIS), P(AXIS)),
                        out_specs=P(AXIS))
    return jax.jit(run)(q, k, v)

"""A tiny LLaMA-style decoder in plain JAX that generates with a KV cache, and the timings that
set its decode step beside the Part 6 solver (:mod:`scalebook.inference`).

The model is small enough to compile in about a second on a CPU: ``n_layers`` pre-norm blocks
of grouped-query attention (``n_heads`` query heads sharing ``n_kv_heads`` key/value heads,
rotary position embeddings) and a gated (SwiGLU) MLP, a token embedding and a separate
unembedding, parameter-free RMS norms, no biases. Its matmul weights are exactly those that
:func:`scalebook.transformer.param_count` counts in ``matmul`` for :meth:`DecoderConfig.shape`,
so the solver's bytes and FLOPs describe this code.

Generation has the two phases of the chapter:

- :func:`prefill` runs the prompt ``[B, T]`` through the model at once and returns its logits
  and a cache of every layer's keys and values, ``k[B, K, S, d_h]`` and ``v[B, K, S, d_h]`` per
  layer, with room for ``S = max_len`` tokens (heads before positions, so that attention reads
  each head's keys as one contiguous block and XLA never transposes the cache);
- :func:`decode_step` takes one new token per sequence, attends to the cached positions and to
  itself, and returns the logits with the new token's keys and values; :func:`write_cache`
  stores them. A decode step therefore reads every weight and the whole cache and writes
  ``B · kv_bytes_per_token`` bytes.

:func:`forward` is the same model without a cache, the reference the tests compare with.

For the experiment, :func:`measure_peak_flops` and :func:`measure_bandwidth` measure a device's
``C`` and ``W`` with the two kernels of Part 1 (a large square matmul, a sum over a long vector),
:func:`measured_chip` turns them into a :class:`~scalebook.hardware.Chip` the solver accepts,
and :func:`time_decode_step` times one decode step at a given batch and context.

Units: seconds, bytes, FLOPs, FLOPs/s, bytes/s.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from scalebook.hardware import Chip, canonical_dtype
from scalebook.transformer import TransformerConfig
from scalebook.validation import positive, positive_int

__all__ = [
    "KneeFit",
    "knee_fit",
    "DecoderConfig",
    "init_params",
    "matmul_weight_count",
    "forward",
    "prefill",
    "empty_cache",
    "random_cache",
    "decode_step",
    "write_cache",
    "generate",
    "median_time",
    "measure_peak_flops",
    "measure_bandwidth",
    "measured_chip",
    "time_decode_step",
    "knee_batch",
    "KneeSpread",
    "knee_spread",
]


@dataclass(frozen=True)
class DecoderConfig:
    """Shape of the tiny decoder.

    Attributes:
        vocab: V, tokens in the vocabulary.
        d_model: D, the residual width.
        n_layers: L, blocks.
        n_heads: H, query heads, each ``D / H`` wide.
        n_kv_heads: K, key/value heads; must divide ``n_heads`` (``H / K`` query heads share one).
        d_ff: F, the gated MLP's hidden width.
        rope_base: base of the rotary embedding's frequencies.
        seed: PRNG seed of the initial weights.
    """

    vocab: int = 4096
    d_model: int = 768
    n_layers: int = 4
    n_heads: int = 12
    n_kv_heads: int = 4
    d_ff: int = 2048
    rope_base: float = 10000.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff"):
            positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads "
                             f"({self.n_heads})")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads "
                             f"({self.n_heads})")
        if (self.d_model // self.n_heads) % 2:
            raise ValueError(f"the head width d_model / n_heads = {self.d_model // self.n_heads} "
                             "must be even for rotary embeddings")
        positive(self.rope_base, "rope_base")

    @property
    def d_head(self) -> int:
        """Width of one head, ``D / H``."""
        return self.d_model // self.n_heads

    def shape(self) -> TransformerConfig:
        """The same shape as a :class:`~scalebook.transformer.TransformerConfig`, for the solver."""
        return TransformerConfig(d_model=self.d_model, n_layers=self.n_layers,
                                 n_heads=self.n_heads, n_kv_heads=self.n_kv_heads,
                                 d_ff=self.d_ff, vocab_size=self.vocab, gated_mlp=True,
                                 name="tiny decoder")


def _check_config(cfg: object) -> DecoderConfig:
    if not isinstance(cfg, DecoderConfig):
        raise ValueError(f"cfg must be a decoding.DecoderConfig, got {type(cfg).__name__}")
    return cfg


# --------------------------------------------------------------------------- the model


def init_params(cfg: DecoderConfig = DecoderConfig(), dtype=jnp.float32,
                key: jax.Array | None = None) -> dict:
    """Initial weights, deterministic in ``key`` (default ``jax.random.key(cfg.seed)``).

    Normal with standard deviation ``1/sqrt(fan_in)`` (the embedding 1), stored in ``dtype``::

        {"embed": [V, D], "unembed": [D, V],
         "layers": ({"wq": [D, H·d_h], "wk": [D, K·d_h], "wv": [D, K·d_h], "wo": [H·d_h, D],
                     "w_gate": [D, F], "w_up": [D, F], "w_down": [F, D]}, ...)}
    """
    cfg = _check_config(cfg)
    if key is None:
        key = jax.random.key(cfg.seed)
    D, F, V, dh = cfg.d_model, cfg.d_ff, cfg.vocab, cfg.d_head
    q_width, kv_width = cfg.n_heads * dh, cfg.n_kv_heads * dh
    keys = iter(jax.random.split(key, 2 + 7 * cfg.n_layers))

    def normal(shape, fan_in):
        return (jax.random.normal(next(keys), shape, jnp.float32) / math.sqrt(fan_in)).astype(dtype)

    layers = tuple({"wq": normal((D, q_width), D), "wk": normal((D, kv_width), D),
                    "wv": normal((D, kv_width), D), "wo": normal((q_width, D), q_width),
                    "w_gate": normal((D, F), D), "w_up": normal((D, F), D),
                    "w_down": normal((F, D), F)} for _ in range(cfg.n_layers))
    return {"embed": normal((V, D), 1), "unembed": normal((D, V), D), "layers": layers}


def matmul_weight_count(params: dict) -> int:
    """Weights a forward pass reads for its matmuls: every array except the embedding table
    (a lookup of one row per token). Equals ``param_count(cfg.shape()).matmul``."""
    leaves = jax.tree.leaves({k: v for k, v in params.items() if k != "embed"})
    return int(sum(leaf.size for leaf in leaves))


def _rms_norm(x: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    return (x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)).astype(x.dtype)


def _rope(x: jax.Array, positions: jax.Array, base: float) -> jax.Array:
    """Rotate ``x[B, T, heads, d_h]`` by the angles of ``positions[T]`` (int)."""
    half = x.shape[-1] // 2
    freqs = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angles = positions.astype(jnp.float32)[:, None] * freqs          # [T, half]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = x[..., :half].astype(jnp.float32), x[..., half:].astype(jnp.float32)
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).astype(x.dtype)


def _attend(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array) -> jax.Array:
    """Grouped-query attention: ``q[B, T, H, d_h]`` against ``k, v[B, S, K, d_h]``.

    ``mask[T, S]`` (or ``[B, T, S]``) is True where a query may see a key. Query head ``h`` uses
    key/value head ``h // (H / K)``. Scores and softmax in fp32. Returns ``[B, T, H·d_h]``.
    """
    B, T, H, dh = q.shape
    K = k.shape[2]
    q = q.reshape(B, T, K, H // K, dh)
    scores = jnp.einsum("btkgd,bskd->bkgts", q, k,
                        preferred_element_type=jnp.float32) / math.sqrt(dh)
    mask = mask[None, None, None] if mask.ndim == 2 else mask[:, None, None]
    scores = jnp.where(mask, scores, -1e30)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", probs, v)
    return out.reshape(B, T, H * dh)


def _attend_step(q: jax.Array, k_cache: jax.Array, v_cache: jax.Array, k_new: jax.Array,
                 v_new: jax.Array, seen: jax.Array) -> jax.Array:
    """Attention of one new token per sequence, ``q[B, 1, H, d_h]``, to the cached keys and
    values ``[B, K, S, d_h]`` where ``seen[S]`` is True, and to its own ``k_new, v_new[B, 1, K,
    d_h]``. The cache is read in place, never copied: the scores against the cache and against
    the token itself are joined before the softmax, and the two weighted sums added after it.
    Returns ``[B, 1, H·d_h]``.
    """
    B, _, H, dh = q.shape
    K = k_cache.shape[1]
    q = q.reshape(B, K, H // K, dh)
    scale = 1.0 / math.sqrt(dh)
    s_cache = jnp.einsum("bkgd,bksd->bkgs", q, k_cache, preferred_element_type=jnp.float32)
    s_self = jnp.einsum("bkgd,bkd->bkg", q, k_new[:, 0], preferred_element_type=jnp.float32)
    s_cache = jnp.where(seen, s_cache * scale, -1e30)
    probs = jax.nn.softmax(jnp.concatenate([s_cache, (s_self * scale)[..., None]], -1), axis=-1)
    probs = probs.astype(v_cache.dtype)
    out = (jnp.einsum("bkgs,bksd->bkgd", probs[..., :-1], v_cache)
           + probs[..., -1:] * v_new[:, 0][:, :, None, :])
    return out.reshape(B, 1, H * dh)


def _project(layer: dict, x: jax.Array, positions: jax.Array, cfg: DecoderConfig):
    """Query, key and value of ``x[B, T, D]`` (already normed), rotated to ``positions``."""
    B, T, _ = x.shape
    q = (x @ layer["wq"]).reshape(B, T, cfg.n_heads, cfg.d_head)
    k = (x @ layer["wk"]).reshape(B, T, cfg.n_kv_heads, cfg.d_head)
    v = (x @ layer["wv"]).reshape(B, T, cfg.n_kv_heads, cfg.d_head)
    return _rope(q, positions, cfg.rope_base), _rope(k, positions, cfg.rope_base), v


def _mlp(layer: dict, h: jax.Array) -> jax.Array:
    x = _rms_norm(h)
    return h + (jax.nn.silu(x @ layer["w_gate"]) * (x @ layer["w_up"])) @ layer["w_down"]


def _prompt_pass(params: dict, tokens: jax.Array, cfg: DecoderConfig):
    """Causal pass over ``tokens[B, T]``: logits ``[B, T, V]`` and each layer's ``(k, v)``."""
    T = tokens.shape[1]
    positions = jnp.arange(T)
    causal = jnp.tril(jnp.ones((T, T), bool))
    h = params["embed"][tokens]
    kv = []
    for layer in params["layers"]:
        q, k, v = _project(layer, _rms_norm(h), positions, cfg)
        h = h + _attend(q, k, v, causal) @ layer["wo"]
        h = _mlp(layer, h)
        kv.append((k, v))
    return _rms_norm(h) @ params["unembed"], kv


def forward(params: dict, tokens: jax.Array, cfg: DecoderConfig = DecoderConfig()) -> jax.Array:
    """Logits ``[B, T, V]`` of int ``tokens[B, T]``, causal, without a cache (the reference)."""
    cfg = _check_config(cfg)
    return _prompt_pass(params, tokens, cfg)[0]


def empty_cache(cfg: DecoderConfig, batch: int, max_len: int, dtype=jnp.float32) -> tuple:
    """A zero cache with room for ``max_len`` tokens of ``batch`` sequences: one
    ``{"k": [B, K, S, d_h], "v": [B, K, S, d_h]}`` per layer.

    Its size is ``B · S · 2 · L · K · d_h · bytes``, the solver's
    ``batch · context_len · kv_bytes_per_token``.
    """
    cfg = _check_config(cfg)
    shape = (positive_int(batch, "batch"), cfg.n_kv_heads, positive_int(max_len, "max_len"),
             cfg.d_head)
    return tuple({"k": jnp.zeros(shape, dtype), "v": jnp.zeros(shape, dtype)}
                 for _ in range(cfg.n_layers))


def random_cache(cfg: DecoderConfig, batch: int, context_len: int, dtype=jnp.float32,
                 key: jax.Array | None = None) -> tuple:
    """A cache of ``context_len`` filled positions with random keys and values, for timing a
    decode step without generating ``context_len`` tokens first."""
    cache = empty_cache(cfg, batch, context_len, dtype)
    key = jax.random.key(cfg.seed + 1) if key is None else key
    keys = jax.random.split(key, 2 * cfg.n_layers)
    return tuple({"k": jax.random.normal(keys[2 * i], c["k"].shape, jnp.float32).astype(dtype),
                  "v": jax.random.normal(keys[2 * i + 1], c["v"].shape, jnp.float32).astype(dtype)}
                 for i, c in enumerate(cache))


def prefill(params: dict, tokens: jax.Array, cfg: DecoderConfig = DecoderConfig(), *,
            max_len: int) -> tuple[jax.Array, tuple]:
    """Prefill: the prompt ``tokens[B, T]`` in one pass.

    Returns the logits ``[B, T, V]`` and a cache with room for ``max_len ≥ T`` tokens whose
    first ``T`` positions hold the prompt's keys and values (rotated to their positions).
    """
    cfg = _check_config(cfg)
    B, T = tokens.shape
    if positive_int(max_len, "max_len") < T:
        raise ValueError(f"max_len ({max_len}) must be at least the prompt length ({T})")
    logits, kv = _prompt_pass(params, tokens, cfg)
    cache = empty_cache(cfg, B, max_len, kv[0][0].dtype)
    cache = tuple({"k": c["k"].at[:, :, :T].set(k.transpose(0, 2, 1, 3)),
                   "v": c["v"].at[:, :, :T].set(v.transpose(0, 2, 1, 3))}
                  for c, (k, v) in zip(cache, kv))
    return logits, cache


def decode_step(params: dict, cache: tuple, tokens: jax.Array, pos: jax.Array | int,
                cfg: DecoderConfig = DecoderConfig()) -> tuple[jax.Array, tuple]:
    """One decode step: ``tokens[B]`` (int) sit at position ``pos`` of every sequence.

    Each attends to cache positions ``< pos`` and to itself. Returns the logits ``[B, V]`` and
    the new token's ``{"k": [B, K, d_h], "v": [B, K, d_h]}`` per layer, for :func:`write_cache`.
    The step reads every matmul weight once and all ``S`` cached positions of every layer
    (masked ones too: the cache's length, not ``pos``, sets the bytes).
    """
    cfg = _check_config(cfg)
    S = cache[0]["k"].shape[2]
    pos = jnp.asarray(pos, jnp.int32)
    positions = pos[None]
    seen = jnp.arange(S) < pos                                         # [S]
    h = params["embed"][tokens][:, None, :]                           # [B, 1, D]
    new = []
    for layer, c in zip(params["layers"], cache):
        q, k, v = _project(layer, _rms_norm(h), positions, cfg)
        h = h + _attend_step(q, c["k"], c["v"], k, v, seen) @ layer["wo"]
        h = _mlp(layer, h)
        new.append({"k": k[:, 0], "v": v[:, 0]})
    return (_rms_norm(h) @ params["unembed"])[:, 0], tuple(new)


def write_cache(cache: tuple, new: tuple, pos: jax.Array | int) -> tuple:
    """The cache with each layer's new ``k, v[B, K, d_h]`` stored at position ``pos``."""
    pos = jnp.asarray(pos, jnp.int32)
    return tuple({name: jax.lax.dynamic_update_slice_in_dim(c[name], n[name][:, :, None], pos,
                                                            axis=2)
                  for name in ("k", "v")} for c, n in zip(cache, new))


@functools.partial(jax.jit, static_argnums=(2, 3))
def generate(params: dict, prompt: jax.Array, n_new: int,
             cfg: DecoderConfig = DecoderConfig()) -> jax.Array:
    """Greedy generation: ``n_new`` tokens after ``prompt[B, T]``, as int32 ``[B, n_new]``.

    One :func:`prefill` of the prompt, then ``n_new - 1`` decode steps in a ``fori_loop``, each
    appending its keys and values to the cache (updated in place inside the loop). Compiled
    once per prompt shape, ``n_new`` and ``cfg``.
    """
    cfg = _check_config(cfg)
    n_new = positive_int(n_new, "n_new")
    B, T = prompt.shape
    logits, cache = prefill(params, prompt, cfg, max_len=T + n_new)
    first = jnp.argmax(logits[:, -1], axis=-1).astype(jnp.int32)
    out = jnp.zeros((B, n_new), jnp.int32).at[:, 0].set(first)

    def body(i, state):
        out, cache = state
        pos = T + i - 1
        step_logits, new = decode_step(params, cache, out[:, i - 1], pos, cfg)
        cache = write_cache(cache, new, pos)
        return out.at[:, i].set(jnp.argmax(step_logits, axis=-1).astype(jnp.int32)), cache

    return jax.lax.fori_loop(1, n_new, body, (out, cache))[0]


# --------------------------------------------------------------------------- measuring


def median_time(fn: Callable, *args, repeats: int = 5) -> float:
    """Median wall-clock seconds of ``fn(*args)`` over ``repeats`` runs, after one call to
    compile and warm up; waits for the result (JAX dispatches asynchronously)."""
    repeats = positive_int(repeats, "repeats")
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure_peak_flops(n: int = 1024, dtype=jnp.float32, repeats: int = 5) -> float:
    """FLOPs/s of one ``[n, n] · [n, n]`` matmul (``2·n³`` FLOPs): the device's practical peak
    ``C``, measured as in Part 1 (far right of the roofline, intensity ``n/3`` in fp32)."""
    n = positive_int(n, "n")
    x = jnp.ones((n, n), dtype)
    return 2.0 * n ** 3 / median_time(jax.jit(jnp.dot), x, x, repeats=repeats)


def measure_bandwidth(nbytes: float, dtype=jnp.float32, repeats: int = 5) -> float:
    """Bytes/s of a sum over a vector of about ``nbytes`` bytes: the device's memory bandwidth
    ``W`` as in Part 1 (far left of the roofline: one add per element read).

    Measure with as many bytes as the workload reads: on a CPU, whose caches are large, a small
    vector measures a cache rather than DRAM.
    """
    itemsize = jnp.dtype(dtype).itemsize
    n = max(1, int(positive(nbytes, "nbytes") // itemsize))
    vector = jnp.ones((n,), dtype)
    return n * itemsize / median_time(jax.jit(jnp.sum), vector, repeats=repeats)


def measured_chip(peak_flops: float, bandwidth: float, *, dtype: str = "fp32",
                  hbm_bytes: float = 16e9, name: str = "this device (measured)") -> Chip:
    """A one-device :class:`~scalebook.hardware.Chip` whose only figures are measured ones:
    ``peak_flops`` (FLOPs/s) in ``dtype`` and ``bandwidth`` (bytes/s), so the solver's one-chip
    costs (:func:`scalebook.inference.decode_step`, ``decode_critical_batch``) can be scaled to
    the reader's device.

    It has no interconnect: its link and host figures are 1 byte/s placeholders and it is a
    one-GPU "node", so asking for tensor parallelism over it raises ``ValueError``.
    """
    key = canonical_dtype(dtype)
    return Chip(name=name, vendor="nvidia", hbm_bytes=positive(hbm_bytes, "hbm_bytes"),
                hbm_bandwidth=positive(bandwidth, "bandwidth"),
                flops_per_s={key: positive(peak_flops, "peak_flops")},
                link_bandwidth_one_way=1.0, links_per_chip=1, topology="none (one device)",
                max_slice=(1,), chips_per_host=1, pcie_bandwidth=1.0,
                host_network_bandwidth=1.0, cores=1,
                notes=("measured on the reader's device; no interconnect",))


def time_decode_step(params: dict, cfg: DecoderConfig, *, batch: int, context_len: int,
                     dtype=jnp.float32, repeats: int = 5) -> float:
    """Median seconds of one jitted :func:`decode_step` for ``batch`` sequences with
    ``context_len`` cached tokens each (a random cache; the new tokens sit at the last position).
    """
    cfg = _check_config(cfg)
    batch, context_len = positive_int(batch, "batch"), positive_int(context_len, "context_len")
    cache = random_cache(cfg, batch, context_len, dtype)
    tokens = jnp.arange(batch, dtype=jnp.int32) % cfg.vocab
    step = jax.jit(decode_step, static_argnums=4)
    return median_time(step, params, cache, tokens, context_len, cfg, repeats=repeats)


def knee_batch(batches: Sequence[int], times: Sequence[float]) -> float:
    """Where a measured time-per-step curve turns upward: the knee ``k`` of the roofline-shaped
    curve ``t(B) = t_0 · max(1, B / k)`` that best fits the measurements.

    A memory-bound step costs about the same at every small batch; a compute-bound one grows in
    proportion to the batch; the knee is where the two meet. The fit is least squares on
    ``log t``: for each ``k`` on a fine logarithmic grid between the smallest and the largest
    batch, ``log t_0`` is the mean of ``log(t / max(1, B/k))``, and the ``k`` with the smallest
    squared residual wins. Returns ``inf`` when the best fit has no knee inside the sweep (the
    curve stayed flat). Needs at least three batches in increasing order.
    """
    b = np.asarray(batches, dtype=float)
    t = np.asarray(times, dtype=float)
    if b.ndim != 1 or b.shape != t.shape or b.size < 3:
        raise ValueError("knee_batch needs matching 1-D batches and times, at least three of each")
    if np.any(np.diff(b) <= 0) or np.any(b <= 0) or np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise ValueError("batches must be positive and increasing, times positive and finite")
    knees = np.geomspace(b[0], b[-1], 2001)
    log_shape = np.log(np.maximum(1.0, b[None, :] / knees[:, None]))     # [knees, batches]
    residual = np.log(t)[None, :] - log_shape
    residual -= residual.mean(axis=1, keepdims=True)                      # the best t_0 per knee
    best = int(np.argmin((residual ** 2).sum(axis=1)))
    return math.inf if best == knees.size - 1 else float(knees[best])


#: A knee is claimed only when the knee model's RMS residual in log time is at most this
#: (about 15% in time) ...
KNEE_MAX_RMS = 0.15
#: ... and at most this fraction of a straight power law's residual: the bend must explain
#: the data better than no bend at all.
KNEE_VS_POWER_LAW = 0.5


@dataclass(frozen=True)
class KneeFit:
    """How well a measured time-per-step curve fits the roofline shape.

    Attributes:
        knee: the best knee ``k`` of ``t = t_0 · max(1, B / k)`` (sequences; ``inf`` when the
            best fit has none inside the sweep), as :func:`knee_batch` returns.
        rms: the RMS residual of that fit in natural-log time (0.1 is about 10% per point).
        slope: the exponent ``p`` of the least-squares power law ``t = a · B^p`` (dimensionless):
            0 for a flat curve, 1 for a proportional one.
        power_law_rms: that power law's RMS residual in log time.
        supported: whether the data support a knee: finite, ``rms ≤ KNEE_MAX_RMS`` and
            ``rms ≤ KNEE_VS_POWER_LAW · power_law_rms``.
    """

    knee: float
    rms: float
    slope: float
    power_law_rms: float
    supported: bool


def knee_fit(batches: Sequence[int], times: Sequence[float]) -> KneeFit:
    """Fit the roofline shape of :func:`knee_batch` and, beside it, a straight power law in
    log-log, and say whether the knee is supported (:class:`KneeFit`).

    A curve with a real knee is flat, then proportional: the knee model fits it closely and a
    single power law does not. A curve that bends smoothly (a CPU's kernels slowing gradually as
    the batch grows) fits a power law about as well as any knee, and then no knee is claimed.
    """
    knee = knee_batch(batches, times)
    b, t = np.log(np.asarray(batches, dtype=float)), np.log(np.asarray(times, dtype=float))
    k = float(np.asarray(batches, dtype=float)[-1]) if math.isinf(knee) else knee
    shape = np.log(np.maximum(1.0, np.exp(b) / k))
    residual = t - shape
    residual -= residual.mean()
    rms = float(np.sqrt(np.mean(residual ** 2)))
    slope, intercept = np.polyfit(b, t, 1)
    power_rms = float(np.sqrt(np.mean((t - (slope * b + intercept)) ** 2)))
    supported = (math.isfinite(knee) and rms <= KNEE_MAX_RMS
                 and rms <= KNEE_VS_POWER_LAW * power_rms)
    return KneeFit(knee=knee, rms=rms, slope=float(slope), power_law_rms=power_rms,
                   supported=bool(supported))


@dataclass(frozen=True)
class KneeSpread:
    """How much a measured knee moves when the sweep's points move.

    Attributes:
        knee: :func:`knee_batch` on the whole sweep (sequences).
        drop_one: the knee with each batch left out in turn (input order; ``inf`` where the
            fit found none).
        drop_one_supported: :attr:`KneeFit.supported` with each batch left out: whether the
            *claim* of a knee survives, not only its place.
        low, high: the 5th and 95th percentiles of the knee over bootstrap resamples of the
            points (drawn with replacement, duplicates merged), the finite ones (sequences).
        no_knee_share: the fraction of resamples whose fit found no knee inside the sweep.
    """

    knee: float
    drop_one: tuple[float, ...]
    drop_one_supported: tuple[bool, ...]
    low: float
    high: float
    no_knee_share: float


def knee_spread(batches: Sequence[int], times: Sequence[float], *, resamples: int = 500,
                seed: int = 0) -> KneeSpread:
    """The knee's uncertainty (:class:`KneeSpread`): :func:`knee_fit` with each point left out,
    and a seeded bootstrap of ``resamples`` draws of the points (resamples with fewer than
    three distinct batches are redrawn). Needs at least four batches."""
    b = list(batches)
    t = [float(x) for x in times]
    if len(b) != len(t) or len(b) < 4:
        raise ValueError("knee_spread needs matching batches and times, at least four of each")
    if not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    knee = knee_batch(b, t)
    drop = [knee_fit(b[:i] + b[i + 1:], t[:i] + t[i + 1:]) for i in range(len(b))]
    rng = np.random.default_rng(seed)
    knees: list[float] = []
    while len(knees) < resamples:
        index = np.unique(rng.integers(0, len(b), len(b)))
        if index.size >= 3:
            knees.append(knee_batch([b[i] for i in index], [t[i] for i in index]))
    finite = np.asarray([k for k in knees if math.isfinite(k)])
    low, high = ((float(np.percentile(finite, 5)), float(np.percentile(finite, 95)))
                 if finite.size else (math.inf, math.inf))
    return KneeSpread(knee=knee, drop_one=tuple(f.knee for f in drop),
                      drop_one_supported=tuple(f.supported for f in drop), low=low, high=high,
                      no_knee_share=1.0 - finite.size / len(knees))

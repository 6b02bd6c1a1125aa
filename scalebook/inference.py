"""Serving a Transformer: prefill, decode, the KV cache, latency against throughput, and cost.

Generating text runs a model in two phases (Austin et al., 2025, "How to Scale Your Model",
part 7, whose accounting this module follows):

- **prefill** processes a prompt of ``T`` tokens for each of ``B`` sequences at once: one forward
  pass over ``B·T`` tokens, a large matmul that is compute-bound on every accelerator;
- **decode** produces one new token per sequence per step: ``B`` tokens per forward pass, which
  must still read every weight and each sequence's cached keys and values from HBM, so it is
  memory-bound until ``B`` reaches the chip's critical batch.

Every function takes the model (a :class:`~scalebook.transformer.TransformerConfig`), the chip
(name or :class:`~scalebook.hardware.Chip`) and three dtypes, kept apart because a server
chooses them apart:

- ``weight_dtype``: how the weights are stored (``"int8"`` halves the bytes a step reads);
- ``cache_dtype``: how cached keys and values are stored;
- ``compute_dtype``: the dtype whose peak FLOPs/s the matmuls run at (``"bf16"`` unless weights
  and activations are both quantised).

The ``n_chips`` chips of a slice serve one copy of the model with tensor parallelism: each holds
``1/n_chips`` of every weight and does ``1/n_chips`` of the FLOPs; each layer then ends its
attention and its MLP with an AllReduce of the activations (Megatron-style, see
:func:`tp_comm_time`, priced over the slice's real ICI axes). The cache is split one of two
ways (``kv_sharding``): by KV head (``"heads"``, the default), which reaches only
``min(n_chips, K)`` chips, so that past ``K`` chips each head's cache is copied on
``n_chips / K`` of them (:func:`kv_replication`); or by sequence (``"batch"``): the
``n_chips / K`` groups of ``K`` chips each hold the caches of their own share of the batch and
run attention data-parallel, so no cache is copied, at the price of two AllToAlls per layer
that move each group's queries in and its attention outputs back (:func:`kv_regroup_time`,
added to ``t_comm``).

A step runs its kernels one after another, so its time is a **sum of phases**:

    t_weights   = max(weight FLOPs / (n·peak), weight bytes / (n·W_hbm))   the matmuls
    t_attention = max(attention FLOPs / (n·peak), cache bytes / (n·W_hbm)) attention vs the cache
    t_step      = t_weights + t_attention + t_comm    (collectives not overlapped either)

The roofline of the whole step, ``max(all FLOPs / (n·peak), all bytes / (n·W_hbm)) + t_comm``,
would hold only if attention's cache reads overlapped the weight matmuls' compute; it is a
lower bound on ``t_step`` (``StepCost.time_overlapped``), never above it.

Units: counts, FLOPs, bytes, seconds, tokens per second; prices in currency per chip-hour.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence, TypedDict

from scalebook.collectives import collective_cost
from scalebook.hardware import Chip, bytes_per_element, get_chip
from scalebook.torus import slice_for
from scalebook.transformer import TransformerConfig, attention_flops_per_token, param_count
from scalebook.validation import positive, positive_int

__all__ = [
    "weight_bytes",
    "kv_bytes_per_token",
    "kv_replication",
    "KV_SHARDINGS",
    "kv_groups",
    "tp_slice_axes",
    "StepCost",
    "prefill",
    "decode_step",
    "decode_critical_batch",
    "overlap_bound_limit",
    "tp_comm_time",
    "kv_regroup_time",
    "max_batch",
    "smallest_slice",
    "latency_throughput",
    "best_batch",
    "cost_per_million_tokens",
    "RequestRate",
    "requests_per_second",
    "ContinuousBatching",
    "continuous_batching",
    "decode_chips_per_prefill_chip",
    "decode_step_from_counts",
    "WeightStationary2D",
    "weight_stationary_2d",
    "TPU_TP_LIMIT",
    "model_parallel_limit",
]


def _cfg(cfg: object) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return cfg


def weight_bytes(cfg: TransformerConfig, dtype: str = "bf16") -> float:
    """Bytes of every parameter stored in ``dtype``: ``P_total · bytes(dtype)``.

    LLaMA-3 70B (70,553,706,496 parameters): 141.1 GB in bf16, 70.6 GB in int8.
    """
    return float(param_count(_cfg(cfg)).total) * bytes_per_element(dtype)


def kv_bytes_per_token(cfg: TransformerConfig, dtype: str = "bf16") -> float:
    """Cache bytes one token of one sequence adds: ``2 · L · K · d_h · bytes(dtype)``.

    The 2 is keys and values; ``K`` is the number of KV heads (grouped-query attention shares
    each among ``H / K`` query heads). LLaMA-3 70B in bf16: ``2·80·8·128·2`` = 327,680 bytes.
    """
    cfg = _cfg(cfg)
    return 2.0 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * bytes_per_element(dtype)


#: How a slice splits the KV cache: by KV head (copies past K chips), or by sequence.
KV_SHARDINGS = ("heads", "batch")


def _kv_sharding(kv_sharding: str) -> str:
    if kv_sharding not in KV_SHARDINGS:
        raise ValueError(f"kv_sharding must be one of {KV_SHARDINGS}, got {kv_sharding!r}")
    return kv_sharding


def kv_groups(cfg: TransformerConfig, n_chips: int, kv_sharding: str = "heads") -> int:
    """Into how many groups a ``"batch"``-sharded cache splits the sequences:
    ``n_chips / min(n_chips, K)`` (each group of ``K`` chips holds its own sequences' caches,
    split by head inside the group); 1 for ``"heads"``."""
    n = positive_int(n_chips, "n_chips")
    if _kv_sharding(kv_sharding) == "heads":
        return 1
    return max(1, n // min(n, _cfg(cfg).n_kv_heads))


def kv_replication(cfg: TransformerConfig, n_chips: int, kv_sharding: str = "heads") -> float:
    """How many copies of the cache a tensor-parallel slice keeps.

    ``"heads"``: ``n_chips / min(n_chips, K)``. The cache splits by KV head, so ``K`` heads
    spread over at most ``K`` chips; on more, each head's keys and values sit on ``n_chips / K``
    chips (LLaMA-3 70B, ``K = 8``, on 16 chips: 2 copies). 1 up to ``K`` chips.
    ``"batch"``: 1 on any slice (each sequence's cache lives in one group of ``K`` chips).
    """
    n = positive_int(n_chips, "n_chips")
    if _kv_sharding(kv_sharding) == "batch":
        return 1.0
    return n / min(n, _cfg(cfg).n_kv_heads)


def _kv_batch_bytes(cfg: TransformerConfig, batch: int, per_seq: float, n_chips: int,
                    kv_sharding: str) -> float:
    """Cache bytes the slice reads for ``batch`` sequences of ``per_seq`` bytes each, counted
    as if every chip were as loaded as the busiest one (the step waits for it): copies under
    ``"heads"``; ``groups · ceil(B / groups)`` sequences under ``"batch"``."""
    groups = kv_groups(cfg, n_chips, kv_sharding)
    if groups > 1:
        return groups * math.ceil(batch / groups) * per_seq
    return batch * per_seq * kv_replication(cfg, n_chips, kv_sharding)


@dataclass(frozen=True)
class StepCost:
    """One forward pass of a serving step, on a slice of ``n_chips`` chips.

    Attributes:
        phase: "prefill" or "decode".
        batch: sequences in the step, B.
        tokens: tokens the step produces or ingests: ``B·T`` at prefill, ``B`` at decode.
        context_len: prompt length T (prefill) or cached tokens per sequence (decode).
        n_chips: chips serving one copy of the model (tensor parallel).
        flops: FLOPs of the whole step (all chips).
        weight_bytes: bytes of weights read from HBM (all chips; each matmul weight once, the
            embedding lookup's few rows left out).
        kv_bytes: bytes of cache read (decode) or written (prefill), summed over the chips
            (copies included: :func:`kv_replication`).
        t_compute: ``flops / (n_chips · peak)`` (s), all kernels together.
        t_memory: ``(weight_bytes + kv_bytes) / (n_chips · W_hbm)`` (s), all kernels together.
        t_comm: tensor-parallel AllReduces of the step (s), 0 on one chip.
        t_weights_compute, t_weights_memory: the weight matmuls' FLOPs over ``n·peak`` and
            ``weight_bytes / (n·W_hbm)`` (s); their phase takes the larger (``t_weights``).
        t_attention_compute, t_attention_memory: attention's FLOPs against the cache over
            ``n·peak`` and ``kv_bytes / (n·W_hbm)`` (s); the larger is ``t_attention``.
        time: ``t_weights + t_attention + t_comm`` (s): the phases run one after another.
        time_overlapped: ``max(t_compute, t_memory) + t_comm`` (s): the bound if attention's
            cache reads overlapped the matmuls' compute; never above ``time``.
    """

    phase: str
    batch: int
    tokens: int
    context_len: int
    n_chips: int
    flops: float
    weight_bytes: float
    kv_bytes: float
    t_compute: float
    t_memory: float
    t_comm: float
    time: float
    t_weights_compute: float = 0.0
    t_weights_memory: float = 0.0
    t_attention_compute: float = 0.0
    t_attention_memory: float = 0.0
    time_overlapped: float = 0.0

    @property
    def t_weights(self) -> float:
        """The weight matmuls' phase (s): ``max(t_weights_compute, t_weights_memory)``."""
        return max(self.t_weights_compute, self.t_weights_memory)

    @property
    def t_attention(self) -> float:
        """Attention against the cache (s): ``max(t_attention_compute, t_attention_memory)``."""
        return max(self.t_attention_compute, self.t_attention_memory)

    @property
    def bound(self) -> str:
        """"compute" or "memory" for the step's totals, ``t_compute`` against ``t_memory`` (ties
        count as compute): the overlapped view. :attr:`weights_bound` is the matmuls alone."""
        return "compute" if self.t_compute >= self.t_memory else "memory"

    @property
    def weights_bound(self) -> str:
        """"compute" or "memory" for the weight matmuls alone (ties count as compute). At
        decode they turn compute-bound at ``B ≥ peak · bytes(weight) / (2 · W_hbm)`` whatever
        the context; attention against the cache stays memory-bound (its intensity is about
        ``2H / (K · bytes(cache))`` FLOPs per byte, 8 for LLaMA-3 in bf16)."""
        return "compute" if self.t_weights_compute >= self.t_weights_memory else "memory"

    @property
    def tokens_per_s(self) -> float:
        """Tokens the slice produces (decode) or ingests (prefill) per second."""
        return self.tokens / self.time

    @property
    def tokens_per_s_per_chip(self) -> float:
        """``tokens_per_s / n_chips``: the figure to compare across slice sizes."""
        return self.tokens_per_s / self.n_chips

    @property
    def intensity(self) -> float:
        """Arithmetic intensity of the step: FLOPs per byte read or written (FLOPs/byte)."""
        return self.flops / (self.weight_bytes + self.kv_bytes)


def tp_slice_axes(chip: Chip | str, n_chips: int) -> tuple[int, ...]:
    """The ICI axes of the ``n_chips``-chip TPU slice a tensor-parallel group runs on.

    The most nearly cubic slice the generation ships with that many chips, else a block of
    powers of two built by doubling the shortest axis (:func:`scalebook.torus.slice_for`): on
    a 2-D chip (v5e, v6e, v3) 8 chips are 4×2 (one host), 16 are 4×4, 32 are 8×4; on a 3-D chip
    (v4p, v5p) 8 are 2×2×2, 16 are 4×2×2 and 64 the cube 4×4×4. Sizes are largest first.
    ``n_chips`` must be a power of two no larger than the chip's largest slice; GPUs raise
    ``ValueError``.
    """
    chip = get_chip(chip)
    n = positive_int(n_chips, "n_chips")
    if chip.is_gpu:
        raise ValueError(f"{chip.name} is a GPU; its tensor-parallel group is one NVLink node")
    if n & (n - 1) or n > math.prod(chip.max_slice):
        raise ValueError(f"a {chip.name} slice for tensor parallelism needs a power-of-two chip "
                         f"count up to {math.prod(chip.max_slice)}, got {n}")
    return slice_for(chip, n)


def tp_comm_time(cfg: TransformerConfig, chip: Chip | str, *, n_chips: int, tokens: int,
                 dtype: str = "bf16", algorithm: str = "auto") -> float:
    """Seconds of tensor-parallel AllReduces in one forward pass over ``tokens`` tokens.

    Megatron-style tensor parallelism splits attention by head and the MLP by its hidden
    width; each ends with a partial sum of the ``[tokens, D]`` activations, so a layer does two
    AllReduces of ``V = tokens · D · bytes(dtype)`` bytes: ``2 · L`` per forward pass.

    Priced by the solver's one collective entry point,
    :func:`~scalebook.collectives.collective_cost`. On a TPU the group is the slice of
    :func:`tp_slice_axes` (a v5e 8-chip slice is 4×2, not an 8-chip ring) and each AllReduce
    runs over all its real axes at once (the axes' link bandwidths add, each axis a ring only
    where the chip's wraparound rule says so, else a line). On GPUs the group sits in one
    NVLink node and ``algorithm`` picks how each AllReduce runs
    (:data:`scalebook.collectives.ALGORITHMS`): by default the fastest the node offers, which
    on an H100 node is one-shot for a few sequences' activations and NVLS (the switch sums)
    for prefill's; ``"ring"`` is the textbook 2(n−1)-step ring.
    Alpha-beta model, 1 µs per hop or step, which at decode's small messages is mostly
    latency: a v5e 4×2 pays 2·((4−1) + (2−1)) = 8 hops per AllReduce where an 8-chip line
    would pay 14, an 8-GPU H100 node 1 step one-shot where its ring would pay 14.
    Not overlapped with compute. 0 on one chip.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    question = (cfg, chip, positive_int(n_chips, "n_chips"), positive_int(tokens, "tokens"),
                dtype, algorithm)
    if isinstance(dtype, str) and isinstance(algorithm, str):
        return _tp_comm_seconds(*question)
    # not a key the cache can hold: priced uncached, where the dtype and algorithm checks
    # refuse it by name
    return _tp_comm_seconds.__wrapped__(*question)


@functools.lru_cache(maxsize=4096)
def _tp_comm_seconds(cfg: TransformerConfig, chip: Chip, n: int, tokens: int, dtype: str,
                     algorithm: str) -> float:
    """:func:`tp_comm_time`'s pricing, kept per question: a serving search or a class's
    grading asks for the same step's AllReduces hundreds of thousands of times."""
    if n == 1:
        return 0.0
    nbytes = tokens * cfg.d_model * bytes_per_element(dtype)
    if chip.is_gpu and n > chip.chips_per_host:
        raise ValueError(f"tensor parallelism over {n} GPUs leaves the {chip.chips_per_host}-GPU "
                         f"NVLink node; serve with at most {chip.chips_per_host} per copy")
    if chip.is_gpu:
        cost = collective_cost("AllReduce", nbytes, [n], chip, algorithm=algorithm)
    else:
        cost = collective_cost("AllReduce", nbytes, list(tp_slice_axes(chip, n)), chip)
    return 2.0 * cfg.n_layers * float(cost.time)


def kv_regroup_time(cfg: TransformerConfig, chip: Chip | str, *, n_chips: int, tokens: int,
                    dtype: str = "bf16") -> float:
    """Seconds of the AllToAlls that attention split by sequence adds to one forward pass.

    Under ``kv_sharding="batch"`` the projections stay tensor-parallel over all ``n`` chips
    (each chip computes every token's queries for its ``H/n`` heads), but attention runs in
    ``g = n/K`` groups, each on its own sequences (:func:`kv_groups`). The ``g`` chips that
    hold the same KV head in their groups therefore trade queries before attention (each needs
    its own sequences' queries for all ``H/K`` heads of that KV head) and trade the outputs
    back after it: **two AllToAlls per layer** of the ``[tokens, H/K, d_h]`` array those ``g``
    chips hold together, ``V = tokens · (H/K) · d_h · bytes(dtype)`` (the new token's keys and
    values are computed on every chip of the head and need no exchange). Priced by
    :func:`~scalebook.collectives.collective_cost` over ``g`` GPUs, or over the axes of a
    ``g``-chip TPU slice (:func:`tp_slice_axes`; a first cut: the ``g`` chips are taken to
    sit as such a block). 0 when ``g = 1``.
    LLaMA-3 70B on 16 TPU v5e chips at B = 64: 160 AllToAlls of 131 kB.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    tokens = positive_int(tokens, "tokens")
    groups = kv_groups(cfg, n_chips, "batch")
    if groups == 1:
        return 0.0
    nbytes = tokens * cfg.n_heads // cfg.n_kv_heads * cfg.d_head * bytes_per_element(dtype)
    axes = [groups] if chip.is_gpu else list(tp_slice_axes(chip, groups))
    return 2.0 * cfg.n_layers * float(collective_cost("AllToAll", nbytes, axes, chip).time)


def _read_weight_bytes(cfg: TransformerConfig, dtype: str) -> float:
    """Weight bytes a forward pass reads: the matmul weights (the embedding lookup reads only
    one row per token, and the norms are 0.003% of the model)."""
    return float(param_count(cfg).matmul) * bytes_per_element(dtype)


def _step(phase: str, cfg: TransformerConfig, chip: Chip, *, batch: int, tokens: int,
          context_len: int, n_chips: int, weight_flops: float, attention_flops: float,
          kv_bytes: float, weight_dtype: str, compute_dtype: str,
          algorithm: str = "auto", kv_sharding: str = "heads") -> StepCost:
    w_bytes = _read_weight_bytes(cfg, weight_dtype)
    peak, bw = n_chips * chip.flops(compute_dtype), n_chips * chip.hbm_bandwidth
    flops = weight_flops + attention_flops
    t_compute, t_memory = flops / peak, (w_bytes + kv_bytes) / bw
    w_c, w_m = weight_flops / peak, w_bytes / bw
    a_c, a_m = attention_flops / peak, kv_bytes / bw
    t_comm = tp_comm_time(cfg, chip, n_chips=n_chips, tokens=tokens, algorithm=algorithm)
    if _kv_sharding(kv_sharding) == "batch":
        t_comm += kv_regroup_time(cfg, chip, n_chips=n_chips, tokens=tokens)
    return StepCost(phase=phase, batch=batch, tokens=tokens, context_len=context_len,
                    n_chips=n_chips, flops=flops, weight_bytes=w_bytes, kv_bytes=kv_bytes,
                    t_compute=t_compute, t_memory=t_memory, t_comm=t_comm,
                    time=max(w_c, w_m) + max(a_c, a_m) + t_comm,
                    t_weights_compute=w_c, t_weights_memory=w_m,
                    t_attention_compute=a_c, t_attention_memory=a_m,
                    time_overlapped=max(t_compute, t_memory) + t_comm)


def prefill(cfg: TransformerConfig, chip: Chip | str, *, prompt_len: int, batch: int = 1,
            n_chips: int = 1, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
            compute_dtype: str = "bf16", kv_sharding: str = "heads",
            algorithm: str = "auto", causal: bool = False) -> StepCost:
    """Prefill of ``batch`` prompts of ``prompt_len`` tokens each, in one forward pass.

    FLOPs ``= B·T · (2·P_matmul + 4·L·T·H·d_h)``: every weight twice per token, plus attention
    against the whole prompt. By default with no causal discount, as in
    :func:`~scalebook.transformer.attention_flops_per_token` (an upper bound: every query
    scores every key); ``causal=True`` counts only the keys each query may see, token ``i``
    against ``i + 1`` keys, which scales attention's FLOPs by ``(T + 1) / (2T)`` (what a
    causal kernel that skips masked blocks does, about half). Attention is about 13% of an
    8K-token LLaMA-3 70B prefill without the discount; at 128K it is 71% without and 55% with
    it. Bytes: every weight once, and
    the cache written, ``B·T · kv_bytes_per_token``. Time: the phases in turn (weight
    matmuls, attention, AllReduces; see the module). LLaMA-3 70B, one 2,048-token prompt on
    8 H100s in bf16: 3.0e14 FLOPs, 37 ms of compute against 5.3 ms of memory, and 23 ms of
    AllReduces that this model does not overlap (a real server hides part of them).
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    t, b, n = positive_int(prompt_len, "prompt_len"), positive_int(batch, "batch"), positive_int(n_chips, "n_chips")
    tokens = b * t
    kv = _kv_batch_bytes(cfg, b, t * kv_bytes_per_token(cfg, cache_dtype), n, kv_sharding)
    share = (t + 1) / (2 * t) if causal else 1.0
    return _step("prefill", cfg, chip, batch=b, tokens=tokens, context_len=t, n_chips=n,
                 weight_flops=tokens * 2.0 * param_count(cfg).matmul,
                 attention_flops=tokens * float(attention_flops_per_token(cfg, t)) * share,
                 kv_bytes=kv, weight_dtype=weight_dtype, compute_dtype=compute_dtype,
                 algorithm=algorithm, kv_sharding=kv_sharding)


def decode_step(cfg: TransformerConfig, chip: Chip | str, *, batch: int, context_len: int,
                n_chips: int = 1, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                compute_dtype: str = "bf16", kv_sharding: str = "heads",
                algorithm: str = "auto") -> StepCost:
    """One decode step: ``batch`` sequences, each with ``context_len`` cached tokens, get one
    new token each.

    FLOPs: ``B · 2·P_matmul`` in the weight matmuls and ``B · 4·L·S·H·d_h`` in attention
    (``S = context_len``); bytes read: ``P_matmul · bytes(weight_dtype)`` by the matmuls and
    ``B·S · kv_bytes_per_token`` by attention (copied past ``K`` chips under ``"heads"``,
    :func:`kv_replication`). The kernels run in turn, so

        time = max(2·B·P / (n·C), P·b_w / (n·W)) + max(4·B·L·S·H·d_h / (n·C), B·S·c / (n·W)) + t_comm

    (s); ``time_overlapped`` is the roofline of the totals, a lower bound. The weight matmuls
    turn compute-bound near ``C·b_w / (2·W)`` sequences whatever ``S``; attention never does.
    At small ``B`` the weights dominate, so throughput grows with ``B`` almost for free; the
    step's ``time`` is the time per output token each sequence sees. LLaMA-3 70B on 8 H100s,
    B = 1, S = 4,096 in bf16: 5.2 ms of memory time (the compute takes 19 µs) plus 2.3 ms of
    AllReduces, 7.5 ms per token.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    b, s, n = positive_int(batch, "batch"), positive_int(context_len, "context_len"), positive_int(n_chips, "n_chips")
    kv = _kv_batch_bytes(cfg, b, s * kv_bytes_per_token(cfg, cache_dtype), n, kv_sharding)
    return _step("decode", cfg, chip, batch=b, tokens=b, context_len=s, n_chips=n,
                 weight_flops=b * 2.0 * param_count(cfg).matmul,
                 attention_flops=b * float(attention_flops_per_token(cfg, s)), kv_bytes=kv,
                 weight_dtype=weight_dtype, compute_dtype=compute_dtype, algorithm=algorithm,
                 kv_sharding=kv_sharding)


def decode_critical_batch(cfg: TransformerConfig, chip: Chip | str, *, context_len: int = 0,
                          n_chips: int = 1, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                          compute_dtype: str = "bf16", overlap: bool = False,
                          kv_sharding: str = "heads") -> float:
    """The batch at which decode turns compute-bound (sequences); ``inf`` if it never does.

    ``overlap=False`` (the default), the phased model of :func:`decode_step`: the weight
    matmuls balance when
    ``2·B·P / C = P·b_w / W_hbm``, so ``B* = C · b_w / (2 · W_hbm)`` whatever the context
    (295 for bf16 on an H100, 243 on a TPU v5e); attention against the cache stays
    memory-bound at every batch.

    ``overlap=True``: the balance of the step's *totals*, as if
    attention's cache reads overlapped the matmuls' compute. Setting ``t_compute = t_memory``
    (the chip count cancels):

        B · f / peak = (W + B · c) / W_hbm
        B* = W / (W_hbm · f / peak − c)

    with ``f = 2·P_matmul + 4·L·S·H·d_h`` FLOPs and ``c = S · kv_bytes_per_token`` bytes per
    sequence (times :func:`kv_replication`), ``W = P_matmul · bytes(weight_dtype)``. At
    ``S = 0`` it equals the phased value; it grows with ``S`` and is ``inf`` once
    ``c / W_hbm ≥ f / peak`` (LLaMA-3 70B on an H100 from about 1,500 cached tokens), an
    artefact of the overlap assumption, not a property of the kernels.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    s = positive(context_len, "context_len", allow_zero=True)
    w = _read_weight_bytes(cfg, weight_dtype)
    if not overlap:
        return w / (chip.hbm_bandwidth * 2.0 * param_count(cfg).matmul / chip.flops(compute_dtype))
    f = 2.0 * param_count(cfg).matmul + attention_flops_per_token(cfg, s)
    c = s * kv_bytes_per_token(cfg, cache_dtype) * kv_replication(cfg, n_chips, kv_sharding)
    margin = chip.hbm_bandwidth * f / chip.flops(compute_dtype) - c
    return math.inf if margin <= 0 else w / margin


def overlap_bound_limit(cfg: TransformerConfig, chip: Chip | str, *,
                        weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                        compute_dtype: str = "bf16") -> int:
    """The fewest cached tokens per sequence from which the overlapped bound of
    :func:`decode_critical_batch` finds no critical batch (returns ``inf``), on one chip.

    A bisection on :func:`decode_critical_batch` itself, so the number is that function's and
    not a second formula: it is the first ``S`` where a sequence's cache takes longer to read
    than all its FLOPs take to compute (``S·c / W_hbm ≥ f(S) / peak``). LLaMA-3 8B on an H100
    in bf16: 394 tokens. A property of the overlapped bound; the weight matmuls alone still
    turn compute-bound near ``C·b_w / (2·W_hbm)`` at any context.
    """
    def finds_none(s: int) -> bool:
        return math.isinf(decode_critical_batch(cfg, chip, context_len=s, weight_dtype=weight_dtype,
                                                cache_dtype=cache_dtype, overlap=True,
                                                compute_dtype=compute_dtype))

    low, high = 0, 1
    while not finds_none(high):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        if finds_none(mid):
            high = mid
        else:
            low = mid
    return high


def max_batch(cfg: TransformerConfig, chip: Chip | str, *, context_len: int, n_chips: int = 1,
              weight_dtype: str = "bf16", cache_dtype: str = "bf16",
              reserve: float = 0.0, kv_sharding: str = "heads") -> int:
    """The most sequences of ``context_len`` tokens whose cache fits beside the weights.

    ``"heads"``: ``floor((n · HBM · (1 − reserve) − weight_bytes) / (S · kv_bytes_per_token · r))``
    with ``r`` = :func:`kv_replication` (the cache's copies past ``K`` chips). ``"batch"``:
    each of the ``g`` = :func:`kv_groups` groups holds ``floor(free / g / (S · kv_bytes_per_token))``
    sequences, ``g`` times that in all (no copies). 0 when the weights alone do not fit.
    ``reserve`` is the fraction of HBM kept for activations, the runtime and fragmentation
    (0 to below 1). LLaMA-3 70B in bf16 on 8 H100s at 8,192 tokens: (640 − 141.1) GB /
    2.68 GB = 185 sequences.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    s, n = positive_int(context_len, "context_len"), positive_int(n_chips, "n_chips")
    reserve = float(reserve)
    if not 0.0 <= reserve < 1.0:
        raise ValueError(f"reserve must be a fraction in [0, 1), got {reserve!r}")
    free = n * chip.hbm_bytes * (1.0 - reserve) - weight_bytes(cfg, weight_dtype)
    if free <= 0:
        return 0
    per_seq = s * kv_bytes_per_token(cfg, cache_dtype)
    groups = kv_groups(cfg, n, kv_sharding)
    if groups > 1:
        return groups * int(free / groups // per_seq)
    return int(free // (per_seq * kv_replication(cfg, n, kv_sharding)))


def smallest_slice(cfg: TransformerConfig, chip: Chip | str, *, context_len: int, batch: int = 1,
                   weight_dtype: str = "bf16", cache_dtype: str = "bf16", reserve: float = 0.0,
                   sizes: Sequence[int] | None = None, kv_sharding: str = "heads") -> int:
    """The fewest chips, among ``sizes``, that hold the weights and ``batch`` caches of
    ``context_len`` tokens.

    ``sizes`` defaults to the powers of two up to the chip's largest slice or NVLink domain
    (tensor parallelism wants the KV heads, and the chips of a slice, to split evenly). Raises
    ``ValueError`` when none is big enough. LLaMA-3 70B in bf16, one 8,192-token sequence:
    2 H100s, 16 TPU v5e chips (141 GB of weights on 16 GB chips).
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    b = positive_int(batch, "batch")
    if sizes is None:
        largest = math.prod(chip.max_slice)
        sizes = [2 ** k for k in range(int(math.log2(largest)) + 1)]
    for n in sorted(positive_int(v, "slice size") for v in sizes):
        if max_batch(cfg, chip, context_len=context_len, n_chips=n, weight_dtype=weight_dtype,
                     cache_dtype=cache_dtype, reserve=reserve, kv_sharding=kv_sharding) >= b:
            return n
    raise ValueError(f"{cfg.name or 'the model'} with {b} sequence(s) of {context_len} tokens does "
                     f"not fit on any of {list(sizes)} {chip.name} chips")


def latency_throughput(cfg: TransformerConfig, chip: Chip | str, *, batches: Sequence[int],
                       context_len: int, n_chips: int = 1, weight_dtype: str = "bf16",
                       cache_dtype: str = "bf16", compute_dtype: str = "bf16",
                       kv_sharding: str = "heads") -> list[StepCost]:
    """Decode steps for each batch size in ``batches``: the latency–throughput curve.

    Each point's ``time`` is the time per output token a user sees; its
    ``tokens_per_s_per_chip`` is what the operator pays for. Along the memory-bound stretch the
    time barely moves while throughput grows with ``B``; once the weight matmuls turn
    compute-bound (``decode_critical_batch(..., overlap=False)``) the time grows in proportion
    to ``B`` and throughput levels off. Batches whose cache does not fit are kept (check them
    against :func:`max_batch`).
    """
    return [decode_step(cfg, chip, batch=b, context_len=context_len, n_chips=n_chips,
                        weight_dtype=weight_dtype, cache_dtype=cache_dtype,
                        compute_dtype=compute_dtype, kv_sharding=kv_sharding) for b in batches]


class _ServingOptions(TypedDict):
    """The options :func:`max_batch` and :func:`decode_step` share, passed on together."""

    context_len: int
    n_chips: int
    weight_dtype: str
    cache_dtype: str
    kv_sharding: str


def best_batch(cfg: TransformerConfig, chip: Chip | str, *, latency_target: float,
               context_len: int, n_chips: int = 1, weight_dtype: str = "bf16",
               cache_dtype: str = "bf16", compute_dtype: str = "bf16",
               reserve: float = 0.0, kv_sharding: str = "heads",
               algorithm: str = "auto") -> int:
    """The largest batch whose decode step (:func:`decode_step`'s ``time``, the phased model,
    its AllReduces by ``algorithm``) meets ``latency_target`` (s per output token) and whose
    cache fits; 0 when not even one sequence does.

    The step time grows with ``B``, so this is a bisection over ``1 ≤ B ≤ max_batch``.
    """
    target = positive(latency_target, "latency_target")
    kw = _ServingOptions(context_len=context_len, n_chips=n_chips, weight_dtype=weight_dtype,
                         cache_dtype=cache_dtype, kv_sharding=kv_sharding)
    fits = max_batch(cfg, chip, reserve=reserve, **kw)

    def meets(b: int) -> bool:
        return decode_step(cfg, chip, batch=b, compute_dtype=compute_dtype, algorithm=algorithm,
                           **kw).time <= target

    if fits == 0 or not meets(1):
        return 0
    low, high = 1, fits
    while low < high:
        mid = (low + high + 1) // 2
        if meets(mid):
            low = mid
        else:
            high = mid - 1
    return low


def cost_per_million_tokens(tokens_per_s: float, *, n_chips: int,
                            price_per_chip_hour: float) -> float:
    """What a million tokens cost: ``n_chips · price / 3600 / tokens_per_s · 1e6``.

    ``tokens_per_s`` is the whole slice's rate; the price is per chip-hour, in any currency.
    8 chips at 2.00 per hour producing 1,000 tokens/s: 4.44 per million tokens.
    """
    rate = positive(tokens_per_s, "tokens_per_s")
    price = positive(price_per_chip_hour, "price_per_chip_hour")
    return positive_int(n_chips, "n_chips") * price / 3600.0 / rate * 1e6



# --------------------------------------------------------------------------- serving pieces


@dataclass(frozen=True)
class RequestRate:
    """Requests a slice finishes per second when decode is the bottleneck.

    Attributes:
        per_slice: ``tokens_per_s / reply_len`` (requests/s) for the whole slice.
        per_chip: ``per_slice / n_chips`` (requests/s per chip).
    """

    per_slice: float
    per_chip: float


def requests_per_second(tokens_per_s: float, *, reply_len: int, n_chips: int = 1) -> RequestRate:
    """Requests per second from a slice's decode rate: ``tokens_per_s / reply_len``.

    Each request needs ``reply_len`` decode steps' worth of its own tokens, so a slice that
    produces ``tokens_per_s`` output tokens finishes that many over ``reply_len`` requests per
    second (and ``/ n_chips`` per chip). Decode only: the prompts' prefill runs elsewhere (a
    disaggregated pool) or is counted separately. 8 chips at 1,000 tokens/s with 250-token
    replies: 4 requests/s, 0.5 per chip.
    """
    rate = positive(tokens_per_s, "tokens_per_s")
    r = positive_int(reply_len, "reply_len")
    n = positive_int(n_chips, "n_chips")
    return RequestRate(per_slice=rate / r, per_chip=rate / r / n)


@dataclass(frozen=True)
class ContinuousBatching:
    """The steady state of a decode server under continuous batching.

    ``batch`` sequences are in flight; each step gives each one token; a sequence that has its
    ``reply_len`` tokens leaves and a new one (its ``prompt_len``-token prompt prefilled
    elsewhere) takes its place at once. In steady state the sequences' progress is spread
    evenly over ``0 … reply_len − 1`` tokens.

    Attributes:
        finished_per_step: sequences that finish each step, ``B / R`` (sequences per step).
        kv_tokens_freed_per_step: cache tokens released each step, ``(B / R) · (T + R)``.
        mean_context: cache tokens per sequence on average, ``T + (R − 1) / 2``.
        mean_kv_bytes: the batch's cache on average, ``B · mean_context · kv_bytes_per_token``
            (bytes), the figure to size HBM by (the peak is ``B · (T + R)`` if all start at
            once); None when no ``kv_bytes_per_token`` was given.
        requests_per_s: requests finished per second, ``B / (R · t_step)``; None when no
            ``step_time`` was given.
        prefill_tokens_per_s: prompt tokens the prefill side must supply,
            ``requests_per_s · T`` (tokens/s); None when no ``step_time`` was given.
    """

    finished_per_step: float
    kv_tokens_freed_per_step: float
    mean_context: float
    mean_kv_bytes: float | None
    requests_per_s: float | None
    prefill_tokens_per_s: float | None


def continuous_batching(*, batch: int, prompt_len: int, reply_len: int,
                        step_time: float | None = None,
                        kv_bytes_per_token: float | None = None) -> ContinuousBatching:
    """The serving queue in steady state (:class:`ContinuousBatching`): with ``B`` sequences in
    flight, replies of ``R`` tokens and prompts of ``T``, each step finishes ``B / R``
    sequences and frees ``(B / R)(T + R)`` cache tokens, and the batch holds on average
    ``B (T + (R − 1)/2)`` cache tokens. ``step_time`` is the decode step (s), taken the same at
    every step (a first cut: it grows a little with the context); only the rates need it, and
    only ``mean_kv_bytes`` needs ``kv_bytes_per_token`` (each output is None without its input).

    B = 64, T = 2,048, R = 2,048, 20 ms per step: 1/32 sequence per step, 128 cache tokens
    freed per step, 3,071.5 tokens per sequence on average, 1.56 requests/s.
    """
    b = positive_int(batch, "batch")
    t = positive_int(prompt_len, "prompt_len")
    r = positive_int(reply_len, "reply_len")
    finished = b / r
    mean_context = t + (r - 1) / 2
    requests = None if step_time is None else finished / positive(step_time, "step_time")
    kv_bytes = (None if kv_bytes_per_token is None
                else b * mean_context * positive(kv_bytes_per_token, "kv_bytes_per_token"))
    return ContinuousBatching(finished_per_step=finished,
                              kv_tokens_freed_per_step=finished * (t + r),
                              mean_context=mean_context, mean_kv_bytes=kv_bytes,
                              requests_per_s=requests,
                              prefill_tokens_per_s=None if requests is None else requests * t)


def decode_chips_per_prefill_chip(mix: Sequence[tuple[float, int, int]], *,
                         prefill_tokens_per_s_per_chip: float,
                         decode_tokens_per_s_per_chip: float) -> float:
    """How many decode chips a disaggregated service needs per prefill chip for a traffic mix.

    ``mix`` is ``[(share, prompt_len, reply_len), ...]``: the fraction of requests of each
    kind (shares are normalised). Per request, prefill takes ``T / r_prefill`` chip-seconds and
    decode ``R / r_decode``, so

        decode chips / prefill chips = (Σ share·R / r_decode) / (Σ share·T / r_prefill)

    (dimensionless). The rates are per chip at the pools' own batch and context (a first cut:
    one rate per pool for the whole mix). Chat, 2,048 in and 2,048 out, with prefill at
    8,000 and decode at 400 tokens/s per chip: 20 decode chips per prefill chip.
    """
    if isinstance(mix, (str, bytes)) or not isinstance(mix, Sequence) or not mix:
        raise ValueError("mix must be a non-empty list of (share, prompt_len, reply_len)")
    r_pf = positive(prefill_tokens_per_s_per_chip, "prefill_tokens_per_s_per_chip")
    r_dec = positive(decode_tokens_per_s_per_chip, "decode_tokens_per_s_per_chip")
    prefill_s = decode_s = 0.0
    for entry in mix:
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise ValueError(f"each mix entry is (share, prompt_len, reply_len), got {entry!r}")
        share = positive(entry[0], "share")
        prefill_s += share * positive_int(entry[1], "prompt_len") / r_pf
        decode_s += share * positive_int(entry[2], "reply_len") / r_dec
    return decode_s / prefill_s


def decode_step_from_counts(n_params: float, kv_bytes_per_token: float, chip: Chip | str, *,
                            batch: int, context_len: int, n_chips: int = 1,
                            weight_dtype: str = "bf16",
                            compute_dtype: str = "bf16") -> StepCost:
    """A decode step from a parameter count and the cache bytes per token alone.

    The weight matmuls do ``2 · B · P`` FLOPs on ``P · bytes(weight_dtype)`` bytes; attention
    reads ``B · S · kv_bytes_per_token`` bytes and its FLOPs are left out (it is memory-bound:
    :attr:`StepCost.weights_bound`'s docstring), so

        time = max(2·B·P / (n·C), P·b_w / (n·W_hbm)) + B·S·c / (n·W_hbm)      (s)

    Without the model's width there are no tensor-parallel AllReduces to price: ``t_comm = 0``
    (add :func:`tp_comm_time` when the shape is known). The embedding is counted as matmul
    weights (a first cut: a few percent of a large model). 70e9 parameters, 327,680 bytes per
    token, B = 1, S = 4,096 on 8 H100s: 5.3 ms.
    """
    chip = get_chip(chip)
    p = positive(n_params, "n_params")
    c = positive(kv_bytes_per_token, "kv_bytes_per_token")
    b, s, n = positive_int(batch, "batch"), positive_int(context_len, "context_len"), positive_int(n_chips, "n_chips")
    peak, bw = n * chip.flops(compute_dtype), n * chip.hbm_bandwidth
    w_bytes, kv = p * bytes_per_element(weight_dtype), b * s * c
    flops = 2.0 * b * p
    w_c, w_m, a_m = flops / peak, w_bytes / bw, kv / bw
    return StepCost(phase="decode", batch=b, tokens=b, context_len=s, n_chips=n, flops=flops,
                    weight_bytes=w_bytes, kv_bytes=kv, t_compute=w_c,
                    t_memory=(w_bytes + kv) / bw, t_comm=0.0, time=max(w_c, w_m) + a_m,
                    t_weights_compute=w_c, t_weights_memory=w_m, t_attention_compute=0.0,
                    t_attention_memory=a_m, time_overlapped=max(w_c, (w_bytes + kv) / bw))


@dataclass(frozen=True)
class WeightStationary2D:
    """Communication of one decode step with the weights sharded over a 2-D ``x × y`` mesh.

    Attributes:
        x, y: the mesh (``x · y = n_chips``): the model dimension D is split over ``x``, the
            hidden dimensions (MLP width F, attention heads) over ``y``.
        bytes_x, bytes_y: bytes of each AllReduce over ``x`` and over ``y`` in one layer, summed
            over its attention and MLP blocks.
        t_comm: the step's AllReduces (s), ``L`` layers, not overlapped.
    """

    x: int
    y: int
    bytes_x: float
    bytes_y: float
    t_comm: float


def _all_reduce_axis(nbytes: float, n: int, chip: Chip) -> float:
    """One AllReduce of ``nbytes`` over an ``n``-chip axis: NVLink inside a GPU node, or a
    TPU ICI axis (a ring where it wraps around)."""
    if n == 1 or nbytes == 0:
        return 0.0
    return float(collective_cost("AllReduce", nbytes, [n], chip).time)


def weight_stationary_2d(cfg: TransformerConfig, chip: Chip | str, *, batch: int, x: int, y: int,
                         dtype: str = "bf16") -> WeightStationary2D:
    """Decode with every weight sharded over a 2-D mesh, ``W_in[D_x, F_y]`` and
    ``W_out[F_y, D_x]`` (2-D weight-stationary; Pope et al. 2023), and its communication.

    Activations enter a block as ``[B, D_x]`` (replicated over ``y``). The first matmul
    contracts over D, split over ``x``, so its ``[B, F_y]`` result is AllReduced over ``x``;
    the second contracts over F, split over ``y``, so its ``[B, D_x]`` result is AllReduced over
    ``y``. Per layer, with ``F`` the MLP width and ``A = (H + 2K)·d_h`` the attention
    projections' width (queries, keys, values; the attention itself runs on each chip's heads):

        bytes_x = B · (2F + A) / y · b          bytes_y = 2 · B · D / x · b

    The gated MLP's gate and up projections are two matmuls contracting over ``D_x``, so their
    two ``[B, F_y]`` partial sums are AllReduced over ``x`` before the elementwise gate: ``2F``,
    not ``F`` (LLaMA-3 70B: (2F + A)/(F + A) = 1.74 times the one-projection count).

    With ``x = 1`` this is 1-D tensor parallelism (two AllReduces of ``B·D`` per layer,
    :func:`tp_comm_time`); with ``x · y = n`` the volume per chip falls as about ``1/√n`` at
    the best ``x``, where 1-D's stays ``2·B·D`` whatever ``n``. Each axis is an NVLink group
    on a GPU (one node) or an ICI axis on a TPU, alpha-beta priced, one AllReduce per partial
    sum (gate, up, the attention projections over ``x``; the MLP and attention outputs over
    ``y``). A first cut: the cache, split by KV head over ``y``, is not priced here. On a 2-D TPU, ``x`` and ``y`` must be the slice's own axes
    (:func:`tp_slice_axes`: 4 and 2 for 8 chips).
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    b = positive_int(batch, "batch")
    x, y = positive_int(x, "x"), positive_int(y, "y")
    if chip.is_gpu and x * y > chip.chips_per_host:
        raise ValueError(f"a {x}x{y} mesh leaves the {chip.chips_per_host}-GPU NVLink node")
    if not chip.is_gpu and len(chip.max_slice) == 2 and x * y > 1 and \
            sorted((x, y)) != sorted(tp_slice_axes(chip, x * y)):
        raise ValueError(f"a {chip.name} slice of {x * y} chips has axes "
                         f"{'x'.join(map(str, tp_slice_axes(chip, x * y)))}; map x and y onto them")
    size = bytes_per_element(dtype)
    width_attn = (cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.d_head
    bytes_x = b * (2 * cfg.d_ff + width_attn) / y * size if x > 1 else 0.0
    bytes_y = 2 * b * cfg.d_model / x * size if y > 1 else 0.0
    # each partial sum its own AllReduce: gate, up and the attention projections over x,
    # the MLP's and attention's outputs over y
    t_layer = 0.0
    if x > 1:
        t_layer += (2 * _all_reduce_axis(b * cfg.d_ff / y * size, x, chip)
                    + _all_reduce_axis(b * width_attn / y * size, x, chip))
    if y > 1:
        t_layer += 2 * _all_reduce_axis(b * cfg.d_model / x * size, y, chip)
    return WeightStationary2D(x=x, y=y, bytes_x=bytes_x, bytes_y=bytes_y,
                              t_comm=cfg.n_layers * t_layer)


#: The largest TPU tensor-parallel group :func:`model_parallel_limit` tries by default: a serving
#: copy spread over more chips than this is not a layout anyone runs (and v5p's largest slices
#: have no power-of-two shape).
TPU_TP_LIMIT = 256


def model_parallel_limit(cfg: TransformerConfig, chip: Chip | str, *, batch: int,
                         context_len: int, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                         kv_sharding: str = "heads", sizes: Sequence[int] | None = None,
                         algorithm: str = "auto") -> float:
    """The fewest chips per model copy past which tensor parallelism's AllReduces outweigh the
    weight reads it splits: the smallest ``n`` in ``sizes`` such that at ``n`` **and at every
    larger size** ``t_comm(m) > t_weights_memory(m)``; ``inf`` if there is none.

    A first-cut criterion, stated as such. What more chips divide is the weights' HBM time,
    ``t_weights_memory = P·b_w / (n·W_hbm)``; what they add is ``t_comm`` (``2·L`` AllReduces
    of ``B·D`` bytes, :func:`tp_comm_time`, on the slice's real axes or by ``algorithm`` in an
    NVLink node). The cache's reads are left out: under ``"heads"`` they stop splitting past
    ``K`` chips (so comparing against the whole ``t_memory`` would never cross at a long
    context), under ``"batch"`` they split at any ``n`` (so the limit is conservative there).
    ``t_comm`` is not monotonic in ``n`` (a 16-long axis may wrap around where an 8-long one
    does not: LLaMA-3 70B at ``B = 64`` on TPU v5e takes 4.05 ms at 2 chips, 3.44 at 4, 8.15
    at 64 and 7.27 at 128), so the limit asks the inequality of every larger size, and
    the answer can only fall when ``sizes`` gains larger entries that also cross. With only
    link bandwidth (no per-hop latency) and the AllReduce moving about ``2·V`` over the one-way
    link bandwidth ``W_ici``, the crossing is near
    ``n* ≈ P·b_w·W_ici / (4·L·B·D·b_act·W_hbm)``. ``sizes`` defaults to the powers of two up to
    the chip's NVLink node, or up to :data:`TPU_TP_LIMIT` chips of a TPU slice.
    ``context_len`` and the cache options are passed to :func:`decode_step` (they do not move
    this criterion). LLaMA-3 8B on TPU v5e, B = 1, S = 4,096: 32; on one H100 node, none (inf).
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    if sizes is None:
        largest = chip.chips_per_host if chip.is_gpu else min(math.prod(chip.max_slice),
                                                              TPU_TP_LIMIT)
        sizes = [2 ** k for k in range(1, int(math.log2(largest)) + 1)]
    limit = math.inf
    for n in sorted((positive_int(v, "slice size") for v in sizes), reverse=True):
        st = decode_step(cfg, chip, batch=batch, context_len=context_len, n_chips=n,
                         weight_dtype=weight_dtype, cache_dtype=cache_dtype,
                         kv_sharding=kv_sharding, algorithm=algorithm)
        if st.t_comm <= st.t_weights_memory:
            break
        limit = float(n)
    return limit

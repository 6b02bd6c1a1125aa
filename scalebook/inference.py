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
:func:`tp_comm_time`). The cache splits by KV head, so only over ``min(n_chips, K)`` chips:
past ``K`` chips each KV head, and its cache, is copied on ``n_chips / K`` of them
(:func:`kv_replication`). The model:

    t_compute = FLOPs / (n_chips · peak)           t_memory = bytes read / (n_chips · W_hbm)
    t_step    = max(t_compute, t_memory) + t_comm  (the collectives are not overlapped)

Units: counts, FLOPs, bytes, seconds, tokens per second; prices in currency per chip-hour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from scalebook.collectives import all_reduce, gpu_all_reduce, has_wraparound
from scalebook.hardware import Chip, bytes_per_element, get_chip
from scalebook.transformer import TransformerConfig, attention_flops_per_token, param_count
from scalebook.validation import positive, positive_int

__all__ = [
    "weight_bytes",
    "kv_bytes_per_token",
    "kv_replication",
    "StepCost",
    "prefill",
    "decode_step",
    "decode_critical_batch",
    "tp_comm_time",
    "max_batch",
    "smallest_slice",
    "latency_throughput",
    "best_batch",
    "cost_per_million_tokens",
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


def kv_replication(cfg: TransformerConfig, n_chips: int) -> float:
    """How many copies of the cache a tensor-parallel slice keeps: ``n_chips / min(n_chips, K)``.

    The cache splits by KV head, so ``K`` heads spread over at most ``K`` chips; on more, each
    head's keys and values sit on ``n_chips / K`` chips (LLaMA-3 70B, ``K = 8``, on 16 chips:
    2 copies). 1 up to ``K`` chips.
    """
    n = positive_int(n_chips, "n_chips")
    return n / min(n, _cfg(cfg).n_kv_heads)


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
        t_compute: ``flops / (n_chips · peak)`` (s).
        t_memory: ``(weight_bytes + kv_bytes) / (n_chips · W_hbm)`` (s).
        t_comm: tensor-parallel AllReduces of the step (s), 0 on one chip.
        time: ``max(t_compute, t_memory) + t_comm`` (s).
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

    @property
    def bound(self) -> str:
        """"compute" or "memory": which of the two the step waits on (ties count as compute)."""
        return "compute" if self.t_compute >= self.t_memory else "memory"

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


def tp_comm_time(cfg: TransformerConfig, chip: Chip | str, *, n_chips: int, tokens: int,
                 dtype: str = "bf16") -> float:
    """Seconds of tensor-parallel AllReduces in one forward pass over ``tokens`` tokens.

    Megatron-style tensor parallelism splits attention by head and the MLP by its hidden
    width; each ends with a partial sum of the ``[tokens, D]`` activations, so a layer does two
    AllReduces of ``tokens · D · bytes(dtype)`` bytes: ``2 · L`` per forward pass. On a TPU the
    ``n_chips`` form one ICI axis (a ring where :func:`~scalebook.collectives.has_wraparound`
    says so, else a line); on GPUs they sit in one NVLink node. Each AllReduce is costed with
    the alpha-beta model of :mod:`scalebook.collectives` (1 µs per hop), which at decode's small
    messages is mostly latency. 0 on one chip.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    n = positive_int(n_chips, "n_chips")
    tokens = positive_int(tokens, "tokens")
    if n == 1:
        return 0.0
    nbytes = tokens * cfg.d_model * bytes_per_element(dtype)
    if chip.is_gpu:
        if n > chip.chips_per_host:
            raise ValueError(f"tensor parallelism over {n} GPUs leaves the {chip.chips_per_host}-GPU "
                             f"NVLink node; serve with at most {chip.chips_per_host} per copy")
        one = gpu_all_reduce(nbytes, n, chip)
    else:
        one = all_reduce(nbytes, n, chip, wraparound=has_wraparound(chip, n))
    return 2.0 * cfg.n_layers * float(one.time)


def _read_weight_bytes(cfg: TransformerConfig, dtype: str) -> float:
    """Weight bytes a forward pass reads: the matmul weights (the embedding lookup reads only
    one row per token, and the norms are 0.003% of the model)."""
    return float(param_count(cfg).matmul) * bytes_per_element(dtype)


def _step(phase: str, cfg: TransformerConfig, chip: Chip, *, batch: int, tokens: int,
          context_len: int, n_chips: int, flops: float, kv_bytes: float, weight_dtype: str,
          compute_dtype: str) -> StepCost:
    w_bytes = _read_weight_bytes(cfg, weight_dtype)
    t_compute = flops / (n_chips * chip.flops(compute_dtype))
    t_memory = (w_bytes + kv_bytes) / (n_chips * chip.hbm_bandwidth)
    t_comm = tp_comm_time(cfg, chip, n_chips=n_chips, tokens=tokens)
    return StepCost(phase=phase, batch=batch, tokens=tokens, context_len=context_len,
                    n_chips=n_chips, flops=flops, weight_bytes=w_bytes, kv_bytes=kv_bytes,
                    t_compute=t_compute, t_memory=t_memory, t_comm=t_comm,
                    time=max(t_compute, t_memory) + t_comm)


def prefill(cfg: TransformerConfig, chip: Chip | str, *, prompt_len: int, batch: int = 1,
            n_chips: int = 1, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
            compute_dtype: str = "bf16") -> StepCost:
    """Prefill of ``batch`` prompts of ``prompt_len`` tokens each, in one forward pass.

    FLOPs ``= B·T · (2·P_matmul + 4·L·T·H·d_h)``: every weight twice per token, plus attention
    against the whole prompt (no causal discount, as in
    :func:`~scalebook.transformer.attention_flops_per_token`). Bytes: every weight once, and
    the cache written, ``B·T · kv_bytes_per_token``. LLaMA-3 70B, one 2,048-token prompt on
    8 H100s in bf16: 3.0e14 FLOPs, 37 ms of compute against 5.3 ms of memory (and 23 ms of
    AllReduces, which a real server overlaps in part).
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    t, b, n = positive_int(prompt_len, "prompt_len"), positive_int(batch, "batch"), positive_int(n_chips, "n_chips")
    tokens = b * t
    flops = tokens * (2.0 * param_count(cfg).matmul + attention_flops_per_token(cfg, t))
    kv = tokens * kv_bytes_per_token(cfg, cache_dtype) * kv_replication(cfg, n)
    return _step("prefill", cfg, chip, batch=b, tokens=tokens, context_len=t, n_chips=n,
                 flops=float(flops), kv_bytes=kv,
                 weight_dtype=weight_dtype, compute_dtype=compute_dtype)


def decode_step(cfg: TransformerConfig, chip: Chip | str, *, batch: int, context_len: int,
                n_chips: int = 1, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                compute_dtype: str = "bf16") -> StepCost:
    """One decode step: ``batch`` sequences, each with ``context_len`` cached tokens, get one
    new token each.

    FLOPs ``= B · (2·P_matmul + 4·L·S·H·d_h)`` with ``S = context_len``; bytes read
    ``= P_matmul · bytes(weight_dtype) + B·S · kv_bytes_per_token`` (times the cache's copies
    past ``K`` chips, :func:`kv_replication`). At small ``B`` the weights dominate and the
    step takes about ``weight_bytes / (n_chips · W_hbm)`` whatever ``B`` is, so throughput grows
    with ``B`` for free; the step's ``time`` is the time per output token each sequence sees.
    LLaMA-3 70B on 8 H100s, B = 1, S = 4,096 in bf16: 5.2 ms of memory time (the compute
    takes 19 µs) plus 2.3 ms of AllReduces, 7.5 ms per token.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    b, s, n = positive_int(batch, "batch"), positive_int(context_len, "context_len"), positive_int(n_chips, "n_chips")
    flops = b * (2.0 * param_count(cfg).matmul + attention_flops_per_token(cfg, s))
    kv = b * s * kv_bytes_per_token(cfg, cache_dtype) * kv_replication(cfg, n)
    return _step("decode", cfg, chip, batch=b, tokens=b, context_len=s, n_chips=n,
                 flops=float(flops), kv_bytes=kv,
                 weight_dtype=weight_dtype, compute_dtype=compute_dtype)


def decode_critical_batch(cfg: TransformerConfig, chip: Chip | str, *, context_len: int = 0,
                          n_chips: int = 1, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                          compute_dtype: str = "bf16") -> float:
    """The batch at which a decode step turns compute-bound (sequences); ``inf`` if it never does.

    Setting ``t_compute = t_memory`` (the chip count cancels, since both divide by it):

        B · f / peak = (W + B · c) / W_hbm
        B* = W / (W_hbm · f / peak − c)

    with ``f = 2·P_matmul + 4·L·S·H·d_h`` FLOPs and ``c = S · kv_bytes_per_token`` bytes per
    sequence (times :func:`kv_replication` past ``K`` chips), ``W = P_matmul · bytes(weight_dtype)``. Without a cache (``S = 0``) this is
    ``B* = peak · bytes(weight_dtype) / (2 · W_hbm)`` for any model: 295 for bf16 on an H100,
    243 on a TPU v5e. When a sequence's cache costs more time to read than its FLOPs take to
    compute (``c / W_hbm ≥ f / peak``; LLaMA-3 70B on an H100 from about 1,500 cached tokens),
    adding sequences never makes the step compute-bound: ``inf``.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    s = positive(context_len, "context_len", allow_zero=True)
    f = 2.0 * param_count(cfg).matmul + attention_flops_per_token(cfg, s)
    c = s * kv_bytes_per_token(cfg, cache_dtype) * kv_replication(cfg, n_chips)
    w = _read_weight_bytes(cfg, weight_dtype)
    margin = chip.hbm_bandwidth * f / chip.flops(compute_dtype) - c
    return math.inf if margin <= 0 else w / margin


def max_batch(cfg: TransformerConfig, chip: Chip | str, *, context_len: int, n_chips: int = 1,
              weight_dtype: str = "bf16", cache_dtype: str = "bf16",
              reserve: float = 0.0) -> int:
    """The most sequences of ``context_len`` tokens whose cache fits beside the weights.

    ``floor((n_chips · HBM · (1 − reserve) − weight_bytes) / (context_len · kv_bytes_per_token · r))``
    with ``r`` = :func:`kv_replication` (the cache's copies past ``K`` chips); 0 when the
    weights alone do not fit. ``reserve`` is the fraction of HBM kept for
    activations, the runtime and fragmentation (0 to below 1). LLaMA-3 70B in bf16 on 8 H100s
    at 8,192 tokens: (640 − 141.1) GB / 2.68 GB = 185 sequences.
    """
    cfg, chip = _cfg(cfg), get_chip(chip)
    s, n = positive_int(context_len, "context_len"), positive_int(n_chips, "n_chips")
    reserve = float(reserve)
    if not 0.0 <= reserve < 1.0:
        raise ValueError(f"reserve must be a fraction in [0, 1), got {reserve!r}")
    free = n * chip.hbm_bytes * (1.0 - reserve) - weight_bytes(cfg, weight_dtype)
    if free <= 0:
        return 0
    return int(free // (s * kv_bytes_per_token(cfg, cache_dtype) * kv_replication(cfg, n)))


def smallest_slice(cfg: TransformerConfig, chip: Chip | str, *, context_len: int, batch: int = 1,
                   weight_dtype: str = "bf16", cache_dtype: str = "bf16", reserve: float = 0.0,
                   sizes: Sequence[int] | None = None) -> int:
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
                     cache_dtype=cache_dtype, reserve=reserve) >= b:
            return n
    raise ValueError(f"{cfg.name or 'the model'} with {b} sequence(s) of {context_len} tokens does "
                     f"not fit on any of {list(sizes)} {chip.name} chips")


def latency_throughput(cfg: TransformerConfig, chip: Chip | str, *, batches: Sequence[int],
                       context_len: int, n_chips: int = 1, weight_dtype: str = "bf16",
                       cache_dtype: str = "bf16", compute_dtype: str = "bf16") -> list[StepCost]:
    """Decode steps for each batch size in ``batches``: the latency–throughput curve.

    Each point's ``time`` is the time per output token a user sees; its
    ``tokens_per_s_per_chip`` is what the operator pays for. Along the memory-bound stretch the
    time barely moves while throughput grows with ``B``; past :func:`decode_critical_batch`
    the time grows with ``B`` and throughput levels off. Batches whose cache does not fit are
    kept (check them against :func:`max_batch`).
    """
    return [decode_step(cfg, chip, batch=b, context_len=context_len, n_chips=n_chips,
                        weight_dtype=weight_dtype, cache_dtype=cache_dtype,
                        compute_dtype=compute_dtype) for b in batches]


def best_batch(cfg: TransformerConfig, chip: Chip | str, *, latency_target: float,
               context_len: int, n_chips: int = 1, weight_dtype: str = "bf16",
               cache_dtype: str = "bf16", compute_dtype: str = "bf16",
               reserve: float = 0.0) -> int:
    """The largest batch whose decode step meets ``latency_target`` (s per output token) and
    whose cache fits; 0 when not even one sequence does.

    The step time grows with ``B``, so this is a bisection over ``1 ≤ B ≤ max_batch``.
    """
    target = positive(latency_target, "latency_target")
    kw = dict(context_len=context_len, n_chips=n_chips, weight_dtype=weight_dtype,
              cache_dtype=cache_dtype)
    fits = max_batch(cfg, chip, reserve=reserve, **kw)

    def meets(b: int) -> bool:
        return decode_step(cfg, chip, batch=b, compute_dtype=compute_dtype, **kw).time <= target

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

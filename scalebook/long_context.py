"""Context parallelism: one sequence split over ``C`` chips, in its ring and all-to-all forms.

Everything in a Transformer layer but attention works token by token, so a sequence of ``T``
tokens can be split ``T/C`` per chip for free; attention needs each query to meet every
earlier key. Two ways to arrange that (units: tokens, bytes, FLOPs, seconds):

- **Ring attention** (Liu et al. 2023; Brandon et al. 2023): each chip keeps its queries and
  passes its block of keys and values round a ring with ``ppermute``, ``C − 1`` times per
  layer, computing on one block while the next arrives (:func:`ring_attention`). With causal
  masking and contiguous blocks the chips do unequal work; the zig-zag layout (chip ``i`` holds
  chunks ``i`` and ``2C − 1 − i`` of ``2C``) evens it out (:func:`causal_ring_schedule`).
- **All-to-all / Ulysses** (Jacobs et al. 2023): an AllToAll swaps the sharding from sequence
  to heads, each chip runs ordinary attention for ``H/C`` heads over the whole sequence, and a
  second AllToAll swaps back (:func:`ulysses_attention`). ``C`` must divide the KV heads.

Notation: ``H`` query heads, ``K`` KV heads of width ``d_h``, ``b`` bytes per element, ``C``
the context-parallel degree. FLOPs count ``4·T_q·T_k·H·d_h`` for a full (unmasked) block, as
:func:`scalebook.transformer.attention_cost` does; communication is priced by
:func:`scalebook.collectives.collective_cost`, the solver's one pricing function.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

from scalebook import collectives
from scalebook.collectives import CollectiveCost
from scalebook.hardware import Chip, bytes_per_element, get_chip
from scalebook.validation import positive, positive_int

__all__ = [
    "AttentionShape",
    "causal_ring_schedule",
    "CausalSchedule",
    "RingAttention",
    "ring_attention",
    "ring_overlap_block",
    "UlyssesAttention",
    "ulysses_attention",
    "ulysses_over_ring_bytes",
]


@dataclass(frozen=True, kw_only=True)
class AttentionShape:
    """One layer's attention: ``n_heads`` query heads, ``n_kv_heads`` KV heads of ``d_head``."""

    n_heads: int
    n_kv_heads: int
    d_head: int

    def __post_init__(self) -> None:
        for name in ("n_heads", "n_kv_heads", "d_head"):
            positive_int(getattr(self, name), name)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads "
                             f"({self.n_heads})")


# --------------------------------------------------------------------------- causal schedule


@dataclass(frozen=True)
class CausalSchedule:
    """Work of each chip at each ring step under causal masking, in units of one full
    ``(T/C) × (T/C)`` block of scores.

    Attributes:
        work: ``work[s][i]`` = chip ``i``'s work at step ``s`` (step 0: its own block).
        step_time: ``max_i work[s][i]`` summed over steps: the ring moves in lock step, so each
            step lasts as long as its busiest chip.
        ideal: total work / ``C``: the time with perfect balance.
        imbalance: ``step_time / ideal`` (≈ 2 for contiguous blocks, 1 for zig-zag).
    """

    work: tuple[tuple[float, ...], ...]
    step_time: float
    ideal: float

    @property
    def imbalance(self) -> float:
        return self.step_time / self.ideal


def _chunks(chip: int, cp: int, zigzag: bool) -> tuple[int, int]:
    """The two of ``2C`` sequence chunks chip ``chip`` holds."""
    return (chip, 2 * cp - 1 - chip) if zigzag else (2 * chip, 2 * chip + 1)


def causal_ring_schedule(cp: int, *, zigzag: bool = False) -> CausalSchedule:
    """Count the causal work of ring attention, chunk pair by chunk pair.

    The sequence is cut into ``2C`` chunks; each chip holds two (contiguous: ``2i, 2i+1``;
    zig-zag: ``i, 2C−1−i``). At step ``s`` chip ``i`` has the keys of chip ``(i − s) mod C``.
    A (query chunk ``a``, key chunk ``c``) pair costs 1/4 of a full block when ``c < a``, 1/8
    when ``c = a`` (the diagonal: half its scores are masked), 0 when ``c > a``.
    Contiguous: ``C − 1/2`` blocks of step time against an ideal of ``C/2``; zig-zag: ``C/2``.
    """
    return _causal_ring_schedule(positive_int(cp, "cp"), bool(zigzag))


@functools.lru_cache(maxsize=256)
def _causal_ring_schedule(c: int, zigzag: bool) -> CausalSchedule:
    """:func:`causal_ring_schedule` on checked arguments, kept per (C, zigzag): the count is
    O(C²) and every ring-attention price of a C-chip ring needs the same one."""
    work = []
    for s in range(c):
        row = []
        for i in range(c):
            j = (i - s) % c
            w = 0.0
            for a in _chunks(i, c, zigzag):
                for b in _chunks(j, c, zigzag):
                    w += 0.25 if b < a else (0.125 if b == a else 0.0)
            row.append(w)
        work.append(tuple(row))
    total = sum(sum(r) for r in work)
    return CausalSchedule(tuple(work), sum(max(r) for r in work), total / c)


# --------------------------------------------------------------------------- ring attention


@dataclass(frozen=True)
class RingAttention:
    """Ring attention for one layer's forward pass on one chip (``C`` chips in the ring).

    Attributes:
        kv_block_bytes: keys and values of ``T/C`` tokens, ``2·(T/C)·K·d_h·b·batch``: what one
            ``ppermute`` sends.
        steps: ``C − 1`` sends per layer.
        bytes_per_layer: ``(C − 1)·kv_block_bytes`` sent by each chip.
        send: one ``ppermute``'s cost.
        block_flops: one full block, ``4·(T/C)²·H·d_h·batch``.
        t_block: block_flops at peak (s).
        memory_bytes: attention tensors resident on a chip: its ``Q`` and output
            (``2·(T/C)·H·d_h·b``), its own K,V block and two in flight (receive buffer, block
            in use): ``3·kv_block_bytes``. Flash-style tiling keeps scores out of HBM.
        schedule: the causal work schedule (None when not causal).
        time: forward attention time of the layer, each step ``max(compute, send)`` (sends
            overlapped with the block in use; the last step sends nothing).
    """

    kv_block_bytes: float
    steps: int
    bytes_per_layer: float
    send: CollectiveCost
    block_flops: float
    t_block: float
    memory_bytes: float
    schedule: CausalSchedule | None
    time: float

    @property
    def overlapped(self) -> bool:
        """True when a full block's compute hides its send (the overlap condition)."""
        return bool(self.t_block >= self.send.time)


def ring_attention(seq_len: int, cp: int, shape: AttentionShape, chip: Chip | str, *,
                   batch: int = 1, dtype: str = "bf16", compute_dtype: str | None = None,
                   causal: bool = True, zigzag: bool = True,
                   gpus_per_node: int | None = None) -> RingAttention:
    """Price ring attention over ``cp`` chips for ``batch`` sequences of ``seq_len`` tokens.

    Per step each chip computes one block (``4·(T/C)²·H·d_h`` FLOPs when full; the causal
    schedule scales it) while it sends its current K,V block (``2·(T/C)·K·d_h·b``) to the next
    chip: step time ``max(t_compute_step, t_send)``. ``dtype`` sizes the tensors and
    ``compute_dtype`` (default ``dtype``) picks the peak FLOPs/s. See :class:`RingAttention`.
    """
    chip = get_chip(chip)
    t, c = positive_int(seq_len, "seq_len"), positive_int(cp, "cp")
    bt = positive_int(batch, "batch")
    if t % (2 * c if causal else c):
        raise ValueError(f"seq_len ({t}) must split into {'2·' if causal else ''}cp = "
                         f"{2 * c if causal else c} equal chunks")
    b = bytes_per_element(dtype)
    blk = t // c
    kv = 2.0 * blk * shape.n_kv_heads * shape.d_head * b * bt
    flops = 4.0 * blk * blk * shape.n_heads * shape.d_head * bt
    t_block = flops / chip.flops(compute_dtype or dtype)
    send = collectives.collective_cost("ppermute", kv, c, chip, gpus_per_node=gpus_per_node)
    schedule = causal_ring_schedule(c, zigzag=zigzag) if causal else None
    if schedule is None:
        per_step = [1.0] * c
    else:
        per_step = [max(row) for row in schedule.work]
    t_send = float(send.time)
    time = sum(max(w * t_block, t_send if s < c - 1 else 0.0)
               for s, w in enumerate(per_step)) if c > 1 else per_step[0] * t_block
    memory = 2.0 * blk * shape.n_heads * shape.d_head * b * bt + 3.0 * kv
    return RingAttention(kv, c - 1, (c - 1) * kv, send, flops, t_block, memory, schedule, time)


def ring_overlap_block(shape: AttentionShape, chip: Chip | str, *, dtype: str = "bf16",
                       link_bandwidth: float | None = None) -> float:
    """Smallest block ``T/C`` (tokens) at which a full block's compute hides its send:

        4·(T/C)²·H·d_h / F  ≥  2·(T/C)·K·d_h·b / W   ⇔   T/C ≥ F·K·b / (2·H·W)

    (``F`` peak FLOPs/s, ``W`` one-way bandwidth of the link the block crosses: one ICI link on
    a TPU, NVLink in a GPU node). Latency ignored. LLaMA-3 70B (H = 64, K = 8) on a v5p link in
    bf16: 4.59e14·8·2 / (2·64·9e10) = 637 tokens per chip. Causal zig-zag steps do half a
    block's work, so double it for them.
    """
    chip = get_chip(chip)
    w = (positive(link_bandwidth, "link_bandwidth") if link_bandwidth is not None
         else collectives.collective_cost("ppermute", 1.0, 2, chip).link_bandwidth)
    return (chip.flops(dtype) * shape.n_kv_heads * bytes_per_element(dtype)
            / (2.0 * shape.n_heads * w))


# --------------------------------------------------------------------------- all-to-all (Ulysses)


@dataclass(frozen=True)
class UlyssesAttention:
    """All-to-all context parallelism for one layer's forward pass on one chip.

    Attributes:
        qkv: the AllToAll that turns ``Q``, ``K``, ``V`` from sequence- to head-sharded, as one
            array of ``(H + 2K)·T·d_h·b·batch`` bytes (logical, the whole group's).
        out: the AllToAll of the output, ``H·T·d_h·b·batch``, back to sequence-sharded.
        bytes_sent_per_chip: ``(C − 1)/C · (2H + 2K)·(T/C)·d_h·b·batch``.
        memory_bytes: attention tensors on one chip, ``T·(2H + 2K)/C·d_h·b·batch`` (its
            heads over the whole sequence): the same as ring's ``Q, O`` plus its KV block.
        block_flops: attention FLOPs per chip, ``4·T²·(H/C)·d_h·batch`` (full; causal halves).
        time: ``qkv + out`` (s), not overlapped with the attention that needs them.
    """

    qkv: CollectiveCost
    out: CollectiveCost
    bytes_sent_per_chip: float
    memory_bytes: float
    block_flops: float

    @property
    def time(self) -> float:
        return float(self.qkv.time + self.out.time)


def ulysses_attention(seq_len: int, cp: int | Sequence[int], shape: AttentionShape,
                      chip: Chip | str, *, batch: int = 1, dtype: str = "bf16",
                      gpus_per_node: int | None = None) -> UlyssesAttention:
    """Price all-to-all (Ulysses) context parallelism over ``C = prod(cp)`` chips.

    Needs ``C`` to divide the KV heads (each chip must own whole KV heads; beyond ``K`` the KV
    heads would have to be replicated). On a GPU node (a switch) an AllToAll's per-chip traffic
    falls as ``1/C``; on a TPU ring its time is ``V/(8W)`` whatever ``C``: compare with
    :func:`ring_attention` on the same chip.
    """
    sizes = [cp] if isinstance(cp, int) else list(cp)
    c = 1
    for s in sizes:
        c *= positive_int(s, "cp")
    t, bt = positive_int(seq_len, "seq_len"), positive_int(batch, "batch")
    if shape.n_kv_heads % c:
        raise ValueError(f"cp ({c}) must divide n_kv_heads ({shape.n_kv_heads}) for the "
                         "all-to-all form; use ring attention beyond it")
    if t % c:
        raise ValueError(f"seq_len ({t}) must be a multiple of cp ({c})")
    b = bytes_per_element(dtype)
    H, K, d = shape.n_heads, shape.n_kv_heads, shape.d_head
    qkv_bytes = (H + 2 * K) * t * d * b * bt
    out_bytes = H * t * d * b * bt
    qkv = collectives.collective_cost("all_to_all", qkv_bytes, sizes, chip, gpus_per_node=gpus_per_node)
    out = collectives.collective_cost("all_to_all", out_bytes, sizes, chip, gpus_per_node=gpus_per_node)
    sent = (c - 1) / c * (qkv_bytes + out_bytes) / c
    memory = t * (2 * H + 2 * K) / c * d * b * bt
    return UlyssesAttention(qkv, out, sent, memory, 4.0 * t * t * H / c * d * bt)


def ulysses_over_ring_bytes(shape: AttentionShape, cp: int) -> float:
    """Bytes each chip sends per layer under Ulysses over those under ring attention, same
    ``T`` and ``C`` (:func:`ulysses_attention` over :func:`ring_attention`):

        (C − 1)/C² · (2H + 2K)·T·d_h·b  /  (C − 1)/C · 2K·T·d_h·b  =  (H/K + 1) / C

    Ulysses moves queries and outputs too (``2H`` heads of them), ring attention only the
    ``2K`` of K and V, so with grouped-query attention Ulysses sends *more* until ``C > H/K +
    1``, and it cannot go past ``C = K``. LLaMA-3 70B (H/K = 8) at C = 8: 9/8 = 1.125 (528 MB
    against 470 MB at 128K tokens); multi-head attention (H = K): 2/C. (Dropping Ulysses'
    ``(C − 1)/C`` gives the rougher ``(H/K + 1)/(C − 1)``.)
    """
    c = positive_int(cp, "cp")
    return (shape.n_heads / shape.n_kv_heads + 1.0) / c

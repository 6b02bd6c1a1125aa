"""The paged KV cache (vLLM's PagedAttention, Kwon et al., SOSP 2023): blocks and a block table.

The cache is cut into blocks of ``b`` tokens; a sequence's *block table* lists the physical
blocks that hold its tokens in order, so a sequence takes a new block only when its last is
full. Its waste is internal fragmentation, at most ``b − 1`` token slots per sequence
(``(b − 1)/2`` on average); a contiguous cache instead reserves each sequence's maximum length up
front. Blocks can be shared: ``n`` samples of one prompt point at the prompt's full blocks once
and copy a block only when one of them writes into it (copy-on-write).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..validation import positive, positive_int

__all__ = ["blocks_needed", "KVLayout", "kv_layout", "BatchFit", "batch_that_fits",
           "SharedSampling", "shared_sampling"]


def blocks_needed(tokens: int, block_size: int) -> int:
    """``ceil(tokens / b)`` blocks (0 for 0 tokens)."""
    n = int(tokens)
    if n < 0:
        raise ValueError(f"tokens must be non-negative, got {tokens!r}")
    return -(-n // positive_int(block_size, "block_size"))


@dataclass(frozen=True)
class KVLayout:
    """Cache tokens a set of sequences occupies three ways (tokens).

    Attributes:
        used: ``Σ len`` tokens actually written.
        paged: ``Σ b·ceil(len / b)`` slots in whole blocks.
        reserved: ``n · max_len`` slots reserved at the maximum length.
        paged_waste, reserved_waste: ``1 − used / paged`` and ``1 − used / reserved`` (0–1).
    """

    used: int
    paged: int
    reserved: int

    @property
    def paged_waste(self) -> float:
        """Share of the paged slots left empty (internal fragmentation)."""
        return 1.0 - self.used / self.paged if self.paged else 0.0

    @property
    def reserved_waste(self) -> float:
        """Share of the reserved slots left empty."""
        return 1.0 - self.used / self.reserved if self.reserved else 0.0


def kv_layout(lengths: Sequence[int], *, block_size: int = 16, max_len: int) -> KVLayout:
    """How ``lengths`` (tokens per sequence) sit in a paged cache of ``block_size``-token blocks
    and in one that reserves ``max_len`` per sequence."""
    b, m = positive_int(block_size, "block_size"), positive_int(max_len, "max_len")
    lens = [positive_int(n, "length") for n in lengths]
    if any(n > m for n in lens):
        raise ValueError(f"a sequence is longer than max_len = {m}")
    return KVLayout(used=sum(lens), paged=sum(b * blocks_needed(n, b) for n in lens),
                    reserved=m * len(lens))


@dataclass(frozen=True)
class BatchFit:
    """Sequences that fit in ``capacity`` cache tokens: paged (``capacity // (mean + (b−1)/2)``,
    the mean internal fragmentation) and reserved (``capacity // max_len``)."""

    paged: int
    reserved: int

    @property
    def ratio(self) -> float:
        """``paged / reserved`` (inf when none fits reserved)."""
        return self.paged / self.reserved if self.reserved else math.inf


def batch_that_fits(capacity_tokens: float, *, mean_len: float, max_len: int,
                    block_size: int = 16) -> BatchFit:
    """The batch a cache of ``capacity_tokens`` holds, paged against reserved (sequences).

    Paged sizes by the mean length plus half a block of fragmentation on average; reserved by
    the longest a sequence may grow. 1.33 M tokens (LLaMA-3 70B on 8 H100s), sequences of
    3,072 tokens on average and 4,096 at most, 16-token blocks: 430 paged against 324 reserved.
    """
    cap = positive(capacity_tokens, "capacity_tokens")
    mean = positive(mean_len, "mean_len")
    b = positive_int(block_size, "block_size")
    return BatchFit(paged=int(cap // (mean + (b - 1) / 2.0)),
                    reserved=int(cap // positive_int(max_len, "max_len")))


@dataclass(frozen=True)
class SharedSampling:
    """Blocks ``n`` samples of one prompt take: each its own copy, or sharing the prompt."""

    separate: int
    shared: int

    @property
    def saving(self) -> float:
        """``1 − shared / separate`` (0–1)."""
        return 1.0 - self.shared / self.separate


def shared_sampling(*, prompt_len: int, reply_len: int, n_samples: int,
                    block_size: int = 16) -> SharedSampling:
    """Blocks for ``n`` parallel samples (or beams) of one prompt (blocks).

    Separate: ``n · ceil((T + R)/b)``. Shared with copy-on-write: the ``floor(T/b)`` full prompt
    blocks once, and per sample ``ceil((T mod b + R)/b)`` (the partly filled last prompt block
    is copied by each sample on its first write, then its reply's blocks).
    """
    t, r = positive_int(prompt_len, "prompt_len"), positive_int(reply_len, "reply_len")
    n, b = positive_int(n_samples, "n_samples"), positive_int(block_size, "block_size")
    separate = n * blocks_needed(t + r, b)
    shared = t // b + n * blocks_needed(t % b + r, b)
    return SharedSampling(separate=separate, shared=shared)

"""Chunked prefill (Sarathi-Serve, Agrawal et al., OSDI 2024): prompts cut into chunks that ride
along with the decode steps.

Without chunks, a server that admits a prompt runs its whole prefill as one pass and every
decoding sequence waits for it: that step's TPOT is ``t_decode + t_prefill(T)``, a stall. With
chunks of ``c`` tokens, each step runs the ``B`` decode tokens and ``c`` prompt tokens together
(one pass: ``q = B + c``; the chunk attends to the prompt's cache so far), so every step stays
near the decode step's time, and a prompt's first token comes after ``ceil(T / c)`` such steps.
The chunk size trades TPOT (small chunks) against TTFT and prefill efficiency (large chunks).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validation import positive, positive_int
from .steps import Server, StepModel, step_model

__all__ = ["mixed_step_time", "ChunkedPrefill", "chunked_prefill", "largest_chunk"]


def mixed_step_time(model: StepModel, *, decode_batch: int, context_len: float, chunk: int,
                    chunk_offset: int = 0) -> float:
    """One pass with ``B`` decode tokens (each against ``S`` cached) and a prompt chunk of ``c``
    tokens after ``o`` already prefilled (s):
    ``time(B + c, B·S + c·(o + c), B·S + o + c)``."""
    b = int(decode_batch)
    c = int(chunk)
    if b < 0 or c < 0 or b + c == 0:
        raise ValueError("a step needs decode tokens or a chunk (both non-negative)")
    s = positive(context_len, "context_len", allow_zero=True)
    o = int(chunk_offset)
    return model.time(b + c, b * s + model.chunk_pairs(c, o), b * s + (o + c if c else 0))


@dataclass(frozen=True)
class ChunkedPrefill:
    """One prompt prefilled beside ``B`` decoding sequences (see :func:`chunked_prefill`).

    Attributes:
        chunk: tokens per chunk; n_chunks: ``ceil(T / chunk)``.
        decode_step: a decode step alone (s).
        tpot_chunked: the slowest mixed step, what decoders see while the prompt is chunked (s).
        tpot_stall: ``decode_step + prefill(T)``: the step a decoder sees when the whole prompt
            runs at once (s).
        ttft_chunked: the sum of the mixed steps: the prompt's first token (s).
        ttft_whole: ``prefill(T)`` alone (s).
    """

    chunk: int
    n_chunks: int
    decode_step: float
    tpot_chunked: float
    tpot_stall: float
    ttft_chunked: float
    ttft_whole: float


def chunked_prefill(server: Server | StepModel, *, prompt_len: int, chunk: int,
                    decode_batch: int, context_len: int) -> ChunkedPrefill:
    """A ``T``-token prompt in chunks of ``c`` beside ``B`` sequences decoding at context ``S``."""
    model = server if isinstance(server, StepModel) else step_model(server)
    t, c = positive_int(prompt_len, "prompt_len"), positive_int(chunk, "chunk")
    b, s = positive_int(decode_batch, "decode_batch"), positive_int(context_len, "context_len")
    steps = [mixed_step_time(model, decode_batch=b, context_len=s, chunk=min(c, t - o),
                             chunk_offset=o) for o in range(0, t, c)]
    decode = model.decode_time(b, b * s)
    whole = model.prefill_time(t)
    return ChunkedPrefill(chunk=c, n_chunks=len(steps), decode_step=decode,
                          tpot_chunked=max(steps), tpot_stall=decode + whole,
                          ttft_chunked=sum(steps), ttft_whole=whole)


def largest_chunk(server: Server | StepModel, *, decode_batch: int, context_len: int,
                  tpot_slo: float, prompt_len: int = 65536) -> int:
    """The largest chunk (tokens, at most ``prompt_len``) whose mixed step, at the chunk's worst
    offset ``prompt_len − c``, stays within ``tpot_slo`` (s); 0 if not even the decode step does.
    The step time grows with ``c``, so this bisects."""
    model = server if isinstance(server, StepModel) else step_model(server)
    b, s = positive_int(decode_batch, "decode_batch"), positive_int(context_len, "context_len")
    slo = positive(tpot_slo, "tpot_slo")
    t = positive_int(prompt_len, "prompt_len")

    def step(c: int) -> float:
        return mixed_step_time(model, decode_batch=b, context_len=s, chunk=c,
                               chunk_offset=max(0, t - c))

    if step(1) > slo:
        return 0
    lo, hi = 1, t
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if step(mid) <= slo:
            lo = mid
        else:
            hi = mid - 1
    return lo

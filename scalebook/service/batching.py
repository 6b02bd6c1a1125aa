"""Static against continuous (iteration-level) batching, at the same HBM.

**Static batching** takes ``B`` requests, prefills them together and decodes until the longest
reply is done; a finished sequence keeps its slot (padding) and its cache, which was reserved at
the longest length it may reach, ``T + R_max``. **Continuous batching** (Orca, Yu et al., OSDI
2022) schedules at every step: a finished sequence leaves and a waiting one takes its place, so
each slot works every step, and with a paged cache (:mod:`.paged`) a sequence holds only what it
has written: ``T + (R − 1)/2`` tokens on average over its life rather than ``T + R_max``.

Two effects, both priced here from the step model (:mod:`.steps`):

- *slot use*: a static batch of ``B`` replies drawn uniformly from ``[R_min, R_max]`` runs
  ``E[max]`` steps for ``mean(R)`` useful tokens per slot (:func:`static_slot_use`);
- *batch that fits*: ``capacity / (T + R_max)`` sequences reserved against
  ``capacity / (T + (R̄ − 1)/2)`` paged (:func:`compare_batching`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validation import positive_int
from .steps import Server, StepModel, step_model

__all__ = ["expected_max_uniform", "static_slot_use", "mean_context_continuous",
           "BatchingComparison", "compare_batching"]


def _range(r_min: int, r_max: int) -> tuple[int, int]:
    lo, hi = positive_int(r_min, "reply_min"), positive_int(r_max, "reply_max")
    if lo > hi:
        raise ValueError(f"reply_min ({lo}) must not exceed reply_max ({hi})")
    return lo, hi


def expected_max_uniform(batch: int, r_min: int, r_max: int) -> float:
    """``E[max]`` of ``batch`` reply lengths drawn independently and uniformly from the integers
    ``r_min … r_max``: ``r_max − Σ_{k=r_min}^{r_max−1} ((k − r_min + 1)/n)^B``, ``n = r_max −
    r_min + 1`` (tokens). The steps a static batch runs."""
    b = positive_int(batch, "batch")
    lo, hi = _range(r_min, r_max)
    n = hi - lo + 1
    return hi - sum(((k - lo + 1) / n) ** b for k in range(lo, hi))


def static_slot_use(batch: int, r_min: int, r_max: int) -> float:
    """Fraction of a static batch's slot-steps that produce a token: ``mean(R) / E[max R]``
    (0–1). 32 replies uniform on 1…2,048 tokens: 1,024.5 / 1,986 = 52%."""
    lo, hi = _range(r_min, r_max)
    return (lo + hi) / 2.0 / expected_max_uniform(batch, lo, hi)


def mean_context_continuous(prompt_len: int, reply_len: float) -> float:
    """Cached tokens a sequence holds on average over its decode: ``T + (R − 1)/2`` (tokens)."""
    return positive_int(prompt_len, "prompt_len") + (float(reply_len) - 1.0) / 2.0


@dataclass(frozen=True)
class BatchingComparison:
    """Static against continuous batching on one server (see :func:`compare_batching`).

    Attributes:
        static_batch, continuous_batch: sequences in flight (the cap, or what HBM holds).
        static_context, continuous_context: cache tokens per sequence the memory is sized by:
            ``T + R_max`` reserved, ``T + (R̄ − 1)/2`` held on average (tokens).
        static_step_time, continuous_step_time: decode step at that batch (s).
        slot_use: :func:`static_slot_use` (0–1).
        static_tokens_per_s, continuous_tokens_per_s: useful output tokens per second.
        gain: ``continuous_tokens_per_s / static_tokens_per_s``.
    """

    static_batch: int
    continuous_batch: int
    static_context: float
    continuous_context: float
    static_step_time: float
    continuous_step_time: float
    slot_use: float
    static_tokens_per_s: float
    continuous_tokens_per_s: float

    @property
    def gain(self) -> float:
        """Continuous over static throughput."""
        return self.continuous_tokens_per_s / self.static_tokens_per_s


def compare_batching(server: Server | StepModel, *, prompt_len: int, reply_min: int,
                     reply_max: int, batch_cap: int = 256) -> BatchingComparison:
    """Throughput of static and continuous batching with the same HBM and batch cap.

    Static: ``B_s = min(cap, capacity // (T + R_max))``; a batch costs
    ``prefill(T, B_s) + E[max R] · t_decode(B_s, context T + (E[max R] − 1)/2)`` and yields
    ``B_s · mean(R)`` tokens. Continuous: ``B_c = min(cap, capacity // (T + (R̄ − 1)/2))``; each
    step yields ``B_c`` tokens at the mean context and the ``B_c / R̄`` requests that finish per
    step are replaced by prefills of one prompt each: tokens/s ``= B_c / (t_decode +
    (B_c/R̄)·t_prefill(T))``. A first cut: every step at the mean context, memory sized by the
    mean (a real server keeps headroom for the spread).
    """
    model = server if isinstance(server, StepModel) else step_model(server)
    t = positive_int(prompt_len, "prompt_len")
    lo, hi = _range(reply_min, reply_max)
    cap = positive_int(batch_cap, "batch_cap")
    mean_r = (lo + hi) / 2.0
    static_ctx, cont_ctx = float(t + hi), mean_context_continuous(t, mean_r)
    b_s = min(cap, int(model.kv_capacity_tokens // static_ctx))
    b_c = min(cap, int(model.kv_capacity_tokens // cont_ctx))
    if b_s < 1 or b_c < 1:
        raise ValueError("not one sequence of this length fits beside the weights")
    steps = expected_max_uniform(b_s, lo, hi)
    t_static = model.decode_time(b_s, b_s * (t + (steps - 1.0) / 2.0))
    static_rate = b_s * mean_r / (model.prefill_time(t, b_s) + steps * t_static)
    t_cont = model.decode_time(b_c, b_c * cont_ctx)
    cont_rate = b_c / (t_cont + b_c / mean_r * model.prefill_time(t))
    return BatchingComparison(static_batch=b_s, continuous_batch=b_c, static_context=static_ctx,
                              continuous_context=cont_ctx, static_step_time=t_static,
                              continuous_step_time=t_cont,
                              slot_use=static_slot_use(b_s, lo, hi),
                              static_tokens_per_s=static_rate, continuous_tokens_per_s=cont_rate)

"""Speculative decoding (Leviathan et al., ICML 2023; Chen et al. 2023): guess ``k`` tokens
cheaply, check them in one pass of the target.

A draft (a small model, or extra heads on the target: Medusa, EAGLE, DeepSeek-V3's multi-token
prediction) proposes ``k`` tokens; the target runs one pass over the ``k + 1`` positions and
keeps the longest prefix it agrees with, plus one token of its own. If each guess is accepted
with probability ``α``, independently, a verification yields on average

    E[tokens] = 1 + α + α² + … + α^k = (1 − α^{k+1}) / (1 − α)          (tokens per round)

A round costs ``k`` draft steps and one verification pass of ``B·(k + 1)`` query tokens that
reads the weights **once**: while decode is memory-bound that pass costs about one decode step,
so the round yields ``E`` tokens for little more than the price of one. As the batch grows
towards the critical batch the pass's ``B·(k + 1)`` tokens turn it compute-bound, it costs
``k + 1`` steps' FLOPs, and the speed-up is gone or negative.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..validation import positive, positive_int
from .steps import Server, StepModel, step_model

__all__ = ["expected_tokens", "speedup_memory_bound", "Speculation", "speculative_decoding",
           "best_draft_length", "verify_time"]


def _alpha(alpha: float) -> float:
    a = positive(alpha, "alpha", allow_zero=True)
    if a > 1:
        raise ValueError(f"alpha is an acceptance probability in [0, 1], got {alpha!r}")
    return a


def expected_tokens(alpha: float, k: int) -> float:
    """``(1 − α^{k+1}) / (1 − α)`` tokens per verification (``k + 1`` at ``α = 1``; 1 at k=0)."""
    a = _alpha(alpha)
    n = int(k)
    if n < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    return float(n + 1) if a == 1.0 else (1.0 - a ** (n + 1)) / (1.0 - a)


def speedup_memory_bound(alpha: float, k: int, draft_cost: float) -> float:
    """Leviathan et al.'s speed-up when a verification costs one target step and a draft step
    ``c`` of one: ``E[tokens] / (k·c + 1)`` (dimensionless). α = 0.8, k = 4, c = 0.05: 2.8."""
    c = positive(draft_cost, "draft_cost", allow_zero=True)
    return expected_tokens(alpha, k) / (int(k) * c + 1.0)


def verify_time(model: StepModel, *, batch: int, context_len: float, k: int) -> float:
    """The target's verification pass (s): ``B·(k + 1)`` query tokens, each against about ``S``
    cached tokens, the cache read once: ``time(B(k+1), B(k+1)·S, B·S)``."""
    b = positive_int(batch, "batch")
    s = positive(context_len, "context_len")
    q = b * (int(k) + 1)
    return model.time(q, q * s, b * s)


@dataclass(frozen=True)
class Speculation:
    """One speculative setting priced (see :func:`speculative_decoding`).

    Attributes:
        k, alpha: draft length and acceptance probability.
        tokens_per_round: :func:`expected_tokens` (tokens per sequence per round).
        target_step: a plain decode step of the target (s).
        draft_step: one draft step at the same batch (s; 0 for heads on the target).
        verify: the verification pass (s).
        round_time: ``k·draft_step + verify`` (s).
        speedup: ``tokens_per_round · target_step / round_time``.
        tpot: ``round_time / tokens_per_round`` (s per token each sequence sees).
    """

    k: int
    alpha: float
    tokens_per_round: float
    target_step: float
    draft_step: float
    verify: float
    round_time: float

    @property
    def speedup(self) -> float:
        """Tokens per second against plain decoding."""
        return self.tokens_per_round * self.target_step / self.round_time

    @property
    def tpot(self) -> float:
        """Mean time per output token (s)."""
        return self.round_time / self.tokens_per_round


def speculative_decoding(target: Server | StepModel, *, draft: Server | StepModel | None,
                         batch: int, context_len: int, alpha: float, k: int) -> Speculation:
    """Price speculative decoding of ``batch`` sequences at context ``S`` on the target's slice.

    ``draft`` is a second server (a small model on the same chips: its decode step at the same
    batch is the draft step) or None for heads on the target (their cost left out).
    """
    model = target if isinstance(target, StepModel) else step_model(target)
    small = draft if isinstance(draft, StepModel) or draft is None else step_model(draft)
    b, s = positive_int(batch, "batch"), positive_int(context_len, "context_len")
    n = int(k)
    if n < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    plain = model.decode_time(b, b * s)
    d = small.decode_time(b, b * s) if small is not None else 0.0
    v = verify_time(model, batch=b, context_len=s, k=n) if n else plain
    return Speculation(k=n, alpha=_alpha(alpha), tokens_per_round=expected_tokens(alpha, n),
                       target_step=plain, draft_step=d, verify=v, round_time=n * d + v)


def best_draft_length(target: Server | StepModel, *, draft: Server | StepModel | None,
                      batch: int, context_len: int, alpha: float, k_max: int = 16) -> Speculation:
    """The draft length ``0 ≤ k ≤ k_max`` with the largest speed-up (``k = 0``, plain decoding,
    when speculation does not pay)."""
    model = target if isinstance(target, StepModel) else step_model(target)
    small = draft if isinstance(draft, StepModel) or draft is None else step_model(draft)
    options = [speculative_decoding(model, draft=small, batch=batch, context_len=context_len,
                                    alpha=alpha, k=k)
               for k in range(positive_int(k_max, "k_max") + 1)]
    return max(options, key=lambda o: o.speedup)

"""Telling two step-time models apart on measured timings: a free efficiency and a fixed overhead.

A solver's prediction ``p`` of a step's time leaves out two things any real run has: kernels that
reach only a fraction ``e`` of the peaks, and a fixed cost ``t_0`` per step (launches, dispatch,
the small operations the model does not count). Comparing raw predictions with measurements
cannot tell two models apart when one is never below the other and the measurements sit above
both: the larger one is always "closer". Fitting each model's own ``e`` and ``t_0`` first,

    measured ≈ t_0 + p / e,

and comparing what is left (the residuals) asks the fair question: which model has the right
*shape* once both are allowed the same two free constants?

The fit is least squares on relative residuals, ``r_i = (t_0 + a·p_i − m_i) / m_i`` with
``a = 1/e``, which is linear in ``(t_0, a)``: two normal equations. ``t_0`` is kept at or above 0
(a negative fixed cost is not a cost); when the unconstrained fit wants one, ``t_0 = 0`` and only
``a`` is fitted. The uncertainty of the comparison comes from a bootstrap over the settings
(resampled with replacement, both models refitted on each resample) and from dropping each
setting in turn.

Pure Python (no numpy), so it runs wherever the solver does. Units: seconds in, seconds out.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

__all__ = ["OverheadFit", "fit_with_overhead", "FitComparison", "compare_fits"]


@dataclass(frozen=True)
class OverheadFit:
    """One model fitted to measured times as ``t_0 + p / e``.

    Attributes:
        overhead: the fixed cost per step ``t_0`` (s), at least 0.
        efficiency: ``e``, the fraction of the predicted rate the run reached (dimensionless;
            1 means the prediction's slope was right).
        rms: root-mean-square relative residual, ``sqrt(mean(r_i²))`` (0.1 is about 10%).
        residuals: each setting's ``(fitted − measured) / measured``, in the input's order.
    """

    overhead: float
    efficiency: float
    rms: float
    residuals: tuple[float, ...]

    def fitted(self, predicted: float) -> float:
        """The fitted time of a step predicted at ``predicted`` seconds: ``t_0 + p / e`` (s)."""
        return self.overhead + predicted / self.efficiency


def _series(values: Sequence[float], what: str) -> list[float]:
    out = [float(v) for v in values]
    if not all(math.isfinite(v) and v > 0 for v in out):
        raise ValueError(f"{what} must be positive finite times in seconds")
    return out


def _solve(predicted: Sequence[float], measured: Sequence[float]) -> tuple[float, float]:
    """``(t_0, a)`` minimising ``Σ ((t_0 + a·p − m) / m)²`` with ``t_0 ≥ 0``."""
    x = [1.0 / m for m in measured]                 # the t_0 column, divided by m
    y = [p / m for p, m in zip(predicted, measured)]  # the a column, divided by m
    sxx, syy = sum(v * v for v in x), sum(v * v for v in y)
    sxy = sum(u * v for u, v in zip(x, y))
    sx, sy = sum(x), sum(y)                           # against the target 1 in every row
    det = sxx * syy - sxy * sxy
    if det > 1e-12 * sxx * syy:
        t0 = (sx * syy - sy * sxy) / det
        a = (sxx * sy - sxy * sx) / det
        if t0 >= 0 and a > 0:
            return t0, a
    return 0.0, sy / syy


def fit_with_overhead(predicted: Sequence[float], measured: Sequence[float]) -> OverheadFit:
    """Fit ``measured ≈ t_0 + predicted / e`` by least squares on relative residuals
    (:class:`OverheadFit`). Needs at least three settings, all times positive (s).

    A model that is right up to a constant factor and a fixed cost fits with ``rms`` near 0:
    ``p = [1, 2, 4]`` ms measured as ``[1.5, 2.5, 4.5]`` ms gives ``t_0 = 0.5`` ms, ``e = 1``.
    """
    p, m = _series(predicted, "predicted"), _series(measured, "measured")
    if len(p) != len(m) or len(p) < 3:
        raise ValueError("fit_with_overhead needs matching predicted and measured times, "
                         "at least three of each")
    t0, a = _solve(p, m)
    residuals = tuple((t0 + a * pi - mi) / mi for pi, mi in zip(p, m))
    rms = math.sqrt(sum(r * r for r in residuals) / len(residuals))
    return OverheadFit(overhead=t0, efficiency=1.0 / a, rms=rms, residuals=residuals)


@dataclass(frozen=True)
class FitComparison:
    """Two or more models, each fitted with its own overhead and efficiency, side by side.

    Attributes:
        fits: each model's :class:`OverheadFit` on all the settings, by name.
        best: the name with the smallest ``rms`` on all the settings.
        bootstrap_share: for each name, the fraction of bootstrap resamples (settings drawn with
            replacement, every model refitted) in which it had the smallest ``rms``.
        drop_one_best: the best model with each setting left out in turn (in input order).
        resamples: how many bootstrap resamples were drawn.
    """

    fits: Mapping[str, OverheadFit]
    best: str
    bootstrap_share: Mapping[str, float]
    drop_one_best: tuple[str, ...]
    resamples: int

    @property
    def robust(self) -> bool:
        """Whether ``best`` also wins with every single setting left out."""
        return all(name == self.best for name in self.drop_one_best)


def _best(predictions: Mapping[str, Sequence[float]], measured: Sequence[float],
          index: Sequence[int]) -> str:
    m = [measured[i] for i in index]
    scores = {name: fit_with_overhead([p[i] for i in index], m).rms
              for name, p in predictions.items()}
    return min(scores, key=lambda name: scores[name])


def compare_fits(predictions: Mapping[str, Sequence[float]], measured: Sequence[float], *,
                 resamples: int = 2000, seed: int = 0) -> FitComparison:
    """Fit every model in ``predictions`` (name → predicted times, one per setting, s) to the
    same ``measured`` times (s) and compare their residuals (:class:`FitComparison`), with a
    seeded bootstrap of ``resamples`` draws and a leave-one-out pass for the uncertainty."""
    if len(predictions) < 2:
        raise ValueError("compare_fits needs at least two models to compare")
    m = _series(measured, "measured")
    n = len(m)
    if n < 4:
        raise ValueError("compare_fits needs at least four settings (one can be left out)")
    preds = {name: _series(p, f"predicted times of {name!r}") for name, p in predictions.items()}
    if any(len(p) != n for p in preds.values()):
        raise ValueError("every model needs one predicted time per measured setting")
    if not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    fits = {name: fit_with_overhead(p, m) for name, p in preds.items()}
    best = min(fits, key=lambda name: fits[name].rms)
    rng = random.Random(seed)
    wins = dict.fromkeys(preds, 0)
    for _ in range(resamples):
        wins[_best(preds, m, [rng.randrange(n) for _ in range(n)])] += 1
    drop = tuple(_best(preds, m, [j for j in range(n) if j != i]) for i in range(n))
    return FitComparison(fits=fits, best=best,
                         bootstrap_share={k: v / resamples for k, v in wins.items()},
                         drop_one_best=drop, resamples=resamples)

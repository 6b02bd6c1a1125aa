"""Figures of measured step times beside fitted models (:mod:`scalebook.step_fit`)."""

from __future__ import annotations

from typing import Mapping, Sequence

from matplotlib.figure import Figure

from scalebook.picture import Picture
from scalebook.step_fit import OverheadFit

__all__ = ["fit_residuals"]

_COLOURS = ("#1f5fa8", "#d9731a", "#2a9d5c", "#b2182b")


def fit_residuals(fits: Mapping[str, OverheadFit], labels: Sequence[str], *,
                  title: str = "") -> Picture:
    """Each fitted model's relative residual, ``(fitted − measured) / measured``, setting by
    setting: one marker series per model, a zero line, and each model's RMS in the legend.

    ``labels`` names the settings in the order of the fits' residuals (e.g. "128/512" for a
    cache of 128 tokens at B = 512). The alt text gives each model's overhead, efficiency and
    RMS, and the setting where each misses most.
    """
    if not fits:
        raise ValueError("fit_residuals needs at least one fitted model")
    n = len(labels)
    if any(len(f.residuals) != n for f in fits.values()):
        raise ValueError("every fit needs one residual per label")
    fig = Figure(figsize=(7.2, 3.2))
    ax = fig.add_subplot()
    width = 0.8 / len(fits)
    for k, (name, fit) in enumerate(fits.items()):
        xs = [i - 0.4 + width * (k + 0.5) for i in range(n)]
        ax.scatter(xs, [100 * r for r in fit.residuals], s=14, color=_COLOURS[k % len(_COLOURS)],
                   label=f"{name}: RMS {100 * fit.rms:.0f}%", zorder=3)
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xticks(range(n))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set(xlabel="setting (cached tokens / batch)",
           ylabel="fitted − measured (% of measured)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="lower left")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    parts = []
    for name, fit in fits.items():
        worst = max(range(n), key=lambda i: abs(fit.residuals[i]))
        parts.append(f"{name}: overhead {fit.overhead * 1e3:.2f} ms, efficiency "
                     f"{fit.efficiency:.2f}, RMS residual {100 * fit.rms:.0f}%, largest miss "
                     f"{100 * fit.residuals[worst]:+.0f}% at {labels[worst]}")
    alt = (f"Scatter plot of relative residuals over {n} settings for {len(fits)} fitted "
           f"models. " + "; ".join(parts) + ".")
    return Picture(fig, alt)

"""Figures of the roofline model (Part 1), drawn from :mod:`scalebook.roofline`.

- :func:`roofline_plot`: min(C, I·W) for chips, their ridge points, and kernels placed on it;
- :func:`measured_roofline`: a measured sweep against the roof of the measured C and W;
- :func:`times_against_batch`: T_math and T_comms of X[B, D]·W[D, F] against B, crossing at the
  critical batch;
- :func:`overlap_timeline`: the two bounds on one kernel, max(T_math, T_comms) with overlap,
  their sum without;
- :func:`intensity_against_size`: a dot product's intensity stays flat, a square matmul's grows
  as N/3 and crosses the chip's ridge.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import roofline
from ..hardware import Chip, get_chip
from ..picture import Picture
from ..units import format_flops, format_integer, format_seconds
from ._draw import BLUE, GREEN, GREY, ORANGE, new_figure, words_list

_CHIP_COLOURS = (BLUE, ORANGE, GREEN, "#7b3fa0")


def _first_integer(holds, lo: int, hi: int) -> int | None:
    """The smallest integer n in [lo, hi] where the monotone test ``holds(n)`` is True (integer
    bisection), or None when it never is."""
    if not holds(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid + 1, hi)
    return lo


def _intensity(value: float) -> str:
    return format_integer(value) if value >= 10 else f"{value:.2g}"


def roofline_plot(chips: Sequence[Chip | str], marks: Sequence[tuple[str, float]] = (),
                  dtype: str = "bf16", *, title: str = "") -> Picture:
    """Each chip's roof min(C, I·W) on log-log axes with its ridge (the critical intensity C/W,
    dotted), and ``marks`` (label, intensity) placed on the first chip's roof."""
    chosen = [get_chip(c) for c in chips]
    figure = new_figure(7.5, 4.2)
    ax = figure.add_subplot()
    ridges = [roofline.critical_intensity(c, dtype) for c in chosen]
    lo = min([0.1, *[i / 3 for _, i in marks]])
    hi = max([1e4, *[i * 3 for _, i in marks], *[r * 10 for r in ridges]])
    grid = np.geomspace(lo, hi, 200)
    for chip, ridge, colour in zip(chosen, ridges, _CHIP_COLOURS):
        ax.plot(grid, roofline.attainable_flops(grid, chip, dtype), color=colour, lw=2,
                label=f"{chip.name}: min(C, I·W)")
        ax.axvline(ridge, color=colour, ls=":", lw=1)
        ax.annotate(f"ridge {_intensity(ridge)}", (ridge, chip.flops(dtype)), xytext=(4, 6),
                    textcoords="offset points", fontsize=8, color=colour)
    placed = []
    for label, intensity in marks:
        y = float(roofline.attainable_flops(intensity, chosen[0], dtype))
        ax.plot([intensity], [y], "o", color=_CHIP_COLOURS[0], mec="black", ms=8, zorder=5)
        ax.annotate(label, (intensity, y), xytext=(6, -14), textcoords="offset points",
                    fontsize=9)
        bound = "memory-bound" if intensity < ridges[0] else "compute-bound"
        placed.append(f"{label} at {_intensity(intensity)} FLOPs/byte ({format_flops(y)}, "
                      f"{bound})")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity I (FLOPs/byte)",
           ylabel="attainable FLOP/s", title=title or f"Rooflines, {dtype}")
    ax.legend(loc="lower right")
    ax.grid(True, alpha=0.3)
    roofs = [f"{c.name} peaks at {format_flops(c.flops(dtype))} with its ridge at "
             f"{_intensity(r)} FLOPs/byte" for c, r in zip(chosen, ridges)]
    alt = (f"Log-log roofline plot, {dtype}: attainable FLOP/s against arithmetic intensity; "
           f"{words_list(roofs)}. " + (f"On the {chosen[0].name} roof: {'; '.join(placed)}."
                                       if placed else ""))
    return Picture(figure, alt)


def measured_roofline(intensity: Sequence[float], achieved: Sequence[float],
                      labels: Sequence[str], peak: float, bandwidth: float, *,
                      datasheet: tuple[float, float] | None = None, title: str = "",
                      what: str = "measured jnp.dot") -> Picture:
    """A measured sweep (``achieved`` FLOP/s at each ``intensity``) under the roof of the
    measured ``peak`` FLOP/s and ``bandwidth`` bytes/s, and the datasheet's roof
    (``datasheet`` = (C, W)) dashed."""
    xs, ys = np.asarray(intensity, float), np.asarray(achieved, float)
    figure = new_figure(7.5, 4.2)
    ax = figure.add_subplot()
    grid = np.geomspace(xs.min() / 2, xs.max() * 2, 100)
    if datasheet is not None:
        ax.plot(grid, np.minimum(datasheet[0], grid * datasheet[1]), lw=1.5, ls="--",
                color=GREY, label="datasheet roofline")
    ax.plot(grid, np.minimum(peak, grid * bandwidth), lw=2, color=BLUE,
            label="roofline from measured C and W")
    ax.plot(xs, ys, "o-", color=ORANGE, mec="black", label=what)
    for label, x, y in zip(labels, xs, ys):
        ax.annotate(label, (x, y), xytext=(4, -12), textcoords="offset points", fontsize=7)
    ax.axvline(peak / bandwidth, color=GREY, ls=":", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs/byte)",
           ylabel="FLOP/s", title=title)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(True, alpha=0.3)
    best = int(np.argmax(ys))
    points = "; ".join(f"{label}: {_intensity(x)} FLOPs/byte, {format_flops(y)}"
                       for label, x, y in zip(labels, xs, ys))
    alt = (f"Log-log plot of a measured matmul sweep against its roofline ({title}): the roof "
           f"from the measured peak {format_flops(peak)} and bandwidth "
           f"{format_flops(bandwidth).replace('FLOP/s', 'B/s')} has its ridge at "
           f"{_intensity(peak / bandwidth)} FLOPs/byte"
           + (f", under the datasheet's {format_flops(datasheet[0])}" if datasheet else "")
           + f". Measured points: {points}. The fastest, {labels[best]}, reaches "
           f"{100 * ys[best] / peak:.0f}% of the measured peak.")
    return Picture(figure, alt)


def times_against_batch(chip: Chip | str, D: int, F: int, *, dtype: str = "bf16",
                        batches: Sequence[float] | None = None) -> Picture:
    """T_math and T_comms of X[B, D]·W[D, F] in ``dtype`` against the batch B, the lower
    bound max of the two shaded, and the crossing marked: the critical batch."""
    chip = get_chip(chip)
    B = np.geomspace(1, 16384, 120) if batches is None else np.asarray(batches, float)
    t = roofline.matmul_time(B, D, F, chip, x_dtype=dtype)
    t_math, t_comms = np.asarray(t.t_math), np.asarray(t.t_comms)
    ridge = roofline.critical_intensity(chip, dtype)
    cross = _first_integer(lambda b: roofline.matmul_cost(b, D, F, x_dtype=dtype).intensity > ridge,
                           1, int(B[-1]))
    rule = roofline.critical_batch_size(chip, compute_dtype=dtype)
    figure = new_figure(7.5, 3.8)
    ax = figure.add_subplot()
    ax.plot(B, t_math, color=BLUE, lw=2, label="T_math = 2BDF / C")
    ax.plot(B, t_comms, color=ORANGE, lw=2, label="T_comms = bytes / W")
    ax.fill_between(B, np.maximum(t_math, t_comms), color=GREY, alpha=0.12,
                    label="lower bound max(T_math, T_comms)")
    ax.axvline(rule, color=GREY, ls=":", lw=1)
    ax.annotate(f"critical batch ≈ {format_integer(rule)}", (rule, float(t_math.min())),
                xytext=(5, 5), textcoords="offset points", fontsize=9)
    ax.set(xscale="log", yscale="log", xlabel="batch B (tokens)", ylabel="time (s)",
           title=f"X[B, {D:,}] · W[{D:,}, {F:,}], {dtype}, on a {chip.name}")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, alpha=0.3)
    first = roofline.matmul_time(1, D, F, chip, x_dtype=dtype)
    alt = (f"Log-log plot of the two times of a {dtype} matmul X[B, {D:,}] · W[{D:,}, {F:,}] on "
           f"a {chip.name} against the batch B from {format_integer(B[0])} to "
           f"{format_integer(B[-1])}: T_comms is nearly flat (the weight's bytes dominate, "
           f"{format_seconds(float(first.t_comms))} at B = 1) while T_math grows in proportion to B "
           f"({format_seconds(float(first.t_math))} at B = 1); the first compute-bound batch is B = "
           f"{format_integer(cross) if cross else 'none'}, the critical batch C/W ≈ {format_integer(rule)} tokens: "
           "below it the matmul is memory-bound, above it compute-bound.")
    return Picture(figure, alt)


def overlap_timeline(t_math: float, t_comms: float, *, what: str = "the kernel") -> Picture:
    """Two timelines of one kernel: compute and memory traffic overlapped (time max of the two,
    the lower bound) and one after the other (their sum, the upper bound)."""
    figure = new_figure(7.5, 2.2)
    ax = figure.add_subplot()
    scale, unit = (1e6, "µs") if max(t_math, t_comms) < 1e-3 else (1e3, "ms")
    m, c = t_math * scale, t_comms * scale
    rows: list[tuple[str, list[tuple[float, float, str, str]]]] = [
        ("overlapped", [(0, m, BLUE, "compute"), (0, c, ORANGE, "memory")]),
        ("one after the other", [(0, c, ORANGE, "memory"), (c, m, BLUE, "compute")])]
    for row, (label, bars) in enumerate(rows):
        for k, (start, length, colour, name) in enumerate(bars):
            offset = (k - 0.5) * 0.36 if row == 0 else 0.0
            height = 0.34 if row == 0 else 0.6
            ax.barh(row + offset, length, left=start, height=height, color=colour,
                    edgecolor="black", lw=0.5, label=name if row == 1 else None)
    total = [max(m, c), m + c]
    for row, value in enumerate(total):
        ax.annotate(f"{value:.3g} {unit}", (value, row), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=9)
    ax.set_yticks([0, 1], [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, (m + c) * 1.2)
    ax.set(xlabel=f"time ({unit})", title=f"Two bounds on {what}")
    ax.legend(loc="upper right", fontsize=8)
    alt = (f"Two timelines of {what}: computing takes {format_seconds(t_math)} and moving its "
           f"bytes {format_seconds(t_comms)}. Overlapped, the two run side by side and the "
           f"kernel takes the longer, {format_seconds(max(t_math, t_comms))} (the lower bound); "
           f"one after the other it takes the sum, {format_seconds(t_math + t_comms)} (the "
           "upper bound).")
    return Picture(figure, alt)


def intensity_against_size(chip: Chip | str, *, dtype: str = "bf16",
                           sizes: Sequence[float] | None = None) -> Picture:
    """Arithmetic intensity against size N: a dot product of two length-N vectors (flat) and a
    square N x N matmul (N/3 in bf16), with the chip's ridge: the smallest compute-bound N."""
    chip = get_chip(chip)
    N = np.geomspace(16, 65536, 100) if sizes is None else np.asarray(sizes, float)
    dot = np.array([roofline.matmul_cost(1, n, 1, x_dtype=dtype).intensity for n in N])
    square = np.array([roofline.matmul_cost(n, n, n, x_dtype=dtype).intensity for n in N])
    ridge = roofline.critical_intensity(chip, dtype)
    first = _first_integer(lambda n: roofline.matmul_cost(n, n, n, x_dtype=dtype).intensity > ridge,
                           1, int(N[-1]))
    figure = new_figure(7.5, 3.8)
    ax = figure.add_subplot()
    ax.plot(N, square, color=BLUE, lw=2, label="square matmul bf16[N, N] · bf16[N, N]")
    ax.plot(N, dot, color=ORANGE, lw=2, label="dot product of two length-N vectors")
    ax.axhline(ridge, color=GREY, ls=":", lw=1)
    ax.annotate(f"{chip.name} ridge C/W = {_intensity(ridge)}", (N[0], ridge), xytext=(2, 4),
                textcoords="offset points", fontsize=9, color=GREY)
    ax.set(xscale="log", yscale="log", xlabel="size N", ylabel="FLOPs per byte",
           title="Reuse grows with a matmul's size, not with a dot product's")
    ax.legend(loc="center right", fontsize=8)
    ax.grid(True, alpha=0.3)
    alt = (f"Log-log plot of arithmetic intensity against size N from {format_integer(N[0])} "
           f"to {format_integer(N[-1])}: a dot product stays at {_intensity(dot[-1])} FLOPs/byte "
           f"whatever N, a square {dtype} matmul grows from {_intensity(square[0])} to "
           f"{_intensity(square[-1])} FLOPs/byte and crosses the {chip.name}'s ridge at "
           f"{_intensity(ridge)} FLOPs/byte: compute-bound from N = "
           f"{format_integer(first) if first else 'never'}.")
    return Picture(figure, alt)

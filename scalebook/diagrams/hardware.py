"""Figures of chips and how they connect (Part 2), drawn from the catalog
(:mod:`scalebook.hardware`), :mod:`scalebook.topology` and :mod:`scalebook.torus`.

- :func:`bandwidth_ladder`: bytes/s per chip at each level away from the matrix units;
- :func:`scale_up_domains`: per chip inside a scale-up domain against leaving it;
- :func:`hbm_read_time`: how long each chip takes to read its whole HBM once;
- :func:`padding_tax`: the useful share of a systolic array's work as a dimension grows;
- :func:`torus_slices`: TPU slices as grids of chips, wraparound links where the slice has them;
- :func:`gpu_node_diagram`: GPUs on their NVSwitch, each with its share of the node's NICs.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.patches import Rectangle

from .. import roofline, topology, torus
from ..hardware import Chip, get_chip
from ..picture import Picture
from ..units import format_bandwidth, format_bytes, format_integer, format_percent
from ._draw import BLUE, GREEN, GREY, ORANGE, new_figure, words_list

_COLOURS = (BLUE, GREEN, ORANGE, "#7b3fa0")


def bandwidth_ladder(ladders: Mapping[str, Mapping[str, float]]) -> Picture:
    """Horizontal bars, log axis: for each chip (key) the bytes/s one chip moves at each level
    (``{level: bytes/s}``, the same levels for every chip, fastest first)."""
    names = list(ladders)
    levels = list(ladders[names[0]])
    figure = new_figure(8, 3.6)
    ax = figure.add_subplot()
    positions = np.arange(len(levels))
    width = 0.8 / len(names)
    for i, (name, colour) in enumerate(zip(names, _COLOURS)):
        values = [ladders[name][level] / 1e9 for level in levels]
        ax.barh(positions + (i - (len(names) - 1) / 2) * width, values, height=width,
                color=colour, label=name)
    ax.set_yticks(positions, levels)
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel="bandwidth per chip, one way (GB/s)",
           title="Each step away from the chip is slower")
    ax.legend(loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    parts = []
    for name in names:
        steps = ", ".join(f"{level} {format_bandwidth(bw)}" for level, bw in ladders[name].items())
        top, bottom = max(ladders[name].values()), min(ladders[name].values())
        parts.append(f"{name}: {steps} ({top / bottom:,.0f} times from top to bottom)")
    alt = ("Horizontal bar chart on a logarithmic axis of the bandwidth one chip has at each "
           "level, one way. " + "; ".join(parts) + ".")
    return Picture(figure, alt)


def scale_up_domains(domains: Sequence[tuple[str, int, float, float]]) -> Picture:
    """One row per domain (label, chips, bytes/s per chip inside, bytes/s per chip leaving):
    a filled dot inside, an open dot leaving, and their ratio."""
    figure = new_figure(8, 0.45 * len(domains) + 1.0)
    ax = figure.add_subplot()
    for row, (label, n, inside, out) in enumerate(domains):
        colour = BLUE if "TPU" in label else GREEN
        ax.plot([out / 1e9, inside / 1e9], [row, row], color=colour, lw=2, alpha=0.5)
        ax.plot(inside / 1e9, row, "o", color=colour, ms=8)
        ax.plot(out / 1e9, row, "o", mfc="white", mec=colour, ms=8)
        ax.annotate(f"{inside / out:,.0f}×", (inside / 1e9, row), textcoords="offset points",
                    xytext=(8, 0), va="center", fontsize=8)
    ax.set_yticks(range(len(domains)),
                  [f"{label} ({format_integer(n)} chips)" for label, n, _, _ in domains],
                  fontsize=8)
    ax.invert_yaxis()
    lo = min(d[3] for d in domains) / 1e9 / 2
    hi = max(d[2] for d in domains) / 1e9 * 2.5
    ax.set(xscale="log", xlabel="bandwidth per chip, one way (GB/s)", xlim=(lo, hi),
           title="Inside the scale-up domain (filled) and leaving it (open)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    rows = "; ".join(f"{label}, {format_integer(n)} chips: {format_bandwidth(i)} inside against "
                     f"{format_bandwidth(o)} leaving, {i / o:,.0f} times less"
                     for label, n, i, o in domains)
    alt = ("Dot plot, one row per scale-up domain, of the bandwidth per chip inside the domain "
           f"(filled dot) and leaving it (open dot), on a logarithmic axis: {rows}.")
    return Picture(figure, alt)


def hbm_read_time(chips: Sequence[Chip | str]) -> Picture:
    """Bars: the time each chip takes to read its whole HBM once (capacity / bandwidth), the
    floor under any step that touches every byte it holds (a decode step that reads all the
    weights and the cache)."""
    chosen = [get_chip(c) for c in chips]
    times = [c.hbm_bytes / c.hbm_bandwidth for c in chosen]
    figure = new_figure(7.5, 0.4 * len(chosen) + 1.2)
    ax = figure.add_subplot()
    colours = [{"google": BLUE, "nvidia": GREEN}.get(c.vendor.lower(), ORANGE) for c in chosen]
    ax.barh(range(len(chosen)), [t * 1e3 for t in times], color=colours)
    for row, (chip, t) in enumerate(zip(chosen, times)):
        ax.annotate(f"{format_bytes(chip.hbm_bytes)} / {format_bandwidth(chip.hbm_bandwidth)} = "
                    f"{t * 1e3:.1f} ms", (t * 1e3, row), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set_yticks(range(len(chosen)), [c.name for c in chosen], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(times) * 1e3 * 1.8)
    ax.set(xlabel="time to read all of HBM once (ms)",
           title="Capacity / bandwidth: the floor of a step that reads everything")
    rows = "; ".join(f"{c.name} {format_bytes(c.hbm_bytes)} at {format_bandwidth(c.hbm_bandwidth)}, "
                     f"{t * 1e3:.1f} ms" for c, t in zip(chosen, times))
    alt = ("Horizontal bar chart of the time each chip takes to read its whole HBM once, "
           f"capacity divided by bandwidth: {rows}.")
    return Picture(figure, alt)


def padding_tax(chip: Chip | str, sizes: Sequence[int] | None = None) -> Picture:
    """The useful share of the systolic array's work for a square D x D weight, against D: 1 at
    multiples of the array width, dropping just past each."""
    chip = get_chip(chip)
    width = chip.mxu_size
    if width is None:
        raise ValueError(f"{chip.name} has no systolic array size in the catalog")
    D = np.arange(16, 4 * width + 1) if sizes is None else np.asarray(sizes)
    useful = np.array([roofline.mxu_useful_fraction(chip, int(d), int(d)) for d in D])
    figure = new_figure(7.5, 3.2)
    ax = figure.add_subplot()
    ax.plot(D, useful, color=BLUE, lw=1.5)
    for k in range(1, int(D.max() // width) + 1):
        ax.axvline(k * width, color=GREY, ls=":", lw=1)
    ax.set(xlabel="D (a square weight D × D)", ylabel="useful share of the MXU's work",
           ylim=(0, 1.05), title=f"{chip.name}: padding to the {width}-wide systolic array")
    ax.grid(True, alpha=0.3)
    one_past = width + 1
    alt = (f"Line plot of the useful share of the {chip.name}'s {width} × {width} systolic "
           f"array's work for a D × D weight, D from {int(D[0])} to {int(D[-1])}: it is 1 at "
           f"every multiple of {width} (dotted lines) and drops just past each, to "
           f"{format_percent(roofline.mxu_useful_fraction(chip, one_past, one_past))} at "
           f"D = {one_past}, and climbs back to 1 at the next multiple.")
    return Picture(figure, alt)


def torus_slices(chip: Chip | str, shapes: Sequence[tuple[int, int]]) -> Picture:
    """TPU slices of ``chip`` as 2-D grids of chips, one panel per shape (the first axis drawn
    across): links between neighbours, and, on the axes :func:`torus.axis_wraps` says wrap, the
    wraparound link of each row or column as an orange stub off both ends."""
    chip = get_chip(chip)
    widths = [max(shape[0], 4) for shape in shapes]
    figure = new_figure(0.45 * sum(widths) + 1.2 * len(shapes), 3.4)
    grid = figure.add_gridspec(1, len(shapes), width_ratios=widths)
    parts = []
    for k, shape in enumerate(shapes):
        ax = figure.add_subplot(grid[0, k])
        wraps = torus.axis_wraps(chip, shape)[:2]
        nx, ny = shape
        for x in range(nx):
            for y in range(ny):
                ax.add_patch(Rectangle((x - 0.22, y - 0.22), 0.44, 0.44, color=BLUE))
                if x + 1 < nx:
                    ax.plot([x + 0.22, x + 0.78], [y, y], color="black", lw=1)
                if y + 1 < ny:
                    ax.plot([x, x], [y + 0.22, y + 0.78], color="black", lw=1)
        if wraps[0]:
            for y in range(ny):
                ax.plot([-0.75, -0.22], [y, y], color=ORANGE, lw=2)
                ax.plot([nx - 0.78, nx - 0.25], [y, y], color=ORANGE, lw=2)
        if wraps[1]:
            for x in range(nx):
                ax.plot([x, x], [-0.75, -0.22], color=ORANGE, lw=2)
                ax.plot([x, x], [ny - 0.78, ny - 0.25], color=ORANGE, lw=2)
        ax.set_xlim(-0.9, nx - 0.1)
        ax.set_ylim(-0.9, ny - 0.1)
        ax.set_aspect("equal")
        ax.axis("off")
        kind = ["ring" if w else "line" for w in wraps]
        ax.set_title(f"{chip.name} {nx} × {ny}:\n{nx} across a {kind[0]}, {ny} up a {kind[1]}",
                     fontsize=9)
        parts.append(f"{nx} × {ny} ({format_integer(nx * ny)} chips): the {nx}-chip axis is a "
                     f"{kind[0]}, the {ny}-chip axis a {kind[1]}")
    alt = (f"Grids of {chip.name} chips (blue squares) with their links to neighbours (black); "
           "an orange stub off both ends of a row or column is the wraparound link that joins "
           "its two ends into a ring: " + "; ".join(parts) + ".")
    return Picture(figure, alt)


def gpu_node_diagram(chip: Chip | str) -> Picture:
    """One GPU node (:func:`topology.gpu_node`): its GPUs on the NVSwitch fabric, each with its
    NVLink bandwidth, and the NICs' share per GPU towards the scale-out network."""
    node = topology.gpu_node(chip)
    n = node.gpus_in_node
    figure = new_figure(7.5, 3.4)
    ax = figure.add_subplot()
    shown = min(n, 8)
    xs = np.linspace(0, 10, shown)
    for x in xs:
        ax.add_patch(Rectangle((x - 0.45, 1.4), 0.9, 0.7, color=GREEN))
        ax.plot([x, x], [1.4, 0.9], color=BLUE, lw=3)
        ax.plot([x, x], [2.1, 2.9], color=ORANGE, lw=1.5)
    ax.add_patch(Rectangle((-0.6, 0.4), 11.2, 0.5, color=BLUE, alpha=0.8))
    ax.text(5, 0.65, f"NVSwitch fabric: {format_bandwidth(node.nvlink_bandwidth_per_gpu)} per GPU, "
            "one way, to any other GPU", ha="center", va="center", color="white", fontsize=9)
    ax.add_patch(Rectangle((-0.6, 2.9), 11.2, 0.5, color=ORANGE, alpha=0.8))
    ax.text(5, 3.15, f"scale-out network (NICs): {format_bandwidth(node.scale_out_bandwidth_per_gpu)}"
            " per GPU, one way", ha="center", va="center", color="white", fontsize=9)
    label = f"{n} GPUs" + (f" (8 of {n} drawn)" if n > 8 else "")
    ax.text(10.9, 1.75, label, ha="left", va="center", fontsize=9)
    ax.set_xlim(-1, 13)
    ax.set_ylim(0.2, 3.6)
    ax.axis("off")
    ax.set_title(f"One {node.chip.name} NVLink domain", fontsize=10)
    ratio = node.nvlink_bandwidth_per_gpu / node.scale_out_bandwidth_per_gpu
    alt = (f"Block diagram of one {node.chip.name} NVLink domain: {n} GPUs (green) each joined "
           f"to the NVSwitch fabric below at {format_bandwidth(node.nvlink_bandwidth_per_gpu)} "
           "one way, and to the scale-out network above at "
           f"{format_bandwidth(node.scale_out_bandwidth_per_gpu)} per GPU, {ratio:,.0f} times "
           "less.")
    return Picture(figure, alt)

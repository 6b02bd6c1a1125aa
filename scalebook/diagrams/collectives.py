"""Collectives step by step, and what they cost, drawn from :mod:`scalebook.collectives`.

- :func:`ring_steps`: a bidirectional ring AllGather, or a one-way ring ReduceScatter, as each
  chip's slots filling step by step;
- :func:`torus_all_gather`: an AllGather over a 2-D torus, one axis after the other, with the
  solver's time for each;
- :func:`all_to_all_blocks`: which block goes where in an AllToAll (a transpose of who holds
  what);
- :func:`time_against_size`: collective time against message size, latency- and
  bandwidth-bound, for labelled cost curves.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.patches import Rectangle

from .. import collectives, torus
from ..hardware import Chip, get_chip
from ..picture import Picture
from ..units import format_bytes, format_seconds
from ._draw import GREY, new_figure, shard_colour


def ring_holdings(n: int, kind: str = "AllGather") -> list[list[list[int]]]:
    """``holdings[step][chip]``: the shards chip holds after ``step`` steps on a ring of ``n``.
    AllGather, bidirectional with wraparound: the shards within ``step`` hops either way.
    ReduceScatter, one way round: the contributions summed so far into the shard the chip
    passes on next, ``(chip - step) mod n``, which has ``step + 1`` of the ``n`` addends."""
    if n < 2:
        raise ValueError("a ring needs at least 2 chips")
    if kind == "AllGather":
        return [[[s for s in range(n) if min((s - c) % n, (c - s) % n) <= step]
                 for c in range(n)] for step in range(n // 2 + 1)]
    if kind == "ReduceScatter":
        return [[[(c - k) % n for k in range(step + 1)] for c in range(n)]
                for step in range(n)]
    raise ValueError(f"ring_steps draws AllGather or ReduceScatter, not {kind!r}")


def ring_steps(n: int, kind: str = "AllGather") -> Picture:
    """Each chip's ``n`` slots after each step of ``kind`` on a ring of ``n`` chips
    (:func:`ring_holdings`): an AllGather fills every slot in ``n // 2`` steps both ways round;
    a ReduceScatter's slots show which chips' contributions a partial sum holds."""
    holdings = ring_holdings(n, kind)
    steps = len(holdings)
    figure = new_figure(7.5, 0.55 * steps + 0.9)
    axes = figure.subplots(steps, 1, sharex=True)
    axes = np.atleast_1d(axes)
    for step, ax in enumerate(axes):
        for chip in range(n):
            for slot in range(n):
                held = slot in holdings[step][chip]
                colour = shard_colour(slot) if held else "#f2f2f2"
                ax.add_patch(Rectangle((chip * (n + 1) + slot, 0), 1, 1, facecolor=colour,
                                       edgecolor="white", lw=0.5))
        ax.set(xlim=(0, n * (n + 1)), ylim=(0, 1), yticks=[])
        ax.set_ylabel(f"step {step}", rotation=0, ha="right", va="center", fontsize=9)
        ax.tick_params(bottom=False)
        for spine in ax.spines.values():
            spine.set_visible(False)
    axes[-1].set_xticks([c * (n + 1) + n / 2 for c in range(n)], [f"chip {c}" for c in range(n)],
                        fontsize=8)
    if kind == "AllGather":
        title = f"Bidirectional ring AllGather, {n} chips: each chip's shards after each step"
        alt = (f"Grid, one row per step (0 to {steps - 1}) and {n} slots per chip, of a "
               f"bidirectional ring AllGather over {n} chips: at step 0 each chip holds only "
               "its own shard; each step it receives one more shard from each neighbour, so "
               f"after step s it holds the 2s + 1 shards within s hops, and after {steps - 1} "
               f"steps every chip holds all {n}.")
    else:
        title = (f"One-way ring ReduceScatter, {n} chips: the addends in the partial sum each "
                 "chip passes on")
        alt = (f"Grid, one row per step (0 to {steps - 1}) and {n} slots per chip, of a one-way "
               f"ring ReduceScatter over {n} chips: at each step a chip adds its own "
               "contribution to the partial sum it received and passes it on, so after step s "
               f"each partial sum holds s + 1 of the {n} addends, and after {steps - 1} steps "
               "each chip holds one shard summed over every chip.")
    axes[0].set_title(title, fontsize=10)
    return Picture(figure, alt)


def torus_all_gather(nbytes: float, shape: tuple[int, int], chip: Chip | str) -> Picture:
    """An AllGather of ``nbytes`` (the whole array) over a 2-D slice ``shape``, one axis after
    the other: panels of the chips with the share of the array each holds (1/N, then 1/ny,
    then all), titled with the solver's time for each stage and, for comparison, for both axes
    at once (:func:`collectives.collective_cost`)."""
    chip = get_chip(chip)
    nx, ny = shape
    n = nx * ny
    wraps = torus.axis_wraps(chip, shape)[:2]  # each axis a ring or a line, as in the slice
    first = collectives.collective_cost("AllGather", nbytes / ny, [nx], chip, wraparound=wraps[0])
    second = collectives.collective_cost("AllGather", nbytes, [ny], chip, wraparound=wraps[1])
    both = collectives.collective_cost("AllGather", nbytes, [nx, ny], chip,
                                       wraparound=list(wraps))
    stages = [("start: each chip its own shard", lambda x, y: [x * ny + y]),
              (f"AllGather down the columns ({nx} chips): "
               f"{format_seconds(float(first.time))}", lambda x, y: [k * ny + y for k in range(nx)]),
              (f"then along the rows ({ny} chips): {format_seconds(float(second.time))}",
               lambda x, y: list(range(n)))]
    figure = new_figure(9.0, 3.4)
    for k, (title, held) in enumerate(stages):
        ax = figure.add_subplot(1, 3, k + 1)
        for x in range(nx):
            for y in range(ny):
                shards = held(x, y)
                ax.add_patch(Rectangle((y, nx - 1 - x), 0.9, 0.9, facecolor="#f2f2f2",
                                       edgecolor="black", lw=0.5))
                for j, s in enumerate(sorted(shards)):
                    ax.add_patch(Rectangle((y + 0.9 * s / n, nx - 1 - x), 0.9 / n, 0.9,
                                           facecolor=shard_colour(s), lw=0))
        ax.set(xlim=(-0.1, ny), ylim=(-0.1, nx), xticks=[], yticks=[])
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=8, wrap=True)
    figure.suptitle(f"AllGather of {format_bytes(nbytes)} over a {nx} × {ny} {chip.name} slice,"
                    f" one axis at a time (both at once: {format_seconds(float(both.time))})",
                    fontsize=9)
    alt = (f"Three grids of the {n} chips of a {nx} × {ny} {chip.name} slice, each chip a bar of "
           f"{n} slots coloured by the shards it holds, for an AllGather of "
           f"{format_bytes(nbytes)}: at the start each chip holds 1/{n} of the array; after an "
           f"AllGather down the columns ({nx} chips, {format_seconds(float(first.time))}) each holds "
           f"the {nx} shards of its column, 1/{ny} of the array; after one along the rows "
           f"({ny} chips, "
           f"{format_seconds(float(second.time))}) every chip holds all of it. Done over both axes at "
           f"once, using both axes' links together, the solver's time is "
           f"{format_seconds(float(both.time))}.")
    return Picture(figure, alt)


def all_to_all_blocks(n: int) -> Picture:
    """An AllToAll over ``n`` devices: before, device i holds row i of blocks (i → j); after,
    device j holds column j: every device keeps 1/n of its data and sends the rest, one block to
    each other device."""
    figure = new_figure(7.5, 3.4)
    for k, title in enumerate(("before: device i holds blocks i→0 … i→{}".format(n - 1),
                               "after: device j holds blocks 0→j … {}→j".format(n - 1))):
        ax = figure.add_subplot(1, 2, k + 1)
        for i in range(n):
            for j in range(n):
                src, dst = (i, j) if k == 0 else (j, i)
                ax.add_patch(Rectangle((j, n - 1 - i), 0.92, 0.92, facecolor=shard_colour(dst),
                                       alpha=0.45 + 0.55 * (src == dst), edgecolor="black",
                                       lw=0.4))
                ax.text(j + 0.46, n - 1 - i + 0.46, f"{src}→{dst}", ha="center", va="center",
                        fontsize=7)
        ax.set(xlim=(-0.1, n), ylim=(-0.1, n), xticks=[], yticks=[i + 0.46 for i in range(n)])
        ax.set_yticklabels([f"device {n - 1 - i}" for i in range(n)], fontsize=7)
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=8)
    alt = (f"Two {n} × {n} grids of blocks labelled source→destination for an AllToAll over {n} "
           f"devices: before, device i's row holds the blocks i→0 to i→{n - 1}; after, device "
           f"j's row holds 0→j to {n - 1}→j, the transpose. Each device keeps one block of its "
           f"own ({1 / n:.0%} of its data) and sends one block to each of the other {n - 1}.")
    return Picture(figure, alt)


def time_against_size(curves: Sequence[tuple[str, Any, str, str]], sizes: np.ndarray, *,
                      crossover: tuple[str, float, Any] | None = None,
                      title: str = "Collective time against message size") -> Picture:
    """Log-log time against bytes for ``curves`` (label, CollectiveCost over ``sizes``, colour,
    line style); ``crossover`` (label, V*, the cost whose bandwidth and latency terms are drawn
    dotted) marks where latency and bandwidth terms are equal."""
    figure = new_figure(7.5, 4.2)
    ax = figure.add_subplot()
    for label, cost, colour, style in curves:
        ax.plot(sizes, cost.time, color=colour, ls=style, lw=2, label=label)
    described = []
    for label, cost, _, _ in curves:
        small, big = float(np.asarray(cost.time)[0]), float(np.asarray(cost.time)[-1])
        described.append(f"{label} from {format_seconds(small)} to {format_seconds(big)}")
    extra = ""
    if crossover is not None:
        name, vstar, cost = crossover
        ax.plot(sizes, cost.bandwidth_time, color=GREY, ls=":", lw=1)
        ax.axhline(float(np.asarray(cost.latency_time).max()), color=GREY, ls=":", lw=1)
        ax.axvline(vstar, color=GREY, ls=":", lw=1)
        ax.annotate("latency-bound", (sizes[1], float(np.asarray(cost.latency_time).max()) * 3),
                    fontsize=9, color="0.3")
        ax.annotate("bandwidth-bound", (vstar * 8, float(np.asarray(cost.time)[-1]) / 50),
                    fontsize=9, color="0.3")
        extra = (f" For {name} the latency and bandwidth terms (dotted) are equal at "
                 f"V* = {format_bytes(vstar)}: below it the time is flat (latency-bound), "
                 "above it grows in proportion to V (bandwidth-bound).")
    ax.set_ylim(1e-7, None)
    ax.set(xscale="log", yscale="log", xlabel="array size V (bytes)", ylabel="time (s)",
           title=title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, alpha=0.3)
    alt = (f"Log-log plot of collective time against array size from {format_bytes(sizes[0])} to "
           f"{format_bytes(sizes[-1])}: " + "; ".join(described) + "." + extra)
    return Picture(figure, alt)

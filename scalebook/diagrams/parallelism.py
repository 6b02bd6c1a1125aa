"""Parallelism for training (Part 4): who holds what under each strategy, and a pipeline's
schedule with its bubble, drawn from :mod:`scalebook.sharding` and :mod:`scalebook.parallelism`.

- :func:`who_holds_what`: per device, its share of the batch, the weights and the optimizer
  state under DP, FSDP, TP and PP, from each strategy's sharding in the book's notation;
- :func:`pipeline_schedule`: the stages' timeline (:func:`parallelism.pipeline_timeline`),
  forwards and backwards per microbatch, idle time hatched, with the bubble fraction;
- :func:`comms_over_compute`: communication over compute per layer against the tokens per
  chip, one line per layout (:func:`parallelism.estimate`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.patches import Rectangle

from .. import parallelism
from ..hardware import Chip, get_chip
from ..picture import Picture
from ..sharding import Mesh, parse_sharding
from ..units import format_integer
from ._draw import BLUE, GREY, ORANGE, new_figure, shard_colour, words_list
from .sharding import block_index

#: Each strategy on a 1-D mesh X: the batch, the weight and the optimizer state, in the book's
#: notation, or, for PP, the layers a stage holds (drawn from the stage index).
STRATEGIES = {
    "DP": ("X[B_X, D]", "W[D, F]", "S[D, F]"),
    "FSDP": ("X[B_X, D]", "W[D_X, F]", "S[D_X, F]"),
    "TP": ("X[B, D]", "W[D, F_X]", "S[D, F_X]"),
    "PP": ("X[B, D]", "W[L_X, D]", "S[L_X, D]"),
}


def _share(spec: str, mesh: Mesh, device: int) -> tuple[int, int]:
    """(which block, how many blocks) of ``spec`` device ``device`` of the 1-D mesh holds."""
    sharding = parse_sharding(spec)
    sharded = [dim for dim in sharding.dims if dim.axes]
    if not sharded:
        return 0, 1
    return block_index(sharding, mesh, {"X": device})[sharding.dims.index(sharded[0])], \
        mesh.size_of(sharded[0].axes)


def who_holds_what(n_devices: int = 4, strategies: tuple[str, ...] = ("DP", "FSDP", "TP", "PP")
                   ) -> Picture:
    """One row per strategy, one column per device: three small bars, the device's share of the
    batch, of the weights and of the optimizer state (a full bar: all of it; a 1/N slice in the
    block's colour: that block only)."""
    mesh = Mesh({"X": n_devices})
    figure = new_figure(1.6 * n_devices + 1.2, 0.9 * len(strategies) + 0.8)
    ax = figure.add_subplot()
    described = []
    for row, name in enumerate(strategies):
        specs = STRATEGIES[name]
        parts = []
        for device in range(n_devices):
            for k, spec in enumerate(specs):
                block, blocks = _share(spec, mesh, device)
                x0 = device * 1.6 + k * 0.45
                y0 = len(strategies) - 1 - row
                ax.add_patch(Rectangle((x0, y0), 0.38, 0.7, facecolor="#f2f2f2",
                                       edgecolor="black", lw=0.4))
                height = 0.7 / blocks
                ax.add_patch(Rectangle((x0, y0 + 0.7 - (block + 1) * height), 0.38, height,
                                       facecolor=shard_colour(block) if blocks > 1 else
                                       (BLUE, ORANGE, GREY)[k], lw=0))
        for k, (spec, what) in enumerate(zip(specs, ("batch", "weights", "optimizer state"))):
            blocks = _share(spec, mesh, 0)[1]
            parts.append(f"{what} {'1/' + str(blocks) if blocks > 1 else 'all'}")
        ax.text(-0.2, len(strategies) - 1 - row + 0.35, name, ha="right", va="center",
                fontweight="bold")
        described.append(f"{name}: each device holds " + words_list(parts))
    for device in range(n_devices):
        ax.text(device * 1.6 + 0.6, len(strategies) - 0.05, f"device {device}", ha="center",
                fontsize=8)
    ax.text(0.6, -0.25, "batch · weights · optimizer", ha="center", fontsize=7, color=GREY)
    ax.set(xlim=(-1.0, n_devices * 1.6), ylim=(-0.4, len(strategies) + 0.2))
    ax.axis("off")
    alt = (f"Grid of {n_devices} devices (columns) by strategy (rows), each cell three bars: the "
           "device's share of the batch, the weights and the optimizer state. "
           + "; ".join(described) + ".")
    return Picture(figure, alt)


def pipeline_schedule(schedule: str, stages: int, microbatches: int, *,
                      t_forward: float = 1.0, t_backward: float = 2.0) -> Picture:
    """The stages' timeline of a GPipe or 1F1B step (:func:`parallelism.pipeline_timeline`):
    forwards blue, backwards orange, numbered by microbatch; the idle time is the bubble,
    :func:`parallelism.pipeline_bubble_fraction` of the step."""
    timeline = parallelism.pipeline_timeline(schedule, stages, microbatches,
                                             t_forward=t_forward, t_backward=t_backward)
    end = max(op[3] for ops in timeline for op in ops)
    bubble = float(parallelism.pipeline_bubble_fraction(stages, microbatches))
    figure = new_figure(8.0, 0.5 * stages + 1.2)
    ax = figure.add_subplot()
    for s, ops in enumerate(timeline):
        ax.add_patch(Rectangle((0, s - 0.4), end, 0.8, facecolor="white", hatch="///",
                               edgecolor="#cccccc", lw=0))
        for kind, m, start, stop in ops:
            ax.add_patch(Rectangle((start, s - 0.4), stop - start, 0.8,
                                   facecolor=BLUE if kind == "F" else ORANGE,
                                   edgecolor="white", lw=1))
            ax.text((start + stop) / 2, s, f"{kind}{m}", ha="center", va="center", fontsize=7,
                    color="white")
    ax.set(xlim=(0, end), ylim=(stages - 0.5, -0.5), xlabel="time (forward passes)",
           yticks=range(stages), yticklabels=[f"stage {s}" for s in range(stages)])
    ax.set_title(f"{schedule}, {stages} stages, {microbatches} microbatches: bubble "
                 f"{bubble:.0%} of the step", fontsize=10)
    alt = (f"Timeline of a {schedule} pipeline step over {stages} stages (rows) and "
           f"{microbatches} microbatches: forward passes (blue, F0 to F{microbatches - 1}) run "
           f"down the stages one after another, backward passes (orange, each {t_backward:g} "
           f"times a forward) run back up; each stage idles (hatched) while it waits, a bubble "
           f"of (K − 1)/(M + K − 1) = {stages - 1}/{microbatches + stages - 1} = {bubble:.0%} of "
           f"the step, which lasts {end:g} forward-pass times.")
    return Picture(figure, alt)


def comms_over_compute(mlp: parallelism.MLPStack, layouts: Mapping[str, parallelism.Layout],
                       chip: Chip | str, tokens_per_chip: Sequence[float]) -> Picture:
    """Log-log lines, one per layout: communication time over compute time per layer in the
    busier pass (forward or backward), from :func:`parallelism.estimate`, against the tokens
    each chip holds (``B / N``); below 1 a pass can hide its traffic."""
    chip = get_chip(chip)
    per_chip = np.asarray(tokens_per_chip, dtype=float)
    figure = new_figure(8.0, 4.0)
    ax = figure.add_subplot()
    described = []
    for (label, layout), style in zip(layouts.items(), ["-", "--", ":", "-.", (0, (5, 1))] * 4):
        est = parallelism.estimate(mlp, layout, chip, per_chip * layout.n_chips)
        ratio = np.maximum(np.asarray(est.forward_comms_time) / est.forward_compute_time,
                           np.asarray(est.backward_comms_time) / est.backward_compute_time)
        ratio = np.broadcast_to(ratio, per_chip.shape)
        ax.loglog(per_chip, ratio, linestyle=style, label=label)
        below = per_chip[ratio <= 1]
        where = (f"below 1 from about {format_integer(round(below[0]))} tokens per chip"
                 if below.size else "never hides it")
        described.append(f"{label} from {ratio[0]:.2g} to {ratio[-1]:.2g}, {where}")
    ax.axhline(1, color="0.3", linewidth=1)
    ax.text(per_chip[0] * 1.1, 1.1, "communication = compute", fontsize=8, color="0.3")
    ax.set(xlabel="tokens per chip, B / N", ylabel="communication / compute, busier pass")
    ax.set_title(f"MLP stack on {chip.name}: where each layout stops hiding its traffic",
                 fontsize=10)
    ax.legend(fontsize=8)
    alt = (f"Log-log line chart of communication time over compute time per layer, busier "
           f"pass, on {chip.name}, against tokens per chip from "
           f"{format_integer(round(per_chip[0]))} to {format_integer(round(per_chip[-1]))}, one "
           f"line per layout, with the level 1 marked: " + "; ".join(described) + ".")
    return Picture(figure, alt)

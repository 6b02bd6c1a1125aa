"""Decoding (Part 6): a decode step's time against the batch, latency against throughput, a
measured decode against the solver, and the step split by chips under tensor parallelism, all
from :class:`scalebook.inference.StepCost` objects the chapter computed.

- :func:`step_time_against_batch`: step time per context, phases in turn and the overlapped
  bound, with the critical batch;
- :func:`latency_against_throughput`: one curve per setting, ending where HBM is full;
- :func:`measured_decode`: a measured decode step against the solver's memory, compute and
  step times;
- :func:`step_by_chips`: memory time and AllReduces of one step against the tensor-parallel
  degree.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from ..inference import StepCost
from ..picture import Picture
from ..units import format_integer, format_seconds
from ._draw import BLUE, GREEN, GREY, ORANGE, RED, new_figure

_COLOURS = (BLUE, ORANGE, RED, GREEN, GREY)


def step_time_against_batch(curves: Mapping[int, Sequence[StepCost]], *, critical_batch: float,
                            title: str) -> Picture:
    """Log-log: per context length (key, tokens), the decode step's time with the phases in
    turn (solid) and the overlapped bound (dashed) against the batch; ``critical_batch`` dotted."""
    figure = new_figure(7.0, 3.6)
    ax = figure.add_subplot()
    rows = []
    for (context, steps), colour in zip(curves.items(), _COLOURS):
        B = [st.batch for st in steps]
        ax.plot(B, [st.time * 1e3 for st in steps], color=colour, lw=2,
                label=f"S = {format_integer(context)}: phases in turn")
        ax.plot(B, [st.time_overlapped * 1e3 for st in steps], color=colour, lw=1, ls="--")
        rows.append(f"S = {format_integer(context)}: {format_seconds(steps[0].time)} at B = "
                    f"{B[0]}, {format_seconds(steps[-1].time)} at B = {format_integer(B[-1])} "
                    f"(overlapped bound {format_seconds(steps[-1].time_overlapped)})")
    ax.axvline(critical_batch, color="0.3", ls=":", lw=1)
    ax.text(critical_batch * 1.08, ax.get_ylim()[0] * 1.5, f"B* = {critical_batch:.0f}",
            fontsize=8, color="0.3")
    ax.set(xscale="log", yscale="log", xlabel="batch B (sequences in the step)",
           ylabel="time per decode step (ms)")
    ax.legend(fontsize=7, loc="upper left", frameon=False, title="dashed: overlapped bound",
              title_fontsize=7)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=9)
    alt = (f"Log-log line chart, {title}: time per decode step against the batch, one colour "
           f"per cached context, solid with attention and matmuls in turn, dashed the "
           f"overlapped bound; flat while the weights dominate the bytes, rising past the "
           f"critical batch B* = {critical_batch:.0f} (dotted). " + "; ".join(rows) + ".")
    return Picture(figure, alt)


def latency_against_throughput(curves: Mapping[str, Sequence[StepCost]], *, title: str
                               ) -> Picture:
    """Per setting: latency (step time) against throughput (tokens/s per chip) as the batch
    grows; x at the last batch (HBM full), o where the weight matmuls turn compute-bound."""
    figure = new_figure(7.2, 4.0)
    ax = figure.add_subplot()
    rows = []
    for (label, steps), colour in zip(curves.items(), (BLUE, RED, GREEN, ORANGE, GREY)):
        x = [st.tokens_per_s_per_chip for st in steps]
        y = [st.time * 1e3 for st in steps]
        ax.plot(x, y, color=colour, lw=2, label=label)
        ax.plot(x[-1], y[-1], "x", color=colour, ms=8, mew=2)
        compute = [st for st in steps if st.weights_bound == "compute"]
        if compute:
            ax.plot(compute[0].tokens_per_s_per_chip, compute[0].time * 1e3, "o", mfc="white",
                    mec=colour, ms=7, mew=2)
        first, last = steps[0], steps[-1]
        rows.append(f"{label}: from B = {first.batch}, {format_seconds(first.time)} per token "
                    f"and {format_integer(round(first.tokens_per_s_per_chip))} tokens/s per "
                    f"chip, to B = {format_integer(last.batch)} where HBM is full, "
                    f"{format_seconds(last.time)} and "
                    f"{format_integer(round(last.tokens_per_s_per_chip))} tokens/s"
                    + (f", matmuls compute-bound from B = {compute[0].batch}" if compute
                       else ", matmuls memory-bound throughout"))
    ax.set(xscale="log", xlabel="throughput: tokens/s per chip",
           ylabel="latency: ms per output token", ylim=(0, None))
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{title}: each curve ends (x) where HBM is full; o: matmuls compute-bound "
                 "from here", fontsize=9)
    alt = (f"Line chart, {title}: latency per output token against throughput per chip (log "
           "scale) as the batch grows. " + "; ".join(rows) + ".")
    return Picture(figure, alt)


def measured_decode(model: Sequence[StepCost], measured: Sequence[tuple[int, float]], *,
                    critical_batch: float, knee: float, title: str) -> Picture:
    """Log-log: the solver's memory, compute and step time against the batch, the measured
    decode steps (``(batch, seconds)``) as dots, the critical batch and the measured knee."""
    figure = new_figure(7.0, 3.8)
    ax = figure.add_subplot()
    B = [p.batch for p in model]
    ax.plot(B, [p.t_memory * 1e3 for p in model], "--", color=BLUE, lw=1.2,
            label="solver: memory time (measured W)")
    ax.plot(B, [p.t_compute * 1e3 for p in model], ":", color=ORANGE, lw=1.5,
            label="solver: compute time (measured C)")
    ax.plot(B, [p.time * 1e3 for p in model], color="0.2", lw=2, label="solver: step time")
    ax.plot([b for b, _ in measured], [t * 1e3 for _, t in measured], "o-", color=RED,
            mec="black", label="measured decode step")
    if math.isfinite(critical_batch):
        ax.axvline(critical_batch, color="0.4", ls="-.", lw=1)
        ax.text(critical_batch * 1.05, ax.get_ylim()[1] * 0.5, f"B* = {critical_batch:.0f}",
                fontsize=8)
    if math.isfinite(knee) and knee > 0:
        ax.axvline(knee, color=RED, ls=":", lw=1)
        ax.text(knee * 1.05, ax.get_ylim()[1] * 0.3, f"measured knee ≈ {knee:.0f}", fontsize=8,
                color=RED)
    ax.set(xscale="log", yscale="log", xlabel="batch B (sequences)",
           ylabel="time per decode step (ms)")
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=9)
    points = ", ".join(f"B = {b}: {format_seconds(t)}" for b, t in measured)
    alt = (f"Log-log line chart, {title}: the solver's memory, compute and step time per decode "
           f"step against the batch, and the measured steps ({points}). Critical batch "
           + (f"B* = {critical_batch:.0f}" if math.isfinite(critical_batch) else "none")
           + "; measured knee "
           + (f"about {knee:.0f}." if math.isfinite(knee) and knee > 0 else "none the data "
              "support."))
    return Picture(figure, alt)


def step_by_chips(steps: Mapping[int, StepCost], *, title: str) -> Picture:
    """Stacked bars per tensor-parallel degree N: the step's memory time and its AllReduces
    (:class:`StepCost`), with the step time the solver gives on top."""
    ns = list(steps)
    figure = new_figure(7.0, 3.4)
    ax = figure.add_subplot()
    x = np.arange(len(ns))
    memory = np.array([steps[n].t_memory for n in ns]) * 1e3
    comm = np.array([steps[n].t_comm for n in ns]) * 1e3
    ax.bar(x, memory, color=BLUE, label="reading HBM")
    ax.bar(x, comm, bottom=memory, color=ORANGE, label="AllReduces")
    for k, n in enumerate(ns):
        ax.text(k, memory[k] + comm[k], format_seconds(steps[n].time), ha="center",
                va="bottom", fontsize=8)
    ax.set(xticks=x, xticklabels=[f"N = {n}" for n in ns], ylabel="ms per decode step",
           ylim=(0, (memory + comm).max() * 1.15))
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    rows = [f"N = {n}: memory {format_seconds(steps[n].t_memory)}, AllReduces "
            f"{format_seconds(steps[n].t_comm) if steps[n].t_comm > 0 else 'none'}, step {format_seconds(steps[n].time)}"
            for n in ns]
    alt = (f"Stacked bar chart, {title}: one decode step's time reading HBM and in AllReduces "
           "against the number of chips N it is split over. " + "; ".join(rows) + ".")
    return Picture(figure, alt)

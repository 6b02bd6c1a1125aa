"""Ring attention's work per device (Part 7): contiguous chunks against zig-zag, from
:func:`scalebook.long_context.causal_ring_schedule`.

- :func:`ring_vs_zigzag`: per ring step, each chip's causal work as a heat map, for contiguous
  and zig-zag chunks side by side, with each layout's step time against the ideal.
"""

from __future__ import annotations

import numpy as np

from .. import long_context
from ..picture import Picture
from ._draw import new_figure


def ring_vs_zigzag(cp: int) -> Picture:
    """Two heat maps, steps by chips, of the causal work (in full blocks) of ring attention over
    ``cp`` chips: contiguous chunks leave the early chips idle while the last does a full
    block every step; zig-zag gives every chip the same work."""
    schedules = {"contiguous": long_context.causal_ring_schedule(cp),
                 "zig-zag": long_context.causal_ring_schedule(cp, zigzag=True)}
    figure = new_figure(8.0, 0.35 * cp + 1.6)
    for k, (name, sched) in enumerate(schedules.items()):
        ax = figure.add_subplot(1, 2, k + 1)
        work = np.array(sched.work)
        ax.imshow(work, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for s in range(cp):
            for i in range(cp):
                ax.text(i, s, f"{work[s, i]:g}", ha="center", va="center", fontsize=7,
                        color="white" if work[s, i] > 0.6 else "black")
        ax.set(xticks=range(cp), yticks=range(cp), xlabel="chip", ylabel="ring step")
        ax.set_title(f"{name}: step time {sched.step_time:g} blocks, ideal {sched.ideal:g}",
                     fontsize=9)
    c, z = schedules["contiguous"], schedules["zig-zag"]
    alt = (f"Two heat maps of causal ring attention over {cp} chips, rows the ring steps, "
           "columns the chips, each cell that chip's work in full score blocks. Contiguous "
           f"chunks: the first chip's work at steps 0 to {cp - 1} is "
           f"{', '.join(f'{w:g}' for w in np.array(c.work)[:, 0])}, the last chip's "
           f"{', '.join(f'{w:g}' for w in np.array(c.work)[:, -1])}; the ring waits for the "
           f"busiest, {c.step_time:g} blocks against an ideal of {c.ideal:g} "
           f"({c.imbalance:.2f} times). Zig-zag: every chip does "
           f"{', '.join(sorted({f'{w:g}' for w in np.array(z.work).ravel()}))} per step, "
           f"{z.step_time:g} blocks, {z.imbalance:.2f} times the ideal.")
    return Picture(figure, alt)

"""Checkpointing against failures: goodput as a function of the checkpoint interval."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from scalebook.picture import Picture
from scalebook.reliability import goodput, young_interval
from scalebook.units import format_seconds

__all__ = ["goodput_vs_interval"]


def goodput_vs_interval(*, mtbf: float, restart: float, sync_stall: float, async_stall: float,
                        async_write: float, points: int = 60) -> Picture:
    """Goodput (:func:`scalebook.reliability.goodput`) against the checkpoint interval for a
    synchronous checkpoint (stall ``sync_stall`` s) and an asynchronous one (stall
    ``async_stall`` s, background write ``async_write`` s, interval at least the write), each
    with Young's interval marked."""
    lo, hi = max(min(async_write, sync_stall) / 2, 1.0), mtbf / 2
    taus = [lo * (hi / lo) ** (i / (points - 1)) for i in range(points)]
    sync = [goodput(t, sync_stall, mtbf, restart) for t in taus]
    asyn = [goodput(t, async_stall, mtbf, restart, background_write=async_write)
            if t >= async_write else math.nan for t in taus]
    t_sync = young_interval(sync_stall, mtbf)
    t_async = max(young_interval(async_stall, mtbf), async_write)
    g_sync = goodput(t_sync, sync_stall, mtbf, restart)
    g_async = goodput(t_async, async_stall, mtbf, restart, background_write=async_write)
    fig = Figure(figsize=(6.4, 3.6))
    ax = fig.add_subplot()
    ax.semilogx([t / 60 for t in taus], [100 * g for g in sync], color="C0",
                label=f"synchronous (stall {format_seconds(sync_stall)})")
    ax.semilogx([t / 60 for t in taus], [100 * g for g in asyn], color="C2",
                label=f"asynchronous (stall {format_seconds(async_stall)})")
    ax.plot([t_sync / 60], [100 * g_sync], "o", color="C0")
    ax.plot([t_async / 60], [100 * g_async], "o", color="C2")
    ax.set_xlabel("checkpoint interval (minutes of training)")
    ax.set_ylabel("goodput (%)")
    ax.set_title(f"one interruption every {format_seconds(mtbf)}, restart {format_seconds(restart)}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower center", fontsize=8)
    alt = (f"Line chart: goodput in percent against the checkpoint interval (log scale) for a job "
           f"interrupted every {format_seconds(mtbf)} with a restart of "
           f"{format_seconds(restart)}. Synchronous checkpoints stalling "
           f"{format_seconds(sync_stall)} peak at {100 * g_sync:.1f}% at Young's interval "
           f"{format_seconds(t_sync)}; asynchronous ones stalling {format_seconds(async_stall)} "
           f"(write {format_seconds(async_write)} in the background) peak at "
           f"{100 * g_async:.1f}% at {format_seconds(t_async)}. Both fall off for intervals far "
           f"longer, as more work is lost per failure.")
    return Picture(fig, alt)

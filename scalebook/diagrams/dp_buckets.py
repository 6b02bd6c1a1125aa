"""Gradient buckets behind the backward pass: exposed reduction time against bucket size."""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure

from scalebook.bucketing import DDP_DEFAULT_BUCKET_BYTES, bucket_timeline
from scalebook.hardware import Chip, get_chip
from scalebook.picture import Picture
from scalebook.units import format_bytes, format_seconds

__all__ = ["exposed_vs_bucket_size"]


def exposed_vs_bucket_size(gradient_bytes: float, backward_time: float, n_replicas: int,
                           chip: Chip | str, bucket_sizes: Sequence[float],
                           **collective_options) -> Picture:
    """Exposed gradient-AllReduce time (:func:`scalebook.bucketing.bucket_timeline`) for each
    bucket size, log-log, with PyTorch DDP's 25 MiB default marked."""
    chip = get_chip(chip)
    sizes = sorted(float(s) for s in bucket_sizes)
    exposed = [bucket_timeline(gradient_bytes, s, backward_time, n_replicas, chip,
                               **collective_options).exposed for s in sizes]
    default = bucket_timeline(gradient_bytes, DDP_DEFAULT_BUCKET_BYTES, backward_time,
                              n_replicas, chip, **collective_options).exposed
    best = min(range(len(sizes)), key=lambda i: exposed[i])
    fig = Figure(figsize=(6.4, 3.6))
    ax = fig.add_subplot()
    ax.loglog([s / 2**20 for s in sizes], [max(e, 1e-6) * 1e3 for e in exposed], marker="o",
              color="C0", label="exposed after the backward pass")
    ax.plot([DDP_DEFAULT_BUCKET_BYTES / 2**20], [max(default, 1e-6) * 1e3], marker="*",
            markersize=14, color="C3", linestyle="none", label="DDP default, 25 MiB")
    ax.set_xlabel("bucket size (MiB)")
    ax.set_ylabel("exposed AllReduce (ms)")
    ax.set_title(f"{format_bytes(gradient_bytes, binary=False)} of gradients over "
                 f"{n_replicas} {chip.name}s, backward pass {format_seconds(backward_time)}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper center", fontsize=8)
    points = "; ".join(f"{format_bytes(s)}: {format_seconds(e)}" for s, e in zip(sizes, exposed))
    alt = (f"Line chart, log-log: exposed gradient AllReduce time after a backward pass of "
           f"{format_seconds(backward_time)} against bucket size, for "
           f"{format_bytes(gradient_bytes, binary=False)} of gradients over {n_replicas} "
           f"{chip.name}s. {points}. Smallest at {format_bytes(sizes[best])}; tiny buckets pay "
           f"the per-collective latency thousands of times, huge ones start only when the "
           f"backward pass ends. DDP's 25 MiB default exposes {format_seconds(default)}.")
    return Picture(fig, alt)

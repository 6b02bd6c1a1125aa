"""Mixture-of-experts routing (Part 7): tokens dispatched to the experts on each device and
combined back, drawn from a routing (each token's top-k experts) and the experts' placement.

- :func:`moe_dispatch`: tokens (rows, grouped by the device they start on) and their arrows to
  the experts they picked (grouped by the device holding each); per device, the tokens it sends
  away and receives, and each expert's load against its capacity
  (:func:`scalebook.moe.expert_capacity`).
"""

from __future__ import annotations

from typing import Sequence

from .. import moe
from ..picture import Picture
from ._draw import GREY, RED, new_figure, shard_colour


def moe_dispatch(routes: Sequence[Sequence[int]], n_devices: int, n_experts: int, *,
                 capacity_factor: float = 1.25) -> Picture:
    """``routes[t]``: the experts token t picked (top-k). Tokens start evenly split over the
    devices in order; expert e lives on device ``e // (n_experts // n_devices)``. Lines from
    each token to its experts, solid when the expert is on another device (the AllToAll carries
    it there and back), dashed when local; an expert over capacity is marked red."""
    if n_experts % n_devices:
        raise ValueError("the experts must split evenly over the devices")
    tokens = len(routes)
    top_k = len(routes[0]) if routes else 0
    per_device = n_experts // n_devices
    home = [t * n_devices // tokens for t in range(tokens)]
    loads = [0] * n_experts
    for picks in routes:
        for e in picks:
            loads[e] += 1
    capacity = moe.expert_capacity(tokens, n_experts, top_k, capacity_factor)
    figure = new_figure(7.5, max(3.0, 0.22 * tokens + 1.0))
    ax = figure.add_subplot()
    ty = [tokens - 1 - t for t in range(tokens)]
    ey = [(n_experts - 1 - e) * (tokens - 1) / max(1, n_experts - 1) for e in range(n_experts)]
    sent = [0] * n_devices
    received = [0] * n_devices
    for t, picks in enumerate(routes):
        for e in picks:
            remote = e // per_device != home[t]
            if remote:
                sent[home[t]] += 1
                received[e // per_device] += 1
            ax.plot([0, 1], [ty[t], ey[e]], color=shard_colour(home[t]), lw=0.8,
                    ls="-" if remote else "--", alpha=0.8)
        ax.plot(0, ty[t], "o", color=shard_colour(home[t]), ms=5)
    for e in range(n_experts):
        full = loads[e] > capacity
        ax.plot(1, ey[e], "s", color=RED if full else shard_colour(e // per_device), ms=9)
        ax.text(1.04, ey[e], f"expert {e} (device {e // per_device}): {loads[e]} tokens"
                + (" > capacity" if full else ""), va="center", fontsize=7,
                color=RED if full else "black")
    ax.text(0, tokens - 0.2, "tokens, by device", ha="center", fontsize=8, color=GREY)
    ax.set(xlim=(-0.2, 1.9), ylim=(-1, tokens + 0.5))
    ax.axis("off")
    ax.set_title(f"Dispatch: {tokens} tokens, top-{top_k} of {n_experts} experts on {n_devices} "
                 f"devices, capacity {capacity}", fontsize=10)
    over = [e for e in range(n_experts) if loads[e] > capacity]
    moves = "; ".join(f"device {d} sends {sent[d]} and receives {received[d]}"
                      for d in range(n_devices))
    alt = (f"Routing diagram of an MoE layer: {tokens} tokens on {n_devices} devices each pick "
           f"{top_k} of {n_experts} experts ({per_device} per device); lines to an expert on "
           f"another device (solid) are what the dispatch AllToAll sends and the combine "
           f"AllToAll brings back, dashed ones stay local. {moves}. Expert loads "
           f"{', '.join(str(l) for l in loads)} against a capacity of {capacity}"
           + (f"; expert{'s' * (len(over) > 1)} {', '.join(map(str, over))} "
              f"overflow{'s' * (len(over) == 1)} and drop{'s' * (len(over) == 1)} tokens."
              if over else "; none overflows."))
    return Picture(figure, alt)

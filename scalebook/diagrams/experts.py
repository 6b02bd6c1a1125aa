"""Mixture-of-experts routing (Part 7): tokens dispatched to the experts on each device and
combined back, drawn from a routing (each token's top-k experts) and the experts' placement.

- :func:`moe_dispatch`: tokens (rows, grouped by the device they start on) and their arrows to
  the experts they picked (grouped by the device holding each); per device, the tokens it sends
  away and receives, and each expert's load against its capacity
  (:func:`scalebook.moe.expert_capacity`);
- :func:`moe_roofline`: one layer's routed experts against a dense MLP of equal active width as
  the tokens grow, with both critical batches (:func:`scalebook.moe.moe_layer_roofline`);
- :func:`expert_layouts`: EP, FSDP and TP of the routed experts, communication per layer against
  the tokens per chip (:func:`scalebook.moe.expert_weight_layouts`);
- :func:`drops_against_capacity`: the expected share of tokens dropped against the capacity
  factor (:func:`scalebook.moe.expected_dropped_fraction`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import moe
from ..hardware import Chip, get_chip
from ..picture import Picture
from ..units import format_integer, format_seconds
from ._draw import BLUE, GREY, ORANGE, RED, new_figure, shard_colour


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


def moe_roofline(cfg: moe.MoEConfig, dense: moe.MoEConfig, chip: Chip | str,
                 tokens: Sequence[float]) -> Picture:
    """Log-log: one layer's routed experts (``cfg``) and a dense MLP of equal active width
    (``dense``) against the tokens in the step, from :func:`moe.moe_layer_roofline`, with each
    one's critical batch (:func:`moe.moe_critical_batch`, :func:`moe.dense_critical_batch`)."""
    chip = get_chip(chip)
    T = np.asarray(tokens, dtype=float)
    moe_t = np.array([moe.moe_layer_roofline(cfg, chip, tokens=float(b)).time for b in T])
    dense_t = np.array([moe.moe_layer_roofline(dense, chip, tokens=float(b)).time for b in T])
    moe_b = moe.moe_critical_batch(chip, cfg.n_experts, cfg.top_k)
    dense_b = moe.dense_critical_batch(chip)
    figure = new_figure(7.0, 3.8)
    ax = figure.add_subplot()
    ax.plot(T, moe_t * 1e3, color=RED, lw=2, label=f"MoE layer: E = {cfg.n_experts}, "
            f"k = {cfg.top_k}")
    ax.plot(T, dense_t * 1e3, color=BLUE, lw=2, label="dense MLP of equal active width "
            f"(k·F_e = {format_integer(cfg.top_k * cfg.d_expert)})")
    for b, colour, text in ((dense_b, BLUE, "dense B*"), (moe_b, RED, "MoE B*")):
        ax.axvline(b, color=colour, ls=":", lw=1)
        ax.text(b * 1.1, 0.55, f"{text} ≈ {format_integer(round(b))}", color=colour,
                fontsize=8, rotation=90, transform=ax.get_xaxis_transform())
    ax.set(xscale="log", yscale="log", xlabel="tokens in the step (B)",
           ylabel="routed experts, one layer (ms)")
    ax.set_title(f"{cfg.name}'s routed experts on one {chip.name}, bf16", fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    ax.grid(True, alpha=0.3)
    alt = (f"Log-log line chart: time of one layer's routed experts of {cfg.name} on one "
           f"{chip.name} against the tokens in the step, from {format_integer(round(T[0]))} to "
           f"{format_integer(round(T[-1]))}, beside a dense MLP of the same active width. At "
           f"{format_integer(round(T[0]))} token the MoE layer takes "
           f"{format_seconds(moe_t[0])} and the dense MLP {format_seconds(dense_t[0])}; both stay flat, memory-bound, "
           f"until the dense MLP turns compute-bound at B* ≈ {format_integer(round(dense_b))} "
           f"tokens and the MoE layer only at about {format_integer(round(moe_b))}, "
           f"{cfg.n_experts / cfg.top_k:g} (E/k) times later; at {format_integer(round(T[-1]))} "
           f"tokens {format_seconds(moe_t[-1])} against {format_seconds(dense_t[-1])}.")
    return Picture(figure, alt)


def expert_layouts(cfg: moe.MoEConfig, chip: Chip | str, *, n_chips: int,
                   tokens_per_chip: Sequence[float], crossover: float) -> Picture:
    """Log-log: communication per layer (forward) of EP, FSDP and TP of the routed experts over
    ``n_chips``, and the expert compute, against the tokens per chip; ``crossover`` dotted
    (:func:`moe.ep_fsdp_crossover_tokens`)."""
    chip = get_chip(chip)
    T = np.asarray(tokens_per_chip, dtype=float)
    layouts = [moe.expert_weight_layouts(cfg, chip, n_chips=n_chips, tokens_per_chip=float(t))
               for t in T]
    names = list(layouts[0])
    figure = new_figure(7.0, 3.6)
    ax = figure.add_subplot()
    rows = []
    for name, colour in zip(names, (RED, BLUE, ORANGE, GREY)):
        comm = np.array([lay[name].comm for lay in layouts])
        ax.plot(T, comm * 1e3, lw=2, color=colour, label=f"{name}: communication")
        rows.append(f"{name} {format_seconds(comm[0])} to {format_seconds(comm[-1])}")
    compute = np.array([lay[names[0]].compute for lay in layouts])
    ax.plot(T, compute * 1e3, "--", color="0.3", label="expert compute")
    ax.axvline(crossover, color="0.5", ls=":", lw=1)
    ax.set(xscale="log", yscale="log", xlabel=f"tokens per {chip.name}",
           ylabel="per layer, forward (ms)")
    ax.set_title(f"{cfg.name}'s routed experts on {n_chips} {chip.name}s: EP, FSDP and TP",
                 fontsize=9)
    ax.legend(fontsize=8, frameon=False)
    ax.grid(True, alpha=0.3)
    alt = (f"Log-log line chart: communication per layer, forward, of {cfg.name}'s routed "
           f"experts over {n_chips} {chip.name}s against the tokens per chip, from "
           f"{format_integer(round(T[0]))} to {format_integer(round(T[-1]))}: "
           + "; ".join(rows) + f"; the expert compute (dashed) from {format_seconds(compute[0])} "
           f"to {format_seconds(compute[-1])}. Expert parallelism's AllToAlls grow with the "
           f"tokens, FSDP's weight gathers do not; they cross at about "
           f"{format_integer(round(crossover))} tokens per chip (dotted).")
    return Picture(figure, alt)


def drops_against_capacity(tokens: int, n_experts: int, top_k: int,
                           factors: Sequence[float]) -> Picture:
    """The expected share of routed tokens dropped by a uniform router
    (:func:`moe.expected_dropped_fraction`) against the capacity factor, log scale."""
    c = np.asarray(factors, dtype=float)
    dropped = np.array([moe.expected_dropped_fraction(tokens, n_experts, top_k, float(f))
                        for f in c])
    figure = new_figure(7.0, 3.4)
    ax = figure.add_subplot()
    shown = dropped > 0
    ax.plot(c[shown], dropped[shown] * 100, color=RED, lw=2)
    marks = [f for f in (1.0, 1.25, 1.5, 2.0) if c[0] <= f <= c[-1]]
    described = []
    for f in marks:
        d = moe.expected_dropped_fraction(tokens, n_experts, top_k, f)
        slots = moe.expert_capacity(tokens, n_experts, top_k, f)
        described.append(f"c = {f:g}: {slots} slots per expert, {d:.2%} dropped" if d >= 1e-4
                         else f"c = {f:g}: {slots} slots per expert, under 0.01% dropped")
        if d > 0:
            ax.plot(f, d * 100, "o", color=RED)
    ax.set(yscale="log", xlabel="capacity factor c (slots per expert / mean load)",
           ylabel="tokens dropped (%)")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"{format_integer(tokens)} tokens, top-{top_k} of {n_experts} experts, "
                 "uniform router", fontsize=9)
    alt = (f"Line chart, log vertical axis: the expected share of routed tokens dropped when "
           f"{format_integer(tokens)} tokens each pick {top_k} of {n_experts} experts at random, "
           f"against the capacity factor from {c[0]:g} to {c[-1]:g}; it falls steeply as the "
           "buffers grow. " + "; ".join(described) + ".")
    return Picture(figure, alt)

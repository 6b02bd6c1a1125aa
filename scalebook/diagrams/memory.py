"""Memory by kind (Parts 4-6): a training step's bytes stacked by what they hold, and the KV
cache filling HBM as the batch grows, from :mod:`scalebook.training` and
:mod:`scalebook.inference`.

- :func:`training_memory_stack`: one stacked bar per setting of
  :class:`~scalebook.training.TrainingFootprint` (weights, gradients, master, moments,
  activations) against a chip's HBM;
- :func:`kv_cache_fill`: weights plus the KV cache per chip against the batch, and the largest
  batch that fits.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .. import inference
from ..hardware import Chip, get_chip
from ..picture import Picture
from ..transformer import TransformerConfig
from ..units import format_bytes, format_integer
from ._draw import BLUE, GREEN, GREY, ORANGE, RED, new_figure

_KINDS = (("weights", BLUE), ("gradients", ORANGE), ("master", GREEN), ("moments", "#7b3fa0"),
          ("activations", RED))
#: A per-chip :class:`~scalebook.training.TrainingMemory` has the optimizer as one kind.
_KINDS_PER_CHIP = (("weights", BLUE), ("gradients", ORANGE), ("optimizer", GREEN),
                   ("activations", RED))


def training_memory_stack(footprints: Mapping[str, object], chip: Chip | str) -> Picture:
    """Stacked bars (GiB per chip) of each footprint (label -> TrainingFootprint, or anything with
    the five byte attributes; or all of them per-chip TrainingMemory, with weights, gradients,
    optimizer and activations), with the chip's HBM as a line."""
    chip = get_chip(chip)
    labels = list(footprints)
    kinds = _KINDS if all(hasattr(footprints[l], "master") for l in labels) else _KINDS_PER_CHIP
    figure = new_figure(7.5, 3.8)
    ax = figure.add_subplot()
    bottoms = np.zeros(len(labels))
    for kind, colour in kinds:
        values = np.array([getattr(footprints[l], kind) for l in labels]) / 2**30
        ax.bar(labels, values, bottom=bottoms, color=colour, label=kind)
        bottoms += values
    ax.axhline(chip.hbm_bytes / 2**30, color="black", ls="--", lw=1)
    ax.annotate(f"{chip.name} HBM {format_bytes(chip.hbm_bytes)}", (0, chip.hbm_bytes / 2**30),
                xytext=(0, 4), textcoords="offset points", fontsize=8)
    ax.set(ylabel="GiB per chip", title="A training step's memory, by kind")
    ax.legend(loc="upper right", fontsize=8)
    rows = []
    for label in labels:
        fp = footprints[label]
        parts = ", ".join(f"{kind} {format_bytes(getattr(fp, kind))}" for kind, _ in kinds)
        total = sum(getattr(fp, kind) for kind, _ in kinds)
        fits = "fits" if total <= chip.hbm_bytes else "does not fit"
        rows.append(f"{label}: {parts}; {format_bytes(total)} in all, {fits}")
    alt = (f"Stacked bar chart of memory per chip by kind against the {chip.name}'s "
           f"{format_bytes(chip.hbm_bytes)} of HBM (dashed): " + "; ".join(rows) + ".")
    return Picture(figure, alt)


def kv_cache_fill(cfg: TransformerConfig, chip: Chip | str, *, n_chips: int, context: int,
                  batches: Sequence[int] | None = None, dtype: str = "bf16") -> Picture:
    """Per chip: the weights (flat) and the KV cache of ``batch`` sequences of ``context``
    tokens (growing with the batch), stacked, against HBM; the largest batch that fits marked.
    Weights and cache are split evenly over ``n_chips`` (the first cut; the book's serving
    model refines how the cache splits past K heads)."""
    chip = get_chip(chip)
    B = np.arange(1, 513) if batches is None else np.asarray(batches)
    weights = inference.weight_bytes(cfg, dtype) / n_chips
    per_seq = inference.kv_bytes_per_token(cfg, dtype) * context / n_chips
    cache = B * per_seq
    fits = int((chip.hbm_bytes - weights) // per_seq) if chip.hbm_bytes > weights else 0
    figure = new_figure(7.5, 3.6)
    ax = figure.add_subplot()
    ax.fill_between(B, 0, weights / 2**30, color=BLUE, alpha=0.8, label="weights")
    ax.fill_between(B, weights / 2**30, (weights + cache) / 2**30, color=ORANGE, alpha=0.8,
                    label="KV cache")
    ax.axhline(chip.hbm_bytes / 2**30, color="black", ls="--", lw=1, label="HBM")
    if 0 < fits <= B[-1]:
        ax.axvline(fits, color=GREY, ls=":", lw=1)
        ax.annotate(f"fits up to B = {format_integer(fits)}", (fits, chip.hbm_bytes / 2**30),
                    xytext=(4, -14), textcoords="offset points", fontsize=8)
    ax.set(xlabel="batch (sequences)", ylabel="GiB per chip", xlim=(B[0], B[-1]),
           ylim=(0, max(chip.hbm_bytes, weights + cache[-1]) / 2**30 * 1.05),
           title=f"{cfg.name} on {n_chips} × {chip.name}, {format_integer(context)} tokens each")
    ax.legend(loc="upper left", fontsize=8)
    alt = (f"Stacked area chart per chip against the batch: {cfg.name}'s weights take "
           f"{format_bytes(weights)} of each of {n_chips} {chip.name}s whatever the batch, and "
           f"each sequence of {format_integer(context)} tokens adds {format_bytes(per_seq)} of "
           f"KV cache; against {format_bytes(chip.hbm_bytes)} of HBM the cache fills the rest "
           f"at B = {format_integer(fits)} sequences.")
    return Picture(figure, alt)

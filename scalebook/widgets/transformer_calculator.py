"""A transformer calculator: parameters by block, FLOPs per token, training memory, days to train.

A reader picks a model (LLaMA-3 8B, 70B, 405B or any edited shape), a context length, a token
budget, a cluster (chip, count) and an MFU, and sees

- where the parameters are (embedding, attention with grouped-query K/V, MLP, unembedding),
- training FLOPs per token against context length: the flat ``6·P`` of the weight matmuls and
  the attention core's ``12·L·T·H·d_h`` rising through it, with the crossover marked,
- the training memory by kind (weights, gradients, master copy, Adam moments, activations),
  per chip when perfectly sharded over the cluster, against the chip's HBM,
- the time to train the budget at the chosen MFU, next to the (unreachable) time at peak.

Everything comes from :mod:`scalebook.transformer` (:func:`param_count`,
:func:`flops_per_token`, :func:`attention_crossover_context`) and :mod:`scalebook.training`
(:func:`training_memory`, :func:`fewest_chips`, :func:`run_time`).

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`calculator_state` (pure) -> :class:`CalculatorState`, and
   :func:`calculator_series`, every number and text the figure shows. They live in
   :mod:`scalebook.live.calculator` (plain Python on the solver), which also draws the same
   series in the browser on the book's static site, and are re-exported here;
2. **drawing**: :func:`draw_calculator` draws a state on three axes and returns its artists by
   name; :func:`update_calculator` moves them to another state (all axes have fixed ranges);
3. **widget**: :func:`transformer_calculator` -> :class:`TransformerCalculator` (an
   :class:`Explorer`). Choosing a preset fills the model fields; editing one makes it "custom"
   (:func:`linked_controls`, the same rule the static site follows).
"""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets

from ..hardware import get_chip
from ..live.calculator import (
    CALCULATOR_CHIPS,
    CONTEXT_RANGE,
    CONTEXTS,
    CUSTOM,
    DASHED,
    DOTTED,
    FLOPS_AXIS,
    FLOPS_STYLES,
    HBM_COLOUR,
    MEMORY_AXIS_HBM,
    MEMORY_BAR_HALF_WIDTH,
    MEMORY_KINDS,
    MEMORY_XLIM,
    MODEL_FIELDS,
    PARAM_BLOCKS,
    PARAM_COLOUR,
    CalculatorState,
    calculator_series,
    calculator_state,
    calculator_summary,
    flops_curves,
    linked_controls,
    param_fractions,
)
from ..training import PRESETS, REMAT_MODES
from ..transformer import TransformerConfig
from . import Explorer, _figure

# The state, series and summary live in scalebook.live.calculator (no ipywidgets, matplotlib
# or NumPy arrays), shared with the book's static site; these names stay importable from here.
__all__ = [
    "CalculatorState", "calculator_state", "draw_calculator", "update_calculator",
    "calculator_summary", "transformer_calculator", "TransformerCalculator",
    "MODEL_FIELDS", "CUSTOM", "PARAM_BLOCKS", "MEMORY_KINDS", "CONTEXT_RANGE", "CONTEXTS",
    "CALCULATOR_CHIPS", "FLOPS_AXIS", "MEMORY_AXIS_HBM", "param_fractions", "flops_curves",
    "calculator_series", "linked_controls",
]


# --------------------------------------------------------------------------- drawing


def draw_calculator(axes: Sequence, state: CalculatorState) -> dict[str, object]:
    """Three panels with fixed axes: parameter share by block (bars, 0 to 1); training FLOPs
    per token against context length, log-log, in units of ``6·P_matmul`` (the weight
    matmuls at 1, the MLP below, the attention core rising, their sum, a dotted vertical at
    the attention/MLP crossover and a marker at this context); and the training memory per
    chip by kind (stacked bar) in units of the chip's HBM, with the HBM line at 1.

    Clears the axes. Returns the artists by name: ``param/<block>`` (Rectangle),
    ``flops/<curve>`` and ``crossover``, ``now``, ``hbm`` (Line2D), ``memory/<kind>``
    (Rectangle), ``param_title``, ``flops_title``, ``memory_title`` and ``heading`` (Text).
    """
    ax_p, ax_f, ax_m = axes
    figure = ax_p.figure
    for ax in axes:
        ax.clear()
    for text in list(figure.texts):
        text.remove()
    artists: dict[str, object] = {}
    labels = [label for label, _ in PARAM_BLOCKS]
    bars = ax_p.bar(range(len(labels)), [0.0] * len(labels), color=PARAM_COLOUR, width=0.7)
    for label, bar in zip(labels, bars):
        artists[f"param/{label}"] = bar
    ax_p.set(ylim=(0, 1.0), xticks=range(len(labels)), ylabel="share of parameters")
    ax_p.set_xticklabels(labels, rotation=30, fontsize=8)
    ax_f.set(xscale="log", yscale="log", xlim=CONTEXT_RANGE, ylim=FLOPS_AXIS,
             xlabel="context length T (tokens)", ylabel="training FLOPs/token ÷ 6·P")
    line_style = {None: "-", DASHED: "--", DOTTED: ":"}
    for name, colour, width, dash, label in FLOPS_STYLES:  # as the static site's chart
        (artists[f"flops/{name}"],) = ax_f.plot([], [], color=colour, lw=width,
                                                ls=line_style[dash], label=label)
    (artists["crossover"],) = ax_f.plot([], [], color=HBM_COLOUR, lw=1, ls=":")
    (artists["now"],) = ax_f.plot([], [], color=FLOPS_STYLES[2][1], marker="o", ls="",
                                  mec="black", ms=7, zorder=5)
    ax_f.legend(loc="upper left", fontsize=7, frameon=False)
    ax_f.grid(True, which="major", alpha=0.3)
    for kind, colour in MEMORY_KINDS:
        (artists[f"memory/{kind}"],) = ax_m.bar([0], [0.0], width=2 * MEMORY_BAR_HALF_WIDTH,
                                                color=colour, label=kind)
    (artists["hbm"],) = ax_m.plot([-0.5, 0.5], [1.0, 1.0], color=HBM_COLOUR, lw=2, ls="--",
                                  label="HBM of one chip")
    ax_m.set(xlim=MEMORY_XLIM, ylim=(0, MEMORY_AXIS_HBM), xticks=[],
             ylabel="memory per chip ÷ HBM")
    ax_m.legend(loc="upper right", fontsize=7, frameon=False)
    for key, ax in (("param_title", ax_p), ("flops_title", ax_f), ("memory_title", ax_m)):
        artists[key] = ax.text(0.0, 1.03, "", transform=ax.transAxes, fontsize=8)
    artists["heading"] = figure.text(0.01, 0.985, "", fontsize=9, va="top")
    update_calculator(axes, artists, state)
    return artists


def update_calculator(axes: Sequence, artists: dict, state: CalculatorState) -> list:
    """Move :func:`draw_calculator`'s artists to ``state`` (the axes never change); return
    every artist that depends on the state. The numbers and texts are
    :func:`calculator_series`, the same the static site's chart draws."""
    series = calculator_series(state)
    dynamic: list = []
    for (label, _fn), share in zip(PARAM_BLOCKS, series["shares"]):
        bar = artists[f"param/{label}"]
        bar.set_height(share)
        dynamic.append(bar)
    for name, values in series["curves"].items():
        artists[f"flops/{name}"].set_data(series["contexts"], values)
        dynamic.append(artists[f"flops/{name}"])
    x = series["crossover"]
    artists["crossover"].set_data([x, x], list(FLOPS_AXIS))
    artists["now"].set_data(*([v] for v in series["now"]))
    dynamic += [artists["crossover"], artists["now"]]
    for kind, _colour, bottom, height in series["memory"]:
        bar = artists[f"memory/{kind}"]
        bar.set_y(bottom)
        bar.set_height(height)
        dynamic.append(bar)
    for key in ("param_title", "flops_title", "memory_title", "heading"):
        artists[key].set_text(series[key])
    dynamic += [artists["hbm"], artists["param_title"], artists["flops_title"],
                artists["memory_title"], artists["heading"]]
    return dynamic


# --------------------------------------------------------------------------- widget


class TransformerCalculator(Explorer):
    """The calculator's :class:`Explorer`: a preset fills the model fields, editing a field
    switches the preset to "custom"."""

    def link_controls(self, changed) -> None:
        name = next((n for n, control in self.controls.items() if control is changed), None)
        self.set_quietly(linked_controls(self.values(), name))


def _int_box(description: str, value: int, width: str = "16%") -> widgets.IntText:
    return widgets.IntText(value=int(value), description=description,
                           style={"description_width": "initial"},
                           layout=widgets.Layout(width=width))


def transformer_calculator(preset: str = "LLaMA-3 70B", *, seq_len: int = 8192,
                           tokens_trillions: float = 15.0, global_batch: int = 2048,
                           remat: str = "full", chip: str = "H100", n_chips: int = 16384,
                           mfu: float = 0.4, config: TransformerConfig | None = None,
                           dpi: float = 100) -> TransformerCalculator:
    """A transformer calculator for ``preset`` (or ``config``).

    Controls (``w.controls``): ``preset``, the model fields :data:`MODEL_FIELDS`, ``seq_len``,
    ``tokens_trillions``, ``global_batch`` (sequences, for the activations), ``remat``,
    ``chip``, ``n_chips`` and ``mfu``. ``w.state`` is a :class:`CalculatorState`. Raises
    ``ValueError`` for bad initial inputs.
    """
    if config is None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        config = PRESETS[preset]
    else:
        preset = CUSTOM
    chip_name = get_chip(chip).name
    if chip_name not in CALCULATOR_CHIPS:
        raise ValueError(f"{chip_name} has no bf16 figure; choose one of "
                         f"{', '.join(CALCULATOR_CHIPS)}")
    controls = {
        "preset": widgets.Dropdown(options=[*PRESETS, CUSTOM], value=preset,
                                   description="model"),
        **{name: _int_box(name, getattr(config, name)) for name in MODEL_FIELDS},
        "seq_len": _int_box("context T", seq_len, "20%"),
        "tokens_trillions": widgets.FloatText(value=float(tokens_trillions),
                                              description="tokens (trillions)",
                                              style={"description_width": "initial"},
                                              layout=widgets.Layout(width="24%")),
        "global_batch": _int_box("batch (sequences)", global_batch, "24%"),
        "remat": widgets.Dropdown(options=REMAT_MODES, value=remat, description="remat"),
        "chip": widgets.Dropdown(options=CALCULATOR_CHIPS, value=chip_name, description="chip"),
        "n_chips": _int_box("chips", n_chips, "20%"),
        "mfu": widgets.FloatSlider(value=float(mfu), min=0.05, max=1.0, step=0.01,
                                   description="MFU", readout_format=".2f"),
    }
    figure = _figure((11, 3.6), dpi, ncols=3, left=0.06, right=0.985, bottom=0.2, top=0.78,
                     wspace=0.32)
    rows = [("preset", "seq_len", "tokens_trillions"), MODEL_FIELDS,
            ("global_batch", "remat"), ("chip", "n_chips", "mfu")]
    return TransformerCalculator(
        controls, figure, calculator_state,
        lambda fig, state: draw_calculator(fig.axes, state), calculator_summary,
        layout_rows=rows,
        refresh=lambda fig, artists, state: update_calculator(fig.axes, artists, state),
        live="scalebook.live.calculator")

"""A layout planner for training a Transformer: memory, step time and MFU of a chip layout.

It goes past the memory widget of the Ultra-Scale Playbook (Tazi et al., Hugging Face, 2025):
besides per-chip memory by kind against HBM it prices the step (compute, exposed
communication, pipeline bubble), estimates the MFU and says in plain words what is wrong with
a layout. Everything comes from :func:`scalebook.training.plan_training`; the "best layout"
button runs :func:`scalebook.training.best_training_layout`.

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`planner_state` (pure) -> :class:`PlannerState`, and the series the figure
   plots: in :mod:`scalebook.live.layout_planner` (plain Python, shared with the book's static
   site, where the same controls run in the reader's browser), re-exported here;
2. **drawing**: :func:`draw_planner` draws a state's series on two axes and returns its
   artists by name;
3. **widget**: :func:`layout_planner` -> :class:`LayoutPlanner` (an :class:`Explorer`) whose
   ``controls`` are the inputs and ``buttons["best"]`` the search.

Choosing a preset fills the model fields; editing a model field switches the preset to
"custom".
"""

from __future__ import annotations

import html
from typing import Sequence

import ipywidgets as widgets

from ..hardware import get_chip
from ..live import layout_planner as _live
from ..live.layout_planner import (
    BEST,
    CUSTOM,
    LAYOUT_FIELDS,
    MEMORY_AXIS_HBM,
    MODEL_FIELDS,
    PLANNER_CHIPS,
    TIME_AXIS_IDEAL,
    PlannerState,
    best_layout_controls,
    ideal_step,
    linked_controls,
    planner_series,
    planner_state,
    planner_summary,
)
from ..training import PRESETS, REMAT_MODES
from ..transformer import TransformerConfig
from . import Explorer, _figure

__all__ = [
    "PlannerState", "planner_state", "draw_planner", "update_planner", "planner_summary",
    "ideal_step", "layout_planner",
    "LayoutPlanner", "MODEL_FIELDS", "LAYOUT_FIELDS", "CUSTOM", "PLANNER_CHIPS",
    "MEMORY_AXIS_HBM", "TIME_AXIS_IDEAL",
]

# The state, linked controls, search, series and summary live in scalebook.live.layout_planner
# (no ipywidgets, no matplotlib), shared with the book's static site; these names stay
# importable from here.
_MEMORY_KINDS, _TIME_KINDS = _live.MEMORY_KINDS, _live.TIME_KINDS
_TIME_LABELS = _live.TIME_LABELS
_GIB = _live.GIB
_wrap_line = _live.wrap_line


# --------------------------------------------------------------------------- drawing


def _axes_key(state: PlannerState) -> tuple:
    """What the axes themselves depend on (the chip's HBM): a change needs a full redraw."""
    return (state.plan.hbm_capacity,)


def draw_planner(axes: Sequence, state: PlannerState) -> dict[str, object]:
    """Two stacked bars: per-chip memory by kind (GiB) against an HBM line (left, up to
    :data:`MEMORY_AXIS_HBM` × HBM), and the step time split into compute, exposed
    communication and bubble, in units of the ideal step (:func:`ideal_step`; right, up to
    :data:`TIME_AXIS_IDEAL`), where the bar's height is 1 / MFU. The model and layout are
    written above them and the plan's flags under them. Every number and text comes from
    :func:`scalebook.live.layout_planner.planner_series`, which the book's site draws too.

    Clears the axes. Returns the artists by name: ``memory/<kind>`` for weights, gradients,
    optimizer and activations and ``time/<kind>`` for compute, comms_exposed and bubble
    (``Rectangle``), ``hbm`` and ``ideal`` (``Line2D``), ``memory_title``, ``time_title``, ``heading``
    and ``flags`` (``Text``). :func:`update_planner` moves them to another state.
    """
    ax_mem, ax_time = axes
    figure = ax_mem.figure
    for ax in axes:
        ax.clear()
    for text in list(figure.texts):  # the previous drawing's heading and flags
        text.remove()
    series = planner_series(state)
    hbm = series["hbm"]
    width = 2 * _live.BAR_HALF_WIDTH
    artists: dict[str, object] = {"axes_key": _axes_key(state)}
    for kind, colour in _MEMORY_KINDS:
        (artists[f"memory/{kind}"],) = ax_mem.bar([0], [0.0], width=width, color=colour,
                                                  label=kind)
    (artists["hbm"],) = ax_mem.plot([-0.5, 0.5], [hbm, hbm], color=_live.HBM_COLOUR, lw=2,
                                    ls="--", label=f"HBM {hbm:.0f} GiB")
    ax_mem.set(xlim=_live.X_RANGE, ylim=(0, series["memory_max"]), xticks=[],
               ylabel="GiB per chip")
    ax_mem.set_yticks(*zip(*series["memory_ticks"]))
    ax_mem.legend(loc="upper right", fontsize=8, frameon=False)
    for kind, colour in _TIME_KINDS:
        (artists[f"time/{kind}"],) = ax_time.bar([0], [0.0], width=width, color=colour,
                                                 label=_TIME_LABELS[kind])
    (artists["ideal"],) = ax_time.plot([-0.5, 0.5], [1.0, 1.0], color="black", lw=1, ls=":",
                                       zorder=3, label="ideal (MFU 100%)")
    ax_time.set(xlim=_live.X_RANGE, ylim=(0, series["time_max"]), xticks=[],
                ylabel="step time ÷ ideal step")
    ax_time.set_yticks(*zip(*series["time_ticks"]))
    ax_time.legend(loc="upper right", fontsize=8, frameon=False)
    artists["memory_title"] = ax_mem.text(0.0, 1.02, "", transform=ax_mem.transAxes,
                                          fontsize=10)
    artists["time_title"] = ax_time.text(0.0, 1.02, "", transform=ax_time.transAxes,
                                         fontsize=10)
    # The model and layout above the plots and the warnings under them, so that a static copy
    # of the figure says what it shows.
    artists["heading"] = figure.text(0.01, 0.985, "", fontsize=9, va="top")
    artists["flags"] = figure.text(0.01, 0.02, "", fontsize=8, va="bottom")
    update_planner(axes, artists, state)
    return artists


def update_planner(axes: Sequence, artists: dict, state: PlannerState) -> list | None:
    """Move :func:`draw_planner`'s artists to ``state``; return those to repaint, or None when
    the axes themselves must change (another axis range, time unit or HBM size)."""
    if artists.get("axes_key") != _axes_key(state):
        return None
    series = planner_series(state)  # the numbers the static site's chart draws too
    dynamic: list = []
    for prefix in ("memory", "time"):
        for segment in series[prefix]:
            bar = artists[f"{prefix}/{segment['kind']}"]
            bar.set_y(segment["bottom"])
            bar.set_height(segment["height"])
            dynamic.append(bar)
    artists["memory_title"].set_text(series["memory_title"])
    artists["time_title"].set_text(series["time_title"])
    artists["heading"].set_text(series["heading"])
    flags = artists["flags"]
    flags.set_text(_wrap_line(series["flags"]))
    flags.set_color(series["flags_colour"])
    return [*dynamic, artists["hbm"], artists["ideal"], artists["memory_title"],
            artists["time_title"], artists["heading"], flags]


# --------------------------------------------------------------------------- widget


class LayoutPlanner(Explorer):
    """The planner's :class:`Explorer`: keeps the preset and the model fields consistent and
    owns the "best layout" button (``buttons["best"]``; :meth:`apply_best_layout`)."""

    def __init__(self, controls, figure, **kwargs):
        self.buttons = {BEST: widgets.Button(description="best layout",
                                             tooltip="search for the fastest fitting layout")}
        super().__init__(controls, figure, planner_state,
                         lambda fig, state: draw_planner(fig.axes, state), planner_summary,
                         refresh=lambda fig, artists, state: update_planner(fig.axes, artists,
                                                                            state),
                         live="scalebook.live.layout_planner", **kwargs)
        self.children = (*self.children[:-3], widgets.HBox([self.buttons[BEST]]),
                         *self.children[-3:])
        self.buttons[BEST].on_click(lambda _button: self.apply_best_layout())

    def link_controls(self, changed) -> None:
        """A preset fills the model fields; editing a model field makes the preset "custom"
        (:func:`scalebook.live.layout_planner.linked_controls`, as on the book's site)."""
        name = next((n for n, c in self.controls.items() if c is changed), None)
        self.set_quietly(linked_controls(self.values(), name))

    def apply_best_layout(self) -> None:
        """Run the solver's search for the current model, chip, chip count and batch, and set
        the layout controls to what it found (or show why nothing fits):
        :func:`scalebook.live.layout_planner.best_layout_controls`."""
        try:
            found = best_layout_controls(self.values())
        except ValueError as exc:
            self._show_error(str(exc))
            return
        self.set_quietly(found)
        self.update()

    def _show_error(self, message: str) -> None:
        self.error = message.splitlines()[0] if message else message
        self.message.value = f"<span style='color:#b00020'>⚠ {html.escape(self.error)}</span>"


def _int_box(description: str, value: int, width: str = "19%") -> widgets.IntText:
    return widgets.IntText(value=int(value), description=description,
                           style={"description_width": "initial"},
                           layout=widgets.Layout(width=width))


def layout_planner(preset: str = "LLaMA-3 70B", chip: str = "TPU v5p", n_chips: int = 1024, *,
                   seq_len: int = 8192, global_batch: int = 2048, dp: int = 1, fsdp: int = 128,
                   tp: int = 8, pp: int = 1, zero_stage: int = 3, microbatches: int = 1,
                   remat: str = "full", overlap: bool = True,
                   config: TransformerConfig | None = None, dpi: float = 100) -> LayoutPlanner:
    """A layout planner for training ``preset`` (or ``config``) on ``n_chips`` ``chip`` chips.

    Controls (``w.controls``): ``preset`` (LLaMA-3 8B/70B/405B or "custom"), the model fields
    :data:`MODEL_FIELDS`, ``seq_len``, ``global_batch`` (sequences), ``chip``, ``n_chips``, the
    layout fields :data:`LAYOUT_FIELDS` and ``overlap``. ``w.buttons["best"].click()`` runs the
    search. ``w.state`` is a :class:`PlannerState`. Raises ``ValueError`` for bad initial
    inputs (unknown preset or chip, a degree below 1, ...).
    """
    if config is None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        config = PRESETS[preset]
    else:
        preset = CUSTOM
    chip_name = get_chip(chip).name
    if chip_name not in PLANNER_CHIPS:
        raise ValueError(f"{chip_name} has no bf16 figure; choose one of "
                         f"{', '.join(PLANNER_CHIPS)}")
    controls = {
        "preset": widgets.Dropdown(options=[*PRESETS, CUSTOM], value=preset,
                                   description="model"),
        **{name: _int_box(name, getattr(config, name), "16%") for name in MODEL_FIELDS},
        "seq_len": _int_box("sequence length", seq_len, "24%"),
        "global_batch": _int_box("global batch (sequences)", global_batch, "30%"),
        "chip": widgets.Dropdown(options=PLANNER_CHIPS, value=chip_name, description="chip"),
        "n_chips": _int_box("chips", n_chips, "19%"),
        "dp": _int_box("DP", dp, "12%"),
        "fsdp": _int_box("FSDP", fsdp, "12%"),
        "tp": _int_box("TP", tp, "12%"),
        "pp": _int_box("PP", pp, "12%"),
        "zero_stage": widgets.Dropdown(options=[("ZeRO-0 (replicas)", 0),
                                                ("ZeRO-1 (optimizer)", 1),
                                                ("ZeRO-2 (+ gradients)", 2),
                                                ("ZeRO-3 (+ weights)", 3)],
                                       value=zero_stage, description="DP sharding",
                                       style={"description_width": "initial"}),
        "microbatches": _int_box("microbatches", microbatches, "19%"),
        "remat": widgets.Dropdown(options=REMAT_MODES, value=remat, description="remat"),
        "overlap": widgets.Checkbox(value=bool(overlap), description="overlap comms"),
    }
    figure = _figure((9, 4.1), dpi, ncols=2, left=0.08, right=0.98, bottom=0.16, top=0.87,
                     wspace=0.3)
    rows = [("preset", "seq_len", "global_batch"), MODEL_FIELDS, ("chip", "n_chips", "overlap"),
            ("dp", "fsdp", "tp", "pp", "microbatches"), ("zero_stage", "remat")]
    return LayoutPlanner(controls, figure, layout_rows=rows)

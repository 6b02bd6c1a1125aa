"""The layout planner's numbers: state, linked controls, the best-layout search, plot series,
summary, and the live view.

Plain Python on :mod:`scalebook.training` (no ipywidgets, no matplotlib, no NumPy arrays),
shared by the Jupyter widget (:func:`scalebook.widgets.layout_planner.layout_planner`, drawn
with matplotlib) and the book's static site (:func:`view`, drawn in the reader's browser).

The figure is two stacked bars: per-chip memory by kind in GiB (2^30 bytes) against the chip's
HBM, and the step time split into compute, exposed communication and bubble, in units of the
ideal step (model FLOPs / (N · peak), so the bar's height is 1 / MFU).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from ..hardware import chip_names, get_chip
from ..training import (PRESETS, REMAT_MODES, TrainingLayout, TrainingPlan, best_training_layout,
                        plan_training)
from ..transformer import TransformerConfig
from ..units import format_bytes, format_count, format_seconds
from . import chart
from .options import refused_options

__all__ = [
    "PlannerState", "planner_state", "ideal_step", "linked_controls", "best_layout_controls",
    "planner_series", "planner_summary", "planner_chart", "wrap_line", "view", "disabled_options",
    "CUSTOM",
    "MODEL_FIELDS", "LAYOUT_FIELDS", "PLANNER_CHIPS", "MEMORY_KINDS", "TIME_KINDS",
    "TIME_LABELS", "MEMORY_AXIS_HBM", "TIME_AXIS_IDEAL", "GIB", "BEST", "FIGURE_PX", "X_RANGE",
    "BAR_HALF_WIDTH", "DEFAULTS", "axis_ticks",
]

#: The preset dropdown's entry for a hand-edited model.
CUSTOM = "custom"

#: Controls that describe the model; editing one switches the preset to "custom".
MODEL_FIELDS: tuple[str, ...] = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads",
                                 "vocab_size")

#: Controls the best-layout search sets.
LAYOUT_FIELDS: tuple[str, ...] = ("dp", "fsdp", "tp", "pp", "zero_stage", "microbatches", "remat")

#: The name of the "best layout" button (``changed == BEST`` runs the search).
BEST = "best"

#: Bar segments, bottom to top, and their colours.
MEMORY_KINDS = (("weights", "#1f5fa8"), ("gradients", "#6b9bd1"), ("optimizer", "#d9731a"),
                ("activations", "#5a9e2f"))
TIME_KINDS = (("compute", "#1f5fa8"), ("comms_exposed", "#d9731a"), ("bubble", "#999999"))
TIME_LABELS = {"compute": "compute", "comms_exposed": "exposed comms", "bubble": "bubble"}
HBM_COLOUR, FLAG_COLOUR, CALM_COLOUR = "#b00020", "#b00020", "#4d4d4d"

#: Bytes in a GiB, the memory axis's unit.
GIB = 2.0 ** 30

#: The memory axis runs to this multiple of the chip's HBM; the time axis to this many ideal
#: steps. Fixed ranges keep the axes still while the inputs move (a bar past the top is
#: clipped, and its title gives the number).
MEMORY_AXIS_HBM = 1.5
TIME_AXIS_IDEAL = 2.5

#: Size of the Jupyter figure in pixels (9 x 4.1 inches at 100 dpi).
FIGURE_PX = (900, 410)

#: Chips offered: those with a bf16 figure (training runs in bf16).
PLANNER_CHIPS: tuple[str, ...] = tuple(n for n in chip_names() if "bf16" in get_chip(n).dtypes)

#: The Jupyter widget's default controls (``layout_planner()``): LLaMA-3 70B on 1,024 TPU v5p.
DEFAULTS: Mapping[str, object] = MappingProxyType({
    "preset": "LLaMA-3 70B",
    **{name: getattr(PRESETS["LLaMA-3 70B"], name) for name in MODEL_FIELDS},
    "seq_len": 8192, "global_batch": 2048, "chip": "TPU v5p", "n_chips": 1024, "dp": 1,
    "fsdp": 128, "tp": 8, "pp": 1, "zero_stage": 3, "microbatches": 1, "remat": "full",
    "overlap": True,
})


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class PlannerState:
    """The planner's inputs and the priced plan (:class:`scalebook.training.TrainingPlan`)."""

    preset: str
    config: TransformerConfig
    n_chips: int
    plan: TrainingPlan

    @property
    def flags(self) -> tuple[str, ...]:
        return self.plan.flags


def _int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) \
            or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def planner_state(*, preset: str = "LLaMA-3 70B", n_layers: int, d_model: int, d_ff: int,
                  n_heads: int, n_kv_heads: int, vocab_size: int, seq_len: int,
                  global_batch: int, chip: str, n_chips: int, dp: int = 1, fsdp: int = 1,
                  tp: int = 1, pp: int = 1, zero_stage: int = 3, microbatches: int = 1,
                  remat: str = "none", overlap: bool = True) -> PlannerState:
    """Price the layout the controls describe. The model fields (not the preset) define the
    model; ``preset`` is only carried along. Raises ``ValueError`` for any bad input."""
    cfg = TransformerConfig(
        n_layers=_int("n_layers", n_layers), d_model=_int("d_model", d_model),
        d_ff=_int("d_ff", d_ff), n_heads=_int("n_heads", n_heads),
        n_kv_heads=_int("n_kv_heads", n_kv_heads), vocab_size=_int("vocab_size", vocab_size),
        name=preset if preset in PRESETS else "custom model")
    layout = TrainingLayout(dp=dp, fsdp=fsdp, tp=tp, pp=pp, zero_stage=zero_stage,
                            microbatches=microbatches, remat=remat)
    n_chips = _int("n_chips", n_chips)
    plan = plan_training(cfg, layout, chip, global_batch=_int("global batch", global_batch),
                         seq_len=_int("sequence length", seq_len), n_chips=n_chips,
                         overlap=bool(overlap))
    return PlannerState(preset=preset, config=cfg, n_chips=n_chips, plan=plan)


def ideal_step(plan: TrainingPlan) -> float:
    """Seconds the step would take at 100% MFU: model FLOPs / (N · peak) = MFU × step time."""
    return plan.mfu * plan.step_time.total


# --------------------------------------------------------------------------- linked controls


def linked_controls(values: Mapping[str, object], changed: str | None) -> dict[str, object]:
    """Controls to set after ``changed`` moved: a preset fills the model fields
    (:data:`MODEL_FIELDS`); editing a model field makes the preset "custom". ``{}`` otherwise."""
    if changed == "preset":
        preset = values["preset"]
        cfg = PRESETS.get(preset) if isinstance(preset, str) else None
        return {} if cfg is None else {name: getattr(cfg, name) for name in MODEL_FIELDS}
    if changed in MODEL_FIELDS:
        return {"preset": CUSTOM}
    return {}


def best_layout_controls(values: Mapping[str, Any]) -> dict[str, object]:
    """The layout controls (:data:`LAYOUT_FIELDS`) of the fastest fitting layout of exactly
    ``n_chips`` chips for the model, chip, batch and overlap in ``values``
    (:func:`scalebook.training.best_training_layout`, a search over a few thousand layouts).
    ``values`` are every control as the page sends it (any JSON value, as :func:`view`'s
    ``controls``): :func:`planner_state` checks each before the search.

    Raises ``ValueError`` (one line) for bad inputs or when no layout fits.
    """
    try:
        state = planner_state(**values)  # validates the inputs first
        best = best_training_layout(state.config, values["chip"], state.n_chips,
                                    global_batch=state.plan.global_batch,
                                    seq_len=state.plan.seq_len, overlap=bool(values["overlap"]))
    except ValueError as exc:
        message = str(exc)
        raise ValueError(message.splitlines()[0] if message else message) from None
    return {name: getattr(best.layout, name) for name in LAYOUT_FIELDS}


# --------------------------------------------------------------------------- series


def wrap_line(text: str, width: int = 130) -> str:
    """Break ``text`` at "; " so that no line is much longer than ``width`` characters."""
    lines, line = [], ""
    for part in text.split("; "):
        candidate = f"{line}; {part}" if line else part
        if line and len(candidate) > width:
            lines.append(line + ";")
            line = part
        else:
            line = candidate
    return "\n".join([*lines, line])


def axis_ticks(top: float, most: int = 7) -> list[list]:
    """Ticks 0, s, 2s, ... up to ``top`` with the smallest "nice" step s (1, 2, 2.5 or 5 times
    a power of ten) that gives at most ``most`` of them, labelled "%g" ("0", "20", "2.5"):
    the same on the Jupyter figure and the page."""
    exponent = math.floor(math.log10(top)) - 1
    while True:
        for mantissa in (1.0, 2.0, 2.5, 5.0):
            step = mantissa * 10.0 ** exponent
            if math.floor(top / step + 1e-9) + 1 <= most:
                values = [round(k * step, 10) for k in range(math.floor(top / step + 1e-9) + 1)]
                return [[v, f"{v:g}"] for v in values]
        exponent += 1


def _stack(parts: list[tuple[str, str, float]]) -> list[dict]:
    """Stacked segments ``(kind, colour, height)``, bottom up: each with its ``bottom``."""
    out, bottom = [], 0.0
    for kind, colour, height in parts:
        out.append({"kind": kind, "colour": colour, "bottom": bottom, "height": height})
        bottom += height
    return out


def planner_series(state: PlannerState) -> dict:
    """Every drawn number and text of the planner figure:

    ``memory``: segments ``{kind, colour, bottom, height}`` in GiB per chip (weights,
    gradients, optimizer, activations); ``hbm`` (GiB) and ``memory_max`` = HBM × 1.5 (the
    axis top); ``time``: segments (compute, comms_exposed, bubble) in ideal steps, so they add
    up to 1 / MFU; ``time_max``; ``memory_ticks`` and ``time_ticks`` (:func:`axis_ticks`); ``memory_title``, ``time_title``, ``heading`` (model, batch,
    chips, layout) and ``flags`` (the plan's warnings joined by "; ", or "no warnings") with
    ``flags_colour``.
    """
    plan = state.plan
    hbm = plan.hbm_capacity / GIB
    ideal = ideal_step(plan)
    total = plan.memory.total / GIB
    verdict = "fits" if plan.fits else "does not fit"
    memory_off = " (off the scale)" if total > MEMORY_AXIS_HBM * hbm else ""
    time_off = " (off the scale)" if 1.0 / plan.mfu > TIME_AXIS_IDEAL else ""
    return {
        "memory": _stack([(k, c, getattr(plan.memory, k) / GIB) for k, c in MEMORY_KINDS]),
        "hbm": hbm,
        "memory_max": MEMORY_AXIS_HBM * hbm,
        "memory_ticks": axis_ticks(MEMORY_AXIS_HBM * hbm),
        "time": _stack([(k, c, getattr(plan.step_time, k) / ideal) for k, c in TIME_KINDS]),
        "time_max": TIME_AXIS_IDEAL,
        "time_ticks": axis_ticks(TIME_AXIS_IDEAL),
        "memory_title": f"memory: {total:,.1f} of {hbm:.1f} GiB, {verdict}{memory_off}",
        "time_title": (f"step {format_seconds(plan.step_time.total)}, MFU {plan.mfu:.0%}"
                       f"{time_off}"),
        "heading": (f"{plan.config.name}, {plan.global_batch:,} × {plan.seq_len:,} tokens on "
                    f"{plan.n_chips:,} {plan.chip_name}: {plan.layout.describe()}"),
        "flags": "; ".join(plan.flags) if plan.flags else "no warnings",
        "flags_colour": FLAG_COLOUR if plan.flags else CALM_COLOUR,
    }


#: The planner's stated assumptions, shown under its tables (scalebook.training's model).
MODEL_NOTE = ("Model: data-parallel and pipeline traffic overlaps compute within each pass; "
              "tensor-parallel collectives are never hidden (no collective matmuls), so TP "
              "shows exposed communication even below F·W/C. Activations: the LLaMA block's own "
              "tensors, flash-style attention (no T×T kept). Step time is a lower bound at peak "
              "FLOPs/s.")


def planner_summary(state: PlannerState) -> str:
    """HTML: the layout, flags, memory and time tables and the collectives of the step."""
    plan = state.plan
    lay = plan.layout
    flags = "".join(f"<li style='color:#b00020'>{html.escape(f)}</li>" for f in plan.flags)
    flags_html = f"<ul>{flags}</ul>" if flags else "<p>no warnings</p>"
    memory = "".join(f"<tr><td>{kind}</td><td>{format_bytes(getattr(plan.memory, kind))}</td>"
                     "</tr>" for kind, _ in MEMORY_KINDS)
    comms = "".join(f"<tr><td>{html.escape(c.name)}</td><td>{format_bytes(c.nbytes)}</td>"
                    f"<td>{format_seconds(c.time)}</td></tr>" for c in plan.comms)
    return (
        "<div style='font-size:90%'>"
        f"<b>{html.escape(plan.config.name)}</b> on {plan.n_chips} × "
        f"{html.escape(plan.chip_name)}: "
        f"{html.escape(lay.describe())}; {format_count(plan.tokens_per_step)} tokens per step, "
        f"{format_count(plan.flops_per_step, unit='FLOPs')}; "
        f"step {format_seconds(plan.step_time.total)} "
        f"(compute {format_seconds(plan.step_time.compute)}, exposed comms "
        f"{format_seconds(plan.step_time.comms_exposed)}, bubble "
        f"{format_seconds(plan.step_time.bubble)}); <b>MFU {plan.mfu:.1%}</b>"
        f"{flags_html}"
        "<table style='border-collapse:collapse;display:inline-block;vertical-align:top;"
        "margin-right:2em'><tr><th>per chip</th><th>bytes</th></tr>"
        f"{memory}<tr><td><b>total</b></td><td><b>{format_bytes(plan.memory.total)}</b> of "
        f"{format_bytes(plan.hbm_capacity)}</td></tr></table>"
        "<table style='border-collapse:collapse;display:inline-block;vertical-align:top'>"
        "<tr><th>collective</th><th>sent per chip</th><th>time</th></tr>"
        f"{comms or '<tr><td>none</td><td></td><td></td></tr>'}</table>"
        f"<p>{html.escape(MODEL_NOTE)}</p></div>")


#: The bar's slot on the x axis: the bar spans -0.3..0.3, its reference line -0.5..0.5, and
#: the right of the axis is left free for the legend (as in the Jupyter figure).
X_RANGE = (-0.5, 1.6)
BAR_HALF_WIDTH = 0.3


def _bar_segments(segments: list[dict], labels: Mapping[str, str]) -> list[dict]:
    """Stacked segments as filled rectangles (matplotlib's ``bar(0, h, 0.6, bottom=b)``)."""
    w = BAR_HALF_WIDTH
    return [chart.area([[-w, s["bottom"]], [w, s["bottom"]], [w, s["bottom"] + s["height"]],
                        [-w, s["bottom"] + s["height"]]], s["colour"],
                       label=labels.get(s["kind"], s["kind"])) for s in segments]


def planner_chart(series: dict) -> dict:
    """:func:`planner_series` as a :mod:`~scalebook.live.chart` description: one stacked bar
    per panel with the HBM (left) and ideal-step (right) lines across its slot, the heading
    and the flags as the figure's texts."""
    slot = chart.axis("linear", *X_RANGE, "", ticks=[])
    memory = [*_bar_segments(series["memory"], {}),
              chart.line([[-0.5, series["hbm"]], [0.5, series["hbm"]]], HBM_COLOUR,
                         dash=[4, 2], label=f"HBM {series['hbm']:.0f} GiB")]
    time = [*_bar_segments(series["time"], TIME_LABELS),
            chart.line([[-0.5, 1.0], [0.5, 1.0]], "#000000", width=1, dash=[1, 3],
                       label="ideal (MFU 100%)")]
    return chart.chart([
        chart.panel(series["memory_title"], slot,
                    chart.axis("linear", 0.0, series["memory_max"], "GiB per chip",
                               ticks=series["memory_ticks"]),
                    memory, legend="upper right"),
        chart.panel(series["time_title"], slot,
                    chart.axis("linear", 0.0, series["time_max"], "step time ÷ ideal step",
                               ticks=series["time_ticks"]),
                    time, legend="upper right"),
    ], width=FIGURE_PX[0], height=FIGURE_PX[1],
        texts=[chart.text(series["heading"]),
               chart.text(series["flags"], colour=series["flags_colour"])])


# --------------------------------------------------------------------------- the live view


def disabled_options(values: Mapping[str, object]) -> dict[str, list[list]]:
    """The model, chip, DP-sharding and remat choices that the planner would refuse with the
    other controls at ``values`` (a preset with fewer layers than the pipeline stages, say),
    each with the refusal's message (:func:`scalebook.live.options.refused_options`)."""
    choices = {"preset": list(PRESETS), "chip": PLANNER_CHIPS, "zero_stage": (0, 1, 2, 3),
               "remat": REMAT_MODES}
    return refused_options(planner_state, values, choices, linked_controls)


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its controls (the Jupyter names: ``preset``, the model
    fields, ``seq_len``, ``global_batch``, ``chip``, ``n_chips``, the layout fields,
    ``overlap``). ``changed == "preset"`` or a model field links the others
    (:func:`linked_controls`); ``changed == "best"`` (the button) runs the search
    (:func:`best_layout_controls`). The controls it set come back as ``"controls"``, with the
    picture or, when the linked values are rejected, with the error (the Jupyter widget also
    keeps the fields it filled). Missing controls take their :data:`DEFAULTS`."""
    controls = {**DEFAULTS, **controls}
    if changed == BEST:
        updates = best_layout_controls(controls)
    else:
        updates = linked_controls(controls, changed)
    try:
        state = planner_state(**{**controls, **updates})
    except ValueError as exc:
        if not updates:
            raise
        return {"error": str(exc), "controls": updates}
    out = {"summary_html": planner_summary(state), "chart": planner_chart(planner_series(state)),
           "disabled": disabled_options({**controls, **updates})}
    if updates:
        out["controls"] = updates
    return out

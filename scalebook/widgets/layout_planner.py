"""A layout planner for training a Transformer: memory, step time and MFU of a chip layout.

It goes past the memory widget of the Ultra-Scale Playbook (Tazi et al., Hugging Face, 2025):
besides per-chip memory by kind against HBM it prices the step (compute, exposed
communication, pipeline bubble), estimates the MFU and says in plain words what is wrong with
a layout. Everything comes from :func:`scalebook.training.plan_training`; the "best layout"
button runs :func:`scalebook.training.best_training_layout`.

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`planner_state` (pure) -> :class:`PlannerState`;
2. **drawing**: :func:`draw_planner` draws a state on two axes and returns its artists by name;
3. **widget**: :func:`layout_planner` -> :class:`LayoutPlanner` (an :class:`Explorer`) whose
   ``controls`` are the inputs and ``buttons["best"]`` the search.

Choosing a preset fills the model fields; editing a model field switches the preset to
"custom".
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Sequence

import ipywidgets as widgets

from ..hardware import chip_names, get_chip
from ..training import (
    PRESETS,
    REMAT_MODES,
    TrainingLayout,
    TrainingPlan,
    best_training_layout,
    plan_training,
)
from ..transformer import TransformerConfig
from ..units import format_bytes, format_count, format_seconds
from . import Explorer, _figure

__all__ = [
    "PlannerState", "planner_state", "draw_planner", "update_planner", "planner_summary",
    "ideal_step", "layout_planner",
    "LayoutPlanner", "MODEL_FIELDS", "LAYOUT_FIELDS", "CUSTOM",
]

#: The preset dropdown's entry for a hand-edited model.
CUSTOM = "custom"

#: Controls that describe the model; editing one switches the preset to "custom".
MODEL_FIELDS: tuple[str, ...] = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads",
                                 "vocab_size")

#: Controls the best-layout search sets.
LAYOUT_FIELDS: tuple[str, ...] = ("dp", "fsdp", "tp", "pp", "zero_stage", "microbatches", "remat")

_MEMORY_KINDS = (("weights", "#1f5fa8"), ("gradients", "#6b9bd1"), ("optimizer", "#d9731a"),
                 ("activations", "#5a9e2f"))
_TIME_KINDS = (("compute", "#1f5fa8"), ("comms_exposed", "#d9731a"), ("bubble", "0.6"))
_TIME_LABELS = {"compute": "compute", "comms_exposed": "exposed comms", "bubble": "bubble"}
_GIB = 2.0 ** 30

#: Chips offered: those with a bf16 figure (training runs in bf16).
PLANNER_CHIPS: tuple[str, ...] = tuple(n for n in chip_names() if "bf16" in get_chip(n).dtypes)


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
    sizes = dict(n_layers=n_layers, d_model=d_model, d_ff=d_ff, n_heads=n_heads,
                 n_kv_heads=n_kv_heads, vocab_size=vocab_size)
    sizes = {k: _int(k, v) for k, v in sizes.items()}
    name = preset if preset in PRESETS else "custom model"
    cfg = TransformerConfig(**sizes, name=name)
    layout = TrainingLayout(dp=dp, fsdp=fsdp, tp=tp, pp=pp, zero_stage=zero_stage,
                            microbatches=microbatches, remat=remat)
    n_chips = _int("n_chips", n_chips)
    plan = plan_training(cfg, layout, chip, global_batch=_int("global batch", global_batch),
                         seq_len=_int("sequence length", seq_len), n_chips=n_chips,
                         overlap=bool(overlap))
    return PlannerState(preset=preset, config=cfg, n_chips=n_chips, plan=plan)


# --------------------------------------------------------------------------- drawing


#: The memory axis runs to this multiple of the chip's HBM; the time axis to this many ideal
#: steps. Fixed ranges keep the axes still while the inputs move (a bar past the top is
#: clipped, and its title gives the number).
MEMORY_AXIS_HBM = 1.5
TIME_AXIS_IDEAL = 2.5


def _axes_key(state: PlannerState) -> tuple:
    """What the axes themselves depend on (the chip's HBM): a change needs a full redraw."""
    return (state.plan.hbm_capacity,)


def ideal_step(plan: TrainingPlan) -> float:
    """Seconds the step would take at 100% MFU: model FLOPs / (N · peak) = MFU × step time."""
    return plan.mfu * plan.step_time.total


def draw_planner(axes: Sequence, state: PlannerState) -> dict[str, object]:
    """Two stacked bars: per-chip memory by kind (GiB) against an HBM line (left, up to
    :data:`MEMORY_AXIS_HBM` × HBM), and the step time split into compute, exposed
    communication and bubble, in units of the ideal step (:func:`ideal_step`; right, up to
    :data:`TIME_AXIS_IDEAL`), where the bar's height is 1 / MFU. The model and layout are
    written above them and the plan's flags under them.

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
    key = _axes_key(state)
    hbm = state.plan.hbm_capacity / _GIB
    artists: dict[str, object] = {"axes_key": key}
    for kind, colour in _MEMORY_KINDS:
        (artists[f"memory/{kind}"],) = ax_mem.bar([0], [0.0], width=0.6, color=colour,
                                                  label=kind)
    (artists["hbm"],) = ax_mem.plot([-0.5, 0.5], [hbm, hbm], color="#b00020", lw=2, ls="--",
                                    label=f"HBM {hbm:.0f} GiB")
    ax_mem.set(xlim=(-0.5, 1.6), ylim=(0, MEMORY_AXIS_HBM * hbm), xticks=[],
               ylabel="GiB per chip")
    ax_mem.legend(loc="upper right", fontsize=8, frameon=False)
    for kind, colour in _TIME_KINDS:
        (artists[f"time/{kind}"],) = ax_time.bar([0], [0.0], width=0.6, color=colour,
                                                 label=_TIME_LABELS[kind])
    (artists["ideal"],) = ax_time.plot([-0.5, 0.5], [1.0, 1.0], color="black", lw=1, ls=":",
                                       zorder=3, label="ideal (MFU 100%)")
    ax_time.set(xlim=(-0.5, 1.6), ylim=(0, TIME_AXIS_IDEAL), xticks=[],
                ylabel="step time ÷ ideal step")
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
    plan = state.plan
    dynamic: list = []
    for prefix, kinds, source, unit in (("memory", _MEMORY_KINDS, plan.memory, _GIB),
                                        ("time", _TIME_KINDS, plan.step_time, ideal_step(plan))):
        bottom = 0.0
        for kind, _colour in kinds:
            bar = artists[f"{prefix}/{kind}"]
            height = getattr(source, kind) / unit
            bar.set_y(bottom)
            bar.set_height(height)
            bottom += height
            dynamic.append(bar)
    hbm = plan.hbm_capacity / _GIB
    verdict = "fits" if plan.fits else "does not fit"
    total = plan.memory.total / _GIB
    off = " (off the scale)" if total > MEMORY_AXIS_HBM * hbm else ""
    artists["memory_title"].set_text(f"memory: {total:,.1f} of {hbm:.1f} GiB, {verdict}{off}")
    off = " (off the scale)" if 1.0 / plan.mfu > TIME_AXIS_IDEAL else ""
    artists["time_title"].set_text(
        f"step {format_seconds(plan.step_time.total)}, MFU {plan.mfu:.0%}{off}")
    artists["heading"].set_text(
        f"{plan.config.name}, {plan.global_batch:,} × {plan.seq_len:,} tokens on "
        f"{plan.n_chips:,} {plan.chip_name}: {plan.layout.describe()}")
    flags = artists["flags"]
    flags.set_text(_wrap_line("; ".join(plan.flags)) if plan.flags else "no warnings")
    flags.set_color("#b00020" if plan.flags else "0.3")
    return [*dynamic, artists["hbm"], artists["ideal"], artists["memory_title"],
            artists["time_title"], artists["heading"], flags]


def _wrap_line(text: str, width: int = 130) -> str:
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


def planner_summary(state: PlannerState) -> str:
    """HTML: the layout, flags, memory and time tables and the collectives of the step."""
    plan = state.plan
    lay = plan.layout
    flags = "".join(f"<li style='color:#b00020'>{html.escape(f)}</li>" for f in plan.flags)
    flags_html = f"<ul>{flags}</ul>" if flags else "<p>no warnings</p>"
    memory = "".join(f"<tr><td>{kind}</td><td>{format_bytes(getattr(plan.memory, kind))}</td>"
                     "</tr>" for kind, _ in _MEMORY_KINDS)
    comms = "".join(f"<tr><td>{html.escape(c.name)}</td><td>{format_bytes(c.nbytes)}</td>"
                    f"<td>{format_seconds(c.time)}</td></tr>" for c in plan.comms)
    return (
        "<div style='font-size:90%'>"
        f"<b>{html.escape(plan.config.name)}</b> on {plan.n_chips} × "
        f"{html.escape(plan.chip_name)}: "
        f"{html.escape(lay.describe())}; {format_count(plan.tokens_per_step)} tokens per step, "
        f"{format_count(plan.flops_per_step)}FLOPs; step {format_seconds(plan.step_time.total)} "
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
        f"{comms or '<tr><td>none</td><td></td><td></td></tr>'}</table></div>")


# --------------------------------------------------------------------------- widget


class LayoutPlanner(Explorer):
    """The planner's :class:`Explorer`: keeps the preset and the model fields consistent and
    owns the "best layout" button (``buttons["best"]``; :meth:`apply_best_layout`)."""

    def __init__(self, controls, figure, **kwargs):
        self.buttons = {"best": widgets.Button(description="best layout",
                                               tooltip="search for the fastest fitting layout")}
        super().__init__(controls, figure, planner_state,
                         lambda fig, state: draw_planner(fig.axes, state), planner_summary,
                         refresh=lambda fig, artists, state: update_planner(fig.axes, artists,
                                                                            state),
                         **kwargs)
        self.children = (*self.children[:-3], widgets.HBox([self.buttons["best"]]),
                         *self.children[-3:])
        self.buttons["best"].on_click(lambda _button: self.apply_best_layout())

    def link_controls(self, changed) -> None:
        """A preset fills the model fields; editing a model field makes the preset "custom"."""
        if changed is self.controls["preset"]:
            cfg = PRESETS.get(self.controls["preset"].value)
            if cfg is not None:
                self.set_quietly({name: getattr(cfg, name) for name in MODEL_FIELDS})
        elif any(changed is self.controls[name] for name in MODEL_FIELDS):
            self.set_quietly({"preset": CUSTOM})

    def apply_best_layout(self) -> None:
        """Run the solver's search for the current model, chip, chip count and batch, and set
        the layout controls to what it found (or show why nothing fits)."""
        values = self.values()
        try:
            state = planner_state(**values)  # validates the inputs first
            best = best_training_layout(state.config, values["chip"], state.n_chips,
                                        global_batch=state.plan.global_batch,
                                        seq_len=state.plan.seq_len,
                                        overlap=bool(values["overlap"]))
        except ValueError as exc:
            self._show_error(str(exc))
            return
        lay = best.layout
        self.set_quietly({name: getattr(lay, name) for name in LAYOUT_FIELDS})
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

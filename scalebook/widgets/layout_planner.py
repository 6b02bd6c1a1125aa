"""A layout planner for training a Transformer: memory, step time and MFU of a chip layout.

It goes past the memory widget of the Ultra-Scale Playbook (Tazi et al., Hugging Face, 2025):
besides per-chip memory by kind against HBM it prices the step (compute, exposed
communication, pipeline bubble), estimates the MFU and says in plain words what is wrong with
a layout. Everything comes from :func:`scalebook.training.plan_training`; the "best layout"
button runs :func:`scalebook.training.best_training_layout`.

The front end here is the controls and the "best layout" button (``w.buttons["best"]``;
a click asks the live view to run the search); the state, search, chart and summary are
:mod:`scalebook.live.layout_planner`'s, drawn by :class:`~scalebook.widgets.explorer.Explorer`.
Choosing a preset fills the model fields; editing a model field switches the preset to
"custom".
"""

from __future__ import annotations

import ipywidgets as widgets

from ..live.layout_planner import BEST, MODEL_FIELDS, PLANNER_CHIPS, planner_state
from ..training import PRESETS, REMAT_MODES
from ..transformer import TransformerConfig
from .controls import CUSTOM, int_box, offered_chip, preset_model
from .explorer import Explorer

__all__ = ["layout_planner"]


def layout_planner(preset: str = "LLaMA-3 70B", chip: str = "TPU v5p", n_chips: int = 1024, *,
                   seq_len: int = 8192, global_batch: int = 2048, dp: int = 1, fsdp: int = 128,
                   tp: int = 8, pp: int = 1, zero_stage: int = 3, microbatches: int = 1,
                   remat: str = "full", overlap: bool = True,
                   config: TransformerConfig | None = None, dpi: float = 100) -> Explorer:
    """A layout planner for training ``preset`` (or ``config``) on ``n_chips`` ``chip`` chips.

    Controls (``w.controls``): ``preset`` (LLaMA-3 8B/70B/405B or "custom"), the model fields
    :data:`MODEL_FIELDS`, ``seq_len``, ``global_batch`` (sequences), ``chip``, ``n_chips``, the
    layout fields :data:`~scalebook.live.layout_planner.LAYOUT_FIELDS` and ``overlap``.
    ``w.buttons["best"].click()`` runs the search. ``w.state`` is a
    :class:`~scalebook.live.layout_planner.PlannerState`. Raises ``ValueError`` for bad
    initial inputs (unknown preset or chip, a degree below 1, ...).
    """
    preset, config = preset_model(preset, config)
    chip_name = offered_chip(chip, PLANNER_CHIPS)
    controls = {
        "preset": widgets.Dropdown(options=[*PRESETS, CUSTOM], value=preset,
                                   description="model"),
        **{name: int_box(name, getattr(config, name), "16%") for name in MODEL_FIELDS},
        "seq_len": int_box("sequence length", seq_len, "24%"),
        "global_batch": int_box("global batch (sequences)", global_batch, "30%"),
        "chip": widgets.Dropdown(options=PLANNER_CHIPS, value=chip_name, description="chip"),
        "n_chips": int_box("chips", n_chips, "19%"),
        "dp": int_box("DP", dp, "12%"),
        "fsdp": int_box("FSDP", fsdp, "12%"),
        "tp": int_box("TP", tp, "12%"),
        "pp": int_box("PP", pp, "12%"),
        "zero_stage": widgets.Dropdown(options=[("ZeRO-0 (replicas)", 0),
                                                ("ZeRO-1 (optimizer)", 1),
                                                ("ZeRO-2 (+ gradients)", 2),
                                                ("ZeRO-3 (+ weights)", 3)],
                                       value=zero_stage, description="DP sharding",
                                       style={"description_width": "initial"}),
        "microbatches": int_box("microbatches", microbatches, "19%"),
        "remat": widgets.Dropdown(options=REMAT_MODES, value=remat, description="remat"),
        "overlap": widgets.Checkbox(value=bool(overlap), description="overlap comms"),
    }
    rows = [("preset", "seq_len", "global_batch"), MODEL_FIELDS, ("chip", "n_chips", "overlap"),
            ("dp", "fsdp", "tp", "pp", "microbatches"), ("zero_stage", "remat")]
    best = widgets.Button(description="best layout",
                          tooltip="search for the fastest fitting layout")
    return Explorer("scalebook.live.layout_planner", controls, layout_rows=rows,
                    buttons={BEST: best}, state=planner_state, dpi=dpi)

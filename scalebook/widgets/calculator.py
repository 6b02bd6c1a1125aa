"""The transformer calculator's Jupyter front end: :mod:`scalebook.live.calculator` (parameters
by block, FLOPs per token against context, training memory per chip, days to train) with
controls. Choosing a preset fills the model fields; editing one makes it "custom" (the live
view's :func:`~scalebook.live.calculator.linked_controls`, as on the book's page)."""

from __future__ import annotations

import ipywidgets as widgets

from ..live.calculator import CALCULATOR_CHIPS, CUSTOM, MODEL_FIELDS, calculator_state
from ..training import PRESETS, REMAT_MODES
from ..transformer import TransformerConfig
from .controls import float_box, int_box, offered_chip, preset_model
from .explorer import Explorer

__all__ = ["transformer_calculator"]


def transformer_calculator(preset: str = "LLaMA-3 70B", *, seq_len: int = 8192,
                           tokens_trillions: float = 15.0, global_batch: int = 2048,
                           remat: str = "full", chip: str = "H100", n_chips: int = 16384,
                           mfu: float = 0.4, config: TransformerConfig | None = None,
                           dpi: float = 100) -> Explorer:
    """A transformer calculator for ``preset`` (or ``config``).

    Controls (``w.controls``): ``preset``, the model fields :data:`MODEL_FIELDS`, ``seq_len``,
    ``tokens_trillions``, ``global_batch`` (sequences, for the activations), ``remat``,
    ``chip``, ``n_chips`` and ``mfu``. ``w.state`` is a
    :class:`~scalebook.live.calculator.CalculatorState`. Raises ``ValueError`` for bad
    initial inputs.
    """
    preset, config = preset_model(preset, config)
    controls = {
        "preset": widgets.Dropdown(options=[*PRESETS, CUSTOM], value=preset,
                                   description="model"),
        **{name: int_box(name, getattr(config, name)) for name in MODEL_FIELDS},
        "seq_len": int_box("context T", seq_len, "20%"),
        "tokens_trillions": float_box("tokens (trillions)", tokens_trillions),
        "global_batch": int_box("batch (sequences)", global_batch, "24%"),
        "remat": widgets.Dropdown(options=REMAT_MODES, value=remat, description="remat"),
        "chip": widgets.Dropdown(options=CALCULATOR_CHIPS,
                                 value=offered_chip(chip, CALCULATOR_CHIPS), description="chip"),
        "n_chips": int_box("chips", n_chips, "20%"),
        "mfu": widgets.FloatSlider(value=float(mfu), min=0.05, max=1.0, step=0.01,
                                   description="MFU", readout_format=".2f"),
    }
    rows = [("preset", "seq_len", "tokens_trillions"), MODEL_FIELDS,
            ("global_batch", "remat"), ("chip", "n_chips", "mfu")]
    return Explorer("scalebook.live.calculator", controls, layout_rows=rows,
                    state=calculator_state, dpi=dpi)

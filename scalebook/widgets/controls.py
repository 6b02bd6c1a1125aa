"""The ipywidgets controls the widgets' front ends are built from, and the checks of their
initial values that several widgets share (a preset or a model shape, a chip they offer).

A front end checks its arguments once, here, at the edge: the chip by its catalog name
(:func:`offered_chip` resolves an alias once), the model by :func:`preset_model`; the live
view then checks every later value the reader enters, with the same messages.
"""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets

from ..hardware import get_chip
from ..live.calculator import CUSTOM
from ..training import PRESETS
from ..transformer import TransformerConfig

__all__ = ["offered_chip", "preset_model", "log2_slider", "int_box", "float_box", "CUSTOM"]

_STYLE = {"description_width": "initial"}


def offered_chip(chip: str, offered: Sequence[str], why: str = "has no bf16 figure") -> str:
    """The catalog name of ``chip`` (a name or an alias), which must be one of ``offered``;
    ``ValueError`` for an unknown chip or one not offered (saying ``why``)."""
    name = get_chip(chip).name
    if name not in offered:
        raise ValueError(f"{name} {why}; choose one of {', '.join(offered)}")
    return name


def preset_model(preset: str, config: TransformerConfig | None) -> tuple[str, TransformerConfig]:
    """``(preset, model)``: the preset's model, or ``config`` (a hand-made model, preset
    :data:`CUSTOM`) when given; ``ValueError`` for an unknown preset."""
    if config is not None:
        return CUSTOM, config
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    return preset, PRESETS[preset]


def log2_slider(description: str, value: float, lo: int, hi: int, step: float,
                width: str = "32%") -> widgets.FloatLogSlider:
    """A base-2 log slider over 2^lo .. 2^hi, its readout a whole number with separators."""
    return widgets.FloatLogSlider(
        value=value, base=2, min=lo, max=hi, step=step, description=description,
        readout_format=",.0f", continuous_update=True, style=_STYLE,
        layout=widgets.Layout(width=width))


def int_box(description: str, value: int, width: str = "16%") -> widgets.IntText:
    """A whole-number field."""
    return widgets.IntText(value=int(value), description=description, style=_STYLE,
                           layout=widgets.Layout(width=width))


def float_box(description: str, value: float, width: str = "24%") -> widgets.FloatText:
    """A number field."""
    return widgets.FloatText(value=float(value), description=description, style=_STYLE,
                             layout=widgets.Layout(width=width))

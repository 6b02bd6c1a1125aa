"""The roofline explorer's Jupyter front end: :mod:`scalebook.live.roofline` with controls."""

from __future__ import annotations

import ipywidgets as widgets

from ..hardware import canonical_dtype, chip_names, get_chip
from ..live.roofline import W_DTYPES, X_DTYPES, roofline_state
from .controls import log2_slider
from .explorer import Explorer

__all__ = ["roofline_explorer"]


def roofline_explorer(chip: str = "TPU v5e", *, compare: str | None = None, B: float = 64,
                      D: float = 8192, F: float = 8192, x_dtype: str = "bf16",
                      w_dtype: str = "bf16", per_example: bool = False,
                      dpi: float = 100) -> Explorer:
    """A roofline explorer for ``X[B, D] ·_D W[D, F]``: pick chips and dtypes, move B, D, F.

    Controls (``w.controls``): ``chip``, ``compare`` ("" for none), ``x_dtype``, ``w_dtype``,
    ``B``, ``D``, ``F`` (log sliders, 1–65,536 and 128–65,536) and ``per_example``.
    ``w.state`` is a :class:`~scalebook.live.roofline.RooflineState`. Raises ``ValueError``
    for an unknown chip or dtype, or a chip without that dtype.
    """
    names = chip_names()
    main = get_chip(chip).name
    other = "" if compare in (None, "") else get_chip(compare).name
    x_dtype, w_dtype = canonical_dtype(x_dtype), canonical_dtype(w_dtype)
    for value, allowed, what in ((x_dtype, X_DTYPES, "x_dtype"), (w_dtype, W_DTYPES, "w_dtype")):
        if value not in allowed:
            raise ValueError(f"{what} {value!r} is not offered; choose one of {', '.join(allowed)}")
    controls = {
        "chip": widgets.Dropdown(options=names, value=main, description="chip"),
        "compare": widgets.Dropdown(options=[("none", ""), *[(n, n) for n in names]],
                                    value=other, description="compare with"),
        "x_dtype": widgets.Dropdown(options=X_DTYPES, value=x_dtype, description="X dtype"),
        "w_dtype": widgets.Dropdown(options=W_DTYPES, value=w_dtype, description="W dtype"),
        "per_example": widgets.Checkbox(value=bool(per_example),
                                        description="per-example weights W[B, D, F]"),
        "B": log2_slider("B (tokens)", B, 0, 16, 0.125),
        "D": log2_slider("D", D, 7, 16, 0.5),
        "F": log2_slider("F", F, 7, 16, 0.5),
    }
    return Explorer("scalebook.live.roofline", controls, state=roofline_state, dpi=dpi,
                    layout_rows=[("chip", "compare"), ("x_dtype", "w_dtype", "per_example"),
                                 ("B", "D", "F")])

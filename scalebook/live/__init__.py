"""The book's widgets without a kernel: what a widget shows, as JSON, from its control values.

Each live widget is a module here with one entry point::

    view(controls: dict, changed: str | None = None) -> dict

``controls`` holds the widget's control values by their Jupyter names (``{"chip": "TPU v5e",
"B": 64.0, ...}``; a multiple selection is a list), ``changed`` names the control the reader
just moved (None on the first draw). It returns::

    {"summary_html": str,        # the HTML the Jupyter widget shows under its figure
     "chart": {...},             # every plotted number: see scalebook.live.chart
     "controls": {name: value}}  # optional: controls to set (a preset filling its fields)

and raises ``ValueError`` for inputs the widget rejects; :func:`render` turns that into
``{"error": message}``, shown above the last good picture, as the Jupyter widget does. A view
that set controls before the rejection (a preset filled fields that do not fit) returns
``{"error": message, "controls": {...}}`` itself: the page sets them too, as Jupyter does.
``changed`` may also name a button (its action, a search say, sets controls).

The modules import only scalebook's solver (which runs without NumPy: :mod:`scalebook._np`),
so the same functions run in Jupyter, under pytest, and in the reader's browser on the
static site (Pyodide, loaded by ``web/src/loader.js``). The Jupyter widgets draw the same
series with matplotlib, so the two pictures cannot disagree.
"""

from __future__ import annotations

import importlib
import json
from typing import Mapping

__all__ = ["render", "render_json"]


def _module(name: str):
    """The live widget module ``name`` ("scalebook.live.roofline"); nothing else imports."""
    if not name.startswith(__name__ + ".") or name.count(".") != 2:
        raise ValueError(f"{name!r} is not a live widget module of {__name__}")
    module = importlib.import_module(name)
    if not callable(getattr(module, "view", None)):
        raise ValueError(f"{name} has no view(controls, changed) function")
    return module


def render(widget: str, controls: Mapping[str, object], changed: str | None = None) -> dict:
    """``widget``'s view of ``controls``, or ``{"error": message}`` for a rejected input."""
    try:
        return _module(widget).view(dict(controls), changed)
    except ValueError as exc:
        return {"error": str(exc)}


def render_json(widget: str, controls_json: str, changed: str | None = None) -> str:
    """:func:`render` with JSON in and out: the one call the browser makes per redraw."""
    return json.dumps(render(widget, json.loads(controls_json), changed), allow_nan=False)

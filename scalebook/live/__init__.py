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

:func:`render` is the one door every redraw goes through, so it holds what every widget needs
and no view should repeat: a typed number larger than ``NUMBER_LIMIT`` or a text longer than
``TEXT_LIMIT`` characters is refused before the view runs; *any* exception a view raises
(``OverflowError``, ``ZeroDivisionError``, a bug) and any non-finite number in what it returns
becomes ``{"error": message}``, never a silent stale picture; a message is cut to
``MESSAGE_LIMIT`` characters, so a pasted 100k-character field is never echoed whole.

The modules import only scalebook's solver (which runs without NumPy: :mod:`scalebook._np`),
so the same functions run in Jupyter, under pytest, and in the reader's browser on the
static site (Pyodide, loaded by ``web/src/loader.js``). The Jupyter widgets ask the same
:func:`render` and draw its chart with matplotlib (:mod:`scalebook.widgets.figure`), so the
two pictures come from one ``view()`` output and cannot disagree.
"""

from __future__ import annotations

import importlib
import json
import math
from typing import Iterable, Mapping

__all__ = ["render", "render_json", "check_controls", "NUMBER_LIMIT", "TEXT_LIMIT",
           "MESSAGE_LIMIT"]


def _module(name: str):
    """The live widget module ``name`` ("scalebook.live.roofline"); nothing else imports."""
    if not name.startswith(__name__ + ".") or name.count(".") != 2:
        raise ValueError(f"{name!r} is not a live widget module of {__name__}")
    module = importlib.import_module(name)
    if not callable(getattr(module, "view", None)):
        raise ValueError(f"{name} has no view(controls, changed) function")
    return module


#: The largest number a typed field takes (chips, model sizes, token counts): beyond it the
#: widgets' models say nothing useful and their printed numbers stop being readable.
NUMBER_LIMIT = 1e9
#: The longest typed text a widget takes (a mesh or a sharding is a few dozen characters).
TEXT_LIMIT = 200
#: The longest message shown; a longer one (echoing a pasted field) is cut, with "…".
MESSAGE_LIMIT = 300


def _clip(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the cut marked "…"."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def check_controls(controls: Mapping[str, object]) -> None:
    """Refuse, with a message for the reader, a number that is not finite or larger than
    ``NUMBER_LIMIT`` in size, and a text longer than ``TEXT_LIMIT``. Raises ``ValueError``.
    Lower bounds (a positive count, say) are each view's, with its own message, the same the
    Jupyter widget gives."""
    for name, value in controls.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            if not math.isfinite(value) or abs(value) > NUMBER_LIMIT:
                raise ValueError(f"{name}: {_clip(repr(value), 40)} is out of range; enter a "
                                 f"number of at most {NUMBER_LIMIT:,.0f}")
        elif isinstance(value, str) and len(value) > TEXT_LIMIT:
            raise ValueError(f"{name}: {len(value):,} characters is too long (at most "
                             f"{TEXT_LIMIT}): {_clip(value, 40)}")


def _finite(value: object, where: str = "") -> str | None:
    """The path of the first non-finite float in ``value`` (dicts, lists), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where or "the result"
    items: Iterable[tuple[object, object]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _finite(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def render(widget: str, controls: Mapping[str, object], changed: str | None = None) -> dict:
    """``widget``'s view of ``controls``, or ``{"error": message}`` (plus the ``controls`` a
    view filled before the rejection): for an input :func:`check_controls` refuses, for a
    ``ValueError`` the view raises (a rejected input, its own message), for any other
    exception (named, so a reader can report it), and for a result with a non-finite number
    (an overflow the view did not foresee)."""
    try:
        check_controls(controls)
        out = _module(widget).view(dict(controls), changed)
        bad = _finite(out)
        if bad is not None:
            raise ArithmeticError(f"these inputs give a number too large to compute ({bad} "
                                  "is not finite); try smaller values")
    except ValueError as exc:
        return {"error": _clip(str(exc))}
    except Exception as exc:  # noqa: BLE001 - every failure must reach the reader
        detail = str(exc) if isinstance(exc, ArithmeticError) and str(exc) else repr(exc)
        return {"error": _clip(f"cannot compute with these inputs: {detail}")}
    if "error" in out:
        out = {**out, "error": _clip(str(out["error"]))}
    return out


def render_json(widget: str, controls_json: str, changed: str | None = None) -> str:
    """:func:`render` with JSON in and out: the one call the browser makes per redraw."""
    return json.dumps(render(widget, json.loads(controls_json), changed), allow_nan=False)

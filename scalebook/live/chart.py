"""The chart description a live widget returns: plain dicts and lists, ready for ``json.dumps``.

The browser (``web/src/widgets.js``) draws this with Chart.js, and the Jupyter widget with
matplotlib (:mod:`scalebook.widgets.figure`); neither computes anything: every point, tick,
label and colour is decided here, in Python, by scalebook. The schema:

``chart``
    ``{"panels": [panel, ...], "width": px, "height": px, "texts": [text, ...]}``: panels side
    by side, at the size of the Jupyter figure (the browser keeps the aspect ratio and fits the
    page width); ``texts`` are lines printed above the panels (the figure's own texts).
``text``
    ``{"text": str, "colour": "#rrggbb", "bold": bool}``.
``panel``
    ``{"title": str, "x": axis, "y": axis, "series": [series, ...], "legend": str | None,
    "y2": axis | None, "width": float, "note": str | None}``; ``legend`` is where the legend
    of the labelled series goes ("lower right") or None; ``y2`` is a second y axis on the right (matplotlib's
    ``twinx``); ``width`` is the panel's share of the figure width, relative to the others';
    ``note`` is a message printed in the middle of the plot area, saying why a panel has
    nothing to draw (no chip chosen has the metric), so an empty chart is never just blank.
``axis``
    ``{"scale": "log" | "linear" | "category", "min": float, "max": float, "label": str,
    "ticks": [[value, text], ...] | None, "categories": [str, ...] | None}``; with ``ticks``
    None the browser picks them (linear axes only); a category axis has ``categories``.
``series``, one of
    - ``{"kind": "line", "points": [[x, y], ...], "colour": "#rrggbb", "width": px,
      "dash": [on, off, ...] | None, "label": str | None}``; ``dash`` in pixels, as a canvas
      dash pattern ([4, 2] dashed, [1, 3] dotted, [6, 2, 1, 2] dash-dot);
    - ``{"kind": "points", "points": [[x, y], ...], "colour": ..., "size": px,
      "label": None}``: markers with a black edge;
    - ``{"kind": "bars", "values": [h, ...], "colours": [...], "texts": [str, ...],
      "horizontal": bool}``: one bar per category, ``texts`` printed on top of each bar; with
      ``horizontal`` the categories are the y axis (top to bottom), the bars grow rightwards
      from the x axis' left edge and each text follows its bar's end;
    - ``{"kind": "annotations", "points": [[x, y], ...], "texts": [str, ...], "colour": ...,
      "align": "left" | "center" | "right", "size": px}``: ``texts[i]`` written at point i,
      its baseline on y (matplotlib's ``ax.text(x, y, s, ha=align, va="bottom")``).
    - ``{"kind": "area", "points": [[x, y], ...], "colour": "#rrggbbaa", "label": str | None}``:
      the polygon through ``points`` filled, no outline (a shaded range, a stacked bar).

A line, points or area series with ``"axis": "y2"`` is drawn against the panel's ``y2``.

Non-finite numbers are not valid JSON: a series must leave them out (an infinite critical
batch, say, is drawn as no line at all, exactly as the matplotlib version does).
"""

import math
from typing import Callable, Sequence

Point = Sequence[float]


def decade_ticks(lo: float, hi: float, text: Callable[[float], str]) -> list[list]:
    """Ticks at the powers of ten in [lo, hi], labelled by ``text`` ("10 TFLOP/s", "1 k").

    The same decades matplotlib's ``LogLocator(base=10)`` puts on the Jupyter figure when it
    has room for every one (7 or fewer): 10^k for ceil(log10 lo) <= k <= floor(log10 hi).
    """
    first, last = math.ceil(math.log10(lo) - 1e-12), math.floor(math.log10(hi) + 1e-12)
    return [[10.0 ** k, text(10.0 ** k)] for k in range(first, last + 1)]


def linear_ticks(lo: float, hi: float, step: float) -> list[list]:
    """Ticks at the multiples of ``step`` in [lo, hi], one decimal ("0.0", "0.2", ...), as
    matplotlib's default locator puts them on a 0-to-1 axis."""
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [[round(k * step, 12), f"{k * step:.1f}"] for k in range(first, last + 1)]


def axis(scale: str, lo: float | None = None, hi: float | None = None, label: str = "", *,
         ticks: list[list] | None = None, categories: Sequence[str] | None = None) -> dict:
    """One axis of a panel (see the module docstring)."""
    if scale not in ("log", "linear", "category"):
        raise ValueError(f"unknown axis scale {scale!r}")
    return {"scale": scale, "min": lo, "max": hi, "label": label, "ticks": ticks,
            "categories": list(categories) if categories is not None else None}


def _on_y2(series: dict, y2: bool) -> dict:
    """``series``, drawn against the right y axis when ``y2``."""
    return {**series, "axis": "y2"} if y2 else series


def line(points: Sequence[Point], colour: str, *, width: float = 2.0,
         dash: Sequence[float] | None = None, label: str | None = None,
         y2: bool = False) -> dict:
    """A polyline through ``points`` (x, y), drawn in order (against ``y2`` with ``y2=True``)."""
    return _on_y2({"kind": "line", "points": [[float(x), float(y)] for x, y in points],
                   "colour": colour, "width": width, "dash": list(dash) if dash else None,
                   "label": label}, y2)


def points(xy: Sequence[Point], colour: str, *, size: float = 9.0, y2: bool = False) -> dict:
    """Round markers with a black edge at ``xy``; ``size`` is the diameter in pixels."""
    return _on_y2({"kind": "points", "points": [[float(x), float(y)] for x, y in xy],
                   "colour": colour, "size": size, "label": None}, y2)


def area(xy: Sequence[Point], colour: str, *, label: str | None = None,
         y2: bool = False) -> dict:
    """The polygon through ``xy`` filled with ``colour`` (alpha in its last two hex digits),
    no outline; against the panel's ``y2`` axis with ``y2=True``."""
    return _on_y2({"kind": "area", "points": [[float(x), float(y)] for x, y in xy],
                   "colour": colour, "label": label}, y2)


def bars(values: Sequence[float], colours: Sequence[str], texts: Sequence[str], *,
         horizontal: bool = False) -> dict:
    """One bar per category of the panel's x axis, ``texts[i]`` printed on top of bar i; with
    ``horizontal``, one per category of its y axis, ``texts[i]`` after bar i's end."""
    if not len(values) == len(colours) == len(texts):
        raise ValueError("bars need as many colours and texts as values")
    return {"kind": "bars", "values": [float(v) for v in values], "colours": list(colours),
            "texts": list(texts), "horizontal": bool(horizontal)}


def annotations(xy: Sequence[Point], texts: Sequence[str], colour: str, *,
                align: str = "left", size: float = 11.0) -> dict:
    """``texts[i]`` written at ``xy[i]`` in data coordinates, ``align``ed horizontally on x
    ("left", "center", "right"), standing on y; ``size`` in pixels."""
    if len(xy) != len(texts):
        raise ValueError("annotations need as many texts as points")
    if align not in ("left", "center", "right"):
        raise ValueError(f"align must be left, center or right, got {align!r}")
    return {"kind": "annotations", "points": [[float(x), float(y)] for x, y in xy],
            "texts": list(texts), "colour": colour, "align": align, "size": size}


def panel(title: str, x: dict, y: dict, series: Sequence[dict], *,
          legend: str | None = None, y2: dict | None = None, width: float = 1.0,
          note: str | None = None) -> dict:
    """One plot: axes, series drawn in order, a title above it; ``y2`` a right-hand y axis
    for the series marked ``y2``, ``width`` the panel's relative share of the figure width,
    ``note`` why the plot is empty (printed in its middle)."""
    if any(s.get("axis") == "y2" for s in series) and y2 is None:
        raise ValueError("a series on y2 needs the panel's y2 axis")
    if not width > 0:
        raise ValueError(f"a panel's width share must be positive, got {width!r}")
    return {"title": title, "x": x, "y": y, "series": list(series), "legend": legend,
            "y2": y2, "width": float(width), "note": note}


def text(value: str, *, colour: str = "#000000", bold: bool = False) -> dict:
    """One line of the figure's own text, printed above its panels."""
    return {"text": value, "colour": colour, "bold": bool(bold)}


def chart(panels: Sequence[dict], *, width: float, height: float,
          texts: Sequence[dict] = ()) -> dict:
    """Panels side by side in a ``width`` x ``height`` pixel figure (the Jupyter size), with
    the figure's ``texts`` (:func:`text`) above them."""
    return {"panels": list(panels), "width": width, "height": height, "texts": list(texts)}


def _clean(words: str) -> str:
    """One line of words: a title's line breaks become "; "."""
    return "; ".join(part.strip() for part in words.splitlines() if part.strip())


def _axis_words(which: str, ax: dict | None) -> str:
    """"x axis batch B (log scale) from 1 to 10 k", or "" for an axis with nothing to say."""
    if ax is None:
        return ""
    label = _clean(ax.get("label") or "")
    if ax["scale"] == "category":
        names = [c for c in ax["categories"] or [] if c.strip()]
        return f"{which} {label + ': ' if label else ''}{', '.join(names)}" if names else ""
    if not label:
        return ""
    ticks = ax.get("ticks") or []
    span = f" from {ticks[0][1]} to {ticks[-1][1]}" if len(ticks) > 1 else ""
    scale = " (log scale)" if ax["scale"] == "log" else ""
    return f"{which} {label}{scale}{span}"


def _series_words(series: dict, x: dict | None, y: dict | None) -> str:
    kind = series["kind"]
    if kind == "bars":
        categories = ((y if series["horizontal"] else x) or {}).get("categories") or []
        pairs = [f"{c} {t}".strip() for c, t in zip(categories, series["texts"])
                 if f"{c} {t}".strip()]
        return "bars: " + "; ".join(pairs) if pairs else f"{len(series['values'])} bars"
    if kind == "annotations":
        return "; ".join(_clean(t) for t in series["texts"] if t.strip())
    label = series.get("label")
    if kind == "line":
        return f"line {label}" if label else ""
    if kind == "area":
        return f"shaded {label}" if label else ""
    return ""


def describe(description: dict) -> str:
    """``description`` (a :func:`chart`) in words, for a screen reader: the figure's texts,
    then per panel its title, axes, labelled lines and its bars' categories with the numbers
    printed on them. Written from the same dict the picture is drawn from, so the words and the
    picture cannot disagree ("Chart. Panel 'Roofline of the TPU v5e': x axis arithmetic
    intensity (log scale) from 1 to 10 k; y axis ...; lines bf16, int8")."""
    parts = [_clean(t["text"]).rstrip(".") for t in description.get("texts", [])
             if t["text"].strip()]
    panels = description.get("panels", [])
    for number, panel_ in enumerate(panels, 1):
        title = _clean(panel_["title"] or "")
        name = f"Panel {number}" if len(panels) > 1 else "Plot"
        words = [f"{name}: {title}" if title else name]
        x, y = panel_["x"], panel_["y"]
        words += [_axis_words("x axis", x), _axis_words("y axis", y),
                  _axis_words("right y axis", panel_.get("y2"))]
        words += [_series_words(s, x, y) for s in panel_["series"]]
        if panel_.get("note"):
            words.append(_clean(panel_["note"]))
        parts.append(", ".join(w for w in words if w))
    return "Chart. " + ". ".join(parts) + "." if parts else "An empty chart."

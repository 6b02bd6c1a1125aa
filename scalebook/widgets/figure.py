"""The Jupyter figure of any widget, drawn with matplotlib from its chart description.

Every widget's :mod:`scalebook.live` view returns its picture as a chart description
(:mod:`scalebook.live.chart`: panels, axes, series, texts), which the book's page draws with
Chart.js. This module draws the same description with matplotlib, so the Jupyter figure and
the page's chart are drawn from one ``view()`` output: there is no per-widget drawing code.

Two entry points:

- :func:`draw` (a full drawing): clears the figure, lays out one axes per panel (side by
  side, in the panels' width shares; a twin axes for a panel's ``y2``), and draws every
  series, title, text and note. Returns a :class:`Drawing`, the artists of each series.
- :func:`update` (the fast path): when only the data changed (same panels, axes, series kinds,
  styles and legend labels: :func:`frame`), moves the existing artists to the new numbers and
  returns those to repaint (the widget blits them over a saved background), else None.

Sizes: a description's ``width`` x ``height`` are pixels at 100 dpi; a series' ``width``,
``size`` and ``dash`` are pixels too (converted to points at the figure's dpi).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

__all__ = ["Drawing", "draw", "update", "frame", "new_figure", "read_back", "chart_data",
           "DPI"]

#: The description's pixels are figure pixels at this dpi (the Jupyter figure's).
DPI = 100.0
_TITLE_PX = 12.0   # one line of a panel title (8 pt at 100 dpi, with leading)
_TEXT_PX = 15.0    # one line of the figure's own texts (9 pt)
_CHAR_PX = 6.6     # the mean width of a character of those texts


def _lines(text: str, width_px: float) -> str:
    """``text`` wrapped to the figure's width (a long list of warnings, say)."""
    return "\n".join(textwrap.wrap(text, max(20, int(width_px / _CHAR_PX)))) or text


@dataclass
class Drawing:
    """The artists :func:`draw` made: ``series[p][s]`` is a list of the artists of series s of
    panel p (a line's Line2D; a bar series' rectangles then its texts; an annotation's texts),
    ``titles[p]`` the panel titles, ``texts`` the figure's lines of text, ``notes[p]`` the
    empty-panel notes, ``frame`` what the axes depend on (:func:`frame`)."""

    frame: tuple
    series: list[list[list]] = field(default_factory=list)
    titles: list = field(default_factory=list)
    texts: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def dynamic(self) -> list:
        """Every artist that depends on the numbers, in drawing order."""
        out = [a for panel in self.series for s in panel for a in s]
        return [*out, *self.titles, *self.texts, *self.notes]


def new_figure(spec: dict, dpi: float = DPI) -> Figure:
    """An empty figure on its own Agg canvas at ``spec``'s size (pixels at :data:`DPI`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = Figure(figsize=(spec["width"] / DPI, spec["height"] / DPI), dpi=dpi)
    FigureCanvasAgg(figure)
    return figure


def _axis_key(axis: dict | None) -> tuple | None:
    if axis is None:
        return None
    ticks = None if axis["ticks"] is None else tuple(map(tuple, axis["ticks"]))
    categories = None if axis["categories"] is None else tuple(axis["categories"])
    return (axis["scale"], axis["min"], axis["max"], axis["label"], ticks, categories)


def _series_key(series: dict) -> tuple:
    """What a series' artists cannot change in place: its kind and style, and the number of
    bars or texts (one artist each)."""
    kind = series["kind"]
    if kind == "bars":
        return (kind, len(series["values"]), series["horizontal"])
    if kind == "annotations":
        return (kind, len(series["texts"]), series["colour"], series["align"], series["size"])
    dash = tuple(series.get("dash") or ())
    return (kind, series.get("axis"), series["colour"], series.get("width"), series.get("size"),
            dash, series.get("label"))


def frame(spec: dict) -> tuple:
    """Everything of ``spec`` that the axes and the artists' kinds depend on: equal frames
    mean :func:`update` can move the artists in place."""
    lines = tuple(_lines(t["text"], spec["width"]).count("\n") for t in spec["texts"])
    return (spec["width"], spec["height"], lines, tuple(
        (_axis_key(p["x"]), _axis_key(p["y"]), _axis_key(p.get("y2")), p["legend"], p["width"],
         p["title"].count("\n"), tuple(_series_key(s) for s in p["series"]))
        for p in spec["panels"]))


# --------------------------------------------------------------------------- axes


def _set_axis(ax, which: str, axis: dict) -> None:
    """Scale, range, label and ticks of ``ax``'s x or y axis (``which``) from ``axis``."""
    target = ax.xaxis if which == "x" else ax.yaxis
    set_lim = ax.set_xlim if which == "x" else ax.set_ylim
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(axis["label"], fontsize=9)
    if axis["scale"] == "category":
        categories = axis["categories"] or []
        target.set_major_locator(FixedLocator(range(len(categories))))
        target.set_ticklabels(categories, fontsize=8)
        # x: left to right; y (horizontal bars): the first category on top
        set_lim(*((-0.5, len(categories) - 0.5) if which == "x"
                  else (len(categories) - 0.5, -0.5)))
        return
    if axis["scale"] == "log":
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    set_lim(axis["min"], axis["max"])
    if axis["ticks"] is not None:  # the description's own ticks, plain text, no minor ticks
        values = [t[0] for t in axis["ticks"]]
        target.set_major_locator(FixedLocator(values))
        target.set_ticklabels([t[1] for t in axis["ticks"]], fontsize=8)
        target.set_minor_locator(NullLocator())
        target.set_minor_formatter(NullFormatter())
    else:
        target.set_tick_params(labelsize=8)


def _layout(figure: Figure, spec: dict) -> list:
    """One axes per panel, side by side in their width shares, below the figure's texts and
    the panel titles; a panel with ``y2`` gets a twin on the right. Returns
    ``[(ax, ax_y2 or None), ...]``."""
    height = spec["height"]
    panels = spec["panels"]
    title_lines = 1 + max((p["title"].count("\n") for p in panels), default=0)
    text_lines = sum(1 + _lines(t["text"], spec["width"]).count("\n") for t in spec["texts"])
    top_px = 6 + _TEXT_PX * text_lines + _TITLE_PX * title_lines + 6
    top = max(0.35, 1 - top_px / height)
    right = 0.985 - (0.05 if panels and panels[-1].get("y2") else 0.0)
    grid = figure.add_gridspec(1, len(panels), width_ratios=[p["width"] for p in panels],
                               left=0.07, right=right, bottom=0.15, top=top,
                               wspace=0.45 if any(p.get("y2") for p in panels) else 0.3)
    out = []
    for i, panel in enumerate(panels):
        ax = figure.add_subplot(grid[i])
        out.append((ax, ax.twinx() if panel.get("y2") else None))
    return out


# --------------------------------------------------------------------------- series


def _pt(px: float, dpi: float) -> float:
    """``px`` figure pixels at :data:`DPI` in points (line widths, marker sizes, dashes)."""
    return px * 72.0 / DPI


def _xy(points: list) -> tuple[list[float], list[float]]:
    return [p[0] for p in points], [p[1] for p in points]


def _make(ax, series: dict, x_axis: dict, dpi: float) -> list:
    """The artists of one series on ``ax`` (empty data where ``update`` fills them)."""
    kind = series["kind"]
    if kind == "line":
        (line,) = ax.plot([], [], color=series["colour"], lw=_pt(series["width"], dpi),
                          label=series["label"])
        if series["dash"]:
            line.set_dashes([_pt(d, dpi) for d in series["dash"]])
        return [line]
    if kind == "points":
        (line,) = ax.plot([], [], ls="", marker="o", ms=_pt(series["size"], dpi),
                          color=series["colour"], mec="black", mew=0.6, zorder=5)
        return [line]
    if kind == "area":
        (patch,) = ax.fill([0, 0, 0], [0, 0, 0], color=series["colour"], lw=0,
                           label=series["label"])
        return [patch]
    if kind == "bars":
        n = len(series["values"])
        if series["horizontal"]:
            left = x_axis["min"] if x_axis["scale"] != "category" else 0.0
            bars = ax.barh(range(n), [0.0] * n, left=left, height=0.7, edgecolor="black",
                           linewidth=0.5)
            texts = [ax.annotate("", (left, i), xytext=(3, 0), textcoords="offset points",
                                 va="center", fontsize=8, annotation_clip=False)
                     for i in range(n)]
        else:
            bars = ax.bar(range(n), [0.0] * n, width=0.7, edgecolor="black", linewidth=0.5)
            texts = [ax.annotate("", (i, 0.0), xytext=(0, 2), textcoords="offset points",
                                 ha="center", va="bottom", fontsize=8, annotation_clip=False)
                     for i in range(n)]
        return [*bars, *texts]
    if kind == "annotations":
        return [ax.text(0.0, 0.0, "", color=series["colour"], ha=series["align"], va="bottom",
                        fontsize=series["size"] * 0.75) for _ in series["texts"]]
    raise ValueError(f"unknown series kind {kind!r}")


def _fill(artists: list, series: dict) -> None:
    """Move one series' artists (:func:`_make`) to its numbers."""
    kind = series["kind"]
    if kind in ("line", "points"):
        artists[0].set_data(*_xy(series["points"]))
    elif kind == "area":
        artists[0].set_xy(series["points"] or [[0, 0]])
    elif kind == "bars":
        n = len(series["values"])
        bars, texts = artists[:n], artists[n:]
        for i, (bar, text, value, colour, label) in enumerate(zip(
                bars, texts, series["values"], series["colours"], series["texts"])):
            bar.set_facecolor(colour)
            if series["horizontal"]:
                bar.set_width(value - bar.get_x())
                text.xy = (value, i)
            else:
                bar.set_height(value)
                text.xy = (i, value)
            text.set_text(label)
    elif kind == "annotations":
        for text, point, label in zip(artists, series["points"], series["texts"]):
            text.set_position(point)
            text.set_text(label)


# --------------------------------------------------------------------------- draw / update


def draw(figure: Figure, spec: dict) -> Drawing:
    """Clear ``figure`` and draw the chart description ``spec`` on it (module docstring)."""
    figure.clear()
    dpi = figure.dpi
    drawing = Drawing(frame=frame(spec))
    for (ax, ax2), panel in zip(_layout(figure, spec), spec["panels"]):
        _set_axis(ax, "x", panel["x"])
        _set_axis(ax, "y", panel["y"])
        if ax2 is not None:
            _set_axis(ax2, "y", panel["y2"])
        if panel["x"]["scale"] != "category" or panel["y"]["scale"] != "category":
            ax.grid(True, which="major", alpha=0.3)
        made = [_make(ax2 if s.get("axis") == "y2" else ax, s, panel["x"], dpi)
                for s in panel["series"]]
        drawing.series.append(made)
        if panel["legend"]:
            handles = [a[0] for a, s in zip(made, panel["series"])
                       if s["kind"] in ("line", "area") and s.get("label")]
            if handles:
                legend = ax.legend(handles, [h.get_label() for h in handles],
                                   loc=panel["legend"], fontsize=7, frameon=False)
                if ax2 is not None:  # over the twin's lines, not under them
                    legend.remove()
                    ax2.add_artist(legend)
        # titles as plain text in axes coordinates: set_title re-measures the tick labels
        drawing.titles.append(ax.text(0.0, 1.02, "", transform=ax.transAxes, fontsize=8,
                                      va="bottom"))
        drawing.notes.append(ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center",
                                     va="center", fontsize=9, wrap=True,
                                     bbox={"facecolor": "white", "edgecolor": "0.5"}))
    line = 0
    for text in spec["texts"]:
        drawing.texts.append(figure.text(0.01, 1 - (6 + _TEXT_PX * line) / spec["height"], "",
                                         fontsize=9, va="top", linespacing=1.25))
        line += 1 + _lines(text["text"], spec["width"]).count("\n")
    _fill_all(drawing, spec)
    return drawing


def _fill_all(drawing: Drawing, spec: dict) -> None:
    for made, panel, title, note in zip(drawing.series, spec["panels"], drawing.titles,
                                        drawing.notes):
        for artists, series in zip(made, panel["series"]):
            _fill(artists, series)
        title.set_text(panel["title"])
        note.set_text(panel.get("note") or "")
        note.set_visible(bool(panel.get("note")))
    for artist, text in zip(drawing.texts, spec["texts"]):
        artist.set_text(_lines(text["text"], spec["width"]))
        artist.set_color(text["colour"])
        artist.set_fontweight("bold" if text["bold"] else "normal")


def update(drawing: Drawing, spec: dict) -> list | None:
    """Move ``drawing``'s artists to ``spec``'s numbers and texts and return them (the
    artists to repaint), or None when ``spec``'s frame differs (the caller draws anew)."""
    if frame(spec) != drawing.frame:
        return None
    _fill_all(drawing, spec)
    return drawing.dynamic()


# --------------------------------------------------------------------------- reading back


def _series_data(series: dict) -> tuple:
    kind = series["kind"]
    if kind == "bars":
        return (kind, [float(v) for v in series["values"]], list(series["texts"]))
    if kind == "annotations":
        return (kind, [[float(x), float(y)] for x, y in series["points"]], list(series["texts"]))
    return (kind, [[float(x), float(y)] for x, y in series["points"]])


def chart_data(spec: dict) -> dict:
    """The numbers and words of a chart description, in the terms :func:`read_back` gives:
    per panel its title, note and each series' data; the figure's texts."""
    return {"titles": [p["title"] for p in spec["panels"]],
            "notes": [p.get("note") or "" for p in spec["panels"]],
            "texts": [t["text"] for t in spec["texts"]],
            "series": [[_series_data(s) for s in p["series"]] for p in spec["panels"]]}


def _artist_data(artists: list, series: dict) -> tuple:
    kind = series["kind"]
    if kind in ("line", "points"):
        line = artists[0]
        return (kind, [[float(x), float(y)] for x, y in zip(line.get_xdata(), line.get_ydata())])
    if kind == "area":
        xy = artists[0].get_xy()
        if len(xy) == len(series["points"]) + 1:  # matplotlib closed the polygon
            xy = xy[:-1]
        return (kind, [[float(x), float(y)] for x, y in xy])
    if kind == "bars":
        n = len(artists) // 2
        ends = [float(b.get_x() + b.get_width()) if series["horizontal"]
                else float(b.get_height()) for b in artists[:n]]
        return (kind, ends, [t.get_text() for t in artists[n:]])
    return (kind, [[float(v) for v in t.get_position()] for t in artists],
            [t.get_text() for t in artists])


def read_back(drawing: Drawing, spec: dict) -> dict:
    """What ``drawing``'s artists show, read from matplotlib, in :func:`chart_data`'s terms
    (``spec`` says only which kind each series is): a test compares the two."""
    return {"titles": [t.get_text() for t in drawing.titles],
            "notes": [n.get_text() if n.get_visible() else "" for n in drawing.notes],
            "texts": [t.get_text().replace("\n", " ") for t in drawing.texts],
            "series": [[_artist_data(a, s) for a, s in zip(made, panel["series"])]
                       for made, panel in zip(drawing.series, spec["panels"])]}

"""Interactive explorers for the book: a roofline explorer and a chip comparison.

Each widget is built in three layers, so that tests and benchmarks need no browser:

1. **state** — a pure function of the inputs returning a frozen dataclass, and the series the
   figure plots: :func:`roofline_state` -> :class:`RooflineState`, :func:`comparison_state`
   -> :class:`ComparisonState`. They live in :mod:`scalebook.live.roofline` and
   :mod:`scalebook.live.comparison` (plain Python on the solver, no ipywidgets, matplotlib or
   NumPy arrays) and are re-exported here. All numbers come from :mod:`scalebook.roofline`
   and the catalog.
2. **drawing** — :func:`draw_roofline` and :func:`draw_comparison` draw a state's series onto
   matplotlib axes and return the artists they made, keyed by name, so a test can read their
   data. The book's static site draws the same series in the browser (Chart.js).
3. **widget** — :func:`roofline_explorer` and :func:`chip_comparison` wire ipywidgets controls
   to (1) and (2). Each returns a :class:`Explorer` (an ``ipywidgets.VBox``) with

   - ``controls``: the input widgets by name (``w.controls["B"].value = 512`` recomputes),
   - ``state``: the latest state, ``figure``: the matplotlib figure, ``artists``: (2)'s output,
   - ``error``: the message of the last rejected input, or ``""``,
   - ``update()``: recompute, redraw and re-render the PNG the view shows.

   The widget shows its figure as a PNG (an ``ipywidgets.Image``). Its
   ``_repr_mimebundle_`` carries the same PNG as ``image/png`` next to the live widget view,
   and, for an explorer with a :mod:`scalebook.live` view, ``text/html``: the figure, the
   numbers and the controls as HTML inputs, which the book's site runs with scalebook in the
   reader's browser (:mod:`scalebook.widgets.live_html`, ``_ext/live_widgets.py``).

Only this package of ``scalebook`` imports ipywidgets and matplotlib (Agg, no pyplot).
"""

from __future__ import annotations

import base64
import html
import io
from typing import Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from ..hardware import canonical_dtype, chip_names, get_chip
from ..live import comparison as _comparison
from ..live import roofline as _roofline
from ..live.comparison import (METRICS, ComparisonState, Metric, comparison_series,
                               comparison_state, comparison_table, table_markdown)
from ..live.roofline import (BATCH_RANGE, FLOPS_RANGE, INTENSITY_RANGE, RooflinePoint,
                             RooflineState, roofline_series, roofline_state)
from ..units import format_count, format_flops
from . import live_html

__all__ = [
    "RooflinePoint", "RooflineState", "roofline_state", "draw_roofline", "roofline_explorer",
    "update_roofline", "utilisation",
    "Metric", "METRICS", "ComparisonState", "comparison_state", "draw_comparison",
    "update_comparison", "comparison_table", "table_markdown", "chip_comparison", "Explorer",
]

# --------------------------------------------------------------------------- roofline: state

# The state, series and summary live in scalebook.live.roofline (no ipywidgets, no matplotlib),
# shared with the book's static site; these names stay importable from here.
_COLOURS = _roofline.COLOURS
_X_DTYPES, _W_DTYPES = _roofline.X_DTYPES, _roofline.W_DTYPES
_BATCHES = np.array(_roofline.BATCHES)
_roofline_summary = _roofline.roofline_summary
_fmt_intensity = _roofline.fmt_intensity


def utilisation(state: RooflineState, point: RooflinePoint, batches: np.ndarray | float
                ) -> np.ndarray | float:
    """Best-case fraction of peak, min(1, I(B)·W / C), at batch sizes ``batches`` (a number or
    an array): :func:`scalebook.live.roofline.utilisation` at each one."""
    if np.ndim(batches) == 0:
        return _roofline.utilisation(state, point, float(batches))
    flat = [_roofline.utilisation(state, point, float(b)) for b in np.ravel(batches)]
    return np.reshape(flat, np.shape(batches))


# --------------------------------------------------------------------------- roofline: drawing

def draw_roofline(axes: Sequence, state: RooflineState) -> dict[str, object]:
    """Draw ``state`` on two axes: the roofline (left) and utilisation against batch (right).

    Left, log-log: each chip's roof min(C, I·W) against intensity I (FLOPs/byte), a dotted
    vertical at its critical intensity C / W, and a marker where this matmul sits. Right: the
    best-case fraction of peak, min(1, I(B)·W / C), against B for the same D, F and dtypes, a
    dotted vertical at the critical batch and a marker at this B. Both axes have fixed ranges,
    so the picture does not jump as the inputs change.

    Clears the axes first. Returns the artists by name: ``roof/<chip>``, ``ridge/<chip>``,
    ``point/<chip>``, ``util/<chip>``, ``critical/<chip>``, ``now/<chip>`` (``Line2D``),
    ``intensity`` (the vertical at this matmul's intensity), ``title``, ``util_title``
    (``Text``) and ``legend``. :func:`update_roofline` moves them to another state.
    """
    ax_roof, ax_util = axes
    for ax in axes:
        ax.clear()
    ax_roof.set(xscale="log", yscale="log", xlim=INTENSITY_RANGE, ylim=FLOPS_RANGE,
                xlabel="arithmetic intensity (FLOPs/byte)", ylabel="attainable FLOP/s")
    ax_util.set(xscale="log", xlim=BATCH_RANGE, ylim=_roofline.UTIL_RANGE, xlabel="batch B (tokens)",
                ylabel="best-case fraction of peak")
    _log_ticks(ax_roof.xaxis, format_count)
    _log_ticks(ax_roof.yaxis, format_flops)
    _log_ticks(ax_util.xaxis, format_count)
    for ax in axes:
        ax.grid(True, which="major", alpha=0.3)
    # Titles as plain text in axes coordinates: set_title re-measures every tick label to
    # place itself, which costs more than the rest of a redraw.
    artists: dict[str, object] = {
        "intensity": ax_roof.axvline(1.0, color="0.3", lw=1, alpha=0.6),
        "title": ax_roof.text(0.0, 1.02, "", transform=ax_roof.transAxes, fontsize=10),
        "util_title": ax_util.text(0.0, 1.02, "", transform=ax_util.transAxes, fontsize=10),
    }
    update_roofline(axes, artists, state)
    return artists


_PER_CHIP = ("roof", "ridge", "point", "util", "critical", "now")


def _chip_artists(axes: Sequence, artists: dict, state: RooflineState) -> None:
    """(Re)create the per-chip lines when the set of chips changed; colours go by position."""
    ax_roof, ax_util = axes
    for name in [n for n in artists if n.split("/")[0] in _PER_CHIP]:
        artists.pop(name).remove()
    for index, point in enumerate(state.points):
        colour = _COLOURS[index % len(_COLOURS)]
        line = dict(color=colour, lw=2)
        marker = dict(color=colour, marker="o", ls="", mec="black", zorder=5)
        (artists[f"roof/{point.chip}"],) = ax_roof.plot([], [], **line)
        (artists[f"ridge/{point.chip}"],) = ax_roof.plot([], [], color=colour, ls=":", lw=1)
        (artists[f"point/{point.chip}"],) = ax_roof.plot([], [], ms=9, **marker)
        (artists[f"util/{point.chip}"],) = ax_util.plot([], [], **line)
        (artists[f"critical/{point.chip}"],) = ax_util.plot([], [], color=colour, ls=":", lw=1)
        (artists[f"now/{point.chip}"],) = ax_util.plot([], [], ms=8, **marker)


def update_roofline(axes: Sequence, artists: dict, state: RooflineState) -> list:
    """Move :func:`draw_roofline`'s artists on ``axes`` to ``state`` (any chips, dtypes and
    sizes) without redrawing the axes themselves. Returns every artist that depends on the
    state, in drawing order (what a blitting redraw must paint)."""
    ax_roof, ax_util = axes
    chips = tuple(p.chip for p in state.points)
    if tuple(n.split("/", 1)[1] for n in artists if n.startswith("roof/")) != chips:
        _chip_artists(axes, artists, state)
    labels = [f"{p.chip} ({p.compute_dtype})" for p in state.points]
    legend = artists.get("legend")
    if legend is None or [t.get_text() for t in legend.get_texts()] != labels:
        if legend is not None:
            legend.remove()
        handles = [artists[f"roof/{chip}"] for chip in chips]
        artists["legend"] = ax_roof.legend(handles, labels, loc="lower right", fontsize=8)
    series = roofline_series(state)  # the numbers the static site's chart draws too
    per_chip = []
    for c in series["chips"]:
        name, ridge, critical = c["chip"], c["ridge"], c["critical"]
        artists[f"roof/{name}"].set_data(*zip(*c["roof"]))
        artists[f"ridge/{name}"].set_data([ridge, ridge], FLOPS_RANGE)
        artists[f"point/{name}"].set_data(*([v] for v in c["point"]))
        artists[f"util/{name}"].set_data(*zip(*c["util"]))
        # per-example weights: no batch is large enough, so no vertical
        xs = [] if critical is None else [critical, critical]
        artists[f"critical/{name}"].set_data(xs, list(_roofline.UTIL_RANGE)[:len(xs)])
        artists[f"now/{name}"].set_data(*([v] for v in c["now"]))
        per_chip += [artists[f"{kind}/{name}"] for kind in _PER_CHIP]
    artists["intensity"].set_xdata([series["intensity"], series["intensity"]])
    artists["title"].set_text(series["title"])
    artists["util_title"].set_text(series["util_title"])
    return [artists["intensity"], *per_chip, artists["legend"], artists["title"],
            artists["util_title"]]


def _log_ticks(axis, text: Callable[[float], str]) -> None:
    """Decades only, no minor ticks, labels in plain SI text ("10 TFLOP/s", "1 k").

    Most of a redraw's time goes into tick labels: a log axis over ten decades has dozens of
    minor ticks, and matplotlib's default "10^k" labels go through its (slow) math renderer.
    """
    axis.set_major_locator(LogLocator(base=10, numticks=7))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: text(value)))


# --------------------------------------------------------------------------- the widget shell

class Explorer(widgets.VBox):
    """An ipywidgets box: controls on top, a PNG of the figure, a summary below.

    Built from plain functions: ``compute(**control_values) -> state``,
    ``draw(figure, state) -> artists`` (a full redraw) and ``describe(state) -> html``.
    Moving any control calls :meth:`update`.

    Optionally ``refresh(figure, artists, state) -> artists`` gives a fast path: it moves the
    artists that depend on the state, and only those are redrawn over a saved copy of the rest
    of the picture (axes, ticks, labels: blitting). It returns None when the axes themselves
    must change, which falls back to a full redraw. That keeps an update to a few milliseconds
    of matplotlib plus the PNG encoding, where a full redraw of two log axes costs ~50 ms.

    ``live`` names the explorer's :mod:`scalebook.live` module (``view(controls, changed)``
    computes what this explorer shows from the same control values); with it the explorer's
    ``text/html`` makes it live on the book's static site.
    """

    def __init__(self, controls: Mapping[str, widgets.Widget], figure: Figure,
                 compute: Callable[..., object], draw: Callable[[Figure, object], dict],
                 describe: Callable[[object], str], *, layout_rows: Iterable[Sequence[str]],
                 refresh: Callable[[Figure, dict, object], list] | None = None,
                 live: str | None = None):
        self.controls = dict(controls)
        self.live = live
        self._layout_rows = [tuple(row) for row in layout_rows]
        self.figure = figure
        self._syncing = False  # True while set_quietly moves several controls at once
        self._compute, self._draw, self._describe = compute, draw, describe
        self._refresh = refresh
        self._background = None
        self.state: object = None
        self.artists: dict[str, object] = {}
        self.error = ""
        self.png = b""
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self.summary = widgets.HTML()
        self.message = widgets.HTML()
        rows = [widgets.HBox([self.controls[name] for name in row]) for row in self._layout_rows]
        super().__init__(children=[*rows, self.message, self.image, self.summary])
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.update()
        if self.error:  # the initial values themselves were rejected
            raise ValueError(self.error)

    def values(self) -> dict[str, object]:
        """The controls' current values, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, change: object) -> None:
        if self._syncing:
            return
        owner = getattr(change, "owner", None)
        if owner is None and isinstance(change, dict):
            owner = change.get("owner")
        self.link_controls(owner)
        self.update()

    def link_controls(self, changed: widgets.Widget | None) -> None:
        """Keep linked controls in step after ``changed`` moved, before the update (a preset
        that fills its fields, say). Explorers without linked controls keep this no-op."""

    def set_quietly(self, values: Mapping[str, object]) -> None:
        """Set several controls without an update per control; the caller updates once."""
        self._syncing = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._syncing = False

    def update(self) -> None:
        """Recompute the state from the controls, redraw, and re-render the PNG.

        A rejected input (``ValueError``) keeps the last good picture and shows the message in
        ``self.message`` (and ``self.error``).
        """
        try:
            state = self._compute(**self.values())
        except ValueError as exc:
            self.error = str(exc)
            self.message.value = (f"<span style='color:#b00020'>⚠ {html.escape(self.error)}"
                                  "</span>")
            return
        self.error = ""
        self.message.value = ""
        self.state = state
        self._render(state)
        self.image.value = self.png
        self.summary.value = self._describe(state)

    def _render(self, state: object) -> None:
        canvas = self.figure.canvas
        dynamic = None
        if self._refresh is not None and self._background is not None:
            dynamic = self._refresh(self.figure, self.artists, state)
        full = dynamic is None
        if full:
            self.artists = self._draw(self.figure, state)
            dynamic = self._refresh(self.figure, self.artists, state) if self._refresh else []
        for artist in dynamic:
            artist.set_animated(True)  # painted over the saved background, never into it
        if full:
            canvas.draw()
            if self._refresh is not None:
                self._background = canvas.copy_from_bbox(self.figure.bbox)
        else:
            canvas.restore_region(self._background)
        for artist in dynamic:
            self.figure.draw_artist(artist)
        self.png = _canvas_png(canvas)

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        """The live widget view plus, for static pages, the current figure as ``image/png``
        and, when the explorer has a :mod:`scalebook.live` view (``live``), ``text/html``: the
        figure, the summary and the controls as HTML inputs that the book's JavaScript wires
        to that view (:mod:`scalebook.widgets.live_html`). Jupyter shows the widget view; the
        book's HTML builder prefers ``text/html`` to ``image/png`` (MyST-NB's priorities)."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
        if self.live is not None:
            buttons = dict(getattr(self, "buttons", {}))  # a subclass's action buttons
            rows = [*self._layout_rows, *([tuple(buttons)] if buttons else [])]
            bundle["text/html"] = live_html.placeholder(
                self.live, {**self.controls, **buttons}, rows, self.png, self.summary.value,
                self.error)
        return bundle


def _canvas_png(canvas: FigureCanvasAgg) -> bytes:
    """What an Agg canvas holds now, as PNG (light compression: it is redone per slider move,
    and zlib's default level costs more time than the extra kilobytes cost)."""
    width, height = canvas.get_width_height(physical=True)
    image = PIL.Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA",
                                 0, 1)
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def _log2_slider(description: str, value: float, lo: int, hi: int, step: float
                 ) -> widgets.FloatLogSlider:
    return widgets.FloatLogSlider(
        value=value, base=2, min=lo, max=hi, step=step, description=description,
        readout_format=",.0f", continuous_update=True,
        style={"description_width": "initial"}, layout=widgets.Layout(width="32%"))


_X_DTYPES = ("bf16", "fp16", "fp8", "int8")
_W_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")


def roofline_explorer(chip: str = "TPU v5e", *, compare: str | None = None, B: float = 64,
                      D: float = 8192, F: float = 8192, x_dtype: str = "bf16",
                      w_dtype: str = "bf16", per_example: bool = False,
                      dpi: float = 100) -> Explorer:
    """A roofline explorer for ``X[B, D] ·_D W[D, F]``: pick chips and dtypes, move B, D, F.

    Controls (``w.controls``): ``chip``, ``compare`` ("" for none), ``x_dtype``, ``w_dtype``,
    ``B``, ``D``, ``F`` (log sliders, 1–65,536 and 128–65,536) and ``per_example``.
    ``w.state`` is a :class:`RooflineState`; ``w.artists`` are :func:`draw_roofline`'s.
    Raises ``ValueError`` for an unknown chip or dtype, or a chip without that dtype.
    """
    names = chip_names()
    main = get_chip(chip).name
    other = "" if compare in (None, "") else get_chip(compare).name
    x_dtype, w_dtype = canonical_dtype(x_dtype), canonical_dtype(w_dtype)
    for value, allowed, what in ((x_dtype, _X_DTYPES, "x_dtype"), (w_dtype, _W_DTYPES, "w_dtype")):
        if value not in allowed:
            raise ValueError(f"{what} {value!r} is not offered; choose one of {', '.join(allowed)}")
    controls = {
        "chip": widgets.Dropdown(options=names, value=main, description="chip"),
        "compare": widgets.Dropdown(options=[("none", ""), *[(n, n) for n in names]],
                                    value=other, description="compare with"),
        "x_dtype": widgets.Dropdown(options=_X_DTYPES, value=x_dtype, description="X dtype"),
        "w_dtype": widgets.Dropdown(options=_W_DTYPES, value=w_dtype, description="W dtype"),
        "per_example": widgets.Checkbox(value=bool(per_example),
                                        description="per-example weights W[B, D, F]"),
        "B": _log2_slider("B (tokens)", B, 0, 16, 0.125),
        "D": _log2_slider("D", D, 7, 16, 0.5),
        "F": _log2_slider("F", F, 7, 16, 0.5),
    }
    figure = _figure((10, 3.9), dpi, ncols=2, left=0.1, right=0.99, bottom=0.13, top=0.91,
                     wspace=0.2)
    return Explorer(controls, figure, roofline_state,
                    lambda fig, state: draw_roofline(fig.axes, state), _roofline_summary,
                    layout_rows=[("chip", "compare"), ("x_dtype", "w_dtype", "per_example"),
                                 ("B", "D", "F")],
                    refresh=lambda fig, artists, state: update_roofline(fig.axes, artists, state),
                    live="scalebook.live.roofline")


def _figure(size: tuple[float, float], dpi: float, ncols: int = 1, **adjust: float) -> Figure:
    """A figure on its own Agg canvas with a fixed layout: matplotlib's automatic layout
    engines re-measure every label on every redraw, doubling the time a slider move takes."""
    figure = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(figure)
    figure.subplots(1, ncols)
    figure.subplots_adjust(**adjust)
    return figure


# --------------------------------------------------------------------------- chip comparison

# Metrics, state, series and the HTML table live in scalebook.live.comparison (shared with the
# book's static site); these names stay importable from here.
_VENDOR_COLOURS = _comparison.VENDOR_COLOURS
_RELATIVE_LOG_FLOOR = _comparison.RELATIVE_LOG_FLOOR
_metric = _comparison.get_metric
_comparison_html = _comparison.comparison_html


def draw_comparison(ax, state: ComparisonState) -> dict[str, object]:
    """A bar per chip, its height relative to the largest chip's value and its value printed
    on top; a chip without a figure gets no bar and the label "n/a".

    The axes have a fixed range (0 to 1, or a log axis down to 1/1000), so changing chips or
    metric only moves artists (:func:`update_comparison`). Clears ``ax`` first. Returns the
    artists by name: ``bars`` (BarContainer), ``values`` and ``names`` (lists of Text, one per
    chip) and ``title`` (Text).
    """
    ax.clear()
    if state.log:
        ax.set(yscale="log", ylim=_comparison.LOG_RANGE)
    else:
        ax.set(ylim=_comparison.LINEAR_RANGE)
    ax.set_ylabel("relative to the largest")
    ax.set_xticks([])
    ax.grid(True, axis="y", alpha=0.3)
    artists: dict[str, object] = {
        "title": ax.text(0.0, 1.02, "", transform=ax.transAxes, fontsize=10),
        "bars": None, "values": [], "names": [],
    }
    update_comparison(ax, artists, state)
    return artists


def update_comparison(ax, artists: dict, state: ComparisonState) -> list | None:
    """Redraw the bars and labels of :func:`draw_comparison` for ``state``; return the artists
    to paint, or None when the axis itself must change (linear against log)."""
    if (ax.get_yscale() == "log") != state.log:
        return None
    for artist in [*(artists["bars"] or []), *artists["values"], *artists["names"]]:
        artist.remove()
    series = comparison_series(state)  # the numbers the static site's chart draws too
    n = len(state.chips)
    positions = list(range(n))
    bars = ax.bar(positions, series["heights"], width=0.7, color=series["colours"],
                  edgecolor="black", linewidth=0.5)
    ax.set_xlim(-0.6, n - 0.4)
    below = ax.get_xaxis_transform()  # x in data, y in axes coordinates
    artists["bars"] = bars
    artists["values"] = [
        ax.annotate(label, (x, h), ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                    textcoords="offset points")
        for x, h, label in zip(positions, series["heights"], series["texts"])]
    artists["names"] = [ax.text(x, -0.03, name, transform=below, ha="center", va="top",
                                fontsize=9) for x, name in zip(positions, series["names"])]
    artists["title"].set_text(series["title"])
    return [*bars, *artists["values"], *artists["names"], artists["title"]]


def chip_comparison(chips: Iterable[str] = ("TPU v5e", "TPU v5p", "H100", "B200"),
                    metric: str = "flops:bf16", *, log: bool = False,
                    dpi: float = 100) -> Explorer:
    """Catalog chips side by side: a table of every figure and a bar chart of one metric.

    Controls: ``chips`` (multiple selection of catalog names), ``metric`` (a :data:`METRICS`
    key) and ``log`` (log-scale bars). ``w.state`` is a :class:`ComparisonState`.
    Raises ``ValueError`` for an unknown chip or metric.
    """
    names = tuple(get_chip(c).name for c in chips)
    _metric(metric)
    controls = {
        "chips": widgets.SelectMultiple(options=chip_names(), value=names, rows=6,
                                        description="chips"),
        "metric": widgets.Dropdown(options=[(m.label, m.key) for m in METRICS], value=metric,
                                   description="metric", layout=widgets.Layout(width="45%")),
        "log": widgets.Checkbox(value=bool(log), description="log scale"),
    }
    figure = _figure((8, 3.6), dpi, left=0.09, right=0.98, bottom=0.12, top=0.9)
    return Explorer(controls, figure, comparison_state,
                    lambda fig, state: draw_comparison(fig.axes[0], state), _comparison_html,
                    layout_rows=[("chips", "metric", "log")],
                    refresh=lambda fig, artists, state: update_comparison(fig.axes[0],
                                                                          artists, state),
                    live="scalebook.live.comparison")

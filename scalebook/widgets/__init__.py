"""Interactive explorers for the book: a roofline explorer and a chip comparison.

Each widget is built in three layers, so that tests and benchmarks need no browser:

1. **state** — a pure function of the inputs returning a frozen dataclass:
   :func:`roofline_state` -> :class:`RooflineState`, :func:`comparison_state` ->
   :class:`ComparisonState`. All numbers come from :mod:`scalebook.roofline` and the catalog.
2. **drawing** — :func:`draw_roofline` and :func:`draw_comparison` draw a state onto matplotlib
   axes and return the artists they made, keyed by name, so a test can read their data.
3. **widget** — :func:`roofline_explorer` and :func:`chip_comparison` wire ipywidgets controls
   to (1) and (2). Each returns a :class:`Explorer` (an ``ipywidgets.VBox``) with

   - ``controls``: the input widgets by name (``w.controls["B"].value = 512`` recomputes),
   - ``state``: the latest state, ``figure``: the matplotlib figure, ``artists``: (2)'s output,
   - ``error``: the message of the last rejected input, or ``""``,
   - ``update()``: recompute, redraw and re-render the PNG the view shows.

   The widget shows its figure as a PNG (an ``ipywidgets.Image``), and its
   ``_repr_mimebundle_`` carries the same PNG as ``image/png`` next to the live widget view, so
   a static page (the book's HTML) shows the default state as a figure.

Only this module of ``scalebook`` imports ipywidgets and matplotlib (Agg, no pyplot).
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from .. import roofline
from ..hardware import Chip, bytes_per_element, canonical_dtype, chip_names, get_chip
from ..units import format_bandwidth, format_bytes, format_count, format_flops, format_seconds

__all__ = [
    "RooflinePoint", "RooflineState", "roofline_state", "draw_roofline", "roofline_explorer",
    "update_roofline", "utilisation",
    "Metric", "METRICS", "ComparisonState", "comparison_state", "draw_comparison",
    "update_comparison", "comparison_table", "table_markdown", "chip_comparison", "Explorer",
]

# --------------------------------------------------------------------------- shared helpers

#: Colours for the first and second chip on a plot, and for vendors in bar charts.
_COLOURS = ("#1f5fa8", "#d9731a")
_VENDOR_COLOURS = {"google": "#1f5fa8", "nvidia": "#5a9e2f"}

#: Fixed axes ranges of the roofline plot, so the picture does not jump as sliders move.
INTENSITY_RANGE = (0.25, 1.0e5)  # FLOPs/byte
FLOPS_RANGE = (1.0e11, 3.0e16)  # FLOPs/s


def _fmt_intensity(value: float) -> str:
    if math.isinf(value):
        return "∞"
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def _fmt_tokens(value: float) -> str:
    return "never (∞)" if math.isinf(value) else f"{value:,.0f}"


# --------------------------------------------------------------------------- roofline: state

@dataclass(frozen=True)
class RooflinePoint:
    """Where one matmul sits on one chip's roofline.

    Attributes (SI): ``chip`` display name; ``compute_dtype`` whose peak applies; ``peak_flops``
    C (FLOPs/s); ``bandwidth`` W, HBM (bytes/s); ``critical_intensity`` C / W (FLOPs/byte);
    ``critical_batch`` tokens above which the matmul is compute-bound (∞ with per-example
    weights); ``attainable_flops`` min(C, I·W); ``t_math``, ``t_comms`` (s); ``bound``
    "compute" or "memory".
    """

    chip: str
    compute_dtype: str
    peak_flops: float
    bandwidth: float
    critical_intensity: float
    critical_batch: float
    attainable_flops: float
    t_math: float
    t_comms: float
    bound: str

    @property
    def lower(self) -> float:
        """max(T_math, T_comms) in seconds: perfect overlap of compute and memory traffic."""
        return max(self.t_math, self.t_comms)

    @property
    def upper(self) -> float:
        """T_math + T_comms in seconds: no overlap at all."""
        return self.t_math + self.t_comms


@dataclass(frozen=True)
class RooflineState:
    """One matmul ``X[B, D] ·_D W[D, F]`` (or ``W[B, D, F]`` per example) on one or two chips.

    ``flops``, ``nbytes`` (read + written) and ``intensity`` (FLOPs/byte) describe the matmul;
    ``points`` has one :class:`RooflinePoint` per chip, the main chip first.
    """

    B: int
    D: int
    F: int
    x_dtype: str
    w_dtype: str
    per_example: bool
    flops: float
    nbytes: float
    intensity: float
    points: tuple[RooflinePoint, ...]

    @property
    def main(self) -> RooflinePoint:
        return self.points[0]


def _size(name: str, value: float) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number of elements, got {value!r}")
    if not math.isfinite(value) or value < 1:
        raise ValueError(f"{name} must be at least 1, got {value!r}")
    return int(round(value))


def _compute_dtype(x_dtype: str, w_dtype: str) -> str:
    """The dtype the multiply runs in: the wider of the two operands (int8 weights with bf16
    activations are upcast and multiplied in bf16), as :func:`roofline.matmul_time` assumes."""
    return max((x_dtype, w_dtype), key=bytes_per_element)


def _point(chip: Chip, cost: roofline.MatmulCost, x_dtype: str, w_dtype: str,
           per_example: bool) -> RooflinePoint:
    compute = _compute_dtype(x_dtype, w_dtype)
    peak = chip.flops(compute)  # raises a clear ValueError for a dtype the chip lacks
    bounds = roofline.time_bounds(cost.flops, cost.total_bytes, flops_per_s=peak,
                                  bytes_per_s=chip.hbm_bandwidth)
    if per_example:
        critical_batch = math.inf
    else:
        critical_batch = roofline.critical_batch_size(chip, compute_dtype=compute,
                                                      weight_dtype=w_dtype)
    return RooflinePoint(
        chip=chip.name,
        compute_dtype=compute,
        peak_flops=peak,
        bandwidth=chip.hbm_bandwidth,
        critical_intensity=roofline.critical_intensity(chip, compute),
        critical_batch=float(critical_batch),
        attainable_flops=float(roofline.attainable_flops(cost.intensity, chip, compute)),
        t_math=float(bounds.t_math),
        t_comms=float(bounds.t_comms),
        bound="compute" if bounds.bound_by == "compute" else "memory",
    )


def roofline_state(chip: str | Chip = "TPU v5e", *, B: float = 64, D: float = 8192,
                   F: float = 8192, x_dtype: str = "bf16", w_dtype: str = "bf16",
                   per_example: bool = False, compare: str | Chip | None = None) -> RooflineState:
    """Where ``X[B, D] ·_D W[D, F]`` sits on ``chip``'s roofline (and on ``compare``'s).

    Bytes are exact (:func:`roofline.matmul_cost`): activations in ``x_dtype``, weights in
    ``w_dtype``, output in ``x_dtype``; the multiply runs in the wider of the two dtypes. With
    ``per_example=True`` every example has its own weights ``W[B, D, F]``.

    Raises ``ValueError`` for an unknown chip, an unknown dtype, a chip without a FLOPs/s
    figure for the compute dtype (a V100 has no bf16), or a size below 1.
    """
    chips = [get_chip(chip)]
    if compare is not None and compare != "":
        other = get_chip(compare)
        if other is not chips[0]:
            chips.append(other)
    x_dtype, w_dtype = canonical_dtype(x_dtype), canonical_dtype(w_dtype)
    B, D, F = _size("B", B), _size("D", D), _size("F", F)
    cost = roofline.matmul_cost(B, D, F, x_dtype=x_dtype, w_dtype=w_dtype,
                                batched_weights=bool(per_example))
    points = tuple(_point(c, cost, x_dtype, w_dtype, bool(per_example)) for c in chips)
    return RooflineState(B=B, D=D, F=F, x_dtype=x_dtype, w_dtype=w_dtype,
                         per_example=bool(per_example), flops=float(cost.flops),
                         nbytes=float(cost.total_bytes), intensity=float(cost.intensity),
                         points=points)


#: Batch sizes of the utilisation panel: 1 to 65,536 tokens.
BATCH_RANGE = (1.0, 65536.0)
_BATCHES = np.logspace(0, 16, 97, base=2.0)


def utilisation(state: RooflineState, point: RooflinePoint, batches: np.ndarray | float
                ) -> np.ndarray | float:
    """Best-case fraction of peak, T_math / max(T_math, T_comms), of the state's matmul at
    other batch sizes (same D, F, dtypes) on ``point``'s chip: min(1, I(B)·W / C)."""
    cost = roofline.matmul_cost(batches, state.D, state.F, x_dtype=state.x_dtype,
                                w_dtype=state.w_dtype, batched_weights=state.per_example)
    return np.minimum(1.0, cost.intensity * point.bandwidth / point.peak_flops)


# --------------------------------------------------------------------------- roofline: drawing

def _roof_xy(point: RooflinePoint) -> tuple[np.ndarray, np.ndarray]:
    """The roof min(C, I·W) as three vertices: left edge, the ridge at C / W, right edge."""
    lo, hi = INTENSITY_RANGE
    ridge = point.critical_intensity
    x = np.array([lo, min(max(ridge, lo), hi), hi])
    return x, np.minimum(point.peak_flops, x * point.bandwidth)


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
    ax_util.set(xscale="log", xlim=BATCH_RANGE, ylim=(0.0, 1.08), xlabel="batch B (tokens)",
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
    per_chip = []
    for point in state.points:
        name = point.chip
        ridge, critical = point.critical_intensity, point.critical_batch
        artists[f"roof/{name}"].set_data(*_roof_xy(point))
        artists[f"ridge/{name}"].set_data([ridge, ridge], FLOPS_RANGE)
        artists[f"point/{name}"].set_data([state.intensity], [point.attainable_flops])
        artists[f"util/{name}"].set_data(_BATCHES, utilisation(state, point, _BATCHES))
        # per-example weights: no batch is large enough, so no vertical
        xs = [critical, critical] if math.isfinite(critical) else []
        artists[f"critical/{name}"].set_data(xs, [0.0, 1.08][:len(xs)])
        artists[f"now/{name}"].set_data([state.B], [utilisation(state, point, float(state.B))])
        per_chip += [artists[f"{kind}/{name}"] for kind in _PER_CHIP]
    artists["intensity"].set_xdata([state.intensity, state.intensity])
    main = state.main
    relation = ">" if main.t_math >= main.t_comms else "<"
    artists["title"].set_text(
        f"{main.chip}: T_math {format_seconds(main.t_math)} {relation} "
        f"T_comms {format_seconds(main.t_comms)} → {main.bound}-bound")
    weights = "W[B, D, F]" if state.per_example else "W[D, F]"
    artists["util_title"].set_text(
        f"X[B, D] {state.x_dtype} · {weights} {state.w_dtype}: B = {state.B:,}, "
        f"D = {state.D:,}, F = {state.F:,}")
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


def _roofline_summary(state: RooflineState) -> str:
    """An HTML table of the numbers behind the plot."""
    head = (f"<b>{format_count(state.flops)}FLOPs</b>, "
            f"<b>{format_bytes(state.nbytes, binary=False)}</b> moved, intensity "
            f"<b>{_fmt_intensity(state.intensity)} FLOPs/byte</b>")
    rows = "".join(
        "<tr>" + "".join(f"<td>{cell}</td>" for cell in (
            html.escape(p.chip), f"{format_flops(p.peak_flops)} ({p.compute_dtype})",
            format_bandwidth(p.bandwidth), _fmt_intensity(p.critical_intensity),
            _fmt_tokens(p.critical_batch), format_seconds(p.t_math), format_seconds(p.t_comms),
            f"{format_seconds(p.lower)} – {format_seconds(p.upper)}", f"<b>{p.bound}</b>",
        )) + "</tr>"
        for p in state.points)
    return (f"<div style='font-size:90%'>{head}<table style='border-collapse:collapse'>"
            "<tr><th>chip</th><th>peak C</th><th>HBM W</th><th>C/W (FLOPs/byte)</th>"
            "<th>critical B</th><th>T_math</th><th>T_comms</th><th>runtime bounds</th>"
            f"<th>bound by</th></tr>{rows}</table></div>")


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
    """

    def __init__(self, controls: Mapping[str, widgets.Widget], figure: Figure,
                 compute: Callable[..., object], draw: Callable[[Figure, object], dict],
                 describe: Callable[[object], str], *, layout_rows: Iterable[Sequence[str]],
                 refresh: Callable[[Figure, dict, object], list] | None = None):
        self.controls = dict(controls)
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
        rows = [widgets.HBox([self.controls[name] for name in row]) for row in layout_rows]
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
        """The live widget view plus the current figure as ``image/png`` for static pages."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["image/png"] = base64.b64encode(self.png).decode("ascii")
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
                    refresh=lambda fig, artists, state: update_roofline(fig.axes, artists, state))


def _figure(size: tuple[float, float], dpi: float, ncols: int = 1, **adjust: float) -> Figure:
    """A figure on its own Agg canvas with a fixed layout: matplotlib's automatic layout
    engines re-measure every label on every redraw, doubling the time a slider move takes."""
    figure = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(figure)
    figure.subplots(1, ncols)
    figure.subplots_adjust(**adjust)
    return figure


# --------------------------------------------------------------------------- chip comparison

@dataclass(frozen=True)
class Metric:
    """One figure of merit of a chip: ``value(chip)`` in SI units (NaN where the chip has
    none), printed for people with ``text(value)``."""

    key: str
    label: str
    value: Callable[[Chip], float]
    text: Callable[[float], str]


def _flops_metric(dtype: str) -> Metric:
    def value(chip: Chip) -> float:
        return chip.flops_per_s.get(dtype, math.nan)

    what = "OP/s" if dtype.startswith("int") else "FLOP/s"
    return Metric(f"flops:{dtype}", f"{dtype} {what}", value,
                  lambda v: format_flops(v).replace("FLOP/s", what))


def _critical_metric(dtype: str) -> Metric:
    def value(chip: Chip) -> float:
        if dtype not in chip.flops_per_s:
            return math.nan
        return roofline.critical_intensity(chip, dtype)

    return Metric(f"critical:{dtype}", f"critical intensity, {dtype}", value,
                  lambda v: f"{_fmt_intensity(v)} FLOPs/byte")


#: Every metric the comparison offers, in table order.
METRICS: tuple[Metric, ...] = (
    *(_flops_metric(d) for d in ("bf16", "fp16", "fp8", "int8", "fp4")),
    Metric("hbm_bytes", "HBM capacity", lambda c: c.hbm_bytes,
           lambda v: format_bytes(v, binary=False)),
    Metric("hbm_bandwidth", "HBM bandwidth", lambda c: c.hbm_bandwidth, format_bandwidth),
    *(_critical_metric(d) for d in ("bf16", "fp8", "int8")),
    Metric("link_one_way", "one chip link, one way", lambda c: c.link_bandwidth_one_way,
           format_bandwidth),
    Metric("interconnect_one_way", "all chip links, one way",
           lambda c: c.interconnect_bandwidth_one_way, format_bandwidth),
    Metric("pcie", "PCIe, one way", lambda c: c.pcie_bandwidth, format_bandwidth),
)
_METRIC_INDEX = {m.key: m for m in METRICS}


def _metric(key: str) -> Metric:
    if key not in _METRIC_INDEX:
        raise ValueError(f"unknown metric {key!r}; known metrics: {', '.join(_METRIC_INDEX)}")
    return _METRIC_INDEX[key]


def comparison_table(chips: Iterable[str | Chip], metrics: Iterable[str] | None = None
                     ) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Formatted figures of ``chips``: ``(header, rows)``, one row per chip.

    ``header`` is ``("chip", <metric labels>)``; a chip without a figure shows "—".
    ``metrics`` are :data:`METRICS` keys (default: all). Raises ``ValueError`` for an unknown
    chip or metric.
    """
    chosen = [_metric(k) for k in metrics] if metrics is not None else list(METRICS)
    header = ("chip", *(m.label for m in chosen))
    rows = []
    for chip in (get_chip(c) for c in chips):
        cells = []
        for m in chosen:
            value = m.value(chip)
            cells.append("—" if math.isnan(value) else m.text(value))
        rows.append((chip.name, *cells))
    return header, tuple(rows)


def table_markdown(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown (pipe) table; cells must not contain ``|``."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class ComparisonState:
    """Chips side by side on one metric.

    ``values`` are SI (NaN where a chip has no figure) and ``labels`` the same values printed
    ("3.35 TB/s", "n/a"), in the order of ``chips``. ``relative`` is each value divided by the
    largest (0 where there is none): the bar heights. ``header``/``rows`` is the full table of
    every metric (:func:`comparison_table`).
    """

    chips: tuple[str, ...]
    vendors: tuple[str, ...]
    metric: str
    label: str
    values: tuple[float, ...]
    labels: tuple[str, ...]
    relative: tuple[float, ...]
    log: bool
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def comparison_state(chips: Iterable[str | Chip] = ("TPU v5e", "TPU v5p", "H100", "B200"),
                     metric: str = "flops:bf16", *, log: bool = False) -> ComparisonState:
    """Compare ``chips`` (at least one; catalog names or aliases) on ``metric`` (a
    :data:`METRICS` key). Raises ``ValueError`` for an unknown chip or metric, or no chip."""
    resolved = [get_chip(c) for c in chips]
    if not resolved:
        raise ValueError("choose at least one chip to compare")
    m = _metric(metric)
    values = [float(m.value(c)) for c in resolved]
    largest = max((v for v in values if not math.isnan(v)), default=math.nan)
    header, rows = comparison_table(resolved)
    return ComparisonState(
        chips=tuple(c.name for c in resolved), vendors=tuple(c.vendor for c in resolved),
        metric=m.key, label=m.label, values=tuple(values),
        labels=tuple("n/a" if math.isnan(v) else m.text(v) for v in values),
        relative=tuple(0.0 if math.isnan(v) else v / largest for v in values),
        log=bool(log), header=header, rows=rows)


#: Bar heights are relative to the largest value; a log axis shows three decades below it.
_RELATIVE_LOG_FLOOR = 1e-3


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
        ax.set(yscale="log", ylim=(_RELATIVE_LOG_FLOOR, 2.5))
    else:
        ax.set(ylim=(0.0, 1.15))
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
    n = len(state.chips)
    positions = np.arange(n)
    floor = _RELATIVE_LOG_FLOOR if state.log else 0.0
    heights = [max(h, floor) for h in state.relative]
    bars = ax.bar(positions, heights, width=0.7,
                  color=[_VENDOR_COLOURS.get(v, "0.5") for v in state.vendors],
                  edgecolor="black", linewidth=0.5)
    ax.set_xlim(-0.6, n - 0.4)
    below = ax.get_xaxis_transform()  # x in data, y in axes coordinates
    artists["bars"] = bars
    artists["values"] = [
        ax.annotate(label, (x, h), ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                    textcoords="offset points")
        for x, h, label in zip(positions, heights, state.labels)]
    artists["names"] = [ax.text(x, -0.03, name, transform=below, ha="center", va="top",
                                fontsize=9) for x, name in zip(positions, state.chips)]
    artists["title"].set_text(state.label)
    return [*bars, *artists["values"], *artists["names"], artists["title"]]


def _comparison_html(state: ComparisonState) -> str:
    cells = lambda row, tag: "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row)  # noqa: E731
    # chips side by side: one column per chip, one row per metric
    columns = list(zip(state.header, *state.rows))
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(col[0])}</th>"
                   f"{cells(col[1:], 'td')}</tr>" for col in columns[1:])
    return (f"<table style='font-size:90%;border-collapse:collapse'><tr><th></th>"
            f"{cells(columns[0][1:], 'th')}</tr>{body}</table>")


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
                                                                          artists, state))

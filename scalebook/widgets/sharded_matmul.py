"""A sharded-matmul explorer: ``A[B, D] ·_D W[D, F]`` on a mesh of up to three axes.

Pick a chip, a mesh ("X=2, Y=4"), the sizes B, D, F and the sharding of each operand and of
the output in the book's notation ("A[B_X, D_Y]"); the explorer shows the local shapes and
bytes per chip, which of the four cases applies, each collective with its time, the compute
time, and whether the step is compute- or communication-bound. Beside it, the time of the
collective against its message size on one mesh axis, with its latency floor and bandwidth
line: the latency- and bandwidth-bound regimes.

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`sharded_matmul_state` (pure) -> :class:`ShardedMatmulState`, the plotted
   series (:func:`~scalebook.live.sharded_matmul.sharded_matmul_series`) and the summary. They
   live in :mod:`scalebook.live.sharded_matmul` (plain Python on the solver: no ipywidgets,
   matplotlib or NumPy arrays), which also runs the book's static page in the reader's
   browser, and are importable from here too;
2. **drawing**: :func:`draw_sharded_matmul` draws a state's series on two axes and returns its
   artists by name; :func:`update_sharded_matmul` moves them to another state;
3. **widget**: :func:`sharded_matmul_explorer` -> :class:`ShardedMatmulExplorer` (an
   :class:`~scalebook.widgets.Explorer`).
"""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from ..hardware import canonical_dtype, chip_names, get_chip
from ..live import sharded_matmul as _live
from ..live.sharded_matmul import (
    CUSTOM,
    DTYPES,
    KINDS,
    LAYOUTS,
    MESH_AXES,
    MESSAGE_RANGE,
    TIME_RANGE,
    OperandInfo,
    ShardedMatmulState,
    Wraparound,
    collective_cost,
    collective_curve,
    parse_mesh,
    sharded_matmul_series,
    sharded_matmul_state,
    sharded_matmul_summary,
)
from . import Explorer, _figure, _log2_slider

__all__ = [
    "ShardedMatmulState", "OperandInfo", "sharded_matmul_state", "parse_mesh",
    "collective_cost", "collective_curve", "draw_sharded_matmul", "update_sharded_matmul",
    "sharded_matmul_summary", "sharded_matmul_explorer", "ShardedMatmulExplorer",
    "LAYOUTS", "CUSTOM", "MESSAGE_RANGE", "TIME_RANGE", "KINDS", "MESH_AXES", "DTYPES",
]

_DEFAULT_LAYOUT = _live.DEFAULT_LAYOUT
_KIND_COLOURS = _live.KIND_COLOURS
_COMPUTE_COLOUR = _live.COMPUTE_COLOUR
_BAR_ROWS = _live.BAR_ROWS
#: Colours of the latency and bandwidth guides, and of the crossover and its labels.
_GUIDE, _CROSSOVER = _live.GUIDE_COLOUR, _live.CROSSOVER_COLOUR


# --------------------------------------------------------------------------- drawing

def _fixed_ticks(axis, ticks: Sequence[Sequence]) -> None:
    """Major ticks exactly at ``ticks`` ([[value, text], ...], the live chart's), no minor."""
    axis.set_major_locator(FixedLocator([value for value, _ in ticks]))
    axis.set_major_formatter(FixedFormatter([text for _, text in ticks]))
    axis.set_minor_locator(NullLocator())


def draw_sharded_matmul(axes: Sequence, state: ShardedMatmulState) -> dict[str, object]:
    """Draw ``state`` on two axes.

    Left, log-log: the time of each collective kind of the plan on the plot axes (or an
    AllGather) against message size V (bytes, the array the group holds together), from
    :func:`collective_curve`; for the first kind its latency floor (dashed), its bandwidth
    term (dotted) and the crossover V* where the two are equal (a vertical); the plan's
    collectives on those axes as markers at their own V; and the compute time as a horizontal
    line. Right: a bar per step on a log time axis: the compute, then each collective. Every
    number is :func:`~scalebook.live.sharded_matmul.sharded_matmul_series`'s, as on the
    book's static page.

    Clears the axes first; both have fixed ranges (:data:`MESSAGE_RANGE`,
    :data:`TIME_RANGE`). Returns the artists by name: ``curve/<kind>``, ``marker/<kind>``,
    ``latency``, ``bandwidth``, ``crossover``, ``compute`` (``Line2D``), ``latency_label``,
    ``bandwidth_label``, ``title``, ``bars_title`` (``Text``), ``legend``, ``bars``
    (``BarContainer``) and ``bar_labels`` (list of ``Text``).
    """
    ax_curve, ax_bars = axes
    for ax in axes:
        ax.clear()
    ax_curve.set(xscale="log", yscale="log", xlim=MESSAGE_RANGE, ylim=TIME_RANGE,
                 xlabel="message size V (bytes the group holds together)",
                 ylabel="time (s)")
    _fixed_ticks(ax_curve.xaxis, _live.MESSAGE_TICKS)
    _fixed_ticks(ax_curve.yaxis, _live.TIME_TICKS)
    ax_curve.grid(True, which="major", alpha=0.3)
    rows = max(_BAR_ROWS, 1 + len(state.steps))
    ax_bars.set(xscale="log", xlim=TIME_RANGE, ylim=(rows - 0.4, -0.6), xlabel="time (s)")
    _fixed_ticks(ax_bars.xaxis, _live.TIME_TICKS)
    ax_bars.set_yticks([])
    ax_bars.grid(True, axis="x", which="major", alpha=0.3)
    artists: dict[str, object] = {"_rows": rows}
    for kind in KINDS:
        colour = _KIND_COLOURS[kind]
        (artists[f"curve/{kind}"],) = ax_curve.plot([], [], color=colour, lw=2)
        (artists[f"marker/{kind}"],) = ax_curve.plot([], [], color=colour, marker="o", ls="",
                                                     ms=9, mec="black", zorder=5)
    (artists["latency"],) = ax_curve.plot([], [], ls="--", color=_GUIDE, lw=1)
    (artists["bandwidth"],) = ax_curve.plot([], [], ls=":", color=_GUIDE, lw=1)
    (artists["crossover"],) = ax_curve.plot([], [], ls=":", color=_CROSSOVER, lw=1)
    (artists["compute"],) = ax_curve.plot([], [], color=_COMPUTE_COLOUR, lw=1.5, ls="-.")
    small = dict(fontsize=8, color=_CROSSOVER)
    artists["latency_label"] = ax_curve.text(1, 1, "", ha="right", va="bottom", **small)
    artists["bandwidth_label"] = ax_curve.text(1, 1, "", ha="left", va="bottom", **small)
    artists["title"] = ax_curve.text(0.0, 1.02, "", transform=ax_curve.transAxes, fontsize=9.5)
    artists["bars_title"] = ax_bars.text(0.0, 1.02, "", transform=ax_bars.transAxes,
                                         fontsize=9.5)
    artists["bars"], artists["bar_labels"], artists["legend"] = None, [], None
    update_sharded_matmul(axes, artists, state)
    return artists


def _xy(points: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """[[x, y], ...] as matplotlib's ([x, ...], [y, ...])."""
    return [p[0] for p in points], [p[1] for p in points]


def update_sharded_matmul(axes: Sequence, artists: dict, state: ShardedMatmulState
                          ) -> list | None:
    """Move :func:`draw_sharded_matmul`'s artists to ``state``; return every artist that
    depends on the state (what a blitting redraw paints), or None when the bar chart needs more
    rows than it has (a full redraw)."""
    ax_curve, ax_bars = axes
    if 1 + len(state.steps) > artists["_rows"]:
        return None
    series = sharded_matmul_series(state)  # the numbers the static site's chart draws too
    for kind in KINDS:
        artists[f"curve/{kind}"].set_data(*_xy(series["curves"].get(kind, [])))
        artists[f"marker/{kind}"].set_data(*_xy(series["markers"][kind]))
    lo, hi = MESSAGE_RANGE
    if series["latency"] is not None:
        latency, crossover = series["latency"], series["crossover"]
        artists["latency"].set_data([lo, hi], [latency] * 2)
        artists["bandwidth"].set_data(*_xy(series["bandwidth"]))
        artists["crossover"].set_data([crossover] * 2, TIME_RANGE)
        for name, (x, y, text, _align) in zip(("latency_label", "bandwidth_label"),
                                              series["labels"]):
            artists[name].set_position((x, y))
            artists[name].set_text(text)
    else:
        for name in ("latency", "bandwidth", "crossover"):
            artists[name].set_data([], [])
        for name in ("latency_label", "bandwidth_label"):
            artists[name].set_text("")
    artists["title"].set_text(series["title"])
    artists["compute"].set_data([lo, hi], [series["compute"]] * 2)

    labels = series["legend"]
    legend = artists.get("legend")
    if legend is None or [t.get_text() for t in legend.get_texts()] != labels:
        if legend is not None:
            legend.remove()
        handles = [artists[f"curve/{kind}"] for kind in KINDS if kind in series["curves"]]
        artists["legend"] = ax_curve.legend([*handles, artists["compute"]], labels,
                                            loc="upper left", fontsize=8)

    for artist in [*(artists["bars"] or []), *artists["bar_labels"]]:
        artist.remove()
    rows = series["bars"]
    floor = TIME_RANGE[0]
    bars = ax_bars.barh(range(len(rows)), [_live.bar_end(t) - floor for _, t, _, _ in rows],
                        left=floor, height=0.7, color=[c for _, _, c, _ in rows],
                        edgecolor="black", linewidth=0.5)
    artists["bars"] = bars
    artists["bar_labels"] = [
        ax_bars.annotate(text, (max(t, floor), i), xytext=(3, 0), textcoords="offset points",
                         va="center", fontsize=8)
        for i, (_, t, _, text) in enumerate(rows)]
    artists["bars_title"].set_text(series["bars_title"])
    return [*(artists[f"curve/{k}"] for k in KINDS), artists["latency"], artists["bandwidth"],
            artists["crossover"], artists["compute"], *(artists[f"marker/{k}"] for k in KINDS),
            artists["latency_label"], artists["bandwidth_label"], artists["legend"],
            artists["title"], *bars, *artists["bar_labels"], artists["bars_title"]]


# --------------------------------------------------------------------------- widget

class ShardedMatmulExplorer(Explorer):
    """The explorer's :class:`~scalebook.widgets.Explorer`: choosing a ``layout`` fills the
    mesh and sharding fields at once; editing one of them switches ``layout`` to "custom"."""

    _FIELDS = _live.FIELDS

    def link_controls(self, changed) -> None:
        """A layout fills the mesh and sharding fields; editing one picks the matching layout,
        or "custom" (:func:`scalebook.live.sharded_matmul.linked_controls`, as on the book's
        static page)."""
        name = next((n for n, control in self.controls.items() if control is changed), None)
        self.set_quietly(_live.linked_controls(self.values(), name))


def _text(description: str, value: str, width: str) -> widgets.Text:
    return widgets.Text(value=value, description=description, continuous_update=False,
                        style={"description_width": "initial"},
                        layout=widgets.Layout(width=width))


def sharded_matmul_explorer(chip: str = "TPU v5e", *, layout: str = _DEFAULT_LAYOUT,
                            mesh: str | None = None, lhs: str | None = None,
                            rhs: str | None = None, out: str | None = None,
                            B: float = 4096, D: float = 8192, F: float = 16384,
                            dtype: str = "bf16", wraparound: Wraparound = "auto",
                            axis: str = "auto", dpi: float = 100) -> ShardedMatmulExplorer:
    """An explorer of ``A[B, D] ·_D W[D, F]`` on a mesh.

    ``layout`` picks one of :data:`LAYOUTS` (mesh and shardings); ``mesh``, ``lhs``, ``rhs``,
    ``out`` override its fields. The default, data × tensor parallel on a 2 × 4 mesh of v5e,
    is communication-bound at D = 8,192 and compute-bound at D = 32,768 (its 4-chip axis is a
    line, as a v5e slice that small is built).

    Controls (``w.controls``): ``layout`` (a :data:`LAYOUTS` name or "custom"), ``chip``,
    ``dtype``, ``wraparound`` ("auto", the default: each axis as the chip's slices are built;
    True, rings; False, lines), ``mesh``, ``lhs``, ``rhs``, ``out``
    (text fields, applied on Enter), ``B``, ``D``, ``F`` (log2 sliders: 8–1,048,576,
    128–65,536, 128–131,072) and ``axis`` ("auto", X, Y, Z: the plot's mesh axis).
    ``w.state`` is a :class:`ShardedMatmulState`; ``w.artists`` are
    :func:`draw_sharded_matmul`'s. A rejected input leaves ``w.error`` (one line, shown under
    the fields) and keeps the last good state and picture. Raises ``ValueError`` when the
    initial inputs are rejected.
    """
    if layout not in LAYOUTS and layout != CUSTOM:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}, {CUSTOM}")
    fields = dict(zip(ShardedMatmulExplorer._FIELDS, LAYOUTS.get(layout, LAYOUTS[_DEFAULT_LAYOUT])))
    given = {"mesh": mesh, "lhs": lhs, "rhs": rhs, "out": out}
    fields.update({k: v for k, v in given.items() if v is not None})
    if layout != CUSTOM and tuple(fields.values()) != LAYOUTS[layout]:
        layout = next((n for n, v in LAYOUTS.items() if v == tuple(fields.values())), CUSTOM)
    dtype = canonical_dtype(dtype)
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not offered; choose one of {', '.join(DTYPES)}")
    if wraparound not in (True, False, "auto"):
        raise ValueError(f"wraparound must be True, False or 'auto', got {wraparound!r}")
    if axis not in ("auto", *MESH_AXES):
        raise ValueError(f"axis must be 'auto' or one of {', '.join(MESH_AXES)}, got {axis!r}")
    controls = {
        "layout": widgets.Dropdown(options=[*LAYOUTS, CUSTOM], value=layout,
                                   description="layout", layout=widgets.Layout(width="40%")),
        "chip": widgets.Dropdown(options=chip_names(), value=get_chip(chip).name,
                                 description="chip", layout=widgets.Layout(width="22%")),
        "dtype": widgets.Dropdown(options=DTYPES, value=dtype, description="dtype",
                                  layout=widgets.Layout(width="17%")),
        "wraparound": widgets.Dropdown(
            options=[("as built (the chip's slices)", "auto"), ("rings (wraparound)", True),
                     ("lines (no wraparound)", False)],
            value=wraparound, description="ICI axes", layout=widgets.Layout(width="21%")),
        "mesh": _text("mesh", fields["mesh"], "22%"),
        "lhs": _text("lhs", fields["lhs"], "26%"),
        "rhs": _text("rhs", fields["rhs"], "26%"),
        "out": _text("out", fields["out"], "26%"),
        "B": _log2_slider("B", B, 3, 20, 1),
        "D": _log2_slider("D", D, 7, 16, 1),
        "F": _log2_slider("F", F, 7, 17, 1),
        "axis": widgets.Dropdown(options=[("plot axis: auto", "auto"),
                                          *[(f"plot axis: {a}", a) for a in MESH_AXES]],
                                 value=axis, layout=widgets.Layout(width="18%")),
    }
    for name in ("B", "D", "F"):
        controls[name].layout.width = "27%"
    figure = _figure((10, 3.9), dpi, ncols=2)
    figure.axes[0].set_position([0.085, 0.13, 0.5, 0.78])  # the curve gets most of the width
    figure.axes[1].set_position([0.615, 0.13, 0.36, 0.78])
    return ShardedMatmulExplorer(
        controls, figure, sharded_matmul_state,
        lambda fig, state: draw_sharded_matmul(fig.axes, state), sharded_matmul_summary,
        layout_rows=[("layout", "chip", "dtype", "wraparound"), ("mesh", "lhs", "rhs", "out"),
                     ("B", "D", "F", "axis")],
        refresh=lambda fig, artists, state: update_sharded_matmul(fig.axes, artists, state),
        live="scalebook.live.sharded_matmul")

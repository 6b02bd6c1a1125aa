"""The roofline explorer's numbers: state, plot series, summary, and the live view.

Everything here is plain Python on top of :mod:`scalebook.roofline` (no ipywidgets, no
matplotlib, no NumPy arrays), so the same functions feed the Jupyter widget
(:func:`scalebook.widgets.roofline_explorer`, drawn with matplotlib) and the book's static
site (:func:`view`, drawn in the reader's browser by Chart.js).
"""

from __future__ import annotations

import html
import math
import numbers
from dataclasses import dataclass

from .. import roofline
from ..hardware import Chip, bytes_per_element, canonical_dtype, get_chip
from ..units import (format_bandwidth, format_bytes, format_count, format_flops,
                     format_integer, format_number, format_seconds)
from . import chart

__all__ = [
    "RooflinePoint", "RooflineState", "roofline_state", "utilisation", "roof_xy",
    "roofline_series", "roofline_summary", "view", "BATCHES", "BATCH_RANGE",
    "INTENSITY_RANGE", "FLOPS_RANGE", "COLOURS", "X_DTYPES", "W_DTYPES", "FIGURE_PX",
]

#: Colours of the first and second chip on a plot.
COLOURS = ("#1f5fa8", "#d9731a")

#: Fixed axes ranges of the roofline plot, so the picture does not jump as sliders move.
INTENSITY_RANGE = (0.25, 1.0e5)  # FLOPs/byte
FLOPS_RANGE = (1.0e11, 3.0e16)  # FLOPs/s
UTIL_RANGE = (0.0, 1.08)  # fraction of peak

#: Batch sizes of the utilisation panel: 1 to 65,536 tokens, 2^(k/6) for k = 0..96.
BATCH_RANGE = (1.0, 65536.0)
BATCHES: tuple[float, ...] = tuple(2.0 ** (k / 6) for k in range(97))

#: The dtypes the explorer offers for activations X and weights W.
X_DTYPES = ("bf16", "fp16", "fp8", "int8")
W_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")

#: Size of the Jupyter figure in pixels (10 x 3.9 inches at 100 dpi).
FIGURE_PX = (1000, 390)


def fmt_intensity(value: float) -> str:
    """FLOPs/byte for people: "243", "0.5", "∞"."""
    if math.isinf(value):
        return "∞"
    return format_integer(value) if value >= 10 else format_number(value, 2)


def _fmt_tokens(value: float) -> str:
    return "never (∞)" if math.isinf(value) else format_integer(value)


@dataclass(frozen=True)
class RooflinePoint:
    """Where one matmul sits on one chip's roofline.

    Attributes (SI): ``chip`` the chip (resolved once, by :func:`roofline_state`); ``compute_dtype`` whose peak applies; ``peak_flops``
    C (FLOPs/s); ``bandwidth`` W, HBM (bytes/s); ``critical_intensity`` C / W (FLOPs/byte);
    ``critical_batch`` tokens above which the matmul is compute-bound (∞ with per-example
    weights); ``attainable_flops`` min(C, I·W); ``t_math``, ``t_comms`` (s); ``bound``
    "compute" or "memory".
    """

    chip: Chip
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


def _size(name: str, value: object) -> int:
    """A size in elements, rounded to an integer; NumPy scalars count as numbers."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
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
        chip=chip,
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


def utilisation(state: RooflineState, point: RooflinePoint, batch: float) -> float:
    """Best-case fraction of peak, T_math / max(T_math, T_comms), of the state's matmul at
    batch size ``batch`` (same D, F, dtypes) on ``point``'s chip: min(1, I(B)·W / C)."""
    cost = roofline.matmul_cost(batch, state.D, state.F, x_dtype=state.x_dtype,
                                w_dtype=state.w_dtype, batched_weights=state.per_example)
    return min(1.0, float(cost.intensity) * point.bandwidth / point.peak_flops)


def roof_xy(point: RooflinePoint) -> list[list[float]]:
    """The roof min(C, I·W) as three vertices (I, FLOPs/s): left edge, the ridge at C / W,
    right edge of :data:`INTENSITY_RANGE`."""
    lo, hi = INTENSITY_RANGE
    xs = (lo, min(max(point.critical_intensity, lo), hi), hi)
    return [[x, min(point.peak_flops, x * point.bandwidth)] for x in xs]


def roofline_series(state: RooflineState) -> dict:
    """Every plotted number of the roofline explorer, per chip (main chip first):

    ``label`` (legend), ``colour``, ``roof`` (:func:`roof_xy`), ``ridge`` (C / W, FLOPs/byte),
    ``point`` ([I, min(C, I·W)]), ``util`` ([B, :func:`utilisation`] over :data:`BATCHES`),
    ``critical`` (the critical batch, None when no batch is enough) and ``now`` ([B,
    utilisation at this B]); plus ``intensity`` (this matmul's I) and the two panel titles.
    """
    chips = []
    for index, point in enumerate(state.points):
        critical = point.critical_batch
        chips.append({
            "chip": point.chip.name,
            "label": f"{point.chip.name} ({point.compute_dtype})",
            "colour": COLOURS[index % len(COLOURS)],
            "roof": roof_xy(point),
            "ridge": point.critical_intensity,
            "point": [state.intensity, point.attainable_flops],
            "util": [[b, utilisation(state, point, b)] for b in BATCHES],
            "critical": critical if math.isfinite(critical) else None,
            "now": [float(state.B), utilisation(state, point, float(state.B))],
        })
    main = state.main
    relation = ">" if main.t_math >= main.t_comms else "<"
    weights = "W[B, D, F]" if state.per_example else "W[D, F]"
    return {
        "chips": chips,
        "intensity": state.intensity,
        "title": (f"{main.chip.name}: T_math {format_seconds(main.t_math)} {relation} "
                  f"T_comms {format_seconds(main.t_comms)} → {main.bound}-bound"),
        "util_title": (f"X[B, D] {state.x_dtype} · {weights} {state.w_dtype}: "
                       f"B = {state.B:,}, D = {state.D:,}, F = {state.F:,}"),
    }


def roofline_summary(state: RooflineState) -> str:
    """An HTML table of the numbers behind the plot."""
    head = (f"<b>{format_count(state.flops, unit='FLOPs')}</b>, "
            f"<b>{format_bytes(state.nbytes, binary=False)}</b> moved, intensity "
            f"<b>{fmt_intensity(state.intensity)} FLOPs/byte</b>")
    rows = "".join(
        "<tr>" + "".join(f"<td>{cell}</td>" for cell in (
            html.escape(p.chip.name), f"{format_flops(p.peak_flops)} ({p.compute_dtype})",
            format_bandwidth(p.bandwidth), fmt_intensity(p.critical_intensity),
            _fmt_tokens(p.critical_batch), format_seconds(p.t_math), format_seconds(p.t_comms),
            f"{format_seconds(p.lower)} – {format_seconds(p.upper)}", f"<b>{p.bound}</b>",
        )) + "</tr>"
        for p in state.points)
    return (f"<div style='font-size:90%'>{head}<table style='border-collapse:collapse'>"
            "<tr><th>chip</th><th>peak C</th><th>HBM W</th><th>C/W (FLOPs/byte)</th>"
            "<th>critical B</th><th>T_math</th><th>T_comms</th><th>runtime bounds</th>"
            f"<th>bound by</th></tr>{rows}</table></div>")


def roofline_chart(series: dict) -> dict:
    """:func:`roofline_series` as a :mod:`~scalebook.live.chart` description: the roofline
    (left, log-log) and the utilisation against batch (right), as the Jupyter figure."""
    roof, util = [], []
    for c in series["chips"]:
        colour = c["colour"]
        roof += [chart.line(c["roof"], colour, label=c["label"]),
                 chart.line([[c["ridge"], FLOPS_RANGE[0]], [c["ridge"], FLOPS_RANGE[1]]],
                            colour, width=1, dash=[1, 3]),
                 chart.points([c["point"]], colour, size=9)]
        util += [chart.line(c["util"], colour)]
        if c["critical"] is not None:
            util.append(chart.line([[c["critical"], UTIL_RANGE[0]],
                                    [c["critical"], UTIL_RANGE[1]]], colour, width=1,
                                   dash=[1, 3]))
        util.append(chart.points([c["now"]], colour, size=8))
    intensity = series["intensity"]
    roof.insert(0, chart.line([[intensity, FLOPS_RANGE[0]], [intensity, FLOPS_RANGE[1]]],
                              "#4d4d4d99", width=1))
    return chart.chart([
        chart.panel(series["title"],
                    chart.axis("log", *INTENSITY_RANGE, "arithmetic intensity (FLOPs/byte)",
                               ticks=chart.decade_ticks(*INTENSITY_RANGE, format_count)),
                    chart.axis("log", *FLOPS_RANGE, "attainable FLOP/s",
                               ticks=chart.decade_ticks(*FLOPS_RANGE, format_flops)),
                    roof, legend="lower right"),
        chart.panel(series["util_title"],
                    chart.axis("log", *BATCH_RANGE, "batch B (tokens)",
                               ticks=chart.decade_ticks(*BATCH_RANGE, format_count)),
                    chart.axis("linear", *UTIL_RANGE, "best-case fraction of peak",
                               ticks=chart.linear_ticks(*UTIL_RANGE, 0.2)),
                    util),
    ], width=FIGURE_PX[0], height=FIGURE_PX[1])


def _lacks(chip: Chip, compute: str) -> str | None:
    """Why ``chip`` cannot multiply in ``compute`` ("no fp8 FLOP/s figure"), or None."""
    try:
        chip.flops(compute)
    except ValueError:
        return f"{chip.name} has no {compute} FLOP/s figure"
    return None


def disabled_options(state: RooflineState) -> dict:
    """The options that cannot combine with ``state``'s other choices, with the reason:
    ``{"chip": [[name, reason], ...], "compare": ..., "x_dtype": ..., "w_dtype": ...}``
    (the page disables them, so a reader never picks a V100 for a bf16 matmul)."""
    from ..hardware import chip_names

    compute = _compute_dtype(state.x_dtype, state.w_dtype)
    chips = [p.chip for p in state.points]
    out: dict[str, list[list[str]]] = {"chip": [], "compare": [], "x_dtype": [], "w_dtype": []}
    for name in chip_names():
        reason = _lacks(get_chip(name), compute)
        if reason is not None:
            out["chip"].append([name, reason])
            out["compare"].append([name, reason])
    for control, dtypes, pair in (("x_dtype", X_DTYPES, lambda d: (d, state.w_dtype)),
                                  ("w_dtype", W_DTYPES, lambda d: (state.x_dtype, d))):
        for dtype in dtypes:
            reasons = [r for c in chips if (r := _lacks(c, _compute_dtype(*pair(dtype))))]
            if reasons:
                out[control].append([dtype, reasons[0]])
    return out


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its control values (the Jupyter control names: ``chip``,
    ``compare``, ``x_dtype``, ``w_dtype``, ``per_example``, ``B``, ``D``, ``F``):
    ``{"summary_html": ..., "chart": ..., "disabled": ...}`` (see :mod:`scalebook.live`;
    ``disabled``: :func:`disabled_options`)."""
    state = roofline_state(**controls)
    return {"summary_html": roofline_summary(state),
            "chart": roofline_chart(roofline_series(state)), "disabled": disabled_options(state)}

"""The chip comparison's numbers: metrics, state, bar series, table, and the live view.

Plain Python on the hardware catalog, shared by the Jupyter widget
(:func:`scalebook.widgets.chip_comparison`) and the book's static site (:func:`view`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .. import roofline
from ..hardware import Chip, chip_names, get_chip
from ..units import format_bandwidth, format_bytes, format_flops
from . import chart
from .roofline import fmt_intensity

__all__ = [
    "Metric", "METRICS", "comparison_table", "table_markdown", "ComparisonState",
    "comparison_state", "comparison_series", "comparison_html", "get_metric", "view", "VENDOR_COLOURS",
    "RELATIVE_LOG_FLOOR", "FIGURE_PX", "DEFAULT_CHIPS",
]

#: Bar colours by vendor; other vendors are grey.
VENDOR_COLOURS = {"google": "#1f5fa8", "nvidia": "#5a9e2f", "amd": "#c0392b"}
OTHER_COLOUR = "#808080"

#: The chips compared when a reader has chosen none: a generation apart, three vendors.
DEFAULT_CHIPS: tuple[str, ...] = ("TPU v5e", "TPU v5p", "TPU7x", "H100", "B200", "MI355X")

#: Bar heights are relative to the largest value; a log axis shows three decades below it.
RELATIVE_LOG_FLOOR = 1e-3
LINEAR_RANGE = (0.0, 1.15)
LOG_RANGE = (RELATIVE_LOG_FLOOR, 2.5)

#: Size of the Jupyter figure in pixels (8 x 3.6 inches at 100 dpi).
FIGURE_PX = (800, 360)


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
                  lambda v: f"{fmt_intensity(v)} FLOPs/byte")


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


def get_metric(key: str) -> Metric:
    """The :data:`METRICS` entry ``key``; ``ValueError`` for an unknown key."""
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
    chosen = [get_metric(k) for k in metrics] if metrics is not None else list(METRICS)
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


def comparison_state(chips: Iterable[str | Chip] = DEFAULT_CHIPS,
                     metric: str = "flops:bf16", *, log: bool = False) -> ComparisonState:
    """Compare ``chips`` (at least one; catalog names or aliases) on ``metric`` (a
    :data:`METRICS` key). Raises ``ValueError`` for an unknown chip or metric, or no chip."""
    resolved = [get_chip(c) for c in chips]
    if not resolved:
        raise ValueError("choose at least one chip to compare")
    m = get_metric(metric)
    values = [float(m.value(c)) for c in resolved]
    largest = max((v for v in values if not math.isnan(v)), default=math.nan)
    header, rows = comparison_table(resolved)
    return ComparisonState(
        chips=tuple(c.name for c in resolved), vendors=tuple(c.vendor for c in resolved),
        metric=m.key, label=m.label, values=tuple(values),
        labels=tuple("n/a" if math.isnan(v) else m.text(v) for v in values),
        relative=tuple(0.0 if math.isnan(v) else v / largest for v in values),
        log=bool(log), header=header, rows=rows)


def comparison_series(state: ComparisonState) -> dict:
    """The bar chart's numbers: ``heights`` (relative to the largest value, floored at
    :data:`RELATIVE_LOG_FLOOR` on a log axis), ``colours`` (by vendor), ``texts`` (the value
    printed on each bar), ``names`` (chips), ``title`` and the fixed ``ylim``."""
    floor = RELATIVE_LOG_FLOOR if state.log else 0.0
    return {
        "heights": [max(h, floor) for h in state.relative],
        "colours": [VENDOR_COLOURS.get(v, OTHER_COLOUR) for v in state.vendors],
        "texts": list(state.labels),
        "names": list(state.chips),
        "title": state.label,
        "ylim": LOG_RANGE if state.log else LINEAR_RANGE,
        "note": (None if any(not math.isnan(v) for v in state.values) else
                 f"no chip chosen has a figure for {state.label}: add one that has"
                 + (f" ({', '.join(_having(state.metric)[:3])})" if _having(state.metric) else "")),
    }


def _having(metric: str) -> list[str]:
    """The catalog chips with a figure for ``metric``, in catalog order."""
    m = get_metric(metric)
    return [name for name in chip_names() if not math.isnan(m.value(get_chip(name)))]


def comparison_html(state: ComparisonState) -> str:
    """Every metric of the chosen chips as an HTML table: one column per chip."""
    cells = lambda row, tag: "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row)  # noqa: E731
    columns = list(zip(state.header, *state.rows))
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(col[0])}</th>"
                   f"{cells(col[1:], 'td')}</tr>" for col in columns[1:])
    return (f"<table style='font-size:90%;border-collapse:collapse'><tr><th></th>"
            f"{cells(columns[0][1:], 'th')}</tr>{body}</table>")


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _power_of_ten(value: float) -> str:
    """10^k as matplotlib labels a log axis: "10⁻³"."""
    return "10" + str(round(math.log10(value))).translate(_SUPERSCRIPT)


def comparison_chart(series: dict, log: bool) -> dict:
    """:func:`comparison_series` as a :mod:`~scalebook.live.chart` description."""
    lo, hi = series["ylim"]
    y = chart.axis("log" if log else "linear", lo, hi, "relative to the largest",
                   ticks=(chart.decade_ticks(lo, hi, _power_of_ten) if log
                          else chart.linear_ticks(lo, hi, 0.2)))
    return chart.chart([chart.panel(
        series["title"], chart.axis("category", label="", categories=series["names"]), y,
        [chart.bars(series["heights"], series["colours"], series["texts"])],
        note=series["note"])],
        width=FIGURE_PX[0], height=FIGURE_PX[1])


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its controls (``chips``, a list of catalog names;
    ``metric``, a :data:`METRICS` key; ``log``): summary table and bar chart."""
    state = comparison_state(**controls)
    return {"summary_html": comparison_html(state),
            "chart": comparison_chart(comparison_series(state), state.log)}

"""The chip comparison's Jupyter front end: :mod:`scalebook.live.comparison` with controls."""

from __future__ import annotations

from typing import Iterable

import ipywidgets as widgets

from ..hardware import chip_names, get_chip
from ..live.comparison import DEFAULT_CHIPS, METRICS, comparison_state, get_metric
from .explorer import Explorer

__all__ = ["chip_comparison"]


def chip_comparison(chips: Iterable[str] = DEFAULT_CHIPS,
                    metric: str = "flops:bf16", *, log: bool = False,
                    dpi: float = 100) -> Explorer:
    """Catalog chips side by side: a table of every figure and a bar chart of one metric.

    Controls: ``chips`` (multiple selection of catalog names), ``metric`` (a
    :data:`~scalebook.live.comparison.METRICS` key) and ``log`` (log-scale bars). ``w.state``
    is a :class:`~scalebook.live.comparison.ComparisonState`. Raises ``ValueError`` for an
    unknown chip or metric.
    """
    names = tuple(get_chip(c).name for c in chips)
    get_metric(metric)
    controls = {
        "chips": widgets.SelectMultiple(options=chip_names(), value=names, rows=6,
                                        description="chips"),
        "metric": widgets.Dropdown(options=[(m.label, m.key) for m in METRICS], value=metric,
                                   description="metric", layout=widgets.Layout(width="45%")),
        "log": widgets.Checkbox(value=bool(log), description="log scale"),
    }
    return Explorer("scalebook.live.comparison", controls, state=comparison_state, dpi=dpi,
                    layout_rows=[("chips", "metric", "log")])

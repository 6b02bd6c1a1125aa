"""The serving simulator: one server under Poisson traffic, its scheduler and its SLOs.

A reader picks a model, a chip and the chips per copy, the arrival rate and the mean prompt and
reply lengths (and how they spread), the scheduler (continuous or static batching, the batch
cap, chunked prefill's chunk, a paged or a reserved KV cache, a shared prefix and its hit rate,
speculative decoding's k, α and draft) and the SLOs. They see the TTFT and TPOT distributions
against the SLOs, throughput and goodput against the arrival rate, and the KV cache over the
trace, with a line saying what limits the server. Every step's time is the solver's
(:mod:`scalebook.service`, on :mod:`scalebook.inference`).

The front end here is the controls; the state, chart and summary are
:mod:`scalebook.live.service`'s, drawn by :class:`~scalebook.widgets.explorer.Explorer`.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ..live.service import (DEFAULTS, DRAFTS, KV_LAYOUTS, SERVICE_CHIPS, service_state)
from ..service.simulator import DISTRIBUTIONS, POLICIES
from ..training import PRESETS
from .explorer import Explorer

__all__ = ["service_simulator"]

_STYLE = {"description_width": "initial"}


def _sel(description: str, options: list, value: Any) -> widgets.SelectionSlider:
    opts = sorted(set(options) | {value})
    return widgets.SelectionSlider(options=opts, value=value, description=description,
                                   style=_STYLE, layout=widgets.Layout(width="32%"))


def service_simulator(**settings: Any) -> Explorer:
    """The serving simulator at :data:`scalebook.live.service.DEFAULTS`, with any of them
    changed by keyword (``service_simulator(rate=12.0, chunk_size=512)``).

    ``w.controls`` holds the controls by those names; ``w.state`` is a
    :class:`~scalebook.live.service.ServiceState`. Raises ``ValueError`` for bad settings.
    """
    c: dict[str, Any] = {**DEFAULTS, **settings}
    service_state(**c)    # refuse bad initial settings with the state's own message
    powers = [2 ** k for k in range(0, 16)]
    controls = {
        "model": widgets.Dropdown(options=list(PRESETS), value=c["model"], description="model"),
        "chip": widgets.Dropdown(options=SERVICE_CHIPS, value=c["chip"], description="chip"),
        "n_chips": _sel("chips per copy", [1, 2, 4, 8, 16, 32], c["n_chips"]),
        "rate": widgets.FloatLogSlider(value=float(c["rate"]), base=2, min=-3, max=7, step=0.25,
                                       description="arrivals λ (req/s)", style=_STYLE),
        "prompt_len": _sel("prompt (tokens)", powers[4:], c["prompt_len"]),
        "reply_len": _sel("reply (tokens)", powers[0:14], c["reply_len"]),
        "distribution": widgets.Dropdown(options=DISTRIBUTIONS, value=c["distribution"],
                                         description="lengths"),
        "policy": widgets.Dropdown(options=POLICIES, value=c["policy"], description="batching"),
        "max_batch": _sel("batch cap", powers[0:12], c["max_batch"]),
        "chunk_size": _sel("prefill chunk (0: off)", [0] + powers[6:14], c["chunk_size"]),
        "kv": widgets.Dropdown(options=KV_LAYOUTS, value=c["kv"], description="KV cache"),
        "shared_prefix": _sel("shared prefix", [0] + powers[6:14], c["shared_prefix"]),
        "prefix_hit_rate": widgets.FloatSlider(value=float(c["prefix_hit_rate"]), min=0.0,
                                               max=1.0, step=0.05, description="prefix hit rate",
                                               style=_STYLE),
        "spec_k": _sel("draft length k (0: off)", list(range(0, 9)), c["spec_k"]),
        "spec_alpha": widgets.FloatSlider(value=float(c["spec_alpha"]), min=0.0, max=1.0,
                                          step=0.05, description="acceptance α", style=_STYLE),
        "draft": widgets.Dropdown(options=DRAFTS, value=c["draft"], description="draft"),
        "ttft_slo": _sel("TTFT SLO (s)", [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], c["ttft_slo"]),
        "tpot_slo_ms": _sel("TPOT SLO (ms)", [10.0, 20.0, 30.0, 50.0, 100.0, 200.0],
                            c["tpot_slo_ms"]),
        "seed": widgets.IntText(value=int(c["seed"]), description="seed",
                                layout=widgets.Layout(width="16%")),
    }
    rows = [("model", "chip", "n_chips"), ("rate", "prompt_len", "reply_len", "distribution"),
            ("policy", "max_batch", "chunk_size", "kv"),
            ("shared_prefix", "prefix_hit_rate", "spec_k", "spec_alpha", "draft"),
            ("ttft_slo", "tpot_slo_ms", "seed")]
    return Explorer("scalebook.live.service", controls, layout_rows=rows, state=service_state,
                    dpi=100)

"""The serving simulator's numbers: state, chart and summary, for Jupyter and the browser.

One trace of :func:`scalebook.service.simulate` (a server, Poisson arrivals, a scheduler) at the
reader's settings, plus a sweep of shorter traces at rates around theirs for the throughput and
goodput curves. Plain Python (no NumPy), so :func:`view` runs in the page's Pyodide worker and
the Jupyter widget (:func:`scalebook.widgets.service.service_simulator`) draws the same chart.

Panels: the cumulative distributions of TTFT and TPOT with their p50 and p99 and the SLOs;
throughput and goodput against the arrival rate; the KV cache held (and the batch) over the
trace, against what fits.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ..inference import cost_per_million_tokens
from ..service import (SLO, Scheduler, Server, SimResult, Workload, simulate, step_model)
from ..service.simulator import DISTRIBUTIONS, POLICIES
from ..training import PRESETS
from ..units import format_bytes, format_seconds
from ..validation import positive, positive_int
from . import chart

__all__ = ["DEFAULTS", "SERVICE_CHIPS", "KV_LAYOUTS", "DRAFTS", "SWEEP_FACTORS",
           "SWEEP_DURATION", "DURATION", "ServiceState", "service_state", "service_chart",
           "service_summary", "view", "FIGURE_PX"]

#: Chips offered (GPUs and TPUs with a bf16 figure and room for the presets on some slice).
SERVICE_CHIPS: tuple[str, ...] = ("H100", "H200", "B200", "TPU v5e", "TPU v5p", "TPU v6e")
#: The cache layouts: paged blocks, or a reservation of the longest reply.
KV_LAYOUTS = ("paged", "contiguous")
#: Drafts for speculative decoding: a small model on the same chips, or heads on the target.
DRAFTS = ("LLaMA-3 8B", "heads (Medusa/EAGLE/MTP)")
#: The main trace's length (s) and the sweep's traces' (s), at these multiples of the rate.
DURATION = 60.0
SWEEP_DURATION = 15.0
SWEEP_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
#: The Jupyter figure in pixels.
FIGURE_PX = (1200, 380)

DEFAULTS: dict[str, object] = {
    "model": "LLaMA-3 70B", "chip": "H100", "n_chips": 8, "rate": 8.0, "prompt_len": 1024,
    "reply_len": 256, "distribution": "uniform", "policy": "continuous", "max_batch": 256,
    "chunk_size": 0, "kv": "paged", "shared_prefix": 0, "prefix_hit_rate": 0.0, "spec_k": 0,
    "spec_alpha": 0.8, "draft": "LLaMA-3 8B", "ttft_slo": 1.0, "tpot_slo_ms": 50.0,
    "seed": 0,
}

TTFT_COLOUR, TPOT_COLOUR, GOOD_COLOUR = "#1f5fa8", "#d9731a", "#2a8a3a"
GREY, RED = "#555555", "#b00020"


@dataclass(frozen=True)
class ServiceState:
    """The simulated trace and the sweep: ``result`` (a :class:`SimResult`), ``sweep``
    (``(rate, throughput, goodput)`` for each rate of :data:`SWEEP_FACTORS`, requests/s), and
    the price of a million output tokens at the trace's rate."""

    result: SimResult
    sweep: tuple[tuple[float, float, float], ...]
    cost_per_million: float


def _choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _count(value: object, what: str, allow_zero: bool = False) -> int:
    if allow_zero and value in (0, 0.0):
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return positive_int(value, what)


def service_state(**controls: object) -> ServiceState:
    """Simulate the server at ``controls`` (the names of :data:`DEFAULTS`, missing ones from
    it). Raises ``ValueError`` with a reader's message for bad values."""
    unknown = set(controls) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown control(s): {', '.join(sorted(unknown))}")
    c = {**DEFAULTS, **controls}
    model = _choice(c["model"], tuple(PRESETS), "model")
    chip = _choice(c["chip"], SERVICE_CHIPS, "chip")
    draft = _choice(c["draft"], DRAFTS, "draft")
    server = Server(model=model, chip=chip, n_chips=_count(c["n_chips"], "chips per copy"))
    rate = float(positive(c["rate"], "arrival rate"))
    if rate > 1000:
        raise ValueError("arrival rate: at most 1,000 requests/s in the browser's simulator")
    prompt, reply = _count(c["prompt_len"], "prompt"), _count(c["reply_len"], "reply")
    if prompt > 32768 or reply > 8192:
        raise ValueError("prompt at most 32,768 and reply at most 8,192 tokens here")
    workload = Workload(arrival_rate=rate, prompt_len=prompt, reply_len=reply,
                        distribution=_choice(c["distribution"], DISTRIBUTIONS, "distribution"),
                        shared_prefix=min(_count(c["shared_prefix"], "shared prefix", True),
                                          prompt - 1),
                        prefix_hit_rate=float(positive(c["prefix_hit_rate"], "hit rate",
                                                       allow_zero=True)))
    scheduler = Scheduler(policy=_choice(c["policy"], POLICIES, "policy"),
                          max_batch=_count(c["max_batch"], "batch cap"),
                          chunk_size=_count(c["chunk_size"], "chunk", True),
                          paged=_choice(c["kv"], KV_LAYOUTS, "KV cache") == "paged",
                          spec_k=_count(c["spec_k"], "draft length k", True),
                          spec_alpha=float(positive(c["spec_alpha"], "alpha", allow_zero=True)),
                          draft_model=None if draft.startswith("heads") else draft)
    slo = SLO(ttft=float(positive(c["ttft_slo"], "TTFT SLO")),
              tpot=float(positive(c["tpot_slo_ms"], "TPOT SLO")) / 1e3)
    seed = _count(c["seed"], "seed", True)
    model_steps = step_model(server)
    result = simulate(server, workload, scheduler, slo=slo, duration=DURATION, seed=seed,
                      model=model_steps)
    sweep = []
    for f in SWEEP_FACTORS:
        w = Workload(arrival_rate=rate * f, prompt_len=prompt, reply_len=reply,
                     distribution=workload.distribution, shared_prefix=workload.shared_prefix,
                     prefix_hit_rate=workload.prefix_hit_rate)
        r = result if f == 1.0 else simulate(server, w, scheduler, slo=slo,
                                             duration=SWEEP_DURATION, seed=seed,
                                             model=model_steps)
        sweep.append((rate * f, r.throughput, r.goodput))
    cost = (cost_per_million_tokens(result.tokens_per_s, n_chips=server.n_chips,
                                    price_per_chip_hour=server.price_per_chip_hour)
            if result.tokens_per_s > 0 else math.inf)
    return ServiceState(result=result, sweep=tuple(sweep), cost_per_million=cost)


def _cdf(values: list[float], lo: float) -> list[list[float]]:
    """The empirical CDF as at most ~200 points, values clipped below at ``lo``."""
    xs = sorted(max(v, lo) for v in values)
    n = len(xs)
    if not n:
        return []
    stride = max(1, n // 200)
    pts = [[xs[i], (i + 1) / n] for i in range(0, n, stride)]
    if pts[-1][0] != xs[-1] or pts[-1][1] != 1.0:
        pts.append([xs[-1], 1.0])
    return pts


def service_chart(state: ServiceState) -> dict:
    """Three panels: TTFT and TPOT distributions, throughput and goodput against λ, and the
    KV cache over the trace (see the module docstring)."""
    r = state.result
    slo = r.slo
    lo_t, hi_t = 1e-3, 1e2
    ttfts = [q.ttft for q in r.requests]
    tpots = [q.tpot for q in r.requests if q.reply_len > 1]
    series: list[dict] = [
        chart.line(_cdf(ttfts, lo_t), TTFT_COLOUR, label="TTFT"),
        chart.line(_cdf(tpots, lo_t), TPOT_COLOUR, label="TPOT"),
        chart.line([[slo.ttft, 0.0], [slo.ttft, 1.0]], TTFT_COLOUR, width=1, dash=[4, 2]),
        chart.line([[slo.tpot, 0.0], [slo.tpot, 1.0]], TPOT_COLOUR, width=1, dash=[4, 2]),
    ]
    for values, colour in ((ttfts, TTFT_COLOUR), (tpots, TPOT_COLOUR)):
        if values:
            series.append(chart.points([[min(max(r.ttft(50) if colour == TTFT_COLOUR
                                                  else r.tpot(50), lo_t), hi_t), 0.5],
                                        [min(max(r.ttft(99) if colour == TTFT_COLOUR
                                                 else r.tpot(99), lo_t), hi_t), 0.99]],
                                       colour, size=7))
    left = chart.panel(
        "latency of the requests (dashed: SLOs; dots: p50, p99)",
        chart.axis("log", lo_t, hi_t, "seconds",
                   ticks=chart.decade_ticks(lo_t, hi_t, lambda v: format_seconds(v, 1))),
        chart.axis("linear", 0.0, 1.0, "share of requests", ticks=chart.linear_ticks(0, 1, 0.2)),
        series, legend="lower right", width=1.0)
    rates = [s[0] for s in state.sweep]
    top = max([max(s[1], s[2]) for s in state.sweep] + [rates[-1]]) * 1.1
    mid = chart.panel(
        "requests per second against the arrival rate",
        chart.axis("linear", 0.0, rates[-1] * 1.05, "arrival rate λ (requests/s)"),
        chart.axis("linear", 0.0, top, "requests/s"),
        [chart.line([[0, 0], [rates[-1], rates[-1]]], GREY, width=1, dash=[1, 3],
                    label="= arrivals"),
         chart.line([[s[0], s[1]] for s in state.sweep], TTFT_COLOUR, label="throughput"),
         chart.line([[s[0], s[2]] for s in state.sweep], GOOD_COLOUR, label="goodput (meets SLO)"),
         chart.points([[r.workload.arrival_rate, r.goodput]], GOOD_COLOUR)],
        legend="upper left", width=1.0)
    gb = 1e9
    cap = r.kv_capacity / gb
    times = [[s.time, s.kv_bytes / gb] for s in r.samples] or [[0.0, 0.0]]
    batch = [[s.time, float(s.batch)] for s in r.samples] or [[0.0, 0.0]]
    b_top = max(max(p[1] for p in batch) * 1.2, 1.0)
    right = chart.panel(
        "KV cache over the trace",
        chart.axis("linear", 0.0, r.end, "time (s)"),
        chart.axis("linear", 0.0, cap * 1.15, "KV cache (GB)"),
        [chart.line(times, TPOT_COLOUR, label="KV cache held"),
         chart.line([[0.0, cap], [r.end, cap]], RED, width=1, dash=[4, 2], label="fits"),
         chart.line(batch, GREY, width=1, label="batch (right axis)", y2=True)],
        legend="lower right", y2=chart.axis("linear", 0.0, b_top, "sequences"), width=1.0)
    srv = r.server
    name = srv.model if isinstance(srv.model, str) else srv.config.name
    heading = (f"{name} on {srv.n_chips} × {srv.chip}: "
               f"{r.arrived:,} requests in {DURATION:g} s, {r.scheduler.policy} batching; "
               f"limit: {r.binding}")
    return chart.chart([left, mid, right], width=FIGURE_PX[0], height=FIGURE_PX[1],
                       texts=[chart.text(heading)])


def service_summary(state: ServiceState) -> str:
    """The numbers under the figure, as HTML."""
    r = state.result
    done = len(r.requests)

    def t(x: float) -> str:
        return format_seconds(x) if math.isfinite(x) else "—"

    rows = [
        ("requests", f"{r.arrived:,} arrived, {done:,} finished, {r.unfinished:,} unfinished; "
                     f"{r.preempted:,} preempted"),
        ("TTFT", f"p50 {t(r.ttft(50))}, p99 {t(r.ttft(99))} (SLO {format_seconds(r.slo.ttft)})"),
        ("TPOT", f"p50 {t(r.tpot(50))}, p99 {t(r.tpot(99))} (SLO {format_seconds(r.slo.tpot)})"),
        ("throughput", f"{r.throughput:.2f} requests/s, {r.tokens_per_s:,.0f} output tokens/s"),
        ("goodput", f"{r.goodput:.2f} requests/s meet both SLOs ({100 * r.attainment:.0f}%)"),
        ("KV cache", f"peak {format_bytes(max((s.kv_bytes for s in r.samples), default=0), binary=False)} "
                     f"of {format_bytes(r.kv_capacity, binary=False)} that fit"),
        ("cost", f"{state.cost_per_million:.2f} per million output tokens at "
                 f"{r.server.price_per_chip_hour:g} per chip-hour"
                 if math.isfinite(state.cost_per_million) else "—"),
        ("what binds", html.escape(r.binding)),
    ]
    body = "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>{v}</td></tr>" for k, v in rows)
    return f"<table class='sb-summary'>{body}</table>"


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its controls (:data:`DEFAULTS`' names): summary and chart."""
    state = service_state(**controls)
    return {"summary_html": service_summary(state), "chart": service_chart(state)}

"""The MoE explorer's numbers: state, chart, summary, and the live view.

One mixture-of-experts layer stack, expert-parallel over ``ep`` chips, each holding
``tokens_per_chip`` tokens of a step: from :mod:`scalebook.moe` (:func:`moe_layer_roofline`,
:func:`moe_all_to_all`, :func:`moe_critical_batch`, :func:`expected_dropped_fraction`,
:func:`expert_memory_per_chip`). Plain Python (no ipywidgets, matplotlib or NumPy), so the same
functions feed the Jupyter widget (:func:`scalebook.widgets.moe.moe_explorer`, which
draws :func:`moe_chart` with matplotlib) and the book's static site (:func:`view`, drawn in
the reader's browser).

Assumptions, said once: uniform routing (the expected loads), bf16 weights and activations,
one step = forward pass of the routed experts of every MoE layer; the dispatch and combine are
fixed-shape buffers of ``c·k·t/E`` slots per expert (``c`` = capacity factor: ``c`` times the
bytes of ragged sends, which the summary shows beside them), not overlapped with the experts; the dense comparison is an MLP of the same active width ``k·F_e`` on the
same chips, which needs no AllToAll.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import TypedDict

from ..hardware import Chip, chip_names, get_chip
from ..moe import (
    MoEConfig,
    dense_critical_batch,
    expected_dropped_fraction,
    expert_capacity,
    expert_memory_per_chip,
    moe_all_to_all,
    moe_critical_batch,
    moe_layer_roofline,
    tpu_ep_axes,
)
from ..transformer import TransformerConfig
from ..units import format_bytes, format_count, format_integer, format_number, format_seconds
from ..validation import positive, positive_int
from . import chart

__all__ = ["MoEState", "moe_state", "moe_summary", "moe_chart", "view", "MOE_CHIPS",
           "DEFAULTS", "TOKEN_RANGE"]

#: Chips offered: those with a bf16 figure.
MOE_CHIPS: tuple[str, ...] = tuple(n for n in chip_names() if "bf16" in get_chip(n).dtypes)

class MoEControls(TypedDict):
    """The explorer's controls by name: :func:`moe_state`'s arguments."""

    chip: str
    n_experts: int
    top_k: int
    d_model: int
    d_expert: int
    n_layers: int
    capacity_factor: float
    ep: int
    tokens_per_chip: float


#: The explorer's default state: DeepSeek-V3's MoE layers on 64 H100s (DeepSeek-AI 2024).
DEFAULTS = MoEControls(chip="H100", n_experts=256, top_k=8, d_model=7168, d_expert=2048,
                       n_layers=58, capacity_factor=1.25, ep=64, tokens_per_chip=4096)

#: Tokens per chip on the x axis of the plot.
TOKEN_RANGE = (16.0, 262144.0)
MOE_COLOUR, DENSE_COLOUR, COMM_COLOUR, MARK_COLOUR = "#b2182b", "#1f5fa8", "#d9731a", "#333333"
FIGURE_PX = (1000, 380)


@dataclass(frozen=True)
class MoEState:
    """Everything the explorer shows for one set of controls (seconds, bytes, tokens)."""

    chip: Chip
    cfg: MoEConfig
    ep: int
    tokens_per_chip: float
    capacity_factor: float
    memory: float              # routed expert weights per chip, all layers, bf16
    hbm: float
    expert_time: float         # routed experts, all layers, forward, per chip
    a2a_time: float            # dispatch + combine, all layers, forward, padded to capacity c
    a2a_ragged_time: float     # the same with ragged sends (only the routed copies travel)
    capacity: int
    dropped: float             # expected fraction of token-expert assignments
    critical: float            # tokens per step of the EP group where the experts compute
    critical_per_chip: float
    dense_critical: float
    bound: str


def _config(n_experts: int, top_k: int, d_model: int, d_expert: int, n_layers: int
            ) -> MoEConfig:
    base = TransformerConfig(d_model=d_model, n_layers=n_layers, n_heads=1, d_head=128,
                             d_ff=d_expert, vocab_size=1, name="MoE layer stack")
    return MoEConfig(base=base, n_experts=n_experts, top_k=top_k, d_expert=d_expert)


def _a2a(chip: Chip, cfg: MoEConfig, ep: int, tokens: float, c: float | None) -> float:
    """Dispatch + combine of every layer; ``c`` None: ragged sends."""
    if ep == 1:
        return 0.0
    axes = [ep] if chip.is_gpu else tpu_ep_axes(chip, ep)
    cost = moe_all_to_all(tokens, cfg.base.d_model, cfg.top_k, axes, chip, capacity_factor=c)
    return cfg.base.n_layers * cost.forward


def moe_state(chip: str = DEFAULTS["chip"], n_experts: int = DEFAULTS["n_experts"],
              top_k: int = DEFAULTS["top_k"], d_model: int = DEFAULTS["d_model"],
              d_expert: int = DEFAULTS["d_expert"], n_layers: int = DEFAULTS["n_layers"],
              capacity_factor: float = DEFAULTS["capacity_factor"], ep: int = DEFAULTS["ep"],
              tokens_per_chip: float = DEFAULTS["tokens_per_chip"]) -> MoEState:
    """The explorer's state; ``ValueError`` with a reader-facing message for bad controls."""
    chip_obj = get_chip(chip)
    if chip_obj.name not in MOE_CHIPS:
        raise ValueError(f"{chip_obj.name} has no bf16 figure; choose one of "
                         f"{', '.join(MOE_CHIPS)}")
    E, k = positive_int(n_experts, "experts E"), positive_int(top_k, "top-k")
    if k > E:
        raise ValueError(f"top-k ({k}) cannot exceed the experts ({E})")
    ep = positive_int(ep, "expert-parallel degree")
    if E % ep:
        raise ValueError(f"the expert-parallel degree ({ep}) must divide the experts ({E})")
    cfg = _config(E, k, positive_int(d_model, "d_model"), positive_int(d_expert, "expert width"),
                  positive_int(n_layers, "MoE layers"))
    c = positive(capacity_factor, "capacity factor")
    t = positive(tokens_per_chip, "tokens per chip")
    if t < 1:
        raise ValueError("tokens per chip must be at least 1")
    roof = moe_layer_roofline(cfg, chip_obj, tokens=t * ep, n_chips=ep)
    L = cfg.base.n_layers
    expert_time = L * roof.time
    critical = moe_critical_batch(chip_obj, E, k)
    group_tokens = max(1, round(t))
    return MoEState(
        chip=chip_obj, cfg=cfg, ep=ep, tokens_per_chip=t, capacity_factor=c,
        memory=expert_memory_per_chip(cfg, ep=ep), hbm=chip_obj.hbm_bytes,
        expert_time=expert_time, a2a_time=_a2a(chip_obj, cfg, ep, t, c),
        a2a_ragged_time=_a2a(chip_obj, cfg, ep, t, None),
        capacity=expert_capacity(group_tokens, E, k, c),
        dropped=expected_dropped_fraction(group_tokens, E, k, c),
        critical=critical, critical_per_chip=critical / ep,
        dense_critical=dense_critical_batch(chip_obj), bound=roof.bound)


def _curve_tokens() -> list[float]:
    """Tokens per chip of the curves: eight points per octave over :data:`TOKEN_RANGE`."""
    lo, hi = (math.log2(v) for v in TOKEN_RANGE)
    n = int(round((hi - lo) * 8))
    return [2 ** (lo + i / 8) for i in range(n + 1)]


def moe_chart(state: MoEState) -> dict:
    """Two panels: step time (ms, forward, all MoE layers, one chip) against tokens per chip
    for the MoE experts, the MoE experts plus their AllToAlls and a dense MLP of equal active
    width, with this state marked and the critical batch per chip as a dotted line; and the
    step at this state split into expert time and AllToAll, bars in ms."""
    cfg, chip, ep = state.cfg, state.chip, state.ep
    dense = MoEConfig(base=cfg.base, n_experts=cfg.top_k, top_k=cfg.top_k,
                      d_expert=cfg.d_expert)
    L = cfg.base.n_layers
    xs = _curve_tokens()
    moe_pts, with_comm, dense_pts = [], [], []
    for t in xs:
        e = L * moe_layer_roofline(cfg, chip, tokens=t * ep, n_chips=ep).time
        d = L * moe_layer_roofline(dense, chip, tokens=t * ep, n_chips=ep).time
        moe_pts.append([t, e * 1e3])
        with_comm.append([t, (e + _a2a(chip, cfg, ep, t, state.capacity_factor)) * 1e3])
        dense_pts.append([t, d * 1e3])
    ys = [p[1] for p in moe_pts + with_comm + dense_pts]
    lo = 10 ** math.floor(math.log10(min(ys)))
    hi = 10 ** math.ceil(math.log10(max(ys)))
    now_total = (state.expert_time + state.a2a_time) * 1e3
    series = [
        chart.line(moe_pts, MOE_COLOUR, label=f"MoE experts (E = {cfg.n_experts}, k = {cfg.top_k})"),
        chart.line(with_comm, COMM_COLOUR, dash=[4, 2], label="MoE experts + AllToAlls"),
        chart.line(dense_pts, DENSE_COLOUR, label=f"dense MLP, width k·F_e = {cfg.top_k * cfg.d_expert:,}"),
        chart.points([[state.tokens_per_chip, now_total]], COMM_COLOUR),
        chart.points([[state.tokens_per_chip, state.expert_time * 1e3]], MOE_COLOUR),
    ]
    if TOKEN_RANGE[0] <= state.critical_per_chip <= TOKEN_RANGE[1]:
        series.append(chart.line([[state.critical_per_chip, lo], [state.critical_per_chip, hi]],
                                 MARK_COLOUR, width=1, dash=[1, 3]))
        series.append(chart.annotations([[state.critical_per_chip * 1.1, lo * 1.5]],
                                        [f"B*/EP ≈ {format_integer(state.critical_per_chip)}"],
                                        MARK_COLOUR, size=10))
    left = chart.panel(
        f"one step, forward, {L} MoE layers, per chip (EP = {ep})",
        chart.axis("log", *TOKEN_RANGE, "tokens per chip",
                   ticks=chart.decade_ticks(*TOKEN_RANGE, format_count)),
        chart.axis("log", lo, hi, "time (ms)",
                   ticks=chart.decade_ticks(lo, hi, format_number)),
        series, legend="upper left", width=1.5)
    bars_max = max(state.expert_time, state.a2a_time) * 1e3 * 1.3 or 1.0
    right = chart.panel(
        f"at {format_count(state.tokens_per_chip)} tokens per chip",
        chart.axis("category", label="", categories=["experts", "AllToAlls"]),
        chart.axis("linear", 0.0, bars_max, "ms"),
        [chart.bars([state.expert_time * 1e3, state.a2a_time * 1e3], [MOE_COLOUR, COMM_COLOUR],
                    [format_seconds(state.expert_time), format_seconds(state.a2a_time)])],
        width=0.7)
    heading = (f"{chip.name} × {ep}, E = {cfg.n_experts}, k = {cfg.top_k}, "
               f"D = {cfg.base.d_model:,}, F_e = {cfg.d_expert:,}, c = {state.capacity_factor:g}")
    return chart.chart([left, right], width=FIGURE_PX[0], height=FIGURE_PX[1],
                       texts=[chart.text(heading)])


def moe_summary(state: MoEState) -> str:
    """The numbers under the figure, as HTML."""
    fits = state.memory <= state.hbm
    mem = (f"{format_bytes(state.memory, binary=False)} of routed expert weights per chip "
           f"(bf16), {100 * state.memory / state.hbm:.0f}% of its "
           f"{format_bytes(state.hbm, binary=False)} HBM")
    if not fits:
        mem = f"<span style='color:#b00020'>{mem}: does not fit</span>"
    share = state.a2a_time / (state.a2a_time + state.expert_time)
    rows = [
        ("memory", mem),
        ("experts", f"{format_seconds(state.expert_time)} per forward step, "
                    f"{state.bound}-bound"),
        ("AllToAlls", f"{format_seconds(state.a2a_time)} (dispatch + combine, every layer, "
                      f"buffers padded to c = {state.capacity_factor:g}): "
                      f"{100 * share:.0f}% of the step if not overlapped; ragged sends "
                      f"(only the routed copies): {format_seconds(state.a2a_ragged_time)}"),
        ("capacity", f"{format_integer(state.capacity)} slots per expert per chip; "
                     "a uniform router drops "
                     f"{100 * state.dropped:.2f}% of the assignments"),
        ("critical batch", f"{format_integer(state.critical)} tokens per step of the EP group "
                           f"({format_integer(state.critical_per_chip)} per chip); dense: "
                           f"{format_integer(state.dense_critical)}"),
    ]
    body = "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>{v}</td></tr>" for k, v in rows)
    return f"<table class='sb-summary'>{body}</table>"


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its controls (the Jupyter names: ``chip``, ``n_experts``,
    ``top_k``, ``d_model``, ``d_expert``, ``n_layers``, ``capacity_factor``, ``ep``,
    ``tokens_per_chip``): summary and chart."""
    state = moe_state(**controls)
    return {"summary_html": moe_summary(state), "chart": moe_chart(state)}

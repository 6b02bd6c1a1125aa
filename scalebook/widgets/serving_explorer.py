"""A serving explorer: what one copy of a model costs to serve on a slice of chips.

A reader picks a model (LLaMA-3 8B, 70B or 405B), a chip and how many of them serve one copy
(tensor parallelism), the prompt and reply lengths, the batch of sequences decoded together,
and how the weights, the KV cache and the matmuls are stored or run (bf16, int8, fp8). They see

- the HBM of one chip, stacked: its share of the weights, its share of the batch's KV cache,
  what is left, against the HBM line; a red flag when the cache does not fit, with the largest
  batch that does (:func:`scalebook.inference.max_batch`);
- time per output token and tokens/s per chip against the batch, with the critical batch where
  decode turns compute-bound (:func:`scalebook.inference.decode_critical_batch`, when finite)
  and the batches whose cache does not fit shaded;
- the latency–throughput curve those two make, with the chosen batch on it;
- a summary naming the regime (memory- or compute-bound), the time per token, the tokens/s per
  chip and the share of each step spent in tensor-parallel AllReduces.

Every number comes from :mod:`scalebook.inference` (:func:`decode_step`, :func:`prefill`,
:func:`latency_throughput`, :func:`max_batch`, :func:`decode_critical_batch`,
:func:`weight_bytes`, :func:`kv_bytes_per_token`), which follows the accounting of Austin et
al., 2025, "How to Scale Your Model", part 7.

The decode step is costed at the full context, ``prompt_len + gen_len`` cached tokens: the last
and slowest step of a reply, and the cache every sequence holds at its end, which is what must
fit in HBM.

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`serving_state` (pure) -> :class:`ServingState`;
2. **drawing**: :func:`draw_serving` draws a state on the four axes of :func:`serving_figure`
   and returns its artists by name; :func:`update_serving` moves them to another state (it
   asks for a full redraw when the time or throughput axes need other decades);
3. **widget**: :func:`serving_explorer` -> :class:`ServingExplorer` (an :class:`Explorer`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Sequence

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..hardware import canonical_dtype, chip_names, get_chip
from ..inference import (
    StepCost,
    decode_critical_batch,
    kv_bytes_per_token,
    kv_replication,
    latency_throughput,
    max_batch,
    prefill,
    weight_bytes,
)
from ..training import PRESETS
from ..transformer import TransformerConfig
from ..units import format_bytes, format_count, format_seconds
from ..validation import positive_int
from . import Explorer, _log_ticks

__all__ = [
    "ServingState", "serving_state", "serving_figure", "draw_serving", "update_serving",
    "serving_summary", "serving_explorer", "ServingExplorer", "SERVING_CHIPS",
    "WEIGHT_DTYPES", "CACHE_DTYPES", "COMPUTE_DTYPES", "MEMORY_KINDS", "BATCH_RANGE",
    "curve_batches", "memory_fractions", "not_fit_message",
]

#: Chips offered: those with a bf16 figure (activations, and so attention, run in bf16).
SERVING_CHIPS: tuple[str, ...] = tuple(n for n in chip_names() if "bf16" in get_chip(n).dtypes)

#: Storage dtypes offered for the weights and for the KV cache, and the matmuls' dtypes.
WEIGHT_DTYPES: tuple[str, ...] = ("bf16", "int8", "fp8")
CACHE_DTYPES: tuple[str, ...] = ("bf16", "int8", "fp8")
COMPUTE_DTYPES: tuple[str, ...] = ("bf16", "int8", "fp8")

#: HBM of one chip by use, stacked bottom to top, with their colours.
MEMORY_KINDS: tuple[tuple[str, str], ...] = (
    ("weights", "#1f5fa8"), ("KV cache", "#d9731a"), ("free", "#cfcfcf"))

#: Batches (sequences) of the curves: the x range of the middle panel.
BATCH_RANGE = (1.0, 4096.0)
#: The memory axis runs to this multiple of one chip's HBM.
MEMORY_AXIS_HBM = 2.0

_TIME_COLOUR, _RATE_COLOUR, _RED = "#1f5fa8", "#d9731a", "#b00020"


def curve_batches(batch: int | None = None) -> tuple[int, ...]:
    """Batch sizes of the latency–throughput curve: about four per octave from 1 to 4,096
    (``round(2^(k/4))``, duplicates dropped), plus ``batch`` so the curve passes through it."""
    grid = {int(round(2.0 ** (k / 4.0))) for k in range(49)}
    if batch is not None:
        grid.add(int(batch))
    return tuple(sorted(grid))


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class ServingState:
    """Everything the serving explorer shows, in SI units.

    Attributes:
        preset, config: the model.
        chip_name, n_chips: the slice serving one copy of the model (tensor parallel);
            ``hbm_bytes`` is one chip's HBM (bytes).
        prompt_len, gen_len: tokens per sequence read and written; ``context_len`` is their sum,
            the cache a sequence holds at the end of its reply (tokens).
        batch: sequences decoded together, B.
        weight_dtype, cache_dtype, compute_dtype: how weights and cache are stored, and the
            dtype whose peak FLOPs/s the matmuls run at.
        weight_bytes: every parameter in ``weight_dtype``, whole model (bytes).
        kv_bytes_per_token: ``2·L·K·d_h·bytes(cache_dtype)`` (bytes per token per sequence).
        kv_bytes: the batch's cache, ``B · context_len · kv_bytes_per_token`` (bytes).
        max_batch: the most sequences of ``context_len`` tokens whose cache fits beside the
            weights (0 when the weights alone do not fit).
        decode: the decode step at ``context_len`` (:class:`~scalebook.inference.StepCost`):
            ``decode.time`` is the time per output token each sequence sees.
        prefill: one prompt of ``prompt_len`` tokens prefilled alone: the time to first token.
        critical_batch: the batch where decode turns compute-bound; ``inf`` when the cache
            keeps it memory-bound at any batch (sequences).
        batches, curve: :func:`curve_batches` and the decode step at each of them.
    """

    preset: str
    config: TransformerConfig
    chip_name: str
    n_chips: int
    hbm_bytes: float
    prompt_len: int
    gen_len: int
    context_len: int
    batch: int
    weight_dtype: str
    cache_dtype: str
    compute_dtype: str
    weight_bytes: float
    kv_bytes_per_token: float
    kv_bytes: float
    max_batch: int
    decode: StepCost
    prefill: StepCost
    critical_batch: float
    batches: tuple[int, ...]
    curve: tuple[StepCost, ...]

    @property
    def weights_per_chip(self) -> float:
        """``weight_bytes / n_chips`` (bytes): tensor parallelism splits every weight."""
        return self.weight_bytes / self.n_chips

    @property
    def kv_per_chip(self) -> float:
        """``kv_bytes / min(n_chips, K)`` (bytes): the cache splits by KV head, so past ``K``
        chips each chip holds a copy of its heads' share (:func:`kv_replication`)."""
        return self.kv_bytes * kv_replication(self.config, self.n_chips) / self.n_chips

    @property
    def free_per_chip(self) -> float:
        """HBM left on each chip, ``max(0, HBM − weights − cache)`` per chip (bytes)."""
        return max(0.0, self.hbm_bytes - self.weights_per_chip - self.kv_per_chip)

    @property
    def fits(self) -> bool:
        """Whether the batch's cache fits beside the weights: ``batch ≤ max_batch``."""
        return self.batch <= self.max_batch

    @property
    def comm_share(self) -> float:
        """Fraction of a decode step spent in tensor-parallel AllReduces, ``t_comm / time``."""
        return self.decode.t_comm / self.decode.time


def _choose(value: object, allowed: tuple[str, ...], what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    key = canonical_dtype(value)  # raises for a dtype nobody knows
    if key not in allowed:
        raise ValueError(f"{what} {key} is not offered; choose one of {', '.join(allowed)}")
    return key


def serving_state(*, preset: str = "LLaMA-3 70B", chip: str = "H100", n_chips: int = 8,
                  prompt_len: int = 2048, gen_len: int = 2048, batch: int = 32,
                  weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                  compute_dtype: str = "bf16") -> ServingState:
    """Compute what the serving explorer shows for ``batch`` sequences of ``prompt_len`` +
    ``gen_len`` tokens of ``preset`` on ``n_chips`` chips.

    Dtype rules: the weights may be stored in bf16, int8 or fp8, but only in a dtype the chip
    has units for (no TPU through v6e, and no A100, has fp8); the cache in any of the three
    (attention reads it back into bf16); the matmuls run in bf16, or in the weights' own dtype
    when the activations are quantised too (int8 or fp8 "W8A8"), at that dtype's peak.

    Raises ``ValueError`` with what to change for: an unknown model or chip, a count that is not
    a positive integer, a TPU slice larger than the chip's largest, tensor parallelism beyond
    one GPU node (from :func:`scalebook.inference.tp_comm_time`), and the dtype rules above.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown model {preset!r}; choose one of {', '.join(PRESETS)}")
    cfg = PRESETS[preset]
    chip_obj = get_chip(chip)
    n = positive_int(n_chips, "chips")
    largest = math.prod(chip_obj.max_slice)
    if not chip_obj.is_gpu and n > largest:
        raise ValueError(f"a {chip_obj.name} slice has at most {largest:,} chips, got {n:,}")
    prompt = positive_int(prompt_len, "prompt length")
    gen = positive_int(gen_len, "generated length")
    b = positive_int(batch, "batch")
    w_dtype = _choose(weight_dtype, WEIGHT_DTYPES, "weight dtype")
    c_dtype = _choose(cache_dtype, CACHE_DTYPES, "cache dtype")
    m_dtype = _choose(compute_dtype, COMPUTE_DTYPES, "compute dtype")
    if w_dtype not in chip_obj.dtypes:
        keep = [d for d in WEIGHT_DTYPES if d in chip_obj.dtypes]
        raise ValueError(f"{chip_obj.name} has no {w_dtype} units, so it does not serve {w_dtype} "
                         f"weights; store them in {' or '.join(keep)}")
    if m_dtype not in ("bf16", w_dtype):
        raise ValueError(f"matmuls run in {m_dtype} only with {m_dtype} weights (both operands "
                         f"quantised); with {w_dtype} weights compute in bf16"
                         + ("" if w_dtype == "bf16" else f" or {w_dtype}"))
    chip_obj.flops(m_dtype)  # a clear error for a chip without that dtype's units
    context = prompt + gen
    dtypes = dict(weight_dtype=w_dtype, cache_dtype=c_dtype)
    batches = curve_batches(b)
    curve = tuple(latency_throughput(cfg, chip_obj, batches=batches, context_len=context,
                                     n_chips=n, compute_dtype=m_dtype, **dtypes))
    per_token = kv_bytes_per_token(cfg, c_dtype)
    return ServingState(
        preset=preset, config=cfg, chip_name=chip_obj.name, n_chips=n,
        hbm_bytes=chip_obj.hbm_bytes, prompt_len=prompt, gen_len=gen, context_len=context,
        batch=b, weight_dtype=w_dtype, cache_dtype=c_dtype, compute_dtype=m_dtype,
        weight_bytes=weight_bytes(cfg, w_dtype), kv_bytes_per_token=per_token,
        kv_bytes=b * context * per_token,
        max_batch=max_batch(cfg, chip_obj, context_len=context, n_chips=n, **dtypes),
        decode=curve[batches.index(b)],
        prefill=prefill(cfg, chip_obj, prompt_len=prompt, batch=1, n_chips=n,
                        compute_dtype=m_dtype, **dtypes),
        critical_batch=float(decode_critical_batch(cfg, chip_obj, context_len=context, n_chips=n,
                                                   compute_dtype=m_dtype, **dtypes)),
        batches=batches, curve=curve)


def memory_fractions(state: ServingState) -> dict[str, float]:
    """One chip's HBM by :data:`MEMORY_KINDS`, each as a fraction of that HBM (the bar
    heights): weights, KV cache and free (0 when they overflow)."""
    return {"weights": state.weights_per_chip / state.hbm_bytes,
            "KV cache": state.kv_per_chip / state.hbm_bytes,
            "free": state.free_per_chip / state.hbm_bytes}


def not_fit_message(state: ServingState) -> str:
    """The flag the figure shows in red, or "" when the batch's cache fits."""
    if state.fits:
        return ""
    if state.max_batch == 0:
        return (f"the weights alone do not fit: {format_bytes(state.weight_bytes, binary=False)}"
                f" on {state.n_chips} × {format_bytes(state.hbm_bytes, binary=False)} of HBM")
    return (f"the cache does not fit: at most {state.max_batch:,} sequences of "
            f"{state.context_len:,} tokens")


# --------------------------------------------------------------------------- drawing


def serving_figure(dpi: float = 100, size: tuple[float, float] = (12.0, 3.9)) -> Figure:
    """A figure on its own Agg canvas whose ``axes`` are what :func:`draw_serving` takes:
    memory (narrow), time per token against batch, its twin for tokens/s per chip, and the
    latency–throughput curve. The layout is fixed (no layout engine re-measuring labels)."""
    figure = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(figure)
    grid = figure.add_gridspec(1, 3, width_ratios=(0.45, 1.25, 1.0), left=0.055, right=0.985,
                               bottom=0.15, top=0.74, wspace=0.55)
    figure.add_subplot(grid[0])
    figure.add_subplot(grid[1]).twinx()  # the twin comes third in figure.axes
    figure.add_subplot(grid[2])
    return figure


def _decades(values: Sequence[float]) -> tuple[float, float]:
    """The whole decades enclosing ``values`` (all positive): (10^floor, 10^ceil)."""
    lo = 10.0 ** math.floor(math.log10(min(values)))
    hi = 10.0 ** math.ceil(math.log10(max(values)))
    return (lo, hi * 10.0) if hi <= lo else (lo, hi)


def _limits(state: ServingState) -> tuple[tuple[float, float], tuple[float, float]]:
    """Fixed y ranges for a state: (time per token, tokens/s per chip), in whole decades."""
    return (_decades([s.time for s in state.curve]),
            _decades([s.tokens_per_s_per_chip for s in state.curve]))


def draw_serving(axes: Sequence, state: ServingState) -> dict[str, object]:
    """Draw ``state`` on ``(memory, time, rate, curve)`` axes (:func:`serving_figure`).

    Memory: one chip's HBM stacked (weights, KV cache, free) in units of that HBM, the HBM line
    at 1, a fixed axis to :data:`MEMORY_AXIS_HBM`. Time and rate (twin y axes, log-log, batch
    :data:`BATCH_RANGE` on x): time per output token and tokens/s per chip of the decode step at
    each batch, markers at this batch, a dotted vertical at the critical batch when finite, and
    the batches whose cache does not fit shaded red. Curve (log-log): time per token against
    tokens/s per chip, solid where the cache fits and dotted grey where it does not, a marker at
    this batch. The y ranges are whole decades that hold the curve.

    Clears the axes. Returns the artists by name: ``memory/<kind>`` (Rectangle), ``hbm``,
    ``time``, ``rate``, ``time_now``, ``rate_now``, ``critical``, ``curve``, ``curve_over``,
    ``curve_now`` (Line2D), ``no_fit`` (Rectangle over the batches that do not fit),
    ``memory_title``, ``time_title``, ``curve_title``, ``heading`` and ``flag`` (Text).
    """
    ax_m, ax_t, ax_r, ax_c = axes
    figure = ax_m.figure
    for ax in axes:
        ax.clear()
    for text in list(figure.texts):
        text.remove()
    # A cleared twin forgets that it is transparent and lives on the right.
    ax_r.patch.set_visible(False)
    ax_r.yaxis.tick_right()
    ax_r.yaxis.set_label_position("right")
    artists: dict[str, object] = {}

    for kind, colour in MEMORY_KINDS:
        (artists[f"memory/{kind}"],) = ax_m.bar([0], [0.0], width=0.6, color=colour, label=kind,
                                                edgecolor="white", linewidth=0.5)
    (artists["hbm"],) = ax_m.plot([-0.5, 0.5], [1.0, 1.0], color=_RED, lw=2, ls="--",
                                  label="HBM")
    ax_m.set(xlim=(-0.5, 0.5), ylim=(0, MEMORY_AXIS_HBM), xticks=[],
             ylabel="per chip ÷ its HBM")
    ax_m.legend(loc="upper center", bbox_to_anchor=(0.5, -0.01), fontsize=7, frameon=False,
                ncol=2, handlelength=1.2, columnspacing=0.8)

    time_lim, rate_lim = _limits(state)
    ax_t.set(xscale="log", yscale="log", xlim=BATCH_RANGE, ylim=time_lim,
             xlabel="batch B (sequences)")
    ax_t.set_ylabel("time per output token", color=_TIME_COLOUR)
    ax_r.set(yscale="log", ylim=rate_lim)
    ax_r.set_ylabel("tokens/s per chip", color=_RATE_COLOUR)
    _log_ticks(ax_t.xaxis, format_count)
    _log_ticks(ax_t.yaxis, format_seconds)
    _log_ticks(ax_r.yaxis, format_count)
    ax_t.grid(True, which="major", alpha=0.3)
    shade = Rectangle((BATCH_RANGE[1], 0.0), 0.0, 1.0, transform=ax_t.get_xaxis_transform(),
                      color=_RED, alpha=0.12, lw=0, label="cache does not fit")
    artists["no_fit"] = ax_t.add_patch(shade)
    (artists["time"],) = ax_t.plot([], [], color=_TIME_COLOUR, lw=2, label="time per token")
    (artists["critical"],) = ax_t.plot([], [], color="0.2", lw=1, ls=":",
                                       label="critical batch")
    (artists["time_now"],) = ax_t.plot([], [], color=_TIME_COLOUR, marker="o", ls="", mec="black",
                                       ms=7, zorder=5)
    (artists["rate"],) = ax_r.plot([], [], color=_RATE_COLOUR, lw=2, label="tokens/s per chip")
    (artists["rate_now"],) = ax_r.plot([], [], color=_RATE_COLOUR, marker="o", ls="",
                                       mec="black", ms=7, zorder=5)
    handles = [artists["time"], artists["rate"], artists["critical"], shade]
    ax_t.legend(handles, [h.get_label() for h in handles], loc="upper left", fontsize=7,
                frameon=False)

    ax_c.set(xscale="log", yscale="log", xlim=rate_lim, ylim=time_lim,
             xlabel="tokens/s per chip (throughput)", ylabel="time per output token (latency)")
    _log_ticks(ax_c.xaxis, format_count)
    _log_ticks(ax_c.yaxis, format_seconds)
    ax_c.grid(True, which="major", alpha=0.3)
    (artists["curve"],) = ax_c.plot([], [], color="black", lw=2, label="cache fits")
    (artists["curve_over"],) = ax_c.plot([], [], color="0.55", lw=1.5, ls=":",
                                         label="cache does not fit")
    (artists["curve_now"],) = ax_c.plot([], [], color=_TIME_COLOUR, marker="o", ls="",
                                        mec="black", ms=8, zorder=5)
    ax_c.legend(loc="upper left", fontsize=7, frameon=False)

    for key, ax in (("memory_title", ax_m), ("time_title", ax_t), ("curve_title", ax_c)):
        artists[key] = ax.text(0.0, 1.03, "", transform=ax.transAxes, fontsize=8)
    artists["heading"] = figure.text(0.01, 0.985, "", fontsize=9, va="top")
    artists["flag"] = figure.text(0.01, 0.92, "", fontsize=9, va="top", color=_RED,
                                  fontweight="bold")
    update_serving(axes, artists, state)
    return artists


def update_serving(axes: Sequence, artists: dict, state: ServingState) -> list | None:
    """Move :func:`draw_serving`'s artists to ``state``; return every artist that depends on
    it, or None when the time or throughput axis needs other decades (the caller redraws)."""
    ax_m, ax_t, ax_r, ax_c = axes
    time_lim, rate_lim = _limits(state)
    if (tuple(ax_t.get_ylim()) != time_lim or tuple(ax_r.get_ylim()) != rate_lim
            or tuple(ax_c.get_xlim()) != rate_lim):
        return None
    dynamic: list = []
    bottom = 0.0
    for kind, height in memory_fractions(state).items():
        bar = artists[f"memory/{kind}"]
        bar.set_y(bottom)
        bar.set_height(height)
        bottom += height
        dynamic.append(bar)

    batches = np.array(state.batches, dtype=float)
    times = np.array([s.time for s in state.curve])
    rates = np.array([s.tokens_per_s_per_chip for s in state.curve])
    d = state.decode
    artists["time"].set_data(batches, times)
    artists["rate"].set_data(batches, rates)
    artists["time_now"].set_data([state.batch], [d.time])
    artists["rate_now"].set_data([state.batch], [d.tokens_per_s_per_chip])
    b_star = state.critical_batch
    xs = [b_star, b_star] if math.isfinite(b_star) else []  # no vertical when it never turns
    artists["critical"].set_data(xs, list(time_lim)[:len(xs)])
    left = max(float(state.max_batch), BATCH_RANGE[0])
    artists["no_fit"].set_x(left)
    artists["no_fit"].set_width(max(0.0, BATCH_RANGE[1] - left))

    fits = batches <= state.max_batch
    # the dotted part starts where the solid one ends, so the curve has no gap
    over = ~fits
    if fits.any() and over.any():
        over[np.argmax(over) - 1] = True
    artists["curve"].set_data(rates[fits], times[fits])
    artists["curve_over"].set_data(rates[over], times[over])
    artists["curve_now"].set_data([d.tokens_per_s_per_chip], [d.time])
    dynamic += [artists[k] for k in ("no_fit", "time", "critical", "time_now", "rate",
                                     "rate_now", "curve", "curve_over", "curve_now")]

    per_chip = state.weights_per_chip + state.kv_per_chip
    off = " (off the scale)" if per_chip > MEMORY_AXIS_HBM * state.hbm_bytes else ""
    artists["memory_title"].set_text(
        f"{format_bytes(per_chip, binary=False)} of "
        f"{format_bytes(state.hbm_bytes, binary=False)}{off}\n"
        f"room for ≤ {state.max_batch:,} sequences")
    critical = f"B* = {b_star:,.0f}" if math.isfinite(b_star) else "never compute-bound"
    artists["time_title"].set_text(
        f"decode at {state.context_len:,} cached tokens: {d.bound}-bound\n"
        f"{format_seconds(d.time)} per token at B = {state.batch:,}; {critical}")
    artists["curve_title"].set_text(
        f"B = {state.batch:,}: {d.tokens_per_s_per_chip:,.0f} tokens/s per chip\n"
        f"at {format_seconds(d.time)} per token, {state.comm_share:.0%} in AllReduces")
    artists["heading"].set_text(
        f"{state.config.name} on {state.n_chips} × {state.chip_name}: {state.batch:,} sequences "
        f"of {state.prompt_len:,} + {state.gen_len:,} tokens; weights {state.weight_dtype}, "
        f"cache {state.cache_dtype}, matmuls {state.compute_dtype}")
    artists["flag"].set_text(not_fit_message(state))
    dynamic += [artists["hbm"], artists["memory_title"], artists["time_title"],
                artists["curve_title"], artists["heading"], artists["flag"]]
    return dynamic


# --------------------------------------------------------------------------- summary


def _step_row(label: str, step: StepCost) -> str:
    cells = (label, format_seconds(step.t_compute), format_seconds(step.t_memory),
             format_seconds(step.t_comm), f"<b>{format_seconds(step.time)}</b>",
             f"{step.bound}-bound", f"{step.intensity:,.0f}")
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def serving_summary(state: ServingState) -> str:
    """HTML: the regime, time per token, tokens/s per chip and the AllReduce share in one
    sentence, then memory per chip and the decode and prefill steps in tables."""
    d, p = state.decode, state.prefill
    gb = lambda v: format_bytes(v, binary=False)  # noqa: E731
    flag = not_fit_message(state)
    flag_html = f"<br><b style='color:{_RED}'>⚠ {html.escape(flag)}</b>" if flag else ""
    b_star = state.critical_batch
    critical = (f"turns compute-bound at B* = {b_star:,.0f}" if math.isfinite(b_star) else
                "stays memory-bound at any batch: each sequence's cache takes longer to read "
                "than its FLOPs take to run")
    table = ("<table style='border-collapse:collapse;display:inline-block;vertical-align:top;"
             "margin-right:2em'>")
    memory = "".join(f"<tr><td>{k}</td><td>{gb(v)}</td></tr>" for k, v in (
        ("weights", state.weights_per_chip), ("KV cache", state.kv_per_chip),
        ("free", state.free_per_chip), ("HBM", state.hbm_bytes)))
    return (
        "<div style='font-size:90%'>"
        f"<b>{html.escape(state.config.name)}</b> on {state.n_chips} × "
        f"{html.escape(state.chip_name)}, B = {state.batch:,} at {state.context_len:,} tokens: "
        f"decode is <b>{d.bound}-bound</b>, <b>{format_seconds(d.time)} per output token</b>, "
        f"<b>{d.tokens_per_s_per_chip:,.0f} tokens/s per chip</b> "
        f"({d.tokens_per_s:,.0f} for the slice); AllReduces take "
        f"<b>{state.comm_share:.0%}</b> of each step. Decode {critical}."
        f"{flag_html}<br>"
        f"{table}<tr><th>per chip</th><th></th></tr>{memory}"
        f"<tr><td>cache per token</td><td>{gb(state.kv_bytes_per_token)}</td></tr>"
        f"<tr><td>largest batch</td><td>{state.max_batch:,}</td></tr></table>"
        f"{table}<tr><th>step</th><th>compute</th><th>memory</th><th>AllReduce</th>"
        f"<th>time</th><th>bound</th><th>FLOPs/byte</th></tr>"
        f"{_step_row(f'decode, B = {state.batch:,}', d)}"
        f"{_step_row(f'prefill, 1 × {state.prompt_len:,}', p)}</table><br>"
        f"A reply of {state.gen_len:,} tokens takes at most "
        f"{format_seconds(state.gen_len * d.time)} after a first token in "
        f"{format_seconds(p.time)} (every step costed at the full cache).</div>")


# --------------------------------------------------------------------------- widget


class ServingExplorer(Explorer):
    """The serving explorer's :class:`Explorer`: storing the weights in a dtype the matmuls
    cannot run in puts the matmuls back to bf16."""

    def link_controls(self, changed) -> None:
        if changed is self.controls["weight_dtype"]:
            compute = self.controls["compute_dtype"].value
            if compute not in ("bf16", self.controls["weight_dtype"].value):
                self.set_quietly({"compute_dtype": "bf16"})


def _ladder(lo: int, hi: int, extra: int) -> list[tuple[str, int]]:
    """Slider stops 1, 2, 3, 4, 6, 8, 12, … (powers of two and 1.5×) in [lo, hi], plus
    ``extra``, labelled with thousands separators."""
    stops = {extra}
    for k in range(40):
        stops.update(v for v in (2 ** k, 3 * 2 ** k // 2) if lo <= v <= hi and v >= 1)
    return [(f"{v:,}", v) for v in sorted(stops)]


def _slider(description: str, lo: int, hi: int, value: int) -> widgets.SelectionSlider:
    return widgets.SelectionSlider(options=_ladder(lo, hi, value), value=value,
                                   description=description, continuous_update=True,
                                   style={"description_width": "initial"},
                                   layout=widgets.Layout(width="32%"))


def serving_explorer(preset: str = "LLaMA-3 70B", chip: str = "H100", n_chips: int = 8, *,
                     prompt_len: int = 2048, gen_len: int = 2048, batch: int = 32,
                     weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                     compute_dtype: str = "bf16", dpi: float = 100) -> ServingExplorer:
    """A serving explorer; the default is the case study, LLaMA-3 70B on 8 H100s, 32 sequences
    of 4,096 tokens (2,048 in, 2,048 out), everything in bf16.

    Controls (``w.controls``): ``preset``, ``chip`` (:data:`SERVING_CHIPS`), ``n_chips`` (a
    box: any count, checked), ``prompt_len``, ``gen_len`` and ``batch`` (sliders over 1, 2, 3,
    4, 6, 8, … stops), ``weight_dtype``, ``cache_dtype`` and ``compute_dtype``. ``w.state`` is a
    :class:`ServingState`. Raises ``ValueError`` for bad initial inputs.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown model {preset!r}; choose one of {', '.join(PRESETS)}")
    chip_name = get_chip(chip).name
    if chip_name not in SERVING_CHIPS:
        raise ValueError(f"{chip_name} has no bf16 units; choose one of {', '.join(SERVING_CHIPS)}")
    dtypes = {name: _choose(value, allowed, name.replace("_", " ")) for name, value, allowed in (
        ("weight_dtype", weight_dtype, WEIGHT_DTYPES), ("cache_dtype", cache_dtype, CACHE_DTYPES),
        ("compute_dtype", compute_dtype, COMPUTE_DTYPES))}
    sizes = {name: positive_int(value, name.replace("_", " ")) for name, value in (
        ("prompt_len", prompt_len), ("gen_len", gen_len), ("batch", batch))}
    labels = {"weight_dtype": "weights", "cache_dtype": "KV cache", "compute_dtype": "matmuls"}
    controls = {
        "preset": widgets.Dropdown(options=list(PRESETS), value=preset, description="model"),
        "chip": widgets.Dropdown(options=SERVING_CHIPS, value=chip_name, description="chip"),
        "n_chips": widgets.IntText(value=int(n_chips), description="chips per copy",
                                   style={"description_width": "initial"},
                                   layout=widgets.Layout(width="20%")),
        "prompt_len": _slider("prompt (tokens)", 16, 131072, sizes["prompt_len"]),
        "gen_len": _slider("generated (tokens)", 1, 32768, sizes["gen_len"]),
        "batch": _slider("batch (sequences)", 1, 4096, sizes["batch"]),
        **{name: widgets.Dropdown(options=allowed, value=dtypes[name], description=labels[name])
           for name, allowed in (("weight_dtype", WEIGHT_DTYPES),
                                 ("cache_dtype", CACHE_DTYPES),
                                 ("compute_dtype", COMPUTE_DTYPES))},
    }
    figure = serving_figure(dpi)
    rows = [("preset", "chip", "n_chips"), ("prompt_len", "gen_len", "batch"),
            ("weight_dtype", "cache_dtype", "compute_dtype")]
    return ServingExplorer(
        controls, figure, serving_state, lambda fig, state: draw_serving(fig.axes, state),
        serving_summary, layout_rows=rows,
        refresh=lambda fig, artists, state: update_serving(fig.axes, artists, state))

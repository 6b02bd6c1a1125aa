"""The serving explorer's numbers: state, plot series, summary, and the live view.

What one copy of a model costs to serve on a slice of chips, from :mod:`scalebook.inference`
(:func:`decode_step`, :func:`prefill`, :func:`latency_throughput`, :func:`max_batch`,
:func:`decode_critical_batch`, :func:`weight_bytes`, :func:`kv_bytes_per_token`). Plain Python
(no ipywidgets, no matplotlib, no NumPy arrays), so the same functions feed the Jupyter widget
(:func:`scalebook.widgets.serving.serving_explorer`, drawn with matplotlib) and the
book's static site (:func:`view`, drawn in the reader's browser by Chart.js).

The decode step is costed at the full context, ``prompt_len + gen_len`` cached tokens: the last
and slowest step of a reply, and the cache every sequence holds at its end, which is what must
fit in HBM.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Mapping, Sequence, TypedDict

from ..hardware import Chip, canonical_dtype, chip_names, get_chip
from ..inference import (
    KV_SHARDINGS,
    StepCost,
    decode_critical_batch,
    kv_bytes_per_token,
    latency_throughput,
    max_batch,
    prefill,
    weight_bytes,
)
from ..training import PRESETS
from ..transformer import TransformerConfig
from ..units import format_bytes, format_count, format_integer, format_seconds
from ..validation import positive_int
from . import chart

__all__ = [
    "ServingState", "serving_state", "serving_summary", "serving_series", "serving_chart",
    "linked_controls", "view", "disabled_options", "SERVING_CHIPS", "WEIGHT_DTYPES",
    "CACHE_DTYPES", "COMPUTE_DTYPES", "KV_SHARDINGS", "MEMORY_KINDS", "BATCH_RANGE",
    "MEMORY_AXIS_HBM", "FIGURE_PX",
    "PANEL_WIDTHS", "curve_batches", "memory_fractions", "not_fit_message", "choose_dtype",
    "plot_limits",
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

#: Colours of the time per token, of the tokens/s, and of the HBM line and the flag.
TIME_COLOUR, RATE_COLOUR, RED = "#1f5fa8", "#d9731a", "#b00020"
#: Matplotlib's "0.2" (the critical batch) and "0.55" (the curve past the cache limit) greys.
CRITICAL_COLOUR, OVER_COLOUR = "#333333", "#8c8c8c"
#: The no-fit shading: RED at alpha 0.12 (0x1f / 255).
NO_FIT_COLOUR = RED + "1f"

#: Size of the Jupyter figure in pixels (12 x 3.9 inches at 100 dpi), and the panels' shares
#: of its width (memory, time and throughput, latency against throughput).
FIGURE_PX = (1200, 390)
PANEL_WIDTHS = (0.45, 1.25, 1.0)
#: Half the width of the memory bar, on an x axis from -0.5 to 0.5.
_BAR_HALF_WIDTH = 0.3


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
        chip, n_chips: the slice serving one copy of the model (tensor parallel);
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
        kv_sharding: how the slice splits the cache, ``"heads"`` (copied past K chips) or
            ``"batch"`` (each group of K chips holds its own sequences' caches).
        critical_batch: the batch where decode's weight matmuls turn compute-bound,
            ``C·b_w / (2·W_hbm)`` whatever the context (attention against the cache never
            does; :func:`decode_critical_batch` with ``overlap=False``) (sequences).
        batches, curve: :func:`curve_batches` and the decode step at each of them.
    """

    preset: str
    config: TransformerConfig
    chip: Chip
    n_chips: int
    hbm_bytes: float
    prompt_len: int
    gen_len: int
    context_len: int
    batch: int
    weight_dtype: str
    cache_dtype: str
    compute_dtype: str
    kv_sharding: str
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
        """The busiest chip's cache (bytes), ``decode.kv_bytes / n_chips``: split by KV head,
        past ``K`` chips each chip holds a copy of its heads' share
        (:func:`~scalebook.inference.kv_replication`); split by sequence, no copies."""
        return self.decode.kv_bytes / self.n_chips

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
        """Fraction of a decode step spent in its collectives, ``t_comm / time``: the
        tensor-parallel AllReduces and, with the cache split by sequence past K chips, the two
        AllToAlls per layer of data-parallel attention
        (:func:`~scalebook.inference.kv_regroup_time`)."""
        return self.decode.t_comm / self.decode.time


def choose_dtype(value: object, allowed: tuple[str, ...], what: str) -> str:
    """``value`` as a canonical dtype name ("bfloat16" -> "bf16") if it is one of ``allowed``;
    ``ValueError`` naming ``what`` and the choices otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    key = canonical_dtype(value)  # raises for a dtype nobody knows
    if key not in allowed:
        raise ValueError(f"{what} {key} is not offered; choose one of {', '.join(allowed)}")
    return key


class _Storage(TypedDict):
    """How the weights and the cache are stored: the keyword arguments every
    :mod:`scalebook.inference` model below takes alike."""

    weight_dtype: str
    cache_dtype: str
    kv_sharding: str


def serving_state(*, preset: str = "LLaMA-3 70B", chip: str = "H100", n_chips: int = 8,
                  prompt_len: int = 2048, gen_len: int = 2048, batch: int = 32,
                  weight_dtype: str = "bf16", cache_dtype: str = "bf16",
                  compute_dtype: str = "bf16", kv_sharding: str = "heads") -> ServingState:
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
    w_dtype = choose_dtype(weight_dtype, WEIGHT_DTYPES, "weight dtype")
    c_dtype = choose_dtype(cache_dtype, CACHE_DTYPES, "cache dtype")
    m_dtype = choose_dtype(compute_dtype, COMPUTE_DTYPES, "compute dtype")
    if w_dtype not in chip_obj.dtypes:
        keep = [d for d in WEIGHT_DTYPES if d in chip_obj.dtypes]
        raise ValueError(f"{chip_obj.name} has no {w_dtype} units, so it does not serve {w_dtype} "
                         f"weights; store them in {' or '.join(keep)}")
    if m_dtype not in ("bf16", w_dtype):
        raise ValueError(f"matmuls run in {m_dtype} only with {m_dtype} weights (both operands "
                         f"quantised); with {w_dtype} weights compute in bf16"
                         + ("" if w_dtype == "bf16" else f" or {w_dtype}"))
    chip_obj.flops(m_dtype)  # a clear error for a chip without that dtype's units
    if kv_sharding not in KV_SHARDINGS:
        raise ValueError(f"cache sharding must be one of {', '.join(KV_SHARDINGS)}, "
                         f"got {kv_sharding!r}")
    context = prompt + gen
    dtypes = _Storage(weight_dtype=w_dtype, cache_dtype=c_dtype, kv_sharding=kv_sharding)
    batches = curve_batches(b)
    curve = tuple(latency_throughput(cfg, chip_obj, batches=batches, context_len=context,
                                     n_chips=n, compute_dtype=m_dtype, **dtypes))
    per_token = kv_bytes_per_token(cfg, c_dtype)
    return ServingState(
        preset=preset, config=cfg, chip=chip_obj, n_chips=n,
        hbm_bytes=chip_obj.hbm_bytes, prompt_len=prompt, gen_len=gen, context_len=context,
        batch=b, weight_dtype=w_dtype, cache_dtype=c_dtype, compute_dtype=m_dtype,
        kv_sharding=kv_sharding, weight_bytes=weight_bytes(cfg, w_dtype), kv_bytes_per_token=per_token,
        kv_bytes=b * context * per_token,
        max_batch=max_batch(cfg, chip_obj, context_len=context, n_chips=n, **dtypes),
        decode=curve[batches.index(b)],
        prefill=prefill(cfg, chip_obj, prompt_len=prompt, batch=1, n_chips=n,
                        compute_dtype=m_dtype, **dtypes),
        critical_batch=float(decode_critical_batch(cfg, chip_obj, context_len=context, n_chips=n,
                                                   compute_dtype=m_dtype, overlap=False,
                                                   **dtypes)),
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
    return (f"the cache does not fit: at most {format_integer(state.max_batch)} sequences of "
            f"{state.context_len:,} tokens")


def linked_controls(controls: Mapping[str, object], changed: str | None) -> dict[str, object]:
    """Controls that move with ``changed``: storing the weights in a dtype the matmuls cannot
    run in (W8A8 needs both operands in one dtype) puts the matmuls back to bf16 instead of
    refusing. Returns ``{name: new value}``, empty when nothing moves."""
    if changed == "weight_dtype" and controls.get("compute_dtype") not in (
            "bf16", controls.get("weight_dtype")):
        return {"compute_dtype": "bf16"}
    return {}


# --------------------------------------------------------------------------- summary


def _step_row(label: str, step: StepCost) -> str:
    cells = (label, format_seconds(step.t_weights), format_seconds(step.t_attention),
             format_seconds(step.t_comm), f"<b>{format_seconds(step.time)}</b>",
             f"{step.weights_bound}-bound", f"{format_integer(step.intensity)}")
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def serving_summary(state: ServingState) -> str:
    """HTML: the regime, time per token, tokens/s per chip and the AllReduce share in one
    sentence, then memory per chip and the decode and prefill steps in tables."""
    d, p = state.decode, state.prefill
    gb = lambda v: format_bytes(v, binary=False)  # noqa: E731
    flag = not_fit_message(state)
    flag_html = f"<br><b style='color:{RED}'>⚠ {html.escape(flag)}</b>" if flag else ""
    b_star = state.critical_batch
    critical = (f"The weight matmuls turn compute-bound at B* = {format_integer(b_star)}; "
                "attention against the cache, one new token per sequence, stays memory-bound "
                "at any batch")
    split = state.kv_sharding == "batch" and state.n_chips > state.config.n_kv_heads
    comm_name = "collectives (AllReduces, AllToAlls)" if split else "AllReduces"
    table = ("<table style='border-collapse:collapse;display:inline-block;vertical-align:top;"
             "margin-right:2em'>")
    memory = "".join(f"<tr><td>{k}</td><td>{gb(v)}</td></tr>" for k, v in (
        ("weights", state.weights_per_chip), ("KV cache", state.kv_per_chip),
        ("free", state.free_per_chip), ("HBM", state.hbm_bytes)))
    return (
        "<div style='font-size:90%'>"
        f"<b>{html.escape(state.config.name)}</b> on {state.n_chips} × "
        f"{html.escape(state.chip.name)}, B = {state.batch:,} at {state.context_len:,} tokens: "
        f"the weight matmuls are <b>{d.weights_bound}-bound</b>, "
        f"<b>{format_seconds(d.time)} per output token</b>, "
        f"<b>{format_integer(d.tokens_per_s_per_chip)} tokens/s per chip</b> "
        f"({format_integer(d.tokens_per_s)} for the slice); {comm_name} take "
        f"<b>{state.comm_share:.0%}</b> of each step. {critical}. "
        f"Phases run in turn (matmuls, attention, AllReduces); overlapping them all would give "
        f"at best {format_seconds(d.time_overlapped)}."
        f"{flag_html}<br>"
        f"{table}<tr><th>per chip</th><th></th></tr>{memory}"
        f"<tr><td>cache per token</td><td>{gb(state.kv_bytes_per_token)}</td></tr>"
        "<tr><td>largest batch (no HBM reserve)</td>"
        f"<td>{format_integer(state.max_batch)}</td></tr></table>"
        f"{table}<tr><th>step</th><th>matmuls</th><th>attention</th><th>AllReduce</th>"
        f"<th>time</th><th>matmuls are</th><th>FLOPs/byte</th></tr>"
        f"{_step_row(f'decode, B = {state.batch:,}', d)}"
        f"{_step_row(f'prefill, 1 × {state.prompt_len:,}', p)}</table><br>"
        f"A reply of {state.gen_len:,} tokens takes at most "
        f"{format_seconds(state.gen_len * d.time)} after a first token in "
        f"{format_seconds(p.time)} (every step costed at the full cache).</div>")



# --------------------------------------------------------------------------- plot series


def _decades(values: Sequence[float]) -> tuple[float, float]:
    """The whole decades enclosing ``values`` (all positive): (10^floor, 10^ceil)."""
    lo = 10.0 ** math.floor(math.log10(min(values)))
    hi = 10.0 ** math.ceil(math.log10(max(values)))
    return (lo, hi * 10.0) if hi <= lo else (lo, hi)


def plot_limits(state: ServingState) -> tuple[tuple[float, float], tuple[float, float]]:
    """Fixed y ranges for a state: (time per token in s, tokens/s per chip), whole decades
    that hold the curve, so the axes move only when the curve leaves them."""
    return (_decades([s.time for s in state.curve]),
            _decades([s.tokens_per_s_per_chip for s in state.curve]))


def serving_series(state: ServingState) -> dict:
    """Every plotted number and text of the serving explorer, in SI units:

    - ``memory``: one chip's HBM stacked, ``[{"kind", "colour", "bottom", "height"}, ...]`` in
      :data:`MEMORY_KINDS` order, in units of that HBM (:func:`memory_fractions`);
    - ``time_lim``, ``rate_lim``: :func:`plot_limits`;
    - ``time``, ``rate``: ``[[B, time per token (s)], ...]`` and ``[[B, tokens/s per chip],
      ...]`` over :func:`curve_batches`; ``time_now``, ``rate_now``: the same at this batch;
    - ``critical``: the critical batch B*, None when decode never turns compute-bound;
    - ``no_fit``: ``[left, right]``, the batches whose cache does not fit, from
      ``max(max_batch, 1)`` to the end of :data:`BATCH_RANGE` (empty when left >= right);
    - ``curve``: ``[[tokens/s per chip, time per token], ...]`` for the batches that fit;
      ``curve_over`` the rest, starting at the last batch that fits so the two join;
      ``curve_now`` this batch's point;
    - ``memory_title``, ``time_title``, ``curve_title``, ``heading`` and ``flag`` (the
      :func:`not_fit_message`, "" when the cache fits).
    """
    d, b_star = state.decode, state.critical_batch
    bottom, memory = 0.0, []
    fractions = memory_fractions(state)
    for kind, colour in MEMORY_KINDS:
        memory.append({"kind": kind, "colour": colour, "bottom": bottom,
                       "height": fractions[kind]})
        bottom += fractions[kind]
    pairs = [[c.tokens_per_s_per_chip, c.time] for c in state.curve]
    n_fit = sum(1 for b in state.batches if b <= state.max_batch)  # batches ascend
    left = max(float(state.max_batch), BATCH_RANGE[0])
    per_chip = state.weights_per_chip + state.kv_per_chip
    off = " (off the scale)" if per_chip > MEMORY_AXIS_HBM * state.hbm_bytes else ""
    critical = (f"matmuls compute-bound from B* = {format_integer(b_star)}" if math.isfinite(b_star)
                else "matmuls never compute-bound")
    time_lim, rate_lim = plot_limits(state)
    return {
        "memory": memory,
        "time_lim": time_lim,
        "rate_lim": rate_lim,
        "time": [[float(b), c.time] for b, c in zip(state.batches, state.curve)],
        "rate": [[float(b), c.tokens_per_s_per_chip] for b, c in zip(state.batches, state.curve)],
        "time_now": [float(state.batch), d.time],
        "rate_now": [float(state.batch), d.tokens_per_s_per_chip],
        "critical": b_star if math.isfinite(b_star) else None,
        "no_fit": [left, max(left, BATCH_RANGE[1])],
        "curve": pairs[:n_fit],
        "curve_over": pairs[n_fit - 1:] if 0 < n_fit < len(pairs) else pairs[n_fit:],
        "curve_now": [d.tokens_per_s_per_chip, d.time],
        "memory_title": (f"{format_bytes(per_chip, binary=False)} of "
                         f"{format_bytes(state.hbm_bytes, binary=False)}{off}\n"
                         f"room for ≤ {format_integer(state.max_batch)} sequences"),
        "time_title": (f"decode at {state.context_len:,} cached tokens: matmuls "
                       f"{d.weights_bound}-bound\n"
                       f"{format_seconds(d.time)} per token at B = {state.batch:,}; {critical}"),
        "curve_title": (f"B = {state.batch:,}: {format_integer(d.tokens_per_s_per_chip)} "
                        f"tokens/s per chip\nat {format_seconds(d.time)} per token, "
                        f"{state.comm_share:.0%} in AllReduces"),
        "heading": (f"{state.config.name} on {state.n_chips} × {state.chip.name}: "
                    f"{state.batch:,} sequences of {state.prompt_len:,} + {state.gen_len:,} "
                    f"tokens; weights {state.weight_dtype}, cache {state.cache_dtype} "
                    f"(split by {state.kv_sharding}), matmuls {state.compute_dtype}"),
        "flag": not_fit_message(state),
    }


def _box(x0: float, x1: float, y0: float, y1: float) -> list[list[float]]:
    """The rectangle [x0, x1] x [y0, y1] as a polygon."""
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def serving_chart(series: dict) -> dict:
    """:func:`serving_series` as a :mod:`~scalebook.live.chart` description, as the Jupyter
    figure draws it: memory (a stacked bar and the HBM line), time per token and tokens/s per
    chip against the batch (twin y axes, the no-fit batches shaded, the critical batch dotted),
    and the latency–throughput curve."""
    time_lim: tuple[float, float] = series["time_lim"]  # (lowest, highest): plot_limits
    rate_lim: tuple[float, float] = series["rate_lim"]
    w = _BAR_HALF_WIDTH
    memory = [chart.area(_box(-w, w, m["bottom"], m["bottom"] + m["height"]), m["colour"],
                         label=m["kind"]) for m in series["memory"]]
    memory.append(chart.line([[-0.5, 1.0], [0.5, 1.0]], RED, width=2, dash=[4, 2],
                             label="HBM"))
    left, right = series["no_fit"]
    critical = series["critical"]
    rates = chart.axis("log", *rate_lim, "tokens/s per chip",
                       ticks=chart.decade_ticks(*rate_lim, format_count))
    times = chart.axis("log", *time_lim, "time per output token",
                       ticks=chart.decade_ticks(*time_lim, format_seconds))
    step = [
        chart.area(_box(left, right, *time_lim), NO_FIT_COLOUR, label="cache does not fit"),
        chart.line(series["time"], TIME_COLOUR, label="time per token"),
        chart.line([] if critical is None else [[critical, time_lim[0]], [critical, time_lim[1]]],
                   CRITICAL_COLOUR, width=1, dash=[1, 3], label="critical batch"),
        chart.points([series["time_now"]], TIME_COLOUR, size=7),
        chart.line(series["rate"], RATE_COLOUR, label="tokens/s per chip", y2=True),
        chart.points([series["rate_now"]], RATE_COLOUR, size=7, y2=True),
    ]
    curve = [chart.line(series["curve"], "#000000", label="cache fits"),
             chart.line(series["curve_over"], OVER_COLOUR, width=1.5, dash=[1, 3],
                        label="cache does not fit"),
             chart.points([series["curve_now"]], TIME_COLOUR, size=8)]
    hbm_ticks = [[k / 4, f"{k / 4:.2f}"] for k in range(int(MEMORY_AXIS_HBM * 4) + 1)]
    return chart.chart([
        chart.panel(series["memory_title"], chart.axis("linear", -0.5, 0.5, ticks=[]),
                    chart.axis("linear", 0.0, MEMORY_AXIS_HBM, "per chip ÷ its HBM",
                               ticks=hbm_ticks),
                    memory, legend="upper center", width=PANEL_WIDTHS[0]),
        chart.panel(series["time_title"],
                    chart.axis("log", *BATCH_RANGE, "batch B (sequences)",
                               ticks=chart.decade_ticks(*BATCH_RANGE, format_count)),
                    times, step, legend="upper left", y2=rates, width=PANEL_WIDTHS[1]),
        chart.panel(series["curve_title"],
                    chart.axis("log", *rate_lim, "tokens/s per chip (throughput)",
                               ticks=chart.decade_ticks(*rate_lim, format_count)),
                    chart.axis("log", *time_lim, "time per output token (latency)",
                               ticks=chart.decade_ticks(*time_lim, format_seconds)),
                    curve, legend="upper left", width=PANEL_WIDTHS[2]),
    ], width=FIGURE_PX[0], height=FIGURE_PX[1],
        texts=[chart.text(series["heading"]), chart.text(series["flag"], colour=RED, bold=True)])


def disabled_options(state: ServingState) -> dict:
    """The chip and dtype choices that cannot combine with ``state``'s others, with the
    reason (the page disables them): chips without units for its weight or matmul dtype,
    weight and matmul dtypes its chip lacks."""
    chip = state.chip
    needs = {state.weight_dtype, state.compute_dtype}
    out = {"chip": [[name, f"{name} has no {d} units"] for name in SERVING_CHIPS
                    for d in sorted(needs - set(get_chip(name).dtypes))[:1]],
           "weight_dtype": [[d, f"{chip.name} has no {d} units"] for d in WEIGHT_DTYPES
                            if d not in chip.dtypes],
           "compute_dtype": [[d, f"{chip.name} has no {d} units"] for d in COMPUTE_DTYPES
                             if d not in chip.dtypes]}
    return out


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its controls (the Jupyter names: ``preset``, ``chip``,
    ``n_chips``, ``prompt_len``, ``gen_len``, ``batch``, ``weight_dtype``, ``cache_dtype``,
    ``compute_dtype``, ``kv_sharding``): summary, chart, the controls :func:`linked_controls`
    moves, and the options that cannot combine (:func:`disabled_options`)."""
    linked = linked_controls(controls, changed)
    state = serving_state(**{**controls, **linked})
    out = {"summary_html": serving_summary(state),
           "chart": serving_chart(serving_series(state)), "disabled": disabled_options(state)}
    if linked:
        out["controls"] = linked
    return out

"""A serving explorer: what one copy of a model costs to serve on a slice of chips.

A reader picks a model (LLaMA-3 8B, 70B or 405B), a chip and how many of them serve one copy
(tensor parallelism), the prompt and reply lengths, the batch of sequences decoded together,
and how the weights, the KV cache and the matmuls are stored or run (bf16, int8, fp8). They see

- the HBM of one chip, stacked: its share of the weights, its share of the batch's KV cache,
  what is left, against the HBM line; a red flag when the cache does not fit, with the largest
  batch that does (:func:`scalebook.inference.max_batch`);
- time per output token and tokens/s per chip against the batch, with the critical batch where
  the weight matmuls turn compute-bound (:func:`scalebook.inference.decode_critical_batch`,
  ``overlap=False``)
  and the batches whose cache does not fit shaded;
- the latency–throughput curve those two make, with the chosen batch on it;
- a summary naming the weight matmuls' regime (memory- or compute-bound; attention against the
  cache is always memory-bound), the time per token (the phases in turn, and the overlapped
  bound), the tokens/s per chip and the share of each step spent in tensor-parallel AllReduces.

Every number comes from :mod:`scalebook.inference` (:func:`decode_step`, :func:`prefill`,
:func:`latency_throughput`, :func:`max_batch`, :func:`decode_critical_batch`,
:func:`weight_bytes`, :func:`kv_bytes_per_token`), which follows the accounting of Austin et
al., 2025, "How to Scale Your Model", part 7.

The decode step is costed at the full context, ``prompt_len + gen_len`` cached tokens: the last
and slowest step of a reply, and the cache every sequence holds at its end, which is what must
fit in HBM.

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`serving_state` (pure) -> :class:`ServingState`, its plot series and its
   summary live in :mod:`scalebook.live.serving` (no ipywidgets, matplotlib or NumPy arrays),
   shared with the book's static site, which runs them in the reader's browser; they stay
   importable from here;
2. **drawing**: :func:`draw_serving` draws a state on the four axes of :func:`serving_figure`
   and returns its artists by name; :func:`update_serving` moves them to another state (it
   asks for a full redraw when the time or throughput axes need other decades);
3. **widget**: :func:`serving_explorer` -> :class:`ServingExplorer` (an :class:`Explorer`).
"""

from __future__ import annotations

from typing import Sequence

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..hardware import get_chip
from ..live.serving import (
    BATCH_RANGE,
    CACHE_DTYPES,
    COMPUTE_DTYPES,
    CRITICAL_COLOUR,
    KV_SHARDINGS,
    MEMORY_AXIS_HBM,
    MEMORY_KINDS,
    OVER_COLOUR,
    RATE_COLOUR,
    RED,
    SERVING_CHIPS,
    TIME_COLOUR,
    WEIGHT_DTYPES,
    ServingState,
    choose_dtype,
    curve_batches,
    linked_controls,
    memory_fractions,
    not_fit_message,
    plot_limits,
    serving_series,
    serving_state,
    serving_summary,
)
from ..training import PRESETS
from ..units import format_count, format_seconds
from ..validation import positive_int
from . import Explorer, _log_ticks

__all__ = [
    "ServingState", "serving_state", "serving_figure", "draw_serving", "update_serving",
    "serving_summary", "serving_explorer", "ServingExplorer", "SERVING_CHIPS",
    "WEIGHT_DTYPES", "CACHE_DTYPES", "COMPUTE_DTYPES", "MEMORY_KINDS", "BATCH_RANGE",
    "curve_batches", "memory_fractions", "not_fit_message",
]

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
    (artists["hbm"],) = ax_m.plot([-0.5, 0.5], [1.0, 1.0], color=RED, lw=2, ls="--",
                                  label="HBM")
    ax_m.set(xlim=(-0.5, 0.5), ylim=(0, MEMORY_AXIS_HBM), xticks=[],
             ylabel="per chip ÷ its HBM")
    ax_m.legend(loc="upper center", bbox_to_anchor=(0.5, -0.01), fontsize=7, frameon=False,
                ncol=2, handlelength=1.2, columnspacing=0.8)

    time_lim, rate_lim = plot_limits(state)
    ax_t.set(xscale="log", yscale="log", xlim=BATCH_RANGE, ylim=time_lim,
             xlabel="batch B (sequences)")
    ax_t.set_ylabel("time per output token", color=TIME_COLOUR)
    ax_r.set(yscale="log", ylim=rate_lim)
    ax_r.set_ylabel("tokens/s per chip", color=RATE_COLOUR)
    _log_ticks(ax_t.xaxis, format_count)
    _log_ticks(ax_t.yaxis, format_seconds)
    _log_ticks(ax_r.yaxis, format_count)
    ax_t.grid(True, which="major", alpha=0.3)
    shade = Rectangle((BATCH_RANGE[1], 0.0), 0.0, 1.0, transform=ax_t.get_xaxis_transform(),
                      color=RED, alpha=0.12, lw=0, label="cache does not fit")
    artists["no_fit"] = ax_t.add_patch(shade)
    (artists["time"],) = ax_t.plot([], [], color=TIME_COLOUR, lw=2, label="time per token")
    (artists["critical"],) = ax_t.plot([], [], color=CRITICAL_COLOUR, lw=1, ls=":",
                                       label="critical batch")
    (artists["time_now"],) = ax_t.plot([], [], color=TIME_COLOUR, marker="o", ls="", mec="black",
                                       ms=7, zorder=5)
    (artists["rate"],) = ax_r.plot([], [], color=RATE_COLOUR, lw=2, label="tokens/s per chip")
    (artists["rate_now"],) = ax_r.plot([], [], color=RATE_COLOUR, marker="o", ls="",
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
    (artists["curve_over"],) = ax_c.plot([], [], color=OVER_COLOUR, lw=1.5, ls=":",
                                         label="cache does not fit")
    (artists["curve_now"],) = ax_c.plot([], [], color=TIME_COLOUR, marker="o", ls="",
                                        mec="black", ms=8, zorder=5)
    ax_c.legend(loc="upper left", fontsize=7, frameon=False)

    for key, ax in (("memory_title", ax_m), ("time_title", ax_t), ("curve_title", ax_c)):
        artists[key] = ax.text(0.0, 1.03, "", transform=ax.transAxes, fontsize=8)
    artists["heading"] = figure.text(0.01, 0.985, "", fontsize=9, va="top")
    artists["flag"] = figure.text(0.01, 0.92, "", fontsize=9, va="top", color=RED,
                                  fontweight="bold")
    update_serving(axes, artists, state)
    return artists


def update_serving(axes: Sequence, artists: dict, state: ServingState) -> list | None:
    """Move :func:`draw_serving`'s artists to ``state``; return every artist that depends on
    it, or None when the time or throughput axis needs other decades (the caller redraws).
    Every number drawn is :func:`~scalebook.live.serving.serving_series`'s, the series the
    book's static site draws too."""
    ax_m, ax_t, ax_r, ax_c = axes
    series = serving_series(state)
    time_lim, rate_lim = series["time_lim"], series["rate_lim"]
    if (tuple(ax_t.get_ylim()) != time_lim or tuple(ax_r.get_ylim()) != rate_lim
            or tuple(ax_c.get_xlim()) != rate_lim):
        return None
    dynamic: list = []
    for bar in series["memory"]:
        rectangle = artists[f"memory/{bar['kind']}"]
        rectangle.set_y(bar["bottom"])
        rectangle.set_height(bar["height"])
        dynamic.append(rectangle)

    artists["time"].set_data(*_columns(series["time"]))
    artists["rate"].set_data(*_columns(series["rate"]))
    artists["time_now"].set_data(*([v] for v in series["time_now"]))
    artists["rate_now"].set_data(*([v] for v in series["rate_now"]))
    b_star = series["critical"]  # None: decode never turns compute-bound, no vertical
    artists["critical"].set_data(*(([], []) if b_star is None else ([b_star] * 2, time_lim)))
    left, right = series["no_fit"]
    artists["no_fit"].set_x(left)
    artists["no_fit"].set_width(right - left)
    artists["curve"].set_data(*_columns(series["curve"]))
    artists["curve_over"].set_data(*_columns(series["curve_over"]))
    artists["curve_now"].set_data(*([v] for v in series["curve_now"]))
    dynamic += [artists[k] for k in ("no_fit", "time", "critical", "time_now", "rate",
                                     "rate_now", "curve", "curve_over", "curve_now")]
    for name in ("memory_title", "time_title", "curve_title", "heading", "flag"):
        artists[name].set_text(series[name])
    dynamic += [artists["hbm"], artists["memory_title"], artists["time_title"],
                artists["curve_title"], artists["heading"], artists["flag"]]
    return dynamic


def _columns(points: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """[[x, y], ...] as ([x, ...], [y, ...]), what ``Line2D.set_data`` takes."""
    return [p[0] for p in points], [p[1] for p in points]


# --------------------------------------------------------------------------- widget


class ServingExplorer(Explorer):
    """The serving explorer's :class:`Explorer`: storing the weights in a dtype the matmuls
    cannot run in puts the matmuls back to bf16."""

    def link_controls(self, changed) -> None:
        name = next((n for n, control in self.controls.items() if control is changed), None)
        self.set_quietly(linked_controls(self.values(), name))


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
                     compute_dtype: str = "bf16", kv_sharding: str = "heads",
                     dpi: float = 100) -> ServingExplorer:
    """A serving explorer; the default is the case study, LLaMA-3 70B on 8 H100s, 32 sequences
    of 4,096 tokens (2,048 in, 2,048 out), everything in bf16.

    Controls (``w.controls``): ``preset``, ``chip`` (:data:`SERVING_CHIPS`), ``n_chips`` (a
    box: any count, checked), ``prompt_len``, ``gen_len`` and ``batch`` (sliders over 1, 2, 3,
    4, 6, 8, … stops), ``weight_dtype``, ``cache_dtype``, ``compute_dtype`` and
    ``kv_sharding`` (split the cache by KV head, copied past K chips, or by sequence). ``w.state`` is a
    :class:`ServingState`. Raises ``ValueError`` for bad initial inputs.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown model {preset!r}; choose one of {', '.join(PRESETS)}")
    chip_name = get_chip(chip).name
    if chip_name not in SERVING_CHIPS:
        raise ValueError(f"{chip_name} has no bf16 units; choose one of {', '.join(SERVING_CHIPS)}")
    dtypes = {name: choose_dtype(value, allowed, name.replace("_", " "))
              for name, value, allowed in (
                  ("weight_dtype", weight_dtype, WEIGHT_DTYPES),
                  ("cache_dtype", cache_dtype, CACHE_DTYPES),
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
    if kv_sharding not in KV_SHARDINGS:
        raise ValueError(f"kv_sharding must be one of {', '.join(KV_SHARDINGS)}, got {kv_sharding!r}")
    controls["kv_sharding"] = widgets.Dropdown(options=KV_SHARDINGS, value=kv_sharding,
                                               description="cache split by")
    figure = serving_figure(dpi)
    rows = [("preset", "chip", "n_chips"), ("prompt_len", "gen_len", "batch"),
            ("weight_dtype", "cache_dtype", "compute_dtype", "kv_sharding")]
    return ServingExplorer(
        controls, figure, serving_state, lambda fig, state: draw_serving(fig.axes, state),
        serving_summary, layout_rows=rows,
        refresh=lambda fig, artists, state: update_serving(fig.axes, artists, state),
        live="scalebook.live.serving")

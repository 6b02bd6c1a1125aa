"""Figures of Part 8 (serving systems), each drawn from :mod:`scalebook.service`'s objects.

Every function takes what the solver computed (simulated traces, chunked-prefill or speculation
results, a KV layout) and returns a :class:`~scalebook.picture.Picture` whose alt text is
written from the same numbers.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..picture import Picture
from ..service import ChunkedPrefill, SimResult, Speculation
from ..units import format_seconds

__all__ = ["latency_against_load", "kv_blocks", "chunk_trade", "speculation_against_batch",
           "goodput_against_load", "kv_over_time"]

BLUE, ORANGE, GREEN, GREY, RED, PURPLE = ("#1f5fa8", "#d9731a", "#2a8a3a", "#777777",
                                          "#b00020", "#7a3fa0")
COLOURS = (BLUE, ORANGE, GREEN, PURPLE, GREY)


def _fmt(x: float) -> str:
    return format_seconds(x, 2)


def latency_against_load(curves: Mapping[str, Sequence[SimResult]]) -> Picture:
    """Median and p99 TTFT against the arrival rate, one colour per scheduler (``curves``:
    label -> traces in order of rate)."""
    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.add_subplot()
    words = []
    for (label, runs), colour in zip(curves.items(), COLOURS):
        rates = [r.workload.arrival_rate for r in runs]
        ax.plot(rates, [r.ttft(50) for r in runs], "-o", color=colour, ms=4,
                label=f"{label}: p50")
        ax.plot(rates, [r.ttft(99) for r in runs], "--", color=colour, label=f"{label}: p99")
        words.append(f"{label}: median TTFT from {_fmt(runs[0].ttft(50))} at "
                     f"{rates[0]:g} requests/s to {_fmt(runs[-1].ttft(50))} at {rates[-1]:g}")
    ax.set_yscale("log")
    ax.set_xlabel("arrival rate λ (requests/s)")
    ax.set_ylabel("time to first token (s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Picture(fig, "Line chart of time to first token against arrival rate, log scale. "
                   + "; ".join(words) + ".")


def kv_blocks(lengths: Sequence[int], *, block_size: int, max_len: int) -> Picture:
    """Each sequence's cache as a row: tokens written, the last block's empty slots (paged),
    and the rest of a ``max_len`` reservation (contiguous)."""
    fig = Figure(figsize=(7.0, 0.45 * len(lengths) + 1.0))
    ax = fig.add_subplot()
    used = paged = 0
    for row, n in enumerate(lengths):
        y = len(lengths) - 1 - row
        blocks = -(-n // block_size)
        ax.add_patch(Rectangle((0, y), n, 0.8, color=BLUE))
        ax.add_patch(Rectangle((n, y), blocks * block_size - n, 0.8, color=ORANGE))
        ax.add_patch(Rectangle((blocks * block_size, y), max_len - blocks * block_size, 0.8,
                               facecolor="none", edgecolor=GREY, hatch="///", lw=0.5))
        for b in range(blocks + 1):
            ax.plot([b * block_size] * 2, [y, y + 0.8], color="white", lw=0.6)
        used, paged = used + n, paged + blocks * block_size
    reserved = max_len * len(lengths)
    ax.set_xlim(0, max_len)
    ax.set_ylim(-0.2, len(lengths))
    ax.set_yticks([len(lengths) - 1 - i + 0.4 for i in range(len(lengths))],
                  [f"seq {i + 1}: {n}" for i, n in enumerate(lengths)])
    ax.set_xlabel(f"cache slots (tokens), blocks of {block_size}")
    ax.legend(handles=[Rectangle((0, 0), 1, 1, color=BLUE, label="written"),
                       Rectangle((0, 0), 1, 1, color=ORANGE, label="last block's empty slots"),
                       Rectangle((0, 0), 1, 1, facecolor="none", edgecolor=GREY, hatch="///",
                                 label="reserved, never written")],
              fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3)
    return Picture(fig, f"Block diagram of {len(lengths)} sequences' KV caches. Written tokens "
                   f"{used:,}; paged in blocks of {block_size} they take {paged:,} slots "
                   f"({100 * (1 - used / paged):.0f}% empty); reserved at {max_len:,} each they "
                   f"take {reserved:,} ({100 * (1 - used / reserved):.0f}% empty).")


def chunk_trade(results: Sequence[ChunkedPrefill], *, tpot_slo: float) -> Picture:
    """TPOT while a prompt is chunked, and the prompt's TTFT, against the chunk size; the
    unchunked stall and the TPOT SLO as lines."""
    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.add_subplot()
    chunks = [r.chunk for r in results]
    ax.plot(chunks, [r.tpot_chunked * 1e3 for r in results], "-o", color=ORANGE, ms=4,
            label="TPOT of the decoders while the prompt is chunked")
    ax.axhline(results[0].tpot_stall * 1e3, color=RED, ls=":",
               label="TPOT of the step that prefills the whole prompt")
    ax.axhline(tpot_slo * 1e3, color=GREY, ls="--", label="TPOT SLO")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("chunk (tokens)")
    ax.set_ylabel("ms per output token")
    ax2 = ax.twinx()
    ax2.plot(chunks, [r.ttft_chunked * 1e3 for r in results], "-s", color=BLUE, ms=4,
             label="TTFT of the chunked prompt")
    ax2.set_ylabel("TTFT (ms)", color=BLUE)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18),
              ncol=2)
    ax.grid(alpha=0.3)
    lo, hi = results[0], results[-1]
    return Picture(fig, f"Line chart against chunk size from {lo.chunk} to {hi.chunk} tokens: "
                   f"decoders' TPOT rises from {_fmt(lo.tpot_chunked)} to "
                   f"{_fmt(hi.tpot_chunked)} (unchunked stall {_fmt(lo.tpot_stall)}, SLO "
                   f"{_fmt(tpot_slo)}); the prompt's TTFT falls from {_fmt(lo.ttft_chunked)} "
                   f"to {_fmt(hi.ttft_chunked)}.")


def speculation_against_batch(curves: Mapping[int, Sequence[Speculation]],
                              batches: Sequence[int]) -> Picture:
    """Speed-up of speculative decoding against the batch, one line per draft length ``k``."""
    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.add_subplot()
    words = []
    for (k, specs), colour in zip(curves.items(), COLOURS):
        ups = [s.speedup for s in specs]
        ax.plot(batches, ups, "-o", color=colour, ms=3, label=f"k = {k}")
        words.append(f"k = {k}: {ups[0]:.2f}× at batch {batches[0]}, {ups[-1]:.2f}× at "
                     f"{batches[-1]}")
    ax.axhline(1.0, color=GREY, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("speed-up over plain decoding")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Picture(fig, "Line chart of speculative decoding's speed-up against the batch: "
                   + "; ".join(words) + ". Below 1 it slows the server down.")


def goodput_against_load(curves: Mapping[str, Sequence[SimResult]]) -> Picture:
    """Goodput (requests/s meeting the SLOs) against the arrival rate, one line per
    configuration, with the line goodput = arrivals."""
    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.add_subplot()
    words = []
    top = 0.0
    for (label, runs), colour in zip(curves.items(), COLOURS):
        rates = [r.workload.arrival_rate for r in runs]
        good = [r.goodput for r in runs]
        top = max(top, max(rates))
        ax.plot(rates, good, "-o", color=colour, ms=4, label=label)
        best = max(range(len(good)), key=lambda i: good[i])
        words.append(f"{label}: peaks at {good[best]:.1f} requests/s at λ = {rates[best]:g}")
    ax.plot([0, top], [0, top], ":", color=GREY, label="every request meets the SLO")
    ax.set_xlabel("arrival rate λ (requests/s)")
    ax.set_ylabel("goodput (requests/s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Picture(fig, "Line chart of goodput against arrival rate. " + "; ".join(words) + ".")


def kv_over_time(runs: Mapping[str, SimResult]) -> Picture:
    """The KV cache held over a trace, one line per configuration, with what fits."""
    fig = Figure(figsize=(7.0, 3.4))
    ax = fig.add_subplot()
    words = []
    cap = 0.0
    for (label, r), colour in zip(runs.items(), COLOURS):
        ax.plot([s.time for s in r.samples], [s.kv_bytes / 1e9 for s in r.samples],
                color=colour, label=f"{label}: cache held")
        peak_batch = max(s.batch for s in r.samples)
        words.append(f"{label}: up to {peak_batch} sequences in flight")
        cap = r.kv_capacity / 1e9
    ax.axhline(cap, color=RED, ls="--", label="cache that fits")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("KV cache (GB)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return Picture(fig, f"Line chart of KV cache held over the trace against {cap:.0f} GB that "
                   "fit. " + "; ".join(words) + ".")

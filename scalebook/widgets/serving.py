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

The front end here is the controls; the state, chart and summary are
:mod:`scalebook.live.serving`'s, drawn by :class:`~scalebook.widgets.explorer.Explorer`.
"""

from __future__ import annotations

import ipywidgets as widgets

from ..live.serving import (CACHE_DTYPES, COMPUTE_DTYPES, KV_SHARDINGS, SERVING_CHIPS,
                            WEIGHT_DTYPES, choose_dtype, serving_state)
from ..training import PRESETS
from ..validation import positive_int
from .controls import offered_chip
from .explorer import Explorer

__all__ = ["serving_explorer"]


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
                     dpi: float = 100) -> Explorer:
    """A serving explorer; the default is the case study, LLaMA-3 70B on 8 H100s, 32 sequences
    of 4,096 tokens (2,048 in, 2,048 out), everything in bf16.

    Controls (``w.controls``): ``preset``, ``chip`` (:data:`SERVING_CHIPS`), ``n_chips`` (a
    box: any count, checked), ``prompt_len``, ``gen_len`` and ``batch`` (sliders over 1, 2, 3,
    4, 6, 8, … stops), ``weight_dtype``, ``cache_dtype``, ``compute_dtype`` and
    ``kv_sharding`` (split the cache by KV head, copied past K chips, or by sequence). ``w.state`` is a
    :class:`~scalebook.live.serving.ServingState`. Raises ``ValueError`` for bad initial inputs.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown model {preset!r}; choose one of {', '.join(PRESETS)}")
    chip_name = offered_chip(chip, SERVING_CHIPS, "has no bf16 units")
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
    rows = [("preset", "chip", "n_chips"), ("prompt_len", "gen_len", "batch"),
            ("weight_dtype", "cache_dtype", "compute_dtype", "kv_sharding")]
    return Explorer("scalebook.live.serving", controls, layout_rows=rows, state=serving_state,
                    dpi=dpi)

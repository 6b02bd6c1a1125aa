"""Published measurements of real systems held against the solver: the book's reality checks.

Each :class:`Measurement` in ``book/data/published/*.json`` (one file per topic, read in name
order; ids are unique across files, sources are local to their file) is one number somebody
measured on a real machine (an NCCL-tests bus bandwidth, a GEMM's TFLOP/s, a STREAM copy, a
profiled TPU AllGather), with its system, its source, and the source's row quoted verbatim.
:func:`predict` computes the solver's figure for the same quantity through the public API
(:func:`scalebook.collectives.collective_cost`, :func:`scalebook.roofline.matmul_time`,
:func:`scalebook.roofline.time_bounds`), and :func:`reality_check` puts the two side by side.

The ratio
---------
One convention for every row::

    ratio = measured throughput / predicted throughput = predicted time / measured time

The solver's models are lower bounds on time (rooflines, alpha-beta collectives at line rate),
so a ratio **above 1 means the measurement beat the model: a model error** (the model misses a
mechanism, e.g. NVLink SHARP); a ratio well below 1 is overhead the text must name (protocol
overhead, clocks, latency). For a time (``quantity="collective_time"``) the ratio is
predicted / measured; for a throughput (bytes/s, FLOP/s) it is measured / predicted.

Each measurement carries a band ``[lo, hi]`` with a one-line reason, chosen to be honest for the
*correct* model of what ran (e.g. NVLS rows expect a model that knows in-switch reduction); the
tests keep every ratio inside its band, so a model change that breaks agreement fails.

Bus bandwidth
-------------
NCCL-tests reports ``algbw = S / t`` and ``busbw = algbw × factor``, with factor
``2(n−1)/n`` for AllReduce and ``(n−1)/n`` for AllGather and ReduceScatter, where ``S`` is the
whole array (AllReduce and ReduceScatter: the input each rank holds; AllGather: the gathered
output) — NVIDIA/nccl-tests, doc/PERFORMANCE.md. That ``S`` is exactly the ``nbytes``
convention of :mod:`scalebook.collectives`, so a prediction is
``bus_bandwidth(kind, S, collective_cost(kind, S, ...).time, n)``.

Which NCCL algorithm ran
------------------------
``Measurement.algorithm`` records what the measurement ran ("ring", "nvls", "sharp", or "auto"
where the source does not say; None for things that are not NCCL collectives), and the
prediction prices that algorithm (``collective_cost(..., algorithm=...)``, "auto" for None):
an NVLS AllReduce is held against the in-switch model, a ring against the ring.

Training runs
-------------
A training row (``training_mfu``, ``training_hfu``: fractions of the bf16 peak;
``run_chip_hours``) names its model, layout, batch and sequence length in ``setting``, and the
prediction is the planner's (:func:`scalebook.training.plan_training`) for exactly that: an
upper bound on MFU (peak matmuls, communication hidden wherever the planner lets it), so a
ratio above 1 is a planner error. ``run_chip_hours`` is a whole run's cost at the compute bound
(MFU 1), so its ratio is the run's implied MFU.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, Sequence

from . import inference
from .collectives import KINDS, CollectiveCost, collective_cost
from .hardware import canonical_dtype, get_chip
from .moe import deepseek_v3, moe_all_to_all, moe_decode_step, moe_prefill_throughput
from .live.comparison import table_markdown
from .roofline import matmul_cost, matmul_time, time_bounds
from .transformer import TransformerConfig, llama3_8b, llama3_70b
from .units import (format_bandwidth, format_flops, format_integer, format_scientific,
                    format_seconds)

__all__ = [
    "DATA_DIR", "DATA_PATH", "CHAPTERS", "QUANTITIES", "ALGORITHMS", "BUS_FACTOR_KINDS",
    "Source", "System", "Measurement", "Row",
    "bus_bandwidth_factor", "bus_bandwidth",
    "load_measurements", "parse_measurements", "get_measurement",
    "predict", "ratio", "reality_check", "reality_check_markdown", "TIME_UNITS",
    "training_config", "training_plan", "SERVING_MODELS", "serving_model", "SCHEDULES",
]

DATA_DIR = Path(__file__).resolve().parent.parent / "book" / "data" / "published"
"""The folder of measurement files; :func:`load_measurements` reads every ``*.json`` in it."""

DATA_PATH = DATA_DIR / "measurements.json"
"""The first file: one chip and collectives (Parts 2 and 3)."""

CHAPTERS = ("hardware", "sharded-matmuls", "parallelism", "transformers", "inference",
            "moe-long-context")
"""Chapters with a reality check: Part 2 (one chip: GEMMs, HBM), Part 3 (collectives), Parts 4
and 5 (whole training runs, book/data/published/training.json), Part 6 (serving a dense model,
serving.json) and Part 7 (MoE dispatch and combine, MoE serving, moe.json)."""

QUANTITIES = {
    "bus_bandwidth": "bytes/s",
    "collective_time": "s",
    "matmul_throughput": "FLOP/s",
    "hbm_bandwidth": "bytes/s",
    "moe_all_to_all_time": "s",
    "moe_dispatch_bandwidth": "bytes/s",
    "moe_serving_throughput": "tokens/s",
    "serving_throughput": "tokens/s",
    "prefill_time": "s",
    "training_mfu": "1",
    "training_hfu": "1",
    "run_chip_hours": "chip-h",
}
"""What can be measured, and its SI unit. The whole-system quantities read their inputs from the
measurement's ``setting``: ``serving_throughput`` is output tokens per second per chip of a
serving copy of a dense model and ``prefill_time`` the time to the first token of a prompt
(Part 6); ``moe_serving_throughput`` is tokens per second per node of an MoE serving system
(Part 7); the training quantities are fractions of peak ("1") or chip-hours ("chip-h")."""

TIME_UNITS = ("s", "chip-h")
"""Units of a cost (less is better): their ratio is predicted / measured."""

ALGORITHMS = ("auto", "ring", "nvls", "tree", "one-shot", "two-shot", "sharp")
"""The NCCL algorithms a measurement may record (the values ``collective_cost`` is to take)."""

BUS_FACTOR_KINDS = ("AllReduce", "AllGather", "ReduceScatter")
"""Collectives with an NCCL-tests bus-bandwidth factor here."""

LARGE_MESSAGE = float(2**30)
"""Bytes used for a source that gives no message size but speaks of large messages: the
prediction is then taken with no per-step latency, where busbw does not depend on the size."""

HBM_PROBE_BYTES = 1e9
"""Bytes of the copy the HBM prediction prices; a pure copy's roofline rate is size-free."""

_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_QUOTE_JOIN = " […] "


@dataclass(frozen=True)
class Source:
    """Where a measurement was published: ``title``, ``url`` (pinned to a commit where it is a
    repository file) and ``kind`` ("official benchmark results", "maintainer statement", ...)."""

    key: str
    title: str
    url: str
    kind: str


@dataclass(frozen=True)
class System:
    """The machine a measurement ran on.

    Attributes:
        chip: a catalog name (:func:`scalebook.hardware.get_chip`).
        n_devices: chips in the measurement (the collective's group, or 1).
        description: the node or slice in words (VM type, links, NICs).
        software: library versions and flags where the source gives them.
        gpus_per_node: GPUs of the group per node when it spans several nodes; None in one node.
        nic_bandwidth: bytes/s of one GPU's NIC where it differs from the catalog's; None: catalog.
        nvlink_bandwidth: bytes/s of one GPU's NVLink egress, one way, where it differs from the
            catalog's (an H800 measured as the catalog's H100 die); None: catalog.
        label: the GPU's name as the source gives it, where a catalog entry stands in for it
            ("H800", priced as the H100 with ``nvlink_bandwidth``); "" when ``chip`` is it.
    """

    chip: str
    n_devices: int
    description: str
    software: str = ""
    gpus_per_node: int | None = None
    nic_bandwidth: float | None = None
    nvlink_bandwidth: float | None = None
    label: str = ""


@dataclass(frozen=True)
class Measurement:
    """One published measurement (see the module docstring for the conventions).

    Attributes:
        id: a short unique slug.
        chapter: one of :data:`CHAPTERS`.
        quantity: one of :data:`QUANTITIES`; ``unit`` is its SI unit.
        value: the measured number in ``unit``.
        system: where it ran.
        source: where it was published; ``locator`` says which table, section or row.
        quote: the source's row, verbatim (pieces joined by " […] ").
        band: ``(lo, hi)`` for :func:`ratio`; ``band_reason`` says why, in one line.
        collective: "AllReduce", ... for the collective quantities, else None.
        nbytes: the array size in bytes (NCCL-tests' ``size``), None if the source gives none.
        shape: ``(M, N, K)`` of ``Out[M, N] = A[M, K] · B[K, N]`` for a GEMM, else None.
        dtype: the GEMM's input dtype, else None.
        algorithm: the NCCL algorithm it ran (:data:`ALGORITHMS`), None if not an NCCL one.
        setting: the named inputs a prediction of a whole-system quantity reads (model, layout,
            batch, sequence length, ...), as the source states them; empty for the others.
        notes: caveats.
    """

    id: str
    chapter: str
    quantity: str
    unit: str
    value: float
    system: System
    source: Source
    locator: str
    quote: str
    band: tuple[float, float]
    band_reason: str
    collective: str | None = None
    nbytes: float | None = None
    shape: tuple[int, int, int] | None = None
    dtype: str | None = None
    algorithm: str | None = None
    setting: Mapping[str, object] = field(default_factory=dict)
    notes: str = ""

    @property
    def what(self) -> str:
        """The quantity in words, e.g. "AllReduce busbw, 8 GiB" or "bf16 GEMM 8192x8192x8192"."""
        if self.quantity in ("bus_bandwidth", "collective_time"):
            size = "large messages" if self.nbytes is None else _size_text(self.nbytes)
            what = "busbw" if self.quantity == "bus_bandwidth" else "time"
            return f"{_kind(self)} {what}, {size}"
        if self.quantity == "matmul_throughput":
            (m, n, k), dtype = _gemm(self)
            return f"{dtype} GEMM {m}x{n}x{k} (MxNxK)"
        if self.quantity in ("moe_all_to_all_time", "moe_dispatch_bandwidth"):
            s = self.setting
            what = "time" if self.quantity == "moe_all_to_all_time" else "bottleneck bandwidth"
            return (f"MoE {s.get('phase', 'dispatch')} {what}, {s.get('tokens_per_gpu')} tokens "
                    f"per GPU, top-{s.get('top_k')}, {s.get('dtype')}")
        if self.quantity == "moe_serving_throughput":
            s = self.setting
            if s.get("phase") == "prefill":
                return (f"{s.get('model')} prefill tokens/s per node, "
                        f"{s.get('prompt_len'):,}-token prompts")
            return (f"{s.get('model')} decode tokens/s per node, "
                    f"{s.get('context_len'):,}-token caches")
        if self.quantity in _TRAINING_QUANTITIES:
            return _training_what(self)
        if self.quantity == "serving_throughput":
            st = self.setting
            return (f"{st.get('model')} output tokens/s per chip, B = {st.get('batch')}, "
                    f"{st.get('input_len')} in / {st.get('output_len')} out")
        if self.quantity == "prefill_time":
            st = self.setting
            return (f"{st.get('model')} time to first token, B = {st.get('batch')}, "
                    f"{st.get('input_len')}-token prompt")
        return "HBM copy bandwidth (read + write)"


@dataclass(frozen=True)
class Row:
    """One line of a reality check: the measurement, the solver's prediction (same unit), the
    ratio (:func:`ratio`), the band, and whether the ratio lies inside it."""

    measurement: Measurement
    measured: float
    predicted: float
    ratio: float
    band: tuple[float, float]
    inside: bool


# --------------------------------------------------------------------------- bus bandwidth

def bus_bandwidth_factor(kind: str, n_devices: int) -> float:
    """NCCL-tests' busbw / algbw factor: ``2(n−1)/n`` for AllReduce, ``(n−1)/n`` for AllGather
    and ReduceScatter (NVIDIA/nccl-tests, doc/PERFORMANCE.md)."""
    if kind not in BUS_FACTOR_KINDS:
        raise ValueError(f"no bus-bandwidth factor for {kind!r}; "
                         f"known: {', '.join(BUS_FACTOR_KINDS)}")
    n = _count(n_devices, "n_devices")
    return (2.0 if kind == "AllReduce" else 1.0) * (n - 1) / n


def bus_bandwidth(kind: str, nbytes: float, seconds: float, n_devices: int) -> float:
    """Bus bandwidth in bytes/s as NCCL-tests reports it: ``algbw = S/t`` times
    :func:`bus_bandwidth_factor`, with ``S = nbytes`` the whole array (AllGather: the output)."""
    nbytes = _positive(nbytes, "nbytes")
    seconds = _positive(seconds, "seconds")
    return nbytes / seconds * bus_bandwidth_factor(kind, n_devices)


# --------------------------------------------------------------------------- predictions

def _kind(m: Measurement) -> str:
    if m.collective is None:
        raise ValueError(f"{m.id} is a {m.quantity}, not a collective")
    return m.collective


def _gemm(m: Measurement) -> tuple[tuple[int, int, int], str]:
    if m.shape is None or m.dtype is None:
        raise ValueError(f"{m.id} is a {m.quantity}, not a GEMM")
    return m.shape, m.dtype


def _gpu_options(m: Measurement, algorithm: str | None = None) -> dict:
    """Keyword options of ``collective_cost`` for a GPU measurement: the algorithm it ran
    (``algorithm`` overrides it, e.g. to show what the ring model would say)."""
    options: dict = {"algorithm": algorithm or m.algorithm or "auto"}
    if m.system.gpus_per_node is not None:
        options["gpus_per_node"] = m.system.gpus_per_node
    if m.system.nic_bandwidth is not None:
        options["nic_bandwidth"] = m.system.nic_bandwidth
    return options


def _collective(m: Measurement, algorithm: str | None = None) -> tuple[float, CollectiveCost]:
    """``collective_cost`` of the measured collective; the large-message limit when the source
    gives no size (no per-step latency)."""
    options = (_gpu_options(m, algorithm) if get_chip(m.system.chip).has_nvlink_domain else {})
    if m.nbytes is None:
        options["hop_latency"] = 0.0
    nbytes = LARGE_MESSAGE if m.nbytes is None else m.nbytes
    return nbytes, collective_cost(_kind(m), nbytes, [m.system.n_devices], m.system.chip,
                                   **options)


def predict_bus_bandwidth(m: Measurement, algorithm: str | None = None) -> float:
    """The solver's busbw (bytes/s): ``bus_bandwidth(kind, S, collective_cost(...).time, n)``,
    by the algorithm the measurement ran (or ``algorithm``)."""
    nbytes, cost = _collective(m, algorithm)
    return bus_bandwidth(_kind(m), nbytes, float(cost.time), m.system.n_devices)


def predict_collective_time(m: Measurement) -> float:
    """The solver's time of the collective (s): ``collective_cost(...).time``, over one axis of
    ``n_devices`` chips (a TPU axis without wraparound is a line, as the catalog says)."""
    return float(_collective(m)[1].time)


def predict_matmul_throughput(m: Measurement) -> float:
    """The roofline's FLOP/s of ``Out[M, N] = A[M, K] · B[K, N]``: ``2MNK / max(T_math,
    T_comms)`` (:func:`scalebook.roofline.matmul_time`, peak of ``dtype``, HBM traffic)."""
    (M, N, K), dtype = _gemm(m)
    flops = float(matmul_cost(M, K, N, x_dtype=dtype).flops)
    return flops / float(matmul_time(M, K, N, m.system.chip, x_dtype=dtype).lower)


def predict_hbm_bandwidth(m: Measurement) -> float:
    """The roofline's rate of a pure copy (bytes read + written per second): ``B / T_comms``
    with no FLOPs (:func:`scalebook.roofline.time_bounds`), i.e. the HBM bandwidth."""
    chip = get_chip(m.system.chip)
    bounds = time_bounds(0.0, HBM_PROBE_BYTES, flops_per_s=chip.flops("bf16"),
                         bytes_per_s=chip.hbm_bandwidth)
    return HBM_PROBE_BYTES / float(bounds.lower)


def _needs(m: Measurement, *keys: str) -> list:
    """The setting's values of ``keys``; ``ValueError`` naming the first one missing."""
    for key in keys:
        if key not in m.setting:
            raise ValueError(f"{m.id}: a {m.quantity} needs setting {key!r}")
    return [m.setting[key] for key in keys]


def _text_setting(m: Measurement, key: str, default: str) -> str:
    value = m.setting.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{m.id}: setting {key!r} must be a string, got {value!r}")
    return value


def _number_setting(m: Measurement, key: str, default: float | None = None) -> float | None:
    value = m.setting.get(key, default)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{m.id}: setting {key!r} must be a number, got {value!r}")
    return None if value is None else float(value)


def _moe_exchange(m: Measurement) -> CollectiveCost:
    """The dispatch (or combine: the same bytes) of :func:`scalebook.moe.moe_all_to_all` for the
    setting: tokens_per_gpu, d_model, top_k, dtype; optional copies_per_token (one copy per node
    reached) and pure_rdma (every copy through the NIC: ``gpus_per_node = 1``)."""
    tokens, d_model, top_k, dtype = _needs(m, "tokens_per_gpu", "d_model", "top_k", "dtype")
    gpn = 1 if m.setting.get("pure_rdma") else m.system.gpus_per_node
    a2a = moe_all_to_all(tokens, d_model, top_k, m.system.n_devices, m.system.chip, dtype=dtype,
                         copies_per_token=_number_setting(m, "copies_per_token"), gpus_per_node=gpn,
                         nvlink_bandwidth=m.system.nvlink_bandwidth,
                         nic_bandwidth=m.system.nic_bandwidth)
    return a2a.dispatch


def predict_moe_all_to_all_time(m: Measurement) -> float:
    """One MoE dispatch or combine (s): :func:`scalebook.moe.moe_all_to_all` over the
    measurement's ``n_devices`` GPUs (alpha-beta, line rate)."""
    return float(_moe_exchange(m).time)


def predict_moe_dispatch_bandwidth(m: Measurement) -> float:
    """The bytes/s a dispatch moves over its bottleneck link in the model: the link's rate
    diluted by the latency term, ``W · t_bandwidth / t`` — what DeepEP reports as its
    "bottleneck bandwidth" (bytes over the NVLink or RDMA link / time)."""
    cost = _moe_exchange(m)
    return float(cost.link_bandwidth * cost.bandwidth_time / cost.time)


def predict_moe_serving_throughput(m: Measurement) -> float:
    """Tokens/s per node of a whole MoE serving system, from its setting: ``model``
    ("DeepSeek-V3"), ``phase``; for "decode" ``batch_per_gpu``, ``context_len``, ``attention``,
    weight/compute/attention dtypes: ``gpus_per_node · batch_per_gpu / t_step``
    (:func:`scalebook.moe.moe_decode_step` over ``n_devices`` GPUs); for "prefill"
    ``prompt_len``, ``cached_share``: :func:`scalebook.moe.moe_prefill_throughput` of one node."""
    model, phase = _needs(m, "model", "phase")
    if model != "DeepSeek-V3":
        raise ValueError(f"{m.id}: no serving model {model!r}; known: DeepSeek-V3")
    cfg, chip = deepseek_v3(), get_chip(m.system.chip)
    gpn = m.system.gpus_per_node or chip.chips_per_host
    if phase == "prefill":
        (prompt,) = _needs(m, "prompt_len")
        return moe_prefill_throughput(
            cfg, chip, prompt_len=prompt, n_chips=gpn,
            compute_dtype=_text_setting(m, "compute_dtype", "fp8"),
            attention_dtype=_text_setting(m, "attention_dtype", "bf16"),
            cached_share=_number_setting(m, "cached_share", 0.0) or 0.0)
    if phase != "decode":
        raise ValueError(f"{m.id}: phase must be 'decode' or 'prefill', got {phase!r}")
    per_gpu, context = _needs(m, "batch_per_gpu", "context_len")
    n = m.system.n_devices
    step = moe_decode_step(cfg, chip, batch=per_gpu * n, context_len=context, n_chips=n,
                           weight_dtype=_text_setting(m, "weight_dtype", "fp8"),
                           compute_dtype=_text_setting(m, "compute_dtype", "fp8"),
                           attention_dtype=_text_setting(m, "attention_dtype", "bf16"),
                           attention=_text_setting(m, "attention", "dp"), gpus_per_node=gpn)
    return gpn * per_gpu / step.time
# --------------------------------------------------------------------------- training runs

_TRAINING_QUANTITIES = ("training_mfu", "training_hfu", "run_chip_hours")
_MODEL_KEYS = ("d_model", "n_layers", "n_heads", "d_ff", "vocab_size")
_LAYOUT_KEYS = ("dp", "fsdp", "tp", "pp", "zero_stage", "microbatches", "remat")


def _number(m: Measurement, key: str) -> float:
    """The number ``m.setting[key]``; ``ValueError`` naming the row if it is not one."""
    value = m.setting.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{m.id}: setting {key!r} must be a number, got {value!r}")
    return float(value)


def _training_what(m: Measurement) -> str:
    s = m.setting
    if m.quantity == "run_chip_hours":
        return (f"{s.get('model', 'run')}: chip-hours for "
                f"{format_scientific(_number(m, 'tokens'), 3)} tokens")
    layout = ", ".join(f"{k.upper()} {s[k]}" for k in ("tp", "pp", "dp", "fsdp")
                       if k in s and _number(m, k) > 1)
    kind = "MFU" if m.quantity == "training_mfu" else "HFU"
    return f"{s.get('model', 'model')} {kind} ({layout}; remat {s.get('remat', 'none')})"


def training_config(m: Measurement):
    """The :class:`scalebook.transformer.TransformerConfig` a training row's ``setting`` names
    (``d_model``, ``n_layers``, ``n_heads``, ``d_ff``, ``vocab_size``; optional ``n_kv_heads``,
    ``d_head``, ``gated_mlp``, ``tied_embeddings``)."""
    from .transformer import TransformerConfig
    s = m.setting
    missing = [k for k in _MODEL_KEYS if k not in s]
    if missing:
        raise ValueError(f"{m.id}: setting lacks {', '.join(missing)}")
    extra: dict = {k: s[k] for k in ("n_kv_heads", "d_head", "gated_mlp", "tied_embeddings")
                   if k in s}
    shape: dict = {k: s[k] for k in _MODEL_KEYS}
    return TransformerConfig(**shape, **extra, name=str(s.get("model", "")))


def training_plan(m: Measurement):
    """:func:`scalebook.training.plan_training` of the model, layout, batch and sequence length
    a training row's ``setting`` states, on ``m.system.chip`` (compute at peak, overlap on)."""
    from .training import TrainingLayout, plan_training
    s = m.setting
    degrees: dict = {k: s[k] for k in _LAYOUT_KEYS if k in s}
    return plan_training(training_config(m), TrainingLayout(**degrees), m.system.chip,
                         global_batch=int(_number(m, "global_batch")),
                         seq_len=int(_number(m, "seq_len")))


def predict_training_mfu(m: Measurement) -> float:
    """The planner's MFU (fraction of peak) for the row's model and layout: model FLOPs (6·P plus
    attention, no recompute) / (step time · N · bf16 peak). An upper bound: compute runs at
    peak and everything but tensor-parallel traffic may hide behind it."""
    return float(training_plan(m).mfu)


def predict_training_hfu(m: Measurement) -> float:
    """The planner's hardware FLOPs utilisation: executed FLOPs (recompute included) / (step
    time · N · peak), the figure the Megatron-LM papers report as "% of peak"."""
    plan = training_plan(m)
    peak = get_chip(m.system.chip).flops("bf16")
    return float(plan.hardware_flops_per_step / (plan.step_time.total * plan.n_chips * peak))


def predict_run_chip_hours(m: Measurement) -> float:
    """Chip-hours of a whole run at the compute bound: ``6 · N_active · tokens / (3600 · C)``
    (:func:`scalebook.training.training_flops_from_params` at MFU 1, ``C`` the bf16 peak).
    ratio = predicted / measured is then the run's implied MFU."""
    from .training import flops_from_chip_hours, training_flops_from_params
    flops = float(training_flops_from_params(_number(m, "active_params"), _number(m, "tokens")))
    per_hour = float(flops_from_chip_hours(1.0, m.system.chip, mfu=1.0))
    return flops / per_hour
# --------------------------------------------------------------------------- serving (Part 6)

SERVING_MODELS: Mapping[str, Callable[[], TransformerConfig]] = MappingProxyType({
    "LLaMA-2 7B": lambda: TransformerConfig(d_model=4096, n_layers=32, n_heads=32, d_ff=11008,
                                            vocab_size=32000, name="LLaMA-2 7B"),
    "LLaMA-2 70B": lambda: TransformerConfig(d_model=8192, n_layers=80, n_heads=64,
                                             n_kv_heads=8, d_ff=28672, vocab_size=32000,
                                             name="LLaMA-2 70B"),
    "LLaMA-3 8B": llama3_8b,
    "LLaMA-3 70B": llama3_70b,
})
"""The shapes a serving measurement's ``setting["model"]`` may name (Touvron et al. 2023,
"Llama 2", Table 1 and the released configs: 7B multi-head, 70B with 8 KV heads; LLaMA-3 from
:mod:`scalebook.transformer`)."""

SCHEDULES = ("static", "decode")
"""How a serving measurement ran its batch: ``"static"``: ``B`` prompts prefilled together,
then ``R`` decode steps (a fixed-batch benchmark); ``"decode"``: a continuous-batching server
whose throughput is its decode steps' (prefill interleaved and left out)."""


def serving_model(name: object) -> TransformerConfig:
    """The :data:`SERVING_MODELS` shape called ``name``; ``ValueError`` for any other."""
    if not isinstance(name, str) or name not in SERVING_MODELS:
        raise ValueError(f"no serving model {name!r}; known: {', '.join(SERVING_MODELS)}")
    return SERVING_MODELS[name]()


def _count_setting(m: Measurement, key: str) -> int:
    value = m.setting.get(key)
    if not _is_count(value):
        raise ValueError(f"{m.id}: setting {key!r} must be an integer >= 1, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def _serving_options(m: Measurement) -> dict:
    """The model, the chip count and the dtypes of a serving measurement's setting."""
    options = {}
    for key in ("weight_dtype", "cache_dtype", "compute_dtype"):
        value = m.setting.get(key)
        if not isinstance(value, str):
            raise ValueError(f"{m.id}: setting {key!r} must name a dtype, got {value!r}")
        options[key] = canonical_dtype(value)
    return options


def predict_serving_throughput(m: Measurement) -> float:
    """Output tokens/s per chip of a serving copy on ``n_devices`` chips (tensor parallel).

    ``"static"``: ``B·R / (t_prefill + R · t_decode) / n`` with the prefill of ``B`` prompts of
    ``T`` tokens (:func:`scalebook.inference.prefill`, causal) and ``R`` decode steps at the
    mean cache ``T + (R − 1)/2`` (:func:`scalebook.inference.decode_step`, the phased model;
    its attention is linear in the context, so the mean step times ``R`` is their sum).
    ``"decode"``: ``B / t_decode / n`` at ``setting["context_len"]`` cached tokens.
    """
    cfg, n = serving_model(m.setting.get("model")), m.system.n_devices
    b = _count_setting(m, "batch")
    options = _serving_options(m)
    schedule = m.setting.get("schedule")
    if schedule == "decode":
        step = inference.decode_step(cfg, m.system.chip, batch=b, n_chips=n,
                                     context_len=_count_setting(m, "context_len"), **options)
        return b / step.time / n
    if schedule != "static":
        raise ValueError(f"{m.id}: setting 'schedule' must be one of {SCHEDULES}, "
                         f"got {schedule!r}")
    t, r = _count_setting(m, "input_len"), _count_setting(m, "output_len")
    pf = inference.prefill(cfg, m.system.chip, prompt_len=t, batch=b, n_chips=n, causal=True,
                           **options)
    step = inference.decode_step(cfg, m.system.chip, batch=b, n_chips=n,
                                 context_len=t + (r - 1) // 2, **options)
    return b * r / (pf.time + r * step.time) / n


def predict_prefill_time(m: Measurement) -> float:
    """Time to the first token (s): :func:`scalebook.inference.prefill` of ``B`` prompts of
    ``T`` tokens on ``n_devices`` chips, causal, its phases and AllReduces not overlapped."""
    cfg = serving_model(m.setting.get("model"))
    return inference.prefill(cfg, m.system.chip, prompt_len=_count_setting(m, "input_len"),
                             batch=_count_setting(m, "batch"), n_chips=m.system.n_devices,
                             causal=True, **_serving_options(m)).time


_PREDICTORS: Mapping[str, Callable[[Measurement], float]] = {
    "bus_bandwidth": predict_bus_bandwidth,
    "collective_time": predict_collective_time,
    "matmul_throughput": predict_matmul_throughput,
    "hbm_bandwidth": predict_hbm_bandwidth,
    "moe_all_to_all_time": predict_moe_all_to_all_time,
    "moe_dispatch_bandwidth": predict_moe_dispatch_bandwidth,
    "moe_serving_throughput": predict_moe_serving_throughput,
    "serving_throughput": predict_serving_throughput,
    "prefill_time": predict_prefill_time,
    "training_mfu": predict_training_mfu,
    "training_hfu": predict_training_hfu,
    "run_chip_hours": predict_run_chip_hours,
}


def predict(m: Measurement) -> float:
    """The solver's prediction of ``m``'s quantity, in ``m.unit``."""
    return _PREDICTORS[m.quantity](m)


def ratio(m: Measurement, predicted: float) -> float:
    """measured / predicted throughput = predicted / measured time (module docstring)."""
    predicted = _positive(predicted, "predicted")
    return predicted / m.value if m.unit in TIME_UNITS else m.value / predicted


def reality_check(chapter: str, measurements: Sequence[Measurement] | None = None) -> list[Row]:
    """The rows of ``chapter`` (:data:`CHAPTERS`), in the data's order: measured, predicted,
    ratio, band, inside. ``measurements`` defaults to :func:`load_measurements`."""
    if chapter not in CHAPTERS:
        raise ValueError(f"no reality check for chapter {chapter!r}; known: {', '.join(CHAPTERS)}")
    chosen = load_measurements() if measurements is None else measurements
    rows = []
    for m in (m for m in chosen if m.chapter == chapter):
        predicted = predict(m)
        r = ratio(m, predicted)
        lo, hi = m.band
        rows.append(Row(m, m.value, predicted, r, m.band, lo <= r <= hi))
    return rows


def _quantity_text(value: float, unit: str) -> str:
    if unit == "1":
        return f"{value:.1%}"
    if unit == "chip-h":
        return f"{value / 1e6:.3g}M chip-h"
    if unit == "s":
        return format_seconds(value)
    if unit == "FLOP/s":
        return format_flops(value)
    if unit == "tokens/s":
        return f"{format_integer(value)} tokens/s"
    return format_bandwidth(value)


def _size_text(nbytes: float) -> str:
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def reality_check_markdown(chapter: str,
                           measurements: Sequence[Measurement] | None = None) -> str:
    """:func:`reality_check` as a Markdown table for a chapter's hidden cell: measurement,
    system, measured, predicted, ratio, band, inside?, source (linked)."""
    header = ("measurement", "system", "measured", "predicted", "ratio", "band", "inside?",
              "source")
    lines = []
    for row in reality_check(chapter, measurements):
        m = row.measurement
        system = f"{m.system.n_devices}x {m.system.label or m.system.chip}"
        if m.algorithm is not None:
            system += f", {m.algorithm}"
        link = m.source.title
        if m.source.url.startswith("http"):
            link = f"[{m.source.title}]({m.source.url})"
        lines.append((m.what, system, _quantity_text(row.measured, m.unit),
                      _quantity_text(row.predicted, m.unit), f"{row.ratio:.2f}",
                      f"{row.band[0]:.2f}–{row.band[1]:.2f}", "yes" if row.inside else "no",
                      link.replace("|", "/")))
    return table_markdown(header, lines)


# --------------------------------------------------------------------------- loading

def load_measurements(path: str | Path | None = None) -> tuple[Measurement, ...]:
    """Read and validate one measurements file, or (default) every ``*.json`` in
    :data:`DATA_DIR` in name order; an id used in two files is an error."""
    if path is None:
        files = sorted(DATA_DIR.glob("*.json"))
        if not files:
            raise ValueError(f"{DATA_DIR}: no measurements files")
        measurements: list[Measurement] = []
        seen: dict[str, str] = {}
        for file in files:
            for m in _load_file(file):
                if m.id in seen:
                    raise ValueError(f"{file}: measurement {m.id!r} is also in {seen[m.id]}")
                seen[m.id] = file.name
                measurements.append(m)
        return tuple(measurements)
    return _load_file(Path(path))


def _load_file(path: Path) -> tuple[Measurement, ...]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such measurements file") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    return parse_measurements(data, origin=str(path))


def get_measurement(measurement_id: str,
                    measurements: Sequence[Measurement] | None = None) -> Measurement:
    """The measurement with id ``measurement_id``; ``ValueError`` if there is none."""
    chosen = load_measurements() if measurements is None else measurements
    for m in chosen:
        if m.id == measurement_id:
            return m
    raise ValueError(f"no measurement {measurement_id!r}")


_MEASUREMENT_KEYS = {"id", "chapter", "quantity", "collective", "nbytes", "shape", "dtype",
                     "value", "unit", "system", "algorithm", "band", "band_reason", "source",
                     "locator", "quote", "notes", "setting"}
_REQUIRED = {"id", "chapter", "quantity", "value", "unit", "system", "band", "band_reason",
             "source", "locator", "quote"}
_SYSTEM_KEYS = {"chip", "n_devices", "description", "software", "gpus_per_node", "nic_bandwidth",
                "nvlink_bandwidth", "label"}
_SOURCE_KEYS = {"title", "url", "kind"}


def parse_measurements(data: object, origin: str = "measurements") -> tuple[Measurement, ...]:
    """Validate the decoded JSON ``data`` (``{"sources": {...}, "measurements": [...]}``) and
    build the measurements; ``ValueError`` naming the entry and the field for anything wrong."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{origin}: the top level must be an object with 'sources' and "
                         "'measurements'")
    sources_data, entries = data.get("sources"), data.get("measurements")
    if not isinstance(sources_data, Mapping) or not sources_data:
        raise ValueError(f"{origin}: 'sources' must be a non-empty object of source entries")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{origin}: 'measurements' must be a non-empty list")
    sources = {key: _source(key, value, origin) for key, value in sources_data.items()}
    measurements, seen = [], set()
    for index, entry in enumerate(entries):
        where = f"{origin}: measurement #{index}"
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
            where = f"{origin}: measurement {entry['id']!r}"
        measurement = _measurement(entry, sources, where)
        if measurement.id in seen:
            raise ValueError(f"{where}: the id is used twice")
        seen.add(measurement.id)
        measurements.append(measurement)
    return tuple(measurements)


def _source(key: object, value: object, origin: str) -> Source:
    where = f"{origin}: source {key!r}"
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: must be an object with {sorted(_SOURCE_KEYS)}")
    _keys(value, _SOURCE_KEYS, _SOURCE_KEYS, where)
    return Source(str(key), _text(value["title"], "title", where),
                  _text(value["url"], "url", where), _text(value["kind"], "kind", where))


def _measurement(entry: object, sources: Mapping[str, Source], where: str) -> Measurement:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: must be an object")
    _keys(entry, _MEASUREMENT_KEYS, _REQUIRED, where)
    mid = _text(entry["id"], "id", where)
    if not _ID.match(mid):
        raise ValueError(f"{where}: id must be lower-case letters, digits, '.' and '-', "
                         f"got {mid!r}")
    chapter = _choice(entry["chapter"], CHAPTERS, "chapter", where)
    quantity = _choice(entry["quantity"], tuple(QUANTITIES), "quantity", where)
    unit = _text(entry["unit"], "unit", where)
    if unit != QUANTITIES[quantity]:
        raise ValueError(f"{where}: a {quantity} is in {QUANTITIES[quantity]!r}, got unit {unit!r}")
    value = _positive(entry["value"], f"{where}: value")
    system = _system(entry["system"], where)
    chip = get_chip(system.chip)
    source_key = entry["source"]
    if source_key not in sources:
        raise ValueError(f"{where}: source {source_key!r} is not in 'sources' "
                         f"({', '.join(sorted(sources))})")
    band = _band(entry["band"], where)
    collective, nbytes, shape, dtype, algorithm = _what(entry, quantity, chip, system, where)
    setting = _setting(entry.get("setting"), where)
    if quantity in _TRAINING_QUANTITIES:
        need = (("active_params", "tokens") if quantity == "run_chip_hours"
                else _MODEL_KEYS + ("global_batch", "seq_len"))
        missing = [k for k in need if k not in setting]
        if missing:
            raise ValueError(f"{where}: a {quantity} needs setting {', '.join(missing)}")
    return Measurement(
        id=mid, chapter=chapter, quantity=quantity, unit=unit, value=value, system=system,
        source=sources[source_key], locator=_text(entry["locator"], "locator", where),
        quote=_text(entry["quote"], "quote", where), band=band,
        band_reason=_text(entry["band_reason"], "band_reason", where), collective=collective,
        nbytes=nbytes, shape=shape, dtype=dtype, algorithm=algorithm,
        setting=setting,
        notes=_text(entry.get("notes", ""), "notes", where, allow_empty=True))


def _what(entry: Mapping, quantity: str, chip, system: System, where: str):
    """collective, nbytes, shape, dtype, algorithm of an entry, each checked against its
    quantity."""
    collective = nbytes = shape = dtype = None
    algorithm = entry.get("algorithm")
    if quantity in ("bus_bandwidth", "collective_time"):
        collective = _choice(entry.get("collective"), KINDS, "collective", where)
        if quantity == "bus_bandwidth" and collective not in BUS_FACTOR_KINDS:
            raise ValueError(f"{where}: no bus bandwidth for {collective}; "
                             f"use one of {', '.join(BUS_FACTOR_KINDS)}")
        if entry.get("nbytes") is not None:
            nbytes = _positive(entry["nbytes"], f"{where}: nbytes")
        elif quantity == "collective_time":
            raise ValueError(f"{where}: a collective_time needs nbytes")
        if chip.has_nvlink_domain:
            algorithm = _choice(algorithm, ALGORITHMS, "algorithm", where)
        elif algorithm is not None:
            raise ValueError(f"{where}: algorithm is for NCCL collectives on GPUs; "
                             f"{chip.name} has none (use null)")
    else:
        for key in ("collective", "nbytes", "algorithm"):
            if entry.get(key) is not None:
                raise ValueError(f"{where}: {key} does not apply to a {quantity}")
    if quantity == "matmul_throughput":
        raw = entry.get("shape")
        if (not isinstance(raw, list) or len(raw) != 3
                or not all(_is_count(x) for x in raw)):
            raise ValueError(f"{where}: shape must be [M, N, K], three positive integers, "
                             f"got {raw!r}")
        shape = tuple(int(x) for x in raw)
        dtype = canonical_dtype(_text(entry.get("dtype"), "dtype", where))
        if dtype not in chip.flops_per_s:
            raise ValueError(f"{where}: {chip.name} has no {dtype} peak in the catalog")
    elif entry.get("shape") is not None or entry.get("dtype") is not None:
        raise ValueError(f"{where}: shape and dtype are for a matmul_throughput")
    if quantity in ("matmul_throughput", "hbm_bandwidth") and system.n_devices != 1:
        raise ValueError(f"{where}: a {quantity} is one chip's; n_devices must be 1")
    return collective, nbytes, shape, dtype, algorithm


def _setting(raw: object, where: str) -> Mapping[str, object]:
    """The optional ``setting`` object: names to numbers, strings, booleans or lists of them."""
    if raw is None:
        return MappingProxyType({})
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: setting must be an object of named inputs, got {raw!r}")
    for key, value in raw.items():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(x, (str, int, float, bool)) for x in items):
            raise ValueError(f"{where}: setting {key!r} must be a number, string, boolean or a "
                             f"list of them, got {value!r}")
    return MappingProxyType(dict(raw))


def _system(raw: object, where: str) -> System:
    where = f"{where}: system"
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be an object with chip, n_devices, description")
    _keys(raw, _SYSTEM_KEYS, {"chip", "n_devices", "description"}, where)
    chip = _text(raw["chip"], "chip", where)
    try:
        get_chip(chip)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    gpus_per_node = raw.get("gpus_per_node")
    nic, nvlink = raw.get("nic_bandwidth"), raw.get("nvlink_bandwidth")
    return System(
        chip=chip, n_devices=_count(raw["n_devices"], f"{where}: n_devices"),
        description=_text(raw["description"], "description", where),
        software=_text(raw.get("software", ""), "software", where, allow_empty=True),
        gpus_per_node=None if gpus_per_node is None else _count(gpus_per_node,
                                                                f"{where}: gpus_per_node"),
        nic_bandwidth=None if nic is None else _positive(nic, f"{where}: nic_bandwidth"),
        nvlink_bandwidth=None if nvlink is None else _positive(nvlink,
                                                               f"{where}: nvlink_bandwidth"),
        label=_text(raw.get("label", ""), "label", where, allow_empty=True))


def _band(raw: object, where: str) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise ValueError(f"{where}: band must be [lo, hi], got {raw!r}")
    lo, hi = (_positive(x, f"{where}: band") for x in raw)
    if not lo < hi:
        raise ValueError(f"{where}: band must have lo < hi, got {raw!r}")
    return lo, hi


def _keys(raw: Mapping, allowed: set, required: set, where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")
    missing = sorted(required - set(raw))
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")


def _text(value: object, what: str, where: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise ValueError(f"{where}: {what} must be a non-empty string, got {value!r}")
    return value


def _choice(value: object, choices: Sequence[str], what: str, where: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{where}: {what} must be one of {', '.join(map(repr, choices))}, "
                         f"got {value!r}")
    return value


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _count(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return value


def _positive(value: object, what: str) -> float:
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value <= 0):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return float(value)

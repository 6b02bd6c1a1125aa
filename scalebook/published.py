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
from .live.comparison import table_markdown
from .roofline import matmul_cost, matmul_time, time_bounds
from .transformer import TransformerConfig, llama3_8b, llama3_70b
from .units import format_bandwidth, format_flops, format_seconds

__all__ = [
    "DATA_DIR", "DATA_PATH", "CHAPTERS", "QUANTITIES", "ALGORITHMS", "BUS_FACTOR_KINDS",
    "Source", "System", "Measurement", "Row",
    "bus_bandwidth_factor", "bus_bandwidth",
    "load_measurements", "parse_measurements", "get_measurement",
    "predict", "ratio", "reality_check", "reality_check_markdown",
    "SERVING_MODELS", "serving_model", "SCHEDULES",
]

DATA_DIR = Path(__file__).resolve().parent.parent / "book" / "data" / "published"
"""The folder of measurement files; :func:`load_measurements` reads every ``*.json`` in it."""

DATA_PATH = DATA_DIR / "measurements.json"
"""The first file: one chip and collectives (Parts 2 and 3)."""

CHAPTERS = ("hardware", "sharded-matmuls", "inference")
"""Chapters with a reality check: Part 2 (one chip: GEMMs, HBM), Part 3 (collectives) and
Part 6 (serving a model)."""

QUANTITIES = {
    "bus_bandwidth": "bytes/s",
    "collective_time": "s",
    "matmul_throughput": "FLOP/s",
    "hbm_bandwidth": "bytes/s",
    "serving_throughput": "tokens/s",
    "prefill_time": "s",
}
"""What can be measured, and its SI unit. ``serving_throughput`` is output tokens per second
per chip of a serving copy; ``prefill_time`` is the time to the first token of a prompt."""

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
    """

    chip: str
    n_devices: int
    description: str
    software: str = ""
    gpus_per_node: int | None = None
    nic_bandwidth: float | None = None


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
    "serving_throughput": predict_serving_throughput,
    "prefill_time": predict_prefill_time,
}


def predict(m: Measurement) -> float:
    """The solver's prediction of ``m``'s quantity, in ``m.unit``."""
    return _PREDICTORS[m.quantity](m)


def ratio(m: Measurement, predicted: float) -> float:
    """measured / predicted throughput = predicted / measured time (module docstring)."""
    predicted = _positive(predicted, "predicted")
    return predicted / m.value if m.unit == "s" else m.value / predicted


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
    if unit == "s":
        return format_seconds(value)
    if unit == "FLOP/s":
        return format_flops(value)
    if unit == "tokens/s":
        return f"{value:,.0f} tokens/s"
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
        system = f"{m.system.n_devices}x {m.system.chip}"
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
_SYSTEM_KEYS = {"chip", "n_devices", "description", "software", "gpus_per_node", "nic_bandwidth"}
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
    return Measurement(
        id=mid, chapter=chapter, quantity=quantity, unit=unit, value=value, system=system,
        source=sources[source_key], locator=_text(entry["locator"], "locator", where),
        quote=_text(entry["quote"], "quote", where), band=band,
        band_reason=_text(entry["band_reason"], "band_reason", where), collective=collective,
        nbytes=nbytes, shape=shape, dtype=dtype, algorithm=algorithm,
        setting=_setting(entry.get("setting"), where),
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
    nic = raw.get("nic_bandwidth")
    return System(
        chip=chip, n_devices=_count(raw["n_devices"], f"{where}: n_devices"),
        description=_text(raw["description"], "description", where),
        software=_text(raw.get("software", ""), "software", where, allow_empty=True),
        gpus_per_node=None if gpus_per_node is None else _count(gpus_per_node,
                                                                f"{where}: gpus_per_node"),
        nic_bandwidth=None if nic is None else _positive(nic, f"{where}: nic_bandwidth"))


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

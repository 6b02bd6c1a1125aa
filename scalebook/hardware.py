"""The chip catalog: every hardware figure the book and the grader use.

All quantities are SI: bytes, bytes/s, FLOPs/s (dense, never "with sparsity"), seconds, hertz.
Each chip names its sources. The vetted reference is ``shared/facts/hardware.md``; where two
public figures disagree the catalog keeps one and says which in ``notes``.

A problem that states its own numbers overrides fields with :meth:`Chip.replace`::

    chip = get_chip("v5e").replace(hbm_bandwidth=8.2e11)
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

GB = 1e9
TB = 1e12

# Bytes per element. Sub-byte types are fractional: two int4 values share a byte.
_DTYPE_BYTES: Mapping[str, float] = MappingProxyType(
    {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}
)
_DTYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "float32": "fp32", "f32": "fp32",
        "bfloat16": "bf16",
        "float16": "fp16", "f16": "fp16", "half": "fp16",
        "float8": "fp8", "f8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "e4m3": "fp8",
        "s8": "int8", "i8": "int8",
        "s4": "int4", "i4": "int4",
        "float4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
    }
)
DTYPES: tuple[str, ...] = tuple(_DTYPE_BYTES)


def canonical_dtype(dtype: str) -> str:
    """Return the catalog's spelling of ``dtype`` ("bfloat16" -> "bf16").

    Raises ``ValueError`` naming the known dtypes for anything else.
    """
    if not isinstance(dtype, str):
        raise ValueError(f"dtype must be a string such as 'bf16', got {dtype!r}")
    key = dtype.strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; known dtypes: {', '.join(DTYPES)}")
    return key


def bytes_per_element(dtype: str) -> float:
    """Bytes one element of ``dtype`` occupies: fp32 4, bf16/fp16 2, fp8/int8 1, int4/fp4 0.5."""
    return _DTYPE_BYTES[canonical_dtype(dtype)]


@dataclass(frozen=True)
class Chip:
    """One accelerator chip, as a roofline model sees it.

    Attributes (SI units):
        name: display name, e.g. "TPU v5e".
        vendor: "google" or "nvidia".
        hbm_bytes: HBM capacity in bytes.
        hbm_bandwidth: HBM bandwidth in bytes/s.
        flops_per_s: dense peak FLOPs/s (OPs/s for integer types) per dtype.
        link_bandwidth_one_way: bytes/s one chip-to-chip link carries in each direction
            (TPU ICI link, GPU NVLink link).
        links_per_chip: number of such links on one chip.
        topology: how chips connect ("3D torus", "NVSwitch (all-to-all in a node)").
        max_slice: largest slice or NVLink domain shape, e.g. (16, 20, 28) or (8,).
        chips_per_host: chips attached to one host (TPU) or GPUs in one node (GPU).
        pcie_bandwidth: host-to-chip bytes/s, one way.
        host_network_bandwidth: bytes/s one host (TPU: DCN) or one node (GPU: its NICs)
            sends in each direction to the rest of the cluster.
        cores: TensorCores per TPU chip, or streaming multiprocessors (SMs) per GPU.
        fp32_cores_per_sm: GPU CUDA cores per SM (None for TPUs or where unknown).
        boost_clock_hz: GPU boost clock (None where not vetted).
        mxu_size: TPU systolic array side (128 means 128x128); None for GPUs.
        sources: where the figures come from.
        notes: caveats, alternative published values.
    """

    name: str
    vendor: str
    hbm_bytes: float
    hbm_bandwidth: float
    flops_per_s: Mapping[str, float]
    link_bandwidth_one_way: float
    links_per_chip: int
    topology: str
    max_slice: tuple[int, ...]
    chips_per_host: int
    pcie_bandwidth: float
    host_network_bandwidth: float
    cores: int
    fp32_cores_per_sm: int | None = None
    boost_clock_hz: float | None = None
    mxu_size: int | None = None
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    aliases: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        flops = {canonical_dtype(k): float(v) for k, v in dict(self.flops_per_s).items()}
        object.__setattr__(self, "flops_per_s", MappingProxyType(flops))
        for attr in ("hbm_bytes", "hbm_bandwidth", "link_bandwidth_one_way", "pcie_bandwidth",
                     "host_network_bandwidth"):
            value = getattr(self, attr)
            if not value > 0:
                raise ValueError(f"{self.name}: {attr} must be positive, got {value!r}")
        for dtype, value in flops.items():
            if not value > 0:
                raise ValueError(f"{self.name}: FLOPs/s for {dtype} must be positive, got {value!r}")

    @property
    def is_gpu(self) -> bool:
        return self.vendor == "nvidia"

    @property
    def link_bandwidth_bidirectional(self) -> float:
        """Bytes/s one link carries in both directions together: 2 x one-way."""
        return 2.0 * self.link_bandwidth_one_way

    @property
    def interconnect_bandwidth_one_way(self) -> float:
        """Bytes/s a chip can send over all its links at once, one way: links x per-link."""
        return self.links_per_chip * self.link_bandwidth_one_way

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this chip has a FLOPs/s figure for."""
        return tuple(self.flops_per_s)

    def flops(self, dtype: str = "bf16") -> float:
        """Dense peak FLOPs/s (OPs/s for integers) in ``dtype``.

        Raises ``ValueError`` if the chip has no figure for that dtype (a V100 has no bf16).
        """
        key = canonical_dtype(dtype)
        if key not in self.flops_per_s:
            raise ValueError(
                f"{self.name} has no {key} FLOPs/s figure; it has: {', '.join(self.dtypes)}"
            )
        return self.flops_per_s[key]

    def replace(self, **changes: object) -> "Chip":
        """A copy with some fields changed, for problems that state their own numbers.

        ``flops_per_s`` may be given as a partial mapping: it is merged into the existing one,
        so ``chip.replace(flops_per_s={"bf16": 2e14})`` keeps the other dtypes.
        """
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"Chip has no field(s) {sorted(unknown)}")
        if "flops_per_s" in changes:
            merged = dict(self.flops_per_s)
            merged.update(dict(changes["flops_per_s"]))  # type: ignore[arg-type]
            changes["flops_per_s"] = merged
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


_HSYM = "Austin et al., 'How to Scale Your Model' (2025)"
_TPU_DOCS = "Google Cloud TPU system architecture pages"
_TPU_DCN = 2.5e10  # bytes/s per host, one way
_TPU_PCIE = 1.5e10
_IB_PER_GPU = 5.0e10  # one 400 Gb/s NIC per GPU, each way

CATALOG: tuple[Chip, ...] = (
    Chip(
        name="TPU v3", vendor="google", hbm_bytes=32 * GB, hbm_bandwidth=9.0e11,
        flops_per_s={"bf16": 1.4e14, "int8": 1.4e14},
        link_bandwidth_one_way=1.0e11, links_per_chip=4, topology="2D torus",
        max_slice=(32, 32), chips_per_host=8, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=2, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, part 2"),
        aliases=("v3", "tpuv3", "tpu-v3"),
    ),
    Chip(
        name="TPU v4p", vendor="google", hbm_bytes=32 * GB, hbm_bandwidth=1.2e12,
        flops_per_s={"bf16": 2.75e14, "int8": 2.75e14},
        link_bandwidth_one_way=4.5e10, links_per_chip=6, topology="3D torus",
        max_slice=(16, 16, 16), chips_per_host=4, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=2, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, part 2"),
        notes=("HBM bandwidth 1.23e12 B/s is also quoted; the catalog keeps 1.2e12.",
               "Two TensorCores act as one 'megacore'."),
        aliases=("v4", "v4p", "tpuv4", "tpuv4p", "tpu-v4", "tpu-v4p", "tpu v4"),
    ),
    Chip(
        name="TPU v5p", vendor="google", hbm_bytes=96 * GB, hbm_bandwidth=2.8e12,
        flops_per_s={"bf16": 4.59e14, "int8": 9.18e14},
        link_bandwidth_one_way=9.0e10, links_per_chip=6, topology="3D torus",
        max_slice=(16, 20, 28), chips_per_host=4, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=2, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, parts 2 and 3"),
        notes=("HBM bandwidth 2.77e12 B/s is also quoted; the catalog keeps 2.8e12.",
               "Two TensorCores act as one 'megacore'."),
        aliases=("v5p", "tpuv5p", "tpu-v5p"),
    ),
    Chip(
        name="TPU v5e", vendor="google", hbm_bytes=16 * GB, hbm_bandwidth=8.1e11,
        flops_per_s={"bf16": 1.97e14, "int8": 3.94e14},
        link_bandwidth_one_way=4.5e10, links_per_chip=4, topology="2D torus",
        max_slice=(16, 16), chips_per_host=8, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=1, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, parts 1 and 2"),
        notes=("HBM bandwidth 8.2e11 B/s is also quoted; the catalog keeps 8.1e11 "
               "(critical bf16 intensity 243 rather than 240).",
               "Wraparound only when an axis spans the full 16 chips."),
        aliases=("v5e", "v5lite", "v5litepod", "tpuv5e", "tpu-v5e", "tpu-v5-lite"),
    ),
    Chip(
        name="TPU v6e", vendor="google", hbm_bytes=32 * GB, hbm_bandwidth=1.6e12,
        flops_per_s={"bf16": 9.2e14, "int8": 1.84e15},
        link_bandwidth_one_way=9.0e10, links_per_chip=4, topology="2D torus",
        max_slice=(16, 16), chips_per_host=8, pcie_bandwidth=3.2e10,
        host_network_bandwidth=_TPU_DCN, cores=1, mxu_size=256,
        sources=(_TPU_DOCS, f"{_HSYM}, part 2"),
        notes=("Also called Trillium. 918e12 bf16 FLOPs/s and 1.64e12 B/s HBM are also quoted.",
               "Wraparound only when an axis spans the full 16 chips."),
        aliases=("v6e", "trillium", "tpuv6e", "tpu-v6e", "tpuv6", "v6"),
    ),
    Chip(
        name="V100", vendor="nvidia", hbm_bytes=32 * GB, hbm_bandwidth=9.0e11,
        flops_per_s={"fp16": 1.25e14},
        link_bandwidth_one_way=2.5e10, links_per_chip=6,
        topology="NVLink 2 hybrid cube mesh in a node", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=1.6e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=80,
        fp32_cores_per_sm=64, boost_clock_hz=1.53e9,
        sources=("NVIDIA Tesla V100 datasheet (SXM2)",),
        notes=("fp16 tensor-core rate; Volta has no bf16.",
               "NVLink 2: 6 links x 25 GB/s each way (300 GB/s total, both directions).",
               "Scale-out NIC figure assumes one 400 Gb/s NIC per GPU, as for later nodes."),
        aliases=("v100-sxm", "v100-sxm2", "tesla v100", "v100-32gb"),
    ),
    Chip(
        name="A100", vendor="nvidia", hbm_bytes=80 * GB, hbm_bandwidth=2.0e12,
        flops_per_s={"bf16": 3.12e14, "fp16": 3.12e14, "int8": 6.24e14},
        link_bandwidth_one_way=2.5e10, links_per_chip=12,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=3.2e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=108,
        fp32_cores_per_sm=64, boost_clock_hz=1.41e9,
        sources=("NVIDIA A100 datasheet (SXM4 80GB)", f"{_HSYM}, part 12"),
        notes=("HBM bandwidth 2.039e12 B/s for the 80 GB part; the catalog keeps 2.0e12.",
               "Spec sheet prints 624 TFLOPs bf16 'with sparsity'; dense is 312.",
               "NVLink 3: 12 links x 25 GB/s each way = 300 GB/s per GPU each way."),
        aliases=("a100-sxm", "a100-80gb", "a100-sxm4"),
    ),
    Chip(
        name="H100", vendor="nvidia", hbm_bytes=80 * GB, hbm_bandwidth=3.35e12,
        flops_per_s={"bf16": 9.89e14, "fp16": 9.89e14, "fp8": 1.979e15, "int8": 1.979e15},
        link_bandwidth_one_way=2.5e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=6.4e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=132,
        fp32_cores_per_sm=128, boost_clock_hz=1.98e9,
        sources=("NVIDIA H100 Tensor Core GPU datasheet (SXM5)", f"{_HSYM}, part 12"),
        notes=("Spec sheet prints 1,979 TFLOPs bf16 'with sparsity'; dense is 989.",
               "Per SM: 4 sub-partitions x 32 fp32 CUDA cores, 256 kB SMEM/L1; L2 about 50 MB.",
               "NVLink 4: 18 links x 25 GB/s each way = 450 GB/s per GPU each way."),
        aliases=("h100-sxm", "h100-sxm5", "h100-80gb", "h100 sxm"),
    ),
    Chip(
        name="H200", vendor="nvidia", hbm_bytes=141 * GB, hbm_bandwidth=4.8e12,
        flops_per_s={"bf16": 9.89e14, "fp16": 9.89e14, "fp8": 1.979e15, "int8": 1.979e15},
        link_bandwidth_one_way=2.5e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=6.4e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=132,
        fp32_cores_per_sm=128, boost_clock_hz=1.98e9,
        sources=("NVIDIA H200 Tensor Core GPU datasheet (SXM)", f"{_HSYM}, part 12"),
        notes=("Same compute die as the H100 with more and faster HBM.",
               "Spec sheet prints tensor-core figures 'with sparsity' (2x dense)."),
        aliases=("h200-sxm", "h200-141gb"),
    ),
    Chip(
        name="B200", vendor="nvidia", hbm_bytes=192 * GB, hbm_bandwidth=8.0e12,
        flops_per_s={"bf16": 2.25e15, "fp16": 2.25e15, "fp8": 4.5e15, "int8": 4.5e15,
                     "fp4": 9.0e15},
        link_bandwidth_one_way=5.0e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=6.4e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=148,
        fp32_cores_per_sm=128,
        sources=("NVIDIA B200 / DGX B200 datasheet", f"{_HSYM}, part 12"),
        notes=("Spec sheet prints tensor-core figures 'with sparsity' (2x dense).",
               "NVLink 5: 18 links x 50 GB/s each way = 900 GB/s per GPU each way.",
               "A GB200 NVL72 rack forms one 72-GPU NVLink domain; the catalog models 8-GPU nodes.",
               "Boost clock not in the vetted facts, so CUDA-core FLOPs/s is not derived."),
        aliases=("b200-sxm", "blackwell", "dgx-b200"),
    ),
)


def _normalise(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name.strip().lower())


def _build_index() -> Mapping[str, Chip]:
    index: dict[str, Chip] = {}
    for chip in CATALOG:
        for spelling in (chip.name, *chip.aliases):
            key = _normalise(spelling)
            if key in index and index[key] is not chip:
                raise RuntimeError(f"catalog spelling {spelling!r} is ambiguous")
            index[key] = chip
    return MappingProxyType(index)


_INDEX = _build_index()


def chip_names() -> tuple[str, ...]:
    """Display names of every chip in the catalog, in catalog order."""
    return tuple(chip.name for chip in CATALOG)


def get_chip(name: str | Chip) -> Chip:
    """Look up a chip by any usual spelling: "H100", "h100-sxm", "TPU v5e", "v5e", "trillium".

    A :class:`Chip` passes through unchanged, so functions can accept either.
    Raises ``ValueError`` listing the known chips for an unknown name.
    """
    if isinstance(name, Chip):
        return name
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"chip name must be a non-empty string, got {name!r}")
    chip = _INDEX.get(_normalise(name))
    if chip is None:
        raise ValueError(f"unknown chip {name!r}; known chips: {', '.join(chip_names())}")
    return chip


def cuda_core_flops(chip: Chip | str, dtype: str = "fp32") -> float:
    """FLOPs/s of a GPU's CUDA (vector) cores, without tensor cores.

    Formula: SMs x fp32 cores per SM x 2 FLOPs per fused multiply-add x boost clock (Hz).
    For an H100: 132 x 128 x 2 x 1.98e9 = 6.7e13 FLOPs/s, ~15x below its bf16 tensor cores.
    Only fp32 is modelled. Raises ``ValueError`` for TPUs or GPUs without vetted figures.
    """
    chip = get_chip(chip)
    if canonical_dtype(dtype) != "fp32":
        raise ValueError("cuda_core_flops models fp32 FMA throughput only")
    if not chip.is_gpu or chip.fp32_cores_per_sm is None or chip.boost_clock_hz is None:
        raise ValueError(f"{chip.name} has no vetted CUDA-core count and clock in the catalog")
    return chip.cores * chip.fp32_cores_per_sm * 2.0 * chip.boost_clock_hz

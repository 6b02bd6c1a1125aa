"""The chip catalog: every hardware figure the book and the grader use.

All quantities are SI: bytes, bytes/s, FLOPs/s (dense, never "with sparsity"), seconds, hertz.
Each figure of each chip names its source (``Chip.cited``, checked by
:func:`uncited_figures`). The vetted reference is ``shared/facts/hardware.md``; where two public
figures disagree the catalog keeps one and says which in ``notes``.

A GPU "node" is the scale-up domain: 8 GPUs of an HGX / DGX or AMD platform, or the 72 GPUs of
an NVL72 rack (``chips_per_host``), with ``host_network_bandwidth`` the whole node's NICs.

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
# On-chip SRAM is sized in powers of two: NVIDIA's "256 KB" of registers per SM is 65,536
# 32-bit registers = 262,144 bytes, and CUDA reports an A100's "40 MB" L2 as 41,943,040 bytes.
KiB = 1024.0
MiB = 1024.0 ** 2
GiB = 1024.0 ** 3  # Google prints TPU7x HBM in GiB: 192 GiB = 192 x 2^30 bytes

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
    if type(dtype) is str and dtype in _DTYPE_BYTES:  # already the catalog's spelling
        return dtype
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


ICI_TORUS = "ici-torus"
NVLINK_SWITCH = "nvlink-switch"
NVLINK_MESH = "nvlink-mesh"
FULL_MESH = "full-mesh"
INTERCONNECTS: tuple[str, ...] = (ICI_TORUS, NVLINK_SWITCH, NVLINK_MESH, FULL_MESH)
"""The values of :attr:`Chip.interconnect`."""

WRAP_WHOLE_CUBES = "whole-cubes"
WRAP_FULL_AXIS = "full-axis"
WRAPAROUND_RULES: tuple[str, ...] = (WRAP_WHOLE_CUBES, WRAP_FULL_AXIS)
"""The values of :attr:`Chip.wraparound_rule`.

- :data:`WRAP_WHOLE_CUBES` (v4p, v5p, TPU7x: 3D tori built from 4x4x4 cubes wired by optical
  switches): a slice made of whole cubes (every axis a multiple of 4) is a full 3D torus, every
  axis a ring; a slice smaller than a cube (2x2x1, 2x2x2, 2x4x4) has no wraparound links at all.
  Google's v5p page: "All 4x4x4 and larger slices (one cube) have full 3D torus connectivity."
- :data:`WRAP_FULL_AXIS` (v3, v5e, v6e: 2D tori): an axis wraps only when it spans the largest
  slice's (16 chips on v5e/v6e, 32 on v3).
"""


GPU_VENDORS: tuple[str, ...] = ("nvidia", "amd")
"""Vendors whose chips are GPUs in nodes (see :attr:`Chip.is_gpu`); "google" makes TPUs."""

FIGURE_FIELDS: tuple[str, ...] = (
    "hbm_bytes", "hbm_bandwidth", "link_bandwidth_one_way", "links_per_chip", "max_slice",
    "chips_per_host", "pcie_bandwidth", "host_network_bandwidth", "cores", "fp32_cores_per_sm",
    "boost_clock_hz", "mxu_size", "vmem_bytes_per_core", "vreg_shape", "vpu_alus",
    "core_clock_hz", "smem_l1_bytes_per_sm", "register_bytes_per_sm", "l2_bytes",
    "nics_per_host", "slice_shapes",
)
"""The fields of :class:`Chip` that hold a figure from a source, besides ``flops_per_s``
(cited per dtype as ``"flops_per_s.bf16"``)."""


def _is_figure_name(name: object) -> bool:
    if not isinstance(name, str):
        return False
    if name.startswith("flops_per_s."):
        return name.removeprefix("flops_per_s.") in _DTYPE_BYTES
    return name in FIGURE_FIELDS


def uncited_figures(chip: "Chip") -> tuple[str, ...]:
    """The figures ``chip`` holds without a source in ``chip.cited`` (empty for the catalog)."""
    return tuple(name for name in chip.figures if name not in chip.cited)


@dataclass(frozen=True)
class Chip:
    """One accelerator chip, as a roofline model sees it.

    Attributes (SI units):
        name: display name, e.g. "TPU v5e".
        vendor: "google", "nvidia" or "amd".
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
        cores: TensorCores per TPU chip, streaming multiprocessors (SMs) per NVIDIA GPU, or
            compute units (CUs) per AMD GPU.
        fp32_cores_per_sm: GPU CUDA cores per SM (None for TPUs or where unknown).
        boost_clock_hz: GPU boost clock (None where not vetted).
        mxu_size: TPU systolic array side (128 means 128x128); None for GPUs.
        sources: where the figures come from.
        notes: caveats, alternative published values.
        vmem_bytes_per_core: TPU VMEM (vector memory, the on-chip scratchpad) per TensorCore,
            bytes.
        vreg_shape: TPU vector register / VPU layout as (sublanes, lanes), e.g. (8, 128).
        vpu_alus: independent ALUs at each (sublane, lane) position of a TPU VPU.
        core_clock_hz: TPU TensorCore clock in Hz (for GPUs see ``boost_clock_hz``).
        smem_l1_bytes_per_sm: GPU combined L1 cache / shared memory per SM, bytes.
        register_bytes_per_sm: GPU register file per SM, bytes.
        l2_bytes: GPU L2 cache per chip, bytes.
        interconnect: how chips of one slice or node talk, which decides how
            :func:`scalebook.collectives.collective_cost` prices a collective:
            :data:`ICI_TORUS` (TPU ICI links to torus neighbours), :data:`NVLINK_SWITCH` (every
            GPU of a node reaches every other through NVSwitches), :data:`NVLINK_MESH` (a
            node's GPUs wired directly, V100's hybrid cube mesh), :data:`FULL_MESH` (every GPU
            of a node wired straight to every other by one link each, AMD's Infinity Fabric),
            or None (no interconnect modelled: a one-device chip).
        wraparound_rule: on an ICI torus, which axes of a slice are true rings (see
            :data:`WRAPAROUND_RULES`): :data:`WRAP_WHOLE_CUBES` (v4p/v5p/TPU7x) or
            :data:`WRAP_FULL_AXIS` (v3/v5e/v6e); None off a torus.
        nics_per_host: scale-out NICs per host or node, one per rail (8 on a DGX H100: NIC ``r``
            of every node plugs into leaf switch ``r``); None where not modelled (TPU hosts
            reach the data-centre network through ``host_network_bandwidth`` alone).
        switch_reduction: whether the switches of the scale-up domain can reduce in the
            network (NVLink SHARP, "NVLS", in third-generation NVSwitches and later: H100, H200,
            B200 nodes); an AllReduce then sends and receives each byte about once per GPU
            instead of twice (:mod:`scalebook.collectives`). False elsewhere.
        slice_shapes: the slice topologies the vendor ships (TPUs), smallest first, from the
            generation's documentation. On a :data:`WRAP_WHOLE_CUBES` generation every
            whole-cube shape (each axis a multiple of 4) up to the largest listed chip count is
            shipped as well (the docs list "most but not all" of them). Empty: not checked.
        cited: where each figure comes from, figure name -> source. Figure names are the
            numeric fields (see :data:`FIGURE_FIELDS`) and ``"flops_per_s.<dtype>"`` for each
            dtype; :func:`uncited_figures` lists a chip's figures without one (the catalog has
            none). Unknown names are refused.

    The last seven are None where the catalog has no sourced figure; the helpers that use them
    (:func:`vpu_flops`, :func:`on_chip_memory`) refuse such a chip by name. On-chip sizes are
    powers of two: the "256 kB" and "50 MB" of the sources are KiB and MiB.
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
    # Optional on-chip figures, appended last so positional construction stays as it was.
    vmem_bytes_per_core: float | None = None
    vreg_shape: tuple[int, int] | None = None
    vpu_alus: int | None = None
    core_clock_hz: float | None = None
    smem_l1_bytes_per_sm: float | None = None
    register_bytes_per_sm: float | None = None
    l2_bytes: float | None = None
    interconnect: str | None = None
    wraparound_rule: str | None = None
    nics_per_host: int | None = None
    switch_reduction: bool = False
    slice_shapes: tuple[tuple[int, ...], ...] = ()
    cited: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        flops = {canonical_dtype(k): float(v) for k, v in dict(self.flops_per_s).items()}
        object.__setattr__(self, "flops_per_s", MappingProxyType(flops))
        for attr in ("hbm_bytes", "hbm_bandwidth", "link_bandwidth_one_way", "pcie_bandwidth",
                     "host_network_bandwidth"):
            value = getattr(self, attr)
            if not value > 0:
                raise ValueError(f"{self.name}: {attr} must be positive, got {value!r}")
        for attr in ("vmem_bytes_per_core", "vpu_alus", "core_clock_hz", "smem_l1_bytes_per_sm",
                     "register_bytes_per_sm", "l2_bytes"):
            value = getattr(self, attr)
            if value is not None and not value > 0:
                raise ValueError(f"{self.name}: {attr} must be positive or None, got {value!r}")
        if self.vreg_shape is not None:
            shape = tuple(self.vreg_shape)
            if len(shape) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                          for n in shape):
                raise ValueError(f"{self.name}: vreg_shape must be (sublanes, lanes), two positive "
                                 f"integers, got {self.vreg_shape!r}")
            object.__setattr__(self, "vreg_shape", shape)
        for dtype, value in flops.items():
            if not value > 0:
                raise ValueError(f"{self.name}: FLOPs/s for {dtype} must be positive, got {value!r}")
        if self.interconnect is not None and self.interconnect not in INTERCONNECTS:
            raise ValueError(f"{self.name}: interconnect must be one of {', '.join(INTERCONNECTS)}"
                             f" or None, got {self.interconnect!r}")
        if self.wraparound_rule is not None and self.wraparound_rule not in WRAPAROUND_RULES:
            raise ValueError(f"{self.name}: wraparound_rule must be one of "
                             f"{', '.join(WRAPAROUND_RULES)} or None, got "
                             f"{self.wraparound_rule!r}")
        if (self.wraparound_rule is None) != (self.interconnect != ICI_TORUS):
            raise ValueError(f"{self.name}: an ICI torus needs a wraparound_rule, and only a "
                             "torus has one")
        shapes = tuple(tuple(shape) for shape in self.slice_shapes)
        for shape in shapes:
            if (len(shape) != len(self.max_slice)
                    or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                               for n in shape)):
                raise ValueError(f"{self.name}: each slice shape needs {len(self.max_slice)} "
                                 f"positive integer axes, got {shape!r}")
        object.__setattr__(self, "slice_shapes", shapes)
        if not isinstance(self.switch_reduction, bool):
            raise ValueError(f"{self.name}: switch_reduction must be True or False, got "
                             f"{self.switch_reduction!r}")
        nics = self.nics_per_host
        if nics is not None and (isinstance(nics, bool) or not isinstance(nics, int) or nics < 1):
            raise ValueError(f"{self.name}: nics_per_host must be a positive integer or None, "
                             f"got {nics!r}")
        cited = dict(self.cited)
        for figure, source in cited.items():
            if not _is_figure_name(figure):
                raise ValueError(f"{self.name}: cited names no figure: {figure!r}; figures are "
                                 f"{', '.join(FIGURE_FIELDS)} and 'flops_per_s.<dtype>'")
            if not isinstance(source, str) or not source.strip():
                raise ValueError(f"{self.name}: the source of {figure} must be non-empty text, "
                                 f"got {source!r}")
        object.__setattr__(self, "cited", MappingProxyType(cited))

    def __hash__(self) -> int:
        """By name: equal chips share one, and two chips of one name that differ in a figure
        (a what-if copy, :func:`dataclasses.replace`) are unequal, so a cache keyed by a chip
        never answers one for the other. (The generated hash would fail on the FLOPs table.)"""
        return hash(self.name)

    @property
    def is_gpu(self) -> bool:
        """A GPU (vendor in :data:`GPU_VENDORS`: NVIDIA, AMD), which lives in a node of
        ``chips_per_host`` GPUs rather than in a TPU slice. Collectives do not ask this: they
        read :attr:`interconnect`. CUDA-core and SMEM figures are NVIDIA's alone:
        :func:`cuda_core_flops` and :func:`on_chip_memory` refuse an AMD GPU by name."""
        return self.vendor in GPU_VENDORS

    @property
    def figures(self) -> tuple[str, ...]:
        """Names of the figures this chip holds (each needs a source in :attr:`cited`): every
        field of :data:`FIGURE_FIELDS` that is not None (``slice_shapes``: not empty), then
        ``"flops_per_s.<dtype>"`` for each dtype."""
        held = tuple(name for name in FIGURE_FIELDS if getattr(self, name) not in (None, ()))
        return held + tuple(f"flops_per_s.{dtype}" for dtype in self.flops_per_s)

    def source_of(self, figure: str) -> str:
        """Where ``figure`` (a name from :attr:`figures`) comes from. Raises ``ValueError`` for
        a name the chip does not hold, or a figure without a citation."""
        if figure not in self.figures:
            raise ValueError(f"{self.name} holds no figure {figure!r}; it holds: "
                             f"{', '.join(self.figures)}")
        if figure not in self.cited:
            raise ValueError(f"{self.name}: {figure} has no source in the catalog")
        return self.cited[figure]

    @property
    def has_ici_torus(self) -> bool:
        """Whether chips of a slice talk over an ICI torus (:data:`ICI_TORUS`)."""
        return self.interconnect == ICI_TORUS

    @property
    def has_nvlink_domain(self) -> bool:
        """Whether the chips are GPUs in nodes (scale-up domains) that talk inside the node over
        NVLink or Infinity Fabric (:data:`NVLINK_SWITCH`, :data:`NVLINK_MESH`,
        :data:`FULL_MESH`), and across nodes through their NICs."""
        return self.interconnect in (NVLINK_SWITCH, NVLINK_MESH, FULL_MESH)

    @property
    def nic_bandwidth_per_chip(self) -> float:
        """Bytes/s one chip sends into the scale-out network, one way: its host's
        ``host_network_bandwidth / chips_per_host`` (H100: 400 GB/s / 8 = 50 GB/s, one rail's
        NIC; TPU v5p: 25 GB/s of DCN / 4 = 6.25 GB/s)."""
        return self.host_network_bandwidth / self.chips_per_host

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
            partial = changes["flops_per_s"]
            if not isinstance(partial, Mapping):
                raise ValueError(f"flops_per_s must map dtypes to FLOPs/s, got {partial!r}")
            changes["flops_per_s"] = {**self.flops_per_s, **partial}
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- sources
# Every figure of the catalog names its source in ``Chip.cited``. The sources are gathered here,
# one constant each, so that a chip's entry reads as its figures and where they come from.

_HSYM = "Austin et al., 'How to Scale Your Model' (2025)"
_TPU_DOCS = "Google Cloud TPU system architecture pages"
_TPU_TABLE = f"{_TPU_DOCS}; {_HSYM}, part 2 (TPU table)"
_TPU_SLICES = f"{_TPU_DOCS} (the generation's configurations table)"
_TPU_HOST_LINKS = (f"{_HSYM}, part 2: PCIe about 1.5e10 B/s per chip (v6e about 3.2e10), DCN "
                   "about 2.5e10 B/s per host")
_TPU_DCN = 2.5e10  # bytes/s per host, one way
_TPU_PCIE = 1.5e10
_JAX_TPU_REF = "JAX documentation, Pallas 'TPU Hardware Reference' (jax.experimental.pallas.tpu)"
_HSYM_VPU = f"{_HSYM}, part 2, appendix A (VPU layout, clock)"
_NO_VPU_RATE = ("VPU ALUs per position and clock are not in the sources, so vpu_flops refuses "
                "this chip.")
_V5P_DOCS = ("Google Cloud TPU v5p page (docs.cloud.google.com/tpu/docs/v5p): slice shapes, "
             "'All 4x4x4 and larger slices (one cube) have full 3D torus connectivity', largest "
             "slice 16x16x24")
_TPU7X_DOCS = ("Google Cloud TPU7x (Ironwood) page (docs.cloud.google.com/tpu/docs/tpu7x) and "
               "the Compute Engine 'TPU machines' page (tpu7x-standard-4t: 4 chips per VM)")
_TPU7X_ICI = (f"{_TPU7X_DOCS}: 1,200 GB/s bidirectional ICI per chip over the 6 links of a 3D "
              "torus = 100 GB/s per link each way (derived)")
_TPU7X_SLICES = ("Google's xpk (github.com/AI-Hypercomputer/xpk, "
                 "src/xpk/core/system_characteristics.py): TPU7x topologies on tpu7x-standard-4t")

_HSYM12 = f"{_HSYM}, part 12 (GPU table)"
_GPU_ON_CHIP = f"{_HSYM}, part 12 (SMEM per SM, L2, 256 kB of registers per SM)"
_IB_PER_GPU = 5.0e10  # one 400 Gb/s NIC per GPU, each way
_NIC_400G = ("one 400 Gb/s NIC per GPU, one rail each (DGX H100/B200 datasheets: 8 x ConnectX-7; "
             f"{_HSYM}, part 12)")
_PCIE5 = "PCIe Gen5 x16: about 64 GB/s each way (NVIDIA datasheets, 128 GB/s both ways)"
_V100_DS = "NVIDIA Tesla V100 datasheet (SXM2)"
_V100_WP = "NVIDIA Tesla V100 GPU architecture whitepaper"
_A100_DS = "NVIDIA A100 datasheet (SXM4 80GB)"
_A100_WP = "NVIDIA A100 Tensor Core GPU architecture whitepaper"
_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet (SXM5)"
_H100_WP = "NVIDIA H100 Tensor Core GPU architecture whitepaper"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet (SXM)"
_HGX_B200 = ("NVIDIA HGX B200 datasheet (per 8 GPUs: 1,440 GB, 72 PFLOPS dense fp4, 72 PFLOPS "
             "fp8 and 36 PFLOPS bf16 with sparsity, 1.8 TB/s NVLink per GPU)")
_B200_HBM = ("NVIDIA B200 GPU, 192 GB HBM3e (GTC 2024 announcement; shared/facts/hardware.md, "
             "the project's vetted figure)")
_B200_CLOCK = "derived from the HGX B200 datasheet's 75 TFLOPS of FP32 over 148 SMs x 128 cores"
_NVLINK5 = ("NVIDIA NVLink page: fifth-generation NVLink, 18 links per GPU, 1.8 TB/s per GPU "
            "both directions = 50 GB/s per link each way")
_HGX_B300 = ("NVIDIA HGX B300 page (per 8 GPUs: 144 | 108 PFLOPS fp4 sparse | dense, 72 PFLOPS "
             "fp8 and 36 PFLOPS bf16 with sparsity, NVLink 14.4 TB/s, networking 1.6 TB/s)")
_BW_DATASHEET = ("NVIDIA Blackwell datasheet, per-GPU columns (HGX B300: 270 GB, 7.7 TB/s; "
                 "GB300 NVL72: 279 GB, 8 TB/s)")
_BLACKWELL_ULTRA = ("NVIDIA technical blog 'Inside NVIDIA Blackwell Ultra': 'up to 160 SMs and "
                    "288GB HBM3E ... varies by SKU'")
_CX8 = ("NVIDIA ConnectX-8 SuperNIC page: 800 Gb/s per GPU (100 GB/s each way), PCIe Gen6 x16 "
        "to the GPU")
_PCIE6 = ("PCIe Gen6 x16 through the ConnectX-8's switch (NVIDIA ConnectX-8 page): "
          "64 GT/s x 16 / 8 = 128 GB/s each way (derived)")
_GB200_RACK = ("NVIDIA GB200 NVL72 page (per rack of 72 GPUs: 13.4 TB HBM3E, 576 TB/s, 1,440 | 720 "
               "PFLOPS fp4 sparse | dense, 720 PFLOPS fp8 and 720 POPS int8 and 360 PFLOPS bf16 "
               "with sparsity, 130 TB/s NVLink), divided by 72")
_GB300_RACK = ("NVIDIA GB300 NVL72 page (per rack of 72 GPUs: 20 TB HBM3E, 576 TB/s, 1,440 | 1,080 "
               "PFLOPS fp4 sparse | dense, 720 PFLOPS fp8, 24 POPS int8 and 360 PFLOPS bf16 with "
               "sparsity, 130 TB/s NVLink), divided by 72")
_NVL72_DOMAIN = ("NVIDIA GB200 / GB300 NVL72 pages: 72 GPUs in one NVLink domain (18 compute "
                 "trays of 4)")
_C2C = ("NVIDIA GB200 NVL72 page: NVLink-C2C, 900 GB/s both ways between a Grace CPU and its two "
        "GPUs; the catalog gives each GPU half of one direction, 225 GB/s (derived)")
_CX7_NVL72 = ("NVIDIA DGX GB200 user guide / SuperPOD reference architecture: 4 x ConnectX-7 "
              "400 Gb/s per compute tray, one per GPU")
_NVLS = ("NVIDIA NVLink Switch page: NVLink SHARP in-network reductions (third-generation "
         "NVSwitch and later)")
_MI300X_DS = ("AMD Instinct MI300X datasheet (192 GB HBM3, 5.3 TB/s, 304 CUs, 1,307.4 TFLOPS bf16 "
              "and 2,614.9 fp8/int8 dense, 7 Infinity Fabric links at 128 GB/s peak per link, "
              "PCIe Gen5 x16 128 GB/s)")
_MI325X_DS = ("AMD Instinct MI325X datasheet (256 GB HBM3E, 6 TB/s, 304 CUs, 1,307.4 TFLOPS bf16 "
              "and 2,614.9 fp8/int8 dense, 7 Infinity Fabric links at 128 GB/s peak per link, "
              "PCIe Gen5 x16 128 GB/s)")
_MI355X_DS = ("AMD Instinct MI355X datasheet (288 GB HBM3E, 8 TB/s, 256 CUs, 2.5166 PFLOPS bf16, "
              "5.0332 fp8/int8, 10.0663 MXFP4 dense, 7 Infinity Fabric links at 153.6 GB/s peak "
              "per link, PCIe Gen5 x16 128 GB/s)")
_IF_LINK = "per link both ways, halved for one way (derived)"
_AMD_NODE = ("AMD CDNA 3 architecture whitepaper: 8-GPU platform (UBB), each GPU wired to the "
             "other seven by one Infinity Fabric link")
_MI300X_NIC = ("Microsoft Azure ND MI300X v5: 8 x 400 Gb/s InfiniBand NICs per 8-GPU VM, one per "
               "GPU")
_AMD_NIC = ("assumed one 400 Gb/s NIC per GPU as on MI300X nodes (AMD Pensando Pollara 400 AI "
            "NIC page: 400 Gb/s); AMD's GPU datasheets give no NIC")


def _cite(*groups: tuple[str, str]) -> dict[str, str]:
    """``{figure: source}`` from ``(source, "figure figure ...")`` groups. A figure named twice
    is a mistake in the catalog (say it once) and raises ``ValueError``."""
    cited: dict[str, str] = {}
    for source, names in groups:
        for name in names.split():
            if name in cited:
                raise ValueError(f"figure {name!r} is cited twice")
            cited[name] = source
    return cited


_TPU_HOST = (_TPU_HOST_LINKS, "pcie_bandwidth host_network_bandwidth")
_NVIDIA_NODE = (f"{_HSYM12}; NVIDIA HGX / DGX datasheets: 8 GPUs per node",
                "max_slice chips_per_host")
_NVIDIA_NICS = (_NIC_400G, "host_network_bandwidth nics_per_host")

CATALOG: tuple[Chip, ...] = (
    Chip(
        name="TPU v3", vendor="google", hbm_bytes=32 * GB, hbm_bandwidth=9.0e11,
        flops_per_s={"bf16": 1.4e14, "int8": 1.4e14},
        link_bandwidth_one_way=1.0e11, links_per_chip=4, topology="2D torus",
        max_slice=(32, 32), chips_per_host=8, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=2, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, part 2", _JAX_TPU_REF),
        notes=("VMEM 16 MiB per TensorCore and 8x128 vregs from the JAX TPU Hardware Reference.",
               _NO_VPU_RATE),
        vmem_bytes_per_core=16 * MiB, vreg_shape=(8, 128),
        interconnect=ICI_TORUS, wraparound_rule=WRAP_FULL_AXIS,
        slice_shapes=((2, 2), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16), (16, 32), (32, 32)),
        aliases=("v3", "tpuv3", "tpu-v3"),
        cited=_cite(
            (_TPU_TABLE, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.int8 "
                         "link_bandwidth_one_way links_per_chip max_slice chips_per_host cores "
                         "mxu_size"),
            _TPU_HOST, (_JAX_TPU_REF, "vmem_bytes_per_core vreg_shape"),
            (_TPU_SLICES, "slice_shapes")),
    ),
    Chip(
        name="TPU v4p", vendor="google", hbm_bytes=32 * GB, hbm_bandwidth=1.2e12,
        flops_per_s={"bf16": 2.75e14, "int8": 2.75e14},
        link_bandwidth_one_way=4.5e10, links_per_chip=6, topology="3D torus",
        max_slice=(16, 16, 16), chips_per_host=4, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=2, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, part 2", _JAX_TPU_REF),
        notes=("HBM bandwidth 1.23e12 B/s is also quoted; the catalog keeps 1.2e12.",
               "Two TensorCores act as one 'megacore'.",
               "VMEM 16 MiB per TensorCore and 8x128 vregs from the JAX TPU Hardware Reference.",
               _NO_VPU_RATE),
        vmem_bytes_per_core=16 * MiB, vreg_shape=(8, 128),
        interconnect=ICI_TORUS, wraparound_rule=WRAP_WHOLE_CUBES,
        slice_shapes=((2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4), (4, 4, 4), (4, 4, 8),
                      (4, 8, 8), (8, 8, 8), (8, 8, 16), (8, 16, 16), (16, 16, 16)),
        aliases=("v4", "v4p", "tpuv4", "tpuv4p", "tpu-v4", "tpu-v4p", "tpu v4"),
        cited=_cite(
            (_TPU_TABLE, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.int8 "
                         "link_bandwidth_one_way links_per_chip max_slice chips_per_host cores "
                         "mxu_size"),
            _TPU_HOST, (_JAX_TPU_REF, "vmem_bytes_per_core vreg_shape"),
            (_TPU_SLICES, "slice_shapes")),
    ),
    Chip(
        name="TPU v5p", vendor="google", hbm_bytes=96 * GB, hbm_bandwidth=2.8e12,
        flops_per_s={"bf16": 4.59e14, "int8": 9.18e14},
        link_bandwidth_one_way=9.0e10, links_per_chip=6, topology="3D torus",
        max_slice=(16, 20, 28), chips_per_host=4, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=2, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, parts 2 and 3", _JAX_TPU_REF, _V5P_DOCS),
        notes=("HBM bandwidth 2.77e12 B/s is also quoted; the catalog keeps 2.8e12.",
               "A pod holds 8,960 chips, 16x20x28 (HSYM part 2; max_slice); the largest slice one "
               "job gets is 16x16x24 = 6,144 chips, 96 cubes (Google's v5p page).",
               "Wraparound: slices of whole 4x4x4 cubes are full 3D tori; 2x2x1, 2x2x2 and "
               "2x4x4 have no wraparound links (Google's v5p page).",
               "Two TensorCores act as one 'megacore'.",
               "VPU: 8 sublanes x 128 lanes x 4 ALUs per TensorCore at about 1.75 GHz (HSYM "
               "part 2, appendix A, which works out 2 x 8 x 128 x 4 x 1.75e9 = 1.4e13 vector "
               "FLOPs/s).",
               "VMEM 64 MiB per TensorCore from the JAX TPU Hardware Reference."),
        vmem_bytes_per_core=64 * MiB, vreg_shape=(8, 128), vpu_alus=4, core_clock_hz=1.75e9,
        interconnect=ICI_TORUS, wraparound_rule=WRAP_WHOLE_CUBES,
        slice_shapes=((2, 2, 1), (2, 2, 2), (2, 4, 4), (4, 4, 4), (4, 4, 8), (4, 8, 8), (8, 8, 8),
                      (8, 8, 16), (8, 16, 16), (16, 16, 16), (16, 16, 24)),
        aliases=("v5p", "tpuv5p", "tpu-v5p"),
        cited=_cite(
            (_TPU_TABLE, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.int8 "
                         "link_bandwidth_one_way links_per_chip chips_per_host cores mxu_size"),
            _TPU_HOST, (_JAX_TPU_REF, "vmem_bytes_per_core vreg_shape"),
            (_HSYM_VPU, "vpu_alus core_clock_hz"), (_V5P_DOCS, "max_slice slice_shapes")),
    ),
    Chip(
        name="TPU v5e", vendor="google", hbm_bytes=16 * GB, hbm_bandwidth=8.1e11,
        flops_per_s={"bf16": 1.97e14, "int8": 3.94e14},
        link_bandwidth_one_way=4.5e10, links_per_chip=4, topology="2D torus",
        max_slice=(16, 16), chips_per_host=8, pcie_bandwidth=_TPU_PCIE,
        host_network_bandwidth=_TPU_DCN, cores=1, mxu_size=128,
        sources=(_TPU_DOCS, f"{_HSYM}, parts 1 and 2", _JAX_TPU_REF),
        notes=("HBM bandwidth 8.2e11 B/s is also quoted; the catalog keeps 8.1e11 "
               "(critical bf16 intensity 243 rather than 240).",
               "Wraparound only when an axis spans the full 16 chips.",
               "VMEM 128 MiB (HSYM part 2). Clock 1.5 GHz (HSYM part 2: 5e13 bf16 FLOPs/s per MXU "
               "at 1.5 GHz). VPU: 8 x 128 positions with 4 ALUs each, the layout HSYM part 2 "
               "(appendix A) gives for v5; the vector rate 8 x 128 x 4 x 1.5e9 = 6.1e12 FLOPs/s "
               "is derived from it, not published."),
        vmem_bytes_per_core=128 * MiB, vreg_shape=(8, 128), vpu_alus=4, core_clock_hz=1.5e9,
        interconnect=ICI_TORUS, wraparound_rule=WRAP_FULL_AXIS,
        slice_shapes=((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)),
        aliases=("v5e", "v5lite", "v5litepod", "tpuv5e", "tpu-v5e", "tpu-v5-lite"),
        cited=_cite(
            (_TPU_TABLE, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.int8 "
                         "link_bandwidth_one_way links_per_chip max_slice chips_per_host cores "
                         "mxu_size"),
            _TPU_HOST, (f"{_HSYM}, part 2 (VMEM 128 MiB)", "vmem_bytes_per_core"),
            (_JAX_TPU_REF, "vreg_shape"), (_HSYM_VPU, "vpu_alus core_clock_hz"),
            (_TPU_SLICES, "slice_shapes")),
    ),
    Chip(
        name="TPU v6e", vendor="google", hbm_bytes=32 * GB, hbm_bandwidth=1.6e12,
        flops_per_s={"bf16": 9.2e14, "int8": 1.84e15},
        link_bandwidth_one_way=9.0e10, links_per_chip=4, topology="2D torus",
        max_slice=(16, 16), chips_per_host=8, pcie_bandwidth=3.2e10,
        host_network_bandwidth=_TPU_DCN, cores=1, mxu_size=256,
        sources=(_TPU_DOCS, f"{_HSYM}, part 2", _JAX_TPU_REF),
        notes=("Also called Trillium. 918e12 bf16 FLOPs/s and 1.64e12 B/s HBM are also quoted.",
               "Wraparound only when an axis spans the full 16 chips.",
               "VMEM 128 MiB per TensorCore and 8x128 vregs from the JAX TPU Hardware Reference.",
               _NO_VPU_RATE),
        vmem_bytes_per_core=128 * MiB, vreg_shape=(8, 128),
        interconnect=ICI_TORUS, wraparound_rule=WRAP_FULL_AXIS,
        slice_shapes=((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)),
        aliases=("v6e", "trillium", "tpuv6e", "tpu-v6e", "tpuv6", "v6"),
        cited=_cite(
            (_TPU_TABLE, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.int8 "
                         "link_bandwidth_one_way links_per_chip max_slice chips_per_host cores "
                         "mxu_size"),
            _TPU_HOST, (_JAX_TPU_REF, "vmem_bytes_per_core vreg_shape"),
            (_TPU_SLICES, "slice_shapes")),
    ),
    Chip(
        name="TPU7x", vendor="google", hbm_bytes=192 * GiB, hbm_bandwidth=7.38e12,
        flops_per_s={"bf16": 2.307e15, "fp8": 4.614e15},
        link_bandwidth_one_way=1.0e11, links_per_chip=6, topology="3D torus",
        max_slice=(16, 24, 24), chips_per_host=4, pcie_bandwidth=3.2e10,
        host_network_bandwidth=4 * 100e9 / 8, cores=2,
        sources=(_TPU7X_DOCS, _TPU7X_SLICES),
        notes=("Ironwood, Google's seventh TPU generation. HBM: 192 GiB = 192 x 2^30 bytes (the "
               "page prints GiB; 96 GiB on each of the chip's two chiplets), 7,380 GB/s.",
               "JAX sees each chip as two devices, one per chiplet (one TensorCore and 96 GiB "
               "each), joined by a die-to-die link; the catalog models the whole chip.",
               "ICI: the page gives 1,200 GB/s per chip, both directions; the catalog spreads it "
               "over the six links of a 3D torus, 1e11 B/s per link each way. Google prints the "
               "same 1,200 GB/s for v5p, where the catalog keeps HSYM's 9e10 per link; an "
               "arithmetic intensity of 12,800 for one ICI axis (MaxText's guidance) would mean "
               "9e10 here too.",
               "DCN: 100 Gb/s per chip (the page) x 4 chips = 5e10 B/s per host.",
               "PCIe: Google publishes no TPU7x figure; the catalog assumes v6e's 3.2e10 B/s.",
               "Pods of 9,216 chips = 144 cubes = 16x24x24, the largest slice Google's xpk "
               "offers; max_slice keeps it.",
               _NO_VPU_RATE),
        interconnect=ICI_TORUS, wraparound_rule=WRAP_WHOLE_CUBES,
        slice_shapes=((2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4), (4, 4, 4), (4, 4, 8),
                      (4, 8, 8), (8, 8, 8), (8, 8, 16), (8, 16, 16), (16, 16, 16),
                      (16, 16, 24), (16, 24, 24)),
        aliases=("tpu7x", "tpu-7x", "ironwood", "v7", "v7x", "tpuv7", "tpuv7x", "tpu v7",
                 "tpu-v7x"),
        cited=_cite(
            (_TPU7X_DOCS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp8 "
                          "chips_per_host cores"),
            (_TPU7X_ICI, "link_bandwidth_one_way links_per_chip"),
            (f"{_TPU7X_DOCS}: DCN 100 Gb/s per chip x 4 chips per host", "host_network_bandwidth"),
            ("assumed equal to TPU v6e's (HSYM part 2); Google publishes no TPU7x figure",
             "pcie_bandwidth"),
            (_TPU7X_SLICES, "max_slice slice_shapes")),
    ),
    Chip(
        name="V100", vendor="nvidia", hbm_bytes=32 * GB, hbm_bandwidth=9.0e11,
        flops_per_s={"fp16": 1.25e14},
        link_bandwidth_one_way=2.5e10, links_per_chip=6,
        topology="NVLink 2 hybrid cube mesh in a node", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=1.6e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=80,
        fp32_cores_per_sm=64, boost_clock_hz=1.53e9,
        sources=(_V100_DS, _V100_WP, _GPU_ON_CHIP),
        notes=("fp16 tensor-core rate; Volta has no bf16.",
               "Per SM: 128 KiB combined L1/SMEM (at most 96 KiB of it shared memory, the figure "
               "HSYM part 12 lists), 256 KiB of registers; L2 6 MiB (V100 whitepaper).",
               "NVLink 2: 6 links x 25 GB/s each way (300 GB/s total, both directions).",
               "Scale-out NIC figure assumes one 400 Gb/s NIC per GPU, as for later nodes."),
        smem_l1_bytes_per_sm=128 * KiB, register_bytes_per_sm=256 * KiB, l2_bytes=6 * MiB,
        interconnect=NVLINK_MESH, nics_per_host=8,
        aliases=("v100-sxm", "v100-sxm2", "tesla v100", "v100-32gb"),
        cited=_cite(
            (_V100_DS, "hbm_bytes hbm_bandwidth flops_per_s.fp16 link_bandwidth_one_way "
                       "links_per_chip pcie_bandwidth"),
            (f"{_V100_DS}: DGX-1 / HGX nodes of 8 GPUs", "max_slice chips_per_host"),
            (_V100_WP, "cores fp32_cores_per_sm boost_clock_hz smem_l1_bytes_per_sm "
                       "register_bytes_per_sm l2_bytes"),
            (f"assumed, as for later nodes: {_NIC_400G}", "host_network_bandwidth nics_per_host")),
    ),
    Chip(
        name="A100", vendor="nvidia", hbm_bytes=80 * GB, hbm_bandwidth=2.0e12,
        flops_per_s={"bf16": 3.12e14, "fp16": 3.12e14, "int8": 6.24e14},
        link_bandwidth_one_way=2.5e10, links_per_chip=12,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=3.2e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=108,
        fp32_cores_per_sm=64, boost_clock_hz=1.41e9,
        sources=(_A100_DS, f"{_HSYM}, part 12", _A100_WP),
        notes=("HBM bandwidth 2.039e12 B/s for the 80 GB part; the catalog keeps 2.0e12.",
               "Per SM: 192 KiB combined L1/SMEM and 256 KiB of registers; L2 40 MiB "
               "(NVIDIA A100 whitepaper; HSYM part 12).",
               "Spec sheet prints 624 TFLOPs bf16 'with sparsity'; dense is 312.",
               "NVLink 3: 12 links x 25 GB/s each way = 300 GB/s per GPU each way."),
        smem_l1_bytes_per_sm=192 * KiB, register_bytes_per_sm=256 * KiB, l2_bytes=40 * MiB,
        interconnect=NVLINK_SWITCH, nics_per_host=8,
        aliases=("a100-sxm", "a100-80gb", "a100-sxm4"),
        cited=_cite(
            (_A100_DS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                       "flops_per_s.int8 link_bandwidth_one_way links_per_chip pcie_bandwidth"),
            _NVIDIA_NODE, _NVIDIA_NICS,
            (_A100_WP, "cores fp32_cores_per_sm boost_clock_hz smem_l1_bytes_per_sm "
                       "register_bytes_per_sm l2_bytes")),
    ),
    Chip(
        name="H100", vendor="nvidia", hbm_bytes=80 * GB, hbm_bandwidth=3.35e12,
        flops_per_s={"bf16": 9.89e14, "fp16": 9.89e14, "fp8": 1.979e15, "int8": 1.979e15},
        link_bandwidth_one_way=2.5e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=6.4e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=132,
        fp32_cores_per_sm=128, boost_clock_hz=1.98e9,
        sources=(_H100_DS, f"{_HSYM}, part 12", f"{_H100_WP} (on-chip memory)"),
        notes=("Spec sheet prints 1,979 TFLOPs bf16 'with sparsity'; dense is 989.",
               "Per SM: 4 sub-partitions x 32 fp32 CUDA cores, 256 kB SMEM/L1; L2 about 50 MB.",
               "NVLink 4: 18 links x 25 GB/s each way = 450 GB/s per GPU each way."),
        smem_l1_bytes_per_sm=256 * KiB, register_bytes_per_sm=256 * KiB, l2_bytes=50 * MiB,
        interconnect=NVLINK_SWITCH, nics_per_host=8, switch_reduction=True,
        aliases=("h100-sxm", "h100-sxm5", "h100-80gb", "h100 sxm"),
        cited=_cite(
            (_H100_DS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                       "flops_per_s.fp8 flops_per_s.int8 link_bandwidth_one_way links_per_chip"),
            (_PCIE5, "pcie_bandwidth"), _NVIDIA_NODE, _NVIDIA_NICS,
            (f"{_H100_WP}; {_HSYM}, part 12", "cores fp32_cores_per_sm boost_clock_hz "
                                             "smem_l1_bytes_per_sm register_bytes_per_sm "
                                             "l2_bytes")),
    ),
    Chip(
        name="H200", vendor="nvidia", hbm_bytes=141 * GB, hbm_bandwidth=4.8e12,
        flops_per_s={"bf16": 9.89e14, "fp16": 9.89e14, "fp8": 1.979e15, "int8": 1.979e15},
        link_bandwidth_one_way=2.5e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=6.4e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=132,
        fp32_cores_per_sm=128, boost_clock_hz=1.98e9,
        sources=(_H200_DS, f"{_HSYM}, part 12"),
        notes=("Same compute die as the H100 with more and faster HBM.",
               "On-chip memory as the H100 (HSYM part 12: 256 kB SMEM per SM, 50 MB L2, 256 kB "
               "of registers per SM).",
               "Spec sheet prints tensor-core figures 'with sparsity' (2x dense)."),
        smem_l1_bytes_per_sm=256 * KiB, register_bytes_per_sm=256 * KiB, l2_bytes=50 * MiB,
        interconnect=NVLINK_SWITCH, nics_per_host=8, switch_reduction=True,
        aliases=("h200-sxm", "h200-141gb"),
        cited=_cite(
            (_H200_DS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                       "flops_per_s.fp8 flops_per_s.int8 link_bandwidth_one_way links_per_chip"),
            (_PCIE5, "pcie_bandwidth"), _NVIDIA_NODE, _NVIDIA_NICS,
            (f"{_HSYM}, part 12 (the H100's die)", "cores fp32_cores_per_sm boost_clock_hz "
                                                   "smem_l1_bytes_per_sm register_bytes_per_sm "
                                                   "l2_bytes")),
    ),
    Chip(
        name="B200", vendor="nvidia", hbm_bytes=192 * GB, hbm_bandwidth=8.0e12,
        flops_per_s={"bf16": 2.25e15, "fp16": 2.25e15, "fp8": 4.5e15, "int8": 4.5e15,
                     "fp4": 9.0e15},
        link_bandwidth_one_way=5.0e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=6.4e10, host_network_bandwidth=8 * _IB_PER_GPU, cores=148,
        fp32_cores_per_sm=128, boost_clock_hz=1.98e9,
        sources=(_HGX_B200, "NVIDIA B200 / DGX B200 datasheet", f"{_HSYM}, part 12"),
        notes=("HBM: the catalog keeps the B200 GPU's 192 GB of HBM3e (8 stacks of 24 GB; "
               "shared/facts/hardware.md, the vetted figure), the variant NVIDIA announced. The "
               "HGX / DGX B200 datasheet lists 1,440 GB per 8 GPUs, 180 GB each: what a program "
               "can allocate there, as a v5p shows 95 GiB of its 96. A problem about an HGX "
               "B200 system may say hbm_bytes=180e9. The GB200 superchip exposes 186 GB per GPU "
               "(see 'GB200 NVL72').",
               "Spec sheet prints tensor-core figures 'with sparsity' (2x dense).",
               "NVLink 5: 18 links x 50 GB/s each way = 900 GB/s per GPU each way.",
               "A GB200 NVL72 rack forms one 72-GPU NVLink domain: see 'GB200 NVL72'.",
               "Boost clock 1.98 GHz is derived, not printed: the HGX B200 datasheet's 75 TFLOPS "
               "of FP32 = 148 SMs x 128 FP32 cores x 2 FLOPs per FMA x clock gives 1.979e9 Hz "
               "(a GB200 runs faster, 80 TFLOPS, at a higher power limit).",
               "Per SM 256 kB SMEM and 256 kB registers, L2 126 MB (HSYM part 12 table, not in "
               "the vetted facts); Blackwell's 256 kB of TMEM per SM is not modelled."),
        smem_l1_bytes_per_sm=256 * KiB, register_bytes_per_sm=256 * KiB, l2_bytes=126 * MiB,
        interconnect=NVLINK_SWITCH, nics_per_host=8, switch_reduction=True,
        aliases=("b200-sxm", "blackwell", "dgx-b200", "hgx-b200"),
        cited=_cite(
            (_HGX_B200, "hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                        "flops_per_s.fp8 flops_per_s.int8 flops_per_s.fp4"),
            (_B200_HBM, "hbm_bytes"),
            (_NVLINK5, "link_bandwidth_one_way links_per_chip"),
            (_PCIE5, "pcie_bandwidth"), _NVIDIA_NODE, _NVIDIA_NICS,
            (_HSYM12, "cores fp32_cores_per_sm smem_l1_bytes_per_sm register_bytes_per_sm "
                      "l2_bytes"),
            (_B200_CLOCK, "boost_clock_hz")),
    ),
    Chip(
        name="B300", vendor="nvidia", hbm_bytes=270 * GB, hbm_bandwidth=7.7e12,
        flops_per_s={"bf16": 2.25e15, "fp16": 2.25e15, "fp8": 4.5e15, "fp4": 1.35e16},
        link_bandwidth_one_way=5.0e10, links_per_chip=18,
        topology="NVSwitch (all-to-all in a node)", max_slice=(8,), chips_per_host=8,
        pcie_bandwidth=1.28e11, host_network_bandwidth=8 * 100e9, cores=160,
        sources=(_HGX_B300, _BW_DATASHEET, _BLACKWELL_ULTRA, _NVLINK5, _CX8),
        notes=("Blackwell Ultra in an HGX / DGX B300 node of 8 GPUs.",
               "HBM: 270 GB and 7.7 TB/s per GPU (Blackwell datasheet, HGX B300 column); the "
               "GPU carries up to 288 GB (NVIDIA's Blackwell Ultra blog), the HGX page prints "
               "'up to 2.3 TB' per node, 8 TB/s is also quoted.",
               "Dense rates: the HGX B300 page's per-node figures over 8 GPUs, sparse ones "
               "halved: bf16 2.25e15 and fp8 4.5e15, as a B200; fp4 108 PFLOPS dense / 8 = "
               "1.35e16 (the datasheet's per-GPU column prints 14 PFLOPS).",
               "INT8 is cut on Blackwell Ultra and its printed figures disagree (2 or 3 POPS "
               "sparse per node): not modelled.",
               "Cores: 'up to 160 SMs, varies by SKU' (NVIDIA); the catalog keeps 160. No "
               "CUDA-core clock or on-chip memory figures are vetted: cuda_core_flops and "
               "on_chip_memory refuse this chip.",
               "Scale-out: 8 ConnectX-8 SuperNICs, 800 Gb/s each (1.6 TB/s per node counts both "
               "directions); host link PCIe Gen6 x16 through the ConnectX-8."),
        interconnect=NVLINK_SWITCH, nics_per_host=8, switch_reduction=True,
        aliases=("b300-sxm", "hgx-b300", "dgx-b300"),
        cited=_cite(
            (_BW_DATASHEET, "hbm_bytes hbm_bandwidth"),
            (_HGX_B300, "flops_per_s.bf16 flops_per_s.fp16 flops_per_s.fp8 flops_per_s.fp4 "
                        "max_slice chips_per_host"),
            (_NVLINK5, "link_bandwidth_one_way links_per_chip"),
            (_PCIE6, "pcie_bandwidth"), (_CX8, "host_network_bandwidth nics_per_host"),
            (_BLACKWELL_ULTRA, "cores")),
    ),
    Chip(
        name="GB200 NVL72", vendor="nvidia", hbm_bytes=13.4e12 / 72, hbm_bandwidth=576e12 / 72,
        flops_per_s={"bf16": 360e15 / 2 / 72, "fp16": 360e15 / 2 / 72, "fp8": 720e15 / 2 / 72,
                     "int8": 720e15 / 2 / 72, "fp4": 720e15 / 72},
        link_bandwidth_one_way=5.0e10, links_per_chip=18,
        topology="NVLink Switch (all-to-all in a 72-GPU rack)", max_slice=(72,),
        chips_per_host=72, pcie_bandwidth=2.25e11, host_network_bandwidth=72 * _IB_PER_GPU,
        cores=148,
        sources=(_GB200_RACK, _NVLINK5, _C2C, _CX7_NVL72, _HSYM12),
        notes=("One Blackwell GPU of a GB200 NVL72 rack; the 'node' is the rack's 72-GPU NVLink "
               "domain (36 Grace CPUs, 72 GPUs).",
               "Per-GPU figures are the rack datasheet's divided by 72, sparse ones halved: HBM "
               "13.4 TB / 72 = 186 GB (13.5 TB was printed earlier; the superchip page gives "
               "372 GB per 2 GPUs), 576 TB/s / 72 = 8 TB/s, bf16 2.5e15, fp8 and int8 5e15, "
               "fp4 1e16 dense. This GPU runs faster than an HGX B200 (2.25e15 bf16).",
               "NVLink 5: 130 TB/s / 72 = 1.8 TB/s per GPU = 18 links x 50 GB/s each way.",
               "Host link: NVLink-C2C to the Grace CPU, not PCIe.",
               "Scale-out: one ConnectX-7 400 Gb/s NIC per GPU.",
               "SM count 148 as the B200 (HSYM part 12); no CUDA-core clock or on-chip memory "
               "figures are vetted: cuda_core_flops and on_chip_memory refuse this chip."),
        interconnect=NVLINK_SWITCH, nics_per_host=72, switch_reduction=True,
        aliases=("gb200", "gb200-nvl72", "gb200nvl72", "nvl72-gb200", "nvidia gb200"),
        cited=_cite(
            (_GB200_RACK, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                          "flops_per_s.fp8 flops_per_s.int8 flops_per_s.fp4"),
            (_NVLINK5, "link_bandwidth_one_way links_per_chip"),
            (_NVL72_DOMAIN, "max_slice chips_per_host"), (_C2C, "pcie_bandwidth"),
            (_CX7_NVL72, "host_network_bandwidth nics_per_host"),
            (f"{_HSYM12} (the B200's SM count)", "cores")),
    ),
    Chip(
        name="GB300 NVL72", vendor="nvidia", hbm_bytes=20e12 / 72, hbm_bandwidth=576e12 / 72,
        flops_per_s={"bf16": 360e15 / 2 / 72, "fp16": 360e15 / 2 / 72, "fp8": 720e15 / 2 / 72,
                     "int8": 24e15 / 2 / 72, "fp4": 1080e15 / 72},
        link_bandwidth_one_way=5.0e10, links_per_chip=18,
        topology="NVLink Switch (all-to-all in a 72-GPU rack)", max_slice=(72,),
        chips_per_host=72, pcie_bandwidth=2.25e11, host_network_bandwidth=72 * 100e9,
        cores=160,
        sources=(_GB300_RACK, _NVLINK5, _C2C, _CX8, _BLACKWELL_ULTRA),
        notes=("One Blackwell Ultra GPU of a GB300 NVL72 rack; the 'node' is the rack's 72-GPU "
               "NVLink domain.",
               "Per-GPU figures are the rack datasheet's divided by 72, sparse ones halved: HBM "
               "20 TB / 72 = 278 GB (the datasheet's per-GPU column prints 279 GB, the GPU "
               "carries 288 GB; 21 TB per rack is also printed), 576 TB/s / 72 = 8 TB/s, bf16 "
               "2.5e15, fp8 5e15, fp4 1,080 PFLOPS dense / 72 = 1.5e16.",
               "INT8 24 POPS sparse per rack / 2 / 72 = 1.7e14 per GPU: Blackwell Ultra cuts "
               "INT8, 1/30 of its fp8 rate.",
               "NVLink 5: 130 TB/s / 72 = 1.8 TB/s per GPU = 18 links x 50 GB/s each way.",
               "Host link: NVLink-C2C to the Grace CPU, not PCIe.",
               "Scale-out: one ConnectX-8 SuperNIC per GPU, 800 Gb/s.",
               "Cores: 'up to 160 SMs, varies by SKU' (NVIDIA); the catalog keeps 160. No "
               "CUDA-core clock or on-chip memory figures are vetted."),
        interconnect=NVLINK_SWITCH, nics_per_host=72, switch_reduction=True,
        aliases=("gb300", "gb300-nvl72", "gb300nvl72", "nvl72-gb300", "nvidia gb300"),
        cited=_cite(
            (_GB300_RACK, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                          "flops_per_s.fp8 flops_per_s.int8 flops_per_s.fp4"),
            (_NVLINK5, "link_bandwidth_one_way links_per_chip"),
            (_NVL72_DOMAIN, "max_slice chips_per_host"), (_C2C, "pcie_bandwidth"),
            (_CX8, "host_network_bandwidth nics_per_host"), (_BLACKWELL_ULTRA, "cores")),
    ),
    Chip(
        name="MI300X", vendor="amd", hbm_bytes=192 * GB, hbm_bandwidth=5.3e12,
        flops_per_s={"bf16": 1.3074e15, "fp16": 1.3074e15, "fp8": 2.6149e15,
                     "int8": 2.6149e15},
        link_bandwidth_one_way=64e9, links_per_chip=7,
        topology="Infinity Fabric full mesh (8 GPUs, one link to each other GPU)",
        max_slice=(8,), chips_per_host=8, pcie_bandwidth=6.4e10,
        host_network_bandwidth=8 * _IB_PER_GPU, cores=304,
        sources=(_MI300X_DS, _AMD_NODE, _MI300X_NIC),
        notes=("AMD's datasheet prints each rate twice, dense and 'with sparsity' (2x); the "
               "catalog keeps dense.",
               "Infinity Fabric: 7 links x 128 GB/s peak per link both ways = 64 GB/s each way "
               "per link, 448 GB/s per GPU each way.",
               "Cores are compute units (CUs), 304. No CUDA cores: cuda_core_flops and "
               "on_chip_memory refuse AMD GPUs by name.",
               "Collectives run through RCCL, AMD's NCCL-compatible library."),
        interconnect=FULL_MESH, nics_per_host=8,
        aliases=("mi300", "instinct mi300x", "amd mi300x", "amd instinct mi300x"),
        cited=_cite(
            (_MI300X_DS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                         "flops_per_s.fp8 flops_per_s.int8 cores links_per_chip pcie_bandwidth"),
            (f"{_MI300X_DS}: {_IF_LINK}", "link_bandwidth_one_way"),
            (_AMD_NODE, "max_slice chips_per_host"),
            (_MI300X_NIC, "host_network_bandwidth nics_per_host")),
    ),
    Chip(
        name="MI325X", vendor="amd", hbm_bytes=256 * GB, hbm_bandwidth=6.0e12,
        flops_per_s={"bf16": 1.3074e15, "fp16": 1.3074e15, "fp8": 2.6149e15,
                     "int8": 2.6149e15},
        link_bandwidth_one_way=64e9, links_per_chip=7,
        topology="Infinity Fabric full mesh (8 GPUs, one link to each other GPU)",
        max_slice=(8,), chips_per_host=8, pcie_bandwidth=6.4e10,
        host_network_bandwidth=8 * _IB_PER_GPU, cores=304,
        sources=(_MI325X_DS, _AMD_NODE, _AMD_NIC),
        notes=("The MI300X's compute die with more and faster HBM (HBM3E).",
               "Dense rates; AMD also prints 'with sparsity' figures (2x).",
               "Infinity Fabric: 7 links x 128 GB/s peak per link both ways = 64 GB/s each way.",
               "Scale-out NICs are an assumption: one 400 Gb/s NIC per GPU, as on MI300X nodes.",
               "Cores are compute units (CUs). Collectives run through RCCL."),
        interconnect=FULL_MESH, nics_per_host=8,
        aliases=("mi325", "instinct mi325x", "amd mi325x", "amd instinct mi325x"),
        cited=_cite(
            (_MI325X_DS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                         "flops_per_s.fp8 flops_per_s.int8 cores links_per_chip pcie_bandwidth"),
            (f"{_MI325X_DS}: {_IF_LINK}", "link_bandwidth_one_way"),
            (_AMD_NODE, "max_slice chips_per_host"),
            (_AMD_NIC, "host_network_bandwidth nics_per_host")),
    ),
    Chip(
        name="MI355X", vendor="amd", hbm_bytes=288 * GB, hbm_bandwidth=8.0e12,
        flops_per_s={"bf16": 2.5166e15, "fp16": 2.5166e15, "fp8": 5.0332e15,
                     "int8": 5.0332e15, "fp4": 1.00663e16},
        link_bandwidth_one_way=76.8e9, links_per_chip=7,
        topology="Infinity Fabric full mesh (8 GPUs, one link to each other GPU)",
        max_slice=(8,), chips_per_host=8, pcie_bandwidth=6.4e10,
        host_network_bandwidth=8 * _IB_PER_GPU, cores=256,
        sources=(_MI355X_DS, _AMD_NODE, _AMD_NIC),
        notes=("CDNA 4. Dense rates; AMD prints 'with sparsity' figures (2x) beside them, and "
               "none for MXFP4/MXFP6. fp4 is MXFP4 (AMD's MXFP6 runs at the same rate).",
               "HBM 288 GB per AMD's datasheet (ROCm's GPU table writes 288 GiB); the catalog "
               "keeps the datasheet's GB.",
               "Infinity Fabric: 7 links x 153.6 GB/s peak per link both ways = 76.8 GB/s each "
               "way.",
               "Scale-out NICs are an assumption: one 400 Gb/s NIC per GPU (AMD Pollara 400).",
               "Cores are compute units (CUs), 32 per XCD x 8. Collectives run through RCCL."),
        interconnect=FULL_MESH, nics_per_host=8,
        aliases=("mi355", "instinct mi355x", "amd mi355x", "amd instinct mi355x"),
        cited=_cite(
            (_MI355X_DS, "hbm_bytes hbm_bandwidth flops_per_s.bf16 flops_per_s.fp16 "
                         "flops_per_s.fp8 flops_per_s.int8 flops_per_s.fp4 cores links_per_chip "
                         "pcie_bandwidth"),
            (f"{_MI355X_DS}: {_IF_LINK}", "link_bandwidth_one_way"),
            (_AMD_NODE, "max_slice chips_per_host"),
            (_AMD_NIC, "host_network_bandwidth nics_per_host")),
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


def _check_fma_flops(fma_flops: object) -> int:
    if isinstance(fma_flops, bool) or fma_flops not in (1, 2):
        raise ValueError(
            "fma_flops must be 1 (a fused multiply-add counts as one FLOP, i.e. one operation per "
            "core per cycle) or 2 (it counts as two, NVIDIA's datasheet convention), "
            f"got {fma_flops!r}"
        )
    return 1 if fma_flops == 1 else 2


def cuda_core_flops(chip: Chip | str, dtype: str = "fp32", *, fma_flops: int = 2) -> float:
    """FLOPs/s of a GPU's CUDA (vector) cores, without tensor cores.

    Formula: SMs x fp32 cores per SM x ``fma_flops`` x boost clock (Hz). Each CUDA core retires
    one fp32 instruction per cycle; a fused multiply-add (FMA) does a multiply and an add in it.

    - ``fma_flops=2`` (the default, unchanged): an FMA counts as two FLOPs, NVIDIA's datasheet
      convention. H100: 132 x 128 x 2 x 1.98e9 = 6.69e13 FLOPs/s (the datasheet prints 67 fp32
      TFLOPS), ~15x below its bf16 tensor cores.
    - ``fma_flops=1``: an FMA counts as one, so this is the instruction rate, 3.35e13 FMA/s on an
      H100; it is also the peak of plain adds, multiplies or maxes, which do one FLOP each.

    Only fp32 is modelled. Raises ``ValueError`` for TPUs and AMD GPUs (no CUDA cores), NVIDIA
    GPUs without vetted figures (B300, GB200, GB300), and an ``fma_flops`` other than 1 or 2.
    """
    chip = get_chip(chip)
    fma = _check_fma_flops(fma_flops)
    if canonical_dtype(dtype) != "fp32":
        raise ValueError("cuda_core_flops models fp32 FMA throughput only")
    if chip.vendor != "nvidia":
        kind = "an AMD GPU (compute units, not CUDA cores)" if chip.is_gpu else "a TPU"
        raise ValueError(f"{chip.name} has no vetted CUDA-core count and clock in the catalog: "
                         f"it is {kind}, with no CUDA cores")
    if chip.fp32_cores_per_sm is None or chip.boost_clock_hz is None:
        raise ValueError(f"{chip.name} has no vetted CUDA-core count and clock in the catalog")
    return chip.cores * chip.fp32_cores_per_sm * float(fma) * chip.boost_clock_hz


def vpu_flops(chip: Chip | str) -> float:
    """Vector (VPU) FLOPs/s of a whole TPU chip, fp32, the matrix units left out.

    Formula: TensorCores x sublanes x lanes x ALUs per (sublane, lane) x clock (Hz), one FLOP per
    ALU per cycle (a vadd, vmul or vmax). TPU v5p: 2 x 8 x 128 x 4 x 1.75e9 = 1.43e13 FLOPs/s, the
    1.4e13 that HSYM part 2 (appendix A) works out; TPU v5e: 1 x 8 x 128 x 4 x 1.5e9 = 6.1e12,
    derived from the same layout and the v5e clock of HSYM part 2 (not a published rate).

    Raises ``ValueError`` for GPUs (see :func:`cuda_core_flops`) and for TPUs whose ALU count or
    clock the catalog lacks (v3, v4p, v6e).
    """
    chip = get_chip(chip)
    if chip.is_gpu:
        raise ValueError(f"{chip.name} is a GPU; its vector rate is cuda_core_flops(), not a VPU's")
    figures = (("vreg_shape", chip.vreg_shape), ("vpu_alus", chip.vpu_alus),
               ("core_clock_hz", chip.core_clock_hz))
    missing = [name for name, value in figures if value is None]
    if missing:
        raise ValueError(f"{chip.name} has no sourced {', '.join(missing)} in the catalog, so its "
                         "VPU FLOPs/s is unknown; pass the rate your problem states instead")
    sublanes, lanes = chip.vreg_shape  # type: ignore[misc]
    alus, clock = chip.vpu_alus, chip.core_clock_hz
    return chip.cores * sublanes * lanes * alus * clock  # type: ignore[operator]


def vector_flops(chip: Chip | str, *, fma_flops: int = 2) -> float:
    """Peak FLOPs/s of the chip's vector unit: :func:`cuda_core_flops` on a GPU (fp32, with
    ``fma_flops`` choosing how an FMA counts), :func:`vpu_flops` on a TPU (``fma_flops`` does
    not apply: each VPU ALU does one FLOP per cycle). FLOPs/s, whole chip. An AMD GPU is
    refused (no sourced vector rate)."""
    chip = get_chip(chip)
    fma = _check_fma_flops(fma_flops)
    return cuda_core_flops(chip, fma_flops=fma) if chip.is_gpu else vpu_flops(chip)


# level -> (catalog field, vendor that has it, what the figure is per: "TensorCore"/"SM"/"chip")
_ON_CHIP: Mapping[str, tuple[str, str, str]] = MappingProxyType({
    "vmem": ("vmem_bytes_per_core", "google", "TensorCore"),
    "smem": ("smem_l1_bytes_per_sm", "nvidia", "SM"),
    "registers": ("register_bytes_per_sm", "nvidia", "SM"),
    "l2": ("l2_bytes", "nvidia", "chip"),
})
ON_CHIP_LEVELS: tuple[str, ...] = tuple(_ON_CHIP)


def on_chip_memory(chip: Chip | str, level: str, *, total: bool = False) -> float:
    """Bytes of on-chip memory at ``level``, as the catalog holds it.

    Levels: "vmem" (TPU vector memory, per TensorCore), "smem" (GPU combined L1/shared memory,
    per SM), "registers" (GPU register file, per SM), "l2" (GPU L2, per chip). With
    ``total=True`` a per-core or per-SM figure is multiplied by the chip's TensorCores or SMs:
    an H100 has 132 x 256 KiB = 33 MiB of SMEM/L1. Sources are in each chip's ``sources``.

    Raises ``ValueError`` for an unknown level, a level the chip's vendor does not have (a GPU
    has no VMEM), or a figure the catalog does not have for that chip.
    """
    chip = get_chip(chip)
    if level not in _ON_CHIP:
        raise ValueError(
            f"unknown on-chip memory level {level!r}; known: {', '.join(ON_CHIP_LEVELS)}"
        )
    attr, vendor, unit = _ON_CHIP[level]
    if chip.vendor != vendor:
        kind = "TPU" if vendor == "google" else "NVIDIA GPU"
        raise ValueError(f"{chip.name} has no {level!r}: that level is modelled for {kind}s only")
    value = getattr(chip, attr)
    if value is None:
        raise ValueError(
            f"{chip.name} has no sourced {level!r} size in the catalog ({attr} is None)"
        )
    return float(value) * (chip.cores if total and unit != "chip" else 1)

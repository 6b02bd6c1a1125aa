"""Slices, pods, nodes and clusters as objects: what a set of chips adds up to.

A **TPU slice** is a block of chips wired by ICI into a 2D or 3D mesh or torus, named by its
topology, e.g. "8x16x16" (a pod is the largest slice). A **GPU cluster** is some number of GPUs
in nodes of ``chips_per_host`` GPUs each: inside a node every GPU reaches every other over NVLink
through NVSwitches (the NVLink domain); nodes talk over the scale-out network (InfiniBand or
Ethernet NICs).

Every figure comes from the chip catalog (:mod:`scalebook.hardware`) and is multiplied out here;
nothing new is measured. Units are SI: bytes, bytes/s (one way unless said otherwise),
FLOPs/s (dense). Chips given as names are looked up with :func:`scalebook.hardware.get_chip`; a
problem's own numbers go in through ``chip.replace(...)``.

Reference: Austin et al., "How to Scale Your Model" (2025), part 2 (TPU slices, hosts, pods,
wraparound) and part 12 (GPU nodes).
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Sequence, Union

from scalebook.hardware import Chip, get_chip
from scalebook.torus import axis_wraps, check_slice_shape, shipped_description
from scalebook.validation import positive_int

__all__ = ["parse_topology", "format_topology", "TpuSlice", "tpu_slice", "GpuCluster",
           "gpu_cluster", "gpu_node"]

Topology = Union[str, Sequence[int]]

_AXIS = re.compile(r"[0-9]+")


def parse_topology(topology: Topology) -> tuple[int, ...]:
    """Axis sizes of a topology: "4x4x8" -> (4, 4, 8); a tuple or list of integers passes through.

    Strict: a string is positive integers joined by a lowercase "x" with nothing else (spaces
    around the whole string are ignored). "4x4x", "0x4", "4*4", "4 x 4" and "" are errors, as are
    sizes below 1, booleans and non-integers in a tuple. Raises ``ValueError`` naming the bad
    value and the expected form.
    """
    if isinstance(topology, str):
        text = topology.strip()
        parts = text.split("x")
        if not text or not all(_AXIS.fullmatch(part) for part in parts):
            raise ValueError(
                f"topology {topology!r} is not of the form 'AxB' or 'AxBxC' with positive "
                "integer axis sizes joined by 'x', e.g. '16x16' or '4x4x8'"
            )
        sizes = tuple(int(part) for part in parts)
    elif isinstance(topology, (tuple, list)) and topology:
        if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in topology):
            raise ValueError(f"topology {topology!r} must hold integer axis sizes, e.g. (4, 4, 8)")
        sizes = tuple(int(n) for n in topology)
    else:
        raise ValueError(
            f"topology must be a string such as '4x4x8' or a non-empty tuple of axis sizes, "
            f"got {topology!r}"
        )
    if any(n < 1 for n in sizes):
        raise ValueError(
            f"topology {topology!r} has an axis of size < 1; every axis needs >= 1 chip"
        )
    return sizes


def format_topology(shape: Sequence[int]) -> str:
    """(4, 4, 8) -> "4x4x8"."""
    return "x".join(str(n) for n in shape)


# --------------------------------------------------------------------------- TPU slices

@dataclass(frozen=True)
class TpuSlice:
    """A TPU slice: ``chip`` chips in an ICI mesh or torus of axis sizes ``shape``.

    Build one with :func:`tpu_slice`, which checks the shape against the chip. Totals are the
    per-chip catalog figures times the number of chips.
    """

    chip: Chip
    shape: tuple[int, ...]

    @property
    def topology(self) -> str:
        """The shape as a string, e.g. "8x16x16"."""
        return format_topology(self.shape)

    @property
    def chips(self) -> int:
        """Chips in the slice: the product of the axis sizes."""
        return math.prod(self.shape)

    @property
    def hosts(self) -> int:
        """CPU hosts: ceil(chips / chips per host). A slice smaller than one host (a v5e 2x2)
        still occupies one. TPU v5p 8x16x16: 2048 / 4 = 512; v5e 16x16: 256 / 8 = 32."""
        return -(-self.chips // self.chip.chips_per_host)

    @property
    def tensorcores(self) -> int:
        """TensorCores: chips x TensorCores per chip (2 on v4p/v5p, 1 on v5e/v6e)."""
        return self.chips * self.chip.cores

    def flops(self, dtype: str = "bf16") -> float:
        """Aggregate dense peak FLOPs/s in ``dtype``: chips x the chip's peak."""
        return self.chips * self.chip.flops(dtype)

    @property
    def hbm_bytes(self) -> float:
        """Aggregate HBM capacity in bytes: chips x per-chip HBM."""
        return self.chips * self.chip.hbm_bytes

    @property
    def hbm_bandwidth(self) -> float:
        """Aggregate HBM bandwidth in bytes/s: chips x per-chip HBM bandwidth."""
        return self.chips * self.chip.hbm_bandwidth

    @property
    def dcn_bandwidth(self) -> float:
        """Bytes/s the slice's hosts send to the data-centre network, one way: hosts x per host."""
        return self.hosts * self.chip.host_network_bandwidth

    @property
    def wraparound(self) -> tuple[bool, ...]:
        """Per axis, whether it is a ring (has wraparound links), by
        :func:`scalebook.torus.axis_wraps`: on v4p/v5p/TPU7x every axis of a slice of whole
        4x4x4 cubes and none of a smaller slice (v5p 2x4x4: no wraparound); on v5e/v6e an axis
        only when it spans the full 16 (v3: the full 32)."""
        return axis_wraps(self.chip, self.shape)

    @property
    def bisection_bandwidth(self) -> float:
        """Bytes/s one way across the narrowest cut that splits the slice in two halves.

        Cutting across axis i (size L_i >= 2) severs one link per line of chips along that axis,
        N / L_i lines, and two per line when the axis wraps around:

            B = min_i (N / L_i) x (2 if axis i wraps else 1) x W      (W = one-way link bytes/s)

        TPU v5e 16x16 with 50 GB/s links: 16 x 2 x 5e10 = 1.6e12 B/s, the pod bisection Google's
        v5e page lists; TPU v3 32x32: 32 x 2 x 1e11 = 6.4e12 B/s, as its page lists. An odd axis
        is cut as nearly in half as it goes. Raises ``ValueError`` for a one-chip slice.
        """
        cuts = [(self.chips // size) * (2 if wraps else 1)
                for size, wraps in zip(self.shape, self.wraparound) if size >= 2]
        if not cuts:
            raise ValueError(f"a one-chip slice ({self.topology}) has no bisection")
        return min(cuts) * self.chip.link_bandwidth_one_way


def tpu_slice(chip: Chip | str, topology: Topology) -> TpuSlice:
    """A :class:`TpuSlice` of ``chip`` with ``topology`` ("4x4x8" or (4, 4, 8)), checked.

    The topology must have as many axes as the chip's torus (2 on v3/v5e/v6e, 3 on v4p/v5p/TPU7x),
    fit in the chip's largest slice (``chip.max_slice``, axes in any order: sorted sizes must not
    exceed the sorted maximum), and be a shape the generation ships
    (:func:`scalebook.torus.check_slice_shape`: no v5p 4x4x1, no "16x4"). Raises ``ValueError``
    for a GPU, a malformed topology, the wrong number of axes, a slice beyond the largest one,
    or a shape not shipped, naming the limit or the shapes that exist.

    TPU v5p "8x16x16": 2048 chips, 512 hosts, 4096 TensorCores, 2048 x 4.59e14 bf16 FLOPs/s.
    """
    chip = get_chip(chip)
    if not chip.has_ici_torus:
        raise ValueError(f"{chip.name} is a GPU; use gpu_cluster() for GPU nodes and clusters")
    shape = parse_topology(topology)
    limit = chip.max_slice
    if len(shape) != len(limit):
        raise ValueError(
            f"{chip.name} slices have {len(limit)} axes (largest {format_topology(limit)}); "
            f"topology {format_topology(shape)} has {len(shape)}. Its slices are "
            f"{shipped_description(chip)}"
        )
    if any(n > m for n, m in zip(sorted(shape), sorted(limit))):
        raise ValueError(
            f"topology {format_topology(shape)} is beyond {chip.name}'s largest slice "
            f"{format_topology(limit)}"
        )
    check_slice_shape(chip, shape)
    return TpuSlice(chip=chip, shape=shape)


# --------------------------------------------------------------------------- GPU clusters

@dataclass(frozen=True)
class GpuCluster:
    """``n_gpus`` GPUs of one kind in nodes (NVLink domains) of ``gpus_per_node`` GPUs.

    Build one with :func:`gpu_cluster` or :func:`gpu_node`. A cluster smaller than a node is one
    partly filled node. Bandwidths are one way (bytes/s), from the catalog: NVLink per GPU is
    ``links_per_chip x link_bandwidth_one_way`` (450 GB/s on an H100), scale-out per GPU is the
    node's NIC bandwidth shared evenly (``host_network_bandwidth / chips_per_host``, 50 GB/s).
    """

    chip: Chip
    n_gpus: int
    gpus_per_node: int

    @property
    def nodes(self) -> int:
        """Nodes: n_gpus / gpus_per_node, or 1 for a cluster smaller than a node."""
        return max(1, self.n_gpus // self.gpus_per_node)

    @property
    def gpus_in_node(self) -> int:
        """GPUs in one NVLink domain: gpus_per_node, or n_gpus if the cluster is smaller."""
        return min(self.n_gpus, self.gpus_per_node)

    def flops(self, dtype: str = "bf16") -> float:
        """Aggregate dense peak FLOPs/s in ``dtype``: GPUs x the GPU's peak."""
        return self.n_gpus * self.chip.flops(dtype)

    @property
    def hbm_bytes(self) -> float:
        """Aggregate HBM capacity in bytes."""
        return self.n_gpus * self.chip.hbm_bytes

    @property
    def hbm_bandwidth(self) -> float:
        """Aggregate HBM bandwidth in bytes/s."""
        return self.n_gpus * self.chip.hbm_bandwidth

    @property
    def nvlink_bandwidth_per_gpu(self) -> float:
        """Bytes/s one GPU sends over all its NVLinks, one way: links x per-link bandwidth."""
        return self.chip.interconnect_bandwidth_one_way

    @property
    def nvlink_bandwidth_per_node(self) -> float:
        """Aggregate NVLink egress of one node, one way: GPUs in the node x per GPU.
        8 H100s: 8 x 450 GB/s = 3.6e12 B/s."""
        return self.gpus_in_node * self.nvlink_bandwidth_per_gpu

    @property
    def nvlink_bisection_bandwidth(self) -> float:
        """Bytes/s one way between two halves of one NVLink domain: floor(G / 2) x per-GPU NVLink.

        Through a non-blocking NVSwitch each GPU of one half can send at its full NVLink rate to
        the other half at once. 8 H100s: 4 x 450 GB/s = 1.8e12 B/s. Raises ``ValueError`` for
        nodes without NVSwitch (the V100's hybrid cube mesh) and for a one-GPU node.
        """
        if "nvswitch" not in self.chip.topology.lower():
            raise ValueError(
                f"{self.chip.name} nodes are wired as '{self.chip.topology}', not through an "
                "NVSwitch; the all-to-all bisection formula does not apply"
            )
        if self.gpus_in_node < 2:
            raise ValueError("a one-GPU node has no bisection")
        return (self.gpus_in_node // 2) * self.nvlink_bandwidth_per_gpu

    @property
    def scale_out_bandwidth_per_gpu(self) -> float:
        """Bytes/s one GPU sends to other nodes, one way: the node's NIC bandwidth / GPUs per node
        in the catalog (one 400 Gb/s NIC = 5e10 B/s per GPU on the catalog's nodes)."""
        return self.chip.host_network_bandwidth / self.chip.chips_per_host

    @property
    def scale_out_bandwidth_per_node(self) -> float:
        """Bytes/s one node sends to other nodes, one way: GPUs in the node x per GPU
        (8 H100s: 4e11)."""
        return self.gpus_in_node * self.scale_out_bandwidth_per_gpu

    @property
    def scale_out_bandwidth(self) -> float:
        """Aggregate scale-out egress of all nodes, one way: nodes x per node."""
        return self.nodes * self.scale_out_bandwidth_per_node


def gpu_cluster(chip: Chip | str, n_gpus: int, *, gpus_per_node: int | None = None) -> GpuCluster:
    """A :class:`GpuCluster` of ``n_gpus`` GPUs, nodes of ``gpus_per_node`` (default: the
    catalog's ``chips_per_host``, 8; give 72 for a GB200 NVL72 rack).

    Raises ``ValueError`` for a TPU, a count below 1, or a count above one node that is not a
    whole number of nodes.
    """
    chip = get_chip(chip)
    if not chip.has_nvlink_domain:
        raise ValueError(f"{chip.name} is not a GPU; use tpu_slice() for TPU slices and pods")
    n = positive_int(n_gpus, "n_gpus")
    per_node = positive_int(chip.chips_per_host if gpus_per_node is None else gpus_per_node,
                            "gpus_per_node")
    if n > per_node and n % per_node:
        raise ValueError(
            f"n_gpus={n} spans several nodes but is not a multiple of {per_node} GPUs per node"
        )
    return GpuCluster(chip=chip, n_gpus=n, gpus_per_node=per_node)


def gpu_node(chip: Chip | str) -> GpuCluster:
    """One full node of ``chip``: ``chips_per_host`` GPUs (8 for every GPU in the catalog)."""
    chip = get_chip(chip)
    if not chip.has_nvlink_domain:
        raise ValueError(f"{chip.name} is not a GPU; use tpu_slice() for TPU slices and pods")
    return gpu_cluster(chip, chip.chips_per_host)

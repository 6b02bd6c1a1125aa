"""How long collectives take: the alpha-beta (latency + bandwidth) model over one or more mesh axes.

Every function returns a :class:`CollectiveCost` whose ``time`` is

    time = bandwidth_time + latency_time        (seconds)

where ``bandwidth_time`` is bytes moved through the busiest link divided by that link's bandwidth
and ``latency_time`` is the number of sequential hops (or steps) times a per-hop latency. The
formulas follow "How to Scale Your Model" (Austin et al., 2025): part 3 for TPU rings, part 12
for GPUs.

Conventions
-----------
``nbytes`` is always the size in bytes of the *full logical array* the collective works on,
summed over the ``N`` devices of the group, never one device's shard:

- AllGather: the gathered output (each device starts with ``nbytes / N``).
- ReduceScatter and AllReduce: the unreduced input that every device holds in full.
- AllToAll: the array the group holds together (each device holds ``nbytes / N`` before and
  after; the sharded dimension changes).
- ppermute: the bytes each device sends to its neighbour.

``nbytes`` may be a number or a numpy array (for plots); zero is allowed (only latency is
left), negative raises ``ValueError``. ``n_devices`` is an integer >= 1; ``N = 1`` costs nothing.

Bandwidths are SI bytes/s. ``bandwidth=`` overrides the chip's figure with a problem's own number;
on TPUs it is the **one-way** bandwidth of one ICI link. A bidirectional ring (an axis with
wraparound) moves data both ways round the ring, so it sees ``2 x`` one-way bandwidth; an axis
without wraparound is a line and sees the one-way figure for the same bytes: 2x slower.

``regime`` names the larger term: "bandwidth-bound" or "latency-bound" (ties, i.e. a zero-cost
collective on one device, are "no communication").
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Sequence, Union

import numpy as np

from scalebook.hardware import Chip, get_chip

BANDWIDTH_BOUND = "bandwidth-bound"
LATENCY_BOUND = "latency-bound"
NO_COMMUNICATION = "no communication"

DEFAULT_HOP_LATENCY = 1e-6
"""Seconds per ICI hop; HSYM part 3 uses about 1 µs. Also used per step of a GPU ring (an
order-of-magnitude assumption, not a vetted figure: pass ``hop_latency=`` to change it)."""

Bytes = Union[float, np.ndarray]

__all__ = [
    "BANDWIDTH_BOUND", "LATENCY_BOUND", "NO_COMMUNICATION", "DEFAULT_HOP_LATENCY",
    "CollectiveCost",
    "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "ppermute",
    "all_gather_multi_axis", "reduce_scatter_multi_axis", "all_reduce_multi_axis",
    "has_wraparound",
    "gpu_all_gather", "gpu_reduce_scatter", "gpu_all_reduce", "gpu_all_to_all",
    "gpu_hierarchical_all_reduce",
]


@dataclass(frozen=True)
class CollectiveCost:
    """The modelled cost of one collective.

    Attributes:
        name: e.g. "AllGather", "AllReduce (hierarchical)".
        n_devices: devices in the group.
        nbytes: logical array size in bytes (see the module conventions); number or array.
        bandwidth_time: seconds spent moving bytes (the beta term).
        latency_time: seconds of per-hop latency (the alpha term).
        link_bandwidth: one-way bytes/s of the link the bandwidth term is built on: one ICI link
            on a TPU, a GPU's whole NVLink egress in a node, a GPU's NIC across nodes; for a
            multi-stage cost, the slowest stage's.
        formula: the bandwidth term in symbols, e.g. "V·(N−1)/N / (2·W)".
        stages: for a composite collective (hierarchical GPU AllReduce), its parts in order.
        time: bandwidth_time + latency_time (s).
        regime: "bandwidth-bound", "latency-bound" or "no communication" (numpy array of those
            strings when ``nbytes`` is an array).
    """

    name: str
    n_devices: int
    nbytes: Bytes
    bandwidth_time: Bytes
    latency_time: float
    link_bandwidth: float
    formula: str = ""
    stages: tuple["CollectiveCost", ...] = ()
    time: Bytes = field(init=False)
    regime: Union[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        time = self.bandwidth_time + self.latency_time
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "regime", _regime(self.bandwidth_time, self.latency_time))


def _regime(bandwidth_time: Bytes, latency_time: float) -> Union[str, np.ndarray]:
    if isinstance(bandwidth_time, np.ndarray):
        return np.where(
            bandwidth_time + latency_time == 0, NO_COMMUNICATION,
            np.where(bandwidth_time >= latency_time, BANDWIDTH_BOUND, LATENCY_BOUND),
        )
    if bandwidth_time + latency_time == 0:
        return NO_COMMUNICATION
    return BANDWIDTH_BOUND if bandwidth_time >= latency_time else LATENCY_BOUND


# --------------------------------------------------------------------------- validation

def _check_nbytes(nbytes: Bytes) -> Bytes:
    if isinstance(nbytes, (bool, np.bool_)):
        raise ValueError(f"nbytes must be a number of bytes, got {nbytes!r}")
    try:
        array = np.asarray(nbytes, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"nbytes must be a number of bytes, got {nbytes!r}") from None
    if np.any(np.isnan(array)) or np.any(array < 0) or np.any(np.isinf(array)):
        raise ValueError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    return float(array) if array.ndim == 0 else array


def _check_count(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return int(value)


def _check_latency(hop_latency: float) -> float:
    if not isinstance(hop_latency, numbers.Real) or not hop_latency >= 0 or math.isinf(hop_latency):
        raise ValueError(
            f"hop_latency must be a finite number of seconds >= 0, got {hop_latency!r}"
        )
    return float(hop_latency)


def _check_bandwidth(bandwidth: float, what: str = "bandwidth") -> float:
    if (isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real)
            or not bandwidth > 0 or math.isinf(bandwidth)):
        raise ValueError(f"{what} must be a positive number of bytes/s, got {bandwidth!r}")
    return float(bandwidth)


def _tpu_link_bandwidth(chip: Chip | str | None, bandwidth: float | None) -> float:
    """One-way bytes/s of one ICI link: the override if given, else the chip's figure."""
    if chip is not None:
        chip = get_chip(chip)
        if chip.is_gpu:
            raise ValueError(
                f"{chip.name} is a GPU; the ring functions model TPU ICI axes. "
                "Use gpu_all_gather / gpu_all_reduce / ... for GPUs"
            )
    if bandwidth is not None:
        return _check_bandwidth(bandwidth)
    if chip is None:
        raise ValueError("give a chip or an explicit bandwidth= (one-way bytes/s per link)")
    return chip.link_bandwidth_one_way


def _wraparound_list(wraparound: bool | Sequence[bool], n_axes: int) -> list[bool]:
    if isinstance(wraparound, (bool, np.bool_)):
        return [bool(wraparound)] * n_axes
    flags = list(wraparound)
    if len(flags) != n_axes:
        raise ValueError(
            f"wraparound lists {len(flags)} flags but there are {n_axes} axes; give one per axis"
        )
    if not all(isinstance(flag, (bool, np.bool_)) for flag in flags):
        raise ValueError(f"wraparound flags must be booleans, got {wraparound!r}")
    return [bool(flag) for flag in flags]


def _hops(n: int, wraparound: bool) -> int:
    """Sequential hops a ring collective needs: N//2 both ways round a ring, N-1 along a line."""
    return n // 2 if wraparound else n - 1


def _zero(name: str, n: int, nbytes: Bytes, link_bandwidth: float) -> CollectiveCost:
    return CollectiveCost(name, n, nbytes, nbytes * 0.0, 0.0, link_bandwidth, "0 (one device)")


# --------------------------------------------------------------------------- TPU: one axis

def all_gather(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
               wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
               bandwidth: float | None = None) -> CollectiveCost:
    """AllGather over one TPU mesh axis of ``N = n_devices`` chips (HSYM part 3).

    Each chip must receive the ``N − 1`` shards it lacks, ``V·(N−1)/N`` bytes, ``V = nbytes``.

    - With wraparound (a ring) shards travel both ways, so each chip takes in data on two links:
      ``T_bw = V·(N−1)/N / (2·W)`` ≈ ``V / W_bidirectional``; latency ``N//2`` hops.
    - Without wraparound (a line) the end chips have one neighbour:
      ``T_bw = V·(N−1)/N / W``, twice as long; latency ``N − 1`` hops.

    ``W`` is one link's one-way bandwidth (bytes/s), ``bandwidth=`` overrides the chip's.
    ``T = T_bw + hops × hop_latency`` (s).
    """
    nbytes, n = _check_nbytes(nbytes), _check_count(n_devices, "n_devices")
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    if n == 1:
        return _zero("AllGather", n, nbytes, link)
    ways = 2 if wraparound else 1
    bw_time = nbytes * (n - 1) / n / (ways * link)
    formula = "V·(N−1)/N / (2·W)" if wraparound else "V·(N−1)/N / W"
    return CollectiveCost("AllGather", n, nbytes, bw_time, _hops(n, wraparound) * latency, link,
                          formula)


def reduce_scatter(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
                   wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
                   bandwidth: float | None = None) -> CollectiveCost:
    """ReduceScatter over one TPU axis: the AllGather run backwards, so the same cost.

    ``V = nbytes`` is the unreduced input every chip holds; each chip ends with ``V/N``, reduced.
    ``T_bw = V·(N−1)/N / (2·W)`` with wraparound, ``V·(N−1)/N / W`` without (s).
    """
    cost = all_gather(nbytes, n_devices, chip, wraparound=wraparound, hop_latency=hop_latency,
                      bandwidth=bandwidth)
    return _renamed(cost, "ReduceScatter")


def all_reduce(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
               wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
               bandwidth: float | None = None) -> CollectiveCost:
    """AllReduce over one TPU axis = ReduceScatter then AllGather: **twice** an AllGather.

    ``T_bw = 2·V·(N−1)/N / (2·W)`` with wraparound (≈ ``2V / W_bidirectional``), and twice the
    latency. Forgetting the factor 2 is the classic mistake.
    """
    rs = reduce_scatter(nbytes, n_devices, chip, wraparound=wraparound, hop_latency=hop_latency,
                        bandwidth=bandwidth)
    return _doubled(rs, "AllReduce")


def all_to_all(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
               wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
               bandwidth: float | None = None) -> CollectiveCost:
    """AllToAll over one TPU axis: each chip sends a different ``V/N²`` block to every other chip.

    Derivation (byte-hops over link capacity). Chip ``i`` sends ``V/N²`` to each chip ``j ≠ i``,
    along the shorter way round. On a ring the distances sum to ``S = ⌊N/2⌋·⌈N/2⌉`` (``N²/4``
    for even N), so all chips together put ``N · S · V/N² = S·V/N`` byte-hops on the network,
    and the ring has ``N`` links × 2 directions × ``W``:

        T_bw = S·V / (2·N²·W)  =  V / (8·W) = V / (4·W_bidirectional)   (even N)

    which is about 1/4 of an AllGather of the same array (exactly
    ``AllGather/4 × N/(N−1)``: the AllGather keeps its ``(N−1)/N`` factor, the AllToAll's is
    inside S). Without wraparound, the bottleneck is the middle link: the ``⌊N/2⌋`` chips on
    one side send ``⌊N/2⌋·⌈N/2⌉`` blocks of ``V/N²`` across it, one way, so
    ``T_bw = S·V / (N²·W)`` (= ``V/(4W)``, again 2x the ring). Latency: ``N//2`` hops
    (ring) or ``N − 1`` (line).
    """
    nbytes, n = _check_nbytes(nbytes), _check_count(n_devices, "n_devices")
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    if n == 1:
        return _zero("AllToAll", n, nbytes, link)
    pair_distance_sum = (n // 2) * ((n + 1) // 2)
    ways = 2 if wraparound else 1
    bw_time = pair_distance_sum * nbytes / (ways * n * n * link)
    formula = ("V·⌊N/2⌋⌈N/2⌉/N² / (2·W)" if wraparound else "V·⌊N/2⌋⌈N/2⌉/N² / W")
    return CollectiveCost("AllToAll", n, nbytes, bw_time, _hops(n, wraparound) * latency, link,
                          formula)


def ppermute(nbytes: Bytes, chip: Chip | str | None = None, *, n_devices: int = 2,
             hop_latency: float = DEFAULT_HOP_LATENCY,
             bandwidth: float | None = None) -> CollectiveCost:
    """Every chip sends ``nbytes`` to its neighbour on the axis (a collective permute / shift).

    All links work at once, one way each: ``T = nbytes / W + hop_latency`` (s). ``n_devices``
    only matters when it is 1 (nothing to send).
    """
    nbytes, n = _check_nbytes(nbytes), _check_count(n_devices, "n_devices")
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    if n == 1:
        return _zero("ppermute", n, nbytes, link)
    return CollectiveCost("ppermute", n, nbytes, nbytes / link, latency, link, "V / W")


def _renamed(cost: CollectiveCost, name: str) -> CollectiveCost:
    return CollectiveCost(name, cost.n_devices, cost.nbytes, cost.bandwidth_time,
                          cost.latency_time, cost.link_bandwidth, cost.formula, cost.stages)


def _doubled(cost: CollectiveCost, name: str) -> CollectiveCost:
    formula = f"2 × {cost.formula}" if cost.n_devices > 1 else cost.formula
    return CollectiveCost(name, cost.n_devices, cost.nbytes, 2 * cost.bandwidth_time,
                          2 * cost.latency_time, cost.link_bandwidth, formula)


# --------------------------------------------------------------------------- TPU: several axes

def all_gather_multi_axis(nbytes: Bytes, axis_sizes: Sequence[int],
                          chip: Chip | str | None = None, *,
                          wraparound: bool | Sequence[bool] = True,
                          hop_latency: float = DEFAULT_HOP_LATENCY,
                          bandwidth: float | None = None) -> CollectiveCost:
    """AllGather over several torus axes at once (``N`` = product of ``axis_sizes``).

    Each axis used (size > 1) adds its own links, so bandwidths add (HSYM part 3):

        T_bw = V·(N−1)/N / Σ_axes W_axis,   W_axis = 2·W with wraparound, W without

    With ``k`` equal axes this is ``k`` times faster than one axis of the same ``N``. Latency is
    the sum of each axis's hops. ``wraparound`` is one flag or one per axis.
    """
    nbytes = _check_nbytes(nbytes)
    sizes = _check_axis_sizes(axis_sizes)
    flags = _wraparound_list(wraparound, len(sizes))
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    n = math.prod(sizes)
    if n == 1:
        return _zero("AllGather", n, nbytes, link)
    used = [(size, wrap) for size, wrap in zip(sizes, flags) if size > 1]
    total_bandwidth = sum((2 if wrap else 1) * link for _, wrap in used)
    hops = sum(_hops(size, wrap) for size, wrap in used)
    terms = " + ".join("2·W" if wrap else "W" for _, wrap in used)
    bw_time = nbytes * (n - 1) / n / total_bandwidth
    return CollectiveCost("AllGather", n, nbytes, bw_time, hops * latency, link,
                          f"V·(N−1)/N / ({terms})")


def reduce_scatter_multi_axis(nbytes: Bytes, axis_sizes: Sequence[int],
                              chip: Chip | str | None = None, *,
                              wraparound: bool | Sequence[bool] = True,
                              hop_latency: float = DEFAULT_HOP_LATENCY,
                              bandwidth: float | None = None) -> CollectiveCost:
    """ReduceScatter over several axes: same cost as :func:`all_gather_multi_axis`."""
    cost = all_gather_multi_axis(nbytes, axis_sizes, chip, wraparound=wraparound,
                                 hop_latency=hop_latency, bandwidth=bandwidth)
    return _renamed(cost, "ReduceScatter")


def all_reduce_multi_axis(nbytes: Bytes, axis_sizes: Sequence[int],
                          chip: Chip | str | None = None, *,
                          wraparound: bool | Sequence[bool] = True,
                          hop_latency: float = DEFAULT_HOP_LATENCY,
                          bandwidth: float | None = None) -> CollectiveCost:
    """AllReduce over several axes: 2 × :func:`all_gather_multi_axis` (bandwidth and latency)."""
    cost = reduce_scatter_multi_axis(nbytes, axis_sizes, chip, wraparound=wraparound,
                                     hop_latency=hop_latency, bandwidth=bandwidth)
    return _doubled(cost, "AllReduce")


def _check_axis_sizes(axis_sizes: Sequence[int]) -> list[int]:
    if isinstance(axis_sizes, (str, bytes)) or not isinstance(axis_sizes, Sequence):
        raise ValueError(f"axis_sizes must be a sequence of integers, got {axis_sizes!r}")
    if len(axis_sizes) == 0:
        raise ValueError("axis_sizes is empty; give at least one axis size")
    return [_check_count(size, "each axis size") for size in axis_sizes]


def has_wraparound(chip: Chip | str, axis_size: int) -> bool:
    """Whether a TPU slice axis of ``axis_size`` chips is a true ring (has wraparound links).

    Rules (shared/facts/hardware.md): v4p/v5p ("v*p", 3D torus) when the axis is a multiple of
    4; v5e/v6e only when the axis spans the full 16; v3 when it spans the full 32. Raises
    ``ValueError`` for GPUs and for axes longer than the chip's largest slice.
    """
    chip = get_chip(chip)
    if chip.is_gpu:
        raise ValueError(f"{chip.name} is a GPU; wraparound is a TPU ICI notion")
    size = _check_count(axis_size, "axis_size")
    longest = max(chip.max_slice)
    if size > longest:
        raise ValueError(
            f"axis_size {size} is longer than {chip.name}'s largest slice axis ({longest})"
        )
    if chip.name.lower().endswith("p"):  # v4p, v5p: 3D torus built from 4x4x4 cubes
        return size % 4 == 0
    return size == longest  # 2D parts: only the full-width axis closes the ring


# --------------------------------------------------------------------------- GPUs

def _gpu_setup(chip: Chip | str, n_gpus: int, gpus_per_node: int | None,
               nvlink_bandwidth: float | None, nic_bandwidth: float | None,
               hop_latency: float) -> tuple[int, int, float, float, float]:
    chip = get_chip(chip)
    if not chip.is_gpu:
        raise ValueError(f"{chip.name} is not a GPU; use all_gather / all_reduce / ... for TPUs")
    n = _check_count(n_gpus, "n_gpus")
    per_node = _check_count(gpus_per_node if gpus_per_node is not None else chip.chips_per_host,
                            "gpus_per_node")
    nvlink = (_check_bandwidth(nvlink_bandwidth, "nvlink_bandwidth") if nvlink_bandwidth is not None
              else chip.interconnect_bandwidth_one_way)
    nic = (_check_bandwidth(nic_bandwidth, "nic_bandwidth") if nic_bandwidth is not None
           else chip.host_network_bandwidth / chip.chips_per_host)
    return n, per_node, nvlink, nic, _check_latency(hop_latency)


def _nodes(n: int, per_node: int) -> int:
    if n % per_node:
        raise ValueError(
            f"n_gpus={n} spans several nodes but is not a multiple of {per_node} GPUs per node"
        )
    return n // per_node


def _gpu_ring(name: str, where: str, nbytes: Bytes, n: int, bandwidth: float,
              latency: float) -> CollectiveCost:
    """One AllGather-like pass: each GPU takes in V·(N−1)/N bytes at ``bandwidth``; N−1 steps."""
    label = f"{name} ({where}, {n} {'GPUs' if where == 'NVLink' else 'nodes'})"
    if n == 1:
        return _zero(label, n, nbytes, bandwidth)
    symbol = "W_nvlink" if where == "NVLink" else "W_nic"
    return CollectiveCost(label, n, nbytes, nbytes * (n - 1) / n / bandwidth,
                          (n - 1) * latency, bandwidth, f"V·(N−1)/N / {symbol}")


def _combined(name: str, n: int, nbytes: Bytes, stages: Sequence[CollectiveCost]) -> CollectiveCost:
    return CollectiveCost(
        name, n, nbytes,
        sum((stage.bandwidth_time for stage in stages), nbytes * 0.0),
        sum(stage.latency_time for stage in stages),
        min(stage.link_bandwidth for stage in stages),
        " + ".join(stage.formula for stage in stages if stage.n_devices > 1) or "0 (one device)",
        tuple(stages),
    )


def gpu_all_gather(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                   gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                   nic_bandwidth: float | None = None,
                   hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """AllGather over ``N = n_gpus`` NVIDIA GPUs (HSYM part 12).

    In one node (NVLink domain, every GPU reaches every other through NVSwitch), each GPU must
    take in ``V·(N−1)/N`` bytes through its NVLink ports:
    ``T_bw = V·(N−1)/N / W_nvlink`` with ``W_nvlink = links × per-link one-way`` (450 GB/s on an
    H100). Latency: ``N − 1`` ring steps.

    Across ``M`` nodes of ``g`` GPUs (``N = M·g``), hierarchically: first GPU ``k`` of every node
    gathers over the nodes through its own NIC (a ring of M, ``V/g`` gathered), then each node
    gathers in NVLink: ``T_bw = (V/g)·(M−1)/M / W_nic + V·(g−1)/g / W_nvlink``, with
    ``W_nic = host_network_bandwidth / chips_per_host`` (50 GB/s per GPU). ``stages`` lists both.
    """
    nbytes = _check_nbytes(nbytes)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    if n <= g:
        return _renamed(_gpu_ring("AllGather", "NVLink", nbytes, n, nvlink, latency), "AllGather")
    m = _nodes(n, g)
    stages = [_gpu_ring("AllGather", "NIC", nbytes / g, m, nic, latency),
              _gpu_ring("AllGather", "NVLink", nbytes, g, nvlink, latency)]
    return _combined("AllGather (hierarchical)", n, nbytes, stages)


def gpu_reduce_scatter(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                       gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                       nic_bandwidth: float | None = None,
                       hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """ReduceScatter over GPUs: :func:`gpu_all_gather` run backwards, same cost.

    Across nodes: ReduceScatter in the node over NVLink (``V`` in), then over the nodes through
    the NICs (``V/g`` in).
    """
    nbytes = _check_nbytes(nbytes)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    if n <= g:
        return _renamed(_gpu_ring("ReduceScatter", "NVLink", nbytes, n, nvlink, latency),
                        "ReduceScatter")
    m = _nodes(n, g)
    stages = [_gpu_ring("ReduceScatter", "NVLink", nbytes, g, nvlink, latency),
              _gpu_ring("ReduceScatter", "NIC", nbytes / g, m, nic, latency)]
    return _combined("ReduceScatter (hierarchical)", n, nbytes, stages)


def gpu_hierarchical_all_reduce(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                                gpus_per_node: int | None = None,
                                nvlink_bandwidth: float | None = None,
                                nic_bandwidth: float | None = None,
                                hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """AllReduce over ``N = M × g`` GPUs in ``M`` nodes of ``g``, in three stages (HSYM part 12):

    1. ReduceScatter in each node over NVLink: ``V·(g−1)/g / W_nvlink``; each GPU holds ``V/g``.
    2. AllReduce of that ``V/g`` shard over the M nodes, GPU k of each node through its own NIC:
       ``2·(V/g)·(M−1)/M / W_nic``.
    3. AllGather in each node over NVLink: ``V·(g−1)/g / W_nvlink``.

    ``n_gpus`` must be a multiple of ``g`` (``gpus_per_node``, default the chip's
    ``chips_per_host``). ``stages`` holds the three parts; ``time`` is their sum.
    """
    nbytes = _check_nbytes(nbytes)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    if n < g:
        raise ValueError(
            f"n_gpus={n} is less than one node ({g} GPUs); use gpu_all_reduce for part of a node"
        )
    m = _nodes(n, g)
    stages = [
        _gpu_ring("ReduceScatter", "NVLink", nbytes, g, nvlink, latency),
        _doubled(_gpu_ring("AllReduce", "NIC", nbytes / g, m, nic, latency),
                 f"AllReduce (NIC, {m} nodes)"),
        _gpu_ring("AllGather", "NVLink", nbytes, g, nvlink, latency),
    ]
    return _combined("AllReduce (hierarchical)", n, nbytes, stages)


def gpu_all_reduce(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                   gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                   nic_bandwidth: float | None = None,
                   hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """AllReduce over GPUs: in a node, 2 × :func:`gpu_all_gather` (``2·V·(N−1)/N / W_nvlink``);
    across nodes, :func:`gpu_hierarchical_all_reduce`.
    """
    nbytes = _check_nbytes(nbytes)
    n, g, *_ = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth, nic_bandwidth,
                          hop_latency)
    kwargs = dict(gpus_per_node=gpus_per_node, nvlink_bandwidth=nvlink_bandwidth,
                  nic_bandwidth=nic_bandwidth, hop_latency=hop_latency)
    if n > g:
        return gpu_hierarchical_all_reduce(nbytes, n, chip, **kwargs)
    return _doubled(gpu_reduce_scatter(nbytes, n, chip, **kwargs), "AllReduce")


def gpu_all_to_all(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                   gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                   nic_bandwidth: float | None = None,
                   hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """AllToAll over GPUs. Each GPU holds ``V/N`` and keeps ``1/N`` of it, sending the rest.

    In a node the switch lets every GPU send at once, so only its own egress limits it:
    ``T_bw = (V/N)·(N−1)/N / W_nvlink`` — an AllGather divided by N. One step of latency.

    Across nodes (``N = M·g``) the ``(N−g)/N`` of its block bound for other nodes leaves through
    its NIC while the ``(g−1)/N`` for its own node goes over NVLink at the same time:
    ``T_bw = max((V/N)·(N−g)/N / W_nic, (V/N)·(g−1)/N / W_nvlink)``.
    """
    nbytes = _check_nbytes(nbytes)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    if n == 1:
        return _zero("AllToAll", n, nbytes, nvlink)
    block = nbytes / n
    if n <= g:
        return CollectiveCost("AllToAll", n, nbytes, block * (n - 1) / n / nvlink, latency,
                              nvlink, "(V/N)·(N−1)/N / W_nvlink")
    _nodes(n, g)
    over_nic = block * (n - g) / n / nic
    over_nvlink = block * (g - 1) / n / nvlink
    bw_time = np.maximum(over_nic, over_nvlink)
    bw_time = bw_time if isinstance(block, np.ndarray) else float(bw_time)
    return CollectiveCost("AllToAll", n, nbytes, bw_time, latency, nic,
                          "max((V/N)·(N−g)/N / W_nic, (V/N)·(g−1)/N / W_nvlink)")

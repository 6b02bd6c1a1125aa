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
on TPUs it is the **one-way** bandwidth ``W`` of one ICI link (each link carries ``W`` in each
direction at once).

Rings and lines (TPU axes)
--------------------------
An axis of ``N`` chips is one of three things, chosen by ``wraparound=`` and ``direction=``:

- **bidirectional ring** (``wraparound=True``, ``direction="bidirectional"``, the default): data
  flows both ways round, so each chip takes in data on two links. AllGather
  ``T_bw = V·(N−1)/N / (2·W)``, ``N//2`` hops of latency.
- **unidirectional ring** (``wraparound=True``, ``direction="unidirectional"``): data flows one
  way only, over one link per chip. AllGather ``T_bw = V·(N−1)/N / W``, ``N − 1`` hops.
- **line** (``wraparound=False``; ``direction`` is then ignored, since the end chips can only be
  reached one way each and a line must use both directions of its links): AllGather
  ``T_bw = V·(N−1)/N / W`` (an end chip receives everything through its one link), ``N − 1``
  hops. So for AllGather, ReduceScatter and AllReduce a line costs the same as a
  unidirectional ring; the AllToAll tells them apart (a line V/(4W), a unidirectional ring
  about V/(2W), a bidirectional ring V/(8W) for even N).

Other models
------------
- :func:`point_to_point`: one chip sends to another over several hops of a torus.
- ``*_first_cut``: the back-of-envelope forms (no ``(N−1)/N``, time = max of the two terms).
- :func:`ragged_all_to_all`: the mixture-of-experts token dispatch against a dense AllToAll.
- :func:`gpu_collective`: GPU AllReduce, AllGather and ReduceScatter by the algorithm NCCL (or a
  serving kernel) would run: ring, tree, NVLS in-switch reduction, one-shot, two-shot, SHARP
  (:data:`GPU_ALGORITHMS`); :func:`collective_cost` keeps the fastest by default.
- TPU slices: which axes wrap and where mesh axes land are :mod:`scalebook.torus`'s rules.

``regime`` names the larger term: "bandwidth-bound" or "latency-bound" (ties, i.e. a zero-cost
collective on one device, are "no communication").
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Sequence, TypedDict, Union

from scalebook._np import np

from scalebook.hardware import FULL_MESH, Chip, get_chip
from scalebook.torus import AxisPlacement, axis_wraps, has_wraparound

BANDWIDTH_BOUND = "bandwidth-bound"
LATENCY_BOUND = "latency-bound"
NO_COMMUNICATION = "no communication"

BIDIRECTIONAL = "bidirectional"
UNIDIRECTIONAL = "unidirectional"
DIRECTIONS = (BIDIRECTIONAL, UNIDIRECTIONAL)
"""The values ``direction=`` accepts: how data may flow round a ring (see the module docstring)."""

SUM = "sum"
MAX = "max"

DEFAULT_HOP_LATENCY = 1e-6
"""Seconds per ICI hop; HSYM part 3 uses about 1 µs. Also used per step of a GPU ring (an
order-of-magnitude assumption, not a vetted figure: pass ``hop_latency=`` to change it)."""

Bytes = Union[float, np.ndarray]

__all__ = [
    "BANDWIDTH_BOUND", "LATENCY_BOUND", "NO_COMMUNICATION", "DEFAULT_HOP_LATENCY",
    "BIDIRECTIONAL", "UNIDIRECTIONAL", "DIRECTIONS",
    "CollectiveCost", "Transfer", "RaggedAllToAllCost",
    "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "ppermute",
    "point_to_point", "torus_hops",
    "all_gather_first_cut", "reduce_scatter_first_cut", "all_reduce_first_cut",
    "all_to_all_first_cut",
    "ragged_all_to_all",
    "all_gather_multi_axis", "reduce_scatter_multi_axis", "all_reduce_multi_axis",
    "has_wraparound",
    "gpu_all_gather", "gpu_reduce_scatter", "gpu_all_reduce", "gpu_all_to_all",
    "gpu_hierarchical_all_reduce", "GPU_SCHEMES", "GPU_ALGORITHMS", "ALGORITHMS",
    "gpu_algorithms", "gpu_collective",
    "collective_cost", "collective_time", "KINDS", "NETWORKS",
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
        combine: how the two terms make the time: "sum" (the alpha-beta model, every function
            but the first-cut ones) or "max" (the first-cut rule that latency and bandwidth
            overlap completely).
        algorithm: on GPUs, which algorithm the cost is for (:data:`GPU_ALGORITHMS`: "ring",
            "tree", "nvls", "one-shot", "two-shot", "sharp"), the one ``algorithm="auto"``
            chose; "" on TPU axes, where the ring (or line) is the one algorithm modelled.
        time: bandwidth_time + latency_time (s), or their maximum when ``combine="max"``.
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
    combine: str = SUM
    algorithm: str = ""
    time: Bytes = field(init=False)
    regime: Union[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        if self.combine == SUM:
            time = self.bandwidth_time + self.latency_time
        elif self.combine == MAX:
            time = np.maximum(self.bandwidth_time, self.latency_time)
            time = time if isinstance(time, np.ndarray) else float(time)
        else:
            raise ValueError(f"combine must be {SUM!r} or {MAX!r}, got {self.combine!r}")
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
    if type(nbytes) is float or type(nbytes) is int:    # the common case, without numpy
        if not 0 <= nbytes < math.inf:                     # NaN fails both comparisons
            raise ValueError(f"nbytes must be finite and >= 0, got {nbytes!r}")
        return float(nbytes)
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
    if type(value) is int and value >= 1:                # the common case, without the ABCs
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return int(value)


def _check_latency(hop_latency: float) -> float:
    if (type(hop_latency) is float or type(hop_latency) is int) and 0 <= hop_latency < math.inf:
        return float(hop_latency)
    if not isinstance(hop_latency, numbers.Real) or not hop_latency >= 0 or math.isinf(hop_latency):
        raise ValueError(
            f"hop_latency must be a finite number of seconds >= 0, got {hop_latency!r}"
        )
    return float(hop_latency)


def _check_bandwidth(bandwidth: float, what: str = "bandwidth") -> float:
    if (type(bandwidth) is float or type(bandwidth) is int) and 0 < bandwidth < math.inf:
        return float(bandwidth)
    if (isinstance(bandwidth, bool) or not isinstance(bandwidth, numbers.Real)
            or not bandwidth > 0 or math.isinf(bandwidth)):
        raise ValueError(f"{what} must be a positive number of bytes/s, got {bandwidth!r}")
    return float(bandwidth)


def _check_positive(value: float, what: str) -> float:
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not value > 0 or math.isinf(value)):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return float(value)


def _tpu_link_bandwidth(chip: Chip | str | None, bandwidth: float | None) -> float:
    """One-way bytes/s of one ICI link: the override if given, else the chip's figure."""
    if chip is not None:
        chip = get_chip(chip)
        if chip.has_nvlink_domain:
            raise ValueError(
                f"{chip.name} is an NVLink GPU; the ring functions model TPU ICI axes. "
                "Use collective_cost (or gpu_all_gather / gpu_all_reduce / ...) for GPUs"
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


def _check_direction(direction: str) -> str:
    if not isinstance(direction, str) or direction.strip().lower() not in DIRECTIONS:
        raise ValueError(
            f"direction must be one of {', '.join(map(repr, DIRECTIONS))}, got {direction!r}"
        )
    return direction.strip().lower()


def _direction_list(direction: str | Sequence[str], n_axes: int) -> list[str]:
    if isinstance(direction, str):
        return [_check_direction(direction)] * n_axes
    values = list(direction)
    if len(values) != n_axes:
        raise ValueError(
            f"direction lists {len(values)} values but there are {n_axes} axes; give one per axis"
        )
    return [_check_direction(value) for value in values]


def _bidirectional_ring(wraparound: bool, direction: str) -> bool:
    """Whether an axis moves data both ways round a ring (the only case with 2·W per chip)."""
    return bool(wraparound) and direction == BIDIRECTIONAL


def _hops(n: int, wraparound: bool, direction: str = BIDIRECTIONAL) -> int:
    """Sequential hops a ring collective needs: N//2 both ways round a ring, N-1 one way round
    a ring or along a line."""
    return n // 2 if _bidirectional_ring(wraparound, direction) else n - 1


def _zero(name: str, n: int, nbytes: Bytes, link_bandwidth: float) -> CollectiveCost:
    return CollectiveCost(name, n, nbytes, nbytes * 0.0, 0.0, link_bandwidth, "0 (one device)")


# --------------------------------------------------------------------------- TPU: one axis

def all_gather(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
               wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
               bandwidth: float | None = None,
               direction: str = BIDIRECTIONAL) -> CollectiveCost:
    """AllGather over one TPU mesh axis of ``N = n_devices`` chips (HSYM part 3).

    Each chip must receive the ``N − 1`` shards it lacks, ``V·(N−1)/N`` bytes, ``V = nbytes``.

    - Bidirectional ring (wraparound, the default ``direction``): shards travel both ways, so
      each chip takes in data on two links: ``T_bw = V·(N−1)/N / (2·W)`` ≈
      ``V / W_bidirectional``; latency ``N//2`` hops.
    - Unidirectional ring (wraparound, ``direction="unidirectional"``): one incoming link per
      chip, ``T_bw = V·(N−1)/N / W``, twice as long; latency ``N − 1`` hops.
    - Line (no wraparound): the end chips have one neighbour, so again
      ``T_bw = V·(N−1)/N / W``; latency ``N − 1`` hops.

    ``W`` is one link's one-way bandwidth (bytes/s), ``bandwidth=`` overrides the chip's.
    ``T = T_bw + hops × hop_latency`` (s).
    """
    nbytes, n = _check_nbytes(nbytes), _check_count(n_devices, "n_devices")
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    direction = _check_direction(direction)
    if n == 1:
        return _zero("AllGather", n, nbytes, link)
    both_ways = _bidirectional_ring(wraparound, direction)
    bw_time = nbytes * (n - 1) / n / ((2 if both_ways else 1) * link)
    formula = "V·(N−1)/N / (2·W)" if both_ways else "V·(N−1)/N / W"
    return CollectiveCost("AllGather", n, nbytes, bw_time,
                          _hops(n, wraparound, direction) * latency, link, formula)


def reduce_scatter(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
                   wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
                   bandwidth: float | None = None,
                   direction: str = BIDIRECTIONAL) -> CollectiveCost:
    """ReduceScatter over one TPU axis: the AllGather run backwards, so the same cost.

    ``V = nbytes`` is the unreduced input every chip holds; each chip ends with ``V/N``, reduced.
    ``T_bw = V·(N−1)/N / (2·W)`` on a bidirectional ring, ``V·(N−1)/N / W`` on a
    unidirectional ring or a line (s).
    """
    cost = all_gather(nbytes, n_devices, chip, wraparound=wraparound, hop_latency=hop_latency,
                      bandwidth=bandwidth, direction=direction)
    return _renamed(cost, "ReduceScatter")


def all_reduce(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
               wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
               bandwidth: float | None = None,
               direction: str = BIDIRECTIONAL) -> CollectiveCost:
    """AllReduce over one TPU axis = ReduceScatter then AllGather: **twice** an AllGather.

    ``T_bw = 2·V·(N−1)/N / (2·W)`` on a bidirectional ring (≈ ``2V / W_bidirectional``),
    ``2·V·(N−1)/N / W`` on a unidirectional ring or a line, and twice the latency. Forgetting the
    factor 2 is the classic mistake.
    """
    rs = reduce_scatter(nbytes, n_devices, chip, wraparound=wraparound, hop_latency=hop_latency,
                        bandwidth=bandwidth, direction=direction)
    return _doubled(rs, "AllReduce")


def all_to_all(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
               wraparound: bool = True, hop_latency: float = DEFAULT_HOP_LATENCY,
               bandwidth: float | None = None,
               direction: str = BIDIRECTIONAL) -> CollectiveCost:
    """AllToAll over one TPU axis: each chip sends a different ``V/N²`` block to every other chip.

    Derivation (byte-hops over link capacity). Chip ``i`` sends ``V/N²`` to each chip ``j ≠ i``,
    along the shorter way round. On a bidirectional ring the distances sum to
    ``S = ⌊N/2⌋·⌈N/2⌉`` (``N²/4`` for even N), so all chips together put
    ``N · S · V/N² = S·V/N`` byte-hops on the network, and the ring has ``N`` links ×
    2 directions × ``W``:

        T_bw = S·V / (2·N²·W)  =  V / (8·W) = V / (4·W_bidirectional)   (even N)

    which is about 1/4 of an AllGather of the same array (exactly
    ``AllGather/4 × N/(N−1)``: the AllGather keeps its ``(N−1)/N`` factor, the AllToAll's is
    inside S). Without wraparound, the bottleneck is the middle link: the ``⌊N/2⌋`` chips on
    one side send ``⌊N/2⌋·⌈N/2⌉`` blocks of ``V/N²`` across it, one way, so
    ``T_bw = S·V / (N²·W)`` (= ``V/(4W)``, again 2x the ring). On a unidirectional ring chip
    ``i`` reaches ``j`` only forwards, ``(j − i) mod N`` hops: the distances sum to
    ``N·(N−1)/2``, the byte-hops to ``V·(N−1)/2``, over ``N`` links one way:
    ``T_bw = V·(N−1)/(2·N·W)`` ≈ ``V/(2W)``, 4x the bidirectional ring and 2x the line.
    Latency: ``N//2`` hops (bidirectional ring) or ``N − 1`` (unidirectional ring, line).
    """
    nbytes, n = _check_nbytes(nbytes), _check_count(n_devices, "n_devices")
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    direction = _check_direction(direction)
    if n == 1:
        return _zero("AllToAll", n, nbytes, link)
    hops = _hops(n, wraparound, direction) * latency
    if wraparound and direction == UNIDIRECTIONAL:
        bw_time = nbytes * (n - 1) / (2 * n * link)
        return CollectiveCost("AllToAll", n, nbytes, bw_time, hops, link, "V·(N−1)/(2N) / W")
    pair_distance_sum = (n // 2) * ((n + 1) // 2)
    ways = 2 if wraparound else 1
    bw_time = pair_distance_sum * nbytes / (ways * n * n * link)
    formula = ("V·⌊N/2⌋⌈N/2⌉/N² / (2·W)" if wraparound else "V·⌊N/2⌋⌈N/2⌉/N² / W")
    return CollectiveCost("AllToAll", n, nbytes, bw_time, hops, link, formula)


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
    return dataclasses.replace(cost, name=name)


def _doubled(cost: CollectiveCost, name: str) -> CollectiveCost:
    formula = f"2 × {cost.formula}" if cost.n_devices > 1 else cost.formula
    return CollectiveCost(name, cost.n_devices, cost.nbytes, 2 * cost.bandwidth_time,
                          2 * cost.latency_time, cost.link_bandwidth, formula,
                          combine=cost.combine, algorithm=cost.algorithm)


# --------------------------------------------------------------------------- TPU: point to point

@dataclass(frozen=True)
class Transfer:
    """One chip sending ``nbytes`` to another over the links of a torus (see
    :func:`point_to_point`).

    Attributes:
        src, dst: the two chips' coordinates, one integer per axis.
        axis_sizes: the torus shape.
        nbytes: bytes sent.
        hops_per_axis: hops the route takes along each axis.
        hops: route length, the sum of ``hops_per_axis``.
        paths: link-disjoint shortest routes the bytes are split over (1 unless ``multipath``).
        bandwidth_time: ``nbytes / (paths · W)`` (s).
        latency_time: ``hops × hop_latency``, the time for the first byte to arrive (s).
        link_bandwidth: one-way bytes/s of one link (``W``).
        formula: the bandwidth term in symbols.
        time: bandwidth_time + latency_time (s).
        regime: "bandwidth-bound", "latency-bound" or "no communication" (src == dst).
    """

    src: tuple[int, ...]
    dst: tuple[int, ...]
    axis_sizes: tuple[int, ...]
    nbytes: Bytes
    hops_per_axis: tuple[int, ...]
    hops: int
    paths: int
    bandwidth_time: Bytes
    latency_time: float
    link_bandwidth: float
    formula: str = ""
    time: Bytes = field(init=False)
    regime: Union[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "time", self.bandwidth_time + self.latency_time)
        object.__setattr__(self, "regime", _regime(self.bandwidth_time, self.latency_time))

    @property
    def first_byte_time(self) -> float:
        """Seconds until the first byte arrives: ``hops × hop_latency`` (= ``latency_time``)."""
        return self.latency_time


def _check_coordinate(coordinate: int | Sequence[int], sizes: Sequence[int],
                      what: str) -> tuple[int, ...]:
    if isinstance(coordinate, numbers.Integral) and not isinstance(coordinate, (bool, np.bool_)):
        coordinate = (int(coordinate),)
    if isinstance(coordinate, (str, bytes)) or not isinstance(coordinate, Sequence):
        raise ValueError(f"{what} must be a sequence of integers (one per axis), got "
                         f"{coordinate!r}")
    if len(coordinate) != len(sizes):
        raise ValueError(f"{what}={tuple(coordinate)!r} has {len(coordinate)} coordinates but "
                         f"the torus has {len(sizes)} axes {tuple(sizes)!r}; give one per axis")
    for value, size in zip(coordinate, sizes):
        if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral)
                or not 0 <= value < size):
            raise ValueError(f"{what}={tuple(coordinate)!r}: each coordinate must be an integer "
                             f"from 0 to axis size − 1 on axes {tuple(sizes)!r}")
    return tuple(int(value) for value in coordinate)


def _sizes(axis_sizes: int | Sequence[int]) -> list[int]:
    if isinstance(axis_sizes, numbers.Integral) and not isinstance(axis_sizes, (bool, np.bool_)):
        return _check_axis_sizes([int(axis_sizes)])
    return _check_axis_sizes(axis_sizes)


def _axis_route(src: int, dst: int, size: int, wraparound: bool,
                direction: str) -> tuple[int, int]:
    """(hops, link-disjoint shortest routes) from ``src`` to ``dst`` along one axis."""
    forward = (dst - src) % size
    if not wraparound:
        hops = abs(dst - src)
    elif direction == UNIDIRECTIONAL:
        hops = forward
    else:
        hops = min(forward, size - forward)
    if hops == 0:
        return 0, 0
    # Exactly halfway round a bidirectional ring both ways are shortest. An axis of 2 chips has
    # a single pair of links (its wraparound would join the same two chips), so one route.
    tie = wraparound and direction == BIDIRECTIONAL and size > 2 and 2 * forward == size
    return hops, 2 if tie else 1


def torus_hops(src: int | Sequence[int], dst: int | Sequence[int],
               axis_sizes: int | Sequence[int], *,
               wraparound: bool | Sequence[bool] = True,
               direction: str | Sequence[str] = BIDIRECTIONAL) -> tuple[int, ...]:
    """Hops along each axis of the shortest route from ``src`` to ``dst`` on a torus.

    Along an axis of ``n`` chips with offset ``d = dst − src``: ``min(d mod n, −d mod n)`` on a
    bidirectional ring (wraparound), ``d mod n`` on a unidirectional ring (only forwards), ``|d|``
    on a line (no wraparound). The route length is the sum over axes (a torus route moves along
    each axis independently). ``wraparound`` and ``direction`` are one value or one per axis.
    """
    sizes = _sizes(axis_sizes)
    flags = _wraparound_list(wraparound, len(sizes))
    directions = _direction_list(direction, len(sizes))
    src = _check_coordinate(src, sizes, "src")
    dst = _check_coordinate(dst, sizes, "dst")
    return tuple(_axis_route(a, b, n, w, d)[0]
                 for a, b, n, w, d in zip(src, dst, sizes, flags, directions))


def point_to_point(nbytes: Bytes, src: int | Sequence[int], dst: int | Sequence[int],
                   axis_sizes: int | Sequence[int], chip: Chip | str | None = None, *,
                   wraparound: bool | Sequence[bool] = True,
                   direction: str | Sequence[str] = BIDIRECTIONAL,
                   hop_latency: float = DEFAULT_HOP_LATENCY, bandwidth: float | None = None,
                   multipath: bool = False) -> Transfer:
    """One chip at ``src`` sends ``nbytes`` to the chip at ``dst`` over a TPU torus.

    The route is a shortest one (:func:`torus_hops`): ``h`` hops in all. The transfer is
    pipelined (cut-through): bytes stream through the chips on the way, so the route length
    costs latency, not bandwidth:

        first byte:  T_first = h × hop_latency
        whole array: T = V / (p·W) + h × hop_latency        (s)

    with ``V = nbytes``, ``W`` one link's one-way bandwidth (bytes/s) and ``p`` the number of
    routes used. By default ``p = 1``, one route. With ``multipath=True`` the bytes are split
    evenly over every link-disjoint shortest route: ``p`` = the number of directions at ``src``
    that start a shortest route, one per axis the route moves along, two on an axis where
    ``dst`` is exactly halfway round a bidirectional ring (for example chip 0 to chip 8 on a
    16-ring: 8 hops either way, so half of ``V`` goes each way). On a torus that many routes
    can share no link (dimension-ordered routes taking the axes in rotated order), and no more
    can leave ``src``; ``tests/test_collectives.py`` checks this against a max-flow count.
    Longer detours are not used.

    ``ppermute`` is the special case of every chip sending to a neighbour at once (1 hop).
    ``src`` and ``dst`` are coordinates (one integer per axis, or one integer for one axis);
    ``wraparound`` and ``direction`` are one value or one per axis. ``src == dst`` costs nothing.
    """
    nbytes = _check_nbytes(nbytes)
    sizes = _sizes(axis_sizes)
    flags = _wraparound_list(wraparound, len(sizes))
    directions = _direction_list(direction, len(sizes))
    src_t = _check_coordinate(src, sizes, "src")
    dst_t = _check_coordinate(dst, sizes, "dst")
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    if not isinstance(multipath, (bool, np.bool_)):
        raise ValueError(f"multipath must be True or False, got {multipath!r}")
    routes = [_axis_route(a, b, n, w, d)
              for a, b, n, w, d in zip(src_t, dst_t, sizes, flags, directions)]
    hops_per_axis = tuple(hops for hops, _ in routes)
    hops = sum(hops_per_axis)
    if hops == 0:
        return Transfer(src_t, dst_t, tuple(sizes), nbytes, hops_per_axis, 0, 0, nbytes * 0.0,
                        0.0, link, "0 (same chip)")
    paths = sum(count for _, count in routes) if multipath else 1
    formula = "V / W" if paths == 1 else f"V / ({paths}·W)"
    return Transfer(src_t, dst_t, tuple(sizes), nbytes, hops_per_axis, hops, paths,
                    nbytes / (paths * link), hops * latency, link, formula)


# --------------------------------------------------------------------------- TPU: first cut

def all_gather_first_cut(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
                         wraparound: bool = True, direction: str = BIDIRECTIONAL,
                         hop_latency: float = DEFAULT_HOP_LATENCY,
                         bandwidth: float | None = None) -> CollectiveCost:
    """The back-of-envelope AllGather over one TPU axis (HSYM part 3's first estimate).

    Two simplifications of :func:`all_gather`:

    - no ``(N−1)/N`` factor: ``T_bw = V / (2·W)`` on a bidirectional ring, ``V / W`` on a
      unidirectional ring or a line. That is ``N/(N−1)`` times the exact term (2x at N = 2,
      1.07x at N = 16, → 1 for large N).
    - latency and bandwidth overlap: ``T = max(T_bw, hops × hop_latency)`` rather than their
      sum (``combine="max"``). The sum is at most 2x the max (when the terms are equal).

    Together: ``N/(2N−1) ≤ first_cut.time / all_gather(...).time ≤ N/(N−1)``, never below 1/2
    (the low end where the two first-cut terms are equal, the high end for large arrays). Same
    hops as the exact form (``N//2`` on a bidirectional ring, ``N − 1`` otherwise); ``N = 1``
    costs nothing.
    """
    exact = all_gather(nbytes, n_devices, chip, wraparound=wraparound, hop_latency=hop_latency,
                       bandwidth=bandwidth, direction=direction)
    return _first_cut(exact, "AllGather (first cut)", _bidirectional_ring(wraparound, direction),
                      ring_share=1.0)


def reduce_scatter_first_cut(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
                             wraparound: bool = True, direction: str = BIDIRECTIONAL,
                             hop_latency: float = DEFAULT_HOP_LATENCY,
                             bandwidth: float | None = None) -> CollectiveCost:
    """The back-of-envelope ReduceScatter: the same cost as :func:`all_gather_first_cut`
    (``V / (2·W)`` on a bidirectional ring, time = max of the terms; ``N/(N−1)`` times the exact
    bandwidth term, and between ``N/(2N−1)`` and ``N/(N−1)`` times the exact time)."""
    cost = all_gather_first_cut(nbytes, n_devices, chip, wraparound=wraparound,
                                direction=direction, hop_latency=hop_latency, bandwidth=bandwidth)
    return _renamed(cost, "ReduceScatter (first cut)")


def all_reduce_first_cut(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
                         wraparound: bool = True, direction: str = BIDIRECTIONAL,
                         hop_latency: float = DEFAULT_HOP_LATENCY,
                         bandwidth: float | None = None) -> CollectiveCost:
    """The back-of-envelope AllReduce: twice :func:`all_gather_first_cut`.

    ``T_bw = 2·V / (2·W) = V / W`` on a bidirectional ring (``2V / W`` on a unidirectional ring
    or a line), ``2 × hops`` of latency, ``T = max`` of the two. ``N/(N−1)`` times the exact
    bandwidth term; between ``N/(2N−1)`` and ``N/(N−1)`` times the exact :func:`all_reduce` time.
    """
    cost = reduce_scatter_first_cut(nbytes, n_devices, chip, wraparound=wraparound,
                                    direction=direction, hop_latency=hop_latency,
                                    bandwidth=bandwidth)
    return _doubled(cost, "AllReduce (first cut)")


def all_to_all_first_cut(nbytes: Bytes, n_devices: int, chip: Chip | str | None = None, *,
                         wraparound: bool = True, direction: str = BIDIRECTIONAL,
                         hop_latency: float = DEFAULT_HOP_LATENCY,
                         bandwidth: float | None = None) -> CollectiveCost:
    """The back-of-envelope AllToAll: a quarter of the first-cut AllGather on a ring.

    ``T_bw = V / (8·W)`` (= ``V / (4·W_bidirectional)``) on a bidirectional ring, ``V / (4·W)``
    on a line, ``V / (2·W)`` on a unidirectional ring; ``T = max(T_bw, hops × hop_latency)``.
    Against :func:`all_to_all` the bandwidth term is exact for even N on a bidirectional ring or
    a line, ``N²/(N²−1)`` times it for odd N, and ``N/(N−1)`` times it on a unidirectional ring;
    the max instead of the sum makes the time up to 2x smaller.
    """
    exact = all_to_all(nbytes, n_devices, chip, wraparound=wraparound, hop_latency=hop_latency,
                       bandwidth=bandwidth, direction=direction)
    if wraparound and direction == UNIDIRECTIONAL:
        share = 1 / 2
    else:
        share = 1 / 8 if wraparound else 1 / 4
    return _first_cut(exact, "AllToAll (first cut)", False, ring_share=share)


def _first_cut(exact: CollectiveCost, name: str, both_ways: bool,
               ring_share: float) -> CollectiveCost:
    """``exact``'s latency and the bandwidth term ``ring_share · V / (ways·W)``, combined by
    max."""
    if exact.n_devices == 1:
        return _renamed(exact, name)
    ways = 2 if both_ways else 1
    link = exact.link_bandwidth
    bw_time = ring_share * exact.nbytes / (ways * link)
    if ring_share == 1.0:
        formula = "V / (2·W)" if both_ways else "V / W"
    else:
        formula = f"V / ({round(1 / ring_share)}·W)"
    return CollectiveCost(name, exact.n_devices, exact.nbytes, bw_time, exact.latency_time, link,
                          formula, combine=MAX)


# --------------------------------------------------------------------------- TPU: several axes

def all_gather_multi_axis(nbytes: Bytes, axis_sizes: Sequence[int],
                          chip: Chip | str | None = None, *,
                          wraparound: bool | Sequence[bool] = True,
                          hop_latency: float = DEFAULT_HOP_LATENCY,
                          bandwidth: float | None = None,
                          direction: str | Sequence[str] = BIDIRECTIONAL) -> CollectiveCost:
    """AllGather over several torus axes at once (``N`` = product of ``axis_sizes``).

    Each axis used (size > 1) adds its own links, so bandwidths add (HSYM part 3):

        T_bw = V·(N−1)/N / Σ_axes W_axis,
        W_axis = 2·W on a bidirectional ring, W on a unidirectional ring or a line

    With ``k`` equal axes this is ``k`` times faster than one axis of the same ``N``. Latency is
    the sum of each axis's hops (``n//2`` or ``n − 1``). ``wraparound`` and ``direction`` are one
    value or one per axis.
    """
    nbytes = _check_nbytes(nbytes)
    sizes = _check_axis_sizes(axis_sizes)
    flags = _wraparound_list(wraparound, len(sizes))
    directions = _direction_list(direction, len(sizes))
    link = _tpu_link_bandwidth(chip, bandwidth)
    latency = _check_latency(hop_latency)
    n = math.prod(sizes)
    if n == 1:
        return _zero("AllGather", n, nbytes, link)
    used = [(size, wrap, way) for size, wrap, way in zip(sizes, flags, directions) if size > 1]
    both = [_bidirectional_ring(wrap, way) for _, wrap, way in used]
    total_bandwidth = sum((2 if two else 1) * link for two in both)
    hops = sum(_hops(size, wrap, way) for size, wrap, way in used)
    terms = " + ".join("2·W" if two else "W" for two in both)
    bw_time = nbytes * (n - 1) / n / total_bandwidth
    return CollectiveCost("AllGather", n, nbytes, bw_time, hops * latency, link,
                          f"V·(N−1)/N / ({terms})")


def reduce_scatter_multi_axis(nbytes: Bytes, axis_sizes: Sequence[int],
                              chip: Chip | str | None = None, *,
                              wraparound: bool | Sequence[bool] = True,
                              hop_latency: float = DEFAULT_HOP_LATENCY,
                              bandwidth: float | None = None,
                              direction: str | Sequence[str] = BIDIRECTIONAL) -> CollectiveCost:
    """ReduceScatter over several axes: same cost as :func:`all_gather_multi_axis`."""
    cost = all_gather_multi_axis(nbytes, axis_sizes, chip, wraparound=wraparound,
                                 hop_latency=hop_latency, bandwidth=bandwidth,
                                 direction=direction)
    return _renamed(cost, "ReduceScatter")


def all_reduce_multi_axis(nbytes: Bytes, axis_sizes: Sequence[int],
                          chip: Chip | str | None = None, *,
                          wraparound: bool | Sequence[bool] = True,
                          hop_latency: float = DEFAULT_HOP_LATENCY,
                          bandwidth: float | None = None,
                          direction: str | Sequence[str] = BIDIRECTIONAL) -> CollectiveCost:
    """AllReduce over several axes: 2 × :func:`all_gather_multi_axis` (bandwidth and latency)."""
    cost = reduce_scatter_multi_axis(nbytes, axis_sizes, chip, wraparound=wraparound,
                                     hop_latency=hop_latency, bandwidth=bandwidth,
                                     direction=direction)
    return _doubled(cost, "AllReduce")


def _check_axis_sizes(axis_sizes: object) -> list[int]:
    if isinstance(axis_sizes, (str, bytes)) or not isinstance(axis_sizes, Sequence):
        raise ValueError(f"axis_sizes must be a sequence of integers, got {axis_sizes!r}")
    if len(axis_sizes) == 0:
        raise ValueError("axis_sizes is empty; give at least one axis size")
    return [_check_count(size, "each axis size") for size in axis_sizes]


# --------------------------------------------------------------------------- GPUs

class _GpuOptions(TypedDict):
    """The keyword options every GPU collective takes, passed on together."""

    gpus_per_node: int | None
    nvlink_bandwidth: float | None
    nic_bandwidth: float | None
    hop_latency: float


class _TorusOptions(TypedDict):
    """The keyword options every TPU-axis collective takes, passed on together."""

    hop_latency: float
    bandwidth: float | None


def _gpu_setup(chip: Chip | str, n_gpus: int, gpus_per_node: int | None,
               nvlink_bandwidth: float | None, nic_bandwidth: float | None,
               hop_latency: float) -> tuple[int, int, float, float, float]:
    """``(N, g, W_nvlink, W_nic, alpha)`` for a group of GPUs, checked.

    ``W_nvlink`` is what one GPU can send into its node's fabric, one way: all its links on an
    NVSwitch or NVLink mesh node; on a full mesh (:data:`~scalebook.hardware.FULL_MESH`, AMD
    Infinity Fabric), only the links to the other GPUs *of the group* in its node,
    ``(min(N, g) − 1) × W_link`` (4 of 8 MI300X use 3 of their 7 links), since every pair has
    its own link and no switch lends the others.
    """
    chip = get_chip(chip)
    if not chip.has_nvlink_domain:
        raise ValueError(f"{chip.name} is not a GPU with an NVLink domain; use all_gather / "
                         "all_reduce / ... (or collective_cost) for TPU ICI axes")
    n = _check_count(n_gpus, "n_gpus")
    per_node = _check_count(gpus_per_node if gpus_per_node is not None else chip.chips_per_host,
                            "gpus_per_node")
    if nvlink_bandwidth is not None:
        nvlink = _check_bandwidth(nvlink_bandwidth, "nvlink_bandwidth")
    elif chip.interconnect == FULL_MESH:
        peers = min(max(min(n, per_node) - 1, 1), chip.links_per_chip)
        nvlink = peers * chip.link_bandwidth_one_way
    else:
        nvlink = chip.interconnect_bandwidth_one_way
    nic = (_check_bandwidth(nic_bandwidth, "nic_bandwidth") if nic_bandwidth is not None
           else chip.nic_bandwidth_per_chip)
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


GPU_SCHEMES = ("rail", "hierarchical", "flat")
"""How a collective crosses GPU nodes (``scheme=``): NCCL-style rings, one per NIC rail
(the default); the three-stage hierarchical model; one flat ring paced by one NIC."""


def _check_scheme(scheme: str) -> str:
    if not isinstance(scheme, str) or scheme.strip().lower() not in GPU_SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(map(repr, GPU_SCHEMES))}, "
                         f"got {scheme!r}")
    return scheme.strip().lower()


def _gpu_rail_pass(name: str, nbytes: Bytes, n: int, g: int, nvlink: float, nic: float,
                   latency: float) -> CollectiveCost:
    """One AllGather-like pass over ``n = M·g`` GPUs as ``g`` rail-aligned rings.

    NCCL cuts the array into ``g`` channels and runs one ring per channel through all ``n``
    GPUs; ring ``k`` leaves each node through GPU ``k``'s NIC (rail ``k``). Each GPU sends
    ``V·(n−1)/n`` in all, of which ``(g−1)/g`` goes over NVLink and ``1/g`` (one channel)
    through its own NIC, both at once:
    ``T_bw = V·(n−1)/n · max((g−1)/(g·W_nvlink), 1/(g·W_nic))``. ``n − 1`` steps.
    """
    label = f"{name} (rail-aligned rings, {n // g} nodes × {g})"
    per_byte = max((g - 1) / (g * nvlink), 1.0 / (g * nic))
    link = g * nic if 1.0 / (g * nic) >= (g - 1) / (g * nvlink) else nvlink
    return CollectiveCost(label, n, nbytes, nbytes * (n - 1) / n * per_byte,
                          (n - 1) * latency, link,
                          "V·(N−1)/N · max((g−1)/(g·W_nvlink), 1/(g·W_nic))")


def _gpu_pass(name: str, nbytes: Bytes, chip: Chip | str, n_gpus: int, *,
              gpus_per_node: int | None, nvlink_bandwidth: float | None,
              nic_bandwidth: float | None, hop_latency: float, scheme: str) -> CollectiveCost:
    """AllGather or ReduceScatter (``name``) over GPUs under ``scheme``."""
    nbytes = _check_nbytes(nbytes)
    scheme = _check_scheme(scheme)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    if n <= g:
        return _renamed(_gpu_ring(name, "NVLink", nbytes, n, nvlink, latency), name)
    m = _nodes(n, g)
    if scheme == "flat":
        return _renamed(_gpu_ring(name, "NIC", nbytes, n, nic, latency),
                        f"{name} (one flat ring, {n} GPUs)")
    if scheme == "rail":
        return _gpu_rail_pass(name, nbytes, n, g, nvlink, nic, latency)
    nic_stage = _gpu_ring(name, "NIC", nbytes / g, m, nic, latency)
    nvlink_stage = _gpu_ring(name, "NVLink", nbytes, g, nvlink, latency)
    stages = [nic_stage, nvlink_stage] if name == "AllGather" else [nvlink_stage, nic_stage]
    return _combined(f"{name} (hierarchical)", n, nbytes, stages)


def gpu_all_gather(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                   gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                   nic_bandwidth: float | None = None,
                   hop_latency: float = DEFAULT_HOP_LATENCY,
                   scheme: str = "rail") -> CollectiveCost:
    """AllGather over ``N = n_gpus`` NVIDIA GPUs (HSYM part 12; NCCL's ring algorithm).

    In one node (NVLink domain, every GPU reaches every other through NVSwitch), each GPU must
    take in ``V·(N−1)/N`` bytes through its NVLink ports:
    ``T_bw = V·(N−1)/N / W_nvlink`` with ``W_nvlink = links × per-link one-way`` (450 GB/s on an
    H100). Latency: ``N − 1`` ring steps.

    Across ``M`` nodes of ``g`` GPUs of the group (``N = M·g``; ``gpus_per_node``, default the
    chip's ``chips_per_host``), ``W_nic`` = one GPU's NIC (``chip.nic_bandwidth_per_chip``,
    50 GB/s), by ``scheme``:

    - ``"rail"`` (default; what NCCL does): ``g`` rings, one per NIC rail, each carrying
      ``V/g``; each GPU sends ``(g−1)/g`` of its bytes over NVLink and ``1/g`` through its own
      NIC at the same time: ``T_bw = V·(N−1)/N · max((g−1)/(g·W_nvlink), 1/(g·W_nic))``. On
      H100s the NIC term wins: the node's 8 NICs together, ``V·(N−1)/N / (8·W_nic)``.
    - ``"hierarchical"``: GPU ``k`` of every node gathers over the nodes through its NIC (a ring
      of M, ``V/g`` gathered), then each node gathers in NVLink, one stage after the other:
      ``T_bw = (V/g)·(M−1)/M / W_nic + V·(g−1)/g / W_nvlink``; ``stages`` lists both.
    - ``"flat"``: one ring through all N GPUs, so one NIC paces it:
      ``T_bw = V·(N−1)/N / W_nic``.
    """
    return _gpu_pass("AllGather", nbytes, chip, n_gpus, gpus_per_node=gpus_per_node,
                     nvlink_bandwidth=nvlink_bandwidth, nic_bandwidth=nic_bandwidth,
                     hop_latency=hop_latency, scheme=scheme)


def gpu_reduce_scatter(nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                       gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                       nic_bandwidth: float | None = None,
                       hop_latency: float = DEFAULT_HOP_LATENCY,
                       scheme: str = "rail") -> CollectiveCost:
    """ReduceScatter over GPUs: :func:`gpu_all_gather` run backwards, same cost under each
    ``scheme``. Hierarchically: ReduceScatter in the node over NVLink (``V`` in), then over
    the nodes through the NICs (``V/g`` in)."""
    return _gpu_pass("ReduceScatter", nbytes, chip, n_gpus, gpus_per_node=gpus_per_node,
                     nvlink_bandwidth=nvlink_bandwidth, nic_bandwidth=nic_bandwidth,
                     hop_latency=hop_latency, scheme=scheme)


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
                   hop_latency: float = DEFAULT_HOP_LATENCY,
                   scheme: str = "rail") -> CollectiveCost:
    """AllReduce over GPUs = ReduceScatter then AllGather: twice :func:`gpu_all_gather` under
    the same ``scheme``. In a node ``2·V·(N−1)/N / W_nvlink``; across nodes by default
    NCCL's rail-aligned rings, ``2·V·(N−1)/N · max((g−1)/(g·W_nvlink), 1/(g·W_nic))`` (1 GB
    over 32 H100s: 4.84 ms); ``scheme="hierarchical"`` is
    :func:`gpu_hierarchical_all_reduce` (7.66 ms), ``scheme="flat"`` one ring paced by one
    NIC, ``2·V·(N−1)/N / W_nic`` (38.8 ms).
    """
    kwargs = _GpuOptions(gpus_per_node=gpus_per_node, nvlink_bandwidth=nvlink_bandwidth,
                         nic_bandwidth=nic_bandwidth, hop_latency=hop_latency)
    n, g, *_ = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth, nic_bandwidth,
                          hop_latency)
    if n > g and _check_scheme(scheme) == "hierarchical":
        return gpu_hierarchical_all_reduce(nbytes, n, chip, **kwargs)
    half = gpu_reduce_scatter(nbytes, n, chip, scheme=scheme, **kwargs)
    return _doubled(half, half.name.replace("ReduceScatter", "AllReduce"))


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


# --------------------------------------------------------------------------- GPU algorithms

GPU_ALGORITHMS = ("ring", "tree", "nvls", "one-shot", "two-shot", "sharp")
"""The algorithms a GPU AllReduce, AllGather or ReduceScatter can run (``algorithm=``), each
priced by :func:`gpu_collective`:

- ``"ring"``: NCCL's ring (across nodes, one ring per NIC rail, or ``scheme=``'s variants).
- ``"tree"``: across nodes, NCCL's double binary tree (AllReduce only).
- ``"nvls"``: NVLink SHARP, the reduction done in the NVSwitch (AllReduce; chips with
  ``switch_reduction``: H100, H200, B200 and later nodes).
- ``"one-shot"``, ``"two-shot"``: inside a node, every GPU reads or writes its peers' buffers
  directly (the small-message AllReduce kernels of TensorRT-LLM, vLLM and PyTorch's symmetric
  memory; for AllGather and ReduceScatter, direct copies: ``"one-shot"``).
- ``"sharp"``: across nodes, in-network reduction in InfiniBand switches (SHARP, NCCL's CollNet),
  AllReduce only. Never chosen by ``"auto"``: it needs a fabric with SHARP switches enabled.
"""

ALGORITHMS = ("auto",) + GPU_ALGORITHMS
"""``algorithm=`` of :func:`collective_cost` and :func:`gpu_collective`: ``"auto"`` (the
default) prices every algorithm of :func:`gpu_algorithms` and keeps the fastest, a stand-in
for NCCL's tuner, which also picks by message size and topology."""

_NOT_AUTO = ("sharp",)


def _check_algorithm(algorithm: str) -> str:
    if not isinstance(algorithm, str) or algorithm.strip().lower() not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(map(repr, ALGORITHMS))}, "
                         f"got {algorithm!r}")
    return algorithm.strip().lower()


def gpu_algorithms(kind: str, n_gpus: int, chip: Chip | str, *,
                   gpus_per_node: int | None = None) -> tuple[str, ...]:
    """The algorithms that can run ``kind`` over ``n_gpus`` GPUs of ``chip`` (see
    :data:`GPU_ALGORITHMS`), in the order ``"auto"`` tries them (it keeps the first of equal
    times).

    Inside one node: AllReduce ``ring``, ``two-shot``, ``one-shot``, and ``nvls`` where the
    switch reduces; AllGather and ReduceScatter ``ring`` and ``one-shot``. Across nodes:
    AllReduce ``ring``, ``tree``, ``nvls`` where the switch reduces, and ``sharp``; AllGather
    and ReduceScatter ``ring``. AllToAll and ppermute have one algorithm (direct sends) and
    are not listed here.
    """
    kind = _check_kind(kind)
    chip = get_chip(chip)
    n, g, *_ = _gpu_setup(chip, n_gpus, gpus_per_node, None, None, DEFAULT_HOP_LATENCY)
    if kind not in ("AllGather", "ReduceScatter", "AllReduce"):
        raise ValueError(f"{kind} has one algorithm on GPUs (direct sends); algorithms are "
                         "listed for AllReduce, AllGather and ReduceScatter")
    nvls = ("nvls",) if chip.switch_reduction else ()
    if kind != "AllReduce":
        return ("ring", "one-shot") if n <= g else ("ring",)
    if n <= g:
        return ("ring", "two-shot", "one-shot") + nvls
    return ("ring", "tree") + nvls + ("sharp",)


def _in_node(kind: str, algorithm: str, nbytes: Bytes, n: int, nvlink: float,
             latency: float) -> CollectiveCost:
    """``kind`` by ``algorithm`` inside one node of ``n`` GPUs, ``W = nvlink`` one way each."""
    label = f"{kind} ({algorithm}, NVLink, {n} GPUs)"
    if algorithm == "ring":
        one = _gpu_ring(kind, "NVLink", nbytes, n, nvlink, latency)
        cost = _doubled(one, label) if kind == "AllReduce" else _renamed(one, label)
    elif algorithm == "one-shot" and kind == "AllReduce":
        # every GPU reads the whole buffer of each of its N − 1 peers and sums locally
        cost = CollectiveCost(label, n, nbytes, nbytes * (n - 1) / nvlink, latency, nvlink,
                              "V·(N−1) / W_nvlink")
    elif algorithm == "one-shot":
        # direct copies: the ring's bytes, in one step
        cost = CollectiveCost(label, n, nbytes, nbytes * (n - 1) / n / nvlink, latency, nvlink,
                              "V·(N−1)/N / W_nvlink")
    elif algorithm == "two-shot":
        # a direct ReduceScatter, then a direct AllGather: the ring's bytes in two steps
        cost = CollectiveCost(label, n, nbytes, 2 * nbytes * (n - 1) / n / nvlink, 2 * latency,
                              nvlink, "2·V·(N−1)/N / W_nvlink")
    else:  # nvls: the switch sums (multimem load-reduce) and multicasts (multimem store)
        cost = CollectiveCost(label, n, nbytes, nbytes / nvlink, 2 * latency, nvlink,
                              "V / W_nvlink")
    return dataclasses.replace(cost, algorithm=algorithm)


def _across_nodes_all_reduce(algorithm: str, nbytes: Bytes, n: int, g: int, nvlink: float,
                             nic: float, latency: float, switch_reduction: bool
                             ) -> CollectiveCost:
    """AllReduce over ``M = n/g`` nodes by ``tree``, ``nvls`` or ``sharp`` (rings: elsewhere).

    Each GPU owns ``1/g`` of the buffer across the nodes and sends it through its own NIC
    (rail); the stages inside and across nodes are pipelined, so the slower one paces it.
    """
    m = n // g
    rail = nbytes / g
    if algorithm == "tree":
        # a double binary tree: each node sends and receives its share twice (up, then down)
        bw = nbytes * max(2 * (g - 1) / (g * nvlink), 2.0 / (g * nic))
        steps = 2 * math.ceil(math.log2(m)) + 2 * (g - 1)
        formula = "2·V · max((g−1)/(g·W_nvlink), 1/(g·W_nic))"
    elif algorithm == "nvls":
        bw = np.maximum(nbytes / nvlink, 2 * rail * (m - 1) / m / nic)
        steps = 2 + 2 * (m - 1)
        formula = "max(V / W_nvlink, 2·(V/g)·(M−1)/M / W_nic)"
    else:  # sharp: the IB switches sum each rail's share; inside the node the switch or a ring
        inside = nbytes / nvlink if switch_reduction else 2 * nbytes * (g - 1) / g / nvlink
        bw = np.maximum(inside, rail / nic)
        steps = (2 if switch_reduction else 2 * (g - 1)) + 2
        formula = (f"max({'V / W_nvlink' if switch_reduction else '2·V·(g−1)/g / W_nvlink'}, "
                   "(V/g) / W_nic)")
    bw = bw if isinstance(bw, np.ndarray) else float(bw)
    return CollectiveCost(f"AllReduce ({algorithm}, {m} nodes × {g})", n, nbytes, bw,
                          steps * latency, nic, formula, algorithm=algorithm)


def gpu_collective(kind: str, nbytes: Bytes, n_gpus: int, chip: Chip | str, *,
                   algorithm: str = "auto", scheme: str = "rail",
                   gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                   nic_bandwidth: float | None = None,
                   hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """AllReduce, AllGather or ReduceScatter over ``N = n_gpus`` GPUs by ``algorithm``.

    Symbols: ``V = nbytes``, ``W = W_nvlink`` (one GPU's one-way bandwidth into its node's
    fabric), ``W_nic`` (one GPU's NIC), ``g`` GPUs per node, ``M = N/g`` nodes, ``α`` =
    ``hop_latency`` per step.

    Inside a node (N ≤ g):

    ======== ============================== =========== ===========================================
    AllReduce bandwidth term                 steps       why
    ======== ============================== =========== ===========================================
    ring     2·V·(N−1)/N / W                2(N−1)      ReduceScatter then AllGather round a ring
    two-shot 2·V·(N−1)/N / W                2           the same bytes, sent straight to each peer
    one-shot V·(N−1) / W                    1           each GPU reads every peer's whole buffer
    nvls     V / W                          2           the switch sums and multicasts: each GPU
                                                        sends V and receives V, once
    ======== ============================== =========== ===========================================

    So NVLS halves the ring's bandwidth term (the true lower bound without in-network
    reduction is the ring's ``2·V·(N−1)/N`` sent per GPU), one-shot wins for messages of a
    few tens of kB where only steps count, and two-shot between them on GPUs without NVLS.
    AllGather and ReduceScatter: ``ring`` ``V·(N−1)/N / W`` in N − 1 steps, ``one-shot``
    (direct copies) the same bytes in one step.

    Across nodes (AllReduce): ``ring`` is NCCL's rail-aligned rings (:func:`gpu_all_reduce`,
    ``scheme=`` picks its variants); ``tree`` a double binary tree over the nodes,
    ``2·V·max((g−1)/(g·W), 1/(g·W_nic))`` in ``2⌈log2 M⌉ + 2(g−1)`` steps (about the ring's
    bandwidth, far fewer steps); ``nvls`` the switch inside each node and rings across,
    ``max(V/W, 2·(V/g)·(M−1)/M / W_nic)``; ``sharp`` the InfiniBand switches reduce, so each
    NIC carries its ``V/g`` once each way: ``max(V/W or 2·V·(g−1)/g / W, (V/g)/W_nic)``.
    AllGather and ReduceScatter across nodes: rings.

    ``algorithm="auto"`` prices each of :func:`gpu_algorithms` but ``sharp`` and keeps the
    fastest (elementwise when ``nbytes`` is an array); the result's ``algorithm`` says which.
    8 H100s, AllReduce of 1 MB: ring 17.9 µs (14 steps of 1 µs), two-shot 5.9 µs, nvls
    4.2 µs, one-shot 16.6 µs: auto picks nvls. ``scheme`` other than "rail" implies the ring.
    Raises ``ValueError`` for an algorithm that cannot run this kind on these GPUs.
    """
    kind = _check_kind(kind)
    algorithm = _check_algorithm(algorithm)
    scheme = _check_scheme(scheme)
    nbytes = _check_nbytes(nbytes)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n_gpus, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    chip = get_chip(chip)
    options = _GpuOptions(gpus_per_node=g, nvlink_bandwidth=nvlink_bandwidth,
                          nic_bandwidth=nic_bandwidth, hop_latency=latency)
    if scheme != "rail":
        if algorithm not in ("auto", "ring"):
            raise ValueError(f"scheme={scheme!r} is a way to run the ring across nodes; it does "
                             f"not go with algorithm={algorithm!r}")
        algorithm = "ring"
    possible = gpu_algorithms(kind, n, chip, gpus_per_node=g)
    if algorithm != "auto" and algorithm not in possible:
        raise ValueError(f"{kind} over {n} {chip.name} GPUs ({g} per node) cannot run "
                         f"algorithm={algorithm!r}; it can run {', '.join(possible)}")
    if n == 1:
        return dataclasses.replace(_zero(kind, n, nbytes, nvlink), algorithm="ring")
    if algorithm == "auto":
        return _fastest([gpu_collective(kind, nbytes, n, chip, algorithm=a, **options)
                         for a in possible if a not in _NOT_AUTO])
    if algorithm == "ring":
        ring = {"AllGather": gpu_all_gather, "ReduceScatter": gpu_reduce_scatter,
                "AllReduce": gpu_all_reduce}[kind]
        return dataclasses.replace(ring(nbytes, n, chip, scheme=scheme, **options),
                                   algorithm="ring")
    if n <= g:
        return _in_node(kind, algorithm, nbytes, n, nvlink, latency)
    _nodes(n, g)
    return _across_nodes_all_reduce(algorithm, nbytes, n, g, nvlink, nic, latency,
                                    chip.switch_reduction)


def _fastest(costs: Sequence[CollectiveCost]) -> CollectiveCost:
    """The cheapest of ``costs`` (the first of equals); for array sizes, element by element,
    named "auto" (the choice differs along the array)."""
    times = [cost.time for cost in costs]
    if not isinstance(times[0], np.ndarray):
        return costs[min(range(len(costs)), key=lambda i: times[i])]
    best = np.argmin(np.stack(times), axis=0)
    bw = np.choose(best, [np.broadcast_to(c.bandwidth_time, best.shape) for c in costs])
    lat = np.choose(best, [np.broadcast_to(np.asarray(c.latency_time, dtype=float), best.shape)
                           for c in costs])
    first = costs[0]
    # the latency term differs along the array too: carried in bandwidth_time's place would
    # blur the regime, so both terms are kept element by element
    return CollectiveCost(first.name.split(" (")[0] + " (auto)", first.n_devices, first.nbytes,
                          bw, lat, first.link_bandwidth,
                          " | ".join(f"{c.algorithm}: {c.formula}" for c in costs),
                          algorithm="auto")


# --------------------------------------------------------------------------- mixture of experts

@dataclass(frozen=True)
class RaggedAllToAllCost:
    """The token dispatch of a mixture-of-experts layer: ragged against dense (see
    :func:`ragged_all_to_all`).

    Attributes:
        n_tokens: ``T``, tokens held by the whole group (``T/N`` per device).
        token_bytes: ``d``, bytes of one token's activation row.
        top_k: ``k``, experts each token is routed to.
        n_experts: ``E``, experts, ``E/N`` on each device.
        n_devices: ``N``.
        copies_per_token: expected copies of one token that leave its device.
        sent_per_device: expected bytes each device sends to the others, ragged.
        dense_sent_per_device: bytes each device sends to the others, dense.
        ragged: the ragged AllToAll, costed as an AllToAll of ``ragged.nbytes`` bytes.
        dense: the dense (fixed-shape) AllToAll.
        ratio: ``dense.nbytes / ragged.nbytes``, how many times more the dense one moves.
    """

    n_tokens: int
    token_bytes: float
    top_k: int
    n_experts: int
    n_devices: int
    copies_per_token: float
    sent_per_device: float
    dense_sent_per_device: float
    ragged: CollectiveCost
    dense: CollectiveCost
    ratio: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ratio", self.dense.nbytes / self.ragged.nbytes)


def ragged_all_to_all(n_tokens: int, token_bytes: float, top_k: int, n_experts: int,
                      n_devices: int, chip: Chip | str | None = None, *,
                      capacity_factor: float | None = None, deduplicate: bool = False,
                      wraparound: bool = True, direction: str = BIDIRECTIONAL,
                      hop_latency: float = DEFAULT_HOP_LATENCY, bandwidth: float | None = None,
                      gpus_per_node: int | None = None, nvlink_bandwidth: float | None = None,
                      nic_bandwidth: float | None = None) -> RaggedAllToAllCost:
    """Dispatching ``T`` tokens of ``d`` bytes to their top-``k`` of ``E`` experts on ``N`` devices.

    Model (expert parallelism, HSYM part 12): the ``E`` experts sit ``E/N`` per device;
    each device holds ``T/N`` tokens and sends every token to the devices of its ``k`` experts.
    With uniform random routing each chosen expert is on any device with probability ``1/N``,
    so a device sends, in expectation,

        ragged:  (N−1)/N · k · (T/N) · d   bytes

    of its ``k·(T/N)·d`` bytes of copies (the ``1/N`` for its own experts stays). Traffic is
    uniform over destinations, so this costs exactly an AllToAll of ``V = k·T·d`` bytes
    (:func:`all_to_all` on a TPU axis, :func:`gpu_all_to_all` on GPUs): AllToAll of ``V``
    sends ``(N−1)/N · V/N`` per device. With ``deduplicate=True`` a token goes once to each
    device holding any of its experts: ``V = T·d·N·P``, ``P = 1 − C(E−E/N, k) / C(E, k)`` the
    chance a given device holds one of a token's ``k`` (distinct) experts.

    The dense AllToAll is what a framework without ragged collectives sends: fixed-shape
    buffers of ``E`` experts × ``C`` token slots per device, ``V_dense = N·E·C·d``, each device
    sending ``(N−1)/N · E·C·d``. By default ``C = T/N`` (no token can ever be dropped: the full
    one-hot dispatch array ``[T, E, d]``), so the dense AllToAll moves ``E/k`` times more. With
    ``capacity_factor=c`` (GShard/Switch capacity) ``C = c·k·(T/N)/E``: ``c`` times more, and
    tokens past an expert's capacity are dropped.

    On a TPU (or with ``bandwidth=``) ``wraparound``/``direction``/``bandwidth`` describe the
    axis; on a GPU ``gpus_per_node``/``nvlink_bandwidth``/``nic_bandwidth`` do. Expected
    values: the busiest expert gets more than average (load imbalance is not modelled).
    """
    tokens = _check_count(n_tokens, "n_tokens")
    row = _check_positive(token_bytes, "token_bytes")
    k = _check_count(top_k, "top_k")
    experts = _check_count(n_experts, "n_experts")
    n = _check_count(n_devices, "n_devices")
    if k > experts:
        raise ValueError(f"top_k={k} is more than n_experts={experts}; a token picks k of E")
    if experts % n:
        raise ValueError(f"n_experts={experts} is not a multiple of n_devices={n}; the experts "
                         "must spread evenly over the devices")
    if tokens % n:
        raise ValueError(f"n_tokens={tokens} is not a multiple of n_devices={n}")
    if not isinstance(deduplicate, (bool, np.bool_)):
        raise ValueError(f"deduplicate must be True or False, got {deduplicate!r}")
    local_tokens = tokens // n
    if capacity_factor is None:
        slots = float(local_tokens)
    else:
        slots = _check_positive(capacity_factor, "capacity_factor") * k * local_tokens / experts
    if deduplicate:
        per_device = experts // n
        hit = 1.0 - math.comb(experts - per_device, k) / math.comb(experts, k)
        ragged_bytes = tokens * row * n * hit
        copies = (n - 1) * hit
    else:
        ragged_bytes = k * tokens * row
        copies = k * (n - 1) / n
    dense_bytes = n * experts * slots * row
    cost = _all_to_all_on(chip, n, wraparound=wraparound, direction=direction,
                          hop_latency=hop_latency, bandwidth=bandwidth,
                          gpus_per_node=gpus_per_node, nvlink_bandwidth=nvlink_bandwidth,
                          nic_bandwidth=nic_bandwidth)
    ragged = _renamed(cost(ragged_bytes), "AllToAll (ragged MoE dispatch)")
    dense = _renamed(cost(dense_bytes), "AllToAll (dense MoE dispatch)")
    return RaggedAllToAllCost(tokens, row, k, experts, n, copies, copies * local_tokens * row,
                              (n - 1) / n * experts * slots * row, ragged, dense)


def _all_to_all_on(chip: Chip | str | None, n: int, *, wraparound: bool, direction: str,
                   hop_latency: float, bandwidth: float | None, gpus_per_node: int | None,
                   nvlink_bandwidth: float | None, nic_bandwidth: float | None):
    """The AllToAll cost function (bytes -> CollectiveCost) for ``chip``: TPU axis or GPUs."""
    if chip is not None and get_chip(chip).has_nvlink_domain:
        tpu_only = {"bandwidth": bandwidth is not None, "wraparound": wraparound is not True,
                    "direction": direction != BIDIRECTIONAL}
        given = [name for name, used in tpu_only.items() if used]
        if given:
            raise ValueError(f"{', '.join(given)} describe a TPU axis; for a GPU give "
                             "gpus_per_node / nvlink_bandwidth / nic_bandwidth")
        return lambda nbytes: gpu_all_to_all(nbytes, n, chip, gpus_per_node=gpus_per_node,
                                             nvlink_bandwidth=nvlink_bandwidth,
                                             nic_bandwidth=nic_bandwidth,
                                             hop_latency=hop_latency)
    gpu_only = {"gpus_per_node": gpus_per_node, "nvlink_bandwidth": nvlink_bandwidth,
                "nic_bandwidth": nic_bandwidth}
    given = [name for name, value in gpu_only.items() if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)} describe GPUs; for a TPU axis give wraparound / "
                         "direction / bandwidth")
    return lambda nbytes: all_to_all(nbytes, n, chip, wraparound=wraparound,
                                     hop_latency=hop_latency, bandwidth=bandwidth,
                                     direction=direction)


# --------------------------------------------------------------------------- the entry point

KINDS = ("AllGather", "ReduceScatter", "AllReduce", "AllToAll", "ppermute")
"""The collective kinds :func:`collective_cost` prices."""

NETWORKS = ("auto", "dcn")
"""``network=`` of :func:`collective_cost`: the chip's own interconnect (``"auto"``: ICI torus
or NVLink domain and its NICs), or the data-centre network between hosts (``"dcn"``)."""

_KIND_SPELLINGS = {k.lower().replace("_", "").replace("-", ""): k for k in KINDS}


def _check_kind(kind: str) -> str:
    key = kind.lower().replace("_", "").replace("-", "") if isinstance(kind, str) else None
    if key not in _KIND_SPELLINGS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    return _KIND_SPELLINGS[key]


def collective_cost(kind: str, nbytes: Bytes, axis_sizes: int | Sequence[int],
                    chip: Chip | str, *, network: str = "auto",
                    wraparound: bool | Sequence[bool] | None = None,
                    direction: str | Sequence[str] = BIDIRECTIONAL,
                    scheme: str = "rail", gpus_per_node: int | None = None,
                    hop_latency: float = DEFAULT_HOP_LATENCY, bandwidth: float | None = None,
                    nvlink_bandwidth: float | None = None,
                    nic_bandwidth: float | None = None,
                    algorithm: str = "auto") -> CollectiveCost:
    """The one place a collective is priced: ``kind`` over a group of ``axis_sizes`` on
    ``chip``'s real interconnect (``chip.interconnect``). Returns a :class:`CollectiveCost`
    (``.time`` in seconds).

    ``kind``: "AllGather", "ReduceScatter", "AllReduce", "AllToAll" or "ppermute" ("all_gather"
    etc. also read). ``nbytes``: the module's convention (the array the group holds together;
    for ppermute, the bytes each device sends). ``axis_sizes``: the sizes of the axes the
    group spans, e.g. ``[4, 2]`` for a whole v5e 4x2 slice; the group has their product ``N``
    devices. On a TPU they may instead be placements of mesh axes on a slice
    (:class:`scalebook.torus.AxisPlacement`, from :func:`scalebook.torus.place_mesh`). Which
    links they use:

    - **ICI torus** (TPUs; ``network="auto"``). Given plain sizes, the group *is* the slice
      (its axes padded with 1s: a 16-chip v5p group ``[4, 4]`` is the slice 4x4x1) and each
      axis is a ring where :func:`scalebook.torus.axis_wraps` says so for that shape (on
      v4p/v5p/TPU7x only slices of whole 4x4x4 cubes wrap), else a line; ``wraparound=``
      overrides, one flag or one per axis. Given placements, each mesh axis runs on the
      physical axes it was placed on: a whole physical axis keeps its wraparound, a segment of
      one is a line, and an axis that takes every ``s``-th chip shares each link with ``s − 1``
      other groups (``W/s`` each). The bandwidths of the axes add
      (:func:`all_gather_multi_axis`: ``T_bw = V·(N−1)/N / Σ W_axis``, ``W_axis = 2W`` on a
      ring, ``W`` on a line, ``W`` one link one way). An AllToAll over several axes runs axis by
      axis (the sum of :func:`all_to_all` of ``V·n_a/N`` over each axis ``a``); a ppermute runs
      on one axis (every other axis of size 1). ``bandwidth=`` overrides ``W``.
    - **NVLink domain** (GPUs): ``N`` GPUs, ``gpus_per_node`` of them per node (default: all
      of them when ``N`` fits one node, else the chip's ``chips_per_host``). AllReduce,
      AllGather and ReduceScatter by ``algorithm`` (:data:`ALGORITHMS`, :func:`gpu_collective`):
      ``"auto"`` (the default) keeps the fastest of ring, tree, NVLS (in-switch reduction),
      one-shot and two-shot that can run there; a ring across nodes by ``scheme``
      (:data:`GPU_SCHEMES`): NCCL's rail-aligned rings (default), the three-stage hierarchical
      model, or one flat ring (:func:`gpu_all_gather`). AllToAll: :func:`gpu_all_to_all`.
      ppermute: ``V/W_nvlink`` inside a node, ``V/W_nic`` across nodes.
    - **DCN** (``network="dcn"``, any chip): the ``N`` devices sit in different hosts (one per
      slice or node, e.g. data parallelism across TPU pods) and every chip of a host sends at
      once through its share of the host's network, ``W_dcn = host_network_bandwidth /
      chips_per_host`` (``bandwidth=`` overrides): a ring, ``T_bw = V·(N−1)/N / W_dcn`` for
      AllGather and ReduceScatter, twice that for AllReduce; ``N − 1`` steps of latency each.

    Every form adds ``hop_latency`` per sequential hop or ring step. A group of one device
    costs nothing. Raises ``ValueError`` for an unknown kind, network or scheme, a chip
    without an interconnect, options that belong to the other interconnect, or sizes that do
    not fit the chip's nodes.
    """
    kind = _check_kind(kind)
    chip = get_chip(chip)
    algorithm = _check_algorithm(algorithm)
    placements = _placements(axis_sizes)
    sizes = [p.size for p in placements] if placements else _sizes(axis_sizes)
    n = math.prod(sizes)
    if placements and not chip.has_ici_torus:
        raise ValueError(f"placements of mesh axes on a slice describe a TPU torus, not "
                         f"{chip.name}; give the group's size")
    if algorithm != "auto" and not chip.has_nvlink_domain:
        raise ValueError(f"algorithm={algorithm!r} names a GPU collective algorithm; on "
                         f"{chip.name} leave it 'auto'")
    if network not in NETWORKS:
        raise ValueError(f"network must be one of {', '.join(map(repr, NETWORKS))}, "
                         f"got {network!r}")
    latency = _check_latency(hop_latency)
    gpu_only = {"gpus_per_node": gpus_per_node, "nvlink_bandwidth": nvlink_bandwidth,
                "nic_bandwidth": nic_bandwidth}
    torus_only = {"wraparound": wraparound,
                  "direction": None if direction == BIDIRECTIONAL else direction}
    if network == "dcn":
        given = [k for k, v in {**gpu_only, **torus_only}.items() if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} describe a chip's own interconnect, not "
                             "the data-centre network; give bandwidth= for DCN")
        return _dcn_cost(kind, nbytes, n, chip, latency, bandwidth)
    if chip.has_ici_torus:
        given = [k for k, v in gpu_only.items() if v is not None]
        if given or scheme != "rail":
            raise ValueError(f"{', '.join(given) or 'scheme'} describe GPU nodes; for a TPU "
                             "slice give wraparound / direction / bandwidth")
        if placements:
            if wraparound is not None:
                raise ValueError("placements carry their own wraparound; do not give "
                                 "wraparound= with them")
            return _placed_cost(kind, nbytes, placements, chip, direction, latency, bandwidth)
        return _torus_cost(kind, nbytes, sizes, chip, wraparound, direction, latency, bandwidth)
    if chip.has_nvlink_domain:
        given = [k for k, v in torus_only.items() if v is not None]
        if given or bandwidth is not None:
            raise ValueError(f"{', '.join(given) or 'bandwidth'} describe a TPU axis; for GPUs "
                             "give gpus_per_node / nvlink_bandwidth / nic_bandwidth / scheme")
        if gpus_per_node is None:
            gpus_per_node = n if n <= chip.chips_per_host else chip.chips_per_host
        kwargs = _GpuOptions(gpus_per_node=gpus_per_node, nvlink_bandwidth=nvlink_bandwidth,
                             nic_bandwidth=nic_bandwidth, hop_latency=latency)
        if kind in ("AllGather", "ReduceScatter", "AllReduce"):
            return gpu_collective(kind, nbytes, n, chip, algorithm=algorithm, scheme=scheme,
                                  **kwargs)
        if algorithm != "auto":
            raise ValueError(f"{kind} has one algorithm on GPUs (direct sends); leave "
                             "algorithm='auto'")
        if kind == "AllToAll":
            return gpu_all_to_all(nbytes, n, chip, **kwargs)
        return _gpu_ppermute(nbytes, n, chip, **kwargs)
    if n == 1:
        return _zero(kind, 1, _check_nbytes(nbytes), 1.0)
    raise ValueError(f"{chip.name} has no interconnect in the catalog (interconnect=None), so a "
                     f"collective over {n} of them cannot be priced")


def collective_time(kind: str, nbytes: Bytes, axis_sizes: int | Sequence[int],
                    chip: Chip | str, **options) -> Bytes:
    """Seconds of :func:`collective_cost` (same arguments): ``collective_cost(...).time``."""
    return collective_cost(kind, nbytes, axis_sizes, chip, **options).time


def _torus_cost(kind: str, nbytes: Bytes, sizes: list[int], chip: Chip,
                wraparound: bool | Sequence[bool] | None, direction: str | Sequence[str],
                latency: float, bandwidth: float | None) -> CollectiveCost:
    used = [i for i, size in enumerate(sizes) if size > 1] or [0]
    if kind == "ppermute":
        # a ring of neighbours folds onto the torus whatever its length: one link per hop,
        # wraparound or not (a snake through a 2-D or 3-D slice closes on itself)
        if len(used) > 1:
            raise ValueError(f"a ppermute is priced over one torus axis at a time; axis_sizes "
                             f"{sizes} uses {len(used)}")
        return ppermute(nbytes, chip, n_devices=sizes[used[0]], hop_latency=latency,
                        bandwidth=bandwidth)
    if wraparound is None and len(sizes) <= len(chip.max_slice):
        flags = list(axis_wraps(chip, sizes))[:len(sizes)]
    elif wraparound is None:
        raise ValueError(f"{len(sizes)} axes do not fit {chip.name}'s {len(chip.max_slice)}-axis "
                         "torus; give wraparound= per axis, or placements from "
                         "scalebook.torus.place_mesh")
    else:
        flags = _wraparound_list(wraparound, len(sizes))
    directions = _direction_list(direction, len(sizes))
    common = _TorusOptions(hop_latency=latency, bandwidth=bandwidth)
    if kind in ("AllGather", "ReduceScatter", "AllReduce"):
        function = {"AllGather": all_gather_multi_axis,
                    "ReduceScatter": reduce_scatter_multi_axis,
                    "AllReduce": all_reduce_multi_axis}[kind]
        return function(nbytes, sizes, chip, wraparound=flags, direction=directions, **common)
    if kind == "AllToAll" and len(used) > 1:
        # axis by axis, as a torus routes it: the n_a devices along axis a hold V·n_a/N of the
        # array between them, and every device sends its shard along each axis in turn
        n = math.prod(sizes)
        stages = [all_to_all(nbytes * sizes[i] / n, sizes[i], chip, wraparound=flags[i],
                             direction=directions[i], **common) for i in used]
        return CollectiveCost("AllToAll (axis by axis)", n, nbytes,
                              sum(c.bandwidth_time for c in stages),
                              sum(c.latency_time for c in stages), stages[0].link_bandwidth,
                              " + ".join(c.formula for c in stages), tuple(stages))
    i = used[0]
    return all_to_all(nbytes, sizes[i], chip, wraparound=flags[i], direction=directions[i],
                      **common)


def _placements(axis_sizes: object) -> list[AxisPlacement]:
    """``axis_sizes`` as placements on a slice, or [] when it holds plain sizes."""
    if isinstance(axis_sizes, AxisPlacement):
        return [axis_sizes]
    if isinstance(axis_sizes, Sequence) and not isinstance(axis_sizes, (str, bytes)) and \
            any(isinstance(a, AxisPlacement) for a in axis_sizes):
        if not all(isinstance(a, AxisPlacement) for a in axis_sizes):
            raise ValueError("give either axis sizes or placements (scalebook.torus.place_mesh), "
                             "not a mixture")
        return list(axis_sizes)
    return []


def _placed_cost(kind: str, nbytes: Bytes, placements: Sequence[AxisPlacement], chip: Chip,
                 direction: str | Sequence[str], latency: float,
                 bandwidth: float | None) -> CollectiveCost:
    """``kind`` over mesh axes placed on a slice: one term per physical axis they run along.

    A physical segment of ``n`` chips, ring or line, whose neighbours sit ``s`` links apart
    gives ``W/s`` per link (``s`` groups share each link) and ``s`` hops per step.
    """
    link = _tpu_link_bandwidth(chip, bandwidth)
    segments = [(span, ring, stride) for p in placements
                for span, ring, stride in zip(p.spans, p.rings, p.strides) if span > 1]
    n = math.prod(p.size for p in placements)
    nbytes = _check_nbytes(nbytes)
    if not segments:
        return _zero(kind, 1, nbytes, link)
    directions = _direction_list(direction, len(segments))
    if kind in ("AllGather", "ReduceScatter", "AllReduce"):
        shares = [((2 if _bidirectional_ring(ring, way) else 1) / stride, span, ring, stride, way)
                  for (span, ring, stride), way in zip(segments, directions)]
        total = sum(share for share, *_ in shares) * link
        hops = sum(_hops(span, ring, way) * stride for _, span, ring, stride, way in shares)
        terms = " + ".join(("2·W" if share * stride == 2 else "W") + (f"/{stride}" if stride > 1
                           else "") for share, _, _, stride, _ in shares)
        one = CollectiveCost("AllGather" if kind == "AllGather" else "ReduceScatter", n, nbytes,
                             nbytes * (n - 1) / n / total, hops * latency, link,
                             f"V·(N−1)/N / ({terms})")
        return _doubled(one, "AllReduce") if kind == "AllReduce" else one
    if kind == "ppermute":
        if len(segments) > 1:
            raise ValueError("a ppermute is priced over one physical axis at a time")
        span, _, stride = segments[0]
        return ppermute(nbytes, chip, n_devices=span, hop_latency=latency * stride,
                        bandwidth=link / stride)
    stages = [all_to_all(nbytes * span / n, span, chip, wraparound=ring, direction=way,
                         hop_latency=latency * stride, bandwidth=link / stride)
              for (span, ring, stride), way in zip(segments, directions)]
    if len(stages) == 1:
        return stages[0]
    return CollectiveCost("AllToAll (axis by axis)", n, nbytes,
                          sum(c.bandwidth_time for c in stages),
                          sum(c.latency_time for c in stages), link,
                          " + ".join(c.formula for c in stages), tuple(stages))


def _gpu_ppermute(nbytes: Bytes, n: int, chip: Chip, *, gpus_per_node: int | None,
                  nvlink_bandwidth: float | None, nic_bandwidth: float | None,
                  hop_latency: float) -> CollectiveCost:
    """Every GPU sends ``V`` to the next: over NVLink inside a node, and the GPU at each node
    boundary through its NIC, which paces the step: ``V/W_nvlink`` or ``V/W_nic``."""
    nbytes = _check_nbytes(nbytes)
    n, g, nvlink, nic, latency = _gpu_setup(chip, n, gpus_per_node, nvlink_bandwidth,
                                            nic_bandwidth, hop_latency)
    if n == 1:
        return _zero("ppermute", n, nbytes, nvlink)
    if n <= g:
        return CollectiveCost("ppermute", n, nbytes, nbytes / nvlink, latency, nvlink,
                              "V / W_nvlink")
    _nodes(n, g)
    return CollectiveCost("ppermute", n, nbytes, nbytes / nic, latency, nic, "V / W_nic")


def _dcn_cost(kind: str, nbytes: Bytes, n: int, chip: Chip, latency: float,
              bandwidth: float | None) -> CollectiveCost:
    """A ring over ``n`` hosts' network, each chip at ``W_dcn`` (see :func:`collective_cost`)."""
    nbytes = _check_nbytes(nbytes)
    link = (_check_bandwidth(bandwidth) if bandwidth is not None
            else chip.nic_bandwidth_per_chip)
    if n == 1:
        return _zero(kind, n, nbytes, link)
    if kind == "ppermute":
        return CollectiveCost("ppermute (DCN)", n, nbytes, nbytes / link, latency, link,
                              "V / W_dcn")
    if kind == "AllToAll":
        block = nbytes / n
        return CollectiveCost("AllToAll (DCN)", n, nbytes, block * (n - 1) / n / link, latency,
                              link, "(V/N)·(N−1)/N / W_dcn")
    one = CollectiveCost(f"{kind} (DCN)", n, nbytes, nbytes * (n - 1) / n / link,
                         (n - 1) * latency, link, "V·(N−1)/N / W_dcn")
    return _doubled(one, "AllReduce (DCN)") if kind == "AllReduce" else one

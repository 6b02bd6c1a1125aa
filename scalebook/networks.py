"""GPU cluster networks: nodes joined by a leaf/spine fat tree, and collectives across its levels.

A GPU cluster has three levels (HSYM part 12; NVIDIA's DGX SuperPOD reference architecture):

1. **node** (NVLink domain): ``g`` GPUs behind NVSwitches; every GPU sends ``W_nvlink`` one way
   to the others (450 GB/s on an H100, from the chip catalog).
2. **leaf** (a *scalable unit*, SU): ``P`` nodes, each with ``nics_per_node`` NICs of ``W_nic``.
   The fabric is *rail-optimised*: NIC ``r`` of every node in the SU plugs into leaf switch ``r``
   (rail ``r``), so an SU has one leaf per rail, each with ``P`` ports down to the nodes.
3. **spine**: the leaves' up-ports go to spine switches that join ``n_sus`` SUs. The tree is
   **non-blocking** (a full fat tree) when every leaf has as many ports up as down; it is
   **oversubscribed** by ``r`` when it has ``1/r`` as many up (``oversubscription=r``).

All bandwidths are one way, in bytes/s; switch ports run at the NIC rate. A node sends
``W_node = nics_per_node × W_nic`` into its leaves (400 GB/s on a DGX H100: 8 NICs of 400 Gb/s),
``W_node / g`` per GPU. Across SUs a node's share of its leaves' up-ports is
``W_node × up/down`` (= ``W_node / r``).

Ring collectives (AllGather, ReduceScatter, AllReduce) are priced by
:func:`scalebook.collectives.collective_cost` with the cluster's figures as rings
(``algorithm="ring"``: this module is about how rings cross the fabric; NCCL's other
algorithms, trees, NVLS and SHARP, are :func:`scalebook.collectives.gpu_collective`'s), by
``scheme``: NCCL's
rail-aligned rings by default (``g`` rings, one per rail, each leaving a node through its own
NIC, so all ``g`` NICs of a node work at once), or the three-stage hierarchical model, or one
flat ring. A rail's ring crosses from one SU to the next through a single up-port per leaf, so
spine oversubscription does not slow it; it slows traffic that must cross the spine in bulk,
which the AllToAll and the bisection measure.

Describe a cluster with :class:`ClusterNetwork`, or start from :data:`H100_SUPERPOD_SU` (one
scalable unit, 256 H100s) or :data:`H100_SUPERPOD` (4 SUs, 1024 H100s) and ``.replace(...)``
what a problem changes (``oversubscription=2``, ``n_sus=2``, another ``chip``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

from scalebook._np import np

from scalebook import collectives
from scalebook.collectives import DEFAULT_HOP_LATENCY, Bytes, CollectiveCost
from scalebook.hardware import Chip, get_chip

NDR_PORT_BANDWIDTH = 400e9 / 8
"""Bytes/s one InfiniBand NDR port (400 Gb/s) carries each way: one ConnectX-7 NIC or one switch
port. Source: NVIDIA DGX SuperPOD Reference Architecture featuring DGX H100 systems
(RA-11333-001, 2023), compute fabric: NDR 400 Gb/s InfiniBand."""

QM9700_PORTS = 64
"""Ports (radix) of an NVIDIA Quantum-2 QM9700 InfiniBand switch, 64 x NDR 400 Gb/s, the leaf
and spine switch of the DGX H100 SuperPOD compute fabric (same source; HSYM part 12)."""

_SUPERPOD_RA = ("NVIDIA DGX SuperPOD Reference Architecture featuring DGX H100 systems "
                "(RA-11333-001, 2023): scalable units of 32 DGX H100, rail-optimised "
                "non-blocking fat-tree compute fabric, NDR 400 Gb/s InfiniBand")
_HSYM_12 = ("Austin et al., 'How to Scale Your Model' (2025), part 12 (GPUs), "
            "'Beyond the node level'")

__all__ = [
    "NDR_PORT_BANDWIDTH", "QM9700_PORTS",
    "ClusterNetwork", "NetworkLevel", "H100_SUPERPOD_SU", "H100_SUPERPOD",
    "levels", "bisection_bandwidth",
    "cluster_all_gather", "cluster_reduce_scatter", "cluster_all_reduce", "cluster_all_to_all",
]


def _count(value: object, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return int(value)


def _positive(value: object, what: str) -> float:
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not float(value) > 0 or math.isinf(value)):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ClusterNetwork:
    """A GPU cluster: ``n_sus`` scalable units of ``nodes_per_su`` nodes on a two-level,
    rail-optimised leaf/spine fat tree.

    Attributes (SI units, bandwidths one way):
        name: display name.
        chip: the GPU, a catalog name or a :class:`~scalebook.hardware.Chip` (kept as the Chip,
            so ``get_chip("H100").replace(...)`` carries a problem's own figures).
        gpus_per_node: ``g``, GPUs in one NVLink domain.
        nodes_per_su: ``P``, nodes under one SU's leaf switches (one leaf per rail).
        n_sus: scalable units joined by the spine.
        nics_per_node: NICs (rails) per node; each goes to its own leaf switch.
        nic_bandwidth: bytes/s one NIC, and one switch port, carries each way.
        switch_radix: ports per leaf or spine switch.
        oversubscription: ``r`` >= 1, a leaf's down-ports per up-port (1: non-blocking).
        nvlink_bandwidth: bytes/s one GPU sends over NVLink; None takes the catalog's
            ``interconnect_bandwidth_one_way``.
        sources, notes: where the figures come from; caveats.

    Raises ``ValueError`` for a non-GPU chip, non-positive sizes, ``oversubscription < 1``, a leaf
    with more ports than ``switch_radix``, or more leaves than a spine switch can reach (that
    needs a third, core level).
    """

    name: str
    chip: Chip | str
    gpus_per_node: int
    nodes_per_su: int
    n_sus: int = 1
    nics_per_node: int = 8
    nic_bandwidth: float = NDR_PORT_BANDWIDTH
    switch_radix: int = QM9700_PORTS
    oversubscription: float = 1.0
    nvlink_bandwidth: float | None = None
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        chip = get_chip(self.chip)
        if not chip.has_nvlink_domain:
            raise ValueError(f"{chip.name} is not a GPU; a ClusterNetwork is built of GPU nodes")
        object.__setattr__(self, "chip", chip)
        for attr in ("gpus_per_node", "nodes_per_su", "n_sus", "nics_per_node", "switch_radix"):
            _count(getattr(self, attr), attr)
        _positive(self.nic_bandwidth, "nic_bandwidth")
        if self.nvlink_bandwidth is not None:
            _positive(self.nvlink_bandwidth, "nvlink_bandwidth")
        if _positive(self.oversubscription, "oversubscription") < 1:
            raise ValueError(f"oversubscription must be >= 1 (1 = non-blocking), got "
                             f"{self.oversubscription!r}")
        ports = self.leaf_down_ports + self.leaf_up_ports
        if ports > self.switch_radix:
            raise ValueError(
                f"a leaf needs {self.leaf_down_ports} ports down and {self.leaf_up_ports} up "
                f"({ports}) but a switch has {self.switch_radix}; use fewer nodes per SU or "
                "more oversubscription")
        if self.leaf_switches > self.switch_radix:
            raise ValueError(
                f"{self.leaf_switches} leaf switches cannot all reach one {self.switch_radix}-port "
                "spine switch; a cluster this large needs a third (core) switch level")

    def replace(self, **changes: object) -> "ClusterNetwork":
        """A copy with some fields changed (validated again), e.g. ``replace(n_sus=4)``."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"ClusterNetwork has no field(s) {sorted(unknown)}")
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def n_nodes(self) -> int:
        return self.nodes_per_su * self.n_sus

    @property
    def n_gpus(self) -> int:
        return self.n_nodes * self.gpus_per_node

    @property
    def gpus_per_su(self) -> int:
        return self.nodes_per_su * self.gpus_per_node

    @property
    def gpu_nvlink_bandwidth(self) -> float:
        """Bytes/s one GPU sends to the rest of its node over NVLink, one way."""
        if self.nvlink_bandwidth is not None:
            return float(self.nvlink_bandwidth)
        return get_chip(self.chip).interconnect_bandwidth_one_way

    @property
    def node_nic_bandwidth(self) -> float:
        """``W_node = nics_per_node × nic_bandwidth``: bytes/s a node sends into its leaves."""
        return self.nics_per_node * self.nic_bandwidth

    @property
    def gpu_nic_bandwidth(self) -> float:
        """A GPU's share of its node's NICs, ``W_node / g`` (one NIC per GPU on a DGX)."""
        return self.node_nic_bandwidth / self.gpus_per_node

    @property
    def leaf_switches(self) -> int:
        """One leaf per rail per SU: ``n_sus × nics_per_node``."""
        return self.n_sus * self.nics_per_node

    @property
    def leaf_down_ports(self) -> int:
        """Ports from one leaf to the nodes of its SU: one per node (its rail's NIC)."""
        return self.nodes_per_su

    @property
    def leaf_up_ports(self) -> int:
        """Ports from one leaf to the spine: ``⌈down / oversubscription⌉``."""
        # rounded first so that e.g. 32 / 1.6 = 19.999999999999996 counts as 20
        return math.ceil(round(self.leaf_down_ports / self.oversubscription, 9))

    @property
    def spine_switches(self) -> int:
        """Spine switches to take every leaf up-port: ``⌈leaves × up-ports / radix⌉``."""
        return math.ceil(self.leaf_switches * self.leaf_up_ports / self.switch_radix)

    @property
    def spine_bandwidth_per_node(self) -> float:
        """Bytes/s a node can send out of its SU through the spine when every node does:
        ``W_node × up/down`` (``W_node`` when non-blocking, ``W_node / r`` oversubscribed)."""
        return self.node_nic_bandwidth * min(1.0, self.leaf_up_ports / self.leaf_down_ports)


@dataclass(frozen=True)
class NetworkLevel:
    """One level of a cluster's network (a row of HSYM part 12's table).

    Attributes:
        name: "node (NVLink)", "leaf (scalable unit)" or "spine".
        gpus: GPUs that reach each other within this level.
        switches: switches of this level in the whole cluster (None for the NVLink level: the
            NVSwitches are part of the node).
        bandwidth_per_gpu: bytes/s one GPU sends at this level, one way, all GPUs at once.
        bandwidth_per_node: the same per node.
    """

    name: str
    gpus: int
    switches: int | None
    bandwidth_per_gpu: float
    bandwidth_per_node: float


def levels(cluster: ClusterNetwork) -> tuple[NetworkLevel, ...]:
    """The node, leaf and spine levels of ``cluster`` with the bandwidth each gives.

    - node: ``W_nvlink`` per GPU, ``g × W_nvlink`` per node (3.6 TB/s for 8 H100s);
    - leaf: ``W_node`` per node (400 GB/s for a DGX H100), ``W_node / g`` per GPU;
    - spine: ``W_node × up/down`` per node (``W_node / r`` when oversubscribed by ``r``).
    """
    g = cluster.gpus_per_node
    nvlink = cluster.gpu_nvlink_bandwidth
    spine = cluster.spine_bandwidth_per_node
    return (
        NetworkLevel("node (NVLink)", g, None, nvlink, g * nvlink),
        NetworkLevel("leaf (scalable unit)", cluster.gpus_per_su, cluster.leaf_switches,
                     cluster.gpu_nic_bandwidth, cluster.node_nic_bandwidth),
        NetworkLevel("spine", cluster.n_gpus, cluster.spine_switches, spine / g, spine),
    )


def bisection_bandwidth(cluster: ClusterNetwork, n_nodes: int | None = None, *,
                        both_directions: bool = False) -> float:
    """Bytes/s between the two halves of a group of ``n_nodes`` nodes, cut the worst way.

    The bisection is the least bandwidth across any split of the group into two equal halves,
    one way (``both_directions=True`` doubles it, as HSYM part 12 counts it). With ``P`` nodes
    per SU, ``W_node`` a node's NIC bandwidth and ``W_spine`` its spine share:

    - one node (``n_nodes=1``): its GPUs split ``g/2 | g/2`` through the NVSwitches:
      ``⌊g/2⌋ × W_nvlink`` (1.8 TB/s one way, 3.6 both, for 8 H100s; refused for a node
      without NVSwitches, such as the V100's hybrid cube mesh);
    - within one SU (``n_nodes <= P``): the leaves switch every pair, so the cut is the NICs of
      the smaller half: ``⌊n/2⌋ × W_node`` (one H100 SU: 16 × 400 GB/s = 6.4 TB/s);
    - ``q`` whole SUs: the worst split puts whole SUs on each side, so their traffic must
      cross the spine: ``⌊q/2⌋·P × W_spine``, plus ``P/2 × W_node`` through the leaves of the
      SU split in two when ``q`` is odd. Non-blocking, that is ``n/2 × W_node``, full bisection;
      oversubscribed by ``r``, ``1/r`` of it.

    ``n_nodes`` defaults to the whole cluster; between one SU and the whole cluster it must be
    a whole number of SUs.
    """
    nodes = cluster.n_nodes if n_nodes is None else _count(n_nodes, "n_nodes")
    if nodes > cluster.n_nodes:
        raise ValueError(f"n_nodes={nodes} is more than the cluster's {cluster.n_nodes} nodes")
    if not isinstance(both_directions, (bool, np.bool_)):
        raise ValueError(f"both_directions must be True or False, got {both_directions!r}")
    per_su = cluster.nodes_per_su
    if nodes == 1:
        chip = get_chip(cluster.chip)
        if "nvswitch" not in chip.topology.lower():
            raise ValueError(f"{chip.name} nodes are wired as '{chip.topology}', not through "
                             "NVSwitches; the node-level bisection formula does not apply")
        one_way = (cluster.gpus_per_node // 2) * cluster.gpu_nvlink_bandwidth
    elif nodes <= per_su:
        one_way = (nodes // 2) * cluster.node_nic_bandwidth
    else:
        if nodes % per_su:
            raise ValueError(f"n_nodes={nodes} spans more than one scalable unit but is not a "
                             f"multiple of {per_su} nodes per SU")
        sus = nodes // per_su
        one_way = (sus // 2) * per_su * cluster.spine_bandwidth_per_node
        if sus % 2:
            one_way += (per_su // 2) * cluster.node_nic_bandwidth
    return 2 * one_way if both_directions else one_way


# --------------------------------------------------------------------------- collectives

def _group(cluster: ClusterNetwork, n_gpus: int | None) -> int:
    if not isinstance(cluster, ClusterNetwork):
        raise ValueError(f"cluster must be a ClusterNetwork, got {cluster!r}")
    n = cluster.n_gpus if n_gpus is None else _count(n_gpus, "n_gpus")
    if n > cluster.n_gpus:
        raise ValueError(f"n_gpus={n} is more than {cluster.name}'s {cluster.n_gpus} GPUs")
    return n


def _gpu_kwargs(cluster: ClusterNetwork, n: int, hop_latency: float) -> dict:
    return dict(gpus_per_node=min(n, cluster.gpus_per_node),
                nvlink_bandwidth=cluster.gpu_nvlink_bandwidth,
                nic_bandwidth=cluster.gpu_nic_bandwidth, hop_latency=hop_latency)


def _ring(kind: str, nbytes: Bytes, cluster: ClusterNetwork, n_gpus: int | None,
          hop_latency: float, scheme: str, pipelined: bool) -> CollectiveCost:
    n = _group(cluster, n_gpus)
    if not isinstance(pipelined, (bool, np.bool_)):
        raise ValueError(f"pipelined must be True or False, got {pipelined!r}")
    if pipelined and scheme != "hierarchical":
        raise ValueError("pipelined=True overlaps the stages of scheme='hierarchical'; the "
                         "rail-aligned and flat rings have no stages")
    cost = collectives.collective_cost(kind, nbytes, n, cluster.chip, scheme=scheme,
                                       algorithm="ring", **_gpu_kwargs(cluster, n, hop_latency))
    return _pipelined(cost, pipelined)


def _pipelined(cost: CollectiveCost, pipelined: bool) -> CollectiveCost:
    """With ``pipelined``, overlap the NVLink stages with the NIC stages (different links)."""
    if not pipelined or not cost.stages:
        return cost
    zero = cost.nbytes * 0.0
    nvlink = sum((s.bandwidth_time for s in cost.stages if "NVLink" in s.name), zero)
    nic = sum((s.bandwidth_time for s in cost.stages if "NVLink" not in s.name), zero)
    bw_time = np.maximum(nvlink, nic)
    bw_time = bw_time if isinstance(bw_time, np.ndarray) else float(bw_time)
    return CollectiveCost(f"{cost.name}, pipelined", cost.n_devices, cost.nbytes, bw_time,
                          cost.latency_time, cost.link_bandwidth,
                          "max(Σ NVLink stages, Σ NIC stages)", cost.stages)


def cluster_all_gather(nbytes: Bytes, cluster: ClusterNetwork, n_gpus: int | None = None, *,
                       hop_latency: float = DEFAULT_HOP_LATENCY, scheme: str = "rail",
                       pipelined: bool = False) -> CollectiveCost:
    """AllGather of ``V = nbytes`` over ``n_gpus`` GPUs of ``cluster`` (default: all of them).

    :func:`scalebook.collectives.collective_cost` with the cluster's figures. In one node
    ``V·(N−1)/N / W_nvlink``; across ``M`` nodes, by ``scheme``:

    - ``"rail"`` (default, NCCL): ``T_bw = V·(N−1)/N · max((g−1)/(g·W_nvlink), 1/W_node)``,
      ``W_node = g·W_nic`` the node's NICs together;
    - ``"hierarchical"``: ``T_bw = (V/g)·(M−1)/M / (W_node/g) + V·(g−1)/g / W_nvlink``, the
      stages one after the other; with ``pipelined=True`` they overlap (chunks flow through
      both at once) and ``T_bw`` is the larger of the two, HSYM part 12's
      ``T = max(T_node, T_scale-out)``;
    - ``"flat"``: one ring, one NIC: ``V·(N−1)/N / W_nic``.

    Latency: one ``hop_latency`` per ring step.
    """
    return _ring("AllGather", nbytes, cluster, n_gpus, hop_latency, scheme, pipelined)


def cluster_reduce_scatter(nbytes: Bytes, cluster: ClusterNetwork, n_gpus: int | None = None, *,
                           hop_latency: float = DEFAULT_HOP_LATENCY, scheme: str = "rail",
                           pipelined: bool = False) -> CollectiveCost:
    """ReduceScatter over GPUs of ``cluster``: :func:`cluster_all_gather` run backwards, same
    cost under each ``scheme``."""
    return _ring("ReduceScatter", nbytes, cluster, n_gpus, hop_latency, scheme, pipelined)


def cluster_all_reduce(nbytes: Bytes, cluster: ClusterNetwork, n_gpus: int | None = None, *,
                       hop_latency: float = DEFAULT_HOP_LATENCY, scheme: str = "rail",
                       pipelined: bool = False) -> CollectiveCost:
    """AllReduce of ``V = nbytes`` over ``n_gpus`` GPUs of ``cluster`` (default: all of them).

    Across ``M`` nodes of ``g``, by ``scheme``:

        T_bw = 2·V·(N−1)/N · max((g−1)/(g·W_nvlink), 1/W_node)               "rail" (NCCL)
        T_bw = 2·V·(g−1)/g / W_nvlink + 2·(V/g)·(M−1)/M / (W_node/g)         "hierarchical"
        T_bw = max(2·V·(g−1)/g / W_nvlink, 2·V·(M−1)/M / W_node)              hierarchical,
                                                                             pipelined=True
        T_bw = 2·V·(N−1)/N / W_nic                                           "flat"

    For 1 GB over one H100 SU (M = 32, g = 8): rail 4.98 ms; hierarchical 3.89 ms + 4.84 ms
    = 8.73 ms in turn, 4.84 ms pipelined; flat 39.8 ms; plus latency. A rail's ring crosses
    each SU boundary on one up-port, so oversubscription does not change these.
    """
    return _ring("AllReduce", nbytes, cluster, n_gpus, hop_latency, scheme, pipelined)


def cluster_all_to_all(nbytes: Bytes, cluster: ClusterNetwork, n_gpus: int | None = None, *,
                       hop_latency: float = DEFAULT_HOP_LATENCY) -> CollectiveCost:
    """AllToAll of ``V = nbytes`` over ``N = n_gpus`` GPUs of ``cluster`` (default: all).

    Within one SU this is :func:`scalebook.collectives.gpu_all_to_all` with the cluster's
    figures: each GPU sends ``(V/N)·(N−g)/N`` through its NIC and ``(V/N)·(g−1)/N`` over
    NVLink (traffic for another rail is assumed to hop over NVLink to that rail's GPU first, as
    NCCL's PXN does, so it stays on its rail's leaf). Across ``q`` whole SUs of ``G`` GPUs each,
    the ``(V/N)·(N−G)/N`` bound for other SUs must also fit through the GPU's share of the
    spine, ``W_spine/g``:

        T_bw = max(gpu_all_to_all's T_bw, (V/N)·(N−G)/N / (W_spine/g))

    which only binds when the spine is oversubscribed.
    """
    n = _group(cluster, n_gpus)
    cost = collectives.collective_cost("AllToAll", nbytes, n, cluster.chip,
                                       **_gpu_kwargs(cluster, n, hop_latency))
    per_su = cluster.gpus_per_su
    if n <= per_su:
        return cost
    if n % per_su:
        raise ValueError(f"n_gpus={n} spans more than one scalable unit but is not a multiple "
                         f"of its {per_su} GPUs")
    spine_per_gpu = cluster.spine_bandwidth_per_node / cluster.gpus_per_node
    over_spine = (cost.nbytes / n) * (n - per_su) / n / spine_per_gpu
    bw_time = np.maximum(cost.bandwidth_time, over_spine)
    bw_time = bw_time if isinstance(bw_time, np.ndarray) else float(bw_time)
    return CollectiveCost(f"AllToAll ({n // per_su} SUs)", n, cost.nbytes, bw_time,
                          cost.latency_time, min(cost.link_bandwidth, spine_per_gpu),
                          f"max({cost.formula}, (V/N)·(N−G)/N / W_spine_per_gpu)")


# --------------------------------------------------------------------------- reference designs

_H100 = get_chip("H100")
if _H100.nics_per_host is None:
    raise ValueError("the chip catalog's H100 needs nics_per_host for the SuperPOD designs")
_H100_NICS: int = _H100.nics_per_host
H100_SUPERPOD_SU = ClusterNetwork(
    # the node, its NICs and their rate as the chip catalog has them (one 400 Gb/s NIC per GPU)
    name="DGX H100 SuperPOD scalable unit", chip=_H100, gpus_per_node=_H100.chips_per_host,
    nodes_per_su=32, n_sus=1, nics_per_node=_H100_NICS,
    nic_bandwidth=_H100.host_network_bandwidth / _H100_NICS, switch_radix=QM9700_PORTS,
    oversubscription=1.0,
    sources=(_SUPERPOD_RA, _HSYM_12),
    notes=("32 DGX H100 nodes x 8 H100 = 256 GPUs; 8 ConnectX-7 NICs of 400 Gb/s per node "
           "(50 GB/s each way per GPU, 400 GB/s per node); one QM9700 leaf per rail.",
           "Non-blocking: each leaf has 32 ports down and 32 up.",),
)
"""One scalable unit of NVIDIA's DGX H100 SuperPOD: 256 H100s, non-blocking."""

H100_SUPERPOD = H100_SUPERPOD_SU.replace(
    name="DGX H100 SuperPOD (4 scalable units)", n_sus=4,
    notes=("4 SUs = 128 node slots, 1024 H100s, 32 leaf and 16 spine QM9700 switches (HSYM part "
           "12). The reference architecture fills 127 of the slots with DGX nodes (one holds "
           "the fabric manager); this model counts 128.",),
)
"""The 4-SU, 1024-GPU DGX H100 SuperPOD of NVIDIA's reference architecture."""

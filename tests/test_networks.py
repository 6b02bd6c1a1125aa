"""Tests for scalebook.networks: GPU clusters on a leaf/spine fat tree and their collectives."""

import dataclasses

import numpy as np
import pytest

from scalebook import collectives as c
from scalebook import networks as net
from scalebook.hardware import get_chip

SU = net.H100_SUPERPOD_SU
POD = net.H100_SUPERPOD
NVLINK = 18 * 2.5e10   # 450 GB/s per H100, one way (catalog)
NIC = 400e9 / 8        # one NDR 400 Gb/s NIC: 5e10 B/s each way
NODE = 8 * NIC         # 4e11 B/s per DGX H100 node
GB = 1e9


# --------------------------------------------------------------------------- the reference design

def test_superpod_scalable_unit_figures():
    assert (SU.chip.name, SU.gpus_per_node, SU.nodes_per_su, SU.n_sus) == ("H100", 8, 32, 1)
    assert SU.n_nodes == 32 and SU.n_gpus == 256 and SU.gpus_per_su == 256
    assert net.NDR_PORT_BANDWIDTH == NIC
    assert SU.node_nic_bandwidth == pytest.approx(4e11)    # 8 x 50 GB/s
    assert SU.gpu_nic_bandwidth == pytest.approx(5e10)
    assert SU.gpu_nvlink_bandwidth == pytest.approx(4.5e11)
    # rail-optimised: one 64-port leaf per rail, 32 ports down (one per node) and 32 up
    assert SU.leaf_switches == 8
    assert (SU.leaf_down_ports, SU.leaf_up_ports) == (32, 32)
    assert SU.spine_switches == 4                         # 8 x 32 up-ports / 64
    assert SU.spine_bandwidth_per_node == pytest.approx(4e11)
    assert SU.sources and "RA-11333-001" in SU.sources[0]


def test_four_su_superpod_matches_hsym_part_12():
    # HSYM part 12: 1024 GPUs, 128 nodes, 32 leaf and 16 spine IB switches
    assert POD.n_gpus == 1024 and POD.n_nodes == 128
    assert POD.leaf_switches == 32
    assert POD.spine_switches == 16                       # 32 leaves x 32 up-ports / 64


def test_levels_give_bandwidth_per_gpu_and_per_node():
    node, leaf, spine = net.levels(POD)
    assert (node.name, node.gpus, node.switches) == ("node (NVLink)", 8, None)
    assert node.bandwidth_per_gpu == pytest.approx(NVLINK)
    assert node.bandwidth_per_node == pytest.approx(8 * NVLINK)  # 3.6 TB/s
    assert (leaf.gpus, leaf.switches) == (256, 32)
    assert leaf.bandwidth_per_node == pytest.approx(4e11)
    assert leaf.bandwidth_per_gpu == pytest.approx(5e10)
    assert (spine.gpus, spine.switches) == (1024, 16)
    assert spine.bandwidth_per_node == pytest.approx(4e11)  # full fat tree: no drop at the spine


# --------------------------------------------------------------------------- bisection

def test_bisection_of_one_scalable_unit():
    # 32 nodes split 16 | 16: the 16 nodes' NICs, 16 x 400 GB/s = 6.4 TB/s one way
    assert net.bisection_bandwidth(SU) == pytest.approx(16 * 4e11)
    # HSYM part 12 counts both directions: 12.8 TB/s for an SU
    assert net.bisection_bandwidth(SU, both_directions=True) == pytest.approx(1.28e13)


def test_bisection_of_a_node_and_of_the_superpod():
    # one node: 4 GPUs | 4 GPUs over NVLink, 4 x 450 GB/s = 1.8 TB/s (3.6 both ways, HSYM quiz 2)
    assert net.bisection_bandwidth(SU, 1) == pytest.approx(4 * NVLINK)
    assert net.bisection_bandwidth(SU, 1, both_directions=True) == pytest.approx(3.6e12)
    # 4 SUs, non-blocking: 64 nodes x 400 GB/s = 25.6 TB/s one way (51.2 both ways, HSYM)
    assert net.bisection_bandwidth(POD) == pytest.approx(64 * 4e11)
    assert net.bisection_bandwidth(POD, both_directions=True) == pytest.approx(5.12e13)
    # part of an SU: 10 nodes, 5 | 5
    assert net.bisection_bandwidth(POD, 10) == pytest.approx(5 * 4e11)
    assert net.bisection_bandwidth(POD, 7) == pytest.approx(3 * 4e11)


def test_oversubscribed_fat_tree_halves_the_bisection_across_sus():
    half = POD.replace(oversubscription=2)
    assert (half.leaf_down_ports, half.leaf_up_ports) == (32, 16)
    assert half.spine_switches == 8                       # 32 leaves x 16 up-ports / 64
    assert half.spine_bandwidth_per_node == pytest.approx(2e11)
    # whole SUs on each side: 64 nodes x 200 GB/s = 12.8 TB/s, half the non-blocking 25.6
    assert net.bisection_bandwidth(half) == pytest.approx(64 * 2e11)
    # inside one SU the leaves switch everything: unchanged
    assert net.bisection_bandwidth(half, 32) == pytest.approx(16 * 4e11)
    # 3 SUs: one whole SU crosses the spine (32 x 200 GB/s), the split SU its leaves (16 x 400)
    assert net.bisection_bandwidth(half, 96) == pytest.approx(32 * 2e11 + 16 * 4e11)
    assert net.bisection_bandwidth(POD, 96) == pytest.approx(48 * 4e11)
    node, leaf, spine = net.levels(half)
    assert spine.bandwidth_per_gpu == pytest.approx(2.5e10)


# --------------------------------------------------------------------------- collectives

def test_all_reduce_of_1_gb_over_256_h100s_hand_derived():
    cost = net.cluster_all_reduce(GB, SU, scheme="hierarchical")  # all 256 GPUs: 32 nodes x 8
    rs, ar, ag = cost.stages
    assert rs.bandwidth_time == pytest.approx(1e9 * 7 / 8 / 4.5e11)       # 1.944 ms, NVLink
    assert ar.bandwidth_time == pytest.approx(2 * 1.25e8 * 31 / 32 / 5e10)  # 4.844 ms, NICs
    assert ag.bandwidth_time == pytest.approx(1e9 * 7 / 8 / 4.5e11)
    assert cost.bandwidth_time == pytest.approx(0.0087326388889)           # 8.73 ms in turn
    assert cost.latency_time == pytest.approx((7 + 2 * 31 + 7) * 1e-6)     # 76 ring steps
    assert cost.time == pytest.approx(0.0087326388889 + 76e-6)
    # it is the collectives module's hierarchical AllReduce with the cluster's figures
    assert cost.time == pytest.approx(c.gpu_hierarchical_all_reduce(GB, 256, "H100").time)
    # pipelined: NVLink (3.89 ms) and NICs (4.84 ms) overlap, 2 V (M-1)/M / W_node
    fast = net.cluster_all_reduce(GB, SU, scheme="hierarchical", pipelined=True)
    assert fast.bandwidth_time == pytest.approx(2 * 1e9 * 31 / 32 / 4e11)   # 4.84375 ms
    assert fast.latency_time == pytest.approx(76e-6)


def test_rail_rings_over_one_su_are_nic_bound_hand_derived():
    # NCCL's default: 8 rings, one per rail; each node's 8 NICs carry 1/8 of the data each
    rail = net.cluster_all_reduce(GB, SU)
    assert rail.bandwidth_time == pytest.approx(2 * 1e9 * 255 / 256 / 4e11)  # 4.98 ms
    assert rail.latency_time == pytest.approx(2 * 255e-6)
    flat = net.cluster_all_reduce(GB, SU, scheme="flat")
    assert flat.bandwidth_time == pytest.approx(2 * 1e9 * 255 / 256 / 5e10)  # 39.8 ms
    with pytest.raises(ValueError, match="hierarchical"):
        net.cluster_all_reduce(GB, SU, pipelined=True)


def test_all_gather_over_the_superpod_hand_derived():
    cost = net.cluster_all_gather(GB, POD, scheme="hierarchical")  # 1024 GPUs in 128 nodes
    nic = (1e9 / 8) * 127 / 128 / 5e10       # 2.480 ms
    nvlink = 1e9 * 7 / 8 / 4.5e11            # 1.944 ms
    assert cost.bandwidth_time == pytest.approx(nic + nvlink)
    # pipelined: bytes (M-1)/M / W_node, HSYM part 12's "bytes / W_node" with its factor
    assert net.cluster_all_gather(GB, POD, scheme="hierarchical", pipelined=True).bandwidth_time \
        == pytest.approx(1e9 * 127 / 128 / 4e11)
    assert net.cluster_reduce_scatter(GB, POD, scheme="hierarchical").time == pytest.approx(cost.time)
    # inside one node only NVLink counts, and pipelining changes nothing
    node = net.cluster_all_gather(GB, POD, 8, scheme="hierarchical", pipelined=True)
    assert node.bandwidth_time == pytest.approx(1e9 * 7 / 8 / 4.5e11)


def test_ring_collectives_ignore_oversubscription():
    half = POD.replace(oversubscription=2)
    assert net.cluster_all_reduce(GB, half).time == pytest.approx(
        net.cluster_all_reduce(GB, POD).time)


def test_all_to_all_across_sus_feels_the_oversubscription():
    # within an SU: the collectives module's GPU AllToAll
    assert net.cluster_all_to_all(GB, SU).time == pytest.approx(
        c.gpu_all_to_all(GB, 256, "H100").time)
    full = net.cluster_all_to_all(GB, POD)
    nic_term = (1e9 / 1024) * 1016 / 1024 / 5e10     # leaves the node: 1.94e-5 s
    assert full.bandwidth_time == pytest.approx(nic_term)
    half = net.cluster_all_to_all(GB, POD.replace(oversubscription=2))
    spine_term = (1e9 / 1024) * 768 / 1024 / 2.5e10  # leaves the SU at 25 GB/s per GPU: 2.93e-5 s
    assert half.bandwidth_time == pytest.approx(spine_term)
    assert half.link_bandwidth == pytest.approx(2.5e10)


def test_vectorised_and_other_chips():
    sizes = np.array([1e3, 1e9])
    assert net.cluster_all_reduce(sizes, SU, scheme="hierarchical", pipelined=True).time.shape == (2,)
    assert net.cluster_all_to_all(sizes, POD.replace(oversubscription=2)).time.shape == (2,)
    b200 = SU.replace(name="B200 SU", chip="B200")
    assert b200.gpu_nvlink_bandwidth == pytest.approx(18 * 5e10)
    assert net.cluster_all_gather(GB, b200, 8).bandwidth_time == pytest.approx(1e9 * 7 / 8 / 9e11)
    slow = SU.replace(nvlink_bandwidth=3e11)
    assert net.levels(slow)[0].bandwidth_per_gpu == pytest.approx(3e11)
    # a problem's own chip figures travel with the Chip object
    own = SU.replace(chip=get_chip("H100").replace(links_per_chip=12))
    assert own.gpu_nvlink_bandwidth == pytest.approx(12 * 2.5e10)
    assert net.cluster_all_gather(GB, own, 8).bandwidth_time == pytest.approx(1e9 * 7 / 8 / 3e11)


def test_cluster_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SU.n_sus = 2


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, message", [
    (lambda: SU.replace(chip="v5e"), "not a GPU"),
    (lambda: SU.replace(chip="Z900"), "unknown chip"),
    (lambda: SU.replace(oversubscription=0.5), "oversubscription"),
    (lambda: SU.replace(oversubscription=float("inf")), "oversubscription"),
    (lambda: SU.replace(nodes_per_su=40), "ports"),
    (lambda: SU.replace(n_sus=9), "core"),
    (lambda: SU.replace(gpus_per_node=0), "gpus_per_node"),
    (lambda: SU.replace(nics_per_node=2.5), "nics_per_node"),
    (lambda: SU.replace(nic_bandwidth=-1), "nic_bandwidth"),
    (lambda: SU.replace(nvlink_bandwidth=0), "nvlink_bandwidth"),
    (lambda: SU.replace(colour="green"), "no field"),
    (lambda: net.bisection_bandwidth(SU, 0), "n_nodes"),
    (lambda: net.bisection_bandwidth(SU, 33), "more than"),
    (lambda: net.bisection_bandwidth(POD, 40), "multiple of 32"),
    (lambda: net.bisection_bandwidth(SU, both_directions="yes"), "both_directions"),
    (lambda: net.bisection_bandwidth(SU.replace(chip="V100"), 1), "NVSwitch"),
    (lambda: net.cluster_all_reduce(GB, SU, 512), "more than"),
    (lambda: net.cluster_all_reduce(GB, SU, 12), "multiple of 8"),
    (lambda: net.cluster_all_reduce(-1, SU), "nbytes"),
    (lambda: net.cluster_all_reduce(GB, "H100"), "ClusterNetwork"),
    (lambda: net.cluster_all_gather(GB, SU, pipelined=1), "pipelined"),
    (lambda: net.cluster_all_to_all(GB, POD, 264), "multiple of its 256"),
    (lambda: net.cluster_all_gather(GB, SU, hop_latency=-1), "hop_latency"),
])
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()

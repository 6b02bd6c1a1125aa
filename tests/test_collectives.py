"""Tests for scalebook.collectives: the alpha-beta cost model of collectives."""

import dataclasses

import numpy as np
import pytest

from scalebook import collectives as c
from scalebook.hardware import get_chip

V5E_LINK = 4.5e10  # one-way bytes/s per ICI link
H100_NVLINK = 18 * 2.5e10  # 450 GB/s egress per GPU, one way
H100_NIC = 5.0e10  # one 400 Gb/s NIC per GPU
GB = 1e9


# --------------------------------------------------------------------------- single axis, TPU

def test_all_gather_bidirectional_ring_formula():
    cost = c.all_gather(GB, 16, "v5e")
    assert cost.name == "AllGather"
    assert cost.n_devices == 16 and cost.nbytes == GB
    assert cost.link_bandwidth == V5E_LINK
    assert cost.bandwidth_time == pytest.approx(GB * 15 / 16 / (2 * V5E_LINK))
    assert cost.latency_time == pytest.approx(8 * 1e-6)  # N//2 hops
    assert cost.time == pytest.approx(cost.bandwidth_time + cost.latency_time)
    assert cost.regime == c.BANDWIDTH_BOUND
    # ≈ V / W_bidirectional for large N
    assert c.all_gather(GB, 1000, "v5e").bandwidth_time == pytest.approx(
        GB / get_chip("v5e").link_bandwidth_bidirectional, rel=1e-3)


def test_no_wraparound_doubles_bandwidth_term_and_uses_n_minus_1_hops():
    ring = c.all_gather(GB, 8, "v5p", wraparound=True)
    line = c.all_gather(GB, 8, "v5p", wraparound=False)
    assert line.bandwidth_time == pytest.approx(2 * ring.bandwidth_time)
    assert line.bandwidth_time == pytest.approx(GB * 7 / 8 / 9.0e10)
    assert ring.latency_time == pytest.approx(4e-6)
    assert line.latency_time == pytest.approx(7e-6)


def test_reduce_scatter_costs_the_same_as_all_gather():
    ag, rs = c.all_gather(3e8, 8, "v4p"), c.reduce_scatter(3e8, 8, "v4p")
    assert rs.name == "ReduceScatter"
    assert rs.time == pytest.approx(ag.time)


@pytest.mark.parametrize("wraparound", [True, False])
def test_all_reduce_is_twice_an_all_gather(wraparound):
    ag = c.all_gather(GB, 16, "v5e", wraparound=wraparound)
    ar = c.all_reduce(GB, 16, "v5e", wraparound=wraparound)
    assert ar.name == "AllReduce"
    assert ar.bandwidth_time == pytest.approx(2 * ag.bandwidth_time)
    assert ar.latency_time == pytest.approx(2 * ag.latency_time)
    assert ar.time == pytest.approx(2 * ag.time)


def test_all_to_all_is_a_quarter_of_all_gather_on_a_ring():
    # Convention: AllToAll keeps an exact byte-hop count, AllGather its (N-1)/N factor, so
    # AllToAll = AllGather / 4 x N/(N-1) for even N, and exactly V / (4 W_bidirectional).
    for n in (4, 8, 16):
        a2a, ag = c.all_to_all(GB, n, "v5e"), c.all_gather(GB, n, "v5e")
        assert a2a.bandwidth_time == pytest.approx(ag.bandwidth_time / 4 * n / (n - 1))
        assert a2a.bandwidth_time == pytest.approx(GB / (4 * 2 * V5E_LINK))
    # odd N: distances sum to (N^2 - 1)/4
    assert c.all_to_all(GB, 5, "v5e").bandwidth_time == pytest.approx(
        6 * GB / (2 * 25 * V5E_LINK))
    big = 512
    assert c.all_to_all(GB, big, "v5e").bandwidth_time == pytest.approx(
        c.all_gather(GB, big, "v5e").bandwidth_time / 4, rel=3e-3)


def test_all_to_all_without_wraparound_uses_the_middle_link():
    line = c.all_to_all(GB, 8, "v5e", wraparound=False)
    assert line.bandwidth_time == pytest.approx(GB / (4 * V5E_LINK))  # (N/2)^2 blocks of V/N^2
    assert line.bandwidth_time == pytest.approx(2 * c.all_to_all(GB, 8, "v5e").bandwidth_time)
    assert line.latency_time == pytest.approx(7e-6)


def test_ppermute_is_one_neighbour_send():
    cost = c.ppermute(1e8, "v5e")
    assert cost.bandwidth_time == pytest.approx(1e8 / V5E_LINK)
    assert cost.latency_time == pytest.approx(1e-6)
    assert c.ppermute(1e8, "v5e", n_devices=1).time == 0


def test_latency_bound_for_tiny_arrays_bandwidth_bound_for_large():
    assert c.all_gather(1e3, 16, "v5e").regime == c.LATENCY_BOUND
    assert c.all_gather(1e9, 16, "v5e").regime == c.BANDWIDTH_BOUND
    assert c.all_gather(0, 16, "v5e").time == pytest.approx(8e-6)


def test_one_device_costs_nothing():
    for function in (c.all_gather, c.reduce_scatter, c.all_reduce, c.all_to_all):
        cost = function(GB, 1, "v5e")
        assert cost.time == 0 and cost.regime == c.NO_COMMUNICATION


def test_bandwidth_and_latency_overrides():
    cost = c.all_gather(1e6, 4, bandwidth=1e10, hop_latency=0.0)
    assert cost.bandwidth_time == pytest.approx(1e6 * 3 / 4 / 2e10)
    assert cost.latency_time == 0
    assert c.all_gather(1e6, 4, "v5e", bandwidth=1e10).link_bandwidth == 1e10
    assert c.all_gather(1e6, 4, "v5e", hop_latency=5e-6).latency_time == pytest.approx(1e-5)


def test_vectorised_over_nbytes():
    sizes = np.array([1e3, 1e6, 1e9])
    cost = c.all_reduce(sizes, 16, "v5e")
    assert cost.time.shape == (3,)
    assert cost.bandwidth_time[2] == pytest.approx(c.all_reduce(1e9, 16, "v5e").bandwidth_time)
    assert list(cost.regime) == [c.LATENCY_BOUND, c.BANDWIDTH_BOUND, c.BANDWIDTH_BOUND]


def test_cost_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.all_gather(GB, 4, "v5e").time = 0


# --------------------------------------------------------------------------- several axes

def test_multi_axis_divides_time_by_number_of_axes():
    one = c.all_gather(GB, 16, "v5p")
    two = c.all_gather_multi_axis(GB, [4, 4], "v5p")
    three = c.all_gather_multi_axis(GB, [4, 4, 4], "v5p")
    assert two.n_devices == 16
    assert two.bandwidth_time == pytest.approx(one.bandwidth_time / 2)
    assert three.bandwidth_time == pytest.approx(GB * 63 / 64 / (3 * 2 * 9.0e10))
    assert two.latency_time == pytest.approx(4e-6)  # 2 + 2 hops
    assert c.all_gather_multi_axis(GB, [16], "v5p").time == pytest.approx(one.time)


def test_multi_axis_mixed_wraparound_and_size_one_axes():
    cost = c.all_gather_multi_axis(GB, [4, 8, 1], "v5p", wraparound=[True, False, True])
    assert cost.bandwidth_time == pytest.approx(GB * 31 / 32 / (2 * 9e10 + 9e10))
    assert cost.latency_time == pytest.approx((2 + 7) * 1e-6)


def test_multi_axis_reduce_scatter_and_all_reduce():
    ag = c.all_gather_multi_axis(GB, [4, 8], "v5p")
    assert c.reduce_scatter_multi_axis(GB, [4, 8], "v5p").time == pytest.approx(ag.time)
    assert c.all_reduce_multi_axis(GB, [4, 8], "v5p").time == pytest.approx(2 * ag.time)


# --------------------------------------------------------------------------- wraparound rules

@pytest.mark.parametrize("chip, size, shape, expected", [
    # whole 4x4x4 cubes are full tori; anything smaller has no wraparound at all
    ("v5p", 4, (4, 4, 4), True), ("v5p", 8, (4, 4, 8), True), ("v5p", 28, (16, 20, 28), True),
    ("v5p", 4, (2, 4, 4), False), ("v5p", 2, (2, 2, 1), False), ("v5p", 4, (4, 4, 1), False),
    ("v5p", 16, None, False), ("v5p", 4, None, False),
    ("v4p", 16, (4, 4, 16), True), ("v4p", 4, (2, 2, 4), False),
    ("v5e", 16, None, True), ("v5e", 8, None, False), ("v5e", 16, (8, 16), True),
    ("v5e", 8, (8, 16), False),
    ("v6e", 16, None, True), ("v6e", 12, None, False),
    ("v3", 32, None, True), ("v3", 16, (16, 32), False),
])
def test_has_wraparound(chip, size, shape, expected):
    assert c.has_wraparound(chip, size, shape) is expected


def test_has_wraparound_rejects_gpus_and_oversized_axes():
    with pytest.raises(ValueError, match="no ICI torus"):
        c.has_wraparound("H100", 8)
    with pytest.raises(ValueError, match="largest slice"):
        c.has_wraparound("v5e", 32)
    with pytest.raises(ValueError, match="axis_size"):
        c.has_wraparound("v5e", 0)


# --------------------------------------------------------------------------- GPUs

def test_gpu_in_node_collectives():
    ag = c.gpu_all_gather(GB, 8, "H100")
    assert ag.bandwidth_time == pytest.approx(GB * 7 / 8 / H100_NVLINK)
    assert ag.latency_time == pytest.approx(7e-6)
    assert ag.link_bandwidth == H100_NVLINK
    assert c.gpu_reduce_scatter(GB, 8, "H100").time == pytest.approx(ag.time)
    ar = c.gpu_all_reduce(GB, 8, "H100")
    assert ar.bandwidth_time == pytest.approx(2 * ag.bandwidth_time)
    a2a = c.gpu_all_to_all(GB, 8, "H100")
    assert a2a.bandwidth_time == pytest.approx(ag.bandwidth_time / 8)
    assert a2a.latency_time == pytest.approx(1e-6)


def test_gpu_hierarchical_all_reduce():
    cost = c.gpu_hierarchical_all_reduce(GB, 64, "H100")  # 8 nodes x 8 GPUs
    rs, ar, ag = cost.stages
    assert rs.bandwidth_time == pytest.approx(GB * 7 / 8 / H100_NVLINK)
    assert ar.nbytes == pytest.approx(GB / 8)
    assert ar.bandwidth_time == pytest.approx(2 * (GB / 8) * 7 / 8 / H100_NIC)
    assert ag.bandwidth_time == pytest.approx(rs.bandwidth_time)
    expected = 2 * GB * 7 / 8 / H100_NVLINK + 2 * GB / 8 * 7 / 8 / H100_NIC
    assert cost.bandwidth_time == pytest.approx(expected)
    assert cost.time == pytest.approx(sum(stage.time for stage in cost.stages))
    assert cost.link_bandwidth == H100_NIC  # the slowest stage
    assert c.gpu_all_reduce(GB, 64, "H100", scheme="hierarchical").time == pytest.approx(cost.time)
    # one node: the NIC stage costs nothing
    assert c.gpu_hierarchical_all_reduce(GB, 8, "H100").stages[1].time == 0


def test_gpu_hierarchical_all_gather_and_overrides():
    cost = c.gpu_all_gather(GB, 32, "H100", scheme="hierarchical")  # 4 nodes
    expected = GB / 8 * 3 / 4 / H100_NIC + GB * 7 / 8 / H100_NVLINK
    assert cost.bandwidth_time == pytest.approx(expected)
    assert c.gpu_reduce_scatter(GB, 32, "H100", scheme="hierarchical").time == pytest.approx(
        cost.time)
    fast = c.gpu_all_gather(GB, 8, "H100", nvlink_bandwidth=9e11)
    assert fast.bandwidth_time == pytest.approx(GB * 7 / 8 / 9e11)
    nvl72 = c.gpu_all_gather(GB, 72, "B200", gpus_per_node=72)
    assert nvl72.bandwidth_time == pytest.approx(GB * 71 / 72 / (18 * 5e10))


def test_rail_aligned_all_reduce_of_1_gb_over_32_h100s_is_4_8_ms():
    """NCCL runs one ring per NIC rail, each with 1/8 of the data: every NIC of a node carries
    one ring's share at once. Hand-derived: 2·V·(N−1)/N / (8 NICs × 50 GB/s) = 4.84 ms, beside
    the serial hierarchical model's 7.66 ms and one flat ring's 38.8 ms (old default: 7.66)."""
    rail = c.gpu_all_reduce(GB, 32, "H100")
    assert rail.bandwidth_time == pytest.approx(2 * GB * 31 / 32 / (8 * H100_NIC))
    assert rail.bandwidth_time == pytest.approx(4.84375e-3)
    assert rail.latency_time == pytest.approx(2 * 31e-6)
    hier = c.gpu_all_reduce(GB, 32, "H100", scheme="hierarchical")
    flat = c.gpu_all_reduce(GB, 32, "H100", scheme="flat")
    assert hier.bandwidth_time == pytest.approx(2 * GB * 7 / 8 / H100_NVLINK
                                                + 2 * GB / 8 * 3 / 4 / H100_NIC)  # 7.60 ms
    assert flat.bandwidth_time == pytest.approx(2 * GB * 31 / 32 / H100_NIC)  # 38.75 ms
    assert rail.time < hier.time < flat.time
    # the NVLink share (7/8 of the bytes at 450 GB/s) wins when NICs are fast enough
    fast = c.gpu_all_gather(GB, 16, "H100", nic_bandwidth=4e11)
    assert fast.bandwidth_time == pytest.approx(GB * 15 / 16 * 7 / 8 / H100_NVLINK)
    # one group member per node: the rings degenerate to one NIC each, a flat ring
    spread = c.gpu_all_gather(GB, 4, "H100", gpus_per_node=1)
    assert spread.bandwidth_time == pytest.approx(GB * 3 / 4 / H100_NIC)


def test_collective_cost_is_the_one_entry_point():
    # TPU: real slice axes, wraparound from the chip's rule. v5e 4x2: both axes are lines.
    cost = c.collective_cost("AllReduce", GB, [4, 2], "v5e")
    assert cost.bandwidth_time == pytest.approx(2 * GB * 7 / 8 / (4.5e10 + 4.5e10))
    assert cost.time == pytest.approx(
        c.all_reduce_multi_axis(GB, [4, 2], "v5e", wraparound=False).time)
    # a v5e axis of 16 is a ring, of 4 a line; a v5p group of 4 (the slice 4x1x1) is a
    # line, a whole v5p cube 4x4x4 a torus
    assert c.collective_cost("AllGather", GB, 16, "v5e").formula == "V·(N−1)/N / (2·W)"
    assert c.collective_cost("AllGather", GB, 4, "v5e").formula == "V·(N−1)/N / (W)"
    assert c.collective_cost("AllGather", GB, 4, "v5p").formula == "V·(N−1)/N / (W)"
    assert c.collective_cost("AllGather", GB, [4, 4, 4], "v5p").formula == \
        "V·(N−1)/N / (2·W + 2·W + 2·W)"
    assert c.collective_cost("all_to_all", GB, [1, 8], "v5p").time == pytest.approx(
        c.all_to_all(GB, 8, "v5p", wraparound=False).time)
    assert c.collective_cost("ppermute", GB, 4, "v5e").time == pytest.approx(
        c.ppermute(GB, "v5e", n_devices=4).time)
    # GPU: the ring is one algorithm of several; in a node NVLink, across nodes rail rings
    assert c.collective_time("AllReduce", GB, 8, "H100", algorithm="ring") == pytest.approx(
        c.gpu_all_reduce(GB, 8, "H100").time)
    assert c.collective_time("AllReduce", GB, [8, 4], "H100", algorithm="ring") == \
        pytest.approx(c.gpu_all_reduce(GB, 32, "H100").time)
    assert c.collective_cost("ppermute", GB, 16, "H100").bandwidth_time == pytest.approx(
        GB / H100_NIC)
    # DCN: one device per host, each chip at host bandwidth / chips per host (v5p: 6.25 GB/s)
    dcn = c.collective_cost("AllReduce", GB, 4, "v5p", network="dcn")
    assert dcn.bandwidth_time == pytest.approx(2 * GB * 3 / 4 / 6.25e9)
    assert c.collective_cost("AllReduce", GB, 1, "v5p", network="dcn").time == 0


@pytest.mark.parametrize("call, message", [
    (lambda: c.collective_cost("Broadcast", GB, 4, "v5e"), "unknown collective"),
    (lambda: c.collective_cost("AllGather", GB, 4, "v5e", network="pcie"), "network"),
    (lambda: c.collective_cost("AllGather", GB, 4, "v5e", gpus_per_node=4), "GPU nodes"),
    (lambda: c.collective_cost("AllGather", GB, 4, "H100", wraparound=True), "TPU axis"),
    (lambda: c.collective_cost("AllGather", GB, 4, "H100", scheme="tree"), "scheme"),
    (lambda: c.collective_cost("ppermute", GB, [4, 4], "v5p"), "one torus axis"),
    (lambda: c.collective_cost("AllGather", GB, 32, "v5e"), "largest slice"),
    (lambda: c.collective_cost("AllGather", GB, 4, "v5e", network="dcn", wraparound=True),
     "data-centre"),
    (lambda: c.collective_cost("AllGather", GB, 12, "H100"), "multiple of 8"),
])
def test_collective_cost_rejects_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_collective_cost_refuses_a_chip_without_interconnect():
    lone = get_chip("H100").replace(interconnect=None, name="lone", nics_per_host=None)
    assert c.collective_time("AllReduce", GB, 1, lone) == 0
    with pytest.raises(ValueError, match="no interconnect"):
        c.collective_cost("AllReduce", GB, 2, lone)


def test_gpu_all_to_all_across_nodes_is_nic_bound():
    cost = c.gpu_all_to_all(GB, 16, "H100")
    assert cost.bandwidth_time == pytest.approx((GB / 16) * 8 / 16 / H100_NIC)


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, message", [
    (lambda: c.all_gather(-1, 4, "v5e"), "nbytes"),
    # plain ints and floats take a fast path (no numpy): the same refusals hold there
    (lambda: c.all_gather(float("nan"), 4, "v5e"), "nbytes"),
    (lambda: c.all_gather(float("inf"), 4, "v5e"), "nbytes"),
    (lambda: c.all_gather(-1e-9, 4, "v5e"), "nbytes"),
    (lambda: c.all_gather(True, 4, "v5e"), "nbytes"),
    (lambda: c.collective_cost("AllReduce", float("nan"), 8, "H100"), "nbytes"),
    (lambda: c.collective_cost("AllReduce", 1e6, 0, "H100"), "axis size must be an integer"),
    (lambda: c.collective_cost("AllReduce", 1e6, 8.5, "H100"), "sequence of integers"),
    (lambda: c.gpu_all_reduce(1e6, 8, "H100", nic_bandwidth=float("inf")), "nic_bandwidth"),
    (lambda: c.gpu_all_reduce(1e6, 8, "H100", nic_bandwidth=float("nan")), "nic_bandwidth"),
    (lambda: c.all_gather(1e6, 4, "v5e", hop_latency=float("nan")), "hop_latency"),
    (lambda: c.all_gather(1e6, 4, "v5e", hop_latency=float("inf")), "hop_latency"),
    (lambda: c.all_gather(np.array([1.0, -2.0]), 4, "v5e"), "nbytes"),
    (lambda: c.all_gather("big", 4, "v5e"), "nbytes"),
    (lambda: c.all_gather(1e6, 0, "v5e"), "n_devices"),
    (lambda: c.all_gather(1e6, 2.5, "v5e"), "n_devices"),
    (lambda: c.all_gather(1e6, True, "v5e"), "n_devices"),
    (lambda: c.all_gather(1e6, 4, "v9z"), "unknown chip"),
    (lambda: c.all_gather(1e6, 4), "bandwidth"),
    (lambda: c.all_gather(1e6, 4, "v5e", bandwidth=0), "bandwidth"),
    (lambda: c.all_gather(1e6, 4, "v5e", hop_latency=-1), "hop_latency"),
    (lambda: c.all_gather(1e6, 4, "H100"), "GPU"),
    (lambda: c.all_gather_multi_axis(1e6, [], "v5e"), "empty"),
    (lambda: c.all_gather_multi_axis(1e6, [4, 0], "v5e"), "axis size"),
    (lambda: c.all_gather_multi_axis(1e6, [4, 4], "v5e", wraparound=[True]), "one per axis"),
    (lambda: c.gpu_all_gather(1e6, 8, "v5e"), "not a GPU"),
    (lambda: c.gpu_all_gather(1e6, 12, "H100"), "multiple of 8"),
    (lambda: c.gpu_hierarchical_all_reduce(1e6, 4, "H100"), "less than one node"),
    (lambda: c.gpu_all_reduce(1e6, 8, "H100", nic_bandwidth=-5), "nic_bandwidth"),
])
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------- rings vs lines

def _link_loads(n, topology):
    """Bytes each directed link of an n-chip axis carries in an AllToAll of V = n*n (one byte per
    block), routing each block the shortest allowed way (ties on a ring split half each way)."""
    loads = {}

    def walk(i, steps, step, amount):
        for _ in range(steps):
            j = (i + step) % n
            loads[(i, j)] = loads.get((i, j), 0) + amount
            i = j

    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            forward = (j - i) % n
            if topology == "line":
                walk(i, abs(j - i), 1 if j > i else -1, 1.0)
            elif topology == "unidirectional":
                walk(i, forward, 1, 1.0)
            elif 2 * forward < n:
                walk(i, forward, 1, 1.0)
            elif 2 * forward > n:
                walk(i, n - forward, -1, 1.0)
            else:
                walk(i, forward, 1, 0.5)
                walk(i, forward, -1, 0.5)
    return max(loads.values())


@pytest.mark.parametrize("n", [4, 5, 8, 9])
@pytest.mark.parametrize("topology", ["bidirectional", "unidirectional", "line"])
def test_all_to_all_matches_busiest_link_of_a_brute_force_routing(n, topology):
    # V = n^2 bytes, so each block is 1 byte; the busiest link's bytes / W is the bandwidth term
    wraparound = topology != "line"
    direction = "unidirectional" if topology == "unidirectional" else "bidirectional"
    cost = c.all_to_all(n * n, n, bandwidth=1.0, wraparound=wraparound, direction=direction)
    assert cost.bandwidth_time == pytest.approx(_link_loads(n, topology))


def test_three_topologies_for_an_all_gather():
    # 1 GB over 16 v5e chips, W = 4.5e10 B/s one way per link
    bi = c.all_gather(GB, 16, "v5e", direction="bidirectional")
    uni = c.all_gather(GB, 16, "v5e", direction="unidirectional")
    line = c.all_gather(GB, 16, "v5e", wraparound=False)
    assert bi.bandwidth_time == pytest.approx(GB * 15 / 16 / (2 * V5E_LINK))  # 1.042e-2 s
    assert uni.bandwidth_time == pytest.approx(GB * 15 / 16 / V5E_LINK)       # 2.083e-2 s
    assert line.bandwidth_time == pytest.approx(uni.bandwidth_time)
    assert bi.latency_time == pytest.approx(8e-6)     # N//2 hops
    assert uni.latency_time == pytest.approx(15e-6)   # N-1 hops one way round
    assert line.latency_time == pytest.approx(15e-6)  # N-1 hops end to end
    assert uni.formula == "V·(N−1)/N / W"
    # the default is the bidirectional ring it always was
    assert c.all_gather(GB, 16, "v5e").time == pytest.approx(bi.time)
    # direction means nothing on a line
    assert c.all_gather(GB, 16, "v5e", wraparound=False, direction="unidirectional").time \
        == pytest.approx(line.time)


def test_unidirectional_ring_reduce_scatter_all_reduce_and_all_to_all():
    rs = c.reduce_scatter(GB, 8, "v5e", direction="unidirectional")
    assert rs.bandwidth_time == pytest.approx(GB * 7 / 8 / V5E_LINK)
    ar = c.all_reduce(GB, 8, "v5e", direction="unidirectional")
    assert ar.bandwidth_time == pytest.approx(2 * GB * 7 / 8 / V5E_LINK)
    assert ar.latency_time == pytest.approx(2 * 7e-6)
    a2a = c.all_to_all(GB, 8, "v5e", direction="unidirectional")
    assert a2a.bandwidth_time == pytest.approx(GB * 7 / (2 * 8 * V5E_LINK))  # V(N-1)/(2NW): 9.7 ms
    assert a2a.latency_time == pytest.approx(7e-6)
    # V(N-1)/(2NW) against V/(8W) (bidirectional ring) and V/(4W) (line): 4(N-1)/N and 2(N-1)/N
    assert a2a.bandwidth_time == pytest.approx(
        4 * 7 / 8 * c.all_to_all(GB, 8, "v5e").bandwidth_time)
    assert a2a.bandwidth_time == pytest.approx(
        2 * 7 / 8 * c.all_to_all(GB, 8, "v5e", wraparound=False).bandwidth_time)


def test_multi_axis_direction_per_axis():
    cost = c.all_gather_multi_axis(GB, [4, 8], "v5p", direction=["bidirectional", "unidirectional"])
    assert cost.bandwidth_time == pytest.approx(GB * 31 / 32 / (2 * 9e10 + 9e10))
    assert cost.latency_time == pytest.approx((2 + 7) * 1e-6)
    assert cost.formula == "V·(N−1)/N / (2·W + W)"
    uni = c.all_reduce_multi_axis(GB, [4, 4], "v5p", direction="unidirectional")
    assert uni.bandwidth_time == pytest.approx(2 * GB * 15 / 16 / (2 * 9e10))
    assert c.reduce_scatter_multi_axis(GB, [4, 4], "v5p", direction="unidirectional").time \
        == pytest.approx(uni.time / 2)


# --------------------------------------------------------------------------- point to point

HW2_ARRAY = 16 * 512 * 4096 * 2  # bf16[16, 512, 4096] = 67,108,864 bytes (homework 2, problem 5)


def test_point_to_point_reproduces_homework_2_problem_5():
    # (a) one hop to a neighbour: V / W + 1 µs
    near = c.point_to_point(HW2_ARRAY, 0, 1, 16, "v5e")
    assert near.time == pytest.approx(HW2_ARRAY / 4.5e10 + 1e-6)  # 1.492 ms
    assert near.time == pytest.approx(c.ppermute(HW2_ARRAY, "v5e").time)
    # (c) chip 0 to chip 8 on a 16-ring: 8 hops both ways round, half of A each way
    ring = c.point_to_point(HW2_ARRAY, 0, 8, 16, "v5e", multipath=True)
    assert (ring.hops, ring.paths) == (8, 2)
    assert ring.time == pytest.approx(HW2_ARRAY / 2 / 4.5e10 + 8e-6)  # 0.754 ms
    # (d) chip 0 to chip 7 on a line of 8: one 7-hop path
    line = c.point_to_point(HW2_ARRAY, 0, 7, 8, "v5e", wraparound=False, multipath=True)
    assert (line.hops, line.paths) == (7, 1)
    assert line.time == pytest.approx(HW2_ARRAY / 4.5e10 + 7e-6)  # 1.498 ms


def test_point_to_point_on_a_3d_torus_hand_derived():
    V = 1e8
    # 8x8x8 v5p torus, (0,0,0) -> (7,4,2): hops min(7,1)=1, min(4,4)=4, min(2,6)=2, so 7 in all
    t = c.point_to_point(V, (0, 0, 0), (7, 4, 2), (8, 8, 8), "v5p")
    assert t.hops_per_axis == (1, 4, 2) and t.hops == 7
    assert t.first_byte_time == pytest.approx(7e-6)        # 7 hops x 1 µs
    assert t.bandwidth_time == pytest.approx(V / 9e10)     # one route, one link: 1.11e-3 s
    assert t.time == pytest.approx(V / 9e10 + 7e-6)
    # every link-disjoint shortest route: 1 + 2 (halfway round axis 1) + 1 = 4
    multi = c.point_to_point(V, (0, 0, 0), (7, 4, 2), (8, 8, 8), "v5p", multipath=True)
    assert multi.paths == 4
    assert multi.bandwidth_time == pytest.approx(V / (4 * 9e10))  # 2.78e-4 s
    assert multi.formula == "V / (4·W)"
    # without wraparound the route is |d| along each axis: 7 + 4 + 2
    line = c.point_to_point(V, (0, 0, 0), (7, 4, 2), (8, 8, 8), "v5p", wraparound=False)
    assert line.hops == 13 and line.first_byte_time == pytest.approx(13e-6)
    mixed = c.point_to_point(V, (0, 0, 0), (7, 4, 2), (8, 8, 8), "v5p",
                             wraparound=[True, False, True])
    assert mixed.hops_per_axis == (1, 4, 2)
    assert c.torus_hops((0, 0, 0), (7, 4, 2), (8, 8, 8), wraparound=[False, True, True]) \
        == (7, 4, 2)


def test_point_to_point_unidirectional_ring_goes_forwards_only():
    assert c.point_to_point(1e6, 1, 2, 8, "v5e", direction="unidirectional").hops == 1
    back = c.point_to_point(1e6, 2, 1, 8, "v5e", direction="unidirectional")
    assert back.hops == 7                       # (1 - 2) mod 8
    assert c.point_to_point(1e6, 2, 1, 8, "v5e").hops == 1
    # one way round there is never a second route
    assert c.point_to_point(1e6, 0, 4, 8, "v5e", direction="unidirectional",
                            multipath=True).paths == 1


def test_point_to_point_same_chip_overrides_and_arrays():
    same = c.point_to_point(1e9, (3, 3), (3, 3), (4, 4), "v5e")
    assert same.time == 0 and same.hops == 0 and same.regime == c.NO_COMMUNICATION
    t = c.point_to_point(1e6, 0, 3, 8, bandwidth=1e10, hop_latency=2e-6)
    assert t.time == pytest.approx(1e6 / 1e10 + 3 * 2e-6)
    assert t.link_bandwidth == 1e10
    small = c.point_to_point(1e3, 0, 8, 16, "v5e")
    assert small.regime == c.LATENCY_BOUND
    sizes = np.array([1e3, 1e9])
    assert c.point_to_point(sizes, 0, 2, 16, "v5e").time.shape == (2,)
    # a 2-chip axis has one pair of links: one route, whatever the wraparound flag
    assert c.point_to_point(1e6, 0, 1, 2, "v5e", multipath=True).paths == 1


def _max_flow_routes(sizes, wraps, src, dst):
    """Link-disjoint shortest routes from src to dst, counted by max-flow (unit link capacity)."""
    import itertools

    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow, shortest_path

    nodes = list(itertools.product(*[range(n) for n in sizes]))
    index = {node: i for i, node in enumerate(nodes)}
    links = set()
    for node in nodes:
        for axis, (n, wrap) in enumerate(zip(sizes, wraps)):
            for step in (1, -1):
                to = node[axis] + step
                if wrap:
                    to %= n
                if n > 1 and 0 <= to < n:
                    other = node[:axis] + (to,) + node[axis + 1:]
                    links.add((index[node], index[other]))
    rows, cols = zip(*sorted(links))
    size = len(nodes)
    dist = shortest_path(csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(size, size)),
                         unweighted=True)
    s, t = index[src], index[dst]
    useful = [(u, v) for u, v in links if dist[s, u] + 1 + dist[v, t] == dist[s, t]]
    r, q = zip(*useful)
    graph = csr_matrix((np.ones(len(r), dtype=np.int32), (r, q)), shape=(size, size))
    return maximum_flow(graph, s, t).flow_value


@pytest.mark.parametrize("sizes, wraps", [
    ((8,), (True,)), ((6,), (False,)), ((4, 4), (True, True)), ((4, 6), (True, False)),
    ((2, 4), (True, True)), ((4, 4, 4), (True, True, True)), ((3, 4, 2), (False, True, True)),
])
def test_multipath_count_equals_max_flow_over_shortest_routes(sizes, wraps):
    import itertools

    chips = list(itertools.product(*[range(n) for n in sizes]))
    src = chips[0]
    for dst in chips[1:]:
        t = c.point_to_point(1.0, src, dst, sizes, bandwidth=1.0, wraparound=list(wraps),
                             multipath=True)
        assert t.paths == _max_flow_routes(sizes, wraps, src, dst), (src, dst)


# --------------------------------------------------------------------------- first cut

def test_first_cut_all_gather_drops_the_factor_and_takes_the_max():
    cost = c.all_gather_first_cut(GB, 16, "v5e")
    assert cost.name == "AllGather (first cut)" and cost.combine == "max"
    assert cost.bandwidth_time == pytest.approx(GB / (2 * V5E_LINK))  # 1e9 / 9e10 = 11.1 ms
    assert cost.latency_time == pytest.approx(8e-6)
    assert cost.time == pytest.approx(GB / (2 * V5E_LINK))           # max, not sum
    exact = c.all_gather(GB, 16, "v5e")
    assert cost.bandwidth_time == pytest.approx(exact.bandwidth_time * 16 / 15)  # N/(N-1)
    # small message: latency wins outright (exact adds 1e3 * 15/16 / 9e10 on top)
    tiny = c.all_gather_first_cut(1e3, 16, "v5e")
    assert tiny.time == pytest.approx(8e-6) and tiny.regime == c.LATENCY_BOUND
    # equal terms: the max is half the sum
    equal = c.all_gather_first_cut(8e-6 * 2 * V5E_LINK, 16, "v5e")
    assert equal.time == pytest.approx((equal.bandwidth_time + equal.latency_time) / 2)


def test_first_cut_line_and_unidirectional_and_all_reduce():
    assert c.all_gather_first_cut(GB, 8, "v5e", wraparound=False).bandwidth_time \
        == pytest.approx(GB / V5E_LINK)
    assert c.all_gather_first_cut(GB, 8, "v5e", direction="unidirectional").bandwidth_time \
        == pytest.approx(GB / V5E_LINK)
    rs = c.reduce_scatter_first_cut(GB, 8, "v5e")
    assert rs.name == "ReduceScatter (first cut)"
    assert rs.time == pytest.approx(c.all_gather_first_cut(GB, 8, "v5e").time)
    ar = c.all_reduce_first_cut(GB, 8, "v5e")
    assert ar.bandwidth_time == pytest.approx(GB / V5E_LINK)  # 2V / 2W = 22.2 ms
    assert ar.latency_time == pytest.approx(2 * 4e-6)
    assert ar.time == pytest.approx(GB / V5E_LINK) and ar.combine == "max"


def test_first_cut_all_to_all():
    # even N on a ring: V / (8W) is already the exact bandwidth term
    assert c.all_to_all_first_cut(GB, 8, "v5e").bandwidth_time == pytest.approx(GB / (8 * V5E_LINK))
    assert c.all_to_all_first_cut(GB, 8, "v5e").bandwidth_time == pytest.approx(
        c.all_to_all(GB, 8, "v5e").bandwidth_time)
    # odd N: N^2/(N^2-1) times the exact term
    assert c.all_to_all_first_cut(GB, 5, "v5e").bandwidth_time == pytest.approx(
        c.all_to_all(GB, 5, "v5e").bandwidth_time * 25 / 24)
    assert c.all_to_all_first_cut(GB, 8, "v5e", wraparound=False).bandwidth_time \
        == pytest.approx(GB / (4 * V5E_LINK))
    uni = c.all_to_all_first_cut(GB, 8, "v5e", direction="unidirectional")
    assert uni.bandwidth_time == pytest.approx(GB / (2 * V5E_LINK))
    assert uni.formula == "V / (2·W)"


@pytest.mark.parametrize("function, exact", [
    (c.all_gather_first_cut, c.all_gather), (c.reduce_scatter_first_cut, c.reduce_scatter),
    (c.all_reduce_first_cut, c.all_reduce),
])
@pytest.mark.parametrize("n", [2, 3, 16, 64])
def test_first_cut_stays_within_its_stated_bounds(function, exact, n):
    # first/exact = max(b N/(N-1), l) / (b + l) lies in [N/(2N-1), N/(N-1)]; the low end is
    # where the two first-cut terms are equal (then the exact sum is l (N-1)/N + l)
    sizes = np.logspace(0, 11, 45)
    for kwargs in ({}, {"wraparound": False}, {"direction": "unidirectional"}):
        ratio = function(sizes, n, "v5e", **kwargs).time / exact(sizes, n, "v5e", **kwargs).time
        assert np.all(ratio >= n / (2 * n - 1) - 1e-12) and np.all(ratio <= n / (n - 1) + 1e-12)
        probe = function(1.0, n, "v5e", **kwargs)
        crossover = probe.latency_time / probe.bandwidth_time  # bytes where the terms are equal
        at = (function(crossover, n, "v5e", **kwargs).time
              / exact(crossover, n, "v5e", **kwargs).time)
        assert at == pytest.approx(n / (2 * n - 1))


def test_first_cut_one_device_and_arrays():
    assert c.all_reduce_first_cut(GB, 1, "v5e").time == 0
    assert c.all_to_all_first_cut(GB, 1, "v5e").regime == c.NO_COMMUNICATION
    cost = c.all_gather_first_cut(np.array([1e3, 1e9]), 16, "v5e")
    assert list(cost.regime) == [c.LATENCY_BOUND, c.BANDWIDTH_BOUND]
    assert cost.time[0] == pytest.approx(8e-6)
    with pytest.raises(ValueError, match="combine"):
        c.CollectiveCost("x", 2, 1.0, 1.0, 1.0, 1.0, combine="mean")


# --------------------------------------------------------------------------- ragged AllToAll

# The book's expert-parallel example: 64 experts on 64 v5p chips, top-2, 8192 tokens per chip,
# D = 4096 in bf16, so d = 8192 bytes per token and T = 64 * 8192 tokens.
MOE_T, MOE_D, MOE_K, MOE_E = 64 * 8192, 4096 * 2, 2, 64


def test_ragged_all_to_all_hand_derived():
    r = c.ragged_all_to_all(MOE_T, MOE_D, MOE_K, MOE_E, 64, "v5p")
    assert r.ragged.nbytes == pytest.approx(2 * 524288 * 8192)      # k*T*d = 8.59e9 bytes
    assert r.sent_per_device == pytest.approx(2 * 8192 * 8192 * 63 / 64)  # 1.32e8 bytes
    assert r.copies_per_token == pytest.approx(2 * 63 / 64)
    # an AllToAll of V on a 64-ring: V / (8 W) = 8.59e9 / 7.2e11 = 11.9 ms, 32 hops
    assert r.ragged.bandwidth_time == pytest.approx(8.589934592e9 / (8 * 9e10))
    assert r.ragged.latency_time == pytest.approx(32e-6)
    # the same number the book computes by hand (all_to_all of dispatch * E)
    dispatch = 8192 * 2 * 4096 * 2
    assert r.ragged.time == pytest.approx(c.all_to_all(dispatch * 64, 64, "v5p").time)
    # dense: the full [T, E, d] dispatch array, E/k = 32 times the bytes
    assert r.dense.nbytes == pytest.approx(64 * 524288 * 8192)
    assert r.dense_sent_per_device == pytest.approx(64 * 8192 * 8192 * 63 / 64)
    assert r.ratio == pytest.approx(32)
    assert r.dense.bandwidth_time == pytest.approx(32 * r.ragged.bandwidth_time)


def test_ragged_all_to_all_capacity_factor_and_top1():
    r = c.ragged_all_to_all(MOE_T, MOE_D, MOE_K, MOE_E, 64, "v5p", capacity_factor=1.25)
    # C = 1.25 * k * (T/N) / E slots per expert: dense moves 1.25x the ragged bytes
    assert r.ratio == pytest.approx(1.25)
    top1 = c.ragged_all_to_all(MOE_T, MOE_D, 1, MOE_E, 64, "v5p")
    assert top1.ragged.bandwidth_time == pytest.approx(
        c.ragged_all_to_all(MOE_T, MOE_D, 2, MOE_E, 64, "v5p").ragged.bandwidth_time / 2)


@pytest.mark.parametrize("experts, devices, k", [(4, 2, 2), (8, 4, 3), (8, 8, 2), (6, 3, 1)])
def test_ragged_expectations_match_enumerating_every_routing(experts, devices, k):
    import itertools

    per = experts // devices
    home = 0  # a token on device 0; expert e lives on device e // per
    choices = list(itertools.combinations(range(experts), k))
    copies = np.mean([sum(e // per != home for e in pick) for pick in choices])
    distinct = np.mean([len({e // per for e in pick} - {home}) for pick in choices])
    plain = c.ragged_all_to_all(devices * 4, 10.0, k, experts, devices, bandwidth=1.0)
    dedup = c.ragged_all_to_all(devices * 4, 10.0, k, experts, devices, bandwidth=1.0,
                                deduplicate=True)
    assert plain.copies_per_token == pytest.approx(copies)
    assert dedup.copies_per_token == pytest.approx(distinct)
    assert dedup.sent_per_device == pytest.approx(distinct * 4 * 10.0)
    # the AllToAll of ragged.nbytes sends exactly sent_per_device from each device
    assert dedup.ragged.nbytes / devices * (devices - 1) / devices == pytest.approx(
        dedup.sent_per_device)


def test_ragged_all_to_all_deduplicate_hand_derived():
    # E = 16 on N = 4 (4 per device), k = 2: P(a device holds one of the token's experts)
    # = 1 - C(12, 2)/C(16, 2) = 1 - 66/120 = 0.45, so V = T*d*N*0.45 = 1.8 T*d (vs 2 T*d)
    r = c.ragged_all_to_all(400, 100.0, 2, 16, 4, "v5e", deduplicate=True)
    assert r.ragged.nbytes == pytest.approx(1.8 * 400 * 100.0)
    assert r.copies_per_token == pytest.approx(3 * 0.45)


def test_ragged_all_to_all_on_gpus():
    r = c.ragged_all_to_all(16 * 1024, 8192, 2, 16, 16, "H100")
    V = 2 * 16 * 1024 * 8192
    assert r.ragged.time == pytest.approx(c.gpu_all_to_all(V, 16, "H100").time)
    assert r.ragged.bandwidth_time == pytest.approx((V / 16) * 8 / 16 / H100_NIC)
    one_node = c.ragged_all_to_all(8 * 1024, 8192, 2, 8, 8, "H100", nvlink_bandwidth=9e11)
    assert one_node.ragged.bandwidth_time == pytest.approx(
        (2 * 8 * 1024 * 8192 / 8) * 7 / 8 / 9e11)


# --------------------------------------------------------------------------- bad input (new)

@pytest.mark.parametrize("call, message", [
    (lambda: c.all_gather(1e6, 4, "v5e", direction="sideways"), "direction"),
    (lambda: c.all_to_all(1e6, 4, "v5e", direction=None), "direction"),
    (lambda: c.all_gather_multi_axis(1e6, [4, 4], "v5e", direction=["bidirectional"]),
     "one per axis"),
    (lambda: c.point_to_point(1e6, (0, 0), (1,), (4, 4), "v5e"), "one per axis"),
    (lambda: c.point_to_point(1e6, (0, 4), (1, 1), (4, 4), "v5e"), "from 0 to axis size"),
    (lambda: c.point_to_point(1e6, (0, -1), (1, 1), (4, 4), "v5e"), "from 0 to axis size"),
    (lambda: c.point_to_point(1e6, (0, True), (1, 1), (4, 4), "v5e"), "from 0 to axis size"),
    (lambda: c.point_to_point(1e6, "00", (1, 1), (4, 4), "v5e"), "src"),
    (lambda: c.point_to_point(1e6, 0, 1, 0, "v5e"), "axis size"),
    (lambda: c.point_to_point(1e6, 0, 1, [], "v5e"), "empty"),
    (lambda: c.point_to_point(-1, 0, 1, 4, "v5e"), "nbytes"),
    (lambda: c.point_to_point(1e6, 0, 1, 4, "H100"), "GPU"),
    (lambda: c.point_to_point(1e6, 0, 1, 4), "bandwidth"),
    (lambda: c.point_to_point(1e6, 0, 1, 4, "v5e", multipath="yes"), "multipath"),
    (lambda: c.point_to_point(1e6, 0, 1, 4, "v5e", direction="up"), "direction"),
    (lambda: c.point_to_point(1e6, 0, 1, 4, "v5e", hop_latency=-1), "hop_latency"),
    (lambda: c.torus_hops((0,), (5,), (4,)), "from 0 to axis size"),
    (lambda: c.all_gather_first_cut(1e6, 0, "v5e"), "n_devices"),
    (lambda: c.all_reduce_first_cut(1e6, 4, "v5e", direction="x"), "direction"),
    (lambda: c.all_to_all_first_cut(1e6, 4, "H100"), "GPU"),
    (lambda: c.ragged_all_to_all(64, 8.0, 3, 2, 2, "v5e"), "top_k"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 6, 4, "v5e"), "multiple of n_devices"),
    (lambda: c.ragged_all_to_all(66, 8.0, 1, 8, 4, "v5e"), "n_tokens=66"),
    (lambda: c.ragged_all_to_all(64, 0.0, 1, 8, 4, "v5e"), "token_bytes"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 8, 4, "v5e", capacity_factor=0), "capacity_factor"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 8, 4, "v5e", deduplicate=1), "deduplicate"),
    (lambda: c.ragged_all_to_all(0, 8.0, 1, 8, 4, "v5e"), "n_tokens"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 8, 4, "H100", bandwidth=1e9), "TPU axis"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 8, 4, "H100", wraparound=False), "TPU axis"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 8, 4, "v5e", nic_bandwidth=1e9), "describe GPUs"),
    (lambda: c.ragged_all_to_all(64, 8.0, 1, 8, 4), "bandwidth"),
])
def test_new_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------- GPU algorithms

def test_an_8_gpu_h100_all_reduce_of_1_mb_is_not_a_14_hop_ring():
    auto = c.collective_cost("AllReduce", 1e6, 8, "H100")
    ring = c.collective_cost("AllReduce", 1e6, 8, "H100", algorithm="ring")
    assert ring.latency_time == pytest.approx(14e-6)
    assert auto.algorithm == "nvls"
    # NVLS: the switch sums, each GPU sends and receives V once: V / W in 2 steps
    assert auto.bandwidth_time == pytest.approx(1e6 / H100_NVLINK)
    assert auto.latency_time == pytest.approx(2e-6)
    assert auto.time < ring.time / 4


def test_small_messages_go_one_shot_large_ones_through_the_switch():
    assert c.collective_cost("AllReduce", 16e3, 8, "H100").algorithm == "one-shot"
    assert c.collective_cost("AllReduce", 1e9, 8, "H100").algorithm == "nvls"
    # an A100's NVSwitch does not reduce: two-shot for mid sizes, the ring's bytes either way
    a100 = c.collective_cost("AllReduce", 1e9, 8, "A100")
    assert a100.algorithm == "two-shot"
    assert a100.bandwidth_time == pytest.approx(2 * 1e9 * 7 / 8 / 3e11)
    with pytest.raises(ValueError, match="cannot run algorithm='nvls'"):
        c.collective_cost("AllReduce", 1e9, 8, "A100", algorithm="nvls")


def test_in_network_reduction_beats_the_ring_bound():
    # without in-network reduction no AllReduce sends less than 2·V·(N−1)/N per GPU
    n, v = 8, 1e9
    bound = 2 * v * (n - 1) / n / H100_NVLINK
    for algorithm in ("ring", "two-shot"):
        assert c.collective_cost("AllReduce", v, n, "H100", algorithm=algorithm
                                 ).bandwidth_time == pytest.approx(bound)
    nvls = c.collective_cost("AllReduce", v, n, "H100", algorithm="nvls")
    assert nvls.bandwidth_time == pytest.approx(bound * n / (2 * (n - 1)))


def test_across_nodes_trees_and_sharp():
    v, n = 1e9, 32
    ring = c.collective_cost("AllReduce", v, n, "H100", algorithm="ring")
    tree = c.collective_cost("AllReduce", v, n, "H100", algorithm="tree")
    sharp = c.collective_cost("AllReduce", v, n, "H100", algorithm="sharp")
    # a tree: about the ring's bytes in far fewer steps (2·log2(4) + 2·7 = 18, not 62)
    assert tree.latency_time == pytest.approx(18e-6)
    assert ring.latency_time == pytest.approx(62e-6)
    assert tree.bandwidth_time == pytest.approx(2 * v / (8 * H100_NIC))
    # SHARP: each NIC carries its V/8 once each way; NVLS inside the node
    assert sharp.bandwidth_time == pytest.approx(max(v / H100_NVLINK, v / 8 / H100_NIC))
    assert sharp.time < ring.time / 1.9
    # auto never picks SHARP, which needs a fabric that has it
    assert c.collective_cost("AllReduce", v, n, "H100").algorithm != "sharp"
    # for a tiny message across 64 nodes the tree's log steps win
    assert c.collective_cost("AllReduce", 1e3, 512, "H100").algorithm == "tree"


def test_algorithms_listed_per_kind_and_place():
    assert c.gpu_algorithms("AllReduce", 8, "H100") == ("ring", "two-shot", "one-shot", "nvls")
    assert c.gpu_algorithms("AllReduce", 8, "A100") == ("ring", "two-shot", "one-shot")
    assert c.gpu_algorithms("AllReduce", 16, "H100") == ("ring", "tree", "nvls", "sharp")
    assert c.gpu_algorithms("AllGather", 8, "H100") == ("ring", "one-shot")
    assert c.gpu_algorithms("AllGather", 16, "H100") == ("ring",)
    with pytest.raises(ValueError, match="one algorithm"):
        c.gpu_algorithms("AllToAll", 8, "H100")
    with pytest.raises(ValueError, match="algorithm must be one of"):
        c.collective_cost("AllReduce", GB, 8, "H100", algorithm="butterfly")
    with pytest.raises(ValueError, match="leave it 'auto'"):
        c.collective_cost("AllReduce", GB, 8, "v5e", algorithm="ring")
    with pytest.raises(ValueError, match="does not go with"):
        c.collective_cost("AllReduce", GB, 16, "H100", scheme="flat", algorithm="tree")


def test_auto_over_an_array_of_sizes_is_the_fastest_everywhere():
    sizes = np.array([1e3, 1e5, 1e7, 1e9])
    auto = c.collective_cost("AllReduce", sizes, 8, "H100")
    each = [c.collective_cost("AllReduce", sizes, 8, "H100", algorithm=a).time
            for a in ("ring", "two-shot", "one-shot", "nvls")]
    assert np.allclose(auto.time, np.min(np.stack(each), axis=0))
    assert auto.algorithm == "auto"

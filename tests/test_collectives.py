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

@pytest.mark.parametrize("chip, size, expected", [
    ("v5p", 4, True), ("v5p", 8, True), ("v5p", 28, True), ("v5p", 6, False), ("v5p", 2, False),
    ("v4p", 16, True), ("v4p", 12, True), ("v4p", 10, False),
    ("v5e", 16, True), ("v5e", 8, False), ("v5e", 4, False),
    ("v6e", 16, True), ("v6e", 12, False),
    ("v3", 32, True), ("v3", 16, False),
])
def test_has_wraparound(chip, size, expected):
    assert c.has_wraparound(chip, size) is expected


def test_has_wraparound_rejects_gpus_and_oversized_axes():
    with pytest.raises(ValueError, match="GPU"):
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
    assert c.gpu_all_reduce(GB, 64, "H100").time == pytest.approx(cost.time)
    # one node: the NIC stage costs nothing
    assert c.gpu_hierarchical_all_reduce(GB, 8, "H100").stages[1].time == 0


def test_gpu_hierarchical_all_gather_and_overrides():
    cost = c.gpu_all_gather(GB, 32, "H100")  # 4 nodes
    expected = GB / 8 * 3 / 4 / H100_NIC + GB * 7 / 8 / H100_NVLINK
    assert cost.bandwidth_time == pytest.approx(expected)
    assert c.gpu_reduce_scatter(GB, 32, "H100").time == pytest.approx(cost.time)
    fast = c.gpu_all_gather(GB, 8, "H100", nvlink_bandwidth=9e11)
    assert fast.bandwidth_time == pytest.approx(GB * 7 / 8 / 9e11)
    nvl72 = c.gpu_all_gather(GB, 72, "B200", gpus_per_node=72)
    assert nvl72.bandwidth_time == pytest.approx(GB * 71 / 72 / (18 * 5e10))


def test_gpu_all_to_all_across_nodes_is_nic_bound():
    cost = c.gpu_all_to_all(GB, 16, "H100")
    assert cost.bandwidth_time == pytest.approx((GB / 16) * 8 / 16 / H100_NIC)


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, message", [
    (lambda: c.all_gather(-1, 4, "v5e"), "nbytes"),
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

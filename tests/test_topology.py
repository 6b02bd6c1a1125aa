import pytest

from scalebook import collectives
from scalebook.hardware import get_chip
from scalebook.topology import (GpuCluster, TpuSlice, format_topology, gpu_cluster, gpu_node,
                                parse_topology, tpu_slice)


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("text, shape", [
    ("4x4x8", (4, 4, 8)), ("16x16", (16, 16)), (" 8x16 ", (8, 16)), ("1", (1,)),
    ((4, 4, 8), (4, 4, 8)), ([2, 2, 1], (2, 2, 1)),
])
def test_parse_topology(text, shape):
    assert parse_topology(text) == shape


@pytest.mark.parametrize("bad", ["4x4x", "x4", "4xx4", "4*4", "4 x 4", "4X4", "", "   ", "4x-4",
                                 "4.0x4", "four", "4x4\n4"])
def test_parse_topology_refuses_malformed_strings(bad):
    with pytest.raises(ValueError, match="is not of the form 'AxB' or 'AxBxC'"):
        parse_topology(bad)


@pytest.mark.parametrize("bad", ["0x4", "4x0x4", (4, 0), (-1, 4)])
def test_parse_topology_refuses_empty_axes(bad):
    with pytest.raises(ValueError, match="axis of size < 1"):
        parse_topology(bad)


@pytest.mark.parametrize("bad", [(4, True), (4, 4.0), ("4", "4")])
def test_parse_topology_refuses_non_integer_sizes(bad):
    with pytest.raises(ValueError, match="must hold integer axis sizes"):
        parse_topology(bad)


@pytest.mark.parametrize("bad", [None, (), [], 16, {4, 4}])
def test_parse_topology_refuses_other_types(bad):
    with pytest.raises(ValueError, match="topology must be a string"):
        parse_topology(bad)


def test_format_topology():
    assert format_topology((8, 16, 16)) == "8x16x16"


# --------------------------------------------------------------------------- TPU slices

def test_v5p_8x16x16():
    s = tpu_slice("v5p", "8x16x16")
    assert isinstance(s, TpuSlice) and s.topology == "8x16x16"
    assert s.chips == 8 * 16 * 16 == 2048
    assert s.hosts == 2048 // 4 == 512               # 2x2x1 = 4 chips per host
    assert s.tensorcores == 2048 * 2 == 4096         # two TensorCores per v5p chip
    assert s.flops() == pytest.approx(2048 * 4.59e14)
    assert s.flops("int8") == pytest.approx(2048 * 9.18e14)
    assert s.hbm_bytes == pytest.approx(2048 * 96e9)
    assert s.hbm_bandwidth == pytest.approx(2048 * 2.8e12)
    assert s.wraparound == (True, True, True)        # every axis a multiple of 4


def test_v5p_8x16x16_matches_google_table():
    # Google Cloud v5p page: topology 8x16x16 = 4096 cores, 2048 chips, 512 hosts
    s = tpu_slice("v5p", (8, 16, 16))
    assert (s.tensorcores, s.chips, s.hosts) == (4096, 2048, 512)
    small = tpu_slice("v5p", "2x2x1")                 # same table: 8 cores, 4 chips, 1 host
    assert (small.tensorcores, small.chips, small.hosts) == (8, 4, 1)
    cube = tpu_slice("v5p", "4x4x4")                  # 128 cores, 64 chips, 16 hosts
    assert (cube.tensorcores, cube.chips, cube.hosts) == (128, 64, 16)


def test_full_v5p_pod_matches_hsym_part_2():
    # HSYM part 2, question 2: 16x20x28 = 8960 chips, 8960 / 4 = 2240 hosts, 17,920 cores
    pod = tpu_slice("v5p", "16x20x28")
    assert (pod.chips, pod.hosts, pod.tensorcores) == (8960, 2240, 17920)
    assert pod.flops() == pytest.approx(8960 * 4.59e14)  # ~4e18 bf16 FLOPs/s
    assert pod.hbm_bytes == pytest.approx(8960 * 96e9)   # ~860 TB


def test_v5e_16x16():
    s = tpu_slice("v5e", "16x16")
    assert s.chips == 256
    # 8 chips per host (a 4x2 tray pair): 256 / 8 = 32 hosts, as HSYM part 2 question 2 and
    # Google's v5e page (16x16: 256 chips, 32 hosts) give
    assert get_chip("v5e").chips_per_host == 8
    assert s.hosts == 256 // 8 == 32
    assert s.tensorcores == 256
    assert s.flops() == pytest.approx(256 * 1.97e14)
    assert s.hbm_bytes == pytest.approx(256 * 16e9)  # ~4 TB
    assert s.wraparound == (True, True)               # both axes span the full 16


def test_v5e_8x16_wraps_only_on_the_16_axis():
    assert tpu_slice("v5e", "8x16").wraparound == (False, True)
    assert tpu_slice("v5e", "16x8").wraparound == (True, False)
    assert tpu_slice("v5e", "4x4").wraparound == (False, False)


def test_wraparound_is_a_rule_of_the_slice_shape():
    # Google's v5p page: slices of whole 4x4x4 cubes are full tori, smaller ones have none
    assert tpu_slice("v5p", "4x8x12").wraparound == (True, True, True)
    assert tpu_slice("v5p", "4x4x4").wraparound == (True, True, True)
    assert tpu_slice("v5p", "2x4x4").wraparound == (False, False, False)
    assert tpu_slice("v5p", "2x2x1").wraparound == (False, False, False)
    assert tpu_slice("v4p", "2x2x4").wraparound == (False, False, False)
    assert tpu_slice("v6e", "8x16").wraparound == (False, True)
    assert tpu_slice("v3", "32x16").wraparound == (True, False)


def test_only_shipped_shapes_are_slices():
    with pytest.raises(ValueError, match="4x4x4"):
        tpu_slice("v5p", "16x4")       # 64 v5p chips are the cube 4x4x4
    with pytest.raises(ValueError, match="not shipped as a 4x4x1 slice"):
        tpu_slice("v5p", "4x4x1")      # 16 chips: no such v5p slice
    with pytest.raises(ValueError, match="not shipped"):
        tpu_slice("v5e", "2x8")
    assert tpu_slice("v5p", "8x8x12").chips == 768   # whole cubes, not listed, shipped


def test_slice_smaller_than_a_host_occupies_one():
    assert tpu_slice("v5e", "2x2").hosts == 1   # Google lists it as half a host
    assert tpu_slice("v5e", "1x1").hosts == 1


def test_dcn_bandwidth_of_a_v5e_pod():
    # 32 hosts x 2.5e10 B/s = 8e11 B/s = 6.4 Tbps, Google's "data center network bandwidth per Pod"
    assert tpu_slice("v5e", "16x16").dcn_bandwidth == pytest.approx(32 * 2.5e10)
    assert tpu_slice("v5e", "16x16").dcn_bandwidth * 8 == pytest.approx(6.4e12)


def test_bisection_bandwidth():
    # v5e 16x16, cut across one axis: 16 lines x 2 links (wraparound) x W. Google lists 1.6 TB/s
    # per v5e pod, i.e. W = 50 GB/s one way (HSYM's figure); the catalog keeps 45 GB/s.
    v5e_50 = get_chip("v5e").replace(link_bandwidth_one_way=5e10)
    assert tpu_slice(v5e_50, "16x16").bisection_bandwidth == pytest.approx(1.6e12)
    assert tpu_slice("v5e", "16x16").bisection_bandwidth == pytest.approx(16 * 2 * 4.5e10)
    # v3 32x32: 32 x 2 x 1e11 = 6.4e12 B/s, Google's "bisection bandwidth per Pod" 6.4 TB/s
    assert tpu_slice("v3", "32x32").bisection_bandwidth == pytest.approx(6.4e12)
    # v5e 8x16: across the 8 axis (no wrap) 16 x 1 links, across the 16 axis 8 x 2: both 16
    assert tpu_slice("v5e", "8x16").bisection_bandwidth == pytest.approx(16 * 4.5e10)
    # v5e 4x4 (no wraparound): 4 links
    assert tpu_slice("v5e", "4x4").bisection_bandwidth == pytest.approx(4 * 4.5e10)
    # v5p 8x16x16: cut across a 16 axis, 2048 / 16 = 128 lines x 2 links x 9e10
    assert tpu_slice("v5p", "8x16x16").bisection_bandwidth == pytest.approx(128 * 2 * 9e10)
    with pytest.raises(ValueError, match="one-chip slice"):
        tpu_slice("v5e", "1x1").bisection_bandwidth


def test_axes_may_come_in_any_order():
    assert tpu_slice("v5p", "28x16x20").chips == 8960


@pytest.mark.parametrize("name, topology", [
    ("v5e", "32x8"), ("v5e", "16x32"), ("v5p", "16x16x32"), ("v5p", "28x28x4"),
    ("v4p", "16x16x20"), ("v3", "64x16"),
])
def test_beyond_the_largest_slice_is_an_error(name, topology):
    with pytest.raises(ValueError, match="is beyond .* largest slice"):
        tpu_slice(name, topology)


@pytest.mark.parametrize("name, topology", [("v5e", "4x4x4"), ("v5p", "8x16"), ("v5p", "64")])
def test_wrong_number_of_axes_is_an_error(name, topology):
    with pytest.raises(ValueError, match="slices have . axes"):
        tpu_slice(name, topology)


def test_tpu_slice_refuses_gpus_and_bad_input():
    with pytest.raises(ValueError, match="H100 is a GPU; use gpu_cluster"):
        tpu_slice("H100", "8")
    with pytest.raises(ValueError, match="unknown chip"):
        tpu_slice("v9z", "4x4")
    with pytest.raises(ValueError, match="not of the form"):
        tpu_slice("v5e", "4x4x")
    with pytest.raises(ValueError, match="unknown dtype"):
        tpu_slice("v5e", "4x4").flops("bf17")


# --------------------------------------------------------------------------- GPU clusters

def test_h100_node():
    node = gpu_node("H100")
    assert isinstance(node, GpuCluster)
    assert (node.n_gpus, node.nodes, node.gpus_in_node) == (8, 1, 8)
    assert node.nvlink_bandwidth_per_gpu == pytest.approx(18 * 25e9)       # 450 GB/s each way
    assert node.nvlink_bandwidth_per_node == pytest.approx(8 * 450e9)      # 3.6e12 B/s
    assert node.nvlink_bisection_bandwidth == pytest.approx(4 * 450e9)     # 4 GPUs per half
    assert node.scale_out_bandwidth_per_gpu == pytest.approx(50e9)         # one 400 Gb/s NIC
    assert node.scale_out_bandwidth_per_node == pytest.approx(8 * 50e9)    # 400 GB/s
    assert node.flops() == pytest.approx(8 * 9.89e14)
    assert node.hbm_bytes == pytest.approx(8 * 80e9)
    assert node.hbm_bandwidth == pytest.approx(8 * 3.35e12)


def test_h100_cluster():
    c = gpu_cluster("H100", 1024)
    assert c.nodes == 1024 // 8 == 128
    assert c.scale_out_bandwidth == pytest.approx(128 * 400e9)
    assert c.nvlink_bandwidth_per_node == pytest.approx(8 * 450e9)  # per node, not per cluster
    assert c.flops("fp8") == pytest.approx(1024 * 1.979e15)


def test_partial_node():
    c = gpu_cluster("H100", 4)
    assert (c.nodes, c.gpus_in_node) == (1, 4)
    assert c.nvlink_bisection_bandwidth == pytest.approx(2 * 450e9)
    assert c.scale_out_bandwidth_per_node == pytest.approx(4 * 50e9)


def test_nvl72_domain():
    # a GB200 NVL72 rack: 72 B200s in one NVLink domain, 900 GB/s per GPU each way
    rack = gpu_cluster("B200", 72, gpus_per_node=72)
    assert rack.nodes == 1
    assert rack.nvlink_bandwidth_per_node == pytest.approx(72 * 900e9)
    assert rack.nvlink_bisection_bandwidth == pytest.approx(36 * 900e9)


def test_gpu_bad_input():
    with pytest.raises(ValueError, match="n_gpus=12 spans several nodes but is not a multiple"):
        gpu_cluster("H100", 12)
    with pytest.raises(ValueError, match="n_gpus must be a positive integer"):
        gpu_cluster("H100", 0)
    with pytest.raises(ValueError, match="gpus_per_node must be a positive integer"):
        gpu_cluster("H100", 8, gpus_per_node=0)
    with pytest.raises(ValueError, match="TPU v5e is not a GPU; use tpu_slice"):
        gpu_cluster("v5e", 8)
    with pytest.raises(ValueError, match="TPU v5p is not a GPU"):
        gpu_node("v5p")
    with pytest.raises(ValueError, match="hybrid cube mesh.*not through an NVSwitch"):
        gpu_node("V100").nvlink_bisection_bandwidth
    with pytest.raises(ValueError, match="one-GPU node"):
        gpu_cluster("H100", 1).nvlink_bisection_bandwidth

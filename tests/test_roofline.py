import numpy as np
import pytest

from scalebook.hardware import get_chip
from scalebook.roofline import (ElementwiseCost, attainable_flops, critical_batch_size,
                                critical_contracting_dim, critical_intensity, dot_product_cost,
                                elementwise_cost, elementwise_time, matmul_cost, matmul_time,
                                time_bounds, two_chip_sharded_matmul, vector_critical_intensity,
                                weight_load_time)


def test_matmul_cost_exact_bytes():
    c = matmul_cost(128, 1024, 2048, x_dtype="bf16")
    assert c.flops == 2 * 128 * 1024 * 2048
    assert c.bytes_read == 2 * (128 * 1024 + 1024 * 2048)
    assert c.bytes_written == 2 * 128 * 2048
    assert c.total_bytes == c.bytes_read + c.bytes_written
    assert c.intensity == pytest.approx(c.flops / c.total_bytes)


def test_int8_matmul_intensity_is_about_2B():
    # bytes ~ D*F when B << D, F, so intensity = 2BDF / (BD + DF + BF) -> 2B.
    for B in (8, 32, 64):
        assert matmul_cost(B, 16384, 16384, x_dtype="int8").intensity == pytest.approx(2 * B, rel=0.01)
    # exact, not the approximation: at B = 512 the activations cost something
    exact = matmul_cost(512, 4096, 4096, x_dtype="int8").intensity
    assert exact == pytest.approx(2 * 512 * 4096 * 4096 / (512 * 4096 * 2 + 4096 * 4096))
    assert exact < 2 * 512


def test_bf16_matmul_intensity_is_about_B():
    assert matmul_cost(32, 16384, 16384).intensity == pytest.approx(32, rel=0.01)


def test_mixed_dtypes_and_output_dtype():
    c = matmul_cost(16, 4096, 4096, x_dtype="bf16", w_dtype="int8", out_dtype="fp32")
    assert c.bytes_read == 16 * 4096 * 2 + 4096 * 4096 * 1
    assert c.bytes_written == 16 * 4096 * 4
    assert c.intensity == pytest.approx(2 * 16 * 4096 * 4096 / (c.bytes_read + c.bytes_written))
    assert c.intensity == pytest.approx(2 * 16, rel=0.03)  # ~2B: the int8 weights dominate


def test_per_example_weights_intensity_tends_to_2():
    B = np.array([1, 16, 256, 4096])
    intensity = matmul_cost(B, 8192, 8192, x_dtype="int8", batched_weights=True).intensity
    assert np.allclose(intensity, 2.0, rtol=1e-3)
    assert np.ptp(intensity) < 1e-9  # independent of B


def test_weights_on_chip_cost_no_hbm_bytes_and_the_intensity_forgets_B():
    B = np.array([1, 64, 4096])
    c = matmul_cost(B, 4096, 8192, weights_on_chip=True)
    assert np.array_equal(c.bytes_read, 2 * B * 4096)  # only X: W is already on chip
    assert np.array_equal(c.bytes_written, 2 * B * 8192)
    # 2·D·F / (2·D + 2·F): independent of B, far above the same matmul with W from HBM
    assert np.allclose(c.intensity, 4096 * 8192 / (4096 + 8192))
    assert np.all(c.intensity > matmul_cost(B, 4096, 8192).intensity)
    t = matmul_time(64, 4096, 4096, "TPU v5e", weights_on_chip=True)
    assert t.t_comms == pytest.approx(2 * 64 * 8192 / get_chip("TPU v5e").hbm_bandwidth)
    with pytest.raises(ValueError, match="on chip"):
        matmul_cost(8, 16, 16, batched_weights=True, weights_on_chip=True)


def test_dot_product_intensity():
    assert dot_product_cost(10**6).intensity == pytest.approx(0.5, rel=1e-5)
    assert dot_product_cost(10**6, dtype="fp32").intensity == pytest.approx(0.25, rel=1e-5)


def test_vectorised_over_batch():
    B = np.array([1.0, 10.0, 100.0])
    c = matmul_cost(B, 1024, 1024)
    assert c.flops.shape == (3,)
    assert np.all(np.diff(c.intensity) > 0)


def test_tpu_v5e_critical_batch_is_243():
    v5e = get_chip("TPU v5e")
    assert critical_intensity(v5e, "bf16") == pytest.approx(1.97e14 / 8.1e11)
    assert critical_batch_size(v5e) == pytest.approx(243, abs=1)
    # int8 everything: 3.94e14 / 8.1e11 / 2
    assert critical_batch_size(v5e, compute_dtype="int8") == pytest.approx(3.94e14 / 8.1e11 / 2)
    assert critical_batch_size(v5e, compute_dtype="int8") == pytest.approx(243, abs=1)


def test_int8_weights_bf16_compute_halves_the_batch():
    v5e = get_chip("v5e")
    b = critical_batch_size(v5e, compute_dtype="bf16", weight_dtype="int8")
    assert b == pytest.approx(120, rel=0.02)


def test_h100_critical_batch_dense_not_sparse():
    b = critical_batch_size("H100")
    assert 295 <= b <= 298
    sparse = get_chip("H100").replace(flops_per_s={"bf16": 1.979e15})
    assert critical_batch_size(sparse) == pytest.approx(590, rel=0.01)


def test_time_bounds_and_binding_side():
    t = time_bounds(1e12, 1e9, flops_per_s=1e14, bytes_per_s=1e12)
    assert t.t_math == pytest.approx(0.01) and t.t_comms == pytest.approx(0.001)
    assert t.lower == pytest.approx(0.01) and t.upper == pytest.approx(0.011)
    assert t.bound_by == "compute"
    t = time_bounds(1e9, 1e12, flops_per_s=1e14, bytes_per_s=1e12)
    assert t.bound_by == "comms"
    assert t.upper <= 2 * t.lower


def test_matmul_time_switches_side_at_the_critical_batch():
    v5e = get_chip("v5e")
    t = matmul_time(np.array([64, 1024]), 8192, 8192, v5e)
    assert list(t.bound_by) == ["comms", "compute"]


def test_matmul_time_int8_weights_compute_in_bf16():
    v5e = get_chip("v5e")
    t = matmul_time(64, 8192, 8192, v5e, w_dtype="int8")
    assert t.t_math == pytest.approx(2 * 64 * 8192 * 8192 / 1.97e14)


def test_attainable_flops_is_the_roofline():
    v5e = get_chip("v5e")
    assert attainable_flops(10.0, v5e) == pytest.approx(10 * 8.1e11)
    assert attainable_flops(1e4, v5e) == pytest.approx(1.97e14)
    curve = attainable_flops(np.logspace(0, 4, 50), v5e)
    assert np.all(np.diff(curve) >= 0) and curve.max() == pytest.approx(1.97e14)


def test_two_chip_sharded_matmul_needs_large_D():
    v5e = get_chip("v5e")
    d_star = critical_contracting_dim(v5e)
    assert d_star == pytest.approx(8755, abs=1)  # 2 * 1.97e14 / 4.5e10
    below = two_chip_sharded_matmul(1024, 4096, 16384, v5e)
    above = two_chip_sharded_matmul(1024, 16384, 16384, v5e)
    assert below.bound_by == "comms" and above.bound_by == "compute"
    # it is D, not B: scaling B changes neither side's ratio
    small_b = two_chip_sharded_matmul(8, 4096, 16384, v5e)
    assert small_b.t_math / small_b.t_comms == pytest.approx(below.t_math / below.t_comms)


def test_weight_load_time():
    # 70e9 bf16 parameters over 8 H100s: 140e9 / (8 * 3.35e12) ~ 5.2 ms per token
    assert weight_load_time(140e9, "H100", n_chips=8) == pytest.approx(140e9 / (8 * 3.35e12))
    with pytest.raises(ValueError, match="n_chips"):
        weight_load_time(1e9, "H100", n_chips=0)


@pytest.mark.parametrize("args", [(0, 1, 1), (1, -5, 1), (1, 1, float("nan")), (np.array([1, 0]), 1, 1)])
def test_bad_sizes_raise(args):
    with pytest.raises(ValueError, match="must be positive"):
        matmul_cost(*args)


def test_bad_dtype_and_chip_raise():
    with pytest.raises(ValueError, match="unknown dtype"):
        matmul_cost(1, 1, 1, x_dtype="int7")
    with pytest.raises(ValueError, match="unknown chip"):
        critical_batch_size("Z80")
    with pytest.raises(ValueError, match="non-negative"):
        time_bounds(-1, 1, flops_per_s=1, bytes_per_s=1)
    with pytest.raises(ValueError, match="bytes_per_s must be positive"):
        time_bounds(1, 1, flops_per_s=1, bytes_per_s=0)


# --------------------------------------------------------------------------- element-wise ops

N8K = 8192 ** 2


def test_adding_two_bf16_arrays_costs():
    c = elementwise_cost((8192, 8192))  # x + y, bf16 in and out
    assert isinstance(c, ElementwiseCost)
    assert c.elements == N8K
    assert c.flops == N8K                      # one add per element
    assert c.bytes_read == 2 * 2 * N8K         # two bf16 inputs
    assert c.bytes_written == 2 * N8K          # one bf16 output
    assert c.total_bytes == 3 * 2 * N8K
    assert c.intensity == pytest.approx(1 / 6)


def test_adding_two_bf16_arrays_on_a_v5e_is_memory_bound():
    t = elementwise_time((8192, 8192), "v5e")
    # T_comms = 3 x 2 x 8192^2 bytes / 8.1e11 B/s ~ 497 us
    assert t.t_comms == pytest.approx(3 * 2 * N8K / 8.1e11)
    assert t.t_comms == pytest.approx(497e-6, rel=1e-3)
    # T_math = 8192^2 FLOPs / VPU (8 x 128 x 4 ALUs x 1.5e9 Hz = 6.144e12 FLOPs/s) ~ 10.9 us
    assert t.t_math == pytest.approx(N8K / (8 * 128 * 4 * 1.5e9))
    assert t.bound_by == "comms"
    assert t.lower == pytest.approx(3 * 2 * N8K / 8.1e11)  # time = bytes / HBM BW


def test_elementwise_uses_the_vector_unit_not_the_mxu():
    t = elementwise_time((8192, 8192), "v5e")
    assert t.t_math > N8K / get_chip("v5e").flops("bf16")  # the MXU peak would be 32x too fast


def test_activation_with_stated_flops():
    # gelu on fp32 [4096, 4096], counted as 20 FLOPs/element: reads 4 B, writes 4 B per element
    c = elementwise_cost((4096, 4096), n_inputs=1, flops_per_element=20, dtype="fp32")
    assert c.flops == 20 * 4096 ** 2
    assert c.total_bytes == 8 * 4096 ** 2
    assert c.intensity == pytest.approx(20 / 8)
    # relu = max(x, 0): 1 FLOP per element; bf16 in, fp32 out: intensity 1 / (2 + 4)
    relu = elementwise_cost(1000, n_inputs=1, dtype="bf16", out_dtype="fp32")
    assert relu.bytes_read == 2000 and relu.bytes_written == 4000
    assert relu.intensity == pytest.approx(1 / 6)


def test_fma_convention_moves_the_gpu_vector_roofline():
    # H100, fp32 x -> y with 100 FLOPs/element: intensity 100 / 8 = 12.5 FLOPs/byte
    h100 = get_chip("H100")
    one = elementwise_time(2 ** 24, h100, n_inputs=1, flops_per_element=100, dtype="fp32")
    # one FLOP per CUDA core per cycle: V = 132 x 128 x 1.98e9 = 3.345e13, V / W = 9.99 < 12.5
    assert one.t_math == pytest.approx(100 * 2 ** 24 / (132 * 128 * 1.98e9))
    assert one.t_comms == pytest.approx(8 * 2 ** 24 / 3.35e12)
    assert one.bound_by == "compute"
    # counted as FMAs (2 FLOPs each): V = 6.69e13, V / W = 20 > 12.5
    two = elementwise_time(2 ** 24, h100, n_inputs=1, flops_per_element=100, dtype="fp32",
                           fma_flops=2)
    assert two.t_math == pytest.approx(one.t_math / 2)
    assert two.bound_by == "comms"


def test_vector_critical_intensity():
    # v5e: 6.144e12 / 8.1e11 ~ 7.6 FLOPs/byte; H100: 3.345e13 / 3.35e12 ~ 10 (FMA = 1)
    assert vector_critical_intensity("v5e") == pytest.approx(8 * 128 * 4 * 1.5e9 / 8.1e11)
    assert vector_critical_intensity("H100") == pytest.approx(132 * 128 * 1.98e9 / 3.35e12)
    assert vector_critical_intensity("H100", fma_flops=2) == pytest.approx(
        2 * vector_critical_intensity("H100"))
    assert vector_critical_intensity("v5e", bandwidth=1e12) == pytest.approx(6.144)


def test_elementwise_sizes_as_counts_lists_and_arrays():
    assert elementwise_cost(N8K).total_bytes == elementwise_cost([8192, 8192]).total_bytes
    sizes = np.array([1e3, 1e6, 1e9])
    c = elementwise_cost(sizes, n_inputs=3, n_outputs=2, dtype="fp32")
    assert np.allclose(c.total_bytes, (3 + 2) * 4 * sizes)
    assert np.allclose(c.intensity, 1 / 20)
    t = elementwise_time(sizes, "H100", dtype="fp32")
    assert list(t.bound_by) == ["comms"] * 3


def test_elementwise_time_takes_a_problems_own_rates():
    # v6e has no sourced VPU rate; a problem that states one can still be solved
    with pytest.raises(ValueError, match="no sourced"):
        elementwise_time(1e6, "v6e")
    t = elementwise_time(1e6, "v6e", flops_per_s=1e13, bandwidth=1e12)
    assert t.t_math == pytest.approx(1e6 / 1e13)
    assert t.t_comms == pytest.approx(6e6 / 1e12)


@pytest.mark.parametrize("kwargs, message", [
    ({"shape": ()}, "shape is empty"),
    ({"shape": (0, 4)}, "each dimension of shape must be a positive integer"),
    ({"shape": (4, 2.5)}, "each dimension of shape must be a positive integer"),
    ({"shape": "8192"}, "shape .* must be a number"),
    ({"shape": -5}, "must be positive"),
    ({"shape": 10, "n_inputs": 0}, "n_inputs must be a positive integer"),
    ({"shape": 10, "n_outputs": 1.5}, "n_outputs must be a positive integer"),
    ({"shape": 10, "flops_per_element": -1}, "flops_per_element must be non-negative"),
    ({"shape": 10, "dtype": "bf17"}, "unknown dtype"),
    ({"shape": 10, "out_dtype": "int3"}, "unknown dtype"),
])
def test_elementwise_cost_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        elementwise_cost(**kwargs)


def test_elementwise_time_bad_input():
    with pytest.raises(ValueError, match="fma_flops"):
        elementwise_time(10, "H100", fma_flops=3)
    with pytest.raises(ValueError, match="flops_per_s must be positive"):
        elementwise_time(10, "H100", flops_per_s=0)
    with pytest.raises(ValueError, match="bandwidth must be positive"):
        elementwise_time(10, "H100", bandwidth=-1)
    with pytest.raises(ValueError, match="unknown chip"):
        elementwise_time(10, "Z80")


def test_mxu_padding_wastes_the_last_tile_of_each_padded_dimension():
    from scalebook.roofline import mxu_useful_fraction
    assert mxu_useful_fraction("TPU v5e", 200, 200) == pytest.approx((200 / 256) ** 2)
    assert mxu_useful_fraction("TPU v6e", 200) == pytest.approx(200 / 256)
    assert mxu_useful_fraction("TPU v6e", 300, 4096) == pytest.approx(300 / 512)
    assert mxu_useful_fraction("TPU v5e", 4096, 8192) == 1.0
    with pytest.raises(ValueError, match="systolic"):
        mxu_useful_fraction("H100", 200)
    with pytest.raises(ValueError):
        mxu_useful_fraction("TPU v5e")

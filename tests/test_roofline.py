import numpy as np
import pytest

from scalebook.hardware import get_chip
from scalebook.roofline import (attainable_flops, critical_batch_size, critical_contracting_dim,
                                critical_intensity, dot_product_cost, matmul_cost, matmul_time,
                                time_bounds, two_chip_sharded_matmul, weight_load_time)


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

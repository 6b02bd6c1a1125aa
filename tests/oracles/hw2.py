"""hw2-hardware at the book's sample numbers, by hand (see the package docstring)."""

import math

A = "hw2-hardware"
POINTS = 20

# P1: 405B parameters in bf16 over 64 TPU v5p (HBM 2.8e12 bytes/s, 96 GB each)
WEIGHTS = 2 * 405e9
# P2: a 16 x 20 x 28 v5p slice, 4 chips per host, 2 TensorCores, 4.59e14 FLOPs/s, 96 GB
CHIPS = 16 * 20 * 28
# P3: TPU v5e, 1.97e14 bf16 FLOPs/s, PCIe 1.5e10 bytes/s; B = 512, D = F = 8192
PCIE, C5E = 1.5e10, 1.97e14
T_PCIE, T_MATH3 = 2 * 8192 * 8192 / PCIE, 2 * 512 * 8192 * 8192 / C5E
# P4: TPU v6e, 1.84e15 int8 OPs/s, HBM 1.6e12 bytes/s; D = 4096, F = 16384, int8
INT8_6E, HBM_6E = 1.84e15, 1.6e12


def _int8_bounds(b: int) -> tuple[float, float]:
    return (2 * b * 4096 * 16384 / INT8_6E, (b * 4096 + 4096 * 16384 + b * 16384) / HBM_6E)


M64, C64 = _int8_bounds(64)
M1K, C1K = _int8_bounds(1024)
# P5: v5e, W = 4.5e10 bytes/s each way, 1 µs per hop, A bf16[16, 512, 4096]
W5, V5, HOP = 4.5e10, 16 * 512 * 4096 * 2, 1e-6
# P6: H100 132 SMs x 128 CUDA cores at 1.98 GHz; dense 9.89e14 bf16, 1.979e15 fp8, 3.35e12 HBM;
# B200 dense 2.25e15 bf16, 4.5e15 fp8, 8e12 HBM
CUDA = 132 * 128
VECTOR = CUDA * 2 * 1.98e9
B200_C, B200_W = 2.25e15, 8e12
SMALL = max(2 * 64 * 8192 * 8192 / B200_C, 2 * (64 * 8192 * 2 + 8192 * 8192) / B200_W)
LARGE = max(2 * 8192 ** 3 / B200_C, 2 * 3 * 8192 ** 2 / B200_W)

BY_HAND = {
    "t_token": WEIGHTS / (64 * 2.8e12),
    "min_chips_for_weights": math.ceil(WEIGHTS / 96e9),          # 8.44 -> 9
    "pod_chips": CHIPS,
    "pod_hosts": CHIPS / 4,
    "pod_tensorcores": 2 * CHIPS,
    "pod_flops": CHIPS * 4.59e14,
    "pod_hbm_bytes": CHIPS * 96e9,
    "critical_batch_pcie": C5E / PCIE,          # bf16 weights: intensity ≈ B
    "t_pcie_matmul": max(T_PCIE, T_MATH3),
    "t_matmul_b64": max(M64, C64),
    "t_matmul_b1024": max(M1K, C1K),
    "t_neighbour": V5 / W5 + HOP,
    "t_swap": V5 / W5 + HOP,
    "t_ring": V5 / 2 / W5 + 8 * HOP,            # half of A each way round, 8 hops
    "t_line": V5 / W5 + 7 * HOP,
    "h100_cuda_cores": CUDA,
    "h100_vector_flops": VECTOR,
    "tensor_to_vector_ratio": 9.89e14 / VECTOR,
    "crit_h100_bf16": 9.89e14 / 3.35e12,
    "crit_h100_fp8": 1.979e15 / 3.35e12,
    "crit_b200_bf16": B200_C / B200_W,
    "crit_b200_fp8": 4.5e15 / B200_W,
    "t_b200_small": SMALL,
    "t_b200_large": LARGE,
}
OTHER: dict = {}

MISCONCEPTIONS = [
    ("t_token", 64 * WEIGHTS / (64 * 2.8e12), "total bandwidth"),
    ("min_chips_for_weights", WEIGHTS / 96e9, "whole number"),
    ("pod_hosts", CHIPS / 8, "drives 4 chips"),
    ("pod_flops", 2 * CHIPS * 4.59e14, "int8 is twice"),
    ("pod_hbm_bytes", CHIPS * 96 * 2 ** 30, "1e9 bytes"),
    ("critical_batch_pcie", C5E / 8.1e11, "HBM answer"),
    ("t_pcie_matmul", T_MATH3, "larger of the two"),
    ("t_matmul_b64", M64 + C64, "not their sum"),
    ("t_ring", V5 / W5 + 8 * HOP, "every path"),
    ("t_line", V5 / (2 * W5) + 7 * HOP, "no wraparound"),
    ("h100_vector_flops", VECTOR / 2, "2 FLOPs"),
    ("crit_h100_bf16", 2 * 9.89e14 / 3.35e12, "dense rate"),
    ("t_b200_large", 2 * 8192 ** 3 / (2 * B200_C), "dense rate"),
]

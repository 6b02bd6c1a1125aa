"""hw1-rooflines at the book's sample numbers, by hand (see the package docstring)."""

A = "hw1-rooflines"
POINTS = 15

# Problem 1: TPU v5e with this problem's figures, 3.94e14 int8 OPs/s, HBM 8.2e11 bytes/s
B, D, F = 1024, 4096, 8192
INT8, BF16, HBM1 = 3.94e14, 1.97e14, 8.2e11
OPS = 2 * B * D * F
READ = B * D + D * F                      # int8: one byte per element
WRITTEN = B * F
T_MATH, T_COMMS = OPS / INT8, (READ + WRITTEN) / HBM1
# Problem 3: TPU v5e catalog figures, 1.97e14 bf16 FLOPs/s, HBM 8.1e11 bytes/s
HBM3 = 8.1e11
BATCHES = [2.0 ** k for k in range(14)]


def _roofline(d: int) -> list[float]:
    """min(C, I·W) with I = 2·b·d² / (2·(2·b·d + d²)), bf16, exact bytes."""
    return [min(BF16, 2 * b * d * d / (2 * (2 * b * d + d * d)) * HBM3) for b in BATCHES]


I_STAR = BF16 / HBM3                       # ≈ 243 FLOPs/byte
CROSSOVER = I_STAR * 1024 / (1024 - 2 * I_STAR)   # ≈ 463 tokens
# Problem 4: B = 64, D = F = 4096, int8, a weight matrix per example
I4 = 2 * 64 * 4096 ** 2 / (64 * 4096 + 64 * 4096 ** 2 + 64 * 4096)
# Problem 7: two v5e chips, 1.97e14 bf16 FLOPs/s, ICI 4.5e10 bytes/s each way
B7, D7, F7, ICI = 1024, 16384, 8192, 4.5e10

BY_HAND = {
    "bytes_read": READ,
    "bytes_written": WRITTEN,
    "ops": OPS,
    "intensity": OPS / (READ + WRITTEN),
    "t_math": T_MATH,
    "t_comms": T_COMMS,
    "t_lower": max(T_MATH, T_COMMS),
    "t_upper": T_MATH + T_COMMS,
    "critical_batch_int8": INT8 / HBM1 / 2,
    "critical_batch_mixed": BF16 / HBM1 / 2,
    "flops_small": _roofline(1024),
    "flops_large": _roofline(8192),
    "b_compute_bound_small": CROSSOVER,
    "intensity_per_example": I4,
    "best_fraction_of_peak": min(1.0, I4 * HBM3 / INT8),
    "critical_batch_gpu": 1978e12 / 2 / 3.35e12,   # the datasheet's starred figure is sparse
    "intensity_dot": 2e6 / (2 * 1e6 * 2 + 2),
    "t_math_shard": B7 * D7 * F7 / BF16,
    "t_comms_shard": B7 * F7 * 2 / ICI,
    "d_critical": 2 * BF16 / ICI,
}
OTHER: dict = {}

MISCONCEPTIONS = [
    ("bytes_read", 2 * READ, "one byte per element"),
    ("bytes_read", D * F, "X has to be read"),
    ("ops", OPS / 2, "multiply-add as 2"),
    ("intensity", 2 * B, "B << D shortcut"),
    ("t_math", OPS / BF16, "twice its bf16 rate"),
    ("t_lower", T_MATH + T_COMMS, "not their sum"),
    ("t_upper", max(T_MATH, T_COMMS), "add them"),
    ("critical_batch_int8", INT8 / HBM1, "set 2B, not B"),
    ("critical_batch_mixed", BF16 / HBM1, "answer for bf16 weights"),
    ("flops_small", [min(BF16, b * HBM3) for b in BATCHES], "B << D shortcut"),
    ("b_compute_bound_small", I_STAR, "rule of thumb"),
    ("b_compute_bound_small", 512, "power of two"),
    ("best_fraction_of_peak", 100 * I4 * HBM3 / INT8, "not a percentage"),
    ("critical_batch_gpu", 1978e12 / 3.35e12, "with sparsity"),
    ("intensity_dot", 2 * 2e6 / (4e6 + 2), "Count bytes"),
    ("t_comms_shard", B7 * F7 * 2 / (2 * ICI), "travels one way"),
    ("d_critical", 2 * BF16 / 8.1e11, "not HBM"),
]

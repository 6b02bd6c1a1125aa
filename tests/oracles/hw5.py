"""hw5-transformers at the book's sample numbers, by hand (see the package docstring); moved
from tests/test_hw5.py, whose homework-specific tests read it too."""

import math

A = "hw5-transformers"
POINTS = 21

# Problem inputs, restated from the prompts.
D, L, H, K, DH, F, V = 4096, 32, 32, 8, 128, 14336, 128256          # LLaMA-3 8B
P8 = 7_504_658_432                                                  # its matmul weights
P70, D70, L70, H70, T = 70_553_706_496, 8192, 80, 64, 8192
N405, TOK405 = 405_853_388_800, 15.6e12
C_H100 = 9.89e14
STEP = 6 * P8 * 1024 * 8192
MFU5 = STEP / (256 * C_H100 * 3.4)
RUN = 6 * N405 * TOK405

# answer name -> the value worked out by hand
BY_HAND = {
    "attn_params_per_layer": 2 * 4096 * 4096 + 2 * 4096 * 1024,
    "mlp_params_per_layer": 3 * 4096 * 14336,
    "total_params": 8_030_261_248,
    "fwd_matmul_flops_per_token": 2 * P8,
    "fwd_attn_flops_per_token": 4 * 32 * 8192 * 32 * 128,
    "train_flops_per_token": 3 * (2 * P8 + 4 * 32 * 8192 * 32 * 128),
    "crossover_context": 21504,
    "attn_core_flops_per_token": 4 * 28 * 8192 * 16 * 256,
    "state_bytes": 16 * P70,
    "min_h100s": 15,
    "act_bytes_layer": 8192 * 8192 * (34 + 5 * 64),
    "act_bytes_remat": 80 * 2 * 8192 * 8192,
    "step_flops": STEP,
    "step_time_ideal": STEP / (256 * C_H100),
    "mfu": MFU5,
    "hfu": MFU5 * 8 / 6,
    "run_flops": RUN,
    "run_seconds": RUN / (16384 * C_H100 * 0.4),
    "implied_mfu": RUN / (30.84e6 * 3600 * C_H100),
    "optimal_params": math.sqrt(1e24 / 120),
    "optimal_tokens": 20 * math.sqrt(1e24 / 120),
}

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    ("attn_params_per_layer", 4 * 4096 * 4096, "K = 8 heads"),
    ("mlp_params_per_layer", 2 * 4096 * 14336, "three D × F"),
    ("total_params", 8_030_261_248 - 128256 * 4096, "both vocabulary tables"),
    ("total_params", 8_030_261_248 + 32 * 2 * 4096 * 24 * 128, "K = 8 heads"),
    ("fwd_matmul_flops_per_token", P8, "multiply-add is 2 FLOPs"),
    ("fwd_attn_flops_per_token", 4 * 32 * 8192 * 8 * 128, "not the K = 8 key/value heads"),
    ("train_flops_per_token", 2 * P8 + 4 * 32 * 8192 * 32 * 128, "forward pass only"),
    ("train_flops_per_token", 6 * P8, "add the attention core"),
    ("crossover_context", 3 * 4096 * 14336 / (2 * 8 * 128), "not the K = 8"),
    ("attn_core_flops_per_token", 4 * 28 * 8192 * 3072, "head dimensions"),
    ("state_bytes", P70, "number of parameters"),
    ("state_bytes", 12 * P70, "master copy"),
    ("min_h100s", 14, "Round up"),
    ("min_h100s", 2, "Count all 16 bytes"),
    ("act_bytes_layer", 8192 * 8192 * 34, "5·H·T/D"),
    ("act_bytes_remat", 80 * 8192 * 8192, "Bytes, not elements"),
    ("step_flops", STEP / 3, "forward pass only"),
    ("step_time_ideal", STEP / (256 * 2 * C_H100), "sparsity"),
    ("mfu", MFU5 / 2, "with sparsity"),
    ("mfu", MFU5 / 3, "backward pass"),
    ("mfu", 100 * MFU5, "not a percentage"),
    ("hfu", MFU5, "forward pass twice"),
    ("run_flops", RUN / 3, "backward pass"),
    ("run_seconds", RUN / (16384 * C_H100), "time at peak"),
    ("run_seconds", RUN / (16384 * C_H100 * 0.4) / 86400, "not days"),
    ("implied_mfu", RUN / (30.84e6 * C_H100), "3,600"),
    ("optimal_params", math.sqrt(1e24 / 40), "not 2·N·D"),
    ("optimal_tokens", math.sqrt(1e24 / 120), "20 times more"),
]

OTHER: dict = {}

"""hw4-parallelism at the book's sample numbers, by hand (see the package docstring); moved
from tests/test_hw4.py, whose homework-specific tests read it too."""

import math

A = "hw4-parallelism"
POINTS = 24

# Problem inputs, restated from the prompts.
N_MATMUL, N_TOTAL, TOKENS = 69_501_714_432, 70_553_706_496, 15e12
C_V5P, W_V5P = 4.59e14, 1.8e11          # bf16 FLOPs/s; ring bytes/s on a wrapped ICI axis
C_H100, W_H100 = 9.89e14, 4.5e11        # dense bf16; NVSwitch bytes/s one way
P3 = 2 * 4096 * 16384 * 32              # problem 3's weights
LAYER3 = 2 * (2 * 4096 * 16384)         # one layer's bf16 weights, bytes
ALPHA = C_V5P / W_V5P                   # 2550 tokens

# answer name -> the value worked out by hand
BY_HAND = {
    "train_flops": 6 * N_MATMUL * TOKENS,
    "train_time": 6 * N_MATMUL * TOKENS / (8960 * C_V5P * 0.45),
    "optimizer_bytes": 12 * N_TOTAL,
    "max_params_one_gpu": 80e9 / 16,
    "min_gpus": 15,
    "dp_bytes_per_chip": 12 * P3,
    "t_grad_allreduce": 2 * (2 * P3) / W_V5P,
    "dp_critical_tokens_per_chip": 2550,
    "dp_min_global_batch": 40800,
    "fsdp_bytes_per_chip": 12 * P3 / 16,
    "t_fsdp_gather_layer": LAYER3 / W_V5P,
    "t_fsdp_comms_step": 32 * 3 * LAYER3 / W_V5P,
    "tp_collectives_per_layer": 4,
    "t_tp_comms_forward": 2 * (2 * 16384 * 8192) / W_H100,
    "max_tp_degree": 13,
    "min_tokens_per_chip_2d": 4 * ALPHA ** 2 / 32768,
    "max_chips_2d": 5284,
    "bubble_fraction": 7 / 31,
    "min_microbatches": 133,
    "act_bytes_remat": 32 * 16384 * 4096 * 2,
    "act_bytes_no_remat": 32 * 16384 * (4096 + 2 * 16384) * 2,
    "remat_flops_factor": 8 / 6,
    "allreduce_bytes": 16 * 32 * 4,
}
SPECS = {"w_in_spec": [None, "model"], "w_out_spec": ["model", None]}  # as the sandbox reports them

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    ("train_flops", 2 * N_MATMUL * TOKENS, "forward pass only"),
    ("train_time", 6 * N_MATMUL * TOKENS / (8960 * C_V5P), "0.45 of their peak"),
    ("train_time", 6 * N_MATMUL * TOKENS / (8960 * C_V5P * 0.45) / 86400, "not days"),
    ("optimizer_bytes", 2 * N_TOTAL, "not 2 bytes per parameter"),
    ("optimizer_bytes", 8 * N_TOTAL, "master copy"),
    ("optimizer_bytes", 12, "the whole model's"),
    ("max_params_one_gpu", 80e9 / 6, "not 2 bytes per parameter"),
    ("max_params_one_gpu", 80e9 / 12, "Count all four"),
    ("max_params_one_gpu", 80 * 2 ** 30 / 16, "1 GB = 1e9 bytes"),          # GiB: pinned by the title
    ("min_gpus", math.ceil(6 * N_TOTAL / 80e9), "not 2 bytes per parameter"),
    ("min_gpus", 14, "Round up"),
    ("dp_bytes_per_chip", 12 * P3 / 16, "full replica"),
    ("t_grad_allreduce", 2 * P3 / W_V5P, "ReduceScatter followed by an AllGather"),
    ("dp_critical_tokens_per_chip", 16 * 2550, "global batch"),
    ("dp_critical_tokens_per_chip", C_V5P / 9e10, "both ways"),
    ("dp_min_global_batch", 2550, "each chip needs"),
    ("fsdp_bytes_per_chip", 12 * P3, "FSDP splits the weights"),
    ("fsdp_bytes_per_chip", 4 * P3 + 8 * P3 / 16, "ZeRO-1"),
    ("t_fsdp_gather_layer", LAYER3 / W_V5P / 16, "whatever the number of chips"),
    ("t_fsdp_comms_step", 32 * 2 * LAYER3 / W_V5P, "data parallelism's gradient AllReduce"),
    ("tp_collectives_per_layer", 1, "backward pass repeats"),
    ("tp_collectives_per_layer", 2, "backward pass too"),
    ("tp_collectives_per_layer", 6, "no collective under TP"),
    ("t_tp_comms_forward", 2 * 16384 * 8192 / W_H100, "two collectives per layer"),
    ("t_tp_comms_forward", 2 * (2 * 16384 * 8192) / W_H100 / 8, "do not divide by 8"),
    ("max_tp_degree", math.floor(8192 * W_H100 / C_H100), "not d_model"),
    ("max_tp_degree", math.floor(28672 * W_H100 / 1979e12), "sparsity"),
    ("min_tokens_per_chip_2d", 2 * ALPHA ** 2 / 32768, "two mesh axes"),
    ("min_tokens_per_chip_2d", ALPHA, "pure FSDP"),
    ("max_chips_2d", math.floor(2 ** 22 / ALPHA), "FSDP alone"),
    ("bubble_fraction", 23 / 31, "M and K are swapped"),
    ("bubble_fraction", 7 / 24, "M + K - 1 slots"),
    ("min_microbatches", 7 / 0.05, "not (K - 1) / M"),
    ("act_bytes_remat", 32 * 2 ** 20 * 4096 * 2, "its own B / X tokens"),
    ("act_bytes_no_remat", 32 * 2 ** 20 * (4096 + 2 * 16384) * 2, "its own B / X tokens"),
    ("act_bytes_no_remat", 32 * 16384 * 4096 * 2, "rematerialised figure"),
    ("remat_flops_factor", 2, "forward pass only"),
    ("remat_flops_factor", 1.5, "adds a third"),
    ("allreduce_bytes", 16 * 32 * 4 / 8, "not 1/8 of it"),
    ("allreduce_bytes", 16 * 64 * 4, "not the hidden"),
]

OTHER = SPECS

"""hw7-moe-long-context at the book's sample numbers, by hand (see the package docstring); moved
from tests/test_hw7.py, whose homework-specific tests read it too."""

A = "hw7-moe-long-context"
POINTS = 19

C_H100, W_H100, NIC_H100, NVLINK_H100 = 9.89e14, 3.35e12, 5e10, 4.5e11
C_V5P, LINK_V5P = 4.59e14, 9e10
MIXTRAL_ACTIVE = 12_879_925_248            # Jiang et al. 2024: "12.9B active"
MIXTRAL_TOTAL = 46_702_792_704             # the problem's stated total (P1's sample numbers)
V4 = 8 * 4096 * 64 * 7168 * 2              # P4's AllToAll array
ONE4 = max(V4 / 64 * 56 / 64 / NIC_H100, V4 / 64 * 7 / 64 / NVLINK_H100) + 1e-6
BLOCK5 = 131072 // 16
T_BLOCK5 = 4 * BLOCK5 ** 2 * 64 * 128 / C_V5P

BY_HAND = {
    "active_params": MIXTRAL_ACTIVE,
    "moe_training_flops": 6 * MIXTRAL_ACTIVE * 1e12,
    "tokens_per_expert": 4096 * 8 / 256,
    "moe_critical_batch": 256 / 8 * C_H100 / W_H100,
    "expert_capacity_slots": 160,                       # 1.25 · 2 · 4096 / 64
    "dropped_share": 60 / 800,                          # only the 180-token expert overflows 120
    "imbalanced_time": 0.002 * 180 / 100,
    "dispatch_bytes_per_gpu": 63 / 64 * 8 * 4096 * 7168 * 2,
    "dispatch_time": ONE4,
    "a2a_time_per_layer": 2 * ONE4,
    "ep_fsdp_crossover": 3 * 256 * 2048 / (2 * 8),
    "kv_cache_bytes_long": 2 * 80 * 8 * 128 * 2 * 131072,
    "ring_block_bytes": 2 * BLOCK5 * 8 * 128 * 2,
    "ring_overlap_tokens": C_V5P * 8 * 2 / (2 * 64 * LINK_V5P),
    "ring_causal_time": 15.5 * T_BLOCK5,                # half a block, then 15 full ones
    "a2a_bytes_per_device": 16 * 16 * 16 * 4,           # E · C · D · 4, C = 2 · 2 · 64 / 16
}

MISCONCEPTIONS = [
    ("active_params", MIXTRAL_TOTAL, "use the active parameters"),
    ("moe_training_flops", 6 * MIXTRAL_TOTAL * 1e12, "use the active parameters"),
    ("moe_training_flops", 2 * MIXTRAL_ACTIVE * 1e12, "forward and backward"),
    ("tokens_per_expert", 4096 / 256, "k experts"),
    ("moe_critical_batch", C_H100 / W_H100, "a dense layer's critical batch"),
    ("moe_critical_batch", 2 * 32 * C_H100 / W_H100, "with sparsity"),
    ("expert_capacity_slots", 80, "k·T copies"),
    ("dropped_share", 60, "not the number dropped"),
    ("imbalanced_time", 0.002, "slowest"),
    ("dispatch_bytes_per_gpu", V4, "whole AllToAll's array"),
    ("dispatch_time", V4 * 63 / 64 / NIC_H100 + 1e-6, "AllGather"),
    ("dispatch_time", V4 / 64 * 63 / 64 / NVLINK_H100, "through the GPU's NIC"),
    ("a2a_time_per_layer", ONE4, "a combine AllToAll"),
    ("a2a_time_per_layer", 4 * ONE4, "forward pass"),
    ("ep_fsdp_crossover", 256 * 2048 / (2 * 8), "three D × F_e matrices"),
    ("kv_cache_bytes_long", 2 * 80 * 64 * 128 * 2 * 131072, "not the H query heads"),
    ("ring_block_bytes", 2 * 131072 * 8 * 128 * 2, "not the whole sequence"),
    ("ring_overlap_tokens", C_V5P * 8 * 2 / (2 * 64 * 2 * LINK_V5P), "one-way"),
    ("ring_causal_time", 8 * T_BLOCK5, "lock step"),
    ("a2a_bytes_per_device", 16 * 16 * 16 * 4 * 7 / 8, "its own block included"),
]

OTHER: dict = {}

"""hw8-serving-systems at the book's sample numbers, by hand (see the package docstring).

The step model's four figures are worked out here from the H100's datasheet and LLaMA-3 8B's
published shape (Dubey et al. 2024), then every answer from the conventions the notebook states.
"""

import math

A = "hw8-serving-systems"
POINTS = 21

C_H100, W_H100, HBM_H100 = 9.89e14, 3.35e12, 80e9
L, D, H, K, DH, F, V = 32, 4096, 32, 8, 128, 14336, 128256
P_MATMUL = L * (2 * D * H * DH + 2 * D * K * DH + 3 * D * F) + D * V     # 7.505e9
P_TOTAL = P_MATMUL + D * V + L * 2 * D + D                                # embeddings and norms
T_TOK = 2 * P_MATMUL / C_H100
T_W = 2 * P_MATMUL / W_H100
T_PAIR = 4 * L * H * DH / C_H100
KV_TOK = 2 * L * K * DH * 2                                               # 131,072 bytes
T_KV = KV_TOK / W_H100
KV_CAP = int((0.9 * HBM_H100 - 2 * P_TOTAL) // KV_TOK)


def time_of(q, pairs, cache, weights=T_W):
    return max(q * T_TOK, weights) + max(pairs * T_PAIR, cache * T_KV)


T1, R1 = 1024, 256
TTFT1 = time_of(T1, T1 ** 2, T1)
S1 = T1 + (R1 - 1) / 2
TPOT1 = time_of(1, S1, S1)
E_MAX4 = 511 - sum((k / 511) ** 32 for k in range(1, 511))
T7, H7 = 2500, 2000
HIT7 = time_of(T7 - H7, (T7 - H7) * T7, T7)
COLD7 = time_of(T7, T7 ** 2, T7)


def _chunk8():
    ok = [c for c in range(1, 4097)
          if time_of(64 + c, 64 * 1024 + c * 4096, 64 * 1024 + 4096) <= 0.05]
    return max(ok)


E9 = (1 - 0.8 ** 5) / (1 - 0.8)
STEP10 = time_of(64, 64 * 1280, 64 * 1280, weights=T_W / 4)

BY_HAND = {
    "ttft_lone": TTFT1,
    "tpot_lone": TPOT1,
    "latency_lone": TTFT1 + 255 * TPOT1,
    "requests_in_flight": 8.0 * 6.0,
    "cache_in_flight": 48 * S1 * KV_TOK,
    "queued_ttft": 0.9 * TTFT1 / (2 * 0.1) + TTFT1,
    "static_steps": E_MAX4,
    "static_slot_use": 256 / E_MAX4,
    "batch_fits_paged": KV_CAP // (1152 + 7.5),
    "batch_fits_reserved": KV_CAP // 2046,
    "blocks_shared": 1000 // 16 + 4 * math.ceil((1000 % 16 + 200) / 16),     # 62 + 4 · 13
    "prefill_flops_saved": 0.9 * (H7 * T_TOK + H7 * T7 * T_PAIR) / (T7 * T_TOK + T7 ** 2 * T_PAIR),
    "mean_ttft_cached": 0.9 * HIT7 + 0.1 * COLD7,
    "largest_chunk": _chunk8(),
    "spec_expected_tokens": E9,
    "spec_speedup": E9 / (4 * 0.05 + 1),
    "spec_best_k": max(range(1, 17), key=lambda k: ((1 - 0.8 ** (k + 1)) / 0.2 / (k * 0.05 + 1), -k)),
    "int4_decode_step": STEP10,
    "int4_cost_per_million": 2.0 / 3600 * STEP10 / 64 * 1e6,
    "replicas_needed": math.ceil(50 / 3.7),
}

MISCONCEPTIONS = [
    ("requests_in_flight", 8.0 / 6.0, "a product"),
    ("cache_in_flight", 48 * S1 * KV_TOK / 2, "do not halve"),
    ("queued_ttft", 0.9 * TTFT1 / 0.1 + TTFT1, "M/D/1"),
    ("queued_ttft", 0.9 * TTFT1 / (2 * 0.1), "plus the prefill"),
    ("static_steps", 256, "longest reply"),
    ("static_slot_use", 1 - 256 / E_MAX4, "not the share wasted"),
    ("batch_fits_paged", KV_CAP // 2046, "not its maximum length"),
    ("batch_fits_reserved", KV_CAP // 1152, "not its mean"),
    ("blocks_shared", 4 * math.ceil(1200 / 16), "copy-on-write"),
    ("prefill_flops_saved", (H7 * T_TOK + H7 * T7 * T_PAIR) / (T7 * T_TOK + T7 ** 2 * T_PAIR),
     "hit rate"),
    ("mean_ttft_cached", HIT7, "Misses prefill"),
    ("spec_expected_tokens", (1 - 0.8 ** 4) / 0.2, "one token of its own"),
    ("spec_speedup", E9, "divide by k·c + 1"),
    ("int4_decode_step", time_of(64, 64 * 1280, 64 * 1280), "a quarter"),
    ("int4_cost_per_million", 2.0 / 3600 * STEP10 / 64, "a million tokens"),
    ("replicas_needed", 13, "Round up"),
    ("replicas_needed", 14 * 8, "not GPUs"),
]

OTHER: dict = {"serving_design": [2, 64, 512, 4]}

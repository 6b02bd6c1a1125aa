"""hw6-inference at the book's sample numbers, by hand (see the package docstring); moved
from tests/test_hw6.py, whose homework-specific tests read it too."""

import math

A = "hw6-inference"
POINTS = 20

# Problem inputs, restated from the prompts and the datasheets.
C_H100, W_H100, HBM_H100, NVLINK_H100 = 9.89e14, 3.35e12, 80e9, 4.5e11
HBM_H200 = 141e9
P70_TOTAL, P70 = 70_553_706_496, 69_501_714_432         # LLaMA-3 70B: all, matmul weights
P8 = 7_504_658_432                                      # LLaMA-3 8B: matmul weights
P405 = 403_747_897_344                                  # LLaMA-3 405B: matmul weights
KV70 = 2 * 80 * 8 * 128 * 2                             # bytes per token, bf16
KV8 = 2 * 32 * 8 * 128 * 2
KV405 = 2 * 126 * 8 * 128 * 2

# P2: the 8B's prefill of 4,096 tokens on an H100.
PREFILL_FLOPS = 4096 * (2 * P8 + 4 * 32 * 4096 * 32 * 128)
PREFILL_BYTES = 2 * P8 + 4096 * KV8
# P3: the 8B decoding one sequence with 8,192 cached tokens.
DECODE = (2 * P8 + 8192 * KV8) / W_H100
# P4 (c): the 405B with 1,024 cached tokens per sequence. Phased, the weight matmuls balance at
# C / W_hbm whatever the cache; the overlapped bound balances the step's totals instead.
F405 = 2 * P405 + 4 * 126 * 1024 * 128 * 128
CRITICAL_LONG_OVERLAPPED = 2 * P405 / (W_H100 * F405 / C_H100 - 1024 * KV405)
# P5: the 70B on 8 H100s, B = 64 sequences of 4,096 cached tokens.
ALLREDUCE = 2 * (7 * 1e-6 + 64 * 8192 * 2 * 7 / 8 / NVLINK_H100)
STEP = (2 * P70 + 64 * 4096 * KV70) / (8 * W_H100) + 160 * ALLREDUCE
# P7 (b): the largest B with (2·P + B·S·kv)/(n·W_hbm) + 2L·AllReduce(B) <= 0.02 s, linear in B.
_FIXED = 2 * P70 / (8 * W_H100) + 160 * 2 * 7e-6
_PER_SEQUENCE = 4096 * KV70 / (8 * W_H100) + 160 * 2 * 8192 * 2 * 7 / 8 / NVLINK_H100
BEST = math.floor((0.02 - _FIXED) / _PER_SEQUENCE)

# answer name -> the value worked out by hand
BY_HAND = {
    "kv_bytes_per_token": 327_680,
    "kv_bytes_per_sequence": 8192 * 327_680,
    "max_batch": 185,                        # (640e9 - 141.1e9) / 2.68e9 = 185.9
    "prefill_flops": PREFILL_FLOPS,
    "prefill_intensity": PREFILL_FLOPS / PREFILL_BYTES,
    "prefill_time": PREFILL_FLOPS / C_H100,
    "decode_time": DECODE,
    "decode_tokens_per_s": 1 / DECODE,
    "decode_time_int8": (P8 + 8192 * KV8) / W_H100,
    "critical_batch": C_H100 / W_H100,
    "critical_batch_int8": C_H100 / (2 * W_H100),
    "critical_batch_long": C_H100 / W_H100,
    "allreduces_per_step": 160,
    "allreduce_time": ALLREDUCE,
    "decode_step_time": STEP,
    "tokens_per_s_per_gpu": 64 / STEP / 8,
    "cost_per_million_tokens": 8 * 3.0 / 3600 / (64 / STEP) * 1e6,
    "smallest_slice": 4,                     # (141.1e9 + 16 · 32,768 · 327,680) / 141e9 = 2.2
    "best_batch": BEST,
}

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    ("kv_bytes_per_token", 2 * 80 * 64 * 128 * 2, "Only the key/value heads are cached"),
    ("kv_bytes_per_token", 80 * 8 * 128 * 2, "both keys and values"),
    ("kv_bytes_per_token", 2 * 8 * 128 * 2, "That is one layer"),
    ("kv_bytes_per_sequence", 8192 * 2 * 80 * 64 * 128 * 2, "count K, not H"),
    ("kv_bytes_per_sequence", 8192 * 327_680 / 1e9, "not GB"),
    ("max_batch", 238, "subtract their 2 bytes per parameter"),          # 640e9 / 2.68e9
    ("max_batch", 23, "count K, not H"),                                 # 185.9 / 8
    ("max_batch", 185.85, "Round down"),
    ("prefill_flops", 4096 * 2 * P8, "Add the attention core"),
    ("prefill_flops", 3 * PREFILL_FLOPS, "not the 6 of training"),
    ("prefill_intensity", 2 * PREFILL_FLOPS / PREFILL_BYTES, "count bytes, not numbers"),
    ("prefill_intensity", PREFILL_FLOPS / PREFILL_BYTES / 4096, "read once for all T tokens"),
    ("prefill_time", PREFILL_BYTES / W_H100, "compute-bound"),
    ("prefill_time", PREFILL_FLOPS / (2 * C_H100), "sparsity"),
    ("prefill_time", PREFILL_FLOPS / C_H100 * 1e3, "not milliseconds"),
    ("decode_time", (2 * P8 + 4 * 32 * 8192 * 32 * 128) / C_H100, "decode is memory-bound"),
    ("decode_time", 2 * P8 / W_H100, "whole cache"),
    ("decode_tokens_per_s", C_H100 / (2 * P8 + 4 * 32 * 8192 * 32 * 128), "memory-bound"),
    ("decode_tokens_per_s", 1 / DECODE / 1e3, "not per millisecond"),
    ("decode_time_int8", DECODE / 2, "the cache stays bf16"),
    ("decode_time_int8", DECODE, "1 byte per weight"),
    ("decode_time_int8", (8 * P8 + 8192 * KV8) / W_H100, "8 bits"),
    ("critical_batch", 2 * C_H100 / W_H100, "sparsity"),
    ("critical_batch", C_H100 / (2 * W_H100), "the intensity is B"),
    ("critical_batch_int8", C_H100 / W_H100, "half the batch"),
    ("critical_batch_int8", 2 * C_H100 / W_H100, "the int8 rate does not apply"),
    ("critical_batch_long", CRITICAL_LONG_OVERLAPPED, "the overlapped bound"),
    ("critical_batch_long", 2 * C_H100 / W_H100, "sparsity"),
    ("allreduces_per_step", 80, "two AllReduces per layer"),
    ("allreduces_per_step", 2, "That is one layer"),
    ("allreduce_time", ALLREDUCE / 2, "ReduceScatter followed by an AllGather"),
    ("allreduce_time", 2 * 64 * 8192 * 2 * 7 / 8 / NVLINK_H100, "Add the latency"),
    ("allreduce_time", 2 * (7e-6 + 64 * 8192 * 4 * 7 / 8 / NVLINK_H100), "bf16: 2 bytes"),
    ("allreduce_time", ALLREDUCE * 1e6, "not microseconds"),
    ("decode_step_time", STEP - 160 * ALLREDUCE, "Add the AllReduces"),
    ("decode_step_time", STEP - 80 * ALLREDUCE, "not one"),
    ("decode_step_time", 64 * (2 * P70 + 4 * 80 * 4096 * 64 * 128) / (8 * C_H100)
     + 160 * ALLREDUCE, "memory-bound"),
    ("decode_step_time", (2 * P70 + 64 * 4096 * KV70) / W_H100 + 160 * ALLREDUCE, "1/n share"),
    ("tokens_per_s_per_gpu", 64 / STEP, "whole slice's rate"),
    ("tokens_per_s_per_gpu", 1 / STEP, "one token for each of the B sequences"),
    ("cost_per_million_tokens", 8 * 3.0 / 3600 / (64 / STEP / 8) * 1e6, "not the slice's price"),
    ("cost_per_million_tokens", 8 * 3.0 / (64 / STEP) * 1e6, "divide it by 3,600"),
    ("cost_per_million_tokens", 8 * 3.0 / 3600 / (64 / STEP), "cost of one token"),
    ("smallest_slice", 2, "The caches need room too"),
    ("smallest_slice", 3, "Slices come in 1, 2, 4 or 8 GPUs"),
    ("best_batch", math.floor((0.02 * 8 * W_H100 - 2 * P70) / (4096 * KV70)), "Count the AllReduces"),
]

OTHER: dict = {}

"""hw4-parallelism: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1, what a training run costs: the model (LLaMA-3 70B, 8B or 405B-like: its matmul weights),
  the training tokens, the TPU whose full pod trains it (v5p, v5e, v6e: chips whose int8 rate
  is twice their bf16 rate, so the "used the int8 rate" slip stays a distinct wrong answer) and
  the MFU.
- P2, what Adam keeps per parameter: (a) and (b) are bytes per parameter of a fixed
  mixed-precision policy (12 and 16 for everyone: the policy is the lesson, not a number to
  vary); (c) varies the model (its total parameters) and the GPU (its HBM).
- P3, data parallelism: the TPU (v5p, v4p, v6e: C and the wrapped axis's W), the stack's
  D, F and L, and the data-parallel degree X.
- P4, FSDP: the model, TPU and X of problem 3 (the text says "same as problem 3").
- P5, tensor parallelism inside one 8-GPU node: the GPU (H100, H200, B200, A100: C and the
  NVSwitch W), D, F and the batch B. The node keeps 8 GPUs, and (a)'s count of collectives per
  layer (4) is the same for every shape: only its inputs vary.
- P6, FSDP × TP: the TPU (α = C / W), F and the global batch of (b).
- P7, the pipeline bubble: the stages K, the microbatches M of (a) and the bubble target of (b).
- P8, activations: the model of problem 3 (the text says so), the chips X and the global
  batch B. (c)'s remat factor, 4/3, is the same for every model: only its inputs vary.
- P9, sharding a training step: B, D and F of the toy layer. The answer's two PartitionSpecs are
  the same for every shape (Megatron's layout); only the AllReduce's bytes vary.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from ..hardware import get_chip
from ..parallelism import axis_bandwidth
from ..topology import tpu_slice
from ..training import llama3_405b
from ..transformer import llama3_8b, llama3_70b, param_count
from ..variants import Choice, VariantSpec, apart

#: The models problems 1 and 2 may name, by the name the text gives them.
MODELS = {"LLaMA-3 70B": llama3_70b, "LLaMA-3 8B": llama3_8b, "LLaMA-3 405B": llama3_405b}

PARAMETERS = {
    "q1_model": Choice(tuple(MODELS), "model"),
    "q1_tokens": Choice((15e12, 2e12, 8e12, 30e12), "T", "tokens"),
    "q1_chip": Choice(("TPU v5p", "TPU v5e", "TPU v6e"), "TPU"),
    "q1_mfu": Choice((0.45, 0.4, 0.55, 0.35), "MFU", fmt="{:.0%}"),
    "q2_model": Choice(tuple(MODELS), "model"),
    "q2_gpu": Choice(("H100", "H200", "A100", "B200"), "GPU"),
    "q3_chip": Choice(("TPU v5p", "TPU v4p", "TPU v6e"), "TPU"),
    "q3_D": Choice((4096, 8192, 2048), "D"),
    "q3_F": Choice((16384, 32768, 8192, 24576), "F"),
    "q3_L": Choice((32, 48, 24, 64), "L", "layers"),
    "q3_X": Choice((16, 8, 32, 64), "X", "chips"),
    "q5_gpu": Choice(("H100", "H200", "B200", "A100"), "GPU"),
    "q5_D": Choice((8192, 4096, 16384), "D"),
    "q5_F": Choice((28672, 14336, 53248), "F"),
    "q5_B": Choice((16384, 8192, 32768), "B", "tokens"),
    "q6_chip": Choice(("TPU v5p", "TPU v4p", "TPU v6e"), "TPU"),
    "q6_F": Choice((32768, 16384, 65536, 24576), "F"),
    "q6_B": Choice((2 ** 22, 2 ** 21, 2 ** 23, 2 ** 24), "B", "tokens", fmt="{:,}"),
    "q7_K": Choice((8, 4, 16, 6), "K", "stages"),
    "q7_M": Choice((24, 16, 32, 48, 12), "M", "microbatches"),
    "q7_bubble": Choice((0.05, 0.1, 0.02), "bubble target", fmt="{:.0%}"),
    "q8_X": Choice((64, 32, 128, 16), "X", "chips"),
    "q8_B": Choice((2 ** 20, 2 ** 19, 2 ** 21), "B", "tokens", fmt="{:,}"),
    "q9_B": Choice((16, 32, 8), "B"),
    "q9_D": Choice((32, 16, 64), "D"),
    "q9_F": Choice((64, 128, 32), "F"),
}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The figures each problem states, taken from the catalog for the drawn models and chips."""
    q1_model = MODELS[p["q1_model"]]()
    q1 = get_chip(p["q1_chip"])
    q2_gpu = get_chip(p["q2_gpu"])
    q3 = get_chip(p["q3_chip"])
    q5 = get_chip(p["q5_gpu"])
    q6 = get_chip(p["q6_chip"])
    return {
        "q1_n_params": int(param_count(q1_model).matmul),
        "q1_n_chips": tpu_slice(q1, q1.max_slice).chips,
        "q1_bf16_flops": q1.flops("bf16"),
        "q2_n_params": int(param_count(MODELS[p["q2_model"]]()).total),
        "q2_hbm_gb": q2_gpu.hbm_bytes / 1e9,
        "q3_bf16_flops": q3.flops("bf16"),
        "q3_ici": axis_bandwidth(q3),
        "q5_bf16_flops": q5.flops("bf16"),
        "q5_nvlink": axis_bandwidth(q5),
        "q6_bf16_flops": q6.flops("bf16"),
        "q6_ici": axis_bandwidth(q6),
    }



def well_posed(v: Mapping[str, Any]) -> bool:
    """No draw where a slip that a hint names lands within the check's tolerance of the answer
    or of another hinted slip (whose hint it would then get), and no degenerate answer.

    - P2 (c): the answer ceil(16·P / HBM), the unrounded and rounded-down counts, and the counts
      for the bf16 weights alone and for 6 bytes per parameter are five different numbers (0.1%
      apart): so the model must need several GPUs.
    - P3 (a): DP's 12·P per chip, FSDP's 12·P / X, the weights' 2·P and 6·P are 5% apart.
    - P4 (a): FSDP's 12·P / X, DP's 12·P, ZeRO-1's 4·P + 8·P / X and the weights' shard 2·P / X
      are 5% apart.
    - P5 (c): F·W / C is 2 or more (the answer is a real TP degree, as the solver's floor gives
      it) and its floor, the floors with d_model and with the sparse rate, and the unrounded value
      are 0.1% apart.
    - P6 (a): TP lowers the threshold: 4·α² / F is at most 90% of pure FSDP's α (F >= 4.4·α), so
      "that is pure FSDP's threshold" stays a wrong answer and its hint true; (b): the answer
      and the hinted floor(B / α) are 0.1% apart, and at least 2.
    - P7 (a): the bubble (K − 1)/(M + K − 1), its swap (M − 1)/(M + K − 1) and (K − 1)/M are 5%
      apart; (b): the answer, (K − 1)/f and K are 0.1% apart.
    - P9: F >= 2·D, so the hinted [B, F] hidden activations are not the [B, D] answer nor its
      half (the "f32 takes 4 bytes" slip) nor its eighth. And B < D: the check names a wrong
      layout by the collectives XLA compiles for it, and with B >= D XLA gathers a W_in split
      along D (an AllGather) instead of AllReducing the [B, F] partial sums, so the classic
      slip (W_in split along D, W_out along F) would no longer get its "partial sum" hint.
    """
    P2 = v["q2_n_params"]
    hbm = v["q2_hbm_gb"] * 1e9
    exact = 16 * P2 / hbm
    q2 = [math.ceil(exact), exact, math.floor(exact), math.ceil(2 * P2 / hbm), math.ceil(6 * P2 / hbm)]

    n3 = 2 * v["q3_D"] * v["q3_F"] * v["q3_L"]
    X3 = v["q3_X"]
    q3a = [12 * n3, 12 * n3 / X3, 2 * n3, 6 * n3]
    q4a = [12 * n3 / X3, 12 * n3, 4 * n3 + 8 * n3 / X3, 2 * n3 / X3]

    ratio5 = v["q5_nvlink"] / v["q5_bf16_flops"]
    y = v["q5_F"] * ratio5
    q5c = [math.floor(y), math.floor(v["q5_D"] * ratio5), math.floor(y / 2), y]

    alpha = v["q6_bf16_flops"] / v["q6_ici"]
    per_chip = 4 * alpha ** 2 / v["q6_F"]
    chips = math.floor(v["q6_B"] / per_chip)
    q6b = [chips, math.floor(v["q6_B"] / alpha)]

    K, M, f = v["q7_K"], v["q7_M"], v["q7_bubble"]
    q7a = [(K - 1) / (M + K - 1), (M - 1) / (M + K - 1), (K - 1) / M]
    q7b = [math.ceil((K - 1) * (1 - f) / f - 1e-9), (K - 1) / f, K]

    return (apart(q2, 0.002) and min(q2) >= 1
            and apart(q3a, 0.1) and apart(q4a, 0.1)
            and y >= 2 and apart(q5c, 0.002) and min(q5c) >= 1
            and per_chip <= 0.9 * alpha and apart(q6b, 0.002) and chips >= 2
            and apart(q7a, 0.1) and apart(q7b, 0.002)
            and v["q9_F"] >= 2 * v["q9_D"] and v["q9_B"] < v["q9_D"])


SPEC = VariantSpec(
    assignment="hw4-parallelism",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_n_params": ("N", "weights"),
        "q1_n_chips": ("pod", "chips"),
        "q1_bf16_flops": ("bf16 rate", "FLOPs/s"),
        "q2_n_params": ("parameters", ""),
        "q2_hbm_gb": ("HBM", "GB"),
        "q3_bf16_flops": ("C", "FLOPs/s"),
        "q3_ici": ("W", "bytes/s"),
        "q5_bf16_flops": ("C", "FLOPs/s"),
        "q5_nvlink": ("W", "bytes/s"),
        "q6_bf16_flops": ("C", "FLOPs/s"),
        "q6_ici": ("W", "bytes/s"),
    },
)

"""hw6-inference: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1, the KV cache and the batch that fits: the model (LLaMA-3 70B, 8B or 405B, from the
  catalog: its L, K, d_h and parameter count), the context S, the GPU (its HBM) and how many
  of them hold one copy of the model. Well posed: see :func:`well_posed`.
- P2, prefill: the GPU (its dense bf16 rate and HBM bandwidth) and the prompt length T. The
  model stays the LLaMA-3 8B, which fits on one GPU of every kind drawn, so the problem needs
  no tensor parallelism. T starts at 4,096: at shorter prompts the attention core is under 5%
  of the FLOPs and the "attention left out" slip would pass.
- P3, decode at batch 1: the context S (the GPU and the model are those of P2). S starts at
  8,192: below, the cache is under 5% of the bytes a step reads and the "cache left out" slip
  would pass.
- P4, the critical batch: the GPU, and for (c) the model (70B or 405B) and the context S.
- P5, tensor parallelism: the model (70B or 8B), the GPU, the GPUs per copy (4 or 8 in one
  NVLink node), the batch B and the context S.
- P6, throughput and cost: the price per GPU-hour (the slice and batch are those of P5).
- P7, sizing: (a) the model, the GPU, the batch and the context; (b) the latency target, on the
  slice and context of P5.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from ..collectives import DEFAULT_HOP_LATENCY
from ..hardware import get_chip
from ..inference import (best_batch, decode_critical_batch, decode_step, kv_bytes_per_token,
                         max_batch, smallest_slice, weight_bytes)
from ..training import llama3_405b
from ..transformer import TransformerConfig, llama3_8b, llama3_70b, param_count
from ..variants import Choice, VariantSpec, apart

#: The catalog's configs, by the name the problem text prints.
MODELS = {
    "LLaMA-3 70B": llama3_70b,
    "LLaMA-3 8B": llama3_8b,
    "LLaMA-3 405B": llama3_405b,
}

#: The slice sizes P7 (a) chooses among: tensor parallelism wants them to split the KV heads
#: evenly, and one NVLink node holds 8 GPUs.
SLICES = (1, 2, 4, 8)

PARAMETERS = {
    "q1_model": Choice(("LLaMA-3 70B", "LLaMA-3 8B", "LLaMA-3 405B"), "model"),
    "q1_S": Choice((8192, 4096, 16384, 32768), "S", "tokens", fmt="{:,}"),
    "q1_gpu": Choice(("H100", "H200", "B200"), "GPU"),
    "q1_n": Choice((8, 4, 2), "n", "GPUs"),
    "q2_gpu": Choice(("H100", "H200", "B200", "A100"), "GPU"),
    "q2_T": Choice((4096, 8192, 16384), "T", "tokens", fmt="{:,}"),
    "q3_S": Choice((8192, 16384, 32768), "S", "tokens", fmt="{:,}"),
    "q4_gpu": Choice(("H100", "H200", "B200", "A100"), "GPU"),
    "q4_model": Choice(("LLaMA-3 405B", "LLaMA-3 70B"), "model"),
    "q4_S": Choice((1024, 512, 2048, 256), "S", "tokens", fmt="{:,}"),
    "q5_model": Choice(("LLaMA-3 70B", "LLaMA-3 8B"), "model"),
    "q5_gpu": Choice(("H100", "H200", "B200", "A100"), "GPU"),
    "q5_n": Choice((8, 4), "n", "GPUs"),
    "q5_B": Choice((64, 128, 32, 256), "B", "sequences"),
    "q5_S": Choice((4096, 2048, 8192), "S", "tokens", fmt="{:,}"),
    "q6_price": Choice((3.0, 2.5, 4.0, 2.0), "price", "dollars per GPU-hour", fmt="{:.2f}"),
    "q7_model": Choice(("LLaMA-3 70B", "LLaMA-3 8B"), "model"),
    "q7_gpu": Choice(("H200", "B200", "H100", "A100"), "GPU"),
    "q7_B": Choice((16, 32, 64, 8), "B", "sequences"),
    "q7_S": Choice((32768, 8192, 16384, 4096), "S", "tokens", fmt="{:,}"),
    "q7_target": Choice((0.02, 0.015, 0.01, 0.025), "latency target", "s per token"),
}


def model(name: str) -> TransformerConfig:
    """The catalog config a problem names ("LLaMA-3 70B")."""
    return MODELS[name]()


def _dims(prefix: str, cfg: TransformerConfig) -> dict[str, int]:
    return {f"{prefix}_L": cfg.n_layers, f"{prefix}_D": cfg.d_model, f"{prefix}_H": cfg.n_heads,
            f"{prefix}_K": cfg.n_kv_heads, f"{prefix}_dh": cfg.d_head}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The model sizes and GPU figures each problem states, from the catalog."""
    out: dict[str, Any] = {}
    m1 = model(p["q1_model"])
    out.update(_dims("q1", m1))
    out["q1_P"] = int(param_count(m1).total)
    out["q1_hbm"] = get_chip(p["q1_gpu"]).hbm_bytes
    m2, g2 = llama3_8b(), get_chip(p["q2_gpu"])
    out.update(_dims("q2", m2))
    out["q2_P"] = int(param_count(m2).matmul)
    out["q2_flops"], out["q2_hbm_bw"] = g2.flops("bf16"), g2.hbm_bandwidth
    m4, g4 = model(p["q4_model"]), get_chip(p["q4_gpu"])
    out.update(_dims("q4", m4))
    out["q4_P"] = int(param_count(m4).matmul)
    out["q4_flops"], out["q4_hbm_bw"] = g4.flops("bf16"), g4.hbm_bandwidth
    m5, g5 = model(p["q5_model"]), get_chip(p["q5_gpu"])
    out.update(_dims("q5", m5))
    out["q5_P"] = int(param_count(m5).matmul)
    out["q5_P_total"] = int(param_count(m5).total)
    out["q5_hbm"] = g5.hbm_bytes
    out["q5_flops"], out["q5_hbm_bw"] = g5.flops("bf16"), g5.hbm_bandwidth
    out["q5_nvlink"] = g5.interconnect_bandwidth_one_way
    m7 = model(p["q7_model"])
    out.update(_dims("q7", m7))
    out["q7_P"] = int(param_count(m7).total)
    out["q7_hbm"] = get_chip(p["q7_gpu"]).hbm_bytes
    return out


# --------------------------------------------------------------------------- the slips

def allreduce_time(nbytes: float, n: int, nvlink: float, *, alpha: float = DEFAULT_HOP_LATENCY,
                   bytes_factor: float = 1.0, latency: bool = True,
                   doubled: bool = True) -> float:
    """One AllReduce of ``nbytes`` over ``n`` GPUs of one NVLink node (s), as P5 states it:
    ``2 · ((n − 1)·α + V·(n − 1)/n / W)``; the keywords make the hinted slips (fp32 bytes, no
    latency, an AllGather alone)."""
    one = nbytes * bytes_factor * (n - 1) / n / nvlink
    one += (n - 1) * alpha if latency else 0.0
    return 2 * one if doubled else one


def smallest_power_of_two(need: float, per_gpu: float) -> int | None:
    """The fewest GPUs among :data:`SLICES` whose HBM holds ``need`` bytes; None if none does."""
    return next((n for n in SLICES if n * per_gpu >= need), None)



def _p1(v: Mapping[str, Any]) -> bool:
    cfg = model(v["q1_model"])
    kv = kv_bytes_per_token(cfg)
    free = v["q1_n"] * v["q1_hbm"] - weight_bytes(cfg)
    if free <= 0:
        return False
    raw = free / (v["q1_S"] * kv)
    answer = math.floor(raw)
    no_weights = math.floor(v["q1_n"] * v["q1_hbm"] / (v["q1_S"] * kv))
    query_heads = math.floor(raw * v["q1_K"] / v["q1_H"])
    return 4 <= answer <= 2000 and query_heads >= 1 and apart(
        [answer, no_weights, query_heads], 0.002)


def _p4(v: Mapping[str, Any]) -> bool:
    with_cache = decode_critical_batch(model(v["q4_model"]), v["q4_gpu"], context_len=v["q4_S"])
    no_cache = v["q4_flops"] / v["q4_hbm_bw"]
    return 1.1 * no_cache <= with_cache <= 4 * no_cache


def _p5(v: Mapping[str, Any]) -> bool:
    cfg, gpu, n, b, s = (model(v["q5_model"]), v["q5_gpu"], v["q5_n"], v["q5_B"], v["q5_S"])
    if max_batch(cfg, gpu, context_len=s, n_chips=n) < b:
        return False
    nbytes = b * v["q5_D"] * 2
    w = v["q5_nvlink"]
    ar = [allreduce_time(nbytes, n, w), allreduce_time(nbytes, n, w, doubled=False),
          allreduce_time(nbytes, n, w, latency=False),
          allreduce_time(nbytes, n, w, bytes_factor=2.0)]
    step = decode_step(cfg, gpu, batch=b, context_len=s, n_chips=n)
    slips = [step.time, step.time - step.t_comm, step.time - step.t_comm / 2,
             step.t_compute + step.t_comm, step.t_memory * n + step.t_comm]
    return step.bound == "memory" and apart(ar, 0.06) and apart(slips, 0.06)


def _p7(v: Mapping[str, Any]) -> bool:
    cfg, gpu, b, s = model(v["q7_model"]), v["q7_gpu"], v["q7_B"], v["q7_S"]
    try:
        answer = smallest_slice(cfg, gpu, context_len=s, batch=b, sizes=SLICES)
    except ValueError:
        return False
    if smallest_power_of_two(weight_bytes(cfg), v["q7_hbm"]) == answer:
        return False
    m5, n5, s5 = model(v["q5_model"]), v["q5_n"], v["q5_S"]
    best = best_batch(m5, v["q5_gpu"], latency_target=v["q7_target"], context_len=s5,
                      n_chips=n5)
    fits = max_batch(m5, v["q5_gpu"], context_len=s5, n_chips=n5)
    no_comm = best_batch_without_allreduces(v)
    return 20 <= best < fits and apart([best, no_comm], 0.06)


def best_batch_without_allreduces(v: Mapping[str, Any]) -> int:
    """P7 (b)'s slip: the largest batch meeting the target on P5's slice when the AllReduces
    are left out (decode is memory-bound there: the step reads the weights and the caches)."""
    cfg = model(v["q5_model"])
    n, s = v["q5_n"], v["q5_S"]
    budget = v["q7_target"] * n * v["q5_hbm_bw"] - 2 * v["q5_P"]
    return max(0, min(math.floor(budget / (s * kv_bytes_per_token(cfg))),
                      max_batch(cfg, v["q5_gpu"], context_len=s, n_chips=n)))


def well_posed(v: Mapping[str, Any]) -> bool:
    """No draw where a slip that a hint names lands within the check's tolerance of the answer
    (or of another hinted slip), and no degenerate answer.

    - P1 (c): the weights fit on the slice and leave room for 4 to 2,000 sequences; the answer,
      the count that forgets the weights and the count with H query heads in place of K are
      0.2% apart (the check's tolerance is 0.1%). The unrounded count is hinted only where the
      tolerance does not already accept it (the check says so).
    - P4 (c): with S-token caches decode still turns compute-bound at some batch, at least 10%
      above the cache-free one of (a) (the hinted slip) and at most 4 times it: nearer the
      context where no batch is enough, the answer hangs on a small difference, and honest
      rounding of the inputs would move it by more than 5%.
    - P5: the batch's caches fit on the slice and decode is memory-bound; the AllReduce and its
      variants without latency, with fp32 activations and as one AllGather are 6% apart; so
      are the step time and the steps without AllReduces, with one per layer, taken as
      compute-bound and with every GPU reading the whole model.
    - P7 (a): the answer is one of 1, 2, 4, 8 GPUs, and not the slice that holds the weights
      alone (the caches must matter); (b): on P5's slice, the largest batch that meets the
      target is at least 20 (one sequence more or less is within 5%), below the batch that
      fits (the latency, not the memory, decides it) and 6% apart from the batch that leaves
      the AllReduces out.
    """
    return _p1(v) and _p4(v) and _p5(v) and _p7(v)


SPEC = VariantSpec(
    assignment="hw6-inference",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_L": ("L", "layers"), "q1_D": ("D", ""), "q1_H": ("H", "query heads"),
        "q1_K": ("K", "key/value heads"), "q1_dh": ("d_h", ""), "q1_P": ("P", "parameters"),
        "q1_hbm": ("HBM", "bytes per GPU"),
        "q2_L": ("L", "layers"), "q2_D": ("D", ""), "q2_H": ("H", "query heads"),
        "q2_K": ("K", "key/value heads"), "q2_dh": ("d_h", ""), "q2_P": ("P", "matmul weights"),
        "q2_flops": ("C", "FLOPs/s, dense bf16"), "q2_hbm_bw": ("W_hbm", "bytes/s"),
        "q4_L": ("L", "layers"), "q4_D": ("D", ""), "q4_H": ("H", "query heads"),
        "q4_K": ("K", "key/value heads"), "q4_dh": ("d_h", ""), "q4_P": ("P", "matmul weights"),
        "q4_flops": ("C", "FLOPs/s, dense bf16"), "q4_hbm_bw": ("W_hbm", "bytes/s"),
        "q5_L": ("L", "layers"), "q5_D": ("D", ""), "q5_H": ("H", "query heads"),
        "q5_K": ("K", "key/value heads"), "q5_dh": ("d_h", ""), "q5_P": ("P", "matmul weights"),
        "q5_flops": ("C", "FLOPs/s, dense bf16"), "q5_hbm_bw": ("W_hbm", "bytes/s"),
        "q5_nvlink": ("W", "bytes/s of NVLink, one way"), "q5_P_total": ("P_total", "parameters"),
        "q5_hbm": ("HBM", "bytes per GPU"),
        "q7_L": ("L", "layers"), "q7_D": ("D", ""), "q7_H": ("H", "query heads"),
        "q7_K": ("K", "key/value heads"), "q7_dh": ("d_h", ""), "q7_P": ("P", "parameters"),
        "q7_hbm": ("HBM", "bytes per GPU"),
    },
)

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
- P8, choosing a serving configuration (a :class:`~scalebook.homework.parts.Design`): the
  model, the GPU, the context and the latency target, at P6's price; graded by
  :func:`judge_serving8`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping

from ..collectives import DEFAULT_HOP_LATENCY
from ..hardware import get_chip
from ..collectives import gpu_all_reduce
from ..inference import (best_batch, cost_per_million_tokens, decode_critical_batch, decode_step,
                         kv_bytes_per_token, max_batch, prefill, smallest_slice, weight_bytes)
from ..training import llama3_405b
from ..transformer import TransformerConfig, llama3_8b, llama3_70b, param_count
from ..variants import Choice, VariantSpec
from .parts import (PINNED, Convention, Design, Example, Part, Slip, Verdict, distinct_from,
                    near_best, whole_number)
from .parts import well_posed as parts_well_posed

#: The homework's stated convention for problems 5 to 7 (its "Conventions" cell): an AllReduce
#: is a ring, ReduceScatter then AllGather, 2(n−1) steps. The chapter's default ("auto": one-shot
#: or NVLS on an H100 node) is the faster algorithm NCCL would pick. Problem 8 is judged by the
#: model its read-only cell prices candidates with (``scalebook.inference`` as it is), the
#: default.
RING = "ring"

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
    "q8_model": Choice(("LLaMA-3 70B", "LLaMA-3 8B"), "model"),
    "q8_gpu": Choice(("H100", "H200", "B200"), "GPU"),
    "q8_S": Choice((8192, 4096, 16384), "S", "tokens", fmt="{:,}"),
    "q8_target": Choice((0.03, 0.02, 0.05), "latency target", "s per token"),
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



def best_batch_without_allreduces(v: Mapping[str, Any]) -> int:
    """P7 (b)'s slip: the largest batch meeting the target on P5's slice when the AllReduces
    are left out (decode is memory-bound there: the step reads the weights and the caches)."""
    cfg = model(v["q5_model"])
    n, s = v["q5_n"], v["q5_S"]
    budget = v["q7_target"] * n * v["q5_hbm_bw"] - 2 * v["q5_P"]
    return max(0, min(math.floor(budget / (s * kv_bytes_per_token(cfg))),
                      max_batch(cfg, v["q5_gpu"], context_len=s, n_chips=n)))



def best_batch_overlapped(v: Mapping[str, Any]) -> int:
    """P7 (b) under the overlapped bound: the largest batch that fits on P5's slice and whose
    ``time_overlapped`` (``max(t_compute, t_memory)`` of the step's totals, plus the AllReduces)
    meets the target. At least :func:`scalebook.inference.best_batch`'s phased answer, since the
    bound is never above the phased step."""
    cfg = model(v["q5_model"])
    kw = dict(context_len=v["q5_S"], n_chips=v["q5_n"])
    low, high = 0, max_batch(cfg, v["q5_gpu"], **kw)
    while low < high:
        mid = (low + high + 1) // 2
        step = decode_step(cfg, v["q5_gpu"], batch=mid, algorithm=RING, **kw)
        if step.time_overlapped <= v["q7_target"]:
            low = mid
        else:
            high = mid - 1
    return low


# --------------------------------------------------------------------------- the parts

_8b = lambda v: llama3_8b()
_m1 = lambda v: model(v["q1_model"])
_kv1 = lambda v: kv_bytes_per_token(_m1(v), "bf16")
_seq1 = lambda v: v["q1_S"] * _kv1(v)
_fits1 = lambda v: max_batch(_m1(v), v["q1_gpu"], context_len=v["q1_S"], n_chips=v["q1_n"])
_raw1 = lambda v: (v["q1_n"] * v["q1_hbm"] - weight_bytes(_m1(v), "bf16")) / _seq1(v)
_prefill2 = lambda v: prefill(llama3_8b(), v["q2_gpu"], prompt_len=v["q2_T"], algorithm=RING)
_decode3 = lambda v: decode_step(llama3_8b(), v["q2_gpu"], batch=1, context_len=v["q3_S"], algorithm=RING)
_decode3_int8 = lambda v: decode_step(llama3_8b(), v["q2_gpu"], batch=1, context_len=v["q3_S"],
                                      weight_dtype="int8", algorithm=RING)
_m4 = lambda v: model(v["q4_model"])
_crit4 = lambda v: decode_critical_batch(_m4(v), v["q4_gpu"])
_ar5 = lambda v: gpu_all_reduce(v["q5_B"] * v["q5_D"] * 2, v["q5_n"], v["q5_gpu"]).time
_ar5_slip = lambda **kw: lambda v: allreduce_time(v["q5_B"] * v["q5_D"] * 2, v["q5_n"],
                                                  v["q5_nvlink"], **kw)
_step5 = lambda v: decode_step(model(v["q5_model"]), v["q5_gpu"], batch=v["q5_B"],
                               context_len=v["q5_S"], n_chips=v["q5_n"], algorithm=RING)
_cost6 = lambda v: cost_per_million_tokens(_step5(v).tokens_per_s, n_chips=v["q5_n"],
                                           price_per_chip_hour=v["q6_price"])
_m7 = lambda v: model(v["q7_model"])
_slice7 = lambda v: smallest_slice(_m7(v), v["q7_gpu"], context_len=v["q7_S"], batch=v["q7_B"],
                                   sizes=SLICES)
_need7 = lambda v: weight_bytes(_m7(v), "bf16") + v["q7_B"] * v["q7_S"] * kv_bytes_per_token(_m7(v), "bf16")
_best7 = lambda v: best_batch(model(v["q5_model"]), v["q5_gpu"], latency_target=v["q7_target"],
                              context_len=v["q5_S"], n_chips=v["q5_n"], algorithm=RING)
#: The phrase of the problem text (the title's conventions) that pins the phased decode step.
PHASED = "one after another"
_OVERLAPPED = ("That follows the overlapped bound, max(all FLOPs / (n·C), all bytes / (n·W_hbm)) "
               "of the whole step, as if attention's cache reads hid under the weight matmuls' compute; "
               "it is a lower bound. This homework times a decode step in phases, one after "
               "another: the weight matmuls (the slower of their FLOPs and their bytes), then "
               "attention (the slower of its FLOPs and the cache bytes), then the AllReduces.")
_crit4_long = lambda v: decode_critical_batch(_m4(v), v["q4_gpu"], context_len=v["q4_S"],
                                              overlap=False)
_crit4_overlapped = lambda v: decode_critical_batch(_m4(v), v["q4_gpu"], context_len=v["q4_S"],
                                                    overlap=True)
_rate6 = lambda t: lambda v: v["q5_B"] / t(v) / v["q5_n"]
_time5 = lambda v: _step5(v).time
_time5_overlapped = lambda v: _step5(v).time_overlapped
_KV_HEADS = ("Only the key/value heads are cached: with grouped-query attention the H query heads "
             "share K key/value heads, so count K, not H.")
_TWO_TWOS = ("Two factors of 2: the cache holds both keys and values, and each bf16 number takes "
             "2 bytes.")

PARTS = (
    Part("kv_bytes_per_token", _kv1, slips=(
        Slip("H heads", lambda v: _kv1(v) * v["q1_H"] / v["q1_K"], _KV_HEADS),
        Slip("one factor 2", lambda v: _kv1(v) / 2, _TWO_TWOS, alternatives=('bf16 or fp32',)),
        Slip("no factor 2", lambda v: _kv1(v) / 4,
             "Count the keys and the values (x2) and 2 bytes per bf16 number (x2)."),
        Slip("one layer", lambda v: _kv1(v) / v["q1_L"],
             "That is one layer: each of the L layers caches its own keys and values."),
    ), unit="bytes"),
    Part("kv_bytes_per_sequence", _seq1, slips=(
        Slip("H heads", lambda v: _seq1(v) * v["q1_H"] / v["q1_K"], _KV_HEADS),
        Slip("one factor 2", lambda v: _seq1(v) / 2, _TWO_TWOS, alternatives=('bf16 or fp32',)),
        Slip("GB", lambda v: _seq1(v) / 1e9, "The answer is in bytes, not GB."),
    ), unit="bytes"),
    Part("max_batch", _fits1, rel=0.001, slips=(
        Slip("weights left out", lambda v: v["q1_n"] * v["q1_hbm"] // _seq1(v),
             "The weights sit in the same HBM: subtract their 2 bytes per parameter before you "
             "fill the rest with caches."),
        Slip("H heads", lambda v: _raw1(v) * v["q1_K"] // v["q1_H"],
             "Only the key/value heads are cached: count K, not H."),
        Slip("unrounded", distinct_from(_fits1, _raw1, 0.001),
             "Round down: a part of a sequence is no sequence."),
    ), unit="count"),
    Part("prefill_flops", lambda v: _prefill2(v).flops, slips=(
        Slip("no attention", lambda v: v["q2_T"] * 2 * v["q2_P"],
             "Add the attention core: 4·T·H·d_h FLOPs per token per layer, which at long prompts "
             "rivals the weights' 2·P."),
        Slip("training", lambda v: 3 * _prefill2(v).flops,
             "Serving runs the forward pass only: 2 FLOPs per weight per token, not the 6 of "
             "training.", alternatives=('forward only',)),
    ), unit="FLOPs"),
    Part("prefill_intensity", lambda v: _prefill2(v).intensity, slips=(
        Slip("elements", lambda v: 2 * _prefill2(v).intensity,
             "Each bf16 weight and cache entry is 2 bytes: count bytes, not numbers."),
        Slip("one token", lambda v: _prefill2(v).intensity / v["q2_T"],
             "The weights are read once for all T tokens: divide the whole prefill's FLOPs by "
             "the bytes it moves, not one token's FLOPs."),
    ), unit="FLOPs/byte"),
    Part("prefill_time", lambda v: _prefill2(v).time, slips=(
        Slip("memory time", lambda v: _prefill2(v).t_memory,
             "That is the time to move the bytes; with an intensity far above C / W_hbm the "
             "prefill is compute-bound: FLOPs / C."),
        Slip("sparse rate", lambda v: _prefill2(v).time / 2,
             "Use the dense bf16 rate; the datasheet's larger figure assumes 2:4 sparsity."),
        Slip("ms", lambda v: _prefill2(v).time * 1e3, "The answer is in seconds, not milliseconds.", alternatives=('ms for s',)),
    ), unit="s"),
    Part("decode_time", lambda v: _decode3(v).time, slips=(
        Slip("compute time", lambda v: _decode3(v).t_compute,
             "At batch 1 decode is memory-bound: 2 FLOPs per weight against 2 bytes per weight is "
             "an intensity of 1, far below C / W_hbm. Time the bytes."),
        Slip("no cache", lambda v: _decode3(v).weight_bytes / v["q2_hbm_bw"],
             "Each step also reads the sequence's whole cache: S tokens of keys and values."),
        Slip("ms", lambda v: _decode3(v).time * 1e3, "The answer is in seconds, not milliseconds.", alternatives=('ms for s',)),
    ), unit="s"),
    Part("decode_tokens_per_s", lambda v: _decode3(v).tokens_per_s, slips=(
        Slip("compute rate", lambda v: 1 / _decode3(v).t_compute,
             "At batch 1 decode is memory-bound: the step takes as long as reading the weights "
             "and the cache, not as long as its FLOPs."),
        Slip("per ms", lambda v: _decode3(v).tokens_per_s / 1e3,
             "Tokens per second, not per millisecond."),
    ), unit="tokens/s"),
    Part("decode_time_int8", lambda v: _decode3_int8(v).time, slips=(
        Slip("cache halved too", lambda v: _decode3(v).time / 2,
             "Only the weights are int8: the cache stays bf16, 2 bytes per number, so its bytes "
             "do not halve."),
        Slip("unchanged", lambda v: _decode3(v).time,
             "The step is memory-bound, so what int8 changes is the bytes read: 1 byte per "
             "weight instead of 2."),
        Slip("8 bytes", lambda v: (8 * v["q2_P"] + _decode3(v).kv_bytes) / v["q2_hbm_bw"],
             "int8 is 8 bits: 1 byte per weight, not 8."),
    ), unit="s"),
    Part("critical_batch", _crit4, slips=(
        Slip("sparse rate", lambda v: 2 * _crit4(v),
             "Use the dense bf16 rate: the datasheet's larger figures assume 2:4 sparsity or "
             "int8."),
        Slip("half", lambda v: _crit4(v) / 2,
             "Each 2-byte weight takes part in 2·B FLOPs per step: the intensity is B FLOPs per "
             "byte, so the step turns compute-bound at B = C / W_hbm, not half."),
    ), unit="count"),
    Part("critical_batch_int8", lambda v: decode_critical_batch(_m4(v), v["q4_gpu"], weight_dtype="int8"),
         slips=(
        Slip("bf16 bytes", lambda v: 2 * decode_critical_batch(_m4(v), v["q4_gpu"], weight_dtype="int8"),
             "1-byte weights halve the bytes a step reads for the same FLOPs, so the step turns "
             "compute-bound at half the batch (and the matmuls stay at the bf16 rate)."),
        Slip("int8 rate", lambda v: 4 * decode_critical_batch(_m4(v), v["q4_gpu"], weight_dtype="int8"),
             "The matmuls run at the bf16 rate (the weights are widened to bf16 once loaded): "
             "the int8 rate does not apply."),
    ), unit="count"),
    Part("critical_batch_long", _crit4_long, conventions=(
        Convention("overlapped", _crit4_overlapped, PINNED, phrase=PHASED, hint=(
            "That is where the step's totals balance, all FLOPs / C = all bytes / W_hbm: the "
            "overlapped bound, as if attention's cache reads hid under the weight matmuls' "
            "compute. This homework runs the phases one after another: the weight matmuls turn "
            "compute-bound at their own balance point, which the cache does not move, and "
            "attention stays memory-bound at every batch.")),
    ), slips=(
        Slip("sparse rate", lambda v: 2 * _crit4_long(v),
             "Use the dense bf16 rate: the datasheet's larger figures assume 2:4 sparsity or "
             "int8."),
    ), unit="count"),
    Part("allreduces_per_step", lambda v: 2 * v["q5_L"], rel=0.001, slips=(
        Slip("one per layer", lambda v: v["q5_L"],
             "Each layer has two blocks that end in a partial sum, attention and the MLP: two "
             "AllReduces per layer."),
        Slip("one layer", lambda v: 2,
             "That is one layer: every one of the L layers does its two AllReduces."),
    ), unit="count"),
    Part("allreduce_time", _ar5, slips=(
        Slip("one half", _ar5_slip(doubled=False),
             "An AllReduce is a ReduceScatter followed by an AllGather: twice the cost of one of "
             "them."),
        Slip("no latency", _ar5_slip(latency=False),
             "Add the latency, (n − 1) steps of 1 µs in each half: for decode's small messages it "
             "is most of the time."),
        Slip("fp32", _ar5_slip(bytes_factor=2), "The activations are bf16: 2 bytes per number."),
        Slip("µs", lambda v: _ar5(v) * 1e6, "The answer is in seconds, not microseconds."),
    ), unit="s"),
    Part("decode_step_time", _time5, conventions=(
        Convention("overlapped", distinct_from(_time5, _time5_overlapped), PINNED, phrase=PHASED,
                   hint=_OVERLAPPED),
    ), slips=(
        Slip("no AllReduces", lambda v: _step5(v).time - _step5(v).t_comm,
             "Add the AllReduces: 2·L of them, which the GPUs wait for."),
        Slip("one AllReduce per layer", lambda v: _step5(v).time - _step5(v).t_comm / 2,
             "Two AllReduces per layer, after attention and after the MLP, not one."),
        Slip("compute-bound", lambda v: _step5(v).t_compute + _step5(v).t_comm,
             "Decode at this batch and context is memory-bound: time the bytes of weights and "
             "caches, not the FLOPs."),
        Slip("every GPU reads all", lambda v: _step5(v).t_memory * v["q5_n"] + _step5(v).t_comm,
             "Each GPU reads only its 1/n share of the weights and of the caches: divide the "
             "bytes by n GPUs' bandwidth."),
        Slip("ms", lambda v: _step5(v).time * 1e3, "The answer is in seconds, not milliseconds.", alternatives=('ms for s',)),
    ), unit="s"),
    Part("tokens_per_s_per_gpu", lambda v: _step5(v).tokens_per_s_per_chip, conventions=(
        Convention("overlapped", distinct_from(_rate6(_time5), _rate6(_time5_overlapped)), PINNED,
                   phrase=PHASED, hint=_OVERLAPPED),
    ), slips=(
        Slip("whole slice", lambda v: _step5(v).tokens_per_s,
             "That is the whole slice's rate: divide by its n GPUs to compare with other slice "
             "sizes.", alternatives=('per chip or global',)),
        Slip("one token per step", lambda v: 1 / _step5(v).time,
             "A step produces one token for each of the B sequences, not one in all."),
    ), unit="tokens/s"),
    Part("cost_per_million_tokens", _cost6, conventions=(
        Convention("overlapped", distinct_from(_cost6, lambda v: _cost6(v) * _time5_overlapped(v)
                                               / _time5(v)), PINNED, phrase=PHASED,
                   hint=_OVERLAPPED),
    ), slips=(
        Slip("slice price, GPU rate", lambda v: _cost6(v) * v["q5_n"],
             "Divide the whole slice's price by the whole slice's rate (or one GPU's price by "
             "one GPU's rate), not the slice's price by one GPU's rate.", alternatives=('per chip or global',)),
        Slip("per hour as per second", lambda v: _cost6(v) * 3600,
             "The price is per hour: divide it by 3,600 to get dollars per second."),
        Slip("one token", lambda v: _cost6(v) / 1e6,
             "That is the cost of one token; the part asks for a million."),
    ), unit="dollars"),
    Part("smallest_slice", _slice7, rel=0.001, slips=(
        Slip("weights only", distinct_from(_slice7, lambda v: smallest_power_of_two(
            weight_bytes(_m7(v), "bf16"), v["q7_hbm"]) or float("nan"), 0.001),
             "The caches need room too: B sequences of S tokens each, beside the weights."),
        Slip("not a slice size", distinct_from(_slice7, lambda v: -(-_need7(v) // v["q7_hbm"]), 0.001),
             "Slices come in 1, 2, 4 or 8 GPUs: take the smallest of these that holds "
             "everything."),
        Slip("unrounded", distinct_from(_slice7, lambda v: _need7(v) / v["q7_hbm"], 0.001),
             "Round up to a whole slice of 1, 2, 4 or 8 GPUs."),
    ), unit="count"),
    Part("best_batch", _best7, conventions=(
        Convention("overlapped", distinct_from(_best7, best_batch_overlapped), PINNED,
                   phrase=PHASED, hint=_OVERLAPPED),
    ), slips=(
        Slip("no AllReduces", best_batch_without_allreduces,
             "Count the AllReduces: 2·L per step, and their bytes grow with B."),
    ), unit="count"),
)


# --------------------------------------------------------------------------- problem 8: design

#: Problem 8's weight dtypes, and the margin over the solver's cheapest that earns full points.
DTYPES8, MARGIN8 = ("bf16", "int8"), 0.10


@lru_cache(maxsize=256)
def _cheapest8(model_name: str, gpu: str, context: int, target: float, price: float):
    """(cost per million tokens, [n, batch, dtype]) of the cheapest configuration meeting the
    target: for each slice and weight dtype the largest batch that meets it (cost falls with
    the batch while the step stays memory-bound), then the cheapest of those."""
    cfg = model(model_name)
    options = []
    for n in SLICES:
        for dtype in DTYPES8:
            b = best_batch(cfg, gpu, latency_target=target, context_len=context, n_chips=n,
                           weight_dtype=dtype)
            if b:
                step = decode_step(cfg, gpu, batch=b, context_len=context, n_chips=n,
                                   weight_dtype=dtype)
                options.append((cost_per_million_tokens(step.tokens_per_s, n_chips=n,
                                                        price_per_chip_hour=price), [n, b, dtype]))
    if not options:
        raise ValueError("no serving configuration meets the target")
    return min(options, key=lambda o: (o[0], o[1][0]))


def best_serving8(v: Mapping[str, Any]) -> list:
    """Problem 8's reference answer: the solver's cheapest configuration."""
    return list(_cheapest8(v["q8_model"], v["q8_gpu"], v["q8_S"], v["q8_target"], v["q6_price"])[1])


def _does_not_fit8(cfg, gpu: str, s: int, n: int, b: int, dtype: str, fits: int) -> str:
    """Why ``b`` caches do not fit: what they and the weights need, what the slice holds, and the
    shortfall (so rounded figures never read as equal), in singular or plural as the counts are."""
    need = weight_bytes(cfg, dtype) + b * s * kv_bytes_per_token(cfg, "bf16")
    hold = n * get_chip(gpu).hbm_bytes
    caches = "cache" if b == 1 else "caches"
    gpus = f"{n} {gpu}" + ("" if n == 1 else "s")
    holds = "holds" if n == 1 else "hold"
    room = ("not even the weights fit" if fits < 1 else
            f"at most {fits} sequence{'' if fits == 1 else 's'} fit")
    return (f"It does not fit: {dtype} weights and {b} {caches} of {s:,} tokens need "
            f"{need / 1e9:.1f} GB; {gpus} {holds} {hold / 1e9:.1f} GB, {(need - hold) / 1e9:.1f} GB "
            f"short ({room}).")


def judge_serving8(v: Mapping[str, Any], value: Any) -> Verdict:
    """Full points for any [GPUs, batch, weight dtype] that fits, meets the latency target and
    costs at most 10% more per million tokens than the solver's cheapest; otherwise why not."""
    if not isinstance(value, list) or len(value) != 3:
        return Verdict(False, ("Give a list of 3: [GPUs, batch, weight dtype].",))
    n, b, dtype = value
    n = whole_number(n, "The number of GPUs")
    if isinstance(n, str):
        return Verdict(False, (n,))
    if n not in SLICES:
        return Verdict(False, (f"A slice here is 1, 2, 4 or 8 GPUs of one node, not {value[0]!r}.",))
    if dtype not in DTYPES8:
        return Verdict(False, (f"The weights are \"bf16\" or \"int8\", not {dtype!r}.",))
    b = whole_number(b, "The batch")
    if isinstance(b, str):
        return Verdict(False, (b,))
    if b < 1:
        return Verdict(False, (f"The batch is a whole number of sequences, at least 1, not "
                               f"{value[1]!r}.",))
    cfg, gpu, s = model(v["q8_model"]), v["q8_gpu"], v["q8_S"]
    fits = max_batch(cfg, gpu, context_len=s, n_chips=n, weight_dtype=dtype)
    if b > fits:
        return Verdict(False, (_does_not_fit8(cfg, gpu, s, n, b, dtype, fits),))
    step = decode_step(cfg, gpu, batch=b, context_len=s, n_chips=n, weight_dtype=dtype)
    if step.time > v["q8_target"]:
        return Verdict(False, (f"A step takes {step.time * 1e3:.1f} ms, over the "
                               f"{v['q8_target'] * 1e3:.0f} ms target.",))
    cost = cost_per_million_tokens(step.tokens_per_s, n_chips=n, price_per_chip_hour=v["q6_price"])
    best = _cheapest8(v["q8_model"], gpu, s, v["q8_target"], v["q6_price"])[0]
    return near_best(cost, best, MARGIN8, "It meets the target, but a million tokens cost "
                     f"${cost:.3g}", "more than the cheapest configuration")


DESIGNS = (Design(
    "serving_config", best_serving8, judge_serving8,
    form='a list [GPUs, batch, weight dtype], e.g. [4, 32, "bf16"]', length=3,
    examples=(
        Example("batch 1", lambda v: [best_serving8(v)[0], 1, best_serving8(v)[2]],
                "more than the cheapest"),
    )),)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS` (:func:`scalebook.homework.parts.well_posed`), and:

    - P1 (c): the weights fit on the slice and leave room for 4 to 2,000 sequences;
    - P4 (c): the overlapped bound's critical batch with S-token caches (the pinned convention)
      is finite, at least 10% above the phased answer (the cache-free one of (a)) and at most
      4 times it (nearer the context where the bound finds no batch, honest rounding of the
      inputs would move it by more than 5%);
    - P5: the batch's caches fit on the slice and decode is memory-bound;
    - P7 (a): the answer is one of 1, 2, 4, 8 GPUs, and not the slice that holds the weights
      alone (the caches must matter); (b): on P5's slice, the largest batch that meets the
      target is at least 20 and below the batch that fits (the latency decides it).
    """
    m1 = model(v["q1_model"])
    if v["q1_n"] * v["q1_hbm"] <= weight_bytes(m1):
        return False
    with_cache = _crit4_overlapped(v)
    no_cache = v["q4_flops"] / v["q4_hbm_bw"]
    cfg5 = model(v["q5_model"])
    if max_batch(cfg5, v["q5_gpu"], context_len=v["q5_S"], n_chips=v["q5_n"]) < v["q5_B"]:
        return False
    try:
        slice7 = _slice7(v)
    except ValueError:
        return False
    best = _best7(v)
    fits = max_batch(cfg5, v["q5_gpu"], context_len=v["q5_S"], n_chips=v["q5_n"])
    return (4 <= _fits1(v) <= 2000 and _raw1(v) * v["q1_K"] // v["q1_H"] >= 1
            and 1.1 * no_cache <= with_cache <= 4 * no_cache
            and _step5(v).bound == "memory"
            and smallest_power_of_two(weight_bytes(_m7(v)), v["q7_hbm"]) != slice7
            and 20 <= best < fits
            and parts_well_posed(PARTS + DESIGNS, v))


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

"""hw4-parallelism: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1, what a training run costs: the model (LLaMA-3 70B, 8B or 405B-like: its matmul weights),
  the training tokens, the TPU whose full pod trains it (v5p, v5e, v6e: chips whose int8 rate
  is twice their bf16 rate, so the "used the int8 rate" slip stays a distinct wrong answer) and
  the MFU.
- P2, what Adam keeps: the model (its total parameters) and the GPU (its HBM): (a) the
  optimizer state of the model, (b) the largest model one GPU trains, (c) the fewest GPUs.
- P3, data parallelism: the TPU (v5p, v4p, v6e: C and the wrapped axis's W), the stack's
  D, F and L, and the data-parallel degree X (4, 8 or 16: only axes the catalog builds as a
  ring, :func:`ring_axis`; a v6e axis wraps only at its full 16 chips).
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
- P10, choosing a layout (a :class:`~scalebook.homework.parts.Design`): the model, the GPU, the
  GPU count and the global batch; graded by :func:`judge_layout10`.

Each answer is one :class:`~scalebook.homework.parts.Part` of :data:`PARTS`: its expected value
is a solver call; the exact ring factor (N − 1)/N is an accepted convention wherever a ring
collective enters an answer (the title says so), and 16 bytes per parameter in problems 3 and 4
is a pinned one (their text says "no master copy", "12 bytes per parameter").
"""

from __future__ import annotations

import math
from .alternatives import NO_LINK, ONE_PASS
from functools import lru_cache
from typing import Any, Mapping

from ..hardware import get_chip
from ..parallelism import (Layout, MLPStack, axis_bandwidth, critical_batch_per_chip_dp,
                           critical_batch_per_chip_fsdp, data_parallel, estimate, fsdp,
                           max_chips_compute_bound, max_tensor_parallel,
                           min_batch_per_chip_fsdp_tp, min_microbatches, pipeline_bubble_fraction,
                           tensor_parallel)
from ..topology import tpu_slice
from ..training import (MIXED_PRECISION_ADAM, TrainingLayout, best_training_layout, fewest_chips,
                        llama3_405b, plan_training, run_time, training_memory)
from ..transformer import llama3_8b, llama3_70b, param_count, training_flops
from ..variants import Choice, VariantSpec
from .parts import (ACCEPTED, PINNED, Convention, Design, Example, Part, Slip, Verdict, near_best,
                    whole_number)
from .parts import well_posed as parts_well_posed

#: The models problems 1 and 2 may name, by the name the text gives them.
MODELS = {"LLaMA-3 70B": llama3_70b, "LLaMA-3 8B": llama3_8b, "LLaMA-3 405B": llama3_405b}

PARAMETERS = {
    "q1_model": Choice(tuple(MODELS), "model"),
    "q1_tokens": Choice((15e12, 2e12, 8e12, 30e12), "T", "tokens"),
    "q1_chip": Choice(("TPU v5p", "TPU v5e", "TPU v6e"), "TPU"),
    "q1_mfu": Choice((0.45, 0.4, 0.6, 0.35), "MFU", fmt="{:.0%}"),
    "q2_model": Choice(tuple(MODELS), "model"),
    "q2_gpu": Choice(("H100", "H200", "A100", "B200"), "GPU"),
    "q3_chip": Choice(("TPU v5p", "TPU v4p", "TPU v6e"), "TPU"),
    "q3_D": Choice((4096, 8192, 2048), "D"),
    "q3_F": Choice((16384, 32768, 8192, 24576), "F"),
    "q3_L": Choice((32, 48, 24, 64), "L", "layers"),
    "q3_X": Choice((16, 8, 4), "X", "chips"),
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
    "q10_model": Choice(("LLaMA-3 70B", "LLaMA-3 8B"), "model"),
    "q10_gpu": Choice(("H100", "H200"), "GPU"),
    "q10_n": Choice((64, 128, 256), "N", "GPUs"),
    "q10_B": Choice((512, 256, 1024), "B", "sequences"),
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



# --------------------------------------------------------------------------- the parts

def _stack(v: Mapping[str, Any]) -> MLPStack:
    """Problem 3's MLP stack (problems 4 and 8 reuse it)."""
    return MLPStack(d_model=v["q3_D"], d_ff=v["q3_F"], n_layers=v["q3_L"])


def _ring(v: Mapping[str, Any]) -> float:
    """The exact ring factor (X − 1)/X of problem 3's axis."""
    return (v["q3_X"] - 1) / v["q3_X"]


def _q2_memory(v: Mapping[str, Any]):
    return training_memory(MODELS[v["q2_model"]](), precision=MIXED_PRECISION_ADAM)


def _dp(v: Mapping[str, Any]):
    return data_parallel(_stack(v), v["q3_chip"], 2 ** 20, v["q3_X"])


def _fsdp(v: Mapping[str, Any]):
    return fsdp(_stack(v), v["q3_chip"], 2 ** 20, v["q3_X"])


def _state(memory) -> float:
    return memory.parameters + memory.gradients + memory.optimizer_state


def _tp(v: Mapping[str, Any]):
    return tensor_parallel(MLPStack(d_model=v["q5_D"], d_ff=v["q5_F"], n_layers=1), v["q5_gpu"],
                           v["q5_B"], 8)


def _remat(v: Mapping[str, Any]) -> float:
    return float(estimate(_stack(v), Layout(data=v["q8_X"]), v["q3_chip"],
                          v["q8_B"]).memory.activations)


def _exact_ring(expected, ring=_ring) -> Convention:
    """The exact ring cost, (N − 1)/N of the first cut the text states: what hw3 requires, so
    accepted here."""
    return Convention("exact ring (N-1)/N", lambda v: expected(v) * ring(v), ACCEPTED)


_MASTER_16 = ("This problem keeps **no** fp32 master copy: 12 bytes per parameter (bf16 weights "
              "and gradients, two fp32 moments), not problem 2's 16.")
_BOTH_WAYS = ("That is twice the answer. Gradients and weights move in bf16 (2 bytes), and a wrapped "
              "ICI axis moves data both ways round the ring: W = {q3_ici:.3g} bytes/s, not one "
              "direction's half.")

_train_flops = lambda v: training_flops(MODELS[v["q1_model"]](), v["q1_tokens"])
_train_time = lambda v: run_time(_train_flops(v), v["q1_n_chips"], v["q1_chip"], mfu=v["q1_mfu"])
_min_gpus = lambda v: fewest_chips(_q2_memory(v).state, v["q2_gpu"])
_dp_bytes = lambda v: _state(_dp(v).memory)
_t_grad = lambda v: _dp(v).backward_comms_time * v["q3_L"]
_dp_critical = lambda v: critical_batch_per_chip_dp(v["q3_chip"])
_dp_global = lambda v: v["q3_X"] * critical_batch_per_chip_dp(v["q3_chip"])
_fsdp_bytes = lambda v: _state(_fsdp(v).memory)
_t_gather = lambda v: _fsdp(v).forward_comms_time
_t_fsdp_step = lambda v: (_fsdp(v).forward_comms_time + _fsdp(v).backward_comms_time) * v["q3_L"]
_t_tp = lambda v: _tp(v).forward_comms_time
_tp_count = lambda v: round((_tp(v).forward_comms_time + _tp(v).backward_comms_time)
                            / (v["q5_B"] * v["q5_D"] * 2 / axis_bandwidth(v["q5_gpu"])))
_max_tp = lambda v: max_tensor_parallel(v["q5_gpu"], v["q5_F"])
_alpha6 = lambda v: v["q6_bf16_flops"] / v["q6_ici"]
_min_2d = lambda v: min_batch_per_chip_fsdp_tp(v["q6_chip"], v["q6_F"])
_chips_2d = lambda v: max_chips_compute_bound(v["q6_B"], v["q6_chip"], "fsdp_tp", d_ff=v["q6_F"])
_no_remat = lambda v: _remat(v) * (v["q3_D"] + 2 * v["q3_F"]) / v["q3_D"]
_remat_factor = lambda v: (_stack(v).training_flops(1.0) + 2.0 * _stack(v).n_params) / _stack(v).training_flops(1.0)

PARTS = (
    Part("train_flops", _train_flops, slips=(
        Slip("forward only", lambda v: _train_flops(v) / 3,
             "That counts the forward pass only (2 FLOPs per weight per token); the backward pass "
             "costs twice as much again: 6 per weight per token in all.", alternatives=('forward only',)),
        Slip("backward only", lambda v: _train_flops(v) * 2 / 3,
             "That is the backward pass alone (4 FLOPs per weight per token); add the forward "
             "pass's 2."),
    ), unit="FLOPs"),
    Part("train_time", _train_time, slips=(
        Slip("times MFU", lambda v: _train_time(v) * v["q1_mfu"],
             "At {q1_mfu:.0%} MFU the chips deliver only {q1_mfu:g} of their peak: divide by it."),
        Slip("times MFU squared", lambda v: _train_time(v) * v["q1_mfu"] ** 2,
             "Divide by the MFU, do not multiply: the run is slower than at peak."),
        Slip("int8 rate", lambda v: _train_time(v) / 2,
             "Use the bf16 rate, {q1_bf16_flops:.3g} FLOPs/s; int8 is twice as fast."),
        Slip("days", lambda v: _train_time(v) / 86400, "The answer is in seconds, not days."),
    ), unit="s"),
    Part("optimizer_bytes", lambda v: MIXED_PRECISION_ADAM.optimizer_bytes * v["q2_n_params"],
         slips=(
        Slip("2 bytes of state", lambda v: 2 * v["q2_n_params"],
             "Adam's state is not 2 bytes per parameter: it keeps two fp32 moments (4 bytes each) "
             "and, with mixed precision, an fp32 master copy of the weights (4 bytes).", alternatives=('bf16 or fp32',)),
        Slip("one moment", lambda v: 4 * v["q2_n_params"],
             "Adam keeps two moments, m and v, each fp32 (4 bytes), and mixed precision adds an "
             "fp32 master copy of the weights (4 bytes)."),
        Slip("no master copy", lambda v: 8 * v["q2_n_params"],
             "Mixed precision also keeps an fp32 master copy of the weights: 4 more bytes per "
             "parameter."),
        Slip("whole state", lambda v: 16 * v["q2_n_params"],
             "This part asks for the optimizer state alone, without the bf16 weights and "
             "gradients."),
        Slip("bytes per parameter", lambda v: MIXED_PRECISION_ADAM.optimizer_bytes,
             "That is per parameter; the part asks for the whole model's {q2_n_params:,}."),
    ), unit="bytes"),
    Part("max_params_one_gpu", lambda v: v["q2_hbm_gb"] * 1e9 / MIXED_PRECISION_ADAM.bytes_per_param,
         conventions=(
        Convention("80 GB read as GiB", lambda v: v["q2_hbm_gb"] * 2 ** 30 / 16, PINNED,
                   phrase="1 GB = 1e9 bytes",
                   hint="This course counts 1 GB = 1e9 bytes (the datasheets' GB), not 2^30.", alternatives=('GB read as GiB',)),
    ), slips=(
        Slip("weights only", lambda v: v["q2_hbm_gb"] * 1e9 / 2,
             "That fits the bf16 weights alone; training also keeps gradients and the optimizer "
             "state: 16 bytes per parameter."),
        Slip("2 bytes of state", lambda v: v["q2_hbm_gb"] * 1e9 / 6,
             "Adam's state is not 2 bytes per parameter: two fp32 moments and the fp32 master "
             "copy make 12, 16 in all.", alternatives=('bf16 or fp32',)),
        Slip("optimizer only", lambda v: v["q2_hbm_gb"] * 1e9 / 12,
             "Count all four: bf16 weights (2), bf16 gradients (2), the fp32 master copy (4) and "
             "the two fp32 Adam moments (8)."),
    ), unit="params"),
    Part("min_gpus", _min_gpus, rel=0.001, slips=(
        Slip("unrounded", lambda v: _q2_memory(v).state / get_chip(v["q2_gpu"]).hbm_bytes,
             "A chip count is a whole number: round up."),
        Slip("rounded down", lambda v: math.floor(_q2_memory(v).state / get_chip(v["q2_gpu"]).hbm_bytes),
             "Round up, not down: the whole state must fit."),
        Slip("weights only", lambda v: fewest_chips(_q2_memory(v).weights, v["q2_gpu"]),
             "That holds the bf16 weights only; training keeps 16 bytes per parameter with "
             "mixed-precision Adam."),
        Slip("2 bytes of state", lambda v: fewest_chips(6 * _q2_memory(v).n_params, v["q2_gpu"]),
             "Adam's state is not 2 bytes per parameter: count 16 bytes per parameter in all.", alternatives=('bf16 or fp32',)),
        Slip("no master copy", lambda v: fewest_chips(12 * _q2_memory(v).n_params, v["q2_gpu"]),
             "Mixed precision keeps an fp32 master copy of the weights too: 16 bytes per "
             "parameter in all, not 12."),
    ), unit="count"),
    Part("dp_bytes_per_chip", _dp_bytes, conventions=(
        Convention("16 bytes per parameter (master copy)", lambda v: _dp_bytes(v) * 16 / 12, PINNED,
                   phrase="master copy here: 12 bytes", hint=_MASTER_16),
    ), slips=(
        Slip("FSDP's figure", lambda v: _dp_bytes(v) / v["q3_X"],
             "That is FSDP's figure. Pure data parallelism keeps a full replica of the weights, "
             "gradients and Adam state on every chip."),
        Slip("weights only", lambda v: 2 * _stack(v).n_params,
             "That is the bf16 weights alone; add gradients and Adam's moments."),
        Slip("2 bytes of state", lambda v: 6 * _stack(v).n_params,
             "Adam's state is not 2 bytes per parameter: two fp32 moments take 8.", alternatives=('bf16 or fp32',)),
    ), unit="bytes"),
    Part("t_grad_allreduce", _t_grad, conventions=(_exact_ring(_t_grad),), slips=(
        Slip("one AllGather", lambda v: _t_grad(v) / 2,
             "An AllReduce is a ReduceScatter followed by an AllGather: 2·V/W, not V/W."),
        Slip("twice", lambda v: _t_grad(v) * 2, _BOTH_WAYS),
        Slip("divided by X", lambda v: _t_grad(v) / v["q3_X"],
             "A ring collective's time V/W does not shrink with the number of chips: each chip "
             "still sends and receives almost the whole array.", alternatives=('per chip or global',)),
    ), unit="s"),
    Part("dp_critical_tokens_per_chip", _dp_critical, conventions=(_exact_ring(_dp_critical),),
         slips=(
        Slip("global batch", lambda v: _dp_critical(v) * v["q3_X"],
             "That is the global batch of all {q3_X} chips; the question asks per chip."),
        Slip("one way", lambda v: _dp_critical(v) * 2,
             "A wrapped ICI axis moves data both ways round the ring: W = {q3_ici:.3g} bytes/s, "
             "not one direction's half."),
        Slip("AllReduce factor", lambda v: _dp_critical(v) / 2,
             "The AllReduce's factor 2 is matched by the backward pass's 8·B·D·F FLOPs (twice "
             "the forward's): the threshold is C / W."),
    ), unit="count"),
    Part("dp_min_global_batch", _dp_global, conventions=(_exact_ring(_dp_global),), slips=(
        Slip("per chip", lambda v: _dp_critical(v),
             "That is the batch each chip needs; the global batch feeds all {q3_X} chips.", alternatives=('per chip or global',)),
        Slip("one way", lambda v: _dp_global(v) * 2,
             "A wrapped ICI axis moves data both ways round the ring: W = {q3_ici:.3g} bytes/s, "
             "not one direction's half."),
    ), unit="count"),
    Part("fsdp_bytes_per_chip", _fsdp_bytes, conventions=(
        Convention("16 bytes per parameter (master copy)", lambda v: _fsdp_bytes(v) * 16 / 12,
                   PINNED, phrase="(12 bytes per parameter", hint=_MASTER_16),
    ), slips=(
        Slip("DP's replica", lambda v: _fsdp_bytes(v) * v["q3_X"],
             "That is plain data parallelism's replica. FSDP splits the weights, the gradients "
             "and the optimizer state {q3_X} ways."),
        Slip("ZeRO-1", lambda v: 4 * _stack(v).n_params + 8 * _stack(v).n_params / v["q3_X"],
             "That shards only the optimizer state (ZeRO-1). FSDP also splits the bf16 weights "
             "and gradients."),
        Slip("weights' shard only", lambda v: 2 * _stack(v).n_params / v["q3_X"],
             "That is the weights' shard alone; add the gradients and Adam's moments."),
    ), unit="bytes"),
    Part("t_fsdp_gather_layer", _t_gather, conventions=(_exact_ring(_t_gather),), slips=(
        Slip("divided by X", lambda v: _t_gather(v) / v["q3_X"],
             "A ring AllGather of a V-byte array takes about V/W whatever the number of chips: "
             "each chip receives the (X − 1)/X of it that it lacks.", alternatives=('per chip or global',)),
        Slip("twice", lambda v: _t_gather(v) * 2,
             "That is twice the answer: an AllGather costs V/W (2·V/W is an AllReduce), the "
             "weights are bf16, and a wrapped axis moves W = {q3_ici:.3g} bytes/s both ways."),
        Slip("all layers", lambda v: _t_gather(v) * v["q3_L"], "One layer, not all {q3_L}.", alternatives=('one layer or all layers',)),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("t_fsdp_comms_step", _t_fsdp_step, conventions=(_exact_ring(_t_fsdp_step),), slips=(
        Slip("DP's AllReduce", lambda v: _t_fsdp_step(v) * 2 / 3,
             "That is data parallelism's gradient AllReduce (2·V/W per layer). FSDP also gathers "
             "the weights again for the backward pass: AllGather, AllGather and ReduceScatter, "
             "3·V/W per layer."),
        Slip("forward only", lambda v: _t_fsdp_step(v) / 3,
             "Count the backward pass too: it AllGathers the weights again and ReduceScatters "
             "the gradients."),
    ), unit="s"),
    Part("tp_collectives_per_layer", _tp_count, rel=0.001, slips=(
        Slip("one AllReduce", lambda v: 1,
             "With activations sharded along D, the forward pass's AllReduce is split into an "
             "AllGather before W_in and a ReduceScatter after W_out, and the backward pass "
             "repeats the pair."),
        Slip("forward only", lambda v: 2,
             "Count the backward pass too: it has its own AllGather and ReduceScatter."),
        Slip("weight gradients too", lambda v: 6,
             "The weight gradients need no collective under TP: each GPU owns its slice of W_in "
             "and W_out and computes that slice's gradient locally."),
    ), unit="count"),
    Part("t_tp_comms_forward", _t_tp, conventions=(_exact_ring(_t_tp, lambda v: 7 / 8),), slips=(
        Slip("one collective", lambda v: _t_tp(v) / 2,
             "The forward pass has two collectives per layer: an AllGather of In and a "
             "ReduceScatter of the output."),
        Slip("divided by 8", lambda v: _t_tp(v) / 8,
             "A ring collective over Y GPUs takes about V/W for the full array whatever Y is: do "
             "not divide by 8."),
        Slip("twice", lambda v: _t_tp(v) * 2,
             "An AllGather and a ReduceScatter each take V/W: 2·V/W together, not 2·V/W each."),
    ), unit="s"),
    Part("max_tp_degree", _max_tp, rel=0.001, slips=(
        Slip("d_model", lambda v: math.floor(v["q5_D"] * v["q5_nvlink"] / v["q5_bf16_flops"]),
             "The condition compares F / Y with C / W: use d_ff = {q5_F}, not d_model."),
        Slip("sparse rate", lambda v: math.floor(v["q5_F"] * v["q5_nvlink"] / (2 * v["q5_bf16_flops"])),
             "Use the dense bf16 rate, {q5_bf16_flops:.3g} FLOPs/s; the datasheet's figure "
             "'with sparsity' is twice that."),
        Slip("unrounded", lambda v: v["q5_F"] * v["q5_nvlink"] / v["q5_bf16_flops"],
             "A TP degree is a whole number: round down."),
    ), unit="count"),
    Part("min_tokens_per_chip_2d", _min_2d, slips=(
        Slip("two FSDP axes", lambda v: _min_2d(v) / 2,
             "2·(C/W)²/F is the case where FSDP spans two mesh axes (twice the bandwidth); here "
             "each strategy has one axis."),
        Slip("pure FSDP", lambda v: critical_batch_per_chip_fsdp(v["q6_chip"]),
             "That is pure FSDP's threshold C/W; adding TP lowers it."),
        Slip("times F", lambda v: _min_2d(v) * v["q6_F"],
             "Divide by F: the bound is 4·(C/W)² / F."),
    ), unit="count"),
    Part("max_chips_2d", _chips_2d, rel=0.001, slips=(
        Slip("FSDP alone", lambda v: math.floor(v["q6_B"] / critical_batch_per_chip_fsdp(v["q6_chip"])),
             "That is how far FSDP alone goes (B / (C/W)); FSDP × TP needs fewer tokens per chip."),
        Slip("two FSDP axes", lambda v: _chips_2d(v) * 2,
             "Each strategy has one mesh axis here: the bound per chip is 4·(C/W)²/F, not "
             "2·(C/W)²/F."),
    ), unit="count"),
    Part("bubble_fraction", lambda v: pipeline_bubble_fraction(v["q7_K"], v["q7_M"]), slips=(
        Slip("M and K swapped", lambda v: (v["q7_M"] - 1) / (v["q7_M"] + v["q7_K"] - 1),
             "M and K are swapped: the idle slots come from the K - 1 stages filling and "
             "draining, (K - 1) / (M + K - 1)."),
        Slip("over M", lambda v: (v["q7_K"] - 1) / v["q7_M"],
             "A pass takes M + K - 1 slots, not M: divide the K - 1 idle slots by M + K - 1."),
    ), unit="fraction"),
    Part("min_microbatches", lambda v: min_microbatches(v["q7_K"], v["q7_bubble"]), rel=0.001,
         slips=(
        Slip("over M", lambda v: (v["q7_K"] - 1) / v["q7_bubble"],
             "The bubble is (K - 1) / (M + K - 1), not (K - 1) / M: the step has M + K - 1 "
             "slots."),
        Slip("K", lambda v: v["q7_K"],
             "M and K are swapped: it is the number of microbatches that must grow."),
    ), unit="count"),
    Part("act_bytes_remat", _remat, slips=(
        Slip("global batch", lambda v: _remat(v) * v["q8_X"],
             "That uses the global batch. Each chip holds the activations of its own B / X "
             "tokens only.", alternatives=('per chip or global',)),
        Slip("one byte", lambda v: _remat(v) / 2, "bf16 activations take 2 bytes per element.", alternatives=('bf16 or fp32',)),
        Slip("one layer", lambda v: _remat(v) / v["q3_L"],
             "Every one of the {q3_L} layers keeps its input.", alternatives=('one layer or all layers',)),
    ), unit="bytes"),
    Part("act_bytes_no_remat", _no_remat, slips=(
        Slip("global batch", lambda v: _no_remat(v) * v["q8_X"],
             "That uses the global batch. Each chip holds the activations of its own B / X "
             "tokens only.", alternatives=('per chip or global',)),
        Slip("remat figure", _remat,
             "That is the rematerialised figure: without remat each layer also keeps the two "
             "[tokens, F] arrays H and phi(H)."),
        Slip("one F array", lambda v: _remat(v) * (v["q3_D"] + v["q3_F"]) / v["q3_D"],
             "Both H and phi(H) are kept: two [tokens, F] arrays."),
    ), unit="bytes"),
    Part("remat_flops_factor", _remat_factor, slips=(
        Slip("whole step again", lambda v: 2.0,
             "Remat repeats the forward pass only (2 of the 6 FLOPs per weight per token), not "
             "the whole step."),
        Slip("a half", lambda v: 1.5,
             "The forward pass is 2 of the 6 FLOPs per weight per token: recomputing it adds a "
             "third, not a half."),
        Slip("inverted", lambda v: 1 / _remat_factor(v), "Give the factor with remat over without: above 1."),
    ), unit="ratio"),
)

# --------------------------------------------------------------------------- problem 10: design

#: Problem 10's sequence length (tokens), largest exposed-communication share of the step, and
#: the margin over the solver's best step time that still earns full points.
SEQ10, COMMS_SHARE10, MARGIN10 = 4096, 0.10, 0.10
#: The order of problem 10's answer list.
LAYOUT_FIELDS = ("dp", "fsdp", "tp", "pp", "zero_stage", "microbatches", "remat")


@lru_cache(maxsize=64)
def _best10(model: str, gpu: str, n: int, batch: int):
    """The solver's fastest fitting layout that keeps exposed communication within
    :data:`COMMS_SHARE10` of its step, the problem's own limit (cached: the search prices a few
    hundred layouts)."""
    return best_training_layout(MODELS[model](), gpu, n, global_batch=batch, seq_len=SEQ10,
                                max_comms_share=COMMS_SHARE10)


def best_layout10(v: Mapping[str, Any]) -> list:
    """Problem 10's reference answer: the solver's fastest layout within the problem's
    communication limit, as the answer list."""
    layout = _best10(v["q10_model"], v["q10_gpu"], v["q10_n"], v["q10_B"]).layout
    return [getattr(layout, f) for f in LAYOUT_FIELDS]


def judge_layout10(v: Mapping[str, Any], value: Any) -> Verdict:
    """Full points for any layout of the N GPUs that fits in HBM, keeps exposed communication
    at most 10% of the step, and steps within 10% of the solver's best; otherwise why not."""
    if not isinstance(value, list) or len(value) != len(LAYOUT_FIELDS):
        return Verdict(False, (f"Give a list of {len(LAYOUT_FIELDS)}: [{', '.join(LAYOUT_FIELDS)}].",))
    fields = dict(zip(LAYOUT_FIELDS, value))
    for name in LAYOUT_FIELDS[:-1]:
        count = whole_number(fields[name], name)
        if isinstance(count, str):
            return Verdict(False, (count,))
        fields[name] = count
    try:
        layout = TrainingLayout(**fields)
    except (TypeError, ValueError) as exc:
        return Verdict(False, (f"That is not a layout: {exc}.",))
    n = v["q10_n"]
    if layout.n_chips != n:
        return Verdict(False, (f"dp · fsdp · tp · pp = {layout.n_chips}: the layout must use the "
                               f"{n} GPUs, no more and no fewer.",))
    plan = plan_training(MODELS[v["q10_model"]](), layout, v["q10_gpu"], global_batch=v["q10_B"],
                         seq_len=SEQ10, n_chips=n)
    reasons = []
    if not plan.fits:
        reasons.append(f"It does not fit: it needs {plan.memory.total / 2 ** 30:.1f} GiB per GPU; "
                       f"the {v['q10_gpu']} has {plan.hbm_capacity / 2 ** 30:.1f} GiB.")
    reasons += [f"{flag[0].upper()}{flag[1:]}." for flag in plan.flags
                if flag.startswith("global batch not divisible")]
    step = plan.step_time
    share = step.comms_exposed / step.total
    if share > COMMS_SHARE10:
        reasons.append(f"Exposed communication is {share:.0%} of its step, more than the "
                       f"{COMMS_SHARE10:.0%} allowed.")
    if reasons:
        return Verdict(False, tuple(reasons))
    best = _best10(v["q10_model"], v["q10_gpu"], n, v["q10_B"]).step_time.total
    return near_best(step.total, best, MARGIN10, "It fits and meets the communication limit, but "
                     f"its step takes {step.total:.3g} s", "longer than the best layout")


DESIGNS = (Design(
    "training_layout", best_layout10, judge_layout10,
    form="a list [dp, fsdp, tp, pp, zero_stage, microbatches, remat]", length=len(LAYOUT_FIELDS),
    examples=(
        Example("pure data parallelism, no remat",
                lambda v: [v["q10_n"], 1, 1, 1, 0, 1, "none"], "does not fit: it needs"),
        Example("too few GPUs", lambda v: [1, v["q10_n"] // 2, 1, 1, 3, 1, "full"],
                "must use the"),
    )),)


#: Problem 10's numbers the homework never drew when it was first handed out, kept out so that
#: no student's numbers change. Priced with 14-step ring AllReduces, the solver's best layout
#: for these left more than 10% of the step exposed, so the draw was refused; with the node's
#: faster AllReduces (NVLS, one-shot: collectives.collective_cost's default) they would be well
#: posed, but a student holding the first notebook drew other numbers.
Q10_NOT_DRAWN = frozenset({("LLaMA-3 70B", "H100", 128, 256), ("LLaMA-3 70B", "H100", 256, 512),
                           ("LLaMA-3 70B", "H100", 256, 256)})


def ring_axis(chip: str, n: int) -> bool:
    """Whether the catalog builds a slice of ``chip`` with an axis of ``n`` chips that wraps
    around (the other axes as small as the chip allows a wrapped axis to be): through
    :func:`scalebook.topology.tpu_slice`, so a problem never states a ring no slice has."""
    limit = get_chip(chip).max_slice
    for other in ((4,) * (len(limit) - 1), tuple(sorted(limit)[:-1])):
        try:
            if tpu_slice(chip, (n, *other)).wraparound[0]:
                return True
        except ValueError:
            continue
    return False


# --------------------------------------------------------------------------- checked in the notebook
# P9 compiles a JAX program: check_q9a_specs keeps its checks of the specs and of the compiled
# collectives; the number it also asks for is this declared part, judged by check_number, so it
# is asked every alternative like the parts above (not in PARTS: the generated grade cells and
# the well-posedness rule stay as published).

_ar9 = lambda v: v["q9_B"] * v["q9_D"] * 4              # the AllReduce sums Out: f32[B, D]

NOTEBOOK_PARTS = (
    Part("allreduce_bytes", _ar9, slips=(
        Slip("scattered", lambda v: _ar9(v) / 8,
             "The AllReduce's result is the full sum, f32[B, D], on every device, not 1/8 of it.",
             ("per chip or global",)),
        Slip("2 bytes", lambda v: _ar9(v) / 2, "f32 takes 4 bytes per element.", ("bf16 or fp32",)),
        Slip("hidden activations", lambda v: v["q9_B"] * v["q9_F"] * 4,
             "The AllReduce sums the output Out[B, D], not the hidden [B, F] activations."),
    ), unit="bytes"),
)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS` (:func:`scalebook.homework.parts.well_posed`), and:

    - problem 3's X chips form a ring the catalog can build (v5p/v4p: a multiple of 4; v6e:
      the full 16-chip axis), as the text says "one ICI axis with wraparound";
    - P2 (c): the model needs several GPUs; P5 (c): F·W / C is 2 or more (a real TP degree);
      P6: TP lowers the threshold (4·α² / F at most 90% of α, so "that is pure FSDP's" stays
      wrong) and (b)'s answer is at least 2 chips;
    - P9: F >= 2·D and B < D, so that XLA compiles the classic slips to the collectives their
      hints name (with B >= D it gathers a W_in split along D instead of AllReducing);
    - P10: not one of :data:`Q10_NOT_DRAWN`.
    """
    alpha = _alpha6(v)
    return bool(ring_axis(v["q3_chip"], v["q3_X"])
                and _min_gpus(v) >= 2
                and v["q5_F"] * v["q5_nvlink"] / v["q5_bf16_flops"] >= 2
                and 4 * alpha ** 2 / v["q6_F"] <= 0.9 * alpha and _chips_2d(v) >= 2
                and v["q9_F"] >= 2 * v["q9_D"] and v["q9_B"] < v["q9_D"]
                and (v["q10_model"], v["q10_gpu"], v["q10_n"], v["q10_B"]) not in Q10_NOT_DRAWN
                and parts_well_posed(PARTS + DESIGNS, v))


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

# --------------------------------------------------------------------------- checks that are no number
# The hidden checks of the graded cells whose answers are no declared number (shapes,
# collectives, PartitionSpecs compiled by JAX): each cell calls its function, so the check is
# written once, here, and a test can call it. JAX is imported inside, as the cell did.


def check_q9a_specs(v: Mapping[str, Any], allreduce_bytes, w_in_spec, w_out_spec) -> None:
    """The hidden check of grade cell ``hw4-q9a-specs-test``: raises ``AssertionError`` (with its hint)
    unless ``allreduce_bytes``, ``w_in_spec``, ``w_out_spec`` are right for the student with numbers ``v``."""
    from scalebook.homework.parts import check_number  # looked up here: tests record it
    from scalebook.checks import check_partition_spec

    _in = check_partition_spec(w_in_spec, "w_in_spec", rank=2, axis_names=("model",))
    _out = check_partition_spec(w_out_spec, "w_out_spec", rank=2, axis_names=("model",))
    assert "model" in _in and "model" in _out, (
        "Tensor parallelism splits both weights over the 'model' axis: a spec of (None, None) keeps "
        "a full copy of that weight on every device.")
    same_losses, found = _tp_step_compiled(v["q9_B"], v["q9_D"], v["q9_F"], _in, _out)
    assert same_losses, "With these shardings the loss differs from the unsharded step's."
    kinds = [kind for kind, _axes, _nbytes in found]
    hint = ""
    if "AllGather" in kinds or "AllToAll" in kinds:
        hint = (" Hint: a weight split along the wrong dimension has to be gathered (or reshuffled) "
                "before its matmul. Split the F dimension of both weights: then each device "
                "computes tanh(In · W_in) for its own slice of F, and only the output needs summing.")
    elif kinds.count("AllReduce") > 1:
        hint = (" Hint: splitting W_in by its rows (D) makes In · W_in a partial sum, so the "
                "[B, F] hidden activations need their own AllReduce before tanh: count the "
                "collectives per layer. Split the F dimension of both weights.")
    assert [(kind, axes) for kind, axes, _nbytes in found] == [("AllReduce", ("model",))], (
        f"The compiled step runs {', '.join(kinds) or 'no collective'}. This layer's "
        f"tensor-parallel step needs exactly one AllReduce.{hint}")
    if found[0][2] != NOTEBOOK_PARTS[0].expected(v):    # the AllReduce sums Out: f32[B, D]
        raise RuntimeError("grader: the compiled AllReduce is not the f32[B, D] output")
    check_number(NOTEBOOK_PARTS[0], v, allreduce_bytes)


@lru_cache(maxsize=32)
def _tp_step_compiled(B: int, D: int, F: int, in_spec: tuple, out_spec: tuple,
                      ) -> tuple[bool, tuple[tuple[str, tuple[str, ...], int], ...]]:
    """Problem 9's layer ``tanh(In · W_in) · W_out`` trained two steps on 8 CPU devices with
    the weights sharded by ``in_spec`` / ``out_spec`` over the mesh axis ``model``: whether its
    losses equal the unsharded step's (rtol 1e-5), and the collectives the compiled step runs,
    as ``(kind, axes, bytes)``, read by the grader from its own compile.

    Kept per (numbers, specs): the compile takes a fraction of a second, and a grader judging
    several answers of one student (or one class's few dozen shapes) compiles each once.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec
    from scalebook.hlo import compiled_text, hlo_collectives

    try:
        jax.config.update("jax_num_cpu_devices", 8)      # possible only before JAX's first use here
    except RuntimeError:
        pass
    cpus = jax.devices("cpu")
    if len(cpus) < 8:
        raise RuntimeError("this check needs 8 CPU devices in the grader: start it with "
                           "XLA_FLAGS=--xla_force_host_platform_device_count=8")

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p["w_in"]) @ p["w_out"] - y) ** 2)

    def step(p, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return value, jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)

    keys = jax.random.split(jax.random.key(0), 4)
    params = jax.device_put({"w_in": jax.random.normal(keys[0], (D, F)) / D ** 0.5,
                             "w_out": jax.random.normal(keys[1], (F, D)) / F ** 0.5}, cpus[0])
    x = jax.device_put(jax.random.normal(keys[2], (B, D)), cpus[0])
    y = jax.device_put(jax.random.normal(keys[3], (B, D)), cpus[0])
    mesh = jax.make_mesh((8,), ("model",), axis_types=(AxisType.Auto,), devices=cpus[:8])
    shard = {"w_in": NamedSharding(mesh, PartitionSpec(*in_spec)),
             "w_out": NamedSharding(mesh, PartitionSpec(*out_spec))}
    rep = NamedSharding(mesh, PartitionSpec())
    sharded = jax.jit(step, in_shardings=(shard, rep, rep), out_shardings=(rep, shard))
    p_sh, xs, ys = jax.device_put(params, shard), jax.device_put(x, rep), jax.device_put(y, rep)
    found = hlo_collectives(compiled_text(sharded.lower(p_sh, xs, ys).compile()), mesh)
    plain, p_ref = jax.jit(step), params
    losses_ref, losses_sh = [], []
    for _ in range(2):
        l_ref, p_ref = plain(p_ref, x, y)
        l_sh, p_sh = sharded(p_sh, xs, ys)
        losses_ref.append(float(l_ref))
        losses_sh.append(float(l_sh))
    same = bool(np.allclose(losses_sh, losses_ref, rtol=1e-5, atol=0))
    return same, tuple((c.kind, tuple(c.axes), int(c.nbytes)) for c in found)

"""hw7-moe-long-context: the inputs each student gets their own values of, and the parts.

Problem by problem (the first value of each choice is the one the book prints):

- P1, counting: a Mixtral-like model (the catalog's D, L and attention) with E experts of width
  F_e, top-k, and the training tokens. Total and routed parameters are stated.
- P2, the MoE roofline: the GPU, E, k and the tokens in a step.
- P3, routing: tokens per chip, E, k and the capacity factor; a table of eight experts' loads
  with their capacity; the balanced expert time.
- P4, expert parallelism across GPU nodes (8 GPUs per node): the GPU, the GPUs N (2 to 8
  nodes), tokens per GPU, D, k; and E, F_e for the EP-against-FSDP crossover.
- P5, long context: a LLaMA-3 model's KV cache at T tokens; ring attention over C chips of a
  TPU (its bf16 rate and one ICI link).
- P6, a design judged by the solver: E, k, the expert shape, tokens per chip, a memory and a
  drop-rate limit; the student picks the expert-parallel degree and capacity factor.
- P7, JAX: the dispatch of an expert-parallel layer on 8 simulated devices (f32), shapes drawn
  so that the capacity ``c·k·t/E`` is whole.

The latency per hop (1 µs) and bf16's 2 bytes are the course's conventions.
"""

from __future__ import annotations

import math
from .alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from ..hardware import get_chip
from ..collectives import gpu_all_gather
from ..long_context import AttentionShape, ring_attention, ring_overlap_block
from ..moe import (MoEConfig, dense_critical_batch, dropped_fraction, ep_fsdp_crossover_tokens,
                   expected_dropped_fraction, expert_capacity, expert_memory_per_chip,
                   imbalanced_time, mixtral_8x7b, moe_all_to_all, moe_critical_batch,
                   moe_param_count, smallest_capacity_factor, tokens_per_expert)
from ..training import llama3_405b, training_flops_from_params
from ..transformer import llama3_8b, llama3_70b, kv_cache_bytes
from ..variants import Choice, VariantSpec
from .parts import (Convention, Design, Example, Part, Slip, Verdict, distinct_from, merged,
                    whole_number)
from .parts import well_posed as parts_well_posed

LLAMAS = {"LLaMA-3 70B": llama3_70b, "LLaMA-3 8B": llama3_8b, "LLaMA-3 405B": llama3_405b}
GPUS_PER_NODE = 8
#: P6's expert-parallel degrees (powers of two) and the chips there are.
DESIGN_CHIPS = 64
#: P7's simulated devices.
DEVICES = 8

PARAMETERS = {
    "q1_E": Choice((8, 16, 32, 64), "E", "experts"),
    "q1_k": Choice((2, 1, 4), "k", "experts per token"),
    "q1_Fe": Choice((14336, 8192, 4096), "F_e"),
    "q1_tokens": Choice((1e12, 2e12, 5e11), "training tokens"),
    "q2_gpu": Choice(("H100", "H200", "B200", "A100"), "GPU"),
    "q2_E": Choice((256, 64, 128, 32), "E", "experts"),
    "q2_k": Choice((8, 2, 4, 6), "k", "experts per token"),
    "q2_B": Choice((4096, 16384, 1024, 8192), "B", "tokens"),
    "q3_T": Choice((4096, 2048, 1024), "T", "tokens per chip"),
    "q3_E": Choice((64, 16, 32), "E", "experts"),
    "q3_k": Choice((2, 1, 4), "k", "experts per token"),
    "q3_c": Choice((1.25, 1.5, 2.0, 1.1), "c", "capacity factor"),
    "q3_loads": Choice(("180, 120, 100, 100, 90, 80, 70, 60", "150, 140, 110, 100, 90, 80, 70, 60",
                        "200, 100, 100, 100, 90, 80, 70, 60", "130, 130, 120, 110, 100, 80, 70, 60"),
                       "loads", "tokens"),
    "q3_cap": Choice((120, 110, 125), "C", "slots per expert"),
    "q3_t": Choice((0.002, 0.005, 0.001), "t_balanced", "s"),
    "q4_gpu": Choice(("H100", "H200", "B200"), "GPU"),
    "q4_N": Choice((64, 32, 16), "N", "GPUs"),
    "q4_t": Choice((4096, 8192, 2048), "t", "tokens per GPU"),
    "q4_D": Choice((7168, 4096, 5120), "D"),
    "q4_k": Choice((8, 4, 2), "k", "experts per token"),
    "q4_E": Choice((256, 64, 128), "E", "experts"),
    "q4_Fe": Choice((2048, 1408, 4096), "F_e"),
    "q5_model": Choice(("LLaMA-3 70B", "LLaMA-3 8B", "LLaMA-3 405B"), "model"),
    "q5_T": Choice((131072, 262144, 1048576), "T", "tokens", fmt="{:,}"),
    "q5_C": Choice((16, 32, 8), "C", "chips"),
    "q5_tpu": Choice(("TPU v5p", "TPU v4p", "TPU v6e"), "TPU"),
    "q6_E": Choice((256, 128, 64), "E", "experts"),
    "q6_k": Choice((8, 4, 2), "k", "experts per token"),
    "q6_D": Choice((7168, 4096), "D"),
    "q6_Fe": Choice((2048, 1536, 4096), "F_e"),
    "q6_L": Choice((58, 48, 32), "L", "MoE layers"),
    "q6_t": Choice((4096, 2048, 8192), "t", "tokens per chip"),
    "q6_mem": Choice((40e9, 30e9, 60e9), "memory limit", "bytes per chip"),
    "q6_drop": Choice((0.001, 0.01, 0.005), "drop limit", "fraction"),
    "q7_D": Choice((16, 32, 8), "D"),
    "q7_E": Choice((16, 32, 8), "E", "experts"),
    "q7_t": Choice((64, 32, 128), "t", "tokens per device"),
    "q7_k": Choice((2, 1, 4), "k", "experts per token"),
    "q7_c": Choice((2.0, 1.0, 1.5), "c", "capacity factor"),
}


def loads3(v: Mapping[str, Any]) -> tuple[int, ...]:
    """P3's eight expert loads, from the problem's text."""
    return tuple(int(x) for x in v["q3_loads"].split(","))


def cfg1(v: Mapping[str, Any]) -> MoEConfig:
    """P1's model: Mixtral 8×7B's attention and embeddings with the drawn experts."""
    base = mixtral_8x7b().base
    return MoEConfig(base=base, n_experts=v["q1_E"], top_k=v["q1_k"], d_expert=v["q1_Fe"],
                     name="P1 model")


def cfg6(v: Mapping[str, Any]) -> MoEConfig:
    """P6's MoE layers (their experts are all that is priced)."""
    base = mixtral_8x7b().base
    base = type(base)(d_model=v["q6_D"], n_layers=v["q6_L"], n_heads=8, d_head=128,
                      d_ff=v["q6_Fe"], vocab_size=1)
    return MoEConfig(base=base, n_experts=v["q6_E"], top_k=v["q6_k"], d_expert=v["q6_Fe"])


def shape5(v: Mapping[str, Any]) -> AttentionShape:
    m = LLAMAS[v["q5_model"]]()
    return AttentionShape(n_heads=m.n_heads, n_kv_heads=m.n_kv_heads, d_head=m.d_head)


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The counts and chip figures each problem states, from the solver and the catalog."""
    out: dict[str, Any] = {}
    c1 = moe_param_count(cfg1(p))
    out["q1_P_total"], out["q1_P_routed"] = int(c1.total), int(c1.routed)
    g2 = get_chip(p["q2_gpu"])
    out["q2_flops"], out["q2_hbm_bw"] = g2.flops("bf16"), g2.hbm_bandwidth
    g4 = get_chip(p["q4_gpu"])
    out["q4_nic"] = g4.host_network_bandwidth / g4.chips_per_host
    out["q4_nvlink"] = g4.interconnect_bandwidth_one_way
    m5 = LLAMAS[p["q5_model"]]()
    out.update(q5_L=m5.n_layers, q5_H=m5.n_heads, q5_K=m5.n_kv_heads, q5_dh=m5.d_head)
    t5 = get_chip(p["q5_tpu"])
    out["q5_flops"], out["q5_link"] = t5.flops("bf16"), t5.link_bandwidth_one_way
    return out


# --------------------------------------------------------------------------- the parts

_active1 = lambda v: moe_param_count(cfg1(v)).active
_flops1 = lambda v: training_flops_from_params(_active1(v), v["q1_tokens"])
_tpe2 = lambda v: tokens_per_expert(v["q2_B"], v["q2_E"], v["q2_k"])
_crit2 = lambda v: moe_critical_batch(v["q2_gpu"], v["q2_E"], v["q2_k"])
_cap3 = lambda v: expert_capacity(v["q3_T"], v["q3_E"], v["q3_k"], v["q3_c"])
_drop3 = lambda v: dropped_fraction(loads3(v), v["q3_cap"])
_time3 = lambda v: imbalanced_time(v["q3_t"], loads3(v))
_a2a4 = lambda v: moe_all_to_all(v["q4_t"], v["q4_D"], v["q4_k"], v["q4_N"], v["q4_gpu"])
_V4 = lambda v: _a2a4(v).nbytes
_cross4 = lambda v: ep_fsdp_crossover_tokens(v["q4_E"], v["q4_Fe"], v["q4_k"])
_kv5 = lambda v: kv_cache_bytes(LLAMAS[v["q5_model"]](), seq_len=v["q5_T"])
_ring5 = lambda v: ring_attention(v["q5_T"], v["q5_C"], shape5(v), v["q5_tpu"], zigzag=False)
_ring5z = lambda v: ring_attention(v["q5_T"], v["q5_C"], shape5(v), v["q5_tpu"], zigzag=True)
_over5 = lambda v: ring_overlap_block(shape5(v), v["q5_tpu"])
_a2a7 = lambda v: moe_all_to_all(v["q7_t"], v["q7_D"], v["q7_k"], DEVICES, "TPU v5e",
                                 dtype="fp32", capacity_factor=v["q7_c"])
_bytes7 = lambda v: _a2a7(v).nbytes / DEVICES

_TOTAL = ("A token multiplies by only k of the E routed experts: use the active parameters, "
          "P_total − (1 − k/E)·P_routed, not the total.")
_DENSE_B = ("That is a dense layer's critical batch. Each expert sees only B·k/E of the tokens, "
            "so an MoE layer needs E/k times as many.")

PARTS = (
    Part("active_params", _active1, rel=0.01, slips=(
        Slip("total", lambda v: v["q1_P_total"], _TOTAL),
        Slip("k/E of everything", lambda v: v["q1_P_total"] * v["q1_k"] / v["q1_E"],
             "Only the routed experts are skipped: attention, embeddings and router serve every "
             "token. Scale P_routed by k/E and keep the rest."),
    ), unit="params"),
    Part("moe_training_flops", _flops1, slips=(
        Slip("total", lambda v: 6 * v["q1_P_total"] * v["q1_tokens"], _TOTAL),
        Slip("forward only", lambda v: _flops1(v) / 3,
             "Training is forward and backward: 6 FLOPs per active parameter per token, not 2.", alternatives=('forward only',)),
    ), unit="FLOPs"),
    Part("tokens_per_expert", _tpe2, slips=(
        Slip("no k", lambda v: v["q2_B"] / v["q2_E"],
             "Each token goes to k experts: B·k copies are spread over E experts."),
        Slip("E/k upside down", lambda v: v["q2_B"] * v["q2_E"] / v["q2_k"],
             "Each expert sees a fraction k/E of the tokens, not E/k of them."),
    ), unit="count"),
    Part("moe_critical_batch", _crit2, slips=(
        Slip("dense", lambda v: dense_critical_batch(v["q2_gpu"]), _DENSE_B),
        Slip("sparsity", lambda v: 2 * _crit2(v),
             "Use the dense bf16 FLOPs/s, not the 'with sparsity' figure NVIDIA prints (2x)."),
        Slip("k/E", lambda v: dense_critical_batch(v["q2_gpu"]) * v["q2_k"] / v["q2_E"],
             "An MoE layer needs more tokens, not fewer: each expert sees B·k/E of them."),
    ), unit="count"),
    Part("expert_capacity_slots", _cap3, rel=0.001, slips=(
        Slip("no k", distinct_from(_cap3, lambda v: math.ceil(v["q3_c"] * v["q3_T"] / v["q3_E"]),
                                   0.001),
             "The slots hold token copies: T tokens send k·T copies to the E experts."),
        Slip("unrounded", distinct_from(_cap3, lambda v: v["q3_c"] * v["q3_k"] * v["q3_T"]
                                        / v["q3_E"], 0.001),
             "Round the capacity up to whole slots."),
    ), unit="count"),
    Part("dropped_share", _drop3, slips=(
        Slip("count", lambda v: _drop3(v) * sum(loads3(v)),
             "Give the dropped share (a fraction of all assignments), not the number dropped."),
        Slip("of capacity", lambda v: _drop3(v) * sum(loads3(v)) / (8 * v["q3_cap"]),
             "Divide by the assignments routed, the sum of the loads, not by the slots."),
    ), unit="fraction"),
    Part("imbalanced_time", _time3, slips=(
        Slip("balanced", lambda v: v["q3_t"],
             "The experts run in parallel and the combine waits for the slowest: scale the "
             "balanced time by max/mean of the loads."),
        Slip("max/min", lambda v: v["q3_t"] * max(loads3(v)) / min(loads3(v)),
             "The balanced time is at the mean load: scale by max/mean, not max/min."),
    ), unit="s"),
    Part("dispatch_bytes_per_gpu", lambda v: _a2a4(v).sent_per_chip,
         conventions=(Convention("no (N-1)/N", lambda v: _V4(v) / v["q4_N"]),),
         slips=(
        Slip("no k", lambda v: _a2a4(v).sent_per_chip / v["q4_k"],
             "Each token is sent to k experts: k copies per token."),
        Slip("whole V", lambda v: _V4(v),
             "That is the whole AllToAll's array, all GPUs' tokens; one GPU sends its own t "
             "tokens' copies.", alternatives=('per chip or global',)),
    ), unit="bytes"),
    Part("dispatch_time", lambda v: _a2a4(v).dispatch.time, slips=(
        Slip("AllGather", lambda v: gpu_all_gather(_V4(v), v["q4_N"], v["q4_gpu"]).time,
             "The dispatch is an AllToAll: each piece goes to one GPU, not to all of them as in "
             "an AllGather."),
        Slip("AllGather over the NIC",
             lambda v: _V4(v) * (v["q4_N"] - 1) / v["q4_N"] / v["q4_nic"] + 1e-6,
             "The dispatch is an AllToAll: each GPU sends only its own V/N of copies, one piece "
             "to each GPU, not to all of them as in an AllGather."),
        Slip("NVLink", lambda v: _V4(v) / v["q4_N"] * (v["q4_N"] - 1) / v["q4_N"] / v["q4_nvlink"],
             "The copies bound for other nodes leave through the GPU's NIC, not NVLink."),
        Slip("(N-1)/N over the NIC",
             lambda v: _V4(v) / v["q4_N"] * (v["q4_N"] - 1) / v["q4_N"] / v["q4_nic"] + 1e-6,
             "Only the (N − g)/N of the block bound for other nodes crosses the NIC; the copies "
             "for the GPU's own node go over NVLink at the same time."),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("a2a_time_per_layer", lambda v: _a2a4(v).forward, slips=(
        Slip("no combine", lambda v: _a2a4(v).dispatch.time,
             "The expert outputs must come back: a combine AllToAll as large as the dispatch."),
        Slip("training", lambda v: _a2a4(v).training,
             "The part asks for the forward pass: dispatch and combine, not the backward's two."),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("ep_fsdp_crossover", _cross4, slips=(
        Slip("one matrix", lambda v: _cross4(v) / 3,
             "A gated expert has three D × F_e matrices."),
        Slip("no combine", lambda v: _cross4(v) * 2,
             "EP sends the tokens twice per layer: dispatch and combine."),
    ), unit="count"),
    Part("kv_cache_bytes_long", _kv5, slips=(
        Slip("query heads", lambda v: _kv5(v) * v["q5_H"] / v["q5_K"],
             "Only the K key/value heads are cached, not the H query heads."),
        Slip("keys only", lambda v: _kv5(v) / 2, "Cache keys and values: a factor of 2."),
    ), unit="bytes"),
    Part("ring_block_bytes", lambda v: _ring5(v).kv_block_bytes, slips=(
        Slip("whole sequence", lambda v: _ring5(v).kv_block_bytes * v["q5_C"],
             "Each step sends one chip's block of T/C tokens, not the whole sequence's keys "
             "and values.", alternatives=('per chip or global',)),
        Slip("query heads", lambda v: _ring5(v).kv_block_bytes * v["q5_H"] / v["q5_K"],
             "The block holds keys and values of the K KV heads, not the H query heads."),
        Slip("keys only", lambda v: _ring5(v).kv_block_bytes / 2,
             "The block holds keys and values: a factor of 2."),
    ), unit="bytes"),
    Part("ring_overlap_tokens", _over5, slips=(
        Slip("bidirectional", lambda v: _over5(v) / 2,
             "A ppermute sends one way over one link: use the one-way link bandwidth."),
        Slip("query heads for the bytes", lambda v: _over5(v) * v["q5_H"] / v["q5_K"],
             "The block that travels has the K KV heads; the compute uses the H query heads."),
    ), unit="count"),
    Part("ring_causal_time", lambda v: _ring5(v).time, slips=(
        Slip("balanced", lambda v: _ring5z(v).time,
             "With contiguous blocks and causal masking the chips are unequally loaded, and the "
             "ring moves in lock step: after the first step every step lasts a full block."),
        Slip("one step", lambda v: _ring5(v).t_block,
             "That is one step; the ring takes C steps per layer, the first on the diagonal "
             "block (half masked), the others on full blocks."),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("a2a_bytes_per_device", _bytes7, slips=(
        *merged(Slip("ragged", distinct_from(_bytes7, lambda v: _bytes7(v) / v["q7_c"]),
                     "The buffers are fixed-shape: E experts × C slots each, c times the routed "
                     "copies."),
                Slip("bf16", lambda v: _bytes7(v) / 2, "The arrays are f32: 4 bytes per number.", alternatives=('bf16 or fp32',)),
                "Two things halve this value here: the buffers are fixed-shape (E experts × C "
                "slots, c times the routed copies), and the arrays are f32, 4 bytes per number."),
        Slip("leaving only", lambda v: _bytes7(v) * (DEVICES - 1) / DEVICES,
             "The part asks for the AllToAll's result on one device, its own block included."),
    ), unit="bytes"),
)


# --------------------------------------------------------------------------- the design part

def judge_ep6(v: Mapping[str, Any], ep: Any) -> Verdict:
    """P6 (a): an expert-parallel degree passes when it is a power of two that divides E, at
    most :data:`DESIGN_CHIPS`, and its routed experts' bf16 weights per chip (2 bytes per
    parameter) fit the memory limit; otherwise the verdict says which condition fails, with
    the numbers."""
    cfg = cfg6(v)
    ep = whole_number(ep, "design_ep")
    if isinstance(ep, str):
        return Verdict(False, (ep,))
    wrong = []
    if ep > DESIGN_CHIPS:
        wrong.append(f"is more than the {DESIGN_CHIPS} chips there are (each EP rank is a chip)")
    if ep < 1 or ep & (ep - 1) or cfg.n_experts % ep:
        wrong.append(f"is not a power of two that divides E = {cfg.n_experts}")
    if wrong:
        return Verdict(False, (f"design_ep = {ep} {', and '.join(wrong)}.",))
    mem = expert_memory_per_chip(cfg, ep=ep, bytes_per_param=2)
    if mem > v["q6_mem"]:
        return Verdict(False, (f"With EP = {ep} each chip holds {mem:.3g} bytes of expert "
                               f"weights, over the {v['q6_mem']:.3g}-byte limit: memory "
                               "per chip falls as 1/EP.",))
    return Verdict(True)


def judge_capacity6(v: Mapping[str, Any], capacity_factor: Any) -> Verdict:
    """P6 (b): a capacity factor passes when its expected dropped share under uniform routing
    is within the drop limit and it is within 10% of the smallest factor that is (padding costs
    AllToAll bytes); otherwise the verdict says which, with the numbers."""
    cfg = cfg6(v)
    try:
        c = float(capacity_factor)
    except (TypeError, ValueError):
        return Verdict(False, ("design_capacity_factor must be a number.",))
    if not c > 0 or not math.isfinite(c):
        return Verdict(False, ("design_capacity_factor must be a positive number.",))
    drop = expected_dropped_fraction(v["q6_t"], cfg.n_experts, cfg.top_k, c)
    if drop > v["q6_drop"]:
        return Verdict(False, (f"At c = {c:g} a uniform router drops {drop:.3g} of the "
                               f"assignments, over the limit of {v['q6_drop']:g}. Each expert's "
                               "load is Binomial(t, k/E): raise the capacity.",))
    if c > 1.1 * smallest_capacity6(v):
        return Verdict(False, (f"c = {c:g} meets the drop limit but pads more than it needs: "
                               "every extra slot is AllToAll bytes: find the smallest factor "
                               "that meets the limit.",))
    return Verdict(True)


def smallest_design_ep(v: Mapping[str, Any]) -> int:
    """The smallest power-of-two EP whose expert state fits the memory limit (the reference)."""
    cfg = cfg6(v)
    ep = 1
    while expert_memory_per_chip(cfg, ep=ep, bytes_per_param=2) > v["q6_mem"]:
        ep *= 2
        if ep > min(cfg.n_experts, DESIGN_CHIPS):
            raise ValueError("no expert-parallel degree fits the memory limit")
    return ep


def smallest_capacity6(v: Mapping[str, Any]) -> float:
    """The smallest capacity factor whose expected drop under uniform routing meets the limit
    (the reference)."""
    return smallest_capacity_factor(v["q6_t"], v["q6_E"], v["q6_k"], v["q6_drop"])


DESIGNS = (
    Design("design_ep", smallest_design_ep, judge_ep6, form="a power of two", examples=(
        Example("half the degree that fits", lambda v: smallest_design_ep(v) // 2,
                "memory per chip falls as 1/EP"),
        Example("not a power of two", lambda v: 3 * smallest_design_ep(v) // 2,
                "not a power of two"),
        Example("more chips than there are", lambda v: 2 * DESIGN_CHIPS,
                f"more than the {DESIGN_CHIPS} chips"),
        Example("not a whole number", lambda v: smallest_design_ep(v) + 0.9, "a whole number"),
    )),
    Design("design_capacity_factor", smallest_capacity6, judge_capacity6, form="a ratio",
           examples=(
        Example("no headroom", lambda v: 1.0, "raise the capacity"),
        Example("twice the headroom", lambda v: 2 * smallest_capacity6(v), "smallest factor"),
    )),
)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS`, and: P1's active count is under half the total;
    P3's capacity is above the mean load; P4 spans at least two nodes; P5's ring hides its
    sends (blocks above the overlap threshold) and C fits the chips; P6 has a design (the
    smallest EP that fits is at most 64) and drops at c = 1 above the limit (the capacity
    matters); P7's capacity ``c·k·t/E`` is whole and at least 1 and E splits over 8 devices."""
    if _active1(v) > v["q1_P_total"] / 2:
        return False
    if v["q4_N"] < 2 * GPUS_PER_NODE:
        return False
    try:
        if not _ring5(v).overlapped or v["q5_T"] // v["q5_C"] < 2 * _over5(v):
            return False
    except ValueError:          # no slice of this TPU has a ring of C chips
        return False
    try:
        if smallest_design_ep(v) > DESIGN_CHIPS:
            return False
    except ValueError:
        return False
    cfg = cfg6(v)
    if expected_dropped_fraction(v["q6_t"], cfg.n_experts, cfg.top_k, 1.0) <= v["q6_drop"]:
        return False
    slots = v["q7_c"] * v["q7_k"] * v["q7_t"] / v["q7_E"]
    if slots != int(slots) or slots < 1 or v["q7_E"] % DEVICES or v["q7_k"] > v["q7_E"]:
        return False
    return parts_well_posed(PARTS + DESIGNS, v)


SPEC = VariantSpec(
    assignment="hw7-moe-long-context",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_P_total": ("P_total", "parameters"), "q1_P_routed": ("P_routed", "parameters"),
        "q2_flops": ("C", "FLOPs/s, dense bf16"), "q2_hbm_bw": ("W_hbm", "bytes/s"),
        "q4_nic": ("W_nic", "bytes/s per GPU, one way"),
        "q4_nvlink": ("W_nvlink", "bytes/s per GPU, one way"),
        "q5_L": ("L", "layers"), "q5_H": ("H", "query heads"), "q5_K": ("K", "key/value heads"),
        "q5_dh": ("d_h", ""), "q5_flops": ("F", "FLOPs/s, dense bf16"),
        "q5_link": ("W", "bytes/s of one ICI link, one way"),
    },
)

# --------------------------------------------------------------------------- checks that are no number
# The hidden checks of the graded cells whose answers are no declared number (shapes,
# collectives, PartitionSpecs compiled by JAX): each cell calls its function, so the check is
# written once, here, and a test can call it. JAX is imported inside, as the cell did.


def check_q7b_dispatch(v: Mapping[str, Any], dispatch_shape, dispatch_split_axis, dispatch_concat_axis) -> None:
    """The hidden check of grade cell ``hw7-q7b-dispatch-test``: raises ``AssertionError`` (with its hint)
    unless ``dispatch_shape``, ``dispatch_split_axis``, ``dispatch_concat_axis`` are right for the student with numbers ``v``."""
    import jax
    import numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec
    from scalebook.hlo import compiled_collectives, summarize
    from scalebook.moe import moe_all_to_all

    if jax.device_count() < 8:
        raise RuntimeError("this check needs 8 JAX devices: start the grader with "
                           "XLA_FLAGS=--xla_force_host_platform_device_count=8")
    _D, _E, _t = v["q7_D"], v["q7_E"], v["q7_t"]
    _k, _c = v["q7_k"], v["q7_c"]
    _C = round(_c * _k * _t / _E)
    _shape = tuple(int(_x) for _x in dispatch_shape)
    _split, _concat = int(dispatch_split_axis), int(dispatch_concat_axis)
    assert np.prod(_shape) == _E * _C * _D, (
        f"dispatch_shape {_shape} does not hold the {_E} x {_C} x {_D} numbers of the send buffer.")
    assert 0 <= _split < 4 and 0 <= _concat < 4 and _shape[_split] == 8, (
        "The split axis must have 8 entries, one per device. Hint: reshape E into 8 groups of E/8.")
    _mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,), devices=jax.devices()[:8])


    def _dispatch(_s):
        return jax.lax.all_to_all(_s.reshape(_shape), "x", _split, _concat, tiled=True)


    _host = np.random.default_rng(7).standard_normal((8 * _E, _C, _D)).astype(np.float32)
    _send = jax.device_put(_host, NamedSharding(_mesh, PartitionSpec("x")))
    _run = jax.shard_map(_dispatch, mesh=_mesh, in_specs=PartitionSpec("x"),
                         out_specs=PartitionSpec("x"))
    _found = compiled_collectives(_run, _send, mesh=_mesh)     # compiled here, by the grader
    _got = np.asarray(jax.jit(_run)(_send))
    _g = _E // 8
    _want = np.stack([_host.reshape(8, _E, _C, _D)[_i, _j * _g:(_j + 1) * _g]
                      for _j in range(8) for _i in range(8)]).reshape(8 * 8, _g, _C, _D)
    _a2a = [_op for _op in _found if _op.kind == "AllToAll"]
    assert len(_found) == 1 and len(_a2a) == 1, (
        f"The compiled dispatch runs {'; '.join(summarize(_found)) or 'no collective'}; it should run "
        "exactly one AllToAll.")
    assert _got.shape == _want.shape and np.allclose(_got, _want), (
        "The dispatch moves the wrong blocks. Hint: split the buffer's E experts into 8 groups of "
        "E/8 along a new leading axis, and exchange that axis: each device must end up with one "
        "block of its own experts from every sender, stacked along the same axis.")
    _bytes = moe_all_to_all(_t, _D, _k, 8, "TPU v5e", dtype="fp32", capacity_factor=_c).nbytes / 8
    assert _a2a[0].nbytes == round(_bytes), (
        f"The AllToAll moves {_a2a[0].nbytes} bytes per device, not the whole send buffer.")

"""Practice problems of the chapter book/moe-long-context.md (see :mod:`scalebook.practice.problem`):
its twelve worked problems again, each with its inputs drawn anew.

Sizes are asked in GB or MB (10⁹, 10⁶ bytes), as the chapter prints them; where a size is
asked in GB an answer in GiB (7% smaller) is accepted. Times are in ms. Collectives are priced
by the chapter's model (``scalebook.collectives.collective_cost`` on the chip's own network,
1 µs per hop); MoE counts by ``scalebook.moe``, context parallelism by
``scalebook.long_context``.
"""

from __future__ import annotations

import math
from ..homework.alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from ..collectives import collective_cost, has_wraparound
from ..hardware import bytes_per_element, get_chip
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from
from ..long_context import AttentionShape, ring_attention, ulysses_attention
from ..moe import (MoEConfig, dense_critical_batch, deepseek_v3, dropped_fraction,
                   ep_fsdp_crossover_tokens, expected_dropped_fraction, expert_capacity,
                   expert_weight_layouts, experts_touched, imbalance, imbalanced_time,
                   mixtral_8x7b, moe_all_to_all, moe_critical_batch, moe_param_count,
                   tokens_per_expert, training_flops, weight_bytes)
from ..training import llama3_405b
from ..transformer import kv_cache_bytes, llama3_8b, llama3_70b
from ..units import format_bandwidth, format_count, format_flops, format_seconds
from ..variants import Choice
from .common import GB, MB, MS, bytes_text, decimal_bytes, draws, in_gib, percent_slip
from .problem import Problem, one_answer, problem


MOES = {"Mixtral 8×7B": mixtral_8x7b, "DeepSeek-V3": deepseek_v3}
LLAMAS = {"LLaMA-3 70B": llama3_70b, "LLaMA-3 8B": llama3_8b, "LLaMA-3 405B": llama3_405b}










def _shape(model: str) -> AttentionShape:
    m = LLAMAS[model]()
    return AttentionShape(n_heads=m.n_heads, n_kv_heads=m.n_kv_heads, d_head=m.d_head)


def _llama_figures(v: Mapping[str, Any]) -> dict[str, Any]:
    """The LLaMA-3 shape the text states: layers, query heads, KV heads, head width."""
    m = LLAMAS[v["model"]]()
    return {"L": m.n_layers, "H": m.n_heads, "K": m.n_kv_heads, "dh": m.d_head}




# --------------------------------------------------------------------------- 1. counting

def _w1_cfg(v) -> MoEConfig:
    """Mixtral 8×7B's attention, embeddings and layers with the drawn experts."""
    return MoEConfig(base=mixtral_8x7b().base, n_experts=v["E"], top_k=v["k"],
                     d_expert=v["Fe"], name="the model")


def _w1_count(v):
    return moe_param_count(_w1_cfg(v))


def _w1_derive(v):
    p = _w1_count(v)
    return {"P_total": int(p.total), "P_routed": int(p.routed)}


def _w1_share_pct(v):
    p = _w1_count(v)
    return 100.0 * p.active / p.total


def _w1_flops(v):
    return training_flops(_w1_cfg(v), v["tokens_t"] * 1e12)


def _w1_solution(v):
    p = _w1_count(v)
    return (
        f"A token skips 1 − k/E = 1 − {v['k']}/{v['E']} of the routed experts: P_active = "
        f"P_total − (1 − k/E)·P_routed = {format_count(p.active)} parameters.",
        f"Share: {format_count(p.active)} / {format_count(p.total)} = {_w1_share_pct(v):.3g}%.",
        f"Training: 6 × P_active × {v['tokens_t']:g}e12 tokens ≈ {_w1_flops(v):.3g} FLOPs "
        "(the solver leaves the embedding lookup out of the matmul parameters).",
    )


W1 = problem(
    "moe_long_context.w1", "Active parameters and training FLOPs of an MoE",
    draws(derive=_w1_derive,
           well_posed=lambda v: v["k"] < v["E"],
           E=Choice((8, 16, 64, 128), "E", "experts"),
           k=Choice((2, 1, 4, 8), "k", "experts per token"),
           Fe=Choice((14336, 4096, 8192, 2048), "F_e"),
           tokens_t=Choice((1.0, 3.0, 15.0, 0.5), "training tokens", "trillion")),
    ("An MoE has Mixtral 8×7B's attention, embeddings and 32 layers (D = 4,096), and in "
     "every layer E = {E} routed experts of width F_e = {Fe:,}, top-{k}: P_total = "
     "{P_total:,} parameters, of which P_routed = {P_routed:,} are routed experts. What "
     "share of the parameters does one token use, in %, and how many FLOPs does training "
     "it on {tokens_t:g} trillion tokens cost (6 FLOPs per active parameter per token)?"),
    (Part("active_share_pct", _w1_share_pct, rel=0.02, slips=(
         Slip("k/E of everything", lambda v: 100.0 * v["k"] / v["E"],
              "only the routed experts are skipped: attention, embeddings and the router "
              "serve every token. Scale P_routed by k/E and keep the rest."),
         Slip("the share skipped", lambda v: 100.0 - _w1_share_pct(v),
              "that is the share a token skips; the question asks for the share it uses."),
         percent_slip(_w1_share_pct),
     ), unit="fraction"),
     "share of the parameters one token uses, in %"),
    (Part("training_flops", _w1_flops, conventions=(
         Convention("6·P_active with the embedding lookup",
                    lambda v: 6.0 * _w1_count(v).active * v["tokens_t"] * 1e12),
     ), slips=(
         Slip("total parameters", lambda v: 6.0 * v["P_total"] * v["tokens_t"] * 1e12,
              "a token never multiplies by the experts it was not routed to: use the active "
              "parameters, P_total − (1 − k/E)·P_routed, not the total."),
         Slip("forward only", lambda v: _w1_flops(v) / 3,
              "training is forward and backward: 6 FLOPs per active parameter per token, "
              "not 2."),
     ), unit="FLOPs"),
     "training FLOPs"),
    solution=_w1_solution, worked="1")


# --------------------------------------------------------------------------- 2. does it fit?

def _w2_cfg(v):
    return MOES[v["model"]]()


def _w2_derive(v):
    p = moe_param_count(_w2_cfg(v))
    return {"P_total_b": p.total / 1e9, "P_active_b": p.active / 1e9,
            "b": bytes_per_element(v["dtype"]),
            "b_text": bytes_text(bytes_per_element(v["dtype"])),
            "hbm_gb": get_chip(v["chip"]).hbm_bytes / GB}


def _w2_gb(v):
    return weight_bytes(_w2_cfg(v), v["dtype"]) / GB


def _w2_active_bytes(v):
    return moe_param_count(_w2_cfg(v)).active * bytes_per_element(v["dtype"])


def _w2_chips(v):
    return math.ceil(weight_bytes(_w2_cfg(v), v["dtype"]) / get_chip(v["chip"]).hbm_bytes)


def _w2_solution(v):
    hbm = get_chip(v["chip"]).hbm_bytes
    w = weight_bytes(_w2_cfg(v), v["dtype"])
    return (
        "Every expert must be resident, so memory follows the total count, not the active one.",
        f"{v['P_total_b']:.1f}e9 parameters × {v['b_text']} = {decimal_bytes(w)}.",
        f"Against {decimal_bytes(hbm)} of HBM per {v['chip']}: {w / hbm:.3g} chips' worth, so at least "
        f"{_w2_chips(v)}.",
    )


W2 = problem(
    "moe_long_context.w2", "Does the MoE fit?",
    draws(derive=_w2_derive,
           model=Choice(tuple(MOES), "model"),
           dtype=Choice(("bf16", "fp8", "int4"), "weight type"),
           chip=Choice(("H100", "H200", "B200", "TPU v5p"), "chip")),
    ("{model} has {P_total_b:.1f} billion parameters, {P_active_b:.1f} billion of them active "
     "per token. Stored in {dtype} ({b_text} per parameter), how many GB (10⁹ bytes) do its "
     "weights take, and at least how many {chip} chips ({hbm_gb:g} GB of HBM each) does it "
     "take just to hold them?"),
    (Part("weights_gb", _w2_gb, conventions=(in_gib(_w2_gb),), slips=(
         Slip("active parameters", lambda v: _w2_active_bytes(v) / GB,
              "a token uses only the active parameters, but every expert must sit in HBM: "
              "memory follows the total count."),
         Slip("two bytes per parameter", distinct_from(
             _w2_gb, lambda v: moe_param_count(_w2_cfg(v)).total * 2 / GB),
              "the weights are stored in {dtype}: {b_text} per parameter, not bf16's 2."),
     ), unit="bytes"),
     "weights, in GB"),
    (Part("chips", _w2_chips, rel=0.001, slips=(
         Slip("not rounded up", distinct_from(
             _w2_chips, lambda v: weight_bytes(_w2_cfg(v), v["dtype"])
             / get_chip(v["chip"]).hbm_bytes, 0.001),
              "a chip holds whole bytes, not a fraction of the model: round the ratio up."),
         Slip("active parameters", distinct_from(
             _w2_chips, lambda v: math.ceil(_w2_active_bytes(v) / get_chip(v["chip"]).hbm_bytes),
             0.001),
              "every expert must sit in HBM, used by this token or not: count all "
              "{P_total_b:.1f} billion parameters."),
     ), unit="count"),
     "chips needed to hold the weights"),
    solution=_w2_solution, worked="2")


# --------------------------------------------------------------------------- 3. critical batch

def _w3_derive(v):
    chip = get_chip(v["chip"])
    return {"flops_text": format_flops(chip.flops("bf16")),
            "hbm_text": format_bandwidth(chip.hbm_bandwidth)}


def _w3_bstar(v):
    return moe_critical_batch(v["chip"], v["E"], v["k"])


def _w3_tpe(v):
    return tokens_per_expert(_w3_bstar(v), v["E"], v["k"])


def _w3_solution(v):
    dense = dense_critical_batch(v["chip"])
    return (
        f"A dense weight matmul turns compute-bound at C·b/(2W) = {format_count(dense)} tokens.",
        f"Each expert sees B·k/E of the tokens, so the MoE needs E/k = {v['E'] / v['k']:.3g} times "
        f"more: B* = {format_count(_w3_bstar(v))} tokens.",
        f"Each expert then sees {format_count(_w3_tpe(v))} tokens, the dense critical batch.",
    )


W3 = problem(
    "moe_long_context.w3", "The MoE critical batch",
    draws(derive=_w3_derive,
           well_posed=lambda v: v["k"] < v["E"],
           chip=Choice(("TPU v5p", "H100", "TPU v5e", "H200", "B200", "TPU v6e"), "chip"),
           E=Choice((256, 64, 128, 32), "E", "experts"),
           k=Choice((8, 2, 4, 6), "k", "experts per token")),
    ("An MoE layer has E = {E} routed experts, top-{k}, with bf16 weights, on one {chip} "
     "({flops_text} dense bf16, {hbm_text} of HBM bandwidth). With an even router, at how "
     "many tokens per step do its routed experts turn compute-bound, and how many tokens "
     "does each expert see then?"),
    (Part("critical_batch", _w3_bstar, slips=(
         Slip("dense", lambda v: dense_critical_batch(v["chip"]),
              "that is a dense layer's critical batch. Each expert sees only B·k/E of the "
              "tokens, so an MoE layer needs E/k times as many."),
         Slip("k/E", lambda v: dense_critical_batch(v["chip"]) * v["k"] / v["E"],
              "an MoE layer needs more tokens than a dense one, not fewer: each expert sees "
              "only B·k/E of them."),
     ), unit="count"),
     "critical batch, in tokens per step"),
    (Part("tokens_per_expert", _w3_tpe, slips=(
         Slip("no k", lambda v: _w3_bstar(v) / v["E"],
              "each token goes to k = {k} experts: B·k copies are spread over the E experts."),
         Slip("the whole batch", _w3_bstar,
              "that is the step's batch; each expert sees only B·k/E of it."),
     ), unit="count"),
     "tokens per expert at it"),
    solution=_w3_solution, worked="3")


# --------------------------------------------------------------------------- 4. experts touched

def _w4_touched(v):
    return experts_touched(v["E"], v["k"], v["B"])


def _w4_solution(v):
    miss = (1 - v["k"] / v["E"]) ** v["B"]
    return (
        f"A given expert is picked by one token with probability k/E = {v['k']}/{v['E']}, so "
        f"{v['B']} tokens miss it with probability (1 − k/E)^B = {miss:.3g}.",
        f"Experts read: E·(1 − (1 − k/E)^B) = {_w4_touched(v):.1f} of {v['E']} "
        f"({100 * _w4_touched(v) / v['E']:.0f}%).",
    )


W4 = one_answer(
    "moe_long_context.w4", "Experts a decode step reads",
    draws(well_posed=lambda v: v["k"] < v["E"],
           E=Choice((256, 64, 128, 32), "E", "experts"),
           k=Choice((8, 2, 4, 6), "k", "experts per token"),
           B=Choice((32, 8, 16, 64), "B", "sequences")),
    ("A server decodes {B} sequences per step, one new token each, through an MoE layer of "
     "E = {E} routed experts with top-{k} routing. With a uniform router, how many of the "
     "{E} experts does the step read, on average?"),
    Part("experts_read", _w4_touched, rel=0.02, slips=(
        Slip("no overlap", lambda v: float(min(v["B"] * v["k"], v["E"])),
             "tokens often pick the same expert: an expert is read if at least one of the "
             "{B} tokens picks it, E·(1 − (1 − k/E)^B)."),
        Slip("the experts left out", lambda v: v["E"] - _w4_touched(v),
             "that is the number no token picks; the question asks for the experts read."),
    ), unit="count"),
    label="experts read per layer (expected count)", solution=_w4_solution, worked="4")


# --------------------------------------------------------------------------- 5. capacity

def _w5_slots(v):
    return expert_capacity(v["B"], v["E"], v["k"], v["c"])


def _w5_drop_pct(v):
    return 100.0 * expected_dropped_fraction(v["B"], v["E"], v["k"], 1.0)


def _w5_well_posed(v):
    mean = v["k"] * v["B"] / v["E"]
    return v["k"] < v["E"] and mean == int(mean) and mean >= 16


def _w5_solution(v):
    mean = tokens_per_expert(v["B"], v["E"], v["k"])
    p = v["k"] / v["E"]
    sd = math.sqrt(v["B"] * p * (1 - p))
    return (
        f"Mean load k·B/E = {format_count(mean)} copies per expert; slots ⌈c·k·B/E⌉ = "
        f"{_w5_slots(v)} at c = {v['c']:g}.",
        f"Each expert's load is Binomial(B, k/E): standard deviation {sd:.3g}. At c = 1 the "
        f"expected excess over the mean is about σ/√(2π) per expert.",
        f"Dropped share (the Binomial tail, expected_dropped_fraction): {_w5_drop_pct(v):.3g}% "
        "of the assignments.",
    )


W5 = problem(
    "moe_long_context.w5", "Capacity and dropped tokens",
    draws(well_posed=_w5_well_posed,
           B=Choice((1024, 2048, 4096, 512), "B", "tokens per chip"),
           E=Choice((32, 64, 16), "E", "experts"),
           k=Choice((4, 2, 1, 8), "k", "experts per token"),
           c=Choice((1.5, 1.25, 2.0), "c", "capacity factor")),
    ("A chip routes B = {B:,} tokens to E = {E} experts, top-{k}, into fixed-size expert "
     "buffers. How many token slots does each expert get at capacity factor c = {c:g}, and "
     "what share of the token-expert assignments does a uniform (fair) router drop at "
     "c = 1, in %?"),
    (Part("slots", _w5_slots, rel=0.001, slips=(
         Slip("no k", distinct_from(
             _w5_slots, lambda v: math.ceil(v["c"] * v["B"] / v["E"]), 0.001),
              "the slots hold token copies: {B:,} tokens send k·B = {k} × {B:,} copies to "
              "the {E} experts."),
         Slip("no capacity factor", distinct_from(
             _w5_slots, lambda v: tokens_per_expert(v["B"], v["E"], v["k"]), 0.001),
              "that is the mean load k·B/E; the buffer holds c = {c:g} times it."),
     ), unit="count"),
     "slots per expert at c"),
    (Part("dropped_pct", _w5_drop_pct, slips=(
         Slip("none", lambda v: 0.0,
              "even a fair router overflows some experts by chance: each expert's load is "
              "Binomial(B, k/E), and at c = 1 about half the experts get more than the mean."),
         percent_slip(_w5_drop_pct),
     ), unit="fraction"),
     "share dropped at c = 1, in %"),
    solution=_w5_solution, worked="5")


# --------------------------------------------------------------------------- 6. imbalance

W6_LOADS = ("180, 120, 100, 100, 90, 80, 70, 60", "160, 140, 110, 100, 90, 80, 60, 60",
            "240, 100, 90, 90, 80, 70, 70, 60", "150, 150, 130, 110, 100, 90, 90, 60",
            "200, 150, 100, 90, 80, 70, 60, 50")


def _w6_loads(v) -> tuple[int, ...]:
    return tuple(int(x) for x in v["loads"].split(","))


def _w6_ms(v):
    return imbalanced_time(v["t_ms"], _w6_loads(v))


def _w6_capped_ms(v):
    return imbalanced_time(v["t_ms"], _w6_loads(v), capacity_factor=v["c"])


def _w6_cap(v):
    loads = _w6_loads(v)
    return expert_capacity(sum(loads), len(loads), 1, v["c"])


def _w6_drop_pct(v):
    return 100.0 * dropped_fraction(_w6_loads(v), _w6_cap(v))


def _w6_solution(v):
    loads = _w6_loads(v)
    return (
        f"Mean load {sum(loads) / len(loads):.4g}, busiest {max(loads)}: max/mean = "
        f"{imbalance(loads):.3g}, and the combine waits for the busiest expert: "
        f"{_w6_ms(v):.3g} ms.",
        f"At c = {v['c']:g} each expert keeps at most ⌈c × mean⌉ = {_w6_cap(v)} tokens, so the "
        f"factor is capped at ⌈c × mean⌉/mean, c when c × mean is whole: "
        f"{_w6_capped_ms(v):.3g} ms.",
        f"The tokens past {_w6_cap(v)} are dropped: {_w6_drop_pct(v):.3g}% of the "
        f"{sum(loads):,} assignments.",
    )


W6 = problem(
    "moe_long_context.w6", "The slowest expert sets the step",
    draws(well_posed=lambda v: imbalance(_w6_loads(v)) > 1.1 * v["c"],
           loads=Choice(W6_LOADS, "loads", "tokens"),
           t_ms=Choice((2.0, 5.0, 1.0, 3.0), "balanced time", "ms"),
           c=Choice((1.25, 1.1, 1.5), "c", "capacity factor")),
    ("Eight experts, one per chip, receive ({loads}) tokens; with a perfectly balanced "
     "router the layer's experts take {t_ms:g} ms. How long do they take with these loads, "
     "in ms? With a capacity factor c = {c:g} (each expert keeps at most c times the mean "
     "load, rounded up, and drops the rest), how long do they take, in ms, and what share "
     "of the assignments is dropped, in %?"),
    (Part("time_ms", _w6_ms, slips=(
         Slip("balanced", lambda v: v["t_ms"],
              "the experts run in parallel and the combine waits for the slowest: scale the "
              "balanced time by max/mean of the loads."),
         Slip("max/min", lambda v: v["t_ms"] * max(_w6_loads(v)) / min(_w6_loads(v)),
              "the balanced time is at the mean load: scale by max/mean, not max/min."),
     ), unit="s"),
     "time with these loads, in ms"),
    (Part("capped_ms", _w6_capped_ms, slips=(
         Slip("not capped", _w6_ms,
              "with capacity c the busiest expert works on at most c × mean tokens: the "
              "factor is min(max/mean, c)."),
         Slip("balanced", lambda v: v["t_ms"],
              "a capacity factor caps the busiest expert at c times the mean load, not at "
              "the mean: the step still takes c = {c:g} times the balanced time."),
     ), unit="s"),
     "time at capacity c, in ms"),
    (Part("dropped_pct", _w6_drop_pct, slips=(
         Slip("a count", distinct_from(_w6_drop_pct, lambda v: _w6_drop_pct(v)
                                       * sum(_w6_loads(v)) / 100),
              "give the dropped share of all assignments, in %, not the number of tokens."),
         percent_slip(_w6_drop_pct),
     ), unit="fraction"),
     "assignments dropped, in %"),
    solution=_w6_solution, worked="6")


# --------------------------------------------------------------------------- 7. dispatch in a node

def _w7_derive(v):
    cfg = MOES[v["model"]]()
    chip = get_chip(v["gpu"])
    return {"D": cfg.base.d_model, "k": cfg.top_k,
            "nvlink_text": format_bandwidth(chip.interconnect_bandwidth_one_way)}


def _w7_a2a(v, **kw):
    return moe_all_to_all(v["t"], v["D"], v["k"], 8, v["gpu"], **kw)


def _w7_sent_mb(v):
    return _w7_a2a(v).sent_per_chip / MB


def _w7_ms(v):
    return _w7_a2a(v).dispatch.time / MS


def _w7_solution(v):
    a2a = _w7_a2a(v)
    return (
        f"V = k·B·D·b = {v['k']} × (8 × {v['t']:,}) × {v['D']:,} × 2 = {decimal_bytes(a2a.nbytes)}.",
        f"Each GPU holds V/8 of copies and keeps the 1/8 bound for its own experts: it sends "
        f"(7/8)·V/8 = {decimal_bytes(a2a.sent_per_chip)}.",
        f"Over NVLink at {v['nvlink_text']} one way, plus 1 µs: {format_seconds(a2a.dispatch.time)} "
        f"per AllToAll, {format_seconds(a2a.forward)} with the combine.",
    )


W7 = problem(
    "moe_long_context.w7", "Expert parallelism inside one node",
    draws(derive=_w7_derive,
           model=Choice(tuple(MOES), "model"),
           gpu=Choice(("H100", "H200", "B200", "A100"), "GPU"),
           t=Choice((8192, 4096, 16384, 2048), "tokens per GPU")),
    ("{model} (D = {D:,}, top-{k}) runs expert-parallel on one node of 8 {gpu}s "
     "(NVLink: {nvlink_text} per GPU, one way), its experts split evenly over the 8 GPUs, "
     "{t:,} tokens per GPU, bf16 activations, ragged buffers (no padding), uniform routing. "
     "How many MB (10⁶ bytes) does each GPU send to the other GPUs in one dispatch "
     "AllToAll, and how long does one dispatch take, in ms?"),
    (Part("sent_mb", _w7_sent_mb, conventions=(
         Convention("its own experts' copies too", lambda v: _w7_a2a(v).nbytes / 8 / MB,
                    verdict=PINNED, phrase="to the other GPUs",
                    hint="the question asks what each GPU sends to the other GPUs: the 1/8 "
                         "of its copies bound for its own experts stays on it."),
     ), slips=(
         Slip("no k", lambda v: _w7_sent_mb(v) / v["k"],
              "each token is sent to the GPUs of its k = {k} experts: k copies per token."),
         Slip("the whole array", lambda v: _w7_a2a(v).nbytes / MB,
              "that is the whole AllToAll's array, all 8 GPUs' copies; one GPU sends only its "
              "own tokens' copies."),
     ), unit="bytes"),
     "bytes each GPU sends, in MB"),
    (Part("dispatch_ms", _w7_ms, slips=(
         Slip("as an AllGather", lambda v: collective_cost(
             "all_gather", _w7_a2a(v).nbytes, 8, v["gpu"]).time / MS,
              "the dispatch is an AllToAll: each piece goes to one GPU, not to all of them "
              "as in an AllGather."),
         Slip("dispatch and combine", lambda v: _w7_a2a(v).forward / MS,
              "that is the dispatch and the combine together; the question asks for one "
              "AllToAll."),
         Slip("no k", lambda v: _w7_a2a(v, copies_per_token=1).dispatch.time / MS,
              "each token is sent to the GPUs of its k = {k} experts: k copies per token."),
     ), unit="s", not_applicable=(
     ONE_PASS,)),
     "one dispatch, in ms"),
    solution=_w7_solution, worked="7")


# --------------------------------------------------------------------------- 8. dispatch on a TPU ring

def _w8_derive(v):
    cfg = MOES[v["model"]]()
    chip = get_chip(v["chip"])
    ring = has_wraparound(chip, v["N"])
    return {"D": cfg.base.d_model, "k": cfg.top_k,
            "link_text": format_bandwidth(chip.link_bandwidth_one_way),
            "axis_text": "a ring (with wraparound)" if ring else "a line (no wraparound)"}


def _w8_a2a(v, c=True):
    return moe_all_to_all(v["t"], v["D"], v["k"], v["N"], v["chip"],
                          capacity_factor=v["c"] if c else None)


def _w8_gb(v):
    return _w8_a2a(v).nbytes / GB


def _w8_ms(v):
    return _w8_a2a(v).dispatch.time / MS


def _w8_solution(v):
    a2a = _w8_a2a(v)
    return (
        f"Fixed buffers make V = c·k·B·D·b = {v['c']:g} × {v['k']} × ({v['N']} × {v['t']:,}) × "
        f"{v['D']:,} × 2 = {decimal_bytes(a2a.nbytes)}.",
        f"An AllToAll on {v['axis_text']} of {v['N']} chips ({a2a.dispatch.formula}) at "
        f"{v['link_text']} per link, plus {format_seconds(a2a.dispatch.latency_time)} of hops: "
        f"{format_seconds(a2a.dispatch.time)}.",
    )


W8 = problem(
    "moe_long_context.w8", "Expert parallelism on a TPU axis",
    draws(derive=_w8_derive,
           chip=Choice(("TPU v5p", "TPU v4p", "TPU v5e", "TPU v6e"), "chip"),
           N=Choice((8, 4, 16), "N", "chips"),
           model=Choice(tuple(MOES), "model"),
           t=Choice((8192, 4096, 2048), "tokens per chip"),
           c=Choice((1.25, 1.5, 2.0), "c", "capacity factor"),
           # every chip must hold whole experts: Mixtral's 8 cannot spread over 16 chips
           well_posed=lambda v: MOES[v["model"]]().n_experts % v["N"] == 0),
    ("{model} (D = {D:,}, top-{k}) runs expert-parallel over one axis of {N} {chip} chips, "
     "{axis_text}, {link_text} per ICI link one way, 1 µs per hop; {t:,} tokens per chip, "
     "bf16, uniform routing, fixed-shape expert buffers at capacity factor c = {c:g}. How "
     "large is the dispatch AllToAll's array V, in GB (10⁹ bytes), and how long does one "
     "dispatch take, in ms?"),
    (Part("array_gb", _w8_gb, conventions=(in_gib(_w8_gb),), slips=(
         Slip("ragged", lambda v: _w8_a2a(v, c=False).nbytes / GB,
              "the buffers are fixed-shape: c = {c:g} times the routed copies travel, "
              "padding included."),
         Slip("one chip's share", lambda v: _w8_gb(v) / v["N"],
              "V is the whole AllToAll's array, all {N} chips' buffers together."),
     ), unit="bytes"),
     "AllToAll array V, in GB"),
    (Part("dispatch_ms", _w8_ms, slips=(
         Slip("ragged", lambda v: _w8_a2a(v, c=False).dispatch.time / MS,
              "the buffers are fixed-shape: c = {c:g} times the routed copies travel, "
              "padding included."),
         Slip("as an AllGather", lambda v: collective_cost(
             "all_gather", _w8_a2a(v).nbytes, v["N"], v["chip"]).time / MS,
              "in an AllToAll each block goes to one chip only, on average a quarter of the "
              "way round: about a quarter of an AllGather's bandwidth time."),
     ), unit="s", not_applicable=(
     ONE_PASS,)),
     "one dispatch, in ms"),
    solution=_w8_solution, worked="8")


# --------------------------------------------------------------------------- 9. KV cache at 1M

def _w9_derive(v):
    return {**_llama_figures(v), "hbm_gb": get_chip(v["chip"]).hbm_bytes / GB}


def _w9_kv(v):
    return kv_cache_bytes(LLAMAS[v["model"]](), seq_len=v["T"])


def _w9_gb(v):
    return _w9_kv(v) / GB


def _w9_chips(v):
    return math.ceil(_w9_kv(v) / get_chip(v["chip"]).hbm_bytes)


def _w9_solution(v):
    per_token = _w9_kv(v) / v["T"]
    return (
        f"Per token 2·L·K·d_h·b = 2 × {v['L']} × {v['K']} × {v['dh']} × 2 = {per_token:,.0f} bytes.",
        f"× {v['T']:,} tokens = {decimal_bytes(_w9_kv(v))}.",
        f"Against {v['hbm_gb']:g} GB per {v['chip']}: at least {_w9_chips(v)} "
        f"chip{'' if _w9_chips(v) == 1 else 's'}, before a single weight.",
    )


W9 = problem(
    "moe_long_context.w9", "The KV cache of a very long context",
    draws(derive=_w9_derive,
           model=Choice(tuple(LLAMAS), "model"),
           T=Choice((1048576, 131072, 262144, 524288), "T", "tokens"),
           chip=Choice(("H100", "H200", "B200", "TPU v5p"), "chip")),
    ("{model} has L = {L} layers, H = {H} query heads and K = {K} key/value heads of "
     "d_h = {dh}. How much bf16 KV cache does one sequence of {T:,} tokens hold, in GB "
     "(10⁹ bytes), and the HBM of at least how many {chip} chips ({hbm_gb:g} GB each) does "
     "it fill?"),
    (Part("kv_gb", _w9_gb, conventions=(in_gib(_w9_gb),), slips=(
         Slip("query heads", lambda v: _w9_gb(v) * v["H"] / v["K"],
              "grouped-query attention caches only the K = {K} key/value heads, not the "
              "H = {H} query heads."),
         Slip("keys only", lambda v: _w9_gb(v) / 2,
              "cache keys and values: a factor of 2."),
     ), unit="bytes"),
     "KV cache, in GB"),
    (Part("chips", _w9_chips, rel=0.001, slips=(
         Slip("not rounded up", distinct_from(
             _w9_chips, lambda v: _w9_kv(v) / get_chip(v["chip"]).hbm_bytes, 0.001),
              "a chip holds whole bytes, not a fraction of the cache: round the ratio up."),
     ), unit="count"),
     "chips whose HBM it fills"),
    solution=_w9_solution, worked="9")


# --------------------------------------------------------------------------- 10. ring attention

def _w10_derive(v):
    chip = get_chip(v["chip"])
    return {**_llama_figures(v), "flops_text": format_flops(chip.flops("bf16")),
            "link_text": format_bandwidth(chip.link_bandwidth_one_way)}


def _w10_ring(v):
    return ring_attention(v["T"], v["C"], _shape(v["model"]), v["chip"])


def _w10_kv_mb(v):
    return _w10_ring(v).kv_block_bytes / MB


def _w10_send_ms(v):
    return _w10_ring(v).send.time / MS


def _w10_block_ms(v):
    return _w10_ring(v).t_block / MS


def _w10_solution(v):
    r = _w10_ring(v)
    blk = v["T"] // v["C"]
    return (
        f"Blocks of T/C = {blk:,} tokens: 2·(T/C)·K·d_h·b = {decimal_bytes(r.kv_block_bytes)} of keys and "
        "values per send.",
        f"Over one ICI link at {v['link_text']}, plus 1 µs: {format_seconds(r.send.time)}.",
        f"A full block is 4·(T/C)²·H·d_h = {r.block_flops:.3g} FLOPs: "
        f"{format_seconds(r.t_block)} at {v['flops_text']} "
        f"({'hidden' if r.overlapped else 'not hidden'}: compute "
        f"{r.t_block / r.send.time:.3g} × the send).",
    )


W10 = problem(
    "moe_long_context.w10", "Is ring attention's send hidden?",
    draws(derive=_w10_derive,
           model=Choice(tuple(LLAMAS), "model"),
           T=Choice((1048576, 524288, 262144, 131072), "T", "tokens"),
           C=Choice((64, 32, 16), "C", "chips"),
           chip=Choice(("TPU v5p", "TPU v4p", "TPU v6e"), "chip")),
    ("Ring attention runs {model} (H = {H} query heads, K = {K} key/value heads of "
     "d_h = {dh}) on one sequence of {T:,} tokens over a ring of C = {C} {chip} chips "
     "({flops_text} dense bf16, {link_text} per ICI link one way, 1 µs per hop), bf16. "
     "How large is each K,V block a chip sends, in MB (10⁶ bytes), how long does one send "
     "take, in ms, and how long does one full (unmasked) block of attention compute take, "
     "in ms?"),
    (Part("block_mb", _w10_kv_mb, slips=(
         Slip("whole sequence", lambda v: _w10_kv_mb(v) * v["C"],
              "each step sends one chip's block of T/C tokens, not the whole sequence's "
              "keys and values."),
         Slip("query heads", lambda v: _w10_kv_mb(v) * v["H"] / v["K"],
              "the block holds the keys and values of the K = {K} KV heads, not the "
              "H = {H} query heads."),
         Slip("keys only", lambda v: _w10_kv_mb(v) / 2,
              "the block holds keys and values: a factor of 2."),
     ), unit="bytes"),
     "K,V block, in MB"),
    (Part("send_ms", _w10_send_ms, slips=(
         Slip("half the time", lambda v: (_w10_ring(v).send.bandwidth_time / 2
                                          + _w10_ring(v).send.latency_time) / MS,
              "a ppermute sends to one neighbour over one link in one direction (the one-way "
              "bandwidth), and the block holds both keys and values."),
         Slip("whole sequence", lambda v: (_w10_ring(v).send.bandwidth_time * v["C"]
                                           + _w10_ring(v).send.latency_time) / MS,
              "each step sends one chip's block of T/C tokens, not the whole sequence's."),
     ), unit="s", not_applicable=(
     ONE_PASS,)),
     "one send, in ms"),
    (Part("compute_ms", _w10_block_ms, slips=(
         Slip("one matmul", lambda v: _w10_block_ms(v) / 2,
              "a block is two matmuls, Q·Kᵀ and the scores times V, each 2·(T/C)²·H·d_h "
              "FLOPs: 4·(T/C)²·H·d_h in all."),
         Slip("KV heads", lambda v: _w10_block_ms(v) * v["K"] / v["H"],
              "every one of the H = {H} query heads computes its own scores: the FLOPs "
              "scale with H, not K."),
     ), unit="s", not_applicable=(
     *NO_LINK,)),
     "one full block of compute, in ms"),
    solution=_w10_solution, worked="10")


# --------------------------------------------------------------------------- 11. Ulysses or ring

def _w11_uly(v):
    return ulysses_attention(v["T"], v["C"], _shape(v["model"]), "H100")


def _w11_ring(v):
    return ring_attention(v["T"], v["C"], _shape(v["model"]), "H100")


def _w11_uly_mb(v):
    return _w11_uly(v).bytes_sent_per_chip / MB


def _w11_ring_mb(v):
    return _w11_ring(v).bytes_per_layer / MB


def _w11_solution(v):
    c = v["C"]
    return (
        f"Ulysses: C = {c} divides the K = {v['K']} KV heads. Each GPU holds Q, K, V and the "
        f"output of T/C = {v['T'] // c:,} tokens, (2H + 2K)·(T/C)·d_h·b bytes, and sends the "
        f"(C − 1)/C of it bound for the others: {decimal_bytes(_w11_uly(v).bytes_sent_per_chip)}.",
        f"Ring: C − 1 = {c - 1} sends of one K,V block, 2·(T/C)·K·d_h·b = "
        f"{decimal_bytes(_w11_ring(v).kv_block_bytes)} each: {decimal_bytes(_w11_ring(v).bytes_per_layer)}, about the "
        "whole sequence's KV whatever C.",
    )


W11 = problem(
    "moe_long_context.w11", "Ulysses against ring attention",
    draws(derive=_llama_figures,
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B", "LLaMA-3 405B"), "model"),
           T=Choice((131072, 262144, 65536, 1048576), "T", "tokens"),
           C=Choice((8, 4), "C", "GPUs")),
    ("One sequence of {T:,} tokens of {model} (H = {H} query heads, K = {K} key/value heads "
     "of d_h = {dh}) is split over C = {C} H100s in one node, bf16. Per layer's forward "
     "attention, how many MB (10⁶ bytes) does each GPU send to the other GPUs with "
     "all-to-all (Ulysses) context parallelism (Q, K, V and the output), and how many with "
     "ring attention?"),
    (Part("ulysses_mb", _w11_uly_mb, conventions=(
         Convention("its own share too", lambda v: _w11_uly_mb(v) * v["C"] / (v["C"] - 1),
                    verdict=PINNED, phrase="to the other GPUs",
                    hint="the question asks what each GPU sends to the other GPUs: the 1/C of "
                         "its heads that it keeps does not travel."),
     ), slips=(
         Slip("no output", lambda v: _w11_uly_mb(v) * (v["H"] + 2 * v["K"])
              / (2 * v["H"] + 2 * v["K"]),
              "a second AllToAll brings the attention output, H heads wide, back to "
              "sequence sharding: count it too."),
         Slip("whole sequence", lambda v: _w11_uly_mb(v) * v["C"],
              "each GPU starts with T/C of the tokens and sends only those: the AllToAll "
              "moves heads, not the whole sequence, from each GPU."),
     ), unit="bytes"),
     "Ulysses, sent per GPU per layer, in MB"),
    (Part("ring_mb", _w11_ring_mb, conventions=(
         Convention("C sends (the whole sequence's KV)",
                    lambda v: _w11_ring_mb(v) * v["C"] / (v["C"] - 1)),
     ), slips=(
         Slip("one block", lambda v: _w11_ring_mb(v) / (v["C"] - 1),
              "that is one step's block; the ring takes C − 1 = {C} − 1 steps per layer, "
              "each sending a block."),
         Slip("query heads", lambda v: _w11_ring_mb(v) * v["H"] / v["K"],
              "the blocks hold keys and values of the K = {K} KV heads, not the H = {H} "
              "query heads."),
     ), unit="bytes"),
     "ring attention, sent per GPU per layer, in MB"),
    solution=_w11_solution, worked="11")


# --------------------------------------------------------------------------- 12. EP against FSDP

def _w12_derive(v):
    cfg = MOES[v["model"]]()
    return {**_w7_derive(v), "E": cfg.n_experts, "Fe": cfg.d_expert}


def _w12_layouts(v):
    return expert_weight_layouts(MOES[v["model"]](), v["gpu"], n_chips=8, tokens_per_chip=v["t"])


def _w12_cross(v):
    return ep_fsdp_crossover_tokens(v["E"], v["Fe"], v["k"])


def _w12_ep_ms(v):
    return _w12_layouts(v)["EP"].comm / MS


def _w12_fsdp_ms(v):
    return _w12_layouts(v)["FSDP"].comm / MS


def _w12_solution(v):
    lay = _w12_layouts(v)
    return (
        f"EP sends 2·k·t·D·b per GPU (dispatch and combine), FSDP gathers E·3·D·F_e·b: equal at "
        f"t = 3·E·F_e/(2k) = {format_count(_w12_cross(v))} tokens per GPU.",
        f"At {v['t']:,} tokens: EP's two AllToAlls take {format_seconds(lay['EP'].comm)}; the "
        f"AllGather of all {decimal_bytes(v['E'] * 3 * v['D'] * v['Fe'] * 2)} of expert weights takes "
        f"{format_seconds(lay['FSDP'].comm)}.",
    )


W12 = problem(
    "moe_long_context.w12", "Expert parallelism against FSDP",
    draws(derive=_w12_derive,
           model=Choice(tuple(MOES), "model"),
           gpu=Choice(("H100", "H200", "B200", "A100"), "GPU"),
           t=Choice((8192, 4096, 16384, 32768), "tokens per GPU")),
    ("The routed experts of one {model} layer (E = {E} experts of F_e = {Fe:,}, top-{k}, "
     "D = {D:,}, bf16) live on one node of 8 {gpu}s ({nvlink_text} NVLink per GPU, one way). "
     "Below how many tokens per GPU does expert parallelism (dispatch and combine) move "
     "fewer bytes per GPU than FSDP of the experts' weights? At {t:,} tokens per GPU, how "
     "long do EP's two AllToAlls and FSDP's AllGather take, in ms (forward, one layer)?"),
    (Part("crossover_tokens", _w12_cross, slips=(
         Slip("one matrix", lambda v: _w12_cross(v) / 3,
              "a gated expert has three D × F_e matrices: 3·D·F_e weights."),
         Slip("no combine", lambda v: _w12_cross(v) * 2,
              "EP sends the tokens twice per layer: the dispatch and the combine."),
     ), unit="count"),
     "crossover, in tokens per GPU"),
    (Part("ep_ms", _w12_ep_ms, slips=(
         Slip("dispatch only", lambda v: _w12_ep_ms(v) / 2,
              "the expert outputs come back in a combine AllToAll as large as the dispatch: "
              "two AllToAlls per layer."),
     ), unit="s"),
     "EP, in ms"),
    (Part("fsdp_ms", _w12_fsdp_ms, slips=(
         Slip("one matrix", lambda v: collective_cost(
             "all_gather", v["E"] * v["D"] * v["Fe"] * 2, 8, v["gpu"]).time / MS,
              "a gated expert has three D × F_e matrices: gather 3·E·D·F_e weights."),
         Slip("one expert", lambda v: collective_cost(
             "all_gather", 3 * v["D"] * v["Fe"] * 2, 8, v["gpu"]).time / MS,
              "the FSDP layout gathers every expert of the layer, all E = {E} of them."),
     ), unit="s"),
     "FSDP, in ms"),
    solution=_w12_solution, worked="12")


PROBLEMS: tuple[Problem, ...] = (W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11, W12)

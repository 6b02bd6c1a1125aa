"""Practice problems of the chapter book/parallelism.md (see :mod:`scalebook.practice.problem`):
its nineteen worked problems again, each with its inputs drawn anew.

Sizes are asked in GB (10⁹ bytes), as the chapter prints them; an answer in GiB is accepted (it
is 7% smaller). Times are asked in the unit the chapter's number reads best in (days, ms, µs).
Token thresholds are the chapter's closed forms (``scalebook.parallelism``: ``C / W_axis`` and
its relatives, ring factor dropped); collective times are the exact ring model of Part 3
(``scalebook.collectives``), its first cut accepted. Counts (chips, degrees, microbatches) are
checked to 0.1%: one off is wrong (rounding down the chips a state needs earns its hint); the
chips a batch keeps busy, a quotient of napkin figures, to 2%.
"""

from __future__ import annotations

import math
from ..homework.alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from .. import bucketing, collectives, offload, parallelism as par, training, transformer
from ..hardware import get_chip
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from
from ..units import format_count, format_flops, format_seconds
from ..variants import Choice
from .common import DAY, GB, MS, US, Draws, decimal_bytes, draws, in_gib
from .problem import Problem, one_answer, problem

COUNT = 0.001  # the tolerance of a count: one off is wrong

#: The chapter's models, by the name a problem prints.
MODELS = {"LLaMA-3 8B": transformer.llama3_8b(), "LLaMA-3 70B": transformer.llama3_70b(),
          "LLaMA-3 405B": training.llama3_405b()}
PRECISION = training.MIXED_PRECISION_ADAM

#: Hints several problems give for the same slip.
SIX_FLOPS = ("training costs 6 FLOPs per parameter per token: 2 in the forward pass and 4 in the "
             "backward.")
TWO_WAYS = ("with wraparound the ring runs both ways round, so each chip pushes 2W (both "
            "directions of its link) into the collective, not W.")
OWN_NIC = "each GPU's ring leaves through its own NIC: W is one NIC's bandwidth, not the node's."
DCN_SHARE = ("each chip gets only its share of the host's DCN bandwidth, the host's figure divided "
             "by its chips.")


#: Figures a problem's text may state, from the catalog (``scalebook.hardware``) and the model
#: presets, each a function of the drawn numbers: name -> (value, label, unit).
FIGURES = {
    "C_t": (lambda v: get_chip(v["chip"]).flops("bf16") / 1e12, "dense bf16 peak", "TFLOP/s"),
    "W_gb": (lambda v: get_chip(v["chip"]).link_bandwidth_one_way / GB,
             "one ICI link, one way", "GB/s"),
    "nvl_gb": (lambda v: get_chip(v["chip"]).interconnect_bandwidth_one_way / GB,
               "NVLink per GPU, one way", "GB/s"),
    "nic_gb": (lambda v: get_chip(v["chip"]).nic_bandwidth_per_chip / GB,
               "network bandwidth per chip, one way", "GB/s"),
    "host_gb": (lambda v: get_chip(v["chip"]).host_network_bandwidth / GB,
                "network bandwidth per host", "GB/s"),
    "per_host": (lambda v: get_chip(v["chip"]).chips_per_host, "chips per host", ""),
    "hbm_gb": (lambda v: get_chip(v["chip"]).hbm_bytes / GB, "HBM per chip", "GB"),
    "D": (lambda v: MODELS[v["model"]].d_model, "d_model", ""),
    "L": (lambda v: MODELS[v["model"]].n_layers, "layers", ""),
    "P_b": (lambda v: transformer.param_count(MODELS[v["model"]]).total / 1e9,
            "parameters", "billion"),
    "Pm_b": (lambda v: transformer.param_count(MODELS[v["model"]]).matmul / 1e9,
             "parameters in matmuls", "billion"),
}


def _draws(*, figures: tuple[str, ...] = (), well_posed=None, **parameters: Choice) -> Draws:
    """What the problem draws: its ``parameters``, the catalog ``figures`` its text states
    (derived from the draw), and a ``well_posed`` rule on the draw, if any."""
    def derive(v):
        return {name: FIGURES[name][0](v) for name in figures}

    return draws(derive=derive if figures else None, well_posed=well_posed,
                 derived_labels={name: FIGURES[name][1:] for name in figures}, **parameters)


def _model(v: Mapping[str, Any]):
    return MODELS[v["model"]]






def _state(v) -> float:
    """Bytes of the model's mixed-precision Adam training state, all parameters."""
    return training.training_memory(_model(v), precision=PRECISION).state


def _logits(cfg, seq_len: int) -> float:
    """fp32 logits of one sequence, 4·T·V bytes: the term of
    :func:`scalebook.training.activation_memory` the chapter's worked problems leave out
    (``logits=False``)."""
    return 4.0 * seq_len * cfg.vocab_size


# --------------------------------------------------------------------------- 1. a training run

def _w1_flops(v):
    return transformer.training_flops(_model(v), v["tokens_t"] * 1e12)


def _w1_days(v):
    return training.run_time(_w1_flops(v), v["chips"], v["chip"], mfu=v["mfu"]) / DAY


def _w1_solution(v):
    chip = get_chip(v["chip"])
    p = transformer.param_count(_model(v)).matmul
    return (
        f"FLOPs = 6 · P · tokens = 6 × {p / 1e9:.3g} billion × {v['tokens_t']:g}e12 = "
        f"{_w1_flops(v):.3g}.",
        f"The cluster does {v['chips']:,} × {format_flops(chip.flops('bf16'))} × {v['mfu']:g} = "
        f"{training.cluster_flops_per_s(v['chips'], chip, mfu=v['mfu']):.3g} FLOPs/s.",
        f"Time = {_w1_days(v) * DAY:.3g} s ≈ {_w1_days(v):.3g} days.",
    )


W1 = one_answer(
    "parallelism.w1", "How long a training run takes",
    _draws(figures=("Pm_b", "P_b", "C_t"),
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B", "LLaMA-3 405B"), "model"),
           tokens_t=Choice((15, 2, 8, 30), "tokens", "trillion"),
           chips=Choice((1024, 2048, 4096, 8192, 16384), "chips"),
           chip=Choice(("H100", "A100", "H200", "B200"), "chip"),
           mfu=Choice((0.4, 0.3, 0.35, 0.5), "MFU")),
    ("How many days does a {model}-sized model ({Pm_b:.1f} billion parameters in its "
     "matmuls, {P_b:.1f} billion in all) take to train on {tokens_t:g} trillion tokens with "
     "{chips:,} {chip}s ({C_t:,.0f} TFLOP/s dense bf16 each) at {mfu:.0%} MFU? (6 FLOPs "
     "per parameter per token; count the parameters in matmuls, or all of them.)"),
    Part("days", _w1_days, conventions=(
        Convention("all parameters", lambda v: training.run_time(
            training.training_flops_from_params(transformer.param_count(_model(v)).total,
                                                v["tokens_t"] * 1e12),
            v["chips"], v["chip"], mfu=v["mfu"]) / DAY),
    ), slips=(
        Slip("at peak", lambda v: _w1_days(v) * v["mfu"],
             "the chips run at {mfu:.0%} MFU, not at their peak: divide the FLOPs by "
             "chips × peak × MFU."),
        Slip("forward pass only", lambda v: _w1_days(v) / 3,
             SIX_FLOPS),
    ), unit="s", not_applicable=(
    *NO_LINK,)),
    label="training time, in days", solution=_w1_solution, worked="1")


# --------------------------------------------------------------------------- 2. fewest chips

def _w2_chips(v, nbytes=None):
    return training.fewest_chips(_state(v) if nbytes is None else nbytes, v["chip"])


def _w2_solution(v):
    chip = get_chip(v["chip"])
    p = transformer.param_count(_model(v)).total
    return (
        f"P = {p / 1e9:.3g} billion parameters × {PRECISION.bytes_per_param:g} bytes (bf16 "
        f"weights and gradients, fp32 master and two moments) = {decimal_bytes(_state(v))}.",
        f"Divided by {decimal_bytes(chip.hbm_bytes)} of HBM per {chip.name} and rounded up: "
        f"{_w2_chips(v)} chips, fully sharded, before activations.",
    )


W2 = one_answer(
    "parallelism.w2", "The fewest chips that hold the training state",
    _draws(figures=("P_b", "hbm_gb"),
           model=Choice(("LLaMA-3 405B", "LLaMA-3 70B", "LLaMA-3 8B"), "model"),
           chip=Choice(("TPU v5p", "H100", "H200", "TPU v4p", "B200"), "chip")),
    ("A {model}-sized model ({P_b:.1f} billion parameters) trains with Adam in mixed "
     "precision, as the chapter counts it. How many {chip} chips ({hbm_gb:.0f} GB of HBM "
     "each) does its training state (weights, gradients, optimizer state; no activations) "
     "need, at the least?"),
    Part("chips", _w2_chips, rel=COUNT, conventions=(
        Convention("12 bytes per parameter", distinct_from(
            _w2_chips, lambda v: _w2_chips(v, 12.0 * transformer.param_count(_model(v)).total),
            rel=COUNT),
            verdict=PINNED, phrase="mixed precision, as the chapter counts it",
            hint="the chapter's mixed precision with Adam keeps 16 bytes per parameter: bf16 "
                 "weights (2) and gradients (2), an fp32 master copy (4) and two fp32 "
                 "moments (8)."),
    ), slips=(
        Slip("weights only", distinct_from(
            _w2_chips, lambda v: _w2_chips(v, training.training_memory(_model(v)).weights),
            rel=COUNT),
             "the training state is not just the bf16 weights: add the gradients, the fp32 "
             "master copy and Adam's two moments, 16 bytes per parameter in all."),
        Slip("rounded down", lambda v: _w2_chips(v) - 1 if _w2_chips(v) > 1 else math.nan,
             "a fraction of a chip's HBM still needs a whole chip: round up."),
    ), unit="count"),
    label="fewest chips, in chips", solution=_w2_solution, worked="2")


# --------------------------------------------------------------------------- 3. DP global batch

def _w3_per_chip(v):
    return par.critical_batch_per_chip_dp(v["chip"])


def _w3_global(v):
    return _w3_per_chip(v) * v["N"]


def _w3_one_way(v):
    return par.critical_batch_per_chip_dp(v["chip"], bandwidth=par.axis_bandwidth(
        v["chip"], wraparound=False))


def _w3_solution(v):
    chip = get_chip(v["chip"])
    return (
        f"Per chip the batch must exceed C / W_axis, with W_axis = 2W on a ring with wraparound "
        f"(both directions of one link): {format_flops(chip.flops('bf16'))} / "
        f"{par.axis_bandwidth(chip) / GB:.3g} GB/s = {format_count(_w3_per_chip(v))} tokens.",
        f"Over {v['N']:,} chips: {format_count(_w3_global(v))} tokens of global batch.",
    )


W3 = problem(
    "parallelism.w3", "The global batch that keeps data parallelism compute-bound",
    _draws(figures=("C_t", "W_gb"),
           chip=Choice(("TPU v5p", "TPU v4p", "TPU v5e", "TPU v6e"), "chip"),
           N=Choice((256, 64, 128, 512, 1024), "chips")),
    ("You train with pure data parallelism over {N:,} {chip} chips ({C_t:,.0f} TFLOP/s "
     "dense bf16; {W_gb:.0f} GB/s per ICI link each way), counting one ICI axis's bandwidth "
     "(a ring with wraparound) for the gradient AllReduce. How many tokens per chip, and "
     "how many tokens of global batch, keep the chips compute-bound?"),
    (Part("per_chip", _w3_per_chip, conventions=(
         Convention("three axes", lambda v: par.critical_batch_per_chip_dp(v["chip"], n_axes=3),
                    verdict=PINNED, phrase="counting one ICI axis's bandwidth",
                    hint="the problem counts one ICI axis's bandwidth: W_axis is one axis's "
                         "2W, not three axes' worth."),
     ), slips=(
         Slip("one way round", _w3_one_way,
              TWO_WAYS),
     ), unit="count"),
     "batch per chip, in tokens"),
    (Part("global_batch", _w3_global, slips=(
         Slip("per chip only", _w3_per_chip,
              "that is the batch per chip; the global batch is {N:,} times larger."),
         Slip("one way round", lambda v: _w3_one_way(v) * v["N"],
              TWO_WAYS),
     ), unit="count"),
     "global batch, in tokens"),
    solution=_w3_solution, worked="3")


# --------------------------------------------------------------------------- 4. gradient AllReduce

def _w4_bytes(v):
    return training.training_memory(_model(v), precision=PRECISION).gradients


def _w4_ar(v, **kw):
    return collectives.all_reduce(_w4_bytes(v), v["N"], v["chip"], **kw)


def _w4_ar_ms(v):
    return _w4_ar(v).time / MS


def _w4_compute_ms(v):
    flops = transformer.training_flops(_model(v), v["N"] * v["tokens"])
    return training.run_time(flops, v["N"], v["chip"], mfu=1) / MS


def _w4_solution(v):
    cost = _w4_ar(v)
    return (
        f"The bf16 gradients are 2 × P = {decimal_bytes(_w4_bytes(v))}.",
        f"AllReduce over {v['N']} chips with wraparound, twice an AllGather: bandwidth "
        f"{format_seconds(cost.bandwidth_time)} + latency {format_seconds(cost.latency_time)} = "
        f"{format_seconds(cost.time)}.",
        f"A step of {v['tokens']:,} tokens per chip computes 6·P·tokens / C per chip: "
        f"{format_seconds(_w4_compute_ms(v) * MS)} at peak.",
    )


W4 = problem(
    "parallelism.w4", "The gradient AllReduce against the step",
    _draws(figures=("P_b", "Pm_b", "C_t", "W_gb"),
           model=Choice(("LLaMA-3 8B",), "model"),
           chip=Choice(("TPU v5p", "TPU v4p"), "chip"),
           N=Choice((16, 8, 12), "chips"),
           tokens=Choice((4096, 2048, 8192, 16384), "tokens per chip")),
    ("How long does the bf16 gradient AllReduce of a {model}-sized model ({P_b:.2f} "
     "billion parameters, {Pm_b:.2f} billion in matmuls) take over a ring of {N} {chip} "
     "chips with wraparound ({W_gb:.0f} GB/s per link each way, 1 µs per hop), in ms? And "
     "how long does a whole training step of {tokens:,} tokens per chip compute at peak "
     "({C_t:,.0f} TFLOP/s), in ms?"),
    (Part("allreduce_ms", _w4_ar_ms, conventions=(
         Convention("first cut", lambda v: collectives.all_reduce_first_cut(
             _w4_bytes(v), v["N"], v["chip"]).time / MS),
     ), slips=(
         Slip("AllGather only", lambda v: _w4_ar_ms(v) / 2,
              "an AllReduce is a ReduceScatter followed by an AllGather: twice an AllGather."),
         Slip("one way round", lambda v: _w4_ar(v, wraparound=False).time / MS,
              TWO_WAYS),
     ), unit="s"),
     "gradient AllReduce, in ms"),
    (Part("compute_ms", _w4_compute_ms, slips=(
         Slip("forward pass only", lambda v: _w4_compute_ms(v) / 3,
              SIX_FLOPS),
         Slip("the whole batch on one chip", lambda v: _w4_compute_ms(v) * v["N"],
              "each chip computes only its own {tokens:,} tokens; the {N} chips work at once."),
     ), unit="s", not_applicable=(
     *NO_LINK,)),
     "step compute, in ms"),
    solution=_w4_solution, worked="4")


# --------------------------------------------------------------------------- 5. ZeRO stages

def _w5_state(v, stage):
    layout = training.TrainingLayout(dp=v["N"], zero_stage=stage, remat="full")
    m = training.plan_training(_model(v), layout, "H100", global_batch=v["N"],
                               seq_len=4096).memory
    return m.weights + m.gradients + m.optimizer


def _w5_gb(stage):
    return lambda v: _w5_state(v, stage) / GB


def _w5_solution(v):
    p = transformer.param_count(_model(v)).total
    return (
        f"P = {p / 1e9:.3g} billion: bf16 weights 2P, bf16 gradients 2P, fp32 optimizer "
        f"(master + moments) 12P; ZeRO-0 keeps all of it, {decimal_bytes(_w5_state(v, 0))} per GPU.",
        f"ZeRO-1 shards the optimizer over {v['N']}: {decimal_bytes(_w5_state(v, 1))}.",
        f"ZeRO-2 shards the gradients too: {decimal_bytes(_w5_state(v, 2))}.",
        f"ZeRO-3 shards the weights too: {decimal_bytes(_w5_state(v, 3))}.",
    )


def _w5_neighbour(stage, other, hint):
    return Slip(f"as ZeRO-{other}", _w5_gb(other), hint)


W5 = problem(
    "parallelism.w5", "The ZeRO stages, per GPU",
    _draws(figures=("P_b",),
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B", "LLaMA-3 405B"), "model"),
           N=Choice((64, 32, 128, 256, 512), "GPUs")),
    ("{model} ({P_b:.2f} billion parameters) trains with Adam in mixed precision (16 "
     "bytes per parameter) on {N} H100s, "
     "data parallel with ZeRO. How much training state (weights, gradients, optimizer; no "
     "activations) does each GPU hold under ZeRO-1, ZeRO-2 and ZeRO-3, in GB?"),
    (Part("zero1_gb", _w5_gb(1), conventions=(in_gib(_w5_gb(1)),), slips=(
         _w5_neighbour(1, 2, "ZeRO-1 shards only the optimizer state (fp32 master and "
                             "moments); the gradients stay whole until ZeRO-2."),
         _w5_neighbour(1, 0, "ZeRO-1 already shards the optimizer state, 12 of the 16 bytes "
                             "per parameter, over the {N} GPUs."),
     ), unit="bytes"),
     "ZeRO-1 state per GPU, in GB"),
    (Part("zero2_gb", _w5_gb(2), conventions=(in_gib(_w5_gb(2)),), slips=(
         _w5_neighbour(2, 1, "ZeRO-2 shards the bf16 gradients as well as the optimizer "
                             "state."),
         _w5_neighbour(2, 3, "ZeRO-2 keeps the bf16 weights whole on every GPU; only ZeRO-3 "
                             "shards them."),
     ), unit="bytes"),
     "ZeRO-2 state per GPU, in GB"),
    (Part("zero3_gb", _w5_gb(3), conventions=(in_gib(_w5_gb(3)),), slips=(
         _w5_neighbour(3, 2, "ZeRO-3 (FSDP) shards the weights too: everything divides by "
                             "{N}."),
     ), unit="bytes"),
     "ZeRO-3 state per GPU, in GB"),
    solution=_w5_solution, worked="5")


# --------------------------------------------------------------------------- 6. largest TP degree

def _w6_in(v, **kw):
    return par.max_tensor_parallel(v["chip"], v["F"], **kw)


def _w6_nic(v):
    return par.max_tensor_parallel(v["chip"], v["F"],
                                   bandwidth=get_chip(v["chip"]).nic_bandwidth_per_chip)


def _w6_solution(v):
    chip = get_chip(v["chip"])
    c = chip.flops("bf16")
    return (
        f"Y < F·W_axis / C with C = {format_flops(c)}.",
        f"In the node, NVLink W = {chip.interconnect_bandwidth_one_way / GB:.3g} GB/s one way: "
        f"{v['F']:,} × W / C = {v['F'] * chip.interconnect_bandwidth_one_way / c:.3g}, so Y ≤ "
        f"{_w6_in(v)}.",
        f"Across nodes, one NIC per GPU at {chip.nic_bandwidth_per_chip / GB:.3g} GB/s: "
        f"{v['F'] * chip.nic_bandwidth_per_chip / c:.3g}, so Y ≤ {_w6_nic(v)}.",
    )


W6 = problem(
    "parallelism.w6", "The largest useful tensor-parallel degree",
    _draws(figures=("C_t", "nvl_gb", "nic_gb"),
           F=Choice((53248, 28672, 14336, 24576), "F"),
           chip=Choice(("H100", "A100", "H200", "B200"), "chip")),
    ("What is the largest useful tensor-parallel degree Y (compute-bound, Y < F·W_axis/C, "
     "traffic overlapped; give the bound even where it passes a node's 8 GPUs) for an MLP "
     "with F = {F:,} on {chip}s ({C_t:,.0f} TFLOP/s dense bf16), inside a node over NVLink "
     "({nvl_gb:.0f} GB/s per GPU each way) and across nodes over each GPU's own network "
     "card ({nic_gb:.0f} GB/s each way)?"),
    (Part("tp_node", _w6_in, rel=COUNT, slips=(
         Slip("both directions", distinct_from(
             _w6_in, lambda v: _w6_in(v, bandwidth=2 * get_chip(v["chip"])
                                      .interconnect_bandwidth_one_way), rel=COUNT),
              "W_axis is NVLink's bandwidth one way; the bidirectional figure counts each "
              "byte twice."),
     ), unit="count"),
     "largest degree over NVLink, in GPUs"),
    (Part("tp_nic", _w6_nic, rel=COUNT, slips=(
         Slip("the node's NICs", distinct_from(
             _w6_nic, lambda v: _w6_in(v, bandwidth=get_chip(v["chip"])
                                       .host_network_bandwidth), rel=COUNT),
              "each GPU's traffic crosses its own network card, one eighth of the node's "
              "network bandwidth."),
     ), unit="count"),
     "largest degree over the NICs, in GPUs (1: no TP)"),
    solution=_w6_solution, worked="6")


# --------------------------------------------------------------------------- 7. FSDP + TP

def _w7_tokens(v):
    return v["B_m"] * 2**20


def _w7_mb(v):
    return par.min_batch_per_chip_fsdp_tp(v["chip"], v["F"])


def _w7_chips(v):
    return par.max_chips_compute_bound(_w7_tokens(v), v["chip"], "fsdp_tp", d_ff=v["F"])


def _w7_fsdp_chips(v):
    return par.max_chips_compute_bound(_w7_tokens(v), v["chip"], "fsdp")


def _w7_solution(v):
    alpha = par.critical_batch_per_chip_fsdp(v["chip"])
    return (
        f"C / W_axis = {format_count(alpha)} tokens on one {v['chip']} axis with wraparound.",
        f"FSDP + TP at the best split: B/N > 4·(C/W_axis)² / F = 4 × {alpha:.4g}² / "
        f"{v['F']:,} = {format_count(_w7_mb(v))} tokens per chip.",
        f"{_w7_tokens(v):,} tokens keep at most {_w7_chips(v):,} chips busy (FSDP alone: "
        f"{_w7_fsdp_chips(v):,}).",
    )


W7 = problem(
    "parallelism.w7", "FSDP and tensor parallelism together",
    _draws(figures=("C_t", "W_gb"),
           chip=Choice(("TPU v5p", "TPU v4p", "TPU v5e", "TPU v6e"), "chip"),
           F=Choice((53248, 28672, 14336), "F"),
           B_m=Choice((16, 4, 8, 32), "batch", "M tokens")),
    ("With FSDP over one ICI axis and tensor parallelism over another (both with "
     "wraparound) on {chip} chips ({C_t:,.0f} TFLOP/s dense bf16; {W_gb:.0f} GB/s per ICI "
     "link each way), an MLP with F = {F:,}: what is the smallest batch per chip, in tokens, "
     "at the best FSDP × TP split, and how many chips can a batch of {B_m}M tokens "
     "({B_m} × 2²⁰) keep compute-bound?"),
    (Part("tokens_per_chip", _w7_mb, slips=(
         Slip("FSDP alone", lambda v: par.critical_batch_per_chip_fsdp(v["chip"]),
              "that is FSDP alone, C/W_axis; with TP at the best split it is "
              "4·(C/W_axis)²/F."),
         Slip("one way round", lambda v: par.min_batch_per_chip_fsdp_tp(
             v["chip"], v["F"], bandwidth=par.axis_bandwidth(v["chip"], wraparound=False)),
              "each axis has wraparound: W_axis is 2W (both directions of a link), and the "
              "threshold goes as its inverse square."),
     ), unit="count"),
     "smallest batch per chip, in tokens"),
    (Part("chips", _w7_chips, rel=0.02, slips=(
         Slip("FSDP alone", _w7_fsdp_chips,
              "that is how many chips FSDP alone keeps busy; with TP each chip needs only "
              "4·(C/W_axis)²/F tokens."),
     ), unit="count"),
     "most chips kept compute-bound, in chips"),
    solution=_w7_solution, worked="7")


# --------------------------------------------------------------------------- 8. pipeline bubble

def _w8_m(v):
    return par.min_microbatches(v["K"], v["f_pct"] / 100)


def _w8_plain(v):
    return 100 * par.pipeline_bubble_fraction(v["K"], v["M"])


def _w8_int(v):
    return 100 * par.pipeline_bubble_fraction(v["K"], v["v"] * v["M"])


def _w8_solution(v):
    return (
        f"(K−1)/(M+K−1) ≤ {v['f_pct']}% needs M ≥ (K−1)(1−f)/f: M = {_w8_m(v)}.",
        f"At M = {v['M']} the bubble is {v['K'] - 1}/{v['M'] + v['K'] - 1} = {_w8_plain(v):.3g}%.",
        f"Interleaving v = {v['v']} chunks: (K−1)/(vM+K−1) = {_w8_int(v):.3g}%.",
    )


def _pct_slip(value):
    return Slip("a fraction, not a percentage", lambda v: value(v) / 100,
                "the answer is asked in percent: {answer:.3g} is a fraction; multiply by 100.")


W8 = problem(
    "parallelism.w8", "Microbatches and interleaving against the bubble",
    _draws(K=Choice((8, 4, 16, 12), "stages"),
           f_pct=Choice((5, 10, 2), "bubble", "%"),
           M=Choice((16, 8, 32), "microbatches"),
           v=Choice((2, 4, 3), "chunks")),
    ("A pipeline of {K} stages (GPipe or 1F1B). How many microbatches keep the bubble at most "
     "{f_pct}%? What is the bubble with M = {M}, in %, and with interleaving over v = {v} "
     "chunks per chip at M = {M}, in %?"),
    (Part("microbatches", _w8_m, rel=COUNT, slips=(
         Slip("(K − 1)/M", lambda v: math.ceil((v["K"] - 1) / (v["f_pct"] / 100) - 1e-9),
              "the bubble is (K−1)/(M+K−1) of the step, not (K−1)/M: solve "
              "(K−1)/(M+K−1) ≤ f for M."),
     ), unit="count"),
     "fewest microbatches, in microbatches"),
    (Part("bubble_pct", _w8_plain, slips=(
         Slip("over the busy time", lambda v: 100 * (v["K"] - 1) / v["M"],
              "the bubble fraction is the idle time over the whole step, (K−1)/(M+K−1), not "
              "over the busy time."),
         _pct_slip(_w8_plain),
     ), unit="fraction"),
     "bubble at M, in %"),
    (Part("interleaved_pct", _w8_int, slips=(
         Slip("v·K stages", lambda v: 100 * par.pipeline_bubble_fraction(v["v"] * v["K"],
                                                                        v["v"] * v["M"]),
              "interleaving does not lengthen the fill: it is still K−1 ticks, each v times "
              "shorter, so (K−1)/(vM+K−1)."),
         _pct_slip(_w8_int),
     ), unit="fraction"),
     "bubble with interleaving, in %"),
    solution=_w8_solution, worked="8")


# --------------------------------------------------------------------------- 9. GPipe vs 1F1B

def _w9_stage(v, in_flight):
    cfg = _model(v)
    return training.activation_memory(cfg, 1, v["T"], remat="full",
                                      layers=cfg.n_layers // v["K"], in_flight=in_flight,
                                      logits=False)


def _w9_redo(v):
    cfg = _model(v)
    return (training.activation_bytes_per_layer(cfg, 1, v["T"], remat="none")
            - training.activation_bytes_per_layer(cfg, 1, v["T"], remat="full"))


def _w9_gpipe(v):
    return _w9_stage(v, v["M"]) / GB


def _w9_1f1b(v):
    return _w9_stage(v, min(v["M"], v["K"])) / GB


def _w9_solution(v):
    cfg = _model(v)
    layers = cfg.n_layers // v["K"]
    per = training.activation_bytes_per_layer(cfg, 1, v["T"], remat="full")
    return (
        f"Full remat keeps each layer's input, 2·T·D = {decimal_bytes(per)} per layer per sequence; a "
        f"stage has {layers} layers, and the layer being redone holds {decimal_bytes(_w9_redo(v))} more.",
        f"GPipe holds all {v['M']} microbatches: {v['M']} × {layers} × {decimal_bytes(per)} + "
        f"{decimal_bytes(_w9_redo(v))} = {decimal_bytes(_w9_gpipe(v) * GB)}.",
        f"1F1B holds at most K = {v['K']}: {decimal_bytes(_w9_1f1b(v) * GB)}.",
    )


def _w9_no_redo(value):
    return Slip("without the layer being redone",
                distinct_from(value, lambda v: value(v) - _w9_redo(v) / GB),
                "while a layer is recomputed it holds all its tensors again, once, on top of the "
                "checkpoints.")


W9 = problem(
    "parallelism.w9", "Activations in flight: GPipe against 1F1B",
    _draws(figures=("D", "L"),
           model=Choice(("LLaMA-3 70B", "LLaMA-3 8B"), "model"),
           K=Choice((8, 4, 16), "stages"),
           M=Choice((32, 16, 64), "microbatches"),
           T=Choice((8192, 4096), "sequence length")),
    ("{model} (D = {D:,}, {L} layers) is pipelined over {K} stages of equal layers, with "
     "full rematerialisation and {M} microbatches of one {T:,}-token sequence each. How "
     "much activation memory does the first stage hold at its peak under GPipe and under "
     "1F1B, in GB? (The chapter's accounting: the first stage holds no logits; one layer "
     "is recomputed at a time.)"),
    (Part("gpipe_gb", _w9_gpipe, conventions=(in_gib(_w9_gpipe),), slips=(
         Slip("K in flight", distinct_from(_w9_gpipe, _w9_1f1b),
              "GPipe runs all {M} forward passes before any backward pass, so the first "
              "stage holds all {M} microbatches at once."),
         _w9_no_redo(_w9_gpipe),
     ), unit="bytes"),
     "GPipe, first stage, in GB"),
    (Part("onef1b_gb", _w9_1f1b, conventions=(in_gib(_w9_1f1b),), slips=(
         Slip("M in flight", distinct_from(_w9_1f1b, _w9_gpipe),
              "1F1B starts each backward pass as soon as it can: the first stage holds at "
              "most K = {K} microbatches, not {M}."),
         _w9_no_redo(_w9_1f1b),
     ), unit="bytes"),
     "1F1B, first stage, in GB"),
    solution=_w9_solution, worked="9")


# --------------------------------------------------------------------------- 10. send over DCN

def _w10_bytes(v):
    """One microbatch's boundary activation: T·D bf16 numbers."""
    return v["T"] * _model(v).d_model * 2.0


def _w10_dcn(v):
    return get_chip(v["chip"]).nic_bandwidth_per_chip


def _w10_send_us(v):
    return _w10_bytes(v) / v["slice"] / _w10_dcn(v) / US


def _w10_compute_ms(v):
    flops = transformer.training_flops(_model(v), v["T"])
    return training.run_time(flops, v["stages"] * v["slice"], v["chip"], mfu=1) / MS


def _w10_solution(v):
    return (
        f"The boundary activation is T·D bf16 numbers: {decimal_bytes(_w10_bytes(v))}, "
        f"{decimal_bytes(_w10_bytes(v) / v['slice'])} per chip of the {v['slice']}-chip slice.",
        f"Each chip sends its part through its DCN share, {_w10_dcn(v) / GB:.3g} GB/s: "
        f"{format_seconds(_w10_send_us(v) * US)}.",
        f"The stage computes 6·P·T / ({v['stages']} stages) on {v['slice']} chips at peak: "
        f"{format_seconds(_w10_compute_ms(v) * MS)}. The send hides easily.",
    )


W10 = problem(
    "parallelism.w10", "A pipeline send over the data-centre network",
    _draws(figures=("Pm_b", "C_t", "nic_gb", "host_gb", "per_host"),
           chip=Choice(("TPU v5p",), "chip"),
           model=Choice(("LLaMA-3 405B", "LLaMA-3 70B"), "model"),
           stages=Choice((16, 8, 4), "stages"),
           slice=Choice((256, 128, 512, 64), "chips per stage"),
           T=Choice((8192, 4096), "sequence length")),
    ("{model} ({Pm_b:.0f} billion parameters in matmuls) is pipelined over {stages} "
     "stages, each a slice of {slice} {chip} chips ({C_t:,.0f} TFLOP/s dense bf16; "
     "{nic_gb:g} GB/s of DCN per chip, its share of the {host_gb:g} GB/s of a host of "
     "{per_host}). One {T:,}-token microbatch's bf16 activation goes from "
     "one stage to the next over DCN, split evenly over the slice's chips. How long does "
     "the send take, in µs, and how long does a stage compute on that microbatch (forward "
     "and backward) at peak, in ms?"),
    (Part("send_us", _w10_send_us, slips=(
         Slip("through one chip", lambda v: _w10_send_us(v) * v["slice"],
              "the activation is split over the slice's {slice} chips, each sending its part "
              "through its own share of DCN at once."),
         Slip("the host's bandwidth", lambda v: _w10_send_us(v) / v["per_host"],
              "each chip sends through its share of DCN, the host's bandwidth divided by its "
              "chips, not through the whole host's."),
     ), unit="s"),
     "stage-to-stage send, in µs"),
    (Part("compute_ms", _w10_compute_ms, slips=(
         Slip("forward pass only", lambda v: _w10_compute_ms(v) / 3,
              SIX_FLOPS),
         Slip("the whole model", lambda v: _w10_compute_ms(v) * v["stages"],
              "each stage holds 1/{stages} of the layers, so it does 1/{stages} of the "
              "FLOPs."),
     ), unit="s", not_applicable=(
     *NO_LINK,)),
     "stage compute, in ms"),
    solution=_w10_solution, worked="10")


# --------------------------------------------------------------------------- 11. remat

def _w11(v, remat, **kw):
    cfg = _model(v)
    return training.activation_memory(cfg, 1, v["T"], remat=remat, logits=False, **kw)


def _w11_none(v):
    return _w11(v, "none") / GB


def _w11_full(v):
    return _w11(v, "full") / GB


def _w11_solution(v):
    cfg = _model(v)
    return (
        f"No recomputation: every layer keeps its block tensors, "
        f"{decimal_bytes(training.activation_bytes_per_layer(cfg, 1, v['T'], remat='none'))} per layer, "
        f"× {cfg.n_layers} layers = {decimal_bytes(_w11_none(v) * GB)}.",
        f"Full remat: each layer's input, "
        f"{decimal_bytes(training.activation_bytes_per_layer(cfg, 1, v['T'], remat='full'))} per layer, plus "
        f"the one layer being recomputed: {decimal_bytes(_w11_full(v) * GB)}.",
        f"{_w11_none(v) / _w11_full(v):.3g} times less, for 8 FLOPs per parameter per token "
        "instead of 6.",
    )


def _with_logits(value):
    return Slip("with the logits",
                distinct_from(value, lambda v: value(v) + _logits(_model(v), v["T"]) / GB),
                "the question leaves the fp32 logits out: count the layers' activations only.")


W11 = problem(
    "parallelism.w11", "What full rematerialisation saves",
    _draws(figures=("D", "L"),
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B", "LLaMA-3 405B"), "model"),
           T=Choice((8192, 4096, 2048), "sequence length")),
    ("{model} (D = {D:,}, {L} layers), one sequence of {T:,} tokens, bf16 activations, a "
     "flash-style attention kernel: how much activation memory do all its layers keep for "
     "the backward pass with no recomputation, and with full rematerialisation, in GB? "
     "(The chapter's block accounting; logits left out.)"),
    (Part("none_gb", _w11_none, conventions=(in_gib(_w11_none),), slips=(
         Slip("unfused attention", lambda v: _w11(v, "none", flash_attention=False) / GB,
              "a flash-style kernel does not keep the T × T attention probabilities; it "
              "recomputes them in the backward pass."),
         _with_logits(_w11_none),
     ), unit="bytes"),
     "no recomputation, in GB"),
    (Part("full_gb", _w11_full, conventions=(in_gib(_w11_full),), slips=(
         Slip("checkpoints only", lambda v: _w11_full(v) - (
             training.activation_bytes_per_layer(_model(v), 1, v["T"], remat="none")
             - training.activation_bytes_per_layer(_model(v), 1, v["T"], remat="full")) / GB,
              "while a layer is recomputed it holds all its tensors again, once, on top of "
              "the checkpoints."),
         _with_logits(_w11_full),
     ), unit="bytes"),
     "full remat, in GB"),
    solution=_w11_solution, worked="11")


# --------------------------------------------------------------------------- 12. MoE AllToAll

def _w12_cost(v, k):
    return collectives.ragged_all_to_all(v["E"] * v["tok"], 2 * v["D"], k, v["E"], v["E"],
                                         v["chip"])


def _w12_ms(k):
    return lambda v: _w12_cost(v, k).ragged.time / MS


def _w12_solution(v):
    return (
        f"Each chip routes k copies of its {v['tok']:,} tokens of {2 * v['D']:,} bytes; an "
        f"AllToAll of V = k·E·tokens·2D bytes over {v['E']} chips.",
        f"Top-2: {decimal_bytes(_w12_cost(v, 2).ragged.nbytes)} in all, "
        f"{format_seconds(_w12_cost(v, 2).ragged.time)}.",
        f"Top-1 halves the bytes: {format_seconds(_w12_cost(v, 1).ragged.time)}.",
    )


W12 = problem(
    "parallelism.w12", "Top-1 against top-2 routing",
    _draws(figures=("W_gb",),
           chip=Choice(("TPU v5p",), "chip"),
           E=Choice((16, 8, 12, 4), "experts"),
           tok=Choice((8192, 4096, 16384), "tokens per chip"),
           D=Choice((4096, 2048, 8192), "D")),
    ("A mixture of experts puts one of its {E} experts on each of {E} {chip} chips, one "
     "ICI axis with wraparound (the chapter's model: {W_gb:.0f} GB/s per link each way, "
     "1 µs per "
     "hop). Each chip holds {tok:,} tokens of bf16[{D:,}] and "
     "sends each one to its chosen experts (ragged AllToAll, routing uniform at random). "
     "How long does the dispatch take with top-2 routing, and with top-1, in ms?"),
    (Part("top2_ms", _w12_ms(2), slips=(
         Slip("dense dispatch", lambda v: _w12_cost(v, 2).dense.time / MS,
              "a ragged AllToAll sends only the k copies of each token, not a buffer slot "
              "for every expert: E/k times less."),
     ), unit="s"),
     "top-2 dispatch, in ms"),
    (Part("top1_ms", _w12_ms(1), slips=(
         Slip("as top-2", _w12_ms(2),
              "top-1 sends one copy of each token instead of two: the traffic is linear in "
              "k."),
     ), unit="s"),
     "top-1 dispatch, in ms"),
    solution=_w12_solution, worked="12")


# --------------------------------------------------------------------------- 13. DP over DCN

def _w13_pod(v):
    return par.dcn_critical_batch_per_pod(v["chip"])


def _w13_host(v):
    return par.dcn_critical_batch_per_pod(v["chip"],
                                          bandwidth=get_chip(v["chip"]).host_network_bandwidth)


def _w13_solution(v):
    chip = get_chip(v["chip"])
    return (
        f"Each chip AllReduces its gradient shard over its DCN share, "
        f"{chip.nic_bandwidth_per_chip / GB:.3g} GB/s; the pod size cancels.",
        f"Per pod: B_pod > C / W_dcn = {format_count(_w13_pod(v))} tokens.",
        f"{v['pods']} pods: {format_count(_w13_pod(v) * v['pods'])} tokens of global batch.",
    )


W13 = problem(
    "parallelism.w13", "Data parallelism across pods",
    _draws(figures=("C_t", "host_gb", "per_host"),
           chip=Choice(("TPU v5p", "TPU v4p", "TPU v5e", "TPU v6e"), "chip"),
           pods=Choice((8, 4, 16, 2), "pods")),
    ("A model trains with one copy per {chip} pod (sharded inside it) and data parallelism "
     "over DCN across {pods} pods. A {chip} does {C_t:,.0f} TFLOP/s dense bf16, and each "
     "host of {per_host} chips has {host_gb:.0f} GB/s of DCN, shared by its chips. How many "
     "tokens per pod, and how many of global batch, keep the DCN AllReduce hidden?"),
    (Part("per_pod", _w13_pod, slips=(
         Slip("the host's bandwidth", _w13_host,
              DCN_SHARE),
     ), unit="count"),
     "batch per pod, in tokens"),
    (Part("global_batch", lambda v: _w13_pod(v) * v["pods"], slips=(
         Slip("one pod", _w13_pod,
              "that is one pod's batch; the global batch is {pods} times larger."),
         Slip("the host's bandwidth", lambda v: _w13_host(v) * v["pods"],
              DCN_SHARE),
     ), unit="count"),
     "global batch, in tokens"),
    solution=_w13_solution, worked="13")


# --------------------------------------------------------------------------- 14. DP across nodes

#: The largest 1F1B bubble problem 14 accepts.
W14_BUBBLE = 0.1


def _w14_R(v):
    return v["k"] * get_chip(v["chip"]).chips_per_host


def _w14_M(v):
    """Fewest 1F1B microbatches that keep a k-stage pipeline's bubble at most 10%."""
    return par.min_microbatches(v["k"], W14_BUBBLE)


def _w14_replica(v, **kw):
    return par.data_parallel_critical_batch(v["chip"], _w14_R(v), per="replica",
                                            microbatches=_w14_M(v), **kw)


def _w14_gpu(v):
    return par.data_parallel_critical_batch(v["chip"], _w14_R(v), microbatches=_w14_M(v))


def _w14_one(v):
    """C / W per replica: one microbatch's worth, what the AllReduce alone would need."""
    return par.data_parallel_critical_batch(v["chip"], _w14_R(v), per="replica")


def _w14_node_nic(v):
    return _w14_replica(v, nic_bandwidth=get_chip(v["chip"]).host_network_bandwidth)


def _w14_solution(v):
    chip = get_chip(v["chip"])
    w = par.data_parallel_bandwidth(chip, _w14_R(v))
    return (
        f"Every DP peer of a GPU is in another node: its ring crosses its own NIC, W = "
        f"{w / GB:.3g} GB/s; one microbatch's worth is C / W = {format_count(_w14_one(v))} "
        f"tokens per replica.",
        f"A {v['k']}-stage 1F1B pipeline idles (K−1)/(M+K−1); at most 10% needs "
        f"M = {_w14_M(v)} microbatches.",
        f"The first stage finishes last, and its AllReduce can start only after its last "
        f"backward pass, so each microbatch must carry C / W: {_w14_M(v)} × "
        f"{format_count(_w14_one(v))} = {format_count(_w14_replica(v))} tokens per replica.",
        f"Per GPU of global batch: divide by {_w14_R(v)}: {format_count(_w14_gpu(v))} tokens.",
    )


W14 = problem(
    "parallelism.w14", "Data parallelism when a replica spans nodes",
    _draws(figures=("C_t", "nic_gb"),
           chip=Choice(("H100", "A100", "H200", "B200"), "chip"),
           k=Choice((4, 2, 8, 16), "nodes per replica")),
    ("One model copy spans {k} nodes of 8 {chip}s (TP 8 inside each node, PP {k} across, "
     "a 1F1B schedule). Data parallelism runs across such copies; each GPU has its own NIC "
     "({nic_gb:.0f} GB/s each way) and does {C_t:,.0f} TFLOP/s dense bf16. How many "
     "microbatches keep the bubble at most 10%, and then what batch per replica, and per "
     "GPU of global batch, keeps the DP AllReduce hidden, in tokens? (It can overlap only "
     "the last microbatch's backward pass.)"),
    (Part("microbatches", _w14_M, slips=(
         Slip("bubble over busy time", lambda v: math.ceil((v["k"] - 1) / W14_BUBBLE),
              "the bubble is (K−1)/(M+K−1), the idle share of the whole step."),
     ), unit="count"),
     "microbatches for a bubble of at most 10%"),
    (Part("per_replica", _w14_replica, slips=(
         Slip("one microbatch", _w14_one,
              "that hides the AllReduce under one microbatch's backward pass; the step has "
              "M of them and only the last one can hide it, so the step needs M times that."),
         Slip("the node's NICs", _w14_node_nic,
              OWN_NIC),
     ), unit="count"),
     "batch per replica, in tokens"),
    (Part("per_gpu", _w14_gpu, slips=(
         Slip("per replica", _w14_replica,
              "that is the batch per replica; per GPU of global batch divide by the replica's "
              "8 × {k} GPUs."),
         Slip("one microbatch", lambda v: _w14_one(v) / _w14_R(v),
              "only the last of the M microbatches can hide the AllReduce: M times that."),
     ), unit="count"),
     "batch per GPU of global batch, in tokens"),
    solution=_w14_solution, worked="14")


# --------------------------------------------------------------------------- 15. accumulation

def _w15(v, scheme, **kw):
    return par.accumulation_critical_batch(v["chip"], v["M"], scheme=scheme, **kw)


def _w15_one_way(v, scheme):
    return _w15(v, scheme, bandwidth=par.axis_bandwidth(v["chip"], wraparound=False))


def _w15_one(v):
    """C / W_axis: what one microbatch needs, and what the step would need with M = 1."""
    return par.critical_batch_per_chip_fsdp(v["chip"])


def _w15_dp_exposed(v):
    """Percent of the step DP leaves exposed at C/W tokens per chip per step."""
    return 100 * par.accumulation_cost(v["chip"], v["M"], _w15_one(v),
                                       scheme="dp").exposed_fraction


def _w15_solution(v):
    one = _w15_one(v)
    return (
        f"One microbatch needs C / W_axis = {format_count(one)} tokens per chip on a "
        f"{v['chip']} axis with wraparound.",
        f"FSDP gathers the weights for each of the {v['M']} microbatches: "
        f"{v['M']} × that = {format_count(_w15(v, 'fsdp'))} tokens per chip per step.",
        f"DP reduces once per step, but the summed gradients exist only after the last "
        f"microbatch, so only its backward pass can hide the AllReduce: again "
        f"{format_count(_w15(v, 'dp'))}.",
        f"At {format_count(one)} tokens per chip per step the last microbatch's backward pass "
        f"covers 1/{v['M']} of the AllReduce; the rest is exposed once per step: "
        f"{_w15_dp_exposed(v):.3g}% of the step.",
    )


W15 = problem(
    "parallelism.w15", "Gradient accumulation under FSDP and DP",
    _draws(figures=("C_t", "W_gb"),
           chip=Choice(("TPU v5p", "TPU v4p", "TPU v5e", "TPU v6e"), "chip"),
           M=Choice((8, 4, 16, 32), "microbatches")),
    ("Training on one {chip} ICI axis with wraparound ({C_t:,.0f} TFLOP/s dense bf16; "
     "{W_gb:.0f} GB/s per link each way) accumulates gradients over {M} "
     "microbatches per step, bf16 traffic, each collective overlapping only the pass of "
     "the microbatch it belongs to. How many tokens per chip per step hide all the "
     "communication under FSDP, and under plain data parallelism (one AllReduce per "
     "step)? And with plain DP at C/W tokens per chip per step, what percentage of the "
     "step is exposed communication?"),
    (Part("fsdp_tokens", lambda v: _w15(v, "fsdp"), slips=(
         Slip("once per step", _w15_one,
              "FSDP gathers the weights again for every microbatch, so each of the {M} "
              "microbatches must be compute-bound on its own."),
         Slip("one way round", lambda v: _w15_one_way(v, "fsdp"),
              TWO_WAYS),
     ), unit="count"),
     "FSDP, batch per chip per step, in tokens"),
    (Part("dp_tokens", lambda v: _w15(v, "dp"), slips=(
         Slip("whatever M", _w15_one,
              "the AllReduce runs once per step, but it can start only when the last "
              "microbatch has produced its gradients: only that microbatch's backward pass, "
              "1/{M} of the step's, can hide it."),
         Slip("one way round", lambda v: _w15_one_way(v, "dp"),
              TWO_WAYS),
     ), unit="count"),
     "DP, batch per chip per step, in tokens"),
    (Part("dp_exposed_pct", _w15_dp_exposed, slips=(
         _pct_slip(_w15_dp_exposed),
     ), unit="fraction"),
     "DP at C/W per step, exposed share of the step, in %"),
    solution=_w15_solution, worked="15")


# --------------------------------------------------------------------------- 16. zero bubble

def _w16_cost(v, schedule, m=None):
    return par.pipeline_schedule_cost(schedule, v["K"], v["M"] if m is None else m)


def _w16_pct(schedule):
    return lambda v: 100 * _w16_cost(v, schedule).bubble_fraction


def _w16_m_same(v):
    target = _w16_cost(v, "zb-h1").bubble_fraction
    return next(m for m in range(v["K"], 10**5)
                if _w16_cost(v, "1f1b", m).bubble_fraction <= target)


def _w16_solution(v):
    one, zb = _w16_cost(v, "1f1b"), _w16_cost(v, "zb-h1")
    return (
        f"Per stage, M·(t_F+t_B+t_W) = {one.busy:g} units of work.",
        f"1F1B idles (K−1)(t_F+t_B+t_W) = {one.bubble:g}: {100 * one.bubble_fraction:.3g}%.",
        f"ZB-H1 idles (K−1)(t_F+t_B−t_W) = {zb.bubble:g}: {100 * zb.bubble_fraction:.3g}%.",
        f"1F1B reaches that at M = {_w16_m_same(v)} microbatches.",
    )


def _w16_busy_slip(schedule):
    return Slip("over the busy time", distinct_from(
                    _w16_pct(schedule), lambda v: 100 * _w16_cost(v, schedule).bubble
                    / _w16_cost(v, schedule).busy),
                "the bubble fraction is the idle time over the whole step (busy + idle), not "
                "over the busy time.")


W16 = problem(
    "parallelism.w16", "Zero bubble against 1F1B",
    _draws(K=Choice((16, 8, 4, 12), "stages"),
           M=Choice((64, 32, 128, 48), "microbatches")),
    ("A pipeline of {K} stages runs {M} microbatches with t_F = t_B = t_W (forward, "
     "input-gradient and weight-gradient passes equally long). What bubble does 1F1B idle, "
     "in %, what does ZB-H1, in %, and how many microbatches would 1F1B need to match "
     "ZB-H1's bubble?"),
    (Part("onef1b_pct", _w16_pct("1f1b"), slips=(_w16_busy_slip("1f1b"),
                                                 _pct_slip(_w16_pct("1f1b"))), unit="fraction"),
     "1F1B bubble, in %"),
    (Part("zb_pct", _w16_pct("zb-h1"), slips=(
         _w16_busy_slip("zb-h1"),
         Slip("as 1F1B", _w16_pct("1f1b"),
              "ZB-H1 defers the weight-gradient passes into the cool-down: the bubble per "
              "stage falls from (K−1)(t_F+t_B+t_W) to (K−1)(t_F+t_B−t_W)."),
     ), unit="fraction"),
     "ZB-H1 bubble, in %"),
    (Part("microbatches", _w16_m_same, rel=COUNT, unit="count"),
     "1F1B at the same bubble, in microbatches"),
    solution=_w16_solution, worked="16")


# --------------------------------------------------------------------------- 17. HSDP

def _w17_state(v):
    return _state(v) / v["F"] / GB


def _w17_shard(v):
    return training.training_memory(_model(v), precision=PRECISION).gradients / v["F"] / GB


def _w17_nic_parts(v, group):
    """NIC bytes per GPU per step: the group's 2 weight gathers and 1 gradient scatter, and
    the AllReduce of the 1/group shard across groups (rail-aligned rings)."""
    V = training.training_memory(_model(v), precision=PRECISION).weights  # bf16 = gradients
    inside = 3 * par.nic_bytes_per_gpu("H100", V, group)
    across = (par.nic_bytes_per_gpu("H100", V / group, v["N"] // group, kind="AllReduce",
                                    stride=group) if group < v["N"] else 0.0)
    return inside, across


def _w17_nic(v):
    return sum(_w17_nic_parts(v, v["F"])) / GB


def _w17_solution(v):
    inside, across = _w17_nic_parts(v, v["F"])
    fsdp = sum(_w17_nic_parts(v, v["N"]))
    return (
        f"The state, 16 bytes per parameter, is {decimal_bytes(_state(v))}; FSDP divides it by the group "
        f"of {v['F']}, not by all {v['N']:,} GPUs: {decimal_bytes(_w17_state(v) * GB)} per GPU.",
        f"Across groups, each GPU AllReduces its bf16 gradient shard, 2·P / {v['F']} = "
        f"{decimal_bytes(_w17_shard(v) * GB)}, once per step.",
        f"But a group of {v['F']} spans {v['F'] // 8} nodes, so its gathers and scatters cross "
        f"the NICs too: {decimal_bytes(inside)} per GPU, plus {decimal_bytes(across)} for the "
        f"AllReduce, {decimal_bytes(inside + across)} in all, against {decimal_bytes(fsdp)} for "
        f"FSDP over all {v['N']:,} GPUs. HSDP saves network traffic only when the group fits in "
        f"one NVLink domain.",
    )


W17 = problem(
    "parallelism.w17", "Hybrid sharding: what each GPU holds, what crosses",
    _draws(figures=("P_b",),
           well_posed=lambda v: _state(v) / v["F"] <= get_chip("H100").hbm_bytes,
           model=Choice(("LLaMA-3 70B", "LLaMA-3 8B", "LLaMA-3 405B"), "model"),
           F=Choice((64, 32, 128, 256), "GPUs per FSDP group"),
           N=Choice((1024, 2048, 4096), "GPUs")),
    ("{model} ({P_b:.1f} billion parameters) trains on {N:,} H100s with hybrid sharding: "
     "FSDP over groups of {F} GPUs, data parallelism across the groups, Adam in mixed "
     "precision (16 bytes per parameter). How much training state does each GPU hold, "
     "how big is the bf16 gradient shard each GPU AllReduces across groups per step, "
     "and how many bytes leave each GPU through its NIC per step (one microbatch; "
     "rail-aligned rings, 8 GPUs per node), in GB?"),
    (Part("state_gb", _w17_state, conventions=(in_gib(_w17_state),), slips=(
         Slip("divided by all GPUs", lambda v: _state(v) / v["N"] / GB,
              "hybrid sharding divides the state by the FSDP group of {F}, not by all {N:,} "
              "GPUs: the groups hold copies."),
     ), unit="bytes"),
     "training state per GPU, in GB"),
    (Part("shard_gb", _w17_shard, conventions=(in_gib(_w17_shard),), slips=(
         Slip("fp32 gradients", lambda v: _w17_shard(v) * 2,
              "the gradients are bf16, 2 bytes per parameter."),
         Slip("the whole gradient", lambda v: _w17_shard(v) * v["F"],
              "each GPU AllReduces only its 1/{F} shard with the same GPU of the other "
              "groups."),
     ), unit="bytes"),
     "gradient shard AllReduced per GPU, in GB"),
    (Part("nic_gb", _w17_nic, conventions=(in_gib(_w17_nic),), slips=(
         Slip("the AllReduce only", lambda v: _w17_nic_parts(v, v["F"])[1] / GB,
              "the group spans {F} GPUs, more than one 8-GPU node: its weight gathers and "
              "gradient scatters leave the node through the NICs as well."),
     ), unit="bytes"),
     "bytes through each GPU's NIC per step, in GB"),
    solution=_w17_solution, worked="17")


# --------------------------------------------------------------------------- 18. DP buckets

#: PyTorch DDP's default gradient bucket (``bucket_cap_mb=25``), in bytes.
BUCKET = bucketing.DDP_DEFAULT_BUCKET_BYTES


def _w18_grad(v):
    return 2.0 * transformer.param_count(_model(v)).total


def _w18_backward(v):
    """One microbatch's backward pass at peak: 2/3 of its training FLOPs (attention included)."""
    cfg = _model(v)
    flops = float(transformer.training_flops(cfg, v["tokens"], include_attention=True,
                                             seq_len=v["tokens"]))
    return flops * 2 / 3 / get_chip("H100").flops("bf16")


def _w18_bucket_time(v):
    return float(collectives.collective_cost("AllReduce", BUCKET, [v["N"]], "H100",
                                             gpus_per_node=8).time)


def _w18_buckets(v):
    return float(math.ceil(_w18_grad(v) / BUCKET))


def _w18_exposed_ms(v):
    return bucketing.accumulation_exposed(_w18_grad(v), BUCKET, v["M"] * _w18_backward(v),
                                          v["M"], v["N"], "H100", gpus_per_node=8) / MS


def _w18_napkin_ms(v):
    """All buckets back to back minus the last microbatch's backward, at least one bucket."""
    c = _w18_bucket_time(v)
    return max(c, _w18_buckets(v) * c - _w18_backward(v)) / MS


def _w18_whole_window_ms(v):
    return bucketing.exposed_gradient_reduction(_w18_grad(v), BUCKET, v["M"] * _w18_backward(v),
                                                v["N"], "H100", gpus_per_node=8) / MS


def _w18_solution(v):
    k, c, tb = _w18_buckets(v), _w18_bucket_time(v), _w18_backward(v)
    return (
        f"The bf16 gradients are 2 · P = {decimal_bytes(_w18_grad(v))}: ⌈G / 25 MiB⌉ = "
        f"{k:,.0f} buckets.",
        f"With no_sync the reduction starts with the last of the {v['M']} microbatches: its "
        f"backward pass ({format_seconds(tb)}) is the only window. The buckets need "
        f"{k:,.0f} × {format_seconds(c)} = {format_seconds(k * c)} back to back.",
        f"Timeline (bucket i ready at i/k of the window, reduced in order): "
        f"{format_seconds(_w18_exposed_ms(v) * MS)} exposed after the backward pass.",
    )


W18 = problem(
    "parallelism.w18", "Gradient buckets behind the last microbatch",
    _draws(figures=("P_b",),
           well_posed=lambda v: (_w18_buckets(v) * _w18_bucket_time(v)
                                 > 1.2 * _w18_backward(v)),
           model=Choice(("LLaMA-3 8B",), "model"),
           N=Choice((64, 32, 128, 256), "GPUs"),
           tokens=Choice((1024, 2048, 512), "tokens per GPU per microbatch"),
           M=Choice((4, 2, 8), "microbatches")),
    ("{model} ({P_b:.2f} billion parameters) trains with PyTorch DDP on {N} H100s (nodes of "
     "8, rail-aligned rings), bf16 gradients in 25 MiB buckets, {tokens:,} tokens per GPU "
     "per microbatch and M = {M} microbatches accumulated under no_sync. How many buckets "
     "are there, and how much of the gradient AllReduce is left after the last backward "
     "pass, in ms? (Backward pass at peak, 2/3 of the training FLOPs with attention; one "
     "bucket's AllReduce as collective_cost prices it; buckets ready uniformly in time and "
     "reduced one after the other.)"),
    (Part("buckets", _w18_buckets, rel=COUNT, unit="count", slips=(
         Slip("MB for MiB", distinct_from(_w18_buckets,
                                          lambda v: math.ceil(_w18_grad(v) / 25e6)),
              "bucket_cap_mb is in MiB: 25 × 2²⁰ bytes."),
     )),
     "buckets per step"),
    (Part("exposed_ms", _w18_exposed_ms, rel=0.1, conventions=(
         Convention("napkin: buckets minus the window", _w18_napkin_ms),
     ), slips=(
         Slip("whole step as the window", distinct_from(_w18_exposed_ms,
                                                        _w18_whole_window_ms),
              "no_sync skips the reduction for the first M − 1 microbatches: it can hide "
              "only behind the last one's backward pass, not the whole step's."),
     ), unit="s", not_applicable=(*NO_LINK,)),
     "exposed AllReduce, in ms"),
    solution=_w18_solution, worked="18")


# --------------------------------------------------------------------------- 19. ZeRO-Offload

CPU_ADAM = offload.CPU_ADAM_BYTES_PER_PARAM


def _w19_shard(v):
    return transformer.param_count(_model(v)).total / v["N"]


def _w19_cost(v):
    return offload.optimizer_offload(_w19_shard(v), "H100",
                                     host_memory_bandwidth=v["host_gb"] * GB)


def _w19_pcie_ms(v):
    return _w19_cost(v).pcie / MS


def _w19_cpu_ms(v):
    return _w19_cost(v).cpu_update / MS


def _w19_solution(v):
    return (
        f"Each GPU owns P / {v['N']} = {_w19_shard(v) / 1e9:.3g} billion parameters' state.",
        f"PCIe: its bf16 gradient shard down and the bf16 weights back, 2 bytes per parameter "
        f"each way at {get_chip('H100').pcie_bandwidth / GB:.0f} GB/s, the two directions at "
        f"once: {format_seconds(_w19_pcie_ms(v) * MS)}.",
        f"CPU Adam: 28 bytes per parameter through DRAM for the 8 GPUs of the host at "
        f"{v['host_gb']} GB/s: {format_seconds(_w19_cpu_ms(v) * MS)}.",
    )


W19 = problem(
    "parallelism.w19", "ZeRO-Offload: PCIe or the host's memory?",
    _draws(figures=("P_b",),
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B"), "model"),
           N=Choice((8, 16, 64), "GPUs"),
           host_gb=Choice((300, 200, 500), "host DRAM bandwidth", "GB/s")),
    ("{model} ({P_b:.2f} billion parameters) trains with ZeRO-Offload on {N} H100s (8 per "
     "host, PCIe 64 GB/s each way per GPU): the fp32 master weights and Adam moments, "
     "sharded over the {N} GPUs, live in host memory and the CPU updates them. How long "
     "does one GPU's PCIe transfer take per step (bf16 gradients down, bf16 weights up, "
     "both directions at once), in ms, and how long does the host's Adam update take if "
     "it touches 28 bytes per parameter and its DRAM streams {host_gb} GB/s, in ms?"),
    (Part("pcie_ms", _w19_pcie_ms, slips=(
         Slip("fp32 gradients", lambda v: 2 * _w19_pcie_ms(v),
              "the gradients and weights cross PCIe in bf16, 2 bytes per parameter, and the "
              "two directions run at once."),
     ), unit="s", not_applicable=(*NO_LINK,)),
     "PCIe transfer per GPU, in ms"),
    (Part("cpu_ms", _w19_cpu_ms, slips=(
         Slip("one GPU's share", lambda v: _w19_cpu_ms(v) / 8,
              "the host's DRAM serves all 8 GPUs of its node: 8 shards' updates share it."),
         Slip("state read only", lambda v: _w19_cpu_ms(v) * 12 / CPU_ADAM,
              "Adam reads and writes its fp32 state (24 bytes) and reads the gradient and "
              "writes the weight (4 more): 28 bytes per parameter."),
     ), unit="s", not_applicable=(*NO_LINK,)),
     "CPU Adam update, in ms"),
    solution=_w19_solution, worked="19")


PROBLEMS: tuple[Problem, ...] = (W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11, W12, W13, W14,
                                 W15, W16, W17, W18, W19)

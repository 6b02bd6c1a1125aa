"""Practice problems of the chapter book/transformers.md (see :mod:`scalebook.practice.problem`):
its thirteen worked problems again, each with its inputs drawn anew.

The chapter's conventions, which the problems state: training costs 3 × the forward pass; the
attention core is counted with no causal discount (every query against all T keys; a causal
discount is pinned, with a hint); the mixed-precision state is 16 bytes per parameter (an fp32
master copy; the 12 bytes of a run without one is pinned); activations are the LLaMA block's own
saved tensors with a flash-style kernel (an unfused softmax and Korthikanti et al.'s GPT-3
formula are pinned); peaks are dense, never "with sparsity". Sizes are asked in GB (10⁹ bytes);
an answer in GiB is accepted. Shares and utilisations are asked in percent.
"""

from __future__ import annotations

from ..homework.alternatives import NO_LINK, ONE_PASS
from typing import Any, Callable, Mapping

from .. import reliability
from ..hardware import get_chip
from ..homework.parts import (PINNED, Convention, Part, Slip, distinct_from,
                              merged)
from ..parallelism import pipeline_bubble_fraction, pipeline_schedule_cost
from ..scaling_laws import CHINCHILLA_TOKENS_PER_PARAM, compute_optimal
from ..training import (BF16_WEIGHTS_FP32_ADAM, MIXED_PRECISION_ADAM, activation_bytes_per_layer,
                        block_activation_bytes_per_token, fewest_chips, implied_mfu,
                        korthikanti_activation_bytes_per_layer, llama3_405b, run_time,
                        training_flops_from_params, training_memory)
from ..transformer import (TransformerConfig, attention_crossover_context,
                           attention_flops_per_token, flops_per_token, llama3_70b, llama3_8b,
                           param_count, training_flops)
from ..units import format_bytes, format_count, format_seconds
from ..variants import Choice
from .common import DAY, GB, draws, in_gib, percent_slip
from .problem import Problem, one_answer, problem

#: The head width of the LLaMA 3 models, which the problems with a drawn D keep: H = D / 128.
D_HEAD = 128

#: The chapter's three models, by the name the text gives them.
MODELS: Mapping[str, Callable[[], TransformerConfig]] = {
    "LLaMA-3 70B": llama3_70b, "LLaMA-3 8B": llama3_8b, "LLaMA-3 405B": llama3_405b}

NO_CAUSAL = "no causal discount"
_CAUSAL_HINT = ("the problem counts no causal discount: every query meets all T keys, so the "
                "core is 4·T·H·d_h per layer forward, not half of it.")
#: A GPU datasheet prints its tensor-core peak "with sparsity", twice the dense one.
SPARSE_HINT = ("use the chip's dense bf16 peak; a GPU datasheet's larger figure is 'with "
               "sparsity', twice the dense rate.")




def _cfg(v: Mapping[str, Any]) -> TransformerConfig:
    return MODELS[v["model"]]()


def _dims(p: Mapping[str, Any]) -> dict[str, Any]:
    """The drawn model's shape and parameter counts (in billions), for the text."""
    cfg = MODELS[p["model"]]()
    c = param_count(cfg)
    return {"D": cfg.d_model, "L": cfg.n_layers, "H": cfg.n_heads, "K": cfg.n_kv_heads,
            "dh": cfg.d_head, "F": cfg.d_ff, "V": cfg.vocab_size,
            "P_b": c.matmul / 1e9, "N_b": c.total / 1e9}


#: The model as the text names it, with the six numbers the chapter counts from.
SHAPE = ("{model} (D = {D:,}, L = {L}, H = {H} query heads and K = {K} key/value heads of "
         "d_h = {dh}, F = {F:,}, gated MLP, V = {V:,}, separate embedding and unembedding)")

MODEL = Choice(tuple(MODELS), "model")






# --------------------------------------------------------------------------- 1. GQA's weights

def _w1_cfg(v, kv_heads=None) -> TransformerConfig:
    H = v["D"] // D_HEAD
    return TransformerConfig(d_model=v["D"], n_layers=1, n_heads=H, d_head=D_HEAD,
                             n_kv_heads=H if kv_heads == "H" else v["K"], d_ff=4 * v["D"],
                             vocab_size=1)


def _w1_gqa(v):
    return param_count(_w1_cfg(v)).attention


def _w1_mha(v):
    return param_count(_w1_cfg(v, "H")).attention


def _w1_solution(v):
    c, m = param_count(_w1_cfg(v)), param_count(_w1_cfg(v, "H"))
    return (
        f"H = D / d_h = {v['D']:,} / {D_HEAD} = {v['H']} query heads.",
        f"W_q and W_o: D·H·d_h = {c.attention_q:,} weights each.",
        f"W_k and W_v: D·K·d_h = {c.attention_k:,} each with K = {v['K']}.",
        f"GQA: 2·D·H·d_h + 2·D·K·d_h = {c.attention:,} weights per layer.",
        f"With K = H = {v['H']}: 4·D·H·d_h = {m.attention:,}.",
    )


W1 = problem(
    "transformers.w1", "The weights of grouped-query attention",
    draws(derive=lambda p: {"H": p["D"] // D_HEAD},
           D=Choice((8192, 4096, 6144, 12288), "D"),
           K=Choice((8, 4, 16), "K", "key/value heads")),
    ("A LLaMA-style layer has D = {D:,} and H = {H} query heads of d_h = 128, sharing K = {K} "
     "key/value heads (grouped-query attention; no biases). How many weights do its "
     "attention projections W_q, W_k, W_v and W_o hold, and how many would they hold with a "
     "key/value head per query head (K = H)?"),
    (Part("gqa_params", _w1_gqa, rel=0.001, slips=(
         Slip("K = H", _w1_mha,
              "under GQA W_k and W_v are D × K·d_h with K = {K} key/value heads, not H = {H}."),
         Slip("no W_o", lambda v: _w1_gqa(v) - param_count(_w1_cfg(v)).attention_o,
              "count the output projection W_o[H·d_h, D] too: four matrices."),
         Slip("K and V as one", lambda v: _w1_gqa(v) - param_count(_w1_cfg(v)).attention_v,
              "W_k and W_v are two matrices of D·K·d_h each."),
     ), unit="params"),
     "attention weights per layer under GQA, a count"),
    (Part("mha_params", _w1_mha, rel=0.001, slips=(
         Slip("kept K", _w1_gqa,
              "with a key/value head per query head, W_k and W_v are as wide as W_q: "
              "K = H = {H}."),
         Slip("no W_o (MHA)", lambda v: _w1_mha(v) * 3 / 4,
              "count the output projection W_o[H·d_h, D] too: 4·D·H·d_h."),
     ), unit="params"),
     "attention weights per layer with K = H, a count"),
    solution=_w1_solution, worked="1")


# --------------------------------------------------------------------------- 2, 3. FLOPs per token

def _flops(v, T=None):
    return flops_per_token(_cfg(v), v["T"] if T is None else T)


def _train(v, T=None):
    return float(_flops(v, T).training)


def _train_causal(v, T=None):
    f = _flops(v, T)
    return 3 * (f.matmul + f.attention_core / 2)


def _train_all_params(v, T=None):
    """6N with N every parameter (the embedding table too), plus the attention core."""
    return 6 * param_count(_cfg(v)).total + 3 * _flops(v, T).attention_core


def _share(v):
    return 100 * float(_flops(v).attention_share)


def _flops_part() -> Part:
    """The training FLOPs per token at the drawn T: all parameters in 6N accepted, the causal
    discount pinned, and the slips. Where attention is a small share, the causal discount and 6P
    alone lie within a check of each other: one hint names both there."""
    causal, alone, *both = merged(
        Slip("causal discount", distinct_from(_train, _train_causal),
             _CAUSAL_HINT),
        Slip("6P alone", distinct_from(_train, lambda v: 6 * param_count(_cfg(v)).matmul),
             "6P leaves out the attention core, 12·L·T·H·d_h per token for training."),
        "count the attention core, 12·L·T·H·d_h per token for training, in full: the problem "
        "makes no causal discount.")
    return Part("train_flops", _train, conventions=(
        Convention(_ALL_PARAMS, _train_all_params),
        Convention(causal.name, causal.value, PINNED, phrase=NO_CAUSAL, hint=str(causal.hint)),
    ), slips=(
        alone, *both,
        Slip("forward only", lambda v: _flops(v).forward,
             "training is forward plus backward, 3 × the forward FLOPs: 6P + 12·L·T·H·d_h."),
    ), unit="FLOPs")


def _w2_solution(v):
    f, c = _flops(v), param_count(_cfg(v))
    return (
        f"P (weights in matmuls: attention, MLP, unembedding) = {c.matmul:,}; 6P = "
        f"{format_count(6 * c.matmul)}FLOPs.",
        f"Attention core: 12·L·T·H·d_h = 12 × {v['L']} × {v['T']:,} × {v['H']} × {v['dh']} = "
        f"{format_count(3 * f.attention_core)}FLOPs.",
        f"Training: {format_count(f.training)}FLOPs per token ({f.training:.3g}).",
        f"The core's share: {f.attention_core:.3g} / {f.forward:.3g} = {_share(v):.3g}% "
        "(the same forward or for training).",
    )


_ALL_PARAMS = "6N with every parameter"

W2 = problem(
    "transformers.w2", "What a training token costs",
    draws(derive=_dims,
           model=MODEL,
           T=Choice((8192, 4096, 16384, 32768), "T", "tokens")),
    ("How many FLOPs does one training token cost " + SHAPE + " at T = {T:,} tokens of "
     "context, and what share of them, in percent, is the attention core? Count 2 FLOPs per "
     "weight per token forward, the backward as twice the forward, and the core with "
     + NO_CAUSAL + " (every query against all T keys)."),
    (_flops_part(),
     "training FLOPs per token, in FLOPs"),
    (Part("attention_share_pct", _share, conventions=(
         Convention(_ALL_PARAMS, lambda v: 100 * 3 * _flops(v).attention_core
                    / _train_all_params(v)),
         Convention("causal discount (share)", distinct_from(_share, lambda v: 100 * (
             _flops(v).attention_core / 2) / (_flops(v).matmul + _flops(v).attention_core / 2)),
             PINNED, phrase=NO_CAUSAL, hint=_CAUSAL_HINT),
     ), slips=(
         percent_slip(_share),
         Slip("against the matmuls", distinct_from(_share, lambda v: 100 * float(
             _flops(v).attention_core / _flops(v).matmul)),
              "the share is the core over all the FLOPs, weights' matmuls and core together."),
     ), unit="fraction"),
     "the attention core's share, in %"),
    solution=_w2_solution, worked="2")


def _w3_ratio(v):
    return _train(v) / _train(v, 8192)


def _w3_solution(v):
    f, f8 = _flops(v), _flops(v, 8192)
    return (
        f"At T = {v['T']:,}: 6P = {3 * f.matmul:.3g} plus 12·L·T·H·d_h = "
        f"{3 * f.attention_core:.3g}, {f.training:.3g} FLOPs per token.",
        f"At 8,192: {f8.training:.3g} FLOPs per token.",
        f"Ratio {_w3_ratio(v):.3g}; the attention core is now {_share(v):.3g}% of the FLOPs.",
    )


W3 = problem(
    "transformers.w3", "A long-context token",
    draws(derive=_dims,
           model=MODEL,
           T=Choice((131072, 65536, 262144, 32768), "T", "tokens")),
    ("How many FLOPs does one training token cost " + SHAPE + " at T = {T:,} tokens of "
     "context, and how many times the cost of a token at 8,192? Count the attention core "
     "with " + NO_CAUSAL + "."),
    (_flops_part(),
     "training FLOPs per token, in FLOPs"),
    (Part("ratio", _w3_ratio, conventions=(
         Convention(_ALL_PARAMS, lambda v: _train_all_params(v) / _train_all_params(v, 8192)),
         Convention("causal discount", distinct_from(
             _w3_ratio, lambda v: _train_causal(v) / _train_causal(v, 8192)),
             PINNED, phrase=NO_CAUSAL, hint=_CAUSAL_HINT),
     ), slips=(
         Slip("ratio of contexts", lambda v: v["T"] / 8192,
              "only the attention core grows with T; the 6P of the weights stays the same, so "
              "the cost grows less than {T:,} / 8,192."),
     ), unit="ratio"),
     "times the cost at 8,192 tokens"),
    solution=_w3_solution, worked="3")


# --------------------------------------------------------------------------- 4. fewest chips

def _state(v, precision=MIXED_PRECISION_ADAM):
    return training_memory(_cfg(v), precision=precision).state


def _fewest(chip_key, nbytes):
    return lambda v: fewest_chips(nbytes(v), v[chip_key])


def _per_param(nbytes_per_param):
    return lambda v: param_count(_cfg(v)).total * nbytes_per_param


def _w4_part(answer, chip_key):
    expected = _fewest(chip_key, _state)
    return Part(answer, expected, rel=0.001, conventions=(
        Convention("12 bytes per parameter", distinct_from(expected, _fewest(
            chip_key, lambda v: _state(v, BF16_WEIGHTS_FP32_ADAM)), 0.001),
            PINNED, phrase="fp32 master copy",
            hint="the problem keeps an fp32 master copy of the weights: 2 + 2 + 4 + 4 + 4 = 16 "
                 "bytes per parameter, not the 12 of a run that updates bf16 weights in place."),
    ), slips=(
        Slip("rounded down", lambda v: expected(v) - 1,
             "round up: {answer:.0f} chips hold less than the state."),
        Slip("weights only", _fewest(chip_key, _per_param(2)),
             "the weights are only 2 of the 16 bytes per parameter: gradients, the master copy "
             "and Adam's two moments are kept too."),
        Slip("no gradients", distinct_from(expected, _fewest(chip_key, _per_param(14)), 0.001),
             "count the bf16 gradients too: 16 bytes per parameter during a step."),
    ), unit="count")


def _w4_solution(v):
    state = _state(v)
    out = [f"{param_count(_cfg(v)).total:,} parameters × 16 bytes = "
           f"{format_bytes(state, binary=False)} of training state."]
    for key in ("gpu", "tpu"):
        chip = get_chip(v[key])
        out.append(f"{v[key]} ({format_bytes(chip.hbm_bytes, binary=False)} of HBM): "
                   f"{state / chip.hbm_bytes:.3g}, rounded up: {fewest_chips(state, chip)} chips.")
    return tuple(out)


W4 = problem(
    "transformers.w4", "The fewest chips that hold the training state",
    draws(model=Choice(("LLaMA-3 405B", "LLaMA-3 70B"), "model"),
           gpu=Choice(("H100", "H200", "B200", "A100"), "GPU"),
           tpu=Choice(("TPU v5p", "TPU v5e", "TPU v6e", "TPU v4p"), "TPU")),
    ("{model} trains in mixed precision: bf16 weights and gradients, an fp32 master copy of "
     "the weights and fp32 Adam moments. What is the least number of {gpu} GPUs, and of "
     "{tpu} chips, whose HBM can hold its training state (before activations, sharded "
     "perfectly)?"),
    (_w4_part("gpus", "gpu"),
     "fewest GPUs, a count"),
    (_w4_part("tpus", "tpu"),
     "fewest TPU chips, a count"),
    solution=_w4_solution, worked="4")


# --------------------------------------------------------------------------- 5. activations

def _act_gb(remat, **kw):
    def value(v):
        cfg = _cfg(v)
        return activation_bytes_per_layer(cfg, v["seqs"], v["T"], remat=remat,
                                          **kw) * cfg.n_layers / GB
    return value


_w5_none, _w5_full = _act_gb("none"), _act_gb("full")


def _w5_solution(v):
    cfg = _cfg(v)
    a = block_activation_bytes_per_token(cfg, v["T"])
    tokens = v["seqs"] * v["T"]
    return (
        f"The block keeps {a:,.0f} bytes per token (its own tensors, flash-style attention: "
        f"{a / cfg.d_model:.1f}·D).",
        f"No recomputation: {tokens:,} tokens × {a:,.0f} B × {cfg.n_layers} layers = "
        f"{format_bytes(_w5_none(v) * GB, binary=False)}.",
        f"Full remat keeps only each layer's bf16 input, 2·D = {2 * cfg.d_model:,} bytes per "
        f"token: {format_bytes(_w5_full(v) * GB, binary=False)}.",
    )


_ONE_LAYER = "count all {L} layers: each keeps its own."

W5 = problem(
    "transformers.w5", "The activations of a long sequence",
    draws(derive=_dims,
           model=Choice(("LLaMA-3 405B", "LLaMA-3 70B", "LLaMA-3 8B"), "model"),
           T=Choice((8192, 4096, 16384), "T", "tokens"),
           seqs=Choice((1, 2, 4), "sequences")),
    ("How much activation memory, in GB (10⁹ bytes), does a batch of {seqs} × {T:,} tokens of "
     + SHAPE + " keep for the backward pass with no recomputation, and with full remat (each "
     "layer keeps only its bf16 input)? Count the LLaMA block's own saved tensors (section "
     "3), with a flash-style attention kernel, over all layers, in bf16."),
    (Part("none_gb", _w5_none, conventions=(
         in_gib(_w5_none),
         Convention("unfused softmax", _act_gb("none", flash_attention=False), PINNED,
                    phrase="flash-style attention kernel",
                    hint="the problem assumes a flash-style attention kernel: the T × T "
                         "probabilities are never stored, only a log-sum-exp per head."),
         Convention("Korthikanti et al.'s GPT-3 block", lambda v: korthikanti_activation_bytes_per_layer(
             _cfg(v), v["seqs"], v["T"]) * v["L"] / GB, PINNED,
             phrase="LLaMA block's own saved tensors",
             hint="the problem counts the LLaMA block's own saved tensors (section 3), not "
                  "Korthikanti et al.'s 34·D + 5·H·T bytes per token of GPT-3's block."),
     ), slips=(
         Slip("one layer", lambda v: _w5_none(v) / v["L"], _ONE_LAYER),
     ), unit="bytes"),
     "activations without recomputation, in GB"),
    (Part("full_gb", _w5_full, conventions=(in_gib(_w5_full),), slips=(
         Slip("one layer", lambda v: _w5_full(v) / v["L"], _ONE_LAYER),
         Slip("fp32 input", lambda v: 2 * _w5_full(v),
              "the layer input is kept in bf16: 2 bytes per element."),
     ), unit="bytes"),
     "activations with full remat, in GB"),
    solution=_w5_solution, worked="5")


# --------------------------------------------------------------------------- 6. MFU and HFU

W6_SEQ = 8192


def _w6_tokens(v):
    return v["seqs"] * W6_SEQ


def _w6_mfu_of(flops):
    return lambda v: 100 * float(implied_mfu(flops(v), "H100", n_chips=v["gpus"],
                                             seconds=v["step_s"]))


_w6_mfu = _w6_mfu_of(lambda v: training_flops(llama3_8b(), _w6_tokens(v)))
_w6_mfu_total = _w6_mfu_of(lambda v: training_flops_from_params(
    param_count(llama3_8b()).total, _w6_tokens(v)))
_w6_mfu_attention = _w6_mfu_of(lambda v: training_flops(
    llama3_8b(), _w6_tokens(v), include_attention=True, seq_len=W6_SEQ))


def _w6_hfu(v):
    """Full remat reruns the forward pass: 8P FLOPs per token where the model counts 6P."""
    return _w6_mfu(v) * 8 / 6


def _w6_well_posed(v) -> bool:
    return 20 <= _w6_mfu(v) <= 70


def _w6_solution(v):
    flops = training_flops(llama3_8b(), _w6_tokens(v))
    ideal = flops / (v["gpus"] * v["peak"])
    return (
        f"6P·B = 6 × {param_count(llama3_8b()).matmul:,} × {_w6_tokens(v):,} = {flops:.3g} FLOPs.",
        f"At {v['peak']:.3g} FLOP/s per GPU on {v['gpus']} GPUs: ideally {format_seconds(ideal)}.",
        f"MFU = {format_seconds(ideal)} / {v['step_s']} s = {_w6_mfu(v):.3g}%.",
        f"Full remat reruns the forward: 8/6 as many FLOPs, HFU = {_w6_hfu(v):.3g}%.",
    )


_NO_ATTENTION = "6P FLOPs per token (no attention term)"
_ATTENTION_HINT = ("the problem counts the model's FLOPs as 6P per token, the weights' matmuls "
                   "only, with no attention term.")
_FORWARD_HINT = "count the backward pass: 6 FLOPs per weight per token, not 2."

W6 = problem(
    "transformers.w6", "MFU and HFU of a measured step",
    draws(well_posed=_w6_well_posed,
           derive=lambda p: {"P_b": param_count(llama3_8b()).matmul / 1e9,
                             "N_b": param_count(llama3_8b()).total / 1e9,
                             "peak": get_chip("H100").flops("bf16")},
           gpus=Choice((256, 128, 512), "GPUs"),
           seqs=Choice((1024, 512, 2048), "sequences per step"),
           step_s=Choice((3.4, 2.6, 4.5, 6.0), "step time", "s")),
    ("LLaMA-3 8B ({P_b:.2f} billion weights in matmuls, {N_b:.2f} billion parameters in all) trains on "
     "{gpus} H100s with {seqs:,} sequences of 8,192 tokens per step, and a step takes "
     "{step_s} s. Counting " + _NO_ATTENTION + ", what is its MFU, and its HFU with full "
     "remat (the forward pass run twice), both in percent?"),
    (Part("mfu_pct", _w6_mfu, conventions=(
         Convention(_ALL_PARAMS, _w6_mfu_total),
         Convention("attention core counted", _w6_mfu_attention, PINNED,
                    phrase=_NO_ATTENTION, hint=_ATTENTION_HINT),
     ), slips=(
         Slip("sparse peak", lambda v: _w6_mfu(v) / 2, SPARSE_HINT),
         Slip("forward only", lambda v: _w6_mfu(v) / 3, _FORWARD_HINT),
         percent_slip(_w6_mfu),
     ), unit="fraction"),
     "MFU, in %"),
    (Part("hfu_pct", _w6_hfu, conventions=(
         Convention(_ALL_PARAMS, lambda v: _w6_mfu_total(v) * 8 / 6),
         Convention("attention core counted", lambda v: _w6_mfu_attention(v) * 8 / 6, PINNED,
                    phrase=_NO_ATTENTION, hint=_ATTENTION_HINT),
     ), slips=(
         Slip("HFU = MFU", _w6_mfu,
              "full remat reruns the forward pass, 2 more FLOPs per weight per token: the "
              "hardware does 8/6 of the model's FLOPs."),
         Slip("sparse peak", lambda v: _w6_hfu(v) / 2, SPARSE_HINT),
         percent_slip(_w6_hfu),
     ), unit="fraction"),
     "HFU with full remat, in %"),
    solution=_w6_solution, worked="6")


# --------------------------------------------------------------------------- 7. days of training

W7_N = {"LLaMA-3 70B": param_count(llama3_70b()).total, "LLaMA-3 8B": param_count(llama3_8b()).total,
        "LLaMA-3 405B": param_count(llama3_405b()).total}


def _w7_flops(v):
    return training_flops_from_params(W7_N[v["model"]], v["tokens"])


def _w7_days(chip, n_key):
    return lambda v: run_time(_w7_flops(v), v[n_key], chip, mfu=v["mfu"]) / DAY


_w7_gpu, _w7_tpu = _w7_days("H100", "gpus"), _w7_days("TPU v5p", "tpus")


def _w7_tokens_text(p):
    return {"tokens_t": p["tokens"] / 1e12}


def _w7_solution(v):
    gpu, tpu = get_chip("H100").flops("bf16"), get_chip("TPU v5p").flops("bf16")
    return (
        f"6·N·D = 6 × {W7_N[v['model']]:.4g} × {v['tokens']:.3g} = {_w7_flops(v):.3g} FLOPs.",
        f"H100s: {v['gpus']:,} × {gpu:.3g} FLOP/s × {v['mfu']:.0%}: {_w7_gpu(v):.3g} days.",
        f"v5p: {v['tpus']:,} × {tpu:.3g} FLOP/s × {v['mfu']:.0%}: {_w7_tpu(v):.3g} days.",
    )


def _w7_slips(days, sparse: bool) -> tuple:
    return (
        Slip("at peak", lambda v: days(v) * v["mfu"],
             "at {mfu:.0%} MFU the cluster delivers {mfu:.0%} of its peak: divide by the MFU."),
        Slip("forward only", lambda v: days(v) / 3, "training costs 6·N·D FLOPs, not 2·N·D."),
    ) + ((Slip("sparse peak", lambda v: days(v) / 2, SPARSE_HINT),) if sparse else ())


W7 = problem(
    "transformers.w7", "Days of training",
    draws(derive=_w7_tokens_text,
           model=Choice(tuple(W7_N), "model"),
           tokens=Choice((15e12, 10e12, 20e12), "tokens"),
           mfu=Choice((0.4, 0.5, 0.45), "MFU"),
           gpus=Choice((16384, 8192, 24576), "GPUs"),
           tpus=Choice((8960, 4096, 6144), "v5p chips")),
    ("How many days does {model} ({tokens_t:g} trillion tokens, by the 6·N·D rule with N all "
     "parameters) take at {mfu:.0%} MFU on {gpus:,} H100s, and on {tpus:,} TPU v5p chips?"),
    (Part("days_h100", _w7_gpu, slips=_w7_slips(_w7_gpu, True), unit="s", not_applicable=(
     *NO_LINK,)),
     "days on the H100s"),
    (Part("days_v5p", _w7_tpu, slips=_w7_slips(_w7_tpu, False), unit="s", not_applicable=(
     *NO_LINK,)),
     "days on the v5p chips"),
    solution=_w7_solution, worked="7")


# --------------------------------------------------------------------------- 8. implied MFU

def _w8_flops(v):
    return training_flops_from_params(W7_N[v["model"]], v["tokens"])


def _w8_mfu(v):
    return 100 * float(implied_mfu(_w8_flops(v), "H100", chip_hours=v["hours"]))


def _w8_solution(v):
    peak = get_chip("H100").flops("bf16")
    return (
        f"6·N·D = {_w8_flops(v):.3g} FLOPs.",
        f"{v['hours']:.4g} GPU-hours × 3,600 s × {peak:.3g} FLOP/s = "
        f"{v['hours'] * 3600 * peak:.3g} FLOPs at peak.",
        f"Implied MFU = {_w8_mfu(v):.3g}%.",
    )


W8 = one_answer(
    "transformers.w8", "The MFU a run's GPU-hours imply",
    draws(well_posed=lambda v: 20 <= _w8_mfu(v) <= 70,
           derive=lambda p: {"tokens_t": p["tokens"] / 1e12, "hours_m": p["hours"] / 1e6},
           model=Choice(("LLaMA-3 405B", "LLaMA-3 70B"), "model"),
           tokens=Choice((15.6e12, 12e12, 18e12), "tokens"),
           hours=Choice((30.84e6, 25e6, 40e6, 7.0e6, 5.5e6, 9.0e6), "H100-hours")),
    ("{model} trained on {tokens_t:g} trillion tokens in {hours_m:g} million H100-hours. What MFU, in "
     "percent, do they imply, counting 6·N·D FLOPs with N all parameters?"),
    Part("mfu_pct", _w8_mfu, slips=(
        Slip("sparse peak", lambda v: _w8_mfu(v) / 2, SPARSE_HINT),
        Slip("forward only", lambda v: _w8_mfu(v) / 3, _FORWARD_HINT),
        percent_slip(_w8_mfu),
    ), unit="fraction"),
    label="implied MFU, in %", solution=_w8_solution, worked="8")


# --------------------------------------------------------------------------- 9. compute-optimal

def _w9_params(v):
    return compute_optimal(v["C"]).params / 1e9


def _w9_tokens(v):
    return compute_optimal(v["C"]).tokens / 1e12


def _w9_solution(v):
    opt = compute_optimal(v["C"])
    return (
        f"At D = r·N with r = {v['r']:g}, C = 6·N·D = 6·r·N², so N = √(C / (6·r)) = "
        f"√({v['C']:.3g} / {6 * v['r']:g}).",
        f"N = {format_count(opt.params)} parameters, D = r·N = {format_count(opt.tokens)} tokens.",
    )


W9 = problem(
    "transformers.w9", "The compute-optimal model",
    draws(derive=lambda p: {"r": CHINCHILLA_TOKENS_PER_PARAM},
           C=Choice((1e24, 3e23, 1e25, 3.8e25, 5e22), "FLOP budget")),
    ("What is the compute-optimal dense model for {C:.2g} training FLOPs, at {r:g} tokens per "
     "parameter and 6·N·D FLOPs: how many parameters, in billions, on how many tokens, in "
     "trillions?"),
    (Part("params_b", _w9_params, slips=(
         Slip("2ND", lambda v: compute_optimal(3 * v["C"]).params / 1e9,
              "training costs 6·N·D FLOPs, not 2·N·D."),
         Slip("no ratio", lambda v: compute_optimal(v["C"], tokens_per_param=1).params / 1e9,
              "D = {r:g}·N: C = 6·N·({r:g}·N), so N = √(C / (6·{r:g}))."),
     ), unit="params"),
     "parameters, in billions"),
    (Part("tokens_t", _w9_tokens, slips=(
         Slip("2ND", lambda v: compute_optimal(3 * v["C"]).tokens / 1e12,
              "training costs 6·N·D FLOPs, not 2·N·D."),
         Slip("the parameters", lambda v: _w9_params(v) / 1e3,
              "the tokens are {r:g} times the parameters (and asked in trillions)."),
     ), unit="count"),
     "tokens, in trillions"),
    solution=_w9_solution, worked="9")


# --------------------------------------------------------------------------- 10. wide heads

def _w10_cfg(v, d_head=None):
    return TransformerConfig(d_model=v["D"], n_layers=v["L"], n_heads=v["H"],
                             d_head=v["dh"] if d_head is None else d_head, d_ff=8 * v["D"],
                             vocab_size=256000)


def _w10_core(v):
    return float(attention_flops_per_token(_w10_cfg(v), v["T"]))


def _w10_solution(v):
    return (
        f"H·d_h = {v['H']} × {v['dh']} = {v['H'] * v['dh']:,}, not D = {v['D']:,}.",
        f"4·L·T·H·d_h = 4 × {v['L']} × {v['T']:,} × {v['H'] * v['dh']:,} = "
        f"{_w10_core(v):.3g} FLOPs per token, forward.",
    )


W10 = one_answer(
    "transformers.w10", "Heads wider than D / H",
    draws(D=Choice((3072, 2048, 2560), "D"),
           L=Choice((28, 18, 32), "L"),
           H=Choice((16, 8, 32), "H"),
           dh=Choice((256, 128), "d_h"),
           T=Choice((8192, 4096, 32768), "T", "tokens")),
    ("A Gemma-like model has D = {D:,}, L = {L} layers and H = {H} heads of d_h = {dh} "
     "(multi-head attention). How many forward FLOPs does one token spend in its attention "
     "core (scores and mixing, over all layers) at T = {T:,} tokens of context, with "
     + NO_CAUSAL + "?"),
    Part("core_flops", _w10_core, conventions=(
        Convention("causal discount", lambda v: _w10_core(v) / 2, PINNED, phrase=NO_CAUSAL,
                   hint=_CAUSAL_HINT),
    ), slips=(
        Slip("D for H·d_h", distinct_from(_w10_core, lambda v: float(
            attention_flops_per_token(_w10_cfg(v, v["D"] // v["H"]), v["T"]))),
             "the core's width is that of the query heads, H·d_h = {H} × {dh}, not D = {D:,}."),
        Slip("training", lambda v: 3 * _w10_core(v),
             "the question asks for the forward pass: training is 3 times it."),
    ), unit="FLOPs"),
    label="attention-core FLOPs per token, in FLOPs", solution=_w10_solution, worked="10")


# --------------------------------------------------------------------------- 11. crossover

def _w11_cfg(v, gated=True):
    return TransformerConfig(d_model=v["D"], n_layers=1, n_heads=v["D"] // D_HEAD,
                             n_kv_heads=v["K"], d_ff=v["F"], vocab_size=1, gated_mlp=gated)


def _w11_mlp(v):
    return attention_crossover_context(_w11_cfg(v))


def _w11_layer(v):
    return attention_crossover_context(_w11_cfg(v), against="layer")


def _w11_solution(v):
    return (
        f"Per layer and token the core costs 4·T·H·d_h = 4·T·{v['H'] * D_HEAD:,}; the gated MLP "
        f"2 × 3·D·F = {6 * v['D'] * v['F']:.4g}.",
        f"Equal at T* = 3·D·F / (2·H·d_h) = {_w11_mlp(v):,.0f} tokens.",
        f"Against all the layer's weights, add D·(2H + 2K)·d_h: T* = {_w11_layer(v):,.0f} tokens.",
    )


W11 = problem(
    "transformers.w11", "Where attention takes over",
    draws(derive=lambda p: {"H": p["D"] // D_HEAD},
           D=Choice((16384, 8192, 4096, 12288), "D"),
           F=Choice((53248, 28672, 14336), "F"),
           K=Choice((8, 16, 4), "K", "key/value heads")),
    ("A LLaMA-style model has D = {D:,}, H = {H} query heads and K = {K} key/value heads of "
     "d_h = 128, and a gated MLP with F = {F:,}. At what context length, in tokens, does its "
     "attention core do as many FLOPs per token as its MLP? As all of a layer's weights "
     "(attention projections too)? Count the core with " + NO_CAUSAL + "."),
    (Part("vs_mlp", _w11_mlp, rel=0.01, conventions=(
         Convention("causal discount", lambda v: 2 * _w11_mlp(v), PINNED, phrase=NO_CAUSAL,
                    hint=_CAUSAL_HINT),
     ), slips=(
         Slip("two MLP matrices", lambda v: attention_crossover_context(_w11_cfg(v, False)),
              "a gated MLP has three D × F matrices: W_gate, W_up and W_down."),
         Slip("K heads", lambda v: _w11_mlp(v) * v["H"] / v["K"],
              "every one of the H = {H} query heads computes its own scores: the core counts "
              "H, not the K = {K} key/value heads."),
     ), unit="count"),
     "crossover against the MLP, in tokens"),
    (Part("vs_layer", _w11_layer, rel=0.01, conventions=(
         Convention("causal discount", lambda v: 2 * _w11_layer(v), PINNED, phrase=NO_CAUSAL,
                    hint=_CAUSAL_HINT),
     ), slips=(
         Slip("MLP only", _w11_mlp,
              "against the whole layer, count the attention projections too: "
              "D·(2H + 2K)·d_h more weights."),
     ), unit="count"),
     "crossover against the whole layer, in tokens"),
    solution=_w11_solution, worked="11")


# --------------------------------------------------------------------------- 12. pipeline bubble

def _w12_plain(v):
    return 100 * float(pipeline_bubble_fraction(v["K"], v["M"]))


def _w12_interleaved(v):
    return 100 * pipeline_schedule_cost("interleaved", v["K"], v["M"], chunks=v["v"]).bubble_fraction


def _w12_solution(v):
    K, M, c = v["K"], v["M"], v["v"]
    return (
        f"1F1B: (K − 1) / (M + K − 1) = {K - 1} / {M + K - 1} = {_w12_plain(v):.3g}%.",
        f"Interleaved, v = {c}: each tick is {c} times shorter, "
        f"(K − 1) / (v·M + K − 1) = {K - 1} / {c * M + K - 1} = {_w12_interleaved(v):.3g}%.",
    )


W12 = problem(
    "transformers.w12", "The bubble of a deep pipeline",
    draws(K=Choice((16, 8, 4, 32), "stages"),
           M=Choice((16, 32, 64, 8), "microbatches"),
           v=Choice((4, 2, 8), "virtual stages")),
    ("A pipeline has K = {K} stages and M = {M} microbatches per step. What fraction of the "
     "step, in percent, is its 1F1B bubble, and what is it with v = {v} virtual stages per "
     "device (interleaved)?"),
    (Part("bubble_pct", _w12_plain, slips=(
         Slip("over the busy time", lambda v: 100 * (v["K"] - 1) / v["M"],
              "the bubble is a fraction of the whole step, (K − 1) / (M + K − 1), not of the "
              "busy time M."),
         percent_slip(_w12_plain),
     ), unit="fraction"),
     "1F1B bubble, in %"),
    (Part("interleaved_pct", _w12_interleaved, slips=(
         Slip("plain fraction over v", distinct_from(_w12_interleaved,
                                                     lambda v: _w12_plain(v) / v["v"]),
              "the idle time shrinks v times, but the step does not: (K − 1) / (v·M + K − 1)."),
         percent_slip(_w12_interleaved),
     ), unit="fraction"),
     "interleaved bubble, in %"),
    solution=_w12_solution, worked="12")


# --------------------------------------------------------------------------- 13. checkpoints

def _w13_params(v):
    return param_count(MODELS[v["model"]]()).total


def _w13_bytes(v):
    return reliability.checkpoint_bytes(_w13_params(v), MIXED_PRECISION_ADAM)


def _w13_tb(v):
    return _w13_bytes(v) / 1e12


def _w13_stall(v):
    return reliability.checkpoint_write_time(_w13_bytes(v), v["store_tb"] * 1e12)


def _w13_mtbf(v):
    return v["mtbf_h"] * 3600.0


def _w13_interval_min(v):
    return reliability.young_interval(_w13_stall(v), _w13_mtbf(v)) / 60.0


def _w13_goodput_pct(v):
    tau = _w13_interval_min(v) * 60.0
    return 100 * reliability.goodput(tau, _w13_stall(v), _w13_mtbf(v), v["restart_min"] * 60.0)


def _w13_solution(v):
    return (
        f"Checkpoint = weights + optimizer state, 2 + 12 = 14 bytes per parameter: "
        f"{_w13_tb(v):.3g} TB; at {v['store_tb']} TB/s one write stalls "
        f"{format_seconds(_w13_stall(v))}.",
        f"Young: τ* = √(2 δ M) = √(2 × {_w13_stall(v):.3g} s × {_w13_mtbf(v):,.0f} s) = "
        f"{_w13_interval_min(v):.3g} minutes.",
        f"Goodput = τ/(τ + δ) · (1 − (R + (τ + δ)/2)/M) = {_w13_goodput_pct(v):.1f}%.",
    )


W13 = problem(
    "transformers.w13", "How often to checkpoint, and what is left",
    draws(model=Choice(("LLaMA-3 405B", "LLaMA-3 70B"), "model"),
          mtbf_h=Choice((3, 1, 6, 12), "hours between interruptions"),
          store_tb=Choice((2, 1, 5), "storage write bandwidth", "TB/s"),
          restart_min=Choice((10, 5, 20), "restart", "minutes")),
    ("A {model} run (Adam in mixed precision) is interrupted every {mtbf_h} hours on "
     "average; its storage writes {store_tb} TB/s and each restart costs {restart_min} "
     "minutes. How big is a checkpoint (weights and optimizer state, no gradients), in "
     "TB; what is Young's checkpoint interval, in minutes; and what goodput does it give, "
     "in percent (first order: τ/(τ + δ) · (1 − (R + (τ + δ)/2)/M))?"),
    (Part("checkpoint_tb", _w13_tb, slips=(
         Slip("gradients too", lambda v: _w13_tb(v) * 16 / 14,
              "a checkpoint holds the weights and the optimizer state; the gradients are "
              "rebuilt by the next step."),
     ), unit="bytes"),
     "checkpoint, in TB"),
    (Part("interval_min", _w13_interval_min, slips=(
         Slip("without the 2", lambda v: _w13_interval_min(v) / 2 ** 0.5,
              "Young's interval is √(2 δ M): the 2 comes from losing half an interval per "
              "failure on average."),
     ), unit="s", not_applicable=(*NO_LINK,)),
     "Young's interval, in minutes"),
    (Part("goodput_pct", _w13_goodput_pct, rel=0.01, slips=(
         Slip("no restart", distinct_from(_w13_goodput_pct, lambda v: 100 * reliability.goodput(
             _w13_interval_min(v) * 60.0, _w13_stall(v), _w13_mtbf(v), 0.0)),
              "each failure also costs the restart R: {restart_min} minutes."),
         percent_slip(_w13_goodput_pct),
     ), unit="fraction"),
     "goodput, in %"),
    solution=_w13_solution, worked="13")


PROBLEMS: tuple[Problem, ...] = (W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11, W12, W13)

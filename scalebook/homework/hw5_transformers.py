"""hw5-transformers: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1–P2, counting a LLaMA-style model's parameters and FLOPs per token: the model, one of the
  catalog's configs (``scalebook.transformer.llama3_8b`` or ``llama3_70b``), and P2's context
  T. P2's matmul weights P are derived from the model (everything but the embedding table and
  the norms). The 405B is left out of P1–P2: its unembedding (V·D) is under 1% of its
  parameters, inside P1 (c)'s tolerance, and its attention core at T = 4,096 is under 5% of its
  matmul FLOPs, so the "6·P alone" slip of P2 (c) would pass.
- P3, heads wider than D / H: the context T and the layer count L. D, H and d_h stay the
  Gemma-7B-like figures, since the problem is about H·d_h exceeding D.
- P4, training memory: the model (LLaMA-3 70B or 405B, from the catalog) and the sequence
  length T. The GPU stays the H100 (the answer is named ``min_h100s``); its HBM comes from
  the catalog.
- P5, step time and MFU on H100s: the GPU count, the global batch and the measured step time.
  Well posed: see :func:`well_posed`.
- P6, the LLaMA 3 405B run: the GPU count and the MFU of part (b). N, the token count and the
  GPU-hours are the published figures of that run, so part (c) does not vary.
- P7, a compute-optimal budget: the FLOP budget C (the ratio stays Hoffmann et al.'s 20).
"""

from __future__ import annotations

from .alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from ..hardware import get_chip
from ..scaling_laws import compute_optimal
from ..training import (MIXED_PRECISION_ADAM, fewest_chips, implied_mfu, llama3_405b, run_time,
                        training_flops_from_params, training_memory)
from ..transformer import (TransformerConfig, attention_crossover_context,
                           attention_flops_per_token, inference_flops_per_token, llama3_8b,
                           llama3_70b, param_count, training_flops)
from ..variants import Choice, VariantSpec
from .parts import PINNED, Convention, Part, Slip, distinct_from, merged
from .parts import well_posed as parts_well_posed

#: The catalog's configs, by the name the problem text prints.
MODELS = {
    "LLaMA-3 8B": llama3_8b,
    "LLaMA-3 70B": llama3_70b,
    "LLaMA-3 405B": llama3_405b,
}

PARAMETERS = {
    "q1_model": Choice(("LLaMA-3 8B", "LLaMA-3 70B"), "model"),
    "q2_T": Choice((8192, 4096, 16384, 32768), "T", "tokens", fmt="{:,}"),
    "q3_L": Choice((28, 24, 32), "L", "layers"),
    "q3_T": Choice((8192, 4096, 16384), "T", "tokens", fmt="{:,}"),
    "q4_model": Choice(("LLaMA-3 70B", "LLaMA-3 405B"), "model"),
    "q4_T": Choice((8192, 4096, 2048), "T", "tokens", fmt="{:,}"),
    "q5_gpus": Choice((256, 128, 512, 1024), "GPUs", fmt="{:,}"),
    "q5_seqs": Choice((1024, 512, 2048), "sequences", fmt="{:,}"),
    "q5_step": Choice((3.4, 1.2, 1.7, 2.5, 4.6, 6.8, 9.5, 13.0, 0.9), "step time", "s"),
    "q6_gpus": Choice((16384, 8192, 24576, 32768), "GPUs", fmt="{:,}"),
    "q6_mfu": Choice((0.40, 0.35, 0.30, 0.43), "MFU"),
    "q7_C": Choice((1e24, 3e23, 5e24, 2e25), "C", "FLOPs"),
}


def _dims(prefix: str, cfg: TransformerConfig, names: tuple[str, ...]) -> dict[str, int]:
    """The model's sizes the problem prints, as ``<prefix>_<name>``."""
    fields = {"D": cfg.d_model, "L": cfg.n_layers, "H": cfg.n_heads, "K": cfg.n_kv_heads,
              "dh": cfg.d_head, "F": cfg.d_ff, "V": cfg.vocab_size}
    return {f"{prefix}_{n}": fields[n] for n in names}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The model sizes each problem states (from the catalog's configs) and the H100's figures."""
    m1, m4 = MODELS[p["q1_model"]](), MODELS[p["q4_model"]]()
    out: dict[str, Any] = _dims("q1", m1, ("D", "L", "H", "K", "dh", "F", "V"))
    out["q2_P"] = param_count(m1).matmul
    out["q4_P"] = param_count(m4).total
    out.update(_dims("q4", m4, ("D", "L", "H")))
    out["q5_P"] = param_count(llama3_8b()).matmul
    h100 = get_chip("H100")
    out["h100_hbm"] = h100.hbm_bytes
    out["h100_bf16_flops"] = h100.flops("bf16")
    return out


# --------------------------------------------------------------------------- the parts

_NaN = float("nan")
#: The phrase of problem 2 that pins the attention core's count: every query against all T keys.
NO_CAUSAL = "no causal discount"
_CAUSAL = ("This problem counts no causal discount: every query against all T keys, "
           "4·T·H·d_h FLOPs per token per layer (both matmuls, q·Kᵀ and the mixing with V).")
#: Problem 5's H100s, tokens per sequence.
SEQ5 = 8192
#: Problem 6's published figures: LLaMA 3 405B's parameters and tokens, and its H100-hours.
N6, TOKENS6, GPU_HOURS6 = 405_853_388_800, 15.6e12, 30.84e6
#: Problem 7's tokens per parameter (Hoffmann et al.).
RATIO7 = 20

_m1 = lambda v: MODELS[v["q1_model"]]()
_m4 = lambda v: MODELS[v["q4_model"]]()
_core2 = lambda v: attention_flops_per_token(_m1(v), v["q2_T"])
_fwd2 = lambda v: 2 * v["q2_P"] + _core2(v)
_train2 = lambda v: training_flops(_m1(v), 1, include_attention=True, seq_len=v["q2_T"])
_cross2 = lambda v: attention_crossover_context(_m1(v))
_core3 = lambda v: 4.0 * v["q3_L"] * v["q3_T"] * 16 * 256    # Gemma-7B-like: H = 16, d_h = 256
_state4 = lambda v: training_memory(_m4(v), precision=MIXED_PRECISION_ADAM).state
_act4 = lambda v: v["q4_T"] * v["q4_D"] * (34 + 5 * v["q4_H"] * v["q4_T"] / v["q4_D"])
_tokens5 = lambda v: v["q5_seqs"] * SEQ5
_flops5 = lambda v: training_flops_from_params(v["q5_P"], _tokens5(v))
_ideal5 = lambda v: run_time(_flops5(v), v["q5_gpus"], "H100", mfu=1.0)
_mfu5 = lambda v: implied_mfu(_flops5(v), "H100", n_chips=v["q5_gpus"], seconds=v["q5_step"])
_flops6 = lambda v: training_flops_from_params(N6, TOKENS6)
_time6 = lambda v: run_time(_flops6(v), v["q6_gpus"], "H100", mfu=v["q6_mfu"])
_mfu6 = lambda v: implied_mfu(_flops6(v), "H100", chip_hours=GPU_HOURS6)
_opt7 = lambda v: compute_optimal(v["q7_C"], tokens_per_param=RATIO7)


def _problem2_model(scale):
    """Problem 5 with problem 2's model, where that is not the 8B (NaN where it is)."""
    return lambda v: _NaN if v["q1_model"] == "LLaMA-3 8B" else scale(v) * v["q2_P"] / v["q5_P"]


_MODEL5 = ("Problem 5's model is a LLaMA-3 8B-like one with P = {q5_P:,} matmul weights, whatever "
           "model problems 1 and 2 gave you.")

PARTS = (
    Part("attn_params_per_layer", lambda v: param_count(_m1(v)).attention / v["q1_L"], rel=0.01,
         slips=(
        Slip("K = H", lambda v: 4 * v["q1_D"] * v["q1_H"] * v["q1_dh"],
             "Under grouped-query attention W_k and W_v have K = {q1_K} heads, not the H = {q1_H} "
             "query heads: they are D × K·d_h each."),
        Slip("H = K", lambda v: 4 * v["q1_D"] * v["q1_K"] * v["q1_dh"],
             "Only W_k and W_v have the K key/value heads; W_q and W_o keep all H query heads."),
    ), unit="params"),
    Part("mlp_params_per_layer", lambda v: param_count(_m1(v)).mlp / v["q1_L"], rel=0.01, slips=(
        Slip("two matrices", lambda v: 2 * v["q1_D"] * v["q1_F"],
             "A gated (SwiGLU) MLP has three D × F matrices (gate, up, down), not two."),
        Slip("F = 4D", lambda v: 12 * v["q1_D"] ** 2, "Use the model's F = {q1_F:,}, not 4·D."),
    ), unit="params"),
    Part("total_params", lambda v: param_count(_m1(v)).total, rel=0.01, slips=merged(
        Slip("tied embedding (the text says both tables)",
             lambda v: param_count(_m1(v)).total - v["q1_V"] * v["q1_D"],
             "The unembedding is a separate [D, V] matrix here (not tied to the embedding): "
             "count both vocabulary tables."),
        Slip("no vocabulary", lambda v: param_count(_m1(v)).total - 2 * v["q1_V"] * v["q1_D"],
             "Count the embedding and unembedding tables too: 2·V·D."),
        "Count both vocabulary tables, V·D each: the embedding and the unembedding, which is a "
        "separate [D, V] matrix here (not tied to the embedding).", rel=0.01) + (
        Slip("K = H", lambda v: param_count(_m1(v)).total
             + v["q1_L"] * 2 * v["q1_D"] * (v["q1_H"] - v["q1_K"]) * v["q1_dh"],
             "Under grouped-query attention W_k and W_v have K = {q1_K} heads, not H = {q1_H}."),
    ), unit="params"),
    Part("fwd_matmul_flops_per_token", lambda v: inference_flops_per_token(_m1(v)), slips=(
        Slip("FMA as 1", lambda v: v["q2_P"],
             "A multiply-add is 2 FLOPs: each weight costs 2 FLOPs per token in the forward pass.", alternatives=('multiply-add as 1 FLOP',)),
        Slip("training", lambda v: 6 * v["q2_P"],
             "That is forward and backward together; the part asks for the forward pass.", alternatives=('forward only',)),
    ), unit="FLOPs"),
    Part("fwd_attn_flops_per_token", _core2, conventions=(
        Convention("causal discount", lambda v: _core2(v) / 2, PINNED, phrase=NO_CAUSAL,
                   hint=_CAUSAL),
    ), slips=(
        Slip("K heads", lambda v: _core2(v) * v["q1_K"] / v["q1_H"],
             "Every query head computes its own scores: use the H = {q1_H} query heads, not the "
             "K = {q1_K} key/value heads they share."),
    ), unit="FLOPs"),
    Part("train_flops_per_token", _train2, slips=(
        Slip("forward only", _fwd2,
             "That is the forward pass only: the backward pass costs twice as much again, 3 × "
             "forward in all.", alternatives=('forward only',)),
        Slip("backward only", lambda v: 2 * _fwd2(v),
             "The backward pass is 2 × the forward pass; add the forward pass itself: 3 ×."),
    ) + merged(
        Slip("causal discount (the text says none)",
             distinct_from(_train2, lambda v: _train2(v) - 1.5 * _core2(v)), _CAUSAL),
        Slip("6P alone", lambda v: 6 * v["q2_P"],
             "That is the 6·P rule alone; add the attention core, 3 × its forward FLOPs."),
        "Add the attention core in full, 3 × its forward FLOPs: " + _CAUSAL), unit="FLOPs"),
    Part("crossover_context", _cross2, conventions=(
        Convention("causal discount", lambda v: 2 * _cross2(v), PINNED, phrase=NO_CAUSAL,
                   hint=_CAUSAL),
    ), slips=(
        Slip("K heads", lambda v: _cross2(v) * v["q1_H"] / v["q1_K"],
             "The attention core's FLOPs grow with the H = {q1_H} query heads, not the K = {q1_K} "
             "key/value heads."),
        Slip("two MLP matrices", lambda v: _cross2(v) * 2 / 3,
             "A gated MLP has three D × F matrices: 6·D·F FLOPs per token."),
        Slip("FMA as 1 in the MLP", lambda v: _cross2(v) / 2,
             "The MLP costs 2 FLOPs per weight, 6·D·F per token; set 4·T·H·d_h equal to that."),
    ), unit="count"),
    Part("attn_core_flops_per_token", _core3, conventions=(
        Convention("causal discount", lambda v: _core3(v) / 2, PINNED, phrase=NO_CAUSAL,
                   hint=_CAUSAL),
    ), slips=(
        Slip("d_model", lambda v: _core3(v) * 3072 / 4096,
             "The scores and the mixing run over the heads' width H·d_h = 4,096, not d_model = "
             "3,072: count with the head dimensions."),
    ), unit="FLOPs"),
    Part("state_bytes", _state4, slips=(
        Slip("parameters", lambda v: v["q4_P"],
             "That is the number of parameters; the answer is in bytes, 16 per parameter."),
        Slip("weights only", lambda v: 2 * v["q4_P"],
             "That is the bf16 weights alone; add gradients (2), the fp32 master copy (4) and "
             "Adam's two fp32 moments (8)."),
        Slip("no optimizer, bf16", lambda v: 4 * v["q4_P"],
             "That is the bf16 weights and gradients (2 + 2 bytes per parameter); Adam adds an "
             "fp32 master copy (4) and two fp32 moments (8)."),
        Slip("no optimizer, fp32", lambda v: 8 * v["q4_P"],
             "That counts weights and gradients (in fp32, 4 + 4) but forgets the optimizer: "
             "mixed precision keeps bf16 weights and gradients (2 + 2), an fp32 master copy (4) "
             "and Adam's two fp32 moments (8)."),
        Slip("no master copy", lambda v: 12 * v["q4_P"],
             "Count the fp32 master copy of the weights too (4 bytes per parameter)."),
        Slip("no gradients", lambda v: 14 * v["q4_P"],
             "Count the bf16 gradients too (2 bytes per parameter)."),
    ), unit="bytes"),
    Part("min_h100s", lambda v: fewest_chips(_state4(v), "H100"), rel=0.001, slips=(
        Slip("rounded down", lambda v: fewest_chips(_state4(v), "H100") - 1,
             "Round up: a GPU count below the state's bytes / HBM cannot hold it."),
        Slip("weights only", lambda v: fewest_chips(2 * v["q4_P"], "H100"),
             "Count all 16 bytes per parameter, not the bf16 weights alone."),
        Slip("parameters", lambda v: fewest_chips(v["q4_P"], "H100"),
             "Bytes and parameters are not the same: 16 bytes per parameter."),
    ), unit="count"),
    Part("act_bytes_layer", _act4, slips=(
        Slip("no attention term", lambda v: v["q4_T"] * v["q4_D"] * 34,
             "Add the attention term 5·H·T/D: the stored T × T scores and softmax grow with the "
             "context."),
        Slip("halved", lambda v: _act4(v) / 2,
             "The formula already counts bytes (bf16 activations); do not halve it.", alternatives=('bf16 or fp32',)),
    ), unit="bytes"),
    Part("act_bytes_remat", lambda v: v["q4_L"] * 2 * v["q4_T"] * v["q4_D"], slips=(
        Slip("elements", lambda v: v["q4_L"] * v["q4_T"] * v["q4_D"],
             "Each checkpoint is bf16: 2 bytes per element. Bytes, not elements.", alternatives=('bf16 or fp32',)),
        Slip("one layer", lambda v: 2 * v["q4_T"] * v["q4_D"],
             "That is one layer's checkpoint; all {q4_L} layers keep one each."),
    ), unit="bytes"),
    Part("step_flops", _flops5, slips=(
        Slip("forward only", lambda v: _flops5(v) / 3,
             "That is the forward pass only; the backward pass costs twice as much again: 6 "
             "FLOPs per weight per token.", alternatives=('forward only',)),
        Slip("problem 2's model", _problem2_model(_flops5), _MODEL5),
    ), unit="FLOPs"),
    Part("step_time_ideal", _ideal5, slips=(
        Slip("sparse rate", lambda v: _ideal5(v) / 2,
             "Use the dense bf16 peak, {h100_bf16_flops:.3g} FLOPs/s; the datasheet's larger "
             "figure assumes 2:4 sparsity."),
        Slip("one GPU", lambda v: _ideal5(v) * v["q5_gpus"],
             "Divide by all {q5_gpus} GPUs: each does 1/{q5_gpus} of the step.", alternatives=('per chip or global',)),
        Slip("problem 2's model", _problem2_model(_ideal5), _MODEL5),
    ), unit="s", not_applicable=(
        *NO_LINK,)),
    Part("mfu", _mfu5, slips=(
        Slip("sparse rate", lambda v: _mfu5(v) / 2,
             "Use the dense bf16 peak ({h100_bf16_flops:.3g} FLOPs/s), not the 'with sparsity' "
             "figure."),
        Slip("forward only", lambda v: _mfu5(v) / 3,
             "Count the backward pass: 6 FLOPs per weight per token, not 2.", alternatives=('forward only',)),
        Slip("percentage", lambda v: 100 * _mfu5(v), "MFU is a fraction between 0 and 1, not a percentage.", alternatives=('percent for fraction',)),
        Slip("problem 2's model", _problem2_model(_mfu5), _MODEL5),
    ), unit="fraction"),
    Part("hfu", lambda v: _mfu5(v) * 8 / 6, slips=(
        Slip("MFU", _mfu5,
             "That is the MFU; rematerialisation runs the forward pass twice: 8 FLOPs per weight "
             "per token on the hardware instead of 6."),
        Slip("recompute at 3", lambda v: _mfu5(v) * 9 / 6,
             "The recomputed forward pass costs 2 FLOPs per weight per token, not 3."),
    ), unit="fraction"),
    Part("run_flops", _flops6, slips=(
        Slip("forward only", lambda v: _flops6(v) / 3, "Count the backward pass: 6·N·D, not 2·N·D.", alternatives=('forward only',)),
    ), unit="FLOPs"),
    Part("run_seconds", _time6, slips=(
        Slip("at peak", lambda v: _time6(v) * v["q6_mfu"],
             "That is the time at peak: the GPUs reach only {q6_mfu:.0%} of it, so divide by the "
             "MFU."),
        Slip("days", lambda v: _time6(v) / 86400, "The answer is in seconds, not days."),
        Slip("sparse rate", lambda v: _time6(v) / 2,
             "Use the dense bf16 peak, not the 'with sparsity' figure."),
    ), unit="s", not_applicable=(
        *NO_LINK,)),
    Part("implied_mfu", _mfu6, slips=(
        Slip("sparse rate", lambda v: _mfu6(v) / 2,
             "Use the dense bf16 peak, not the 'with sparsity' figure."),
        Slip("hours as seconds", lambda v: _mfu6(v) * 3600,
             "GPU-hours are hours: multiply by 3,600 to get GPU-seconds."),
        Slip("divided by the GPUs", lambda v: _mfu6(v) / v["q6_gpus"],
             "GPU-hours already count every GPU: do not divide by {q6_gpus:,} again."),
    ), unit="fraction"),
    Part("optimal_params", lambda v: _opt7(v).params, slips=(
        Slip("2ND", lambda v: (v["q7_C"] / (2 * RATIO7)) ** 0.5,
             "Training costs 6·N·D FLOPs (forward and backward), not 2·N·D."),
        Slip("no ratio", lambda v: (v["q7_C"] / 6) ** 0.5, "D = 20·N: C = 6·N·(20·N) = 120·N²."),
    ), unit="params"),
    Part("optimal_tokens", lambda v: _opt7(v).tokens, slips=(
        Slip("2ND", lambda v: RATIO7 * (v["q7_C"] / (2 * RATIO7)) ** 0.5,
             "Training costs 6·N·D FLOPs, not 2·N·D."),
        Slip("parameters", lambda v: _opt7(v).params,
             "That is the parameter count; the tokens are 20 times more."),
    ), unit="count"),
)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS` (:func:`scalebook.homework.parts.well_posed`), and
    P5 (c)-(d): the MFU of the measured step lies between 0.25 and 0.6, so it is a plausible
    measurement and the HFU (8/6 of it) stays under 1."""
    return bool(0.25 <= _mfu5(v) <= 0.6 and parts_well_posed(PARTS, v))


SPEC = VariantSpec(
    assignment="hw5-transformers",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_D": ("D", ""), "q1_L": ("L", "layers"), "q1_H": ("H", "query heads"),
        "q1_K": ("K", "key/value heads"), "q1_dh": ("d_h", ""), "q1_F": ("F", ""),
        "q1_V": ("V", ""), "q2_P": ("P", "matmul weights"),
        "q4_P": ("P", "parameters"), "q4_D": ("D", ""), "q4_L": ("L", "layers"),
        "q4_H": ("H", "query heads"),
        "h100_hbm": ("H100 HBM", "bytes"), "h100_bf16_flops": ("H100 dense bf16", "FLOPs/s"),
        "q5_P": ("P", "matmul weights"),
    },
)

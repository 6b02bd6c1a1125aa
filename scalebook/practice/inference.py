"""Practice problems of the chapter book/inference.md (see :mod:`scalebook.practice.problem`):
its twelve worked problems again, each with its inputs drawn anew.

The chapter's model, which the problems state: a decode step's kernels run in turn (the weight
matmuls, then attention against the cache, then the tensor-parallel AllReduces, none
overlapped: :func:`scalebook.inference.decode_step`); a step reads the weights that enter a
matmul (the embedding lookup reads a row per token; reading every parameter is accepted);
prefill counts attention with no causal discount (pinned); peaks are dense, never "with
sparsity". Sizes are asked in GB (10⁹ bytes), an answer in GiB accepted; times in ms.
"""

from __future__ import annotations

import math
from typing import Any

from .. import inference as inf
from ..hardware import get_chip
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from
from ..transformer import TransformerConfig, llama3_70b, llama3_8b, param_count
from ..units import format_bytes, format_seconds
from ..variants import Choice
from .common import GB, MS, draws, in_gib, percent_slip
from .problem import Problem, problem
# Part 6 serves Part 5's models: their catalog and the problems' helpers are declared there once.
from .transformers import NO_CAUSAL, SPARSE_HINT, _cfg, _dims

NODE = 8

_MS_HINT = "the answer is asked in ms (1 s = 1,000 ms)."


def _with(*derives):
    """Several derive functions as one."""
    def derive(p):
        out: dict[str, Any] = {}
        for d in derives:
            out.update(d({**p, **out}))
        return out
    return derive


def _chip_figures(key: str = "chip"):
    """The drawn chip's dense bf16 peak, HBM bandwidth and capacity, and its NVLink bandwidth
    one way (GB/s), for the text."""
    def derive(p):
        chip = get_chip(p[key])
        return {f"{key}_peak": chip.flops("bf16"), f"{key}_bw": chip.hbm_bandwidth / 1e12,
                f"{key}_hbm": chip.hbm_bytes / GB,
                f"{key}_nvlink": chip.interconnect_bandwidth_one_way / GB}
    return derive


#: The model as the text names it.
SHAPE = ("{model} (L = {L}, H = {H} query heads and K = {K} key/value heads of d_h = {dh}, "
         "D = {D:,}; {P_b:.2f} billion weights in matmuls, {N_b:.2f} billion parameters in all)")


def _chip_text(key: str = "chip") -> str:
    return ("{" + key + "} (dense bf16 peak {" + key + "_peak:.3g} FLOP/s, HBM {" + key
            + "_hbm:g} GB at {" + key + "_bw:g} TB/s)")


def _seconds_slip(value_ms) -> Slip:
    return Slip("seconds, not ms", lambda v: value_ms(v) * MS, _MS_HINT)


def _fits(cfg_of, *, context_len, batch=lambda v: 1, n_chips: int = 1):
    """A draw's well-posedness: the weights and ``batch(v)`` caches of ``context_len(v)`` tokens
    fit the chips' HBM (:func:`scalebook.inference.max_batch`), so the setting can exist."""
    return lambda v: inf.max_batch(cfg_of(v), v["chip"], context_len=context_len(v),
                                   n_chips=n_chips) >= batch(v)


def _is_gpu(v, key="chip") -> bool:
    return get_chip(v[key]).is_gpu


# --------------------------------------------------------------------------- 1. the KV cache

def _w1_tok(v):
    return inf.kv_bytes_per_token(_cfg(v))


def _w1_seq_gb(v):
    return _w1_tok(v) * v["S"] / GB


def _w1_mha_tok(v):
    """The cache with a key/value head per query head: the model with K = H."""
    cfg = _cfg(v)
    return inf.kv_bytes_per_token(TransformerConfig(
        d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_head=cfg.d_head,
        d_ff=cfg.d_ff, vocab_size=cfg.vocab_size))


_KV_H_HINT = ("the cache keeps the K = {K} key/value heads, not the H = {H} query heads: GQA "
              "shares each among H / K query heads.")
_KV_TWO_HINT = "cache both the keys and the values: 2·L·K·d_h elements per token."


def _w1_solution(v):
    return (
        f"2·L·K·d_h·b = 2 × {v['L']} × {v['K']} × {v['dh']} × 2 bytes = {_w1_tok(v):,.0f} bytes "
        "per token.",
        f"× {v['S']:,} tokens = {format_bytes(_w1_seq_gb(v) * GB, binary=False)} per "
        "conversation.",
    )


W1 = problem(
    "inference.w1", "The KV cache of one conversation",
    draws(derive=_dims,
           model=Choice(("LLaMA-3 405B", "LLaMA-3 70B", "LLaMA-3 8B"), "model"),
           S=Choice((32768, 8192, 131072, 16384), "tokens")),
    ("How many bytes of bf16 KV cache does one token of " + SHAPE + " hold, and how many "
     "GB (10⁹ bytes) does one {S:,}-token conversation hold?"),
    (Part("bytes_per_token", _w1_tok, rel=0.001, slips=(
         Slip("H heads", _w1_mha_tok, _KV_H_HINT),
         Slip("keys only", lambda v: _w1_tok(v) / 2, _KV_TWO_HINT),
     ), unit="bytes"),
     "cache per token, in bytes"),
    (Part("seq_gb", _w1_seq_gb, conventions=(in_gib(_w1_seq_gb),), slips=(
         Slip("H heads", lambda v: _w1_mha_tok(v) * v["S"] / GB, _KV_H_HINT),
         Slip("keys only", lambda v: _w1_seq_gb(v) / 2, _KV_TWO_HINT),
     ), unit="bytes"),
     "cache per conversation, in GB"),
    solution=_w1_solution, worked="1")


# --------------------------------------------------------------------------- 2. the largest batch

def _w2_batch(cache_dtype):
    return lambda v: inf.max_batch(llama3_8b(), v["chip"], context_len=v["S"],
                                   cache_dtype=cache_dtype)


def _w2_no_weights(cache_dtype):
    def value(v):
        per_seq = v["S"] * inf.kv_bytes_per_token(llama3_8b(), cache_dtype)
        return math.floor(get_chip(v["chip"]).hbm_bytes / per_seq)
    return value


def _w2_part(answer, cache_dtype):
    expected = _w2_batch(cache_dtype)
    return Part(answer, expected, rel=0.001, slips=(
        Slip("no room for the weights", distinct_from(expected, _w2_no_weights(cache_dtype),
                                                      0.001),
             "the weights stay in HBM too: only what they leave holds caches."),
        Slip("rounded up", lambda v: expected(v) + 1,
             "round down: {answer:.0f} whole caches do not fit."),
    ), unit="count")


def _w2_solution(v):
    cfg, chip = llama3_8b(), get_chip(v["chip"])
    free = chip.hbm_bytes - inf.weight_bytes(cfg)
    return (
        f"Weights: {format_bytes(inf.weight_bytes(cfg), binary=False)} in bf16; "
        f"{format_bytes(free, binary=False)} of the {v['chip']}'s HBM is left.",
        f"One {v['S']:,}-token cache: {format_bytes(v['S'] * inf.kv_bytes_per_token(cfg), binary=False)}"
        f" in bf16: {_w2_batch('bf16')(v)} fit.",
        f"In int8 it is half as big: {_w2_batch('int8')(v)} fit.",
    )


W2 = problem(
    "inference.w2", "How many conversations fit",
    draws(derive=_with(lambda p: _dims({"model": "LLaMA-3 8B"}), _chip_figures()),
           chip=Choice(("H100", "H200", "B200", "A100"), "chip"),
           S=Choice((8192, 4096, 32768, 16384), "tokens")),
    ("How many {S:,}-token conversations of LLaMA-3 8B (L = {L}, K = {K} key/value heads of "
     "d_h = {dh}; {N_b:.2f} billion parameters) fit on one {chip} ({chip_hbm:g} GB of HBM) "
     "beside its bf16 weights, with a bf16 cache? With an int8 cache?"),
    (_w2_part("batch_bf16", "bf16"),
     "sequences with a bf16 cache, a count"),
    (_w2_part("batch_int8", "int8"),
     "sequences with an int8 cache, a count"),
    solution=_w2_solution, worked="2")


# --------------------------------------------------------------------------- 3. prefill

def _w3(v):
    return inf.prefill(_cfg(v), v["chip"], prompt_len=v["T"])


def _w3_flops(v):
    return _w3(v).flops


def _w3_ms(v):
    return _w3(v).time / MS


def _w3_causal_flops(v):
    """Attention over the causal half of the prompt's pairs: the core's FLOPs halved."""
    cfg, T = _cfg(v), v["T"]
    return T * 2.0 * param_count(cfg).matmul + (_w3_flops(v) - T * 2.0 * param_count(cfg).matmul) / 2


def _w3_solution(v):
    w = _w3(v)
    return (
        f"FLOPs: T·(2P + 4·L·T·H·d_h) = {w.flops:.3g}.",
        f"Compute: {w.flops:.3g} / {v['chip_peak']:.3g} FLOP/s = {format_seconds(w.t_compute)}; "
        f"memory (weights read, cache written): {format_seconds(w.t_memory)}.",
        f"Compute-bound: {format_seconds(w.time)}, {w.tokens_per_s:,.0f} prompt tokens per second.",
    )


W3 = problem(
    "inference.w3", "Prefilling a long prompt",
    draws(derive=_with(_dims, _chip_figures()),
           well_posed=_fits(_cfg, context_len=lambda v: v["T"]),
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B"), "model"),
           chip=Choice(("H100", "H200", "B200", "TPU v5p"), "chip"),
           T=Choice((8192, 2048, 32768, 4096), "T", "tokens")),
    ("How many FLOPs does " + SHAPE + " spend to prefill one {T:,}-token prompt on one "
     + _chip_text() + ", counting attention with " + NO_CAUSAL + ", and how long does it "
     "take, in ms?"),
    (Part("prefill_flops", _w3_flops, conventions=(
         Convention("causal discount", distinct_from(_w3_flops, _w3_causal_flops), PINNED,
                    phrase=NO_CAUSAL,
                    hint="the problem counts no causal discount: every prompt token meets all "
                         "T keys, 4·L·T·H·d_h FLOPs per token."),
     ), slips=(
         Slip("no attention", distinct_from(_w3_flops, lambda v: v["T"] * 2.0 * param_count(
             _cfg(v)).matmul), "add attention against the prompt: 4·L·T·H·d_h per token."),
         Slip("training", lambda v: 3 * _w3_flops(v),
              "prefill is a forward pass only: 2 FLOPs per weight per token, not 6."),
     ), unit="FLOPs"),
     "prefill FLOPs, in FLOPs"),
    (Part("prefill_ms", _w3_ms, slips=(
         Slip("memory time", distinct_from(_w3_ms, lambda v: _w3(v).t_memory / MS),
              "prefill of a long prompt is compute-bound: its FLOPs take longer than its "
              "bytes."),
         Slip("sparse peak", lambda v: _w3_ms(v) / 2 if _is_gpu(v) else math.nan,
              SPARSE_HINT),
         _seconds_slip(_w3_ms),
     ), unit="s"),
     "prefill time, in ms"),
    solution=_w3_solution, worked="3")


# --------------------------------------------------------------------------- 4. decode one sequence

def _w4(v):
    return inf.decode_step(_cfg(v), v["chip"], batch=1, context_len=v["S"])


def _w4_ms(v):
    return _w4(v).time / MS


def _w4_all_params_ms(v):
    """Reading every parameter (the embedding table too) instead of the matmul weights."""
    w = _w4(v)
    extra = (inf.weight_bytes(_cfg(v)) - w.weight_bytes) / get_chip(v["chip"]).hbm_bandwidth
    return (w.time + extra) / MS


def _w4_share(v):
    w = _w4(v)
    return 100 * w.kv_bytes / (w.kv_bytes + w.weight_bytes)


def _w4_solution(v):
    w = _w4(v)
    return (
        f"Bytes read: {format_bytes(w.weight_bytes, binary=False)} of weights and "
        f"{format_bytes(w.kv_bytes, binary=False)} of cache.",
        f"At {v['chip_bw']:g} TB/s: {format_seconds(w.t_memory)}; the compute takes "
        f"{format_seconds(w.t_compute)}: memory-bound.",
        f"{format_seconds(w.time)} per token, {w.tokens_per_s:,.0f} tokens/s; the cache is "
        f"{_w4_share(v):.3g}% of the bytes.",
    )


W4 = problem(
    "inference.w4", "Decoding one sequence",
    draws(derive=_with(_dims, _chip_figures()),
           model=Choice(("LLaMA-3 8B",), "model"),
           chip=Choice(("H100", "H200", "B200", "TPU v5p", "TPU v6e"), "chip"),
           S=Choice((8192, 4096, 32768, 16384), "S", "cached tokens")),
    ("" + SHAPE + " decodes one sequence on one " + _chip_text() + ", with {S:,} tokens "
     "cached in bf16 and bf16 weights. How long does a step take, in ms, and what share of "
     "the bytes it reads, in percent, is the cache?"),
    (Part("step_ms", _w4_ms, conventions=(
         Convention("every parameter read", _w4_all_params_ms),
     ), slips=(
         Slip("weights only", distinct_from(_w4_ms, lambda v: _w4(v).t_weights / MS),
              "read the cache too: {S:,} tokens of keys and values each step."),
         Slip("compute time", lambda v: _w4(v).t_compute / MS,
              "at one sequence decode is memory-bound: the bytes take far longer than the "
              "FLOPs."),
         _seconds_slip(_w4_ms),
     ), unit="s"),
     "time per token, in ms"),
    (Part("cache_share_pct", _w4_share, slips=(
         Slip("against the weights", distinct_from(_w4_share, lambda v: 100 * _w4(v).kv_bytes
                                                   / _w4(v).weight_bytes),
              "the share is the cache over all the bytes read, weights and cache together."),
         percent_slip(_w4_share),
     ), unit="fraction"),
     "the cache's share, in %"),
    solution=_w4_solution, worked="4")


# --------------------------------------------------------------------------- 5. critical batch

def _w5_b(weight_dtype):
    return lambda v: inf.decode_critical_batch(llama3_8b(), v["chip"], weight_dtype=weight_dtype)


_w5_bf16, _w5_int8 = _w5_b("bf16"), _w5_b("int8")


def _w5_solution(v):
    return (
        f"Weight matmuls: 2·B FLOPs per weight against b_w bytes per weight; balance at "
        f"B* = C·b_w / (2·W) with C = {v['chip_peak']:.3g} FLOP/s, W = {v['chip_bw']:g} TB/s.",
        f"bf16 (b_w = 2): {_w5_bf16(v):,.0f} sequences.",
        f"int8 (b_w = 1), still computing at the bf16 peak: {_w5_int8(v):,.0f}.",
    )


_TWICE_HINT = ("each weight costs 2 FLOPs per sequence (a multiply-add), and the peak is the "
               "dense one (not 'with sparsity'): B* = C·b_w / (2·W).")

W5 = problem(
    "inference.w5", "When decode turns compute-bound",
    draws(derive=_chip_figures(),
           chip=Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200"), "chip")),
    ("At what batch, in sequences, do a decode step's weight matmuls turn compute-bound on "
     "a " + _chip_text() + ", for short sequences (no cache to speak of), with bf16 weights? "
     "With int8 weights (the matmuls still run at the bf16 peak)?"),
    (Part("bstar_bf16", _w5_bf16, rel=0.02, slips=(
         Slip("twice", lambda v: 2 * _w5_bf16(v), _TWICE_HINT),
         Slip("int8 weights", lambda v: _w5_bf16(v) / 2,
              "bf16 weights take 2 bytes each: B* = C·2 / (2·W)."),
     ), unit="count"),
     "critical batch with bf16 weights, in sequences"),
    (Part("bstar_int8", _w5_int8, rel=0.02, slips=(
         Slip("bf16's", _w5_bf16,
              "int8 weights halve the bytes each step reads while the FLOPs (2 per weight per "
              "sequence, at the bf16 peak) stay: B* = C·1 / (2·W), half the bf16 one."),
     ), unit="count"),
     "critical batch with int8 weights, in sequences"),
    solution=_w5_solution, worked="5")


# --------------------------------------------------------------------------- 6. B* with a cache

def _w6_b(overlap):
    return lambda v: inf.decode_critical_batch(_cfg(v), v["chip"], context_len=v["S"],
                                               overlap=overlap)


_w6_phased, _w6_overlapped = _w6_b(False), _w6_b(True)


def _w6_sinf(v):
    return inf.overlap_bound_limit(_cfg(v), v["chip"])


def _w6_solution(v):
    return (
        f"The weight matmuls balance at C·b_w / (2·W) = {_w6_phased(v):,.0f} sequences, whatever "
        "the cache (its bytes are attention's, not theirs).",
        f"The overlapped bound sets all FLOPs against all bytes: B* = W_bytes / (W·f/C − c) = "
        f"{_w6_overlapped(v):,.0f} at {v['S']:,} cached tokens.",
        f"Its denominator reaches 0, so it finds no B*, from {_w6_sinf(v):,} cached tokens on.",
    )


W6 = problem(
    "inference.w6", "The critical batch with a cache",
    draws(derive=_with(_dims, _chip_figures()),
           well_posed=lambda v: (_fits(_cfg, context_len=lambda v: v["S"])(v)
                                 and v["S"] < 0.8 * _w6_sinf(v)),
           model=Choice(("LLaMA-3 8B", "LLaMA-3 70B"), "model"),
           chip=Choice(("H100", "H200", "B200", "TPU v5p"), "chip"),
           S=Choice((256, 128, 512), "S", "cached tokens")),
    ("" + SHAPE + " decodes on one " + _chip_text() + " with {S:,} tokens cached per sequence "
     "(bf16 weights and cache). At what batch do its weight matmuls turn compute-bound? "
     "Where does the overlapped bound (all the step's FLOPs against all its bytes, as one "
     "roofline) put the critical batch, and from how many cached tokens on does that bound "
     "find none?"),
    (Part("bstar_matmuls", _w6_phased, rel=0.02, slips=(
         Slip("overlapped", distinct_from(_w6_phased, _w6_overlapped, 0.02),
              "the weight matmuls' balance does not involve the cache: C·b_w / (2·W)."),
     ), unit="count"),
     "critical batch of the weight matmuls, in sequences"),
    (Part("bstar_overlapped", _w6_overlapped, rel=0.02, slips=(
         Slip("matmuls alone", distinct_from(_w6_overlapped, _w6_phased, 0.02),
              "the overlapped bound counts the cache's bytes and attention's FLOPs with the "
              "weights': B* = W_bytes / (W·f/C − c)."),
     ), unit="count"),
     "critical batch of the overlapped bound, in sequences"),
    (Part("s_never", _w6_sinf, rel=0.01, unit="count"),
     "context from which the overlapped bound finds none, in tokens"),
    solution=_w6_solution, worked="6")


# --------------------------------------------------------------------------- 7. int8 on a node

#: The 8-GPU tensor-parallel node of the chapter's running example, with the model and the
#: cached context drawn: problems 7 and 8.
_NODE_SPEC: dict[str, Any] = dict(model=Choice(("LLaMA-3 70B", "LLaMA-3 8B"), "model"),
                  chip=Choice(("H100", "H200", "B200"), "GPU"),
                  S=Choice((4096, 2048, 8192), "S", "cached tokens"))

def _w7(v, weight_dtype):
    return inf.decode_step(_cfg(v), v["chip"], batch=1, context_len=v["S"], n_chips=NODE,
                           weight_dtype=weight_dtype)


def _w7_ms(weight_dtype):
    return lambda v: _w7(v, weight_dtype).time / MS


_w7_bf16, _w7_int8 = _w7_ms("bf16"), _w7_ms("int8")

_NO_COMM_HINT = ("add the tensor-parallel AllReduces: two per layer over the 8 GPUs, mostly "
                 "latency at B = 1.")


def _w7_solution(v):
    b, i = _w7(v, "bf16"), _w7(v, "int8")
    return (
        f"bf16: memory {format_seconds(b.t_memory)} (weights and cache over 8 GPUs) + "
        f"AllReduces {format_seconds(b.t_comm)} = {format_seconds(b.time)}.",
        f"int8 weights halve the weight bytes: memory {format_seconds(i.t_memory)}, but the "
        f"AllReduces stay {format_seconds(i.t_comm)}: {format_seconds(i.time)}.",
    )


W7 = problem(
    "inference.w7", "Why int8 does not halve the time",
    draws(derive=_with(_dims, _chip_figures()), **_NODE_SPEC),
    ("" + SHAPE + " decodes one sequence on a node of 8 " + _chip_text() + " GPUs, tensor "
     "parallel (two AllReduces of the activations per layer, 1 µs per hop), with {S:,} tokens "
     "cached in bf16. How long is a step, in ms, with bf16 weights, and with int8 weights?"),
    (Part("bf16_ms", _w7_bf16, slips=(
         Slip("no AllReduces", distinct_from(_w7_bf16, lambda v: (
             _w7(v, "bf16").time - _w7(v, "bf16").t_comm) / MS), _NO_COMM_HINT),
         _seconds_slip(_w7_bf16),
     ), unit="s"),
     "time per token with bf16 weights, in ms"),
    (Part("int8_ms", _w7_int8, slips=(
         Slip("halved", distinct_from(_w7_int8, lambda v: _w7_bf16(v) / 2),
              "int8 halves the weight bytes only: the cache and the AllReduces take as long "
              "as before."),
         Slip("no AllReduces (int8)", distinct_from(_w7_int8, lambda v: (
             _w7(v, "int8").time - _w7(v, "int8").t_comm) / MS), _NO_COMM_HINT),
     ), unit="s"),
     "time per token with int8 weights, in ms"),
    solution=_w7_solution, worked="7")


# --------------------------------------------------------------------------- 8. the AllReduces

def _w8(v, algorithm="nvls"):
    return inf.decode_step(_cfg(v), v["chip"], batch=v["B"], context_len=v["S"], n_chips=NODE,
                           algorithm=algorithm)


def _w8_count(v):
    """Megatron tensor parallelism: one AllReduce after attention and one after the MLP."""
    return 2 * _cfg(v).n_layers


def _w8_comm_ms(v):
    return _w8(v).t_comm / MS


def _w8_share(v):
    w = _w8(v)
    return 100 * w.t_comm / w.time


def _w8_solution(v):
    w = _w8(v)
    return (
        f"Two AllReduces per layer (after attention, after the MLP): {_w8_count(v)}.",
        f"Each of B·D·2 = {v['B']} × {v['D']:,} × 2 = "
        f"{format_bytes(v['B'] * v['D'] * 2, binary=False)}, run as NVLS: the switch adds, so "
        f"each GPU sends and receives the bytes once (V / W_nvlink) in 2 steps of 1 µs.",
        f"In all {format_seconds(w.t_comm)}, {_w8_share(v):.3g}% of the "
        f"{format_seconds(w.time)} step.",
    )


W8 = problem(
    "inference.w8", "The AllReduces of a decode step",
    draws(derive=_with(_dims, _chip_figures()),
           well_posed=_fits(_cfg, context_len=lambda v: v["S"], batch=lambda v: v["B"],
                            n_chips=NODE),
           B=Choice((32, 16, 64, 128), "B", "sequences"), **_NODE_SPEC),
    ("" + SHAPE + " decodes B = {B} sequences with {S:,} cached tokens each on a node of 8 "
     + _chip_text() + " GPUs, tensor parallel (Megatron-style, bf16 activations). Each "
     "AllReduce runs as NVLS, the NVSwitch adding: V / W_nvlink plus 2 steps of 1 µs, with "
     "W_nvlink = {chip_nvlink:g} GB/s one way per GPU. How many "
     "AllReduces does a step make, how long do they take in all, in ms, and what share of "
     "the step is that, in percent?"),
    (Part("allreduces", _w8_count, rel=0.001, slips=(
         Slip("one per layer", lambda v: _w8_count(v) / 2,
              "each layer ends both its attention and its MLP with a partial sum: two "
              "AllReduces per layer."),
     ), unit="count"),
     "AllReduces per step, a count"),
    (Part("comm_ms", _w8_comm_ms, slips=(
         Slip("one per layer (time)", lambda v: _w8_comm_ms(v) / 2,
              "two AllReduces per layer, after attention and after the MLP."),
         Slip("as a ring", distinct_from(_w8_comm_ms, lambda v: _w8(v, "ring").t_comm / MS),
              "the problem runs each AllReduce as NVLS, the switch adding: V / W_nvlink in "
              "2 steps, not a ring's 2·V·(N−1)/N / W_nvlink in 2(N−1) steps."),
         _seconds_slip(_w8_comm_ms),
     ), unit="s"),
     "AllReduce time per step, in ms"),
    (Part("comm_share_pct", _w8_share, slips=(
         Slip("against the rest", distinct_from(_w8_share, lambda v: 100 * _w8(v).t_comm / (
             _w8(v).time - _w8(v).t_comm)),
              "the share is of the whole step, AllReduces included."),
         percent_slip(_w8_share),
     ), unit="fraction"),
     "their share of the step, in %"),
    solution=_w8_solution, worked="8")


# --------------------------------------------------------------------------- 9, 10. the best batch

def _w9_b(v):
    return inf.best_batch(llama3_70b(), v["chip"], latency_target=v["target_ms"] * MS,
                          context_len=v["S"], n_chips=NODE)


def _w9_step(v, batch=None):
    return inf.decode_step(llama3_70b(), v["chip"], batch=_w9_b(v) if batch is None else batch,
                           context_len=v["S"], n_chips=NODE)


def _w9_tps_per_gpu(v):
    return _w9_step(v).tokens_per_s_per_chip


def _w9_max(v):
    return inf.max_batch(llama3_70b(), v["chip"], context_len=v["S"], n_chips=NODE)


def _w9_solution(v):
    w = _w9_step(v)
    return (
        f"The step time grows with B: the weights cost the same at every batch, each sequence "
        f"adds its {v['S']:,}-token cache to read, and the AllReduces grow a little.",
        f"The largest B with a step under {v['target_ms']:g} ms (and caches that fit: at most "
        f"{_w9_max(v)}): B = {_w9_b(v)}.",
        f"Its step: {format_seconds(w.time)}; {w.tokens_per_s_per_chip:,.0f} tokens/s per GPU.",
    )


_W9_SPEC: dict[str, Any] = dict(
    chip=Choice(("H100", "H200", "B200"), "GPU"),
    target_ms=Choice((20, 15, 30, 25), "latency target", "ms"),
    S=Choice((4096, 2048, 8192), "S", "cached tokens"))


def _w9_well_posed(v) -> bool:
    b = _w9_b(v)
    return 1 < b < _w9_max(v)


_W9_SETTING = ("LLaMA-3 70B (L = 80, K = 8 key/value heads of d_h = 128, D = 8,192; bf16 weights "
               "and cache) decodes on a node of 8 {chip} GPUs ({chip_hbm:g} GB of HBM at "
               "{chip_bw:g} TB/s each, dense bf16 peak {chip_peak:.3g} FLOP/s), tensor parallel "
               "(two AllReduces per layer, 1 µs per hop), each sequence with {S:,} tokens cached; "
               "the step's kernels run in turn, nothing overlapped.")

W9 = problem(
    "inference.w9", "The largest batch under a latency target",
    draws(derive=_chip_figures(), well_posed=_w9_well_posed, **_W9_SPEC),
    (_W9_SETTING + " What is the largest batch whose time per token stays under "
     "{target_ms:g} ms, and how many tokens per second per GPU does it give?"),
    (Part("batch", _w9_b, slips=(
         Slip("as many as fit", distinct_from(_w9_b, _w9_max),
              "at that batch a step takes longer than {target_ms:g} ms: the latency target "
              "binds before HBM does."),
     ), unit="count"),
     "largest batch, in sequences"),
    (Part("tps_per_gpu", _w9_tps_per_gpu, slips=(
         Slip("the node's", lambda v: _w9_step(v).tokens_per_s,
              "divide the node's tokens per second by its 8 GPUs."),
     ), unit="tokens/s"),
     "tokens per second per GPU"),
    solution=_w9_solution, worked="9")


def _w10_cost(batch):
    def value(v):
        step = _w9_step(v, batch(v))
        return inf.cost_per_million_tokens(step.tokens_per_s, n_chips=NODE,
                                           price_per_chip_hour=v["price"])
    return value


_w10_best, _w10_one = _w10_cost(_w9_b), _w10_cost(lambda v: 1)


def _w10_solution(v):
    best, one = _w9_step(v), _w9_step(v, 1)
    return (
        f"At B = {_w9_b(v)}: {best.tokens_per_s:,.0f} tokens/s from 8 GPUs at "
        f"{v['price']:.2f} per GPU-hour: 8 × {v['price']:.2f} / 3,600 / tokens/s × 10⁶ = "
        f"{_w10_best(v):.3g} per million tokens.",
        f"At B = 1: {one.tokens_per_s:,.0f} tokens/s, {_w10_one(v):.3g} per million: the batch "
        "is the price.",
    )


_ONE_GPU_HINT = "the node's 8 GPUs are all paid for: 8 × the price per GPU-hour."

W10 = problem(
    "inference.w10", "The price of a million tokens",
    draws(derive=_chip_figures(), well_posed=_w9_well_posed,
           price=Choice((3.00, 2.00, 4.50), "price per GPU-hour"), **_W9_SPEC),
    (_W9_SETTING + " At the largest batch whose time per token stays under {target_ms:g} "
     "ms, what does a million output tokens cost at {price:.2f} per GPU-hour (an assumed "
     "price)? And at batch 1?"),
    (Part("cost_best", _w10_best, slips=(
         Slip("one GPU", lambda v: _w10_best(v) / NODE, _ONE_GPU_HINT),
     ), unit="dollars"),
     "cost per million tokens at the best batch, in currency units"),
    (Part("cost_b1", _w10_one, slips=(
         Slip("one GPU (B = 1)", lambda v: _w10_one(v) / NODE, _ONE_GPU_HINT),
     ), unit="dollars"),
     "cost per million tokens at batch 1, in currency units"),
    solution=_w10_solution, worked="10")


# --------------------------------------------------------------------------- 11. HBM over bandwidth

def _w11_ms(key):
    return lambda v: get_chip(v[key]).hbm_bytes / get_chip(v[key]).hbm_bandwidth / MS


_w11_gpu, _w11_tpu = _w11_ms("gpu"), _w11_ms("tpu")


def _w11_solution(v):
    out = []
    for key, n in (("gpu", "n_gpu"), ("tpu", "n_tpu")):
        chip = get_chip(v[key])
        out.append(f"{v[key]}: {format_bytes(chip.hbm_bytes, binary=False)} / "
                   f"{chip.hbm_bandwidth / 1e12:g} TB/s = {format_seconds(_w11_ms(key)(v) * MS)}; "
                   f"each of the {v[n]} chips reads its own HBM at the same time.")
    return tuple(out)


def _w11_part(answer, key, n):
    expected = _w11_ms(key)
    return Part(answer, expected, slips=(
        Slip(f"the whole slice ({key})", lambda v: expected(v) * v[n],
             "each chip reads its own HBM in parallel: the time is one chip's HBM over one chip's "
             "bandwidth, however many chips there are."),
        _seconds_slip(expected),
    ), unit="s")


W11 = problem(
    "inference.w11", "The floor on time per token",
    draws(derive=_with(_chip_figures("gpu"), _chip_figures("tpu")),
           gpu=Choice(("H100", "H200", "B200", "A100"), "GPU"),
           n_gpu=Choice((8, 4, 2), "GPUs"),
           tpu=Choice(("TPU v5e", "TPU v5p", "TPU v6e"), "TPU"),
           n_tpu=Choice((16, 8, 32), "TPU chips")),
    ("A server's batch fills its HBM, so each decode step reads all of it. What is the "
     "least time per token, in ms, on {n_gpu} " + _chip_text("gpu") + " GPUs, and on a "
     "{n_tpu}-chip slice of " + _chip_text("tpu") + "? (Leave the AllReduces out.)"),
    (_w11_part("gpu_ms", "gpu", "n_gpu"),
     "least time per token on the GPUs, in ms"),
    (_w11_part("tpu_ms", "tpu", "n_tpu"),
     "least time per token on the TPU slice, in ms"),
    solution=_w11_solution, worked="11")


# --------------------------------------------------------------------------- 12. disaggregation

def _w12_prefill_s(v):
    """GPU-seconds of prefill per request."""
    pf = inf.prefill(llama3_70b(), "H100", prompt_len=v["T"], n_chips=NODE)
    return v["T"] / pf.tokens_per_s_per_chip


def _w12_decode_s(v):
    """GPU-seconds of decode per request, at the stated batch."""
    dec = inf.decode_step(llama3_70b(), "H100", batch=v["B"], context_len=v["T"] + v["R"],
                          n_chips=NODE)
    return v["R"] / dec.tokens_per_s_per_chip


def _w12_ratio(v):
    return _w12_prefill_s(v) / _w12_decode_s(v)


def _w12_solution(v):
    return (
        f"Prefill of {v['T']:,} tokens on 8 H100s: {_w12_prefill_s(v):.3g} GPU-seconds per "
        "request.",
        f"Decode of {v['R']:,} tokens at B = {v['B']} with {v['T'] + v['R']:,} cached: "
        f"{_w12_decode_s(v):.3g} GPU-seconds per request.",
        f"The prefill pool should be {_w12_ratio(v):.3g} times the decode pool.",
    )


W12 = problem(
    "inference.w12", "Splitting GPUs between prefill and decode",
    draws(well_posed=lambda v: inf.max_batch(llama3_70b(), "H100", context_len=v["T"] + v["R"],
                                              n_chips=NODE) >= v["B"],
           T=Choice((8192, 4096, 16384), "prompt", "tokens"),
           R=Choice((256, 512, 128), "reply", "tokens"),
           B=Choice((64, 32, 128), "decode batch", "sequences")),
    ("A disaggregated LLaMA-3 70B service (bf16, 8-H100 tensor-parallel groups, the "
     "chapter's step model) serves requests with {T:,}-token prompts and {R:,}-token replies, "
     "decoding B = {B} sequences at a time with the whole conversation cached (use the "
     "cache at the end of the reply for every step). How many GPU-seconds of prefill and "
     "of decode does one request need, and how many times the decode pool should the "
     "prefill pool be?"),
    (Part("prefill_gpu_s", _w12_prefill_s, unit="s"),
     "prefill per request, in GPU-seconds"),
    (Part("decode_gpu_s", _w12_decode_s, unit="s"),
     "decode per request, in GPU-seconds"),
    (Part("pool_ratio", _w12_ratio, slips=(
         Slip("inverted", lambda v: 1 / _w12_ratio(v),
              "the ratio asked is prefill over decode: GPU-seconds of prefill per request "
              "divided by those of decode."),
         Slip("tokens", distinct_from(_w12_ratio, lambda v: v["T"] / v["R"]),
              "a prompt token costs far less GPU time than a decoded one: compare GPU-seconds "
              "per request, not tokens."),
     ), unit="ratio"),
     "prefill pool over decode pool"),
    solution=_w12_solution, worked="12")


PROBLEMS: tuple[Problem, ...] = (W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11, W12)

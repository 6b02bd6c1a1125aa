"""hw8-serving-systems: the inputs each student gets their own values of, and the parts.

Problems 1 to 8 price one server with the solver's step model (:class:`scalebook.service.StepModel`)
on **one** chip, so that no tensor-parallel AllReduce enters and every answer follows by hand from
the four per-unit costs the problem states::

    time(q, pairs, cache) = max(q·t_tok, t_w) + max(pairs·t_pair, cache·t_kv)

(q query tokens, ``pairs`` (query, cached token) pairs, ``cache`` cached tokens read). Problem by
problem (the first value of each choice is the one the book prints):

- P1, a lone request on LLaMA-3 8B: the chip, prompt T and reply R: TTFT, TPOT, latency.
- P2, Little's law: λ and the time W in the system; the cache the requests in flight hold.
- P3, the prefill queue (M/D/1): the load ρ and the prompt length.
- P4, static batching: a batch of B replies uniform on 1 … R_max tokens.
- P5, the paged KV cache: the batch that fits, paged (16-token blocks) and reserved.
- P6, copy-on-write: n samples of one prompt.
- P7, prefix caching: a shared system prompt, its hit rate.
- P8, chunked prefill: the largest chunk within a TPOT SLO.
- P9, speculative decoding: α, k and the draft's cost ratio c (memory-bound decode).
- P10, int4 weights: the decode step and cost per million tokens.
- P11, capacity: replicas for a target rate.
- P12, a design judged by the simulator: chips, batch cap, chunk and draft length for LLaMA-3 70B
  on H100s meeting TTFT and TPOT SLOs at a given λ at the lowest cost.

The course's price of a chip-hour (USD 2) and bf16's 2 bytes are the course's conventions.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import product
from typing import Any, Mapping

from ..service import (SLO, Scheduler, Server, Workload, batch_that_fits, expected_max_uniform,
                       expected_tokens, largest_chunk, md1_wait, mean_context_continuous,
                       mixed_step_time,
                       prefix_caching, shared_sampling, simulate, speedup_memory_bound,
                       static_slot_use, step_model)
from ..service.steps import StepModel
from ..variants import Choice, VariantSpec
from .parts import Design, Example, Part, Slip, Verdict, distinct_from, whole_number
from .parts import well_posed as parts_well_posed

#: The model of problems 1 to 10 (it fits one GPU of any of the drawn kinds).
MODEL1 = "LLaMA-3 8B"
#: The course's price of one chip-hour (USD).
PRICE = 2.0
#: The block size of the paged cache (tokens).
BLOCK = 16

PARAMETERS = {
    "q1_chip": Choice(("H100", "H200", "B200", "A100"), "GPU"),
    "q1_T": Choice((1024, 2048, 512, 4096), "T", "prompt tokens"),
    "q1_R": Choice((256, 512, 128), "R", "reply tokens"),
    "q2_rate": Choice((8.0, 20.0, 4.0, 12.0), "λ", "requests/s"),
    "q2_W": Choice((6.0, 3.0, 10.0), "W", "s in the system"),
    "q3_rho": Choice((0.9, 0.8, 0.95, 0.7), "ρ", "load"),
    "q4_B": Choice((32, 64, 16, 8), "B", "sequences"),
    "q4_Rmax": Choice((511, 1023, 2047, 255), "R_max", "tokens"),
    "q5_mean": Choice((1152, 3072, 640, 2048), "mean length", "tokens"),
    "q5_max": Choice((2046, 4096, 1534, 8192), "max length", "tokens"),
    "q6_T": Choice((1000, 1500, 700, 3000), "T", "prompt tokens"),
    "q6_R": Choice((200, 300, 100), "R", "reply tokens"),
    "q6_n": Choice((4, 8, 2, 16), "n", "samples"),
    "q7_h": Choice((2000, 4000, 1000, 3000), "h", "system prompt tokens"),
    "q7_q": Choice((500, 1000, 250), "q", "question tokens"),
    "q7_hit": Choice((0.9, 0.75, 0.6, 0.95), "hit rate", "fraction"),
    "q8_B": Choice((64, 32, 128, 16), "B", "decode sequences"),
    "q8_S": Choice((1024, 2048, 512), "S", "context tokens"),
    "q8_slo": Choice((0.05, 0.03, 0.1), "TPOT SLO", "s"),
    "q8_T": Choice((4096, 8192, 16384), "T", "prompt tokens"),
    "q9_alpha": Choice((0.8, 0.7, 0.9, 0.6), "α", "acceptance"),
    "q9_k": Choice((4, 3, 5, 2), "k", "draft tokens"),
    "q9_c": Choice((0.05, 0.1, 0.02, 0.15), "c", "draft cost ratio"),
    "q10_B": Choice((64, 32, 16, 128), "B", "sequences"),
    "q10_S": Choice((1280, 2048, 512), "S", "context tokens"),
    "q11_rate": Choice((50.0, 120.0, 30.0, 200.0), "target rate", "requests/s"),
    "q11_replica": Choice((3.7, 5.2, 2.9, 8.4), "rate per replica", "requests/s"),
    "q11_n": Choice((8, 4, 2), "n", "GPUs per replica"),
    "q12_rate": Choice((2.0, 1.5, 16.0, 24.0), "λ", "requests/s"),
    "q12_ttft": Choice((1.0, 0.5), "TTFT SLO", "s"),
    "q12_tpot": Choice((0.05, 0.03), "TPOT SLO", "s"),
}

#: Problem 12's fixed inputs: model, chip, prompt and reply, α of the draft
#: (LLaMA-3 8B on the same chips), the share of requests that must meet both SLOs, the trace
#: the grader simulates (seconds, seed), the slices, and the cost margin for full points.
MODEL12, CHIP12, PROMPT12, REPLY12, ALPHA12 = "LLaMA-3 70B", "H100", 1024, 256, 0.8
TARGET12, DURATION12, SEED12 = 0.9, 30.0, 0
SLICES12, MARGIN12 = (1, 2, 4, 8), 0.10
#: The grid the reference searches (any configuration the simulator accepts passes, in it or not).
GRID12 = {"max_batch": (64, 256), "chunk_size": (0, 512), "spec_k": (0, 4)}


def model1(v: Mapping[str, Any]) -> StepModel:
    """The one-chip server of problems 1 to 10: bf16 weights and cache."""
    return step_model(Server(model=MODEL1, chip=v["q1_chip"], n_chips=1,
                             price_per_chip_hour=PRICE))


def model10(v: Mapping[str, Any]) -> StepModel:
    """P10's server: the same chip with int4 weights (bf16 compute and cache)."""
    return step_model(Server(model=MODEL1, chip=v["q1_chip"], n_chips=1,
                             weight_dtype="int4", price_per_chip_hour=PRICE))


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The step model's per-unit costs and sizes each problem states, from the solver."""
    m = model1(p)
    m4 = model10(p)
    return {"t_tok": m.t_token_compute, "t_w": m.t_weights_read, "t_pair": m.t_pair_compute,
            "t_kv": m.t_cache_read, "kv_tok": m.kv_bytes_per_token,
            "kv_cap": m.kv_capacity_tokens, "t_w4": m4.t_weights_read}


def step(v: Mapping[str, Any], q: float, pairs: float, cache: float, t_w: str = "t_w") -> float:
    """The stated step model: ``max(q·t_tok, t_w) + max(pairs·t_pair, cache·t_kv)`` (s)."""
    return max(q * v["t_tok"], v[t_w]) + max(pairs * v["t_pair"], cache * v["t_kv"])


# --------------------------------------------------------------------------- the parts

_ttft1 = lambda v: model1(v).prefill_time(v["q1_T"])
_ctx1 = lambda v: mean_context_continuous(v["q1_T"], v["q1_R"])
_tpot1 = lambda v: model1(v).decode_time(1, _ctx1(v))
_lat1 = lambda v: _ttft1(v) + (v["q1_R"] - 1) * _tpot1(v)
_L2 = lambda v: v["q2_rate"] * v["q2_W"]
_kv2 = lambda v: _L2(v) * _ctx1(v) * v["kv_tok"]
_s3 = lambda v: model1(v).prefill_time(v["q1_T"])
_ttft3 = lambda v: md1_wait(v["q3_rho"] / _s3(v), _s3(v)) + _s3(v)
_steps4 = lambda v: expected_max_uniform(v["q4_B"], 1, v["q4_Rmax"])
_use4 = lambda v: static_slot_use(v["q4_B"], 1, v["q4_Rmax"])
_fit5 = lambda v: batch_that_fits(v["kv_cap"], mean_len=v["q5_mean"], max_len=v["q5_max"],
                                  block_size=BLOCK)
_ss6 = lambda v: shared_sampling(prompt_len=v["q6_T"], reply_len=v["q6_R"], n_samples=v["q6_n"],
                                 block_size=BLOCK)
_pc7 = lambda v: prefix_caching(model1(v), prompt_len=(v["q7_h"] + v["q7_q"]), shared_len=v["q7_h"],
                                hit_rate=v["q7_hit"])
_chunk8 = lambda v: largest_chunk(model1(v), decode_batch=v["q8_B"], context_len=v["q8_S"],
                                  tpot_slo=v["q8_slo"], prompt_len=v["q8_T"])


def first_chunk8(v: Mapping[str, Any]) -> int:
    """The largest chunk within the SLO at offset 0 (the first chunk: the slip of sizing the
    chunk where it is cheapest)."""
    m = model1(v)
    lo, hi = 1, v["q8_T"]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mixed_step_time(m, decode_batch=v["q8_B"], context_len=v["q8_S"], chunk=mid) <= v["q8_slo"]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_E9 = lambda v: expected_tokens(v["q9_alpha"], v["q9_k"])
_up9 = lambda v: speedup_memory_bound(v["q9_alpha"], v["q9_k"], v["q9_c"])


def best_k9(v: Mapping[str, Any]) -> int:
    """The draft length 1 … 16 that maximises ``E(α, k)/(k·c + 1)`` (the smallest on a tie)."""
    return max(range(1, 17), key=lambda k: (speedup_memory_bound(v["q9_alpha"], k, v["q9_c"]), -k))


_step10 = lambda v: model10(v).decode_time(v["q10_B"], v["q10_B"] * v["q10_S"])
_cost10 = lambda v: PRICE / 3600 / (v["q10_B"] / _step10(v)) * 1e6
_rep11 = lambda v: math.ceil(v["q11_rate"] / v["q11_replica"])

_CAUSAL = ("The step model counts every (query, cached token) pair, T² for a prefill of T "
           "tokens: it takes no causal discount (the problem states it).")

PARTS = (
    Part("ttft_lone", _ttft1, slips=(
        Slip("one decode step", lambda v: model1(v).decode_time(1, v["q1_T"]),
             "The first token needs the whole prompt prefilled: q = T query tokens in one pass, "
             "not one."),
        Slip("no attention", distinct_from(_ttft1, lambda v: max(v["q1_T"] * v["t_tok"], v["t_w"])),
             "A prefill also runs attention: T² pairs against the cache it writes."),
    ), unit="s"),
    Part("tpot_lone", _tpot1, slips=(
        Slip("prefill per token", distinct_from(_tpot1, lambda v: _ttft1(v) / v["q1_T"]),
             "Decode runs one token per pass: the whole weights are read for it (t_w), not a "
             "T-th of a prefill."),
    ), unit="s"),
    Part("latency_lone", _lat1, slips=(
        Slip("R steps", distinct_from(_lat1, lambda v: _ttft1(v) + v["q1_R"] * _tpot1(v), 0.01),
             "The prefill produces the first token: R − 1 decode steps follow it."),
        Slip("no prefill", distinct_from(_lat1, lambda v: (v["q1_R"] - 1) * _tpot1(v)),
             "The latency starts at arrival: add the TTFT."),
    ), unit="s"),
    Part("requests_in_flight", _L2, slips=(
        Slip("λ/W", lambda v: v["q2_rate"] / v["q2_W"], "Little's law is L = λ·W, a product."),
    ), unit="count"),
    Part("cache_in_flight", _kv2, slips=(
        Slip("T + R", distinct_from(_kv2, lambda v: _L2(v) * (v["q1_T"] + v["q1_R"]) * v["kv_tok"]),
             "A continuous batch's sequences are half-way through their replies on average: "
             "each holds T + (R − 1)/2 tokens, not T + R."),
        Slip("keys only", lambda v: _kv2(v) / 2,
             "kv_tok already counts keys and values; do not halve it."),
    ), unit="bytes"),
    Part("queued_ttft", _ttft3, slips=(
        Slip("M/M/1", lambda v: v["q3_rho"] * _s3(v) / (1 - v["q3_rho"]) + _s3(v),
             "The prefill of a fixed-length prompt takes a fixed time: M/D/1, whose wait is half "
             "M/M/1's, ρs/(2(1 − ρ))."),
        Slip("no service", lambda v: md1_wait(v["q3_rho"] / _s3(v), _s3(v)),
             "TTFT is the wait in the queue plus the prefill itself."),
    ), unit="s"),
    Part("static_steps", _steps4, slips=(
        Slip("R_max", distinct_from(_steps4, lambda v: float(v["q4_Rmax"]), 0.01),
             "The batch runs until its longest reply ends: E[max R] of B draws, a little under "
             "R_max."),
        Slip("mean", lambda v: (1 + v["q4_Rmax"]) / 2,
             "A static batch runs until its longest reply is done, not its mean one."),
    ), rel=0.01, unit="count"),
    Part("static_slot_use", _use4, slips=(
        Slip("waste", lambda v: 1 - _use4(v),
             "Give the share of slot-steps that produce a token, not the share wasted."),
    ), rel=0.01, unit="fraction"),
    Part("batch_fits_paged", lambda v: _fit5(v).paged, slips=(
        Slip("no fragmentation", distinct_from(lambda v: _fit5(v).paged,
                                              lambda v: v["kv_cap"] // v["q5_mean"], 0.01),
             "Each sequence wastes half a block on average in its last block: size by "
             "mean + (b − 1)/2."),
        Slip("reserved", distinct_from(lambda v: _fit5(v).paged, lambda v: _fit5(v).reserved, 0.01),
             "A paged cache holds what a sequence uses, not its maximum length."),
    ), rel=0.01, unit="count"),
    Part("batch_fits_reserved", lambda v: _fit5(v).reserved, slips=(
        Slip("mean", distinct_from(lambda v: _fit5(v).reserved,
                                    lambda v: v["kv_cap"] // v["q5_mean"], 0.01),
             "A contiguous cache reserves the longest a sequence may grow, not its mean."),
    ), rel=0.01, unit="count"),
    Part("blocks_shared", lambda v: _ss6(v).shared, slips=(
        Slip("separate", lambda v: _ss6(v).separate,
             "With copy-on-write the samples share the prompt's full blocks."),
        Slip("no partial copy", distinct_from(
            lambda v: _ss6(v).shared,
            lambda v: math.ceil(v["q6_T"] / BLOCK) + v["q6_n"] * math.ceil(v["q6_R"] / BLOCK), 0.01),
            "The prompt's last block is partly full: each sample copies it on its first write, "
            "so share only the floor(T/b) full blocks."),
    ), rel=0.001, unit="count"),
    Part("prefill_flops_saved", lambda v: _pc7(v).compute_saved, slips=(
        Slip("token share", distinct_from(lambda v: _pc7(v).compute_saved,
                                         lambda v: v["q7_hit"] * v["q7_h"] / (v["q7_h"] + v["q7_q"])),
             "The saved FLOPs include attention pairs h·T as well as the h tokens' matmuls: "
             "weigh each by its cost."),
        Slip("no hit rate", distinct_from(lambda v: _pc7(v).compute_saved,
                                           lambda v: _pc7(v).compute_saved / v["q7_hit"]),
             "The prefix is found cached only at the hit rate: scale the saving by it."),
    ), unit="fraction"),
    Part("mean_ttft_cached", lambda v: _pc7(v).ttft_mean, slips=(
        Slip("always hit", distinct_from(lambda v: _pc7(v).ttft_mean, lambda v: _pc7(v).ttft_hit),
             "Misses prefill the whole prompt: mean = hit·TTFT_hit + (1 − hit)·TTFT_cold."),
        Slip("cold", lambda v: _pc7(v).ttft_cold, "Hits skip the shared prefix's prefill."),
    ), unit="s"),
    Part("largest_chunk", _chunk8, slips=(
        Slip("first chunk", distinct_from(_chunk8, first_chunk8, 0.02),
             "Size the chunk at its worst offset: the prompt's last chunk attends to the "
             "whole prompt before it."),
    ), rel=0.02, unit="count"),
    Part("spec_expected_tokens", _E9, slips=(
        Slip("k drafts only", distinct_from(_E9, lambda v: (1 - v["q9_alpha"] ** v["q9_k"])
                                            / (1 - v["q9_alpha"])),
             "A verification always yields one token of its own beyond the accepted drafts: "
             "(1 − α^(k+1))/(1 − α)."),
    ), unit="count"),
    Part("spec_speedup", _up9, slips=(
        Slip("free draft", distinct_from(_up9, _E9),
             "Each of the k draft steps costs c of a target step: divide by k·c + 1."),
    ), unit="ratio"),
    Part("spec_best_k", best_k9, rel=0.001, unit="count"),
    Part("int4_decode_step", _step10, slips=(
        Slip("bf16", distinct_from(_step10, lambda v: model1(v).decode_time(
            v["q10_B"], v["q10_B"] * v["q10_S"])),
             "Int4 weights are a quarter of bf16's bytes: read them in t_w4."),
        Slip("cache int4 too", distinct_from(_step10, lambda v: max(v["q10_B"] * v["t_tok"], v["t_w4"])
                                             + v["q10_B"] * v["q10_S"] * v["t_kv"] / 4, 0.02),
             "Only the weights are int4 here; the cache stays bf16."),
    ), unit="s"),
    Part("int4_cost_per_million", _cost10, slips=(
        Slip("per token", lambda v: _cost10(v) / 1e6, "Give the cost of a million tokens."),
        Slip("one sequence", lambda v: _cost10(v) * v["q10_B"],
             "A step produces B tokens, one per sequence."),
    ), unit="dollars"),
    Part("replicas_needed", _rep11, slips=(
        Slip("floor", lambda v: v["q11_rate"] // v["q11_replica"] if v["q11_rate"] % v["q11_replica"] else math.nan,
             "Round up: a fraction of a replica cannot serve the remainder."),
        Slip("chips", lambda v: _rep11(v) * v["q11_n"], "Give replicas, not GPUs."),
    ), rel=0.001, unit="count"),
)


# --------------------------------------------------------------------------- the design part

def _server12(n: int) -> Server:
    return Server(model=MODEL12, chip=CHIP12, n_chips=n, price_per_chip_hour=PRICE)


@lru_cache(maxsize=512)
def design_trace(rate: float, ttft: float, tpot: float, n: int, max_batch: int, chunk: int, k: int):
    """The grader's seeded trace of one configuration (cached: a verdict is deterministic)."""
    workload = Workload(arrival_rate=rate, prompt_len=PROMPT12, reply_len=REPLY12)
    sched = Scheduler(max_batch=max_batch, chunk_size=chunk, spec_k=k, spec_alpha=ALPHA12)
    return simulate(_server12(n), workload, sched, slo=SLO(ttft=ttft, tpot=tpot),
                    duration=DURATION12, seed=SEED12)


def _slo12(v: Mapping[str, Any]) -> tuple[float, float, float]:
    """Problem 12's (λ, TTFT SLO, TPOT SLO) as floats (the cache's key)."""
    return float(v["q12_rate"]), float(v["q12_ttft"]), float(v["q12_tpot"])


def _fits12(n: int) -> bool:
    return step_model(_server12(n)).kv_capacity_tokens > 0


@lru_cache(maxsize=64)
def _cheapest12(rate: float, ttft: float, tpot: float) -> list[int] | None:
    """The first configuration of :data:`GRID12` on the fewest chips that meets both SLOs for
    :data:`TARGET12` of the requests; None if none does."""
    for n in SLICES12:
        if not _fits12(n):
            continue
        for b, c, k in product(*GRID12.values()):
            if design_trace(rate, ttft, tpot, n, b, c, k).attainment >= TARGET12:
                return [n, b, c, k]
    return None


def best_design12(v: Mapping[str, Any]) -> list[int]:
    """Problem 12's reference: [chips, batch cap, chunk, k] on the fewest chips."""
    best = _cheapest12(*_slo12(v))
    if best is None:
        raise ValueError("no configuration meets the SLOs")
    return best


def _share(results: Any, ok: Any) -> float:
    """Share of the finished ``results`` that pass ``ok`` (0–1)."""
    return sum(1 for r in results if ok(r)) / max(len(results), 1)


def judge_design12(v: Mapping[str, Any], value: Any) -> Verdict:
    """Full points for any [chips, batch cap, chunk, k] whose seeded trace meets both SLOs for
    90% of the requests and whose cost per hour is within 10% of the cheapest configuration's;
    otherwise the verdict says which SLO it misses and by how much, or the cheaper bound."""
    if not isinstance(value, list) or len(value) != 4:
        return Verdict(False, ("Give a list of 4: [GPUs, batch cap, chunk, draft length k].",))
    names = ("The number of GPUs", "The batch cap", "The chunk size", "The draft length k")
    n, b, c, k = (whole_number(x, what) for x, what in zip(value, names))
    for x in (n, b, c, k):
        if isinstance(x, str):
            return Verdict(False, (x,))
    assert isinstance(n, int) and isinstance(b, int) and isinstance(c, int) and isinstance(k, int)
    if n not in SLICES12:
        return Verdict(False, (f"A slice here is 1, 2, 4 or 8 H100s of one node, not {n}.",))
    if not 1 <= b <= 1024:
        return Verdict(False, (f"The batch cap is 1 to 1,024 sequences, not {b}.",))
    if c != 0 and not 64 <= c <= 16384:
        return Verdict(False, (f"The chunk size is 0 (whole prompts) or 64 to 16,384 tokens, "
                               f"not {c}.",))
    if not 0 <= k <= 8:
        return Verdict(False, (f"The draft length k is 0 (no speculation) to 8, not {k}.",))
    if not _fits12(n):
        return Verdict(False, (f"{MODEL12}'s bf16 weights do not fit on {n} H100"
                               f"{'' if n == 1 else 's'} with room for a cache.",))
    rate, ttft, tpot = _slo12(v)
    res = design_trace(rate, ttft, tpot, n, b, c, k)
    if res.attainment < TARGET12:
        done = res.requests
        misses = []
        p_ttft, p_tpot = res.ttft(90), res.tpot(90)
        if p_ttft > ttft:
            share = _share(done, lambda r: r.ttft <= ttft)
            misses.append(f"the TTFT SLO ({ttft:g} s): p90 TTFT is {p_ttft:.3g} s, "
                          f"{p_ttft / ttft - 1:.0%} over ({share:.0%} of the finished requests "
                          "meet it)")
        if p_tpot > tpot:
            share = _share(done, lambda r: r.reply_len <= 1 or r.tpot <= tpot)
            misses.append(f"the TPOT SLO ({tpot * 1e3:g} ms): p90 TPOT is {p_tpot * 1e3:.3g} ms, "
                          f"{p_tpot / tpot - 1:.0%} over ({share:.0%} of the finished requests "
                          "meet it)")
        if res.unfinished:
            misses.append(f"{res.unfinished} of the {res.arrived} requests were not done when "
                          "the trace ended (they miss both)")
        why = "; ".join(misses) or "the two SLOs together: each is met alone, not both by 90%"
        return Verdict(False, (f"Only {res.attainment:.0%} of the requests meet both SLOs in the "
                               f"grader's seeded {DURATION12:g} s trace at λ = {rate:g}/s (90% "
                               f"needed). It misses {why}. What binds: {res.binding}.",))
    best = best_design12(v)
    cost, best_cost = n * PRICE, best[0] * PRICE
    if cost > (1 + MARGIN12) * best_cost:
        return Verdict(False, (f"It meets both SLOs, but costs ${cost:g} per hour; "
                               f"{best} meets them on {best[0]} H100s for ${best_cost:g} per "
                               f"hour: full points need a cost within {MARGIN12:.0%} of the "
                               "cheapest.",))
    return Verdict(True)


DESIGNS = (Design(
    "serving_design", best_design12, judge_design12,
    form="a list [GPUs, batch cap, chunk, k], e.g. [8, 256, 512, 0]", length=4,
    examples=(
        Example("a slice too small", lambda v: [1, 256, 0, 0], "do not fit"),
        Example("twice the chips", lambda v: [best_design12(v)[0] * 2, *best_design12(v)[1:]]
                if best_design12(v)[0] < 8 else [1, 256, 0, 0], "H100"),
    )),)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS`, and: the weights fit with room for P5's reserved
    batch of at least 4 and P10's batch; P5's longest sequence is at least a block longer than
    its mean one (drawn apart, a quarter of the draws had a maximum below the mean, and at
    2,048 against 2,046 the paged and reserved batches met); P3's prefill and P8's largest
    chunk are nonzero and below the prompt; P6's prompt ends in a partial block; P9's best k is not 1 or 16 (the
    optimum is interior); P11's target needs more than one replica; P12 has a design on 2 or
    more chips (it needs the search)."""
    if v["kv_cap"] < 4 * v["q5_max"] or v["kv_cap"] < v["q10_B"] * v["q10_S"]:
        return False
    if v["q5_max"] < v["q5_mean"] + BLOCK:
        return False
    if v["q6_T"] % BLOCK == 0:
        return False
    chunk = _chunk8(v)
    if not 64 <= chunk < v["q8_T"]:
        return False
    if not 2 <= best_k9(v) <= 12 or _rep11(v) < 2:
        return False
    if v["q11_rate"] % v["q11_replica"] == 0:
        return False
    try:
        if best_design12(v)[0] < 2:
            return False
    except ValueError:
        return False
    return parts_well_posed(PARTS + DESIGNS, v)


SPEC = VariantSpec(
    assignment="hw8-serving-systems",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "t_tok": ("t_tok", "s per query token (weight matmuls)"),
        "t_w": ("t_w", "s to read the bf16 weights"),
        "t_pair": ("t_pair", "s per (query, cached token) pair"),
        "t_kv": ("t_kv", "s per cached token read"),
        "kv_tok": ("kv_tok", "bytes of cache per token"),
        "kv_cap": ("kv_cap", "cache tokens that fit"),
        "t_w4": ("t_w4", "s to read the int4 weights"),
    },
)

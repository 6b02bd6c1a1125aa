"""Practice problems of the chapter book/sharded-matmuls.md (see :mod:`scalebook.practice.problem`):
its twelve worked problems again, each with its inputs drawn anew.

Times are asked in µs (ms for the cross-node AllReduce of problem 10) and sizes in MB (10⁶ bytes),
as the chapter prints them; an answer in MiB is accepted (it is 4.9% smaller, within the
tolerance). Collective times are the chapter's exact ring model: bandwidth term with its
(N − 1)/N factor plus hops × 1 µs of latency (``scalebook.collectives``); the first cut (no
(N − 1)/N factor, the larger of the two terms) is accepted wherever a check could tell them apart.
"""

from __future__ import annotations

from ..homework.alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from ..collectives import (DEFAULT_HOP_LATENCY, all_gather, all_gather_first_cut, all_reduce,
                           all_reduce_first_cut, all_to_all, all_to_all_first_cut,
                           collective_cost, has_wraparound, ppermute)
from ..hardware import get_chip
from ..homework.parts import Convention, Part, Slip, distinct_from, merged
from ..sharding import Mesh, bytes_per_device, plan_matmul, total_bytes
from ..units import format_bytes, format_count, format_seconds
from ..variants import Choice
from .common import MB, US, draws, in_mib, one_byte_slip
from .problem import Problem, one_answer, problem







def _bf16_bytes(v: Mapping[str, Any]) -> float:
    return 2.0 * v["rows"] * v["cols"]


#: The array of the chapter's running example, bf16[8192, 8192], and the others drawn with it.
ARRAY: dict[str, Any] = {"rows": Choice((8192, 4096, 16384), "rows"),
         "cols": Choice((8192, 16384, 32768), "columns")}


def _shape_text() -> str:
    return "bf16[{rows:,}, {cols:,}]"


# --------------------------------------------------------------------------- 1. memory

def _w1_mesh(v):
    return Mesh({"X": v["X"], "Y": v["Y"], "Z": v["Z"]})


def _w1_per_chip_mb(v):
    return bytes_per_device((v["rows"], v["cols"]), "bf16", "W[D_X, F_Y]", _w1_mesh(v)) / MB


def _w1_total_mb(v):
    return total_bytes((v["rows"], v["cols"]), "bf16", "W[D_X, F_Y]", _w1_mesh(v)) / MB


def _w1_solution(v):
    per = _w1_per_chip_mb(v) * MB
    return (
        f"The array holds 2 × {v['rows']:,} × {v['cols']:,} = {format_bytes(_bf16_bytes(v), binary=False)}.",
        f"W[D_X, F_Y] splits D over X = {v['X']} and F over Y = {v['Y']}: each chip holds "
        f"{v['rows'] // v['X']:,} × {v['cols'] // v['Y']:,} elements, {format_bytes(per, binary=False)}.",
        f"Nothing splits over Z = {v['Z']}, so the mesh holds {v['Z']} copies: "
        f"{format_bytes(_w1_total_mb(v) * MB, binary=False)} in all.",
    )


W1 = problem(
    "sharded_matmuls.w1", "Where the bytes go",
    draws(rows=Choice((16384, 8192, 32768), "D"),
           cols=Choice((65536, 16384, 32768), "F"),
           X=Choice((4, 2, 8), "X"),
           Y=Choice((8, 4, 16), "Y"),
           Z=Choice((2, 4, 8), "Z")),
    ("A weight " + _shape_text() + " is stored as W[D_X, F_Y] on Mesh({{'X': {X}, 'Y': {Y}, "
     "'Z': {Z}}}) of TPU v5p chips. How many MB (10⁶ bytes) does each chip hold, and how many "
     "does the whole mesh hold?"),
    (Part("per_chip_mb", _w1_per_chip_mb, conventions=(in_mib(_w1_per_chip_mb),), slips=(
         *merged(one_byte_slip(lambda v: _w1_per_chip_mb(v) / 2),
                 Slip("split over Z too", lambda v: _w1_per_chip_mb(v) / v["Z"],
                      "W[D_X, F_Y] splits nothing over Z: the {Z} chips along Z hold the same "
                      "shard."),
                 "bf16 takes 2 bytes per element, and W[D_X, F_Y] splits nothing over Z."),
         Slip("split over X only", lambda v: _w1_per_chip_mb(v) * v["Y"],
              "F is split over Y as well: each chip keeps F / {Y} of the columns."),
     ), unit="bytes"),
     "bytes per chip, in MB"),
    (Part("mesh_mb", _w1_total_mb, conventions=(in_mib(_w1_total_mb),), slips=merged(
         Slip("one copy", lambda v: _w1_total_mb(v) / v["Z"],
              "nothing splits over Z, so the mesh stores {Z} copies of the array."),
         one_byte_slip(lambda v: _w1_total_mb(v) / 2),
         "bf16 takes 2 bytes per element, and nothing splits over Z, so the mesh stores {Z} "
         "copies of the array."), unit="bytes"),
     "bytes on the whole mesh, in MB"),
    solution=_w1_solution, worked="1")


# --------------------------------------------------------------------------- 2. AllGather on v5p

def _ag(v, **kw):
    return all_gather(_bf16_bytes(v), v["N"], "TPU v5p", **kw)


def _ag_us(v):
    return _ag(v).time / US


def _w2_solution(v):
    cost = _ag(v)
    link = get_chip("TPU v5p").link_bandwidth_one_way
    return (
        f"V = {format_bytes(_bf16_bytes(v), binary=False)}; each chip receives V·(N−1)/N.",
        f"With wraparound the shards travel both ways round the ring: bandwidth term "
        f"V·(N−1)/N / (2 × {link / 1e9:.3g} GB/s) = {format_seconds(cost.bandwidth_time)}.",
        f"Latency: {v['N'] // 2} hops × 1 µs = {format_seconds(cost.latency_time)}.",
        f"Total {format_seconds(cost.time)}: {cost.regime}.",
    )


def _first_cut_us(cost_of):
    """The first cut of a collective (no (N − 1)/N, max of the two terms), in µs: an accepted
    convention."""
    return lambda v: cost_of(v).time / US


W2 = one_answer(
    "sharded_matmuls.w2", "Gathering a weight on a v5p",
    draws(**ARRAY,
           N=Choice((16, 4, 8, 12), "N", "chips")),
    ("How long does an AllGather of a " + _shape_text() + " weight take over one axis of {N} "
     "TPU v5p chips with wraparound, in µs? (The chapter's model: a bandwidth term and 1 µs "
     "per hop.)"),
    Part("allgather_us", _ag_us, conventions=(
        Convention("first cut", _first_cut_us(
            lambda v: all_gather_first_cut(_bf16_bytes(v), v["N"], "TPU v5p"))),
    ), slips=(
        Slip("one way round", distinct_from(_ag_us, lambda v: _ag(v, wraparound=False).time / US),
             "the axis has wraparound: the shards go both ways round the ring, so each chip "
             "receives on two links, and the latency is N/2 hops, not N − 1."),
        one_byte_slip(lambda v: all_gather(_bf16_bytes(v) / 2, v["N"], "TPU v5p").time / US),
    ), unit="s", not_applicable=(
    ONE_PASS,)),
    label="AllGather time, in µs", solution=_w2_solution, worked="2")


# --------------------------------------------------------------------------- 3. latency crossover

def _crossover_bytes(cost_of) -> float:
    unit = cost_of(1.0)
    return unit.latency_time / unit.bandwidth_time


def _w3_mb(v):
    return _crossover_bytes(lambda V: all_gather(V, v["N"], v["chip"])) / MB


def _w3_solution(v):
    chip = get_chip(v["chip"])
    n = v["N"]
    return (
        f"Bandwidth term V·(N−1)/N / (2W) with W = {chip.link_bandwidth_one_way / 1e9:.3g} GB/s one "
        f"way; latency (N/2) × 1 µs = {n // 2} µs.",
        f"They are equal at V* = (N/2)·α·2W·N/(N−1) = {format_bytes(_w3_mb(v) * MB, binary=False)}.",
        f"Each chip's shard is then V*/N = {format_bytes(_w3_mb(v) * MB / n, binary=False)}.",
    )


W3 = one_answer(
    "sharded_matmuls.w3", "When does latency take over?",
    draws(chip=Choice(("TPU v5p", "TPU v4p"), "chip"),
           N=Choice((16, 8, 12, 4), "N", "chips")),
    ("An AllGather runs over one axis of {N} {chip} chips with wraparound (1 µs per hop). "
     "Below what array size, in MB, is it latency-bound (its latency term larger than its "
     "bandwidth term)?"),
    Part("vstar_mb", _w3_mb, conventions=(
        in_mib(_w3_mb),
        Convention("first cut", lambda v: v["N"] // 2 * DEFAULT_HOP_LATENCY
                   * 2 * get_chip(v["chip"]).link_bandwidth_one_way / MB),
    ), slips=(
        Slip("one-way bandwidth", lambda v: _w3_mb(v) / 2,
             "with wraparound each chip receives on two links at once: the bandwidth term "
             "divides by 2W, which doubles the crossover."),
        Slip("N − 1 hops", lambda v: _w3_mb(v) * (v["N"] - 1) / (v["N"] // 2),
             "a bidirectional ring needs N/2 hops, not N − 1: the farthest shard is half-way "
             "round."),
    ), unit="bytes"),
    label="crossover array size V*, in MB", solution=_w3_solution, worked="3")


# --------------------------------------------------------------------------- 4. ring against line

def _w4_ring_us(v):
    return all_gather(_bf16_bytes(v), 16, v["chip"], wraparound=True).time / US


def _w4_line_us(v):
    return all_gather(_bf16_bytes(v), v["n_line"], v["chip"], wraparound=False).time / US


def _w4_solution(v):
    return (
        f"On a {v['chip']} only the full 16-chip axis has wraparound "
        f"({has_wraparound(v['chip'], 16)}); an axis of {v['n_line']} is a line "
        f"({has_wraparound(v['chip'], v['n_line'])}).",
        f"Ring of 16: V·(15/16) / (2W) + 8 hops = {format_seconds(_w4_ring_us(v) * US)}.",
        f"Line of {v['n_line']}: V·({v['n_line'] - 1}/{v['n_line']}) / W + {v['n_line'] - 1} hops = "
        f"{format_seconds(_w4_line_us(v) * US)}: the ring with more chips is faster.",
    )


W4 = problem(
    "sharded_matmuls.w4", "A ring against a line",
    draws(chip=Choice(("TPU v5e", "TPU v6e"), "chip"),
           **ARRAY,
           n_line=Choice((8, 4, 12), "chips on the short axis")),
    ("On a {chip} slice, AllGather a " + _shape_text() + " array over an axis of 16 chips and "
     "over an axis of {n_line} chips (1 µs per hop). How long does each take, in µs? (Which "
     "axes have wraparound is the chip's, as the chapter gives it.)"),
    (Part("ring_us", _w4_ring_us, slips=(
         Slip("ring as a line", lambda v: all_gather(_bf16_bytes(v), 16, v["chip"],
                                                     wraparound=False).time / US,
              "the full 16-chip axis of a {chip} has wraparound: data flows both ways round."),
     ), unit="s"),
     "AllGather over 16 chips, in µs"),
    (Part("line_us", _w4_line_us, slips=(
         Slip("line as a ring", lambda v: all_gather(_bf16_bytes(v), v["n_line"], v["chip"],
                                                     wraparound=True).time / US,
              "an axis of {n_line} {chip} chips has no wraparound link: it is a line, so data "
              "streams one way past the end chips and the bandwidth term is V·(N−1)/N / W."),
     ), unit="s"),
     "AllGather over the short axis, in µs"),
    solution=_w4_solution, worked="4")


# --------------------------------------------------------------------------- 5. AllReduce, AllToAll

def _w5_ar_us(v):
    return all_reduce(_bf16_bytes(v), v["N"], "TPU v5p").time / US


def _w5_a2a_us(v):
    return all_to_all(_bf16_bytes(v), v["N"], "TPU v5p").time / US


def _w5_solution(v):
    ag = all_gather(_bf16_bytes(v), v["N"], "TPU v5p")
    return (
        f"AllGather of V = {format_bytes(_bf16_bytes(v), binary=False)}: {format_seconds(ag.time)}.",
        f"AllReduce = ReduceScatter + AllGather, twice that: {format_seconds(_w5_ar_us(v) * US)}.",
        f"AllToAll: each block goes to one chip only, a quarter of the way round on average: "
        f"V / (8W) + {v['N'] // 2} hops = {format_seconds(_w5_a2a_us(v) * US)}.",
    )


W5 = problem(
    "sharded_matmuls.w5", "AllReduce and AllToAll",
    draws(**ARRAY,
           N=Choice((16, 8, 12), "N", "chips")),
    ("On an axis of {N} TPU v5p chips with wraparound (1 µs per hop), how long do an AllReduce "
     "and an AllToAll of a " + _shape_text() + " array take, in µs?"),
    (Part("allreduce_us", _w5_ar_us, conventions=(
         Convention("first cut", lambda v: all_reduce_first_cut(
             _bf16_bytes(v), v["N"], "TPU v5p").time / US),
     ), slips=(
         Slip("AllGather only", lambda v: all_gather(_bf16_bytes(v), v["N"], "TPU v5p").time / US,
              "an AllReduce is a ReduceScatter followed by an AllGather: twice an AllGather."),
     ), unit="s"),
     "AllReduce time, in µs"),
    (Part("alltoall_us", _w5_a2a_us, conventions=(
         Convention("first cut", lambda v: all_to_all_first_cut(
             _bf16_bytes(v), v["N"], "TPU v5p").time / US),
     ), slips=(
         Slip("as an AllGather", lambda v: all_gather(_bf16_bytes(v), v["N"], "TPU v5p").time / US,
              "in an AllToAll each block goes to one chip only, on average a quarter of the way "
              "round: about a quarter of an AllGather's bandwidth time."),
     ), unit="s", not_applicable=(
     ONE_PASS,)),
     "AllToAll time, in µs"),
    solution=_w5_solution, worked="5")


# --------------------------------------------------------------------------- 6. two axes

def _w6_plan(v, how):
    return plan_matmul("A[B, D_XY]", "W[D_XY, F]", Mesh({"X": v["X"], "Y": v["Y"]}),
                       contracting="D", shapes={"B": v["B"], "D": v["D"], "F": v["F"]},
                       chip="TPU v5p", reduce=how, wraparound="auto")


def _w6_partial_mb(v):
    return _w6_plan(v, "all_reduce").collectives[0].nbytes / MB


def _w6_ar_us(v):
    return _w6_plan(v, "all_reduce").comms_time / US


def _w6_rs_us(v):
    return _w6_plan(v, "reduce_scatter").comms_time / US


def _w6_solution(v):
    n = v["X"] * v["Y"]
    return (
        f"Both operands split D over XY: case 3, each chip computes a partial C[B, F] of "
        f"2 × {v['B']:,} × {v['F']:,} bytes = {format_bytes(_w6_partial_mb(v) * MB, binary=False)}.",
        f"Reduced over both axes at once (each axis's links carry its share): AllReduce "
        f"{format_seconds(_w6_ar_us(v) * US)}, ReduceScatter {format_seconds(_w6_rs_us(v) * US)}.",
        f"The local matmul, 2·B·(D/{n})·F FLOPs, takes "
        f"{format_seconds(_w6_plan(v, 'all_reduce').compute_time)}.",
    )


W6 = problem(
    "sharded_matmuls.w6", "Reduce over two axes",
    draws(X=Choice((4, 8), "X"),
           Y=Choice((4, 8), "Y"),
           B=Choice((8192, 4096, 16384), "B"),
           D=Choice((16384, 8192, 32768), "D"),
           F=Choice((8192, 4096, 16384), "F")),
    ("On a {X} × {Y} block of TPU v5p chips, Mesh({{'X': {X}, 'Y': {Y}}}), a block "
     "smaller than a 4×4×4 cube, so its axes have no wraparound links, compute "
     "A[B, D_XY] ·_D W[D_XY, F] with B = {B:,}, D = {D:,}, F = {F:,} in bf16. How big is each "
     "chip's partial sum, in MB, and how long does reducing the partial sums take with an "
     "AllReduce and with a ReduceScatter, in µs?"),
    (Part("partial_mb", _w6_partial_mb, conventions=(in_mib(_w6_partial_mb),), slips=(
         Slip("a shard, not a partial sum", lambda v: _w6_partial_mb(v) / (v["X"] * v["Y"]),
              "each chip's partial sum is a whole C[B, F]: the contraction over its slice of D "
              "leaves every output element, only unreduced."),
     ), unit="bytes"),
     "partial sum per chip, in MB"),
    (Part("allreduce_us", _w6_ar_us, slips=(
         Slip("one line of XY chips", lambda v: all_reduce(
             _w6_partial_mb(v) * MB, v["X"] * v["Y"], "TPU v5p", wraparound=False).time / US,
              "the reduction runs over both mesh axes, each with its own links: the two axes' "
              "bandwidth adds up, unlike a single line of X·Y chips."),
         Slip("with wraparound", lambda v: collective_cost(
             "AllReduce", _w6_partial_mb(v) * MB, [v["X"], v["Y"]], "TPU v5p",
             wraparound=True).time / US,
              "a block smaller than a 4×4×4 cube has no wraparound links: each axis is a line, "
              "W per axis, not a ring's 2·W."),
     ), unit="s"),
     "AllReduce, in µs"),
    (Part("reducescatter_us", _w6_rs_us, slips=(
         Slip("AllReduce time", _w6_ar_us,
              "a ReduceScatter is half an AllReduce: it stops once each chip holds its reduced "
              "slice."),
     ), unit="s"),
     "ReduceScatter, in µs"),
    solution=_w6_solution, worked="6")


# --------------------------------------------------------------------------- 7. which operand

def _comms(plan) -> float:
    """A plan's communication time, in s (every plan here is given its shapes and chip)."""
    if plan.comms_time is None:
        raise ValueError("the plan has no chip or shapes to time")
    return plan.comms_time


def _w7_plans(v):
    mesh = Mesh({"X": v["N"]})
    shapes = {"B": v["B"], "D": v["D"], "F": v["F"]}
    return {side: plan_matmul("A[B_X, D]", "W[D, F_X]", mesh, contracting="D", shapes=shapes,
                              chip="TPU v5e", gather=side, wraparound=False)
            for side in ("lhs", "rhs")}


def _w7_best_us(v):
    return min(_comms(p) for p in _w7_plans(v).values()) / US


def _w7_worst_us(v):
    return max(_comms(p) for p in _w7_plans(v).values()) / US


def _w7_solution(v):
    plans = _w7_plans(v)
    a, w = plans["lhs"], plans["rhs"]
    cheaper = "A" if a.comms_time <= w.comms_time else "W"
    return (
        "Case 4: both operands split a free dimension over X, so one must be gathered.",
        f"Gathering A moves {format_bytes(a.collectives[0].nbytes, binary=False)} "
        f"({format_seconds(a.comms_time)}); gathering W moves "
        f"{format_bytes(w.collectives[0].nbytes, binary=False)} ({format_seconds(w.comms_time)}).",
        f"Gather {cheaper}: {format_seconds(_w7_best_us(v) * US)} on the line of {v['N']} chips.",
    )


W7 = one_answer(
    "sharded_matmuls.w7", "Which operand to gather",
    draws(N=Choice((8, 4), "N", "chips"),
           B=Choice((2048, 512, 1024, 8192, 16384, 65536), "B"),
           D=Choice((8192, 4096, 16384), "D"),
           F=Choice((32768, 8192, 16384), "F")),
    ("A[B_X, D] ·_D W[D, F_X] runs on {N} TPU v5e chips in a line (no wraparound, 1 µs per "
     "hop), B = {B:,}, D = {D:,}, F = {F:,}, bf16. Gathering the cheaper operand, how long "
     "does the gather take, in µs?"),
    Part("gather_us", _w7_best_us, slips=(
        Slip("the other operand", distinct_from(_w7_best_us, _w7_worst_us),
             "gathering the other operand moves more bytes: compare B·D (A) with D·F (W)."),
        Slip("as a ring", lambda v: min(
            _comms(plan_matmul("A[B_X, D]", "W[D, F_X]", Mesh({"X": v["N"]}), contracting="D",
                               shapes={"B": v["B"], "D": v["D"], "F": v["F"]},
                               chip="TPU v5e", gather=side, wraparound=True))
            for side in ("lhs", "rhs")) / US,
             "the chips are in a line: data streams one way past the end chips, V·(N−1)/N / W."),
    ), unit="s", not_applicable=(
    ONE_PASS,)),
    label="time of the cheaper gather, in µs", solution=_w7_solution, worked="7")


# --------------------------------------------------------------------------- 8. D threshold

def _w8_plan(v, d, how="reduce_scatter"):
    return plan_matmul("A[B, D_X]", "W[D_X, F]", Mesh({"X": 16}), contracting="D",
                       shapes={"B": v["B"], "D": d, "F": v["F"]}, chip=v["chip"], reduce=how,
                       wraparound="auto")


def _w8_d_star(v, how="reduce_scatter"):
    probe_d = 16 * 1024
    probe = _w8_plan(v, probe_d, how)
    return probe_d * probe.comms_time / probe.compute_time


def _w8_solution(v):
    chip = get_chip(v["chip"])
    d = _w8_d_star(v)
    return (
        "T_math = 2·B·(D/N)·F / C; T_comms = ReduceScatter of the partial C[B, F]: "
        "2·B·F·(N−1)/N / (2W) plus 8 hops. B and F cancel, except in the small latency term.",
        f"With C = {chip.flops('bf16'):.3g} FLOPs/s and W = {chip.link_bandwidth_one_way / 1e9:.3g} "
        f"GB/s one way: D > {format_count(d)} ({format_count(d / 16)} per chip).",
    )


W8 = one_answer(
    "sharded_matmuls.w8", "A D-sharded matmul on a TPU",
    draws(chip=Choice(("TPU v5e", "TPU v6e"), "chip"),
           B=Choice((4096, 2048, 8192), "B"),
           F=Choice((32768, 16384, 65536), "F")),
    ("A[B, D_X] ·_D W[D_X, F] runs over 16 {chip} chips with wraparound, B = {B:,}, F = {F:,}, "
     "bf16, and the partial sums are ReduceScattered. How large must the whole D be for the "
     "matmul to be compute-bound (T_math ≥ T_comms)?"),
    Part("d_star", _w8_d_star, slips=(
        Slip("AllReduce", lambda v: _w8_d_star(v, "all_reduce"),
             "the partial sums are ReduceScattered, not AllReduced: half the traffic."),
        Slip("per chip", lambda v: _w8_d_star(v) / 16,
             "that is D per chip; the question asks for the whole D, 16 times larger."),
    ), unit="count"),
    label="smallest compute-bound D", solution=_w8_solution, worked="8")


# --------------------------------------------------------------------------- 9. tokens per chip

#: The machines of problem 9: (chip, chips); a v5p axis with wraparound, an H100 node, H100 nodes.
W9_MACHINES = {"16 TPU v5p chips on one axis": ("TPU v5p", 16),
               "8 TPU v5p chips on one axis": ("TPU v5p", 8),
               "one node of 8 H100s": ("H100", 8),
               "32 H100s in 4 nodes": ("H100", 32),
               "16 H100s in 2 nodes": ("H100", 16)}


def _w9_plan(v):
    chip, n = W9_MACHINES[v["machine"]]
    return plan_matmul("A[B_X, D]", "W[D_X, F]", Mesh({"X": n}), contracting="D",
                       shapes={"B": 1024 * n, "D": v["D"], "F": v["F"]}, chip=chip,
                       wraparound="auto")


def _w9_tokens(v):
    plan = _w9_plan(v)
    return 1024 * plan.comms_time / plan.compute_time


def _w9_solution(v):
    plan = _w9_plan(v)
    return (
        "T_comms: the AllGather of W (2·D·F bytes), the same whatever the batch; T_math = "
        "2·T·D·F / C for T tokens per chip.",
        f"At 1,024 tokens per chip: T_math = {format_seconds(plan.compute_time)}, T_comms = "
        f"{format_seconds(plan.comms_time)}.",
        f"So T ≥ 1,024 × T_comms / T_math = {format_count(_w9_tokens(v))} tokens per chip.",
    )


W9 = one_answer(
    "sharded_matmuls.w9", "Tokens per chip for a weight gather",
    draws(machine=Choice(tuple(W9_MACHINES), "machine"),
           D=Choice((8192, 4096, 16384), "D"),
           F=Choice((32768, 16384, 65536), "F")),
    ("A weight W bf16[{D:,}, {F:,}] is sharded FSDP-style and gathered before each matmul, "
     "A[B_X, D] ·_D W[D_X, F], on {machine}. How many tokens per chip make the gather no slower "
     "than the arithmetic?"),
    Part("tokens", _w9_tokens, slips=(
        Slip("the whole batch", lambda v: _w9_tokens(v) * W9_MACHINES[v["machine"]][1],
             "that is the batch of all the chips together; the question asks for tokens per "
             "chip."),
    ), unit="count"),
    label="tokens per chip", solution=_w9_solution, worked="9")


# --------------------------------------------------------------------------- 10. across nodes

def _w10_ms(v, scheme):
    n = 8 * v["nodes"]
    nbytes = v["V_gb"] * 1e9
    cost = (collective_cost("AllReduce", nbytes, n, "H100") if scheme == "rail" else
            collective_cost("AllReduce", nbytes, n, "H100", scheme=scheme))
    return cost.time * 1e3


def _w10_solution(v):
    return (
        f"Flat ring over {8 * v['nodes']} GPUs, paced by one NIC: {_w10_ms(v, 'flat'):.3g} ms.",
        f"Hierarchical: ReduceScatter in the node, AllReduce of the 1/8 slices across nodes, "
        f"AllGather in the node: {_w10_ms(v, 'hierarchical'):.3g} ms.",
        f"Rail-aligned rings (each NIC carries an eighth while NVLink carries the rest): "
        f"{_w10_ms(v, 'rail'):.3g} ms.",
    )


def _w10_part(name, scheme, others):
    return Part(name, lambda v: _w10_ms(v, scheme), slips=tuple(
        Slip(f"the {other} time", distinct_from(lambda v: _w10_ms(v, scheme),
                                                 lambda v, o=other: _w10_ms(v, o)),
             f"that is the {other} scheme's time; this field asks for the {scheme} one.")
        for other in others), unit="s")


W10 = problem(
    "sharded_matmuls.w10", "An AllReduce across nodes, three ways",
    draws(V_gb=Choice((1.0, 0.5, 2.0, 4.0), "V", "GB"),
           nodes=Choice((4, 2, 8, 16), "nodes")),
    ("Reduce {V_gb:g} GB of bf16 gradients over {nodes} nodes of 8 H100s. How long does it "
     "take, in ms, as one flat ring, as the staged hierarchical scheme, and as NCCL's "
     "rail-aligned rings (the chapter's models)?"),
    (_w10_part("flat_ms", "flat", ("hierarchical", "rail")),
     "flat ring, in ms"),
    (_w10_part("hierarchical_ms", "hierarchical", ("flat", "rail")),
     "hierarchical, in ms"),
    (_w10_part("rail_ms", "rail", ("flat", "hierarchical")),
     "rail-aligned rings, in ms"),
    solution=_w10_solution, worked="10")


# --------------------------------------------------------------------------- 11. collective matmul

def _w11_step_us(v):
    return ppermute(_bf16_bytes(v) / v["N"], "TPU v5p", n_devices=v["N"]).time / US


def _w11_solution(v):
    shard = _bf16_bytes(v) / v["N"]
    return (
        f"One shard is V/N = {format_bytes(shard, binary=False)}, sent over one link one way "
        f"(1 hop): {format_seconds(_w11_step_us(v) * US)}.",
        f"{v['N'] - 1} steps one after another: {format_seconds((v['N'] - 1) * _w11_step_us(v) * US)}.",
    )


W11 = problem(
    "sharded_matmuls.w11", "One step of a collective matmul",
    draws(**ARRAY,
           N=Choice((16, 8, 12), "N", "chips")),
    ("The AllGather of a " + _shape_text() + " array over {N} TPU v5p chips on a ring is split "
     "into ppermutes of one shard (V/N) so that it overlaps the matmul. How long does one step "
     "take, in µs (one link, one way, 1 µs per hop), and how long do the {N} − 1 steps take "
     "one after another?"),
    (Part("step_us", _w11_step_us, slips=(
         Slip("both directions", lambda v: ppermute(_bf16_bytes(v) / v["N"] / 2, "TPU v5p",
                                                    n_devices=v["N"]).time / US,
              "a ppermute step sends the shard to one neighbour, over one link in one direction."),
         Slip("the whole array", lambda v: ppermute(_bf16_bytes(v), "TPU v5p",
                                                    n_devices=v["N"]).time / US,
              "each step moves one shard, V/N, not the whole array."),
     ), unit="s", not_applicable=(
     ONE_PASS,)),
     "one step, in µs"),
    (Part("steps_us", lambda v: (v["N"] - 1) * _w11_step_us(v), slips=(
         Slip("N steps", lambda v: v["N"] * _w11_step_us(v),
              "a chip already holds its own shard: N − 1 steps bring the others."),
     ), rel=0.05, unit="s", not_applicable=(
     ONE_PASS,)),
     "all steps in sequence, in µs"),
    solution=_w11_solution, worked="11")


# --------------------------------------------------------------------------- 12. decode AllReduce

def _w12_cost(v):
    return all_reduce(2.0 * v["seqs"] * v["d"], v["N"], v["chip"])


def _w12_us(v):
    return _w12_cost(v).time / US


def _w12_solution(v):
    cost = _w12_cost(v)
    return (
        f"V = 2 × {v['seqs']} × {v['d']:,} = {format_bytes(2.0 * v['seqs'] * v['d'], binary=False)}.",
        f"Bandwidth term {format_seconds(cost.bandwidth_time)}; latency 2 × {v['N'] // 2} hops × "
        f"1 µs = {format_seconds(cost.latency_time)}.",
        f"Total {format_seconds(cost.time)}: {cost.regime}.",
    )


W12 = one_answer(
    "sharded_matmuls.w12", "A decode-sized AllReduce",
    draws(seqs=Choice((8, 4, 16, 32), "sequences"),
           d=Choice((8192, 4096, 16384), "d_model"),
           chip=Choice(("TPU v5e", "TPU v6e"), "chip"),
           N=Choice((16,), "N", "chips")),
    ("During decoding with {seqs} sequences, a tensor-parallel layer AllReduces a bf16[{seqs}, "
     "{d:,}] activation over {N} {chip} chips with wraparound (1 µs per hop). How long does it "
     "take, in µs?"),
    Part("allreduce_us", _w12_us, slips=(
        Slip("no latency", lambda v: _w12_cost(v).bandwidth_time / US,
             "at this size the latency dominates: an AllReduce is 2 × N/2 hops of about 1 µs "
             "each, more than the bandwidth term."),
        Slip("one pass", lambda v: _w12_us(v) / 2,
             "an AllReduce is a ReduceScatter then an AllGather: two passes round the ring, "
             "each with N/2 hops."),
    ), unit="s"),
    label="AllReduce time, in µs", solution=_w12_solution, worked="12")


PROBLEMS: tuple[Problem, ...] = (W1, W2, W3, W4, W5, W6, W7, W8, W9, W10, W11, W12)


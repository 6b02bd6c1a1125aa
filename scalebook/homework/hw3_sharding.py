"""hw3-sharding: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1, where the bytes live: the mesh's three axis sizes X, Y, Z, the dtype of the two arrays
  (bf16 or f32) and the shapes B, D, F. The shardings stay ``A[B_XZ, D_Y]`` and
  ``W[D_X, F_Y]``: W's unused axis Z is what (b) and (c) are about, and (a)'s B_XZ is the
  two-axis split the hints explain.
- P2, which collective: the mesh's X and Y and the matmul's I, J, K (I < K in every draw, so A
  is always the smaller operand that (d) gathers). The four pairs of shardings stay: each part
  is one of the chapter's four cases, in the chapter's order, and the sharding strings are the
  question, not an input to it.
- P3, collectives on a wrapped TPU axis: the chip (v5p or v4p, whose axes wrap at every
  multiple of 4), the ring's N (16, 8 or 4), the array's shape, and the a × b block of (d)
  (both multiples of 4, so both axes are rings). Well posed: see :func:`well_posed`.
- P4, ring or line: the chip (v5e or v6e: both 2D, 16 × 16 at most, with wraparound only on a
  full 16-chip axis), the length L of (a)'s line (8 or 4: the slice shapes 8 × 16 and 4 × 16)
  and the array's shape. (b)'s ring stays the full 16-chip axis, a fact of these chips (the
  answer is named ``t_ar_ring16``); (a)'s answer, ``t_ag_line8`` in the book, is ``t_ag_line``
  now that L varies.
- P5, when latency wins: (a)'s message shape and axis length on problem 3's chip; (b) asks for
  the crossover size on problem 3's ring (the text says so).
- P6, GPUs: the GPU (H100, B200, A100: different NVLink link counts and rates, from the
  catalog), the gradients' size and the nodes of (b). A node stays 8 GPUs with one NIC each at
  5e10 bytes/s, facts of the catalog's nodes.
- P7, compute against communication: the TPU of (a) and (b) (v5p or v4p) and each part's N,
  the TPU of (c) (v5e or v6e) and (c)'s B, D, F. (a)'s D and F and (b)'s B and F stay: they
  cancel out of the answers, so varying them would change nothing a student computes. (c)'s
  axis stays 16 chips, the only ring a v5e or v6e axis can be.
- P8, sharding a matmul in JAX: the mesh (2 × 4 or 4 × 2, the 8 simulated devices either way)
  and the shapes B, D, F. The arrays stay f32: the check compares the sharded product with
  NumPy's within 1e-4, which bf16's rounding would not meet. The answer specs are the same for
  every mesh and shape; only the byte counts vary. Every choice was compiled on the simulated
  devices: (a)'s layout needs no collective, (b)'s exactly one AllReduce over Y of the
  f32[B/X, F] block, and the two slips the sample submissions make (W split on D in (a), on F
  in (b)) each compile to an AllGather.

The latency per hop (1 µs) and the bytes per bf16 element (2) are the course's conventions,
the same for everyone.
"""

from __future__ import annotations

from .alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from ..collectives import (all_gather, all_gather_multi_axis, all_reduce, all_to_all,
                           gpu_all_gather, gpu_all_reduce, gpu_hierarchical_all_reduce,
                           has_wraparound)
from ..hardware import bytes_per_element, get_chip
from ..sharding import Mesh, bytes_per_device, plan_matmul, total_bytes
from ..topology import gpu_node
from ..variants import Choice, VariantSpec
from .parts import NotApplicable
from .parts import ACCEPTED, PINNED, Convention, Part, Slip, distinct_from, merged
from .parts import well_posed as parts_well_posed

#: Seconds per ICI hop or GPU ring step (the same for every student).
HOP_LATENCY = 1e-6
#: Problem 4 (b)'s and problem 7 (c)'s ring: a full 16-chip axis of a v5e or v6e.
FULL_AXIS = 16
#: Problem 8's simulated devices.
DEVICES = 8

PARAMETERS = {
    "q1_X": Choice((4, 2, 8), "X"),
    "q1_Y": Choice((8, 4, 16), "Y"),
    "q1_Z": Choice((2, 4), "Z"),
    "q1_dtype": Choice(("bf16", "f32"), "dtype"),
    "q1_B": Choice((8192, 4096, 16384), "B", fmt="{:,}"),
    "q1_D": Choice((4096, 2048, 8192), "D", fmt="{:,}"),
    "q1_F": Choice((16384, 8192, 32768), "F", fmt="{:,}"),
    "q2_X": Choice((4, 2, 8), "X"),
    "q2_Y": Choice((8, 4, 16), "Y"),
    "q2_I": Choice((1024, 2048, 512), "I", fmt="{:,}"),
    "q2_J": Choice((8192, 4096, 16384), "J", fmt="{:,}"),
    "q2_K": Choice((16384, 8192, 32768), "K", fmt="{:,}"),
    "q3_chip": Choice(("TPU v5p", "TPU v4p"), "TPU"),
    "q3_N": Choice((16, 8, 4), "N", "chips"),
    "q3_rows": Choice((8192, 4096, 2048), "rows", fmt="{:,}"),
    "q3_cols": Choice((4096, 2048, 1024), "columns", fmt="{:,}"),
    "q3_bx": Choice((4, 8), "a", "chips"),
    "q3_by": Choice((4, 8), "b", "chips"),
    "q4_chip": Choice(("TPU v5e", "TPU v6e"), "TPU"),
    "q4_L": Choice((8, 4), "L", "chips"),
    "q4_rows": Choice((4096, 2048, 8192), "rows", fmt="{:,}"),
    "q4_cols": Choice((4096, 8192, 2048), "columns", fmt="{:,}"),
    "q5_B": Choice((8, 16, 4, 32), "tokens"),
    "q5_D": Choice((4096, 8192, 2048), "D", fmt="{:,}"),
    "q5_N": Choice((4, 8, 16), "N", "chips"),
    "q6_gpu": Choice(("H100", "B200", "A100"), "GPU"),
    "q6_V": Choice((2e9, 1e9, 4e9, 5e8), "V", "bytes"),
    "q6_nodes": Choice((4, 2, 8, 16), "nodes"),
    "q7_chip": Choice(("TPU v5p", "TPU v4p"), "TPU of (a), (b)"),
    "q7_Na": Choice((16, 8, 4), "N in (a)", "chips"),
    "q7_Nb": Choice((8, 16, 4), "N in (b)", "chips"),
    "q7_chip_c": Choice(("TPU v5e", "TPU v6e"), "TPU of (c)"),
    "q7_B": Choice((4096, 2048, 8192), "B", fmt="{:,}"),
    "q7_D": Choice((16384, 8192, 32768), "D", fmt="{:,}"),
    "q7_F": Choice((8192, 16384, 4096), "F", fmt="{:,}"),
    "q8_X": Choice((2, 4), "X", "devices"),
    "q8_B": Choice((16, 32, 8), "B"),
    "q8_D": Choice((32, 64, 16), "D"),
    "q8_F": Choice((64, 128, 32), "F"),
}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The figures each problem states: sizes that follow from the drawn shapes, and the
    catalog's figures for the drawn chips."""
    q3 = get_chip(p["q3_chip"])
    q4 = get_chip(p["q4_chip"])
    q6 = get_chip(p["q6_gpu"])
    node = gpu_node(q6)
    q7 = get_chip(p["q7_chip"])
    q7c = get_chip(p["q7_chip_c"])
    return {
        "q1_chips": p["q1_X"] * p["q1_Y"] * p["q1_Z"],
        "q1_dtype_bytes": int(bytes_per_element(p["q1_dtype"])),
        "q2_chips": p["q2_X"] * p["q2_Y"],
        "q2_A_bytes": p["q2_I"] * p["q2_J"] * 2,
        "q2_B_bytes": p["q2_J"] * p["q2_K"] * 2,
        "q3_W": q3.link_bandwidth_one_way,
        "q3_W2": 2 * q3.link_bandwidth_one_way,
        "q3_V": p["q3_rows"] * p["q3_cols"] * 2,
        "q3_block_chips": p["q3_bx"] * p["q3_by"],
        "q4_W": q4.link_bandwidth_one_way,
        "q4_V": p["q4_rows"] * p["q4_cols"] * 2,
        "q5_V": p["q5_B"] * p["q5_D"] * 2,
        "q6_links": q6.links_per_chip,
        "q6_link_bw": q6.link_bandwidth_one_way,
        "q6_nvlink": node.nvlink_bandwidth_per_gpu,
        "q6_nic": node.scale_out_bandwidth_per_gpu,
        "q6_gpus": node.n_gpus * p["q6_nodes"],
        "q7_C": q7.flops("bf16"),
        "q7_W": q7.link_bandwidth_one_way,
        "q7_Cc": q7c.flops("bf16"),
        "q7_W2": 2 * q7.link_bandwidth_one_way,
        "q7_Wc": q7c.link_bandwidth_one_way,
        "q8_Y": DEVICES // p["q8_X"],
    }


# --------------------------------------------------------------------------- the parts

LAT = HOP_LATENCY
_NaN = float("nan")
#: The title's conventions pin the exact ring cost; this phrase names it.
EXACT = "Keep the exact (N − 1)/N factor"
_KEEP = ("Keep the (N − 1)/N factor, as the conventions ask: each chip already holds 1/N of the "
         "array, so it takes in only the (N − 1)/N it lacks.")


def _first_cut(cost, n: int) -> float:
    """The first cut of a ring collective: the bandwidth term without (N − 1)/N, same latency."""
    return cost.bandwidth_time * n / (n - 1) + cost.latency_time


def _pinned_first_cut(cost_of, n_of) -> Convention:
    """The first cut, pinned out by the title's conventions (where a check can tell it)."""
    return Convention("first cut (drops (N-1)/N)",
                      distinct_from(lambda v: cost_of(v).time,
                                    lambda v: _first_cut(cost_of(v), n_of(v))),
                      PINNED, phrase=EXACT, hint=_KEEP, alternatives=('(N-1)/N',))


def _mesh1(v):
    return Mesh({"X": v["q1_X"], "Y": v["q1_Y"], "Z": v["q1_Z"]})


def _w_chip(v):
    return bytes_per_device((v["q1_D"], v["q1_F"]), v["q1_dtype"], "W[D_X, F_Y]", _mesh1(v))


def _w_mesh(v):
    return total_bytes((v["q1_D"], v["q1_F"]), v["q1_dtype"], "W[D_X, F_Y]", _mesh1(v))


_chip3 = lambda v: get_chip(v["q3_chip"])
_n3 = lambda v: v["q3_N"]
_ag3 = lambda v: all_gather(v["q3_V"], v["q3_N"], v["q3_chip"], hop_latency=LAT)
_ar3 = lambda v: all_reduce(v["q3_V"], v["q3_N"], v["q3_chip"], hop_latency=LAT)
_a2a3 = lambda v: all_to_all(v["q3_V"], v["q3_N"], v["q3_chip"], hop_latency=LAT)
_2d = lambda v: all_gather_multi_axis(v["q3_V"], [v["q3_bx"], v["q3_by"]], v["q3_chip"],
                                      hop_latency=LAT)
_line4 = lambda v: all_gather(v["q4_V"], v["q4_L"], v["q4_chip"], hop_latency=LAT,
                              wraparound=has_wraparound(v["q4_chip"], v["q4_L"]))
_ring4 = lambda v: all_reduce(v["q4_V"], FULL_AXIS, v["q4_chip"], hop_latency=LAT,
                              wraparound=has_wraparound(v["q4_chip"], FULL_AXIS))
_small5 = lambda v: all_reduce(v["q5_V"], v["q5_N"], v["q3_chip"], hop_latency=LAT)
_unit5 = lambda v: all_gather(1.0, v["q3_N"], v["q3_chip"], hop_latency=LAT)
_v_star = lambda v: _unit5(v).latency_time / _unit5(v).bandwidth_time
_node6 = lambda v: gpu_node(v["q6_gpu"])
_ar6 = lambda v: gpu_all_reduce(v["q6_V"], 8, v["q6_gpu"], hop_latency=LAT)
_hier6 = lambda v: gpu_hierarchical_all_reduce(v["q6_V"], v["q6_gpus"], v["q6_gpu"],
                                               hop_latency=LAT)


def _fsdp7(v) -> float:
    """(a): tokens per chip at which the AllGather of W takes as long as the matmul, exact."""
    n = v["q7_Na"]
    plan = plan_matmul("A[B_X, D]", "W[D_X, F]", Mesh({"X": n}), contracting="D",
                       shapes={"B": n * 1024, "D": 8192, "F": 32768}, chip=v["q7_chip"],
                       hop_latency=0.0)
    assert plan.comms_time is not None and plan.compute_time is not None  # a chip was given
    return 1024 * plan.comms_time / plan.compute_time   # both grow linearly: scale 1,024 tokens


def _fsdp7_first_cut(v) -> float:
    return _fsdp7(v) * v["q7_Na"] / (v["q7_Na"] - 1)


def _dstar7(v) -> float:
    n = v["q7_Nb"]
    plan = plan_matmul("A[B, D_X]", "W[D_X, F]", Mesh({"X": n}), contracting="D",
                       shapes={"B": 4096, "D": n * 1024, "F": 8192}, chip=v["q7_chip"],
                       reduce="all_reduce", hop_latency=0.0)
    return n * 1024 * plan.comms_time / plan.compute_time   # T_comms fixed, T_math ∝ D


def _plan7c(v, reduce: str):
    kw = {"scatter_dim": "F"} if reduce == "reduce_scatter" else {}
    return plan_matmul("A[B, D_X]", "W[D_X, F]", Mesh({"X": FULL_AXIS}), contracting="D",
                       shapes={"B": v["q7_B"], "D": v["q7_D"], "F": v["q7_F"]},
                       chip=v["q7_chip_c"], hop_latency=LAT, reduce=reduce, **kw)


def _serial7(v) -> float:
    plan = _plan7c(v, "reduce_scatter")
    return plan.compute_time + plan.comms_time


_NO_FACTOR = ("An AllToAll on a ring of even N has no (N − 1)/N factor: the N²/4 hop distances of "
              "its pieces give V/(8W) exactly. The factor belongs to the AllGather and the "
              "reductions.")
_LINE_4A = ("The {q4_L}-chip {q4_chip} axis has no wraparound links: it is a line, and data flows "
            "one way along it, at W = {q4_W:.3g} bytes/s, reaching its end chips from one side only.")
_ONE_WAY_7A = ("With wraparound each chip takes data in on two links: the axis bandwidth is "
               "2W = {q7_W2:.3g} bytes/s, not W.")
_FOUR_W_7A = "{q7_W:.3g} bytes/s is already one direction of one link; the ring's bandwidth is 2W, not 4W."
_GLOBAL_7A = "Give the tokens per chip, B/{q7_Na}, not the global batch B."

PARTS = (
    Part("w_bytes_per_chip", _w_chip, slips=merged(
        Slip("Z splits W", lambda v: _w_chip(v) / v["q1_Z"],
             "Z splits no dim of W, so each of the {q1_Z} slices of the mesh along Z holds a whole "
             "copy of W: one chip holds 1/(X·Y) of it, not 1/(X·Y·Z)."),
        Slip("one byte per element", lambda v: _w_chip(v) / v["q1_dtype_bytes"],
             "{q1_dtype} takes {q1_dtype_bytes} bytes per element."),
        "That is 1/{q1_Z} of the answer. Z splits no dim of W, so each of the {q1_Z} slices of "
        "the mesh along Z holds a whole copy of W (one chip holds 1/(X·Y) of it); and {q1_dtype} "
        "takes {q1_dtype_bytes} bytes per element."), unit="bytes"),
    Part("w_bytes_mesh", _w_mesh, slips=(
        Slip("no copies", lambda v: _w_mesh(v) / v["q1_Z"],
             "Count the copies: Z splits no dim of W, so the mesh holds W {q1_Z} times."),
        Slip("one chip", _w_chip, "That is one chip's share; add up all {q1_chips} chips."),
    ), unit="bytes"),
    Part("t_allgather", lambda v: _ag3(v).time, conventions=(
        _pinned_first_cut(_ag3, _n3),), slips=(
        Slip("one way", lambda v: 2 * _ag3(v).bandwidth_time + _ag3(v).latency_time,
             "With wraparound the shards travel both ways round the ring: each chip takes data "
             "in on two links, 2W."),
        Slip("4W", lambda v: _ag3(v).bandwidth_time / 2 + _ag3(v).latency_time,
             "{q3_W:.3g} bytes/s is one direction of one link; a ring uses two links' worth, 2W, "
             "not 4W (the {q3_W2:.3g} figure already adds both directions)."),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("t_allreduce", lambda v: _ar3(v).time, conventions=(
        _pinned_first_cut(_ar3, _n3),), slips=(
        Slip("one AllGather", lambda v: _ag3(v).time,
             "An AllReduce is a ReduceScatter followed by an AllGather: twice an AllGather's "
             "cost."),
        Slip("line", lambda v: all_reduce(v["q3_V"], v["q3_N"], v["q3_chip"], hop_latency=LAT,
                                          wraparound=False).time,
             "With wraparound the data travels both ways round the ring: 2W per chip, not W."),
    ), unit="s"),
    Part("t_alltoall", lambda v: _a2a3(v).time, slips=(
        Slip("AllGather", lambda v: _ag3(v).time,
             "Unlike an AllGather, each piece of an AllToAll goes to one chip only, on average a "
             "quarter of the way round the ring."),
        Slip("one direction", lambda v: 2 * _a2a3(v).bandwidth_time + _a2a3(v).latency_time,
             "Both directions of the ring carry pieces at once: 2N link directions share the "
             "byte-hops."),
    ) + merged(
        Slip("no latency", lambda v: _a2a3(v).bandwidth_time,
             "Add the latency: N/2 hops of 1 µs."),
        Slip("(N-1)/N", distinct_from(lambda v: _a2a3(v).time, lambda v: _a2a3(v).bandwidth_time
                                      * (v["q3_N"] - 1) / v["q3_N"] + _a2a3(v).latency_time),
             _NO_FACTOR, alternatives=('(N-1)/N',)),
        "Two slips give about this value: leaving out the latency (N/2 hops of 1 µs), or "
        "keeping a (N − 1)/N factor. " + _NO_FACTOR), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("t_allgather_2d", lambda v: _2d(v).time, conventions=(
        _pinned_first_cut(_2d, lambda v: v["q3_block_chips"]),), slips=(
        Slip("one axis's bandwidth",
             lambda v: all_gather(v["q3_V"], v["q3_block_chips"], v["q3_chip"], hop_latency=LAT).time,
             "Both axes' links carry data at the same time: the two axes' bandwidths add."),
        Slip("one axis a", lambda v: all_gather(v["q3_V"], v["q3_bx"], v["q3_chip"], hop_latency=LAT).time,
             "The group is all {q3_block_chips} chips: each chip must take in all but 1/{q3_block_chips} of the array."),
        Slip("one axis b", lambda v: all_gather(v["q3_V"], v["q3_by"], v["q3_chip"], hop_latency=LAT).time
             if v["q3_by"] != v["q3_bx"] else _NaN,
             "The group is all {q3_block_chips} chips: each chip must take in all but 1/{q3_block_chips} of the array."),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("t_ag_line", lambda v: _line4(v).time, conventions=(
        _pinned_first_cut(_line4, lambda v: v["q4_L"]),), slips=(
        Slip("ring", lambda v: all_gather(v["q4_V"], v["q4_L"], v["q4_chip"], wraparound=True,
                                          hop_latency=LAT).time,
             _LINE_4A),
        Slip("2W on a line", lambda v: _line4(v).bandwidth_time / 2 + _line4(v).latency_time,
             _LINE_4A),
    ), unit="s", not_applicable=(
        ONE_PASS,)),
    Part("t_ar_ring16", lambda v: _ring4(v).time, conventions=(
        _pinned_first_cut(_ring4, lambda v: FULL_AXIS),), slips=(
        Slip("one AllGather", lambda v: all_gather(v["q4_V"], FULL_AXIS, v["q4_chip"],
                                                   hop_latency=LAT).time,
             "An AllReduce is a ReduceScatter followed by an AllGather: twice an AllGather's "
             "cost."),
        Slip("line", lambda v: all_reduce(v["q4_V"], FULL_AXIS, v["q4_chip"], wraparound=False,
                                          hop_latency=LAT).time,
             "The full 16-chip {q4_chip} axis has wraparound: a ring, both directions, 2W per "
             "chip."),
    ), unit="s"),
    Part("t_small_allreduce", lambda v: _small5(v).time, slips=(
        Slip("bandwidth only", lambda v: _small5(v).bandwidth_time,
             "For a message this small the latency dominates: an AllReduce over a {q5_N}-chip "
             "ring takes 2 × N/2 hops of 1 µs on top of the bandwidth term."),
        Slip("latency only", lambda v: _small5(v).latency_time,
             "Add the bandwidth term too: the prompt asks for both."),
        Slip("one AllGather", lambda v: all_gather(v["q5_V"], v["q5_N"], v["q3_chip"],
                                                   hop_latency=LAT).time,
             "An AllReduce is a ReduceScatter followed by an AllGather: twice the bytes and twice "
             "the hops."),
    ), unit="s"),
    Part("v_star", _v_star, conventions=(
        Convention("first cut (drops (N-1)/N)", lambda v: _v_star(v) * (v["q3_N"] - 1) / v["q3_N"],
                   PINNED, phrase="keep\nthe exact (N − 1)/N",
                   hint="Keep the (N − 1)/N factor: V* = N²αW/(N − 1), not NαW.", alternatives=('(N-1)/N',)),
    ), slips=(
        Slip("4W", lambda v: _v_star(v) * 2,
             "The ring's bandwidth is 2W with W = {q3_W:.3g} bytes/s one way; {q3_W2:.3g} "
             "already counts both directions."),
        Slip("one way", lambda v: _v_star(v) / 2,
             "With wraparound each chip takes data in on two links: 2W, not W."),
    ), unit="bytes", not_applicable=(
        NotApplicable("bf16 or fp32", "V* follows from the latency and the link bandwidth; no element size enters it"),)),
    Part("t_node_allreduce", lambda v: _ar6(v).time, conventions=(
        _pinned_first_cut(_ar6, lambda v: 8),), slips=merged(
        Slip("NIC inside the node",
             lambda v: _ar6(v).bandwidth_time * v["q6_nvlink"] / v["q6_nic"] + _ar6(v).latency_time,
             "Inside a node the GPUs talk over NVLink, {q6_nvlink:.3g} bytes/s per GPU; the "
             "{q6_nic:.3g} bytes/s NIC is for other nodes."),
        Slip("one link", lambda v: _ar6(v).bandwidth_time * v["q6_links"] + _ar6(v).latency_time,
             "A GPU sends over all {q6_links} of its NVLink links at once: {q6_nvlink:.3g} "
             "bytes/s, not one link's {q6_link_bw:.3g}."),
        "Inside a node a GPU sends over all {q6_links} of its NVLink links at once, "
        "{q6_nvlink:.3g} bytes/s: neither one link's {q6_link_bw:.3g} nor the {q6_nic:.3g} "
        "bytes/s NIC, which is for other nodes.") + (
        Slip("one AllGather", lambda v: gpu_all_gather(v["q6_V"], 8, v["q6_gpu"], hop_latency=LAT).time,
             "An AllReduce is a ReduceScatter followed by an AllGather: twice an AllGather's cost "
             "(or: {q6_nvlink:.3g} bytes/s is already one direction; do not double it)."),
    ), unit="s"),
    Part("t_hier_allreduce", lambda v: _hier6(v).time, slips=merged(
        Slip("flat ring", lambda v: 2 * v["q6_V"] * (v["q6_gpus"] - 1) / v["q6_gpus"] / v["q6_nic"]
             + 2 * (v["q6_gpus"] - 1) * LAT,
             "That is a flat ring through all {q6_gpus} GPUs, paced by the NICs. The hierarchical "
             "AllReduce sends only a 1/8 slice of the array across nodes."),
        Slip("whole array across", lambda v: 2 * v["q6_V"] * 7 / 8 / v["q6_nvlink"]
             + 2 * v["q6_V"] * (v["q6_nodes"] - 1) / v["q6_nodes"] / v["q6_nic"],
             "After the ReduceScatter inside the node each GPU holds a reduced 1/8 slice: only "
             "that slice crosses the NIC."),
        "Only the reduced 1/8 slice each GPU holds after the ReduceScatter inside its node "
        "crosses the NICs; a flat ring through all {q6_gpus} GPUs, or the whole array across "
        "the nodes, sends 8 times more over them.") + merged(
        Slip("NVLink across", lambda v: 2 * v["q6_V"] * 7 / 8 / v["q6_nvlink"]
             + 2 * (v["q6_V"] / 8) * (v["q6_nodes"] - 1) / v["q6_nodes"] / v["q6_nvlink"],
             "The cross-node stage goes through the NICs, {q6_nic:.3g} bytes/s per GPU, not "
             "NVLink."),
        Slip("cross-node stage only", lambda v: _hier6(v).stages[1].time,
             "Add the ReduceScatter and the AllGather inside the nodes."),
        "Two slips give about this value: the cross-node stage goes through the NICs, "
        "{q6_nic:.3g} bytes/s per GPU, not NVLink; and the ReduceScatter and the AllGather "
        "inside the nodes add to it."), unit="s"),
    Part("tokens_per_chip_star", _fsdp7, conventions=(
        Convention("first cut C / 2W", _fsdp7_first_cut, ACCEPTED),), slips=(
        Slip("one way", lambda v: 2 * _fsdp7(v), _ONE_WAY_7A),
        Slip("one way, first cut", lambda v: 2 * _fsdp7_first_cut(v), _ONE_WAY_7A),
        Slip("4W", lambda v: _fsdp7(v) / 2, _FOUR_W_7A),
        Slip("4W, first cut", lambda v: _fsdp7_first_cut(v) / 2, _FOUR_W_7A),
        Slip("global batch", lambda v: _fsdp7(v) * v["q7_Na"], _GLOBAL_7A, alternatives=('per chip or global',)),
        Slip("global batch, first cut", lambda v: _fsdp7_first_cut(v) * v["q7_Na"], _GLOBAL_7A, alternatives=('per chip or global',)),
    ), unit="count"),
    Part("d_star_allreduce", _dstar7, conventions=(
        Convention("first cut (drops (N-1)/N)", lambda v: _dstar7(v) * v["q7_Nb"] / (v["q7_Nb"] - 1),
                   PINNED, phrase="In (b) and (c) keep (N − 1)/N",
                   hint="Keep the (N − 1)/N factor, as the prompt asks.", alternatives=('(N-1)/N',)),
    ), slips=(
        Slip("ReduceScatter", lambda v: _dstar7(v) / 2,
             "C[B, F] is needed whole: that is an AllReduce, twice a ReduceScatter."),
        Slip("per chip", lambda v: _dstar7(v) / v["q7_Nb"],
             "Give the full contracting dim D; each chip holds D/{q7_Nb} of it.", alternatives=('per chip or global',)),
        Slip("one way", lambda v: 2 * _dstar7(v),
             "With wraparound the ring's bandwidth is 2W per chip, not W."),
    ), unit="count"),
    Part("t_layer_serial", _serial7, slips=merged(
        Slip("matmul only", lambda v: _plan7c(v, "reduce_scatter").compute_time,
             "Both operands split the contracting dim D, so each chip's matmul gives only partial "
             "sums of C: they must be ReduceScattered to C[B, F_X]."),
        Slip("overlapped", lambda v: max(_plan7c(v, "reduce_scatter").compute_time,
                                         _plan7c(v, "reduce_scatter").comms_time),
             "Nothing overlaps: add the two times."),
        "Nothing overlaps: add the ReduceScatter's time to the matmul's (both operands split "
        "the contracting dim D, so the matmul gives only partial sums of C).") + (
        Slip("AllReduce", lambda v: _plan7c(v, "all_reduce").compute_time
             + _plan7c(v, "all_reduce").comms_time,
             "C[B, F_X] is what a ReduceScatter leaves; an AllReduce costs twice as much and "
             "leaves more than is needed."),
        Slip("whole D", lambda v: 16 * _plan7c(v, "reduce_scatter").compute_time
             + _plan7c(v, "reduce_scatter").comms_time,
             "Each chip multiplies only its D/16 slice."),
    ), unit="s"),
)


# --------------------------------------------------------------------------- checked in the notebook
# The problems that compile a JAX program (P1 (a)'s shape, P2's collectives, P8's specs) keep
# their structural checks in their check_q* functions below; the number each also asks for is a
# declared part, judged by check_number, so it is asked every alternative like the parts above.
# Not in PARTS: the generated grade cells and the well-posedness rule stay as published.

def _a_bytes1(v) -> float:
    mesh = Mesh({"X": v["q1_X"], "Y": v["q1_Y"], "Z": v["q1_Z"]})
    return bytes_per_device((v["q1_B"], v["q1_D"]), v["q1_dtype"], "A[B_XZ, D_Y]", mesh)


def _ways1(v) -> str:
    return (f"B_XZ splits B over X and Z together: {v['q1_X']} × {v['q1_Z']} = "
            f"{v['q1_X'] * v['q1_Z']} ways.")


_c_bytes2a = lambda v: bytes_per_device((v["q2_I"], v["q2_K"]), "bf16",
                                        _case2(v, "A[I_X, J]", "B[J, K_Y]")[5].output,
                                        Mesh({"X": v["q2_X"], "Y": v["q2_Y"]}))
_v2b = lambda v: _case2(v, "A[I_X, J_Y]", "B[J, K]")[5].collectives[0].nbytes
_v2c = lambda v: _case2(v, "A[I, J_X]", "B[J_X, K]", reduce="reduce_scatter",
                        scatter_dim="K")[5].collectives[0].nbytes
_v2d = lambda v: _case2(v, "A[I_X, J]", "B[J, K_X]")[5].collectives[0].nbytes
_w_shard8 = lambda v: bytes_per_device((v["q8_D"], v["q8_F"]), "fp32", "W[D, F_Y]",
                                       Mesh({"X": v["q8_X"], "Y": v["q8_Y"]}))
_ar8 = lambda v: float(plan_matmul(  # a plan given its shapes counts its bytes
    "A[B_X, D_Y]", "W[D_Y, F]", Mesh({"X": v["q8_X"], "Y": v["q8_Y"]}), contracting="D",
    shapes={"B": v["q8_B"], "D": v["q8_D"], "F": v["q8_F"]},
    dtype="fp32").collectives[0].nbytes or 0.0)
_GATHERED = "V is the gathered array A[I, J], not the shard each chip starts with."
_UNREDUCED = ("V is the unreduced C[I, K] that each chip holds before the reduction, not the "
              "block it keeps.")
_ONLY_Y8 = ("Only Y splits W: the {q8_X} devices along X hold the same block, so each device "
            f"holds 1/{{q8_Y}} of W, not 1/{DEVICES}.")
_F32_BYTES8 = "Count bytes, not elements: f32 takes 4 bytes."
_WHOLE_BLOCK8 = "An AllReduce leaves the whole reduced block on every device, not {part} of it."

NOTEBOOK_PARTS = (
    Part("a_bytes_per_chip", _a_bytes1, slips=(
        Slip("elements", lambda v: _a_bytes1(v) / bytes_per_element(v["q1_dtype"]),
             lambda v: f"{v['q1_dtype']} takes {bytes_per_element(v['q1_dtype']):g} bytes per element.",
             ("bf16 or fp32",)),
        Slip("Z copies", lambda v: v["q1_Z"] * _a_bytes1(v), _ways1),
    ), unit="bytes"),
    Part("c_bytes_a", _c_bytes2a, slips=(
        Slip("all of C", lambda v: v["q2_I"] * v["q2_K"] * 2,
             "C comes out as C[I_X, K_Y]: split over both axes, 1/{q2_chips} of C per chip.",
             ("per chip or global",)),
        Slip("split over X only", lambda v: v["q2_I"] * v["q2_K"] * 2 / v["q2_X"],
             "C comes out as C[I_X, K_Y]: K is split over Y as well as I over X."),
    ), unit="bytes"),
    Part("v_b", _v2b, slips=(
        Slip("all of A", lambda v: v["q2_I"] * v["q2_J"] * 2,
             "I stays split over X: the AllGather over Y assembles A[I_X, J], 1/{q2_X} of A, not "
             "all of it."),
        Slip("the shard", lambda v: v["q2_I"] * v["q2_J"] * 2 / v["q2_chips"],
             "V is the gathered array A[I_X, J], not the shard each chip starts with."),
    ), unit="bytes"),
    Part("v_c", _v2c, slips=(
        Slip("the kept block", lambda v: _v2c(v) / v["q2_X"], _UNREDUCED, ("per chip or global",)),
        Slip("the kept block over the mesh", lambda v: v["q2_I"] * v["q2_K"] * 2 / v["q2_chips"],
             _UNREDUCED),
    ), unit="bytes"),
    Part("v_d", _v2d, slips=(
        Slip("the larger operand", lambda v: v["q2_J"] * v["q2_K"] * 2,
             lambda v: f"Gather the smaller operand: A is {v['q2_K'] // v['q2_I']} times smaller "
                       "than B."),
        Slip("the shard", lambda v: v["q2_I"] * v["q2_J"] * 2 / v["q2_X"], _GATHERED,
             ("per chip or global",)),
    ), unit="bytes"),
    # with X = 4 the mesh split and the element count give one value: one hint names both
    Part("w_shard_bytes", _w_shard8, slips=merged(
        Slip("split over the mesh", lambda v: _w_shard8(v) / v["q8_X"], _ONLY_Y8,
             ("per chip or global",)),
        Slip("elements", lambda v: _w_shard8(v) / 4, _F32_BYTES8, ("bf16 or fp32",)),
        "Two slips give about this value. " + _ONLY_Y8 + " Or: " + _F32_BYTES8), unit="bytes"),
    Part("allreduce_bytes", _ar8, slips=(
        Slip("all of B", lambda v: v["q8_X"] * _ar8(v),
             "B stays split over X: the AllReduce sums this device's rows C[B_X, F], 1/{q8_X} "
             "of C.", ("per chip or global",)),
        # with Y = 2 the scattered block and 2 bytes per element give one value: one hint
        *merged(Slip("scattered", lambda v: _ar8(v) / v["q8_Y"],
                     lambda v: _WHOLE_BLOCK8.format(part={2: "a half", 4: "a quarter"}[v["q8_Y"]]),
                     ("per chip or global",)),
                Slip("2 bytes", lambda v: _ar8(v) / 2, "f32 takes 4 bytes per element.",
                     ("bf16 or fp32",)),
                "Two slips give about this value. " + _WHOLE_BLOCK8.format(part="a half")
                + " Or: f32 takes 4 bytes per element."),
    ), unit="bytes"),
)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS` (:func:`scalebook.homework.parts.well_posed`), and
    for P5 (a): the bandwidth term is between 7% and 45% of the AllReduce, so the latency
    dominates as the text says and both "latency alone" and "bandwidth alone" stay wrong.

    Problems 1 (a), 2 and 8 check their answers in the notebook: every hinted slip there is
    off by a whole factor of 2 or more (an axis size, the bytes per element)."""
    small = _small5(v)
    return bool(0.07 <= small.bandwidth_time / small.time <= 0.45 and parts_well_posed(PARTS, v))


SPEC = VariantSpec(
    assignment="hw3-sharding",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_chips": ("chips", ""),
        "q1_dtype_bytes": ("bytes per element", "bytes"),
        "q2_chips": ("chips", ""),
        "q2_A_bytes": ("size of A", "bytes"),
        "q2_B_bytes": ("size of B", "bytes"),
        "q3_W": ("W", "bytes/s"),
        "q3_W2": ("2W", "bytes/s"),
        "q3_V": ("V", "bytes"),
        "q3_block_chips": ("a × b", "chips"),
        "q4_W": ("W", "bytes/s"),
        "q4_V": ("V", "bytes"),
        "q5_V": ("message", "bytes"),
        "q6_links": ("NVLink links", "per GPU"),
        "q6_link_bw": ("per link", "bytes/s"),
        "q6_nvlink": ("NVLink", "bytes/s per GPU"),
        "q6_nic": ("NIC", "bytes/s per GPU"),
        "q6_gpus": ("GPUs in (b)", ""),
        "q7_C": ("C of (a), (b)", "FLOPs/s"),
        "q7_W": ("W of (a), (b)", "bytes/s"),
        "q7_W2": ("2W of (a), (b)", "bytes/s"),
        "q7_Cc": ("C of (c)", "FLOPs/s"),
        "q7_Wc": ("W of (c)", "bytes/s"),
        "q8_Y": ("Y", "devices"),
    },
)

# --------------------------------------------------------------------------- checks that are no number
# The hidden checks of the graded cells whose answers are no declared number (shapes,
# collectives, PartitionSpecs compiled by JAX): each cell calls its function, so the check is
# written once, here, and a test can call it. JAX is imported inside, as the cell did.


def check_q1a_local(v: Mapping[str, Any], a_local_shape, a_bytes_per_chip) -> None:
    """The hidden check of grade cell ``hw3-q1a-local-test``: raises ``AssertionError`` (with its hint)
    unless ``a_local_shape``, ``a_bytes_per_chip`` are right for the student with numbers ``v``."""
    from scalebook.homework.parts import check_number  # looked up here: tests record it
    from scalebook.checks import check_allclose
    from scalebook.sharding import Mesh, local_shape
    _X, _Y, _Z = v["q1_X"], v["q1_Y"], v["q1_Z"]
    _B, _D = v["q1_B"], v["q1_D"]
    _mesh = Mesh({"X": _X, "Y": _Y, "Z": _Z})
    _local = local_shape((_B, _D), "A[B_XZ, D_Y]", _mesh)
    _ways = f"B_XZ splits B over X and Z together: {_X} × {_Z} = {_X * _Z} ways."
    check_allclose(a_local_shape, _local, name="a_local_shape", hints=[
        ((_B // _X, _D // _Y), _ways),
        ((_B // (_X * _Z), _D), f"D_Y splits D over the {_Y} chips of Y."),
    ])
    check_number(NOTEBOOK_PARTS[0], v, a_bytes_per_chip)


def _case2(v: Mapping[str, Any], a: str, b: str, **kw):
    """Problem 2's matmul ``A ·_J B`` with the shardings ``a`` and ``b`` on the student's X × Y
    mesh: (X, Y, I, J, K, the solver's plan)."""
    X, Y, I, J, K = v["q2_X"], v["q2_Y"], v["q2_I"], v["q2_J"], v["q2_K"]
    plan = plan_matmul(a, b, Mesh({"X": X, "Y": Y}), contracting="J",
                       shapes={"I": I, "J": J, "K": K}, **kw)
    return X, Y, I, J, K, plan


def _check_collective(v: Mapping[str, Any], name: str, given: str, value: Any, part: int,
                      a: str, b: str, hint: str, **plan: Any) -> None:
    """The hidden check of one case of problem 2: raises ``AssertionError`` (with ``hint``)
    unless ``given``, the collective the student named ``name``, is the one the solver's plan of
    ``A ·_J B`` with the shardings ``a`` and ``b`` runs ("none" when it runs none), and unless
    ``value`` passes ``NOTEBOOK_PARTS[part]``."""
    from scalebook.homework.parts import check_number  # looked up here: tests record it
    steps = _case2(v, a, b, **plan)[5].collectives
    kind = steps[0].kind if steps else "none"
    assert given.replace(" ", "").lower() == kind.lower(), (
        f"{name} is not what this matmul needs. Hint: {hint}")
    check_number(NOTEBOOK_PARTS[part], v, value)


def check_q2a_case1(v: Mapping[str, Any], collective_a, c_bytes_a) -> None:
    """The hidden check of grade cell ``hw3-q2a-case1-test`` (see :func:`_check_collective`)."""
    _check_collective(v, "collective_a", collective_a, c_bytes_a, 1, "A[I_X, J]", "B[J, K_Y]",
                      "look at the contracting dim J first: neither A nor B splits it.")


def check_q2b_case2(v: Mapping[str, Any], collective_b, v_b) -> None:
    """The hidden check of grade cell ``hw3-q2b-case2-test`` (see :func:`_check_collective`)."""
    _check_collective(v, "collective_b", collective_b, v_b, 2, "A[I_X, J_Y]", "B[J, K]",
                      "only A splits the contracting dim J, over Y; the chips of a Y group hold "
                      "different slices of J that each of them needs.")


def check_q2c_case3(v: Mapping[str, Any], collective_c, v_c) -> None:
    """The hidden check of grade cell ``hw3-q2c-case3-test`` (see :func:`_check_collective`):
    an AllReduce, which does the job at twice the cost, earns its own hint."""
    assert collective_c.replace(" ", "").lower() != "allreduce", (
        "collective_c: an AllReduce leaves all of C on every chip and costs twice as much. Hint: "
        f"C[I, K_X] keeps 1/{v['q2_X']} of K per chip, which is exactly what a ReduceScatter "
        "leaves.")
    _check_collective(v, "collective_c", collective_c, v_c, 3, "A[I, J_X]", "B[J_X, K]",
                      "both operands split the contracting dim J, so each chip's local matmul "
                      "gives only partial sums of C, which must be added up.",
                      reduce="reduce_scatter", scatter_dim="K")


def check_q2d_case4(v: Mapping[str, Any], collective_d, v_d) -> None:
    """The hidden check of grade cell ``hw3-q2d-case4-test`` (see :func:`_check_collective`)."""
    _check_collective(v, "collective_d", collective_d, v_d, 4, "A[I_X, J]", "B[J, K_X]",
                      "J is not split, but both operands split a free dim over X, and no chip can "
                      "hold C[I_X, K_X]: one operand must be made whole along X first.")


def check_q8a_specs(v: Mapping[str, Any], w_shard_bytes, a_spec, w_spec) -> None:
    """The hidden check of grade cell ``hw3-q8a-specs-test``: raises ``AssertionError`` (with its hint)
    unless ``w_shard_bytes``, ``a_spec``, ``w_spec`` are right for the student with numbers ``v``."""
    from scalebook.homework.parts import check_number  # looked up here: tests record it
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec
    from scalebook.checks import check_partition_spec
    from scalebook.hlo import compiled_collectives, summarize

    _a = check_partition_spec(a_spec, "a_spec", rank=2, axis_names=("X", "Y"))
    _w = check_partition_spec(w_spec, "w_spec", rank=2, axis_names=("X", "Y"))
    if jax.device_count() < 8:
        raise RuntimeError("this check needs 8 JAX devices: start the grader with "
                           "XLA_FLAGS=--xla_force_host_platform_device_count=8")
    _X, _Y = v["q8_X"], v["q8_Y"]
    _B, _D, _F = v["q8_B"], v["q8_D"], v["q8_F"]
    _mesh = jax.make_mesh((_X, _Y), ("X", "Y"), axis_types=(AxisType.Auto,) * 2,
                          devices=jax.devices()[:8])
    _a_host = np.random.default_rng(0).standard_normal((_B, _D)).astype(np.float32)
    _w_host = np.random.default_rng(1).standard_normal((_D, _F)).astype(np.float32)
    _A = jax.device_put(_a_host, NamedSharding(_mesh, PartitionSpec(*_a)))
    _W = jax.device_put(_w_host, NamedSharding(_mesh, PartitionSpec(*_w)))
    _found = compiled_collectives(jnp.matmul, _A, _W)     # compiled here, by the grader
    _out = jax.jit(jnp.matmul)(_A, _W)
    assert np.allclose(np.asarray(_out), _a_host @ _w_host, rtol=1e-4, atol=1e-4), (
        "With these specs A @ W does not equal NumPy's result.")
    _out_spec = check_partition_spec(_out.sharding.spec, "the output's spec", rank=2,
                                     axis_names=("X", "Y"))
    assert not _found, (
        f"With these specs the compiled A @ W runs {'; '.join(summarize(_found))}, but the layout "
        "asked for needs no communication. Hint: a collective is needed when an operand splits the "
        "contracting dim D (case 2 or 3), or when both split their free dims over the same axis "
        "(case 4). Keep D whole on both sides.")
    assert _out_spec == ("X", "Y"), (
        f"No communication, but the output comes out as P{_out_spec}, not P('X', 'Y'). Hint: the "
        "output keeps the splits of the free dims: B's from A, F's from W.")
    check_number(NOTEBOOK_PARTS[5], v, w_shard_bytes)


def check_q8b_tp(v: Mapping[str, Any], w_tp_spec, allreduce_bytes) -> None:
    """The hidden check of grade cell ``hw3-q8b-tp-test``: raises ``AssertionError`` (with its hint)
    unless ``w_tp_spec``, ``allreduce_bytes`` are right for the student with numbers ``v``."""
    from scalebook.homework.parts import check_number  # looked up here: tests record it
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec
    from scalebook.checks import check_partition_spec
    from scalebook.hlo import compiled_collectives, summarize
    from scalebook.sharding import Mesh

    _w = check_partition_spec(w_tp_spec, "w_tp_spec", rank=2, axis_names=("X", "Y"))
    if jax.device_count() < 8:
        raise RuntimeError("this check needs 8 JAX devices: start the grader with "
                           "XLA_FLAGS=--xla_force_host_platform_device_count=8")
    _X, _Y = v["q8_X"], v["q8_Y"]
    _B, _D, _F = v["q8_B"], v["q8_D"], v["q8_F"]
    _part = {2: "a half", 4: "a quarter"}[_Y]
    _mesh = jax.make_mesh((_X, _Y), ("X", "Y"), axis_types=(AxisType.Auto,) * 2,
                          devices=jax.devices()[:8])
    _a_host = np.random.default_rng(0).standard_normal((_B, _D)).astype(np.float32)
    _w_host = np.random.default_rng(1).standard_normal((_D, _F)).astype(np.float32)
    _A = jax.device_put(_a_host, NamedSharding(_mesh, PartitionSpec("X", "Y")))
    _W = jax.device_put(_w_host, NamedSharding(_mesh, PartitionSpec(*_w)))
    _share = _W.addressable_shards[0].data.size / _w_host.size
    assert _share == 1 / _Y, (
        f"With w_tp_spec each device holds 1/{round(1 / _share)} of W, not {_part}. Hint: {_part} "
        f"means W is split over the {_Y} devices of one axis and copied along the other.")
    _found = compiled_collectives(jnp.matmul, _A, _W)     # compiled here, by the grader
    _out = jax.jit(jnp.matmul)(_A, _W)
    assert np.allclose(np.asarray(_out), _a_host @ _w_host, rtol=1e-4, atol=1e-4), (
        "With this spec A @ W does not equal NumPy's result.")
    _out_spec = check_partition_spec(_out.sharding.spec, "the output's spec", rank=2,
                                     axis_names=("X", "Y"))
    _kinds = [_c.kind for _c in _found]
    _hint = ""
    if "AllGather" in _kinds:
        _hint = (" Hint: an AllGather means some operand had to be made whole along a dim first. "
                 "A splits the contracting dim D over Y: split W's D over Y too, and each device "
                 "holds matching slices of D (case 3).")
    assert [(_c.kind, _c.axes) for _c in _found] == [("AllReduce", ("Y",))], (
        f"The compiled A @ W runs {'; '.join(summarize(_found)) or 'no collective'}; the layout "
        f"asked for runs exactly one collective, an AllReduce.{_hint}")
    assert _out_spec == ("X", None), (
        f"The output comes out as P{_out_spec}, not P('X', None).")
    if _found[0].nbytes != NOTEBOOK_PARTS[6].expected(v):   # C[B_X, F] {U_Y} on one device
        raise RuntimeError("grader: the compiled AllReduce is not the f32[B/X, F] partial output")
    check_number(NOTEBOOK_PARTS[6], v, allreduce_bytes)

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

from typing import Any, Mapping

from ..collectives import (all_gather, all_gather_multi_axis, all_reduce, all_to_all,
                           gpu_all_gather, gpu_all_reduce, gpu_hierarchical_all_reduce)
from ..hardware import bytes_per_element, get_chip
from ..topology import gpu_cluster, gpu_node
from ..variants import Choice, VariantSpec

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
        "q7_Wc": q7c.link_bandwidth_one_way,
        "q8_Y": DEVICES // p["q8_X"],
    }


def _clear(answer: float, slips: list[float], rel: float = 0.06) -> bool:
    """Every slip lies more than ``rel`` (a margin over the checks' 5%) away from the answer."""
    return all(abs(s - answer) > rel * abs(answer) for s in slips)


def well_posed(v: Mapping[str, Any]) -> bool:
    """No draw where a slip that a hint names lands within the check's 5% of the answer.

    Problems 1, 2 and 8 need no filter: every hinted slip there is off by a whole factor of 2
    or more (an axis size, the bytes per element). The others:

    - P3: (a) the AllGather priced over W or over 4W and the one that drops (N − 1)/N, (b) the
      AllReduce priced as one AllGather or as a line, (c) the AllToAll priced as an AllGather,
      over W, or without its latency, and (d) the 2D AllGather priced on one axis of N chips or
      on one axis of the block: each more than 6% from the answer. So the array is neither so
      large that (c)'s latency vanishes in the 5% nor so small that (a)'s (N − 1)/N does.
    - P4: (a)'s line against the ring and the 2W slip, (b)'s ring AllReduce against one
      AllGather and the line's AllReduce.
    - P5 (a): the bandwidth term is between 7% and 45% of the AllReduce: the latency dominates,
      as the text says, and both "latency alone" and "bandwidth alone" are wrong answers.
      (b): (N − 1)/N is more than 6% (N ≤ 16).
    - P6: every slip of (a) (the NIC inside the node, one NVLink link, one AllGather) and of
      (b) (a flat ring over the NICs, the whole array across the NICs, the slice over NVLink,
      the cross-node stage alone) more than 6% away.
    - P7: (a) the hinted 2·B/N, (B/N)/2 and the global batch are more than 6% from both answers
      accepted (the exact one and the first cut); (b) the AllReduce's threshold against the
      ReduceScatter's, per chip, over W and without (N − 1)/N; (c) the serial layer time
      against the matmul alone, the AllReduce's, the larger of the two and 16 times the matmul.
    """
    lat = HOP_LATENCY

    q3 = get_chip(v["q3_chip"])
    W3, V3, N3 = q3.link_bandwidth_one_way, v["q3_V"], v["q3_N"]
    ag = all_gather(V3, N3, q3, hop_latency=lat)
    ok3a = _clear(ag.time, [V3 * (N3 - 1) / N3 / W3 + (N3 // 2) * lat,
                            V3 * (N3 - 1) / N3 / (4 * W3) + (N3 // 2) * lat,
                            V3 / (2 * W3) + (N3 // 2) * lat])
    ar = all_reduce(V3, N3, q3, hop_latency=lat)
    ok3b = _clear(ar.time, [ag.time, all_reduce(V3, N3, q3, hop_latency=lat, wraparound=False).time])
    a2a = all_to_all(V3, N3, q3, hop_latency=lat)
    ok3c = _clear(a2a.time, [ag.time, a2a.bandwidth_time, V3 / (4 * W3) + (N3 // 2) * lat])
    bx, by = v["q3_bx"], v["q3_by"]
    two_d = all_gather_multi_axis(V3, [bx, by], q3, hop_latency=lat)
    ok3d = _clear(two_d.time, [all_gather(V3, bx * by, q3, hop_latency=lat).time,
                               all_gather(V3, bx, q3, hop_latency=lat).time,
                               all_gather(V3, by, q3, hop_latency=lat).time])
    v_star = N3 ** 2 * lat * W3 / (N3 - 1)
    ok5b = _clear(v_star, [N3 * lat * W3])

    q4 = get_chip(v["q4_chip"])
    W4, V4, L4 = q4.link_bandwidth_one_way, v["q4_V"], v["q4_L"]
    line = all_gather(V4, L4, q4, wraparound=False, hop_latency=lat)
    ok4a = _clear(line.time, [all_gather(V4, L4, q4, wraparound=True, hop_latency=lat).time,
                              V4 * (L4 - 1) / L4 / (2 * W4) + (L4 - 1) * lat])
    ring = all_reduce(V4, FULL_AXIS, q4, hop_latency=lat)
    ok4b = _clear(ring.time, [all_gather(V4, FULL_AXIS, q4, hop_latency=lat).time,
                              all_reduce(V4, FULL_AXIS, q4, wraparound=False, hop_latency=lat).time])

    small = all_reduce(v["q5_V"], v["q5_N"], q3, hop_latency=lat)
    ok5a = 0.07 <= small.bandwidth_time / small.time <= 0.45 and _clear(
        small.time, [all_gather(v["q5_V"], v["q5_N"], q3, hop_latency=lat).time])

    q6 = get_chip(v["q6_gpu"])
    node = gpu_node(q6)
    g, V6 = node.n_gpus, v["q6_V"]
    nvl, nic = node.nvlink_bandwidth_per_gpu, node.scale_out_bandwidth_per_gpu
    ring6 = 2 * V6 * (g - 1) / g
    lat6 = 2 * (g - 1) * lat
    node_ar = gpu_all_reduce(V6, g, q6, hop_latency=lat)
    ok6a = _clear(node_ar.time, [ring6 / nic + lat6, ring6 / q6.link_bandwidth_one_way + lat6,
                                 gpu_all_gather(V6, g, q6, hop_latency=lat).time])
    cluster = gpu_cluster(q6, g * v["q6_nodes"])
    n, m = cluster.n_gpus, cluster.nodes
    hier = gpu_hierarchical_all_reduce(V6, n, q6, hop_latency=lat)
    in_node = 2 * V6 * (g - 1) / g / nvl
    ok6b = _clear(hier.time, [2 * V6 * (n - 1) / n / nic + 2 * (n - 1) * lat,
                              in_node + 2 * V6 * (m - 1) / m / nic,
                              in_node + 2 * (V6 / g) * (m - 1) / m / nvl,
                              hier.stages[1].time])

    q7 = get_chip(v["q7_chip"])
    C7, W7 = q7.flops("bf16"), q7.link_bandwidth_one_way
    Na, Nb = v["q7_Na"], v["q7_Nb"]
    exact = C7 * (Na - 1) / Na / (2 * W7)
    first_cut = C7 / (2 * W7)
    slips7a = [2 * exact, exact / 2, exact * Na]
    ok7a = _clear(exact, slips7a) and _clear(first_cut, slips7a)
    d_star = C7 * (Nb - 1) / W7
    ok7b = _clear(d_star, [d_star / Nb, d_star * Nb / (Nb - 1)])
    q7c = get_chip(v["q7_chip_c"])
    B7, D7, F7 = v["q7_B"], v["q7_D"], v["q7_F"]
    t_math = 2 * B7 * (D7 // FULL_AXIS) * F7 / q7c.flops("bf16")
    t_rs = all_gather(2 * B7 * F7, FULL_AXIS, q7c, hop_latency=lat).time
    serial = t_math + t_rs
    ok7c = _clear(serial, [t_math, t_math + 2 * t_rs, max(t_math, t_rs),
                           FULL_AXIS * t_math + t_rs])

    return (ok3a and ok3b and ok3c and ok3d and ok4a and ok4b and ok5a and ok5b
            and ok6a and ok6b and ok7a and ok7b and ok7c)


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
        "q7_Cc": ("C of (c)", "FLOPs/s"),
        "q7_Wc": ("W of (c)", "bytes/s"),
        "q8_Y": ("Y", "devices"),
    },
)

"""hw2-hardware: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1, sampling one token of a big model whose weights are spread over many TPUs: the model size
  N (billions of parameters), the number of chips and the TPU (v5p, v6e, v5e, v4p; its HBM
  bandwidth and capacity come from the catalog). Well posed: see :func:`well_posed`.
- P2, counting a block of a TPU v5p pod: its shape X × Y × Z (multiples of 4 within the full pod,
  16 × 20 × 28, which is the published one). The chip stays a v5p: the problem's slips need two
  TensorCores per chip (v5e, v6e have one), 4 chips per host (v3, v5e, v6e have 8) and an int8
  rate twice the bf16 rate (v3, v4p have them equal), and only the v5p has all three.
- P3, bf16 weights streamed over PCIe: the TPU (v5e, v6e, v5p, v4p; its PCIe, HBM and bf16
  figures) and the layer's B, D, F.
- P4, an int8 matmul on one TPU at B = 64 and B = 1024: the TPU (v6e, v5e, v5p, whose int8
  rate is twice their bf16 rate, so the "used the bf16 rate" slip stays a distinct wrong answer)
  and D, F. The two batch sizes stay fixed: the answers are named after them
  (``t_matmul_b64``, ``t_matmul_b1024``).
- P5, moving an array over ICI: the TPU (v5e or v6e: both 2D, 16 × 16 at most, with wraparound
  only on a full 16-chip axis, so part (c)'s ring is the same 16 chips and chip 8 is halfway
  round), the shape of the array A and the length of part (d)'s line (8 or 4: the v5e/v6e slice
  shapes 8 × 16 and 4 × 16). The latency per hop stays 1 µs.
- P6, inside an NVIDIA GPU: the shape of part (f)'s small matmul (B, D, F) and part (g)'s square
  size N. Parts (a)–(e) are facts of two named chips (the answers are named after them:
  ``h100_cuda_cores``, ``crit_b200_bf16``, ...): the H100's SMs, CUDA cores and boost clock, and
  the dense rates and bandwidths of the H100 and the B200, the same for every student. The other
  GPUs of the catalog would not do either: the A100 and V100 have 64 CUDA cores per SM (the
  "4 sub-partitions of 32" hint), the B200 has no vetted boost clock.
"""

from __future__ import annotations

import math
from .alternatives import NO_LINK, ONE_PASS
from typing import Any, Mapping

from ..collectives import has_wraparound, point_to_point, ppermute
from ..hardware import cuda_core_flops, get_chip
from ..roofline import (critical_batch_size, critical_intensity, matmul_cost, matmul_time,
                        time_bounds, weight_load_time)
from ..topology import tpu_slice
from ..training import fewest_chips
from ..variants import Choice, VariantSpec
from .parts import NotApplicable
from .parts import ACCEPTED, PINNED, Convention, Part, Slip, coinciding, distinct_from
from .parts import well_posed as parts_well_posed

#: Problem 5's latency per hop, seconds (the same for every student).
HOP_LATENCY = 1e-6
#: Problem 5's ring: a full 16-chip axis of a v5e or v6e, and its halfway chip.
RING, RING_DST = 16, 8

PARAMETERS = {
    "q1_params_b": Choice((405, 70, 175, 540, 34, 65, 90, 314), "N", "billion parameters"),
    "q1_chips": Choice((64, 32, 128, 256, 16), "n", "chips"),
    "q1_chip": Choice(("TPU v5p", "TPU v6e", "TPU v5e", "TPU v4p"), "TPU"),
    "q2_X": Choice((16, 8, 12, 4), "X"),
    "q2_Y": Choice((20, 16, 12, 8), "Y"),
    "q2_Z": Choice((28, 24, 20, 16, 12), "Z"),
    "q3_chip": Choice(("TPU v5e", "TPU v6e", "TPU v5p", "TPU v4p"), "TPU"),
    "q3_B": Choice((512, 256, 1024, 2048, 128), "B", "tokens"),
    "q3_D": Choice((8192, 4096, 16384), "D"),
    "q3_F": Choice((8192, 4096, 16384, 28672), "F"),
    "q4_chip": Choice(("TPU v6e", "TPU v5e", "TPU v5p"), "TPU"),
    "q4_D": Choice((4096, 8192, 2048, 16384), "D"),
    "q4_F": Choice((16384, 8192, 32768, 4096), "F"),
    "q5_chip": Choice(("TPU v5e", "TPU v6e"), "TPU"),
    "q5_A0": Choice((16, 8, 32, 4), "d0"),
    "q5_A1": Choice((512, 1024, 256, 2048), "d1"),
    "q5_A2": Choice((4096, 8192, 2048), "d2"),
    "q5_line": Choice((8, 4), "L", "chips"),
    "q6_B": Choice((64, 32, 16, 96, 48), "B"),
    "q6_D": Choice((8192, 4096, 16384), "D"),
    "q6_F": Choice((8192, 4096, 16384, 28672), "F"),
    "q6_N": Choice((8192, 4096, 16384, 12288), "N"),
}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The figures each problem states, taken from the catalog for the drawn chips."""
    q1 = get_chip(p["q1_chip"])
    q3 = get_chip(p["q3_chip"])
    q4 = get_chip(p["q4_chip"])
    q5 = get_chip(p["q5_chip"])
    return {
        "q1_hbm": q1.hbm_bandwidth,
        "q1_hbm_gb": q1.hbm_bytes / 1e9,
        "q3_bf16_flops": q3.flops("bf16"),
        "q3_pcie": q3.pcie_bandwidth,
        "q3_hbm": q3.hbm_bandwidth,
        "q4_int8_ops": q4.flops("int8"),
        "q4_hbm": q4.hbm_bandwidth,
        "q5_ici": q5.link_bandwidth_one_way,
        "q5_ici_both": 2 * q5.link_bandwidth_one_way,
        "q5_array_bytes": float(p["q5_A0"] * p["q5_A1"] * p["q5_A2"] * 2),
        "q5_line_last": p["q5_line"] - 1,
    }


# --------------------------------------------------------------------------- the parts

_NaN = float("nan")
#: The title's conventions, and the hints for an answer under the other one.
FMA_PHRASE = "A multiply-add counts as **2** FLOPs"
_FMA_HINT = ("This course counts a multiply-add as 2 FLOPs (a multiply and an add), as the "
             "title says; counting it as 1 halves the count.")
GB_PHRASE = "1 GB = 1e9 bytes"
_DENSE = ("Use the dense rate: the datasheet's tensor-core figures are 'with sparsity', twice "
          "the dense one.")


def _fma_as_one(value, factor: float = 0.5) -> Convention:
    """A multiply-add counted as 1 FLOP: ``factor`` × the answer, pinned out by the title."""
    return Convention("multiply-add as 1 FLOP", lambda v: factor * value(v), PINNED,
                      phrase=FMA_PHRASE, hint=_FMA_HINT)


_chip1 = lambda v: get_chip(v["q1_chip"])
_bytes1 = lambda v: 2 * v["q1_params_b"] * 1e9
_token1 = lambda v: weight_load_time(_bytes1(v), _chip1(v), n_chips=v["q1_chips"])
_exact1 = lambda v: _bytes1(v) / _chip1(v).hbm_bytes
#: (b) with the HBM's GB read as GiB (2**30 bytes): the chip count under that convention.
_gib1 = lambda v: math.ceil(_bytes1(v) / (v["q1_hbm_gb"] * 2**30))
_GIB_1 = "This course counts 1 GB = 1e9 bytes (the title says so), not 2**30."
_COUNT_SLIPS_1 = coinciding(
    Slip("GiB", lambda v: _gib1(v) if _gib1(v) != fewest_chips(_bytes1(v), _chip1(v)) else _NaN,
         _GIB_1),
    Slip("rounded down", lambda v: math.floor(_exact1(v)),
         "Round up, not down: the weights must fit entirely."),
    Slip("1 byte per parameter", lambda v: fewest_chips(_bytes1(v) / 2, _chip1(v)),
         "bf16 stores each parameter in 2 bytes."),
    rel=0.001)
#: GB read as GiB, where it gives a count of its own: pinned by the title's "1 GB = 1e9 bytes".
_pinned_gib1 = Convention("GiB", _COUNT_SLIPS_1[0].value, PINNED, phrase="1 GB = 1e9 bytes",
                          hint=_GIB_1)

_pod2 = lambda v: tpu_slice(get_chip("TPU v5p"), (v["q2_X"], v["q2_Y"], v["q2_Z"]))
_chip3 = lambda v: get_chip(v["q3_chip"])
_pcie3 = lambda v: time_bounds(2 * v["q3_B"] * v["q3_D"] * v["q3_F"], 2 * v["q3_D"] * v["q3_F"],
                               flops_per_s=_chip3(v).flops("bf16"),
                               bytes_per_s=_chip3(v).pcie_bandwidth)
_chip4 = lambda v: get_chip(v["q4_chip"])
_SUM_4 = "With perfect overlap the bound is the larger of T_math and T_comms, not their sum."
_t4 = lambda v, B: matmul_time(B, v["q4_D"], v["q4_F"], _chip4(v), x_dtype="int8")
_W5 = lambda v: get_chip(v["q5_chip"]).link_bandwidth_one_way
_V5 = lambda v: v["q5_array_bytes"]
_BIDI = ("A link's {q5_ici_both:.3g} bytes/s counts both directions together; data going one "
         "way gets {q5_ici:.3g} bytes/s.")
_ring5 = lambda v: point_to_point(_V5(v), 0, RING_DST, RING, v["q5_chip"],
                                  wraparound=has_wraparound(v["q5_chip"], RING),
                                  hop_latency=HOP_LATENCY, multipath=True)
_line5 = lambda v: point_to_point(_V5(v), 0, v["q5_line"] - 1, v["q5_line"], v["q5_chip"],
                                  wraparound=has_wraparound(v["q5_chip"], v["q5_line"]),
                                  hop_latency=HOP_LATENCY, multipath=True)
_h100 = lambda: get_chip("H100")
_b200 = lambda: get_chip("B200")
_vector6 = lambda v: cuda_core_flops(_h100(), "fp32", fma_flops=2)
_b200_small = lambda v: matmul_time(v["q6_B"], v["q6_D"], v["q6_F"], _b200())
_b200_large = lambda v: matmul_time(v["q6_N"], v["q6_N"], v["q6_N"], _b200())


def _crit_part(answer: str, gpu: str, dtype: str) -> Part:
    """P6 (d), (e): a GPU's critical intensity, dense peak ÷ HBM bandwidth."""
    value = lambda v: critical_intensity(get_chip(gpu), dtype)
    return Part(answer, value, slips=(Slip("sparse rate", lambda v: 2 * value(v), _DENSE),), unit="count")


PARTS = (
    # P1
    Part("t_token", _token1, slips=(
        Slip("1 byte per parameter", lambda v: _token1(v) / 2, "bf16 stores each parameter in 2 bytes."),
        Slip("one chip's bandwidth", lambda v: _token1(v) * v["q1_chips"],
             "The {q1_chips} chips read their shards at the same time: divide by the total "
             "bandwidth of all {q1_chips}.", alternatives=('per chip or global',)),
        Slip("fp32", lambda v: 2 * _token1(v), "bf16 is 2 bytes per parameter, not 4 (fp32)."),
    ), unit="s", not_applicable=(
        *NO_LINK,)),
    # rounding down, one byte per parameter and GB read as GiB often give one count: each
    # alone earns its hint, a coincidence one hint naming every cause
    Part("min_chips_for_weights", lambda v: fewest_chips(_bytes1(v), _chip1(v)), rel=0.001,
         conventions=(_pinned_gib1,), slips=(
        Slip("not rounded", _exact1,
             "A chip count is a whole number: round up, since part of a chip cannot exist."),
    ) + _COUNT_SLIPS_1[1:], unit="count"),
    # P2: (a) grades pod_chips and pod_hosts in one cell; (c) pod_flops and pod_hbm_bytes.
    Part("pod_chips", lambda v: _pod2(v).chips, rel=0.001, slips=(
        Slip("TensorCores", lambda v: _pod2(v).tensorcores, "Count chips, not TensorCores."),), unit="count"),
    Part("pod_hosts", lambda v: _pod2(v).hosts, rel=0.001, slips=(
        Slip("8 chips per host", lambda v: _pod2(v).chips / 8,
             "A v5p host drives 4 chips (a 2 x 2 x 1 block); 8 chips per host is the v5e/v6e "
             "layout."),
        Slip("one host per chip", lambda v: _pod2(v).chips, "Several chips share one host."),
    ), unit="count"),
    Part("pod_tensorcores", lambda v: _pod2(v).tensorcores, rel=0.001, slips=(
        Slip("chips", lambda v: _pod2(v).chips,
             "Each v5p chip carries 2 TensorCores (a 'megacore')."),), unit="count"),
    # the int8 rate and 2 TensorCores x the chip's rate are both twice the answer on a v5p:
    # one slip whose hint names both causes
    Part("pod_flops", lambda v: _pod2(v).flops("bf16"), slips=(
        Slip("int8 rate (or per TensorCore)", lambda v: _pod2(v).flops("int8"),
             "This asks for the bf16 rate; int8 is twice as fast. (Or: 4.59e14 FLOPs/s is per "
             "chip, both TensorCores together, not per TensorCore.)"),
    ), unit="FLOPs/s"),
    Part("pod_hbm_bytes", lambda v: _pod2(v).hbm_bytes, conventions=(
        Convention("GiB", lambda v: _pod2(v).chips * 96 * 2**30, PINNED, phrase=GB_PHRASE,
                   hint="1 GB is 1e9 bytes here (the title says so), not 2**30.", alternatives=('GB read as GiB',)),), slips=(
        Slip("per TensorCore", lambda v: _pod2(v).tensorcores * get_chip("TPU v5p").hbm_bytes,
             "96 GB is per chip, not per TensorCore."),
    ), unit="bytes", not_applicable=(
        NotApplicable("bf16 or fp32", "a pod's HBM capacity: no element size enters it"),)),
    # P3
    Part("critical_batch_pcie", lambda v: critical_intensity(_chip3(v), "bf16",
                                                              bandwidth=_chip3(v).pcie_bandwidth),
         conventions=(Convention(
             "multiply-add as 1 FLOP",
             lambda v: 2 * critical_intensity(_chip3(v), "bf16", bandwidth=_chip3(v).pcie_bandwidth),
             PINNED, phrase=FMA_PHRASE, hint=_FMA_HINT),), slips=(
        Slip("1 byte per weight", lambda v: critical_intensity(
            _chip3(v), "bf16", bandwidth=_chip3(v).pcie_bandwidth) / 2,
             "bf16 weights are 2 bytes each, so the intensity is about B, not 2B."),
        Slip("HBM", lambda v: critical_batch_size(_chip3(v), compute_dtype="bf16"),
             "That is the HBM answer; here the weights come over PCIe at {q3_pcie:.3g} bytes/s."),
    ), unit="count"),
    Part("t_pcie_matmul", lambda v: _pcie3(v).lower, slips=coinciding(
        Slip("HBM", lambda v: 2 * v["q3_D"] * v["q3_F"] / v["q3_hbm"],
             "The weights have to cross PCIe ({q3_pcie:.3g} bytes/s) before HBM is of any use."),
        Slip("T_math", lambda v: _pcie3(v).t_math,
             "The PCIe transfer takes far longer than the math: the lower bound is the larger "
             "of the two.")) + (
        Slip("1 byte per weight", lambda v: v["q3_D"] * v["q3_F"] / v["q3_pcie"],
             "bf16 is 2 bytes per weight."),
        Slip("sum", distinct_from(lambda v: _pcie3(v).lower, lambda v: _pcie3(v).upper),
             "Compute and transfer overlap perfectly, as the part says: the lower bound is the "
             "larger of the two times, not their sum."),
    ), unit="s"),
    # P4
    Part("t_matmul_b64", lambda v: _t4(v, 64).lower, slips=(
        Slip("bf16 bytes", lambda v: 2 * _t4(v, 64).t_comms,
             "int8 takes one byte per element; two bytes is bf16."),
        Slip("T_math", lambda v: _t4(v, 64).t_math,
             "At B = 64 the weights' bytes dominate: the lower bound is the larger of T_math "
             "and T_comms."),
        Slip("sum", lambda v: _t4(v, 64).upper, _SUM_4),
    ), unit="s"),
    Part("t_matmul_b1024", lambda v: _t4(v, 1024).lower, slips=coinciding(
        Slip("bf16 rate", lambda v: matmul_cost(1024, v["q4_D"], v["q4_F"], x_dtype="int8").flops
             / _chip4(v).flops("bf16"),
             "The {q4_chip} does int8 at {q4_int8_ops:.3g} OPs/s, twice its bf16 rate."),
        Slip("T_comms", lambda v: _t4(v, 1024).t_comms,
             "At B = 1024 the math takes longer than the memory traffic: the lower bound is the "
             "larger of the two."),
        Slip("sum", lambda v: _t4(v, 1024).upper, _SUM_4),
    ), unit="s"),
    # P5: leaving out one hop's 1 µs is within a percent of the answer (the bandwidth term is
    # at least 80 µs): accepted.
    Part("t_neighbour", lambda v: ppermute(_V5(v), v["q5_chip"], hop_latency=HOP_LATENCY).time,
         conventions=(Convention("no latency", lambda v: _V5(v) / _W5(v)),), slips=(
        Slip("both directions", lambda v: _V5(v) / (2 * _W5(v)) + HOP_LATENCY, _BIDI, alternatives=('bidirectional link',)),), unit="s"),
    Part("t_swap", lambda v: ppermute(_V5(v), v["q5_chip"], n_devices=2, hop_latency=HOP_LATENCY).time,
         conventions=(Convention("no latency", lambda v: _V5(v) / _W5(v)),), slips=(
        Slip("shared link", lambda v: 2 * _V5(v) / _W5(v) + HOP_LATENCY,
             "Each direction of a link has its own {q5_ici:.3g} bytes/s: the two arrays travel "
             "in opposite directions and do not share it."),
        Slip("both directions", lambda v: _V5(v) / (2 * _W5(v)) + HOP_LATENCY, _BIDI, alternatives=('bidirectional link',)),
    ), unit="s"),
    Part("t_ring", lambda v: _ring5(v).time, conventions=(
        Convention("one path", lambda v: _V5(v) / _W5(v) + _ring5(v).hops * HOP_LATENCY, PINNED,
                   phrase="using every path that helps",
                   hint="On a ring there are two 8-hop paths from chip 0 to chip 8, one each way "
                        "round, and the part asks for every path that helps: send half of A "
                        "along each."),), slips=(
        Slip("both directions", lambda v: _V5(v) / (4 * _W5(v)) + _ring5(v).hops * HOP_LATENCY,
             "Each half of A travels one way along its path at {q5_ici:.3g} bytes/s, not "
             "{q5_ici_both:.3g}.", alternatives=('bidirectional link',)),
    ), unit="s"),
    Part("t_line", lambda v: _line5(v).time, slips=(
        Slip("both directions", lambda v: _V5(v) / (2 * _W5(v)) + _line5(v).hops * HOP_LATENCY,
             "A {q5_line}-chip {q5_chip} axis has no wraparound: there is one path and it runs "
             "one way, at {q5_ici:.3g} bytes/s.", alternatives=('bidirectional link',)),), unit="s", not_applicable=(
        ONE_PASS,)),
    # P6
    Part("h100_cuda_cores", lambda v: _h100().cores * (_h100().fp32_cores_per_sm or 0), rel=0.001, slips=(
        Slip("sub-partitions", lambda v: _h100().cores * 4,
             "132 x 4 counts the SM sub-partitions (one tensor core each); every sub-partition "
             "has 32 fp32 CUDA cores."),
        Slip("32 per SM", lambda v: _h100().cores * 32,
             "An SM has 4 sub-partitions of 32 CUDA cores each."),
    ), unit="count"),
    Part("h100_vector_flops", _vector6, conventions=(
        Convention("multiply-add as 1 FLOP", lambda v: cuda_core_flops(_h100(), "fp32", fma_flops=1),
                   PINNED, phrase=FMA_PHRASE,
                   hint="A fused multiply-add counts as 2 FLOPs in this course (the title says "
                        "so)."),), slips=(
        Slip("base clock", lambda v: _vector6(v) * 1.59 / 1.98, "Use the boost clock, 1.98 GHz."),
    ), unit="FLOPs/s"),
    Part("tensor_to_vector_ratio", lambda v: _h100().flops("bf16") / _vector6(v), slips=(
        Slip("twice", lambda v: 2 * _h100().flops("bf16") / _vector6(v),
             "Twice too high: use the dense bf16 rate (the datasheet's 'with sparsity' figure is "
             "double), and count a fused multiply-add as 2 FLOPs on the CUDA cores too."),
        Slip("inverted", lambda v: _vector6(v) / _h100().flops("bf16"),
             "Divide the tensor-core rate by the CUDA-core rate (the answer is above 1)."),
    ), unit="ratio"),
    _crit_part("crit_h100_bf16", "H100", "bf16"),
    _crit_part("crit_h100_fp8", "H100", "fp8"),
    _crit_part("crit_b200_bf16", "B200", "bf16"),
    _crit_part("crit_b200_fp8", "B200", "fp8"),
    Part("t_b200_small", lambda v: _b200_small(v).lower, slips=(
        Slip("1 byte per element", lambda v: _b200_small(v).t_comms / 2,
             "bf16 takes 2 bytes per element."),
        Slip("T_math", lambda v: _b200_small(v).t_math,
             "At B = {q6_B} the weights' bytes dominate: the lower bound is the larger of "
             "T_math and T_comms."),
    ), unit="s"),
    Part("t_b200_large", lambda v: _b200_large(v).lower, slips=(
        Slip("sparse rate", lambda v: _b200_large(v).t_math / 2,
             "Use the dense rate: the datasheet's 4.5e15 bf16 FLOPs/s is 'with sparsity', twice "
             "the dense one."),
        Slip("T_comms", lambda v: _b200_large(v).t_comms,
             "A square {q6_N} matmul is compute-bound: the lower bound is the larger of T_math "
             "and T_comms."),
    ), unit="s"),
)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS` (:func:`scalebook.homework.parts.well_posed`: no
    slip or pinned convention within 6% of an accepted answer, no two hints on one value),
    which covers what this function once checked slip by slip (rounding down or not at all,
    max against min against sum of two times, one direction against both), and what the
    problems need to make sense:

    - P1: the weights need more than one chip and fit in the HBM of the chips they are split
      over (2·N bytes ≤ chips × HBM).
    - P3 (b): the layer is PCIe-bound (T_math < T_PCIe), as the text says.
    - P4: B = 64 is memory-bound and B = 1024 compute-bound, as (a)'s and (b)'s hints say.
    - P6 (f): the small matmul is memory-bound, (g) the square one compute-bound.
    """
    exact = _exact1(v)
    fits = 1 < exact and _bytes1(v) <= v["q1_chips"] * _chip1(v).hbm_bytes
    p3 = _pcie3(v).t_math < _pcie3(v).t_comms
    p4 = _t4(v, 64).t_math < _t4(v, 64).t_comms and _t4(v, 1024).t_comms < _t4(v, 1024).t_math
    p6 = (_b200_small(v).t_math < _b200_small(v).t_comms
          and _b200_large(v).t_comms < _b200_large(v).t_math)
    return bool(fits and p3 and p4 and p6 and parts_well_posed(PARTS, v)
                and drawn_as_first_published(v))


def drawn_as_first_published(v: Mapping[str, Any]) -> bool:
    """The margins hw2 drew with before its parts were declared, kept so that no student's
    numbers change: a course that updates the package while hw2 is out must grade every
    student against the numbers their notebook printed. Every draw they allow the generic rule
    allows too (tests/test_homework_parts.py checks the draws of 2,000 keys are unchanged).

    P1 (b): the exact chip ratio lies 6% or more under the whole number it rounds up to, which
    is at most 19. P3: T_math at most 60% of the PCIe time. P4: T_math / T_comms (B = 64) and
    T_comms / T_math (B = 1024) between 0.08 and 0.85. P5: the bandwidth term at least ten
    times the ring's 8 hops of latency. P6: the small matmul's T_math and the square one's
    T_comms at most 80% of the other term.
    """
    exact = _exact1(v)
    whole = math.ceil(exact)
    p1 = whole - exact >= 0.06 * whole and whole <= 19
    p3 = _pcie3(v).t_math <= 0.6 * _pcie3(v).t_comms
    m64, c64 = _t4(v, 64).t_math, _t4(v, 64).t_comms
    m1k, c1k = _t4(v, 1024).t_math, _t4(v, 1024).t_comms
    p4 = 0.08 <= m64 / c64 <= 0.85 and 0.08 <= c1k / m1k <= 0.85
    p5 = v["q5_array_bytes"] / (2 * v["q5_ici"]) >= 10 * RING_DST * HOP_LATENCY
    p6 = (_b200_small(v).t_math <= 0.8 * _b200_small(v).t_comms
          and _b200_large(v).t_comms <= 0.8 * _b200_large(v).t_math)
    return bool(p1 and p3 and p4 and p5 and p6)


SPEC = VariantSpec(
    assignment="hw2-hardware",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_hbm": ("HBM", "bytes/s"),
        "q1_hbm_gb": ("capacity", "GB"),
        "q3_bf16_flops": ("bf16 rate", "FLOPs/s"),
        "q3_pcie": ("PCIe", "bytes/s"),
        "q3_hbm": ("HBM", "bytes/s"),
        "q4_int8_ops": ("int8 rate", "OPs/s"),
        "q4_hbm": ("HBM", "bytes/s"),
        "q5_ici": ("W", "bytes/s"),
        "q5_ici_both": ("2W", "bytes/s"),
        "q5_array_bytes": ("bytes of A", "bytes"),
        "q5_line_last": ("L − 1", ""),
    },
)

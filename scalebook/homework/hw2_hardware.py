"""hw2-hardware: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1, sampling one token of a big model whose weights are spread over many TPUs: the model size
  N (billions of parameters), the number of chips and the TPU (v5p, v6e, v5e, v4p; its HBM
  bandwidth and capacity come from the catalog). Well posed: see :func:`well_posed`.
- P2, counting a TPU v5p slice: the slice shape X × Y × Z (multiples of 4 within the full pod,
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
from typing import Any, Mapping

from ..hardware import get_chip
from ..variants import Choice, VariantSpec

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


def _bounds(flops: float, bytes_: float, flops_per_s: float, bytes_per_s: float) -> tuple[float, float]:
    """(T_math, T_comms) of a roofline."""
    return flops / flops_per_s, bytes_ / bytes_per_s


def well_posed(v: Mapping[str, Any]) -> bool:
    """No draw where the problem stops making sense or a slip a hint names lands within the
    tolerance of the answer.

    - P1 (a): the weights fit in the HBM of the chips they are split over (2·N bytes ≤ chips ×
      HBM). P1 (b), whose check keeps the default 5% tolerance: the weights need more than one
      chip; the exact ratio 2·N / HBM lies 6% or more under the whole number it rounds up to,
      so "did not round up" is a wrong answer; and that whole number is at most 19, so rounding
      down (one chip fewer) is more than 5% off too.
    - P3 (b): the layer is PCIe-bound with T_math at most 60% of the PCIe time, so the hinted
      T_math is a wrong answer (and so is half the PCIe time, the "1 byte per weight" slip).
    - P4 (a), B = 64: memory-bound with 0.08 ≤ T_math / T_comms ≤ 0.85, so T_math, T_comms and
      their sum are three distinct answers; (b), B = 1024: compute-bound with
      0.08 ≤ T_comms / T_math ≤ 0.85 for the same reason.
    - P5: the array's bandwidth term is at least ten times the ring's 8 hops of latency, so
      every bandwidth slip (both directions, one path instead of two) stays a factor of about
      two off.
    - P6 (f): the small matmul is memory-bound with T_math at most 80% of T_comms, and
      (g) the square one compute-bound with T_comms at most 80% of T_math, so "the smaller of
      the two" is a wrong answer.
    """
    n_bytes = 2 * v["q1_params_b"] * 1e9
    hbm_bytes = v["q1_hbm_gb"] * 1e9
    exact = n_bytes / hbm_bytes
    whole = math.ceil(exact)
    p1 = (n_bytes <= v["q1_chips"] * hbm_bytes and exact > 1
          and whole - exact >= 0.06 * whole and whole <= 19)

    B3, D3, F3 = v["q3_B"], v["q3_D"], v["q3_F"]
    t_math3, t_pcie3 = _bounds(2 * B3 * D3 * F3, 2 * D3 * F3, v["q3_bf16_flops"], v["q3_pcie"])
    p3 = t_math3 <= 0.6 * t_pcie3

    D4, F4 = v["q4_D"], v["q4_F"]
    m64, c64 = _bounds(2 * 64 * D4 * F4, 64 * D4 + D4 * F4 + 64 * F4, v["q4_int8_ops"], v["q4_hbm"])
    m1k, c1k = _bounds(2 * 1024 * D4 * F4, 1024 * D4 + D4 * F4 + 1024 * F4, v["q4_int8_ops"],
                       v["q4_hbm"])
    p4 = 0.08 <= m64 / c64 <= 0.85 and 0.08 <= c1k / m1k <= 0.85

    p5 = v["q5_array_bytes"] / (2 * v["q5_ici"]) >= 10 * RING_DST * HOP_LATENCY

    b200 = get_chip("B200")
    B6, D6, F6, N6 = v["q6_B"], v["q6_D"], v["q6_F"], v["q6_N"]
    m_small, c_small = _bounds(2 * B6 * D6 * F6, 2 * (B6 * D6 + D6 * F6 + B6 * F6),
                               b200.flops("bf16"), b200.hbm_bandwidth)
    m_large, c_large = _bounds(2 * N6 ** 3, 2 * 3 * N6 ** 2, b200.flops("bf16"), b200.hbm_bandwidth)
    p6 = m_small <= 0.8 * c_small and c_large <= 0.8 * m_large

    return p1 and p3 and p4 and p5 and p6


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

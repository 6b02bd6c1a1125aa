"""hw1-rooflines: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1–P2, an int8 matmul and weight-only int8 on a TPU: the chip (v5e, v5p, v6e, whose int8
  rate is twice their bf16 rate, so the "used the bf16 rate" slip stays a distinct wrong
  answer) and the shape B, D, F. The v5e keeps this problem's HBM figure, 8.2e11 bytes/s.
  Well posed: see :func:`well_posed`.
- P3, the bf16 roofline of a small and a large square layer: the chip (v5e or v5p) and the two
  widths. Well posed: the small layer's exact crossover exists and is not the shortcut.
- P4, per-example weights: B and D = F.
- P5, a GPU datasheet's starred (sparse) bf16 figure: the GPU (H100, H200, A100, B200).
- P6, a dot product: N.
- P7, a matmul split over two chips along D: the TPU (its one-way ICI link) and B, D, F.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..hardware import get_chip
from ..variants import Choice, VariantSpec

#: Problem 1's stated HBM figure for a v5e (the catalog keeps the other published one, 8.1e11).
V5E_HBM_THIS_PROBLEM = 8.2e11

PARAMETERS = {
    "q1_chip": Choice(("TPU v5e", "TPU v5p", "TPU v6e"), "TPU"),
    "q1_B": Choice((1024, 512, 256, 2048), "B", "tokens"),
    "q1_D": Choice((4096, 8192, 16384), "D"),
    "q1_F": Choice((8192, 4096, 16384), "F"),
    "q3_chip": Choice(("TPU v5e", "TPU v5p"), "TPU"),
    "q3_D_small": Choice((1024, 2048), "small D = F"),
    "q3_D_large": Choice((8192, 16384), "large D = F"),
    "q4_B": Choice((64, 32, 128, 256), "B", "examples"),
    "q4_D": Choice((4096, 2048, 8192), "D = F"),
    "q5_gpu": Choice(("H100", "H200", "A100", "B200"), "GPU"),
    "q6_N": Choice((1_000_000, 250_000, 4_000_000, 16_000_000), "N", "elements", fmt="{:,}"),
    "q7_chip": Choice(("TPU v5e", "TPU v5p", "TPU v6e"), "TPU"),
    "q7_B": Choice((1024, 512, 2048), "B", "tokens"),
    "q7_D": Choice((16384, 8192, 32768), "D"),
    "q7_F": Choice((8192, 4096, 16384), "F"),
}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The figures each problem states, taken from the catalog for the drawn chips."""
    q1 = get_chip(p["q1_chip"])
    q3 = get_chip(p["q3_chip"])
    gpu = get_chip(p["q5_gpu"])
    q7 = get_chip(p["q7_chip"])
    return {
        "q1_int8_ops": q1.flops("int8"),
        "q1_bf16_flops": q1.flops("bf16"),
        "q1_hbm": V5E_HBM_THIS_PROBLEM if p["q1_chip"] == "TPU v5e" else q1.hbm_bandwidth,
        "q3_bf16_flops": q3.flops("bf16"),
        "q3_hbm": q3.hbm_bandwidth,
        "q4_int8_ops": get_chip("TPU v5e").flops("int8"),
        "q4_hbm": get_chip("TPU v5e").hbm_bandwidth,
        "q5_sparse_tflops": 2 * gpu.flops("bf16") / 1e12,
        "q5_hbm_tbs": gpu.hbm_bandwidth / 1e12,
        "q7_bf16_flops": q7.flops("bf16"),
        "q7_ici": q7.link_bandwidth_one_way,
    }


def well_posed(v: Mapping[str, Any]) -> bool:
    """No draw where a slip that a hint names lands within the 5% tolerance of the answer.

    - P1 (b): the exact intensity 2B / (1 + B(D + F) / DF) stays at least 10% under the 2B
      shortcut: B(D + F) / DF >= 0.12.
    - P1 (a)-(c): X's bytes and Out's bytes are each 7% or more of what they are added to
      (B·D against B·D + D·F, B·F against B·D + D·F), so leaving either out is a wrong answer.
    - P1 (c)-(d): T_math and T_comms differ by 10% or more and neither is under a tenth of the
      other, so max, min and sum are three distinct answers.
    - P3 (c): the small layer's exact crossover I*·D / (D − 2·I*) exists and lies 25% or more
      above I*: D > 2.6·I*.
    """
    B, D, F = v["q1_B"], v["q1_D"], v["q1_F"]
    t_math = 2 * B * D * F / v["q1_int8_ops"]
    t_comms = (B * D + D * F + B * F) / v["q1_hbm"]
    ratio = min(t_math, t_comms) / max(t_math, t_comms)
    i_star = v["q3_bf16_flops"] / v["q3_hbm"]
    read = B * D + D * F
    return (B * (D + F) / (D * F) >= 0.12
            and B * D >= 0.07 * read and B * F >= 0.07 * read
            and 0.1 <= ratio <= 0.9
            and v["q3_D_small"] > 2.6 * i_star)


SPEC = VariantSpec(
    assignment="hw1-rooflines",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_int8_ops": ("int8 rate", "OPs/s"),
        "q1_bf16_flops": ("bf16 rate", "FLOPs/s"),
        "q1_hbm": ("HBM", "bytes/s"),
        "q3_bf16_flops": ("bf16 rate", "FLOPs/s"),
        "q3_hbm": ("HBM", "bytes/s"),
        "q5_sparse_tflops": ("datasheet BF16 Tensor Core*", "teraFLOPS"),
        "q5_hbm_tbs": ("datasheet memory bandwidth", "TB/s"),
        "q7_bf16_flops": ("bf16 rate", "FLOPs/s"),
        "q7_ici": ("ICI link one way", "bytes/s"),
    },
)

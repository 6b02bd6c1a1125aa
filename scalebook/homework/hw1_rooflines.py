"""hw1-rooflines: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1–P2, an int8 matmul and weight-only int8 on a TPU: the chip (v5e, v5p, v6e, whose int8
  rate is twice their bf16 rate, so the "used the bf16 rate" slip stays a distinct wrong
  answer) and the shape B, D, F. The v5e keeps this problem's HBM figure, 8.2e11 bytes/s.
  Well posed: the generic rule over :data:`PARTS` (see :func:`well_posed`).
- P3, the bf16 roofline of a small and a large square layer: the chip (v5e or v5p) and the two
  widths. Well posed: the small layer's exact crossover exists and is not the shortcut.
- P4, per-example weights: B and D = F.
- P5, a GPU datasheet's starred (sparse) bf16 figure: the GPU (H100, H200, A100, B200).
- P6, a dot product: N.
- P7, a matmul split over two chips along D: the TPU (its one-way ICI link) and B, D, F.
"""

from __future__ import annotations

from typing import Any, Mapping

import math

from ..hardware import get_chip
from ..roofline import (attainable_flops, critical_batch_size, critical_contracting_dim,
                        critical_intensity, dot_product_cost, matmul_cost, matmul_time,
                        two_chip_sharded_matmul)
from ..variants import Choice, VariantSpec
from .parts import NotApplicable
from .parts import ACCEPTED, PINNED, Convention, Part, Slip, distinct_from
from .parts import well_posed as parts_well_posed

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


# --------------------------------------------------------------------------- the parts

#: Problem 3's batch sizes, 1, 2, 4, ..., 8192 tokens (the notebook's ``batch_sizes``).
BATCH_SIZES = tuple(2.0 ** k for k in range(14))
_NaN = float("nan")

#: The title's convention for counting operations, and the hint an answer that counts a
#: multiply-add as one operation (a convention some datasheets use) earns.
FMA_PHRASE = "A multiply-add counts as **2** FLOPs"
_FMA_HINT = ("This course counts a multiply-add as 2 operations (a multiply and an add), as the "
             "title says; counting it as 1 halves the count.")
_INT8_BYTES = "int8 takes one byte per element; two bytes is bf16."


def _fma_as_one(value, factor: float = 0.5, hint: str = _FMA_HINT) -> Convention:
    """A multiply-add counted as one operation: ``factor`` × the answer (½ for a count or a
    time, 2 for a batch size that balances it), pinned out by the title."""
    return Convention("multiply-add as 1 operation", lambda v: factor * value(v), PINNED,
                      phrase=FMA_PHRASE, hint=hint, alternatives=('multiply-add as 1 FLOP',))


def _chip1(v):
    """Problem 1's chip with this problem's HBM figure."""
    return get_chip(v["q1_chip"]).replace(hbm_bandwidth=v["q1_hbm"])


_cost1 = lambda v: matmul_cost(v["q1_B"], v["q1_D"], v["q1_F"], x_dtype="int8")
_time1 = lambda v: matmul_time(v["q1_B"], v["q1_D"], v["q1_F"], _chip1(v), x_dtype="int8")
_chip3 = lambda v: get_chip(v["q3_chip"])
_i_star3 = lambda v: critical_intensity(_chip3(v), "bf16")


def _roofline3(v, D: int, bytes_scale: float = 1.0, clip: bool = True) -> tuple[float, ...]:
    """Problem 3: the achievable bf16 FLOPs/s of the square layer D = F at each batch size,
    exact bytes (× ``bytes_scale``); ``clip`` False leaves out the peak."""
    chip = _chip3(v)
    out = []
    for b in BATCH_SIZES:
        intensity = matmul_cost(b, D, D).intensity / bytes_scale
        out.append(float(attainable_flops(intensity, chip) if clip
                         else intensity * chip.hbm_bandwidth))
    return tuple(out)


def _shortcut3(v, D: int) -> tuple[float, ...]:
    """Problem 3 under the B << D shortcut: intensity B, roofline min(C, B·W)."""
    chip = _chip3(v)
    return tuple(min(chip.flops("bf16"), b * chip.hbm_bandwidth) for b in BATCH_SIZES)


def _crossover3(v) -> float:
    """Problem 3 (c): the B at which B·D / (2B + D) = C/W, D = F the small width."""
    i_star, D = _i_star3(v), v["q3_D_small"]
    return i_star * D / (D - 2 * i_star)


_intensity4 = lambda v: matmul_cost(v["q4_B"], v["q4_D"], v["q4_D"], x_dtype="int8",
                                    batched_weights=True).intensity
_shared4 = lambda v: matmul_cost(v["q4_B"], v["q4_D"], v["q4_D"], x_dtype="int8").intensity
_v5e = lambda: get_chip("TPU v5e")
_fraction4 = lambda v: attainable_flops(_intensity4(v), _v5e(), "int8") / _v5e().flops("int8")
_gpu5 = lambda v: get_chip(v["q5_gpu"])
_crit5 = lambda v: critical_batch_size(_gpu5(v), compute_dtype="bf16")
_dot6 = lambda v: dot_product_cost(v["q6_N"], dtype="bf16").intensity
_chip7 = lambda v: get_chip(v["q7_chip"])
_split7 = lambda v: two_chip_sharded_matmul(v["q7_B"], v["q7_D"], v["q7_F"], _chip7(v), dtype="bf16")
_dcrit7 = lambda v: critical_contracting_dim(_chip7(v), dtype="bf16")

_SHARED_4 = ("Every example has its own D x F matrix, so the weight bytes grow with B just as the "
             "OPs do: the B in the numerator cancels.")

PARTS = (
    # P1 (a): one cell grades bytes_read and bytes_written, one point.
    Part("bytes_read", lambda v: _cost1(v).bytes_read, slips=(
        Slip("bf16 bytes", lambda v: 2 * _cost1(v).bytes_read, _INT8_BYTES, alternatives=('bf16 or fp32',)),
        Slip("Out counted as read", lambda v: _cost1(v).total_bytes,
             "bytes_read counts the inputs X and W; Out belongs in bytes_written."),
        Slip("weights only", lambda v: v["q1_D"] * v["q1_F"],
             "X has to be read from HBM too, not only the weights."),
    ), unit="bytes", not_applicable=(
        NotApplicable("bf16 or fp32", "int8 is one byte per element: half a byte is no reading of the text", "/"),)),
    Part("bytes_written", lambda v: _cost1(v).bytes_written, slips=(
        Slip("bf16 bytes", lambda v: 2 * _cost1(v).bytes_written, _INT8_BYTES, alternatives=('bf16 or fp32',)),
    ), unit="bytes", not_applicable=(
        NotApplicable("bf16 or fp32", "int8 is one byte per element: half a byte is no reading of the text", "/"),)),
    # P1 (b)
    Part("ops", lambda v: _cost1(v).flops, conventions=(
        _fma_as_one(lambda v: _cost1(v).flops),), unit="FLOPs", not_applicable=(
        NotApplicable("forward only", "one matmul's operations, not a training step"),)),
    Part("intensity", lambda v: _cost1(v).intensity, conventions=(
        Convention("B << D shortcut 2B", lambda v: 2 * v["q1_B"], PINNED,
                   phrase="**exact** bytes read plus written",
                   hint="2B is the B << D shortcut; B = {q1_B} is not small next to D and F, so "
                        "divide by the exact bytes read plus written, as the part asks."),
        _fma_as_one(lambda v: _cost1(v).intensity),
    ), slips=(
        Slip("bytes read only", lambda v: _cost1(v).flops / _cost1(v).bytes_read,
             "Count the bytes written for Out as well as those read."),
    ), unit="FLOPs/byte"),
    # P1 (c)
    Part("t_math", lambda v: _time1(v).t_math, conventions=(
        _fma_as_one(lambda v: _time1(v).t_math),), slips=(
        Slip("bf16 rate", lambda v: _cost1(v).flops / _chip1(v).flops("bf16"),
             "This chip does int8 at {q1_int8_ops:.3g} OPs/s, twice its bf16 rate."),
        Slip("divided by bandwidth", lambda v: _cost1(v).flops / v["q1_hbm"],
             "T_math divides operations by the chip's OPs/s; the bandwidth belongs in T_comms."),
    ), unit="s"),
    Part("t_comms", lambda v: _time1(v).t_comms, slips=(
        Slip("divided by OPs/s", lambda v: _cost1(v).total_bytes / v["q1_int8_ops"],
             "T_comms divides bytes by the HBM bandwidth in bytes/s, not by the OPs/s."),
        Slip("bf16 bytes", lambda v: 2 * _time1(v).t_comms, _INT8_BYTES, alternatives=('bf16 or fp32',)),
        Slip("reads only", lambda v: _cost1(v).bytes_read / v["q1_hbm"],
             "Writing Out back to HBM takes bandwidth too."),
    ), unit="s", not_applicable=(
        NotApplicable("bf16 or fp32", "int8 is one byte per element: half a byte is no reading of the text", "/"),)),
    # P1 (d)
    Part("t_lower", lambda v: _time1(v).lower, slips=(
        Slip("sum", lambda v: _time1(v).upper,
             "With perfect overlap the runtime is the larger of T_math and T_comms, not their sum."),
        Slip("min", lambda v: min(_time1(v).t_math, _time1(v).t_comms),
             "Overlap hides the shorter time behind the longer one: take the larger."),
    ), unit="s"),
    Part("t_upper", lambda v: _time1(v).upper, slips=(
        Slip("max", lambda v: _time1(v).lower,
             "Without any overlap compute and memory traffic happen one after the other: add them."),
    ), unit="s"),
    # P1 (e)
    Part("critical_batch_int8", lambda v: critical_batch_size(_chip1(v), compute_dtype="int8"),
         conventions=(_fma_as_one(lambda v: critical_batch_size(_chip1(v), compute_dtype="int8"),
                                  factor=2.0, hint=(
        "With one-byte weights the intensity is about 2B OPs/byte (a multiply-add is 2 "
        "operations, as the title says), so set 2B, not B, equal to C/W.")),), slips=(
        Slip("bf16 rate", lambda v: critical_batch_size(_chip1(v), compute_dtype="bf16",
                                                        weight_dtype="int8"),
             "This matmul runs at the int8 rate, {q1_int8_ops:.3g} OPs/s, twice the bf16 rate."),
    ), unit="count", not_applicable=(
        NotApplicable("multiply-add as 1 FLOP", "counting a multiply-add as 1 doubles this critical batch (the pinned convention); halving it is no reading of that", "/"),)),
    # P2
    Part("critical_batch_mixed", lambda v: critical_batch_size(_chip1(v), compute_dtype="bf16",
                                                               weight_dtype="int8"),
         slips=(
        Slip("bf16 weights", lambda v: critical_batch_size(_chip1(v), compute_dtype="bf16"),
             "That is the answer for bf16 weights (intensity about B). Here each weight is one "
             "byte, so the intensity is about 2B FLOPs/byte, while the math still runs at the "
             "bf16 rate."),
        Slip("int8 rate", lambda v: critical_batch_size(_chip1(v), compute_dtype="int8",
                                                        weight_dtype="bf16"),
             "The multiply runs in bf16 after the weights are converted: use the bf16 rate, "
             "{q1_bf16_flops:.3g} FLOPs/s, and one byte per weight."),
    ), unit="count"),
    # P3 (a), (b): arrays of 14 values, judged element by element.
    Part("flops_small", lambda v: _roofline3(v, v["q3_D_small"]), shape=(14,), conventions=(
        Convention("B << D shortcut", lambda v: _shortcut3(v, v["q3_D_small"]), PINNED,
                   phrase="computed from the **exact**",
                   hint="These follow the B << D shortcut (intensity about B). For D = F = "
                        "{q3_D_small} the bytes of X and Out matter: use the exact bytes of X, "
                        "W and Out, as the problem asks."),), slips=(
        Slip("no peak", lambda v: _roofline3(v, v["q3_D_small"], clip=False),
             "No chip beats its peak: take the minimum of the peak and intensity x bandwidth."),
        Slip("elements, not bytes", lambda v: _roofline3(v, v["q3_D_small"], bytes_scale=0.5),
             "bf16 takes 2 bytes per element: count bytes, not elements."),
    ), unit="FLOPs/s"),
    Part("flops_large", lambda v: _roofline3(v, v["q3_D_large"]), shape=(14,), conventions=(
        # within a few percent of the exact curve for the large layer: accepted
        Convention("B << D shortcut", lambda v: _shortcut3(v, v["q3_D_large"]), ACCEPTED),),
         slips=(
        Slip("no peak", lambda v: _roofline3(v, v["q3_D_large"], clip=False),
             "No chip beats its peak: take the minimum of the peak and intensity x bandwidth."),
        Slip("elements, not bytes", lambda v: _roofline3(v, v["q3_D_large"], bytes_scale=0.5),
             "bf16 takes 2 bytes per element: count bytes, not elements."),
    ), unit="FLOPs/s"),
    # P3 (c)
    Part("b_compute_bound_small", _crossover3, conventions=(
        Convention("rounded up to a power of two",
                   distinct_from(_crossover3, lambda v: 2.0 ** math.ceil(math.log2(_crossover3(v)))),
                   PINNED, phrase="do not round it to a power of two",
                   hint="Give the real number that solves the equation, as the part asks, not "
                        "the next power of two."),), slips=(
        Slip("B << D shortcut", _i_star3,
             "That is the B << D rule of thumb. For D = F = {q3_D_small} include the bytes of X "
             "and Out and solve the exact intensity for B."),
    ), unit="count"),
    # P4
    Part("intensity_per_example", _intensity4, conventions=(_fma_as_one(_intensity4),), slips=(
        Slip("shared weights", _shared4, _SHARED_4),
        Slip("2B", lambda v: 2 * v["q4_B"], _SHARED_4),
    ), unit="FLOPs/byte"),
    Part("best_fraction_of_peak", _fraction4, slips=(
        Slip("bf16 peak", lambda v: _intensity4(v) * _v5e().hbm_bandwidth / _v5e().flops("bf16"),
             "Compare with the int8 peak, 3.94e14 OPs/s, not the bf16 one."),
        Slip("percentage", lambda v: 100 * _fraction4(v),
             "Give a fraction between 0 and 1, not a percentage.", alternatives=('percent for fraction',)),
        Slip("shared weights", lambda v: attainable_flops(_shared4(v), _v5e(), "int8")
             / _v5e().flops("int8"),
             "Every example has its own D x F matrix, so the weight bytes grow with B."),
    ), unit="fraction"),
    # P5
    Part("critical_batch_gpu", _crit5, slips=(
        Slip("sparse rate", lambda v: 2 * _crit5(v),
             "The starred {q5_sparse_tflops:,.0f} TFLOPS is 'with sparsity' (2:4 structured "
             "sparsity); a dense matmul gets half of it."),
        Slip("one byte per weight", lambda v: _crit5(v) / 2,
             "In bf16 each weight is 2 bytes, so the intensity is about B, not 2B."),
    ), unit="count"),
    # P6: leaving out the one scalar written, or counting N − 1 adds, is within a
    # millionth: both accepted.
    Part("intensity_dot", _dot6, conventions=(
        Convention("reads only", lambda v: 2 * v["q6_N"] / (4 * v["q6_N"])),
        Convention("N - 1 adds", lambda v: (2 * v["q6_N"] - 1) / (4 * v["q6_N"] + 2)),
        _fma_as_one(_dot6),
    ), slips=(
        Slip("elements, not bytes", lambda v: 2 * _dot6(v),
             "Count bytes, not elements: each bf16 value takes 2 bytes."),
    ), unit="FLOPs/byte"),
    # P7
    Part("t_math_shard", lambda v: _split7(v).t_math, conventions=(
        _fma_as_one(lambda v: _split7(v).t_math),), slips=(
        Slip("whole D", lambda v: 2 * _split7(v).t_math, "Each chip multiplies only its half of D."),
    ), unit="s"),
    Part("t_comms_shard", lambda v: _split7(v).t_comms, slips=(
        Slip("both directions (or 1 byte)", lambda v: _split7(v).t_comms / 2,
             "One chip's partial result travels one way: {q7_ici:.3g} bytes/s, not twice that "
             "(both directions together). (Or: bf16 is 2 bytes.)"),
        Slip("shared link", lambda v: 2 * _split7(v).t_comms,
             "Each direction of the link has its own {q7_ici:.3g} bytes/s: the two partial "
             "results do not share it."),
    ), unit="s"),
    Part("d_critical", _dcrit7, slips=(
        Slip("both directions (or 1 byte)", lambda v: _dcrit7(v) / 2,
             "Count the link one way, not both directions added, and 2 bytes per bf16 partial sum."),
        Slip("HBM", lambda v: critical_contracting_dim(_chip7(v), dtype="bf16",
                                                       bandwidth=_chip7(v).hbm_bandwidth),
             "The partial sums cross the ICI link, not HBM."),
    ), unit="count"),
)


def well_posed(v: Mapping[str, Any]) -> bool:
    """The generic rule over :data:`PARTS` (:func:`scalebook.homework.parts.well_posed`: no
    slip or pinned convention within 6% of an accepted answer, no two hints on one value), which
    covers what this function once checked by hand (the 2B shortcut and X's and Out's bytes
    7% or more off; max, min and sum of the two times distinct), and for P3 (c): the small
    layer's exact crossover I*·D / (D − 2·I*) exists and lies 25% or more above I*
    (D > 2.6·I*), so the crossover is a real question, not a rounding of the shortcut.
    """
    return v["q3_D_small"] > 2.6 * v["q3_bf16_flops"] / v["q3_hbm"] and parts_well_posed(PARTS, v)


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

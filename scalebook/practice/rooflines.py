"""Practice problems of the chapter book/rooflines.md (see :mod:`scalebook.practice.problem`)."""

from __future__ import annotations

from typing import Any, Mapping

from ..hardware import get_chip
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from
from ..roofline import (attainable_flops, critical_batch_size, critical_intensity, matmul_cost,
                        matmul_time, two_chip_sharded_matmul)
from ..units import format_bandwidth, format_bytes, format_flops, format_seconds
from ..variants import Choice, VariantSpec
from .common import in_mib, percent_slip
from .problem import Problem


#: The hints several problems share: the chapter's classic slips, said once.
_FMA_HINT = "a multiply-add is 2 FLOPs: the matmul does 2·B·D·F of them."
_BF16_HINT = "bf16 takes 2 bytes per element."
_US_HINT = "the answer is asked in µs (1 s = 1e6 µs)."
_OUTPUT_HINT = "the output C[B, F] is written back to HBM too: 2·B·F more bytes."


def _bf16_matmul(v: Mapping[str, Any]):
    return matmul_time(v["B"], v["D"], v["F"], v["chip"])


def _lower_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).lower * 1e6


def _matmul_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip = get_chip(v["chip"])
    cost = matmul_cost(v["B"], v["D"], v["F"])
    t = _bf16_matmul(v)
    bound = "compute" if t.t_math >= t.t_comms else "memory bandwidth"
    return (
        f"FLOPs = 2·B·D·F = {cost.flops:.4g}.",
        f"Bytes = 2·(B·D + D·F + B·F) = {cost.total_bytes:.4g} (bf16: 2 bytes per element).",
        f"T_math = {cost.flops:.4g} / {chip.flops('bf16'):.3g} FLOPs/s = {format_seconds(t.t_math)}.",
        f"T_comms = {cost.total_bytes:.4g} / {chip.hbm_bandwidth:.3g} bytes/s = "
        f"{format_seconds(t.t_comms)}.",
        f"With perfect overlap the time is at least max(T_math, T_comms) = "
        f"{format_seconds(t.lower)}: the matmul is bound by {bound}.",
    )


MATMUL_TIME = Problem(
    id="rooflines.matmul_time",
    title="How long does one bf16 matmul take?",
    spec=VariantSpec(
        assignment="practice:rooflines.matmul_time",
        parameters={
            "chip": Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100"), "chip"),
            "B": Choice((512, 128, 256, 1024, 2048, 4096), "B", "tokens"),
            "D": Choice((8192, 4096, 16384), "D"),
            "F": Choice((16384, 8192, 32768), "F"),
        },
    ),
    text=("A bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} runs on one "
          "{chip}, reading X and W from HBM and writing the output there. Assume compute and "
          "memory traffic overlap perfectly. What is the lower bound on its runtime, in µs?"),
    parts=(
        Part(
            answer="t_lower_us",
            expected=_lower_us,
            conventions=(
                Convention("no overlap (sum)",
                           distinct_from(_lower_us, lambda v: _bf16_matmul(v).upper * 1e6),
                           verdict=PINNED, phrase="overlap perfectly",
                           hint="the problem assumes compute and memory traffic overlap "
                                "perfectly: the bound is the larger of T_math and T_comms, "
                                "not their sum."),
            ),
            slips=(
                Slip("one FLOP per multiply-add", distinct_from(_lower_us, lambda v: max(
                    _bf16_matmul(v).t_math / 2, _bf16_matmul(v).t_comms) * 1e6),
                     _FMA_HINT),
                Slip("one byte per element", distinct_from(_lower_us, lambda v: max(
                    _bf16_matmul(v).t_math, _bf16_matmul(v).t_comms / 2) * 1e6),
                     _BF16_HINT),
                Slip("seconds, not µs", lambda v: _bf16_matmul(v).lower,
                     _US_HINT),
            ), unit="s",
        ),
    ),
    labels={"t_lower_us": "lower bound on the runtime, in µs"},
    solution=_matmul_solution,
)



# --------------------------------------------------------------------------- the practice set
# Short problems on one idea each of the chapter, on the matmul X[B, D] · W[D, F] in bf16 unless
# a problem says otherwise; none repeats a graded problem of hw1-rooflines.

#: The chips the set draws, the chapter's own first; the matmul shapes it draws.
_CHIPS = Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200"), "chip")
_B = Choice((512, 128, 256, 1024, 2048, 4096), "B", "tokens")
_D = Choice((8192, 4096, 16384), "D")
_F = Choice((16384, 8192, 32768), "F")
_MATMUL_TEXT = ("a bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} on one "
                "{chip}, reading X and W from HBM and writing the output there")


def _matmul_spec(name: str, **extra: Choice) -> VariantSpec:
    return VariantSpec(assignment=f"practice:rooflines.{name}",
                       parameters={"chip": _CHIPS, "B": _B, "D": _D, "F": _F, **extra})


def _cost(v: Mapping[str, Any]):
    return matmul_cost(v["B"], v["D"], v["F"])


def _upper_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).upper * 1e6


def _upper_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    t = _bf16_matmul(v)
    return (f"T_math = 2·B·D·F / C = {format_seconds(t.t_math)}.",
            f"T_comms = 2·(B·D + D·F + B·F) / W = {format_seconds(t.t_comms)}.",
            f"One after the other, the time is at most T_math + T_comms = "
            f"{format_seconds(t.upper)}.")


MATMUL_UPPER = Problem(
    id="rooflines.matmul_upper",
    title="A matmul without overlap",
    spec=_matmul_spec("matmul_upper"),
    text=("Take " + _MATMUL_TEXT + ". Assume no overlap: the chip first loads, then computes, "
          "then writes. What is the upper bound on its runtime, in µs?"),
    parts=(
        Part(answer="t_upper_us", expected=_upper_us,
             conventions=(
                 Convention("perfect overlap (max)",
                            distinct_from(_upper_us, _lower_us), verdict=PINNED,
                            phrase="Assume no overlap",
                            hint="the problem assumes no overlap: add T_math and T_comms; the "
                                 "larger of the two is the bound with perfect overlap."),
             ),
             slips=(
                 Slip("seconds, not µs", lambda v: _bf16_matmul(v).upper,
                      _US_HINT),
             ), unit="s"),
    ),
    labels={"t_upper_us": "upper bound on the runtime, in µs"},
    solution=_upper_solution,
)


def _t_math_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).t_math * 1e6


def _t_math_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip, cost = get_chip(v["chip"]), _cost(v)
    return (f"FLOPs = 2·B·D·F = {cost.flops:.4g} (a multiply-add is 2 FLOPs).",
            f"The {v['chip']} does {format_flops(chip.flops('bf16'))} in bf16 (dense).",
            f"T_math = {cost.flops:.4g} / {chip.flops('bf16'):.3g} = "
            f"{format_seconds(_bf16_matmul(v).t_math)}.")


T_MATH = Problem(
    id="rooflines.t_math",
    title="The compute time of a matmul",
    spec=_matmul_spec("t_math"),
    text=("Take " + _MATMUL_TEXT + ". How long do its FLOPs take at the chip's dense bf16 "
          "peak (T_math), in µs?"),
    parts=(
        Part(answer="t_math_us", expected=_t_math_us,
             slips=(
                 Slip("one FLOP per multiply-add", lambda v: _t_math_us(v) / 2,
                      _FMA_HINT),
                 Slip("seconds, not µs", lambda v: _bf16_matmul(v).t_math,
                      _US_HINT),
             ), unit="s"),
    ),
    labels={"t_math_us": "T_math, in µs"},
    solution=_t_math_solution,
)


def _t_comms_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).t_comms * 1e6


def _read_only_us(v: Mapping[str, Any]) -> float:
    return _cost(v).bytes_read / get_chip(v["chip"]).hbm_bandwidth * 1e6


def _t_comms_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip, cost = get_chip(v["chip"]), _cost(v)
    return (f"Bytes read = 2·(B·D + D·F) = {cost.bytes_read:.4g}; written = 2·B·F = "
            f"{cost.bytes_written:.4g} (bf16: 2 bytes per element).",
            f"The {v['chip']}'s HBM moves {format_bandwidth(chip.hbm_bandwidth)}.",
            f"T_comms = {cost.total_bytes:.4g} / {chip.hbm_bandwidth:.3g} = "
            f"{format_seconds(_bf16_matmul(v).t_comms)}.")


T_COMMS = Problem(
    id="rooflines.t_comms",
    title="The memory time of a matmul",
    spec=_matmul_spec("t_comms"),
    text=("Take " + _MATMUL_TEXT + ". How long does its HBM traffic take at the chip's full "
          "HBM bandwidth (T_comms), in µs?"),
    parts=(
        Part(answer="t_comms_us", expected=_t_comms_us,
             slips=(
                 Slip("one byte per element", lambda v: _t_comms_us(v) / 2,
                      _BF16_HINT),
                 Slip("output not written", distinct_from(_t_comms_us, _read_only_us),
                      _OUTPUT_HINT),
             ), unit="s"),
    ),
    labels={"t_comms_us": "T_comms, in µs"},
    solution=_t_comms_solution,
)


def _intensity(v: Mapping[str, Any]) -> float:
    return _cost(v).intensity


def _intensity_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost = _cost(v)
    return (f"FLOPs = 2·B·D·F = {cost.flops:.4g}.",
            f"Bytes = 2·(B·D + D·F + B·F) = {cost.total_bytes:.4g}.",
            f"Intensity = FLOPs / bytes = {cost.intensity:.4g} FLOPs/byte.")


INTENSITY = Problem(
    id="rooflines.intensity",
    title="The arithmetic intensity of a matmul",
    spec=VariantSpec(assignment="practice:rooflines.intensity",
                     parameters={"B": _B, "D": _D, "F": _F}),
    text=("A bf16 matmul X[B, D] · W[D, F] has B = {B:,}, D = {D:,} and F = {F:,}. Counting "
          "exact bytes (X and W read, the output written, 2 bytes per element), what is its "
          "arithmetic intensity, in FLOPs per byte?"),
    parts=(
        Part(answer="intensity", expected=_intensity,
             slips=(
                 Slip("one FLOP per multiply-add", lambda v: _intensity(v) / 2,
                      _FMA_HINT),
                 Slip("one byte per element", lambda v: _intensity(v) * 2,
                      _BF16_HINT),
                 Slip("B ≪ D, F approximation", distinct_from(_intensity, lambda v: float(v["B"])),
                      "the approximation 2B/2 = B holds only for B ≪ D, F; count every byte: "
                      "2·(B·D + D·F + B·F)."),
             ), unit="FLOPs/byte"),
    ),
    labels={"intensity": "arithmetic intensity, in FLOPs/byte"},
    solution=_intensity_solution,
)


def _critical_batch(v: Mapping[str, Any]) -> float:
    return critical_batch_size(v["chip"])


def _critical_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip = get_chip(v["chip"])
    return (f"C = {format_flops(chip.flops('bf16'))} (bf16, dense), W = "
            f"{format_bandwidth(chip.hbm_bandwidth)} (HBM).",
            "For B ≪ D, F the weights dominate the bytes: intensity ≈ 2·B·D·F / (2·D·F) = B.",
            f"Compute-bound once B > C / W = {critical_intensity(chip):.4g}, so B* ≈ "
            f"{_critical_batch(v):.0f} tokens.")


CRITICAL_BATCH = Problem(
    id="rooflines.critical_batch",
    title="The critical batch size of a chip",
    spec=VariantSpec(assignment="practice:rooflines.critical_batch",
                     parameters={"chip": Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200",
                                                 "H200", "A100"), "chip")}),
    text=("On one {chip}, a bf16 matmul X[B, D] · W[D, F] with B ≪ D, F reads mostly weights. "
          "Above how many tokens B does it become compute-bound (the critical batch size B*), "
          "using the chip's dense bf16 peak and its HBM bandwidth?"),
    parts=(
        Part(answer="critical_batch", expected=_critical_batch, rel=0.03,
             slips=(
                 Slip("one FLOP per multiply-add", lambda v: _critical_batch(v) * 2,
                      "a multiply-add is 2 FLOPs: the intensity is 2·B·D·F / (2·D·F) = B, not "
                      "B / 2."),
                 Slip("one byte per element", lambda v: _critical_batch(v) / 2,
                      "bf16 weights take 2 bytes per element."),
             ), unit="count"),
    ),
    labels={"critical_batch": "critical batch size B*, in tokens"},
    solution=_critical_solution,
)


def _attainable_tflops(v: Mapping[str, Any]) -> float:
    return float(attainable_flops(v["I"], v["chip"])) / 1e12


def _attainable_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip = get_chip(v["chip"])
    rate = _attainable_tflops(v) * 1e12
    side = "under the ridge: memory-bound" if rate < chip.flops("bf16") else "past the ridge: compute-bound"
    return (f"The roofline: min(C, I·W) with C = {format_flops(chip.flops('bf16'))} and W = "
            f"{format_bandwidth(chip.hbm_bandwidth)}.",
            f"I·W = {v['I']} × {chip.hbm_bandwidth:.3g} = {format_flops(v['I'] * chip.hbm_bandwidth)}.",
            f"The ridge is at C / W = {critical_intensity(chip):.4g} FLOPs/byte; I = {v['I']} is "
            f"{side}.",
            f"Attainable: {format_flops(rate)}.")


ATTAINABLE = Problem(
    id="rooflines.attainable",
    title="Reading the roofline",
    spec=VariantSpec(assignment="practice:rooflines.attainable",
                     parameters={"chip": _CHIPS,
                                 "I": Choice((64, 16, 32, 128, 512, 1024), "I", "FLOPs/byte")}),
    text=("A bf16 kernel on one {chip} has an arithmetic intensity of {I} FLOPs per byte of HBM "
          "traffic. What FLOP rate can it attain at best, by the roofline, in TFLOP/s?"),
    parts=(
        Part(answer="attainable_tflops", expected=_attainable_tflops,
             slips=(
                 Slip("peak regardless of intensity", distinct_from(
                     _attainable_tflops, lambda v: get_chip(v["chip"]).flops("bf16") / 1e12),
                      "below the ridge C / W the kernel waits on memory: it attains I·W, not "
                      "the peak."),
                 Slip("I·W past the ridge", distinct_from(
                     _attainable_tflops, lambda v: v["I"] * get_chip(v["chip"]).hbm_bandwidth / 1e12),
                      "the roofline is flat past the ridge: no kernel runs faster than the "
                      "chip's peak C."),
             ), unit="FLOPs/s"),
    ),
    labels={"attainable_tflops": "attainable rate, in TFLOP/s"},
    solution=_attainable_solution,
)


def _peak_percent(v: Mapping[str, Any]) -> float:
    t = _bf16_matmul(v)
    return 100 * t.t_math / t.lower


def _peak_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    t = _bf16_matmul(v)
    return (f"T_math = {format_seconds(t.t_math)}, T_comms = {format_seconds(t.t_comms)}.",
            f"With perfect overlap the matmul takes max(T_math, T_comms) = {format_seconds(t.lower)}.",
            f"The share of the peak it uses is T_math / that = {_peak_percent(v):.3g}%.")


PEAK_FRACTION = Problem(
    id="rooflines.peak_fraction",
    title="How much of the peak does a matmul use?",
    spec=_matmul_spec("peak_fraction", B=Choice((64, 32, 128, 256, 512, 1024), "B", "tokens")),
    text=("Take " + _MATMUL_TEXT + ". Assume compute and memory traffic overlap perfectly. "
          "What percentage of the chip's dense bf16 peak does it attain, in %?"),
    parts=(
        Part(answer="peak_percent", expected=_peak_percent,
             conventions=(
                 Convention("no overlap (sum)", distinct_from(
                     _peak_percent, lambda v: 100 * _bf16_matmul(v).t_math / _bf16_matmul(v).upper),
                            verdict=PINNED, phrase="overlap perfectly",
                            hint="the problem assumes perfect overlap: the matmul takes "
                                 "max(T_math, T_comms), not their sum."),
             ),
             slips=(
                 percent_slip(_peak_percent),
             ), unit="fraction"),
    ),
    labels={"peak_percent": "share of the peak, in %"},
    solution=_peak_solution,
)


def _two_chip(v: Mapping[str, Any]):
    return two_chip_sharded_matmul(v["B"], v["D"], v["F"], v["chip"])


def _link_us(v: Mapping[str, Any]) -> float:
    return _two_chip(v).t_comms * 1e6


def _link_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip = get_chip(v["chip"])
    nbytes = 2 * v["B"] * v["F"]
    return (f"Each chip holds a partial sum of the whole output, B·F = {v['B'] * v['F']:,} "
            f"elements: {format_bytes(nbytes, binary=False)} in bf16.",
            f"One link carries {format_bandwidth(chip.link_bandwidth_one_way)} one way.",
            f"T_comms = {nbytes:,} / {chip.link_bandwidth_one_way:.3g} = "
            f"{format_seconds(_two_chip(v).t_comms)}.")


LINK_TIME = Problem(
    id="rooflines.link_time",
    title="Two chips add their partial sums",
    spec=VariantSpec(assignment="practice:rooflines.link_time",
                     parameters={"chip": Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100"), "chip"),
                                 "B": _B, "D": Choice((16384, 8192, 32768), "D"),
                                 "F": Choice((8192, 4096, 16384), "F")}),
    text=("A bf16 matmul X[B, D_X] ·_D W[D_X, F] with B = {B:,}, D = {D:,} and F = {F:,} is "
          "split over two {chip} chips along D. Each chip sends its partial sum of the output "
          "to the other over one link, at the link's one-way bandwidth. How long does that "
          "take, in µs?"),
    parts=(
        Part(answer="link_us", expected=_link_us,
             slips=(
                 Slip("one byte per element", lambda v: _link_us(v) / 2,
                      _BF16_HINT),
                 Slip("sent the weight shard", distinct_from(
                     _link_us, lambda v: _link_us(v) * v["D"] / (2 * v["B"])),
                      "the weights stay where they are: what crosses the link is the partial "
                      "output C[B, F], B·F elements."),
             ), unit="s"),
    ),
    labels={"link_us": "time to send the partial sums, in µs"},
    solution=_link_solution,
)


def _hbm_mb(v: Mapping[str, Any]) -> float:
    return _cost(v).total_bytes / 1e6


def _hbm_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost = _cost(v)
    return (f"Read X: 2·B·D = {2 * v['B'] * v['D']:,} bytes; read W: 2·D·F = "
            f"{2 * v['D'] * v['F']:,} bytes.",
            f"Write the output: 2·B·F = {2 * v['B'] * v['F']:,} bytes.",
            f"In all {format_bytes(cost.total_bytes, binary=False)} "
            f"({cost.total_bytes / 1e6:.4g} MB).")


HBM_BYTES = Problem(
    id="rooflines.hbm_bytes",
    title="The bytes a matmul moves",
    spec=VariantSpec(assignment="practice:rooflines.hbm_bytes",
                     parameters={"B": _B, "D": _D, "F": _F}),
    text=("A bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} reads X and "
          "W from HBM and writes its output there. How many bytes cross the HBM interface, in "
          "MB (10^6 bytes)?"),
    parts=(
        Part(answer="hbm_mb", expected=_hbm_mb, rel=0.02,
             conventions=(in_mib(_hbm_mb),),
             slips=(
                 Slip("one byte per element", lambda v: _hbm_mb(v) / 2,
                      _BF16_HINT),
                 Slip("weights only", distinct_from(_hbm_mb, lambda v: 2 * v["D"] * v["F"] / 1e6,
                                                  rel=0.02),
                      "the weights are not all: X[B, D] is read and C[B, F] written too, "
                      "2·(B·D + B·F) more bytes."),
             ), unit="bytes"),
    ),
    labels={"hbm_mb": "bytes moved, in MB"},
    solution=_hbm_solution,
)

PROBLEMS: tuple[Problem, ...] = (MATMUL_TIME, MATMUL_UPPER, T_MATH, T_COMMS, INTENSITY,
                                 CRITICAL_BATCH, ATTAINABLE, PEAK_FRACTION, LINK_TIME, HBM_BYTES)

"""Practice problems of the chapter book/rooflines.md (see :mod:`scalebook.practice.problem`)."""

from __future__ import annotations

from typing import Any, Mapping

from ..hardware import get_chip
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from
from ..roofline import matmul_cost, matmul_time
from ..units import format_seconds
from ..variants import Choice, VariantSpec
from .problem import Problem


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
                     "a multiply-add is 2 FLOPs: the matmul does 2·B·D·F of them."),
                Slip("one byte per element", distinct_from(_lower_us, lambda v: max(
                    _bf16_matmul(v).t_math, _bf16_matmul(v).t_comms / 2) * 1e6),
                     "bf16 takes 2 bytes per element."),
                Slip("seconds, not µs", lambda v: _bf16_matmul(v).lower,
                     "the answer is asked in µs (1 s = 1e6 µs)."),
            ),
        ),
    ),
    labels={"t_lower_us": "lower bound on the runtime, in µs"},
    solution=_matmul_solution,
)

PROBLEMS: tuple[Problem, ...] = (MATMUL_TIME,)

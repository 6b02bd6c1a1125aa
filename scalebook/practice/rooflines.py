"""Practice problems of the chapter book/rooflines.md (see :mod:`scalebook.practice.problem`)."""

from __future__ import annotations

from typing import Any, Mapping

from ..hardware import CATALOG, bytes_per_element, get_chip, on_chip_memory
from ..homework.alternatives import NotApplicable
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from
from ..roofline import (attainable_flops, critical_batch_size, critical_contracting_dim,
                        critical_intensity, elementwise_cost, elementwise_time, matmul_cost,
                        matmul_time, two_chip_sharded_matmul)
from ..units import format_bandwidth, format_bytes, format_flops, format_seconds
from ..variants import Choice
from .common import (BF16_HINT, FMA_HINT, US, Draws, bytes_text, decimal_bytes, draws, fma_slip,
                     in_mib, one_byte_slip, percent_slip, seconds_slip)
from .problem import Problem, one_answer, problem


#: A hint several problems share (the classic slips' are said in common.py).
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


MATMUL_TIME = one_answer(
    "rooflines.matmul_time", "How long does one bf16 matmul take?",
    draws(chip=Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100"), "chip"),
          B=Choice((512, 128, 256, 1024, 2048, 4096), "B", "tokens"),
          D=Choice((8192, 4096, 16384), "D"),
          F=Choice((16384, 8192, 32768), "F")),
    ("A bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} runs on one "
     "{chip}, reading X and W from HBM and writing the output there. Assume compute and "
     "memory traffic overlap perfectly. What is the lower bound on its runtime, in µs?"),
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
            fma_slip(distinct_from(_lower_us, lambda v: max(
                _bf16_matmul(v).t_math / 2, _bf16_matmul(v).t_comms) * 1e6)),
            one_byte_slip(distinct_from(_lower_us, lambda v: max(
                _bf16_matmul(v).t_math, _bf16_matmul(v).t_comms / 2) * 1e6)),
            seconds_slip(lambda v: _bf16_matmul(v).lower),
        ), unit="s",
    ),
    label="lower bound on the runtime, in µs", solution=_matmul_solution)


# --------------------------------------------------------------------------- worked problems
# The chapter's worked problems 1-10 (book/rooflines.md, "## Problems"), each with its inputs
# drawn anew; the book's own numbers come first in every Choice. Times in µs, intensities in
# FLOPs (or integer OPs) per byte, batches in tokens. "Dense" peaks everywhere: the catalog never
# holds a "with sparsity" figure.

#: Hints for the 2x and 1/2 errors of a critical batch, said once.
_TWICE_BATCH_HINT = ("twice the answer: a multiply-add is 2 FLOPs, so a matmul with few tokens "
                     "does 2B FLOPs per weight it reads, and B* = (C/W)·w/2 with w the bytes per "
                     "weight.")
_HALF_BATCH_HINT = ("half the answer: a {dtype} weight takes {w_text}; B* = (C/W)·w/2.")
_OVERLAP_PHRASE = "perfect overlap"
_OVERLAP_HINT = ("the problem assumes perfect overlap: the time is the larger of T_math and "
                 "T_comms, not their sum.")


def _chip_figures(*dtypes: str):
    """A ``derive`` that states the drawn chip's dense peaks in ``dtypes`` ("{bf16_text}") and
    its HBM bandwidth ("{bw_text}") in the problem text."""
    def derive(v: Mapping[str, Any]) -> dict[str, Any]:
        chip = get_chip(v["chip"])
        return {**{f"{d}_text": _rate_text(chip.flops(d), d) for d in dtypes},
                "bw_text": format_bandwidth(chip.hbm_bandwidth)}
    return derive


def _rate_text(rate: float, dtype: str) -> str:
    """A peak as the chapter prints it: FLOP/s for floats, OP/s for integers."""
    text = format_flops(rate)
    return text.replace("FLOP/s", "OP/s") if dtype.startswith("int") else text


def _figure_labels(*dtypes: str) -> dict[str, tuple[str, str]]:
    return {**{f"{d}_text": (f"dense {d} peak", "") for d in dtypes},
            "bw_text": ("HBM bandwidth", "")}


# --- 1. the two bounds near the corner

def _w1_overlap_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).lower / US


def _w1_serial_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).upper / US


def _w1_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    t, cost = _bf16_matmul(v), _cost(v)
    return (f"T_math = 2·B·D·F / C = {cost.flops:.4g} / {v['bf16_text']} = "
            f"{format_seconds(t.t_math)}.",
            f"T_comms = 2·(B·D + D·F + B·F) / W = {cost.total_bytes:.4g} / {v['bw_text']} = "
            f"{format_seconds(t.t_comms)}.",
            f"Perfect overlap: max = {format_seconds(t.lower)}. No overlap: sum = "
            f"{format_seconds(t.upper)}, {t.upper / t.lower:.2f}x the first: the two bounds are "
            "furthest apart when T_math ≈ T_comms.")


W1 = problem(
    "rooflines.w1", "Overlap or not, near the corner",
    draws(derive=_chip_figures("bf16"), derived_labels=_figure_labels("bf16"),
          chip=Choice(("TPU v5e", "H100", "TPU v5p", "TPU v6e", "B200"), "chip"),
          B=Choice((256, 128, 192, 384, 512), "B", "tokens"),
          D=Choice((8192, 4096, 16384), "D"),
          F=Choice((8192, 16384, 32768), "F")),
    ("A bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} runs on one "
     "{chip} ({bf16_text} dense bf16, {bw_text} of HBM), reading X and W from HBM and "
     "writing its output there. How long does it take if the chip overlaps compute and "
     "memory traffic perfectly, and how long if it does not overlap them at all? Both in "
     "µs."),
    (Part(answer="t_overlap_us", expected=_w1_overlap_us,
          slips=(
              Slip("the sum", distinct_from(_w1_overlap_us, _w1_serial_us),
                   "with perfect overlap the time is the larger of T_math and T_comms; their "
                   "sum is the time without overlap."),
              fma_slip(distinct_from(_w1_overlap_us, lambda v: max(
                  _bf16_matmul(v).t_math / 2, _bf16_matmul(v).t_comms) / US)),
              seconds_slip(lambda v: _bf16_matmul(v).lower),
          ), unit="s"),
     "time with perfect overlap, in µs"),
    (Part(answer="t_serial_us", expected=_w1_serial_us,
          slips=(
              Slip("the max", distinct_from(_w1_serial_us, _w1_overlap_us),
                   "without overlap the chip loads, then computes: the times add up, "
                   "T_math + T_comms."),
              seconds_slip(lambda v: _bf16_matmul(v).upper),
          ), unit="s"),
     "time without overlap, in µs"),
    solution=_w1_solution, worked="1")


# --- 2. the smallest compute-bound square matmul

def _unit_square_intensity() -> float:
    """I(1) of a square bf16 matmul: FLOPs grow as N³ and bytes as N², so I(N) = N · I(1)."""
    return float(matmul_cost(1.0, 1.0, 1.0).intensity)


def _w2_n(v: Mapping[str, Any]) -> float:
    return critical_intensity(v["chip"]) / _unit_square_intensity()


def _w2_reads_only(v: Mapping[str, Any]) -> float:
    reads = matmul_cost(1.0, 1.0, 1.0)
    return float(critical_intensity(v["chip"]) * reads.bytes_read / reads.flops)


def _w2_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    return ("bf16[N, N] · bf16[N, N]: 2N³ FLOPs; reads 2·2N² bytes and writes 2N², so "
            f"I = 2N³ / 6N² = N/3 FLOPs/byte.",
            f"C/W = {v['bf16_text']} / {v['bw_text']} = {critical_intensity(v['chip']):.4g} "
            "FLOPs/byte.",
            f"Compute-bound when N/3 > C/W: N > {_w2_n(v):,.0f}.")


W2 = one_answer(
    "rooflines.w2", "The smallest square matmul that keeps the chip busy",
    draws(derive=_chip_figures("bf16"), derived_labels=_figure_labels("bf16"),
          chip=Choice(("H100", "TPU v5e", "TPU v5p", "TPU v6e", "B200", "A100", "TPU v4p",
                       "H200"), "chip")),
    ("On one {chip} ({bf16_text} dense bf16, {bw_text} of HBM), a square matmul "
     "bf16[N, N] · bf16[N, N] reads both inputs from HBM and writes its bf16[N, N] output "
     "there. Above what N is it compute-bound?"),
    Part(answer="n_star", expected=_w2_n,
         slips=(
             Slip("output not written", _w2_reads_only,
                  "the output is written too: 3 · 2N² bytes, not 2 · 2N², so I = N/3."),
             fma_slip(lambda v: 2 * _w2_n(v),
                      "a multiply-add is 2 FLOPs: the matmul does 2N³ of them."),
             one_byte_slip(lambda v: critical_intensity(v["chip"]) / float(
                 matmul_cost(1.0, 1.0, 1.0, x_dtype="int8").intensity)),
         ), unit="count"),
    label="smallest compute-bound N", solution=_w2_solution, worked="2")


# --- 3. a residual add: memory-bound whatever its size

def _w3_cost(v: Mapping[str, Any]):
    return elementwise_cost((v["B"], v["D"]), dtype=v["dtype"])


def _w3_intensity(v: Mapping[str, Any]) -> float:
    return float(_w3_cost(v).intensity)


def _w3_time(v: Mapping[str, Any]):
    return elementwise_time((v["B"], v["D"]), v["chip"], dtype=v["dtype"])


def _w3_us(v: Mapping[str, Any]) -> float:
    return _w3_time(v).lower / US


def _w3_derive(v: Mapping[str, Any]) -> dict[str, Any]:
    b = bytes_per_element(v["dtype"])
    return {**_chip_figures()(v), "w_text": bytes_text(b)}


def _w3_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost, t = _w3_cost(v), _w3_time(v)
    return (f"One add per element: {cost.flops:.4g} FLOPs. Bytes: read x and y, write out, "
            f"3 × {v['w_text']} × {v['B']:,} × {v['D']:,} = {decimal_bytes(cost.total_bytes)}.",
            f"Intensity = 1 / (3 × {v['w_text']}) = {cost.intensity:.3g} FLOPs/byte, against a "
            f"matrix-unit ridge of {critical_intensity(v['chip']):.0f}: memory-bound.",
            f"T = bytes / W = {decimal_bytes(cost.total_bytes)} / {v['bw_text']} = "
            f"{format_seconds(t.lower)}.")


W3 = problem(
    "rooflines.w3", "A residual add",
    draws(derive=_w3_derive,
          derived_labels={"bw_text": ("HBM bandwidth", ""), "w_text": ("bytes per element", "")},
          chip=Choice(("TPU v5e", "H100", "TPU v5p", "A100", "H200", "B200"), "chip"),
          B=Choice((4096, 2048, 8192, 16384), "B", "tokens"),
          D=Choice((8192, 4096, 16384), "D"),
          dtype=Choice(("bf16", "fp32"), "dtype")),
    ("A residual add out = x + y over {dtype}[{B:,}, {D:,}] arrays runs on one {chip} "
     "({bw_text} of HBM): x and y are read from HBM and out is written there, one FLOP "
     "per element. What is its arithmetic intensity, in FLOPs per byte, and the lower "
     "bound on its time, in µs?"),
    (Part(answer="intensity", expected=_w3_intensity,
          slips=(
              Slip("output not written", lambda v: _w3_intensity(v) * 3 / 2,
                   "out is written back to HBM too: three arrays move, not two."),
              one_byte_slip(lambda v: _w3_intensity(v) * bytes_per_element(v["dtype"]),
                            "a {dtype} element takes {w_text}."),
          ), unit="FLOPs/byte", not_applicable=(
              NotApplicable("multiply-add as 1 FLOP", "a residual add does one add per "
                            "element: no multiply-add is counted"),)),
     "arithmetic intensity, in FLOPs/byte"),
    (Part(answer="t_us", expected=_w3_us,
          slips=(
              Slip("output not written", lambda v: _w3_us(v) * 2 / 3,
                   "out is written back to HBM too: three arrays move, not two."),
              one_byte_slip(lambda v: _w3_us(v) / bytes_per_element(v["dtype"]),
                            "a {dtype} element takes {w_text}."),
              Slip("ms, not µs", lambda v: _w3_us(v) / 1e3,
                   "the answer is asked in µs (1 ms = 1,000 µs).", ("ms for s",)),
          ), unit="s"),
     "time, in µs"),
    solution=_w3_solution, worked="3")


# --- 4. attention scores: the output is the biggest array

def _w4_cost(v: Mapping[str, Any]):
    return matmul_cost(v["T"], v["d"], v["S"])


def _w4_time(v: Mapping[str, Any]):
    return matmul_time(v["T"], v["d"], v["S"], v["chip"])


def _w4_intensity(v: Mapping[str, Any]) -> float:
    return float(_w4_cost(v).intensity)


def _w4_us(v: Mapping[str, Any]) -> float:
    return _w4_time(v).lower / US


_SCORES_HINT = ("the scores [T, S] are written to HBM: 2·T·S bytes, here more than Q and K "
                "together.")


def _w4_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost, t = _w4_cost(v), _w4_time(v)
    return (f"FLOPs = 2·T·d·S = {cost.flops:.4g}.",
            f"Bytes: read 2·(T·d + S·d) = {cost.bytes_read:.4g}, write 2·T·S = "
            f"{cost.bytes_written:.4g}: the output dominates.",
            f"Intensity = {cost.intensity:.4g} FLOPs/byte (about d = {v['d']}); the ridge is "
            f"{critical_intensity(v['chip']):.4g}.",
            f"T_math = {format_seconds(t.t_math)}, T_comms = {format_seconds(t.t_comms)}: at least "
            f"{format_seconds(t.lower)}.")


W4 = problem(
    "rooflines.w4", "Attention scores: an output bigger than the inputs",
    draws(derive=_chip_figures("bf16"), derived_labels=_figure_labels("bf16"),
          chip=Choice(("TPU v5e", "H100", "TPU v5p", "TPU v6e", "B200"), "chip"),
          T=Choice((4096, 2048, 8192), "T", "queries"),
          S=Choice((4096, 8192, 16384), "S", "keys"),
          d=Choice((128, 64, 256), "d")),
    ("The attention scores of one head, Q[T, d] ·_d K[d, S] with T = {T:,} queries, "
     "S = {S:,} keys and head dimension d = {d}, all bf16, run on one {chip} "
     "({bf16_text} dense bf16, {bw_text} of HBM): Q and K are read from HBM and the bf16 "
     "scores [T, S] are written there. What is the arithmetic intensity, in FLOPs per "
     "byte, and the lower bound on the time with perfect overlap, in µs?"),
    (Part(answer="intensity", expected=_w4_intensity,
          slips=(
              Slip("output not written", distinct_from(
                  _w4_intensity, lambda v: _w4_cost(v).flops / _w4_cost(v).bytes_read),
                   _SCORES_HINT),
              one_byte_slip(lambda v: 2 * _w4_intensity(v)),
          ), unit="FLOPs/byte"),
     "arithmetic intensity, in FLOPs/byte"),
    (Part(answer="t_us", expected=_w4_us,
          conventions=(
              Convention("no overlap (sum)", distinct_from(_w4_us, lambda v: _w4_time(v).upper / US),
                         verdict=PINNED, phrase=_OVERLAP_PHRASE, hint=_OVERLAP_HINT),
          ),
          slips=(
              Slip("output not written", distinct_from(_w4_us, lambda v: max(
                  _w4_time(v).t_math, _w4_cost(v).bytes_read / get_chip(v["chip"]).hbm_bandwidth)
                  / US), _SCORES_HINT),
              seconds_slip(lambda v: _w4_time(v).lower),
          ), unit="s"),
     "lower bound on the time, in µs"),
    solution=_w4_solution, worked="4")


# --- 5. the critical batch, a TPU against a GPU

def _w5_derive(v: Mapping[str, Any]) -> dict[str, Any]:
    tpu, gpu = get_chip(v["tpu"]), get_chip(v["gpu"])
    return {"tpu_c": format_flops(tpu.flops("bf16")), "tpu_w": format_bandwidth(tpu.hbm_bandwidth),
            "gpu_c": format_flops(gpu.flops("bf16")), "gpu_w": format_bandwidth(gpu.hbm_bandwidth),
            "dtype": "bf16", "w_text": bytes_text(bytes_per_element("bf16"))}


def _w5_batch(key: str):
    return lambda v: critical_batch_size(v[key])


def _w5_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    return ("With B ≪ D, F the weights dominate the bytes: I ≈ 2·B·D·F / (2·D·F) = B, so "
            "B* = C/W in bf16.",
            f"{v['tpu']}: {v['tpu_c']} / {v['tpu_w']} = {critical_batch_size(v['tpu']):,.0f} tokens.",
            f"{v['gpu']}: {v['gpu_c']} / {v['gpu_w']} = {critical_batch_size(v['gpu']):,.0f} tokens.")


def _w5_part(key: str) -> Part:
    expected = _w5_batch(key)
    return Part(answer=f"b_{key}", expected=expected, rel=0.03,
                slips=(fma_slip(lambda v: 2 * expected(v), _TWICE_BATCH_HINT),
                       Slip("one byte per weight", lambda v: expected(v) / 2, _HALF_BATCH_HINT)),
                unit="count")


_BF16_CHIPS = tuple(c.name for c in CATALOG if "bf16" in c.flops_per_s)

W5 = problem(
    "rooflines.w5", "The critical batch of a TPU and of a GPU",
    draws(derive=_w5_derive,
          derived_labels={"tpu_c": ("TPU bf16 peak", ""), "tpu_w": ("TPU HBM bandwidth", ""),
                          "gpu_c": ("GPU bf16 peak", ""), "gpu_w": ("GPU HBM bandwidth", "")},
          tpu=Choice(tuple(sorted((n for n in _BF16_CHIPS if n.startswith("TPU")),
                                  key=lambda n: n != "TPU v6e")), "TPU"),
          gpu=Choice(tuple(sorted((n for n in _BF16_CHIPS if not n.startswith("TPU")),
                                  key=lambda n: n != "B200")), "GPU")),
    ("A {tpu} does {tpu_c} of dense bf16 with {tpu_w} of HBM; a {gpu} does {gpu_c} with "
     "{gpu_w}. Above how many tokens B is a bf16 matmul X[B, D] · W[D, F] with B ≪ D, F "
     "compute-bound on each (its critical batch B*)?"),
    (_w5_part("tpu"),
     "critical batch on the TPU, in tokens"),
    (_w5_part("gpu"),
     "critical batch on the GPU, in tokens"),
    solution=_w5_solution, worked="5")


# --- 6. the "with sparsity" figure

#: NVIDIA prints its tensor-core figures "with sparsity" from Ampere on, the GPUs with bf16.
_SPARSE_GPUS = tuple(c.name for c in CATALOG if c.is_gpu and "bf16" in c.flops_per_s)
_SPARSE_HINT = ("a figure 'with sparsity' assumes 2:4 structured sparsity and is twice the "
                "dense rate: halve it for a dense matmul.")


def _w6_derive(v: Mapping[str, Any]) -> dict[str, Any]:
    chip = get_chip(v["chip"])
    b_star = critical_batch_size(chip)
    return {"sparse_text": format_flops(2 * chip.flops("bf16")),
            "bw_text": format_bandwidth(chip.hbm_bandwidth),
            "B": int(round(v["k"] * b_star / 16) * 16)}


def _w6_sparse_us(v: Mapping[str, Any]) -> float:
    t = _bf16_matmul(v)
    return max(t.t_math / 2, t.t_comms) / US


def _w6_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).lower / US


def _w6_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip, t = get_chip(v["chip"]), _bf16_matmul(v)
    return (f"Dense peak = {v['sparse_text']} / 2 = {format_flops(chip.flops('bf16'))}.",
            f"B* = C/W = {critical_batch_size(chip):,.0f} tokens (the printed figure would give "
            f"{2 * critical_batch_size(chip):,.0f}).",
            f"At B = {v['B']:,}: T_math = {format_seconds(t.t_math)}, T_comms = "
            f"{format_seconds(t.t_comms)}, so at least {format_seconds(t.lower)}, "
            f"{'compute' if t.bound_by == 'compute' else 'memory'}-bound.")


W6 = problem(
    "rooflines.w6", "The datasheet's asterisk",
    draws(derive=_w6_derive,
          derived_labels={"sparse_text": ("printed bf16 peak, with sparsity", ""),
                          "bw_text": ("HBM bandwidth", ""), "B": ("B", "tokens")},
          chip=Choice(tuple(sorted(_SPARSE_GPUS, key=lambda n: n != "H100")), "GPU"),
          k=Choice((1.5, 1.25, 1.75), "B / B*"),
          D=Choice((8192, 4096, 16384), "D"),
          F=Choice((8192, 16384, 32768), "F")),
    ("The {chip} datasheet prints {sparse_text} of bf16 tensor-core throughput, with a "
     "footnote: with sparsity. Its HBM moves {bw_text}. (a) Above how many tokens B is a "
     "dense bf16 matmul X[B, D] · W[D, F] with B ≪ D, F compute-bound? (b) With "
     "B = {B:,}, D = {D:,} and F = {F:,}, X and W read from HBM and the output written "
     "there, what is the lower bound on its time with perfect overlap, in µs?"),
    (Part(answer="b_star", expected=lambda v: critical_batch_size(v["chip"]), rel=0.03,
          slips=(Slip("with sparsity", lambda v: 2 * critical_batch_size(v["chip"]),
                      _SPARSE_HINT + " (A multiply-add is also 2 FLOPs: I ≈ B in bf16.)"),
                 Slip("one byte per weight", lambda v: critical_batch_size(v["chip"]) / 2,
                      BF16_HINT)), unit="count"),
     "critical batch B*, in tokens"),
    (Part(answer="t_us", expected=_w6_us,
          conventions=(
              Convention("no overlap (sum)", distinct_from(_w6_us, lambda v: _bf16_matmul(v).upper / US),
                         verdict=PINNED, phrase=_OVERLAP_PHRASE, hint=_OVERLAP_HINT),
          ),
          slips=(
              Slip("with sparsity", distinct_from(_w6_us, _w6_sparse_us), _SPARSE_HINT),
              seconds_slip(lambda v: _bf16_matmul(v).lower),
          ), unit="s"),
     "lower bound on the time, in µs"),
    solution=_w6_solution, worked="6")


# --- 7. int8 weights and activations

#: Chips whose int8 peak is at least their bf16 peak (the GB300's is a fraction: the chapter's
#: text covers it, the drawn problem does not).
_INT8_CHIPS = tuple(c.name for c in CATALOG if "int8" in c.flops_per_s and "bf16" in c.flops_per_s
                    and c.flops("int8") >= c.flops("bf16"))


def _w7_intensity(v: Mapping[str, Any]) -> float:
    return critical_intensity(v["chip"], "int8")


def _w7_batch(v: Mapping[str, Any]) -> float:
    return critical_batch_size(v["chip"], compute_dtype="int8")


def _w7_bf16_peak_batch(v: Mapping[str, Any]) -> float:
    return critical_batch_size(v["chip"], compute_dtype="bf16", weight_dtype="int8")


_INT8_PEAK_HINT = ("X and W are both int8, so the integer units run at the int8 peak "
                   "({int8_text}), not bf16's.")


def _w7_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip = get_chip(v["chip"])
    ratio = round(chip.flops("int8") / chip.flops("bf16"), 1)  # H100: 1,979 / 989 = 2.001
    return (f"Critical intensity = int8 peak / W = {v['int8_text']} / {v['bw_text']} = "
            f"{_w7_intensity(v):.4g} OPs/byte.",
            "An int8 weight is 1 byte: I ≈ 2·B·D·F / (D·F) = 2B, so B* = (C/W)/2 = "
            f"{_w7_batch(v):,.0f} tokens.",
            f"The {v['chip']}'s int8 peak is {ratio:g}x its bf16 peak, so B* is "
            + ("the bf16 figure: half the bytes and twice the peak cancel."
               if ratio == 2 else f"{ratio / 2:g}x the bf16 figure."))


W7 = problem(
    "rooflines.w7", "int8 everything",
    draws(derive=_chip_figures("bf16", "int8"),
          derived_labels=_figure_labels("bf16", "int8"),
          chip=Choice(tuple(sorted(_INT8_CHIPS, key=lambda n: n != "TPU v5e")), "chip")),
    ("On one {chip} (dense peaks: {bf16_text} in bf16, {int8_text} in int8; HBM "
     "{bw_text}), a matmul X[B, D] · W[D, F] keeps X and W in int8 and runs on the int8 "
     "units. What is the chip's critical intensity for it, in integer OPs per byte (a "
     "multiply-add is 2 OPs), and above how many tokens B is the matmul compute-bound "
     "(B ≪ D, F)?"),
    (Part(answer="critical_ops_per_byte", expected=_w7_intensity, rel=0.03,
          slips=(Slip("bf16 peak", distinct_from(_w7_intensity,
                                                 lambda v: critical_intensity(v["chip"])),
                      _INT8_PEAK_HINT),), unit="FLOPs/byte"),
     "critical intensity, in OPs/byte"),
    (Part(answer="b_star", expected=_w7_batch, rel=0.03,
          slips=(Slip("bf16 peak", distinct_from(_w7_batch, _w7_bf16_peak_batch),
                      _INT8_PEAK_HINT),
                 Slip("2 bytes or 1 OP", lambda v: 2 * _w7_batch(v),
                      "twice the answer: an int8 weight is 1 byte and a multiply-add is 2 "
                      "OPs, so I ≈ 2B and B* = (C/W)/2.")), unit="count"),
     "critical batch B*, in tokens"),
    solution=_w7_solution, worked="7")


# --- 8. fp8: which operands?

_FP8_CHIPS = tuple(c.name for c in CATALOG if "fp8" in c.flops_per_s)


def _w8_fp8(v: Mapping[str, Any]) -> float:
    return critical_batch_size(v["chip"], compute_dtype="fp8")


def _w8_weights(v: Mapping[str, Any]) -> float:
    return critical_batch_size(v["chip"], compute_dtype="bf16", weight_dtype="fp8")


def _w8_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    return ("Few tokens: the weights dominate the bytes, I ≈ 2B / w with w bytes per weight.",
            f"(a) X and W fp8: w = 1 and the fp8 peak, B* = {v['fp8_text']} / {v['bw_text']} / 2 "
            f"= {_w8_fp8(v):,.0f} tokens, the same as all-bf16: twice the peak, half the bytes.",
            f"(b) Only W fp8: w = 1 but X is bf16, so the multiply runs at the bf16 peak: B* = "
            f"{v['bf16_text']} / {v['bw_text']} / 2 = {_w8_weights(v):,.0f} tokens.")


W8 = problem(
    "rooflines.w8", "fp8: which operands?",
    draws(derive=_chip_figures("bf16", "fp8"),
          derived_labels=_figure_labels("bf16", "fp8"),
          chip=Choice(tuple(sorted(_FP8_CHIPS, key=lambda n: n != "H100")), "GPU")),
    ("On one {chip} (dense peaks: {bf16_text} in bf16, {fp8_text} in fp8; HBM {bw_text}), "
     "take X[B, D] · W[D, F] with B ≪ D, F. (a) X and W are both fp8 and the tensor cores "
     "multiply in fp8: above how many tokens is the matmul compute-bound? (b) Only W is "
     "fp8; X stays bf16, and W is converted to bf16 on chip before a bf16 multiply: above "
     "how many tokens now?"),
    (Part(answer="b_fp8", expected=_w8_fp8, rel=0.03,
          slips=(Slip("bf16 peak", _w8_weights,
                      "X and W are both fp8, so the tensor cores run at the fp8 peak "
                      "({fp8_text}), twice bf16's: that cancels the halved bytes."),
                 Slip("2 bytes, 1 FLOP or sparsity", lambda v: 2 * _w8_fp8(v),
                      "twice the answer: an fp8 weight is 1 byte and a multiply-add is 2 "
                      "FLOPs (and the peak is dense, not 'with sparsity'): B* = (C/W)/2.")),
          unit="count"),
     "B* with X and W in fp8, in tokens"),
    (Part(answer="b_weights_fp8", expected=_w8_weights, rel=0.03,
          slips=(Slip("fp8 peak", lambda v: 2 * _w8_weights(v),
                      "twice the answer: with bf16 activations the multiply runs at the bf16 "
                      "peak ({bf16_text}), and the fp8 weights are 1 byte each."),),
          unit="count"),
     "B* with fp8 weights only, in tokens"),
    solution=_w8_solution, worked="8")


# --- 9. weights that stay on chip

def on_chip_level(chip_name: str) -> str:
    """The on-chip memory a kernel keeps weights in: VMEM on a TPU, L2 on a GPU."""
    return "l2" if get_chip(chip_name).is_gpu else "vmem"


_LEVEL_TEXT = {"vmem": "VMEM", "l2": "L2 cache"}


def _w9_derive(v: Mapping[str, Any]) -> dict[str, Any]:
    level = on_chip_level(v["chip"])
    return {"level": _LEVEL_TEXT[level],
            "on_chip_text": format_bytes(on_chip_memory(v["chip"], level)),
            "w_text": format_bytes(2.0 * v["D"] * v["F"])}


def _w9_fits(v: Mapping[str, Any]) -> bool:
    return 2.0 * v["D"] * v["F"] <= on_chip_memory(v["chip"], on_chip_level(v["chip"]))


def _w9_hbm(v: Mapping[str, Any]) -> float:
    return float(_cost(v).intensity)


def _w9_on_chip_cost(v: Mapping[str, Any]):
    return matmul_cost(v["B"], v["D"], v["F"], weights_on_chip=True)


def _w9_on_chip(v: Mapping[str, Any]) -> float:
    return float(_w9_on_chip_cost(v).intensity)


def _w9_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost, on = _cost(v), _w9_on_chip_cost(v)
    return (f"W takes 2·D·F = {v['w_text']}, which fits in {v['on_chip_text']} of {v['level']}.",
            f"From HBM: {cost.flops:.4g} FLOPs / 2·(B·D + D·F + B·F) = {cost.total_bytes:.4g} "
            f"bytes = {cost.intensity:.4g} FLOPs/byte (about B).",
            f"W on chip: only X and the output cross HBM, 2·(B·D + B·F) = {on.total_bytes:.4g} "
            f"bytes: {on.intensity:.4g} FLOPs/byte = D·F/(D + F), whatever B; the ridge is "
            f"{critical_intensity(v['chip']):.4g}.")


W9 = problem(
    "rooflines.w9", "Weights that stay on chip",
    draws(derive=_w9_derive, well_posed=_w9_fits,
          derived_labels={"level": ("on-chip memory", ""), "on_chip_text": ("its size", ""),
                          "w_text": ("size of W", "")},
          chip=Choice(("TPU v5e", "H100", "TPU v6e", "B200", "A100", "H200"), "chip"),
          B=Choice((64, 16, 32, 128, 256), "B", "tokens"),
          D=Choice((4096, 2048, 8192), "D"),
          F=Choice((4096, 2048, 8192), "F")),
    ("A bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} runs on one "
     "{chip}; W takes {w_text} and the chip has {on_chip_text} of {level}. (a) X and W "
     "are read from HBM and the output written there: what is the arithmetic intensity "
     "against HBM, in FLOPs per byte? (b) An earlier kernel left W in {level}, where it "
     "stays: X is read from HBM and the output written there. What is the intensity "
     "against HBM now?"),
    (Part(answer="intensity_hbm", expected=_w9_hbm,
          slips=(Slip("I ≈ B", distinct_from(_w9_hbm, lambda v: float(v["B"])),
                      "I ≈ B holds only for B ≪ D, F: count every byte, "
                      "2·(B·D + D·F + B·F)."),
                 one_byte_slip(lambda v: 2 * _w9_hbm(v))),
          unit="FLOPs/byte"),
     "intensity with W from HBM, in FLOPs/byte"),
    (Part(answer="intensity_on_chip", expected=_w9_on_chip,
          slips=(Slip("W still counted", distinct_from(_w9_on_chip, _w9_hbm),
                      "W stays in {level}: its 2·D·F bytes no longer cross HBM."),
                 Slip("output not written", distinct_from(
                     _w9_on_chip, lambda v: _w9_on_chip_cost(v).flops / _w9_on_chip_cost(v).bytes_read),
                      _OUTPUT_HINT),
                 fma_slip(lambda v: _w9_on_chip(v) / 2, FMA_HINT, ("multiply-add as 1 FLOP",))),
          unit="FLOPs/byte"),
     "intensity with W on chip, in FLOPs/byte"),
    solution=_w9_solution, worked="9")


# --- 10. two chips, one link: the D a sharded matmul needs

def _w10_derive(v: Mapping[str, Any]) -> dict[str, Any]:
    chip = get_chip(v["chip"])
    return {"bf16_text": format_flops(chip.flops("bf16")), "links": chip.links_per_chip,
            "one_way_text": format_bandwidth(chip.link_bandwidth_one_way),
            "both_text": format_bandwidth(chip.link_bandwidth_bidirectional)}


def _w10_d(v: Mapping[str, Any]) -> float:
    return critical_contracting_dim(v["chip"])


def _w10_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    return ("Per chip: T_math = 2·B·(D/2)·F / C = B·D·F / C; it sends its partial bf16[B, F], "
            "T_comms = 2·B·F / W_link.",
            f"T_math > T_comms when D > 2·C / W_link = 2 × {v['bf16_text']} / {v['one_way_text']} "
            f"= {_w10_d(v):,.0f}, whatever B and F.")


W10 = one_answer(
    "rooflines.w10", "Two chips, one link",
    draws(derive=_w10_derive,
          derived_labels={"bf16_text": ("dense bf16 peak", ""), "links": ("links per chip", ""),
                          "one_way_text": ("link bandwidth, one way", ""),
                          "both_text": ("link bandwidth, both directions", "")},
          chip=Choice(("TPU v4p", "TPU v5p", "TPU v5e", "TPU v6e", "TPU v3"), "TPU")),
    ("A bf16 matmul X[B, D_X] ·_D W[D_X, F] is split over two {chip} chips ({bf16_text} "
     "dense bf16 each) along D. Each chip computes a partial bf16[B, F] and sends it to "
     "the other over one ICI link ({links} links per chip, each carrying {both_text} in "
     "both directions together, {one_way_text} each way). Above what D is the matmul "
     "compute-bound?"),
    Part(answer="d_star", expected=_w10_d,
         slips=(Slip("both directions, or 1 byte", lambda v: _w10_d(v) / 2,
                     "half the answer: each chip sends one way over the link, "
                     "{one_way_text}, and a bf16 partial sum is 2 bytes per element."),
                Slip("all links", lambda v: _w10_d(v) / v["links"],
                     "the partial sums go to one neighbour over one link, not over all "
                     "{links} of them."),
                Slip("HBM bandwidth", distinct_from(_w10_d, lambda v: critical_contracting_dim(
                    v["chip"], bandwidth=get_chip(v["chip"]).hbm_bandwidth)),
                     "the partial sums cross the link between the chips: use the link's "
                     "one-way bandwidth, not HBM's.")), unit="count"),
    label="smallest compute-bound D", solution=_w10_solution, worked="10")

WORKED: tuple[Problem, ...] = (W1, W2, W3, W4, W5, W6, W7, W8, W9, W10)



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


def _matmul_draws(**extra: Choice) -> Draws:
    """The practice set's matmul: chip, B, D and F drawn (``extra`` replaces or adds)."""
    return Draws(parameters={"chip": _CHIPS, "B": _B, "D": _D, "F": _F, **extra})


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


MATMUL_UPPER = one_answer(
    "rooflines.matmul_upper", "A matmul without overlap",
    _matmul_draws(),
    ("Take " + _MATMUL_TEXT + ". Assume no overlap: the chip first loads, then computes, "
     "then writes. What is the upper bound on its runtime, in µs?"),
    Part(answer="t_upper_us", expected=_upper_us,
         conventions=(
             Convention("perfect overlap (max)",
                        distinct_from(_upper_us, _lower_us), verdict=PINNED,
                        phrase="Assume no overlap",
                        hint="the problem assumes no overlap: add T_math and T_comms; the "
                             "larger of the two is the bound with perfect overlap."),
         ),
         slips=(
             seconds_slip(lambda v: _bf16_matmul(v).upper),
         ), unit="s"),
    label="upper bound on the runtime, in µs", solution=_upper_solution)


def _t_math_us(v: Mapping[str, Any]) -> float:
    return _bf16_matmul(v).t_math * 1e6


def _t_math_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip, cost = get_chip(v["chip"]), _cost(v)
    return (f"FLOPs = 2·B·D·F = {cost.flops:.4g} (a multiply-add is 2 FLOPs).",
            f"The {v['chip']} does {format_flops(chip.flops('bf16'))} in bf16 (dense).",
            f"T_math = {cost.flops:.4g} / {chip.flops('bf16'):.3g} = "
            f"{format_seconds(_bf16_matmul(v).t_math)}.")


T_MATH = one_answer(
    "rooflines.t_math", "The compute time of a matmul",
    _matmul_draws(),
    ("Take " + _MATMUL_TEXT + ". How long do its FLOPs take at the chip's dense bf16 "
     "peak (T_math), in µs?"),
    Part(answer="t_math_us", expected=_t_math_us,
         slips=(
             fma_slip(lambda v: _t_math_us(v) / 2),
             seconds_slip(lambda v: _bf16_matmul(v).t_math),
         ), unit="s"),
    label="T_math, in µs", solution=_t_math_solution)


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


T_COMMS = one_answer(
    "rooflines.t_comms", "The memory time of a matmul",
    _matmul_draws(),
    ("Take " + _MATMUL_TEXT + ". How long does its HBM traffic take at the chip's full "
     "HBM bandwidth (T_comms), in µs?"),
    Part(answer="t_comms_us", expected=_t_comms_us,
         slips=(
             one_byte_slip(lambda v: _t_comms_us(v) / 2),
             Slip("output not written", distinct_from(_t_comms_us, _read_only_us),
                  _OUTPUT_HINT),
         ), unit="s"),
    label="T_comms, in µs", solution=_t_comms_solution)


def _intensity(v: Mapping[str, Any]) -> float:
    return _cost(v).intensity


def _intensity_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost = _cost(v)
    return (f"FLOPs = 2·B·D·F = {cost.flops:.4g}.",
            f"Bytes = 2·(B·D + D·F + B·F) = {cost.total_bytes:.4g}.",
            f"Intensity = FLOPs / bytes = {cost.intensity:.4g} FLOPs/byte.")


INTENSITY = one_answer(
    "rooflines.intensity", "The arithmetic intensity of a matmul",
    draws(B=_B, D=_D, F=_F),
    ("A bf16 matmul X[B, D] · W[D, F] has B = {B:,}, D = {D:,} and F = {F:,}. Counting "
     "exact bytes (X and W read, the output written, 2 bytes per element), what is its "
     "arithmetic intensity, in FLOPs per byte?"),
    Part(answer="intensity", expected=_intensity,
         slips=(
             fma_slip(lambda v: _intensity(v) / 2),
             one_byte_slip(lambda v: _intensity(v) * 2),
             Slip("B ≪ D, F approximation", distinct_from(_intensity, lambda v: float(v["B"])),
                  "the approximation 2B/2 = B holds only for B ≪ D, F; count every byte: "
                  "2·(B·D + D·F + B·F)."),
         ), unit="FLOPs/byte"),
    label="arithmetic intensity, in FLOPs/byte", solution=_intensity_solution)


def _critical_batch(v: Mapping[str, Any]) -> float:
    return critical_batch_size(v["chip"])


def _critical_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    chip = get_chip(v["chip"])
    return (f"C = {format_flops(chip.flops('bf16'))} (bf16, dense), W = "
            f"{format_bandwidth(chip.hbm_bandwidth)} (HBM).",
            "For B ≪ D, F the weights dominate the bytes: intensity ≈ 2·B·D·F / (2·D·F) = B.",
            f"Compute-bound once B > C / W = {critical_intensity(chip):.4g}, so B* ≈ "
            f"{_critical_batch(v):.0f} tokens.")


CRITICAL_BATCH = one_answer(
    "rooflines.critical_batch", "The critical batch size of a chip",
    draws(chip=Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100", "B200", "H200", "A100"),
                      "chip")),
    ("On one {chip}, a bf16 matmul X[B, D] · W[D, F] with B ≪ D, F reads mostly weights. "
     "Above how many tokens B does it become compute-bound (the critical batch size B*), "
     "using the chip's dense bf16 peak and its HBM bandwidth?"),
    Part(answer="critical_batch", expected=_critical_batch, rel=0.03,
         slips=(
             fma_slip(lambda v: _critical_batch(v) * 2,
                      "a multiply-add is 2 FLOPs: the intensity is 2·B·D·F / (2·D·F) = B, not "
                      "B / 2."),
             one_byte_slip(lambda v: _critical_batch(v) / 2,
                           "bf16 weights take 2 bytes per element."),
         ), unit="count"),
    label="critical batch size B*, in tokens", solution=_critical_solution)


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


ATTAINABLE = one_answer(
    "rooflines.attainable", "Reading the roofline",
    draws(chip=_CHIPS, I=Choice((64, 16, 32, 128, 512, 1024), "I", "FLOPs/byte")),
    ("A bf16 kernel on one {chip} has an arithmetic intensity of {I} FLOPs per byte of HBM "
     "traffic. What FLOP rate can it attain at best, by the roofline, in TFLOP/s?"),
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
    label="attainable rate, in TFLOP/s", solution=_attainable_solution)


def _peak_percent(v: Mapping[str, Any]) -> float:
    t = _bf16_matmul(v)
    return 100 * t.t_math / t.lower


def _peak_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    t = _bf16_matmul(v)
    return (f"T_math = {format_seconds(t.t_math)}, T_comms = {format_seconds(t.t_comms)}.",
            f"With perfect overlap the matmul takes max(T_math, T_comms) = {format_seconds(t.lower)}.",
            f"The share of the peak it uses is T_math / that = {_peak_percent(v):.3g}%.")


PEAK_FRACTION = one_answer(
    "rooflines.peak_fraction", "How much of the peak does a matmul use?",
    _matmul_draws(B=Choice((64, 32, 128, 256, 512, 1024), "B", "tokens")),
    ("Take " + _MATMUL_TEXT + ". Assume compute and memory traffic overlap perfectly. "
     "What percentage of the chip's dense bf16 peak does it attain, in %?"),
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
    label="share of the peak, in %", solution=_peak_solution)


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


LINK_TIME = one_answer(
    "rooflines.link_time", "Two chips add their partial sums",
    draws(chip=Choice(("TPU v5e", "TPU v5p", "TPU v6e", "H100"), "chip"),
          B=_B, D=Choice((16384, 8192, 32768), "D"), F=Choice((8192, 4096, 16384), "F")),
    ("A bf16 matmul X[B, D_X] ·_D W[D_X, F] with B = {B:,}, D = {D:,} and F = {F:,} is "
     "split over two {chip} chips along D. Each chip sends its partial sum of the output "
     "to the other over one link, at the link's one-way bandwidth. How long does that "
     "take, in µs?"),
    Part(answer="link_us", expected=_link_us,
         slips=(
             one_byte_slip(lambda v: _link_us(v) / 2),
             Slip("sent the weight shard", distinct_from(
                 _link_us, lambda v: _link_us(v) * v["D"] / (2 * v["B"])),
                  "the weights stay where they are: what crosses the link is the partial "
                  "output C[B, F], B·F elements."),
         ), unit="s"),
    label="time to send the partial sums, in µs", solution=_link_solution)


def _hbm_mb(v: Mapping[str, Any]) -> float:
    return _cost(v).total_bytes / 1e6


def _hbm_solution(v: Mapping[str, Any]) -> tuple[str, ...]:
    cost = _cost(v)
    return (f"Read X: 2·B·D = {2 * v['B'] * v['D']:,} bytes; read W: 2·D·F = "
            f"{2 * v['D'] * v['F']:,} bytes.",
            f"Write the output: 2·B·F = {2 * v['B'] * v['F']:,} bytes.",
            f"In all {format_bytes(cost.total_bytes, binary=False)} "
            f"({cost.total_bytes / 1e6:.4g} MB).")


HBM_BYTES = one_answer(
    "rooflines.hbm_bytes", "The bytes a matmul moves",
    draws(B=_B, D=_D, F=_F),
    ("A bf16 matmul X[B, D] · W[D, F] with B = {B:,}, D = {D:,} and F = {F:,} reads X and "
     "W from HBM and writes its output there. How many bytes cross the HBM interface, in "
     "MB (10⁶ bytes)?"),
    Part(answer="hbm_mb", expected=_hbm_mb, rel=0.02,
         conventions=(in_mib(_hbm_mb),),
         slips=(
             one_byte_slip(lambda v: _hbm_mb(v) / 2),
             Slip("weights only", distinct_from(_hbm_mb, lambda v: 2 * v["D"] * v["F"] / 1e6,
                                              rel=0.02),
                  "the weights are not all: X[B, D] is read and C[B, F] written too, "
                  "2·(B·D + B·F) more bytes."),
         ), unit="bytes"),
    label="bytes moved, in MB", solution=_hbm_solution)

PROBLEMS: tuple[Problem, ...] = WORKED + (MATMUL_TIME, MATMUL_UPPER, T_MATH, T_COMMS, INTENSITY,
                                 CRITICAL_BATCH, ATTAINABLE, PEAK_FRACTION, LINK_TIME, HBM_BYTES)

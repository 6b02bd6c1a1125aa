"""Homework 6 (serving a model) beyond the generic checks of test_homework.py.

- every hidden check agrees with the answer worked out by hand from the problem's stated numbers
  (the datasheet figures and the model shapes, not scalebook), so a change in the solver's
  conventions cannot silently change a grade; and the hand answers agree with the solver;
- the typical errors the assignment is about (the KV cache counted with the query heads or
  without keys *and* values, decode at batch 1 timed as compute-bound, prefill timed by its
  bytes, int8 taken to halve the cache (or read as 8 bytes), an AllReduce priced as one
  AllGather, the slice's throughput given per GPU, an hourly price used per second, ...) each
  get their hint;
- every hidden block reads nothing from the student but its own answer: its inputs come from
  ``VARIANT``, which these checks bind to the book's sample numbers, as the grader binds it to
  the student's own;
- the spec's own slips (``allreduce_time``, ``best_batch_without_allreduces``) are the
  formulas the prompts state, and the published numbers are those the book prints.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest

from autograder.checker import answer_names
from gradecells import grade_cells_by_answer, nbgrader_metadata, run_as_grader
from scalebook import inference
from scalebook.collectives import gpu_all_reduce
from scalebook.homework import check_answer, hw6_inference, spec_for
from scalebook.training import llama3_405b
from scalebook.transformer import llama3_8b, llama3_70b, param_count
from scalebook.variants import default_variant, variant_from

REPO = Path(__file__).resolve().parent.parent
A = "hw6-inference"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason="hw6 source notebook not written")

#: The sample numbers (the first value of every choice): the numbers the book prints.
SAMPLE = default_variant(spec_for(A))

# Problem inputs, restated from the prompts and the datasheets.
C_H100, W_H100, HBM_H100, NVLINK_H100 = 9.89e14, 3.35e12, 80e9, 4.5e11
HBM_H200 = 141e9
P70_TOTAL, P70 = 70_553_706_496, 69_501_714_432         # LLaMA-3 70B: all, matmul weights
P8 = 7_504_658_432                                      # LLaMA-3 8B: matmul weights
P405 = 403_747_897_344                                  # LLaMA-3 405B: matmul weights
KV70 = 2 * 80 * 8 * 128 * 2                             # bytes per token, bf16
KV8 = 2 * 32 * 8 * 128 * 2
KV405 = 2 * 126 * 8 * 128 * 2

# P2: the 8B's prefill of 4,096 tokens on an H100.
PREFILL_FLOPS = 4096 * (2 * P8 + 4 * 32 * 4096 * 32 * 128)
PREFILL_BYTES = 2 * P8 + 4096 * KV8
# P3: the 8B decoding one sequence with 8,192 cached tokens.
DECODE = (2 * P8 + 8192 * KV8) / W_H100
# P4 (c): the 405B with 1,024 cached tokens per sequence. Phased, the weight matmuls balance at
# C / W_hbm whatever the cache; the overlapped bound balances the step's totals instead.
F405 = 2 * P405 + 4 * 126 * 1024 * 128 * 128
CRITICAL_LONG_OVERLAPPED = 2 * P405 / (W_H100 * F405 / C_H100 - 1024 * KV405)
# P5: the 70B on 8 H100s, B = 64 sequences of 4,096 cached tokens.
ALLREDUCE = 2 * (7 * 1e-6 + 64 * 8192 * 2 * 7 / 8 / NVLINK_H100)
STEP = (2 * P70 + 64 * 4096 * KV70) / (8 * W_H100) + 160 * ALLREDUCE
# P7 (b): the largest B with (2·P + B·S·kv)/(n·W_hbm) + 2L·AllReduce(B) <= 0.02 s, linear in B.
_FIXED = 2 * P70 / (8 * W_H100) + 160 * 2 * 7e-6
_PER_SEQUENCE = 4096 * KV70 / (8 * W_H100) + 160 * 2 * 8192 * 2 * 7 / 8 / NVLINK_H100
BEST = math.floor((0.02 - _FIXED) / _PER_SEQUENCE)

# answer name -> the value worked out by hand
BY_HAND = {
    "kv_bytes_per_token": 327_680,
    "kv_bytes_per_sequence": 8192 * 327_680,
    "max_batch": 185,                        # (640e9 - 141.1e9) / 2.68e9 = 185.9
    "prefill_flops": PREFILL_FLOPS,
    "prefill_intensity": PREFILL_FLOPS / PREFILL_BYTES,
    "prefill_time": PREFILL_FLOPS / C_H100,
    "decode_time": DECODE,
    "decode_tokens_per_s": 1 / DECODE,
    "decode_time_int8": (P8 + 8192 * KV8) / W_H100,
    "critical_batch": C_H100 / W_H100,
    "critical_batch_int8": C_H100 / (2 * W_H100),
    "critical_batch_long": C_H100 / W_H100,
    "allreduces_per_step": 160,
    "allreduce_time": ALLREDUCE,
    "decode_step_time": STEP,
    "tokens_per_s_per_gpu": 64 / STEP / 8,
    "cost_per_million_tokens": 8 * 3.0 / 3600 / (64 / STEP) * 1e6,
    "smallest_slice": 4,                     # (141.1e9 + 16 · 32,768 · 327,680) / 141e9 = 2.2
    "best_batch": BEST,
}

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    ("kv_bytes_per_token", 2 * 80 * 64 * 128 * 2, "Only the key/value heads are cached"),
    ("kv_bytes_per_token", 80 * 8 * 128 * 2, "both keys and values"),
    ("kv_bytes_per_token", 2 * 8 * 128 * 2, "That is one layer"),
    ("kv_bytes_per_sequence", 8192 * 2 * 80 * 64 * 128 * 2, "count K, not H"),
    ("kv_bytes_per_sequence", 8192 * 327_680 / 1e9, "not GB"),
    ("max_batch", 238, "subtract their 2 bytes per parameter"),          # 640e9 / 2.68e9
    ("max_batch", 23, "count K, not H"),                                 # 185.9 / 8
    ("max_batch", 185.85, "Round down"),
    ("prefill_flops", 4096 * 2 * P8, "Add the attention core"),
    ("prefill_flops", 3 * PREFILL_FLOPS, "not the 6 of training"),
    ("prefill_intensity", 2 * PREFILL_FLOPS / PREFILL_BYTES, "count bytes, not numbers"),
    ("prefill_intensity", PREFILL_FLOPS / PREFILL_BYTES / 4096, "read once for all T tokens"),
    ("prefill_time", PREFILL_BYTES / W_H100, "compute-bound"),
    ("prefill_time", PREFILL_FLOPS / (2 * C_H100), "sparsity"),
    ("prefill_time", PREFILL_FLOPS / C_H100 * 1e3, "not milliseconds"),
    ("decode_time", (2 * P8 + 4 * 32 * 8192 * 32 * 128) / C_H100, "decode is memory-bound"),
    ("decode_time", 2 * P8 / W_H100, "whole cache"),
    ("decode_tokens_per_s", C_H100 / (2 * P8 + 4 * 32 * 8192 * 32 * 128), "memory-bound"),
    ("decode_tokens_per_s", 1 / DECODE / 1e3, "not per millisecond"),
    ("decode_time_int8", DECODE / 2, "the cache stays bf16"),
    ("decode_time_int8", DECODE, "1 byte per weight"),
    ("decode_time_int8", (8 * P8 + 8192 * KV8) / W_H100, "8 bits"),
    ("critical_batch", 2 * C_H100 / W_H100, "sparsity"),
    ("critical_batch", C_H100 / (2 * W_H100), "the intensity is B"),
    ("critical_batch_int8", C_H100 / W_H100, "half the batch"),
    ("critical_batch_int8", 2 * C_H100 / W_H100, "the int8 rate does not apply"),
    ("critical_batch_long", CRITICAL_LONG_OVERLAPPED, "the overlapped bound"),
    ("critical_batch_long", 2 * C_H100 / W_H100, "sparsity"),
    ("allreduces_per_step", 80, "two AllReduces per layer"),
    ("allreduces_per_step", 2, "That is one layer"),
    ("allreduce_time", ALLREDUCE / 2, "ReduceScatter followed by an AllGather"),
    ("allreduce_time", 2 * 64 * 8192 * 2 * 7 / 8 / NVLINK_H100, "Add the latency"),
    ("allreduce_time", 2 * (7e-6 + 64 * 8192 * 4 * 7 / 8 / NVLINK_H100), "bf16: 2 bytes"),
    ("allreduce_time", ALLREDUCE * 1e6, "not microseconds"),
    ("decode_step_time", STEP - 160 * ALLREDUCE, "Add the AllReduces"),
    ("decode_step_time", STEP - 80 * ALLREDUCE, "not one"),
    ("decode_step_time", 64 * (2 * P70 + 4 * 80 * 4096 * 64 * 128) / (8 * C_H100)
     + 160 * ALLREDUCE, "memory-bound"),
    ("decode_step_time", (2 * P70 + 64 * 4096 * KV70) / W_H100 + 160 * ALLREDUCE, "1/n share"),
    ("tokens_per_s_per_gpu", 64 / STEP, "whole slice's rate"),
    ("tokens_per_s_per_gpu", 1 / STEP, "one token for each of the B sequences"),
    ("cost_per_million_tokens", 8 * 3.0 / 3600 / (64 / STEP / 8) * 1e6, "not the slice's price"),
    ("cost_per_million_tokens", 8 * 3.0 / (64 / STEP) * 1e6, "divide it by 3,600"),
    ("cost_per_million_tokens", 8 * 3.0 / 3600 / (64 / STEP), "cost of one token"),
    ("smallest_slice", 2, "The caches need room too"),
    ("smallest_slice", 3, "Slices come in 1, 2, 4 or 8 GPUs"),
    ("best_batch", math.floor((0.02 * 8 * W_H100 - 2 * P70) / (4096 * KV70)), "Count the AllReduces"),
]


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def test_parts_and_points():
    nb = nbformat.read(str(SOURCE), as_version=4)
    graded = [c for c in nb.cells if nbgrader_metadata(c).get("grade")]
    assert len(graded) == 20 >= 15
    assert sum(nbgrader_metadata(c)["points"] for c in graded) == 20
    assert "**20 points** in 8 problems" in nb.cells[0].source
    assert set(BY_HAND) | {"serving_config"} == {n for c in graded for n in answer_names(c.source)
                                                 if not n.startswith("_")}


def test_the_published_numbers_are_the_books():
    """The sample a reader of the book sees: the first value of every choice."""
    drawn = SAMPLE.drawn()
    assert (drawn["q1_model"], drawn["q1_S"], drawn["q1_gpu"], drawn["q1_n"]) == (
        "LLaMA-3 70B", 8192, "H100", 8)
    assert (drawn["q2_gpu"], drawn["q2_T"], drawn["q3_S"]) == ("H100", 4096, 8192)
    assert (drawn["q4_gpu"], drawn["q4_model"], drawn["q4_S"]) == ("H100", "LLaMA-3 405B", 1024)
    assert (drawn["q5_model"], drawn["q5_gpu"], drawn["q5_n"], drawn["q5_B"], drawn["q5_S"]) == (
        "LLaMA-3 70B", "H100", 8, 64, 4096)
    assert (drawn["q6_price"], drawn["q7_model"], drawn["q7_gpu"], drawn["q7_B"], drawn["q7_S"],
            drawn["q7_target"]) == (3.0, "LLaMA-3 70B", "H200", 16, 32768, 0.02)
    assert (SAMPLE["q5_P"], SAMPLE["q2_P"], SAMPLE["q4_P"]) == (P70, P8, P405)
    assert (SAMPLE["q1_P"], SAMPLE["q5_P_total"], SAMPLE["q7_P"]) == (P70_TOTAL,) * 3
    assert (SAMPLE["q1_hbm"], SAMPLE["q7_hbm"], SAMPLE["q5_nvlink"]) == (
        HBM_H100, HBM_H200, NVLINK_H100)


def test_hand_answers_agree_with_the_solver():
    """The literals of the problems are the solver's numbers for the same shapes."""
    l8, l70, l405 = llama3_8b(), llama3_70b(), llama3_405b()
    assert (param_count(l70).total, param_count(l70).matmul) == (P70_TOTAL, P70)
    assert param_count(l8).matmul == P8 and param_count(l405).matmul == P405
    assert inference.kv_bytes_per_token(l70) == BY_HAND["kv_bytes_per_token"]
    assert inference.max_batch(l70, "H100", context_len=8192, n_chips=8) == BY_HAND["max_batch"]
    pre = inference.prefill(l8, "H100", prompt_len=4096)
    assert pre.flops == pytest.approx(BY_HAND["prefill_flops"])
    assert pre.intensity == pytest.approx(BY_HAND["prefill_intensity"])
    assert pre.time == pytest.approx(BY_HAND["prefill_time"]) and pre.bound == "compute"
    one = inference.decode_step(l8, "H100", batch=1, context_len=8192)
    assert one.time == pytest.approx(BY_HAND["decode_time"]) and one.bound == "memory"
    int8 = inference.decode_step(l8, "H100", batch=1, context_len=8192, weight_dtype="int8")
    assert int8.time == pytest.approx(BY_HAND["decode_time_int8"])
    assert inference.decode_critical_batch(l405, "H100") == pytest.approx(BY_HAND["critical_batch"])
    assert inference.decode_critical_batch(l405, "H100", weight_dtype="int8") == pytest.approx(
        BY_HAND["critical_batch_int8"])
    assert inference.decode_critical_batch(l405, "H100", context_len=1024, overlap=False) == \
        pytest.approx(BY_HAND["critical_batch_long"])
    assert inference.decode_critical_batch(l405, "H100", context_len=1024) == pytest.approx(
        CRITICAL_LONG_OVERLAPPED)
    step = inference.decode_step(l70, "H100", batch=64, context_len=4096, n_chips=8)
    assert step.t_comm == pytest.approx(BY_HAND["allreduces_per_step"] * ALLREDUCE)
    assert step.time == pytest.approx(BY_HAND["decode_step_time"]) and step.bound == "memory"
    assert step.tokens_per_s_per_chip == pytest.approx(BY_HAND["tokens_per_s_per_gpu"])
    assert inference.cost_per_million_tokens(step.tokens_per_s, n_chips=8, price_per_chip_hour=3.0) \
        == pytest.approx(BY_HAND["cost_per_million_tokens"])
    assert inference.smallest_slice(l70, "H200", context_len=32768, batch=16) == \
        BY_HAND["smallest_slice"]
    assert inference.best_batch(l70, "H100", latency_target=0.02, context_len=4096, n_chips=8) \
        == BY_HAND["best_batch"]


def test_the_specs_slips_are_the_stated_formulas():
    """The AllReduce of the prompt is the collectives module's, and its hinted variants differ
    from it by exactly the term each leaves out or doubles."""
    v, n, w = 64 * 8192 * 2, 8, NVLINK_H100
    assert hw6_inference.allreduce_time(v, n, w) == pytest.approx(gpu_all_reduce(v, n, "H100").time)
    assert hw6_inference.allreduce_time(v, n, w) == pytest.approx(ALLREDUCE)
    assert hw6_inference.allreduce_time(v, n, w, doubled=False) == pytest.approx(ALLREDUCE / 2)
    assert hw6_inference.allreduce_time(v, n, w, latency=False) == pytest.approx(ALLREDUCE - 14e-6)
    assert hw6_inference.best_batch_without_allreduces(SAMPLE) == MISCONCEPTIONS[-1][1]
    assert hw6_inference.smallest_power_of_two(141.1e9, HBM_H200) == 2
    assert hw6_inference.smallest_power_of_two(2e12, HBM_H200) is None


def test_long_caches_keep_decode_memory_bound_so_problem_4c_avoids_them():
    """Why P4 (c) draws contexts of at most 2,048 tokens and checks each draw: the 70B on an
    H100 never turns compute-bound at 2,048 cached tokens, and the draws that would are
    refused."""
    assert inference.decode_critical_batch(llama3_70b(), "H100", context_len=2048) == math.inf
    refused = dict(SAMPLE.drawn(), q4_model="LLaMA-3 70B", q4_S=2048)
    assert not hw6_inference.well_posed(variant_from(spec_for(A), refused))


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_hidden_check_agrees_with_the_hand_answer(test_cells, name):
    run_as_grader(test_cells[name], BY_HAND, SAMPLE)


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_double_and_half_fail(test_cells, name):
    for factor in (2.0, 0.5):
        with pytest.raises(AssertionError):
            run_as_grader(test_cells[name], {**BY_HAND, name: BY_HAND[name] * factor}, SAMPLE)


@pytest.mark.parametrize("name, wrong, fragment",
                         [pytest.param(*row, id=f"{row[0]}:{row[2]}") for row in MISCONCEPTIONS])
def test_misconception_gets_its_hint(test_cells, name, wrong, fragment):
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells[name], {**BY_HAND, name: wrong}, SAMPLE)
    message = str(info.value)
    assert "Hint:" in message and fragment in message, message


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_each_check_reads_only_its_own_answer(test_cells, name):
    names = {n for n in answer_names(test_cells[name].source) if not n.startswith("_")}
    assert names == {name}


# --------------------------------------------------------------------------- problem 8, a design

# Worked by hand at the sample numbers (LLaMA-3 70B, H100s of 80 GB, S = 8,192, 30 ms per token):
# the bf16 weights alone are 2 × 70.55e9 = 141 GB, more than one H100 holds; each sequence's
# cache is 8,192 × 2 (K and V) × 80 layers × 8 heads × 128 × 2 bytes = 2.68 GB.
WEIGHTS70 = 2 * 70_553_706_496
CACHE70 = 8192 * 2 * 80 * 8 * 128 * 2


@pytest.mark.parametrize("config, fragment", [
    ([1, 1, "bf16"], "does not fit"),                    # 141 GB of weights on one 80 GB GPU
    ([8, 300, "bf16"], "does not fit"),                  # 141 GB + 300 × 2.68 GB > 640 GB
    ([3, 8, "bf16"], "1, 2, 4 or 8 GPUs"),
    ([8, 8, "fp4"], "not 'fp4'"),
])
def test_configurations_that_break_a_condition_are_told_which(test_cells, config, fragment):
    assert WEIGHTS70 > 80e9 and WEIGHTS70 + 300 * CACHE70 > 640e9
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["serving_config"], {"serving_config": config}, SAMPLE)
    assert fragment in str(info.value), str(info.value)


def test_the_cheapest_configuration_passes_and_batch_one_is_told_its_cost(test_cells):
    from scalebook.homework.hw6_inference import best_serving8
    best = best_serving8(SAMPLE)
    run_as_grader(test_cells["serving_config"], {"serving_config": best}, SAMPLE)
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["serving_config"], {"serving_config": [best[0], 1, best[2]]}, SAMPLE)
    assert "more than the cheapest configuration" in str(info.value)


def test_best_batch_past_the_weights_critical_batch_is_phased():
    """P7 (b) where the batch passes the weight matmuls' critical batch (70B on 8 H200s, S =
    4,096, 20 ms): the phased step grows by B·2P/(n·C) per sequence, the overlapped bound by
    the cache reads only, so they part (283 against 313). The solver and the part agree with
    the hand values; the overlapped one earns the hint that names the bound."""
    W_H200 = 4.8e12
    drawn = {**SAMPLE.drawn(), "q5_gpu": "H200", "q7_target": 0.02}
    v = variant_from(spec_for(A), drawn)
    per_comm = 160 * 2 * 8192 * 2 * 7 / 8 / NVLINK_H100          # AllReduce bytes per sequence
    fixed_comm = 160 * 2 * 7e-6
    assert C_H100 / W_H200 < 283                                   # the weights compute-bound
    phased = math.floor((0.02 - fixed_comm)
                        / (2 * P70 / (8 * C_H100) + 4096 * KV70 / (8 * W_H200) + per_comm))
    overlapped = math.floor((0.02 - fixed_comm - 2 * P70 / (8 * W_H200))
                            / (4096 * KV70 / (8 * W_H200) + per_comm))
    assert (phased, overlapped) == (283, 313)
    part = hw6_inference.PARTS[-1]
    assert part.answer == "best_batch" and part.expected(v) == phased
    assert hw6_inference.best_batch_overlapped(v) == overlapped
    with pytest.raises(AssertionError) as info:
        check_answer(v, "best_batch", overlapped)
    assert "overlapped bound" in str(info.value) and "one after another" in str(info.value)

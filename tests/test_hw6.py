"""Homework 6 (serving a model) beyond the generic checks of test_homework.py.

- (the contract every homework keeps, run for all eight by test_homework_contract.py against
  the hand-worked answers of tests/oracles/hw6.py: parts and points, every hidden check agrees
  with the hand answer, each misconception gets its hint)
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

import pytest

from gradecells import grade_cells_by_answer, run_as_grader
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

from oracles.hw6 import (  # the hand-worked answers, shared with test_homework_contract.py
    C_H100, HBM_H100, NVLINK_H100, HBM_H200, P70_TOTAL, P70, P8, P405, KV70,
    CRITICAL_LONG_OVERLAPPED, ALLREDUCE, BY_HAND, MISCONCEPTIONS)


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


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
    assert inference.decode_critical_batch(l405, "H100", context_len=1024, overlap=True) == pytest.approx(
        CRITICAL_LONG_OVERLAPPED)
    # the homework states the ring convention (2(n−1) steps per AllReduce)
    step = inference.decode_step(l70, "H100", batch=64, context_len=4096, n_chips=8,
                                 algorithm="ring")
    assert step.t_comm == pytest.approx(BY_HAND["allreduces_per_step"] * ALLREDUCE)
    assert step.time == pytest.approx(BY_HAND["decode_step_time"]) and step.bound == "memory"
    assert step.tokens_per_s_per_chip == pytest.approx(BY_HAND["tokens_per_s_per_gpu"])
    assert inference.cost_per_million_tokens(step.tokens_per_s, n_chips=8, price_per_chip_hour=3.0) \
        == pytest.approx(BY_HAND["cost_per_million_tokens"])
    assert inference.smallest_slice(l70, "H200", context_len=32768, batch=16) == \
        BY_HAND["smallest_slice"]
    assert inference.best_batch(l70, "H100", latency_target=0.02, context_len=4096, n_chips=8,
                                algorithm="ring") \
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
    assert inference.decode_critical_batch(llama3_70b(), "H100", context_len=2048,
                                          overlap=True) == math.inf
    refused = dict(SAMPLE.drawn(), q4_model="LLaMA-3 70B", q4_S=2048)
    assert not hw6_inference.well_posed(variant_from(spec_for(A), refused))


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

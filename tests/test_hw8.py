"""Homework 8 (serving systems) beyond the generic checks of test_homework.py,
test_homework_parts.py and test_homework_contract.py.

- every hidden check agrees with the answer worked out by hand from the problem's stated numbers
  (tests/oracles/hw8.py: the step model's figures from the H100 datasheet and LLaMA-3 8B's shape),
  and the hand answers agree with the solver;
- the design part is judged by the seeded simulator: the reference and any feasible
  configuration on the fewest GPUs pass; an infeasible one is told which SLO it misses and by
  how much (or that the weights do not fit); a feasible but costlier one is told the cheaper
  bound; the verdict is the same on every run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradecells import grade_cells_by_answer, run_as_grader
from scalebook.homework import hw8_serving_systems as hw8, spec_for
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
A = "hw8-serving-systems"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"
SAMPLE = default_variant(spec_for(A))

from oracles.hw8 import BY_HAND, KV_CAP, T_PAIR, T_TOK, T_W  # noqa: E402  (the hand answers)


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def test_hand_answers_agree_with_the_solver():
    assert SAMPLE["t_tok"] == pytest.approx(T_TOK, rel=1e-9)
    assert SAMPLE["t_w"] == pytest.approx(T_W, rel=1e-9)
    assert SAMPLE["t_pair"] == pytest.approx(T_PAIR, rel=1e-9)
    assert SAMPLE["kv_cap"] == KV_CAP
    for part in hw8.PARTS:
        assert part.expected(SAMPLE) == pytest.approx(BY_HAND[part.answer], rel=1e-9), part.answer


def test_at_least_fifteen_parts_and_a_design():
    assert len(hw8.PARTS) >= 15
    assert [d.answer for d in hw8.DESIGNS] == ["serving_design"]


def test_design_is_judged_by_the_simulator(test_cells):
    cell = test_cells["serving_design"]
    # the sample: λ = 2/s, TTFT ≤ 1 s, TPOT ≤ 50 ms on LLaMA-3 70B: 2 H100s do it only with
    # chunked prefill and speculation (the cache is small beside 141 GB of weights)
    assert hw8.best_design12(SAMPLE) == [2, 64, 512, 4]
    run_as_grader(cell, {"serving_design": [2, 64, 512, 4]}, SAMPLE)
    run_as_grader(cell, {"serving_design": [2, 256, 512, 4]}, SAMPLE)   # another feasible one
    cases = [
        ([2, 64, 512, 0], "the TTFT SLO (1 s): p90 TTFT is"),           # no speculation: a queue
        ([2, 64, 0, 4], "27% over"),                                      # whole prompts stall
        ([4, 256, 0, 0], "meets them on 2 H100s"),                        # feasible, twice the cost
        ([8, 256, 512, 0], "$16 per hour"),
        ([1, 256, 0, 0], "do not fit on 1 H100"),
        ([3, 64, 0, 0], "1, 2, 4 or 8 H100s"),
        ([2, 64, 10, 4], "64 to 16,384"),
        ([2, 64, 512, 9], "0 (no speculation) to 8"),
        ([2.5, 64, 512, 4], "whole number"),
        ([2, 64, 512], "a list [GPUs, batch cap, chunk, k]"),
    ]
    for value, fragment in cases:
        with pytest.raises(AssertionError) as info:
            run_as_grader(cell, {"serving_design": value}, SAMPLE)
        assert fragment in str(info.value), (value, str(info.value))


def test_design_verdict_is_deterministic():
    hw8.design_trace.cache_clear()
    first = hw8.judge_design12(SAMPLE, [2, 64, 0, 4])
    hw8.design_trace.cache_clear()
    assert hw8.judge_design12(SAMPLE, [2, 64, 0, 4]) == first and not first.passed


def test_a_tighter_ttft_needs_more_chips():
    v = dict(SAMPLE)
    v["q12_ttft"] = 0.5
    assert hw8.best_design12(v)[0] == 4
    verdict = hw8.judge_design12(v, [2, 64, 512, 4])
    assert not verdict.passed and "TTFT" in verdict.hints[0]


def test_sample_numbers_are_the_books():
    drawn = SAMPLE.drawn()
    assert (drawn["q1_chip"], drawn["q1_T"], drawn["q1_R"]) == ("H100", 1024, 256)
    assert (drawn["q7_h"], drawn["q7_q"], drawn["q7_hit"]) == (2000, 500, 0.9)    # W8
    assert (drawn["q9_alpha"], drawn["q9_k"]) == (0.8, 4)                         # W10

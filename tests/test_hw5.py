"""Homework 5 (transformers at scale) beyond the generic checks of test_homework.py.

- (the contract every homework keeps, run for all eight by test_homework_contract.py against
  the hand-worked answers of tests/oracles/hw5.py: parts and points, every hidden check agrees
  with the hand answer, each misconception gets its hint)
- the typical errors the assignment is about (the backward pass's 2× forgotten, attention
  counted with d_model instead of the head dims, KV heads taken as query heads under GQA, bytes
  and parameters confused, days at peak instead of at an MFU, ...) each get their hint;
- every hidden block reads nothing from the student but its own answer: its inputs come from
  ``VARIANT``, which these checks bind to the book's sample numbers, as the grader binds it to
  the student's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradecells import grade_cells_by_answer, run_as_grader
from scalebook import scaling_laws, training, transformer
from scalebook.homework import spec_for
from scalebook.variants import default_variant, variant_from

REPO = Path(__file__).resolve().parent.parent
A = "hw5-transformers"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason="hw5 source notebook not written")

#: The sample numbers (the first value of every choice): the numbers the book prints.
SAMPLE = default_variant(spec_for(A))

from oracles.hw5 import (  # the hand-worked answers, shared with test_homework_contract.py
    P8, P70, N405, RUN, BY_HAND)


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def test_hand_answers_agree_with_the_solver():
    """The literals of the problems are the solver's numbers for the same shapes."""
    l8, l70, l405 = transformer.llama3_8b(), transformer.llama3_70b(), training.llama3_405b()
    c8 = transformer.param_count(l8)
    assert c8.total == BY_HAND["total_params"] and c8.matmul == P8
    assert c8.attention == 32 * BY_HAND["attn_params_per_layer"]
    assert transformer.param_count(l70).total == P70
    assert transformer.param_count(l405).total == N405
    f = transformer.flops_per_token(l8, 8192)
    assert f.attention_core == BY_HAND["fwd_attn_flops_per_token"]
    assert f.training == pytest.approx(BY_HAND["train_flops_per_token"])
    assert transformer.attention_crossover_context(l8) == BY_HAND["crossover_context"]
    assert training.training_memory(l70).state == BY_HAND["state_bytes"]
    assert training.fewest_chips(16 * P70, "H100") == BY_HAND["min_h100s"]
    assert training.korthikanti_activation_bytes_per_layer(l70, 1, 8192) == \
        BY_HAND["act_bytes_layer"]
    assert training.implied_mfu(RUN, "H100", chip_hours=30.84e6) == \
        pytest.approx(BY_HAND["implied_mfu"])
    assert training.run_time(RUN, 16384, "H100", mfu=0.4) == \
        pytest.approx(BY_HAND["run_seconds"])
    opt = scaling_laws.compute_optimal(1e24)
    assert opt.params == pytest.approx(BY_HAND["optimal_params"])
    assert opt.tokens == pytest.approx(BY_HAND["optimal_tokens"])


# --------------------------------------------------------------------------- issue 24's cases

def _slip(test_cells, name: str, value: float, variant) -> str:
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells[name], {name: value}, variant)
    return str(info.value)


def test_problem_5_with_problem_2s_70b_gets_the_model_hint(test_cells):
    """Problem 5 is an 8B-like model for everyone; a student whose problems 1-2 are the 70B and
    who carries its P over is 9.3x off, and is told which model problem 5 means."""
    v = variant_from(spec_for(A), {**SAMPLE.drawn(), "q1_model": "LLaMA-3 70B"})
    tokens = v["q5_seqs"] * 8192
    message = _slip(test_cells, "step_flops", 6 * v["q2_P"] * tokens, v)
    assert message.count("Hint:") == 1 and "8B-like" in message


@pytest.mark.parametrize("bytes_per_param, fragment", [(4, "2 + 2 bytes"), (8, "4 + 4")])
def test_forgetting_the_optimizer_state_gets_a_hint(test_cells, bytes_per_param, fragment):
    message = _slip(test_cells, "state_bytes", bytes_per_param * SAMPLE["q4_P"], SAMPLE)
    assert message.count("Hint:") == 1 and fragment in message

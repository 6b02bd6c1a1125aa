"""Homework 5 (transformers at scale) beyond the generic checks of test_homework.py.

- every hidden check agrees with the answer worked out by hand from the problem's stated numbers
  (and, where the solver has the formula, with scalebook too), so a change in either cannot
  silently change a grade;
- the typical errors the assignment is about (the backward pass's 2× forgotten, attention
  counted with d_model instead of the head dims, KV heads taken as query heads under GQA, bytes
  and parameters confused, days at peak instead of at an MFU, ...) each get their hint;
- every hidden block reads nothing from the student but its own answer: its inputs come from
  ``VARIANT``, which these checks bind to the book's sample numbers, as the grader binds it to
  the student's own.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest

from autograder.checker import answer_names
from gradecells import grade_cells_by_answer, nbgrader_metadata, run_as_grader
from scalebook import scaling_laws, training, transformer
from scalebook.homework import spec_for
from scalebook.variants import default_variant, variant_from

REPO = Path(__file__).resolve().parent.parent
A = "hw5-transformers"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason="hw5 source notebook not written")

#: The sample numbers (the first value of every choice): the numbers the book prints.
SAMPLE = default_variant(spec_for(A))

# Problem inputs, restated from the prompts.
D, L, H, K, DH, F, V = 4096, 32, 32, 8, 128, 14336, 128256          # LLaMA-3 8B
P8 = 7_504_658_432                                                  # its matmul weights
P70, D70, L70, H70, T = 70_553_706_496, 8192, 80, 64, 8192
N405, TOK405 = 405_853_388_800, 15.6e12
C_H100 = 9.89e14
STEP = 6 * P8 * 1024 * 8192
MFU5 = STEP / (256 * C_H100 * 3.4)
RUN = 6 * N405 * TOK405

# answer name -> the value worked out by hand
BY_HAND = {
    "attn_params_per_layer": 2 * 4096 * 4096 + 2 * 4096 * 1024,
    "mlp_params_per_layer": 3 * 4096 * 14336,
    "total_params": 8_030_261_248,
    "fwd_matmul_flops_per_token": 2 * P8,
    "fwd_attn_flops_per_token": 4 * 32 * 8192 * 32 * 128,
    "train_flops_per_token": 3 * (2 * P8 + 4 * 32 * 8192 * 32 * 128),
    "crossover_context": 21504,
    "attn_core_flops_per_token": 4 * 28 * 8192 * 16 * 256,
    "state_bytes": 16 * P70,
    "min_h100s": 15,
    "act_bytes_layer": 8192 * 8192 * (34 + 5 * 64),
    "act_bytes_remat": 80 * 2 * 8192 * 8192,
    "step_flops": STEP,
    "step_time_ideal": STEP / (256 * C_H100),
    "mfu": MFU5,
    "hfu": MFU5 * 8 / 6,
    "run_flops": RUN,
    "run_seconds": RUN / (16384 * C_H100 * 0.4),
    "implied_mfu": RUN / (30.84e6 * 3600 * C_H100),
    "optimal_params": math.sqrt(1e24 / 120),
    "optimal_tokens": 20 * math.sqrt(1e24 / 120),
}

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    ("attn_params_per_layer", 4 * 4096 * 4096, "K = 8 heads"),
    ("mlp_params_per_layer", 2 * 4096 * 14336, "three D × F"),
    ("total_params", 8_030_261_248 - 128256 * 4096, "both vocabulary tables"),
    ("total_params", 8_030_261_248 + 32 * 2 * 4096 * 24 * 128, "K = 8 heads"),
    ("fwd_matmul_flops_per_token", P8, "multiply-add is 2 FLOPs"),
    ("fwd_attn_flops_per_token", 4 * 32 * 8192 * 8 * 128, "not the K = 8 key/value heads"),
    ("train_flops_per_token", 2 * P8 + 4 * 32 * 8192 * 32 * 128, "forward pass only"),
    ("train_flops_per_token", 6 * P8, "add the attention core"),
    ("crossover_context", 3 * 4096 * 14336 / (2 * 8 * 128), "not the K = 8"),
    ("attn_core_flops_per_token", 4 * 28 * 8192 * 3072, "head dimensions"),
    ("state_bytes", P70, "number of parameters"),
    ("state_bytes", 12 * P70, "master copy"),
    ("min_h100s", 14, "Round up"),
    ("min_h100s", 2, "Count all 16 bytes"),
    ("act_bytes_layer", 8192 * 8192 * 34, "5·H·T/D"),
    ("act_bytes_remat", 80 * 8192 * 8192, "Bytes, not elements"),
    ("step_flops", STEP / 3, "forward pass only"),
    ("step_time_ideal", STEP / (256 * 2 * C_H100), "sparsity"),
    ("mfu", MFU5 / 2, "with sparsity"),
    ("mfu", MFU5 / 3, "backward pass"),
    ("mfu", 100 * MFU5, "not a percentage"),
    ("hfu", MFU5, "forward pass twice"),
    ("run_flops", RUN / 3, "backward pass"),
    ("run_seconds", RUN / (16384 * C_H100), "time at peak"),
    ("run_seconds", RUN / (16384 * C_H100 * 0.4) / 86400, "not days"),
    ("implied_mfu", RUN / (30.84e6 * C_H100), "3,600"),
    ("optimal_params", math.sqrt(1e24 / 40), "not 2·N·D"),
    ("optimal_tokens", math.sqrt(1e24 / 120), "20 times more"),
]


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def test_parts_and_points():
    nb = nbformat.read(str(SOURCE), as_version=4)
    graded = [c for c in nb.cells if nbgrader_metadata(c).get("grade")]
    assert len(graded) == 21 >= 15
    assert sum(nbgrader_metadata(c)["points"] for c in graded) == 21
    assert "**21 points** in 7 problems" in nb.cells[0].source


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

"""Homework 4 (parallelism) beyond the generic checks of test_homework.py.

- (the contract every homework keeps, run for all eight by test_homework_contract.py against
  the hand-worked answers of tests/oracles/hw4.py: parts and points, every hidden check agrees
  with the hand answer, each misconception gets its hint)
- the typical errors the assignment is about (Adam state at 2 bytes per parameter, FSDP memory
  taken for DP's, one collective per layer under TP, M and K swapped in the bubble, the global
  batch where the per-chip batch belongs, ...) each get their hint;
- problem 9, the sharded training step: the check compiles and runs the step itself from the
  captured specs (lists, as the sandbox reports them, or tuples), passes the Megatron layout,
  and gives zero with the right hint to layouts that need extra collectives; it reads nothing
  from the student but its three answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.grading.names import answer_names
from gradecells import free_names, grade_cells_by_answer, run_as_grader
from scalebook.homework import spec_for
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
A = "hw4-parallelism"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason="hw4 source notebook not written")

# The book's sample numbers, which the hand answers below are worked out from: the hidden checks
# read each student's numbers from VARIANT, the grader binds this one for the sample.
SAMPLE = default_variant(spec_for(A))

from oracles.hw4 import (  # the hand-worked answers, shared with test_homework_contract.py
    N_TOTAL, BY_HAND, SPECS)

# (w_in_spec, w_out_spec, text the failure must carry)
WRONG_LAYOUTS = [
    (["model", None], ["model", None], "wrong dimension"),     # W_in split along D: gathers
    (["model", None], [None, "model"], "partial sum"),         # two AllReduces
    ([None, "model"], [None, "model"], "wrong dimension"),     # W_out split along D
    ([None, None], ["model", None], "full copy"),              # W_in replicated
    ([None, "data"], ["model", None], "not a mesh axis"),      # not an axis of the mesh
    (["model", "model"], [None, None], "twice"),
    ([None, "model", None], ["model", None], "only 2 dims"),
]


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def answers() -> dict:
    return {**BY_HAND, **SPECS}


def test_sharding_check_reads_only_its_three_answers(test_cells):
    names = {n for n in answer_names(test_cells["allreduce_bytes"].source) if not n.startswith("_")}
    assert names == {"w_in_spec", "w_out_spec", "allreduce_bytes"}


def _partition_spec(entries):
    from jax.sharding import PartitionSpec
    return PartitionSpec(*entries)


@pytest.mark.parametrize("form", [list, tuple, _partition_spec])
def test_sharding_check_passes_the_megatron_layout(test_cells, form):
    """As the sandbox reports the specs (lists), and as the student's kernel holds them."""
    run_as_grader(test_cells["allreduce_bytes"], {**answers(), **{k: form(v) for k, v in SPECS.items()}}, SAMPLE)


@pytest.mark.parametrize("w_in, w_out, fragment", WRONG_LAYOUTS)
def test_sharding_check_fails_other_layouts_with_a_reason(test_cells, w_in, w_out, fragment):
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["allreduce_bytes"], {**answers(), "w_in_spec": w_in, "w_out_spec": w_out},
                      SAMPLE)
    assert fragment in str(info.value), str(info.value)


def test_sharding_check_ignores_the_students_other_state(test_cells):
    """Pre-filled names of the check's own (the over-approximated ones inside its functions
    included) and a tampered solver in the student's process change nothing."""
    source = test_cells["allreduce_bytes"].source
    planted = {n: "planted" for n in answer_names(source) if n.startswith("_")}
    wrong = {"w_in_spec": ["model", None], "w_out_spec": [None, "model"]}
    namespace = {**planted, **{n: v for n, v in {**answers(), **wrong}.items() if n in free_names(source)}}
    namespace["VARIANT"] = SAMPLE
    with pytest.raises(AssertionError, match="partial sum"):
        exec(compile(source, "hw4-q9a-specs-test", "exec"), namespace)


# --------------------------------------------------------------------------- problem 10, a design

# Worked by hand at the sample numbers (LLaMA-3 70B, 64 H100s, B = 512 sequences of 4,096):
# 16 bytes per parameter of 70.55e9 parameters is 1,129 GB, 14.1 H100s' worth of HBM (80 GB):
# a layout must shard the state at least 15 ways, so pure data parallelism cannot fit.
NEEDS_SHARDING = 16 * N_TOTAL / 80e9


@pytest.mark.parametrize("layout, fragment", [
    ([64, 1, 1, 1, 0, 1, "none"], "does not fit: it needs"),     # every GPU holds the model
    ([8, 1, 8, 1, 0, 1, "full"], "does not fit: it needs"),      # 8-way TP alone: 16·P/8 > 80 GB
    ([1, 32, 1, 1, 3, 1, "full"], "must use the 64 GPUs"),
    ([1, 64, 1, 1, 3, 3, "full"], "divisible"),                  # 512 / (64 · 3) is no integer
])
def test_layouts_that_break_a_condition_are_told_which(test_cells, layout, fragment):
    assert NEEDS_SHARDING > 8            # so 8-way sharding of the state alone is not enough
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["training_layout"], {"training_layout": layout}, SAMPLE)
    assert fragment in str(info.value), str(info.value)


def test_the_solvers_layout_passes_and_a_slower_feasible_one_is_told_the_gap(test_cells):
    """Hybrid sharding (2 replicas of 8-way FSDP, 2-way TP, 2 stages, full remat) fits and hides
    its communication, but full remat and the bubble make its step 43% slower than the best (41% before the activations were counted from the LLaMA block itself):
    the feedback says so instead of calling the layout wrong."""
    from scalebook.homework.hw4_parallelism import best_layout10
    run_as_grader(test_cells["training_layout"], {"training_layout": best_layout10(SAMPLE)}, SAMPLE)
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["training_layout"],
                      {"training_layout": [2, 8, 2, 2, 0, 8, "full"]}, SAMPLE)
    assert "It fits and meets the communication limit" in str(info.value)
    assert "43% longer than the best layout" in str(info.value)


def test_problem_10_keeps_the_draws_it_was_first_handed_out_with():
    """The three numbers Q10_NOT_DRAWN keeps out were refused when the homework was first handed
    out. Models have moved since (NVLS collectives; issue 42's accumulation model; the reference
    now being the fastest layout within the problem's 10% limit), so whether each is solvable
    now may change: the guard keeps them out whichever way the model goes, so no student's
    numbers change (tests/test_variant_stability.py holds the fingerprints)."""
    from scalebook.homework import hw4_parallelism as hw4
    assert len(hw4.Q10_NOT_DRAWN) == 3
    for model, gpu, n, batch in sorted(hw4.Q10_NOT_DRAWN):
        v = dict(SAMPLE, q10_model=model, q10_gpu=gpu, q10_n=n, q10_B=batch)
        assert not hw4.well_posed(v), v
    assert hw4.well_posed(SAMPLE)

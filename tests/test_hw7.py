"""Homework 7 (MoE and long context) beyond the generic checks of test_homework.py and
test_homework_parts.py.

- every hidden check agrees with the answer worked out by hand from the problem's stated numbers
  (datasheet figures and published shapes, not scalebook), and the hand answers agree with the
  solver;
- the issue's typical slips (total parameters used as active FLOPs; a dense layer's critical
  batch for an MoE one; the AllToAll priced as an AllGather; the combine forgotten; the KV cache
  with query heads; ring attention's causal imbalance ignored) each get their hint;
- the design part is judged by the solver: a right design passes, each kind of wrong one fails
  with the reason;
- the JAX part is checked the way the grader checks it: compiled on its own 8-device mesh, the
  result compared and the compiled HLO's AllToAll bytes set against the solver's.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gradecells import grade_cells_by_answer, run_as_grader
from scalebook import long_context, moe
from scalebook.homework import hw7_moe_long_context as hw7, spec_for
from scalebook.transformer import llama3_70b
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
A = "hw7-moe-long-context"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"
SAMPLE = default_variant(spec_for(A))

from oracles.hw7 import (  # the hand-worked answers, shared with test_homework_contract.py
    NIC_H100, LINK_V5P, MIXTRAL_ACTIVE, BY_HAND)


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def test_hand_answers_agree_with_the_solver():
    assert moe.moe_param_count(moe.mixtral_8x7b()).active == MIXTRAL_ACTIVE
    for part in hw7.PARTS:
        assert part.expected(SAMPLE) == pytest.approx(BY_HAND[part.answer], rel=1e-9), part.answer
    ring = long_context.ring_attention(131072, 16, long_context.AttentionShape(
        n_heads=64, n_kv_heads=8, d_head=128), "TPU v5p", zigzag=False)
    assert ring.overlapped and 0.5 * ring.t_block > ring.send.time
    assert llama3_70b().n_kv_heads == 8


def test_design_is_judged_by_the_solver(test_cells):
    ep_cell, c_cell = test_cells["design_ep"], test_cells["design_capacity_factor"]
    best_c = moe.smallest_capacity_factor(4096, 256, 8, 0.001)
    assert 1.0 < best_c < 1.25
    # 58 layers x 256 experts x 3 x 7168 x 2048 x 2 bytes = 1.31e12 bytes: 64-way fits 40 GB
    assert hw7.smallest_design_ep(SAMPLE) == 64
    run_as_grader(ep_cell, {"design_ep": 64}, SAMPLE)
    run_as_grader(c_cell, {"design_capacity_factor": best_c}, SAMPLE)
    run_as_grader(c_cell, {"design_capacity_factor": best_c * 1.05}, SAMPLE)   # slack allowed
    cases = [
        (ep_cell, {"design_ep": 32}, "memory per chip falls as 1/EP"),
        (ep_cell, {"design_ep": 48}, "power of two"),
        (ep_cell, {"design_ep": 128}, "more than the 64 chips"),
        (c_cell, {"design_capacity_factor": 1.0}, "raise the capacity"),
        (c_cell, {"design_capacity_factor": 2.0}, "smallest factor"),
    ]
    for cell, answers, fragment in cases:
        with pytest.raises(AssertionError) as info:
            run_as_grader(cell, answers, SAMPLE)
        assert fragment in str(info.value), (answers, str(info.value))


@pytest.mark.slow
def test_jax_dispatch_is_compiled_and_its_alltoall_bytes_checked(test_cells):
    cell = test_cells["dispatch_shape"]
    right = {"dispatch_shape": [8, 2, 16, 16], "dispatch_split_axis": 0,
             "dispatch_concat_axis": 0}
    run_as_grader(cell, right, SAMPLE)
    wrong = [
        ({**right, "dispatch_split_axis": 1}, "reshape E into 8 groups"),
        ({**right, "dispatch_shape": [2, 8, 16, 16], "dispatch_split_axis": 1,
          "dispatch_concat_axis": 1}, "wrong blocks"),
        ({**right, "dispatch_shape": [8, 2, 16, 8]}, "does not hold"),
    ]
    for answers, fragment in wrong:
        with pytest.raises(AssertionError) as info:
            run_as_grader(cell, answers, SAMPLE)
        assert fragment in str(info.value), (answers, str(info.value))


def test_sample_numbers_are_the_books():
    drawn = SAMPLE.drawn()
    assert (drawn["q2_E"], drawn["q2_k"], drawn["q2_gpu"]) == (256, 8, "H100")   # DeepSeek-V3
    assert (drawn["q4_N"], drawn["q4_t"], drawn["q4_D"]) == (64, 4096, 7168)     # the case study
    assert (drawn["q5_model"], drawn["q5_T"], drawn["q5_C"]) == ("LLaMA-3 70B", 131072, 16)
    assert math.isclose(SAMPLE["q4_nic"], NIC_H100) and SAMPLE["q5_link"] == LINK_V5P

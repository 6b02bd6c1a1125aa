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

import nbformat
import pytest

from gradecells import grade_cells_by_answer, nbgrader_metadata, run_as_grader
from scalebook import long_context, moe
from scalebook.homework import hw7_moe_long_context as hw7, spec_for
from scalebook.transformer import llama3_70b
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
A = "hw7-moe-long-context"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"
SAMPLE = default_variant(spec_for(A))

C_H100, W_H100, NIC_H100, NVLINK_H100 = 9.89e14, 3.35e12, 5e10, 4.5e11
C_V5P, LINK_V5P = 4.59e14, 9e10
MIXTRAL_ACTIVE = 12_879_925_248            # Jiang et al. 2024: "12.9B active"
V4 = 8 * 4096 * 64 * 7168 * 2              # P4's AllToAll array
ONE4 = max(V4 / 64 * 56 / 64 / NIC_H100, V4 / 64 * 7 / 64 / NVLINK_H100) + 1e-6
BLOCK5 = 131072 // 16
T_BLOCK5 = 4 * BLOCK5 ** 2 * 64 * 128 / C_V5P

BY_HAND = {
    "active_params": MIXTRAL_ACTIVE,
    "moe_training_flops": 6 * MIXTRAL_ACTIVE * 1e12,
    "tokens_per_expert": 4096 * 8 / 256,
    "moe_critical_batch": 256 / 8 * C_H100 / W_H100,
    "expert_capacity_slots": 160,                       # 1.25 · 2 · 4096 / 64
    "dropped_share": 60 / 800,                          # only the 180-token expert overflows 120
    "imbalanced_time": 0.002 * 180 / 100,
    "dispatch_bytes_per_gpu": 63 / 64 * 8 * 4096 * 7168 * 2,
    "dispatch_time": ONE4,
    "a2a_time_per_layer": 2 * ONE4,
    "ep_fsdp_crossover": 3 * 256 * 2048 / (2 * 8),
    "kv_cache_bytes_long": 2 * 80 * 8 * 128 * 2 * 131072,
    "ring_block_bytes": 2 * BLOCK5 * 8 * 128 * 2,
    "ring_overlap_tokens": C_V5P * 8 * 2 / (2 * 64 * LINK_V5P),
    "ring_causal_time": 15.5 * T_BLOCK5,                # half a block, then 15 full ones
    "a2a_bytes_per_device": 16 * 16 * 16 * 4,           # E · C · D · 4, C = 2 · 2 · 64 / 16
}

MISCONCEPTIONS = [
    ("active_params", SAMPLE["q1_P_total"], "use the active parameters"),
    ("moe_training_flops", 6 * SAMPLE["q1_P_total"] * 1e12, "use the active parameters"),
    ("moe_training_flops", 2 * MIXTRAL_ACTIVE * 1e12, "forward and backward"),
    ("tokens_per_expert", 4096 / 256, "k experts"),
    ("moe_critical_batch", C_H100 / W_H100, "a dense layer's critical batch"),
    ("moe_critical_batch", 2 * 32 * C_H100 / W_H100, "with sparsity"),
    ("expert_capacity_slots", 80, "k·T copies"),
    ("dropped_share", 60, "not the number dropped"),
    ("imbalanced_time", 0.002, "slowest"),
    ("dispatch_bytes_per_gpu", V4, "whole AllToAll's array"),
    ("dispatch_time", V4 * 63 / 64 / NIC_H100 + 1e-6, "AllGather"),
    ("dispatch_time", V4 / 64 * 63 / 64 / NVLINK_H100, "through the GPU's NIC"),
    ("a2a_time_per_layer", ONE4, "a combine AllToAll"),
    ("a2a_time_per_layer", 4 * ONE4, "forward pass"),
    ("ep_fsdp_crossover", 256 * 2048 / (2 * 8), "three D × F_e matrices"),
    ("kv_cache_bytes_long", 2 * 80 * 64 * 128 * 2 * 131072, "not the H query heads"),
    ("ring_block_bytes", 2 * 131072 * 8 * 128 * 2, "not the whole sequence"),
    ("ring_overlap_tokens", C_V5P * 8 * 2 / (2 * 64 * 2 * LINK_V5P), "one-way"),
    ("ring_causal_time", 8 * T_BLOCK5, "lock step"),
    ("a2a_bytes_per_device", 16 * 16 * 16 * 4 * 7 / 8, "its own block included"),
]


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def test_parts_and_points():
    nb = nbformat.read(str(SOURCE), as_version=4)
    graded = [c for c in nb.cells if nbgrader_metadata(c).get("grade")]
    assert len(graded) == 19 >= 15
    assert sum(nbgrader_metadata(c)["points"] for c in graded) == 19
    assert "**19 points** in 7 problems" in nb.cells[0].source
    assert set(BY_HAND) == {p.answer for p in hw7.PARTS}


def test_hand_answers_agree_with_the_solver():
    assert moe.moe_param_count(moe.mixtral_8x7b()).active == MIXTRAL_ACTIVE
    for part in hw7.PARTS:
        assert part.expected(SAMPLE) == pytest.approx(BY_HAND[part.answer], rel=1e-9), part.answer
    ring = long_context.ring_attention(131072, 16, long_context.AttentionShape(
        n_heads=64, n_kv_heads=8, d_head=128), "TPU v5p", zigzag=False)
    assert ring.overlapped and 0.5 * ring.t_block > ring.send.time
    assert llama3_70b().n_kv_heads == 8


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
        (ep_cell, {"design_ep": 128}, "fits on 64 chips"),
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

"""Homework 4 (parallelism) beyond the generic checks of test_homework.py.

- every hidden check agrees with the answer worked out by hand from the problem's stated numbers
  (not by scalebook), so a change in the solver's conventions cannot silently change a grade;
- the typical errors the assignment is about (Adam state at 2 bytes per parameter, FSDP memory
  taken for DP's, one collective per layer under TP, M and K swapped in the bubble, the global
  batch where the per-chip batch belongs, ...) each get their hint;
- problem 9, the sharded training step: the check compiles and runs the step itself from the
  captured specs (lists, as the sandbox reports them, or tuples), passes the Megatron layout,
  and gives zero with the right hint to layouts that need extra collectives; it reads nothing
  from the student but its three answers.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest

from autograder.checker import answer_names
from gradecells import free_names, grade_cells_by_answer, nbgrader_metadata, run_as_grader
from scalebook.homework import spec_for
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
A = "hw4-parallelism"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason="hw4 source notebook not written")

# The book's sample numbers, which the hand answers below are worked out from: the hidden checks
# read each student's numbers from VARIANT, the grader binds this one for the sample.
SAMPLE = default_variant(spec_for(A))

# Problem inputs, restated from the prompts.
N_MATMUL, N_TOTAL, TOKENS = 69_501_714_432, 70_553_706_496, 15e12
C_V5P, W_V5P = 4.59e14, 1.8e11          # bf16 FLOPs/s; ring bytes/s on a wrapped ICI axis
C_H100, W_H100 = 9.89e14, 4.5e11        # dense bf16; NVSwitch bytes/s one way
P3 = 2 * 4096 * 16384 * 32              # problem 3's weights
LAYER3 = 2 * (2 * 4096 * 16384)         # one layer's bf16 weights, bytes
ALPHA = C_V5P / W_V5P                   # 2550 tokens

# answer name -> the value worked out by hand
BY_HAND = {
    "train_flops": 6 * N_MATMUL * TOKENS,
    "train_time": 6 * N_MATMUL * TOKENS / (8960 * C_V5P * 0.45),
    "optimizer_bytes": 12 * N_TOTAL,
    "max_params_one_gpu": 80e9 / 16,
    "min_gpus": 15,
    "dp_bytes_per_chip": 12 * P3,
    "t_grad_allreduce": 2 * (2 * P3) / W_V5P,
    "dp_critical_tokens_per_chip": 2550,
    "dp_min_global_batch": 40800,
    "fsdp_bytes_per_chip": 12 * P3 / 16,
    "t_fsdp_gather_layer": LAYER3 / W_V5P,
    "t_fsdp_comms_step": 32 * 3 * LAYER3 / W_V5P,
    "tp_collectives_per_layer": 4,
    "t_tp_comms_forward": 2 * (2 * 16384 * 8192) / W_H100,
    "max_tp_degree": 13,
    "min_tokens_per_chip_2d": 4 * ALPHA ** 2 / 32768,
    "max_chips_2d": 5284,
    "bubble_fraction": 7 / 31,
    "min_microbatches": 133,
    "act_bytes_remat": 32 * 16384 * 4096 * 2,
    "act_bytes_no_remat": 32 * 16384 * (4096 + 2 * 16384) * 2,
    "remat_flops_factor": 8 / 6,
    "allreduce_bytes": 16 * 32 * 4,
}
SPECS = {"w_in_spec": [None, "model"], "w_out_spec": ["model", None]}  # as the sandbox reports them

# (answer name, the value a misconception gives, worked out by hand, text the hint must carry)
MISCONCEPTIONS = [
    ("train_flops", 2 * N_MATMUL * TOKENS, "forward pass only"),
    ("train_time", 6 * N_MATMUL * TOKENS / (8960 * C_V5P), "0.45 of their peak"),
    ("train_time", 6 * N_MATMUL * TOKENS / (8960 * C_V5P * 0.45) / 86400, "not days"),
    ("optimizer_bytes", 2 * N_TOTAL, "not 2 bytes per parameter"),
    ("optimizer_bytes", 8 * N_TOTAL, "master copy"),
    ("optimizer_bytes", 12, "the whole model's"),
    ("max_params_one_gpu", 80e9 / 6, "not 2 bytes per parameter"),
    ("max_params_one_gpu", 80e9 / 12, "Count all four"),
    ("max_params_one_gpu", 80 * 2 ** 30 / 16, "1 GB = 1e9 bytes"),          # GiB: pinned by the title
    ("min_gpus", math.ceil(6 * N_TOTAL / 80e9), "not 2 bytes per parameter"),
    ("min_gpus", 14, "Round up"),
    ("dp_bytes_per_chip", 12 * P3 / 16, "full replica"),
    ("t_grad_allreduce", 2 * P3 / W_V5P, "ReduceScatter followed by an AllGather"),
    ("dp_critical_tokens_per_chip", 16 * 2550, "global batch"),
    ("dp_critical_tokens_per_chip", C_V5P / 9e10, "both ways"),
    ("dp_min_global_batch", 2550, "each chip needs"),
    ("fsdp_bytes_per_chip", 12 * P3, "FSDP splits the weights"),
    ("fsdp_bytes_per_chip", 4 * P3 + 8 * P3 / 16, "ZeRO-1"),
    ("t_fsdp_gather_layer", LAYER3 / W_V5P / 16, "whatever the number of chips"),
    ("t_fsdp_comms_step", 32 * 2 * LAYER3 / W_V5P, "data parallelism's gradient AllReduce"),
    ("tp_collectives_per_layer", 1, "backward pass repeats"),
    ("tp_collectives_per_layer", 2, "backward pass too"),
    ("tp_collectives_per_layer", 6, "no collective under TP"),
    ("t_tp_comms_forward", 2 * 16384 * 8192 / W_H100, "two collectives per layer"),
    ("t_tp_comms_forward", 2 * (2 * 16384 * 8192) / W_H100 / 8, "do not divide by 8"),
    ("max_tp_degree", math.floor(8192 * W_H100 / C_H100), "not d_model"),
    ("max_tp_degree", math.floor(28672 * W_H100 / 1979e12), "sparsity"),
    ("min_tokens_per_chip_2d", 2 * ALPHA ** 2 / 32768, "two mesh axes"),
    ("min_tokens_per_chip_2d", ALPHA, "pure FSDP"),
    ("max_chips_2d", math.floor(2 ** 22 / ALPHA), "FSDP alone"),
    ("bubble_fraction", 23 / 31, "M and K are swapped"),
    ("bubble_fraction", 7 / 24, "M + K - 1 slots"),
    ("min_microbatches", 7 / 0.05, "not (K - 1) / M"),
    ("act_bytes_remat", 32 * 2 ** 20 * 4096 * 2, "its own B / X tokens"),
    ("act_bytes_no_remat", 32 * 2 ** 20 * (4096 + 2 * 16384) * 2, "its own B / X tokens"),
    ("act_bytes_no_remat", 32 * 16384 * 4096 * 2, "rematerialised figure"),
    ("remat_flops_factor", 2, "forward pass only"),
    ("remat_flops_factor", 1.5, "adds a third"),
    ("allreduce_bytes", 16 * 32 * 4 / 8, "not 1/8 of it"),
    ("allreduce_bytes", 16 * 64 * 4, "not the hidden"),
]

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


def test_parts_and_points():
    nb = nbformat.read(str(SOURCE), as_version=4)
    graded = [c for c in nb.cells if nbgrader_metadata(c).get("grade")]
    assert len(graded) >= 15
    assert sum(nbgrader_metadata(c)["points"] for c in graded) == 24


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_hidden_check_agrees_with_the_hand_answer(test_cells, name):
    run_as_grader(test_cells[name], answers(), SAMPLE)


@pytest.mark.parametrize("name, wrong, fragment",
                         [pytest.param(*row, id=f"{row[0]}:{row[2]}") for row in MISCONCEPTIONS])
def test_misconception_gets_its_hint(test_cells, name, wrong, fragment):
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells[name], {**answers(), name: wrong}, SAMPLE)
    message = str(info.value)
    assert "Hint:" in message and fragment in message, message


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

"""The matmul planner against what XLA actually compiles, case by case (scalebook.hlo).

Each case in ``MATMUL_CASES`` pins the collectives XLA emitted (JAX 0.10.2 on 8 CPU devices):
if XLA's choice changes, the test fails and the table (shown in the Part 3 chapter) must be
revisited. Cases whose note starts with "differs" are the known disagreements; every other case
must agree exactly.
"""

import jax
import pytest
from jax.sharding import AxisType

from scalebook.hlo import (MATMUL_CASES, MatmulCase, compiled_matmul_kinds, planner_vs_compiler,
                           predicted_matmul_kinds)

SIZES = {"X": 2, "Y": 4}

# What the planner predicts where it disagrees with XLA (hand-checked against plan_matmul).
PLANNER_WHERE_DIFFERENT = {
    ("A[I, J_Y]", "B[J_Y, K]", "C[I, K_Y]"): ["ReduceScatter(Y)"],
    ("A[I, J_X]", "B[J_X, K]", "C[I_X, K]"): ["ReduceScatter(X)"],
    ("A[I_X, J_Y]", "B[J_Y, K]", "C[I_X, K_Y]"): ["ReduceScatter(Y)"],
    ("A[I_X, J]", "B[J, K_X]", "C[I_X, K]"): ["AllGather(X)", "AllGather(X)"],
    ("A[I, J_X]", "B[J_Y, K]", "C[I, K]"): ["AllGather(X)", "AllReduce(Y)"],
}


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)


def test_the_table_covers_the_four_cases_both_axes_and_both_kinds_of_output():
    assert len(MATMUL_CASES) >= 16
    text = " ".join(f"{c.lhs} {c.rhs} {c.out}" for c in MATMUL_CASES)
    assert "J_X" in text and "J_Y" in text and "J_XY" in text
    assert any(c.out == "C[I, K]" for c in MATMUL_CASES)                  # replicated output
    assert any("_" in c.out for c in MATMUL_CASES)                        # sharded output
    for case in (1, 2, 3, 4):
        assert any(f"case {case}" in c.note for c in MATMUL_CASES), case
    keys = [(c.lhs, c.rhs, c.out) for c in MATMUL_CASES]
    assert len(set(keys)) == len(keys)
    assert {k for k, c in zip(keys, MATMUL_CASES)
            if c.note.startswith("differs")} == set(PLANNER_WHERE_DIFFERENT)


@pytest.mark.parametrize("case", MATMUL_CASES, ids=lambda c: f"{c.lhs}*{c.rhs}->{c.out}")
def test_xla_emits_what_the_table_records(case: MatmulCase, mesh):
    assert tuple(compiled_matmul_kinds(case.lhs, case.rhs, case.out, mesh)) == case.xla


@pytest.mark.parametrize("case", MATMUL_CASES, ids=lambda c: f"{c.lhs}*{c.rhs}->{c.out}")
def test_planner_agrees_except_where_recorded(case: MatmulCase):
    predicted = predicted_matmul_kinds(case.lhs, case.rhs, case.out, SIZES)
    key = (case.lhs, case.rhs, case.out)
    if key in PLANNER_WHERE_DIFFERENT:
        assert predicted == PLANNER_WHERE_DIFFERENT[key]
        assert tuple(predicted) != case.xla
    else:
        assert tuple(predicted) == case.xla


def test_predictor_prefers_the_cheaper_equivalent_plan():
    # A[I_X, J] · B[J_Y, K] -> C[I_X, K]: gathering B moves 8 KiB x 3/4 = 6 KiB per device;
    # slicing A's J over Y and AllReducing C[I_X, K] (2 KiB) moves 2 x 2 KiB x 3/4 = 3 KiB.
    assert predicted_matmul_kinds("A[I_X, J]", "B[J_Y, K]", "C[I_X, K]", SIZES) == ["AllReduce(Y)"]
    # A[I, J_X] · B[J, K] -> C[I, K]: gathering A moves 1 KiB; reducing C (4 KiB) moves 4 KiB.
    assert predicted_matmul_kinds("A[I, J_X]", "B[J, K]", "C[I, K]", SIZES) == ["AllGather(X)"]


def test_planner_vs_compiler_rows(mesh):
    rows = planner_vs_compiler(MATMUL_CASES[:3] + MATMUL_CASES[10:11], mesh)
    assert [r.agree for r in rows] == [True, True, True, False]
    assert rows[1].compiled == ["AllGather(X)", "AllGather(Y)"]
    assert rows[3].predicted == ["ReduceScatter(Y)"] and rows[3].compiled == ["AllReduce(Y)"]
    assert rows[3].note.startswith("differs")
    with pytest.raises(ValueError, match="MatmulCase"):
        planner_vs_compiler([("A[I, J]", "B[J, K]", "C[I, K]")], mesh)
    with pytest.raises(ValueError, match="Mesh"):
        planner_vs_compiler(MATMUL_CASES[:1], {"X": 2, "Y": 4})


def test_agreement_rate():
    rows_agree = [tuple(predicted_matmul_kinds(c.lhs, c.rhs, c.out, SIZES)) == c.xla
                  for c in MATMUL_CASES]
    assert sum(rows_agree) == len(MATMUL_CASES) - len(PLANNER_WHERE_DIFFERENT) == 15

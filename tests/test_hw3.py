"""Homework 3 (sharding and collectives) beyond the generic checks of test_homework.py.

- (the contract every homework keeps, run for all eight by test_homework_contract.py against
  the hand-worked answers of tests/oracles/hw3.py: parts and points, every hidden check agrees
  with the hand answer, each misconception gets its hint)
- the typical errors the assignment is about each get their hint: an AllReduce priced as one
  AllGather, a link's bidirectional figure counted one way or doubled again, the replicated axis
  forgotten in memory, the ReduceScatter forgotten in the contracting case, latency ignored for a
  small message, the NIC's bandwidth used inside a node, (N-1)/N dropped where it is asked for;
- the one part that says it accepts the first-cut formula (7a) accepts it, and no other does;
- problem 8, the JAX layouts: the checks compile and run ``A @ W`` themselves from the captured
  specs (lists, as the sandbox reports them, tuples, or real PartitionSpecs), pass the intended
  layouts, and fail every other layout with a reason: a collective where none is wanted, the
  wrong output sharding, the wrong share of W, a malformed spec;
- every hidden block reads nothing from the student but its own answers: its inputs come from
  ``VARIANT``, which these checks bind to the book's sample numbers, as the grader binds it to
  the student's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.grading.names import answer_names
from gradecells import grade_cells_by_answer, run_as_grader
from scalebook.homework import spec_for
from scalebook.variants import default_variant, variant_from

REPO = Path(__file__).resolve().parent.parent
A = "hw3-sharding"
SOURCE = REPO / "solutions" / A / f"{A}.ipynb"

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason="hw3 source notebook not written")

# The book's sample numbers, which the hand answers below are worked out from: the hidden checks
# read each student's numbers from VARIANT, the grader binds this one for the sample.
SAMPLE = default_variant(spec_for(A))

from oracles.hw3 import (  # the hand-worked answers, shared with test_homework_contract.py
    W_V5P, C_V5P, ALPHA, V3, BY_HAND, OTHER)

# answer name -> (the first-cut value, accepted?) : only 7(a) says it accepts the first cut
FIRST_CUTS = [
    ("tokens_per_chip_star", C_V5P / (2 * W_V5P), True),
    ("t_allgather", V3 / (2 * W_V5P) + 8 * ALPHA, False),
    ("v_star", 16 * ALPHA * W_V5P, False),
    ("d_star_allreduce", C_V5P * 8 / W_V5P, False),
    ("t_small_allreduce", 4 * ALPHA, False),   # a small message as latency alone
]

# (a_spec, w_spec, text the failure must carry), for 8(a): no communication, output P('X', 'Y')
WRONG_8A = [
    (["X", None], ["X", "Y"], "needs no communication"),      # W splits D: AllGather over X
    (["X", "Y"], [None, "Y"], "Keep D whole"),                # A splits D: AllGather over Y
    (["X", None], [None, "X"], "needs no communication"),     # case 4
    ([None, None], [None, "Y"], "not P('X', 'Y')"),           # no communication, wrong layout
    (["X", None], [None, None], "not P('X', 'Y')"),
    (["X", None], [None, "Z"], "not a mesh axis"),
    (["X", "X"], [None, "Y"], "twice"),
    (["X", None, None], [None, "Y"], "only 2 dims"),
]
# (w_tp_spec, text the failure must carry), for 8(b): a quarter of W, one AllReduce, P('X', None)
WRONG_8B = [
    ([None, "Y"], "split W's D over Y too"),          # AllGather of A over Y
    (["X", None], "1/2 of W"),                         # D over the 2-wide axis: half of W
    ([None, None], "not a quarter"),                   # a full copy
    (["Y", "X"], "not a quarter"),                     # an eighth
    ([["Y", "X"], None], "not a quarter"),
    ("Y", "should be a jax.sharding.PartitionSpec"),
]


@pytest.fixture(scope="module")
def test_cells() -> dict:
    return grade_cells_by_answer(SOURCE)


def answers() -> dict:
    return {**BY_HAND, **OTHER}


def failure(cell, values: dict) -> str:
    with pytest.raises(AssertionError) as info:
        run_as_grader(cell, {**answers(), **values}, SAMPLE)
    return str(info.value)


@pytest.mark.parametrize("name, first_cut, accepted", FIRST_CUTS)
def test_first_cut_formula_is_accepted_only_where_the_prompt_says_so(test_cells, name, first_cut,
                                                                     accepted):
    if accepted:
        run_as_grader(test_cells[name], {**answers(), name: first_cut}, SAMPLE)
        for factor in (1.3, 0.7):  # accepting both must not accept anything in between or beyond
            failure(test_cells[name], {name: first_cut * factor})
    else:
        message = failure(test_cells[name], {name: first_cut})
        assert "Hint:" in message, message


@pytest.mark.parametrize("name, wrong, fragment", [
    ("collective_a", "AllGather", "neither A nor B splits it"),
    ("collective_b", "AllReduce", "only A splits the contracting dim"),
    ("collective_c", "AllReduce", "exactly what a ReduceScatter leaves"),
    ("collective_c", "AllGather", "partial sums"),
    ("collective_d", "none", "made whole along X"),
])
def test_wrong_collective_names_fail_with_a_reason(test_cells, name, wrong, fragment):
    assert fragment in failure(test_cells[name], {name: wrong})


@pytest.mark.parametrize("name, spelling", [("collective_a", " None "), ("collective_b", "allgather"),
                                            ("collective_c", "Reduce Scatter")])
def test_collective_names_ignore_case_and_spaces(test_cells, name, spelling):
    run_as_grader(test_cells[name], {**answers(), name: spelling}, SAMPLE)


def test_a_number_for_a_collective_is_a_form_error(test_cells):
    assert "should be a string" in failure(test_cells["collective_a"], {"collective_a": 1})


# --------------------------------------------------------------------------- problem 8 (JAX)

def test_jax_checks_read_only_their_answers(test_cells):
    for name, expected in (("w_shard_bytes", {"a_spec", "w_spec", "w_shard_bytes"}),
                           ("allreduce_bytes", {"w_tp_spec", "allreduce_bytes"})):
        names = {n for n in answer_names(test_cells[name].source) if not n.startswith("_")}
        assert names == expected


@pytest.mark.parametrize("form", ["list", "tuple", "PartitionSpec"])
def test_jax_checks_pass_the_intended_layouts(test_cells, form):
    from jax.sharding import PartitionSpec

    make = {"list": list, "tuple": tuple, "PartitionSpec": lambda v: PartitionSpec(*v)}[form]
    specs = {k: make(v) for k, v in OTHER.items() if k.endswith("spec")}
    run_as_grader(test_cells["w_shard_bytes"], {**answers(), **specs}, SAMPLE)
    run_as_grader(test_cells["allreduce_bytes"], {**answers(), **specs}, SAMPLE)


def test_jax_checks_accept_equivalent_spellings(test_cells):
    run_as_grader(test_cells["w_shard_bytes"], {**answers(), "a_spec": [["X"]], "w_spec": [None, ["Y"]]},
                  SAMPLE)
    run_as_grader(test_cells["allreduce_bytes"], {**answers(), "w_tp_spec": ["Y"]}, SAMPLE)


@pytest.mark.parametrize("a_spec, w_spec, fragment", WRONG_8A)
def test_no_communication_check_fails_other_layouts_with_a_reason(test_cells, a_spec, w_spec,
                                                                 fragment):
    message = failure(test_cells["w_shard_bytes"], {"a_spec": a_spec, "w_spec": w_spec})
    assert fragment in message, message


@pytest.mark.parametrize("w_tp_spec, fragment", WRONG_8B)
def test_allreduce_check_fails_other_layouts_with_a_reason(test_cells, w_tp_spec, fragment):
    message = failure(test_cells["allreduce_bytes"], {"w_tp_spec": w_tp_spec})
    assert fragment in message, message



# --------------------------------------------------------------------------- issue 24's cases

def _variant(**drawn):
    spec = spec_for(A)
    return variant_from(spec, {**SAMPLE.drawn(), **drawn})


def test_one_way_slip_on_a_short_ring_gets_its_hint_under_the_first_cut_too(test_cells):
    """q7 (a) accepts the first cut C/(2W); a student who also prices the ring at W (C/W) gets
    the 2W hint on a 4-chip ring, where C/W is 33% above the exact slip 2·C·(3/4)/(2W)."""
    v = _variant(q7_Na=4)
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["tokens_per_chip_star"], {"tokens_per_chip_star": C_V5P / W_V5P}, v)
    assert str(info.value).count("Hint:") == 1 and "2W" in str(info.value)


def test_alltoall_with_a_ring_factor_is_told_about_the_factor_not_the_latency(test_cells):
    """q3 (c): V(N−1)/N/(8W) plus the latency, on a 4-chip ring (25% off), gets the AllToAll
    hint; the old check told it to add the latency it had added."""
    v = _variant(q3_N=4)
    value = V3 * 3 / 4 / (8 * W_V5P) + 2 * ALPHA
    with pytest.raises(AssertionError) as info:
        run_as_grader(test_cells["t_alltoall"], {"t_alltoall": value}, v)
    assert "no (N − 1)/N factor" in str(info.value) and "Add the latency" not in str(info.value)


def test_z_copies_and_bytes_per_element_give_one_hint_when_they_coincide(test_cells):
    message = failure(test_cells["w_bytes_per_chip"], {"w_bytes_per_chip": 4096 * 16384 * 2 / 64})
    assert message.count("Hint:") == 1

"""The contract every homework keeps, checked once for all eight against their hand-worked oracles.

tests/test_homework_parts.py checks each declared part against its own definition (the
convention matrix over 500 drawn students); this module checks the definitions against answers
worked out by hand from the problems' stated figures (tests/oracles/hwN.py), so a change in the
solver or in a definition cannot silently change a grade:

- parts and points: the graded cells, their total and the title's "**N points**" agree with the
  oracle's total, and every declared part and every hand-worked answer has its graded cell;
- every graded cell passes the hand-worked answers, run the grader's way (a fresh namespace
  holding only the answers it reads, ``VARIANT`` bound to the book's sample numbers);
- twice and half a declared number fail (no convention is off by a whole factor of two);
- each misconception the oracle lists gets a hint carrying its text;
- a hidden check reads no answer but those of its own cell.

The tests that belong to one homework (its JAX layouts, its design part, its issue-24 cases)
stay in tests/test_hwN.py.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.grading.names import answer_names
from gradecells import grade_cells_by_answer, nbgrader_metadata, run_as_grader
from oracles import ALL
from scalebook.homework import PARTS, spec_for
from scalebook.homework.parts import Part
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
ORACLES = {o.A: o for o in ALL}


def _source(assignment: str) -> Path:
    return REPO / "solutions" / assignment / f"{assignment}.ipynb"


_CELLS: dict[str, dict] = {}


def cells(assignment: str) -> dict:
    """Answer name -> the graded cell that checks it, read once per session."""
    if assignment not in _CELLS:
        _CELLS[assignment] = grade_cells_by_answer(_source(assignment))
    return _CELLS[assignment]


def answers(oracle) -> dict:
    return {**oracle.BY_HAND, **oracle.OTHER}


def _rows(attribute: str) -> list:
    """(assignment, item) pairs of every oracle's table, as test ids."""
    return list(_each_row(attribute))


def _each_row(attribute: str):
    for oracle in ALL:
        table = getattr(oracle, attribute)
        for item in (sorted(table) if isinstance(table, dict) else table):
            name = item if isinstance(item, str) else item[0]
            label = name if isinstance(item, str) else f"{name}:{item[2]}"
            yield pytest.param(oracle.A, item, id=f"{oracle.A.split('-')[0]}:{label}")


def _is_jax(cell) -> bool:
    return "jax" in cell.source or "check_q" in cell.source


@pytest.mark.parametrize("assignment", sorted(ORACLES))
def test_parts_and_points(assignment):
    oracle = ORACLES[assignment]
    nb = nbformat.read(str(_source(assignment)), as_version=4)
    graded = [c for c in nb.cells if nbgrader_metadata(c).get("grade")]
    assert sum(nbgrader_metadata(c)["points"] for c in graded) == oracle.POINTS
    assert f"**{oracle.POINTS} points**" in nb.cells[0].source
    checked = set(answer_names("\n".join(c.source for c in graded)))
    assert set(answers(oracle)) <= checked, "the oracle answers a part no cell grades"
    numbers = {n for n, p in PARTS.get(assignment, {}).items() if isinstance(p, Part)}
    missing = numbers - set(answers(oracle))      # a design part has its own tests in test_hwN
    assert not missing, f"declared parts without a hand-worked answer: {sorted(missing)}"


@pytest.mark.parametrize("assignment, name", _rows("BY_HAND"))
def test_hidden_check_agrees_with_the_hand_answer(assignment, name):
    oracle = ORACLES[assignment]
    cell = cells(assignment)[name]
    if _is_jax(cell):
        pytest.importorskip("jax")
    run_as_grader(cell, answers(oracle), default_variant(spec_for(assignment)))


def _declared_numbers() -> list:
    return list(_each_declared_number())


def _each_declared_number():
    for assignment, name in ((p.values[0], p.values[1]) for p in _rows("BY_HAND")):
        part = PARTS.get(assignment, {}).get(name)
        if isinstance(part, Part) and part.shape is None:
            yield pytest.param(assignment, name, id=f"{assignment.split('-')[0]}:{name}")


@pytest.mark.parametrize("assignment, name", _declared_numbers())
def test_double_and_half_fail(assignment, name):
    oracle = ORACLES[assignment]
    for factor in (2.0, 0.5):
        wrong = {**answers(oracle), name: oracle.BY_HAND[name] * factor}
        with pytest.raises(AssertionError):
            run_as_grader(cells(assignment)[name], wrong, default_variant(spec_for(assignment)))


@pytest.mark.parametrize("assignment, row", _rows("MISCONCEPTIONS"))
def test_misconception_gets_its_hint(assignment, row):
    name, wrong, fragment = row
    oracle = ORACLES[assignment]
    cell = cells(assignment)[name]
    if _is_jax(cell):
        pytest.importorskip("jax")
    with pytest.raises(AssertionError) as info:
        run_as_grader(cell, {**answers(oracle), name: wrong}, default_variant(spec_for(assignment)))
    message = str(info.value)
    assert "Hint:" in message and fragment in message, message


@pytest.mark.parametrize("assignment", sorted(ORACLES))
def test_each_check_reads_only_the_answers_of_its_cell(assignment):
    """A graded cell reads the answers its visible checks name and nothing else of the
    student's: a check never depends on another part's answer."""
    nb = nbformat.read(str(_source(assignment)), as_version=4)
    for cell in nb.cells:
        if not nbgrader_metadata(cell).get("grade") or cell.cell_type != "code":
            continue
        visible, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        read = {n for n in answer_names(hidden) if not n.startswith("_")}
        assert read <= set(answer_names(visible)), (nbgrader_metadata(cell)["grade_id"], read)

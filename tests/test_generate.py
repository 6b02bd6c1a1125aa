"""The committed student notebooks (exercises/) are exactly nbgrader's release of solutions/.

Fails when someone edits solutions/ without running ``make generate`` (or edits exercises/ by
hand), when a grade_id or cell id repeats, when a locked cell's checksum is missing or stale,
and when a student notebook leaks a solution or a hidden test.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from autograder import cli
from autograder.course import EXERCISES, SOLUTIONS, available_assignments, compare_trees, generate_exercises

ASSIGNMENTS = tuple(available_assignments())

MARKERS = re.compile(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)")
REGION = {
    "solution": re.compile(r"### BEGIN SOLUTION[^\n]*\n(.*?)### END SOLUTION", re.S),
    "hidden test": re.compile(r"### BEGIN HIDDEN TESTS[^\n]*\n(.*?)### END HIDDEN TESTS", re.S),
}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text("utf-8"))["cells"]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _meta(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _notebooks(root: Path, assignment: str) -> list[Path]:
    notebooks = sorted((root / assignment).glob("*.ipynb"))
    assert notebooks, f"no notebook in {root / assignment}"
    return notebooks


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """A fresh generation of every assignment, into a temporary exercises folder."""
    out = tmp_path_factory.mktemp("exercises")
    generate_exercises(list(ASSIGNMENTS), exercises=out)
    return out


@pytest.mark.slow  # nbgrader generates every assignment (the fresh fixture: ~1 min)
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_exercises_match_a_fresh_generation(fresh, assignment):
    changes = compare_trees(fresh / assignment, EXERCISES / assignment)
    assert not changes, (
        f"exercises/{assignment}/ is not what `make generate` produces from solutions/{assignment}/:\n  "
        + "\n  ".join(changes) + "\nRun `make generate` and commit exercises/."
    )


@pytest.fixture(scope="module")
def again(tmp_path_factory) -> Path:
    """A second generation of every assignment, in its own run (one nbgrader start, as
    ``fresh``), into another temporary folder."""
    out = tmp_path_factory.mktemp("again")
    generate_exercises(list(ASSIGNMENTS), exercises=out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_generation_is_deterministic(fresh, again, assignment):
    """Two generations agree byte for byte (stricter than the committed comparison above,
    which leaves out volatile notebook fields)."""
    for path in _notebooks(fresh, assignment):
        second = again / assignment / path.name
        assert second.read_bytes() == path.read_bytes(), f"two generations of {path.name} differ"


@pytest.mark.slow
def test_generate_check_command_reports_up_to_date(capsys):
    """The command's wiring, on one assignment: whether every assignment is up to date is
    ``test_committed_exercises_match_a_fresh_generation``'s question (the same comparison, on
    a generation this file makes once)."""
    assert cli.main(["generate", "--check", ASSIGNMENTS[-1]]) == 0
    out = capsys.readouterr().out
    assert f"{ASSIGNMENTS[-1]}: exercises/{ASSIGNMENTS[-1]}/ is up to date" in out


@pytest.mark.slow
def test_generate_check_reports_drift(fresh, tmp_path):
    """--check notices a hand edit (run on a scratch copy: exercises/ itself is not touched)."""
    shutil.copytree(fresh / ASSIGNMENTS[0], tmp_path / ASSIGNMENTS[0])
    path = _notebooks(tmp_path, ASSIGNMENTS[0])[0]
    nb = json.loads(path.read_text("utf-8"))
    code = next(c for c in nb["cells"] if c["cell_type"] == "code" and _meta(c).get("grade"))
    code["source"] = "pass\n"
    path.write_text(json.dumps(nb), encoding="utf-8")
    drift = generate_exercises([ASSIGNMENTS[0]], check=True, exercises=tmp_path)
    assert any("source differs" in change for change in drift[ASSIGNMENTS[0]])
    assert json.loads(path.read_text("utf-8"))["cells"] == nb["cells"], "--check must not write"


@pytest.mark.parametrize("root", [SOLUTIONS, EXERCISES], ids=["solutions", "exercises"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_ids_and_cell_ids_are_unique(root, assignment):
    for path in _notebooks(root, assignment):
        cells = _cells(path)
        grade_ids = [_meta(c)["grade_id"] for c in cells if _meta(c).get("grade_id")]
        cell_ids = [c.get("id") for c in cells]
        assert len(grade_ids) == len(set(grade_ids)), f"{path}: repeated grade_id"
        assert None not in cell_ids and len(cell_ids) == len(set(cell_ids)), f"{path}: missing or repeated cell id"
        graded = [c for c in cells if _meta(c).get("grade")]
        assert graded, f"{path}: no autograder test cells"
        for cell in graded:
            assert float(_meta(cell).get("points", 0)) > 0, f"{path}: {_meta(cell)['grade_id']} has no points"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_checksums_present_and_intact(assignment):
    import nbformat
    from nbgrader import utils

    for path in _notebooks(EXERCISES, assignment):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if not (meta.get("grade") or meta.get("solution") or meta.get("locked")):
                continue
            assert "checksum" in meta, f"{path}: cell {meta.get('grade_id')} has no checksum"
            assert meta["checksum"] == utils.compute_checksum(cell), f"{path}: stale checksum on {meta['grade_id']}"
            if meta.get("locked") or meta.get("grade"):
                assert cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False, (
                    f"{path}: read-only cell {meta['grade_id']} is editable or deletable"
                )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebooks_hold_no_solution_or_hidden_test(assignment):
    source_cells = {c.get("id"): c for p in _notebooks(SOLUTIONS, assignment) for c in _cells(p)}
    secrets = []
    for cell in source_cells.values():
        for kind, region in REGION.items():
            for match in region.finditer(_source(cell)):
                body = match.group(1).strip()
                if body:
                    secrets.append((kind, _meta(cell).get("grade_id"), body))
    assert secrets, f"solutions/{assignment} has no solution or hidden-test regions"
    for path in _notebooks(EXERCISES, assignment):
        cells = _cells(path)
        text = "\n".join(_source(c) for c in cells)
        assert not MARKERS.search(text), f"{path}: a solution or hidden-test marker is left"
        for kind, grade_id, body in secrets:
            assert body not in text, f"{path}: the {kind} of {grade_id} is in the student version"
        for cell in cells:
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [] and cell.get("execution_count") is None, f"{path}: has outputs"

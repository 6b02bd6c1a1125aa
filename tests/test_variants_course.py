"""Per-student numbers through the instructor's commands: keys, roster notebooks, grading,
feedback, validate, and a course that turns them off (autograder/variants.py, the CLI)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.notebook import is_identity_cell
from autograder.demo import solution_cells
from autograder.grading.plan import load_result
from autograder.variants import key_for, read_roster
from gradecells import run_cli
from scalebook.homework import SPECS
from scalebook.variants import check_key, default_variant, draw

A = "hw1-rooflines"


def answered(nb: dict) -> dict:
    """The notebook with every answer cell holding the reference solution (as a student who
    solved it from the numbers the notebook shows them)."""
    reference = solution_cells(A)
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in reference and cell["metadata"]["nbgrader"].get("solution"):
            cell["source"] = reference[gid]
    return nb


def test_a_roster_needs_an_id_column_and_unique_safe_ids(tmp_path):
    from autograder.course import CourseError

    path = tmp_path / "r.csv"
    path.write_text("Name,SIS Login ID\nAnn,ann\nBo,bo\n,\n")
    assert read_roster(path) == ["ann", "bo"]
    for text, why in (("name\nann\n", "no id column"), ("id\nann\nann\n", "twice"),
                      ("id\n../x\n", "cannot name a folder"), ("id\n\n", "no students"), ("", "empty")):
        path.write_text(text)
        with pytest.raises(CourseError, match=why):
            read_roster(path)


@pytest.mark.slow  # lists keys for a class through the CLI
def test_keys_are_listed_per_student_and_stable(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id\nalice\nbob\n")
    course = tmp_path / "course"
    rc, out = run_cli("keys", "--roster", roster, "--course", course)
    assert rc == 0, out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["student"] for r in rows] == ["alice", "bob"]
    for r in rows:
        assert check_key(r["student"], r["homework_key"])
    assert (course / "variants.secret").stat().st_mode & 0o777 == 0o600
    assert run_cli("keys", "--roster", roster, "--course", course)[1] == out  # same secret, same keys
    (course / "variants.secret").write_text("not hex")
    rc, out = run_cli("keys", "--roster", roster, "--course", course)
    assert rc == 2 and "damaged" in out


@pytest.mark.slow
@pytest.mark.sandbox
def test_roster_notebooks_carry_their_numbers_and_grade_full(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\nalice,Alice\nbob,Bob\n")
    root = tmp_path / "course"
    rc, out = run_cli("generate", A, "--roster", roster, "--course", root)
    assert rc == 0, out
    course = Course(root)
    personal = root / "personal" / A
    assert not (personal / "keys.csv").exists()  # every key, never beside the notebooks handed out
    keys = {r["student"]: r["homework_key"] for r in csv.DictReader((root / "keys.csv").open())}
    assert keys == {s: key_for(course, s) for s in ("alice", "bob")}
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for student in ("alice", "bob"):
        nb = json.loads((personal / student / f"{A}.ipynb").read_text())
        variant = draw(SPECS[A], keys[student])
        identity = next(c for c in nb["cells"] if is_identity_cell(c))
        assert f"STUDENT_ID = {student!r}" in "".join(identity["source"])
        text = "".join("".join(c["source"]) for c in nb["cells"][1:] if c["cell_type"] == "markdown")
        assert "{{" not in text
        assert "[B]" not in text  # (the title's "such as [B]" is left out above)
        assert f"B = {variant['q1_B']} tokens, D = {variant['q1_D']} and F = {variant['q1_F']}" in text
        (incoming / f"{student}.ipynb").write_text(json.dumps(answered(nb)))
    for step in (("collect", incoming, "-a", A), ("grade", "-a", A, "-q"), ("feedback", "-a", A)):
        rc, out = run_cli(*step, "--course", root)
        assert rc == 0, out
    for student in ("alice", "bob"):
        result = load_result(course, student, A)
        assert result.total == sum(result.max_scores.values()), result.messages
        assert result.problems == []  # its own problem text is not "a changed read-only cell"
        assert result.variant["numbers"] == draw(SPECS[A], keys[student]).drawn()
        page = (course.feedback(student, A) / "feedback.html").read_text()
        assert "Your numbers" in page
        assert f"B = {result.variant['numbers']['q1_B']} tokens" in page


@pytest.mark.slow
def test_validate_shows_the_numbers_and_warns_without_a_key(tmp_path):
    exercise = json.loads((Path(__file__).parent.parent / "exercises" / A / f"{A}.ipynb").read_text())
    path = tmp_path / f"{A}.ipynb"
    path.write_text(json.dumps(exercise))
    rc, out = run_cli("validate", path)
    assert "Your numbers for hw1-rooflines:" in out
    assert "sample numbers" in out and "graded as wrong for you" in out
    nb = answered(exercise)
    for cell in nb["cells"]:
        if is_identity_cell(cell):
            cell["source"] = "STUDENT_ID = 'alice'\nHOMEWORK_KEY = 'AAAA-AAAA-A'\n"
    path.write_text(json.dumps(nb))
    rc, out = run_cli("validate", path)
    assert rc == 1  # the setup cell refused the key: that is said first, and nothing else
    assert out.startswith("Your STUDENT_ID and HOMEWORK_KEY do not go together"), out
    assert re.search(r"HOMEWORK_KEY 'AAAA-AAAA-A' does not belong to STUDENT_ID 'alice'", out), out
    assert "not answered" not in out and "NameError" not in out and "KeyError_" not in out


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_course_with_variants_off_grades_everyone_on_the_books_numbers(tmp_path):
    root = tmp_path / "course"
    rc, out = run_cli("variants", "--off", "--course", root)
    assert rc == 0 and "off" in out
    course = Course(root)
    release = course.prepare(A)
    nb = json.loads((release / f"{A}.ipynb").read_text())
    identity = next(c for c in nb["cells"] if is_identity_cell(c))
    assert "HOMEWORK_KEY = None" in "".join(identity["source"])
    assert "Your numbers." not in "".join(nb["cells"][0]["source"])
    text = "".join("".join(c["source"]) for c in nb["cells"][1:] if c["cell_type"] == "markdown")
    sample = default_variant(SPECS[A])
    assert "[B]" not in text and f"B = {sample['q1_B']} tokens" in text
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for student in ("ann", "ben"):
        (incoming / f"{student}.ipynb").write_text(json.dumps(answered(nb)))
    for step in (("collect", incoming, "-a", A), ("grade", "-a", A, "-q")):
        rc, out = run_cli(*step, "--course", root)
        assert rc == 0, out
    for student in ("ann", "ben"):
        result = load_result(course, student, A)
        assert result.total == sum(result.max_scores.values()) and result.problems == []
        assert result.variant["numbers"] == sample.drawn()
    assert not (root / "variants.secret").exists()  # no key was ever needed
    rc, out = run_cli("generate", A, "--roster", tmp_path / "none.csv", "--course", root)
    assert rc == 2

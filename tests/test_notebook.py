"""Reading a notebook's cells once (autograder/notebook.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from autograder.notebook import (IDENTITY, IDENTITY_NAMES, VARIANT_NAME, Cell, is_identity_cell,
                                 nbgrader_of, read_cells, strip_hidden_tests, tags_of, text)

REPO = Path(__file__).resolve().parent.parent


def _cell(kind="code", source="", **nbgrader):
    meta = {"nbgrader": nbgrader} if nbgrader else {}
    return {"cell_type": kind, "metadata": meta, "source": source}


def test_each_kind_of_cell_reads_as_what_nbgrader_says_it_is():
    nb = {"cells": [
        _cell("markdown", ["# Problem 1\n", "text"], grade_id="p1", locked=True),
        _cell("code", "x = ...", grade_id="q1", solution=True),
        _cell("code", "check(x)", grade_id="q1-test", grade=True, locked=True, points=2),
        _cell("code", 'STUDENT_ID = ""\nHOMEWORK_KEY = ""\n', grade_id="hw-identity"),
        _cell("markdown", "notes"),
    ]}
    prompt, answer, test, identity, notes = read_cells(nb)
    assert (prompt.index, prompt.source, prompt.grade_id) == (0, "# Problem 1\ntext", "p1")
    assert prompt.is_read_only and not prompt.is_test and not prompt.is_answer
    assert answer.is_answer and not answer.is_read_only and answer.points == 0
    assert test.is_test and test.points == 2.0 and not test.is_read_only  # a test is not a prompt
    assert identity.identity and not identity.is_test and not identity.is_answer
    assert notes.grade_id is None and not (notes.graded or notes.locked or notes.identity)
    assert [c.identity for c in read_cells(nb)] == [is_identity_cell(c) for c in nb["cells"]]


def test_a_graded_markdown_cell_is_graded_but_not_a_test():
    (cell,) = read_cells({"cells": [_cell("markdown", "essay", grade_id="e", grade=True, points=3)]})
    assert cell.graded and not cell.is_test


def test_an_identity_line_in_an_answer_or_locked_cell_is_not_the_identity_cell():
    source = "STUDENT_ID = 'x'\n"
    assert is_identity_cell(_cell("code", source))
    assert not is_identity_cell(_cell("code", source, solution=True))
    assert not is_identity_cell(_cell("code", source, locked=True))
    assert not is_identity_cell(_cell("markdown", source))


def test_malformed_fields_read_as_absent():
    """A student's notebook is hostile: the readers never raise on a field of the wrong type."""
    odd = [
        {"cell_type": "code", "metadata": "not a dict", "source": 5},
        {"cell_type": 3, "metadata": {"nbgrader": ["x"], "tags": "a,b"}, "source": ["a", 1, "b"]},
        {"metadata": {"nbgrader": {"grade_id": 7, "points": "9", "grade": True}}},
        "not a cell",
    ]
    cells = read_cells({"cells": odd})
    assert [c.index for c in cells] == [0, 1, 2, 3]  # read_cells(nb)[i] is nb["cells"][i]
    assert cells[0].source == "" and cells[1].source == "ab" and cells[1].cell_type == ""
    assert cells[2].grade_id is None and cells[2].points == 0.0 and not cells[2].is_test
    assert all(c.tags == () for c in cells)
    assert cells[3] == Cell(3, "", "", None, 0.0, False, False, False, False, ())
    assert nbgrader_of(odd[0]) == {} and nbgrader_of(odd[1]) == {} and tags_of(odd[0]) is None
    assert read_cells({"cells": "no"}) == () and read_cells({}) == ()
    assert text(None) == "" and text(["a", None, "b"]) == "ab"


def test_tags_keep_strings_only():
    cell = {"cell_type": "code", "source": "", "metadata": {"tags": ["a", 1, "b"]}}
    assert read_cells({"cells": [cell]})[0].tags == ("a", "b")
    assert tags_of(cell) == ["a", 1, "b"]  # as written: the autograded copy judges them itself


def test_every_homework_reads_the_same_through_the_cells():
    """Over the real notebooks: each test cell has a grade_id and points, exactly one cell is
    the identity cell where the homework asks for one, and grade_ids are unique."""
    for path in sorted((REPO / "solutions").glob("*/*.ipynb")):
        nb = json.loads(path.read_text("utf-8"))
        cells = read_cells(nb)
        tests = [c for c in cells if c.is_test]
        assert tests and all(c.grade_id and c.points > 0 for c in tests), path
        ids = [c.grade_id for c in cells if c.grade_id]
        assert len(ids) == len(set(ids)), path
        asks = any("STUDENT_ID" in c.source and c.cell_type == "code" for c in cells)
        assert sum(c.identity for c in cells) == (1 if asks else 0), path


def test_the_reserved_names_are_said_once():
    """VARIANT, the identity capture and its two names are defined in autograder/notebook.py
    only: every other module of the grader imports them."""
    assert (VARIANT_NAME, IDENTITY, IDENTITY_NAMES) == ("VARIANT", "__identity__",
                                                        ("STUDENT_ID", "HOMEWORK_KEY"))
    literal = re.compile(r"""["'](VARIANT|__identity__)["']|\(\s*["']STUDENT_ID["']\s*,\s*["']HOMEWORK_KEY""")
    said = [str(p.relative_to(REPO)) for p in sorted((REPO / "autograder").rglob("*.py"))
            if literal.search(p.read_text("utf-8"))]
    assert said == ["autograder/notebook.py"]


def test_hidden_tests_are_stripped_as_nbgrader_releases_them():
    """Marker lines go with the region, indented markers count, and a region never closed runs
    to the end of the cell (nothing of it is shown: the old regex in validate.py kept it)."""
    source = ("check(x)\n    ### BEGIN HIDDEN TESTS\n    assert x == 42\n    ### END HIDDEN TESTS\n"
              "check(y)\n### BEGIN HIDDEN TESTS\nassert y == 7\n")
    assert strip_hidden_tests(source) == "check(x)\ncheck(y)\n"
    assert strip_hidden_tests("a\nb") == "a\nb"


def test_the_hidden_test_markers_are_said_once():
    """Both the grader (spec.py, the release's checksums) and ``validate`` (what a student's
    own run executes) strip hidden tests through :func:`strip_hidden_tests`."""
    said = [str(p.relative_to(REPO)) for p in sorted((REPO / "autograder").rglob("*.py"))
            if "HIDDEN TESTS" in p.read_text("utf-8")]
    assert said == ["autograder/notebook.py"]

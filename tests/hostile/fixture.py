"""A tiny nbgrader assignment and course to test the grading engine on.

``write_source(dir)`` writes an nbgrader *source* notebook (solutions, visible and hidden tests)
with four questions that exercise what the grader must get right: a number with a hint, an
array from a matplotlib cell, two questions that reuse the same variable name (so an answer
must be captured where its test cell stands, not at the end), and a string.
``make_course(root)`` runs nbgrader's generate_assignment on it, as the real course does.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ASSIGNMENT = "hw0-tiny"
HIDDEN_CANARY = "HIDDEN-CANARY-7f3a9c"   # only in hidden tests: must never reach a student
SECRET_CANARY = "SECRET-CANARY-d41e02"   # in a file of the course: must never be read
HIDDEN_NAME = "_want_7f3a9c"             # a hidden test's own variable: must never reach a student

GIVEN = "peak_flops = 197e12  # FLOPs/s\nhbm_bw = 819e9  # bytes/s\n"

SOLUTIONS = {
    "q1-answer": "intensity = peak_flops / hbm_bw",
    "q2-answer": "batch = np.array([1, 2, 4, 8, 16])\ntimes = 2.0 * batch + 1.0\n"
                 "plt.plot(batch, times)\nplt.xlabel('batch')",
    "q3-answer": "answer = 6",
    "q4-answer": "answer = 10.0\nchip = 'TPU v5e'",
}
POINTS = {"q1-test": 2.0, "q2-test": 3.0, "q3-test": 1.0, "q4-test": 2.0}
ANSWER_OF = {"q1-test": "q1-answer", "q2-test": "q2-answer", "q3-test": "q3-answer", "q4-test": "q4-answer"}

TESTS = {
    "q1-test": (
        "from scalebook.checks import check_close, check_number\n"
        "check_number(intensity, 'intensity')\n"
        "### BEGIN HIDDEN TESTS\n"
        f"# {HIDDEN_CANARY}\n"
        "check_close(intensity, 197e12 / 819e9, name='intensity',\n"
        "            hints=[(819e9 / 197e12, 'you divided bandwidth by FLOPs')])\n"
        "### END HIDDEN TESTS"
    ),
    "q2-test": (
        "import numpy as np\n"
        "from scalebook.checks import check_allclose, check_array\n"
        "check_array(times, 'times', shape=(5,))\n"
        "### BEGIN HIDDEN TESTS\n"
        "check_allclose(times, 2.0 * np.array([1, 2, 4, 8, 16]) + 1.0, name='times')\n"
        "### END HIDDEN TESTS"
    ),
    "q3-test": (
        "from scalebook.checks import check_close\n"
        "### BEGIN HIDDEN TESTS\n"
        f"{HIDDEN_NAME} = 6\n"
        f"check_close(answer, {HIDDEN_NAME}, name='answer')\n"
        "### END HIDDEN TESTS"
    ),
    "q4-test": (
        "from scalebook.checks import check_close\n"
        "check_close(answer, 10, name='answer')\n"
        "### BEGIN HIDDEN TESTS\n"
        "assert chip.replace(' ', '').lower() == 'tpuv5e', 'chip should name the chip'\n"
        "### END HIDDEN TESTS"
    ),
}


def _meta(grade_id, *, grade=False, solution=False, locked=False, points=None):
    m = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
         "solution": solution}
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


def source_notebook() -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell("# A tiny homework\nA fixture for the grading engine.",
                          metadata=_meta("intro", locked=True)),
        new_code_cell("import numpy as np\nimport matplotlib.pyplot as plt\n" + GIVEN,
                      metadata=_meta("given", locked=True)),
    ]
    for q in ("q1", "q2", "q3", "q4"):
        cells.append(new_markdown_cell(f"**{q.upper()}.** Compute it (within 5%).",
                                       metadata=_meta(f"{q}-prompt", locked=True)))
        body = SOLUTIONS[f"{q}-answer"]
        cells.append(new_code_cell(f"### BEGIN SOLUTION\n{body}\n### END SOLUTION",
                                   metadata=_meta(f"{q}-answer", solution=True)))
        cells.append(new_code_cell(TESTS[f"{q}-test"],
                                   metadata=_meta(f"{q}-test", grade=True, locked=True,
                                                  points=POINTS[f"{q}-test"])))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def write_source(solutions_dir: Path, assignment: str = ASSIGNMENT) -> Path:
    path = Path(solutions_dir) / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(source_notebook(), path)
    return path


def generate(root: Path, assignment: str = ASSIGNMENT, db_url: str | None = None) -> None:
    """nbgrader generate_assignment in the course at ``root`` (source/ -> release/ + gradebook)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.course import ensure_tools_on_path
    from autograder.nbgrader_config import COURSE_ID

    ensure_tools_on_path()
    root = Path(root).resolve()
    db = db_url or f"sqlite:///{root / 'gradebook.db'}"
    cfg = Config({"CourseDirectory": {"root": str(root), "db_url": db, "course_id": COURSE_ID},
                  "GenerateAssignment": {"create_assignment": True, "force": True}})
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    api.log.setLevel(logging.ERROR)
    res = api.generate_assignment(assignment, force=True, create=True)
    if not res["success"]:
        raise RuntimeError(res.get("log") or res.get("error"))


def make_course(root: Path, assignment: str = ASSIGNMENT) -> Path:
    root = Path(root)
    write_source(root / "source", assignment)  # source/<a>/<a>.ipynb
    generate(root, assignment)
    (root / "secret.txt").write_text(SECRET_CANARY)  # something no submission may read
    return root


def release_notebook(root: Path, assignment: str = ASSIGNMENT) -> dict:
    return json.loads((Path(root) / "release" / assignment / f"{assignment}.ipynb").read_text())


def fill(release: dict, answers: dict[str, str]) -> dict:
    """The release notebook with the given answer cells' sources replaced."""
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


def honest(release: dict, **overrides: str) -> dict:
    return fill(release, {**SOLUTIONS, **overrides})


def submit(root: Path, student: str, nb: dict | bytes, assignment: str = ASSIGNMENT,
           timestamp: str = "2026-01-15 10:00:00.000000 UTC") -> Path:
    folder = Path(root) / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    data = nb if isinstance(nb, bytes) else json.dumps(nb, indent=1).encode()
    (folder / f"{assignment}.ipynb").write_bytes(data)
    (folder / "timestamp.txt").write_text(timestamp)
    return folder


def copy_course(src: Path, dst: Path) -> Path:
    """A copy of a prepared course (nbgrader generate is slow; do it once per session)."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def strip_solution_markers(code: str) -> str:
    return re.sub(r"^\s*### (BEGIN|END) SOLUTION\s*\n?", "", code, flags=re.M)


_PREPARED: dict[str, Path] = {}


def prepared(tmp_path_factory) -> Path:
    """A course with the tiny assignment generated, built once per test session."""
    if "course" not in _PREPARED:
        _PREPARED["course"] = make_course(tmp_path_factory.mktemp("tiny-course"))
    return _PREPARED["course"]


def tree_snapshot(root: Path, ignore=("autograded", "gradebook.db", ".grading-claims")) -> dict[str, tuple]:
    """Every path under ``root`` with its type, mode and content hash (except ``ignore``: what
    the grader itself writes, its claims folder included)."""
    import hashlib
    import os

    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames + filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if any(rel == i or rel.startswith(i + "/") or rel.startswith(i + "-") for i in ignore):
                continue
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            digest = ""
            if os.path.isfile(path) and not os.path.islink(path):
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            out[rel] = (st.st_mode, digest)
    return out


def scores_in_gradebook(root: Path, assignment: str = ASSIGNMENT, db_url: str | None = None) -> dict:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(db_url or f"sqlite:///{Path(root).resolve() / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(assignment):
            out[sub.student_id] = {g.name: g.auto_score for nb in sub.notebooks for g in nb.grades}
    return out

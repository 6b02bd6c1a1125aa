"""Sample submissions and ``demo`` (``make grade-demo``): the whole grading loop, end to end.

The samples are specified in ``tests/submissions/<assignment>.json``::

    {"students": {
        "correct": {"from_solution": "all", "expect": {"scores": "full"}},
        "slips": {"from_solution": "all",
                  "code": {"hw1-q5-h100": "critical_batch_h100 = 1979e12 / 3.35e12"},
                  "expect": {"scores": "full", "lost": ["hw1-q5-h100-test"],
                             "hints": {"hw1-q5-h100-test": "with sparsity"}}},
        ...}}

A student's notebook is the released student version ``exercises/<a>/<a>.ipynb`` with some
cells (by nbgrader ``grade_id``) replaced:

- ``from_solution``: answer cells (or ``"all"``) given the reference solution -- the code of
  the *solutions* notebook's cell without its ``### BEGIN/END SOLUTION`` lines, so reference
  answers are never typed twice;
- ``code``: answer cells replaced by the code given (a string or a list of lines);
- ``append``: answer cells given the reference solution followed by the code given (a student
  who got the rest of the cell right);
- ``cells``: any other cell replaced (a test or a prompt, as a student who tampers with it).

Every other cell stays as released. ``expect`` is what the tests assert: ``scores`` is
``"full"`` (less the tests listed in ``lost``), ``"zero"`` (plus those in ``earned``) or
``{grade_id: points}`` or ``"any"`` (not checked: it depends on the numbers drawn);
``problems`` lists texts the submission's problems must contain; ``hints`` and ``messages`` map a test's grade_id to a text its message
must contain; ``cell_errors`` lists exceptions of the student's own cells that the feedback
page must report; ``status`` is the grading status (default ``"graded"``). Keys starting with
``_`` are comments.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from scalebook.homework import spec_for

from .course import EXERCISES, REPO, SOLUTIONS, Course, CourseError, grade_ids, variants_enabled
from .notebook import read_cells
from .variants import key_for

if TYPE_CHECKING:
    from .export import Row

SPECS = REPO / "tests" / "submissions"


class SampleSpecError(CourseError):
    """A sample-submission spec names a cell the notebooks do not have (or is missing)."""


SOLUTION_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*(\n|$)", re.MULTILINE)


def load_spec(assignment: str, specs: Path = SPECS) -> dict:
    path = specs / f"{assignment}.json"
    if not path.is_file():
        raise SampleSpecError(f"no sample-submission spec {path}")
    return json.loads(path.read_text("utf-8"))


def solution_code(source: str) -> str:
    """The reference answer of a solution cell: its source without the solution markers."""
    return SOLUTION_MARKER.sub("", source).rstrip("\n")


def solution_cells(assignment: str, solutions: Path = SOLUTIONS) -> dict[str, str]:
    """grade_id -> reference answer code, for every solution cell of the source notebook."""
    import nbformat

    nb = nbformat.read(solutions / assignment / f"{assignment}.ipynb", as_version=4)
    return {c.grade_id: solution_code(c.source) for c in read_cells(nb)
            if c.is_answer and not c.graded and c.grade_id}


def build_notebook(assignment: str, entry: dict, *, exercises: Path = EXERCISES, solutions: Path = SOLUTIONS,
                   identity: tuple[str, str] | None = None):
    """One student's notebook (an ``nbformat`` node) from a spec entry. ``identity``: the
    (student id, homework key) a student of a homework with per-student numbers fills in."""
    import nbformat

    nb = nbformat.read(exercises / assignment / f"{assignment}.ipynb", as_version=4)
    reference = solution_cells(assignment, solutions)
    wanted = entry.get("from_solution", [])
    wanted = list(reference) if wanted == "all" else list(wanted)
    lines = lambda v: "\n".join(v) if isinstance(v, list) else v  # noqa: E731
    code = {k: lines(v) for k, v in entry.get("code", {}).items()}
    other = {k: lines(v) for k, v in entry.get("cells", {}).items()}
    append = {k: lines(v) for k, v in entry.get("append", {}).items()}
    cells = read_cells(nb)
    answer_ids = {c.grade_id for c in cells if c.solution and c.grade_id}
    unknown = (set(wanted) | set(code) | set(append)) - answer_ids
    all_ids = {c.grade_id for c in cells}
    unknown |= set(other) - all_ids
    if unknown:
        raise SampleSpecError(f"{assignment}: the sample spec names no answer cell {sorted(unknown)} "
                              f"(answer cells: {', '.join(sorted(answer_ids))})")
    for cell, seen in zip(nb.cells, cells):
        gid = seen.grade_id or ""
        if identity is not None and seen.identity:
            cell.source = f"STUDENT_ID = {identity[0]!r}\nHOMEWORK_KEY = {identity[1]!r}\n"
        if gid in other:
            cell.source = other[gid]
        elif gid in code:
            cell.source = code[gid]
        elif gid in append:
            cell.source = reference[gid] + "\n" + append[gid]
        elif gid in wanted:
            cell.source = reference[gid]
    return nb


def build_submissions(assignment: str, out_dir: Path, *, spec: dict | None = None,
                      students: list[str] | None = None, course: Course | None = None,
                      ids: dict[str, str] | None = None) -> dict[str, Path]:
    """Write ``<out_dir>/<student>.ipynb`` for the spec's students; return student -> path.

    ``course``: for a homework with per-student numbers, each student enters their id and their
    key in that course, as a real student would (the id they will be collected under:
    ``ids[sample]``, else the sample's name); a spec entry's ``"identity"`` may instead be
    ``"none"`` (left empty: the sample numbers) or ``{"as": other}`` (a copy of another
    sample's notebook, their id and key included). Without ``course`` the notebooks keep the
    sample numbers."""
    import nbformat

    spec = spec or load_spec(assignment)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for student, entry in spec["students"].items():
        if student.startswith("_"):
            continue
        if students and student not in students:
            continue
        path = out_dir / f"{student}.ipynb"
        identity = None
        if course is not None and spec_for(assignment) is not None and variants_enabled(course):
            who = entry.get("identity", {})
            owner = who.get("as", student) if isinstance(who, dict) else None
            if owner is not None:
                owner = (ids or {}).get(owner, owner)
                identity = (owner, key_for(course, owner))
        nbformat.write(build_notebook(assignment, entry, identity=identity), path)
        written[student] = path
    return written


def expected_scores(assignment: str, entry: dict, *, solutions: Path = SOLUTIONS) -> dict[str, float]:
    """grade_id -> the points the spec entry should score."""
    points = dict(grade_ids(solutions / assignment / f"{assignment}.ipynb"))
    expect = entry.get("expect", {})
    wanted = expect.get("scores", {})
    named = set(expect.get("lost", [])) | set(expect.get("earned", []))
    named |= set(wanted) if isinstance(wanted, dict) else set()
    unknown = named - set(points)
    if unknown:
        raise SampleSpecError(f"{assignment}: the sample spec names no test cell {sorted(unknown)}")
    if wanted == "any":  # depends on the numbers drawn (a student graded with numbers not theirs)
        return {}
    if wanted == "full":
        lost = set(expect.get("lost", []))
        return {gid: 0.0 if gid in lost else p for gid, p in points.items()}
    if wanted == "zero":
        earned = set(expect.get("earned", []))
        return {gid: p if gid in earned else 0.0 for gid, p in points.items()}
    return {gid: float(wanted.get(gid, 0.0)) for gid in points}


class DemoResult(TypedDict):
    """What :func:`run_demo` returns."""

    course: Course
    rows: dict[str, list[Row]]    # assignment -> the exported grade rows
    seconds: dict[str, float]     # assignment -> wall seconds of its `grade` command


def run_demo(command, *, workdir: Path | None = None, assignments: list[str] | None = None,
             workers: int | None = None, out=print) -> DemoResult:
    """generate -> build the samples -> collect -> grade -> export -> feedback; print the table.

    ``command(argv) -> exit status`` runs one instructor's command, as ``python -m autograder``
    would (the CLI passes its own ``main``), so the demo takes exactly the instructor's path.
    Returns ``{"course": Course, "rows": {assignment: [Row]}, "seconds": {assignment: s}}``.
    The course lives in ``workdir`` (kept) or in a temporary folder (deleted at the end).
    """
    assignments = assignments or [p.stem for p in sorted(SPECS.glob("*.json"))]
    keep = workdir is not None
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="scalebook-demo-"))
    try:
        course = Course(root / "course")
        result: DemoResult = {"course": course, "rows": {}, "seconds": {}}
        for assignment in assignments:
            incoming = root / "incoming" / assignment
            built = build_submissions(assignment, incoming, course=course)
            out(f"== {assignment}: {len(built)} sample submissions ({', '.join(built)})")
            _run(command, ["collect", str(incoming), "-a", assignment, "--course", str(course.root)], out)
            argv = ["grade", "-a", assignment, "--course", str(course.root)]
            if workers:
                argv += ["--workers", str(workers)]
            start = time.perf_counter()
            _run(command, argv, out)
            result["seconds"][assignment] = time.perf_counter() - start
            _run(command, ["export", "-a", assignment, "--course", str(course.root),
                       "--output", str(root / f"grades-{assignment}.csv")], out)
            _run(command, ["feedback", "-a", assignment, "--course", str(course.root)], out)
            from .export import grade_rows, render_table

            questions, rows = grade_rows(course, assignment)
            result["rows"][assignment] = rows
            out("")
            out(render_table(questions, rows))
            hints = _hints(course, assignment)
            if hints:
                out("hints in the feedback:")
                out("\n".join(f"  {student} {gid}: {hint}" for student, gid, hint in hints))
            out("")
        if keep:
            out(f"The demo course is in {course.root} (CSV files in {root}).")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return result


def _hints(course: Course, assignment: str) -> list[tuple[str, str, str]]:
    from .course import load_report
    from .feedback import split_hint

    out = []
    for student, entry in sorted(load_report(course, assignment).items()):
        for gid, message in entry.get("messages", {}).items():
            hint = split_hint(message)[1]
            if hint:
                out.append((student, gid, hint))
    return out


def _run(command, argv, out) -> None:
    rc = command(argv)
    if rc not in (0, None):
        raise CourseError(f"the demo stopped: `python -m autograder {' '.join(argv)}` exited with {rc}")


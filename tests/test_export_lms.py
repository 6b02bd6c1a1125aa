"""``export --format canvas|moodle``: files an LMS imports without editing, end to end.

A small class of hw1-rooflines is collected from a Canvas zip, a Moodle folder and nbgrader's
layout (the last without LMS ids), graded once for this module, then exported; the files are
parsed back with the csv module and compared with the gradebook.
"""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder import cli
from autograder.course import Course
from autograder.demo import build_submissions

ASSIGNMENT = "hw1-rooflines"
# student id -> Canvas user id (None: collected from Moodle or nbgrader's layout)
LMS = {"doejane_1001": "1001", "roe_1002": "1002", "ann_lee_4242": None, "lateone": None, "ontime": None}
# student id -> Moodle participant id of ASSIGNMENT (a number of that assignment, not a user id)
MOODLE = {"ann_lee_4242": "4242"}


def run_cli(*argv) -> tuple[int, str, str]:
    """``python -m autograder ARGV`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def graded_course(root: Path) -> SimpleNamespace:
    """Collect and grade the small class; the course's ``--course``/``--db`` options in ``opts``."""
    built = build_submissions(ASSIGNMENT, root / "built", students=["correct", "partial", "misconceptions"],
                              course=Course(root / "course"),
                              ids={"correct": "doejane_1001", "partial": "roe_1002",
                                   "misconceptions": "ann_lee_4242"})
    incoming = root / "incoming"
    incoming.mkdir()
    with zipfile.ZipFile(incoming / "canvas.zip", "w") as archive:
        archive.write(built["correct"], f"doejane_1001_2001_{ASSIGNMENT}.ipynb")
        archive.write(built["partial"], f"roe_LATE_1002_2002_{ASSIGNMENT}.ipynb")
    moodle = incoming / "moodle" / "Ann Lee_4242_assignsubmission_file_"
    moodle.mkdir(parents=True)
    shutil.copy(built["misconceptions"], moodle / f"{ASSIGNMENT}.ipynb")
    for student, sample, stamp in (("lateone", "partial", "2026-02-03 10:00:00.000000 UTC"),
                                   ("ontime", "misconceptions", "2026-02-01 12:00:00.000000 UTC")):
        target = incoming / "nbgrader" / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        # each notebook carries the id and key of the student who hands it in
        own = build_submissions(ASSIGNMENT, root / "built" / student, students=[sample],
                                course=Course(root / "course"), ids={sample: student})
        shutil.copy(own[sample], target / f"{ASSIGNMENT}.ipynb")
        (target / "timestamp.txt").write_text(stamp)
    course_dir = root / "course"
    opts = ("-a", ASSIGNMENT, "--course", course_dir)
    rc, out, err = run_cli("collect", incoming / "canvas.zip", incoming / "moodle", incoming / "nbgrader", *opts)
    assert rc == 0, out + err
    rc, out, err = run_cli("grade", *opts, "-q")
    assert rc == 0, out + err
    return SimpleNamespace(root=root, course=Course(course_dir), opts=opts)


def gradebook_totals(course: Course) -> dict[str, float]:
    with course.gradebook() as gb:
        return {s: sum(float(g.score) for nb in gb.find_submission(ASSIGNMENT, s).notebooks for g in nb.grades)
                for s in LMS}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_course(tmp_path_factory.mktemp("lms"))


@pytest.mark.slow
def test_collect_kept_the_lms_user_ids(graded):
    from autograder.lms.roster import load_participants

    with graded.course.gradebook() as gb:
        assert {s: gb.find_student(s).lms_user_id for s in LMS} == LMS
    assert {s: e["participant"] for s, e in load_participants(graded.course, ASSIGNMENT).items()} == MOODLE


def _without_lms_id_listed(rc: int, err: str, ids: dict) -> None:
    assert rc == 1, err
    listed = err[err.index("NOT IN THE"):]
    assert "no Canvas user id" in listed or "no participant id" in listed
    for student in LMS:
        assert (f"  {student}:" in listed) == (ids.get(student) is None), listed


@pytest.mark.slow
def test_canvas_file_imports_as_canvas_reads_it(graded):
    path = graded.root / "canvas.csv"
    rc, out, err = run_cli("export", *graded.opts, "--format", "canvas", "--lms-assignment-id", "98765",
                           "-o", path)
    _without_lms_id_listed(rc, err, LMS)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{ASSIGNMENT} (98765)"]
    assert rows[1][0].strip() == "Points Possible" and float(rows[1][5]) > 0
    totals = gradebook_totals(graded.course)
    by_id = {r[1]: r for r in rows[2:]}
    assert len(by_id) == len(rows) - 2  # one row per student
    ids = {uid: s for s, uid in LMS.items() if uid}
    assert set(by_id) == set(ids)
    for uid, row in by_id.items():
        assert float(row[5]) == pytest.approx(totals[ids[uid]])
    assert "4242" not in by_id  # a Moodle participant id never passes for a Canvas user id
    assert totals["doejane_1001"] > totals["roe_1002"] > 0  # the scores really differ


@pytest.mark.slow
def test_canvas_column_without_an_assignment_id_is_the_bare_name(graded):
    rc, out, err = run_cli("export", *graded.opts, "--format", "canvas", "-o", "-")
    assert rc == 1
    assert next(csv.reader(io.StringIO(out)))[5] == ASSIGNMENT


@pytest.mark.slow
def test_moodle_worksheet_imports_as_moodle_reads_it(graded):
    path = graded.root / "moodle.csv"
    rc, out, err = run_cli("export", *graded.opts, "--format", "moodle", "-o", path)
    _without_lms_id_listed(rc, err, MOODLE)
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
    totals = gradebook_totals(graded.course)
    by_id = {r["Identifier"]: r for r in rows}
    assert set(by_id) == {f"Participant {uid}" for uid in MOODLE.values()} and len(rows) == 1
    for student, uid in MOODLE.items():
        if uid:
            assert float(by_id[f"Participant {uid}"]["Grade"]) == pytest.approx(totals[student])
    assert by_id["Participant 4242"]["Full name"] == "Ann Lee"


@pytest.mark.slow
def test_default_export_is_still_the_per_question_csv(graded):
    rc, out, err = run_cli("export", *graded.opts, "-o", "-")
    assert rc == 0, err
    header = next(csv.reader(io.StringIO(out)))
    assert header[0] == "student" and header[-3:] == ["total", "max", "status"]

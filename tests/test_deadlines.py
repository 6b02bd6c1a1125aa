"""Due dates, the late penalty (applied once, at export and on the feedback page) and
``feedback --release-solutions``: the rules alone, then end to end on a graded class."""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path
from datetime import datetime

import pytest

from autograder.course import CourseError
from autograder.deadlines import LatePolicy, days_late, lateness, parse_when
from autograder.course import SOLUTIONS
from autograder.feedback import solution_code
from test_export_lms import ASSIGNMENT, gradebook_totals, graded_course, run_cli

DUE = datetime(2026, 2, 1, 23, 59)


@pytest.mark.parametrize("submitted, days", [
    (datetime(2026, 2, 1, 12, 0), 0),
    (DUE, 0),                                # exactly at the due time: on time
    (datetime(2026, 2, 1, 23, 59, 1), 1),    # one second late: one started day
    (datetime(2026, 2, 2, 23, 59), 1),
    (datetime(2026, 2, 3, 10, 0), 2),
])
def test_every_started_day_counts(submitted, days):
    assert days_late(submitted, DUE) == days


def test_policy_factor():
    policy = LatePolicy(10, zero_after_days=3)
    assert [policy.factor(d) for d in range(5)] == pytest.approx([1, 0.9, 0.8, 0.7, 0])
    assert LatePolicy(40).factor(3) == 0  # never below zero
    assert LatePolicy().factor(9) == 1  # no policy declared: no penalty
    assert lateness(None, DUE, policy).factor == 1  # unknown submission time: not judged late


def test_due_dates_need_a_time_zone():
    assert parse_when("2026-02-01 23:59 UTC") == DUE
    assert parse_when("2026-02-02T00:59+01:00") == DUE
    assert parse_when("2026-02-01 18:59 -0500") == DUE
    with pytest.raises(CourseError, match="time zone"):
        parse_when("2026-02-01 23:59")
    with pytest.raises(CourseError, match="cannot read"):
        parse_when("next friday-ish")


def test_solution_code_is_what_lies_between_the_markers():
    source = "x = 1\n    ### BEGIN SOLUTION\n    y = 2\n    ### END SOLUTION\nz = 3\n"
    assert solution_code(source) == "y = 2"
    assert solution_code("a = 1\n") == "a = 1"


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_course(tmp_path_factory.mktemp("late"))


def _export(graded) -> dict[str, dict]:
    rc, out, err = run_cli("export", *graded.opts, "-o", "-")
    assert rc == 0, err
    return {row["student"]: row for row in csv.DictReader(io.StringIO(out))}


@pytest.mark.slow
def test_a_late_submission_is_penalised_exactly_once(graded):
    raw = gradebook_totals(graded.course)
    rc, out, err = run_cli("due", *graded.opts, "--date", "2026-02-01 23:59 UTC", "--per-day", "10",
                           "--zero-after", "5")
    assert rc == 0, err
    assert "due 2026-02-01 23:59:00 UTC" in out and "10% per started day late" in out
    first, second = _export(graded), _export(graded)
    assert first == second  # a re-export changes nothing
    assert gradebook_totals(graded.course) == raw  # the raw scores were never touched
    late = first["lateone"]  # 2026-02-03 10:00: two started days late
    assert late["days_late"] == "2"
    assert float(late["raw"]) == pytest.approx(raw["lateone"]) and raw["lateone"] > 0
    assert float(late["penalty"]) == pytest.approx(0.2 * raw["lateone"])
    assert float(late["total"]) == pytest.approx(0.8 * raw["lateone"])
    on_time = first["ontime"]  # 2026-02-01 12:00
    assert on_time["days_late"] == "0" and float(on_time["penalty"]) == 0
    assert float(on_time["total"]) == pytest.approx(raw["ontime"])
    # LMS students have no submission time: Canvas's LATE_ mark (roe) is one started day, the
    # least it can be; no mark (doejane) is on time; the export lists both for the instructor
    marked = first["roe_1002"]
    assert marked["days_late"] == "1" and raw["roe_1002"] > 0
    assert float(marked["total"]) == pytest.approx(0.9 * raw["roe_1002"])
    assert first["doejane_1001"]["days_late"] == "0"
    rc, out, err = run_cli("export", *graded.opts, "--format", "canvas", "-o", "-")
    canvas = {r[1]: float(r[5]) for r in list(csv.reader(io.StringIO(out)))[2:]}
    assert canvas["1002"] == pytest.approx(0.9 * raw["roe_1002"])
    assert canvas["1001"] == pytest.approx(raw["doejane_1001"])
    # one line with the count, not a line per student (lateone and ontime have timestamp.txt)
    assert err.count("no submission time") == 1
    assert "no submission time for 3 submission(s)" in err and "1 marked LATE by Canvas" in err
    assert "roe_1002" not in err.split("NOT IN THE")[0]
    # the instructor gives the true time: the mark no longer decides
    stamp = graded.course.submitted("roe_1002", ASSIGNMENT) / "timestamp.txt"
    stamp.write_text("2026-02-04 09:00:00 UTC")
    try:
        assert _export(graded)["roe_1002"]["days_late"] == "3"
    finally:
        stamp.unlink()
    # and the feedback page says so
    rc, out, err = run_cli("feedback", *graded.opts)
    assert rc == 0, err
    page = (graded.course.feedback("lateone", ASSIGNMENT) / "feedback.html").read_text("utf-8")
    assert "2 day(s) late" in page and f"final score: <strong>{0.8 * raw['lateone']:g}" in page
    page = (graded.course.feedback("ontime", ASSIGNMENT) / "feedback.html").read_text("utf-8")
    assert "late" not in page.split("<table>")[0]
    page = (graded.course.feedback("roe_1002", ASSIGNMENT) / "feedback.html").read_text("utf-8")
    assert "marked late by the LMS" in page and "1 day(s) late" in page


@pytest.mark.slow
def test_more_than_zero_after_days_late_scores_zero(graded):
    run_cli("due", *graded.opts, "--date", "2026-02-01 23:59 UTC", "--per-day", "10", "--zero-after", "1")
    try:
        row = _export(graded)["lateone"]
        assert float(row["total"]) == 0 and float(row["raw"]) > 0
    finally:
        run_cli("due", *graded.opts, "--per-day", "10", "--zero-after", "5")


def worked_code(grade_id: str) -> str:
    """The instructor's solution of an answer cell, between its markers, read here directly."""
    import nbformat

    nb = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return solution_code(cell.source)


def _page(graded, student: str) -> str:
    return (graded.course.feedback(student, ASSIGNMENT) / "feedback.html").read_text("utf-8")


@pytest.mark.slow
def test_solutions_are_refused_before_the_due_date(graded):
    rc, out, err = run_cli("due", *graded.opts, "--date", "2999-01-01 00:00 UTC")
    assert rc == 0, err
    assert run_cli("feedback", *graded.opts)[0] == 0
    rc, out, err = run_cli("feedback", *graded.opts, "--release-solutions")
    assert rc == 2 and "not released before" in err and "--force" in err
    assert "Solutions of the parts you missed" not in _page(graded, "roe_1002")
    rc, out, err = run_cli("feedback", *graded.opts, "--release-solutions", "--force")
    assert rc == 0, err
    assert "Solutions of the parts you missed" in _page(graded, "roe_1002")


@pytest.mark.slow
def test_released_solutions_show_only_the_missed_parts(graded):
    rc, out, err = run_cli("due", *graded.opts, "--date", "2026-02-01 23:59 UTC")
    assert rc == 0, err
    rc, out, err = run_cli("feedback", *graded.opts, "--release-solutions")
    assert rc == 0, err
    page = _page(graded, "roe_1002")  # the "partial" sample: 1a-3b right, 5 a string, 6 unanswered
    section = page[page.index("Solutions of the parts you missed"):]
    assert "<code>hw1-q5-h100-test</code></h3>" in section
    assert "<code>critical_batch_gpu</code>" in section  # its expected answer
    from autograder.feedback import shown_solution
    from autograder.grading.plan import load_result
    from scalebook import get_chip
    from scalebook.roofline import critical_batch_size

    assert html.escape(shown_solution(worked_code("hw1-q5-h100")), quote=True) in section
    assert "sample" not in section.lower()  # the book's worked numbers are not the student's
    numbers = load_result(graded.course, "roe_1002", ASSIGNMENT).variant["numbers"]
    own = critical_batch_size(get_chip(numbers["q5_gpu"]), compute_dtype="bf16")
    assert f"Expected answers for your numbers: <code>critical_batch_gpu</code> = {own:.4g}" in section
    assert "hw1-q1a-bytes-test" not in section  # got right: no solution shown
    assert html.escape(worked_code("hw1-q1a-bytes"), quote=True) not in page
    assert "Solutions of the parts you missed" not in _page(graded, "doejane_1001")  # full marks


@pytest.mark.slow
def test_an_extension_moves_one_students_due_date_and_the_feedback_says_so(graded):
    run_cli("due", *graded.opts, "--date", "2026-02-01 23:59 UTC", "--per-day", "10", "--zero-after", "5")
    assert _export(graded)["lateone"]["days_late"] == "2"  # 2026-02-03 10:00
    rc, out, err = run_cli("due", *graded.opts, "--extend", "lateone", "--days", "2")
    assert rc == 0 and "extension of 2 day(s) on" in out and "0:00:00" not in out, out + err
    try:
        rows = _export(graded)
        assert rows["lateone"]["days_late"] == "0" and float(rows["lateone"]["penalty"]) == 0
        assert rows["roe_1002"]["days_late"] == "1"  # nobody else's
        assert run_cli("feedback", *graded.opts)[0] == 0
        assert "extension granted: 2 day(s)" in _page(graded, "lateone")
    finally:
        assert run_cli("due", *graded.opts, "--extend", "lateone", "--days", "0")[0] == 0
    assert _export(graded)["lateone"]["days_late"] == "2"
    rc, out, err = run_cli("due", *graded.opts, "--extend", "nobody", "--days", "1")
    assert rc == 2 and "no student 'nobody'" in err


@pytest.mark.slow
def test_an_override_counts_everywhere_survives_a_regrade_and_leaves_a_trail(graded):
    gid = "hw1-q5-h100-test"  # roe_1002 (the "partial" sample) lost it
    before = float(_export(graded)["roe_1002"][gid])
    rc, out, err = run_cli("override", *graded.opts, "-s", "roe_1002", "--part", "hw1-q5-h100", "--points", "1",
                           "--reason", "units written in words; accepted after review")
    assert rc == 0, out + err
    try:
        assert float(_export(graded)["roe_1002"][gid]) == 1 != before
        rc, out, err = run_cli("grade", *graded.opts, "-q", "--force", "--student", "roe_1002")
        assert rc == 0, out + err
        assert float(_export(graded)["roe_1002"][gid]) == 1  # the regrade kept it
        assert run_cli("feedback", *graded.opts)[0] == 0
        page = _page(graded, "roe_1002")
        row = page[page.index(f"<code>{gid}</code>"):].split("</tr>")[0]
        assert "Score set by the instructor: units written in words" in row and "not answered" not in row
    finally:
        rc, out, err = run_cli("override", *graded.opts, "-s", "roe_1002", "--part", gid, "--clear",
                               "--reason", "test over")
    assert rc == 0 and float(_export(graded)["roe_1002"][gid]) == before
    rc, out, err = run_cli("override", *graded.opts, "--list")
    assert out.count("roe_1002") == 2 and "accepted after review" in out and "cleared" in out
    # told otherwise: a regrade that drops the overrides of what it grades
    assert run_cli("override", *graded.opts, "-s", "roe_1002", "--part", gid, "--points", "1", "--reason", "r")[0] == 0
    rc, out, err = run_cli("grade", *graded.opts, "-q", "--force", "--student", "roe_1002", "--drop-overrides")
    assert rc == 0 and f"override of roe_1002 {gid} dropped" in out, out + err
    assert float(_export(graded)["roe_1002"][gid]) == before
    assert run_cli("override", *graded.opts, "--list")[1].count("roe_1002") == 4  # the trail keeps all
    rc, out, err = run_cli("override", *graded.opts, "-s", "roe_1002", "--part", gid, "--points", "99",
                           "--reason", "x")
    assert rc == 2 and "worth 0 to" in err


@pytest.mark.slow  # runs the autograder CLI three times on a course database (~10 s)
def test_each_assignment_keeps_its_own_policy_and_due_changes_only_what_it_is_given(tmp_path):
    from autograder.course import Course
    from autograder.deadlines import LatePolicy, load_policy, policy_path, save_policy

    course = Course(tmp_path)
    policy_path(course).write_text('{"percent_per_day": 5}')  # an older course-wide policy
    save_policy(course, "hw2-hardware", LatePolicy(10, 7))
    save_policy(course, "hw6-inference", LatePolicy(25, None))
    assert load_policy(course, "hw2-hardware") == LatePolicy(10, 7)
    assert load_policy(course, "hw6-inference") == LatePolicy(25, None)
    assert load_policy(course, "hw1-rooflines") == LatePolicy(5, None)  # the older one still holds
    for argv, expected in ((["--per-day", "20"], LatePolicy(20, 7)), (["--zero-after", "3"], LatePolicy(20, 3)),
                           (["--zero-after", "none"], LatePolicy(20, None))):
        rc, out, err = run_cli("due", "-a", "hw2-hardware", "--course", tmp_path, *argv)
        assert rc == 0, out + err
        assert load_policy(course, "hw2-hardware") == expected
    assert load_policy(course, "hw6-inference") == LatePolicy(25, None)


def test_released_solutions_carry_no_sample_number_workings():
    """Every homework's worked solutions, as a student is shown them: the code and its own
    comments stay, the book's sample-number workings go (the page gives the student's values)."""
    import glob
    import json

    from autograder.feedback import shown_solution

    cells = 0
    for path in sorted(glob.glob(str(SOLUTIONS / "*" / "*.ipynb"))):
        for cell in json.loads(Path(path).read_text("utf-8"))["cells"]:
            meta = cell["metadata"].get("nbgrader", {})
            if cell["cell_type"] == "code" and meta.get("solution") and not meta.get("grade"):
                code = solution_code("".join(cell["source"]))
                shown = shown_solution(code)
                assert "sample" not in shown.lower(), (path, shown)
                code_lines = [line.split("#")[0].rstrip() for line in code.splitlines() if line.split("#")[0].strip()]
                assert [line.split("#")[0].rstrip() for line in shown.splitlines()
                        if line.split("#")[0].strip()] == code_lines  # no code line lost
                cells += 1
    assert cells > 50
    assert shown_solution("x = 2 * n    # bf16; sample numbers: 8.1e11 bytes") == "x = 2 * n    # bf16"

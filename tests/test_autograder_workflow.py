"""The instructor's loop end to end, and the pieces of it that need no grading run.

The slow part builds the sample submissions of ``tests/submissions/`` (autograder/demo.py),
collects them from the three input forms (a folder of ``<student>.ipynb``, nbgrader's
``submitted/`` layout and an LMS zip), grades both assignments **once** (module-scoped
fixture), exports the CSV and writes the feedback pages; the tests then check each student's
exact scores, the hints, the problems and the files.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import html
import io
import json
import re
import shutil
import zipfile
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

from autograder import cli
from autograder.collect import Item, identify, safe_member_name, scan
from autograder.course import EXERCISES, SECRET_FILE, SOLUTIONS, Course, available_assignments, compare_trees, grade_ids, load_report
from autograder.notebook import is_identity_cell
from autograder.demo import build_submissions, expected_scores, load_spec
from autograder.feedback import QuestionFeedback, StudentFeedback, render_html, split_hint
from students import SECRET

# Every homework with a source notebook goes through the whole loop; each needs its sample
# submissions in tests/submissions/<assignment>.json.
ASSIGNMENTS = tuple(available_assignments())
BROKEN = "broken"  # a file that is not a notebook, collected with the samples of each assignment
# the samples collected from the LMS zip (Canvas names): their ids are <name>_<LMS user id>
LMS_IDS = {"empty": "empty_1001", "raises": "raises_1002"}


def sid(sample: str) -> str:
    """The student id a sample is collected under."""
    return LMS_IDS.get(sample, sample)


def samples(assignment: str) -> list[str]:
    return sorted(sid(s) for s in load_spec(assignment)["students"] if not s.startswith("_"))


def spec_of(loop, assignment: str, student: str) -> dict:
    """The sample spec of a collected student id."""
    names = {sid(s): s for s in loop.specs[assignment]["students"]}
    return loop.specs[assignment]["students"][names[student]]


def everyone(assignment: str) -> list[str]:
    return sorted([*samples(assignment), BROKEN])


def run_cli(*argv: str) -> tuple[int, str]:
    """``python -m autograder ARGV`` in this process: (exit status, stdout + stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue()


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# --- the loop, run once for this module ------------------------------------------------------


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    root = tmp_path_factory.mktemp("loop")
    course_dir = root / "course"
    db_url = f"sqlite:///{root / 'gradebook.sqlite'}"  # exercises --db (any SQLAlchemy URL)
    course = Course(course_dir, db_url=db_url)
    # the class's fixed secret, so the samples draw the same numbers every run and a failure can
    # be replayed (a secret made per run once failed CI on one draw in 48 of hw8)
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / SECRET_FILE).write_text(SECRET.hex() + "\n")
    incoming = root / "incoming"
    flat, nbgrader_layout, lms_zip = incoming / "flat", incoming / "nbgrader", incoming / "lms.zip"
    flat.mkdir(parents=True)
    with zipfile.ZipFile(lms_zip, "w") as archive:
        archive.writestr("__MACOSX/._junk", b"litter")
        archive.writestr("../escape.ipynb", b"{}")  # would leave the archive: refused
    ns = SimpleNamespace(root=root, course=course, incoming=incoming, collect={}, grade={}, export={},
                         feedback={}, specs={}, built={})
    for a in ASSIGNMENTS:
        ns.specs[a] = load_spec(a)
        built = build_submissions(a, root / "built" / a, course=course,
                                  ids={s: sid(s) for s in load_spec(a)["students"]})
        ns.built[a] = built
        names = sorted(built)
        # (a) one notebook per student, <student>.ipynb or <student>_<anything>.ipynb
        (flat / a).mkdir()
        shutil.copy(built["correct"], flat / a / "correct.ipynb")
        shutil.copy(built["partial"], flat / a / f"partial_{a}_final.ipynb")
        for other in names:  # samples no other form below carries (e.g. unkeyed, copied)
            if other not in ("correct", "partial", "misconceptions", "tampered", "empty", "raises"):
                shutil.copy(built[other], flat / a / f"{other}.ipynb")
        (flat / a / f"{BROKEN}.ipynb").write_text("{ this is not JSON")
        (flat / a / "notes.txt").write_text("not a notebook")
        # (b) nbgrader's submitted/<student>/<assignment>/ layout
        for student in ("misconceptions", *[n for n in names if n == "tampered"]):
            target = nbgrader_layout / "submitted" / student / a
            target.mkdir(parents=True)
            shutil.copy(built[student], target / f"{a}.ipynb")
            (target / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
        # (c) an LMS download (Canvas names) in a zip, with a duplicate and a bad member
        with zipfile.ZipFile(lms_zip, "a") as archive:
            archive.write(built["empty"], f"empty_1001_2001_{a}.ipynb")
            archive.write(built["raises"], f"raises_late_1002_2002_{a}-1.ipynb")
            archive.write(built["empty"], f"twice_1003_2003_{a}.ipynb")
            archive.write(built["correct"], f"twice_1003_2004_{a}-draft.ipynb")  # not a copy: which?
    ns.before = _digest(incoming)
    for a in ASSIGNMENTS:
        ns.collect[a] = run_cli("collect", flat / a, nbgrader_layout, lms_zip, "-a", a,
                                "--course", course_dir, "--db", db_url)
        ns.grade[a] = run_cli("grade", "-a", a, "--course", course_dir, "--db", db_url, "-q")
        ns.export[a] = run_cli("export", "-a", a, "--course", course_dir, "--db", db_url,
                               "--output", root / f"{a}.csv")
        ns.feedback[a] = run_cli("feedback", "-a", a, "--course", course_dir, "--db", db_url)
    ns.after = _digest(incoming)
    return ns


def _scores(course: Course, assignment: str, student: str) -> dict[str, float]:
    with course.gradebook() as gb:
        submission = gb.find_submission(assignment, student)
        return {g.name: float(g.score) for nb in submission.notebooks for g in nb.grades}


def _cases():
    return [(a, s) for a in ASSIGNMENTS for s in sorted(load_spec(a)["students"]) if not s.startswith("_")]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_collect_maps_the_three_forms_to_students(loop, assignment):
    rc, out = loop.collect[assignment]
    assert rc == 1, out  # the duplicate and the unsafe member are problems to act on
    assert loop.course.submitted_students(assignment) == everyone(assignment)
    assert "DUPLICATES" in out and re.search(r"twice_1003: .*twice_1003_2003.*twice_1003_2004", out)  # not copies
    assert "escape.ipynb (unsafe path: leaves the archive (..))" in out
    assert "notes.txt (not a notebook)" in out
    other = next(x for x in ASSIGNMENTS if x != assignment)
    assert f"empty_1001_2001_{other}.ipynb (belongs to assignment {other})" in out
    assert "ignored 1 OS/editor file" in out
    assert f"{BROKEN}.ipynb" in out[out.index("not a valid notebook"):]
    for student in everyone(assignment):
        assert (loop.course.submitted(student, assignment) / f"{assignment}.ipynb").is_file()
    assert (loop.course.submitted("misconceptions", assignment) / "timestamp.txt").is_file()
    # collect prepared the course: nbgrader generate_assignment released what exercises/ holds
    assert compare_trees(loop.course.release(assignment), EXERCISES / assignment) == []
    with loop.course.gradebook() as gb:
        assert gb.find_student("empty_1001").lms_user_id == "1001"
        assert gb.find_student("raises_1002").lms_user_id == "1002"
        assert {s.id for s in gb.students} == set().union(*(everyone(a) for a in ASSIGNMENTS))


@pytest.mark.slow
def test_collect_never_modifies_the_originals(loop):
    assert loop.after == loop.before


@pytest.mark.slow
@pytest.mark.parametrize("assignment,student", _cases())
def test_scores_are_exactly_the_specified_ones(loop, assignment, student):
    expected = expected_scores(assignment, loop.specs[assignment]["students"][student])
    if expected:  # {} for "any": graded with numbers the notebook does not hold
        assert _scores(loop.course, assignment, sid(student)) == expected


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_solution_scores_full_and_released_version_zero(loop, assignment):
    points = dict(grade_ids(SOLUTIONS / assignment / f"{assignment}.ipynb"))
    assert _scores(loop.course, assignment, "correct") == points
    assert set(_scores(loop.course, assignment, sid("empty")).values()) == {0.0}
    # the sample "empty" is byte for byte the committed student version
    # (but for the id and key its student filled in, on a homework with per-student numbers)
    released = json.loads((EXERCISES / assignment / f"{assignment}.ipynb").read_text("utf-8"))
    built = json.loads(loop.built[assignment]["empty"].read_text("utf-8"))
    assert [c for c in built["cells"] if not is_identity_cell(c)] == [
        c for c in released["cells"] if not is_identity_cell(c)]


@pytest.mark.slow
@pytest.mark.parametrize("assignment,student", _cases())
def test_hints_and_messages_reach_the_report_and_the_feedback_page(loop, assignment, student):
    expect = loop.specs[assignment]["students"][student].get("expect", {})
    entry = load_report(loop.course, assignment)[sid(student)]
    assert entry["status"] == expect.get("status", "graded")
    page = (loop.course.feedback(sid(student), assignment) / "feedback.html").read_text("utf-8")
    for grade_id, text in {**expect.get("hints", {}), **expect.get("messages", {})}.items():
        assert text in entry["messages"].get(grade_id, ""), (grade_id, entry["messages"].get(grade_id))
        assert html.escape(text, quote=True) in page, (grade_id, text)
    for grade_id, text in expect.get("hints", {}).items():
        message, hint = split_hint(entry["messages"][grade_id])
        assert text in hint, (grade_id, hint)
    for text in expect.get("cell_errors", []):
        assert re.search(r"Errors raised by your cells.*" + re.escape(text), page, re.S), text
    for text in expect.get("problems", []):
        assert any(text in p for p in entry["problems"]), (text, entry["problems"])
        assert html.escape(text, quote=True) in page, text
    if expect.get("scores") == "full" and not expect.get("lost"):
        assert not any("Hint:" in m for m in entry["messages"].values())


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_file_that_is_not_a_notebook_scores_zero_and_is_flagged(loop, assignment):
    entry = load_report(loop.course, assignment)[BROKEN]
    assert entry["status"] == "invalid notebook"
    assert set(entry["scores"].values()) == {0.0}
    page = (loop.course.feedback(BROKEN, assignment) / "feedback.html").read_text("utf-8")
    assert "invalid notebook" in page


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_prints_a_summary_and_the_submissions_not_fully_graded(loop, assignment):
    rc, out = loop.grade[assignment]
    assert rc == 0, out
    assert f"{assignment}: graded {len(everyone(assignment))} submission(s)" in out
    assert re.search(r"time: [\d.]+ s in all, [\d.]+ s per submission", out)
    tail = out[out.index("NOT FULLY GRADED"):]
    assert re.search(rf"^  {BROKEN}: invalid notebook", tail, re.M), tail
    for sample, entry in loop.specs[assignment]["students"].items():
        student = sid(sample)
        status = entry.get("expect", {}).get("status", "graded")
        if status == "graded" and not entry.get("expect", {}).get("problems"):
            assert f"  {student}:" not in tail, tail
        elif status == "graded":  # graded, but with numbers the notebook did not hold: flagged
            assert re.search(rf"^  {student}: numbers: ", tail, re.M), tail
        else:
            assert re.search(rf"^  {student}: {re.escape(status)}", tail, re.M), tail


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_export_writes_one_row_per_student(loop, assignment):
    rc, out = loop.export[assignment]
    assert rc == 1 and "HELD BACK" in out, out  # the invalid notebook (and any flagged) waits for the instructor
    questions = [gid for gid, _ in grade_ids(SOLUTIONS / assignment / f"{assignment}.ipynb")]
    with open(loop.root / f"{assignment}.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == ["student", *questions, "total", "max", "status"]
    # every student of the course, with or without a submission of this assignment
    assert [r["student"] for r in rows] == sorted(set().union(*(everyone(a) for a in ASSIGNMENTS)))
    for row in rows:
        assert float(row["max"]) == len(questions)
        if row["student"] not in everyone(assignment):
            assert row["status"] == "no submission" and all(row[q] == "" for q in questions)
            continue
        if row["student"] == BROKEN:
            assert row["status"] == "invalid notebook (held back)" and float(row["total"]) == 0
            continue
        entry = spec_of(loop, assignment, row["student"])
        expected = expected_scores(assignment, entry)
        if expected:  # {} for "any"
            assert {q: float(row[q]) for q in questions} == expected
            assert float(row["total"]) == sum(expected.values())
        status = entry.get("expect", {}).get("status", "graded")
        flagged = status != "graded" or entry.get("expect", {}).get("problems")
        assert row["status"] == (f"{'flagged' if status == 'graded' else status} (held back)" if flagged else status)


@pytest.mark.slow
def test_feedback_escapes_what_students_wrote(loop):
    page = (loop.course.feedback("partial", ASSIGNMENTS[0]) / "feedback.html").read_text("utf-8")
    assert "<script" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "Content-Security-Policy" in page


# --- validate (runs notebooks: slow) -------------------------------------------------------


@pytest.mark.slow
def test_validate_the_released_notebook_says_nothing_is_answered():
    a = ASSIGNMENTS[0]
    rc, out = run_cli("validate", EXERCISES / a / f"{a}.ipynb")
    assert rc == 1
    assert out.count("not answered") == len(grade_ids(SOLUTIONS / a / f"{a}.ipynb"))


@pytest.mark.slow
def test_validate_reports_form_but_never_correctness(tmp_path):
    a = ASSIGNMENTS[0]
    built = build_submissions(a, tmp_path, students=["misconceptions", "partial"])
    rc, out = run_cli("validate", built["misconceptions"])
    assert rc == 0, out  # wrong values in the right form: validate cannot and must not tell
    assert "Hint" not in out and "expected" not in out
    rc, out = run_cli("validate", built["partial"])
    assert rc == 1
    assert re.search(r"hw1-q5-h100-test .* wrong form: critical_batch_gpu should be a number", out)
    assert re.search(r"hw1-q6-dot-test .* not answered: intensity_dot is not defined", out)


@pytest.mark.slow
def test_validate_runs_no_hidden_test_even_on_the_source_notebook():
    a = ASSIGNMENTS[0]
    rc, out = run_cli("validate", SOLUTIONS / a / f"{a}.ipynb")
    assert rc == 0, out
    assert "Hint" not in out


def test_validate_rejects_a_file_that_is_not_a_notebook(tmp_path):
    path = tmp_path / "homework.ipynb"
    path.write_text("not json")
    rc, out = run_cli("validate", path)
    assert rc == 2 and "not a Jupyter notebook" in out


# --- collect rules (no grading) ------------------------------------------------------------


@pytest.mark.parametrize("path,student,form,lms", [
    ("alice.ipynb", "alice", "file", None),
    ("alice_hw1-rooflines_v2.ipynb", "alice", "file", None),
    ("doe_jane_12345_67890_hw1-rooflines.ipynb", "doe_jane_12345", "lms", "12345"),
    ("doejane_late_12345_67890_hw1-rooflines-1.ipynb", "doejane_12345", "lms", "12345"),
    ("Jane Doe_4242_assignsubmission_file_hw1-rooflines.ipynb", "jane_doe_4242", "lms", "4242"),
    ("Jane Doe_4242_assignsubmission_file_/whatever.ipynb", "jane_doe_4242", "lms", "4242"),
    ("submitted/bob_smith/hw1-rooflines/hw1-rooflines.ipynb", "bob_smith", "nbgrader", None),
    ("bob/hw1-rooflines/hw1-rooflines.ipynb", "bob", "nbgrader", None),
])
def test_student_ids_from_file_names(path, student, form, lms):
    item = Item(path, PurePosixPath(path), lambda: b"")
    assert identify(item, "hw1-rooflines", ["hw1-rooflines.ipynb"], list(ASSIGNMENTS)) is None
    assert (item.student, item.form, item.target) == (student, form, "hw1-rooflines.ipynb")
    # Canvas: the user id; Moodle: the participant id of this assignment, never kept as a user id
    assert (item.details.get("lms_user_id") or item.details.get("participant")) == lms
    assert "lms_user_id" not in item.details or "Moodle" not in str(item.reading)


@pytest.mark.parametrize("path,why", [
    ("hw1-rooflines.ipynb", "refused: named after the assignment"),
    ("some/folder/alice.ipynb", "refused: cannot tell whose notebook"),
    ("notes.txt", "ignored: not a notebook"),
    ("bob/hw2-hardware/hw2-hardware.ipynb", "ignored: belongs to assignment hw2-hardware"),
    ("-rf.ipynb", "refused: '-rf' is not a usable student id"),
])
def test_files_that_name_no_student(path, why):
    item = Item(path, PurePosixPath(path), lambda: b"")
    assert identify(item, "hw1-rooflines", ["hw1-rooflines.ipynb"], list(ASSIGNMENTS)).startswith(why)


@pytest.mark.parametrize("name,ok", [
    ("a/b.ipynb", True), ("./a.ipynb", True), ("../a.ipynb", False), ("a/../../b.ipynb", False),
    ("/etc/passwd", False), ("C:/x.ipynb", False), ("..\\..\\x.ipynb", False), ("a\x00b", False),
])
def test_zip_member_names_must_stay_inside_the_archive(name, ok):
    rel, why = safe_member_name(name)
    assert (why is None) == ok and (rel is not None) == ok


def test_zip_of_a_folder_is_looked_into_and_symlinks_refused(tmp_path):
    path = tmp_path / "download.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("export/alice.ipynb", b"{}")
        link = zipfile.ZipInfo("export/link.ipynb")
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    items, refused, litter = scan(path)
    assert [str(i.rel) for i in items] == ["alice.ipynb"]
    assert refused == [(f"{path}:export/link.ipynb", "symbolic link")]


def test_collect_of_a_missing_source_is_a_usage_error(tmp_path):
    rc, out = run_cli("collect", tmp_path / "nowhere", "-a", ASSIGNMENTS[0], "--course", tmp_path / "c")
    assert rc == 2 and "no such file or folder" in out


def test_unknown_assignment_is_a_usage_error(tmp_path):
    rc, out = run_cli("export", "-a", "hw9-nothing", "--course", tmp_path)
    assert rc == 2 and "unknown assignment 'hw9-nothing'" in out and ASSIGNMENTS[0] in out


# --- feedback page (no grading) ------------------------------------------------------------


def test_feedback_page_escapes_every_text():
    evil = "<img src=x onerror=alert(1)> & \"quotes\""
    items = [QuestionFeedback("q1-test", "Problem <1>", 0.0, 1.0, f"x = {evil} is wrong.", f"try {evil}")]
    page = render_html(StudentFeedback("mallory<b>", "hw1-rooflines", "graded", [f"problem {evil}"],
                                       [f"hw1-q1: ValueError: {evil}"], items))
    assert "<img" not in page and "mallory<b>" not in page and "Problem <1>" not in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot;") == 4
    assert "mallory&lt;b&gt;" in page


def test_split_hint():
    assert split_hint("x = 3 is not within 5% of the expected answer. Hint: use dense FLOPs") == (
        "x = 3 is not within 5% of the expected answer.", "use dense FLOPs")
    assert split_hint("not answered") == ("not answered", "")


def test_python_m_autograder_ends_with_the_commands_status_and_nothing_unwritten(tmp_path):
    """``python -m autograder`` ends by ``cli.exit_with``, which freezes what is still alive so
    that the interpreter's last collections skip it: the command's status comes back, its
    buffered output is written, and files left unclosed keep what was written to them: one held
    by a live object in a reference cycle (which the freeze would keep from being finalized)
    and one let go of in a cycle (which Python alone loses)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from autograder.cli import exit_with\n"
            "class Holder: pass\n"
            "held = Holder(); held.me = held\n"
            f"held.f = open({str(tmp_path / 'held.txt')!r}, 'w'); held.f.write('kept')\n"
            f"f = open({str(tmp_path / 'let-go.txt')!r}, 'w')\n"
            "f.write('kept'); f.me = f; del f\n"
            "sys.stdout.write('x' * 100000)\n"
            "exit_with(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parent.parent)
    assert r.returncode == 3 and r.stdout == "x" * 100000, r.stderr[-500:]
    assert (tmp_path / "held.txt").read_text() == "kept"
    assert (tmp_path / "let-go.txt").read_text() == "kept"

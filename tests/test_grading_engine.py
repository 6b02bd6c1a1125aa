"""The grading engine (autograder/grade.py, checker.py, runner.py, sandbox.py).

Unit tests of the trusted side need nothing; the rest runs submissions in the bubblewrap
sandbox (marked ``sandbox``) on a tiny nbgrader assignment (tests/hostile/fixture.py) and, when
they are there, on the real homework. The resume test SIGKILLs a grader mid-run (``slow``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import corpus, fixture  # noqa: E402

from autograder import checker, runner  # noqa: E402
from autograder.course import REPO, Course  # noqa: E402
from autograder.grade import (GradingError, Progress, atomic_write,  # noqa: E402
                              grade_assignment)
from autograder.sandbox import Limits, Outcome  # noqa: E402

def in_sandbox(test):
    """Marks a test that grades in the bubblewrap sandbox (it fails where there is none)."""
    return pytest.mark.sandbox(test)
LIMITS = Limits(timeout=10, memory=1 << 30, nproc=64)
A = fixture.ASSIGNMENT


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    return fixture.prepared(tmp_path_factory)


@pytest.fixture
def course(prepared, tmp_path) -> Path:
    return fixture.copy_course(prepared, tmp_path / "course")


@pytest.fixture(scope="module")
def spec(prepared):
    return checker.load_spec(Course(prepared), A)


def sub_bytes(release, **answers) -> bytes:
    return json.dumps(fixture.honest(release, **answers)).encode()


# --- the trusted side, no sandbox --------------------------------------------------------------

def test_answer_names():
    src = ("import numpy as np\nfrom scalebook.checks import check_close as cc\n"
           "def f(a):\n    return a + helper\n"
           "check_close(x, 1)\ncc([y for y in ys], np.ones(3))\nassert len(z) == 2\n_e = 3\nprint(_e)\n")
    assert checker.answer_names(src) == ("_e", "check_close", "helper", "x", "ys", "z")


def test_spec_of_the_fixture(spec):
    assert [t.grade_id for t in spec.tests] == ["q1-test", "q2-test", "q3-test", "q4-test"]
    assert spec.max_scores == fixture.POINTS
    assert fixture.HIDDEN_CANARY in spec.test("q1-test").source
    assert fixture.HIDDEN_CANARY not in spec.test("q1-test").release_source
    assert spec.test("q4-test").names == ("answer", "chip")
    assert set(spec.locked) == {"intro", "given", "q1-prompt", "q2-prompt", "q3-prompt", "q4-prompt"}


def test_checksum_is_nbgraders(spec):
    for cell in spec.release["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if "checksum" in meta:
            assert checker.checksum(cell) == meta["checksum"], meta["grade_id"]


@pytest.mark.parametrize("data, why", [
    (b"\xff\xfe not utf-8", "not UTF-8"),
    (b'{"cells": [', "not valid JSON"),
    (b"[" * 100000 + b"]" * 100000, "not valid JSON"),
    (b"[1, 2]", "not a Jupyter notebook"),
    (b'{"cells": [], "nbformat": 3}', "nbformat"),
    (b'{"cells": [{"cell_type": "code", "source": 5}], "nbformat": 4}', "malformed source"),
    (b'{"cells": [{"cell_type": "evil", "source": ""}], "nbformat": 4}', "not a notebook cell"),
    (b'{"cells": [{"cell_type": "code", "source": "", "metadata": {"nbgrader": 1}}], "nbformat": 4}',
     "malformed nbgrader"),
])
def test_parse_notebook_rejects(data, why):
    nb, reason = checker.parse_notebook(data)
    assert nb is None and why in reason


def test_validate_finds_tampering_and_plans_the_run(spec):
    nb = fixture.honest(spec.release)
    cells = nb["cells"]
    by = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in cells}
    by["q1-test"]["source"] += "\n# harmless?"
    cells.remove(by["q2-test"])
    by["q3-test"]["cell_type"] = "markdown"
    by["q4-test"]["metadata"]["nbgrader"]["points"] = 99
    by["given"]["source"] = "peak_flops = 1.0\nhbm_bw = 1.0"
    by["intro"]["source"] = "changed prompt"
    v = checker.validate(spec, json.dumps(nb).encode())
    assert v.invalid is None
    assert set(v.tampered) == {"q1-test", "q2-test", "q3-test", "q4-test"}
    assert "deleted" in v.tampered["q2-test"] and "markdown" in v.tampered["q3-test"]
    assert any("given" in p and "original was used" in p for p in v.problems)
    assert any("intro" in p for p in v.problems)
    # read-only code runs in the instructor's version; tampered tests are never run or captured
    given = next(s for s in v.steps if s["kind"] == "code" and "peak_flops" in s["source"])
    assert "197e12" in given["source"]
    assert [s for s in v.steps if s["kind"] == "capture"] == []
    assert not any("harmless" in s.get("source", "") for s in v.steps)


def test_validate_captures_where_each_test_stands(spec):
    v = checker.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    assert v.tampered == {} and v.problems == []
    kinds = [(s["kind"], s.get("grade_id")) for s in v.steps]
    assert kinds == [("code", None), ("code", None), ("capture", "q1-test"), ("code", None),
                     ("capture", "q2-test"), ("code", None), ("capture", "q3-test"), ("code", None),
                     ("capture", "q4-test")]


def test_validate_refuses_other_notebooks(spec):
    v = checker.validate(spec, json.dumps({"cells": [], "nbformat": 4}).encode())
    assert v.invalid and "not the hw0-tiny notebook" in v.invalid
    v = checker.validate(spec, None, missing="no file")
    assert v.invalid == "no file"


def test_read_records_survives_garbage(spec):
    v = checker.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    rng = random.Random(0)
    good = [json.dumps({"t": "capture", "grade_id": "q3-test", "values": {"answer": {"value": 6}}}).encode()]
    junk = [bytes(rng.randrange(256) for _ in range(rng.randrange(200))) for _ in range(300)]
    junk += [b"{}", b"null", b'{"t": "capture"}', b'{"t": "capture", "grade_id": ["x"], "values": 1}',
             b'{"t": "cell", "index": 1e9}', b'{"t": "cell", "index": 0, "stdout": 5}',
             b'{"t": "capture", "grade_id": "q1-test", "values": {"intensity": {"value": {"a": 1}}}}',
             b'{"t": "capture", "grade_id": "q1-test", "values": {"nope": {"value": 1}}}',
             b'{"t": "start", "index": "0"}', b"[" * 50000]
    lines = junk[:150] + good + junk[150:]
    rep = checker.read_records(v, Outcome(lines=lines, raw_output="", returncode=0))
    assert rep.captures["q3-test"] == {"answer": {"value": 6}}
    assert rep.captures["q1-test"] == {"intensity": {"error": "not a plain value (too large or malformed)"}}
    assert rep.junk >= 300


def test_run_test_outcomes(spec):
    q1, q2 = spec.test("q1-test"), spec.test("q2-test")
    assert checker.run_test(q1, {"intensity": {"value": 240.5}}) == (True, "")
    ok, msg = checker.run_test(q1, {"intensity": {"value": 819e9 / 197e12}})
    assert not ok and "Hint: you divided bandwidth by FLOPs" in msg
    ok, msg = checker.run_test(q1, {})
    assert not ok and msg.startswith("not answered")
    ok, msg = checker.run_test(q1, {"intensity": {"error": "not a plain value (function)"}})
    assert not ok and "not a plain value (function)" in msg
    ok, msg = checker.run_test(q1, {"intensity": {"value": "240"}})
    assert not ok and "string" in msg
    assert checker.run_test(q2, {"times": {"value": [3.0, 5.0, 9.0, 17.0, 33.0]}}) == (True, "")
    ok, msg = checker.run_test(q2, {"times": {"value": [3.0, 5.0]}})
    assert not ok and "shape" in msg
    # each test gets a fresh copy: a test that mutates its value cannot affect the next one
    values = {"times": {"value": [3.0, 5.0, 9.0, 17.0, 33.0]}}
    checker.run_test(q2, values)
    assert values["times"]["value"] == [3.0, 5.0, 9.0, 17.0, 33.0]


def test_to_plain():
    import numpy as np

    assert runner.to_plain(np.arange(3.0)) == [0.0, 1.0, 2.0]
    assert runner.to_plain(np.float32(1.5)) == 1.5 and type(runner.to_plain(np.int64(3))) is int
    assert runner.to_plain((1, [True, None, "x"], np.bool_(False))) == [1, [True, None, "x"], False]
    assert runner.to_plain(np.array(2.5)) == 2.5

    class Sneaky(float):
        def __float__(self):
            return 240.5

        def __eq__(self, other):
            return True

    assert runner.to_plain(Sneaky(1.0)) == 1.0 and type(runner.to_plain(Sneaky(1.0))) is float
    deep = [1]
    for _ in range(20):
        deep = [deep]
    for bad in ({"a": 1}, lambda: 1, np.array([1j]), 10 ** 2000, deep, np.zeros(10 ** 6)):
        with pytest.raises(runner.NotPlain):
            runner.to_plain(bad)


def test_python_source_skips_magics():
    src = "%matplotlib inline\nx = 1\n  !ls\ny = !pwd\nz = x != 2"
    assert runner.python_source(src) == ("pass  # %matplotlib inline\nx = 1\n  pass  # !ls\n"
                                         "pass  # y = !pwd\nz = x != 2")
    with pytest.raises(SyntaxError):
        runner.python_source("%%time\nx = 1")


def test_progress_line():
    out = io.StringIO()
    bar = Progress(200, "hw1", stream=out)
    bar.t0 -= 10
    bar.update(50)
    line = out.getvalue()
    assert "grading hw1: 50/200 (25%)" in line and "5.00/s" in line and "ETA 30s" in line
    bar.close()


def test_atomic_write(tmp_path):
    target = tmp_path / "a" / "x.ipynb"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two" and os.listdir(target.parent) == ["x.ipynb"]


# --- grading, in the sandbox -------------------------------------------------------------------

def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@in_sandbox
@pytest.mark.parametrize("sandbox_kind", ["template", "fresh"])
def test_grade_assignment(course, sandbox_kind):
    release = fixture.release_notebook(course)
    honest = corpus.honest_submissions(release)
    for student, (data, _) in honest.items():
        fixture.submit(course, student, data)
    fixture.submit(course, "erin", sub_bytes(release, **{"q3-answer": "answer = 6\nanswer = 6.1"}))
    fixture.submit(course, "frank", b"{}")
    (course / "submitted" / "gus" / A).mkdir(parents=True)  # a folder without the notebook
    submitted_before = tree_hashes(course / "submitted")
    report = grade_assignment(Course(course), A, workers=2, limits=LIMITS, sandbox=sandbox_kind,
                              progress=False)
    res = report.by_student()
    assert report.errors == {} and report.skipped_already_graded == []
    for student, (_, expected) in honest.items():
        assert res[student].scores == expected and res[student].status == "graded", student
    assert res["erin"].scores == fixture.POINTS  # each answer as it was where its test stands
    assert "Hint: you divided bandwidth by FLOPs" in res["bob"].messages["q1-test"]
    assert res["carol"].messages["q2-test"].startswith("not answered")
    assert res["frank"].status == res["gus"].status == "invalid notebook"
    assert "no hw0-tiny.ipynb" in res["gus"].problems[0]
    # the gradebook has every score, once; the submissions are untouched
    assert fixture.scores_in_gradebook(course) == {s: r.scores for s, r in res.items()}
    assert tree_hashes(course / "submitted") == submitted_before
    # the autograded copies: valid notebooks with each test's result, and the sidecar
    import nbformat

    nb = nbformat.read(course / "autograded" / "bob" / A / f"{A}.ipynb", as_version=4)
    nbformat.validate(nb)
    outs = {c.metadata.nbgrader["grade_id"]: c.outputs for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    assert outs["q1-test"][0]["output_type"] == "error" and "Hint" in outs["q1-test"][0]["evalue"]
    assert outs["q2-test"][0]["text"].startswith("Passed: 3/3")
    assert json.loads((course / "autograded" / "bob" / A / "grading.json").read_text())["scores"] == \
        res["bob"].scores
    assert (course / "autograded" / "bob" / A / "timestamp.txt").is_file()

    # run again: nothing to do; a re-collected submission (new timestamp) is graded again
    again = grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert again.results == [] and sorted(again.skipped_already_graded) == sorted(res)
    assert {r.student: r.scores for r in again.previous} == {s: r.scores for s, r in res.items()}
    fixture.submit(course, "carol", sub_bytes(release), timestamp="2026-01-16 09:00:00.000000 UTC")
    third = grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert [r.student for r in third.results] == ["carol"] and third.results[0].scores == fixture.POINTS
    forced = grade_assignment(Course(course), A, limits=LIMITS, progress=False, force=True,
                              students=["alice", "bob"])
    assert sorted(r.student for r in forced.results) == ["alice", "bob"]
    assert fixture.scores_in_gradebook(course)["carol"] == fixture.POINTS


@in_sandbox
def test_any_database_and_an_empty_one(course, tmp_path):
    """A gradebook at another URL, that nbgrader's generate never saw: the grader records the
    assignment from the source notebook itself."""
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    release = fixture.release_notebook(course)
    fixture.submit(course, "alice", sub_bytes(release))
    report = grade_assignment(Course(course, db_url=url), A, limits=LIMITS, progress=False)
    assert report.results[0].scores == fixture.POINTS
    assert fixture.scores_in_gradebook(course, db_url=url) == {"alice": fixture.POINTS}
    assert fixture.scores_in_gradebook(course) == {}


@in_sandbox
def test_self_check_refuses_a_broken_test(course):
    path = course / "source" / A / f"{A}.ipynb"
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "q2-test":
            src = "".join(cell["source"])
            cell["source"] = src.replace("2.0 * np.array", "2.0 * numpy.array")  # numpy: never imported
    path.write_text(json.dumps(nb))
    fixture.submit(course, "alice", sub_bytes(fixture.release_notebook(course)))
    with pytest.raises(GradingError, match="instructor's own solutions.*q2-test.*numpy"):
        grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert fixture.scores_in_gradebook(course) == {}


GRADE_SCRIPT = """
import sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from autograder.course import Course
from autograder.grade import grade_assignment
from autograder.sandbox import Limits
grade_assignment(Course(Path({root!r})), {a!r}, workers=2, progress=False,
                 limits=Limits(timeout=20, memory=1 << 30, nproc=64))
"""


def _graded_in_db(root: Path) -> dict:
    return {s: v for s, v in fixture.scores_in_gradebook(root).items()}


@pytest.mark.slow
@in_sandbox
def test_resume_after_sigkill(prepared, tmp_path):
    """Kill the grader (SIGKILL, process group and all) at two points; rerun; every submission
    ends up graded exactly once, with the scores of an uninterrupted run."""
    clean = fixture.copy_course(prepared, tmp_path / "clean")
    killed = fixture.copy_course(prepared, tmp_path / "killed")
    release = fixture.release_notebook(clean)
    variants = [{}, {"q1-answer": "intensity = 1.0"}, {"q3-answer": "answer = 7"}, {"q2-answer": ""}]
    for i in range(36):
        nb = fixture.honest(release, **variants[i % 4])
        corpus._insert_after(nb, "given", "import time\ntime.sleep(0.3)")
        for root in (clean, killed):
            fixture.submit(root, f"s{i:02d}", nb)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    script = GRADE_SCRIPT.format(repo=str(REPO), root=str(killed), a=A)
    commits = []
    for threshold in (4, 14):
        proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            n = len(list((killed / "autograded").glob(f"*/{A}/grading.json")))
            if n >= threshold or proc.poll() is not None:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        graded = _graded_in_db(killed)
        assert 0 < len(graded) < 36, len(graded)
        # committed means complete: every score of every graded submission is there
        assert all(None not in scores.values() for scores in graded.values())
        commits.append(set(graded))
    assert commits[0] <= commits[1]
    # the sandboxes died with the grader
    time.sleep(0.5)
    leftovers = subprocess.run(["pgrep", "-f", "/opt/grader/runner"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""

    resumed = grade_assignment(Course(killed), A, workers=2, limits=LIMITS, progress=False)
    assert set(resumed.skipped_already_graded) == commits[1]
    assert {r.student for r in resumed.results} == {f"s{i:02d}" for i in range(36)} - commits[1]
    full = grade_assignment(Course(clean), A, workers=2, limits=LIMITS, progress=False)
    assert len(full.results) == 36
    assert _graded_in_db(killed) == _graded_in_db(clean)
    for r in full.results:  # and the autograded copies and statuses agree too
        mine = json.loads((killed / "autograded" / r.student / A / "grading.json").read_text())
        assert mine == r.to_json()
    assert not list((killed / "autograded").rglob(".*.tmp-*"))


@pytest.mark.slow
@in_sandbox
def test_nbgrader_autograde_agrees(prepared, tmp_path):
    """Plain nbgrader autograde and grade_assignment give the same scores (the baseline)."""
    ours = fixture.copy_course(prepared, tmp_path / "ours")
    theirs = fixture.copy_course(prepared, tmp_path / "theirs")
    release = fixture.release_notebook(ours)
    for student, (data, _) in corpus.honest_submissions(release).items():
        for root in (ours, theirs):
            fixture.submit(root, student, data)
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", A, "--force",
                           f"--CourseDirectory.root={theirs}"], cwd=theirs, capture_output=True,
                          text=True, env=dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    grade_assignment(Course(ours), A, limits=LIMITS, progress=False)
    assert fixture.scores_in_gradebook(ours) == fixture.scores_in_gradebook(theirs)


HOMEWORK = [a for a in ("hw1-rooflines", "hw2-hardware")
            if (REPO / "solutions" / a / f"{a}.ipynb").is_file()]


@pytest.mark.slow
@in_sandbox
@pytest.mark.parametrize("assignment", HOMEWORK)
def test_real_homework(assignment, tmp_path):
    """The real homework: the solutions get full marks (the self-check), the unanswered
    exercise none, a wrong answer loses exactly its question."""
    root = tmp_path / "course"
    shutil.copytree(REPO / "solutions" / assignment, root / "source" / assignment)
    fixture.generate(root, assignment)
    spec = checker.load_spec(Course(root), assignment)
    solved = json.loads(checker.solution_submission(spec))
    fixture.submit(root, "solved", solved, assignment=assignment)
    exercise = REPO / "exercises" / assignment / f"{assignment}.ipynb"
    fixture.submit(root, "blank", exercise.read_bytes() if exercise.is_file() else spec.release,
                   assignment=assignment)
    wrong = json.loads(json.dumps(solved))
    answer_cells = [c for c in wrong["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    answer_cells[0]["source"] = "raise ValueError('oops')\n" + "".join(answer_cells[0]["source"])
    first_test = spec.tests[0].grade_id
    fixture.submit(root, "wrong", wrong, assignment=assignment)
    report = grade_assignment(Course(root), assignment, limits=Limits(timeout=60, memory=4 << 30),
                              progress=False)
    res = report.by_student()
    total = sum(spec.max_scores.values())
    assert res["solved"].total == total and res["solved"].status == "graded"
    assert res["blank"].total == 0 and res["blank"].status == "graded", res["blank"].problems
    assert all(m.startswith("not answered") for m in res["blank"].messages.values())
    assert res["wrong"].scores[first_test] == 0 and res["wrong"].total < total

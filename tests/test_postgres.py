"""PostgreSQL as the gradebook, and the claims that let two graders share one gradebook.

- Every gradebook row refers to rows that exist (the assignment's course): checked on SQLite
  with foreign keys enforced, as PostgreSQL enforces them, and on PostgreSQL.
- Claims (autograder/claims.py), on lock files and on PostgreSQL advisory locks: another
  process, another object or another thread cannot take a held claim; a killed holder's
  claims become free.
- The instructor's loop through the CLI with ``--db postgresql://...`` on a throwaway server
  (tests/pgserver.py): collect, grade with 2 workers killed by SIGKILL and resumed, export,
  feedback -- the same grades as the same loop on SQLite. Then two graders started at once on
  one PostgreSQL gradebook grade each submission exactly once.

Tests that need the server are ``slow`` (and ``sandbox`` where they grade): `make test-fast`
deselects them, and `make test` fails, never skips, where PostgreSQL is not installed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import fixture  # noqa: E402

from autograder import cli  # noqa: E402
from autograder.grading.claims import CLAIMS_FOLDER, claim_key, open_claims  # noqa: E402
from autograder.course import REPO, Course  # noqa: E402
from autograder.demo import build_submissions, load_spec  # noqa: E402

A = "hw1-rooflines"


def run_cli(*argv) -> tuple[int, str]:
    """``python -m autograder ARGV`` in this process: (exit status, stdout + stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue()


def new_database(server) -> str:
    return server.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def sqlite_foreign_keys():
    """SQLite connections opened in this process enforce foreign keys while the test runs
    (SQLite's default is not to: a row that refers to nothing passes there, not on PostgreSQL)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def on_connect(dbapi_connection, _record):
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute("PRAGMA foreign_keys = ON")

    event.listen(Engine, "connect", on_connect)
    yield
    event.remove(Engine, "connect", on_connect)


def tiny_solutions(tmp_path: Path) -> Path:
    """A solutions/ folder holding the tiny fixture assignment (quick to prepare)."""
    solutions = tmp_path / "solutions"
    fixture.write_source(solutions)
    return solutions


# --- every gradebook row refers to rows that exist -------------------------------------------


@pytest.mark.slow  # writes and checks a whole gradebook
def test_every_gradebook_row_refers_to_rows_that_exist(tmp_path, sqlite_foreign_keys):
    """nbgrader's CourseDirectory.course_id is '' and its Gradebook creates no course row for
    '': an assignment created by generate_assignment referred to a missing course (PostgreSQL
    refuses it; SQLite only with foreign keys on)."""
    course = Course(tmp_path / "course")
    course.prepare(fixture.ASSIGNMENT, solutions=tiny_solutions(tmp_path))
    with course.gradebook() as gb:
        gb.update_or_create_student("alice")
    db = sqlite3.connect(Path(course.root) / "gradebook.db")
    try:
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        rows = db.execute("SELECT a.name, c.id FROM assignment a LEFT JOIN course c ON c.id = a.course_id")
        assert [(name, bool(cid)) for name, cid in rows] == [(fixture.ASSIGNMENT, True)]
    finally:
        db.close()
    config = (Path(course.root) / "nbgrader_config.py").read_text()
    assert "c.CourseDirectory.course_id = 'default_course'" in config  # nbgrader's own tools too


@pytest.mark.slow
def test_prepare_and_collect_on_postgresql(tmp_path, postgres_server):
    url = new_database(postgres_server)
    course = Course(tmp_path / "course", db_url=url)
    course.prepare(fixture.ASSIGNMENT, solutions=tiny_solutions(tmp_path))
    with course.gradebook() as gb:
        gb.update_or_create_student("alice")
        assert [a.course_id for a in gb.assignments] == ["default_course"]
    # and the CLI collects into it (the real homework)
    incoming = tmp_path / "incoming"
    build_submissions(A, incoming, students=["correct"])
    rc, out = run_cli("collect", incoming, "-a", A, "--course", course.root, "--db", url)
    assert rc == 0, out
    with course.gradebook() as gb:
        assert sorted(s.id for s in gb.students) == ["alice", "correct"]


def test_a_missing_server_names_the_debian_package(monkeypatch):
    import pgserver

    monkeypatch.setattr(pgserver, "find_bindir", lambda: None)
    with pytest.raises(pgserver.PostgresUnavailable, match=r"apt-get install postgresql\)"):
        pgserver.PostgresServer.start()


# --- claims ----------------------------------------------------------------------------------

CONTENDER = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from autograder.grading.claims import open_claims
from autograder.course import Course
course = Course(Path(sys.argv[2]), db_url=sys.argv[3] or None)
claims = open_claims(course.gradebook_url, course.root, sys.argv[4])
print("ready", flush=True)
for line in sys.stdin:
    verb, student = line.split(" ", 1)
    student = student.rstrip("\n")
    if verb == "claim":
        print(claims.try_claim(student), flush=True)
    else:
        claims.release(student)
        print("released", flush=True)
"""


class Contender:
    """Another process holding claims of its own, driven line by line."""

    def __init__(self, course: Course, assignment: str = A):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CONTENDER, str(REPO), str(course.root), course.db_url or "", assignment],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def ask(self, verb: str, student: str) -> str:
        self.proc.stdin.write(f"{verb} {student}\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def claim(self, student: str) -> bool:
        return {"True": True, "False": False}[self.ask("claim", student)]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self.proc.stdin.close()
        self.proc.stdout.close()


@pytest.fixture(params=["files", pytest.param("postgresql", marks=pytest.mark.slow)])
def claims_course(request, tmp_path) -> Course:
    """A course whose claims are lock files (SQLite gradebook) or advisory locks (PostgreSQL)."""
    if request.param == "files":
        return Course(tmp_path / "course")
    return Course(tmp_path / "course", db_url=new_database(request.getfixturevalue("postgres_server")))


@pytest.fixture
def contender(claims_course):
    other = Contender(claims_course)
    yield other
    other.close()


def test_two_processes_contend_for_claims(claims_course, contender):
    with open_claims(claims_course.gradebook_url, claims_course.root, A) as mine:
        assert contender.claim("alice")
        assert not mine.try_claim("alice")
        assert mine.try_claim("bob")
        assert not contender.claim("bob")
        assert contender.ask("release", "alice") == "released"
        assert mine.try_claim("alice")
        mine.release("bob")
        assert contender.claim("bob")
        assert mine.held() == {"alice"}
        with open_claims(claims_course.gradebook_url, claims_course.root, "hw2-hardware") as other_assignment:
            assert other_assignment.try_claim("bob")  # a claim is per assignment


def test_a_killed_holders_claims_become_free(claims_course, contender):
    assert contender.claim("alice") and contender.claim("bob")
    with open_claims(claims_course.gradebook_url, claims_course.root, A) as mine:
        assert not mine.try_claim("alice")
        contender.kill()
        # the kernel (files) or the server, once it sees the connection close, drops them
        deadline = time.monotonic() + 15
        while not mine.try_claim("alice"):
            assert time.monotonic() < deadline, "a dead process still holds its claim"
            time.sleep(0.05)
        assert mine.try_claim("bob")


def test_claims_are_exclusive_within_a_process_and_thread_safe(claims_course):
    url, root = claims_course.gradebook_url, claims_course.root
    with open_claims(url, root, A) as first, open_claims(url, root, A) as second:
        assert first.try_claim("alice")
        assert not second.try_claim("alice")  # another object of this process
        assert not first.try_claim("alice")   # held already: not claimed twice
        barrier = threading.Barrier(8)
        won: list[bool] = []

        def race(claims):
            barrier.wait()
            won.append(claims.try_claim("bob"))

        threads = [threading.Thread(target=race, args=(c,)) for c in [first, second] * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(won) == [False] * 7 + [True]
    with open_claims(claims_course.gradebook_url, claims_course.root, A) as third:  # closing released everything
        assert third.try_claim("alice") and third.try_claim("bob")
    with pytest.raises(ValueError):
        third.try_claim("carol")


def test_claim_files_are_hashed_names_inside_the_claims_folder(tmp_path):
    course = Course(tmp_path / "course")
    hostile = ["../../escape", "/etc/passwd", "a/b", "..", "caf\u00e9", "x" * 300]
    with open_claims(course.gradebook_url, course.root, A) as claims:
        assert all(claims.try_claim(s) for s in hostile)
        folder = tmp_path / "course" / CLAIMS_FOLDER / A
        files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
        assert len(files) == len(hostile)
        assert all(f.parent == folder.relative_to(tmp_path) and re.fullmatch(r"[0-9a-f]{40}\.lock", f.name)
                   for f in files)
        for s in hostile:
            claims.release(s)
        assert list(folder.iterdir()) == []  # released claims leave no file
    for bad in ("", "..", "../x", "a/b"):
        with pytest.raises(ValueError):
            open_claims(course.gradebook_url, course.root, bad)


def test_claim_keys_are_stable_int4_pairs():
    keys = claim_key(A, "alice")
    assert keys == claim_key(A, "alice") != claim_key(A, "alicf") != claim_key("hw2-hardware", "alice")
    assert all(-2**31 <= k < 2**31 for k in keys)
    assert keys == (-1404106125, 210805592)  # the same in every process and Python version


# --- the instructor's loop on PostgreSQL --------------------------------------------------


def graded_in(course: Course) -> dict[str, dict[str, float]]:
    """student -> {grade_id: score} of every committed submission of ``A``."""
    from autograder.grading.record import graded_submissions

    with course.gradebook() as gb:
        done = graded_submissions(gb, A)
        out = {}
        for student in done:
            sub = gb.find_submission(A, student)
            out[student] = {g.name: g.auto_score for nb in sub.notebooks for g in nb.grades}
    return out


def graded_in_table(output: str) -> set[str]:
    """The students the summary of ``grade`` lists as graded in this run."""
    return set(re.findall(r"^  (\S+)\s+[-+.\deE]+ / [-+.\deE]+\s", output, flags=re.M))


def grading_records(course: Course) -> dict[str, dict]:
    base = Path(course.root) / "autograded"
    return {p.parent.parent.name: json.loads(p.read_text()) for p in base.glob(f"*/{A}/grading.json")}


def committed_files(course: Course, students) -> dict[str, tuple[int, bytes]]:
    """(mtime, bytes) of the grading records of ``students``."""
    return {s: (p.stat().st_mtime_ns, p.read_bytes()) for s in students
            for p in [course.autograded(s, A) / "grading.json"]}


def subprocess_env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO))


def samples_with_slow_ones(n: int = 4) -> dict:
    """The sample submissions of ``A`` and ``n`` right ones that take 1.5 s each, so that a
    grader killed after its first commit still has work left whatever the machine's speed (it
    commits what it recorded at least every second: ``grade.COMMIT_WITHIN``)."""
    spec = load_spec(A)
    slow = {"from_solution": "all", "append": {"hw1-q1a-bytes": "import time\ntime.sleep(1.5)"}}
    return {**spec, "students": {**spec["students"], **{f"slow{i}": slow for i in range(n)}}}


@pytest.fixture(scope="module")
def loops(tmp_path_factory, postgres_server):
    """The whole loop on SQLite, then on PostgreSQL with a grader killed and resumed."""
    root = tmp_path_factory.mktemp("pg-loop")
    incoming = root / "incoming"
    lite = Course(root / "sqlite")
    built = build_submissions(A, incoming, spec=samples_with_slow_ones(), course=lite)
    students = sorted(built)
    layout = root / "nbgrader-layout"  # two of them with nbgrader's timestamp.txt
    for student in ("slow0", "slow1"):
        folder = layout / "submitted" / student / A
        folder.mkdir(parents=True)
        built[student].rename(folder / f"{A}.ipynb")
        (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.123456 UTC")
    sources = (incoming, layout)
    ns = {"students": students, "seconds": {"server start": postgres_server.seconds_to_start}}

    rc, out = run_cli("collect", *sources, "-a", A, "--course", lite.root)
    assert rc == 0, out
    start = time.perf_counter()
    ns["sqlite grade"] = run_cli("grade", "-a", A, "--course", lite.root, "--workers", 2, "-q")
    ns["seconds"]["sqlite grade"] = time.perf_counter() - start
    ns["sqlite export"] = run_cli("export", "-a", A, "--course", lite.root, "--output", root / "sqlite.csv")
    ns["sqlite feedback"] = run_cli("feedback", "-a", A, "--course", lite.root)

    url = new_database(postgres_server)
    pg = Course(root / "postgresql", db_url=url)
    pg.root.mkdir(parents=True)  # the same course moved to PostgreSQL: its secret (students' keys) too
    shutil.copy(lite.root / "variants.secret", pg.root / "variants.secret")
    db = ("--course", pg.root, "--db", url)
    rc, out = run_cli("collect", *sources, "-a", A, *db)
    assert rc == 0, out
    # grade in another process and SIGKILL it (process group, sandboxes and all) mid-way
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "-a", A, *map(str, db),
                             "--workers", "2", "-q"], cwd=REPO, env=subprocess_env(),
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        # at least one submission committed (the grader commits a few at a time)
        if grading_records(pg) and graded_in(pg):
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    ns["killed stderr"] = proc.stderr.read().decode(errors="replace")[-3000:]
    proc.stderr.close()
    ns["committed when killed"] = graded_in(pg)
    ns["records when killed"] = committed_files(pg, ns["committed when killed"])
    ns["pg resume"] = run_cli("grade", "-a", A, *db, "--workers", 2, "-q")
    ns["records after resume"] = committed_files(pg, ns["committed when killed"])
    ns["pg again"] = run_cli("grade", "-a", A, *db, "--workers", 2, "-q")  # nothing left to grade
    ns["seconds"]["postgresql grade, killed and resumed"] = time.perf_counter() - start
    ns["pg export"] = run_cli("export", "-a", A, *db, "--output", root / "postgresql.csv")
    ns["pg feedback"] = run_cli("feedback", "-a", A, *db)
    ns["csv"] = {"sqlite": (root / "sqlite.csv").read_text(), "postgresql": (root / "postgresql.csv").read_text()}
    ns["graded"] = {"sqlite": graded_in(lite), "postgresql": graded_in(pg)}
    ns["records"] = {"sqlite": grading_records(lite), "postgresql": grading_records(pg)}
    ns["feedback pages"] = {name: sorted(p.parent.parent.name for p in
                                         (Path(c.root) / "feedback").glob(f"*/{A}/feedback.html"))
                            for name, c in (("sqlite", lite), ("postgresql", pg))}
    # an uninterrupted grading of the whole class on each gradebook, to compare the times
    for name, argv in (("sqlite", ("--course", lite.root)), ("postgresql", db)):
        start = time.perf_counter()
        ns[f"{name} regrade"] = run_cli("grade", "-a", A, *argv, "--workers", 2, "--force", "-q")
        ns["seconds"][f"{name} grade --force"] = time.perf_counter() - start
    ns["graded after regrade"] = {"sqlite": graded_in(lite), "postgresql": graded_in(pg)}
    return ns


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_loop_on_postgresql_gives_the_grades_of_sqlite(loops):
    for step in ("sqlite grade", "sqlite export", "sqlite feedback", "pg resume", "pg export", "pg feedback"):
        rc, out = loops[step]
        assert rc in (0, 1), f"{step}: {out}"  # 1: some sample is not fully graded, by design
    everyone = set(loops["students"])
    assert set(loops["graded"]["sqlite"]) == everyone
    assert loops["graded"]["postgresql"] == loops["graded"]["sqlite"]
    assert loops["csv"]["postgresql"] == loops["csv"]["sqlite"]
    assert loops["records"]["postgresql"] == loops["records"]["sqlite"]
    assert loops["feedback pages"]["postgresql"] == loops["feedback pages"]["sqlite"] == sorted(everyone)
    assert loops["graded after regrade"] == loops["graded"]  # regrading rewrites the same rows


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_killed_grader_resumes_and_grades_everyone_exactly_once(loops):
    everyone = set(loops["students"])
    committed = set(loops["committed when killed"])
    assert committed and committed < everyone, (committed, loops["killed stderr"])
    # committed means complete: every score of a committed submission is there
    assert all(None not in scores.values() for scores in loops["committed when killed"].values())
    rc, out = loops["pg resume"]
    assert graded_in_table(out) == everyone - committed, out
    assert f"skipped {len(committed)} already graded" in out
    # what was committed before the kill was not graded again: its files are untouched
    assert loops["records after resume"] == loops["records when killed"]
    rc, out = loops["pg again"]  # and a third run finds everyone graded (timestamps compare equal)
    assert graded_in_table(out) == set() and f"skipped {len(everyone)} already graded" in out, out


@pytest.mark.slow
@pytest.mark.sandbox
def test_grading_time_sqlite_vs_postgresql(loops, record_property, capsys):
    seconds = loops["seconds"]
    for name, value in seconds.items():
        record_property(name, round(value, 2))
    with capsys.disabled():
        print("\n" + ", ".join(f"{name}: {value:.1f} s" for name, value in seconds.items())
              + f" ({len(loops['students'])} submissions, 2 workers; the grader was killed after "
              f"{len(loops['committed when killed'])} commits)")
    assert seconds["server start"] < 60


GRADER = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from autograder.course import Course
from autograder.grading.grade import grade_assignment
root, url, assignment, out, go = sys.argv[2:7]
Path(out + ".ready").touch()
while not Path(go).exists():
    time.sleep(0.01)
report = grade_assignment(Course(Path(root), db_url=url), assignment, workers=2, progress=False)
Path(out).write_text(json.dumps({"graded": [r.student for r in report.results],
                                 "skipped": report.skipped_already_graded,
                                 "claimed_elsewhere": report.claimed_elsewhere,
                                 "errors": report.errors}))
"""


@pytest.mark.slow
@pytest.mark.sandbox
def test_two_graders_at_once_grade_each_submission_exactly_once(tmp_path, postgres_server):
    incoming = tmp_path / "incoming"
    url = new_database(postgres_server)
    course = Course(tmp_path / "course", db_url=url)
    students = sorted(build_submissions(A, incoming, course=course))
    rc, out = run_cli("collect", incoming, "-a", A, "--course", course.root, "--db", url)
    assert rc == 0, out
    go = tmp_path / "go"
    outs = [tmp_path / f"grader{i}.json" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-c", GRADER, str(REPO), str(course.root), url, A, str(o), str(go)],
                              env=subprocess_env(), start_new_session=True, stderr=subprocess.PIPE)
             for o in outs]
    try:
        deadline = time.monotonic() + 120
        while not all(Path(f"{o}.ready").exists() for o in outs):  # both imported: start together
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.01)
        go.touch()
        errs = [p.communicate(timeout=300)[1].decode(errors="replace") for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], errs
    reports = [json.loads(o.read_text()) for o in outs]
    graded = [set(r["graded"]) for r in reports]
    assert not graded[0] & graded[1], reports
    assert graded[0] | graded[1] == set(students), reports
    assert all(not r["errors"] for r in reports), reports
    assert set(graded_in(course)) == set(students)

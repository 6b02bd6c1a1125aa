"""What grading one submission costs does not grow with the class (issue 32), counted in
operations, never timed: the SQL statements the grader sends to the gradebook, the statements
among them that scan a table holding a row per student, and the files it opens for writing.

A class of 10 and a class of 40 of the tiny assignment (tests/hostile/fixture.py) are graded,
then regraded with ``force``, each beside a class of one: what a class of n costs beyond the
class of one, divided by n - 1, must be the same for both sizes.
"""

from __future__ import annotations

import collections
import os
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import corpus, fixture  # noqa: E402

from autograder.course import Course  # noqa: E402
from autograder.grading.grade import grade_assignment  # noqa: E402
from autograder.sandbox import Limits  # noqa: E402

LIMITS = Limits(timeout=20, memory=1 << 30, nproc=64)
A = fixture.ASSIGNMENT
# nbgrader's tables that hold a row (or rows) per student
CLASS_TABLES = ("student", "submitted_assignment", "submitted_notebook", "grade", "comment")
_WRITES: list = []   # paths opened for writing while a count is on (the audit hook's list)


def _audit(event: str, args) -> None:
    if event == "open" and _WRITES and isinstance(args[0], (str, bytes, os.PathLike)):
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        mode = args[1] if isinstance(args[1], str) else ""
        if flags & (os.O_WRONLY | os.O_RDWR) or any(c in mode for c in "wax+"):
            _WRITES[0].append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # audit hooks cannot be removed: it does nothing unless _WRITES is set


class Counts:
    """The statements and written files of one grading run in this process."""

    def __init__(self, root: Path):
        self.root = str(root.resolve())
        self.statements: list[tuple[str, object]] = []
        self.files: list[str] = []

    def __enter__(self):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        def on_sql(conn, cursor, statement, parameters, context, executemany):
            first = parameters[0] if executemany and parameters else parameters
            self.statements.append((statement, first))

        self._on_sql = on_sql
        event.listen(Engine, "before_cursor_execute", on_sql)
        _WRITES.append(self.files)
        return self

    def __exit__(self, *exc):
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.remove(Engine, "before_cursor_execute", self._on_sql)
        _WRITES.clear()

    def written(self) -> int:
        """Files opened for writing in the course (the gradebook's own journal aside)."""
        return sum(1 for f in self.files if f.startswith(self.root) and "gradebook.db" not in f)

    def scanning(self, db: Path) -> int:
        """Statements whose SQLite plan scans a table with a row per student."""
        plans: dict[str, bool] = {}
        with sqlite3.connect(db) as conn:
            for statement, params in self.statements:
                if statement not in plans:
                    try:
                        rows = conn.execute("EXPLAIN QUERY PLAN " + statement, params or ()).fetchall()
                    except sqlite3.Error:
                        rows = []
                    plans[statement] = any(
                        f"SCAN {t}" in r[-1] and f"SCAN {t}_" not in r[-1]
                        for r in rows for t in CLASS_TABLES)
        return sum(plans[s] for s, _ in self.statements)


def _class(prepared: Path, where: Path, n: int) -> Path:
    root = fixture.copy_course(prepared, where)
    release = fixture.release_notebook(root)
    honest = list(corpus.honest_submissions(release).values())
    for i in range(n):
        fixture.submit(root, f"s{i:03d}", honest[i % len(honest)][0])
    return root


def _grade(root: Path, force: bool) -> tuple[int, int, int]:
    """(statements, statements that scan a class table, files written) of one run."""
    with Counts(root) as counts:
        report = grade_assignment(Course(root), A, workers=2, limits=LIMITS, progress=False,
                                  force=force)
    assert report.errors == {} and all(r.status == "graded" for r in report.results)
    return len(counts.statements), counts.scanning(root / "gradebook.db"), counts.written()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    return fixture.prepared(tmp_path_factory)


@pytest.mark.sandbox
def test_cost_per_submission_does_not_grow_with_the_class(prepared, tmp_path):
    sizes = (1, 10, 40)
    first, again = {}, {}
    for n in sizes:
        root = _class(prepared, tmp_path / f"class-{n}", n)
        first[n] = _grade(root, force=False)
        again[n] = _grade(root, force=True)   # the regrade path: every row updated
    for runs in (first, again):
        per = {n: tuple((runs[n][k] - runs[1][k]) / (n - 1) for k in range(3)) for n in sizes[1:]}
        assert per[10] == per[40], per                        # statements, scans, files
        statements, scans, files = per[40]
        assert statements > 0 and files > 0, per              # it did count something
        assert scans == 0, per        # no statement made per submission reads the whole class
    # the grader writes per submission: its autograded notebook, timestamp, grading.json and
    # content hash, and its claim file
    assert (first[40][2] - first[1][2]) / 39 == 5
    # the rows it adds get ids that grow with time (autograder.grading.record.row_id): a new
    # row lands at the right edge of its table's B-tree, not at a random page (nbgrader's uuid4)
    db = sqlite3.connect(tmp_path / "class-40" / "gradebook.db")
    for table in ("submitted_assignment", "submitted_notebook", "grade", "comment"):
        ids = [i for (i,) in db.execute(f"SELECT id FROM {table} ORDER BY rowid")]
        assert len(ids) >= 40 and len(set(ids)) == len(ids), table
        assert all(len(i) == 32 and set(i) <= set("0123456789abcdef") for i in ids), table
        assert [i[:12] for i in ids] == sorted(i[:12] for i in ids), table
    db.close()

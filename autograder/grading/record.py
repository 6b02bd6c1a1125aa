"""Grading, stage 4 -- record: a checked submission into files and the gradebook, exactly once.

A submission counts as graded when its scores are committed to the gradebook, every score of
it in the same transaction (:func:`commit_results`; the grader commits a few submissions per
transaction, all or nothing). The autograded notebook and ``grading.json`` (status and
messages) are written before that commit, each through a temporary file and an atomic rename
(:func:`write_files`, :func:`atomic_write`). Killed at any point, the next run skips what was
committed and grades the rest again, with the same result.

:func:`build_record` turns the checker's verdict into those bytes; if anything goes wrong while
scoring or writing up one submission, it becomes that submission's "grader error" record (zero,
flagged) and the rest of the class is graded. Only when even writing it fails (the disk, the
database) is the student left ungraded, for the next run.

The gradebook is nbgrader's (SQLite or PostgreSQL through SQLAlchemy): :func:`ensure_in_gradebook`
makes sure it knows the assignment's test cells, :func:`graded_submissions` says what is
committed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import time
import uuid
from datetime import datetime
from pathlib import Path

from .autograded import autograded_notebook
from .check import grader_error, score
from ..course import DIGEST_FILE, GRADING_RECORD, Where
from .result import GRADED, GRADER_ERROR, SubmissionResult
from .spec import Spec
from .submission import Validation
from ..sandbox import Limits, Outcome


class GradebookMismatch(RuntimeError):
    """The gradebook's test cells for an assignment differ from its notebook's."""


# --- files -------------------------------------------------------------------------------------

def atomic_write(path: Path, data: bytes) -> None:
    """Write ``path`` so that it is either the old file or the complete new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def clean_stale_tmp(folder: Path) -> None:
    """Remove temporary files a killed run left behind in ``folder``."""
    if folder.is_dir():
        for p in folder.glob(".*.tmp-*"):
            try:
                p.unlink()
            except OSError:
                pass


def dump_json(obj) -> bytes:
    """JSON as ASCII: whatever string got this far, the file can always be written. Compact
    (no indent), which lets Python use its C encoder: 10x faster on a notebook."""
    return json.dumps(obj, ensure_ascii=True).encode("ascii")


# --- the record of one submission --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Record:
    """What is written for one graded submission."""

    result: SubmissionResult
    notebook: bytes          # the autograded notebook
    summary: bytes           # grading.json


def build_record(spec: Spec, student: str, validation: Validation | None,
                 outcome: Outcome | None, limits: Limits,
                 failed: tuple[str, BaseException] | None = None) -> Record:
    """Check the answers (:func:`.check.score`, against the numbers ``student`` is graded on,
    drawn here) and write up the autograded notebook.

    ``failed``: (stage, exception) when an earlier stage already failed for this submission.
    Any exception while scoring or writing up becomes a "grader error" record for this
    submission alone; an exception from *that* (should never happen) propagates."""
    stage = failed[0] if failed is not None else "scoring the notebook"
    try:
        if failed is not None:
            raise failed[1]
        if validation is None:  # a caller's bug: only a failed stage leaves no validation
            raise ValueError("no validation of the notebook, and no earlier stage failed")
        result, run_report = score(spec, student, validation, outcome, limits, spec.numbers_for(student))
        stage = "writing the autograded notebook"
        notebook = dump_json(autograded_notebook(spec, validation, result, run_report))
        stage = "writing the grading record"
        return Record(result, notebook, dump_json(result.to_json()))
    except Exception as exc:
        result = grader_error(spec, student, stage, exc)
        empty = Validation(None, GRADER_ERROR, {}, [], [], {})
        notebook = dump_json(autograded_notebook(spec, empty, result, None))
        return Record(result, notebook, dump_json(result.to_json()))


def write_files(where: Where, record: Record, timestamp: datetime | None,
                digest: str | None = None) -> None:
    """The autograded notebook (in ``where.autograded``), its timestamp, ``grading.json`` and
    the graded notebook's SHA-256 (before the gradebook commit). A grading of other content
    than the last one's keeps the last one's record in ``history/`` first."""
    out_dir = where.autograded
    clean_stale_tmp(out_dir)
    keep_history(out_dir, digest)
    atomic_write(out_dir / where.notebook, record.notebook)
    stamp = where.submitted / "timestamp.txt"
    if timestamp is not None and stamp.is_file() and not stamp.is_symlink():
        atomic_write(out_dir / "timestamp.txt", stamp.read_bytes()[:200])
    atomic_write(out_dir / GRADING_RECORD, record.summary)
    if digest is not None:
        atomic_write(out_dir / DIGEST_FILE, digest.encode("ascii") + b"\n")


def keep_history(out_dir: Path, digest: str | None) -> Path | None:
    """Copy the last grading's record (and its hash) to ``history/<time>-<hash>.json`` when the
    notebook now graded has other content; return the copy, or None."""
    old = out_dir / GRADING_RECORD
    try:
        before = (out_dir / DIGEST_FILE).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        before = ""
    if not old.is_file() or digest is None or before == digest:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(old.stat().st_mtime))
    path = out_dir / "history" / f"{stamp}-{(before or 'unhashed')[:12]}.json"
    atomic_write(path, old.read_bytes())
    return path


# --- gradebook ---------------------------------------------------------------------------------

def ensure_in_gradebook(gb, spec: Spec) -> None:
    """Make sure the gradebook knows the assignment's notebook and test cells (as nbgrader's
    ``generate_assignment`` records them); raise :class:`GradebookMismatch` if it knows
    different ones."""
    from nbgrader.api import MissingEntry

    a, name = spec.assignment, Path(spec.notebook).stem
    try:
        gb.find_assignment(a)
    except MissingEntry:
        gb.add_assignment(a)
    try:
        notebook = gb.find_notebook(name, a)
    except MissingEntry:
        kernelspec = spec.source_nb.get("metadata", {}).get("kernelspec", {})
        gb.add_notebook(name, a, kernelspec=json.dumps(kernelspec))
        for cell in spec.source_cells:
            gid = cell.grade_id
            if not gid:
                continue
            if cell.graded:
                gb.update_or_create_grade_cell(gid, name, a, max_score=cell.points,
                                               cell_type=cell.cell_type)
            if cell.solution:
                gb.update_or_create_solution_cell(gid, name, a)
            if cell.graded or cell.solution or cell.locked:
                gb.update_or_create_source_cell(gid, name, a, cell_type=cell.cell_type,
                                                locked=cell.locked or cell.graded, source=cell.source,
                                                checksum=cell.recorded_checksum)
        notebook = gb.find_notebook(name, a)
    recorded = {gc.name: float(gc.max_score) for gc in notebook.grade_cells}
    if recorded != spec.max_scores:
        raise GradebookMismatch(
            f"the gradebook's test cells for {a} {sorted(recorded.items())} differ from "
            f"{spec.notebook}'s {sorted(spec.max_scores.items())}: regenerate the assignment")


def _graded_query(assignment: str):
    from nbgrader.api import Assignment, Grade, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import func, select

    return (select(SubmittedAssignment.student_id, SubmittedAssignment.timestamp,
                   func.count(Grade.id), func.count(Grade.auto_score))
            .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
            .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
            .where(Assignment.name == assignment)
            .group_by(SubmittedAssignment.id))


def graded_submissions(gb, assignment: str, student: str | None = None) -> dict[str, datetime | None]:
    """student -> recorded timestamp, for submissions whose every score is committed
    (only ``student``'s, when given)."""
    from nbgrader.api import SubmittedAssignment

    q = _graded_query(assignment)
    if student is not None:
        q = q.where(SubmittedAssignment.student_id == student)
    out = {}
    for who, ts, n, scored in gb.db.execute(q):
        if n and n == scored:
            out[who] = ts
    gb.db.commit()  # end the read transaction
    return out


def graded_submission(gb, layout: "GradebookLayout", student: str) -> dict[str, datetime | None]:
    """:func:`graded_submissions` for one student, each row found through a unique index, so
    that its cost does not grow with the class: nbgrader's ``grade`` table has no index on
    ``notebook_id`` alone, and the join above scans it (15 rows a student, for every student)."""
    from nbgrader.api import Grade, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import func, select

    s, out = gb.db, {}
    row = s.execute(select(SubmittedAssignment.id, SubmittedAssignment.timestamp).where(
        SubmittedAssignment.assignment_id == layout.assignment_id,
        SubmittedAssignment.student_id == student)).first()
    if row is not None:
        cells = [c for nb in layout.notebooks for c, _ in nb.grade_cells + nb.task_cells]
        notebooks = s.execute(select(SubmittedNotebook.id).where(
            SubmittedNotebook.notebook_id.in_([nb.id for nb in layout.notebooks]),
            SubmittedNotebook.assignment_id == row[0])).scalars().all()
        n = scored = 0
        for nb_id in notebooks:
            rows, with_score = s.execute(select(func.count(Grade.id), func.count(Grade.auto_score))
                                         .where(Grade.notebook_id == nb_id, Grade.cell_id.in_(cells))).one()
            n, scored = n + rows, scored + with_score
        if n and n == scored:
            out[student] = row[1]
    s.commit()  # end the read transaction
    return out


@dataclasses.dataclass(frozen=True)
class NotebookLayout:
    """One notebook of an assignment as the gradebook records it: row ids of its cells."""

    id: str
    grade_cells: tuple[tuple[str, str], ...]     # (cell id, grade_id)
    solution_cells: tuple[str, ...]
    task_cells: tuple[tuple[str, str], ...]      # (cell id, name)


@dataclasses.dataclass(frozen=True)
class GradebookLayout:
    """The gradebook rows an assignment's submissions refer to, read once per run."""

    assignment_id: str
    notebooks: tuple[NotebookLayout, ...]


def gradebook_layout(gb, assignment: str) -> GradebookLayout:
    """Row ids of the assignment, its notebooks and their cells (after ensure_in_gradebook)."""
    from nbgrader.api import Assignment

    row = gb.db.query(Assignment).filter(Assignment.name == assignment).one()
    notebooks = tuple(
        NotebookLayout(nb.id, tuple((c.id, c.name) for c in nb.grade_cells),
                       tuple(c.id for c in nb.solution_cells),
                       tuple((c.id, c.name) for c in nb.task_cells))
        for nb in row.notebooks)
    layout = GradebookLayout(row.id, notebooks)
    gb.db.commit()  # end the read transaction
    return layout


def commit_results(gb, layout: GradebookLayout, results: list[tuple[SubmissionResult, datetime | None]],
                   attempts: int = 5) -> None:
    """Every score of ``results`` (each a submission's result and timestamp) in one transaction:
    all of them are recorded or none is. The grader commits a few submissions at a time (one
    commit costs a disk flush); a submission counts as graded once its transaction commits.

    Retried when the database is busy (another tool holds SQLite's lock) or when another
    grader created the same submission meanwhile; each attempt is all or nothing.
    """
    from sqlalchemy.exc import IntegrityError, OperationalError

    for attempt in range(attempts):
        try:
            for result, timestamp in results:
                _write_rows(gb, layout, result, timestamp)
            gb.db.commit()
            return
        except (IntegrityError, OperationalError):
            gb.db.rollback()
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * 2 ** attempt)
        except BaseException:
            gb.db.rollback()
            raise


def row_id() -> str:
    """A new row id for the gradebook: 32 hex digits, as nbgrader's own ``new_uuid()``, but
    ordered by time: the first 12 are the milliseconds since 1970, the other 20 (80 bits) are
    random, so ids stay unique across runs and graders at once (as a UUID version 7 does).

    nbgrader's ids are random (``uuid4``): each new grade, comment and notebook row lands at a
    random place in its table's B-tree, so a commit rewrites more scattered pages as the class
    grows. Ids that grow with time are appended at the tree's right edge, and the cost per
    submission stays flat (measured in ``autograder/DESIGN.md``)."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


def _write_rows(gb, layout: GradebookLayout, result: SubmissionResult, timestamp) -> None:
    """The rows nbgrader's own autograde writes, with SQL statements rather than ORM objects
    (a class of 2,000 spends its grading time here otherwise): the student if new; the
    submission, its notebooks, a grade per grade and task cell and a comment per solution and
    task cell if new; then every score, ``needs_manual_grade`` cleared where only the grader
    scores, and the notebooks flagged unless the status is "graded" and the notebook held the
    student's own numbers."""
    from nbgrader.api import Comment, Grade, Student, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import and_, bindparam, insert, select, update

    # the session's connection, in the session's transaction: Core statements skip the ORM's
    # execution path (half the cost of each statement here), the rows and the commit are the same
    s, student, scores = gb.db.connection(), result.student, result.scores
    # flagged: not graded cleanly, or graded with numbers the notebook did not hold
    flagged = result.status != GRADED or bool((result.variant or {}).get("problem"))
    if s.execute(select(Student.id).where(Student.id == student)).first() is None:
        s.execute(insert(Student).values(id=student))
    sub_id = s.execute(select(SubmittedAssignment.id).where(
        SubmittedAssignment.assignment_id == layout.assignment_id,
        SubmittedAssignment.student_id == student)).scalar_one_or_none()
    if sub_id is None:
        sub_id = row_id()
        s.execute(insert(SubmittedAssignment).values(
            id=sub_id, assignment_id=layout.assignment_id, student_id=student, timestamp=timestamp))
        grades, comments = [], []
        for nb in layout.notebooks:
            nb_id = row_id()
            s.execute(insert(SubmittedNotebook).values(
                id=nb_id, assignment_id=sub_id, notebook_id=nb.id, flagged=flagged))
            for cell_id, name in nb.grade_cells + nb.task_cells:
                scored = name in scores
                grades.append({"id": row_id(), "notebook_id": nb_id, "cell_id": cell_id,
                               "auto_score": float(scores[name]) if scored else None,
                               "needs_manual_grade": not scored})
            for cell_id in nb.solution_cells + tuple(c for c, _ in nb.task_cells):
                comments.append({"id": row_id(), "notebook_id": nb_id, "cell_id": cell_id})
        if grades:
            s.execute(insert(Grade), grades)
        if comments:
            s.execute(insert(Comment), comments)
    else:
        s.execute(update(SubmittedAssignment).where(SubmittedAssignment.id == sub_id)
                  .values(timestamp=timestamp))
        # each row by a unique index, (notebook_id, assignment_id) and (cell_id, notebook_id):
        # not a scan of the class's rows
        mine = dict(s.execute(select(SubmittedNotebook.notebook_id, SubmittedNotebook.id).where(
            SubmittedNotebook.notebook_id.in_([nb.id for nb in layout.notebooks]),
            SubmittedNotebook.assignment_id == sub_id)).all())
        if mine:
            s.execute(update(SubmittedNotebook.__table__)
                      .where(SubmittedNotebook.__table__.c.id == bindparam("nb"))
                      .values(flagged=flagged), [{"nb": nb} for nb in mine.values()])
        rows = [{"nb": mine[nb.id], "cell": cell_id, "score": float(scores[name])}
                for nb in layout.notebooks if nb.id in mine
                for cell_id, name in nb.grade_cells + nb.task_cells if name in scores]
        if rows:  # one UPDATE run for every row (on the table: plain executemany)
            grade = Grade.__table__.c
            s.execute(update(Grade.__table__)
                      .where(and_(grade.notebook_id == bindparam("nb"), grade.cell_id == bindparam("cell")))
                      .values(auto_score=bindparam("score"),
                              needs_manual_grade=grade.manual_score.is_not(None)), rows)

"""Grading, stage 4 -- record: a checked submission into files and the gradebook, exactly once.

A submission counts as graded when its scores are committed to the gradebook, in one
transaction per submission that writes every score at once (:func:`commit_result`). The
autograded notebook and ``grading.json`` (status and messages) are written before that commit,
each through a temporary file and an atomic rename (:func:`atomic_write`). Killed at any point,
the next run skips what was committed and grades the rest again, with the same result.

:func:`build_record` turns the checker's verdict into those bytes; if anything goes wrong while
scoring or writing up one submission, it becomes that submission's "grader error" record (zero,
flagged) and the rest of the class is graded. :func:`save_record` writes them; only when even
that fails (the disk, the database) is the student left ungraded, for the next run.

The gradebook is nbgrader's (SQLite or PostgreSQL through SQLAlchemy): :func:`ensure_in_gradebook`
makes sure it knows the assignment's test cells, :func:`graded_submissions` says what is
committed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from datetime import datetime
from pathlib import Path

from . import checker
from .checker import GRADED, SubmissionResult
from .course import GRADING_RECORD, Course
from .sandbox import Limits, Outcome


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
    """JSON as ASCII: whatever string got this far, the file can always be written."""
    return json.dumps(obj, indent=1, ensure_ascii=True).encode("ascii")


# --- the record of one submission --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Record:
    """What is written for one graded submission."""

    result: SubmissionResult
    notebook: bytes          # the autograded notebook
    summary: bytes           # grading.json


def build_record(spec: checker.Spec, student: str, validation: checker.Validation | None,
                 outcome: Outcome | None, limits: Limits,
                 failed: tuple[str, BaseException] | None = None) -> Record:
    """Check the answers (:func:`checker.score`) and write up the autograded notebook.

    ``failed``: (stage, exception) when an earlier stage already failed for this submission.
    Any exception while scoring or writing up becomes a "grader error" record for this
    submission alone; an exception from *that* (should never happen) propagates."""
    stage = failed[0] if failed is not None else "scoring the notebook"
    try:
        if failed is not None:
            raise failed[1]
        result, run_report = checker.score(spec, student, validation, outcome, limits)
        stage = "writing the autograded notebook"
        notebook = dump_json(checker.autograded_notebook(spec, validation, result, run_report))
        stage = "writing the grading record"
        return Record(result, notebook, dump_json(result.to_json()))
    except Exception as exc:
        result = checker.grader_error(spec, student, stage, exc)
        empty = checker.Validation(None, checker.GRADER_ERROR, {}, [], [], {})
        notebook = dump_json(checker.autograded_notebook(spec, empty, result, None))
        return Record(result, notebook, dump_json(result.to_json()))


def save_record(course: Course, gb, spec: checker.Spec, record: Record,
                timestamp: datetime | None) -> None:
    """The autograded notebook, its timestamp and ``grading.json``, then the gradebook commit."""
    student, assignment = record.result.student, spec.assignment
    out_dir = course.autograded(student, assignment)
    clean_stale_tmp(out_dir)
    atomic_write(out_dir / spec.notebook, record.notebook)
    stamp = course.submitted(student, assignment) / "timestamp.txt"
    if timestamp is not None and stamp.is_file() and not stamp.is_symlink():
        atomic_write(out_dir / "timestamp.txt", stamp.read_bytes()[:200])
    atomic_write(out_dir / GRADING_RECORD, record.summary)
    commit_result(gb, spec, record.result, timestamp)


# --- gradebook ---------------------------------------------------------------------------------

def ensure_in_gradebook(gb, spec: checker.Spec) -> None:
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
        for cell in spec.source_nb.get("cells", []):
            nbg = checker._nbg(cell)
            gid = nbg.get("grade_id")
            if not gid:
                continue
            if nbg.get("grade"):
                gb.update_or_create_grade_cell(gid, name, a, max_score=float(nbg.get("points", 0)),
                                               cell_type=cell.get("cell_type"))
            if nbg.get("solution"):
                gb.update_or_create_solution_cell(gid, name, a)
            if nbg.get("grade") or nbg.get("solution") or nbg.get("locked"):
                gb.update_or_create_source_cell(gid, name, a, cell_type=cell.get("cell_type"),
                                                locked=bool(nbg.get("locked") or nbg.get("grade")),
                                                source=checker._text(cell.get("source")),
                                                checksum=nbg.get("checksum"))
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


def commit_result(gb, spec: checker.Spec, result: SubmissionResult, timestamp,
                  attempts: int = 5) -> None:
    """All of a submission's scores in one transaction (created if need be).

    Retried when the database is busy (another tool holds SQLite's lock) or when another
    grader created the same submission meanwhile; each attempt is all or nothing.
    """
    from sqlalchemy.exc import IntegrityError, OperationalError

    for attempt in range(attempts):
        try:
            return _commit_once(gb, spec, result, timestamp)
        except (IntegrityError, OperationalError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.2 * 2 ** attempt)


def _commit_once(gb, spec: checker.Spec, result: SubmissionResult, timestamp) -> None:
    from nbgrader.api import (Assignment, Comment, Grade, Student, SubmittedAssignment,
                              SubmittedNotebook)

    s = gb.db
    try:
        assignment = s.query(Assignment).filter(Assignment.name == spec.assignment).one()
        student = s.get(Student, result.student)
        if student is None:
            student = Student(id=result.student)
            s.add(student)
        sub = (s.query(SubmittedAssignment)
               .filter(SubmittedAssignment.assignment_id == assignment.id,
                       SubmittedAssignment.student_id == result.student).one_or_none())
        if sub is None:
            with s.no_autoflush:
                new = [SubmittedAssignment(assignment=assignment, student=student)]
                for notebook in list(assignment.notebooks):
                    nb = SubmittedNotebook(notebook=notebook, assignment=new[0])
                    new.append(nb)
                    for cell in list(notebook.grade_cells):
                        new.append(Grade(cell_id=cell.id, notebook=nb))
                    for cell in list(notebook.solution_cells):
                        new.append(Comment(cell_id=cell.id, notebook=nb))
                    for cell in list(notebook.task_cells):
                        new.append(Comment(cell_id=cell.id, notebook=nb))
                        new.append(Grade(cell_id=cell.id, notebook=nb))
                s.add_all(new)
            s.flush()
            sub = new[0]
        sub.timestamp = timestamp
        for nb in sub.notebooks:
            nb.flagged = result.status != GRADED
            for grade in nb.grades:
                if grade.name in result.scores:
                    grade.auto_score = float(result.scores[grade.name])
                    grade.needs_manual_grade = grade.manual_score is not None
        s.commit()
    except BaseException:
        s.rollback()
        raise

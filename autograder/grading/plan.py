"""Grading, stage 1 -- plan: which submissions to grade in this run, and how to read them.

A submission is ``submitted/<student>/<assignment>/<assignment>.ipynb`` (nbgrader's layout)
with an optional ``timestamp.txt``. :func:`plan_grading` sorts the class into

- ``todo``: not graded yet, or resubmitted since, or ``force``. A resubmission is a notebook
  whose content changed since it was graded: its SHA-256 differs from the one recorded beside
  the autograded notebook (``submission.sha256``); a grading from before such hashes were kept
  falls back on ``timestamp.txt``. These are also listed in ``resubmitted``;
- ``skipped``: graded by an earlier run and unchanged (their recorded results are loaded, so a
  report still shows the whole class);
- ``unreadable``: a folder name that cannot be a gradebook id (not UTF-8).

:func:`read_submission` reads a notebook's bytes without following links out of the course.
Nothing here changes a file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from datetime import datetime
from pathlib import Path

from ..course import DIGEST_FILE, GRADING_RECORD, Course, Where
from .result import SubmissionResult
from .submission import MAX_NOTEBOOK_BYTES


@dataclasses.dataclass(frozen=True)
class Task:
    """One submission to grade: who, the time it was submitted (None: not recorded), and where
    its files are, so that opening it once claimed (:func:`open_task`) needs nothing more."""

    student: str
    timestamp: datetime | None
    digest: str | None         # SHA-256 of the notebook when planned
    where: Where


@dataclasses.dataclass
class Plan:
    todo: list[Task]
    skipped: list[str]                          # graded before and unchanged
    previous: list[SubmissionResult]            # ... their recorded results
    unreadable: dict[str, str]                  # ascii(folder name) -> why it cannot be graded
    resubmitted: list[str] = dataclasses.field(default_factory=list)  # graded before, content changed


def unchanged(recorded: datetime | None, submitted: datetime | None, *, graded_digest: str | None = None,
              digest: str | None = None) -> bool:
    """Whether a graded submission is still the one on disk: the same content hash when the
    grading recorded one, else (older gradings) the same timestamp (none counts as same)."""
    if graded_digest is not None and digest is not None:
        return graded_digest == digest
    return submitted is None or recorded is None or submitted == recorded


def notebook_digest(where: Where) -> str | None:
    import hashlib

    data, _ = read_submission(where)
    return None if data is None else hashlib.sha256(data).hexdigest()


def graded_digest(where: Where) -> str | None:
    path = where.autograded / DIGEST_FILE
    try:
        text = path.read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 64 else None


def plan_grading(submissions: dict[str, Where], done_before: dict[str, datetime | None], *,
                 students: list[str] | None = None, force: bool = False) -> Plan:
    """Sort the class's submissions (student -> files, from ``GradingFiles.submissions``) into
    to-do, already graded, and unreadable; ``done_before`` is what the gradebook holds as
    graded (student -> recorded timestamp, from :func:`.record.graded_submissions`)."""
    everyone = list(submissions)
    if students is not None:
        wanted = set(students)
        everyone = [s for s in everyone if s in wanted]
    unreadable = {}
    for s in everyone:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # a folder name that is not UTF-8: no gradebook id
            unreadable[ascii(s)] = "the submission folder's name is not UTF-8 text: rename it"
    everyone = [s for s in everyone if ascii(s) not in unreadable]
    todo, skipped, resubmitted = [], [], []
    for s in everyone:
        where = submissions[s]
        ts = timestamp_in(where.submitted)
        digest = notebook_digest(where)
        same = s in done_before and unchanged(done_before[s], ts, graded_digest=graded_digest(where),
                                              digest=digest)
        if not force and same:
            skipped.append(s)
        else:
            todo.append(Task(s, ts, digest, where))
            if s in done_before and not same:
                resubmitted.append(s)
    previous = [r for r in (read_result(submissions[s].autograded) for s in skipped) if r]
    return Plan(todo, skipped, previous, unreadable, resubmitted)


@dataclasses.dataclass(frozen=True)
class Opened:
    """A claimed task looked at again: graded meanwhile by another grader (``previous``: its
    recorded result, if readable), or its notebook (``data``, else ``why`` not, or ``failed``:
    what reading it raised)."""

    graded_meanwhile: bool
    previous: SubmissionResult | None = None
    data: bytes | None = None
    why: str | None = None
    failed: Exception | None = None


def open_task(task: Task, done_now: dict[str, datetime | None] | None) -> Opened:
    """The plan's last word on one submission, once it is claimed: whether another grader
    recorded ``task`` since the plan was made (``done_now``: what the gradebook holds as graded
    for this student now, from :func:`.record.graded_submission`; None with ``force``, when
    that does not count), else its notebook's bytes. Reading's errors stay with the task."""
    if done_now is not None and task.student in done_now and unchanged(
            done_now[task.student], task.timestamp, digest=task.digest,
            graded_digest=graded_digest(task.where)):
        return Opened(True, previous=read_result(task.where.autograded))
    try:
        data, why = read_submission(task.where)
    except Exception as exc:  # an input reading did not foresee: this submission only
        return Opened(False, failed=exc)
    return Opened(False, data=data, why=why)


def read_submission(where: Where) -> tuple[bytes | None, str | None]:
    """The submitted notebook's bytes, or (None, why not). Never follows links out of it."""
    folder, notebook = where.submitted, where.notebook
    try:
        real = folder.resolve(strict=True)
    except OSError:
        return None, "no submission folder"
    if real != where.resolved:
        return None, "the submission folder is a link to somewhere else"
    path = folder / notebook
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, f"there is no {notebook} in the submission"
    except OSError as exc:
        return None, f"{notebook} cannot be read ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, f"{notebook} is not a regular file"
        chunks, size = [], 0
        while size <= MAX_NOTEBOOK_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), None
    finally:
        os.close(fd)


def read_timestamp(course: Course, student: str, assignment: str) -> datetime | None:
    """The submission's ``timestamp.txt`` as a UTC time, or None (missing, a link, garbage)."""
    return timestamp_in(course.submitted(student, assignment))


def timestamp_in(submitted: Path) -> datetime | None:
    """The ``timestamp.txt`` in a ``submitted`` folder as a UTC time, or None (missing, a
    link, garbage)."""
    from nbgrader.utils import parse_utc

    path = submitted / "timestamp.txt"
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 200:
            return parse_utc(path.read_text("utf-8").strip())
    except (OSError, ValueError, OverflowError):
        pass
    return None


def load_result(course: Course, student: str, assignment: str) -> SubmissionResult | None:
    """The result recorded by the last grading of this submission (``grading.json``)."""
    return read_result(course.autograded(student, assignment))


def read_result(autograded: Path) -> SubmissionResult | None:
    """The result recorded in an ``autograded`` folder (its ``grading.json``), or None."""
    path = autograded / GRADING_RECORD
    try:
        return SubmissionResult.from_json(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None

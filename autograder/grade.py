"""Grade every submission of an assignment: parallel, sandboxed, tamper-proof, resumable.

``grade_assignment(course, assignment)`` is the API (the CLI in ``autograder/__main__.py``
calls it). How one submission is graded is in ``DESIGN.md`` and ``checker.py``; this module
runs many of them and records the results:

- **Parallel.** Each submission's code runs in its own sandbox (``sandbox.py``), by default
  a pool of ``os.cpu_count()`` workers on this machine, each with a pre-imported template that
  forks a fresh, isolated child per submission; or on a Dask cluster (``scheduler=
  "tcp://host:port"``) whose workers run the same sandbox and return the raw (untrusted)
  output. Validation, checking and recording always happen here, in this process.
- **Resumable, exactly once.** A submission counts as graded when its scores are committed
  to the gradebook, in one transaction per submission that writes every score at once. The
  autograded notebook (and ``grading.json``, the status and messages) are written before that
  commit, each via a temporary file and an atomic rename. Killed at any point, a rerun skips
  what was committed and grades the rest; what was half-done is simply done again, with the
  same result (the grading is deterministic given the submission).
- **One submission cannot stop the others.** Whatever goes wrong while validating, scoring
  or writing up one submission stays with that submission: it is recorded with the status
  "grader error" (zero, flagged in the gradebook, so a rerun does not retry it forever; fix
  and grade it again with ``--force``), and the rest of the class is graded. Only when the
  result cannot be *recorded* at all (the disk, the database) is the student left ungraded,
  in ``report.errors``, and retried by the next run.
- **Nothing lost.** Submissions are only read, never modified.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import os
import queue
import stat
import sys
import threading
import time
import uuid
from pathlib import Path

from . import checker
from .checker import GRADED, SpecError, SubmissionResult  # noqa: F401  (re-exported)
from .course import GRADING_RECORD, REPO, SOLUTIONS, Course
from .sandbox import Limits, check_sandbox, make_sandbox

__all__ = ["grade_assignment", "GradeReport", "SubmissionResult", "GradingError", "Limits"]


class GradingError(RuntimeError):
    """Grading cannot start (no sandbox, gradebook and notebooks disagree, ...)."""


@dataclasses.dataclass
class GradeReport:
    assignment: str
    results: list[SubmissionResult]                 # graded in this run
    skipped_already_graded: list[str]               # students graded by an earlier run
    previous: list[SubmissionResult] = dataclasses.field(default_factory=list)  # ... their results
    errors: dict[str, str] = dataclasses.field(default_factory=dict)  # not recorded: retried next run
    workers: int = 0
    sandbox: str = ""
    wall: float = 0.0

    def by_student(self) -> dict[str, SubmissionResult]:
        return {r.student: r for r in [*self.previous, *self.results]}


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


def _clean_stale_tmp(folder: Path) -> None:
    if folder.is_dir():
        for p in folder.glob(".*.tmp-*"):
            try:
                p.unlink()
            except OSError:
                pass


def read_submission(course: Course, student: str, assignment: str) -> tuple[bytes | None, str | None]:
    """The submitted notebook's bytes, or (None, why not). Never follows links out of it."""
    folder = course.submitted(student, assignment)
    base = (Path(course.root) / "submitted").resolve()
    try:
        real = folder.resolve(strict=True)
    except OSError:
        return None, "no submission folder"
    if real != base / student / assignment:
        return None, "the submission folder is a link to somewhere else"
    path = folder / f"{assignment}.ipynb"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, f"there is no {assignment}.ipynb in the submission"
    except OSError as exc:
        return None, f"{assignment}.ipynb cannot be read ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, f"{assignment}.ipynb is not a regular file"
        chunks, size = [], 0
        while size <= checker.MAX_NOTEBOOK_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), None
    finally:
        os.close(fd)


def read_timestamp(course: Course, student: str, assignment: str):
    from nbgrader.utils import parse_utc

    path = course.submitted(student, assignment) / "timestamp.txt"
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 200:
            return parse_utc(path.read_text("utf-8").strip())
    except (OSError, ValueError, OverflowError):
        pass
    return None


def load_result(course: Course, student: str, assignment: str) -> SubmissionResult | None:
    """The result recorded by the last grading of this submission (``grading.json``)."""
    path = course.autograded(student, assignment) / GRADING_RECORD
    try:
        return SubmissionResult.from_json(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- gradebook ---------------------------------------------------------------------------------

def ensure_in_gradebook(gb, spec: checker.Spec) -> None:
    """Make sure the gradebook knows the assignment's notebook and test cells (as nbgrader's
    ``generate_assignment`` records them); refuse to grade if it knows different ones."""
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
        raise GradingError(
            f"the gradebook's test cells for {a} {sorted(recorded.items())} differ from "
            f"{spec.notebook}'s {sorted(spec.max_scores.items())}: regenerate the assignment")


def graded_submissions(gb, assignment: str) -> dict[str, object]:
    """student -> recorded timestamp, for submissions whose every score is committed."""
    from nbgrader.api import Assignment, Grade, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import func, select

    q = (select(SubmittedAssignment.student_id, SubmittedAssignment.timestamp,
                func.count(Grade.id), func.count(Grade.auto_score))
         .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
         .join(SubmittedNotebook, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
         .join(Grade, Grade.notebook_id == SubmittedNotebook.id)
         .where(Assignment.name == assignment)
         .group_by(SubmittedAssignment.id))
    out = {}
    for student, ts, n, scored in gb.db.execute(q):
        if n and n == scored:
            out[student] = ts
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


# --- progress ----------------------------------------------------------------------------------

class Progress:
    """``grading hw1-rooflines: 120/2000 (6%) 3.1/s ETA 10m05s`` on stderr."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream=None):
        self.total, self.label, self.enabled = total, label, enabled and total > 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.done = 0

    @staticmethod
    def _dur(sec: float) -> str:
        sec = int(round(sec))
        h, rem = divmod(sec, 3600)
        m, s = divmod(rem, 60)
        return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")

    def line(self) -> str:
        el = time.monotonic() - self.t0
        rate = self.done / el if el > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        pct = 100 * self.done // max(1, self.total)
        eta_s = self._dur(eta) if eta == eta else "?"
        return (f"grading {self.label}: {self.done}/{self.total} ({pct}%) "
                f"{rate:.2f}/s elapsed {self._dur(el)} ETA {eta_s}")

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < (0.2 if self.tty else 5.0) and done < self.total:
            return
        self.last = now
        self.printed = done
        if self.tty:
            self.stream.write("\r" + self.line() + "  ")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and (self.tty or getattr(self, "printed", -1) != self.done):
            self.stream.write(("\r" + self.line() if self.tty else self.line()) + "\n")
            self.stream.flush()


# --- running -----------------------------------------------------------------------------------

def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _dump(obj) -> bytes:
    """JSON as ASCII: whatever string got this far, the file can always be written."""
    return json.dumps(obj, indent=1, ensure_ascii=True).encode("ascii")


def forbidden_paths(course: Course | None = None) -> list[Path]:
    """What no sandbox bind may contain: the course, the solutions, the repository."""
    out = [SOLUTIONS, REPO]
    if course is not None:
        out.append(Path(course.root))
    return [p.resolve() for p in out]


class _LocalRunner:
    """Sandboxes on this machine, one per worker thread."""

    def __init__(self, workers: int, kind: str, forbidden: list[Path], limits: Limits):
        self.limits = limits
        self.cancel = threading.Event()
        self.pool: queue.SimpleQueue = queue.SimpleQueue()
        self.sandboxes = [make_sandbox(kind, forbidden) for _ in range(workers)]
        for sb in self.sandboxes:
            self.pool.put(sb)
        self.executor = cf.ThreadPoolExecutor(workers, thread_name_prefix="grade")
        self.capacity = 2 * workers

    def _run(self, job: dict):
        sb = self.pool.get()
        try:
            return sb.run(job, self.limits, self.cancel)
        finally:
            self.pool.put(sb)

    def submit(self, student: str, job: dict) -> cf.Future:
        return self.executor.submit(self._run, job)

    def as_completed(self, futures):
        return cf.as_completed(futures)

    def wait_any(self, futures: set) -> set:
        done, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
        return done

    def close(self, abort: bool = False) -> None:
        if abort:
            self.cancel.set()
        self.executor.shutdown(wait=True, cancel_futures=abort)
        for sb in self.sandboxes:
            sb.close()


class _DaskRunner:
    """Sandboxes on the workers of a Dask cluster; the results come back here."""

    def __init__(self, scheduler: str, kind: str, limits: Limits):
        from distributed import Client

        self.client = Client(scheduler, timeout="30s", set_as_default=False)
        self.kind, self.limits = kind, limits
        info = self.client.scheduler_info()
        threads = sum(w.get("nthreads", 1) for w in info.get("workers", {}).values())
        if threads == 0:
            self.client.close()
            raise GradingError(f"the Dask cluster at {scheduler} has no workers")
        self.capacity = 2 * threads
        self.workers = threads
        self.completed = None

    def submit(self, student: str, job: dict):
        from .sandbox import run_remote

        fut = self.client.submit(run_remote, job, self.limits, self.kind, pure=False,
                                 key=f"grade-{student}-{uuid.uuid4().hex}")
        if self.completed is None:
            from distributed import as_completed

            self.completed = as_completed([fut], loop=self.client.loop)
        else:
            self.completed.add(fut)
        return fut

    def wait_any(self, futures: set) -> set:
        done = {next(self.completed)}
        done.update(self.completed.next_batch(block=False))
        return done & futures

    def close(self, abort: bool = False) -> None:
        try:
            self.client.close()
        except Exception:
            pass


def check_solutions(spec: checker.Spec, limits: Limits, run) -> SubmissionResult:
    """Grade the instructor's solutions (``run(job)`` runs a job in a sandbox); raise
    :class:`GradingError` unless they get full marks."""
    validation = checker.validate(spec, checker.solution_submission(spec))
    try:
        outcome = run(validation.job(limits))
    except Exception as exc:
        raise GradingError(f"the sandbox failed on the instructor's solutions: {exc}") from exc
    if outcome.error:
        raise GradingError(f"the sandbox failed on the instructor's solutions: {outcome.error}")
    result, _ = checker.score(spec, "(instructor's solutions)", validation, outcome, limits)
    bad = {g: result.messages.get(g, "") for g, p in result.scores.items() if p != result.max_scores[g]}
    if result.status != GRADED or bad:
        detail = "; ".join(f"{g}: {m}" for g, m in bad.items()) or "; ".join(result.problems)
        raise GradingError(f"the instructor's own solutions to {spec.assignment} do not pass its "
                           f"tests when graded ({result.status}): {detail}")
    return result


def grade_assignment(course: Course, assignment: str, *, workers: int | None = None,
                     scheduler: str | None = None, timeout: float | None = None,
                     progress: bool = True, students: list[str] | None = None,
                     limits: Limits | None = None, sandbox: str = "template",
                     force: bool = False, self_check: bool = True) -> GradeReport:
    """Grade every submission of ``assignment`` not graded yet; see the module docstring.

    ``workers``: local sandboxes in parallel (default: one per core). ``scheduler``: a Dask
    scheduler address; the students' code then runs on its workers. ``timeout``: wall-clock
    seconds per notebook (default ``Limits.timeout``). ``students``: only these. ``force``:
    grade again even what is already graded. ``sandbox``: ``"template"`` or ``"fresh"``.
    ``self_check``: first grade the instructor's own solutions, through the same sandbox and
    checks, and refuse to go on unless they get full marks (a broken or non-self-contained test
    cell would otherwise give 2,000 students a zero).
    """
    from nbgrader.api import Gradebook

    t0 = time.monotonic()
    try:
        spec = checker.load_spec(course, assignment)
    except SpecError as exc:
        raise GradingError(str(exc)) from None
    limits = limits or Limits()
    if timeout is not None:
        limits = dataclasses.replace(limits, timeout=float(timeout))
    forbidden = forbidden_paths(course)
    if scheduler is None:
        why = check_sandbox()
        if why is not None:
            raise GradingError(f"the grading sandbox does not work here: {why}")

    from .course import ensure_tools_on_path

    ensure_tools_on_path()
    gb = Gradebook(course.gradebook_url)
    runner = None
    try:
        ensure_in_gradebook(gb, spec)
        done_before = graded_submissions(gb, assignment)
        base = Path(course.root) / "submitted"
        everyone = sorted(p.name for p in base.iterdir()
                          if not p.name.startswith(".") and (p / assignment).is_dir()) if base.is_dir() else []
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
        todo, skipped = [], []
        for s in everyone:
            ts = read_timestamp(course, s, assignment)
            if not force and s in done_before and (ts is None or done_before[s] is None
                                                   or ts == done_before[s]):
                skipped.append(s)
            else:
                todo.append((s, ts))
        report = GradeReport(assignment, [], skipped,
                             [r for r in (load_result(course, s, assignment) for s in skipped) if r],
                             errors=unreadable)
        if not todo:
            report.wall = time.monotonic() - t0
            return report
        if scheduler is not None:
            runner = _DaskRunner(scheduler, sandbox, limits)
            report.workers = runner.workers
        else:
            n = workers or default_workers()
            runner = _LocalRunner(n, sandbox, forbidden, limits)
            report.workers = n
        report.sandbox = sandbox if scheduler is None else f"{sandbox} on dask {scheduler}"
        if self_check:
            check_solutions(spec, limits, lambda job: runner.submit("(solutions)", job).result())
        bar = Progress(len(todo), assignment, progress)

        pending: dict = {}
        queue_ = list(reversed(todo))

        def record(student, ts, validation, outcome, failed=None):
            """Score, write up and commit one submission. An exception here is this submission's
            alone: it becomes its "grader error" record, or, if even that cannot be written,
            an entry in ``report.errors``. ``failed``: (stage, exception) from before."""
            try:
                if failed is not None:
                    raise failed[1]
                stage = "scoring the notebook"
                result, rep = checker.score(spec, student, validation, outcome, limits)
                stage = "writing the autograded notebook"
                nb_bytes = _dump(checker.autograded_notebook(spec, validation, result, rep))
                stage = "writing the grading record"
                result_bytes = _dump(result.to_json())
            except Exception as exc:
                try:
                    stage_ = failed[0] if failed is not None else stage
                    result = checker.grader_error(spec, student, stage_, exc)
                    empty = checker.Validation(None, checker.GRADER_ERROR, {}, [], [], {})
                    nb_bytes = _dump(checker.autograded_notebook(spec, empty, result, None))
                    result_bytes = _dump(result.to_json())
                except Exception as exc2:
                    report.errors[student] = f"the grader failed: {type(exc2).__name__}: {exc2}"[:500]
                    return
            try:
                out_dir = course.autograded(student, assignment)
                _clean_stale_tmp(out_dir)
                atomic_write(out_dir / spec.notebook, nb_bytes)
                stamp = course.submitted(student, assignment) / "timestamp.txt"
                if ts is not None and stamp.is_file() and not stamp.is_symlink():
                    atomic_write(out_dir / "timestamp.txt", stamp.read_bytes()[:200])
                atomic_write(out_dir / GRADING_RECORD, result_bytes)
                commit_result(gb, spec, result, ts)
            except Exception as exc:  # the disk, the database: not the submission's doing
                report.errors[student] = (f"the result could not be recorded ({type(exc).__name__}: "
                                          f"{exc}); it is graded again by the next run")[:500]
                return
            report.results.append(result)

        completed = 0
        while queue_ or pending:
            while queue_ and len(pending) < runner.capacity:
                student, ts = queue_.pop()
                try:
                    data, why = read_submission(course, student, assignment)
                    validation = checker.validate(spec, data, missing=why)
                    job = validation.job(limits)
                except Exception as exc:  # an input validation did not foresee: this one only
                    record(student, ts, None, None, failed=("reading the notebook", exc))
                    completed += 1
                    bar.update(completed)
                    continue
                if validation.invalid is not None or not validation.steps:
                    record(student, ts, validation, None)
                    completed += 1
                    bar.update(completed)
                    continue
                try:
                    fut = runner.submit(student, job)
                except Exception as exc:  # the pool or the cluster, not the submission
                    report.errors[student] = (f"the sandbox could not be started: "
                                              f"{type(exc).__name__}: {exc}")[:500]
                    completed += 1
                    bar.update(completed)
                    continue
                pending[fut] = (student, ts, validation)
            if not pending:
                continue
            for fut in runner.wait_any(set(pending)):
                student, ts, validation = pending.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # the grader's fault, not the student's: not recorded
                    report.errors[student] = f"{type(exc).__name__}: {exc}"
                    outcome = None
                if outcome is not None and outcome.error:
                    report.errors[student] = outcome.error
                    outcome = None
                if outcome is not None:
                    record(student, ts, validation, outcome)
                completed += 1
                bar.update(completed)
        bar.close()
        runner.close()
        runner = None
    except BaseException:
        if runner is not None:
            runner.close(abort=True)
        raise
    finally:
        gb.close()
    report.wall = time.monotonic() - t0
    return report

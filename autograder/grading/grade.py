"""Grade every submission of an assignment: parallel, sandboxed, tamper-proof, resumable.

``grade_assignment(course, assignment)`` is the API (``python -m autograder grade`` calls it).
Grading a class is five stages, each in a module of its own:

1. **plan** (``plan.py``): which submissions this run grades -- new, resubmitted, or all with
   ``force`` -- and which were graded before and are unchanged.
2. **run** (``run.py``, ``../sandbox/``): each submission's code in a sandbox
   of its own, many at once on this machine or on a Dask cluster; what comes back is untrusted.
   Before it runs, ``submission.validate`` (``submission.py``) parses the notebook as data
   and plans the run against the instructor's notebook, read once into a ``Spec``
   (``spec.py``; ``names.py`` finds each test cell's answer names).
3. **check** (``check.py``): the answers that came back, judged here by the instructor's
   test cells into a ``SubmissionResult`` (``result.py``); the autograded copy is written up
   (``autograded.py``, by ``record.build_record``).
4. **record** (``record.py``): files, then the gradebook, a few submissions per transaction
   (all or nothing); a submission counts as graded once its transaction commits.
5. **report** (this module's :class:`GradeReport`, shown by ``cli.render_grade_summary``):
   what was graded, skipped, claimed by another grader, or could not be recorded.

Guarantees, and where they are kept:

- **Exactly once, resumable.** Each submission is claimed (``claims.py``) before it is graded,
  so two graders started at once on one gradebook never grade the same submission; a claim
  dies with its process. Killed at any point, a rerun skips what was committed and grades the
  rest; what was half-done is done again, with the same result (grading is deterministic).
- **One submission cannot stop the others.** Whatever goes wrong while reading, scoring or
  writing up one submission becomes its "grader error" record (zero, flagged; ``force`` grades
  it again once fixed). Only what cannot be *recorded* at all (the disk, the database) is left
  in ``report.errors`` and retried by the next run.
- **Nothing lost.** Submissions are only read, never modified.
- **The tests are checked first.** Unless ``self_check=False``, the instructor's own solutions
  (``submission.solution_submission``) go through the same sandbox and checks, and must get
  full marks (``check.check_solutions``) before any student is graded.

:func:`grade_assignment` is these stages as a line: it reads the course once, into plain values
(``course.GradingFiles``), and hands each stage what it needs of them; no stage reaches back
into the course, and the path goes down through the stages once.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import sys
import time

from .check import SolutionsFail, check_solutions
from .claims import open_claims
from ..course import Course, ensure_tools_on_path, open_gradebook
from .plan import Task, open_task, plan_grading
from .record import (GradebookMismatch, build_record, commit_results, ensure_in_gradebook,
                     gradebook_layout, graded_submission, graded_submissions, write_files)
from .result import GRADED, SubmissionResult
from .run import RunnerError, start_runner
from ..sandbox import Limits, check_sandbox, memory_cap
from .spec import SELF_CHECK_STUDENT, Spec, SpecError, load_spec
from .submission import Validation, solution_submission, validate

__all__ = ["grade_assignment", "GradeReport", "SubmissionResult", "GradingError", "Limits",
           "progress_bar"]


class GradingError(RuntimeError):
    """Grading cannot start (no sandbox, gradebook and notebooks disagree, ...)."""


@dataclasses.dataclass
class GradeReport:
    assignment: str
    results: list[SubmissionResult]                 # graded in this run
    skipped_already_graded: list[str]               # students graded by an earlier run
    previous: list[SubmissionResult] = dataclasses.field(default_factory=list)  # ... their results
    errors: dict[str, str] = dataclasses.field(default_factory=dict)  # not recorded: retried next run
    claimed_elsewhere: list[str] = dataclasses.field(default_factory=list)  # another grader has them
    resubmitted: list[str] = dataclasses.field(default_factory=list)  # regraded: content changed
    workers: int = 0
    sandbox: str = ""
    memory_cap: str = ""                            # which memory cap held each submission
    wall: float = 0.0

    def by_student(self) -> dict[str, SubmissionResult]:
        return {r.student: r for r in [*self.previous, *self.results]}


@contextlib.contextmanager
def progress_bar(total: int, label: str, enabled: bool = True, stream=None):
    """A progress bar on stderr (rich's): ``grading hw1 ━━━━━╸  120/2000  6% 0:00:40 0:10:05``.

    Yields ``advance()``; on a terminal the bar redraws in place, elsewhere (a CI log) only the
    final line is printed. Disabled, it does not import rich (20 ms of a grader's start)."""
    if not enabled or total == 0:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn,
                               TextColumn, TimeElapsedColumn, TimeRemainingColumn)

    console = Console(file=stream or sys.stderr, highlight=False)
    columns = (TextColumn(f"grading {label}", markup=False), BarColumn(), MofNCompleteColumn(),
               TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, refresh_per_second=5) as bar:
        task = bar.add_task(label, total=total)
        yield lambda: bar.advance(task)


def course_spec(course: Course, assignment: str) -> Spec:
    """The assignment's :class:`~.spec.Spec` from ``course``'s files: its instructor and
    release notebooks, and, for a homework with per-student numbers, the course's secret
    (for the tools that judge one notebook outside a grading run)."""
    files = course.grading_files(assignment)
    return load_spec(assignment, files.source_notebook, files.release_notebook, files.secret)


def sandbox_check_started(scheduler: str | None) -> cf.Future | None:
    """:func:`..sandbox.check_sandbox` started in a thread of its own (it waits on a sandboxed
    Python), None for a Dask cluster (its workers check their own)."""
    if scheduler is not None:
        return None
    pool = cf.ThreadPoolExecutor(1, thread_name_prefix="check")
    started = pool.submit(check_sandbox)
    pool.shutdown(wait=False)  # its one thread ends when the check does
    return started


# what stops a grading run before any student is graded, said to the instructor as it is
CANNOT_START = (RunnerError, SpecError, GradebookMismatch, SolutionsFail)


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
    ``self_check``: first grade the instructor's own solutions (see the module docstring).
    """
    t0 = time.monotonic()
    limits = limits or Limits()
    if timeout is not None:
        limits = dataclasses.replace(limits, timeout=float(timeout))
    ensure_tools_on_path()
    files = course.grading_files(assignment)
    runner = None
    try:
        # The sandboxes get ready (a template imports numpy, matplotlib, scalebook) while this
        # process checks that a sandbox works here and reads the notebooks and the gradebook;
        # none start when there is nothing to grade.
        if files.submissions if students is None else set(files.submissions) & set(students):
            runner = start_runner(kind=sandbox, limits=limits, workers=workers, scheduler=scheduler,
                                  course_root=files.root, release_notebook=files.release_notebook)
        sandbox_check = sandbox_check_started(scheduler)
        spec = load_spec(assignment, files.source_notebook, files.release_notebook, files.secret)
        # the instructor's solutions are graded as a student of their own, numbers included
        solver_numbers = spec.numbers_for(SELF_CHECK_STUDENT)
        why = sandbox_check.result() if sandbox_check is not None else None
        if why is not None:
            raise GradingError(f"the grading sandbox does not work here: {why}")
        # the solutions run while the gradebook is read; judged before any student is graded
        self_checked = None
        if self_check and runner is not None:
            solutions = solution_submission(spec, SELF_CHECK_STUDENT,
                                            solver_numbers.key if solver_numbers is not None else None)
            validation = validate(spec, solutions)
            self_checked = validation, runner.submit("(solutions)", validation.steps)
        with open_gradebook(files.gradebook_url) as gb, \
                open_claims(files.gradebook_url, files.root, assignment) as claims:
            ensure_in_gradebook(gb, spec)
            layout = gradebook_layout(gb, assignment)
            graded_before = graded_submissions(gb, assignment)
            plan = plan_grading(files.submissions, graded_before, students=students, force=force)
            report = GradeReport(assignment, [], plan.skipped, plan.previous,
                                 errors=dict(plan.unreadable), resubmitted=list(plan.resubmitted))
            if plan.todo:
                # the plan grades only the folders found above, for which the runner started
                assert runner is not None
                report.workers = runner.workers
                report.sandbox = sandbox if scheduler is None else f"{sandbox} on dask {scheduler}"
                report.memory_cap = memory_cap(limits) if scheduler is None else "as on each Dask worker"
                if self_checked is not None:
                    check_solutions(spec, solver_numbers, limits, *self_checked)
                with progress_bar(len(plan.todo), assignment, progress) as advance:
                    _GradingRun(gb, layout, spec, limits, claims, runner, report, force,
                                advance).grade(plan.todo)
    except BaseException as exc:
        if runner is not None:
            runner.close(abort=True)
        if isinstance(exc, CANNOT_START):
            raise GradingError(str(exc)) from exc.__cause__
        raise
    if runner is not None:
        runner.close()
    report.wall = time.monotonic() - t0
    return report


# A gradebook commit waits for the disk: the grader commits up to this many submissions, or
# what it recorded in this many seconds, in one transaction (a kill loses at most that many,
# which the next run grades again).
COMMIT_EVERY = 16
COMMIT_WITHIN = 1.0


class _GradingRun:
    """The stages for each submission of one run, kept as busy as the runner allows:
    claim -> read and validate -> run -> check -> write -> commit (a few at a time) -> release."""

    def __init__(self, gb, layout, spec, limits, claims, runner, report, force, advance) -> None:
        self.gb, self.layout, self.spec, self.limits = gb, layout, spec, limits
        self.claims, self.runner, self.report = claims, runner, report
        self.force, self.advance = force, advance
        # checked, being written (files, by one writer thread: a file's fsync waits for the
        # disk, not for this process), not yet committed
        self.uncommitted: list[tuple[Task, SubmissionResult, cf.Future]] = []
        self.oldest = 0.0

    def grade(self, todo: list[Task]) -> None:
        with cf.ThreadPoolExecutor(1, thread_name_prefix="write") as self.writer:
            self._grade(todo)

    def _grade(self, todo: list[Task]) -> None:
        pending: dict = {}  # future -> (task, validation)
        waiting = list(reversed(todo))
        while waiting or pending:
            while waiting and len(pending) < self.runner.capacity:
                task = waiting.pop()
                if not self.claims.try_claim(task.student):
                    self.report.claimed_elsewhere.append(task.student)
                    self.advance()
                    continue
                started = self.start(task)
                if started is None:
                    self.done(task)
                else:
                    pending[started[0]] = (task, started[1])
            if pending:
                for future in self.runner.wait_any(set(pending)):
                    task, validation = pending.pop(future)
                    self.finish(task, validation, future)
                    self.done(task)
            if self.uncommitted and (len(self.uncommitted) >= COMMIT_EVERY or not pending
                                     or time.monotonic() - self.oldest >= COMMIT_WITHIN):
                self.commit()
        self.commit()

    def start(self, task: Task):
        """Read and validate one claimed submission: (future, validation) if its code must
        run, else None (already recorded, by another grader or here)."""
        student = task.student
        # the gradebook's errors propagate (nothing can be graded); reading's stay with the task
        done_now = None if self.force else graded_submission(self.gb, self.layout, student)
        opened = open_task(task, done_now)
        if opened.graded_meanwhile:
            self.report.skipped_already_graded.append(student)
            if opened.previous is not None:
                self.report.previous.append(opened.previous)
            return None
        try:
            if opened.failed is not None:
                raise opened.failed
            validation = validate(self.spec, opened.data, missing=opened.why)
        except Exception as exc:  # an input validation did not foresee: this one only
            self.record(task, None, None, failed=("reading the notebook", exc))
            return None
        if validation.invalid is not None or not validation.steps:
            self.record(task, validation, None)
            return None
        try:
            future = self.runner.submit(student, validation.steps)
        except Exception as exc:  # the pool or the cluster, not the submission
            self.report.errors[student] = (f"the sandbox could not be started: "
                                           f"{type(exc).__name__}: {exc}")[:500]
            return None
        return future, validation

    def finish(self, task: Task, validation: Validation, future) -> None:
        """The sandbox's outcome -> check -> record. A sandbox failure is the grader's, not the
        student's: not recorded, retried by the next run."""
        try:
            outcome = future.result()
        except Exception as exc:
            self.report.errors[task.student] = f"{type(exc).__name__}: {exc}"
            return
        if outcome.error:
            self.report.errors[task.student] = outcome.error
            return
        self.record(task, validation, outcome)

    def record(self, task: Task, validation, outcome, failed=None) -> None:
        """Check and write up; the files are written in the background and the commit follows
        (:meth:`commit`)."""
        student = task.student
        try:
            record = build_record(self.spec, student, validation, outcome, self.limits, failed)
        except Exception as exc:
            self.report.errors[student] = f"the grader failed: {type(exc).__name__}: {exc}"[:500]
            return
        if not self.uncommitted:
            self.oldest = time.monotonic()
        written = self.writer.submit(write_files, task.where, record, task.timestamp, task.digest)
        self.uncommitted.append((task, record.result, written))

    def commit(self) -> None:
        """Once their files are written, commit the submissions in one transaction; if that
        fails, one by one, so that one submission the database refuses does not hold back the
        others. Then release them."""
        batch, self.uncommitted = self.uncommitted, []
        if not batch:
            return
        ready = []
        for task, result, written in batch:
            try:
                written.result()
                ready.append((task, result))
            except Exception as exc:  # the disk: not the submission's doing
                self.not_recorded(task.student, exc)
        try:
            commit_results(self.gb, self.layout, [(r, t.timestamp) for t, r in ready])
            self.report.results.extend(r for _, r in ready)
        except Exception:
            for task, result in ready:
                try:
                    commit_results(self.gb, self.layout, [(result, task.timestamp)])
                    self.report.results.append(result)
                except Exception as exc:  # the database: not the submission's doing
                    self.not_recorded(task.student, exc)
        for task, _, _ in batch:
            self.claims.release(task.student)

    def not_recorded(self, student: str, exc: Exception) -> None:
        self.report.errors[student] = (f"the result could not be recorded ({type(exc).__name__}: "
                                       f"{exc}); it is graded again by the next run")[:500]

    def done(self, task: Task) -> None:
        """A claimed submission is finished with here; its claim is released now, or once its
        result is committed."""
        if not any(t is task for t, _, _ in self.uncommitted):
            self.claims.release(task.student)
        self.advance()

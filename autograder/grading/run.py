"""Grading, stage 2 -- run: the students' code in sandboxes, many at once.

Two runners with the same three verbs (``submit(student, steps)`` -> future, ``wait_any(futures)``
-> the finished ones, ``close(abort)``):

- :class:`LocalRunner`: a pool of sandboxes on this machine (``sandbox/``), by default one per
  core; each a pre-imported template (all forked from one parent, where cgroups allow) that
  forks a fresh, isolated child per submission, or a fresh bwrap per submission.
- :class:`DaskRunner`: the same sandbox on the workers of a Dask cluster; the raw (untrusted)
  output comes back here, where it is checked.

Both return ``sandbox.Outcome`` objects and never judge them: checking is the next stage.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import queue
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ..course import REPO, SOLUTIONS
from ..sandbox import (DEFAULT_PRELOAD, Limits, make_sandbox, make_template_parent, notebook_preload,
                       notebook_warm_up)

if TYPE_CHECKING:
    from distributed import as_completed


class RunnerError(RuntimeError):
    """The runner cannot start (a Dask cluster without workers, ...)."""


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def forbidden_paths(course_root: Path | None = None) -> list[Path]:
    """What no sandbox bind may contain: the course (its folder), the solutions, the repository."""
    out = [SOLUTIONS, REPO]
    if course_root is not None:
        out.append(Path(course_root))
    return [p.resolve() for p in out]


class LocalRunner:
    """Sandboxes on this machine, one per worker thread."""

    def __init__(self, workers: int, kind: str, forbidden: list[Path], limits: Limits,
                 preload: tuple[str, ...] = DEFAULT_PRELOAD, warm_up: tuple[str, ...] = ()):
        self.limits = limits
        self.workers = workers
        self.cancel = threading.Event()
        self.pool: queue.SimpleQueue = queue.SimpleQueue()
        # the workers' templates are forked from one parent that imports and warms up once
        self.parent = make_template_parent(kind, forbidden, preload, warm_up)
        self.sandboxes = [make_sandbox(kind, forbidden, preload, warm_up, self.parent) for _ in range(workers)]
        self.executor = cf.ThreadPoolExecutor(workers, thread_name_prefix="grade")
        # every sandbox gets ready at once, in the background; a job waits for a ready one
        for sb in self.sandboxes:
            self.executor.submit(self._warm, sb)
        self.capacity = 2 * workers

    def _warm(self, sb) -> None:
        try:
            sb.warm()
        finally:
            self.pool.put(sb)

    def _run(self, job: dict, submitted: float):
        sb = self.pool.get()
        try:
            waited = time.monotonic() - submitted
            outcome = sb.run(job, self.limits, self.cancel)
            outcome.phases["wait"] = waited
            return outcome
        finally:
            self.pool.put(sb)

    def submit(self, student: str, steps: list[dict]) -> cf.Future:
        """Run ``steps`` (a validated notebook's, :class:`.submission.Validation`) under this
        runner's limits, in the next free sandbox."""
        return self.executor.submit(self._run, self.limits.job(steps), time.monotonic())

    def wait_any(self, futures: set) -> set:
        done, _ = cf.wait(futures, return_when=cf.FIRST_COMPLETED)
        return done

    def close(self, abort: bool = False) -> None:
        if abort:
            self.cancel.set()
        self.executor.shutdown(wait=True, cancel_futures=abort)
        for sb in self.sandboxes:
            sb.close()
        if self.parent is not None:
            self.parent.close()


class DaskRunner:
    """Sandboxes on the workers of a Dask cluster; the results come back here."""

    def __init__(self, scheduler: str, kind: str, limits: Limits):
        from distributed import Client

        self.client = Client(scheduler, timeout="30s", set_as_default=False)
        self.kind, self.limits = kind, limits
        info = self.client.scheduler_info()
        threads = sum(w.get("nthreads", 1) for w in info.get("workers", {}).values())
        if threads == 0:
            self.client.close()
            raise RunnerError(f"the Dask cluster at {scheduler} has no workers")
        self.capacity = 2 * threads
        self.workers = threads
        self.completed: as_completed | None = None   # every job submitted, as they finish

    def submit(self, student: str, steps: list[dict]):
        from ..sandbox import run_remote

        fut = self.client.submit(run_remote, self.limits.job(steps), self.limits, self.kind,
                                 pure=False, key=f"grade-{student}-{uuid.uuid4().hex}")
        if self.completed is None:
            from distributed import as_completed

            self.completed = as_completed([fut], loop=self.client.loop)
        else:
            self.completed.add(fut)
        return fut

    def wait_any(self, futures: set) -> set:
        if self.completed is None:
            raise RuntimeError("wait_any() before any job was submitted: nothing can finish")
        done = {next(self.completed)}
        done.update(self.completed.next_batch(block=False))
        return done & futures

    def close(self, abort: bool = False) -> None:
        try:
            self.client.close()
        except Exception:
            pass


def release_notebooks(path: Path | None) -> list[dict]:
    """The assignment's release notebook at ``path``, read as JSON ([] if there is none or it
    is not JSON): what a template prepares from (:func:`sandbox.notebook_preload`, the modules
    it imports once, and :func:`sandbox.notebook_warm_up`, the cells it runs once)."""
    try:
        nb = json.loads(path.read_text("utf-8")) if path is not None else None
    except (OSError, ValueError):
        return []
    return [nb] if isinstance(nb, dict) else []


def start_runner(*, kind: str, limits: Limits, workers: int | None = None,
                 scheduler: str | None = None, course_root: Path | None = None,
                 release_notebook: Path | None = None):
    """A :class:`DaskRunner` when ``scheduler`` is given, else a :class:`LocalRunner` with
    ``workers`` sandboxes (default: one per core) that may not see the course's folder
    ``course_root``, each template having imported the modules the release notebook at
    ``release_notebook`` uses and run its plain cells once (none given: the default modules)."""
    if scheduler is not None:
        return DaskRunner(scheduler, kind, limits)
    release = release_notebooks(release_notebook)
    return LocalRunner(workers or default_workers(), kind, forbidden_paths(course_root), limits,
                       notebook_preload(release), notebook_warm_up(release))

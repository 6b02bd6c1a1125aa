"""Which sandbox to use here: whether one works at all (:func:`check_sandbox`), one for a
worker (:func:`make_sandbox`), and a sandbox per Dask worker thread (:func:`run_remote`)."""

from __future__ import annotations

import functools
import os
import shutil
import threading
from pathlib import Path
from typing import Sequence

from .launch import DEFAULT_PRELOAD, FreshSandbox
from .limits import Limits, Outcome, SandboxError, as_root
from .template import TemplateSandbox

@functools.lru_cache(maxsize=None)
def check_sandbox() -> str | None:
    """None if the sandbox works here, else why not (one line)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        out = FreshSandbox().run({"steps": [{"kind": "code", "index": 0, "source": "x = 1"},
                                            {"kind": "capture", "grade_id": "g", "names": ["x"]}]},
                                 Limits(timeout=60))
    except SandboxError as exc:
        return str(exc)
    if out.error:
        return out.error
    if not any(b'"done"' in line for line in out.lines):
        return f"the sandbox did not run Python (exit {out.returncode}): {out.raw_output[-500:]}"
    return None


def make_sandbox(kind: str = "template", forbidden: Sequence[Path] = (),
                 preload: tuple[str, ...] = DEFAULT_PRELOAD, warm_up: tuple[str, ...] = ()):
    """A sandbox for one worker: ``"template"`` (default) or ``"fresh"``; a template imports
    ``preload`` and runs the ``warm_up`` cells once.

    The template needs root (it gives each child a uid of its own); as an ordinary user every
    job gets a fresh sandbox instead.
    """
    if kind == "fresh" or (kind == "template" and not as_root()):
        return FreshSandbox(forbidden)
    if kind == "template":
        return TemplateSandbox(forbidden, preload=preload, warm_up=warm_up)
    raise ValueError(f"unknown sandbox kind {kind!r}")


_local = threading.local()
REMOTE_JOBS = 0  # jobs this process ran for a remote grader (tests ask the Dask workers)


def run_remote(job: dict, limits: Limits, kind: str = "template") -> Outcome:
    """Run one job on a Dask worker (one sandbox per worker thread, reused)."""
    global REMOTE_JOBS
    REMOTE_JOBS += 1
    sb = getattr(_local, "sandbox", None)
    if sb is None or sb.kind != (kind if as_root() else "fresh"):
        from ..course import REPO, SOLUTIONS

        sb = _local.sandbox = make_sandbox(kind, [SOLUTIONS, REPO])
    try:
        return sb.run(job, limits)
    except SandboxError as exc:
        return Outcome([], "", None, error=f"sandbox on {os.uname().nodename}: {exc}")

"""Which sandbox to use here: whether one works at all (:func:`check_sandbox`), one for a
worker (:func:`make_sandbox`), the parent their templates are forked from
(:func:`make_template_parent`), and a sandbox per Dask worker thread (:func:`run_remote`)."""

from __future__ import annotations

import functools
import os
import shutil
import threading
from pathlib import Path
from typing import Sequence

from .launch import DEFAULT_PRELOAD, FreshSandbox
from .limits import Limits, Outcome, SandboxError, as_root
from .cgroup import memory_cgroup
from .template import TemplateParent, TemplateSandbox

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
                 preload: tuple[str, ...] = DEFAULT_PRELOAD, warm_up: tuple[str, ...] = (),
                 parent: TemplateParent | None = None):
    """A sandbox for one worker: ``"template"`` (default) or ``"fresh"``; a template imports
    ``preload`` and runs the ``warm_up`` cells once, or is forked from ``parent``, which did.

    The template needs root (it gives each child a uid of its own); as an ordinary user every
    job gets a fresh sandbox instead.
    """
    if kind == "fresh" or (kind == "template" and not as_root()):
        return FreshSandbox(forbidden)
    if kind == "template":
        return TemplateSandbox(forbidden, preload=preload, warm_up=warm_up, parent=parent)
    raise ValueError(f"unknown sandbox kind {kind!r}")


def make_template_parent(kind: str = "template", forbidden: Sequence[Path] = (),
                         preload: tuple[str, ...] = DEFAULT_PRELOAD,
                         warm_up: tuple[str, ...] = ()) -> TemplateParent | None:
    """The one parent the workers' templates are forked from, where templates are used and
    each forked template can have a cgroup of its own (see :class:`TemplateParent`); else None,
    and every worker starts a template of its own."""
    if kind != "template" or not as_root() or memory_cgroup()[0] is None:
        return None
    return TemplateParent(forbidden, preload=preload, warm_up=warm_up)


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

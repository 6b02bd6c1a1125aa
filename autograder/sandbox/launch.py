"""Run untrusted notebook code in a bubblewrap sandbox, with limits.

What the student's process gets (see :func:`.bwrap.bwrap_command`):

- its own pid, network, IPC, UTS and (where available) cgroup namespaces: no network at all
  (only a loopback device of its own), no view of other processes;
- a new root: a tmpfs holding read-only binds of the system (``/usr``), the Python install and
  venv, the ``scalebook`` package and this package's ``inside/`` -- and nothing else: not the
  course directory, not the repository (``solutions/``), not ``/etc``, ``/home``, ``/root``
  (a course or repository inside any of these binds is refused: :func:`read_only_binds`);
- a private tmpfs ``/tmp`` (size-capped) as the only writable place; its code arrives over a
  pipe, so nothing of the submission is written on the host;
- a fresh uid (a random one with no account, never root) with no capabilities and
  ``no_new_privs``, in its own session (no TIOCSTI into the grader's terminal), killed with
  the grader (``--die-with-parent``);
- resource limits: RLIMIT_AS (memory), RLIMIT_CPU, RLIMIT_NPROC (processes and threads of its
  uid), RLIMIT_FSIZE, RLIMIT_NOFILE, no core dumps; a wall-clock timeout and output caps
  enforced from outside (the process group is killed, and with it the pid namespace);
- a memory cap on the job as a whole, where a cgroup memory controller is usable (see
  :func:`memory_cgroup`): every process of one submission, and what it writes to its tmpfs,
  together within ``Limits.job_memory`` (default: ``Limits.memory``) -- cgroup v2
  (``memory.max``) where the controller is delegated to us, else cgroup v1
  (``memory.limit_in_bytes``) where that hierarchy is writable (root on hybrid hosts), else
  none, and only RLIMIT_AS per process holds. An OOM kill in it during the job sets
  ``Outcome.memory_exceeded``; :func:`memory_cap` says in words which cap holds (also in
  ``Outcome.memory_cap``);
- nothing of the grader to read: bwrap starts from an empty environment but for the
  allow-list :func:`sandbox_env` (the only variables the student's process gets), in ``/``,
  with its options -- every bind, so every host path it names -- passed over a pipe
  (``--args``) rather than on its command line (:func:`start_bwrap`). No process in the
  sandbox holds the grader's environment, command line or directory; the grader and the
  outer bwrap are outside its pid namespace. As root, bwrap's reaper (pid 1 beside the
  student) is root, so its ``environ``, ``maps``, ``cwd``, ``mem`` are closed to the student
  anyway; as an ordinary user there is no reaper (``--as-pid-1``): it would share the
  student's uid, open to reading and ptrace. What the student does see of the host: the
  paths of what is bound in (the Python install, the venv, ``scalebook``; in mountinfo also
  the source of ``inside/`` and of the font cache), never the course directory;
- a seccomp filter (``inside/seccomp.py``), installed by the runner after the uid switch
  and before the student's code: no new namespaces (a user namespace would let it mount a tmpfs
  of its own, past RLIMIT_AS and the scratch cap), no mounts, no keyring, bpf, userfaultfd,
  perf_event_open or io_uring. The runner's first record, ``{"t":"ready"}``, says all of this
  is in place; a run without it is a sandbox error (:func:`.process.require_ready`), never a student's.

When the grader runs as root, bwrap runs as root *without* a user namespace (so the sandbox
can be given a uid of its own, which RLIMIT_NPROC needs: the kernel exempts uid 0 from it) and
keeps only CAP_SETUID/CAP_SETGID, which ``inside/privileges.py`` uses to drop to that uid before it reads
the job. As an ordinary user bwrap makes a user namespace instead (``--unshare-user``,
``--disable-userns``), the process keeps the user's uid and is pid 1 of its namespace, and
cgroups are usually not writable (:func:`memory_cap` then says so).

Two ways to start the student's process:

- :class:`FreshSandbox`: one new bwrap + Python per submission. Simple, nothing shared.
- :class:`TemplateSandbox`: one long-lived *template* per worker, itself inside the same kind of
  bwrap sandbox, that has already imported numpy, matplotlib and scalebook (not JAX), has run
  the release notebook's plain cells once (:func:`notebook_warm_up`), and forks a fresh child
  per submission. The child gets a namespace of its own for mounts (a new empty
  ``/tmp``), IPC and pids (it is pid 1 of its own namespace, so when it ends every process it
  started dies), a uid of its own, the limits above, and no way back to the template (different
  uid; the template is not dumpable). Nothing a child does survives it. The template and its
  one child at a time share a cgroup whose limit is the template's own memory plus the job cap
  (see the cgroup section below). See ``inside/zygote.py`` (``serve``) and :class:`TemplateSandbox`. A grader's
  workers fork their templates from one :class:`TemplateParent` (``inside/zygote.py``, ``serve_templates``),
  where job cgroups can be made: each forked template enters a cgroup of its own and makes
  its own network namespace.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Sequence

from ..notebook import Cell, read_cells
from .bwrap import RUNNER_MAIN, bwrap_command, sandbox_python, sandbox_uid, start_bwrap
from .cgroup import JobCgroup, job_cgroup
from .limits import Limits, Outcome, SandboxError, as_root
from .process import pump, require_ready

# numpy.random too: numpy imports it lazily, and each job reseeds it (inside/zygote.py, _reseed), which
# would otherwise import it anew in every child (12 ms of a 30 ms job).
DEFAULT_PRELOAD = ("numpy", "numpy.random", "matplotlib", "matplotlib.pyplot", "scalebook",
                   "scalebook.checks")


def _code_cells(notebooks: list[dict]) -> list[tuple[Cell, list[str]]]:
    """Each code cell of ``notebooks`` that parses as Python, and the modules it imports
    (absolute names; a relative import as ".")."""
    import ast

    out = []
    for nb in notebooks:
        for cell in read_cells(nb):
            if cell.cell_type != "code":
                continue
            source = cell.source
            try:
                tree = ast.parse(source)
            except (SyntaxError, ValueError):   # an IPython magic, or not Python
                continue
            imports = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    imports += [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    imports.append(node.module if node.module and not node.level else ".")
            out.append((cell, imports))
    return out


def notebook_preload(notebooks: list[dict]) -> tuple[str, ...]:
    """:data:`DEFAULT_PRELOAD` and the ``scalebook`` modules that code cells of ``notebooks``
    (an assignment's release copy: the instructor's) import, in order.

    A template that has imported them does not import them again in every child: a homework's
    setup cell imports ``scalebook.homework`` (90 ms, three times a whole job's own work).
    Only ``scalebook`` modules, which import no JAX: JAX is imported only if the student does.
    """
    found = list(DEFAULT_PRELOAD)
    for _, imports in _code_cells(notebooks):
        found += [n for n in imports if n == "scalebook" or n.startswith("scalebook.")]
    return tuple(dict.fromkeys(found))


#: The packages a warm-up cell may import (JAX never: see ``inside/zygote.py``).
WARM_UP_PACKAGES = ("numpy", "matplotlib", "scalebook")
#: The most source the warm-up carries: it travels on the template's command line, where one
#: argument may hold at most 128 KiB (Linux's MAX_ARG_STRLEN); the homeworks' take 4-8 KB.
WARM_UP_BYTES = 32 * 1024


def notebook_warm_up(notebooks: list[dict]) -> tuple[str, ...]:
    """The cells a template runs once before its first job (``inside/zygote.py``, ``warm_up``): the code cells
    of ``notebooks`` (the release copy, which every student gets) but the graded tests, that
    import nothing outside :data:`WARM_UP_PACKAGES`, up to :data:`WARM_UP_BYTES` of source.

    What every student's run loads lazily (matplotlib's text and font caches, a solver table)
    is then loaded once in the template, not once per job: hw1's cells take 27 ms of CPU in a
    job forked from a warmed template, 36 ms from a cold one (17.6 ms run again in one process).
    """
    out: list[str] = []
    size = 0
    for cell, imports in _code_cells(notebooks):
        if cell.graded or not all(n.split(".")[0] in WARM_UP_PACKAGES for n in imports):
            continue
        size += len(cell.source.encode("utf-8"))
        if size > WARM_UP_BYTES:   # a warm-up is an optimisation: the first cells are enough
            break
        out.append(cell.source)
    return tuple(out)


class FreshSandbox:
    """A new bwrap sandbox and Python interpreter for every submission."""

    kind = "fresh"

    def __init__(self, forbidden: Sequence[Path] = ()):
        self.forbidden = [Path(f) for f in forbidden]

    def warm(self) -> None:
        """Nothing to prepare: every job starts its own sandbox."""

    def run(self, job: dict, limits: Limits, cancel: threading.Event | None = None) -> Outcome:
        uid = sandbox_uid()
        config = json.dumps({"uid": uid if as_root() else None, "rlimits": limits.rlimits()})
        job_bytes = json.dumps(job).encode()
        t = time.monotonic()
        try:
            cgroup, cap = job_cgroup(limits)
        except SandboxError as exc:
            return Outcome([], "", None, error=str(exc))
        made = time.monotonic() - t
        try:
            outcome = self._run(cgroup, config, job_bytes, limits, cancel, cap)
        finally:
            t = time.monotonic()
            if cgroup is not None:
                cgroup.close()
        outcome.phases["cgroup"] = made + time.monotonic() - t
        return outcome

    def _run(self, cgroup: JobCgroup | None, config: str, job_bytes: bytes, limits: Limits,
             cancel: threading.Event | None, cap: str) -> Outcome:
        result_r, result_w = os.pipe()
        try:
            argv = [sandbox_python(), "-s", "-B", "-c", RUNNER_MAIN, str(result_w), config]
            cmd = bwrap_command(argv, scratch=limits.scratch, forbidden=self.forbidden)
        except BaseException:
            os.close(result_r)
            os.close(result_w)
            raise
        try:
            proc = start_bwrap(cmd, cgroup=cgroup, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, pass_fds=(result_w,))
        except (OSError, SandboxError) as exc:
            os.close(result_r)
            return Outcome([], "", None, error=f"could not start bwrap: {exc}", memory_cap=cap)
        finally:
            os.close(result_w)
        outcome = require_ready(pump(proc, job_bytes, result_r, limits, cancel))
        outcome.memory_exceeded = cgroup is not None and cgroup.oom_kills() > 0
        outcome.memory_cap = cap
        return outcome

    def close(self) -> None:
        pass

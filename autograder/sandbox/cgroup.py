"""The job's memory, by cgroup: where job cgroups can be made here, one made, entered, read
and removed per job (or per template), and the cap that holds, in words."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import secrets
import signal
import subprocess
import time
from pathlib import Path

from .limits import GiB, MiB, Limits, SandboxError

# RLIMIT_AS caps each process; a cgroup caps the job: every process of one submission (and the
# files it writes to its tmpfs /tmp and /dev/shm) together. The process that becomes bwrap
# enters the cgroup first (start_bwrap), so whatever the sandbox starts inherits it.
#
# - A fresh sandbox: one cgroup per job, limit job_memory, removed after the job.
# - A template sandbox: one cgroup per template, holding the template and its one job at a
#   time, limit = what the template held once ready + job_memory (set before each job). (A
#   template forked from a TemplateParent writes 0 into its cgroup's entry file, opened here
#   and passed to it, before it serves a job; the pages it shares with the parent stay charged
#   to the parent's cgroup, which runs no job and has no limit.) Not a
#   cgroup per forked job: moving a process in costs an RCU grace period (5-15 ms here, most
#   of a template job's start) for every move but a single-threaded process's own move into a
#   v1 ``tasks`` file, which cgroup v2 does not have; forking inside the cgroup costs nothing,
#   and the template's protocol stays as it is. What a job is charged is the same: what it
#   allocates, the copies of the template's pages it writes to, its tmpfs files. Between jobs
#   nothing of a job is left in it (its namespaces, tmpfs and processes die with it) but page
#   cache, which the kernel reclaims before it kills. The student's processes have
#   oom_score_adj 1000, so the kernel kills them, never the template, while any is left.
# - An OOM kill in the cgroup during a job (its oom_kill counter went up) sets
#   Outcome.memory_exceeded.

JOB_CGROUP_PREFIX = "scalebook-job-"


@dataclasses.dataclass(frozen=True)
class CgroupParent:
    """Where job cgroups are made: a directory of a cgroup v2 or v1 memory hierarchy."""

    version: int
    path: Path


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``{"2": path}`` and ``{"memory": path}`` (v1)."""
    out = {}
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            if hid == "0" and controllers == "":
                out["2"] = path
            elif "memory" in controllers.split(","):
                out["memory"] = path
    return out


def _unescape(field: str) -> str:
    """A path from /proc/self/mountinfo (space, tab, newline, backslash are octal escapes)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _cgroup_mounts() -> dict[str, tuple[str, str]]:
    """``{"2": (mount point, root), "memory": (mount point, root)}`` from /proc/self/mountinfo."""
    out: dict[str, tuple[str, str]] = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            root, point = _unescape(fields[3]), _unescape(fields[4])
            if tail[0] == "cgroup2":
                out.setdefault("2", (point, root))
            elif tail[0] == "cgroup" and "memory" in tail[2].split(","):
                out.setdefault("memory", (point, root))
    return out


def _on_disk(mount: tuple[str, str], path: str) -> Path:
    point, root = mount
    if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
        path = path[len(root.rstrip("/")):] or "/"
    return Path(point) / path.lstrip("/")


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _entry_name(version: int) -> str:
    """The file a process writes ``0`` into to enter a cgroup (see :meth:`JobCgroup.entry`)."""
    return "cgroup.procs" if version == 2 else "tasks"


def _probe_parent(parent: CgroupParent) -> str | None:
    """None if a job cgroup can be made in ``parent``, given a limit, and entered; else why."""
    if not os.access(parent.path, os.W_OK | os.X_OK):
        return f"{parent.path} is not writable by uid {os.geteuid()}"
    probe = parent.path / f"{JOB_CGROUP_PREFIX}{os.getpid()}-probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError as exc:
        return f"cannot make a cgroup in {parent.path}: {exc.strerror}"
    try:
        _set_limit(parent.version, probe, 64 * MiB)
        # a process can enter it, as start_bwrap's do (cgroup v2 has delegation rules)
        entry = probe / _entry_name(parent.version)
        r = subprocess.run(["/bin/sh", "-c", 'echo 0 > "$0"', str(entry)], env={}, cwd="/",
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
        if r.returncode != 0:
            return (f"cannot enter a cgroup in {parent.path}: "
                    f"{r.stderr.decode(errors='replace').strip()[-200:]}")
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot use a cgroup in {parent.path}: {getattr(exc, 'strerror', None) or exc}"
    finally:
        _remove(probe)
    return None


def _set_limit(version: int, path: Path, limit: int) -> None:
    """Memory (and swap, where it is accounted: none beyond the limit) of cgroup ``path``."""
    if version == 2:
        _write(path / "memory.max", str(limit))
        if (path / "memory.swap.max").exists():
            _write(path / "memory.swap.max", "0")
    else:
        _write(path / "memory.limit_in_bytes", str(limit))
        if (path / "memory.memsw.limit_in_bytes").exists():
            _write(path / "memory.memsw.limit_in_bytes", str(limit))


def _remove(path: Path, wait: float = 2.0) -> bool:
    """Remove a job cgroup, killing whatever is still in it. True once it is gone."""
    deadline = time.monotonic() + wait
    while True:
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            pass
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def _sweep(parent: CgroupParent) -> None:
    """Remove the empty job cgroups of graders that no longer run (killed before cleaning up)."""
    try:
        entries = list(os.scandir(parent.path))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(JOB_CGROUP_PREFIX):
            continue
        pid = entry.name[len(JOB_CGROUP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                os.rmdir(entry.path)
            except OSError:
                pass


@functools.lru_cache(maxsize=None)
def memory_cgroup() -> tuple[CgroupParent | None, str]:
    """Where this process can make job cgroups with a memory limit, or None and why not.

    cgroup v2 first, where the memory controller is enabled for the children of our cgroup or
    of its parent (a delegated subtree: the grader runs in a leaf of it); else cgroup v1, where
    our memory cgroup is writable (root, on hybrid hosts); else none.
    """
    try:
        own, mounts = _own_cgroups(), _cgroup_mounts()
    except OSError as exc:
        return None, f"cannot read this process's cgroups ({exc.strerror})"
    reasons = []
    if "2" in own and "2" in mounts:
        here = _on_disk(mounts["2"], own["2"])
        try:
            controllers = (here / "cgroup.controllers").read_text().split()
        except OSError:
            controllers = []
        if "memory" not in controllers:
            reasons.append(f"the cgroup2 hierarchy at {mounts['2'][0]} has no memory controller "
                           "for this process")
        else:
            why: str | None = f"the memory controller is not enabled for sub-cgroups of {here} or its parent"
            for cand in (here, here.parent):
                try:
                    enabled = "memory" in (cand / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                if enabled:
                    parent = CgroupParent(2, cand)
                    why = _probe_parent(parent)
                    if why is None:
                        _sweep(parent)
                        return parent, ""
                    break
            reasons.append(f"cgroup v2: {why}")
    elif "2" not in mounts:
        reasons.append("no cgroup2 hierarchy is mounted")
    if "memory" in own and "memory" in mounts:
        parent = CgroupParent(1, _on_disk(mounts["memory"], own["memory"]))
        why = _probe_parent(parent)
        if why is None:
            _sweep(parent)
            return parent, ""
        reasons.append(f"cgroup v1 memory: {why}")
    elif "memory" not in mounts:
        reasons.append("no cgroup v1 memory hierarchy is mounted")
    return None, "; ".join(reasons)


def _size(n: int) -> str:
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{n / MiB:.0f} MiB"


def memory_cap(limits: Limits) -> str:
    """In words, which memory cap holds for each submission here (for the grading report)."""
    parent, why = memory_cgroup()
    if parent is None:
        return f"RLIMIT_AS per process only: {why}"
    return f"cgroup v{parent.version} memory: {_size(limits.job_memory_bytes())} per submission"


class JobCgroup:
    """A cgroup with a memory limit: made, entered (before anything forks), read, removed.

    A fresh sandbox's job has one of its own; a template sandbox has one for the template and
    its one job at a time (see :class:`TemplateSandbox`).
    """

    def __init__(self, parent: CgroupParent, limit: int | None):
        self.parent = parent
        self.path = parent.path / f"{JOB_CGROUP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        self.limit: int | None = None
        self.path.mkdir()
        try:
            if limit is not None:
                self.set_limit(limit)
        except OSError:
            _remove(self.path)
            raise

    def set_limit(self, limit: int) -> None:
        if limit != self.limit:
            _set_limit(self.parent.version, self.path, limit)
            self.limit = limit

    def entry(self) -> Path:
        """The file a process writes ``0`` into to enter this cgroup, itself.

        In cgroup v1, its ``tasks``: a single-threaded process moving itself there takes no
        global lock, where a write of a pid to ``cgroup.procs`` waits for an RCU grace period
        (5-15 ms, as long as the rest of a template job's start). In v2, ``cgroup.procs``.
        """
        return self.path / _entry_name(self.parent.version)

    def usage(self) -> int:
        """Bytes charged to it now."""
        name = "memory.current" if self.parent.version == 2 else "memory.usage_in_bytes"
        return int((self.path / name).read_text())

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in it for going over its limit."""
        try:
            name = "memory.events" if self.parent.version == 2 else "memory.oom_control"
            text = (self.path / name).read_text()
        except OSError:
            return 0
        counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", 0))

    def close(self) -> None:
        _remove(self.path)


def job_cgroup(limits: Limits) -> tuple[JobCgroup | None, str]:
    """A new cgroup for one job (None where none is usable) and the cap that holds, in words.

    Raises :class:`SandboxError` if cgroups are usable here but this one cannot be made:
    a job never runs without the cap that :func:`memory_cap` announced.
    """
    parent, _ = memory_cgroup()
    cap = memory_cap(limits)
    if parent is None:
        return None, cap
    try:
        return JobCgroup(parent, limits.job_memory_bytes()), cap
    except OSError as exc:
        raise SandboxError(f"cannot make the job's cgroup in {parent.path}: {exc}") from None



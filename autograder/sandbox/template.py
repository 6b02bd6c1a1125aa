"""The template sandbox: one long-lived pre-imported Python in a sandbox that forks a fresh
child per job (see the design notes in :mod:`autograder.sandbox.launch`)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Sequence

from .cgroup import JobCgroup, memory_cap, memory_cgroup
from .launch import (DEFAULT_PRELOAD, FreshSandbox, _kill_group, _require_ready, _TemplateChild, bwrap_command,
                     pump, sandbox_python, sandbox_uid, start_bwrap)
from .limits import MiB, Limits, Outcome, SandboxError, as_root

if TYPE_CHECKING:
    import socket


class TemplateSandbox:
    """A long-lived pre-imported template in a sandbox, forking one fresh child per job.

    The grader talks to the template over a Unix socket (one JSON line per message). For each
    job it passes three new pipes (the child's stdin, stdout+stderr and result channel) with
    SCM_RIGHTS, so a child can only ever reach its own job's pipes; the grader reads them until
    EOF, which it sees only once every process of the job has exited. Anything unexpected (the
    template dies, stalls, answers oddly, or a job had to be killed) and the template is thrown
    away; a new one is started for the next job. If a template cannot be started at all, jobs
    run in a :class:`FreshSandbox`.
    """

    kind = "template"

    def __init__(self, forbidden: Sequence[Path] = (), preload: tuple[str, ...] = DEFAULT_PRELOAD,
                 scratch: int = Limits.scratch, max_jobs: int = 1000, warm_up: tuple[str, ...] = ()):
        self.forbidden = [Path(f) for f in forbidden]
        self.preload = tuple(preload)
        self.warm_up = tuple(warm_up)
        self.scratch = scratch
        self.max_jobs = max_jobs
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.log: IO[bytes] | None = None   # the template's own stderr, see _start()
        self._rbuf = b""
        self.jobs = 0
        self.starts = 0
        self.broken: str | None = None
        self.fallback = FreshSandbox(forbidden)
        self.cgroup: JobCgroup | None = None   # the template's and its job's, see run()
        self.baseline = 0                      # bytes charged to it when the template was ready

    def _start(self) -> None:
        import socket

        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [sandbox_python(), "-s", "-B", "-c",
                "import sys; sys.path.insert(0, '/opt/grader'); import runner; "
                "runner.serve(int(sys.argv[1]), sys.argv[2])",
                str(child.fileno()), json.dumps({"preload": list(self.preload), "warm_up": list(self.warm_up)})]
        # (--as-pid-1: pid 1 of its namespace, so its children cannot signal it to death)
        cmd = bwrap_command(argv, scratch=16 * MiB, forbidden=self.forbidden, template=True)
        self.log = tempfile.TemporaryFile()  # the template's own stderr (never a pipe that fills)
        try:
            cgroup_parent, _ = memory_cgroup()
            if cgroup_parent is not None:
                self.cgroup = JobCgroup(cgroup_parent, None)
            self.proc = start_bwrap(cmd, cgroup=self.cgroup, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=self.log,
                                    pass_fds=(child.fileno(),))
        except OSError as exc:
            self.close()
            raise SandboxError(f"could not start the template: {exc}") from None
        finally:
            child.close()
        self.sock = parent
        self._rbuf = b""
        self.starts += 1
        hello = self._recv(timeout=120)
        if not hello or hello.get("ready") is not True:
            err = b""
            if self.proc is not None:
                _kill_group(self.proc)
                try:
                    self.proc.wait(timeout=10)
                    self.log.seek(0)
                    err = self.log.read()[-2000:]
                except Exception:
                    pass
            self.close()
            raise SandboxError(f"the template did not start: {err.decode('utf-8', 'replace')}")
        self.jobs = 0
        if self.cgroup is not None:
            self.baseline = self.cgroup.usage()

    def _recv(self, timeout: float) -> dict | None:
        """The next JSON line from the template, or None (closed, garbage, or too slow)."""
        deadline = time.monotonic() + timeout
        try:
            while b"\n" not in self._rbuf:
                left = deadline - time.monotonic()
                if left <= 0 or self.sock is None:
                    return None
                self.sock.settimeout(left)
                chunk = self.sock.recv(4096)
                if not chunk:
                    return None
                self._rbuf += chunk
                if len(self._rbuf) > 65536:
                    return None
            line, _, self._rbuf = self._rbuf.partition(b"\n")
            msg = json.loads(line)
            return msg if isinstance(msg, dict) else None
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if self.proc is not None:
            _kill_group(self.proc)
            try:
                self.proc.wait(timeout=10)
            except Exception:
                pass
            self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None

    def warm(self) -> None:
        """Start the template now, not at the first job (a grader starts every worker's template
        at once, while it reads the gradebook). If it cannot start, jobs will use the fallback."""
        self._ready()

    def _ready(self) -> bool:
        """A running template (started anew if need be); False: it cannot be started."""
        if self.broken is not None:
            return False
        if self.proc is None or self.proc.poll() is not None or self.jobs >= self.max_jobs:
            self.close()
            try:
                self._start()
            except (SandboxError, OSError) as exc:
                self.broken = str(exc)
                return False
        return True

    def run(self, job: dict, limits: Limits, cancel: threading.Event | None = None) -> Outcome:
        if not self._ready():
            return self.fallback.run(job, limits, cancel)
        cap = memory_cap(limits)
        t = time.monotonic()
        if self.cgroup is not None:
            try:  # the job may use job_memory beyond what the template itself holds
                self.cgroup.set_limit(self.baseline + limits.job_memory_bytes())
            except OSError:
                self.close()
                return self.fallback.run(job, limits, cancel)
        limit_set = time.monotonic() - t
        outcome = self._run(job, limits, cancel)
        if outcome is None:  # the template failed before the job started
            return self.fallback.run(job, limits, cancel)
        outcome.memory_cap = cap
        outcome.phases["cgroup"] = outcome.phases.get("cgroup", 0.0) + limit_set
        return outcome

    def _run(self, job: dict, limits: Limits, cancel: threading.Event | None) -> Outcome | None:
        import socket

        sock = self.sock
        if sock is None:  # _ready() has just started the template: a bug, not a student's doing
            raise SandboxError("the template sandbox has no socket to send the job on")
        self.jobs += 1
        result_r, result_w = os.pipe()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        header = {"uid": sandbox_uid() if as_root() else None, "rlimits": limits.rlimits(),
                  "scratch": int(limits.scratch)}
        try:
            socket.send_fds(sock, [json.dumps(header).encode() + b"\n"], [in_r, out_w, result_w])
            sent = True
        except OSError:
            sent = False
        for fd in (in_r, out_w, result_w):
            os.close(fd)
        cgroup = self.cgroup
        t = time.monotonic()
        kills = cgroup.oom_kills() if cgroup is not None else 0
        t_fork = time.monotonic()
        reads = t_fork - t
        started = self._recv(timeout=30) if sent else None
        if not started or started.get("started") is not True:
            for fd in (result_r, in_w, out_r):
                os.close(fd)
            self.close()
            return None
        child = _TemplateChild(self, out_r, in_w)
        forked = time.monotonic() - t_fork
        outcome = pump(child, json.dumps(job).encode(), result_r, limits, cancel)
        t = time.monotonic()
        if cgroup is not None:  # read before a close() below removes it
            outcome.memory_exceeded = cgroup.oom_kills() > kills
        outcome.phases.update(fork=forked, cgroup=reads + time.monotonic() - t)
        if child.cpu is not None:
            outcome.phases["job CPU"] = child.cpu
        if child.killed or outcome.returncode is None or outcome.returncode in (70, 71, 72):
            self.close()  # a job had to be killed, or the protocol went wrong: start afresh
        return _require_ready(outcome)



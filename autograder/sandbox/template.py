"""The template sandbox: one long-lived pre-imported Python in a sandbox that forks a fresh
child per job (see the design notes in :mod:`autograder.sandbox.launch`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Sequence

from .bwrap import RUNNER_IMPORT, bwrap_command, sandbox_python, sandbox_uid, start_bwrap
from .cgroup import JobCgroup, memory_cap, memory_cgroup
from .launch import DEFAULT_PRELOAD, FreshSandbox
from .limits import MiB, Limits, Outcome, SandboxError, as_root
from .process import kill_group, pump, require_ready

if TYPE_CHECKING:
    import socket


class _SandboxedServer:
    """A long-lived Python in a bwrap sandbox, ``inside.<ENTRY>(fd, config)``, that the grader
    talks to over a Unix socket (one JSON line per message) and that first imports ``preload``
    and runs the ``warm_up`` cells once (``inside/zygote.py``, ``_prepare``)."""

    ENTRY = ""

    def __init__(self, forbidden: Sequence[Path] = (), preload: tuple[str, ...] = DEFAULT_PRELOAD,
                 warm_up: tuple[str, ...] = ()):
        self.forbidden = [Path(f) for f in forbidden]
        self.preload = tuple(preload)
        self.warm_up = tuple(warm_up)
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.log: IO[bytes] | None = None   # its own stderr, see _start()
        self._rbuf = b""
        self.broken: str | None = None      # why it cannot be started here
        self.cgroup: JobCgroup | None = None
        self.starts = 0

    def _start(self) -> None:
        import socket

        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [sandbox_python(), "-s", "-B", "-c",
                RUNNER_IMPORT + f"runner.{self.ENTRY}(int(sys.argv[1]), sys.argv[2])",
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
        self._await_ready(self.log)

    def _await_ready(self, log: IO[bytes] | None) -> None:
        """Wait for its ``{"ready": true}``; close it and raise SandboxError if none comes."""
        hello = self._recv(timeout=120)
        if not hello or hello.get("ready") is not True:
            err = str(hello.get("error", "")).encode() if hello else b""
            if self.proc is not None:
                kill_group(self.proc)
                try:
                    self.proc.wait(timeout=10)
                    if log is not None:
                        log.seek(0)
                        err = log.read()[-2000:]
                except Exception:
                    pass
            self.close()
            raise SandboxError(f"the template did not start: {err.decode('utf-8', 'replace')}")

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

    def _alive(self) -> bool:
        return self.sock is not None and self.proc is not None and self.proc.poll() is None

    def _ready(self) -> bool:
        """Running (started anew if it is not alive); False: it cannot be started here."""
        if self.broken is not None:
            return False
        if not self._alive():
            self.close()
            try:
                self.starts += 1
                self._start()
            except (SandboxError, OSError) as exc:
                self.broken = str(exc)
                return False
        return True

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
        if self.proc is not None:
            kill_group(self.proc)
            try:
                self.proc.wait(timeout=10)
            except Exception:
                pass
            self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.cgroup is not None:  # kills whatever of it is left
            self.cgroup.close()
            self.cgroup = None


class TemplateParent(_SandboxedServer):
    """One pre-imported Python in a sandbox that forks a template for every worker.

    Importing numpy, matplotlib and scalebook and warming up costs a template about 0.6 s of
    CPU, and a grader starts one per worker on the same cores it reads the notebooks on; forked
    from this parent, every template after it costs a fork. A forked template moves itself into
    a cgroup of its own (the grader opens that cgroup's entry file and passes the descriptor
    along; see ``inside/zygote.py``, ``serve_templates``) and makes a network namespace of its own, so the
    jobs of two workers, running at once, are as far apart as those of two templates started
    on their own. Only where job cgroups can be made: a forked template is not the pid 1 of
    a namespace, so removing its cgroup is what kills everything of it.
    """

    ENTRY = "serve_templates"

    def __init__(self, forbidden: Sequence[Path] = (), preload: tuple[str, ...] = DEFAULT_PRELOAD,
                 warm_up: tuple[str, ...] = ()):
        super().__init__(forbidden, preload, warm_up)
        self.lock = threading.Lock()

    def fork(self, sock: socket.socket, cgroup: JobCgroup) -> bool:
        """Fork a template that serves jobs on ``sock`` in ``cgroup``; False if this parent
        cannot be started here (or has died and cannot be started again)."""
        import socket

        with self.lock:
            if not self._ready():
                return False
            assert self.sock is not None
            try:
                entry = os.open(cgroup.entry(), os.O_WRONLY | os.O_CLOEXEC)
            except OSError:
                return False
            try:
                socket.send_fds(self.sock, [b'{"template": true}\n'], [sock.fileno(), entry])
                return True
            except OSError:
                self.close()  # started again for the next request
                return False
            finally:
                os.close(entry)


class TemplateSandbox(_SandboxedServer):
    """A long-lived pre-imported template in a sandbox, forking one fresh child per job.

    The grader talks to the template over a Unix socket (one JSON line per message). For each
    job it passes three new pipes (the child's stdin, stdout+stderr and result channel) with
    SCM_RIGHTS, so a child can only ever reach its own job's pipes; the grader reads them until
    EOF, which it sees only once every process of the job has exited. Anything unexpected (the
    template dies, stalls, answers oddly, or a job had to be killed) and the template is thrown
    away; a new one is started for the next job. With a ``parent``
    (:class:`TemplateParent`), a template is forked from it; else, or if that fails, it is a
    sandbox of its own. If a template cannot be started at all, jobs run in a
    :class:`FreshSandbox`.
    """

    kind = "template"
    ENTRY = "serve"

    def __init__(self, forbidden: Sequence[Path] = (), preload: tuple[str, ...] = DEFAULT_PRELOAD,
                 scratch: int = Limits.scratch, max_jobs: int = 1000, warm_up: tuple[str, ...] = (),
                 parent: TemplateParent | None = None):
        super().__init__(forbidden, preload, warm_up)
        self.scratch = scratch
        self.max_jobs = max_jobs
        self.parent = parent
        self.jobs = 0
        self.forked = 0                        # of the starts, how many were forks of the parent
        self.fallback = FreshSandbox(forbidden)
        self.baseline = 0                      # bytes charged to its cgroup when it was ready

    def _start(self) -> None:
        if self.parent is not None and self._start_forked():
            self.forked += 1
        else:
            super()._start()
        self.jobs = 0
        if self.cgroup is not None:
            self.baseline = self.cgroup.usage()

    def _start_forked(self) -> bool:
        """A template forked by the parent, in a cgroup of its own. False if the parent cannot
        give one; after a forked template failed to get ready, this worker starts its own."""
        import socket

        assert self.parent is not None
        cgroup_parent, _ = memory_cgroup()
        if cgroup_parent is None:
            return False
        try:
            cgroup = JobCgroup(cgroup_parent, None)
        except OSError:
            return False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            forked = self.parent.fork(theirs, cgroup)
        finally:
            theirs.close()
        self.sock, self.cgroup, self._rbuf = ours, cgroup, b""
        if not forked:
            self.close()
            return False
        try:
            self._await_ready(None)
        except SandboxError:
            self.parent = None
            return False
        return True

    def _alive(self) -> bool:
        """Alive, and not yet due to be replaced (``max_jobs``)."""
        if self.jobs >= self.max_jobs:
            return False
        if self.proc is not None or self.sock is None:
            return super()._alive()
        # forked: between jobs it sends nothing, so a readable socket is a closed one
        import select

        readable = select.poll()
        readable.register(self.sock, select.POLLIN)
        return not self._rbuf and not readable.poll(0)

    def warm(self) -> None:
        """Start the template now, not at the first job (a grader starts every worker's template
        at once, while it reads the gradebook). If it cannot start, jobs will use the fallback."""
        self._ready()

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
        return require_ready(outcome)


class _TemplateChild:
    """The parts of ``Popen`` that :func:`pump` uses, for a job forked by the template."""

    def __init__(self, template: TemplateSandbox, out_r: int, in_w: int):
        self.template = template
        self.stdout = os.fdopen(out_r, "rb", buffering=0)
        self.stdin = os.fdopen(in_w, "wb", buffering=0)
        self.returncode: int | None = None
        self.killed = False
        self.cpu: float | None = None   # the job's CPU seconds, as the template measured them

    def poll(self):
        return self.returncode

    def kill(self) -> None:
        if self.killed:
            return
        self.killed = True
        sock = self.template.sock
        if sock is not None:
            try:
                sock.sendall(b'{"kill": true}\n')
                return
            except OSError:
                pass
        self.template.close()  # it cannot be told: throw it (and so the job) away

    def wait(self, timeout=None):
        if self.returncode is None:
            msg = self.template._recv(timeout=timeout if timeout is not None else 30)
            if not msg or not isinstance(msg.get("exit"), int):
                self.template.close()
                self.returncode = 128 + signal.SIGKILL
                self.killed = True
            else:
                self.returncode = msg["exit"]
                cpu = msg.get("cpu")
                self.cpu = float(cpu) if isinstance(cpu, (int, float)) else None
        return self.returncode

"""Run untrusted notebook code in a bubblewrap sandbox, with limits.

What the student's process gets (see :func:`bwrap_command`):

- its own pid, network, IPC, UTS and (where available) cgroup namespaces: no network at all
  (only a loopback device of its own), no view of other processes;
- a new root: a tmpfs holding read-only binds of the system (``/usr``), the Python install and
  venv, the ``scalebook`` package and this package's ``inside.py`` -- and nothing else: not the
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
  the source of ``inside.py`` and of the font cache), never the course directory;
- a seccomp filter (``inside.install_seccomp``), installed by the runner after the uid switch
  and before the student's code: no new namespaces (a user namespace would let it mount a tmpfs
  of its own, past RLIMIT_AS and the scratch cap), no mounts, no keyring, bpf, userfaultfd,
  perf_event_open or io_uring. The runner's first record, ``{"t":"ready"}``, says all of this
  is in place; a run without it is a sandbox error (:func:`_require_ready`), never a student's.

When the grader runs as root, bwrap runs as root *without* a user namespace (so the sandbox
can be given a uid of its own, which RLIMIT_NPROC needs: the kernel exempts uid 0 from it) and
keeps only CAP_SETUID/CAP_SETGID, which ``inside.py`` uses to drop to that uid before it reads
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
  (see the cgroup section below). See ``inside.serve`` and :class:`TemplateSandbox`. A grader's
  workers fork their templates from one :class:`TemplateParent` (``inside.serve_templates``),
  where job cgroups can be made: each forked template enters a cgroup of its own and makes
  its own network namespace.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Sequence

from ..notebook import Cell, read_cells
from .cgroup import JobCgroup, job_cgroup
from .limits import Limits, Outcome, SandboxError, as_root

if TYPE_CHECKING:
    from .template import TemplateSandbox

# inside.py, bound read-only into the sandbox under the name the sandbox has always run it by
RUNNER = Path(__file__).resolve().with_name("inside.py")
SANDBOX_RUNNER = "/opt/grader/runner.py"
SANDBOX_MPL = "/tmp/.mpl"
# numpy.random too: numpy imports it lazily, and each job reseeds it (inside._reseed), which
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


#: The packages a warm-up cell may import (JAX never: see ``inside.warm_up``).
WARM_UP_PACKAGES = ("numpy", "matplotlib", "scalebook")
#: The most source the warm-up carries: it travels on the template's command line, where one
#: argument may hold at most 128 KiB (Linux's MAX_ARG_STRLEN); the homeworks' take 4-8 KB.
WARM_UP_BYTES = 32 * 1024


def notebook_warm_up(notebooks: list[dict]) -> tuple[str, ...]:
    """The cells a template runs once before its first job (``inside.warm_up``): the code cells
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


# --- what the sandbox may see ------------------------------------------------------------------

def sandbox_python() -> str:
    """This interpreter as the sandbox can start it: its folder with links resolved (the
    sandbox binds the resolved Python roots, so a symlinked ``.venv`` would be a path that is
    not there), the file name kept (a venv's ``bin/python`` is itself a link, and resolving it
    would lose the venv)."""
    exe = Path(sys.executable)
    return str(exe.parent.resolve() / exe.name)


def _python_roots() -> list[Path]:
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
             Path(sys.executable).resolve().parent.parent}
    return sorted({r.resolve() for r in roots}, key=lambda p: len(p.parts))


def _scalebook_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("scalebook")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def _is_within(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
        return True
    except ValueError:
        return False


SYSTEM_TOPS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


def system_binds() -> list[Path]:
    """The system directories bound read-only (``/usr``, and ``/bin``, ``/lib``... where they
    are directories rather than links into ``/usr``)."""
    out = []
    for top in SYSTEM_TOPS:
        p = Path("/" + top)
        if top == "usr" or (p.is_dir() and not p.is_symlink()):
            out.append(p)
    return out


def read_only_binds(forbidden: Sequence[Path] = ()) -> list[Path]:
    """Host paths bound read-only (at the same path) into the sandbox.

    Raises :class:`SandboxError` if any of them, or of the :func:`system_binds`, would expose
    a ``forbidden`` path (the course directory, ``solutions/``): better no grading than a leak.
    """
    binds: list[Path] = []
    for root in _python_roots():
        if str(root) == "/usr" or _is_within(root, Path("/usr")):
            continue
        binds.append(root)
    pkg = _scalebook_dir()
    if pkg is not None and not any(_is_within(pkg, b) for b in binds) and not _is_within(pkg, Path("/usr")):
        binds.append(pkg)
    out: list[Path] = []
    for b in binds:
        if any(_is_within(b, o) for o in out):
            continue
        out.append(b)
    for b in out:
        if b == Path("/"):
            raise SandboxError("refusing to bind / into the sandbox")
    for b in out + system_binds():
        for f in forbidden:
            f = Path(f).resolve()
            if _is_within(f, b):
                raise SandboxError(f"the sandbox would see {f} (inside {b}); move the course or venv")
    return out


@functools.lru_cache(maxsize=None)
def _mpl_cache() -> Path | None:
    """A directory holding matplotlib's font list, built once in a trusted subprocess.

    Without it matplotlib rebuilds the list (a font scan) in every sandbox. Kept in
    ``~/.cache/scalebook-grader/`` (owned by us, not writable by others) between runs.
    """
    try:
        import importlib.metadata
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            return None
        version = importlib.metadata.version("matplotlib")
    except Exception:
        return None
    import hashlib

    key = hashlib.sha256(f"{version}\0{sys.prefix}\0{sys.version}".encode()).hexdigest()[:16]
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "scalebook-grader"
    final = home / f"mpl-{key}"
    if _trusted_dir(final) and list(final.glob("fontlist-*.json")):
        return final
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        d = Path(tempfile.mkdtemp(prefix="mpl-", dir=home))
    except OSError:
        d = Path(tempfile.mkdtemp(prefix="scalebook-mplcache-"))
    env = dict(os.environ, MPLCONFIGDIR=str(d), MPLBACKEND="Agg")
    try:
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    except Exception:
        return None
    files = list(d.glob("fontlist-*.json"))
    if not files:
        return None
    for f in files:
        f.chmod(0o644)
    d.chmod(0o755)
    try:
        os.rename(d, final)
        return final
    except OSError:  # another grader got there first (or no cache home): use ours
        return d


def _trusted_dir(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    import stat as stat_

    return (stat_.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & (stat_.S_IWGRP | stat_.S_IWOTH))


def sandbox_env() -> dict:
    env = {
        "HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONUTF8": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "MPLCONFIGDIR": SANDBOX_MPL,
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2",
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"),
    }
    pkg = _scalebook_dir()
    if pkg is not None:
        # the scalebook this process imports (the one bound in), found first inside too: an
        # editable install's finder may name another checkout, which is not bound
        env["PYTHONPATH"] = str(pkg.parent)
    return env



def bwrap_command(argv: list[str], *, scratch: int, forbidden: Sequence[Path] = (),
                  template: bool = False) -> list[str]:
    """The bwrap command line that runs ``argv`` in a fresh sandbox."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    cmd = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session",
           "--hostname", "sandbox", "--clearenv"]
    if as_root():
        cmd += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if template:
            # the template makes a mount, IPC and pid namespace per child (one forked from a
            # TemplateParent also a network namespace, whose loopback it brings up: NET_ADMIN);
            # the child drops them all
            cmd += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_KILL", "--cap-add", "CAP_NET_ADMIN"]
    else:
        cmd += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    if template or not as_root():
        # No bwrap reaper as pid 1 beside the student: as an ordinary user it would run as the
        # student's own uid, its /proc entries (maps, memory) open to them, and it could be
        # ptraced to make the system calls the seccomp filter refuses. The sandboxed Python is
        # pid 1 itself (a template, or as an ordinary user the runner).
        cmd += ["--as-pid-1"]
    # the system, read-only (read_only_binds has checked that no forbidden path is in there)
    binds = read_only_binds(forbidden)
    for top in ("usr",):
        cmd += ["--ro-bind", f"/{top}", f"/{top}"]
    for top in SYSTEM_TOPS[1:]:
        p = Path("/" + top)
        if p.is_symlink():
            cmd += ["--symlink", os.readlink(p), f"/{top}"]
        elif p.is_dir():
            cmd += ["--ro-bind", f"/{top}", f"/{top}"]
    made = {"/", "/usr", "/tmp", "/proc", "/dev"}

    def parents(dest: str) -> list[str]:
        out = []
        parts = Path(dest).parts
        for i in range(2, len(parts)):
            d = str(Path(*parts[:i]))
            if d not in made and not d.startswith("/usr/"):
                made.add(d)
                out += ["--perms", "0755", "--dir", d]
        return out

    # The scratch /tmp is mounted before the read-only binds: a venv or checkout that lives
    # under the host's /tmp (a CI clone, say) is then bound on top of it, not hidden by it.
    cmd += ["--proc", "/proc", "--dev", "/dev",
            "--size", str(int(scratch)), "--perms", "1777", "--tmpfs", "/tmp",
            "--perms", "1777", "--dir", SANDBOX_MPL]
    for b in binds:
        cmd += parents(str(b)) + ["--ro-bind", str(b), str(b)]
    cmd += parents(SANDBOX_RUNNER) + ["--ro-bind", str(RUNNER), SANDBOX_RUNNER]
    mpl = _mpl_cache()
    if mpl is not None:
        for f in mpl.glob("fontlist-*.json"):
            cmd += ["--ro-bind", str(f), f"{SANDBOX_MPL}/{f.name}"]
    for k, v in sandbox_env().items():
        cmd += ["--setenv", k, v]
    cmd += ["--chdir", "/tmp", "--"] + argv
    return cmd


def start_bwrap(cmd: list[str], *, cgroup: JobCgroup | None = None, pass_fds: tuple[int, ...] = (),
                stdin: int | IO[Any] | None = None, stdout: int | IO[Any] | None = None,
                stderr: int | IO[Any] | None = None) -> subprocess.Popen[bytes]:
    """Start a :func:`bwrap_command` so that nothing of the grader can be read inside.

    - bwrap gets an empty environment but for :func:`sandbox_env` (the sandbox's first process,
      pid 1 of its namespace, is a copy of bwrap: it must hold nothing of the grader's);
    - its options (every bind, so the host paths) arrive on a pipe (``--args FD``), not on its
      command line, which any process in the sandbox can read; only the command it runs, which
      the sandboxed process sees as its own anyway, stays there;
    - it starts in ``/``, not in the grader's directory;
    - with a ``cgroup``, the process enters it before it becomes bwrap (a shell that writes
      ``0`` into the cgroup and execs bwrap: see :meth:`JobCgroup.entry`), so everything the
      job starts is in the job's cgroup.
    """
    split = cmd.index("--")
    options = b"".join(a.encode() + b"\0" for a in cmd[1:split])
    args_r, args_w = os.pipe()
    argv = [cmd[0], "--args", str(args_r)] + cmd[split:]
    if cgroup is not None:
        argv = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(cgroup.entry())] + argv
    try:
        proc = subprocess.Popen(argv, env=sandbox_env(), cwd="/",
                                pass_fds=tuple(pass_fds) + (args_r,),
                                start_new_session=True, close_fds=True,
                                stdin=stdin, stdout=stdout, stderr=stderr)
    except BaseException:
        os.close(args_w)
        raise
    finally:
        os.close(args_r)
    try:
        view = memoryview(options)
        while view:
            view = view[os.write(args_w, view):]
    except OSError as exc:
        _kill_group(proc)
        proc.wait()
        raise SandboxError(f"could not start the sandbox: {exc}") from None
    finally:
        os.close(args_w)
    return proc


def sandbox_uid() -> int:
    """A uid no account has, different for every run (RLIMIT_NPROC counts per uid)."""
    return 1_000_000 + secrets.randbelow(1_000_000_000)


# --- running -----------------------------------------------------------------------------------

class _Pump:
    """Feed stdin, drain stdout/stderr and the result channel, with caps and a deadline."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.raw = bytearray()
        self.raw_total = 0
        self.buf = bytearray()
        self.lines: list[bytes] = []
        self.results_total = 0
        self.output_exceeded = False
        self.ready_at: float | None = None     # when the first record came (the runner's ready)
        self.done_at: float | None = None      # when the last record came

    def feed_raw(self, data: bytes) -> bool:
        self.raw_total += len(data)
        room = self.limits.keep_output - len(self.raw)
        if room > 0:
            self.raw += data[:room]
        return self.raw_total <= self.limits.output

    def feed_results(self, data: bytes) -> bool:
        self.results_total += len(data)
        if self.results_total > self.limits.results:
            return False
        self.buf += data
        while True:
            i = self.buf.find(b"\n")
            if i < 0:
                break
            self.lines.append(bytes(self.buf[:i]))
            del self.buf[:i + 1]
            self.done_at = time.monotonic()
            if self.ready_at is None:
                self.ready_at = self.done_at
        return True

    def finish(self) -> None:
        if self.buf:
            self.lines.append(bytes(self.buf))
            self.buf.clear()


def _decode_status(returncode: int | None) -> tuple[int | None, bool]:
    """(signal that killed the student's process or None, whether it was RLIMIT_CPU)."""
    if returncode is None:
        return None, False
    sig = None
    if returncode < 0:
        sig = -returncode
    elif returncode > 128 and returncode - 128 < 65:
        sig = returncode - 128       # bwrap reports a signalled child as 128 + signal
    cpu = sig == signal.SIGXCPU
    return sig, cpu


def _nonblocking_output(proc: subprocess.Popen[bytes] | _TemplateChild) -> int:
    """The fd of a sandbox's stdout (and stderr), made non-blocking for :func:`pump`."""
    if proc.stdout is None:
        raise ValueError("pump() reads the sandbox's output: start it with stdout=PIPE")
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    return fd


def pump(proc: subprocess.Popen[bytes] | _TemplateChild, job_bytes: bytes, result_r: int,
         limits: Limits, cancel: threading.Event | None = None) -> Outcome:
    """Talk to a started sandbox process until it ends (or is killed); return the outcome."""
    t0 = time.monotonic()
    deadline = t0 + limits.timeout
    p = _Pump(limits)
    sel = selectors.DefaultSelector()
    os.set_blocking(result_r, False)
    sel.register(_nonblocking_output(proc), selectors.EVENT_READ, "out")
    sel.register(result_r, selectors.EVENT_READ, "res")
    stdin = proc.stdin
    view = memoryview(job_bytes)
    if stdin is not None:
        os.set_blocking(stdin.fileno(), False)
        sel.register(stdin.fileno(), selectors.EVENT_WRITE, "in")
    open_reads = 2
    timed_out = False
    killed = False
    grace_deadline: float | None = None   # set when (and only when) the job is killed
    try:
        while open_reads:
            now = time.monotonic()
            if not killed and (now >= deadline or (cancel is not None and cancel.is_set())):
                timed_out = now >= deadline
                _kill_group(proc)
                killed = True
                grace_deadline = now + 5.0
            if killed and grace_deadline is not None and now >= grace_deadline:
                break
            wait = min(0.5, max(0.0, (grace_deadline if grace_deadline is not None else deadline) - now))
            for key, _ in sel.select(timeout=wait):
                tag = key.data
                if tag == "in":
                    try:
                        n = os.write(key.fd, view[:65536])
                        view = view[n:]
                    except BlockingIOError:
                        continue
                    except (BrokenPipeError, OSError):
                        view = view[:0]
                    if not view:
                        sel.unregister(key.fd)
                        if stdin is not None:  # always: "in" is registered only while it is open
                            stdin.close()
                        stdin = None
                    continue
                try:
                    data = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(key.fd)
                    open_reads -= 1
                    continue
                ok = p.feed_raw(data) if tag == "out" else p.feed_results(data)
                if not ok and not killed:
                    p.output_exceeded = True
                    _kill_group(proc)
                    killed = True
                    grace_deadline = time.monotonic() + 5.0
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait(timeout=5)
    finally:
        sel.close()
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass
        os.close(result_r)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait()
    p.finish()
    sig, cpu = _decode_status(proc.returncode)
    end = time.monotonic()
    ready, done = p.ready_at or end, p.done_at or end
    return Outcome(lines=p.lines, raw_output=p.raw.decode("utf-8", "replace"),
                   returncode=proc.returncode, timed_out=timed_out,
                   output_exceeded=p.output_exceeded, cpu_exceeded=cpu,
                   signal=None if killed else sig, wall=end - t0,
                   phases={"setup": ready - t0, "cells": done - ready, "teardown": end - done})


READY_LINE = b'{"t":"ready"}'   # inside.READY as inside.Channel writes it


def _require_ready(outcome: Outcome) -> Outcome:
    """The runner's first record says the sandbox (limits, uid, seccomp filter) is complete.

    Without it the student's code never ran: a sandbox failure (e.g. no seccomp filter on this
    machine), reported as ``error`` so that the grader records nothing for the student. The
    student cannot fake or suppress it: it is written before their code is read.
    """
    if outcome.error is None and (not outcome.lines or outcome.lines[0] != READY_LINE):
        tail = outcome.raw_output.strip()[-500:]
        outcome.error = ("the sandbox could not be set up, nothing was run"
                         + (f": {tail}" if tail else f" (exit {outcome.returncode})"))
    elif outcome.error is None:
        del outcome.lines[0]
    return outcome


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
            argv = [sandbox_python(), "-s", "-B", SANDBOX_RUNNER, str(result_w), config]
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
        outcome = _require_ready(pump(proc, job_bytes, result_r, limits, cancel))
        outcome.memory_exceeded = cgroup is not None and cgroup.oom_kills() > 0
        outcome.memory_cap = cap
        return outcome

    def close(self) -> None:
        pass


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


def _kill_group(proc) -> None:
    """Kill a sandbox: the bwrap process group (and so its pid namespace), or a template's job."""
    if isinstance(proc, _TemplateChild):
        proc.kill()
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass

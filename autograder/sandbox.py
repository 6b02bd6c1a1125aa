"""Run untrusted notebook code in a bubblewrap sandbox, with limits.

What the student's process gets (see :func:`bwrap_command`):

- its own pid, network, IPC, UTS and (where available) cgroup namespaces: no network at all
  (only a loopback device that is down), no view of other processes;
- a new root: a tmpfs holding read-only binds of the system (``/usr``), the Python install and
  venv, the ``scalebook`` package and this package's ``runner.py`` -- and nothing else: not the
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
  the source of ``runner.py`` and of the font cache), never the course directory;
- a seccomp filter (``runner.install_seccomp``), installed by the runner after the uid switch
  and before the student's code: no new namespaces (a user namespace would let it mount a tmpfs
  of its own, past RLIMIT_AS and the scratch cap), no mounts, no keyring, bpf, userfaultfd,
  perf_event_open or io_uring. The runner's first record, ``{"t":"ready"}``, says all of this
  is in place; a run without it is a sandbox error (:func:`_require_ready`), never a student's.

When the grader runs as root, bwrap runs as root *without* a user namespace (so the sandbox
can be given a uid of its own, which RLIMIT_NPROC needs: the kernel exempts uid 0 from it) and
keeps only CAP_SETUID/CAP_SETGID, which ``runner.py`` uses to drop to that uid before it reads
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
  (see the cgroup section below). See ``runner.serve`` and :class:`TemplateSandbox`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
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

if TYPE_CHECKING:
    import socket

RUNNER = Path(__file__).resolve().with_name("runner.py")
SANDBOX_RUNNER = "/opt/grader/runner.py"
SANDBOX_MPL = "/tmp/.mpl"
# numpy.random too: numpy imports it lazily, and each job reseeds it (runner._reseed), which
# would otherwise import it anew in every child (12 ms of a 30 ms job).
DEFAULT_PRELOAD = ("numpy", "numpy.random", "matplotlib", "matplotlib.pyplot", "scalebook",
                   "scalebook.checks")


def _code_cells(notebooks: list[dict]) -> list[tuple[dict, str, list[str]]]:
    """Each code cell of ``notebooks`` that parses as Python: the cell, its source, and the
    modules it imports (absolute names; a relative import as ".")."""
    import ast

    out = []
    for nb in notebooks:
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
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
            out.append((cell, source, imports))
    return out


def notebook_preload(notebooks: list[dict]) -> tuple[str, ...]:
    """:data:`DEFAULT_PRELOAD` and the ``scalebook`` modules that code cells of ``notebooks``
    (an assignment's release copy: the instructor's) import, in order.

    A template that has imported them does not import them again in every child: a homework's
    setup cell imports ``scalebook.homework`` (90 ms, three times a whole job's own work).
    Only ``scalebook`` modules, which import no JAX: JAX is imported only if the student does.
    """
    found = list(DEFAULT_PRELOAD)
    for _, _, imports in _code_cells(notebooks):
        found += [n for n in imports if n == "scalebook" or n.startswith("scalebook.")]
    return tuple(dict.fromkeys(found))


#: The packages a warm-up cell may import (JAX never: see ``runner.warm_up``).
WARM_UP_PACKAGES = ("numpy", "matplotlib", "scalebook")
#: The most source the warm-up carries: it travels on the template's command line, where one
#: argument may hold at most 128 KiB (Linux's MAX_ARG_STRLEN); the homeworks' take 4-8 KB.
WARM_UP_BYTES = 32 * 1024


def notebook_warm_up(notebooks: list[dict]) -> tuple[str, ...]:
    """The cells a template runs once before its first job (``runner.warm_up``): the code cells
    of ``notebooks`` (the release copy, which every student gets) but the graded tests, that
    import nothing outside :data:`WARM_UP_PACKAGES`, up to :data:`WARM_UP_BYTES` of source.

    What every student's run loads lazily (matplotlib's text and font caches, a solver table)
    is then loaded once in the template, not once per job: hw1's cells take 27 ms of CPU in a
    job forked from a warmed template, 36 ms from a cold one (17.6 ms run again in one process).
    """
    out: list[str] = []
    size = 0
    for cell, source, imports in _code_cells(notebooks):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade") or not all(
                n.split(".")[0] in WARM_UP_PACKAGES for n in imports):
            continue
        size += len(source.encode("utf-8"))
        if size > WARM_UP_BYTES:   # a warm-up is an optimisation: the first cells are enough
            break
        out.append(source)
    return tuple(out)


MiB = 1 << 20
GiB = 1 << 30


class SandboxError(RuntimeError):
    """The sandbox cannot be started at all (bwrap missing or not working)."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Per-submission limits. ``timeout`` is wall-clock seconds for the whole notebook."""

    timeout: float = 60.0
    cpu: float | None = None            # CPU seconds (default: timeout)
    memory: int = 4 * GiB               # RLIMIT_AS, bytes (JAX with 8 CPU devices needs 2)
    job_memory: int | None = None       # the whole job, by cgroup where one is usable (None: memory)
    nproc: int = 128                    # processes + threads of the sandbox's uid
    fsize: int = 64 * MiB               # largest file it may write
    nofile: int = 256
    scratch: int = 128 * MiB            # size of its /tmp
    output: int = 2 * MiB               # raw stdout+stderr beyond this: killed
    keep_output: int = 64 * 1024        # raw output kept for diagnostics
    results: int = 16 * MiB             # result channel beyond this: killed
    cell_output: int = 20_000           # captured print() output kept per cell
    total_output: int = 200_000         # ... and per notebook

    def rlimits(self) -> dict:
        cpu = int(self.cpu if self.cpu is not None else max(1.0, self.timeout)) + 1
        nproc = int(self.nproc)
        if not as_root():
            # the sandbox keeps our uid, and RLIMIT_NPROC counts all of that uid's processes
            nproc += _count_own_processes()
        return {"as": int(self.memory), "cpu": cpu, "nproc": nproc,
                "fsize": int(self.fsize), "nofile": int(self.nofile)}

    def job_memory_bytes(self) -> int:
        """The memory cap of one submission's whole process tree (and its tmpfs files)."""
        return int(self.memory if self.job_memory is None else self.job_memory)


def _count_own_processes() -> int:
    uid, n = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                n += len(os.listdir(f"/proc/{entry.name}/task")) if entry.stat().st_uid == uid else 0
            except OSError:
                pass
    return n


@dataclasses.dataclass
class Outcome:
    """What came back from one run (all of it untrusted data, except the fields we measured)."""

    lines: list[bytes]                  # result channel, one record per line (unparsed)
    raw_output: str                     # the process's own stdout/stderr (first bytes)
    returncode: int | None
    timed_out: bool = False             # killed by us at the wall-clock limit
    output_exceeded: bool = False       # killed by us: too much output
    cpu_exceeded: bool = False          # killed by the kernel at RLIMIT_CPU
    signal: int | None = None           # the student's process died of this signal
    wall: float = 0.0
    error: str | None = None            # the sandbox itself failed (not the student's doing)
    memory_exceeded: bool = False       # the job's cgroup ran out of memory: the kernel killed in it
    memory_cap: str = ""                # which memory cap held for this run (see memory_cap())
    # seconds per phase, measured here, for bench/grading.py's breakdown: "wait" (for a free
    # sandbox), "cgroup" (set-up, reads, tear-down), "fork" (a template's child), "setup" (to the
    # runner's ready record: namespaces, mounts, limits; for a fresh sandbox bwrap and Python's
    # start), "cells" (the student's cells and captures), "teardown" (to the job's exit); and
    # "job CPU", the CPU seconds of a template's job (its processes, as the template waited them)
    phases: dict[str, float] = dataclasses.field(default_factory=dict)


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


def as_root() -> bool:
    return os.geteuid() == 0


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
            # the template makes a mount, IPC and pid namespace per child, then drops these
            cmd += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_KILL"]
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


# --- the job's memory, by cgroup ---------------------------------------------------------------
#
# RLIMIT_AS caps each process; a cgroup caps the job: every process of one submission (and the
# files it writes to its tmpfs /tmp and /dev/shm) together. The process that becomes bwrap
# enters the cgroup first (start_bwrap), so whatever the sandbox starts inherits it.
#
# - A fresh sandbox: one cgroup per job, limit job_memory, removed after the job.
# - A template sandbox: one cgroup per template, holding the template and its one job at a
#   time, limit = what the template held once ready + job_memory (set before each job). Not a
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


READY_LINE = b'{"t":"ready"}'   # runner.READY as runner.Channel writes it


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


# --- template (pre-imported, fork per submission) ----------------------------------------------

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


# --- availability ------------------------------------------------------------------------------

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
        from .course import REPO, SOLUTIONS

        sb = _local.sandbox = make_sandbox(kind, [SOLUTIONS, REPO])
    try:
        return sb.run(job, limits)
    except SandboxError as exc:
        return Outcome([], "", None, error=f"sandbox on {os.uname().nodename}: {exc}")

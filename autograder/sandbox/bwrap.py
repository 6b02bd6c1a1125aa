"""What the sandbox may see, and the bwrap command that starts it (the design is told in
:mod:`autograder.sandbox.launch`).

The walls, from the trusted side: the host paths bound in read-only (:func:`read_only_binds`,
which refuses any that would show the course or the solutions), the only environment the
sandbox gets (:func:`sandbox_env`), the bwrap command line (:func:`bwrap_command`), and its
start, so that nothing of the grader can be read inside (:func:`start_bwrap`). What runs in
there is the package ``inside/``, bound as :data:`SANDBOX_RUNNER`.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Sequence

from .cgroup import JobCgroup
from .limits import SandboxError, as_root
from .process import kill_group

# inside/, the code that runs in the sandbox, bound read-only as the package "runner"
RUNNER = Path(__file__).resolve().with_name("inside")
SANDBOX_RUNNER = "/opt/grader/runner"
#: The start of every ``python -c`` program the sandbox runs: the runner package, imported
#: from where it is bound; what follows calls one of its entries (``runner.main(sys.argv)``).
RUNNER_IMPORT = f"import sys; sys.path.insert(0, {str(Path(SANDBOX_RUNNER).parent)!r}); import runner; "
RUNNER_MAIN = RUNNER_IMPORT + "runner.main(sys.argv)"
SANDBOX_MPL = "/tmp/.mpl"


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
        kill_group(proc)
        proc.wait()
        raise SandboxError(f"could not start the sandbox: {exc}") from None
    finally:
        os.close(args_w)
    return proc


def sandbox_uid() -> int:
    """A uid no account has, different for every run (RLIMIT_NPROC counts per uid)."""
    return 1_000_000 + secrets.randbelow(1_000_000_000)

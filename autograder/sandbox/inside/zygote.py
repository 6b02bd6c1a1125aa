"""The template (zygote): a pre-imported runner that forks a fresh child per job
(:func:`serve`), and the parent the workers' templates are forked from
(:func:`serve_templates`)."""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import sys
from types import CodeType
from typing import Mapping

from .cells import _plain_python
from .job import Channel, READY, _close_figures, read_job, run_job
from .start import _setup_failed, setup

# --- template (zygote) mode --------------------------------------------------------------------
#
# ``serve`` runs as pid 1 of a bwrap sandbox (``sandbox.TemplateSandbox``), still root but with
# only CAP_SETUID, CAP_SETGID, CAP_SYS_ADMIN, CAP_KILL and CAP_NET_ADMIN, after importing the
# usual modules. Per job it makes a new pid namespace for its next child and forks G, pid 1 of
# that namespace (then sets its own children's namespace back: the next job gets a new one).
# G makes new mount, IPC and UTS namespaces, mounts an empty /tmp, /dev/shm and its own /proc,
# sets the limits, drops to the job's uid, installs the seccomp filter (after its namespaces and
# mounts are made: nothing of them is left to do), sends "ready" and runs the job; everything G
# starts dies with it (the kernel kills a pid namespace whose pid 1 exits). The template waits
# for G and reports how it ended; it kills G when the grader asks. The template itself is not
# dumpable (no ptrace, no /proc/<pid>/fd access), is outside every job's pid namespace (a job
# cannot signal it) and runs as another uid than any job; a job can reach neither the template
# nor any other job. (Forking G from the template itself, not from a child of it that made the
# namespaces, saves a fork and an exit of a copy of the template per job.)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID = 0x20000, 0x04000000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 0x4000, 0x40000
MS_REMOUNT, MS_BIND = 32, 4096


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source: str, target: str, fstype, flags: int, data) -> None:
    _check(libc.mount(source.encode() if source else None, target.encode(),
                      fstype.encode() if fstype else None, flags,
                      data.encode() if data else None), f"mount {target}")


def _mounts_below(prefix: str) -> list[str]:
    """Mount points strictly below ``prefix``, outermost first (from /proc/self/mountinfo)."""
    points = set()
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point.startswith(prefix + "/"):
                points.add(point)
    return sorted(points, key=lambda p: (p.count("/"), p))


def _fresh_tmp(libc, scratch: int) -> None:
    """Mount an empty, size-capped /tmp, keeping the read-only binds the sandbox put below it.

    A venv or checkout that lives under the host's /tmp (a CI clone) is bound into the sandbox
    at the same path; a plain tmpfs over /tmp would hide it, and the student's own
    ``subprocess.run([sys.executable, ...])`` would fail. Each such mount is held by an O_PATH
    descriptor across the new mount and bound back, read-only, on top of it.
    """
    held = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in _mounts_below("/tmp")]
    _mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch},mode=1777")
    for path, fd in held:
        source = f"/proc/self/fd/{fd}"
        if os.path.isdir(source):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            open(path, "a").close()
        _mount(libc, source, path, None, MS_BIND | MS_REC, None)
        _mount(libc, "", path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
        os.close(fd)


def preload(modules: list[str]) -> None:
    """Import what most submissions import, once, in the template process."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    if "matplotlib" in sys.modules:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
            from matplotlib import font_manager

            font_manager.fontManager  # noqa: B018  (the font list is read now, not per job)
        except Exception:
            pass


class _NoJax:
    """A meta-path finder that refuses JAX: a template forks every job, and JAX's runtime (its
    threads) must not be loaded in a process that forks. A student who imports JAX gets it in
    their own job."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("jax", "jaxlib"):
            raise ImportError(f"{name} is not imported in a template's warm-up")
        return None


def warm_up(sources: list[str], budget: float = 2.0) -> dict[str, CodeType]:
    """Run the release notebook's cells once in the template, output discarded, errors (a
    stub's NotImplementedError) ignored, JAX refused, in a namespace dropped after, figures
    closed: what every student's run loads lazily (a solver module, matplotlib's text and font
    caches) is then loaded once, not in every job. At most ``budget`` seconds of cells.

    Returns each plain-Python cell's code object as a job compiles it (:func:`compile_cell`),
    by source: a job reuses them for the cells it runs unchanged (hw1: 31.1 -> 30.6 ms of CPU
    per job)."""
    import time

    compiled: dict[str, CodeType] = {}
    for source in sources:
        code = _plain_python(source, "<cell>")
        if code is not None:
            compiled[source] = code
    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    real = sys.stdout, sys.stderr
    end = time.monotonic() + budget
    sys.meta_path.insert(0, _NoJax)
    try:
        sys.stdout = sys.stderr = io.StringIO()
        for source in sources:
            if time.monotonic() > end:
                break
            try:
                exec(compile(source, "<warm-up>", "exec"), ns)
            except BaseException:
                pass
        _warm_plotting()
    finally:
        sys.stdout, sys.stderr = real
        sys.meta_path.remove(_NoJax)
        ns.clear()
        _close_figures()
    return compiled


def _warm_plotting() -> None:
    """Draw one throwaway figure with what homework plots use (log axes, lines, a reference
    line, labels, a legend, a grid), so that matplotlib's lazy state -- font lookups, text
    and tick machinery -- is built once here, not in every job. A release notebook's own plot
    cell rarely gets that far in the warm-up: it plots the student's answers, which a stub
    does not bind (hw1: 36.5 -> 34.6 ms of CPU per job)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ax.loglog([1.0, 2.0, 4.0], [1.0, 2.0, 3.0], "o-", label="a")
        ax.plot([1.0, 4.0], [2.0, 2.0], "s-", label="b")
        ax.axhline(2.0, color="gray", linestyle="--", label="c")
        ax.axvline(2.0, color="k", linestyle=":")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title("t")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        plt.show()
    except Exception:
        pass


def _reseed() -> None:
    """A fresh process would have fresh random state: give the child one too."""
    import random

    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(int.from_bytes(os.urandom(4), "little"))
        except Exception:
            pass


def _job(header: dict, fds: list[int], compiled: Mapping[str, CodeType]) -> None:
    """G: pid 1 of a fresh pid namespace. Never returns."""
    try:
        libc = _libc()
        _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        _mount(libc, "", "/", None, MS_REC | MS_PRIVATE, None)
        scratch = int(header.get("scratch", 128 << 20))
        _fresh_tmp(libc, scratch)
        if os.path.isdir("/dev/shm"):
            _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=16m,mode=1777")
        _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        os.makedirs("/tmp/.mpl", exist_ok=True)  # _fresh_tmp may have made it for the font list
        os.chmod("/tmp/.mpl", 0o1777)
        os.chdir("/tmp")
        in_r, out_w, result_w = fds
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        os.dup2(result_w, 3)
        os.closerange(4, 1 << 16)  # the template's socket and every other job's fd
        try:
            setup({"rlimits": header.get("rlimits", {}), "uid": header.get("uid")})
        except BaseException as exc:
            _setup_failed(exc)
        libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: like any process of its own
        Channel(3).send(READY)
        _reseed()
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)
        job = read_job(io.FileIO(0, "r", closefd=False))
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        run_job(job, Channel(3), compiled)
    except BaseException as exc:
        try:
            os.write(2, f"runner: {type(exc).__name__}: {exc}\n".encode())
        except BaseException:
            pass
        os._exit(70)
    os._exit(0)


def _prepare(config: dict) -> dict[str, CodeType]:
    """What a template does once, before its first job: import, warm up, become undumpable."""
    preload(config.get("preload", []))
    compiled = warm_up(config.get("warm_up", []))
    _libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    sys.stdout.flush()
    sys.stderr.flush()
    return compiled


def serve(sock_fd: int, config_json: str) -> None:
    """A template on its own: prepare, then serve jobs over the Unix socket ``sock_fd``."""
    import socket

    config = json.loads(config_json)
    sock = socket.socket(fileno=sock_fd)
    _serve_jobs(sock, config, _prepare(config))


def serve_templates(sock_fd: int, config_json: str) -> None:
    """The parent of templates (``template.TemplateParent``): prepare once, then fork one
    template per request that arrives on ``sock_fd``.

    A request is one JSON line carrying, by SCM_RIGHTS, the new template's socket to the grader
    and a descriptor of its cgroup's entry file, opened by the grader. The forked template
    writes ``0`` into that file (it moves itself into its own cgroup, so what it and its jobs
    allocate from then on is charged there, not here), makes a network namespace of its own
    (the jobs of two templates run at once: they must not reach each other over the loopback)
    and serves jobs like any template. This process only forks; it never runs a job."""
    import signal
    import socket

    config = json.loads(config_json)
    sock = socket.socket(fileno=sock_fd)
    compiled = _prepare(config)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the templates as they end
    sock.sendall(json.dumps({"ready": True}).encode() + b"\n")
    buf = b""
    while True:
        lines, fds, buf = _recv_lines(sock, buf, 4)
        if not any(line.strip() for line in lines) and not fds:
            continue
        try:
            request = json.loads(lines[0]) if len(lines) == 1 else None
        except ValueError:
            request = None
        if request != {"template": True} or len(fds) != 2:
            os._exit(3)  # protocol error: the grader starts a new parent
        if os.fork() == 0:
            sock.close()
            _forked_template(socket.socket(fileno=fds[0]), fds[1], config, compiled)
        for fd in fds:
            os.close(fd)


def _recv_lines(sock, buf: bytes, max_fds: int) -> tuple[list[bytes], list[int], bytes]:
    """The next message from the grader: its complete lines (after ``buf``, what was left of
    a line), the descriptors it carried, and what is left of a line now. Exits when the
    grader has closed the socket."""
    import socket

    msg, fds, _, _ = socket.recv_fds(sock, 65536, max_fds)
    if not msg:
        os._exit(0)
    lines = (buf + msg).split(b"\n")
    return lines[:-1], fds, lines[-1]


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP, CLONE_NEWNET = 0x8913, 0x8914, 0x1, 0x40000000


def _loopback_up() -> None:
    """Bring up ``lo`` in a new network namespace, as bwrap's --unshare-net does."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _forked_template(sock, cgroup_entry: int, config: dict, compiled: Mapping[str, CodeType]) -> None:
    """A template forked by :func:`serve_templates`: its own cgroup and network, then jobs.
    Never returns."""
    import signal

    try:
        os.write(cgroup_entry, b"0")
        os.close(cgroup_entry)
        _check(_libc().unshare(CLONE_NEWNET), "unshare")
        _loopback_up()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except BaseException as exc:
        try:
            sock.sendall(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        except BaseException:
            pass
        os._exit(3)
    try:
        _serve_jobs(sock, config, compiled)
    except BaseException:
        pass
    os._exit(0)


def _serve_jobs(sock, config: dict, compiled: Mapping[str, CodeType]) -> None:
    """The template's loop: one job at a time, over a Unix socket from the grader."""
    import fcntl
    import select
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    libc = _libc()
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def send(obj) -> None:
        sock.sendall(json.dumps(obj).encode() + b"\n")

    send({"ready": True, "modules": sorted(m for m in config.get("preload", []) if m in sys.modules)})
    buf = b""
    child = None
    pidfd = None
    while True:
        if child is None:
            lines, fds, buf = _recv_lines(sock, buf, 8)
            headers = [ln for ln in lines if ln.strip() and b'"kill"' not in ln]  # stale kills
            if not fds and not headers:
                continue
            if len(fds) != 3 or len(headers) != 1:
                os._exit(3)  # protocol error: the grader starts a new template
            header = json.loads(headers[0])
            # out of the way of 0-3, which G sets up from these
            fds = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in fds] + fds
            for fd in fds[3:]:
                os.close(fd)
            fds = fds[:3]
            if libc.unshare(CLONE_NEWPID) != 0:  # the next child is pid 1 of a new one
                os._exit(3)
            child = os.fork()
            if child == 0:
                _job(header, fds, compiled)
            if libc.setns(own_pid_ns, CLONE_NEWPID) != 0:  # so that the next job gets a new one
                os._exit(3)
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(child)
            send({"started": True})
            continue
        if pidfd is None:  # never: it is set with child, above; a bug ends this template
            os._exit(3)
        ready, _, _ = select.select([sock.fileno(), pidfd], [], [])
        if pidfd in ready:
            _, status, usage = os.wait4(child, 0)
            os.close(pidfd)
            child, pidfd = None, None
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            # the CPU seconds of the job's processes (those waited for), for the bench
            send({"exit": code, "cpu": usage.ru_utime + usage.ru_stime})
            continue
        data = sock.recv(65536)
        if not data:
            os.kill(child, signal.SIGKILL)
            os._exit(0)
        buf += data
        while b"\n" in buf:
            line, _, buf = buf.partition(b"\n")
            if b"kill" in line:
                try:
                    os.kill(child, signal.SIGKILL)  # pid 1 of its namespace: all of the job
                except ProcessLookupError:
                    pass

"""Run a command as an ordinary user (``nobody``) from a root test run, for real.

The grader's non-root mode (bwrap ``--unshare-user``) must be tested as a real unprivileged
uid, but the Python it needs may sit in a directory no other user can enter (pyenv under
``/root``, mode 0700). This wrapper, started as root, makes a private mount namespace (nothing
changes on the host), makes each path the command needs reachable there -- a directory that
``nobody`` cannot enter is covered by an empty world-readable tmpfs into which only the needed
paths are bound back -- then drops to the uid (no groups, no capabilities) and execs the
command with the environment it was given::

    python unprivileged.py UID PATH[:PATH...] -- COMMAND ARGS...

Exit status 77 with a line on stderr: it cannot be done on this machine (not root, no mount
namespace, ...); the test skips and says why.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from pathlib import Path

CANNOT = 77
CLONE_NEWNS, MS_REC, MS_PRIVATE, MS_BIND = 0x20000, 0x4000, 0x40000, 4096


def _fail(why: str) -> None:
    sys.stderr.write(f"unprivileged: {why}\n")
    sys.exit(CANNOT)


def can_enter(path: Path, uid: int, gid: int) -> bool:
    """Whether ``uid`` (group ``gid``, no other groups) may search directory ``path``."""
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def blocker(path: Path, uid: int, gid: int) -> Path | None:
    """The outermost directory on the way to ``path`` that ``uid`` cannot enter."""
    for parent in reversed(path.parents):
        if not can_enter(parent, uid, gid):
            return parent
    return None


def _mount(libc, source, target, fstype, flags, data) -> None:
    enc = (lambda s: s.encode() if s is not None else None)
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        _fail(f"mount {target}: {os.strerror(ctypes.get_errno())}")


def make_reachable(paths: list[Path], uid: int, gid: int, libc) -> None:
    """Cover each blocking directory with a tmpfs holding binds of just the needed paths."""
    for _ in range(8):  # a blocker below another blocker shows up on the next round
        blocked: dict[Path, list[Path]] = {}
        for p in paths:
            b = blocker(p, uid, gid)
            if b is not None:
                blocked.setdefault(b, []).append(p)
        if not blocked:
            return
        for b, inside in blocked.items():
            keep = sorted({p for p in inside if not any(q != p and q in p.parents for q in inside)})
            held = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in keep]
            _mount(libc, "tmpfs", str(b), "tmpfs", 0, "mode=0755,size=1m")
            for p, fd in held:
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    p.mkdir(parents=True, exist_ok=True)
                else:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.touch()
                _mount(libc, f"/proc/self/fd/{fd}", str(p), None, MS_BIND | MS_REC, None)
                os.close(fd)
    _fail(f"cannot make {paths} reachable for uid {uid}")


def main(argv: list[str]) -> None:
    if "--" not in argv:
        _fail("usage: unprivileged.py UID PATH[:PATH...] -- COMMAND ARGS...")
    uid, paths, cmd = int(argv[1]), argv[2], argv[argv.index("--") + 1:]
    gid = uid
    if os.geteuid() != 0:
        _fail("the tests do not run as root, so they cannot switch to another user")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        _fail(f"no private mount namespace: {os.strerror(ctypes.get_errno())}")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None)
    make_reachable([Path(p).resolve() for p in paths.split(":") if p], uid, gid, libc)
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        _fail(f"cannot become uid {uid}: {exc}")
    if os.getuid() == 0 or os.geteuid() == 0:
        _fail("still root after the switch")
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv)

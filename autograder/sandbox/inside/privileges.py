"""Dropping to the job's uid: no groups, no capabilities, no_new_privs. Fails closed."""

from __future__ import annotations

import os

# --- privileges --------------------------------------------------------------------------------

def drop_privileges(uid: int) -> None:
    """Become ``uid`` (no groups, no capabilities, no_new_privs). Fails closed."""
    if os.getuid() == 0 or os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _no_new_privs()
    _clear_capabilities()
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise SystemExit("runner: could not drop privileges")


def _clear_capabilities() -> None:
    """Empty every capability set (the uid change empties all but the inheritable one)."""
    try:
        import ctypes

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}, all zero
        libc = ctypes.CDLL(None, use_errno=True)
        libc.capset(ctypes.byref(Header(0x20080522, 0)), data)  # _LINUX_CAPABILITY_VERSION_3
    except Exception:  # pragma: no cover
        pass


def _no_new_privs() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    except Exception:  # pragma: no cover - best effort; bwrap sets it too
        pass

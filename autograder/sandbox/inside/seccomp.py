"""The seccomp filter installed before any of the student's code (see the comment below)."""

from __future__ import annotations

import os

# --- seccomp ----------------------------------------------------------------------------------
#
# A classic-BPF seccomp filter, installed after the uid switch and no_new_privs and before any of
# the student's code (in each forked child of the template too, after the template has made that
# child's namespaces). It closes what rlimits and bwrap do not: without it the student's process
# could make a user namespace (unshare, clone with CLONE_NEWUSER) and, "root" in there, mount a
# tmpfs of its own -- memory outside RLIMIT_AS and the scratch cap -- or reach kernel surfaces no
# notebook needs. Denied with EPERM: the namespace and mount calls, the keyring, bpf,
# userfaultfd, perf_event_open, io_uring, and clone with any CLONE_NEW* flag; clone3 (whose
# flags live in memory a filter cannot read) gets ENOSYS, so libc falls back to clone, which is
# checked. Threads, fork and subprocess use clone without those flags and work as before. A
# syscall of another ABI (i386 by int 0x80) kills the process, an x32 one gets EPERM. On an
# architecture without a table here, or if the filter cannot be installed, the runner refuses
# to run the job: it exits without the "ready" record and the grader reports a sandbox error.


SECCOMP_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}     # AUDIT_ARCH_*
_COMMON_NEW = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
               "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
               "fsmount": 432, "fspick": 433, "mount_setattr": 442, "open_tree_attr": 467}
SECCOMP_DENY = {
    "x86_64": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
               "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
               "userfaultfd": 323, "perf_event_open": 298, **_COMMON_NEW},
    "aarch64": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
                "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
                "userfaultfd": 282, "perf_event_open": 241, **_COMMON_NEW},
}
SECCOMP_CLONE = {"x86_64": 56, "aarch64": 220}
SECCOMP_CLONE3 = 435
# CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET (CLONE_NEWTIME, 0x80, is only
# accepted by unshare and clone3, both refused)
CLONE_NEW_MASK = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
X32_SYSCALL_BIT = 0x40000000

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


class SandboxSetupError(RuntimeError):
    """The sandbox could not be completed: the student's code must not run."""


def seccomp_program(arch: str) -> list[tuple[int, int, int, int]]:
    """The filter for ``arch`` as (code, jt, jf, k) instructions. Raises for an unknown arch."""
    if arch not in SECCOMP_ARCH:
        raise SandboxSetupError(f"no seccomp syscall table for the {arch!r} architecture; "
                                "refusing to run untrusted code without the filter")
    prog: list[list] = []   # [code, jt, jf, k], jumps as labels until resolved

    def op(code, k, jt=0, jf=0):
        prog.append([code, jt, jf, k])

    op(_BPF_LD_W_ABS, 4)                                   # seccomp_data.arch
    op(_BPF_JEQ_K, SECCOMP_ARCH[arch], 1, 0)
    op(_BPF_RET_K, SECCOMP_RET_KILL_PROCESS)
    op(_BPF_LD_W_ABS, 0)                                   # seccomp_data.nr
    if arch == "x86_64":
        op(_BPF_JGE_K, X32_SYSCALL_BIT, "eperm", 0)
    for nr in sorted(set(SECCOMP_DENY[arch].values())):
        op(_BPF_JEQ_K, nr, "eperm", 0)
    op(_BPF_JEQ_K, SECCOMP_CLONE3, "enosys", 0)
    op(_BPF_JEQ_K, SECCOMP_CLONE[arch], 0, "allow")
    op(_BPF_LD_W_ABS, 16)                                  # low 32 bits of args[0]: the flags
    op(_BPF_JSET_K, CLONE_NEW_MASK, "eperm", "allow")
    labels = {"allow": len(prog), "eperm": len(prog) + 1, "enosys": len(prog) + 2}
    op(_BPF_RET_K, SECCOMP_RET_ALLOW)
    op(_BPF_RET_K, SECCOMP_RET_ERRNO | EPERM)
    op(_BPF_RET_K, SECCOMP_RET_ERRNO | ENOSYS)
    out = []
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        assert 0 <= jt < 256 and 0 <= jf < 256
        out.append((code, jt, jf, k))
    return out


def _seccomp_mode() -> str | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Seccomp:"):
                    return line.split()[1]
    except OSError:
        pass
    return None


def install_seccomp(arch: str | None = None) -> None:
    """Install the filter on this (single-threaded) process; fail closed."""
    import ctypes
    import struct

    arch = arch or os.uname().machine
    if struct.calcsize("P") != 8:
        raise SandboxSetupError("the seccomp filter needs a 64-bit Python")
    program = seccomp_program(arch)
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError as exc:
        raise SandboxSetupError(f"cannot count this process's threads: {exc}") from None
    if threads != 1:  # prctl filters only the calling thread (and what it starts later)
        raise SandboxSetupError(f"the runner has {threads} threads before the student's code")

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(program))(*[SockFilter(*ins) for ins in program])
    fprog = SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 39, 22, 2
    libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
               ctypes.c_ulong(0))
    if libc.prctl(PR_GET_NO_NEW_PRIVS, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 1:
        raise SandboxSetupError("no_new_privs could not be set")
    ret = libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER),
                     ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p), ctypes.c_ulong(0),
                     ctypes.c_ulong(0))
    if ret != 0:
        err = ctypes.get_errno()
        raise SandboxSetupError(f"the seccomp filter could not be installed: {os.strerror(err)}")
    if _seccomp_mode() != "2":
        raise SandboxSetupError("the seccomp filter is not in force after installing it")

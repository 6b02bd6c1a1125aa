"""A fresh runner's start (one process per submission): limits, privileges, the seccomp
filter, the ``ready`` record, then the job read from stdin (:func:`main`)."""

from __future__ import annotations

import json
import os
import resource  # here, not per job: a template's jobs would each import it (0.75 ms)
import sys

from .privileges import _no_new_privs, drop_privileges
from .seccomp import install_seccomp
from .job import Channel, READY, read_job, run_job

def apply_rlimits(limits: dict) -> None:
    """Set soft = hard limits (an unprivileged process can never raise them again)."""
    names = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU,
             "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
             "nofile": resource.RLIMIT_NOFILE}
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, value in limits.items():
        if key == "cpu":  # SIGXCPU at the limit, SIGKILL a second later
            resource.setrlimit(names[key], (int(value) - 1, int(value)))
        else:
            resource.setrlimit(names[key], (int(value), int(value)))


def _exit_at_cpu_limit() -> None:
    """Pid 1 of a namespace (a template's job; as an ordinary user, the runner) is immune to
    signals it has no handler for, RLIMIT_CPU's SIGXCPU included: without a handler it would
    run on to the hard limit and die of SIGKILL, which reads as a crash, not as a CPU limit.
    Exiting with 128 + SIGXCPU reports it as a process killed by SIGXCPU would be."""
    import signal

    signal.signal(signal.SIGXCPU, lambda signum, frame: os._exit(128 + signum))


def setup(config: dict) -> None:
    """Limits, then the uid, then the seccomp filter: all before any of the student's code is
    read. Raises :class:`SandboxSetupError` if the filter cannot be installed."""
    try:  # if memory runs out on the machine, the kernel kills a student's process first
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    apply_rlimits(config.get("rlimits", {}))
    if os.getpid() == 1:
        _exit_at_cpu_limit()
    if config.get("uid") is not None:
        drop_privileges(int(config["uid"]))
    else:
        _no_new_privs()
    install_seccomp()


def _setup_failed(exc: BaseException) -> None:
    """No "ready" record was sent: the grader reports a sandbox error, not a student's run."""
    try:
        os.write(2, f"runner: sandbox error: {type(exc).__name__}: {exc}\n".encode())
    except BaseException:
        pass
    os._exit(72)


def main(argv: list[str]) -> None:
    fd = int(argv[1])
    channel = Channel(fd)
    try:
        setup(json.loads(argv[2]) if len(argv) > 2 else {})
    except BaseException as exc:
        _setup_failed(exc)
    channel.send(READY)  # the first record: the sandbox is complete, the student's code may run
    job = read_job(sys.stdin.buffer)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    try:
        run_job(job, channel)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(0)  # do not wait for threads the student started

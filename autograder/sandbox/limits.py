"""What one sandboxed run may use (:class:`Limits`) and what came back from it
(:class:`Outcome`): the data the trusted side and its callers share."""

from __future__ import annotations

import dataclasses
import math
import os

MiB = 1 << 20
GiB = 1 << 30


class SandboxError(RuntimeError):
    """The sandbox cannot be started at all (bwrap missing or not working)."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Per-submission limits. ``timeout`` is wall-clock seconds for the whole notebook."""

    timeout: float = 60.0
    # CPU seconds before SIGXCPU. The default lies a second past the wall clock, so one busy
    # thread always meets the wall-clock limit first and its student reads one reason ("ran
    # longer than"), whatever the machine's load; only threads burning CPU in parallel meet it.
    cpu: float | None = None
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
        """The kernel's limits; ``cpu`` is the hard limit (SIGKILL), a second past the soft one."""
        soft = math.ceil(self.cpu) if self.cpu is not None else math.ceil(self.timeout) + 1
        soft = max(1, soft)
        cpu = soft + 1
        nproc = int(self.nproc)
        if not as_root():
            # the sandbox keeps our uid, and RLIMIT_NPROC counts all of that uid's processes
            nproc += _count_own_processes()
        return {"as": int(self.memory), "cpu": cpu, "nproc": nproc,
                "fsize": int(self.fsize), "nofile": int(self.nofile)}

    def job(self, steps: list[dict]) -> dict:
        """The job ``sandbox/inside/`` runs under these limits: the notebook's ``steps`` (its code
        cells and captures, in order) and the print output it keeps, per cell and in all."""
        return {"steps": steps,
                "limits": {"cell_output": self.cell_output, "total_output": self.total_output}}

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




def as_root() -> bool:
    return os.geteuid() == 0

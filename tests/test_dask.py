"""Grading on a Dask cluster: a real ``dask scheduler`` and ``dask worker`` on 127.0.0.1.

The students' code runs in the workers' sandboxes; validation, checks and the gradebook stay
in the grading process. The results must equal a local run's. The cluster is started for this
module only, within bounded time, and its processes (and only they) are stopped afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import corpus, fixture  # noqa: E402

from autograder.course import REPO, Course  # noqa: E402
from autograder.grading.grade import grade_assignment  # noqa: E402
from autograder.sandbox import Limits  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

LIMITS = Limits(timeout=5, memory=1 << 30, nproc=64)
START_TIMEOUT = 60


def _stop(proc: subprocess.Popen) -> None:
    """Stop a process we started, and its process group (its own session)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers of its group (the nanny's worker)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dask")
    sched_file = tmp / "scheduler.json"
    env = dict(os.environ, PYTHONPATH=str(REPO), DASK_TEMPORARY_DIRECTORY=str(tmp))
    procs = []
    log = open(tmp / "cluster.log", "wb")
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(sched_file)],
            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + START_TIMEOUT
        while not sched_file.exists() and time.monotonic() < deadline:
            assert procs[0].poll() is None, (tmp / "cluster.log").read_text()[-3000:]
            time.sleep(0.1)
        time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", address, "--nthreads", "2", "--nworkers", "1",
             "--no-dashboard", "--memory-limit", "0", "--local-directory", str(tmp / "worker"),
             "--death-timeout", "60", "--host", "127.0.0.1"],
            cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        from distributed import Client

        with Client(address, timeout=START_TIMEOUT, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=START_TIMEOUT)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)
        log.close()


def test_grading_on_a_dask_cluster(cluster, tmp_path_factory):
    base = fixture.prepared(tmp_path_factory)
    remote = fixture.copy_course(base, tmp_path_factory.mktemp("remote") / "course")
    local = fixture.copy_course(base, tmp_path_factory.mktemp("local") / "course")
    release = fixture.release_notebook(remote)
    hostile = corpus.build(release, str(remote), 9, "127.0.0.1")
    subs = {s: d for s, (d, _) in corpus.honest_submissions(release).items()}
    subs.update({k: hostile[k].data for k in ("os-exit", "infinite-loop", "edited-test", "corrupt-json")})
    for root in (remote, local):
        for student, data in subs.items():
            fixture.submit(root, student, data)
    t = time.monotonic()
    there = grade_assignment(Course(remote), fixture.ASSIGNMENT, scheduler=cluster, limits=LIMITS,
                             progress=False)
    print(f"graded on the dask cluster in {time.monotonic() - t:.1f} s")
    here = grade_assignment(Course(local), fixture.ASSIGNMENT, limits=LIMITS, progress=False)
    assert there.errors == {} and "dask" in there.sandbox and there.workers == 2
    assert {r.student: r.to_json() for r in there.results} == {r.student: r.to_json() for r in here.results}
    assert fixture.scores_in_gradebook(remote) == fixture.scores_in_gradebook(local)
    assert there.by_student()["infinite-loop"].status == "timed out"

    from distributed import Client

    with Client(cluster, set_as_default=False) as client:  # the code did run on the worker
        ran = client.run(lambda: __import__("autograder.sandbox.pick").sandbox.pick.REMOTE_JOBS)
    assert sum(ran.values()) == len(subs)  # + the self-check, - the corrupt file (never run)

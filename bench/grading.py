"""Benchmark: nbgrader autograde vs. autograder.grading.grade.grade_assignment, same submissions.

    .venv/bin/python bench/grading.py [--assignment hw1-rooflines] [-n 24] [--workers N]
                                      [--class-size 2000] [--detail] [--keep DIR]

Builds N sample submissions of the assignment from ``exercises/`` (answer cells filled with
the solutions' code; every fifth with two answers wrong, every fifth with three left
unanswered), grades identical copies of one course with plain ``nbgrader autograde`` and with
``grade_assignment`` (each as a fresh process, on this machine, one after the other), and
prints both times, their ratio, the per-notebook overhead and the floor: the time the
students' own cells take when everything they import is already imported. Exits non-zero
unless both gave identical scores. ``--detail`` also times our grader with one worker, with a
pre-imported template and with a fresh sandbox per notebook (overhead without parallelism).

Then, class scale: ``--class-size`` notebooks (default 2,000; 0 skips it) built the same way
are graded by ``grade_assignment`` alone (nbgrader would take over an hour), and the run prints
wall time, cost per notebook, the peak memory of the whole process tree (the grader and its
sandboxes, sampled every 50 ms) and, where a cgroup v1 ``cpuacct`` group can be made (root), the
CPU time of that whole tree, and checks that every student got the score the same
submission got in the side-by-side run.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ENV = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"),
           JAX_PLATFORMS="cpu", MPLBACKEND="Agg", PYTHONHASHSEED="0",
           PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


def nbg(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def text(src) -> str:
    return "".join(src) if isinstance(src, list) else src


def prepare_course(root: Path, assignment: str) -> None:
    """source/ from solutions/, then nbgrader generate_assignment (release/ + gradebook)."""
    shutil.copytree(REPO / "solutions" / assignment, root / "source" / assignment)
    code = (
        "import logging, sys\n"
        "from nbgrader.apps import NbGraderAPI\n"
        "from nbgrader.coursedir import CourseDirectory\n"
        "from traitlets.config import Config\n"
        f"cfg = Config({{'CourseDirectory': {{'root': {str(root)!r}}}}})\n"
        "api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)\n"
        "api.log.setLevel(logging.ERROR)\n"
        f"r = api.generate_assignment({assignment!r}, force=True, create=True)\n"
        "sys.exit(0 if r['success'] else r.get('log') or r.get('error'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV, cwd=root)


def wrong(source: str) -> str:
    """The solution code with every number it binds doubled (a wrong but well-formed answer)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return source + "".join(f"\n{n} = {n} * 2" for n in dict.fromkeys(names))


def fill_identity(nb: dict, root: Path, assignment: str, student: str) -> None:
    """A homework with per-student numbers: the student's id and key in the course at ``root``."""
    from autograder.course import Course
    from autograder.notebook import is_identity_cell
    from autograder.variants import key_for
    from scalebook.homework import spec_for

    if spec_for(assignment) is None:
        return
    key = key_for(Course(root), student)
    for cell in nb["cells"]:
        if is_identity_cell(cell):
            cell["source"] = f"STUDENT_ID = {student!r}\nHOMEWORK_KEY = {key!r}\n"


def build_submissions(root: Path, assignment: str, n: int) -> list[str]:
    base_path = REPO / "exercises" / assignment / f"{assignment}.ipynb"
    if not base_path.is_file():
        base_path = root / "release" / assignment / f"{assignment}.ipynb"
    base = json.loads(base_path.read_text())
    source = json.loads((root / "source" / assignment / f"{assignment}.ipynb").read_text())
    solutions = {nbg(c)["grade_id"]: text(c["source"]) for c in source["cells"]
                 if nbg(c).get("solution") and c["cell_type"] == "code"}
    answer_ids = [c for c in solutions]
    students = []
    for i in range(n):
        nb = copy.deepcopy(base)
        kind = i % 5
        for j, cell in enumerate(nb["cells"]):
            gid = nbg(cell).get("grade_id")
            if gid not in solutions:
                continue
            k = answer_ids.index(gid)
            if kind == 3 and k in ((i // 5) % len(answer_ids), (i // 5 + 3) % len(answer_ids)):
                cell["source"] = wrong(solutions[gid])
            elif kind == 4 and k % 4 == (i // 5) % 4 and k < 12:
                continue  # left as the stub: not answered
            else:
                cell["source"] = solutions[gid]
        student = f"student{i:03d}"
        fill_identity(nb, root, assignment, student)
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / f"{assignment}.ipynb").write_text(json.dumps(nb, indent=1))
        (folder / "timestamp.txt").write_text("2026-01-15 10:00:00.000000 UTC")
        students.append(student)
    return students


FLOOR = r'''
import json, sys, time, builtins
import numpy, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import scalebook, scalebook.checks
sys.path.insert(0, REPO)
from autograder.sandbox.inside import python_source
total = 0.0
for path in sys.argv[1:]:
    nb = json.load(open(path))
    ns = {"__name__": "__main__", "__builtins__": builtins}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] != "code" or meta.get("grade"):
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        t = time.perf_counter()
        try:
            exec(compile(python_source(src), "<cell>", "exec"), ns)
        except BaseException:
            pass
        total += time.perf_counter() - t
        plt.close("all")
print(total)
'''


def measure_floor(root: Path, assignment: str, students: list[str]) -> float:
    paths = [str(root / "submitted" / s / assignment / f"{assignment}.ipynb") for s in students]
    out = subprocess.run([sys.executable, "-c", f"REPO = {str(REPO)!r}\n" + FLOOR, *paths],
                         check=True, capture_output=True, text=True, env=ENV)
    return float(out.stdout.strip().splitlines()[-1])


def run_nbgrader(root: Path, assignment: str) -> float:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", assignment, "--force",
                           f"--CourseDirectory.root={root}", "--log-level=ERROR"],
                          cwd=root, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"nbgrader autograde failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


# Stage timers for the breakdown, installed in the grading process by wrapping the stages'
# entry points (measurement only: the grader itself is unchanged). Each records, per student,
# seconds spent; the sandbox's own phases come with each run's Outcome.phases.
STAGE_TIMERS = r'''
import collections, json, os, threading, time
from autograder.grading import grade as _g, record as _r
STAGES = collections.defaultdict(lambda: collections.defaultdict(float))
_fsync, _local = os.fsync, threading.local()

def _timed(fn, key, who):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            STAGES[who(a)][key] += time.perf_counter() - t
    return wrapper

def _fsync_timed(fd):
    t = time.perf_counter()
    try:
        return _fsync(fd)
    finally:
        _local.fsync = getattr(_local, "fsync", 0.0) + time.perf_counter() - t

def _write_files(fn):
    def wrapper(where, record, *a, **k):
        _local.fsync, t = 0.0, time.perf_counter()
        try:
            return fn(where, record, *a, **k)
        finally:
            row = STAGES[record.result.student]
            row["record: fsync"] += _local.fsync
            row["record: files"] += time.perf_counter() - t - _local.fsync
    return wrapper

def _commit(fn):
    def wrapper(gb, layout, results, *a, **k):
        t = time.perf_counter()
        try:
            return fn(gb, layout, results, *a, **k)
        finally:
            share = (time.perf_counter() - t) / max(1, len(results))
            for result, _ in results:
                STAGES[result.student]["record: SQL"] += share
    return wrapper

def _finish(fn):
    def wrapper(self, task, validation, future):
        try:
            return fn(self, task, validation, future)
        finally:
            try:
                for k, v in future.result().phases.items():
                    STAGES[task.student]["sandbox: " + k] += v
            except Exception:
                pass
    return wrapper

os.fsync = _fsync_timed
_g.write_files = _write_files(_g.write_files)
_g.commit_results = _commit(_g.commit_results)
_g.build_record = _timed(_g.build_record, "checking", lambda a: a[1])
_g._GradingRun.start = _timed(_g._GradingRun.start, "read, validate, gradebook check", lambda a: a[1].student)
_g._GradingRun.finish = _finish(_g._GradingRun.finish)
'''


def grading_script(root: Path, assignment: str, workers: int, sandbox: str = "template",
                   stages: Path | None = None) -> str:
    """A Python program that grades the course at ``root`` (exit status 1 if any errors);
    with ``stages``, it also writes there each student's seconds per stage (JSON)."""
    return (
        "import sys, time, json\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        + (STAGE_TIMERS if stages else "") +
        "from pathlib import Path\n"
        "from autograder.course import Course\n"
        "from autograder.grading.grade import grade_assignment\n"
        "cpu0 = time.thread_time()\n"
        f"r = grade_assignment(Course(Path({str(root)!r})), {assignment!r}, workers={workers}, "
        f"sandbox={sandbox!r}, progress=False)\n"
        + (f"json.dump({{'students': STAGES, 'main_cpu': time.thread_time() - cpu0, "
           f"'order': [x.student for x in r.results]}}, open({str(stages)!r}, 'w'))\n"
           if stages else "") +
        "from autograder.cli import exit_with\n"
        "exit_with(1 if r.errors else 0)  # as python -m autograder ends\n"
    )


STAGE_ORDER = ("sandbox: wait", "sandbox: fork", "sandbox: cgroup", "sandbox: setup",
               "sandbox: cells", "sandbox: teardown", "sandbox: job CPU", "read, validate, gradebook check",
               "checking", "record: SQL", "record: files", "record: fsync")


def print_breakdown(path: Path, label: str) -> None:
    """Where each notebook's time went (from :data:`STAGE_TIMERS`): summed over the class, per
    notebook, and per notebook in the first and the last 10% graded (growth with the class)."""
    data = json.loads(path.read_text())
    stages, order = data["students"], [s for s in sorted(data["students"])]
    n = len(order)
    tenth = max(1, n // 10)
    print(f"breakdown, {label}: {n} notebooks; seconds summed over the class (sandbox phases "
          f"run on every worker at once), ms per notebook, ms per notebook in the first and last "
          f"10% (by student id, the order the grader takes them)")
    for key in STAGE_ORDER:
        total = sum(stages[s].get(key, 0.0) for s in order)
        first = sum(stages[s].get(key, 0.0) for s in order[:tenth]) / tenth
        last = sum(stages[s].get(key, 0.0) for s in order[-tenth:]) / tenth
        print(f"  {key:34s} {total:8.2f} s  {1000 * total / n:7.2f} ms  "
              f"first 10% {1000 * first:7.2f} ms  last 10% {1000 * last:7.2f} ms")
    print(f"  {'grader main thread, CPU':34s} {data['main_cpu']:8.2f} s  "
          f"{1000 * data['main_cpu'] / n:7.2f} ms")


def run_ours(root: Path, assignment: str, workers: int, sandbox: str,
             stages: Path | None = None) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", grading_script(root, assignment, workers, sandbox, stages)],
                   check=True, env=ENV, cwd=root)
    return time.perf_counter() - t


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def cpu_group() -> Path | None:
    """A new cgroup v1 ``cpuacct`` group, where this process may make one (root on a cgroup v1
    host), else None: its ``cpuacct.usage`` is the CPU time, kernel's included, of every
    process that ever ran in it -- the grader, its threads, the templates and every job."""
    import secrets

    try:
        group = CPUACCT / f"scalebook-bench-{os.getpid()}-{secrets.token_hex(3)}"
        group.mkdir()
        return group
    except OSError:
        return None


def run_ours_measured(root: Path, assignment: str, workers: int,
                      stages: Path | None = None) -> tuple[float, int, float | None]:
    """Like :func:`run_ours`; also the peak total RSS (bytes) of its process tree and, where
    :func:`cpu_group` can make a group, the CPU seconds of the whole tree (else None)."""
    import threading

    import psutil

    peak, stop = [0], threading.Event()
    group = cpu_group()
    cmd = [sys.executable, "-c", grading_script(root, assignment, workers, stages=stages)]
    if group is not None:  # the shell enters the group, then becomes the grader
        cmd = ["/bin/sh", "-c", 'echo $$ > "$0/tasks" && exec "$@"', str(group), *cmd]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=ENV, cwd=root)

    def sample():
        top = psutil.Process(proc.pid)
        while not stop.is_set():
            try:
                tree = [top, *top.children(recursive=True)]
                total = 0
                for p in tree:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
                peak[0] = max(peak[0], total)
            except psutil.Error:
                pass
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rc = proc.wait()
    elapsed = time.perf_counter() - t
    stop.set()
    sampler.join()
    cpu = None
    if group is not None:
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        for _ in range(50):  # empty once the last sandbox process is reaped
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    if rc != 0:
        sys.exit(f"grading the class failed (exit status {rc})")
    return elapsed, peak[0], cpu


def class_scale(tmp: Path, assignment: str, size: int, workers: int, reference: dict) -> bool:
    """Grade a generated class of ``size``; print wall time, per notebook and peak memory."""
    root = tmp / "class"
    prepare_course(root, assignment)
    t = time.perf_counter()
    students = build_submissions(root, assignment, size)
    built = time.perf_counter() - t
    wall, peak, cpu = run_ours_measured(root, assignment, workers, stages=tmp / "stages-class.json")
    got = scores(root, assignment)
    # build_submissions is deterministic in the student's index: the first n students here have
    # the notebooks of the side-by-side run, so their scores must match it; and all are graded
    same = all(got.get(s) == v for s, v in reference.items()) and len(got) == len(students)
    print(f"class of {size} ({assignment}, {workers} workers; notebooks built in {built:.1f} s): "
          f"{wall:.1f} s wall, {1000 * wall / size:.1f} ms per notebook, "
          f"peak memory {peak / 2 ** 30:.2f} GiB (grader + sandboxes); "
          f"every student graded and scores as in the side-by-side run: {same}")
    if cpu is not None:
        print(f"CPU of the whole process tree (grader, templates, jobs; kernel time included): "
              f"{cpu:.1f} s, {1000 * cpu / size:.1f} ms per notebook")
    print_breakdown(tmp / "stages-class.json", f"class of {size}")
    return same


def scores(root: Path, assignment: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {s.student_id: {g.name: g.auto_score for nb in s.notebooks for g in nb.grades}
                for s in gb.assignment_submissions(assignment)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--assignment", default="hw1-rooflines")
    ap.add_argument("-n", type=int, default=24, help="submissions (default 24)")
    ap.add_argument("--workers", type=int, default=None, help="default: one per core")
    ap.add_argument("--class-size", type=int, default=2000,
                    help="notebooks in the class-scale run (default 2000; 0 skips it)")
    ap.add_argument("--detail", action="store_true", help="also time 1 worker, template vs fresh")
    ap.add_argument("--keep", type=Path, help="build the courses here and keep them")
    args = ap.parse_args(argv)
    from autograder.grading.run import default_workers

    workers = args.workers or default_workers()
    tmp = Path(tempfile.mkdtemp(prefix="scalebook-bench-")) if args.keep is None else args.keep
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        base = tmp / "base"
        prepare_course(base, args.assignment)
        students = build_submissions(base, args.assignment, args.n)
        courses = {k: tmp / k for k in ("nbgrader", "ours", "ours1t", "ours1f")}
        for c in courses.values():
            shutil.copytree(base, c)
        floor = measure_floor(base, args.assignment, students)
        n = len(students)
        print(f"{n} submissions of {args.assignment}, {os.cpu_count()} cores, {workers} workers", flush=True)
        t_nb = run_nbgrader(courses["nbgrader"], args.assignment)
        t_ours = run_ours(courses["ours"], args.assignment, workers, "template", tmp / "stages.json")
        rows = [("nbgrader autograde", t_nb, 1, courses["nbgrader"]),
                (f"grade_assignment ({workers} workers)", t_ours, workers, courses["ours"])]
        marginal = []
        if args.detail:
            rows.append(("grade_assignment (1 worker, template)",
                         run_ours(courses["ours1t"], args.assignment, 1, "template"), 1, courses["ours1t"]))
            rows.append(("grade_assignment (1 worker, fresh sandbox)",
                         run_ours(courses["ours1f"], args.assignment, 1, "fresh"), 1, courses["ours1f"]))
            # the same with a single submission: the fixed start-up, and so the cost per notebook
            single = tmp / "single"
            shutil.copytree(base, single)
            for s in students[1:]:
                shutil.rmtree(single / "submitted" / s)
            for label, run in (("nbgrader autograde", lambda c: run_nbgrader(c, args.assignment)),
                               (f"grade_assignment ({workers} workers)",
                                lambda c: run_ours(c, args.assignment, workers, "template")),
                               ("grade_assignment (1 worker, fresh sandbox)",
                                lambda c: run_ours(c, args.assignment, 1, "fresh"))):
                c = tmp / f"single-{len(marginal)}"
                shutil.copytree(single, c)
                marginal.append((label, run(c)))
        print(f"floor (students' own cells, modules pre-imported): {floor:.2f} s in all, "
              f"{1000 * floor / n:.1f} ms per notebook")
        for label, t, w, _ in rows:
            overhead = (t - floor / w) / n
            print(f"{label:44s} {t:7.2f} s  {t / n:6.3f} s/notebook  overhead {overhead:6.3f} s/notebook")
        totals = {label: t for label, t, _, _ in rows}
        for label, t1 in marginal:
            print(f"{label:44s} start-up {t1:5.2f} s, then {(totals[label] - t1) / max(1, n - 1):6.3f} s "
                  f"per further notebook")
        print(f"speed-up over nbgrader autograde: {t_nb / t_ours:.2f}x")
        print_breakdown(tmp / "stages.json", f"{n} notebooks, {workers} workers")
        reference = scores(courses["nbgrader"], args.assignment)
        ok = len(reference) == n
        for label, _, _, course in rows[1:]:
            mine = scores(course, args.assignment)
            same = mine == reference
            ok &= same
            if not same:
                diff = {s: (reference.get(s), mine.get(s)) for s in set(reference) | set(mine)
                        if reference.get(s) != mine.get(s)}
                print(f"DIFFERENT SCORES ({label}): {json.dumps(diff, indent=1)[:3000]}")
        total = sum(sum(v.values()) for v in reference.values())
        print(f"scores identical: {ok} ({n} students, {total:g} points in all)")
        if args.class_size:
            ok &= class_scale(tmp, args.assignment, args.class_size, workers, reference)
        return 0 if ok else 1
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

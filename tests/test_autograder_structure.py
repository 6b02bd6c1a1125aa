"""The grader's modules import each other without circles, and grading reads as its stages."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


def module_name(path: Path) -> str:
    """A module's name below ``autograder``, dotted: ``grade``, ``sandbox`` (its ``__init__``),
    ``sandbox.launch``."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST):
    """Every import statement that runs: anywhere (top level or in a function), but not under
    ``if TYPE_CHECKING:`` (an import for the type checker alone cannot make an import circle)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child] + list(_imports(child)))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(node)


def local_imports(path: Path) -> set[str]:
    """Modules of this package (dotted names, see :func:`module_name`) that ``path`` imports."""
    own = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    out = set()
    for node in _imports(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = own[:len(own) - (node.level - 1)] if node.level > 1 else own
            targets = [".".join(base + ([node.module] if node.module else []))]
            if not node.module:
                targets = [".".join(base + [alias.name]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder."):
            targets = [node.module.removeprefix("autograder.")]
        elif isinstance(node, ast.Import):
            targets = [a.name.removeprefix("autograder.") for a in node.names if a.name.startswith("autograder.")]
        else:
            continue
        for target in targets:
            # "sandbox.launch" if that is a module, else the package it names ("sandbox")
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    """Which of the grader's modules each of them imports (itself left out)."""
    return {module_name(p): local_imports(p) - {module_name(p)} for p in PACKAGE.rglob("*.py")}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary circle found by a depth-first walk (each reported once per start)."""
    found = []

    def walk(start, node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                found.append(path + [start])
            elif nxt not in path and nxt > start:
                walk(start, nxt, path + [nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles_in_the_grader():
    graph = import_graph()
    assert graph["course"] == {"nbgrader_config", "notebook"}
    assert graph["notebook"] == set()  # reading cells needs nothing of the grader
    assert {"sandbox.launch", "sandbox.template", "sandbox.pick"} <= graph["sandbox"]
    assert graph["sandbox.template"] >= {"sandbox.launch", "sandbox.bwrap", "sandbox.process", "sandbox.limits"}
    assert "sandbox.template" not in graph["sandbox.launch"]   # not even for the type checker
    assert cycles(graph) == []


def outside_stdlib(source: str, top_level_only: bool = False) -> set[str]:
    """What ``source`` imports beyond the standard library: top-level names of its imports
    (anywhere in it, or at its top level only), and ``"."`` for a relative import."""
    import sys

    tree = ast.parse(source)
    found = set()
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else (node.module or "").split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__"}


def test_outside_stdlib_finds_the_repository_and_packages():
    source = "import json, os.path\nfrom autograder import course\ndef f():\n    import numpy\n"
    assert outside_stdlib(source) == {"autograder", "numpy"}
    assert outside_stdlib(source, top_level_only=True) == {"autograder"}
    assert outside_stdlib("from .launch import pump\nimport scalebook.checks") == {".", "scalebook"}


# What the sandbox's code may import in a function, on demand, and why (neither is the repository):
INSIDE_ON_DEMAND = {
    "IPython": "a cell that is not plain Python goes through IPython's own transformation",
    "matplotlib": "a template's warm-up closes figures and fonts of a matplotlib already preloaded",
}


def test_the_code_inside_the_sandbox_imports_the_standard_library_only():
    """``sandbox/inside/`` runs in the sandbox before the student's code: at their top level its
    modules import the standard library and each other only (``from .job import ...``), and
    nowhere the repository (``autograder``, ``scalebook``, ``..``) or a package beyond
    :data:`INSIDE_ON_DEMAND`."""
    files = sorted((PACKAGE / "sandbox" / "inside").glob("*.py"))
    assert {f.stem for f in files} >= {"__init__", "start", "job", "zygote"}
    for path in files:
        source = path.read_text("utf-8")
        assert outside_stdlib(source, top_level_only=True) <= {"."}, path.name
        assert outside_stdlib(source) <= INSIDE_ON_DEMAND.keys() | {"."}, path.name
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and node.module, (path.name, ast.unparse(node))


def test_the_trusted_side_never_imports_the_code_inside_the_sandbox():
    """The grader talks to the sandbox's code over pipes only: no module outside
    ``sandbox/inside/`` imports it (the trusted side binds its folder, and names its entries)."""
    graph = import_graph()
    assert [m for m, uses in sorted(graph.items())
            if any(u == "sandbox.inside" or u.startswith("sandbox.inside.") for u in uses)
            and not m.startswith("sandbox.inside")] == []


def test_grading_stages_are_modules_named_in_grade_docstring():
    import autograder.grading.grade as grade

    for module in ("plan.py", "run.py", "spec.py", "names.py", "submission.py", "check.py",
                   "result.py", "autograded.py", "record.py", "claims.py"):
        assert (PACKAGE / "grading" / module).is_file()
        assert module in grade.__doc__
    stages = {"grading.plan", "grading.run", "grading.spec", "grading.submission", "grading.check",
              "grading.record", "grading.claims"}
    assert stages <= import_graph()["grading.grade"]


# The stages that judge a notebook get what they need of the course as plain values (paths, the
# secret), from grade.grade_assignment: none of them reaches back into the course.
CHECK_STAGES = ("grading.spec", "grading.names", "grading.submission", "grading.check",
                "grading.result", "grading.autograded")


def test_the_check_stages_do_not_import_the_course():
    graph = import_graph()
    for stage in CHECK_STAGES:
        assert "course" not in graph[stage], stage
        assert not graph[stage] & {"grading.grade", "grading.plan", "grading.record", "grading.run",
                                   "grading.claims"}, stage


def test_course_lists_every_homework():
    from autograder.course import ASSIGNMENTS, available_assignments

    assert list(ASSIGNMENTS) == available_assignments()


def test_export_formats_are_said_once():
    """The CLI offers exactly lms.formats.FORMATS, which it reads rather than repeats."""
    from autograder.cli import build_parser
    from autograder.lms.formats import FORMATS

    args = build_parser().parse_args(["export", "-a", "hw1-rooflines", "--format", FORMATS[-1]])
    assert args.format == FORMATS[-1]
    for path in [PACKAGE / "cli.py", *sorted((PACKAGE / "commands").glob("*.py"))]:
        assert '"canvas", "moodle"' not in path.read_text("utf-8"), path


MAX_FUNCTION_LINES = 90


def test_no_function_in_the_grader_is_over_90_lines():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.name} ({lines} lines)")
    assert long == []


def test_each_command_declares_its_arguments_beside_its_code():
    """One module per verb (``commands/<verb>.py``; ``demo``, which runs them all, in cli.py),
    its arguments right above its code."""
    import autograder.cli as cli

    for action in cli.build_parser()._subparsers._group_actions[0].choices:
        verb = action.replace("-", "_")
        home = PACKAGE / "commands" / f"{verb}.py"
        source = (home if home.is_file() else PACKAGE / "cli.py").read_text("utf-8")
        add, cmd = source.index(f"def add_{verb}(sub)"), source.index(f"def cmd_{verb}(args)")
        between = source[add:cmd]
        assert between.count("\ndef ") == 0, f"add_{verb} is not right above cmd_{verb}"


def _walk():
    """bench/walk.py, the walk measure, as a module."""
    import importlib.util
    import sys

    if "bench_walk" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_walk", PACKAGE.parent / "bench" / "walk.py")
        sys.modules["bench_walk"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["bench_walk"])
    return sys.modules["bench_walk"]


def _house(tmp_path, files: dict[str, str]):
    """A made-up house: a grader (``autograder/``) and a solver (``scalebook/``), measured by
    bench/walk.py from ``autograder/grade.py:grade_assignment:course``."""
    for rel, text in {"autograder/__init__.py": "", "scalebook/__init__.py": "", **files}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return _walk().measure(_walk().load(tmp_path), start=("autograder.grade", "grade_assignment", "course"))


def test_walk_counts_stays_and_returns(tmp_path):
    """A line of stages is one stay each; a hub that calls back into a stage it left returns."""
    line = {"autograder/grade.py": "from .plan import plan\nfrom .run import run\n"
                                   "def grade_assignment(course):\n    plan(course)\n    run(course)\n    len(course)\n",
            "autograder/plan.py": "def plan(c):\n    pass\ndef again(c):\n    pass\n",
            "autograder/run.py": "from .record import record\ndef run(c):\n    record(c)\n",
            "autograder/record.py": "def record(c):\n    pass\n"}
    m = _house(tmp_path, line)
    assert m["path"] == ["autograder.grade", "autograder.plan", "autograder.run", "autograder.record"]
    assert (m["stays"], m["climbs"], m["returns"]) == (4, 0, 0)
    m = _house(tmp_path, {"autograder/grade.py": "from .plan import plan, again\nfrom .run import run\n"
                          "def grade_assignment(course):\n    plan(course)\n    run(course)\n    again(course)\n"})
    assert m["path"][-1] == "autograder.plan" and (m["stays"], m["climbs"], m["returns"]) == (5, 0, 1)


def test_walk_follows_what_is_made_from_the_course(tmp_path):
    """A value a function of the house makes from the course is followed, and so is a method
    of it whose class its annotation names; what a call outside the house makes is not."""
    m = _house(tmp_path, {
        "autograder/course.py": "class Course:\n    def files(self):\n        return 1\n",
        "autograder/spec.py": "class Spec:\n    def key(self):\n        pass\n"
                              "def load(files) -> Spec:\n    return Spec()\n",
        "autograder/check.py": "def check(spec):\n    pass\n",
        "autograder/other.py": "def other(data):\n    pass\n",
        "autograder/grade.py": "import json\nfrom .course import Course\nfrom .spec import load\n"
                               "from .check import check\nfrom .other import other\n"
                               "def grade_assignment(course: Course):\n    files = course.files()\n"
                               "    spec = load(files)\n    check(spec)\n    spec.key()\n"
                               "    other(json.loads(course))\n"})
    assert m["path"] == ["autograder.grade", "autograder.course", "autograder.spec", "autograder.check",
                         "autograder.spec"]
    assert (m["stays"], m["returns"]) == (5, 1)


def test_walk_follows_a_method_of_the_object_just_made(tmp_path):
    """``Stage(course).run()`` enters ``Stage.run`` with the course on ``self``: the per-student
    stages of a grading run are made and run in one expression, and are part of the trip."""
    stage = {"autograder/stage.py": "from .record import record\n"
                                    "class Stage:\n    def __init__(self, c):\n        self.c = c\n"
                                    "    def run(self):\n        record(self.c)\n",
             "autograder/record.py": "def record(c):\n    pass\n",
             "autograder/grade.py": "from .stage import Stage\n"
                                    "def grade_assignment(course):\n    Stage(course).run()\n"}
    m = _house(tmp_path, stage)
    assert m["path"] == ["autograder.grade", "autograder.stage", "autograder.record"]
    stage["autograder/grade.py"] = stage["autograder/grade.py"].replace("Stage(course).run()",
                                                                        "Stage(None).run()")
    assert _house(tmp_path, stage)["path"] == ["autograder.grade"]


def test_walk_takes_the_calls_in_the_order_they_run(tmp_path):
    """Of ``write(judge(course))`` the argument's call runs first: the path goes to ``judge``'s
    module, then to ``write``'s, as the program does (written order would say the opposite)."""
    files = {"autograder/judge.py": "def judge(c):\n    pass\n",
             "autograder/write.py": "def write(c):\n    pass\n",
             "autograder/grade.py": "from .judge import judge\nfrom .write import write\n"
                                    "def grade_assignment(course):\n    write(judge(course))\n"}
    assert _house(tmp_path, files)["path"] == ["autograder.grade", "autograder.judge", "autograder.write"]


def test_walk_counts_a_climb_back_up_from_the_solver(tmp_path):
    """The grader is one room above the solver modules it imports: coming back from the solver
    into the grader is a climb; ending in the solver is not."""
    files = {"scalebook/variants.py": "def draw(secret):\n    pass\n",
             "autograder/check.py": "from scalebook.variants import draw\n"
                                    "def check(spec):\n    draw(spec)\n    note(spec)\ndef note(s):\n    pass\n",
             "autograder/grade.py": "from .check import check\ndef grade_assignment(course):\n    check(course)\n"}
    m = _house(tmp_path, files)
    assert m["path"] == ["autograder.grade", "autograder.check", "scalebook.variants", "autograder.check"]
    assert (m["climbs"], m["returns"]) == (1, 1)
    files["autograder/check.py"] = files["autograder/check.py"].replace("    note(spec)\n", "")
    m = _house(tmp_path, files)
    assert (m["stays"], m["climbs"]) == (3, 0)


# Issue 46's goal is at most 12 stays and no climb over the whole grading run (400 events).
# grade_assignment reads the course once into plain values (GradingFiles) and calls the stages
# in a line: course -> run -> spec -> (the solver draws the self-check's numbers) -> submission
# (the instructor's solutions made a submission and validated) -> notebook -> the gradebook
# (course.open_gradebook) -> claims -> record -> plan -> check (the solutions judged) -> grade.
# Then each student: record (the gradebook asked whether another grader recorded them since)
# -> plan (the notebook read) -> submission -> grade -> record -> check -> autograded ->
# notebook -> safe_cells -> ... -> record -> grade. The whole run is 118 events, 32 stays in
# 13 modules, 1 climb, 19 returns. 13 modules is a floor: the stages are one module each and
# the run enters each, so no line through them is shorter than 13 stays while they stay apart;
# and each student's stages come back to the grading run that hands them the next submission.
# The climb is the self-check's numbers: drawn by the solver (scalebook.variants) from a key
# made of the course's secret; the grader then makes the solutions' notebook with that key and
# judges them on those numbers, so the path comes back up from the solver once. Before: 35
# stays, 1 climb, 22 returns (calls taken in written order, and the plan asking the gradebook
# itself); 13, 1, 2 over the setup alone; 29, 3, 18 before that; 43, 3, 32 on the tree before
# that. This keeps the walk from getting longer.
WALK_CEILING = {"stays": 32, "climbs": 1}


def test_the_walk_from_grade_assignment_gets_no_longer():
    m = _walk().measure()
    assert m["stays"] <= WALK_CEILING["stays"] and m["climbs"] <= WALK_CEILING["climbs"], m["path"]


def test_the_grader_imports_nbgrader_without_its_server_extensions():
    """``import autograder`` makes nbgrader's modules load without nbgrader/__init__.py (its
    Jupyter server extensions cost a grading run 0.6 s of CPU): the gradebook and utilities
    still work, the version is still there, the extensions and jupyter_server are not loaded."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    code = ("import sys, autograder, nbgrader.api, nbgrader.utils, nbgrader\n"
            "from nbgrader._version import __version__\n"
            "gb = nbgrader.api.Gradebook('sqlite:///:memory:')\n"
            "gb.add_student('s1'); assert [s.id for s in gb.students] == ['s1']\n"
            "assert nbgrader.__version__ == __version__, nbgrader.__version__\n"
            "loaded = [m for m in sys.modules if m.startswith(('nbgrader.server_extensions', 'jupyter_server'))]\n"
            "assert not loaded, loaded\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
    # a process that imported nbgrader first keeps the package as nbgrader made it
    code = "import nbgrader, autograder, sys; assert hasattr(nbgrader, '_jupyter_server_extension_points'); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_grader_process_keeps_numpy_single_threaded():
    """``import autograder`` before NumPy: OpenBLAS starts no worker threads (they spin on the
    cores the sandboxes need); an explicit OPENBLAS_NUM_THREADS is left as it is."""
    import os
    import subprocess
    import sys

    code = "import os, autograder, numpy; print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "1"], (out.stdout, out.stderr[-2000:])
    out = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, env=dict(env, OPENBLAS_NUM_THREADS="2"),
                         capture_output=True, text=True)
    assert out.stdout.split()[1] == "2", (out.stdout, out.stderr[-2000:])

"""The grader's modules import each other without circles, and grading reads as its stages."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


def local_imports(path: Path) -> set[str]:
    """Modules of this package that ``path`` imports anywhere (top level or in a function)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder."):
            out.add(node.module.split(".")[1])
    return out


def import_graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return {p.stem: local_imports(p) & modules - {p.stem} for p in PACKAGE.glob("*.py")}


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
    assert graph["course"] == {"nbgrader_config"}
    assert cycles(graph) == []


def test_grading_stages_are_modules_named_in_grade_docstring():
    import autograder.grade as grade

    for module in ("plan.py", "runners.py", "checker.py", "record.py", "claims.py"):
        assert (PACKAGE / module).is_file()
        assert module in grade.__doc__
    assert {"plan", "record", "runners", "claims", "checker"} <= import_graph()["grade"]

"""No import circle in ``scalebook/`` or ``autograder/``: no two files that import each other,
straight or round a loop, so each file can be read, tested and replaced with only what lies
below it.

An import counts wherever it stands: at the top, inside a function, or under
``if TYPE_CHECKING:`` (an import for the type checker alone does not fail at run time, but a
reader still has to understand both files together). Relative imports are resolved against the
importing file's package. ``from pkg import name`` points at ``pkg/name.py`` where that is a
module, else at ``pkg/__init__.py``. A module's own enclosing packages are not counted:
Python imports them before the module anyway.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("scalebook", "autograder")


def module_name(path: Path, root: Path = ROOT) -> str:
    """``autograder/sandbox/launch.py`` -> ``autograder.sandbox.launch``; a package's
    ``__init__.py`` -> the package's name."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, modules: set[str], root: Path = ROOT) -> set[str]:
    """The modules of ``modules`` that the file ``path`` imports anywhere in it."""
    name = module_name(path, root)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets += [f"{stem}.{alias.name}" for alias in node.names] + [stem]
    out = set()
    for target in targets:
        while target and target not in modules:   # a name in a module: the module
            target = target.rpartition(".")[0]
        if target:
            out.add(target)
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, len(name.split(".")))}
    return out - ancestors - {name}


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports."""
    files = {module_name(p, root): p for top in packages for p in sorted((root / top).rglob("*.py"))}
    modules = set(files)
    return {name: imported_names(path, modules, root) for name, path in files.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other round a loop (a strongly connected component
    of two or more), each sorted; Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def describe(circle: list[str], graph: dict[str, set[str]]) -> str:
    """One circle as its files and the imports that tie them."""
    files = ", ".join(name.replace(".", "/") + ".py" for name in circle)
    ties = "; ".join(f"{a} -> {b}" for a in circle for b in sorted(graph[a]) if b in circle)
    return f"{len(circle)} files: {files} (imports: {ties})"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_finder_sees_a_circle_through_relative_and_type_checking_imports(tmp_path):
    """A made-up package: ``a`` imports ``b`` relatively, ``b`` imports ``c`` inside a function,
    ``c`` imports ``a`` only for the type checker: one circle of three. ``d`` imports ``a``
    but nothing imports ``d``: not in it."""
    _write(tmp_path, {
        "pkg/__init__.py": "from .a import f\n",
        "pkg/a.py": "from .sub.b import g\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/b.py": "def g():\n    from ..c import h\n",
        "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n",
        "pkg/d.py": "from . import a\nimport pkg.sub\n",
    })
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.c"}           # two levels up, relative
    assert graph["pkg.c"] == {"pkg.a"}               # under TYPE_CHECKING, absolute
    assert graph["pkg.d"] == {"pkg.a", "pkg.sub"}    # a module named in "from . import"
    assert graph["pkg.sub.b"].isdisjoint({"pkg", "pkg.sub"})  # its own packages: not counted
    assert circles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
    (tmp_path / "pkg" / "c.py").write_text("def h():\n    pass\n")
    assert circles(import_graph(tmp_path, ("pkg",))) == []


def test_two_files_that_import_each_other_are_a_circle():
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_solver_or_the_grader():
    graph = import_graph()
    assert "autograder.sandbox.launch" in graph and "scalebook.collectives" in graph
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(describe(c, graph) for c in found)

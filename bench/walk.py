"""The walk measure (issue 29): follow ``course`` from ``grade.grade_assignment`` through the calls
that pass it on, and count how the path moves between the grader's modules.

    .venv/bin/python bench/walk.py [--trace]

Read statically from the source (``ast``), in the order the calls are written: a call passes
``course`` on when an argument is the name holding it (or an attribute of ``self`` set from
it); the walk then goes into the called function of ``autograder`` (a function imported from a
sibling module, ``module.function`` of an imported sibling, a method of ``self``, or a class's
``__init__``) with the parameter that received it, and comes back when that function's calls
are done. Each function is walked once.

- a **stay**: the path entering a module and staying in it (by a call or by a return);
- a **climb**: a call into a module the path had already visited and left;
- a **return**: coming back, when a call ends, to a module the path had left.

``tests/test_autograder_structure.py`` keeps the figures.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


@dataclasses.dataclass
class Module:
    name: str                         # dotted, below autograder ("grade", "sandbox.launch")
    functions: dict[str, ast.FunctionDef]
    imported: dict[str, tuple[str, str]]   # local name -> (module, function)
    modules: dict[str, str]                # local name -> sibling module


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def _resolve(current: str, level: int, module: str | None) -> str:
    base = current.split(".")[:-1] if level else []
    for _ in range(max(0, level - 1)):
        base = base[:-1]
    return ".".join([*base, *(module.split(".") if module else [])])


def load(package: Path = PACKAGE) -> dict[str, Module]:
    """Every module of the grader: its functions (methods as ``Class.method``) and imports."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        name = _module_name(path, package)
        tree = ast.parse(path.read_text("utf-8"))
        functions, imported, modules = {}, {}, {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        functions[f"{node.name}.{item.name}"] = item
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    target = _resolve(name if path.name != "__init__.py" else name + ".x",
                                      node.level, node.module)
                elif (node.module or "").startswith("autograder."):
                    target = node.module[len("autograder."):]
                else:
                    continue
                for alias in node.names:
                    local = alias.asname or alias.name
                    sub = f"{target}.{alias.name}" if target else alias.name
                    if any(p.stem == alias.name for p in package.rglob(f"{alias.name}.py")) and \
                            sub in {_module_name(p, package) for p in package.rglob("*.py")}:
                        modules[local] = sub
                    else:
                        imported[local] = (target, alias.name)
        out[name] = Module(name, functions, imported, modules)
    return out


@dataclasses.dataclass
class Walk:
    modules: dict[str, Module]
    events: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (kind, module)
    seen: set = dataclasses.field(default_factory=set)

    def callee(self, module: Module, call: ast.Call, cls: str | None):
        """(module, function name) of a call into the grader, or None."""
        f = call.func
        if isinstance(f, ast.Name):
            if f.id in module.functions:
                return module.name, f.id
            if f"{f.id}.__init__" in module.functions:
                return module.name, f"{f.id}.__init__"
            if f.id in module.imported:
                target, name = module.imported[f.id]
                other = self.modules.get(target)
                if other is not None:
                    if name in other.functions:
                        return target, name
                    if f"{name}.__init__" in other.functions:
                        return target, f"{name}.__init__"
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.value.id == "self" and cls and f"{cls}.{f.attr}" in module.functions:
                return module.name, f"{cls}.{f.attr}"
            target = module.modules.get(f.value.id)
            if target in self.modules and f.attr in self.modules[target].functions:
                return target, f.attr
        return None

    def walk(self, module_name: str, function: str, holder: str) -> None:
        if (module_name, function) in self.seen:
            return
        self.seen.add((module_name, function))
        module = self.modules[module_name]
        node = module.functions[function]
        cls = function.split(".")[0] if "." in function else None
        holders = {holder}
        calls = sorted((n for n in ast.walk(node) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset))
        for n in ast.walk(node):  # self.course = course: the object holds it too
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in holders:
                for t in n.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        holders.add(f"self.{t.attr}")
        for call in calls:
            target = self.callee(module, call, cls)
            if target is None:   # pool.submit(function, course, ...): the function is called
                target = self.passed_function(module, call, holders)
                if target is not None:
                    self.events.append(("call", target[0]))
                    self.walk(target[0], target[1], self.param(target, 0))
                    self.events.append(("return", module_name))
                    continue
            if target is None:
                target = self.method_of_holder(module, call)
                param = "self.course" if target is not None else None
            else:
                param = self.receiving(call, target, holders)
            if param is None:
                continue
            self.events.append(("call", target[0]))
            self.walk(target[0], target[1], param)
            self.events.append(("return", module_name))

    def receiving(self, call: ast.Call, target: tuple[str, str], holders: set[str]) -> str | None:
        """The callee's parameter that gets ``course`` from this call, or None."""
        node = self.modules[target[0]].functions[target[1]]
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        if params and params[0] == "self":
            params = params[1:]
        passes = lambda e: ast.unparse(e) in holders  # noqa: E731
        for i, arg in enumerate(call.args):
            if passes(arg) and i < len(params):
                return params[i]
        for kw in call.keywords:
            if kw.arg and passes(kw.value):
                return kw.arg
        if "self.course" in holders and "." in target[1] and (
                isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) == "self"):
            return "self.course"   # a method of the object that holds course
        return None

    def passed_function(self, module: Module, call: ast.Call, holders: set[str]):
        """A grader function handed to another call together with ``course``, first of its
        arguments (``executor.submit(write_files, course, ...)``), or None."""
        args = call.args
        if len(args) < 2 or not isinstance(args[0], ast.Name) or ast.unparse(args[1]) not in holders:
            return None
        fake = ast.Call(func=args[0], args=[], keywords=[])
        return self.callee(module, fake, None)

    def param(self, target: tuple[str, str], index: int) -> str:
        node = self.modules[target[0]].functions[target[1]]
        params = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg != "self"]
        return params[index] if index < len(params) else "course"

    def method_of_holder(self, module: Module, call: ast.Call):
        """``Class(course, ...).method(...)``: the method, on an object made holding course."""
        f = call.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call)):
            return None
        made = self.callee(module, f.value, None)
        if made is None or not made[1].endswith(".__init__") or (made[0], made[1]) not in self.seen:
            return None
        name = f"{made[1].split('.')[0]}.{f.attr}"
        return (made[0], name) if name in self.modules[made[0]].functions else None


def measure(modules: dict[str, Module] | None = None) -> dict:
    """Stays, climbs and returns of the walk from ``grade.grade_assignment``, and its path."""
    modules = modules or load()
    start = next(m for m in modules.values() if "grade_assignment" in m.functions)
    w = Walk(modules)
    w.events.append(("start", start.name))
    w.walk(start.name, "grade_assignment", "course")
    path, left, climbs, returns = [], set(), 0, 0
    for kind, module in w.events:
        if path and path[-1] == module:
            continue
        if path:
            left.add(path[-1])
        if module in left:
            climbs += kind == "call"
            returns += kind == "return"
        path.append(module)
    return {"stays": len(path), "rooms": len(set(path)), "climbs": climbs, "returns": returns,
            "path": path}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", action="store_true", help="print the path, one stay a line")
    ap.add_argument("--package", type=Path, default=PACKAGE,
                    help="the autograder folder to measure (default: this checkout's)")
    args = ap.parse_args(argv)
    m = measure(load(args.package))
    print(f"{m['stays']} stays in {m['rooms']} modules, {m['climbs']} climbs, {m['returns']} returns")
    if args.trace:
        print("\n".join(f"  {i + 1:2d}. {name}" for i, name in enumerate(m["path"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

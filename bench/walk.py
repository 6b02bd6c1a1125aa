"""The walk measure (issues 29 and 46): be ``course`` entering ``grade.grade_assignment``, follow
it and every value made from it through the whole grading run, and count how the path moves
between the modules of the grader and the solver.

    .venv/bin/python bench/walk.py [--trace] [--stops N]

Read statically from the source (``ast``), in the order the calls run (a call's arguments
before it: of ``f(g(me))``, ``g`` first); nothing is run.

- **What is followed** ("me"): the parameter, and every value made from it -- a name assigned
  from an expression that holds me (``files = course.grading_files(a)``, ``spec =
  grading_spec(files)``: what a function of the house returns when it got me is me in a new
  form; ``Path(me)`` still holds me), a loop variable over me, ``with ... as`` me, and an
  attribute of ``self`` set from me (``self.spec = spec``: picked up again by the class's
  other methods). A call to a function outside the house (``json.loads``) loses sight of me.
- **Where it can go**: the functions that a module's own imports name (at its top level; an
  import made late, inside a function, and a name a package's ``__init__`` hands on are not
  followed).
- **An event**: entering a function of the house (``autograder``, ``scalebook``) that gets me:
  as an argument, as ``self`` (a method of a value whose class is known from an annotation, a
  return annotation or a constructor, also one called on the object a constructor has just
  made, ``Stage(me).run()``), or as an attribute ``self`` put me down in. Each
  function is walked once; a call into one already walked is an event, without walking it
  again. The walk ends after ``stops`` events (400: the whole grading run).
- **A stay**: the path entering a module and staying in it (events in a row in one module
  are one stay); a **return**: a stay in a module the path had already left.
- **A climb**: a stay one floor or more above the one before. Floors come from the imports
  between rooms: the grader (``autograder/``) is one room, each solver module
  (``scalebook/*.py``; a subpackage such as ``scalebook/homework/``) is a room of its own; a
  room stands one floor above the highest room it imports. The grader calls down into the
  solver; a climb is the path coming back up from it into the grader.

``tests/test_autograder_structure.py`` keeps the figures.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "scalebook")
START = ("autograder.grading.grade", "grade_assignment", "course")
STOPS = 400


@dataclasses.dataclass
class Module:
    name: str                                   # dotted: "autograder.grading.grade"
    functions: dict[str, ast.FunctionDef]       # "f", "Class.method"
    classes: set[str]
    imported: dict[str, tuple[str, str]]        # local name -> (module, name in it)
    modules: dict[str, str]                     # local name -> module of the house


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    """Every module of ``packages`` under ``root``: its functions (methods as ``Class.method``),
    classes and imports (relative ones resolved)."""
    paths = {module_name(p, root): p for top in packages for p in sorted((root / top).rglob("*.py"))}
    out = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text("utf-8"))
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        functions: dict[str, ast.FunctionDef] = {}
        classes, imported, modules = set(), {}, {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                classes.add(node.name)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        functions[f"{node.name}.{item.name}"] = item
        for node in _top_level_imports(tree):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
                target = ".".join(p for p in (base, node.module or "") if p)
                for alias in node.names:
                    local = alias.asname or alias.name
                    if f"{target}.{alias.name}" in paths:
                        modules[local] = f"{target}.{alias.name}"
                    elif target in paths:
                        imported[local] = (target, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in paths:
                        modules[alias.asname or alias.name] = alias.name
        out[name] = Module(name, functions, classes, imported, modules)
    return out


def rooms(modules: dict[str, Module]) -> dict[str, str]:
    """Module -> its room: the grader's package is one room; in every other package each
    top-level module, and each subpackage, is a room."""
    out = {}
    for name in modules:
        parts = name.split(".")
        out[name] = parts[0] if parts[0] == PACKAGES[0] or len(parts) < 2 else ".".join(parts[:2])
    return out


def floors(modules: dict[str, Module]) -> dict[str, int]:
    """Room -> floor: 1 for a room that imports no other, else one above the highest it imports
    (a circle of rooms shares one floor)."""
    room = rooms(modules)
    uses: dict[str, set[str]] = {r: set() for r in room.values()}
    for m in modules.values():
        targets = set(m.modules.values()) | {t for t, _ in m.imported.values()}
        uses[room[m.name]] |= {room[t] for t in targets if t in room} - {room[m.name]}
    floor: dict[str, int] = {}

    def of(r: str, seen: frozenset = frozenset()) -> int:
        if r not in floor:
            below = [of(u, seen | {r}) for u in uses[r] if u not in seen | {r}]
            floor[r] = 1 + max(below, default=0)
        return floor[r]

    for r in sorted(uses):
        of(r)
    return floor


class Walk:
    def __init__(self, modules: dict[str, Module], stops: int = STOPS):
        self.modules, self.stops = modules, stops
        self.events: list[tuple[str, str]] = []      # (module, function)
        self.walked: set[tuple[str, str]] = set()
        self.put_down: dict[tuple[str, str], set[str]] = {}   # (module, class) -> attributes of self

    # --- what a name means where it stands ----------------------------------------------------

    def resolve(self, module: Module, name: str) -> tuple[str, str] | None:
        """(module, name) of a function or class of the house that ``name`` means in ``module``."""
        if name in module.functions or name in module.classes:
            return module.name, name
        if name in module.imported:
            target, real = module.imported[name]
            other = self.modules.get(target)
            if other is not None and (real in other.functions or real in other.classes):
                return target, real
        return None

    def class_of(self, module: Module, annotation: ast.expr | None) -> tuple[str, str] | None:
        if annotation is None:
            return None
        text = ast.unparse(annotation).strip("'\"").split("|")[0].strip()
        found = self.resolve(module, text.split("[")[0])
        return found if found and found[1] in self.modules[found[0]].classes else None

    def callee(self, module: Module, call: ast.Call, cls: str | None,
               types: dict[str, tuple[str, str] | None]) -> tuple[str, str, bool] | None:
        """(module, function, whether its ``self`` is the object called on) of a call into the
        house, or None."""
        f = call.func
        if isinstance(f, ast.Name):
            found = self.resolve(module, f.id)
            if found is None:
                return None
            target, name = found
            if name in self.modules[target].classes:
                init = f"{name}.__init__"
                return (target, init, False) if init in self.modules[target].functions else None
            return target, name, False
        if isinstance(f, ast.Attribute):
            owner = ast.unparse(f.value)
            if owner == "self" and cls and f"{cls}.{f.attr}" in module.functions:
                return module.name, f"{cls}.{f.attr}", True
            if isinstance(f.value, ast.Name) and f.value.id in module.modules:
                target = module.modules[f.value.id]
                if f.attr in self.modules[target].functions:
                    return target, f.attr, False
            kind = types.get(owner)
            if isinstance(f.value, ast.Call):    # Stage(...).grade(...): the object just made
                kind = self.returns_class(module, f.value, cls, types)
            if kind is not None and f"{kind[1]}.{f.attr}" in self.modules[kind[0]].functions:
                return kind[0], f"{kind[1]}.{f.attr}", True
        return None

    # --- whether an expression holds me -------------------------------------------------------

    def holds(self, module: Module, expr: ast.AST, holders: set[str], cls: str | None,
              types: dict) -> bool:
        if ast.unparse(expr) in holders if isinstance(expr, (ast.Name, ast.Attribute)) else False:
            return True
        if isinstance(expr, ast.Call):
            parts = list(expr.args) + [k.value for k in expr.keywords]
            inside = any(self.holds(module, p, holders, cls, types) for p in parts)
            if self.callee(module, expr, cls, types) is not None:
                owner = expr.func.value if isinstance(expr.func, ast.Attribute) else None
                return inside or (owner is not None and self.holds(module, owner, holders, cls, types))
            name = ast.unparse(expr.func).split(".")[-1]
            if isinstance(expr.func, ast.Attribute) and self.holds(module, expr.func.value, holders, cls, types):
                return True           # a method of mine (str.join, dict.get): still me
            return inside and name[:1].isupper()   # packed into Path(...); any other call loses me
        return any(self.holds(module, child, holders, cls, types) for child in ast.iter_child_nodes(expr))

    def returns_class(self, module: Module, expr: ast.expr, cls: str | None, types: dict):
        if not isinstance(expr, ast.Call):
            return types.get(ast.unparse(expr))
        found = self.callee(module, expr, cls, types)
        if found is None:
            return None
        target, name, _ = found
        if name.endswith(".__init__"):
            return target, name.split(".")[0]
        return self.class_of(self.modules[target], self.modules[target].functions[name].returns)

    # --- the walk -----------------------------------------------------------------------------

    def walk(self, module_name: str, function: str, me: set[str], kinds: dict) -> None:
        if (module_name, function) in self.walked or len(self.events) >= self.stops:
            return
        self.walked.add((module_name, function))
        module = self.modules[module_name]
        node = module.functions[function]
        cls = function.split(".")[0] if "." in function else None
        holders = set(me) | {f"self.{a}" for a in self.put_down.get((module_name, cls or ""), ())}
        types: dict[str, tuple[str, str] | None] = dict(kinds)
        for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            if arg.arg not in types:
                types[arg.arg] = self.class_of(module, arg.annotation)
        if cls:
            types.setdefault("self", (module_name, cls))
        changed = True
        while changed:   # every name made from me, wherever it is made
            changed = False
            for n in ast.walk(node):
                for targets, value in _bindings(n):
                    if not self.holds(module, value, holders, cls, types):
                        continue
                    for t in targets:
                        for name in _names(t):
                            if name not in holders:
                                holders.add(name)
                                types.setdefault(name, self.returns_class(module, value, cls, types))
                                changed = True
                                if cls and name.startswith("self."):
                                    self.put_down.setdefault((module_name, cls), set()).add(name[5:])
        # in the order they run: by where they end, so that of f(g(x)) and of a(b).c() the
        # inner call, which runs first, comes first
        calls = sorted((n for n in ast.walk(node) if isinstance(n, ast.Call)),
                       key=lambda n: (n.end_lineno, n.end_col_offset, -n.lineno, -n.col_offset))
        for call in calls:
            if len(self.events) >= self.stops:
                return
            self.call(module, call, cls, holders, types)
            for arg in call.args:   # pool.submit(write_files, me, ...): the function is called
                if isinstance(arg, ast.Name) and arg is call.args[0] and len(call.args) > 1:
                    fake = ast.Call(func=arg, args=call.args[1:], keywords=[])
                    ast.copy_location(fake, call)
                    if self.resolve(module, arg.id) is not None:
                        self.call(module, fake, cls, holders, types)

    def call(self, module: Module, call: ast.Call, cls: str | None, holders: set[str], types: dict) -> None:
        found = self.callee(module, call, cls, types)
        if found is None:
            return
        target, function, on_self = found
        node = self.modules[target].functions[function]
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        method = bool(params) and params[0] == "self"
        if method:
            params = params[1:]
        me, kinds = set(), {}
        for param, arg in zip(params, call.args):
            if self.holds(module, arg, holders, cls, types):
                me.add(param)
                kinds[param] = self.returns_class(module, arg, cls, types)
        for kw in call.keywords:
            if kw.arg and self.holds(module, kw.value, holders, cls, types):
                me.add(kw.arg)
                kinds[kw.arg] = self.returns_class(module, kw.value, cls, types)
        owner = call.func.value if isinstance(call.func, ast.Attribute) else None
        if on_self and owner is not None and self.holds(module, owner, holders, cls, types):
            me.add("self")
        put = self.put_down.get((target, function.split(".")[0]), set()) if method else set()
        reads_put = on_self and any(f"self.{a}" in ast.unparse(node) for a in put) \
            and target == module.name
        if not me and not reads_put:
            return
        self.events.append((target, function))
        self.walk(target, function, me, kinds)


def _top_level_imports(tree: ast.Module):
    """The module's own imports: at its top level, also under ``if`` (``TYPE_CHECKING``) and
    ``try``; not those inside a function (made late, on purpose)."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try)):
            yield from (n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _bindings(n: ast.AST):
    """(targets, value) of what binds names: assignments, loops, ``with ... as``, comprehensions."""
    if isinstance(n, ast.Assign):
        yield n.targets, n.value
    elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and n.value is not None:
        yield [n.target], n.value
    elif isinstance(n, (ast.For, ast.comprehension)):
        yield [n.target], n.iter
    elif isinstance(n, ast.With):
        for item in n.items:
            if item.optional_vars is not None:
                yield [item.optional_vars], item.context_expr
    elif isinstance(n, ast.NamedExpr):
        yield [n.target], n.value


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [x for e in target.elts for x in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    if isinstance(target, ast.Name) or (isinstance(target, ast.Attribute)
                                        and isinstance(target.value, ast.Name) and target.value.id == "self"):
        return [ast.unparse(target)]
    return []


def measure(modules: dict[str, Module] | None = None, start: tuple[str, str, str] = START,
            stops: int = STOPS) -> dict:
    """Stays, climbs and returns of the walk from ``start`` (module, function, parameter)."""
    modules = modules or load()
    module, function, param = start
    w = Walk(modules, stops)
    w.events.append((module, function))
    node = modules[module].functions[function]
    kinds = {a.arg: w.class_of(modules[module], a.annotation) for a in node.args.args if a.arg == param}
    w.walk(module, function, {param}, kinds)
    room, floor = rooms(modules), floors(modules)
    path: list[str] = []
    climbs = returns = 0
    for name, _ in w.events:
        if path and path[-1] == name:
            continue
        if path:
            returns += name in path
            climbs += floor[room[name]] > floor[room[path[-1]]]
        path.append(name)
    return {"stays": len(path), "rooms": len(set(path)), "climbs": climbs, "returns": returns,
            "events": len(w.events), "path": path}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", action="store_true", help="print the path, one stay a line")
    ap.add_argument("--stops", type=int, default=STOPS, help=f"end after this many events (default {STOPS})")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    args = ap.parse_args(argv)
    m = measure(load(args.root), stops=args.stops)
    print(f"{m['stays']} stays in {m['rooms']} modules, {m['climbs']} climbs, {m['returns']} returns "
          f"({m['events']} events)")
    if args.trace:
        print("\n".join(f"  {i + 1:2d}. {name}" for i, name in enumerate(m["path"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The answer names of a test cell: the student's values it reads, found from its source.

A test cell refers to the student's work only through the names it reads before binding them
itself (``DESIGN.md``, "Notebooks"). Those names, and only those, are captured in the sandbox
and given to the test in the grader. Read from the instructor's source with :mod:`ast`;
nothing here runs a cell.
"""

from __future__ import annotations

import ast
import builtins

from ..notebook import VARIANT_NAME


def _bound_at_top(stmt: ast.AST) -> set[str]:
    """Names a top-level statement (or a for/with target) binds in the cell's (module) scope:
    assignment, for, with, except and match targets, imports, def and class names -- not what
    nested functions, classes, lambdas or comprehensions bind in their own scopes."""
    out: set[str] = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            stack.extend(node.decorator_list)  # evaluated here; their bodies are other scopes
            continue
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                               ast.GeneratorExp)):
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _read_in(node: ast.AST) -> set[str]:
    """Names a statement or expression may read from the cell's scope, over-approximated as
    before inside nested scopes (loaded names, less what imports, defs, arguments and
    comprehension targets within it define)."""
    loaded, defined = set(), set()
    for node in ast.walk(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loaded.add(node.target.id)  # x += 1 reads x
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del):
            loaded.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                defined.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for gen in node.generators:
                for t in ast.walk(gen.target):
                    if isinstance(t, ast.Name):
                        defined.add(t.id)
    return loaded - defined


def _scan(stmts: list[ast.stmt], bound: set[str]) -> set[str]:
    """The answer names of a block run in order, given the names ``bound`` before it."""
    answers: set[str] = set()
    bound = set(bound)
    for st in stmts:
        if isinstance(st, (ast.For, ast.AsyncFor)):
            answers |= (_read_in(st.iter) | _read_in(st.target)) - bound
            answers |= _scan(st.body, bound | _bound_at_top(st.target))  # its first iteration
            answers |= _scan(st.orelse, bound)
        elif isinstance(st, (ast.If, ast.While)):
            answers |= _read_in(st.test) - bound
            answers |= _scan(st.body, bound) | _scan(st.orelse, bound)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            inner = set(bound)
            for item in st.items:
                answers |= _read_in(item.context_expr) - inner
                if item.optional_vars is not None:
                    answers |= _read_in(item.optional_vars) - inner
                    inner |= _bound_at_top(item.optional_vars)
            answers |= _scan(st.body, inner)
        elif isinstance(st, (ast.Try, ast.TryStar)):  # try/except and try/except* (3.11+)
            answers |= _scan(st.body, bound) | _scan(st.orelse, bound) | _scan(st.finalbody, bound)
            for h in st.handlers:
                if h.type is not None:
                    answers |= _read_in(h.type) - bound
                answers |= _scan(h.body, bound | ({h.name} if h.name else set()))
        else:  # simple statements; match, def and class over-approximated as a whole
            answers |= _read_in(st) - bound
        bound |= _bound_at_top(st)
    return answers


def answer_names(source: str) -> tuple[str, ...]:
    """The student's answers a test cell reads: the only names captured and given to it.

    The cell's statements are taken in order: a name is an answer name if a statement reads
    it before any earlier statement bound it. So ``ans = np.asarray(ans)`` reads the student's
    ``ans``, while ``_expected = ...`` followed by ``check(x, _expected)`` does not make
    ``_expected`` an answer: the test's own names are neither sent into the sandbox (where the
    student could read them) nor filled in from the student's namespace. The bodies of ``for``,
    ``while``, ``if``, ``with`` and ``try`` are followed in order too (a loop as its first
    iteration; each branch from what was bound before it). Function and class bodies, lambdas,
    comprehensions and ``match`` are over-approximated: capturing a value too many is harmless
    there, one too few would mark an answered question "not answered". Builtins are never
    answers.
    """
    return tuple(sorted(_scan(ast.parse(source).body, set()) - set(dir(builtins)) - {VARIANT_NAME}))

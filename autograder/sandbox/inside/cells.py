"""A notebook cell's code, compiled as Jupyter's IPython kernel would run it."""

from __future__ import annotations

import re
import sys
from types import CodeType
from typing import Mapping

# --- notebook code -----------------------------------------------------------------------------
#
# A code cell runs as the Python Jupyter's IPython kernel runs for it. Valid Python is compiled as
# it is: IPython's input transformation leaves it alone (the one exception, a pasted "In [n]: "
# prompt, is sent on to IPython), and no IPython is imported for it. Any other cell goes through
# IPython's own transformation (``TransformerManager().transform_cell``), here in the sandbox: it
# is super-linear on hostile input (it retokenises the whole cell once per magic, and its help
# pattern backtracks quadratically on long lines), so its cost is charged to the submission's
# own limits, never to the grader. What it makes of ``%magic``, ``!cmd``, ``x = !cmd`` and
# ``x?`` is a call on ``get_ipython()``, answered by :class:`NotebookShell`.

CELL_MAGIC_ERROR = "cell magics (%%) are not supported by the grader"
_PASTED_PROMPT = re.compile(r"^\s*In \[\d+\]: ", re.M)


def compile_cell(source: str, filename: str, compiled: Mapping[str, CodeType] | None = None):
    """The code object Jupyter would run for the code cell ``source``.

    ``compiled``: source -> code object of cells compiled once before (a template's warm-up:
    the release copy's cells, which a job's read-only and untouched cells repeat); such a cell
    gets that code object under its own ``filename``, as compiling it again would give.
    Raises SyntaxError as Jupyter would (for a cell magic: :data:`CELL_MAGIC_ERROR`)."""
    known = compiled.get(source) if compiled else None
    if known is not None:
        return _renamed(known, filename)
    code = _plain_python(source, filename)
    if code is None:
        code = compile(_ipython_source(source), filename, "exec", dont_inherit=True)
    return code


def _renamed(code: CodeType, filename: str) -> CodeType:
    """``code`` and every code object nested in it (functions, classes, comprehensions) with
    ``co_filename`` = ``filename``: what ``compile`` gives for that name."""
    consts = tuple(_renamed(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def python_source(source: str) -> str:
    """The Python Jupyter runs for the code cell ``source``: itself if it is valid Python, else
    IPython's transformation of it. Raises SyntaxError for a cell magic."""
    return source if _plain_python(source, "<cell>") is not None else _ipython_source(source)


def _plain_python(source: str, filename: str):
    """``source`` compiled, if it is Python that IPython would run unchanged; else None."""
    if _PASTED_PROMPT.search(source):
        return None
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte (before Python 3.12)
        return None


def _ipython_source(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(source)
    if code.startswith("get_ipython().run_cell_magic("):
        raise SyntaxError(CELL_MAGIC_ERROR)
    return code


class NotebookShell:
    """What ``get_ipython()`` gives the student's code: a stand-in for the IPython shell.

    ``%time statement`` runs the statement in the notebook's namespace (so that, as in Jupyter,
    the names it binds exist afterwards) and returns its value if it is an expression. Every
    other line magic, shell command (``!cmd``, ``x = !cmd``, which gets an empty list) and help
    request (``x?``) is skipped, and one line on the cell's stderr says so: it is the grader's
    run, not a kernel, and neither the shell nor the network is there. A cell magic raises
    SyntaxError, as a cell beginning with ``%%`` does.
    """

    def __init__(self, namespace: dict):
        self._namespace = namespace

    def get_ipython(self) -> "NotebookShell":
        return self

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1):
        if magic_name.startswith("%"):  # "%%name" not at the top of the cell
            raise SyntaxError(CELL_MAGIC_ERROR)
        if magic_name == "time" and line.strip():  # in the caller's scope, as IPython's %time
            return self._time(line, sys._getframe(_stack_depth).f_locals)
        self._skipped(f"%{magic_name} {line}".rstrip())
        return None

    def run_cell_magic(self, magic_name: str, line: str, cell: str):
        raise SyntaxError(CELL_MAGIC_ERROR)

    def system(self, cmd: str) -> None:
        self._skipped(f"!{cmd}")

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> list:
        self._skipped(f"!{cmd}")
        return []

    def show_usage(self) -> None:
        self._skipped("?")

    def _time(self, statement: str, scope: dict):
        try:
            expression = compile(statement, "<%time>", "eval", dont_inherit=True)
        except SyntaxError:
            exec(compile_cell(statement, "<%time>"), self._namespace, scope)
            return None
        return eval(expression, self._namespace, scope)

    @staticmethod
    def _skipped(what: str) -> None:
        sys.stderr.write(f"[grader: not run] {what[:200]}\n")

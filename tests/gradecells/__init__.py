"""Test cells run the grader's way, for the homework tests.

The trusted grader runs each test cell of the instructor's notebook in a fresh namespace that
holds only the cell's answer names (autograder/DESIGN.md). These helpers do the same in the test
process, so a homework's tests can feed a check hand-worked or deliberately wrong answers.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
from pathlib import Path

import nbformat
import numpy as np

import scalebook.checks as checks
import scalebook.homework as homework
import scalebook.homework.parts as homework_parts
from scalebook.homework.parts import Part

from autograder.grading.names import answer_names
from autograder.notebook import VARIANT_NAME


def nbgrader_metadata(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def free_names(source: str) -> set[str]:
    """Names a cell reads but does not bind itself (and that are not builtins, nor ``VARIANT``,
    which the grader binds)."""
    tree = ast.parse(source)
    loaded, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound - set(dir(builtins)) - {VARIANT_NAME}


def grade_cells_by_answer(source: Path) -> dict:
    """Each answer name of the source notebook -> the first graded code cell that checks it."""
    notebook = nbformat.read(str(source), as_version=4)
    cells = {}
    for cell in notebook.cells:
        if nbgrader_metadata(cell).get("grade") and cell.cell_type == "code":
            for name in answer_names(cell.source):
                if not name.startswith("_"):
                    cells.setdefault(name, cell)
    return cells


def run_as_grader(cell, answers: dict, variant=None) -> None:
    """Run a test cell in a fresh namespace holding only the answers it reads (and ``VARIANT``,
    the student's numbers, for a homework that has them)."""
    namespace = {n: answers[n] for n in free_names(cell.source) if n in answers}
    if variant is not None:
        namespace[VARIANT_NAME] = variant
    exec(compile(cell.source, nbgrader_metadata(cell)["grade_id"], "exec"), namespace)


@contextlib.contextmanager
def recording_checks():
    """Record every value check (name, expected, rel, hints) a test cell makes, still checking."""
    calls = []
    real_close, real_allclose = checks.check_close, checks.check_allclose

    def close(value, expected, *, name, rel=0.05, hints=()):
        hints = list(hints)
        calls.append(("number", name, expected, rel, hints))
        return real_close(value, expected, name=name, rel=rel, hints=hints)

    def allclose(values, expected, *, name, rel=0.05, hints=()):
        hints = list(hints)
        calls.append(("array", name, np.asarray(expected, float), rel, hints))
        return real_allclose(values, expected, name=name, rel=rel, hints=hints)

    def answer(variant, name, value):
        """A declared part (scalebook/homework/parts.py): its expected value, tolerance and the
        hints of the slips and pinned conventions that apply to these numbers; a design part,
        whose answer is a choice, records no number."""
        part = homework.parts_of(variant.assignment)[name]
        if isinstance(part, Part):
            hints = []
            for _, wrong, hint in part.hinted():
                x = wrong(variant)
                if x == x:  # NaN: the slip does not apply to these numbers
                    hints.append((x, hint.format(**dict(variant), answer=x)))
            calls.append(("number", name, part.expected(variant), part.rel, hints))
        else:
            calls.append(("design", name, None, None, []))
        return real_answer(variant, name, value)

    def number(part, variant, value):
        """A declared part that a JAX check judges (``NOTEBOOK_PARTS``), as ``answer`` records
        one."""
        hints = []
        for _, wrong, hint in part.hinted():
            x = wrong(variant)
            if x == x:
                text = hint(variant) if callable(hint) else hint
                hints.append((x, text.format(**dict(variant), answer=x)))
        calls.append(("number", part.answer, part.expected(variant), part.rel, hints))
        return real_number(part, variant, value)

    real_answer, real_number = homework.check_answer, homework_parts.check_number
    checks.check_close, checks.check_allclose = close, allclose
    homework.check_answer, homework_parts.check_number = answer, number
    try:
        yield calls
    finally:
        checks.check_close, checks.check_allclose = real_close, real_allclose
        homework.check_answer, homework_parts.check_number = real_answer, real_number


def run_cli(*argv) -> tuple[int, str]:
    """``python -m autograder ARGV`` in this process: (exit status, stdout + stderr)."""
    import io

    from autograder import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = cli.main([str(a) for a in argv])
    return rc, out.getvalue()


def record_class(course, spec, results: list) -> None:
    """Write generated results as the grader records them: each ``grading.json``, then the
    gradebook rows, 500 submissions per transaction."""
    from autograder.grading import record
    from autograder.course import GRADING_RECORD

    for result in results:
        record.atomic_write(course.autograded(result.student, spec.assignment) / GRADING_RECORD,
                            record.dump_json(result.to_json()))
    with course.gradebook() as gb:
        record.ensure_in_gradebook(gb, spec)
        layout = record.gradebook_layout(gb, spec.assignment)
        for start in range(0, len(results), 500):
            record.commit_results(gb, layout, [(r, None) for r in results[start:start + 500]])

"""``validate``: what a student runs before submitting.

It executes the student's notebook top to bottom in a fresh kernel (an error in one cell is
recorded and the next cell still runs) and reports, for every graded question (autograder test
cell), one of:

- ``answered``: the visible checks of the question pass (the answer has the right form);
- ``not answered``: an answer variable is not defined (the cell still raises
  ``NotImplementedError``, or was not run to the end);
- ``wrong form``: a visible check fails (not a number, negative, wrong shape ...);
- ``error``: the check could not run (say, an exception other than a failed check).

Only the checks in the student's own notebook run, and any hidden-test region is removed first,
so no expected value is ever computed, let alone shown. On a homework with per-student numbers
it shows the numbers the notebook's STUDENT_ID and HOMEWORK_KEY give (and warns when none are
entered). It also warns when a read-only cell was edited or deleted (the grader would give that question zero). Exit status: 0 when every
question is answered in the right form, 1 otherwise, 2 when the file is not a notebook.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from scalebook.homework import SAMPLE_NOTE

from .course import EXERCISES, REPO
from .notebook import nbgrader_of, read_cells, strip_hidden_tests
from .safe_text import terminal_text

STATUS_OK = "answered"
NUMBERS_CALL = "your_numbers("  # the setup cell of a homework with per-student numbers


@dataclass
class Question:
    grade_id: str
    points: float
    status: str = "not run"
    detail: str = ""


@dataclass
class ValidationResult:
    notebook: Path
    questions: list[Question] = field(default_factory=list)
    cell_errors: list[str] = field(default_factory=list)  # errors in the student's own cells
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    numbers: str = ""  # what the setup cell printed of the student's own numbers, if any
    stopped: str = ""  # why nothing after the setup cell was run (a wrong id or key)

    @property
    def ok(self) -> bool:
        return not self.stopped and bool(self.questions) and all(q.status == STATUS_OK for q in self.questions)

    def render(self) -> str:
        if self.stopped:  # nothing else is worth reading until this is fixed
            return (f"{self.stopped}\n\nNothing after that cell was run: fix STUDENT_ID and HOMEWORK_KEY "
                    f"(as your course gave them) and validate again.")
        lines = [f"Validated {self.notebook} ({self.seconds:.1f} s)", ""]
        if self.numbers:
            lines += [self.numbers.rstrip(), ""]
        width = max([len(q.grade_id) for q in self.questions] + [8])
        for q in self.questions:
            pts = f"{q.points:g} pt" + ("s" if q.points != 1 else "")
            line = f"  {q.grade_id:<{width}}  {pts:>7}  {q.status}"
            if q.detail:
                line += f": {q.detail}"
            lines.append(line)
        if not self.questions:
            lines.append("  no graded questions found: is this a homework notebook from exercises/?")
        if self.cell_errors:
            lines += ["", "Errors in your cells:"] + [f"  {e}" for e in self.cell_errors]
        if self.warnings:
            lines += ["", "Warnings:"] + [f"  {w}" for w in self.warnings]
        answered = sum(q.status == STATUS_OK for q in self.questions)
        lines.append("")
        if self.ok:
            lines.append(f"All {len(self.questions)} questions are answered in the right form. "
                         "(Whether the answers are right is checked when it is graded.)")
        else:
            lines.append(f"{answered} of {len(self.questions)} questions answered in the right form.")
        return "\n".join(lines)


class NotANotebook(Exception):
    pass


def _first_line(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text or "").strip()
    return text.splitlines()[0] if text else ""


def classify(outputs) -> tuple[str, str]:
    """Status and detail of one test cell from its outputs after execution."""
    for out in outputs:
        if out.get("output_type") == "error":
            ename, evalue = out.get("ename", ""), _first_line(out.get("evalue", ""))
            if ename == "NameError":
                name = re.search(r"name '([^']+)' is not defined", evalue)
                what = f"{name.group(1)} is not defined" if name else evalue
                return "not answered", what
            if ename in ("AssertionError", "TypeError", "ValueError"):
                return "wrong form", evalue or ename
            if ename == "NotImplementedError":
                return "not answered", "the answer cell still raises NotImplementedError"
            return "error", f"{ename}: {evalue}"
    return STATUS_OK, ""


def _locked_cell_warnings(nb, reference: Path | None) -> tuple[list[str], set[str]]:
    """Warnings about edited or deleted read-only cells, and the grade_ids of edited ones."""
    from nbgrader import utils

    warnings, changed = [], set()
    present = {}
    for cell, seen in zip(nb.cells, read_cells(nb)):
        gid, meta = seen.grade_id, nbgrader_of(cell)
        if not gid:
            continue
        present[gid] = cell
        if (utils.is_grade(cell) or utils.is_locked(cell)) and "checksum" in meta:
            if utils.compute_checksum(cell) != meta["checksum"]:
                if utils.is_grade(cell):
                    changed.add(gid)  # shown as the question's status
                else:
                    warnings.append(f"the read-only cell {gid} was changed: restore it from exercises/")
    if reference is not None and reference.is_file():
        import nbformat

        ref = nbformat.read(reference, as_version=4)
        for c in read_cells(ref):
            if c.grade_id and (c.locked or c.graded) and c.grade_id not in present:
                warnings.append(f"the read-only cell {c.grade_id} was deleted: copy it back from {reference}")
    return warnings, changed


def _reference_for(path: Path, nb) -> Path | None:
    """The released notebook this one was made from, when exercises/ has it."""
    for name in (path.stem, path.parent.name):
        candidate = EXERCISES / name / f"{name}.ipynb"
        if candidate.is_file():
            return candidate
    return None


def validate_notebook(path: Path, *, timeout: float = 120, kernel_name: str = "python3") -> ValidationResult:
    """Execute ``path`` (a copy of it; the file is not changed) and classify each question."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    path = Path(path)
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises many kinds for a broken file
        raise NotANotebook(f"{path} is not a Jupyter notebook: {_first_line(str(exc))}") from exc
    result = ValidationResult(path)
    result.warnings, changed = _locked_cell_warnings(nb, _reference_for(path, nb))

    test_cells = {}
    seen = read_cells(nb)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.outputs = []
            if seen[index].graded:
                cell.source = strip_hidden_tests(cell.source)
                q = Question(seen[index].grade_id or f"cell {index}", seen[index].points)
                test_cells[index] = q
                result.questions.append(q)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.setdefault("MPLBACKEND", "Agg")
    client = NotebookClient(
        nb, timeout=timeout, kernel_name=kernel_name, allow_errors=True, interrupt_on_timeout=True,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    start = time.perf_counter()
    try:
        # the kernel process's own stderr is only ipykernel's log (cell output comes over ZMQ)
        with client.setup_kernel(env=env, stderr=subprocess.DEVNULL):
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
                if cell.cell_type == "code" and NUMBERS_CALL in cell.source:
                    wrong = next((o for o in cell.outputs if o.get("output_type") == "error"), None)
                    if wrong is not None:  # a wrong id or key: every later cell would fail with it
                        result.stopped = ("Your STUDENT_ID and HOMEWORK_KEY do not go together: "
                                          f"{_first_line(wrong.get('evalue', '')) or wrong.get('ename', '')}")
                        break
    except CellTimeoutError:
        result.cell_errors.append(f"a cell ran for more than {timeout:g} s and could not be stopped")
    except DeadKernelError:
        result.cell_errors.append("the kernel died (out of memory?) before the notebook finished")
    result.seconds = time.perf_counter() - start

    for cell in nb.cells:
        if cell.cell_type == "code" and NUMBERS_CALL in cell.source:
            result.numbers = "".join(o.get("text", "") for o in cell.outputs
                                     if o.get("output_type") == "stream" and o.get("name") == "stdout")
            if SAMPLE_NOTE in result.numbers.replace("\n", " "):
                result.warnings.append("no STUDENT_ID and HOMEWORK_KEY are entered: these are the book's "
                                       "sample numbers, and answers to them are graded as wrong for you")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if index in test_cells:
            q = test_cells[index]
            if q.grade_id in changed:
                q.status, q.detail = "test cell changed", "it would score zero: restore it from exercises/"
            elif cell.get("execution_count") is None and not cell.outputs:
                q.status, q.detail = "not run", "the notebook stopped before this cell"
            else:
                q.status, q.detail = classify(cell.outputs)
            continue
        for out in cell.outputs:
            if out.get("output_type") == "error" and out.get("ename") != "NotImplementedError":
                where = seen[index].grade_id or f"cell {index + 1}"
                if out.get("ename") == "KeyboardInterrupt":
                    result.cell_errors.append(f"{where}: stopped after running for {timeout:g} s (an endless loop?)")
                else:
                    result.cell_errors.append(f"{where}: {out.get('ename')}: {_first_line(out.get('evalue', ''))}")
    return result


def main(path: str, timeout: float = 120) -> int:
    try:
        result = validate_notebook(Path(path), timeout=timeout)
    except NotANotebook as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(terminal_text(result.render()))  # cell errors quote what the notebook printed
    return 0 if result.ok else 1

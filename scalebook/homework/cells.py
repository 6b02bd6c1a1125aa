"""Writes each declared part's test cell into its source notebook in ``solutions/``.

``make generate`` runs ``python -m scalebook.homework.cells`` before nbgrader: every graded code
cell whose answers are all declared parts gets the source
:func:`~scalebook.homework.parts.test_cell_source` writes (a form check per answer and a hidden
check of one ``check_answer`` call per answer). Other cells (prompts, solutions, the JAX checks
that are no number) are left as they are.
``--check`` writes nothing and exits 1 if a cell would change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import PARTS
from .parts import test_cell_source

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def checked_answers(cell: dict, answers) -> tuple[str, ...]:
    """The declared answers a graded code cell checks, in order: its ``check_answer`` calls'
    (the generated form), or else the answers of its form checks (``check_number``,
    ``check_array``: a cell written by hand). Empty when it checks none, or when one of them is
    not declared (such a cell stays as it is)."""
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") != "code" or not nbg.get("grade"):
        return ()
    lines = _text(cell.get("source", "")).splitlines()
    names = [line.split('"')[1] for line in lines if line.startswith('check_answer(VARIANT, "')]
    if not names:
        names = [line.split("(", 1)[1].split(",")[0].strip() for line in lines
                 if line.startswith(("check_number(", "check_array("))]
    names = list(dict.fromkeys(names))
    return tuple(names) if names and all(n in answers for n in names) else ()


def checked_answer(cell: dict, answers) -> str | None:
    """The first declared answer a graded code cell checks (see :func:`checked_answers`), or
    None."""
    names = checked_answers(cell, answers)
    return names[0] if names else None


def sync_notebook(path: Path, assignment: str, *, check: bool = False) -> list[str]:
    """Rewrite the declared parts' test cells of ``path``; return the answers whose cell changed."""
    raw = path.read_text("utf-8")
    nb = json.loads(raw)
    parts = PARTS.get(assignment, {})
    changed: list[str] = []
    for cell in nb["cells"]:
        names = checked_answers(cell, parts)
        if not names:
            continue
        source = test_cell_source(*(parts[n] for n in names))
        if _text(cell["source"]) != source:
            changed.extend(names)
            cell["source"] = _lines(source)
    if changed and not check:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return changed


def main(argv: list[str]) -> int:
    check = "--check" in argv
    drift = 0
    for assignment in sorted(PARTS):
        path = SOLUTIONS / assignment / f"{assignment}.ipynb"
        changed = sync_notebook(path, assignment, check=check)
        if changed:
            drift += len(changed)
            verb = "out of date" if check else "rewritten"
            print(f"{assignment}: test cells {verb}: {', '.join(changed)}")
    return 1 if check and drift else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Writes each declared part's test cell into its source notebook in ``solutions/``.

``make generate`` runs ``python -m scalebook.homework.cells`` before nbgrader: every graded code
cell whose answer is a declared :class:`~scalebook.homework.parts.Part` gets the source
:func:`~scalebook.homework.parts.test_cell_source` writes (a form check and a two-line hidden
check). Other cells (prompts, solutions, the JAX checks that are no number) are left as they are.
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


def checked_answer(cell: dict, answers) -> str | None:
    """The declared answer a graded code cell checks (its ``check_answer`` call's, or else its
    first ``check_number``'s), or None."""
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") != "code" or not nbg.get("grade"):
        return None
    lines = _text(cell.get("source", "")).splitlines()
    for line in lines:
        if line.startswith('check_answer(VARIANT, "'):
            name = line.split('"')[1]
            return name if name in answers else None
    for line in lines:
        if line.startswith("check_number("):
            name = line[len("check_number("):].split(",")[0].strip()
            return name if name in answers else None
    return None


def sync_notebook(path: Path, assignment: str, *, check: bool = False) -> list[str]:
    """Rewrite the declared parts' test cells of ``path``; return the answers whose cell changed."""
    raw = path.read_text("utf-8")
    nb = json.loads(raw)
    parts = PARTS.get(assignment, {})
    changed = []
    for cell in nb["cells"]:
        name = checked_answer(cell, parts)
        if name is None:
            continue
        source = test_cell_source(parts[name])
        if _text(cell["source"]) != source:
            changed.append(name)
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

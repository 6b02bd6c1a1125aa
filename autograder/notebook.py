"""A notebook's cells as the grader sees them, read once.

A Jupyter notebook is JSON: each cell a dict with a ``cell_type``, a ``source`` (a string or a
list of strings) and ``metadata``, where nbgrader keeps what the cell is for
(``metadata.nbgrader``: ``grade_id``, ``points``, ``grade``, ``solution``, ``locked``) and
Jupyter keeps its ``tags``. Every part of the grader asks the same few questions of a cell --
which question is it, is it a test, an answer, read-only, the identity cell -- so they are
answered here, once, by :func:`read_cells`, into frozen :class:`Cell` records; the few places
that need the raw metadata itself (a copy of the instructor's metadata) use
:func:`nbgrader_of` and :func:`tags_of`, and nbgrader's checksum of a cell is :func:`checksum`.

Reading only: nothing here runs a cell's code, and every reader is lenient -- a missing or
malformed field reads as absent (strict checking of a submission is
``grading/submission.py``'s job).

The names shared by the notebooks, the sandbox and the grader are said here once:
:data:`VARIANT_NAME` (the per-student numbers the grader binds for the hidden checks; never an
answer), the identity capture (:data:`IDENTITY`, :data:`IDENTITY_NAMES`), and nbgrader's
hidden-test markers (:func:`strip_hidden_tests`, what a student never sees of a test cell).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

VARIANT_NAME = "VARIANT"                          # bound by the grader, never captured
IDENTITY = "__identity__"                         # the capture step that reads the two below
IDENTITY_NAMES = ("STUDENT_ID", "HOMEWORK_KEY")   # what the identity cell binds

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"

_IDENTITY_LINE = re.compile(r"^STUDENT_ID\s*=", re.MULTILINE)


def text(source) -> str:
    """A cell's ``source`` (a string or a list of strings) as one string; "" if malformed."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def nbgrader_of(cell: dict) -> dict:
    """The cell's nbgrader metadata, ``{}`` when it has none (or it is not a JSON object)."""
    meta = cell.get("metadata")
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def checksum(cell: dict) -> str:
    """nbgrader's cell checksum (``nbgrader.utils.compute_checksum``) of a JSON cell.

    A pure function of the cell's type, source and nbgrader metadata, remembered for the
    cells every submission repeats (nbgrader's own takes 0.4 ms a cell: 18 ms a notebook)."""
    meta = json.dumps(nbgrader_of(cell), sort_keys=True)
    return _checksum(str(cell.get("cell_type")), text(cell.get("source")), meta)


@functools.lru_cache(maxsize=4096)
def _checksum(cell_type: str, source: str, nbgrader_json: str) -> str:
    import nbformat
    from nbgrader.utils import compute_checksum

    node = nbformat.from_dict({"cell_type": cell_type, "source": source,
                               "metadata": {"nbgrader": json.loads(nbgrader_json)}})
    return compute_checksum(node)


def tags_of(cell: dict) -> list | None:
    """The cell's Jupyter ``tags`` as written (None when there are none), unchecked."""
    meta = cell.get("metadata")
    return meta.get("tags") if isinstance(meta, dict) else None


def strip_hidden_tests(source: str) -> str:
    """A test cell's source without its hidden-test regions, as nbgrader releases it: every
    line from one holding :data:`HIDDEN_BEGIN` to the next holding :data:`HIDDEN_END`, both
    included, is dropped; a region that is never closed runs to the end of the cell."""
    out, hidden = [], False
    for line in source.splitlines(keepends=True):
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        elif not hidden:
            out.append(line)
    return "".join(out)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell: where it is, what it holds, and what nbgrader says it is for."""

    index: int                 # position in the notebook, from 0
    cell_type: str             # "code", "markdown" or "raw" ("" if missing)
    source: str
    grade_id: str | None       # nbgrader's name of the cell (None: not an nbgrader cell)
    points: float              # nbgrader points (0 unless a graded cell says otherwise)
    graded: bool               # nbgrader ``grade``: a graded cell (a test, if it is code)
    solution: bool             # nbgrader ``solution``: an answer cell
    locked: bool               # nbgrader ``locked``: read-only
    identity: bool             # the cell that binds STUDENT_ID and HOMEWORK_KEY
    tags: tuple[str, ...]      # its Jupyter tags (strings only)
    recorded_checksum: str | None = None  # the checksum nbgrader wrote into its metadata

    @property
    def is_test(self) -> bool:
        """An autograder test cell: graded code."""
        return self.graded and self.cell_type == "code"

    @property
    def is_read_only(self) -> bool:
        """Locked and neither a test nor an answer: a prompt or a "given" cell."""
        return self.locked and not self.graded and not self.solution

    @property
    def is_answer(self) -> bool:
        """An autograded answer cell: code the student writes (nbgrader ``solution``)."""
        return self.solution and self.cell_type == "code"


def _points(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def read_cell(index: int, cell) -> Cell:
    """One cell dict (or ``nbformat`` node) as a :class:`Cell`; anything else reads as empty."""
    cell = cell if isinstance(cell, dict) else {}
    nbg = nbgrader_of(cell)
    gid = nbg.get("grade_id")
    kind = cell.get("cell_type")
    kind = kind if isinstance(kind, str) else ""
    source = text(cell.get("source"))
    graded, solution, locked = bool(nbg.get("grade")), bool(nbg.get("solution")), bool(nbg.get("locked"))
    tags = tags_of(cell)
    return Cell(index, kind, source, gid if isinstance(gid, str) and gid else None,
                _points(nbg.get("points", 0)), graded, solution, locked,
                kind == "code" and not (graded or solution or locked)
                and bool(_IDENTITY_LINE.search(source)),
                tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
                nbg["checksum"] if isinstance(nbg.get("checksum"), str) else None)


def read_cells(nb: dict) -> tuple[Cell, ...]:
    """Every cell of a parsed notebook, in order: ``read_cells(nb)[i]`` is ``nb["cells"][i]``."""
    cells = nb.get("cells")
    return tuple(read_cell(i, c) for i, c in enumerate(cells)) if isinstance(cells, list) else ()


def is_identity_cell(cell: dict) -> bool:
    """The code cell, neither answer, test nor read-only, that binds STUDENT_ID and HOMEWORK_KEY."""
    return read_cell(0, cell).identity

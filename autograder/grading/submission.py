"""A submission, admitted as data: parsed strictly, compared with the release, its run planned.

:func:`parse_notebook` reads the submitted file as size-capped JSON and checks every field the
grader uses; :func:`validate` compares each locked cell with the release (nbgrader checksum and
grade_id) and plans the sandboxed run: the submission's code cells in order, read-only cells
restored to the instructor's version, test cells replaced by *capture* steps that report the
values their answer names hold there. :func:`solution_submission` makes the instructor's
solutions a submission, for the self-check. Runs in the grader's own process and never
executes the student's code: the notebook is only data here. See ``DESIGN.md``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re

from ..notebook import IDENTITY, IDENTITY_NAMES, Cell, checksum, read_cells
from .result import TAMPERED
from .spec import SELF_CHECK_STUDENT, Spec

MAX_NOTEBOOK_BYTES = 64 << 20
MAX_CELLS = 5000              # cells in a submission (the homework has under 100)
MAX_SOURCE_CHARS = 8 << 20    # characters of source, all cells together
MAX_NESTING = 64              # depth of the notebook's JSON (a real one is under 20)
MAX_JSON_OBJECTS = 500_000    # JSON objects in it (abandons parsing past this)
MAX_JSON_ITEMS = 4_000_000    # list elements + object members in it


@dataclasses.dataclass
class Validation:
    """A submission checked against the spec, and the plan of its sandboxed run."""

    notebook: dict | None                 # the parsed submission (None: not a notebook)
    invalid: str | None                   # why it is not a gradable notebook
    tampered: dict[str, str]              # grade_id -> what was done to the test cell
    problems: list[str]
    steps: list[dict]                     # the job for sandbox/inside/ (job.py)
    test_positions: dict[str, int]        # grade_id -> index of the test cell in the submission
    cells: tuple[Cell, ...] = ()          # the submission's cells, read once (notebook.read_cells)


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (not Unicode; unwritable as UTF-8) replaced by U+FFFD.

    JSON can carry them (``"\\ud800"``) and Python keeps them in a ``str``; every string from a
    student -- the notebook, the sandbox's records -- goes through this before it can reach a
    file, a message or the gradebook."""
    return _SURROGATE.sub("\ufffd", text)


class _TooBig(ValueError):
    pass


def _nbgrader_ok(nbg: dict) -> str | None:
    """Why a cell's nbgrader metadata is malformed, or None. Types as nbgrader writes them."""
    for key in ("grade_id", "checksum", "cell_type"):
        if key in nbg and not isinstance(nbg[key], str):
            return f"its nbgrader {key} is not a string"
    for key in ("grade", "solution", "locked", "task"):
        if key in nbg and not isinstance(nbg[key], bool):
            return f"its nbgrader {key} is not true/false"
    points = nbg.get("points", 0)
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not (-1e9 < points < 1e9):
        return "its nbgrader points is not a number"
    if "schema_version" in nbg and type(nbg["schema_version"]) is not int:
        return "its nbgrader schema_version is not an integer"
    return None


def _walk_json(root, clean: bool) -> str | None:
    """Check the parsed notebook's shape (depth, size) without recursion, cleaning strings
    (surrogates) in place if ``clean``. Returns why it is not acceptable, or None."""
    stack = [(root, 1)]
    items = 0
    while stack:
        obj, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"its JSON is nested more than {MAX_NESTING} levels deep"
        if isinstance(obj, dict):
            items += len(obj)
            if clean and any(_SURROGATE.search(k) for k in obj):
                pairs = [(clean_text(k), v) for k, v in obj.items()]
                obj.clear()
                obj.update(pairs)
            for k, v in obj.items():
                if isinstance(v, (dict, list)):
                    stack.append((v, depth + 1))
                elif clean and isinstance(v, str):
                    obj[k] = clean_text(v)
        elif isinstance(obj, list):
            items += len(obj)
            for i, v in enumerate(obj):
                if isinstance(v, (dict, list)):
                    stack.append((v, depth + 1))
                elif clean and isinstance(v, str):
                    obj[i] = clean_text(v)
        if items > MAX_JSON_ITEMS:
            return f"it has more than {MAX_JSON_ITEMS} JSON values"
    return None


def parse_notebook(data: bytes) -> tuple[dict | None, str | None]:
    """The submission as a notebook dict, or (None, why not).

    Strict, as the input is hostile: size, number of cells, total source, JSON depth and
    number of values are capped; every field the grader uses must have its nbformat/nbgrader
    type; lone surrogates in any string are replaced. What passes can be copied, compared,
    hashed and written without surprises.
    """
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB"
    objects = [0]

    def count(obj: dict) -> dict:
        objects[0] += 1
        if objects[0] > MAX_JSON_OBJECTS:
            raise _TooBig(f"it has more than {MAX_JSON_OBJECTS} JSON objects")
        return obj

    try:
        nb = json.loads(data.decode("utf-8"), object_hook=count)
    except UnicodeDecodeError:
        return None, "the file is not UTF-8 text"
    except _TooBig as exc:
        return None, f"the file is too large a notebook ({exc})"
    except (ValueError, RecursionError) as exc:
        return None, f"the file is not valid JSON ({clean_text(str(exc))[:200]})"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, "the file is JSON but not a Jupyter notebook"
    if nb.get("nbformat") != 4:
        return None, f"unsupported notebook format {ascii(nb.get('nbformat'))[:50]} (need nbformat 4)"
    if len(nb["cells"]) > MAX_CELLS:
        return None, f"the notebook has more than {MAX_CELLS} cells"
    why = _walk_json(nb, clean=bool(_SURROGATE_ESCAPE.search(data)))
    if why is not None:
        return None, f"the notebook is malformed: {why}"
    total = 0
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            return None, f"cell {i} is not a notebook cell"
        src = cell.get("source", "")
        if not isinstance(src, str) and not (isinstance(src, list) and all(isinstance(s, str) for s in src)):
            return None, f"cell {i} has a malformed source"
        total += len(src) if isinstance(src, str) else sum(map(len, src))
        if total > MAX_SOURCE_CHARS:
            return None, f"the notebook has more than {MAX_SOURCE_CHARS >> 20} M characters of source"
        if not isinstance(cell.get("metadata", {}), dict):
            return None, f"cell {i} has malformed metadata"
        nbg = cell.get("metadata", {}).get("nbgrader")
        if nbg is not None and not isinstance(nbg, dict):
            return None, f"cell {i} has malformed nbgrader metadata"
        why = _nbgrader_ok(nbg) if nbg is not None else None
        if why is not None:
            return None, f"cell {i} has malformed nbgrader metadata: {why}"
    return nb, None


def validate(spec: Spec, data: bytes | None, *, missing: str | None = None) -> Validation:
    """Check a submission against the spec and plan its run. A read-only markdown cell may
    differ (a roster student's own notebook has their numbers written into the problem text):
    only the read-only *code* cells are compared, and run as the instructor wrote them."""
    if data is None:
        return Validation(None, missing or "no notebook was submitted", {}, [], [], {})
    nb, why = parse_notebook(data)
    if nb is None:
        return Validation(None, why, {}, [], [], {})
    raw, cells = nb["cells"], read_cells(nb)
    by_gid: dict[str, list[int]] = {}
    for cell in cells:
        if cell.grade_id is not None:
            by_gid.setdefault(cell.grade_id, []).append(cell.index)
    known = {t.grade_id for t in spec.tests} | set(spec.locked)
    if not known & set(by_gid):
        return Validation(nb, f"this is not the {spec.assignment} notebook (none of its cells are there)",
                          {}, [], [], {}, cells)
    tampered: dict[str, str] = {}
    positions: dict[str, int] = {}
    for t in spec.tests:
        where = by_gid.get(t.grade_id, [])
        if not where:
            tampered[t.grade_id] = "the test cell was deleted"
            continue
        if len(where) > 1:
            tampered[t.grade_id] = "the test cell appears more than once"
            continue
        cell = cells[where[0]]
        if cell.cell_type != "code":
            tampered[t.grade_id] = f"the test cell was changed into a {cell.cell_type} cell"
            continue
        try:
            same = checksum(raw[cell.index]) == t.checksum
        except Exception:
            same = False
        if not same or cell.source != t.release_source:
            tampered[t.grade_id] = "the test cell was edited"
            continue
        positions[t.grade_id] = where[0]
    problems = [f"{TAMPERED} {gid}: {what}; the question scores zero" for gid, what in tampered.items()]
    restored: dict[int, str] = {}
    changed_code: list[str] = []
    for gid, lc in spec.locked.items():
        # only a read-only *code* cell matters (its original is what runs); a prompt's text
        # differs in any notebook with other numbers written in, and nothing graded reads it
        if lc.cell_type != "code":
            continue
        where = by_gid.get(gid, [])
        if not where:
            problems.append(f"read-only cell {gid} was deleted")
            continue
        for i in where:
            cell = cells[i]
            try:
                same = checksum(raw[i]) == lc.checksum and cell.source == lc.source
            except Exception:
                same = False
            if not same:
                changed_code.append(gid)
            if cell.cell_type == "code":
                restored[i] = lc.source
    if changed_code:
        problems.append(f"read-only code cell(s) {', '.join(changed_code)} were changed; the originals were run")
    steps: list[dict] = []
    tests = {t.grade_id: t for t in spec.tests}
    by_pos = {i: gid for gid, i in positions.items()}
    identity_due = spec.variants is not None and spec.variants_on
    for cell in cells:
        i = cell.index
        if i in by_pos:
            if identity_due:  # what the notebook says about whose numbers it holds
                steps.append({"kind": "capture", "grade_id": IDENTITY, "names": list(IDENTITY_NAMES)})
                identity_due = False
            t = tests[by_pos[i]]
            steps.append({"kind": "capture", "grade_id": t.grade_id, "names": list(t.names)})
            continue
        if cell.cell_type != "code":
            continue
        if cell.grade_id in tests:
            continue  # a tampered copy of a test cell: never run
        steps.append({"kind": "code", "index": i, "source": restored.get(i, cell.source)})
    return Validation(nb, None, tampered, problems, steps, positions, cells)


def solution_submission(spec: Spec, student: str = SELF_CHECK_STUDENT,
                        key: str | None = None) -> bytes:
    """The release notebook with every answer cell holding the instructor's solution (and,
    for a homework with per-student numbers, ``student``'s id and ``key`` in its identity
    cell)."""
    solutions = {c.grade_id: c.source for c in spec.source_cells if c.is_answer and c.grade_id}
    nb = copy.deepcopy(spec.release)
    for cell, seen in zip(nb.get("cells", []), spec.release_cells):
        if seen.grade_id in solutions:
            cell["source"] = solutions[seen.grade_id]
        if key is not None and seen.identity:
            cell["source"] = f"STUDENT_ID = {student!r}\nHOMEWORK_KEY = {key!r}\n"
    return json.dumps(nb).encode()

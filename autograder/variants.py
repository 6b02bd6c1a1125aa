"""Per-student numbers, the instructor's side: the course secret, keys, notebooks, checks.

A homework with a spec in :mod:`scalebook.homework` gives each student their own numbers
(``scalebook.variants`` says how they are drawn). This module holds what only the instructor
has and does:

- **The course secret**, ``<course>/variants.secret``: 32 random bytes (hex), written with mode
  0600 the first time a key is needed. Every key of the course follows from it: keep it, back it
  up with the gradebook, and never put it in a student's hands. Losing it means new keys.
- **On or off**, ``<course>/variants.json`` (``{"enabled": false}`` turns them off; no file:
  on). Off, every student gets the published numbers and the notebooks ask for no key.
- **Keys**: :func:`key_for` (``python -m autograder keys --roster roster.csv`` lists them for
  the LMS, one per student for the whole course).
- **Notebooks**: :func:`render_source` fills the problem text of the one class notebook
  (placeholders become ``[label]``, the given cells print each student's values);
  :func:`personal_notebook` writes a roster student's own notebook, id and key filled in and
  the numbers written into the problem text.
- **Checking who handed in what**: :func:`identity_problem` compares the id and key a notebook
  carries with the student it was collected from; the grader then uses the submitter's numbers
  whatever the notebook says.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalebook.homework import spec_for
from scalebook.variants import (KeyError_, Variant, VariantSpec, check_key, default_variant, draw,
                                fill_placeholders, normalize_key, student_key)

from .course import (SECRET_FILE, SETTINGS_FILE, Course, CourseError, course_secret, render_source,
                     set_variants_enabled, variants_enabled)
from .notebook import nbgrader_of, read_cells
from .safe_text import csv_text


def _personal_cell(student: str, key: str) -> str:
    return ("# Your id and homework key, filled in for you: do not change them.\n"
            f"STUDENT_ID = {student!r}\n"
            f"HOMEWORK_KEY = {key!r}\n")


def key_for(course: Course, student: str) -> str:
    """The homework key of ``student`` in this course ("ABCD-EFGH-J")."""
    return student_key(course_secret(course), student)


def variant_for(course: Course, spec: VariantSpec, student: str) -> Variant:
    """The numbers ``student`` is graded on: their own, or the published ones if variants are off."""
    if not variants_enabled(course):
        return default_variant(spec)
    return draw(spec, key_for(course, student))


# --------------------------------------------------------------------------- notebooks

def personal_notebook(release: dict, template: dict, spec: VariantSpec, student: str, key: str) -> dict:
    """A roster student's own notebook: the class ``release`` with its problem text taken from
    ``template`` (the source as written) and filled with the student's numbers, and the identity
    cell holding their id and key. Locked cells get the checksum nbgrader would give this text."""
    import nbformat
    from nbgrader.utils import compute_checksum

    variant = draw(spec, key)
    written = {c.grade_id: c.source for c in read_cells(template)
               if c.cell_type == "markdown" and c.grade_id}
    out = copy.deepcopy(release)
    for cell, seen in zip(out.get("cells", []), read_cells(out)):
        if seen.cell_type == "markdown" and seen.grade_id in written:
            cell["source"] = fill_placeholders(written[seen.grade_id], spec, variant)
            nbg = nbgrader_of(cell)
            if nbg.get("checksum"):
                nbg["checksum"] = compute_checksum(nbformat.from_dict(cell))
        elif seen.identity:
            cell["source"] = _personal_cell(student, key)
    return out


def write_roster_notebooks(course: Course, assignment: str, students: list[str], out_dir: Path) -> dict[str, Path]:
    """``<out_dir>/<student>/<assignment>.ipynb`` for each student (their own numbers in the
    text, their id and key filled in), and ``<course>/keys.csv`` (apart from the notebooks handed
    out); returns student -> path.
    The course must be prepared for the assignment (``generate``/``collect`` do that)."""
    spec = spec_for(assignment)
    if spec is None:
        raise CourseError(f"{assignment} has no per-student numbers: every student gets exercises/{assignment}/")
    if not variants_enabled(course):
        raise CourseError("this course gives everyone the same numbers (variants are off): "
                          "hand out exercises/ to everyone, or turn them on with `variants --on`")
    name = f"{assignment}.ipynb"
    course.prepare(assignment)
    release = json.loads((course.release(assignment) / name).read_text("utf-8"))
    template = json.loads((course.templates(assignment) / name).read_text("utf-8"))
    written = {}
    for student in students:
        folder = Path(out_dir) / student
        folder.mkdir(parents=True, exist_ok=True)
        nb = personal_notebook(release, template, spec, student, key_for(course, student))
        path = folder / name
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", "utf-8")
        written[student] = path
    # every student's key: in the course (readable by its owner only), never beside the
    # notebooks that are handed out
    keys = Path(course.root) / "keys.csv"
    keys.write_text(keys_csv(course, students), "utf-8")
    keys.chmod(0o600)
    return written


# --------------------------------------------------------------------------- rosters

ID_COLUMNS = ("id", "student_id", "student", "login", "sis login id", "username", "identifier")


def read_roster(path: Path) -> list[str]:
    """Student ids from a CSV roster: the first column whose header is one of
    :data:`ID_COLUMNS` (any case). Blank ids are skipped; a repeated id is an error."""
    try:
        text = Path(path).read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"cannot read the roster {path}: {exc}") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise CourseError(f"the roster {path} is empty")
    header = [h.strip().lower() for h in rows[0]]
    column = next((header.index(c) for c in ID_COLUMNS if c in header), None)
    if column is None:
        raise CourseError(f"the roster {path} has no id column: its header is {rows[0]!r}; name one "
                          f"column {' or '.join(repr(c) for c in ID_COLUMNS[:3])}")
    ids, seen = [], set()
    for number, row in enumerate(rows[1:], start=2):
        value = row[column].strip() if column < len(row) else ""
        if not value:
            continue
        if value in seen:
            raise CourseError(f"the roster {path} lists {value!r} twice (line {number})")
        if "/" in value or value in (".", "..") or any(ord(ch) < 32 for ch in value):
            raise CourseError(f"the roster {path} has an id that cannot name a folder: {value!r} (line {number})")
        seen.add(value)
        ids.append(value)
    if not ids:
        raise CourseError(f"the roster {path} lists no students")
    return ids


def keys_csv(course: Course, students: list) -> str:
    """``student,name,lms_id,email,homework_key`` for each student (ids, or ``lms.RosterStudent``
    with names): what the instructor hands out (LMS, mail merge). ``student`` is the id the
    student types as STUDENT_ID. Rosters come from an LMS, so every cell goes through
    ``safe_text.csv_cell`` (``=1+1`` -> ``'=1+1``)."""
    rows = [["student", "name", "lms_id", "email", "homework_key"]]
    for s in students:
        sid = s if isinstance(s, str) else s.id
        name = "" if isinstance(s, str) else (s.name if s.name != sid else "")
        rows.append([sid, name, "" if isinstance(s, str) else s.lms_user_id or "",
                     "" if isinstance(s, str) else s.email or "", key_for(course, sid)])
    return csv_text(rows)


# --------------------------------------------------------------------------- who handed in what

@dataclass(frozen=True)
class Identity:
    """What a submission says about whose numbers it holds, against who handed it in."""

    entered_id: Any
    entered_key: Any
    problem: str | None      # None: the notebook is the submitter's own

    def to_json(self) -> dict:
        return {"entered_id": self.entered_id if isinstance(self.entered_id, (str, type(None))) else repr(self.entered_id),
                "entered_key": self.entered_key if isinstance(self.entered_key, (str, type(None))) else repr(self.entered_key),
                "problem": self.problem}


def identity_problem(student: str, expected_key: str, captured: dict[str, dict] | None, *,
                     variants_on: bool) -> Identity:
    """Compare what the notebook bound to STUDENT_ID and HOMEWORK_KEY with the submitter."""
    if not variants_on:
        return Identity(None, None, None)
    captured = captured or {}
    entered_id = captured.get("STUDENT_ID", {}).get("value")
    entered_key = captured.get("HOMEWORK_KEY", {}).get("value")
    if captured == {}:
        return Identity(None, None, "the notebook's STUDENT_ID and HOMEWORK_KEY could not be read "
                                    f"(its run stopped first); graded with {student}'s own numbers")
    if not isinstance(entered_id, str) or not isinstance(entered_key, str) or not (
            entered_id.strip() or entered_key.strip()):
        return Identity(entered_id, entered_key,
                        "no STUDENT_ID and HOMEWORK_KEY were entered, so the notebook shows the sample "
                        f"numbers; graded with {student}'s own numbers")
    try:
        plain = normalize_key(entered_key)
    except KeyError_:
        plain = ""
    if entered_id.strip() != student:
        return Identity(entered_id, entered_key,
                        f"the notebook's STUDENT_ID is {entered_id.strip()!r}, but {student} handed it in; "
                        f"graded with {student}'s own numbers")
    if plain != normalize_key(expected_key):
        return Identity(entered_id, entered_key,
                        f"the notebook's HOMEWORK_KEY is not {student}'s key; graded with {student}'s own "
                        "numbers")
    return Identity(entered_id, entered_key, None)


__all__ = [
    "SECRET_FILE", "SETTINGS_FILE",
    "variants_enabled", "set_variants_enabled", "course_secret", "key_for", "variant_for", "render_source",
    "personal_notebook", "write_roster_notebooks", "read_roster", "keys_csv", "Identity",
    "identity_problem", "spec_for", "check_key",
]

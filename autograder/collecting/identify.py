"""Whose file is it: the rules of ``collect`` (its module docstring says them in full) that
give one :class:`Item` its student and its file name in ``submitted/<student>/<A>/``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..lms.formats import Claims, LmsName, lms_readings, lms_student_id, moodle_folder, read_lms_name, reading_details
from .source import STUDENT_ID, Item

def lms_claims(items: list[Item], assignment: str, notebooks: list[str], assignments: list[str]) -> Claims:
    """What the files of one download say for certain: the names they give each LMS user id,
    and which LMS wrote them. Only names with one reading count: those are what the LMS
    wrote, whatever the student chose, so they never refute the true reading of another file."""
    claims = Claims()
    for item in items:
        probe = replace(item)  # identify on a copy: only the reading is wanted here
        identify(probe, assignment, notebooks, assignments)
        if probe.reading and probe.certain:
            claims.names.setdefault(probe.reading.uid, set()).add(probe.reading.name)
            claims.lms.add(probe.reading.lms)
    return claims


def _lms_student(item: Item, reading: LmsName) -> str | None:
    """Set ``item.student``/``form``/``details`` from an LMS-written name; return why not, or None."""
    student = lms_student_id(reading.name, reading.uid)
    if not STUDENT_ID.fullmatch(student):
        return f"refused: cannot make a student id of {reading.name!r} and LMS user id {reading.uid}"
    item.student, item.form, item.details = student, "lms", reading_details(reading)
    return None


def identify(item: Item, assignment: str, notebooks: list[str], assignments: list[str],
             claims: Claims | None = None) -> str | None:
    """Fill in ``item.student``/``target``/``form``; return why it cannot be, or None.

    The reason starts with ``refused: ``, ``ignored: `` or ``ambiguous: `` (an LMS name
    that reads as more than one student: see ``read_lms_name``; ``claims`` are what the other
    files of its download say, from ``lms_claims``). ``item.student`` of an LMS file is the id
    made of the LMS name and user id; ``collect`` then replaces it by the gradebook's student
    of that LMS user id, if there is one."""
    parts = item.rel.parts
    name = parts[-1]
    # 1. under a Moodle submission folder: the (outermost) folder alone names the student;
    #    everything inside it -- file names, subfolders -- is the student's own choice
    folder = next(filter(None, map(moodle_folder, parts[:-1])), None)
    if folder:
        item.reading, item.certain = folder, True
        if not name.endswith(".ipynb"):
            return "ignored: not a notebook"
        why = _lms_student(item, folder)
        if why:
            return why
        return _place(item, name, assignment, notebooks, assignments)
    # 2. nbgrader layout: .../<student>/<assignment>/<file> (recognised by a known assignment
    #    name, a "submitted" folder above, or a notebook named after its folder)
    nbgrader_like = len(parts) >= 3 and (
        parts[-2] in set(assignments) | {assignment}
        or (len(parts) >= 4 and parts[-4] == "submitted")
        or (name.endswith(".ipynb") and name[: -len(".ipynb")] == parts[-2])
    )
    if nbgrader_like:
        if parts[-2] != assignment:
            return f"ignored: belongs to assignment {parts[-2]}"
        student = parts[-3]
        if not STUDENT_ID.fullmatch(student):
            return f"refused: {student!r} is not a usable student id"
        if name == "timestamp.txt" or name.endswith(".ipynb"):
            item.student, item.target, item.form = student, name, "nbgrader"
            return None
        return "ignored: not a notebook"
    if not name.endswith(".ipynb"):
        return "ignored: not a notebook"
    # 3. an LMS file name: the LMS-written prefix names the student, the rest is the student's
    readings = lms_readings(name)
    if readings:
        reading, item.certain, why = read_lms_name(readings, claims or Claims())
        if reading is None:  # then ``why`` says why
            notebook = notebooks[0] if len(notebooks) == 1 else "<notebook>.ipynb"
            return f"ambiguous: {why}; to collect it, move it to <student>/{assignment}/{notebook}"
        item.reading = reading
        why = _lms_student(item, reading)
        if why:
            return why
        return _place(item, reading.file, assignment, notebooks, assignments)
    stem = name[: -len(".ipynb")]
    # 4. <student>.ipynb or <student>_<anything>.ipynb, at the top of the SOURCE only (in a
    #    subfolder the folder, not the file, may be what names the student)
    if len(parts) > 1:
        return ("refused: cannot tell whose notebook this is (expected <student>.ipynb at the top, "
                "<student>/<assignment>/<notebook>.ipynb, or an LMS download name)")
    student, _, rest = stem.partition("_")
    if stem in {Path(n).stem for n in notebooks} | set(assignments) | {assignment}:
        return "refused: named after the assignment, not a student (rename it <student>.ipynb)"
    if not STUDENT_ID.fullmatch(student):
        return f"refused: {student!r} is not a usable student id"
    item.student, item.form = student, "file"
    return _place(item, rest + ".ipynb", assignment, notebooks, assignments)


def _place(item: Item, original: str, assignment: str, notebooks: list[str], assignments: list[str]) -> str | None:
    """Set ``item.target`` from the student's own file name; return why not, or None."""
    others = [a for a in assignments if a != assignment and a in original]
    if others and assignment not in original:
        return f"ignored: belongs to assignment {others[0]}"
    target = _target_name(original, notebooks)
    if target is None:
        return f"refused: cannot tell which of {', '.join(notebooks)} this is"
    item.target = target
    return None


def _target_name(original: str, notebooks: list[str]) -> str | None:
    if len(notebooks) == 1:
        return notebooks[0]
    matches = [n for n in notebooks if Path(n).stem in original]
    return matches[0] if len(matches) == 1 else None

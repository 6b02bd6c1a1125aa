"""Who is who in the course: the LMS's students kept once, from the roster to the gradebook.

``keys --roster FILE`` reads the LMS's roster (``formats.read_roster_file``) and
:func:`register_roster` adds its students to the gradebook (names, email and, for Canvas, the
``lms_user_id``) and to ``<course>/roster.json``; a student already in the gradebook under the
same Canvas user id or email keeps their id.

**Who joined, who left.** ``keys --roster NEWER`` is the LMS's whole class as it is now
(``complete``): a student of ``roster.json`` missing from it has *left* (dropped the course):
``roster.json`` records the day (``"left": "2026-03-02"``), they stay in the gradebook with
what they handed in -- every assignment they submitted keeps their row and grade -- and are
left out of every assignment they did not (no "no notebook" line from ``collect``, no row,
blank or 0, in ``export``). A student who is on a later roster again is back
(``"left"`` removed). :func:`register_roster` returns who joined, left and came back.

**Moodle participant ids.** ``collect DOWNLOAD -a A --worksheet WORKSHEET.csv`` reads that
assignment's grading worksheet: :func:`match_worksheet` matches each ``Participant <n>`` to a
student by email, ID number or, failing those, a full name that only one roster student has.
The map is kept per assignment in ``<course>/lms/<A>.json`` (with the worksheet's ``Last
modified (submission)`` time), and ``export --format moodle`` writes ``Participant <n>`` of that
assignment from it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from ..course import Course, CourseError, read_json
from .formats import MOODLE, PLAIN, Roster, RosterStudent, Worksheet, WorksheetRow, moodle_roster, name_key

ROSTER_FILE = "roster.json"
LMS_DIR = "lms"


# --------------------------------------------------------------------------- the course's roster

def load_roster(course: Course) -> dict | None:
    """``{"lms": ..., "students": {id: {...}}}`` of ``<course>/roster.json``, or None."""
    data = read_json(Path(course.root) / ROSTER_FILE, "run keys --roster again")
    return data if isinstance(data, dict) else None


@dataclass
class Registered:
    """The roster's students with their ids in the course (iterating gives them), and,
    against the roster kept before, who joined, who left and who came back (ids)."""

    students: list[RosterStudent] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    back: list[str] = field(default_factory=list)
    first: bool = True  # no roster was kept before

    def __iter__(self) -> Iterator[RosterStudent]:
        return iter(self.students)

    def __len__(self) -> int:
        return len(self.students)


def has_left(entry: dict | None) -> bool:
    """Whether a ``roster.json`` student has left the course."""
    return bool((entry or {}).get("left"))


def register_roster(course: Course, roster: Roster, *, complete: bool = False,
                    today: str | None = None) -> Registered:
    """Add the roster's students to the course (gradebook and ``roster.json``); return them
    with the ids they have there (an existing student of the same Canvas user id or email
    keeps theirs). A roster of another LMS than the course's is refused. ``complete``: the
    roster is the whole class now (``keys --roster``), so a kept student missing from it has
    left, on ``today`` (default: today's UTC date)."""
    from nbgrader.api import MissingEntry, Student

    previous = load_roster(course)
    kept = previous or {"lms": roster.lms, "students": {}}
    before = {sid: dict(e) for sid, e in kept["students"].items()}
    if roster.lms != PLAIN and kept.get("lms") not in (roster.lms, PLAIN):
        raise CourseError(f"this course's roster came from {kept['lms'].title()}; "
                          f"{roster.lms.title()}'s cannot be added to it")
    out = Registered(first=previous is None)
    with course.gradebook() as gb:
        for s in roster.students:
            existing = None
            if s.lms_user_id:
                existing = gb.db.query(Student).filter(Student.lms_user_id == s.lms_user_id).first()
            elif s.email:
                existing = next((x for x in gb.db.query(Student).filter(Student.email.isnot(None))
                                 if x.email.casefold() == s.email.casefold()), None)
            if existing is None:
                sid = s.id
                try:
                    other = gb.find_student(sid)
                    if s.lms_user_id or s.email:  # the id is someone else's: another one
                        n = 2
                        while True:
                            try:
                                gb.find_student(f"{s.id}_{n}")
                                n += 1
                            except MissingEntry:
                                break
                        sid = f"{s.id}_{n}"
                    else:
                        existing = other
                except MissingEntry:
                    pass
            else:
                sid = existing.id
            fields = {k: v for k, v in (("first_name", s.first_name), ("last_name", s.last_name),
                                        ("email", s.email), ("lms_user_id", s.lms_user_id)) if v}
            gb.update_or_create_student(sid, **fields)
            s = RosterStudent(sid, s.first_name, s.last_name, s.lms_user_id, s.email, s.id_number)
            kept["students"][sid] = {k: v for k, v in asdict(s).items() if k != "id"}
            out.students.append(s)
    if complete:
        now = set(s.id for s in out)
        day = today or datetime.now(timezone.utc).strftime("%Y-%m-%d")
        for sid, entry in before.items():
            if sid not in now and not has_left(entry):
                kept["students"][sid] = {**entry, "left": day}
                out.left.append(sid)
        out.joined = sorted(sid for sid in now if sid not in before)
        out.back = sorted(sid for sid in now if sid in before and has_left(before[sid]))
    else:  # a part of the class: whoever is not on it is as they were
        for sid, entry in before.items():
            if has_left(entry) and sid in kept["students"] and not has_left(kept["students"][sid]):
                kept["students"][sid]["left"] = entry["left"]
    if roster.lms != PLAIN:
        kept["lms"] = roster.lms
    (Path(course.root) / ROSTER_FILE).write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return out


def roster_lms(course: Course) -> str | None:
    data = load_roster(course)
    return data.get("lms") if data else None


def roster_students(course: Course) -> dict[str, dict]:
    """id -> entry of every student the course's roster has had (``"left"`` marks who left)."""
    data = load_roster(course)
    return dict(data.get("students", {})) if data else {}


def left_students(course: Course) -> dict[str, str]:
    """id -> the day they left, of the roster's students who left the course."""
    return {sid: str(e["left"]) for sid, e in roster_students(course).items() if has_left(e)}


def match_worksheet(course: Course, sheet: Worksheet) -> tuple[dict[str, RosterStudent], list[WorksheetRow]]:
    """participant id -> student for the worksheet's rows; the rows no roster student matches.
    Without a roster in the course every row is a student of its own, made as a Moodle roster
    would make them (so that a roster given later finds the same ids)."""
    roster = roster_students(course)
    if not roster:
        made = moodle_roster("the worksheet", ["full name", "email address", "id number"],
                              [[r.full_name, r.email or "", r.id_number or ""] for r in sheet.rows]) \
            if sheet.rows else Roster(MOODLE, ())
        return {r.participant: s for r, s in zip(sheet.rows, made.students)}, []
    by_mail: dict[str, RosterStudent] = {}
    by_number: dict[str, RosterStudent] = {}
    by_name: dict[str, list[RosterStudent]] = {}
    for sid, s in roster.items():
        student = RosterStudent(sid, s.get("first_name", ""), s.get("last_name", ""), s.get("lms_user_id"),
                                s.get("email"), s.get("id_number"))
        if student.email:
            by_mail[student.email.casefold()] = student
        if student.id_number:
            by_number[student.id_number] = student
        by_name.setdefault(name_key(student.name), []).append(student)
    found: dict[str, RosterStudent] = {}
    unmatched: list[WorksheetRow] = []
    for row in sheet.rows:
        named = by_name.get(name_key(row.full_name), [])
        match = (by_mail.get((row.email or "").casefold()) or by_number.get(row.id_number or "")
                 or (named[0] if len(named) == 1 else None))
        if match is None:
            unmatched.append(row)
        else:
            found[row.participant] = match
    return found, unmatched


# --------------------------------------------------------------------------- per assignment

def _assignment_file(course: Course, assignment: str) -> Path:
    return Path(course.root) / LMS_DIR / f"{assignment}.json"


def load_participants(course: Course, assignment: str) -> dict[str, dict]:
    """student -> {"participant": n, "submitted": iso time or None} for a Moodle assignment."""
    data = read_json(_assignment_file(course, assignment), "collect with --worksheet again")
    return dict(data.get("moodle", {})) if isinstance(data, dict) else {}


def save_participants(course: Course, assignment: str, entries: dict[str, dict]) -> None:
    """Merge ``entries`` (student -> participant and time) into the assignment's map."""
    kept = load_participants(course, assignment)
    kept.update(entries)
    path = _assignment_file(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"moodle": kept}, indent=1, ensure_ascii=False, sort_keys=True) + "\n", "utf-8")


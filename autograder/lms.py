"""One student identity from the LMS roster to the LMS gradebook.

**Rosters** (``keys --roster FILE``) are read as the LMS writes them (:func:`read_roster_file`):

- a *Canvas gradebook export* (``Student, ID, SIS User ID, SIS Login ID, Section, ...``, with
  or without its ``Points Possible`` row): a student is keyed by the Canvas user id (``ID``),
  the number Canvas writes into every file of its submission download
  (``smithalice_10000_2001_hw1.ipynb``);
- a *Moodle participants export* (``First name, Last name / Surname, ID number, Email
  address``) or an assignment's *grading worksheet* (``Identifier, Full name, Email address,
  ...``): a student is keyed by a per-user value that is the same in every assignment (the
  ``ID number`` where there is one, else the email address), never by the number in a Moodle
  download's names, which is the *participant id* of that one assignment;
- any other CSV with an ``id`` column (the plain roster: that id is the student id).

The student id (folder names, the gradebook, the key) is made once, here: Canvas
``<name>_<user id>`` (``alice_smith_10000``, ``lms_10000`` for a name with no Latin letter);
Moodle the ID number, else the email's local part (``alice.smith``), with ``_2``, ``_3`` added
if two students would share one. A student already in the gradebook under the same Canvas user
id or email keeps their id. The roster is kept in ``<course>/roster.json``; the gradebook holds
each student with names, email and (Canvas) ``lms_user_id``.

**Moodle participant ids.** ``collect DOWNLOAD -a A --worksheet WORKSHEET.csv`` reads that
assignment's grading worksheet (:func:`read_worksheet`): ``Identifier`` ``Participant <n>`` gives
the participant id, matched to a student by email, ID number or, failing those, a full name
that only one roster student has. The map is kept per assignment in ``<course>/lms/<A>.json``
(with the worksheet's ``Last modified (submission)`` time), and ``export --format moodle``
writes ``Participant <n>`` of that assignment from it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .course import Course, CourseError, read_json

ROSTER_FILE = "roster.json"
LMS_DIR = "lms"
CANVAS, MOODLE, PLAIN = "canvas", "moodle", "plain"
PARTICIPANT = re.compile(r"\s*Participant\s+(?P<n>[0-9]+)\s*", re.IGNORECASE)
_UNUSABLE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class RosterStudent:
    """One student as the LMS lists them."""

    id: str
    first_name: str = ""
    last_name: str = ""
    lms_user_id: str | None = None  # Canvas user id (Moodle: None, see the module docstring)
    email: str | None = None
    id_number: str | None = None

    @property
    def name(self) -> str:
        return " ".join(n for n in (self.first_name, self.last_name) if n) or self.id


@dataclass(frozen=True)
class Roster:
    lms: str                                   # canvas, moodle or plain
    students: tuple[RosterStudent, ...]
    skipped: tuple[str, ...] = ()              # rows that are not students (Points Possible)


@dataclass(frozen=True)
class WorksheetRow:
    participant: str
    full_name: str
    email: str | None
    id_number: str | None
    submitted: datetime | None                 # naive UTC; None when Moodle shows "-"


@dataclass
class Worksheet:
    rows: list[WorksheetRow] = field(default_factory=list)
    unreadable_times: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- names and ids

_FOLD = str.maketrans({"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L",
                      "đ": "d", "Đ": "D", "œ": "oe", "Œ": "OE", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D"})


def fold(name: str) -> str:
    """``name`` with its accents dropped and Latin ligatures spelled out (``"Øyvind Ångström"``
    -> ``"Oyvind Angstrom"``); other scripts are left as they are."""
    plain = unicodedata.normalize("NFKD", name.translate(_FOLD))
    return "".join(c for c in plain if not unicodedata.combining(c))


def slug(name: str) -> str:
    """``"Jane Doe"`` -> ``"jane_doe"``, ``"José Núñez"`` -> ``"jose_nunez"``: accents dropped,
    lower case, runs of other characters become ``_`` (``""`` when no Latin letter or digit)."""
    return re.sub(r"[^a-z0-9]+", "_", fold(name).lower()).strip("_")


def lms_student_id(name: str, uid: str) -> str:
    """The id of an LMS student: ``<slug(name)>_<uid>``, or ``lms_<uid>`` if the name slugs to
    nothing; the name part is shortened to keep the id within 128 characters."""
    base = slug(name)[: max(0, 127 - len(uid))].strip("_") or "lms"
    return f"{base}_{uid}"



# --------------------------------------------------------------------------- reading CSV

def _read_csv(path: Path, what: str) -> tuple[list[str], list[list[str]]]:
    try:
        text = Path(path).read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"cannot read the {what} {path}: {exc}") from None
    rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
    if not rows:
        raise CourseError(f"the {what} {path} is empty")
    return [h.strip().lower() for h in rows[0]], rows[1:]


def _col(header: list[str], *names: str) -> int | None:
    return next((header.index(n) for n in names if n in header), None)


def _get(row: list[str], i: int | None) -> str:
    return row[i].strip() if i is not None and i < len(row) else ""


def usable_id(text: str) -> str:
    """``text`` as a student id (letters, digits, ``.``, ``_``, ``-``; accents dropped)."""
    return _UNUSABLE.sub("_", fold(text)).strip("._-")[:128]


def _name_key(name: str) -> str:
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


def read_roster_file(path: Path) -> Roster:
    """The students of a roster file, whichever of the three kinds it is (module docstring)."""
    header, rows = _read_csv(path, "roster")
    if "student" in header and "id" in header and ({"sis user id", "sis login id", "section"} & set(header)):
        return _canvas_roster(path, header, rows)
    if "email address" in header and ({"first name", "full name", "identifier"} & set(header)):
        return _moodle_roster(path, header, rows)
    from .variants import read_roster

    return Roster(PLAIN, tuple(RosterStudent(s) for s in read_roster(path)))


def _canvas_roster(path, header, rows) -> Roster:
    student, uid = header.index("student"), header.index("id")
    out, skipped, seen = [], [], set()
    for number, row in enumerate(rows, start=2):
        name, user = _get(row, student), _get(row, uid)
        if not user.isdigit():  # "Points Possible", a "Muted" row: not a student
            skipped.append(f"line {number}: {name or '(no name)'}")
            continue
        if user in seen:
            raise CourseError(f"the Canvas export {path} lists user id {user} twice (line {number})")
        seen.add(user)
        last, _, first = (p.strip() for p in name.partition(","))
        if not first:  # "Alice Smith" (not Canvas's sortable name)
            first, _, last = name.rpartition(" ")
        out.append(RosterStudent(lms_student_id(f"{first} {last}", user), first, last, lms_user_id=user))
    if not out:
        raise CourseError(f"the Canvas export {path} lists no students")
    return Roster(CANVAS, tuple(out), tuple(skipped))


def _moodle_roster(path, header, rows) -> Roster:
    first, last = _col(header, "first name"), _col(header, "last name", "surname")
    full, email, number_col = _col(header, "full name"), _col(header, "email address"), _col(header, "id number")
    out, taken = [], set()
    for number, row in enumerate(rows, start=2):
        mail = _get(row, email)
        idn = _get(row, number_col) or None
        if first is not None:
            f, la = _get(row, first), _get(row, last)
        else:
            f, _, la = _get(row, full).rpartition(" ")
        if not (mail or idn):
            raise CourseError(f"the Moodle file {path} has a student with neither email nor ID number "
                              f"(line {number}): export the participants with their email addresses")
        base = usable_id(idn or mail.split("@")[0]) or usable_id(mail) or "student"
        sid, n = base, 1
        while sid.casefold() in taken:
            n += 1
            sid = f"{base}_{n}"
        taken.add(sid.casefold())
        out.append(RosterStudent(sid, f, la, email=mail or None, id_number=idn))
    if not out:
        raise CourseError(f"the Moodle file {path} lists no students")
    return Roster(MOODLE, tuple(out))


def parse_lms_time(text: str, tz: timezone = timezone.utc) -> datetime | None:
    """A time as Moodle's worksheet writes it (``Tuesday, 3 February 2026, 2:05 PM``) -> naive
    UTC; ``tz`` is the zone of a time that names none. None for ``-`` or empty; ValueError
    for anything else dateutil cannot read."""
    import dateutil.parser

    text = text.strip()
    if text in ("", "-"):
        return None
    when = dateutil.parser.parse(text, tzinfos={"UTC": timezone.utc, "GMT": timezone.utc})
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz)
    return when.astimezone(timezone.utc).replace(tzinfo=None)


def read_worksheet(path: Path, tz: timezone = timezone.utc) -> Worksheet:
    """A Moodle grading worksheet (Assignment > View all submissions > Download grading
    worksheet): one :class:`WorksheetRow` per ``Participant <n>``."""
    header, rows = _read_csv(path, "grading worksheet")
    ident, full = _col(header, "identifier"), _col(header, "full name")
    if ident is None or full is None:
        raise CourseError(f"{path} is not a Moodle grading worksheet: it needs the columns 'Identifier' "
                          f"and 'Full name' (its header: {', '.join(header)})")
    email, number = _col(header, "email address"), _col(header, "id number")
    modified = _col(header, "last modified (submission)")
    sheet = Worksheet()
    for line, row in enumerate(rows, start=2):
        m = PARTICIPANT.fullmatch(_get(row, ident))
        if not m:
            raise CourseError(f"{path} line {line}: Identifier {_get(row, ident)!r} is not 'Participant <n>'")
        try:
            when = parse_lms_time(_get(row, modified), tz) if modified is not None else None
        except (ValueError, OverflowError):
            when = None
            sheet.unreadable_times.append(f"line {line}: {_get(row, modified)!r}")
        sheet.rows.append(WorksheetRow(m["n"], _get(row, full), _get(row, email) or None,
                                       _get(row, number) or None, when))
    return sheet


# --------------------------------------------------------------------------- the course's roster

def load_roster(course: Course) -> dict | None:
    """``{"lms": ..., "students": {id: {...}}}`` of ``<course>/roster.json``, or None."""
    data = read_json(Path(course.root) / ROSTER_FILE, "run keys --roster again")
    return data if isinstance(data, dict) else None


def register_roster(course: Course, roster: Roster) -> list[RosterStudent]:
    """Add the roster's students to the course (gradebook and ``roster.json``); return them
    with the ids they have there (an existing student of the same Canvas user id or email
    keeps theirs). A roster of another LMS than the course's is refused."""
    from nbgrader.api import MissingEntry, Student

    kept = load_roster(course) or {"lms": roster.lms, "students": {}}
    if roster.lms != PLAIN and kept.get("lms") not in (roster.lms, PLAIN):
        raise CourseError(f"this course's roster came from {kept['lms'].title()}; "
                          f"{roster.lms.title()}'s cannot be added to it")
    out = []
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
            out.append(s)
    if roster.lms != PLAIN:
        kept["lms"] = roster.lms
    (Path(course.root) / ROSTER_FILE).write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return out


def roster_lms(course: Course) -> str | None:
    data = load_roster(course)
    return data.get("lms") if data else None


def roster_students(course: Course) -> dict[str, dict]:
    data = load_roster(course)
    return dict(data.get("students", {})) if data else {}


def match_worksheet(course: Course, sheet: Worksheet) -> tuple[dict[str, RosterStudent], list[WorksheetRow]]:
    """participant id -> student for the worksheet's rows; the rows no roster student matches.
    Without a roster in the course every row is a student of its own, made as a Moodle roster
    would make them (so that a roster given later finds the same ids)."""
    roster = roster_students(course)
    if not roster:
        made = _moodle_roster("the worksheet", ["full name", "email address", "id number"],
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
        by_name.setdefault(_name_key(student.name), []).append(student)
    found: dict[str, RosterStudent] = {}
    unmatched: list[WorksheetRow] = []
    for row in sheet.rows:
        named = by_name.get(_name_key(row.full_name), [])
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


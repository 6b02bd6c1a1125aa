"""The files Canvas and Moodle write and read, as the grader meets them: rosters and
worksheets (read by ``keys --roster`` and ``collect --worksheet``), the names of a submission
download (read by ``collect``), and the gradebook imports (written by ``export``). Whatever an
LMS decides about a file's layout is said here once; ``collect``, ``export``, ``cli`` and
``roster`` ask this module.

**Rosters.** A *Canvas gradebook export* (``Student, ID, SIS User ID, SIS Login ID, Section``,
with or without its ``Points Possible`` row) keys a student by the Canvas user id (``ID``), the
number Canvas also writes into every file of its submission download. A *Moodle participants
export* (``First name, Last name / Surname, ID number, Email address``) or an assignment's
*grading worksheet* (``Identifier, Full name, Email address, ...``) keys a student by the ID
number, else the email: the number in a Moodle download's names is the *participant id* of
one assignment, not the user's. Any other CSV with an ``id`` column is a plain roster. Student
ids are made here (:func:`lms_student_id`, :func:`usable_id`); ``roster`` keeps them.

**Download names.** Canvas names a file ``<name>_[LATE_]<user id>_<file id>_<file>``
(``doejane_12345_67890_hw1-rooflines.ipynb``; a re-upload ``x.ipynb`` becomes ``x-1.ipynb``
with a larger file id); Moodle ``<Full Name>_<user id>_assignsubmission_file_<file>`` or a
folder of that name (a re-upload ``x (1).ipynb``). The name before the marker and the file
after it are the student's choice, so a name is read every way both layouts allow
(:func:`lms_readings`) and :func:`read_lms_name` keeps a reading only when one user id is left.

**Gradebook imports** (``export --format``), keyed by the LMS's own ids: Canvas by the Canvas user
id (the student's ``lms_user_id``, from the roster or the download), Moodle by ``Participant
<n>`` of *this* assignment (``<course>/lms/<A>.json``, from ``collect --worksheet``); students
without one cannot be matched and are listed by ``missing_lms_ids`` (``export`` prints them and
exits 1), never written under a guessed key. A roster student with no submission is written
empty (the LMS leaves their grade as it is) or, with ``missing="zero"``, 0:

- ``canvas``: the Canvas gradebook import CSV, laid out as Canvas's own gradebook export.
  Followed: the Ohio State guide "Import a CSV file to Carmen Grades" (CarmenCanvas,
  teaching.resources.osu.edu), which lists the columns an import needs: the columns
  ``Student`` (``Last, First``), ``ID`` (the Canvas user id, which Canvas's submission
  download writes into every file name: ``doejane_12345_...``), ``SIS User ID``,
  ``SIS Login ID``, ``Section`` (left empty: Canvas matches on ``ID``), then one assignment
  column named ``<assignment> (<Canvas assignment id>)`` (``--lms-assignment-id``; without it
  the column is the bare name and Canvas offers to create a new assignment), holding the final
  total. The second row is Canvas's ``Points Possible`` row (the maximum), as in its export.
- ``moodle``: Moodle's assignment *grading worksheet* (Assignment > "Upload grading
  worksheet", plugin ``assignfeedback_offline``), columns ``Identifier`` (``Participant
  <id>``), ``Full name``, ``Grade``, ``Maximum Grade``, ``Last modified (grade)``. Followed: the
  worksheet importer ``mod/assign/feedback/offline/importgradeslib.php``, which needs the
  ``Identifier``, ``Grade`` and ``Last modified (grade)`` columns and maps the number after
  ``Participant `` back through the assignment's participant ids. It is used instead of the
  course gradebook's "Import > CSV file" (``grade/import/csv``, which maps a column to the
  user's id, ID number, email or username) because the number in Moodle's download names
  (``Jane Doe_4242_assignsubmission_file_``) is the assignment's *participant* id
  (``get_uniqueid_for_user``), not the Moodle user id: keyed by it, the gradebook import
  would credit the wrong users. Moodle's grade there is out of the assignment's maximum grade,
  so set that maximum to this assignment's total points.

A student without the id a format needs is left out of its file (:func:`missing_lms_ids`) and
``export`` lists them, with :data:`MISSING_ID_WHY`, to be entered by hand.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol, Sequence, TypeVar

from ..course import CourseError
from ..safe_text import csv_text

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


def name_key(name: str) -> str:
    """A full name as matched across files: Unicode-normalised, case-folded, single-spaced."""
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


def read_roster_file(path: Path) -> Roster:
    """The students of a roster file, whichever of the three kinds it is (module docstring)."""
    header, rows = _read_csv(path, "roster")
    if "student" in header and "id" in header and ({"sis user id", "sis login id", "section"} & set(header)):
        return _canvas_roster(path, header, rows)
    if "email address" in header and ({"first name", "full name", "identifier"} & set(header)):
        return moodle_roster(path, header, rows)
    from ..variants import read_roster

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


def moodle_roster(path, header, rows) -> Roster:
    """The students of a Moodle participants export or worksheet (``header`` lower-cased):
    ids from the ID number, else the email's local part, ``_2``, ``_3`` added on a clash."""
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


# --------------------------------------------------------------------------- download names

# An LMS marker starts at every "_" where one of these matches (lookaheads: they may overlap);
# the student's own file name follows it (Canvas: at least one character).
CANVAS_MARK = re.compile(r"(?=(?P<mark>_(?:LATE_)?(?P<uid>[0-9]+)_[0-9]+_).)", re.IGNORECASE | re.DOTALL)
MOODLE_MARK = re.compile(r"(?=(?P<mark>_(?P<uid>[0-9]+)_assignsubmission_(?:file|onlinetext)_?))")
MAX_READINGS = 64  # a name that reads more ways than this is ambiguous, whatever they say
# A Moodle submission folder ends with its marker: the name is everything before the last one.
MOODLE_FOLDER = re.compile(r"(?P<name>.+)_(?P<uid>[0-9]+)_assignsubmission_(?:file|onlinetext)_?", re.DOTALL)
BROWSER_COPY = re.compile(r"(?P<stem>.*?)(?: \((?P<n>[0-9]+)\))?(?P<ext>\.ipynb)", re.DOTALL)  # Moodle, browsers
CANVAS_COPY = re.compile(r"(?P<stem>.*?)(?:-(?P<n>[0-9]+))?(?P<ext>\.ipynb)", re.DOTALL)


@dataclass(frozen=True)
class LmsName:
    """One reading of an LMS-written name: the LMS's name and user id of the student, and the
    student's own file name that follows the LMS's prefix (empty for a Moodle folder)."""

    lms: str  # "Canvas" or "Moodle"
    name: str
    uid: str
    file: str
    late: bool = False  # Canvas wrote LATE_ into the name: handed in after the due date
    order: int = 0  # Canvas's file id: of two files of one student, the larger is the newer

    def __str__(self) -> str:
        return f"{self.lms} user {self.uid} ({self.name!r})"


@dataclass
class Claims:
    """What the files of one download say for certain (``lms_claims``)."""

    names: dict[str, set[str]] = field(default_factory=dict)  # LMS user id -> the names it is given
    lms: set[str] = field(default_factory=set)  # which LMS wrote them: "Canvas", "Moodle"


def lms_readings(name: str) -> list[LmsName]:
    """Every way a file name reads as an LMS download name, Canvas's
    ``<name>_[LATE_]<user id>_<file id>_<file>`` or Moodle's
    ``<Full Name>_<user id>_assignsubmission_file_<file>``: one reading per marker, wherever
    it starts (a name like ``mallory_1234_5555_9_x.ipynb`` reads two ways)."""
    found = []
    for lms, mark in (("Canvas", CANVAS_MARK), ("Moodle", MOODLE_MARK)):
        for m in mark.finditer(name, 1):  # (a marker at 0 leaves no name)
            order = int(m["mark"].strip("_").rsplit("_", 1)[-1]) if lms == "Canvas" else 0
            found.append(LmsName(lms, name[: m.start()], m["uid"], name[m.end("mark"):],
                                 late=lms == "Canvas" and "_LATE_" in m["mark"].upper(), order=order))
            if len(found) > MAX_READINGS:  # enough to know; and a long hostile name stays cheap
                return found
    return found


def moodle_folder(name: str) -> LmsName | None:
    """A Moodle submission folder's reading, from its end (the marker ends the name), or None."""
    m = MOODLE_FOLDER.fullmatch(name)
    return LmsName("Moodle", m["name"], m["uid"], "") if m else None


def lms_could_write(reading: LmsName) -> bool:
    """Whether the LMS writes names like this reading's name part: Moodle replaces every ``_``
    of a name by a space; Canvas keeps only the name's word characters, lower-cased (so no
    space, control, capital A-Z or ASCII punctuation other than ``_``)."""
    if reading.lms == "Moodle":
        return "_" not in reading.name
    return not any(c.isspace() or not c.isprintable() or "A" <= c <= "Z"
                   or (c.isascii() and not c.isalnum() and c != "_") for c in reading.name)


def read_lms_name(readings: list[LmsName], claims: Claims) -> tuple[LmsName | None, bool, str | None]:
    """Whose file an LMS-written name is: ``(reading, certain, None)`` or ``(None, False, why)``.

    ``certain``: every reading gives one LMS user id. Else the readings the LMS could not have
    written are dropped, and so are those that ``claims`` refute (``_refuted``); one user id
    must be left. A name that gives one user id several ways (``doe_LATE_12_34_x``) is read
    by its earliest marker."""
    if len(readings) > MAX_READINGS:
        return None, False, f"the LMS name reads more than {MAX_READINGS} ways"
    if len(_users(readings)) == 1:
        return _earliest(readings), True, None
    left = [r for r in readings if lms_could_write(r) and not _refuted(r, claims)]
    if len(_users(left)) == 1:
        return _earliest(left), False, None
    ways = list(dict.fromkeys(str(r) for r in readings))
    return None, False, "the LMS name reads as " + " or as ".join(ways)


def _users(readings: list[LmsName]) -> set[tuple[str, str]]:
    return {(r.lms, r.uid) for r in readings}


def _earliest(readings: list[LmsName]) -> LmsName:
    return min(readings, key=lambda r: len(r.name))


def _refuted(reading: LmsName, claims: Claims) -> bool:
    """The download's certain files give this user id another name, or were all written by
    the other LMS: one download is one LMS's snapshot, naming each user one way."""
    other_name = reading.uid in claims.names and reading.name not in claims.names[reading.uid]
    return other_name or claims.lms == {"Canvas", "Moodle"} - {reading.lms}


# --------------------------------------------------------------------------- gradebook imports

class Row(Protocol):
    """What a gradebook import needs of one student's grade (``export.Row`` has it): written
    here as a protocol so that the LMS's files need nothing of ``export``."""

    student: str
    name: str
    status: str
    total: float
    max: float
    lms_user_id: str | None
    participant: str | None
    held: bool


R = TypeVar("R", bound=Row)

CANVAS_HEAD = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEAD = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
FORMATS = ("csv", "canvas", "moodle")


def default_file_name(fmt: str, assignment: str) -> str:
    """Where ``export`` writes a format by default, in the course directory."""
    return f"{'grades' if fmt == 'csv' else fmt}-{assignment}.csv"


def canvas_column(assignment: str, lms_assignment_id: str | None) -> str:
    return f"{assignment} ({lms_assignment_id})" if lms_assignment_id else assignment


def _score(row: Row, missing: str = "blank") -> float | None:
    """An LMS cell: the final total; without a submission empty (left as it is in the LMS) or,
    with ``missing="zero"``, 0; a flagged submission the instructor has not decided on
    (``held``) empty, whatever ``missing`` says: never a silent partial score."""
    if row.held:
        return None
    if row.status == "no submission":
        return 0 if missing == "zero" else None
    return row.total


def to_canvas(assignment: str, rows: Sequence[Row], lms_assignment_id: str | None = None,
              missing: str = "blank") -> str:
    possible = rows[0].max if rows else 0.0
    return csv_text([[*CANVAS_HEAD, canvas_column(assignment, lms_assignment_id)],
                     ["    Points Possible", "", "", "", "", possible],
                     *([row.name or row.student, row.lms_user_id, "", "", "", _score(row, missing)]
                       for row in rows if row.lms_user_id)])


def to_moodle(rows: Sequence[Row], now: datetime | None = None, missing: str = "blank") -> str:
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M:%S +0000")
    return csv_text([MOODLE_HEAD, *(
        [f"Participant {row.participant}", " ".join(reversed(row.name.split(", "))) if row.name else row.student,
         _score(row, missing), row.max, stamp]
        for row in rows if row.participant)])


#: Why a student is missing from a format's file (``export`` says it above the list).
MISSING_ID_WHY = {
    "canvas": "no Canvas user id (collected from Moodle, a folder or nbgrader's layout)",
    "moodle": "no participant id of this assignment (collect its Moodle download with --worksheet)",
}


def reading_details(reading: LmsName) -> dict[str, str]:
    """What an LMS-written name tells of its student: the Canvas user id (``lms_user_id``) or
    the Moodle participant id of this one assignment (``participant``, never kept as a user's
    id), and, when the name has two words or more, first and last name (Canvas writes the last
    name first, Moodle the full name)."""
    words = [w for w in re.split(r"[\s_]+", reading.name.strip()) if w]
    details = {"lms_user_id": reading.uid} if reading.lms == "Canvas" else {"participant": reading.uid}
    if len(words) >= 2:
        if reading.lms == "Canvas":
            details.update(last_name=words[0], first_name=" ".join(words[1:]))
        else:
            details.update(first_name=" ".join(words[:-1]), last_name=words[-1])
    return details


def missing_lms_ids(rows: Sequence[R], fmt: str = "canvas") -> list[R]:
    """Rows an LMS file cannot carry: students without a Canvas user id (canvas) or without a
    participant id of this assignment (moodle)."""
    return [r for r in rows if not (r.participant if fmt == "moodle" else r.lms_user_id)]

"""``collect``: copy students' notebooks into the course's ``submitted/`` folder.

A SOURCE is a folder, a ``.zip`` file or a single ``.ipynb`` (a zip whose members all sit in
one top folder is looked into, unless that folder is a Moodle submission folder). Every
notebook in it is assigned to a student by the first of these rules that applies; the student
id is what the gradebook, the CSV export and the feedback folders use. Only names that the LMS
(or nbgrader) wrote may name a student, never a name the student chose inside them:

1. **Moodle folder** -- ``<Full Name>_<user id>_assignsubmission_file_/...``: any file under
   such a folder (however deep, whatever its name) belongs to that student; the outermost
   such folder counts (a SOURCE folder, or the folder of a single SOURCE notebook, counts too).
   The folder name ends with the LMS's marker, so it is read from that end: the user id is
   the number just before ``_assignsubmission_``, whatever digits the name holds.
2. **nbgrader layout** -- ``[submitted/]<student>/<assignment>/<notebook>.ipynb``: the student
   is the folder two levels up; the notebook keeps its name (a ``timestamp.txt`` beside it is
   copied too, for nbgrader's late-submission handling). Ids may use letters, digits, ``.``,
   ``_`` and ``-``.
3. **LMS file name** -- Canvas names ``<name>_[LATE_]<user id>_<file id>_<file>``, e.g.
   ``doejane_12345_67890_hw1-rooflines.ipynb``, and Moodle names
   ``<Full Name>_<user id>_assignsubmission_file_<file>``, anywhere in the SOURCE. Both the
   name before the LMS's marker and the student's own ``<file>`` after it are the student's
   choice (a Canvas name may end in ``_1234``, a file may imitate a marker), so a name is
   read every way the two formats allow (``lms_readings``), and it names a student only if
   all of them agree on one LMS user id. Otherwise the readings the LMS could not have
   written are dropped (Moodle writes no ``_`` in a name, Canvas no space, capital or
   punctuation but ``_``), and so are those that give a user id another name than a file of
   the same download read without ambiguity does (one download names each user one way).
   If one user id is left, that is the student; if not, the file is reported as
   *ambiguous* and collected for no one. The true reading is never dropped, so a student
   can at worst make their own file ambiguous: never file it as someone else's, nor hold
   back another student's file as a duplicate.
4. **one notebook per student** -- ``<student>.ipynb`` or ``<student>_<anything>.ipynb`` at the
   top of the SOURCE: the student id is the file name up to the first ``_`` (so such ids
   cannot contain ``_``). In a subfolder a plain name is refused: the folder, not the file,
   may be what names the student.

**Canvas** students (rule 3) are keyed by their Canvas user id. If the gradebook has a student
with that ``lms_user_id`` (from the course's roster, ``keys --roster``, or an earlier collect),
that student's id is used, so a renamed student keeps their id; in a course with a Canvas
roster a user id that is not on it is reported by name (``not_on_roster``) and collected for no
one. Otherwise the id is ``<name>_<user id>`` (``lms.formats.lms_student_id``: the name lower-cased,
accents dropped, every run of other characters than ``a-z0-9`` turned into ``_``;
``lms_<user id>`` when nothing of the name is left). The user id is recorded as the student's
``lms_user_id`` and the name parts as first and last name (only where the student has none);
an existing student's ``lms_user_id`` is never changed (such a file is refused as a conflict).

**Moodle** names (rules 1 and 3) carry the assignment's *participant id*, which differs from one
assignment to the next, so it is never kept as a user id. With ``worksheet`` (that assignment's
grading worksheet) each ``Participant <n>`` is matched to a roster student by email, ID number
or a name only one of them has (``lms.roster.match_worksheet``; without a roster the worksheet's own
emails make the ids), its "Last modified (submission)" is written as ``timestamp.txt``, and
the participant ids are kept in ``<course>/lms/<A>.json`` for the export. A course with a
Moodle roster refuses a Moodle download without its worksheet; without either, the student is
``<name>_<participant id>`` as before, with a note saying why that is fragile.

A notebook whose name (after the student part) names another assignment and not this one is
ignored as belonging to it, so one LMS zip may hold several assignments. Notebooks of rules 1,
3 and 4 are saved under the assignment's notebook name
(``submitted/<student>/<assignment>/<assignment>.ipynb``). Originals are only read, never
modified; zip members are read in memory, never extracted, and a member whose name would
leave the archive (``../``, an absolute path, a drive letter) or is a symbolic link is
refused. Copies of one notebook for one student (Canvas ``x.ipynb`` and ``x-1.ipynb``, Moodle
``x.ipynb`` and ``x (1).ipynb``) give the newest by the LMS's order (``newest``), and the
report names both; two other notebooks for one student are a *duplicate*: neither is
collected and both are named. A notebook collected before with other contents is left alone unless ``force``.
Non-notebook files are listed as ignored (OS litter such as ``__MACOSX/`` only counted). A
file that is not valid notebook JSON is collected (it is that student's submission) and
flagged; grading gives it the status "invalid notebook".

Every name that came from a SOURCE (file and folder names, LMS names, what a zip says) is
shown in the report through ``visible``: a character a terminal would act on or hide
(controls such as ESC, CR and BEL, C1 controls, bidi overrides such as U+202E, lone
surrogates) is written as an escape (``\\x1b``, ``\\u202e``), so a file name cannot
retitle the instructor's terminal, erase report lines or disguise itself.
"""

from __future__ import annotations

import json
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Callable

from .course import Course, available_assignments, notebook_names
from .lms.formats import (CANVAS, MOODLE, BROWSER_COPY, CANVAS_COPY, Claims, LmsName, lms_readings, lms_student_id,
                          moodle_folder, read_lms_name, read_worksheet, reading_details)
from .lms.marks import keep_order, kept_order, mark_late
from .lms.roster import load_participants, match_worksheet, roster_lms, roster_students, save_participants
from .safe_text import visible

MAX_MEMBER_BYTES = 64 * 1024 * 1024  # one notebook; larger ones are refused
MAX_ARCHIVE_BYTES = 2 * 1024 * 1024 * 1024  # all members of one zip, uncompressed
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LITTER = re.compile(r"(^|/)(__MACOSX|\.ipynb_checkpoints|__pycache__)(/|$)|(^|/)\.[^/]*$|(^|/)Thumbs\.db$")


class CollectError(Exception):
    """The SOURCE cannot be read at all (missing, not a folder/zip/notebook, corrupt zip)."""


@dataclass
class Item:
    """One file found in a SOURCE."""

    origin: str  # what the instructor sees: "subs/bob.ipynb", "canvas.zip:doe_jane_..."
    rel: PurePosixPath  # its path inside the SOURCE
    read: Callable[[], bytes]  # its contents (at most MAX_MEMBER_BYTES, else ValueError)
    student: str | None = None
    target: str | None = None  # file name in submitted/<student>/<assignment>/
    form: str = ""  # "nbgrader", "lms" or "file"
    details: dict = field(default_factory=dict)  # gradebook fields: lms_user_id, names
    reading: LmsName | None = None  # how its LMS-written name was read, if it has one
    certain: bool = False  # that name has this one reading only (no other file needed)

    def whose(self) -> str:
        """The student :func:`identify` filed it for (asking before is a bug, not bad input)."""
        if self.student is None:
            raise ValueError(f"{self.origin}: no student yet (identify() sets one)")
        return self.student

    def placed(self) -> tuple[str, str]:
        """``(student, file name in submitted/<student>/<assignment>/)`` once identified."""
        if self.target is None:
            raise ValueError(f"{self.origin}: no target file name yet (identify() sets one)")
        return self.whose(), self.target


@dataclass
class CollectReport:
    assignment: str
    collected: list[Item] = field(default_factory=list)
    unchanged: list[Item] = field(default_factory=list)
    conflicts: list[Item] = field(default_factory=list)  # already collected with other contents
    duplicates: dict[str, list[Item]] = field(default_factory=dict)
    invalid_json: list[Item] = field(default_factory=list)  # collected, but will not grade
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (origin, why)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (origin, why)
    ambiguous: list[tuple[str, str]] = field(default_factory=list)  # (origin, readings): filed for no one
    litter: int = 0
    not_on_roster: list[tuple[str, str]] = field(default_factory=list)  # (origin, who): collected for no one
    no_submission: list[str] = field(default_factory=list)  # roster students without a notebook: names
    newest: list[tuple[str, Item, list[Item]]] = field(default_factory=list)  # (student, kept, older ones)
    older: list[tuple[Item, str]] = field(default_factory=list)  # (item, why): a newer notebook was kept
    notes: list[str] = field(default_factory=list)  # what the instructor should know (one line each)

    @property
    def ok(self) -> bool:
        return not (self.conflicts or self.duplicates or self.refused or self.ambiguous or self.not_on_roster)

    @property
    def students(self) -> list[str]:
        return sorted({i.whose() for i in self.collected + self.unchanged})

    def render(self, course: Course) -> str:
        """The report for the instructor's terminal: one line per file, each shown ``visible``
        (a name with a newline or escape sequences in it stays on its line, inert)."""
        lines = []
        where = Path(course.root) / "submitted"
        lines.append(f"collected {len(self.collected)} notebook(s) of {self.assignment} into {where}")
        for item in self.collected:
            lines.append(f"  {item.student:<20} <- {item.origin}{_detail_text(item)}")
        for student, kept, older in self.newest:
            lines.append(f"  {student}: {len(older) + 1} notebooks, kept the newest by the LMS's order "
                         f"{kept.origin}; not collected: " + ", ".join(i.origin for i in older))
        if self.unchanged:
            lines.append(f"unchanged (already collected, same contents): {len(self.unchanged)}")
            for item in self.unchanged:
                lines.append(f"  {item.student:<20} <- {item.origin}")
        if self.invalid_json:
            lines.append("collected but not a valid notebook (will be graded 'invalid notebook'):")
            for item in self.invalid_json:
                lines.append(f"  {item.student:<20} <- {item.origin}")
        if self.duplicates:
            lines.append("DUPLICATES, not collected (keep one file per student and collect again):")
            for student, items in sorted(self.duplicates.items()):
                lines.append(f"  {student}: " + ", ".join(i.origin for i in items))
        if self.older:
            lines.append(f"KEPT THE NEWER NOTEBOOK ({len(self.older)}): these files are older than the ones "
                         f"collected before, by the LMS's own order (collect --force --allow-older puts them back):")
            for item, why in self.older:
                lines.append(f"  {item.student:<20} <- not {item.origin} ({why})")
        if self.conflicts:
            lines.append("ALREADY COLLECTED with other contents, left as they are (use --force to replace):")
            for item in self.conflicts:
                lines.append(f"  {item.student:<20} <- {item.origin}")
        if self.ambiguous:
            lines.append("AMBIGUOUS LMS names, collected for no one (rename or move them to collect them):")
            lines.extend(f"  {origin} ({why})" for origin, why in self.ambiguous)
        if self.not_on_roster:
            lines.append(f"NOT ON THE COURSE ROSTER ({len(self.not_on_roster)}), collected for no one (add them "
                         f"with keys --roster and a newer roster file, then collect again):")
            lines.extend(f"  {who} <- {origin}" for origin, who in self.not_on_roster)
        if self.no_submission:
            lines.append(f"on the roster, no notebook of {self.assignment} ({len(self.no_submission)}): "
                         + ", ".join(self.no_submission))
        lines.extend(self.notes)
        if self.refused:
            lines.append("REFUSED:")
            lines.extend(f"  {origin} ({why})" for origin, why in self.refused)
        if self.ignored:
            lines.append("ignored:")
            lines.extend(f"  {origin} ({why})" for origin, why in self.ignored)
        if self.litter:
            lines.append(f"ignored {self.litter} OS/editor file(s) (__MACOSX, dotfiles, checkpoints)")
        return "\n".join(visible(line) for line in lines)


def _detail_text(item: Item) -> str:
    uid, pid = item.details.get("lms_user_id"), item.details.get("participant")
    return f" (Canvas user id {uid})" if uid else f" (Moodle participant {pid})" if pid else ""


# --- reading sources ----------------------------------------------------------------------


def scan(source: Path) -> tuple[list[Item], list[tuple[str, str]], int]:
    """The files of a SOURCE: (items, refused, litter count)."""
    source = Path(source)
    if source.is_dir():
        items, refused, litter = _scan_dir(source)
        # a Moodle submission folder given as the SOURCE still names its student
        _keep_moodle_folder(items, Path(os.path.abspath(source)).name)
        return items, refused, litter
    if source.is_file() and zipfile.is_zipfile(source):
        return _scan_zip(source)
    if source.is_file() and source.suffix == ".ipynb":
        item = Item(str(source), PurePosixPath(source.name), _file_reader(source))
        _keep_moodle_folder([item], Path(os.path.abspath(source)).parent.name)
        return [item], [], 0
    if not source.exists():
        raise CollectError(f"{visible(str(source))}: no such file or folder")
    raise CollectError(f"{visible(str(source))}: not a folder, a .zip file or a .ipynb notebook")


def _keep_moodle_folder(items: list[Item], folder: str) -> None:
    if moodle_folder(folder):
        for item in items:
            item.rel = PurePosixPath(folder, item.rel)


def _file_reader(path: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        if path.stat().st_size > MAX_MEMBER_BYTES:
            raise ValueError(f"larger than {MAX_MEMBER_BYTES // 2**20} MiB")
        return path.read_bytes()

    return read


def _scan_dir(root: Path):
    items, refused, litter = [], [], 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = PurePosixPath(path.relative_to(root).as_posix())
            if LITTER.search(str(rel)):
                litter += 1
                continue
            if path.is_symlink():
                refused.append((str(path), "symbolic link"))
                continue
            items.append(Item(str(path), rel, _file_reader(path)))
        # symlinked folders are listed in dirnames but not followed: say so
        for name in list(dirnames):
            if (Path(dirpath) / name).is_symlink():
                refused.append((str(Path(dirpath) / name), "symbolic link"))
    return items, refused, litter


def _scan_zip(path: Path):
    items, refused, litter, total = [], [], 0, 0
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:  # a member name flagged UTF-8 that is not
        raise CollectError(visible(f"{path}: cannot read the zip file: {exc}")) from exc
    with archive:
        infos = archive.infolist()
    for info in infos:
        origin = f"{path}:{info.filename}"
        if info.is_dir():
            continue
        rel, why = safe_member_name(info.filename)
        if why:
            refused.append((origin, why))
            continue
        assert rel is not None, "safe_member_name gives a path or a reason"
        if LITTER.search(str(rel)):
            litter += 1
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            refused.append((origin, "symbolic link"))
            continue
        if info.flag_bits & 0x1:
            refused.append((origin, "encrypted"))
            continue
        if info.file_size > MAX_MEMBER_BYTES:
            refused.append((origin, f"larger than {MAX_MEMBER_BYTES // 2**20} MiB"))
            continue
        total += info.file_size
        if total > MAX_ARCHIVE_BYTES:
            refused.append((origin, "the archive unpacks to more than 2 GiB"))
            continue
        items.append(Item(origin, rel, _zip_reader(path, info)))
    # An archive of a folder holds everything in that one folder: look inside it (but a
    # Moodle submission folder is what names the student: keep it).
    tops = {item.rel.parts[0] for item in items}
    if len(tops) == 1 and all(len(item.rel.parts) > 1 for item in items) and not moodle_folder(next(iter(tops))):
        for item in items:
            item.rel = PurePosixPath(*item.rel.parts[1:])
    return items, refused, litter


def _zip_reader(path: Path, member: zipfile.ZipInfo) -> Callable[[], bytes]:
    def read() -> bytes:
        # by ZipInfo, not by name: an archive may hold two members of the same name
        with zipfile.ZipFile(path) as archive, archive.open(member) as f:
            data = f.read(MAX_MEMBER_BYTES + 1)  # never trust the declared size
        if len(data) > MAX_MEMBER_BYTES:
            raise ValueError(f"larger than {MAX_MEMBER_BYTES // 2**20} MiB")
        return data

    return read


def safe_member_name(name: str) -> tuple[PurePosixPath | None, str | None]:
    """A zip member's path if it stays inside the archive, else (None, why)."""
    if "\x00" in name:
        return None, "unsafe path: NUL byte"
    normal = name.replace("\\", "/")
    if normal.startswith("/") or re.match(r"[A-Za-z]:", normal):
        return None, "unsafe path: absolute"
    parts = [p for p in normal.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None, "unsafe path: leaves the archive (..)"
    if not parts:
        return None, "unsafe path: empty"
    return PurePosixPath(*parts), None


# --- who is it? ---------------------------------------------------------------------------


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


# --- collect ------------------------------------------------------------------------------


def collect(
    sources: list[Path], course: Course, assignment: str, *, force: bool = False,
    worksheet: Path | None = None, tz=None, allow_older: bool = False,
) -> CollectReport:
    """Copy the notebooks of ``assignment`` in ``sources`` into ``course``; add the students.

    ``force`` replaces a notebook collected before with other contents, but never by an
    older one of the LMS's (``_newer_kept``) unless ``allow_older``.

    ``worksheet``: the assignment's Moodle grading worksheet, which maps the participant ids
    of a Moodle download to students (``lms/roster.py``) and gives each submission's time (read in
    ``tz``, default UTC, where it names no zone)."""
    from datetime import timezone

    scanned = [scan(Path(source)) for source in sources]  # a missing SOURCE fails before any work
    sheet = read_worksheet(Path(worksheet), tz or timezone.utc) if worksheet is not None else None
    course.prepare(assignment)
    notebooks = notebook_names(assignment)
    assignments = available_assignments()
    report = CollectReport(assignment)
    items: list[Item] = []
    for found, refused, litter in scanned:
        report.refused += refused
        report.litter += litter
        claims = lms_claims(found, assignment, notebooks, assignments)  # per download: one snapshot of names
        for item in found:
            why = identify(item, assignment, notebooks, assignments, claims)
            if why is None:
                items.append(item)
            elif why.startswith("refused: "):
                report.refused.append((item.origin, why[len("refused: "):]))
            elif why.startswith("ambiguous: "):
                report.ambiguous.append((item.origin, why[len("ambiguous: "):]))
            else:
                report.ignored.append((item.origin, why[len("ignored: "):]))
    items, participants = _moodle_identities(course, items, report, sheet)
    items = _key_by_lms_user_id(course, items, report)
    by_target: dict[tuple[str, str], list[Item]] = {}
    for item in items:
        by_target.setdefault(item.placed(), []).append(item)
    for (student, target), group in by_target.items():
        if len(group) > 1 and target.endswith(".ipynb"):
            kept = newest(group)
            if kept is not None:
                by_target[(student, target)] = [kept]
                report.newest.append((student, kept, [i for i in group if i is not kept]))
    duplicated = {s for (s, t), group in by_target.items() if len(group) > 1 and t.endswith(".ipynb")}
    present: set[str] = set()  # students whose notebook is now in submitted/
    # notebooks first, then the timestamp.txt files of the students whose notebook is in
    for (student, target), group in sorted(by_target.items(), key=lambda kv: (kv[0][1] == "timestamp.txt", kv[0])):
        notebook = target.endswith(".ipynb")
        if student in duplicated:
            if notebook:
                report.duplicates.setdefault(student, []).extend(group)
            continue
        if not notebook and (student not in present or len(group) > 1):
            continue
        item = group[0]
        try:
            data = item.read()
        except (OSError, ValueError, zipfile.BadZipFile, RuntimeError) as exc:
            report.refused.append((item.origin, f"cannot read: {exc}"))
            continue
        dest = course.submitted(student, assignment) / target
        if dest.exists() and dest.read_bytes() == data:
            if notebook:
                report.unchanged.append(item)
                present.add(student)
            continue
        if dest.exists() and not force:
            if notebook:
                report.conflicts.append(item)
            continue
        if notebook and dest.exists() and not allow_older:
            newer = _newer_kept(dest.parent, item, participants.get(student))
            if newer:  # an older download collected again: the newer notebook stays
                report.older.append((item, newer))
                continue
        if notebook:  # a time and marks of the notebook it replaces are not this one's
            (dest.parent / "timestamp.txt").unlink(missing_ok=True)
        _write(dest, data)
        if notebook:
            mark_late(dest.parent, item.reading.lms if item.reading else None, bool(item.reading and item.reading.late))
            keep_order(dest.parent, item.reading.lms if item.reading else None, item.reading.order if item.reading else None)
            report.collected.append(item)
            present.add(student)
            if not _is_notebook_json(data):
                report.invalid_json.append(item)
    _add_students(course, report.collected + report.unchanged)
    if participants:
        save_participants(course, assignment, participants)
        _write_times(course, assignment, participants, present, report)
    _roster_without_submission(course, assignment, report)
    return report


def _newer_kept(folder: Path, item: Item, moodle: dict | None) -> str | None:
    """Why the notebook collected in ``folder`` is newer than ``item`` by the LMS's own word, or
    None: Canvas gives each upload a larger file id (kept beside the notebook by
    ``lms.marks.keep_order``); Moodle's worksheet gives each submission its time
    (``timestamp.txt``). Of other sources nothing says which is newer: the later collect wins."""
    from datetime import datetime

    kept = kept_order(folder)
    if kept and item.reading is not None and item.reading.lms == kept[0] and item.reading.order:
        if item.reading.order < kept[1]:
            return f"{kept[0]} file id {kept[1]} collected, newer than this file's {item.reading.order}"
        return None
    when = (moodle or {}).get("submitted")
    stamp = folder / "timestamp.txt"
    if when and stamp.is_file():
        try:
            before = datetime.strptime(stamp.read_text("utf-8").strip()[:19], "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
        if datetime.fromisoformat(when) < before:
            return f"submitted {before:%Y-%m-%d %H:%M} UTC collected, newer than this one's {when[:16].replace('T', ' ')}"
    return None


def newest(group: list[Item]) -> Item | None:
    """Of several copies of one notebook for one student, the newest by the LMS's own order,
    or None when they are not copies of one file: Canvas names a re-uploaded ``x.ipynb``
    ``x-1.ipynb`` and gives it a larger file id (the newest is the largest); Moodle (and a
    browser) ``x (1).ipynb``, then ``x (2).ipynb``, in one submission folder."""
    canvas = [i.reading for i in group if i.reading is not None and i.reading.lms == "Canvas"]
    if len(canvas) == len(group):
        # (a Canvas reading's file is what follows the prefix of a name ending in .ipynb)
        stems = {m["stem"] if (m := CANVAS_COPY.fullmatch(r.file)) else None for r in canvas}
        orders = [r.order for r in canvas]
        if len(stems) == 1 and None not in stems and len(set(orders)) == len(orders):
            return group[orders.index(max(orders))]
        return None
    copies = [m for i in group if (m := BROWSER_COPY.fullmatch(i.rel.name))]
    folders = {i.rel.parent for i in group}
    if len(folders) == 1 and len(copies) == len(group) and len({m["stem"] for m in copies}) == 1:
        numbers = [int(m["n"] or 0) for m in copies]
        if len(set(numbers)) == len(numbers):
            return group[numbers.index(max(numbers))]
    return None


def _moodle_identities(course: Course, items: list[Item], report: CollectReport, sheet):
    """Give the files of a Moodle download their students: through the assignment's grading
    worksheet (participant id -> roster student), else, in a course with no roster, as before
    by name and participant id (one line says why that is fragile). Returns the items left
    and the participant map to keep (student -> participant id, submission time)."""
    moodle = [i for i in items if i.details.get("participant")]
    if not moodle:
        return items, {}
    participants: dict[str, dict] = {}
    if sheet is None:
        if roster_lms(course) == MOODLE:
            for item in moodle:
                report.refused.append((item.origin, "a Moodle download names students by this assignment's "
                                                    "participant id: give its grading worksheet "
                                                    "(--worksheet WORKSHEET.csv)"))
            return [i for i in items if not i.details.get("participant")], {}
        report.notes.append("note: the number in Moodle's names is this assignment's participant id, not the "
                            "student's: with --worksheet (the assignment's grading worksheet) each student "
                            "is one student in every assignment")
        # one participant id is one student of this assignment: a student renamed between
        # downloads keeps the id collected first
        known = {e.get("participant"): sid for sid, e in load_participants(course, report.assignment).items()}
        for pid in sorted({i.details["participant"] for i in moodle}):
            group = [i for i in moodle if i.details["participant"] == pid]
            student = known.get(pid) or min(i.whose() for i in group)
            for item in group:
                item.student = student
            participants[student] = {"participant": pid, "submitted": None}
        return items, participants
    found, unmatched = match_worksheet(course, sheet)
    rows = {r.participant: r for r in sheet.rows}
    for row in sheet.rows:
        if row.participant in found:
            participants[found[row.participant].id] = {
                "participant": row.participant,
                "submitted": row.submitted.isoformat() if row.submitted else None}
    kept = []
    for item in items:
        pid = item.details.get("participant")
        if not pid:
            kept.append(item)
            continue
        person = found.get(pid)
        if person is None:
            row = rows.get(pid)
            who = (f"{row.full_name} ({row.email or 'no email'}, participant {pid})" if row
                   else f"{item.reading.name if item.reading else '?'} (participant {pid}, not in the worksheet)")
            report.not_on_roster.append((item.origin, who))
            continue
        item.student = person.id
        item.details = {k: v for k, v in (("first_name", person.first_name), ("last_name", person.last_name),
                                          ("email", person.email), ("participant", pid)) if v}
        kept.append(item)
    if sheet.unreadable_times:
        report.notes.append(f"note: {len(sheet.unreadable_times)} submission time(s) of the worksheet could "
                            f"not be read ({sheet.unreadable_times[0]} ...): those count as on time")
    return kept, participants


def _write_times(course: Course, assignment: str, participants: dict[str, dict], present: set[str],
                 report: CollectReport) -> None:
    """The worksheet's "Last modified (submission)" as nbgrader's ``timestamp.txt``."""
    from datetime import datetime

    written = 0
    for student in present:
        when = (participants.get(student) or {}).get("submitted")
        if when:
            stamp = datetime.fromisoformat(when).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
            _write(course.submitted(student, assignment) / "timestamp.txt", stamp.encode())
            written += 1
    if written:
        report.notes.append(f"submission times: {written} from the worksheet's 'Last modified (submission)'")


def _roster_without_submission(course: Course, assignment: str, report: CollectReport) -> None:
    """The roster students without a notebook (not those who left the course)."""
    for sid, person in sorted(roster_students(course).items()):
        if person.get("left"):
            continue
        if not (course.submitted(sid, assignment) / f"{assignment}.ipynb").is_file():
            name = " ".join(n for n in (person.get("first_name"), person.get("last_name")) if n)
            report.no_submission.append(f"{name} ({sid})" if name else sid)


def _write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.collecting")
    tmp.write_bytes(data)
    os.replace(tmp, dest)


def _is_notebook_json(data: bytes) -> bool:
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(nb, dict) and isinstance(nb.get("cells"), list)


def _key_by_lms_user_id(course: Course, items: list[Item], report: CollectReport) -> list[Item]:
    """Give the files of one LMS user id one student id; refuse those that would take the id
    of a student with another LMS user id. Returns the items still to collect."""
    lms = [i for i in items if i.details.get("lms_user_id")]
    if not lms:
        return items
    from nbgrader.api import MissingEntry, Student

    on_roster = roster_lms(course) == CANVAS  # then a user id the roster lacks is no one's
    refused: set[int] = set()
    with course.gradebook() as gb:
        for uid in sorted({i.details["lms_user_id"] for i in lms}):
            group = [i for i in lms if i.details["lms_user_id"] == uid]
            known = sorted(s.id for s in gb.db.query(Student).filter(Student.lms_user_id == uid))
            if len(known) > 1:
                for item in group:
                    report.refused.append((item.origin, f"LMS user id {uid} belongs to several students "
                                                        f"in the gradebook ({', '.join(known)})"))
                    refused.add(id(item))
                continue
            if known:
                student = known[0]
            elif on_roster:
                for item in group:
                    name = item.reading.name if item.reading else "?"
                    report.not_on_roster.append((item.origin, f"{name} (Canvas user id {uid})"))
                    refused.add(id(item))
                continue
            else:
                student = min(i.whose() for i in group)  # a renamed student: one id all the same
                try:
                    other = gb.find_student(student).lms_user_id
                except MissingEntry:
                    other = None
                if other and other != uid:
                    for item in group:
                        report.refused.append((item.origin, f"LMS user id conflict: student {student} in the "
                                                            f"gradebook has LMS user id {other}, not {uid}"))
                        refused.add(id(item))
                    continue
            for item in group:
                item.student = student
    return [i for i in items if id(i) not in refused]


def _add_students(course: Course, items: list[Item]) -> None:
    """Add the students to the gradebook; fill in LMS user id and names only where empty
    (``_key_by_lms_user_id`` refused every file that would change an LMS user id)."""
    if not items:
        return
    with course.gradebook() as gb:
        for item in items:
            student = gb.update_or_create_student(item.student)
            changed = False
            for attr, value in item.details.items():
                if attr in ("first_name", "last_name", "email", "lms_user_id") and not getattr(student, attr, None):
                    setattr(student, attr, value)
                    changed = True
            if changed:
                gb.db.commit()

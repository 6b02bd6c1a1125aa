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
import zipfile
from pathlib import Path

from .collecting.identify import identify, lms_claims
from .collecting.people import add_students, key_by_lms_user_id, moodle_identities, roster_without_submission
from .collecting.report import CollectReport
from .collecting.source import CollectError, Item, safe_member_name, scan
from .course import Course, available_assignments, notebook_names
from .lms.formats import BROWSER_COPY, CANVAS_COPY, read_worksheet
from .lms.marks import keep_order, kept_order, mark_late
from .lms.roster import save_participants

__all__ = ["CollectError", "CollectReport", "Item", "collect", "identify", "newest", "safe_member_name", "scan"]


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
    report = CollectReport(assignment)
    items = _identified(scanned, assignment, report)
    items, participants = moodle_identities(course, items, report, sheet)
    items = key_by_lms_user_id(course, items, report)
    by_target = _one_per_target(items, report)
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
        if _file(course, assignment, student, target, group[0], report, force=force, allow_older=allow_older,
                 moodle=participants.get(student)):
            present.add(student)
    add_students(course, report.collected + report.unchanged)
    if participants:
        save_participants(course, assignment, participants)
        _write_times(course, assignment, participants, present, report)
    roster_without_submission(course, assignment, report)
    return report


def _identified(scanned, assignment: str, report: CollectReport) -> list[Item]:
    """The items of every SOURCE that name a student; the others go into ``report``."""
    notebooks, assignments = notebook_names(assignment), available_assignments()
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
    return items


def _one_per_target(items: list[Item], report: CollectReport) -> dict[tuple[str, str], list[Item]]:
    """(student, file name) -> its items; copies of one notebook give the newest (``newest``)."""
    by_target: dict[tuple[str, str], list[Item]] = {}
    for item in items:
        by_target.setdefault(item.placed(), []).append(item)
    for (student, target), group in by_target.items():
        if len(group) > 1 and target.endswith(".ipynb"):
            kept = newest(group)
            if kept is not None:
                by_target[(student, target)] = [kept]
                report.newest.append((student, kept, [i for i in group if i is not kept]))
    return by_target


def _file(course: Course, assignment: str, student: str, target: str, item: Item, report: CollectReport, *,
          force: bool, allow_older: bool, moodle: dict | None) -> bool:
    """Copy one file into ``submitted/<student>/<A>/<target>``, unless it is there already,
    collected before with other contents (without ``force``), or older than the notebook
    there (without ``allow_older``); say which in ``report``. Returns whether that notebook
    is now the student's submission."""
    notebook = target.endswith(".ipynb")
    try:
        data = item.read()
    except (OSError, ValueError, zipfile.BadZipFile, RuntimeError) as exc:
        report.refused.append((item.origin, f"cannot read: {exc}"))
        return False
    dest = course.submitted(student, assignment) / target
    if dest.exists() and dest.read_bytes() == data:
        if notebook:
            report.unchanged.append(item)
        return notebook
    if dest.exists() and not force:
        if notebook:
            report.conflicts.append(item)
        return False
    if notebook and dest.exists() and not allow_older:
        newer = _newer_kept(dest.parent, item, moodle)
        if newer:  # an older download collected again: the newer notebook stays
            report.older.append((item, newer))
            return False
    if notebook:  # a time and marks of the notebook it replaces are not this one's
        (dest.parent / "timestamp.txt").unlink(missing_ok=True)
    _write(dest, data)
    if not notebook:
        return False
    lms = item.reading.lms if item.reading else None
    mark_late(dest.parent, lms, bool(item.reading and item.reading.late))
    keep_order(dest.parent, lms, item.reading.order if item.reading else None)
    report.collected.append(item)
    if not _is_notebook_json(data):
        report.invalid_json.append(item)
    return True


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

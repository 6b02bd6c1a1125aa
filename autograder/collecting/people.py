"""Who the collected files belong to in the course, by the LMS's ids: a Moodle download's
participant ids through the assignment's grading worksheet (``moodle_identities``), Canvas
user ids through the gradebook and the roster (``key_by_lms_user_id``); then the students
added to the gradebook (``add_students``) and the roster students with no notebook
(``roster_without_submission``: not those who left the course)."""

from __future__ import annotations

from ..course import Course
from ..lms.formats import CANVAS, MOODLE
from ..lms.roster import load_participants, match_worksheet, roster_lms, roster_students
from .report import CollectReport
from .source import Item


def moodle_identities(course: Course, items: list[Item], report: CollectReport, sheet):
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


def roster_without_submission(course: Course, assignment: str, report: CollectReport) -> None:
    """The roster students without a notebook (not those who left the course)."""
    for sid, person in sorted(roster_students(course).items()):
        if person.get("left"):
            continue
        if not (course.submitted(sid, assignment) / f"{assignment}.ipynb").is_file():
            name = " ".join(n for n in (person.get("first_name"), person.get("last_name")) if n)
            report.no_submission.append(f"{name} ({sid})" if name else sid)



def key_by_lms_user_id(course: Course, items: list[Item], report: CollectReport) -> list[Item]:
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


def add_students(course: Course, items: list[Item]) -> None:
    """Add the students to the gradebook; fill in LMS user id and names only where empty
    (``key_by_lms_user_id`` refused every file that would change an LMS user id)."""
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

"""``export``: the grades of one assignment as CSV, one row per student.

Columns: ``student``, one per graded question (its nbgrader ``grade_id``, in notebook order),
``total``, ``max``, ``status``. Scores come from the gradebook (the record of truth; a
manual grade entered in formgrader wins over the autograder's); the status comes from the last
grading (``grading.json`` beside the autograded notebook: ``graded``, ``timed out``,
``invalid notebook`` ...), else ``not graded yet`` for a
collected but ungraded submission and ``no submission`` for a student without one. A student
who left the course (``lms/roster.py``) has a row only where they handed something in.

**Flagged submissions** (``flag_of``: not graded to the end, or graded against numbers the
notebook did not hold, such as a classmate's id and key) say so in the status,
``flagged (held back)`` or ``timed out (held back)``, and the Canvas and Moodle files leave
their cell blank (``lms.formats``) until the instructor decides with ``override --accept``
(``overrides.py``); the status then ends in ``(accepted)``. ``export`` lists the held ones.

Late work (``deadlines.py``): when the assignment has a due date, ``total`` is the *final*
score, the raw score less the late penalty of the course's policy, computed here from the raw
gradebook scores at every export (never stored, so a second export penalises once, not twice);
the per-question CSV then also has ``raw``, ``days_late`` and ``penalty`` columns before
``total``. Without a due date the columns are as above.

Every cell goes through ``safe_text.csv_text``: scores are written as numbers, and a name or id
that a spreadsheet would read as a formula is written as text (a leading apostrophe).

LMS formats (``--format canvas`` or ``moodle``) are written by ``lms.formats``, which says
which layout each LMS imports and where that was read; a student without the id a format
needs is listed (``export`` prints them and exits 1), never written under a guessed key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from .course import SOLUTIONS, Course, CourseError, grade_ids, load_report
from .lms.formats import FORMATS, to_canvas, to_moodle
from .lms.roster import left_students, load_participants
from .overrides import accepted
from .safe_text import csv_text, number_text


@dataclass
class Row:
    student: str
    scores: dict[str, float | None]
    total: float  # the final score: raw less the late penalty
    max: float
    status: str
    raw: float = 0.0
    penalty: float = 0.0
    days_late: int = 0
    submitted: datetime | None = None
    lms_user_id: str | None = None
    name: str = ""  # "Last, First" when the gradebook has names
    marked_late: bool = False  # the LMS marked it late (used when there is no time)
    extension: timedelta | None = None  # granted to this student for this assignment
    participant: str | None = None  # Moodle: the participant id of this assignment
    held: bool = False  # flagged and not yet decided: the LMS files leave it blank
    flag: str = ""  # why the grader flagged it (its first problem), when it did
    untimed_extension: bool = False  # LATE mark, no time, an extension: not charged (may be on time)


def question_columns(course: Course, assignment: str) -> list[tuple[str, float]]:
    """``(grade_id, points)`` of the assignment's questions, in notebook order."""
    for folder in (course.source(assignment), SOLUTIONS / assignment):
        notebooks = sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
        if notebooks:
            return [q for nb in notebooks for q in grade_ids(nb)]
    raise CourseError(f"no notebook of {assignment} in {course.source(assignment)} or {SOLUTIONS / assignment}")


def grade_rows(course: Course, assignment: str) -> tuple[list[tuple[str, float]], list[Row]]:
    """The questions and one :class:`Row` per student in the gradebook (sorted by id)."""
    from nbgrader.api import MissingEntry

    from .deadlines import lateness, load_policy, marked_late, submission_time

    questions = question_columns(course, assignment)
    max_total = sum(p for _, p in questions)
    report = load_report(course, assignment)
    policy = load_policy(course, assignment)
    participants = load_participants(course, assignment)
    decided = accepted(course, assignment)
    gone = left_students(course)
    rows = []
    with course.gradebook() as gb:
        try:
            due = gb.find_assignment(assignment).duedate
        except MissingEntry:
            raise CourseError(
                f"the gradebook {course.gradebook_url} has no assignment {assignment}: collect and grade it first"
            ) from None
        people = {s.id: s for s in gb.students}
        for student in sorted(people):
            entry = report.get(student)
            try:
                submission = gb.find_submission(assignment, student)
            except MissingEntry:
                submission = None
            scores: dict[str, float | None] = {gid: None for gid, _ in questions}
            if submission is not None:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        scores[grade.name] = float(grade.score or 0.0)
            flag = ""
            if entry is not None:
                status = entry.get("status", "graded")
                flag = flag_of(entry)
                if submission is None:  # recorded in the report only (say, an invalid notebook)
                    for gid in scores:
                        scores[gid] = float(entry.get("scores", {}).get(gid, 0.0))
            elif submission is not None:
                status = "graded"
            elif course.submitted(student, assignment).is_dir():
                status = "not graded yet"
            else:
                status = "no submission"
            if status == "no submission" and student in gone:
                continue  # left the course: kept only where they handed something in
            raw = sum(v for v in scores.values() if v is not None)
            late, mark = lateness(None, None, policy), False
            extension = submission.extension if submission is not None else None
            if status != "no submission":
                recorded = submission.timestamp if submission is not None else None
                mark = marked_late(course, student, assignment)
                late = lateness(submission_time(course, student, assignment, recorded),
                                due + extension if due is not None and extension else due, policy,
                                marked_late=mark, extended=bool(extension))
            penalty = late.penalty(raw)
            person = people[student]
            name = ", ".join(n for n in (person.last_name, person.first_name) if n)
            # lms_user_id is a Canvas user id (collect keeps Moodle's per-assignment participant
            # ids in lms/<A>.json, never there)
            pid = (participants.get(student) or {}).get("participant")
            held = bool(flag) and student not in decided
            if flag:  # the grader's word, in every file: flagged, held back or accepted
                status = f"{'flagged' if status == 'graded' else status} ({'held back' if held else 'accepted'})"
            rows.append(Row(student, scores, raw - penalty, max_total, status, raw, penalty, late.days_late,
                            late.submitted, person.lms_user_id or None, name, mark, extension, pid, held, flag,
                            late.unknown))
    return questions, rows


def flag_of(entry: dict) -> str:
    """Why the grader flagged a submission (``grading.json``), or "" when it graded it cleanly:
    not graded to the end (timed out, crashed, invalid ...), or graded against numbers the
    notebook did not hold (another student's id and key: a possible copy). These are what
    ``grade`` lists as NOT FULLY GRADED and nbgrader's ``flagged`` column marks."""
    status = entry.get("status", "graded")
    problem = (entry.get("variant") or {}).get("problem")
    if status == "graded" and not problem:
        return ""
    problems = [str(p) for p in entry.get("problems") or []]
    return problems[0] if problems else f"numbers: {problem}" if problem else str(status)


def held_back(rows: list[Row]) -> list[Row]:
    """Flagged submissions the instructor has not decided on: blank in the LMS files."""
    return [r for r in rows if r.held]


def without_time(rows: list[Row]) -> list[Row]:
    """Submissions with no submission time (judged by the LMS's mark alone)."""
    return [r for r in rows if r.status != "no submission" and r.submitted is None]


def _num(value: float | None) -> str:
    return "" if value is None else number_text(value)


def to_csv(questions, rows, *, late_columns: bool = False) -> str:
    """The per-question CSV; ``late_columns`` adds ``raw``, ``days_late`` and ``penalty``."""
    late_head = ["raw", "days_late", "penalty"] if late_columns else []
    head = ["student", *[gid for gid, _ in questions], *late_head, "total", "max", "status"]
    return csv_text([head, *(
        [row.student, *[row.scores.get(gid) for gid, _ in questions],
         *([row.raw, row.days_late, row.penalty] if late_columns else []), row.total, row.max, row.status]
        for row in rows)])


def export_csv(course: Course, assignment: str, output: Path | None, *, fmt: str = "csv",
               lms_assignment_id: str | None = None, missing: str = "blank") -> tuple[str, list[Row]]:
    """Write the ``fmt`` file to ``output`` (or return it only, when None); return (text, rows)."""
    from .deadlines import due_date

    if fmt not in FORMATS:
        raise CourseError(f"unknown export format {fmt!r}: one of {', '.join(FORMATS)}")
    questions, rows = grade_rows(course, assignment)
    if fmt == "canvas":
        text = to_canvas(assignment, rows, lms_assignment_id, missing)
    elif fmt == "moodle":
        text = to_moodle(rows, missing=missing)
    else:
        text = to_csv(questions, rows, late_columns=due_date(course, assignment) is not None)
    if output is not None:
        output = Path(output)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    return text, rows


def short_label(grade_id: str, assignment_prefix: str = "") -> str:
    """``hw1-q1a-bytes-test`` -> ``q1a-bytes`` (for the terminal table)."""
    label = grade_id[len(assignment_prefix):] if assignment_prefix and grade_id.startswith(assignment_prefix) else grade_id
    return label[: -len("-test")] if label.endswith("-test") else label


def render_table(questions, rows) -> str:
    """The grade table for a terminal (question columns labelled without prefix and suffix)."""
    ids = [gid for gid, _ in questions]
    prefix = ids[0].split("-", 1)[0] + "-" if ids and all(i.startswith(ids[0].split("-", 1)[0] + "-") for i in ids) else ""
    labels = [short_label(gid, prefix) for gid in ids]
    shortest = [label.split("-", 1)[0] for label in labels]  # q1a-bytes -> q1a, when unique
    if len(set(shortest)) == len(shortest):
        labels = shortest
    head = ["student", *labels, "total", "status"]
    body = [
        [r.student, *[_num(r.scores.get(gid)) or "-" for gid in ids], f"{_num(r.total)}/{_num(r.max)}", r.status]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in body]
    return "\n".join(lines)

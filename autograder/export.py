"""``export``: the grades of one assignment as CSV, one row per student.

Columns: ``student``, one per graded question (its nbgrader ``grade_id``, in notebook order),
``total``, ``max``, ``status``. Scores come from the gradebook (the record of truth; a
manual grade entered in formgrader wins over the autograder's); the status comes from the last
grading (``grading.json`` beside the autograded notebook: ``graded``, ``timed out``,
``invalid notebook`` ...), else ``not graded yet`` for a
collected but ungraded submission and ``no submission`` for a student without one.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from .course import SOLUTIONS, Course, CourseError, grade_ids, load_report


@dataclass
class Row:
    student: str
    scores: dict[str, float | None]
    total: float
    max: float
    status: str


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

    questions = question_columns(course, assignment)
    max_total = sum(p for _, p in questions)
    report = load_report(course, assignment)
    rows = []
    with course.gradebook() as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise CourseError(
                f"the gradebook {course.gradebook_url} has no assignment {assignment}: collect and grade it first"
            ) from None
        for student in sorted(s.id for s in gb.students):
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
            if entry is not None:
                status = entry.get("status", "graded")
                if submission is None:  # recorded in the report only (say, an invalid notebook)
                    for gid in scores:
                        scores[gid] = float(entry.get("scores", {}).get(gid, 0.0))
            elif submission is not None:
                status = "graded"
            elif course.submitted(student, assignment).is_dir():
                status = "not graded yet"
            else:
                status = "no submission"
            total = sum(v for v in scores.values() if v is not None)
            rows.append(Row(student, scores, total, max_total, status))
    return questions, rows


def _num(value: float | None) -> str:
    return "" if value is None else f"{round(value, 6):g}"


def to_csv(questions, rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *[gid for gid, _ in questions], "total", "max", "status"])
    for row in rows:
        writer.writerow(
            [_safe_cell(row.student), *[_num(row.scores.get(gid)) for gid, _ in questions],
             _num(row.total), _num(row.max), row.status]
        )
    return out.getvalue()


def _safe_cell(text: str) -> str:
    """Defuse spreadsheet formulas in a text cell (a student id cannot start with these anyway)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def export_csv(course: Course, assignment: str, output: Path | None) -> tuple[str, list[Row]]:
    """Write the CSV to ``output`` (or return it only, when None); return (text, rows)."""
    questions, rows = grade_rows(course, assignment)
    text = to_csv(questions, rows)
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

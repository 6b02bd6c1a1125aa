"""``override``: an instructor sets one part's score, with a reason, and the trail is kept.

The score goes into nbgrader's own ``Grade.manual_score`` (which wins over the autograder's
``auto_score`` everywhere nbgrader and this package read a score: export, feedback, report,
formgrader). A regrade writes only ``auto_score``, so an override outlives it; ``override
--clear`` removes it, and so does ``grade --drop-overrides`` for what that run grades. Every change is appended to ``<course>/overrides/<A>.jsonl`` (one JSON
object a line: time, who, student, part, previous score, new score or null, reason) and never
rewritten: that file is the audit trail; ``override -a A --list`` prints it.
"""

from __future__ import annotations

import getpass
import json
import math
from datetime import datetime, timezone
from pathlib import Path

from .course import Course, CourseError


def trail_path(course: Course, assignment: str) -> Path:
    return Path(course.root) / "overrides" / f"{assignment}.jsonl"


def _part(grade_ids: list[str], part: str) -> str:
    """``part`` as a grade_id: exact, else the one grade_id that starts with it (``hw1-q2``)."""
    if part in grade_ids:
        return part
    found = [g for g in grade_ids if g.startswith(part) or g.startswith(f"{part}-")]
    if len(found) == 1:
        return found[0]
    raise CourseError(f"no single part {part!r}: the parts are {', '.join(grade_ids)}")


def set_override(course: Course, assignment: str, student: str, part: str, points: float | None,
                 reason: str) -> dict:
    """Set (``points``) or clear (None) ``student``'s score of ``part``; return the trail entry."""
    from nbgrader.api import MissingEntry

    if not reason.strip():
        raise CourseError("give a --reason: it is kept in the audit trail and shown to the student")
    with course.gradebook() as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            raise CourseError(f"no graded submission of {assignment} from {student!r}") from None
        grades = {g.name: g for nb in submission.notebooks for g in nb.grades}
        gid = _part(sorted(grades), part)
        grade = grades[gid]
        top = float(grade.max_score)
        if points is not None and not (math.isfinite(points) and 0 <= points <= top):
            raise CourseError(f"{gid} is worth 0 to {top:g} points, not {points:g}")
        before = None if grade.score is None else float(grade.score)
        grade.manual_score = points
        grade.needs_manual_grade = False
        gb.db.commit()
    entry = {"time": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), "by": getpass.getuser(),
             "student": student, "part": gid, "before": before, "points": points, "reason": reason.strip()}
    path = trail_path(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as trail:
        trail.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def trail(course: Course, assignment: str) -> list[dict]:
    """Every entry of the assignment's trail, oldest first (lines that are not JSON skipped)."""
    path = trail_path(course, assignment)
    if not path.is_file():
        return []
    out = []
    for line in path.read_text("utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def current(course: Course, assignment: str) -> dict[str, dict[str, dict]]:
    """student -> part -> the entry of the override in force (cleared ones left out)."""
    out: dict[str, dict[str, dict]] = {}
    for entry in trail(course, assignment):
        parts = out.setdefault(str(entry.get("student")), {})
        if entry.get("points") is None:
            parts.pop(str(entry.get("part")), None)
        else:
            parts[str(entry.get("part"))] = entry
    return out

"""``override``: an instructor sets one part's score, with a reason, and the trail is kept.

The score goes into nbgrader's own ``Grade.manual_score`` (which wins over the autograder's
``auto_score`` everywhere nbgrader and this package read a score: export, feedback, report,
formgrader). A regrade writes only ``auto_score``, so an override outlives it; ``override
--clear`` removes it, and so does ``grade --drop-overrides`` for what that run grades. Every change is appended to ``<course>/overrides/<A>.jsonl`` (one JSON
object a line: time, who, student, part, previous score, new score or null, reason) and never
rewritten: that file is the audit trail; ``override -a A --list`` prints it.

**Flagged submissions.** A submission the grader flagged (not graded cleanly -- timed out,
crashed, an invalid notebook -- or graded against numbers the notebook did not hold: another
student's id and key, a possible copy) is *held back*: ``export`` writes its Canvas or Moodle
cell blank and says so, until the instructor decides. ``override -a A -s STUDENT --accept
--reason "..."`` is that decision: the student's scores as they then stand (with any part set
by ``--points`` before) go to the LMS files. It is kept in the trail with the content hash of
the graded notebook, so a resubmission that is flagged again is held again.
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
    _append(course, assignment, entry)
    return entry


def graded_digest(course: Course, assignment: str, student: str) -> str | None:
    """The SHA-256 of the notebook last graded for ``student`` (``grading/plan.py`` keeps it)."""
    from .course import DIGEST_FILE

    try:
        return (course.autograded(student, assignment) / DIGEST_FILE).read_text("utf-8").strip() or None
    except OSError:
        return None


def accept(course: Course, assignment: str, student: str, reason: str) -> dict:
    """Release ``student``'s flagged submission to the LMS files with its scores as they stand;
    return the trail entry (refused when nothing of theirs was graded)."""
    from .course import load_report

    if not reason.strip():
        raise CourseError("give a --reason: it is kept in the audit trail")
    if student not in load_report(course, assignment):
        raise CourseError(f"nothing graded of {assignment} from {student!r}: grade it first")
    entry = {"time": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), "by": getpass.getuser(),
             "student": student, "decision": "accept", "digest": graded_digest(course, assignment, student),
             "reason": reason.strip()}
    _append(course, assignment, entry)
    return entry


def accepted(course: Course, assignment: str) -> dict[str, dict]:
    """student -> the instructor's decision to release their flagged submission, for the
    notebook graded now (a decision about an earlier notebook no longer counts)."""
    out = {}
    for entry in trail(course, assignment):
        student = str(entry.get("student"))
        if entry.get("decision") == "accept" and entry.get("digest") == graded_digest(course, assignment, student):
            out[student] = entry
    return out


def _append(course: Course, assignment: str, entry: dict) -> None:
    path = trail_path(course, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


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
        if "part" not in entry:  # a decision about the whole submission (accept)
            continue
        parts = out.setdefault(str(entry.get("student")), {})
        if entry.get("points") is None:
            parts.pop(str(entry.get("part")), None)
        else:
            parts[str(entry.get("part"))] = entry
    return out

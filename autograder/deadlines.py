"""Due dates and the late-work penalty: ``python -m autograder due``.

**Due date.** An assignment's due date is nbgrader's own ``Assignment.duedate`` in the
gradebook (naive UTC, as nbgrader stores it). ``due -a A --date "2026-02-01 23:59 UTC"`` sets
it; the time must say its zone (``UTC``, ``+01:00``, ``-0500``): a bare local time is refused
rather than guessed.

**Policy.** One per assignment, in ``<course>/late_policy.json``::

    {"assignments": {"hw2-hardware": {"percent_per_day": 10, "zero_after_days": 7}}}

set by ``due -a A --per-day PCT --zero-after DAYS``; each option changes only its own field
(``--zero-after none`` removes the cut-off). A file of the older course-wide form
(``{"percent_per_day": 10, ...}``) is every assignment's policy until one is set. A submission made ``t`` after the due date is
``d = ceil(t / 24 h)`` days late (every started day counts; on time when ``t <= 0``). Its
factor is ``0`` when ``zero_after_days`` is set and ``d > zero_after_days``, else
``max(0, 1 - d * percent_per_day / 100)``; the penalty is ``raw * (1 - factor)`` and the final
score ``raw - penalty``. Without a policy file the rate is 0: late work is marked late, not
penalised.

**Extensions.** nbgrader's own per-student extension (``SubmittedAssignment.extension``, set by
nbgrader's ``grant_extension`` or ``due -a A --extend STUDENT --days N``) moves that student's
due date; export and feedback use it.

**Submission time.** ``timestamp.txt`` of the submission (nbgrader's layout; see
``plan.read_timestamp``; ``collect --worksheet`` writes it from Moodle's "Last modified
(submission)"), else the timestamp the gradebook recorded at grading. A Canvas download gives no
time, only ``LATE_`` in the file name, which ``collect`` keeps beside the notebook
(``lms_late.txt``). A submission with no time is judged by that mark: marked late, it is at
least one started day late and is charged exactly one day; unmarked, it counts as on time.
The mark says only "after the assignment's due date": for a student with an extension a marked
file may be on time, so it is not charged, and ``export`` and the feedback page say that a
submission time is needed. ``due -a A --submitted STUDENT WHEN`` gives one by hand (the time
Canvas shows on the submission): it is written as that submission's ``timestamp.txt``, and a
notebook collected over it (a resubmission) drops it. ``export`` says all this in one line
each, with the count.

**Exactly once.** Nothing here writes a score. The penalty is computed from the raw gradebook
scores each time something is exported or shown, so exporting twice penalises once.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .course import Course, CourseError
from .lms.marks import is_marked_late

POLICY_FILE = "late_policy.json"
DAY = timedelta(days=1)


@dataclass(frozen=True)
class LatePolicy:
    percent_per_day: float = 0.0
    zero_after_days: int | None = None

    def factor(self, days_late: int) -> float:
        """The share of the raw score kept by a submission ``days_late`` days late."""
        if days_late <= 0:
            return 1.0
        if self.zero_after_days is not None and days_late > self.zero_after_days:
            return 0.0
        return max(0.0, 1.0 - days_late * self.percent_per_day / 100.0)

    def describe(self) -> str:
        text = f"{self.percent_per_day:g}% per started day late"
        if self.zero_after_days is not None:
            text += f", zero after {self.zero_after_days} day(s)"
        return text


@dataclass(frozen=True)
class Lateness:
    """How late one submission is: its time (UTC, naive), whole started days, kept share."""
    submitted: datetime | None
    days_late: int
    factor: float
    unknown: bool = False  # marked LATE, no time, and an extension: it may be on time, not charged

    def penalty(self, raw: float) -> float:
        return raw * (1.0 - self.factor)


def policy_path(course: Course) -> Path:
    return Path(course.root) / POLICY_FILE


def _policy_file(course: Course) -> dict:
    path = policy_path(course)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as exc:
        raise CourseError(f"{path}: not a late policy ({exc}); expected "
                          '{"assignments": {"hw1-rooflines": {"percent_per_day": 10, "zero_after_days": 7}}}') from None
    return data


def _policy_of(data: dict, where: str) -> LatePolicy:
    try:
        rate = float(data.get("percent_per_day", 0))
        after = data.get("zero_after_days")
        after = None if after is None else int(after)
    except (ValueError, TypeError, AttributeError) as exc:
        raise CourseError(f"{where}: not a late policy ({exc}); expected "
                          '{"percent_per_day": 10, "zero_after_days": 7}') from None
    return _checked(LatePolicy(rate, after), where)


def load_policy(course: Course, assignment: str | None = None) -> LatePolicy:
    """The assignment's policy (else the older course-wide one); none means no penalty."""
    data = _policy_file(course)
    own = (data.get("assignments") or {}).get(assignment) if assignment else None
    if isinstance(own, dict):
        return _policy_of(own, f"{policy_path(course)} ({assignment})")
    if "percent_per_day" in data:  # the older course-wide form
        return _policy_of(data, str(policy_path(course)))
    return LatePolicy()


def _checked(policy: LatePolicy, where: str) -> LatePolicy:
    if not math.isfinite(policy.percent_per_day) or not 0 <= policy.percent_per_day <= 100:
        raise CourseError(f"{where}: the penalty per day must be between 0 and 100 percent")
    if policy.zero_after_days is not None and policy.zero_after_days < 0:
        raise CourseError(f"{where}: zero-after must be 0 or more days")
    return policy


def save_policy(course: Course, assignment: str, policy: LatePolicy) -> Path:
    """Set ``assignment``'s policy; every other assignment keeps its own (an older course-wide
    policy is written out as each assignment's, so that none changes)."""
    policy = _checked(policy, "late policy")
    data = _policy_file(course)
    assignments = dict(data.get("assignments") or {})
    if "percent_per_day" in data:  # older course-wide form: keep it as the default it was
        assignments.setdefault("*", {"percent_per_day": data["percent_per_day"],
                                     "zero_after_days": data.get("zero_after_days")})
    assignments[assignment] = {"percent_per_day": policy.percent_per_day,
                               "zero_after_days": policy.zero_after_days}
    default = assignments.pop("*", None)
    out = {"assignments": assignments}
    if default:
        out.update(default)
    path = policy_path(course)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", "utf-8")
    return path


def grant_extension(course: Course, assignment: str, student: str, delta: timedelta | None) -> None:
    """nbgrader's per-student extension (None removes it); the submission row is made if the
    student has not been graded yet (the grader keeps the extension when it grades)."""
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            gb.find_student(student)
        except MissingEntry:
            raise CourseError(f"no student {student!r} in the gradebook") from None
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            # nbgrader builds the submission's rows while its session would flush them half
            # made (SQLAlchemy's "not in session" SAWarning, three times): build, then flush
            with gb.db.no_autoflush:
                gb.update_or_create_submission(assignment, student)
        if delta:
            gb.grant_extension(assignment, student, minutes=delta.total_seconds() / 60)
        else:
            gb.grant_extension(assignment, student)  # no time given: nbgrader removes it


def extension_of(course: Course, assignment: str, student: str) -> timedelta | None:
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            return gb.find_submission(assignment, student).extension
        except MissingEntry:
            return None


def parse_when(text: str) -> datetime:
    """``"2026-02-01 23:59 UTC"``, ``"2026-02-01T23:59-05:00"`` -> naive UTC. A time without a
    zone is refused (a grader's clock and the LMS's may not agree on local time)."""
    import dateutil.parser

    try:
        when = dateutil.parser.parse(text, tzinfos={"UTC": timezone.utc, "GMT": timezone.utc})
    except (ValueError, OverflowError) as exc:
        raise CourseError(f"cannot read the date {text!r}: {exc}") from None
    if when.tzinfo is None:
        raise CourseError(f"the date {text!r} has no time zone: add one, e.g. '2026-02-01 23:59 UTC' "
                          "or '2026-02-01 23:59 +01:00'")
    return when.astimezone(timezone.utc).replace(tzinfo=None)


def duration_text(delta: timedelta | None) -> str:
    """``2 day(s)``, ``36 hour(s)``, ``90 minute(s)``: an extension as people say it."""
    if not delta:
        return "none"
    minutes = delta.total_seconds() / 60
    if minutes % (24 * 60) == 0:
        return f"{minutes / (24 * 60):g} day(s)"
    return f"{minutes / 60:g} hour(s)" if minutes % 60 == 0 else f"{minutes:g} minute(s)"


def extensions(course: Course, assignment: str) -> dict[str, timedelta]:
    """student -> the extension granted on ``assignment`` (only those with one)."""
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            subs = gb.find_assignment(assignment).submissions
        except MissingEntry:
            return {}
        return {sub.student.id: sub.extension for sub in subs if sub.extension}


def show_when(when: datetime | None) -> str:
    return "not set" if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def set_due_date(course: Course, assignment: str, when: datetime) -> None:
    """Record ``when`` (naive UTC) as the assignment's nbgrader ``duedate``."""
    with course.gradebook() as gb:
        gb.update_or_create_assignment(assignment, duedate=when)


def due_date(course: Course, assignment: str) -> datetime | None:
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


def days_late(submitted: datetime, due: datetime) -> int:
    """Whole started days after ``due`` (0 when on time or exactly at the due time)."""
    late = submitted - due
    if late <= timedelta(0):
        return 0
    return math.ceil(late / DAY)


def lateness(submitted: datetime | None, due: datetime | None, policy: LatePolicy, *,
             marked_late: bool = False, extended: bool = False) -> Lateness:
    """How late a submission is; ``due`` is the student's own due date (with their extension).
    Without a time, ``marked_late`` (the LMS's mark: after the *assignment's* due date) counts
    as one started day late, the least it can be; no mark, on time. A student with an extension
    (``extended``) may have handed in a marked file within it: the least is then on time, so
    nothing is charged and ``unknown`` says that only a submission time can tell."""
    if due is None:
        return Lateness(submitted, 0, 1.0)
    if submitted is None:
        if marked_late and extended:
            return Lateness(None, 0, 1.0, unknown=True)
        days = 1 if marked_late else 0
        return Lateness(None, days, policy.factor(days))
    days = days_late(submitted, due)
    return Lateness(submitted, days, policy.factor(days))


def marked_late(course: Course, student: str, assignment: str) -> bool:
    """Whether the LMS marked the collected submission late (``collect``'s ``lms_late.txt``)."""
    return is_marked_late(course.submitted(student, assignment))


def set_submission_time(course: Course, assignment: str, student: str, when: datetime) -> Path:
    """Record ``when`` (naive UTC) as the time ``student`` handed in the collected submission
    (nbgrader's ``timestamp.txt`` beside it); refused when nothing of theirs is collected."""
    folder = course.submitted(student, assignment)
    if not (folder / f"{assignment}.ipynb").is_file():
        raise CourseError(f"no collected submission of {assignment} from {student!r}: collect it first")
    path = folder / "timestamp.txt"
    path.write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"), "utf-8")
    return path


def submission_time(course: Course, student: str, assignment: str,
                    recorded: datetime | None = None) -> datetime | None:
    """``timestamp.txt`` of the submission, else the time the gradebook recorded (naive UTC)."""
    from .grading.plan import read_timestamp

    stamp = read_timestamp(course, student, assignment)
    if stamp is None and recorded is not None:
        stamp = recorded
    if stamp is not None and stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).replace(tzinfo=None)
    return stamp

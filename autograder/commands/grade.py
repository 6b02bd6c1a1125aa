"""``grade``: autograde the collected submissions, and say what was not fully graded."""

from __future__ import annotations

import time
from pathlib import Path

from .common import UsageError, course_options, assignment_of, course_of


def add_grade(sub) -> None:
    """The ``grade`` command's arguments."""
    p = sub.add_parser(
        "grade", help="autograde the collected submissions of an assignment",
        description="Grade every submission in <course>/submitted/*/<A>/ (students' code runs sandboxed; "
                    "see autograder/DESIGN.md), record the scores in the gradebook, write autograded "
                    "notebooks, and list the submissions that could not be fully graded.",
    )
    course_options(p)
    p.add_argument("--workers", type=int, metavar="N", help="grade N submissions at a time (default: per CPU)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a dask.distributed scheduler (tcp://host:8786) to spread the work over")
    p.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit per submission, seconds")
    p.add_argument("--student", action="append", metavar="ID", help="grade only this student (repeatable)")
    p.add_argument("--force", action="store_true",
                   help="grade again the submissions already graded (by default they are skipped)")
    p.add_argument("--drop-overrides", action="store_true",
                   help="clear the instructor's overrides (see override) of every submission graded in "
                        "this run, so the autograder's scores count again (the trail keeps them)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=cmd_grade)


def cmd_grade(args) -> int:
    course, assignment = course_of(args), assignment_of(args)
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    course.prepare(assignment)
    if not course.submitted_students(assignment):
        raise UsageError(f"no submissions of {assignment} in {Path(course.root) / 'submitted'}: run collect first")
    try:
        from ..grading.grade import GradingError, grade_assignment
    except ImportError as exc:
        raise UsageError(f"the grading engine (autograder.grading) cannot be loaded: {exc}") from exc
    extra = {}
    if args.student:
        unknown = sorted(set(args.student) - set(course.submitted_students(assignment)))
        if unknown:
            raise UsageError(f"no submission of {assignment} from {', '.join(unknown)}")
        extra["students"] = args.student
    if args.force:
        extra["force"] = True
    start = time.perf_counter()
    try:
        report = grade_assignment(course, assignment, workers=args.workers, scheduler=args.scheduler,
                                  timeout=args.timeout, progress=not args.quiet, **extra)
    except GradingError as exc:
        raise UsageError(f"cannot grade {assignment}: {exc}") from exc
    elapsed = time.perf_counter() - start
    if args.drop_overrides:
        from ..overrides import current, set_override

        graded = {r.student for r in report.results}
        for student, parts in sorted(current(course, assignment).items()):
            for part in sorted(parts) if student in graded else []:
                set_override(course, assignment, student, part, None, "grade --drop-overrides")
                print(f"override of {student} {part} dropped: the autograder's score counts")
    warning = most_flagged(report)
    if warning:
        print(warning)
    print(render_grade_summary(report, elapsed))
    stale = stale_feedback(course, assignment, [r.student for r in report.results])
    if stale:
        from ..safe_text import visible

        print(visible(f"feedback pages written before this grading ({len(stale)}): {', '.join(stale)}; "
                      f"run feedback -a {assignment} again so that they show the new scores"))
    return 1 if getattr(report, "errors", None) or warning else 0


def stale_feedback(course, assignment: str, graded: list[str]) -> list[str]:
    """The students just graded whose feedback page is older than their grading record."""
    from ..course import GRADING_RECORD

    stale = []
    for student in sorted(graded):
        page = course.feedback(student, assignment) / "feedback.html"
        record = course.autograded(student, assignment) / GRADING_RECORD
        if page.is_file() and record.is_file() and page.stat().st_mtime_ns < record.stat().st_mtime_ns:
            stale.append(student)
    return stale


def most_flagged(report) -> str | None:
    """The first line when most of the class was not graded cleanly: a wrong setup (keys made
    for other ids, the wrong notebook) rather than many students' mistakes."""
    everyone = list(report.results) + list(report.previous)
    bad = [r for r in everyone if r.status != "graded" or (getattr(r, "variant", None) or {}).get("problem")]
    if len(everyone) < 2 or 2 * len(bad) <= len(everyone):
        return None
    from collections import Counter

    first = Counter((r.problems[0] if r.problems else r.status).split(";")[0].split(":")[0] for r in bad)
    why, n = first.most_common(1)[0]
    return (f"MOST OF THE CLASS IS FLAGGED: {len(bad)} of {len(everyone)} submissions were not graded cleanly "
            f"(most often: {why!r}, {n}); check the setup (keys --roster from the LMS's own roster, "
            f"collect of the right download) before exporting")


def render_grade_summary(report, elapsed: float) -> str:
    """The table of this run, the time taken, and every submission not fully graded."""
    results = sorted(report.results, key=lambda r: r.student)
    previous = sorted(report.previous, key=lambda r: r.student)
    skipped, errors = list(report.skipped_already_graded), dict(report.errors)
    lines = [f"{report.assignment}: graded {len(results)} submission(s)"]
    width = max([len(r.student) for r in results] + [7])
    for r in results:
        got, possible = sum(r.scores.values()), sum(r.max_scores.values())
        lines.append(f"  {r.student:<{width}}  {got:>6g} / {possible:<6g} {r.status}")

    def some(names: list[str]) -> str:
        return ", ".join(map(str, names[:10])) + (f" and {len(names) - 10} more" if len(names) > 10 else "")

    resubmitted = sorted(getattr(report, "resubmitted", []))
    if resubmitted:
        lines.append(f"regraded {len(resubmitted)} resubmitted notebook(s), whose content changed since they "
                     f"were graded (the earlier result is kept in autograded/<student>/{report.assignment}/"
                     f"history/): {some(resubmitted)}")
    if skipped:
        lines.append(f"skipped {len(skipped)} already graded and unchanged (--force grades them again): "
                     f"{some(skipped)}")
    if report.claimed_elsewhere:
        lines.append(f"left {len(report.claimed_elsewhere)} to another grader running on this gradebook: "
                     f"{some(report.claimed_elsewhere)}")
    if results:
        at_once = min(report.workers or 1, len(results))
        lines.append(f"time: {elapsed:.1f} s in all" + (
            f", {elapsed / len(results):.2f} s per submission ({at_once} in parallel)" if at_once > 1 else
            f", {elapsed / len(results):.2f} s per submission" if len(results) > 1 else ""))
    if report.memory_cap:
        lines.append(f"memory cap: {report.memory_cap}")
    trouble: list[str] = []
    notes: list[str] = []
    for r in results + previous:
        if r.status != "graded" or r.problems:
            problems = [str(p) for p in r.problems]
            status_said = r.status == "graded" or any(p.startswith(r.status) for p in problems)
            why = ([] if status_said else [r.status]) + problems
            when = " (graded earlier)" if r in previous else ""
            flagged = r.status != "graded" or (getattr(r, "variant", None) or {}).get("problem")
            (trouble if flagged else notes).append(f"  {r.student}{when}: " + "; ".join(why))
    for student, why in sorted(errors.items()):
        trouble.append(f"  {student}: NOT GRADED, the grader failed ({why}); run grade again")
    lines.append("")
    if notes:
        lines.append(f"graded, with notes ({len(notes)}):")
        lines.extend(notes)
    if trouble:
        lines.append(f"FLAGGED, NOT FULLY GRADED ({len(trouble)}): export holds these back from the Canvas and "
                     f"Moodle files (status 'flagged (held back)') until you decide: override -a "
                     f"{report.assignment} -s STUDENT --accept --reason ... (after any --points)")
        lines.extend(trouble)
    else:
        lines.append("every submission was fully graded")
    from ..safe_text import visible  # student ids and messages came from submissions

    return "\n".join(visible(line) for line in lines)

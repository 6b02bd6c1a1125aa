"""``feedback``: one HTML page per student."""

from __future__ import annotations

from pathlib import Path

from .common import UsageError, course_options, assignment_of, course_of


def add_feedback(sub) -> None:
    """The ``feedback`` command's arguments."""
    p = sub.add_parser(
        "feedback", help="write an HTML feedback page per student",
        description="Write <course>/feedback/<student>/<A>/feedback.html: each question's points, result "
                    "and hint.",
    )
    course_options(p)
    p.add_argument("--student", action="append", metavar="ID", help="only this student (repeatable)")
    p.add_argument("--release-solutions", action="store_true",
                   help="also show, for each part a student missed, the expected answers and the worked "
                        "solution (refused before the due date)")
    p.add_argument("--force", action="store_true", help="release solutions even before the due date")
    p.set_defaults(func=cmd_feedback)


def cmd_feedback(args) -> int:
    from ..feedback import write_feedback

    course, assignment = course_of(args), assignment_of(args)
    written = write_feedback(course, assignment, args.student, release_solutions=args.release_solutions,
                             force=args.force)
    if args.student:
        missing = sorted(set(args.student) - set(written))
        if missing:
            raise UsageError(f"nothing graded for {', '.join(missing)} in {assignment}")
    print(f"wrote {len(written)} feedback page(s) of {assignment} under {Path(course.root) / 'feedback'}")
    return 0

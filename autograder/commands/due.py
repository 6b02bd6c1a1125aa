"""``due``: due date, late policy, extensions and submission times given by hand."""

from __future__ import annotations

from .common import UsageError, course_options, assignment_of, course_of


def add_due(sub) -> None:
    """The ``due`` command's arguments."""
    p = sub.add_parser(
        "due", help="set or show an assignment's due date, late penalty and students' extensions",
        description="Record the due date in the gradebook (nbgrader's Assignment.duedate) and this "
                    "assignment's late policy in <course>/late_policy.json (each option changes only its "
                    "own field; other assignments keep theirs). Always shows both and the students' "
                    "extensions. Late work is "
                    "penalised when exported and shown on the feedback page, computed from the raw scores "
                    "each time (never stored): a submission d started days after the student's due date "
                    "(with their extension) keeps max(0, 1 - d * PCT/100) of its score, nothing after "
                    "--zero-after days. The submission time is its timestamp.txt (nbgrader layout; collect "
                    "--worksheet writes Moodle's; --submitted gives one by hand) or the one the gradebook "
                    "recorded. Without a time, a file Canvas marked LATE is charged one day, the least it "
                    "can be; with an extension it may be on time: not charged, and export says so.",
    )
    course_options(p)
    p.add_argument("--date", metavar="WHEN",
                   help="due date with its time zone, e.g. '2026-02-01 23:59 UTC' or '2026-02-01T23:59+01:00'")
    p.add_argument("--per-day", type=float, metavar="PCT",
                   help="this assignment's policy: percent of the score lost per started day late "
                        "(default 0); other fields and assignments are left as they are")
    p.add_argument("--zero-after", metavar="DAYS",
                   help="this assignment's policy: a submission more than DAYS days late scores zero "
                        "('none' removes the cut-off)")
    p.add_argument("--extend", metavar="STUDENT",
                   help="grant STUDENT an extension of --days/--hours (nbgrader's own; 0 removes it)")
    p.add_argument("--submitted", nargs=2, action="append", metavar=("STUDENT", "WHEN"),
                   help="the time STUDENT handed in (with its zone, as the LMS shows it: a Canvas download "
                        "has none, and a LATE mark cannot tell a student's extension); repeatable; kept as "
                        "the submission's timestamp.txt until a newer notebook is collected")
    p.add_argument("--days", type=float, default=0, help="with --extend")
    p.add_argument("--hours", type=float, default=0, help="with --extend")
    p.set_defaults(func=cmd_due)


def cmd_due(args) -> int:
    import dataclasses
    from datetime import timedelta

    from ..deadlines import (due_date, duration_text, extension_of, extensions, grant_extension, load_policy,
                            parse_when, save_policy, set_due_date, set_submission_time, show_when)

    assignment = assignment_of(args)
    course = course_of(args)
    if args.date is not None:
        course.prepare(assignment)
        set_due_date(course, assignment, parse_when(args.date))
    if args.per_day is not None or args.zero_after is not None:
        policy = load_policy(course, assignment)
        if args.per_day is not None:
            policy = dataclasses.replace(policy, percent_per_day=args.per_day)
        if args.zero_after is not None:
            text = str(args.zero_after).strip().lower()
            if text not in ("none", "off") and not text.isdigit():
                raise UsageError(f"--zero-after takes a whole number of days or 'none', not {args.zero_after!r}")
            policy = dataclasses.replace(policy, zero_after_days=None if not text.isdigit() else int(text))
        save_policy(course, assignment, policy)
    if args.extend:
        hours = args.days * 24 + args.hours
        if hours < 0:
            raise UsageError("an extension cannot be negative")
        course.prepare(assignment)
        grant_extension(course, assignment, args.extend, timedelta(hours=hours) if hours else None)
        extension = extension_of(course, assignment, args.extend)
        print(f"{args.extend}: " + (f"extension of {duration_text(extension)} on {assignment}" if extension else
                                    f"no extension on {assignment}"))
    elif args.days or args.hours:
        raise UsageError("--days and --hours go with --extend STUDENT")
    for student, when in args.submitted or []:
        at = parse_when(when)
        set_submission_time(course, assignment, student, at)
        print(f"{student}: handed in {assignment} at {show_when(at)} (by your word)")
    print(f"{assignment}: due {show_when(due_date(course, assignment))}; "
          f"late policy: {load_policy(course, assignment).describe()}")
    granted = extensions(course, assignment)
    print(f"extensions ({len(granted)}): " + (", ".join(f"{s} {duration_text(d)}" for s, d in sorted(granted.items()))
                                              or "none"))
    return 0

"""``collect``: copy the students' notebooks from a folder or an LMS download into the course."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from .common import UsageError, course_options, assignment_of, course_of


def add_collect(sub) -> None:
    """The ``collect`` command's arguments."""
    p = sub.add_parser(
        "collect", help="copy submissions (folder, nbgrader layout or LMS .zip) into the course",
        description="Copy the notebooks of one assignment into <course>/submitted/<student>/<A>/ and add "
                    "the students to the gradebook. The originals are never modified.",
        epilog=textwrap.dedent("""\
            how a file's student id is found (first rule that applies; only names the LMS or
            nbgrader wrote count, never a file name the student chose inside them):
              Jane Doe_4242_assignsubmission_file_/<any>     Moodle folder: the folder alone names the
                                                             student (jane_doe_4242), whatever is inside
              [submitted/]<student>/<A>/<A>.ipynb            nbgrader layout: the folder name
              doejane_12345_67890_<file>.ipynb               Canvas: doejane_12345
              Jane Doe_4242_assignsubmission_file_<file>     Moodle file: jane_doe_4242
              <student>.ipynb, <student>_<anything>.ipynb    at the top: the name up to the first '_'
            Canvas students are keyed by Canvas user id: the student of the course roster
            (keys --roster <Canvas gradebook export>) with that id; a user id not on the roster is
            reported by name and collected for no one. Without a roster: <name>_<user id>, the name
            lower case with accents dropped (lms_<user id> if nothing is left).
            Moodle's number is the assignment's participant id, not the student's: give the
            assignment's grading worksheet (--worksheet), whose 'Participant <n>' rows name each
            student by email, so every assignment finds the same student (and its 'Last modified
            (submission)' is the submission time). A course with a Moodle roster requires it.
            Copies of one notebook for one student: the newest by the LMS's order is kept (Canvas:
            x-1.ipynb, with the larger file id, after x.ipynb; Moodle: 'x (1).ipynb' after
            'x.ipynb') and both are named; two other files are reported as duplicates and neither
            is collected.
            LMS names are read from their fixed end (user id, submission id), so a display name
            cannot pass for another student's id; a file name that still reads as two LMS users
            is reported as AMBIGUOUS and collected for no one. Every name from a submission is
            printed with control and bidi characters escaped (\\x1b, \\u202e).
            Zip members that would leave the archive (../, absolute paths) or are links are refused."""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="folder, .zip file or .ipynb notebook")
    course_options(p)
    p.add_argument("--force", action="store_true",
                   help="replace a notebook collected before whose contents differ (a resubmission; "
                        "grade then regrades it and keeps the earlier result)")
    p.add_argument("--allow-older", action="store_true",
                   help="with --force: also replace a notebook by an older one (by Canvas's file id or "
                        "Moodle's submission time, a newer notebook collected before is kept otherwise)")
    p.add_argument("--worksheet", metavar="CSV",
                   help="Moodle: this assignment's grading worksheet (View all submissions > Download "
                        "grading worksheet); maps its 'Participant <n>' ids to students and gives each "
                        "submission's time")
    p.add_argument("--tz", type=float, metavar="HOURS",
                   help="with --worksheet: the UTC offset of its times, e.g. 1 or -5 (default 0, UTC)")
    p.set_defaults(func=cmd_collect)


def cmd_collect(args) -> int:
    from ..collect import collect

    from datetime import timedelta, timezone

    assignment = assignment_of(args)
    course = course_of(args, create=True)
    tz = None
    if args.tz is not None:
        tz = timezone(timedelta(hours=args.tz))
    if args.allow_older and not args.force:
        raise UsageError("--allow-older goes with --force")
    report = collect([Path(s) for s in args.sources], course, assignment, force=args.force,
                     worksheet=Path(args.worksheet) if args.worksheet else None, tz=tz,
                     allow_older=args.allow_older)
    print(report.render(course))
    return 0 if report.ok else 1

"""``keys``: the roster's students into the course, their homework keys, and who joined or left."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import UsageError, course_options, course_of


def add_keys(sub) -> None:
    """The ``keys`` command's arguments."""
    p = sub.add_parser(
        "keys", help="list each student's homework key (per-student numbers)",
        description="Add the students of a roster to the course and write student,name,lms_id,email,"
                    "homework_key for each (without --roster: every student of the gradebook). The roster "
                    "is the LMS's own file: a Canvas gradebook export (students keyed by Canvas user id, "
                    "'Points Possible' row or not), a Moodle participants export or grading worksheet "
                    "(keyed by ID number, else email), or any CSV with an 'id' column. One key per student "
                    "serves every homework of the course; hand them out through the LMS or a mail merge. "
                    "Keys follow from the course's secret, <course>/variants.secret: back it up, never "
                    "share it.",
    )
    course_options(p, assignment=False)
    p.add_argument("--roster", metavar="CSV",
                   help="the LMS's roster file (default: the students in the gradebook)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the CSV here (default: print it)")
    p.set_defaults(func=cmd_keys)


def cmd_keys(args) -> int:
    from ..lms.formats import RosterStudent, read_roster_file
    from ..lms.roster import register_roster
    from ..variants import keys_csv

    course = course_of(args, create=bool(args.roster))
    if args.roster:
        roster = read_roster_file(Path(args.roster))
        registered = register_roster(course, roster, complete=True)
        students = registered.students
        kind = {"canvas": "a Canvas gradebook export", "moodle": "a Moodle participants file",
                "plain": "a roster"}[roster.lms]
        said = (f"{len(students)} student(s) from {kind}"
                + (f" (skipped {len(roster.skipped)} row(s) that are not students: "
                   f"{'; '.join(roster.skipped)})" if roster.skipped else ""))
        changes = roster_changes(course, registered)
        if args.output or roster.skipped or changes:  # with the CSV on stdout, only what needs saying
            from ..safe_text import visible  # the roster's names are the LMS's (and students') text

            for line in [said, *(changes or ["no one joined or left since the last roster"])]:
                print(visible(line), file=sys.stdout if args.output else sys.stderr)
    else:
        with course.gradebook() as gb:
            students = [RosterStudent(s.id, s.first_name or "", s.last_name or "", s.lms_user_id, s.email)
                        for s in sorted(gb.students, key=lambda s: s.id)]
        if not students:
            raise UsageError("the gradebook has no students yet: give --roster roster.csv")
    text = keys_csv(course, students)
    if args.output:
        Path(args.output).write_text(text, "utf-8")
        print(f"wrote the keys of {len(students)} student(s) to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def roster_changes(course, registered) -> list[str]:
    """The lines ``keys --roster`` says of who joined, left and came back since the last roster."""
    from ..lms.roster import roster_students

    if registered.first:
        return []
    people = roster_students(course)

    def names(ids: list[str]) -> str:
        return ", ".join(f"{_name(people.get(i, {}))} ({i})" for i in ids)

    lines = []
    if registered.joined:
        lines.append(f"joined since the last roster ({len(registered.joined)}): {names(registered.joined)}")
    if registered.back:
        lines.append(f"back on the roster ({len(registered.back)}): {names(registered.back)}")
    if registered.left:
        lines.append(f"LEFT since the last roster ({len(registered.left)}): {names(registered.left)}; kept for "
                     f"the assignments they handed in, left out of the others (roster.json records when)")
    return lines


def _name(entry: dict) -> str:
    return " ".join(n for n in (entry.get("first_name"), entry.get("last_name")) if n) or "?"

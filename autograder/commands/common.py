"""What every command shares: the usage error, the course and assignment options, and how they are read."""

from __future__ import annotations

import argparse

from ..course import DEFAULT_COURSE_ROOT, check_assignment, default_course


class UsageError(Exception):
    pass


def course_options(p: argparse.ArgumentParser, *, assignment: bool = True) -> None:
    if assignment:
        p.add_argument("-a", "--assignment", required=True, metavar="A",
                       help="assignment name, e.g. hw1-rooflines")
    p.add_argument("--course", metavar="DIR",
                   help=f"course directory (default: $SCALEBOOK_COURSE or {DEFAULT_COURSE_ROOT})")
    p.add_argument("--db", metavar="URL",
                   help="gradebook as an SQLAlchemy URL, given once: the course keeps it (default: "
                        "$SCALEBOOK_DB, else the course's own, else sqlite:///<course>/gradebook.db)")


def assignment_of(args) -> str:
    check_assignment(args.assignment)
    return args.assignment


def course_of(args, *, create: bool = False):
    """The course of ``--course``/``--db``; only commands that start a course (keys --roster,
    collect, variants, generate --roster) make its directory: a mistyped --course is an error."""
    return default_course(args.course, args.db, create=create)

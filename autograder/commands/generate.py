"""``generate``: solutions/ -> exercises/ (nbgrader's release), or one notebook per roster student."""

from __future__ import annotations

import sys
from pathlib import Path

from ..course import DEFAULT_COURSE_ROOT, available_assignments, check_assignment, generate_exercises
from .common import UsageError, course_of


def add_generate(sub) -> None:
    """The ``generate`` command's arguments."""
    p = sub.add_parser(
        "generate", help="regenerate the student notebooks exercises/ from solutions/",
        description="Run nbgrader generate_assignment on solutions/<A>/ in a temporary course and make "
                    "exercises/<A>/ identical to the release (solutions and hidden tests removed, "
                    "read-only cells locked and checksummed). Exit 1 with --check when they differ.",
    )
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                   help="assignments to generate (default: every solutions/<A>/<A>.ipynb)")
    p.add_argument("--check", action="store_true",
                   help="only report whether exercises/ is out of date; write nothing")
    p.add_argument("--roster", metavar="CSV",
                   help="instead, write one notebook per student of this roster (a CSV with an 'id' "
                        "column), their own numbers in the problem text and their id and key filled "
                        "in, into <output-dir>/<student>/<A>.ipynb (keys in <course>/keys.csv); needs one ASSIGNMENT")
    p.add_argument("--output-dir", metavar="DIR",
                   help="with --roster: where to write (default: <course>/personal/<A>)")
    p.add_argument("--course", metavar="DIR",
                   help=f"with --roster: the course whose secret makes the keys (default: $SCALEBOOK_COURSE "
                        f"or {DEFAULT_COURSE_ROOT})")
    p.add_argument("--db", metavar="URL", help="with --roster: the course's gradebook URL, as for grade")
    p.set_defaults(func=cmd_generate)


def cmd_generate(args) -> int:
    if args.roster:
        return _generate_roster(args)
    if args.output_dir or args.course or args.db:
        raise UsageError("--output-dir, --course and --db go with --roster")
    assignments = args.assignments or available_assignments()
    if not assignments:
        raise UsageError("no assignments: solutions/ has no <A>/<A>.ipynb")
    for a in assignments:
        check_assignment(a)
    drift = generate_exercises(assignments, check=args.check)
    dirty = False
    for a, changes in drift.items():
        if not changes:
            print(f"{a}: exercises/{a}/ is up to date")
            continue
        dirty = True
        verb = "is out of date" if args.check else "regenerated"
        print(f"{a}: exercises/{a}/ {verb}:")
        for change in changes:
            print(f"  {change}")
    if args.check and dirty:
        print("run `python -m autograder generate` (make generate) and commit exercises/", file=sys.stderr)
        return 1
    return 0


def _generate_roster(args) -> int:
    from ..lms.formats import read_roster_file
    from ..lms.roster import register_roster
    from ..safe_text import visible
    from ..variants import write_roster_notebooks

    if len(args.assignments) != 1 or args.check:
        raise UsageError("--roster needs exactly one ASSIGNMENT (and no --check)")
    (assignment,) = args.assignments
    check_assignment(assignment)
    course = course_of(args, create=True)
    students = [s.id for s in register_roster(course, read_roster_file(Path(args.roster)))]
    out_dir = Path(args.output_dir) if args.output_dir else Path(course.root) / "personal" / assignment
    written = write_roster_notebooks(course, assignment, students, out_dir)
    print(f"wrote {len(written)} notebook(s) of {assignment}, one per student, under {out_dir}")
    print(f"their keys: {visible(str(Path(course.root) / 'keys.csv'))} (the same key serves every homework; "
          f"it is kept apart from the notebooks you hand out)")
    return 0

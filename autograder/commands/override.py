"""``override``: set one part's score by hand, or accept a flagged submission; the audit trail."""

from __future__ import annotations

from pathlib import Path

from .common import UsageError, course_options, assignment_of, course_of


def add_override(sub) -> None:
    """The ``override`` command's arguments."""
    p = sub.add_parser(
        "override", help="set one part's score by hand, with a reason (kept in an audit trail)",
        description="Set STUDENT's score of one part (its grade_id, or the start of it such as hw1-q2a) in "
                    "the gradebook as nbgrader's manual score: export, feedback and report use it, a "
                    "regrade keeps it, --clear removes it. Every change is appended to "
                    "<course>/overrides/<A>.jsonl with the time, who and why; --list prints it.",
    )
    course_options(p)
    p.add_argument("-s", "--student", metavar="ID")
    p.add_argument("--part", metavar="ID")
    p.add_argument("--points", type=float, metavar="P")
    p.add_argument("--clear", action="store_true", help="remove the override (the autograder's score counts)")
    p.add_argument("--reason", metavar="TEXT", default="")
    p.add_argument("--accept", action="store_true",
                   help="release STUDENT's flagged submission (held back from the Canvas/Moodle files) "
                        "with the scores as they stand, parts set with --points before included")
    p.add_argument("--list", action="store_true", help="print the assignment's override trail")
    p.set_defaults(func=cmd_override)


def cmd_override(args) -> int:
    from ..safe_text import visible
    from ..overrides import accept, set_override, trail

    assignment = assignment_of(args)
    course = course_of(args)
    if args.list:
        for e in trail(course, assignment):
            if e.get("decision") == "accept":
                print(visible(f"{e.get('time')}  {e.get('by')}  {e.get('student')}: accepted the flagged "
                              f"submission  ({e.get('reason')})"))
                continue
            new = "cleared" if e.get("points") is None else f"{e.get('points'):g}"
            print(visible(f"{e.get('time')}  {e.get('by')}  {e.get('student')}  {e.get('part')}: "
                          f"{e.get('before')} -> {new}  ({e.get('reason')})"))
        return 0
    if args.accept:
        if not args.student or args.part or args.points is not None or args.clear:
            raise UsageError("--accept takes -s STUDENT and --reason (set parts with --points first)")
        accept(course, assignment, args.student, args.reason)
        print(visible(f"{args.student}: the flagged submission of {assignment} is accepted; export now writes "
                      f"its score"))
        return 0
    if not (args.student and args.part) or (args.points is None) == (not args.clear):
        raise UsageError("give -s STUDENT --part ID and either --points P or --clear (and --reason)")
    entry = set_override(course, assignment, args.student, args.part, None if args.clear else args.points,
                         args.reason)
    new = "cleared (the autograder's score counts)" if entry["points"] is None else f"{entry['points']:g}"
    print(visible(f"{args.student} {entry['part']}: {entry['before']} -> {new}; kept in "
                  f"{Path(course.root) / 'overrides' / (assignment + '.jsonl')}"))
    return 0

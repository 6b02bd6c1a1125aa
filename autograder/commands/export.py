"""``export``: the grades as CSV, Canvas's import or Moodle's worksheet; what is held back, and why."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import course_options, assignment_of, course_of


def add_export(sub) -> None:
    """The ``export`` command's arguments."""
    from ..lms.formats import FORMATS

    p = sub.add_parser(
        "export", help="write the grades of an assignment as CSV (ours, Canvas's or Moodle's)",
        description="csv (default): one row per student in the gradebook: student, one column per question "
                    "(grade_id), total, max, status; with a due date also raw, days_late and penalty "
                    "(total is then the penalised score). canvas: Canvas's gradebook import CSV; moodle: "
                    "Moodle's assignment grading worksheet; both keyed by the LMS user id collect read "
                    "from the download (autograder/export.py says which layouts). Students without an "
                    "LMS id are listed on stderr and the exit status is 1.",
    )
    course_options(p)
    p.add_argument("--format", choices=FORMATS, default="csv",
                   help="file layout (default csv)")
    p.add_argument("--missing", choices=("blank", "zero"), default="blank",
                   help="canvas/moodle: a roster student with no submission gets an empty cell (the LMS "
                        "leaves their grade alone; default) or 0")
    p.add_argument("--lms-assignment-id", metavar="ID",
                   help="canvas: the Canvas assignment id, so the column reads '<A> (<ID>)' and Canvas "
                        "fills that assignment instead of creating a new one")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="CSV file to write, '-' for standard output (default: <course>/grades-<A>.csv, "
                        "canvas-<A>.csv or moodle-<A>.csv)")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    from ..safe_text import visible
    from ..deadlines import due_date
    from ..deadlines import duration_text
    from ..export import export_csv, held_back, without_time
    from ..lms.formats import MISSING_ID_WHY, default_file_name, missing_lms_ids

    assignment = assignment_of(args)
    course = course_of(args)
    to_stdout = args.output == "-"
    name = default_file_name(args.format, assignment)
    output = None if to_stdout else Path(args.output or Path(course.root) / name)
    text, rows = export_csv(course, assignment, output, fmt=args.format, lms_assignment_id=args.lms_assignment_id,
                            missing=args.missing)
    if to_stdout:
        sys.stdout.write(text)
    missing = missing_lms_ids(rows, args.format) if args.format != "csv" else []
    if not to_stdout:
        print(f"wrote {len(rows) - len(missing)} student row(s) of {assignment} to {output}")
    absent = [r for r in rows if r.status == "no submission" and r not in missing]
    if absent and args.format != "csv":
        print(visible(f"no submission ({len(absent)}, exported {'as 0' if args.missing == 'zero' else 'blank'}): "
                      + ", ".join(f"{r.name or r.student} ({r.student})" for r in absent)), file=sys.stderr)
    untimed = without_time(rows) if due_date(course, assignment) is not None else []
    if untimed:
        marked = sum(1 for r in untimed if r.marked_late and not r.untimed_extension)
        print(f"no submission time for {len(untimed)} submission(s) (a Canvas download has none): "
              f"{marked} marked LATE by Canvas are charged one day, the others count as on time",
              file=sys.stderr)
    unknown = [r for r in rows if r.untimed_extension]
    if unknown:
        print(visible(f"marked LATE, but with an extension, so perhaps on time: NOT CHARGED ({len(unknown)}): "
                      + ", ".join(f"{r.name or r.student} ({r.student}, extension {duration_text(r.extension)})"
                                  for r in unknown)
                      + f"; give the time Canvas shows with: due -a {assignment} --submitted STUDENT WHEN"),
              file=sys.stderr)
    held = held_back(rows)
    if held:
        where = "in the status column" if args.format == "csv" else "exported blank"
        print(f"HELD BACK ({len(held)}, {where}): flagged by the grader; decide with override -a {assignment} "
              f"-s STUDENT --accept --reason ... (after any --points):", file=sys.stderr)
        for row in held:
            print(visible(f"  {row.name or row.student} ({row.student}): {row.flag}; "
                          f"{row.total:g} / {row.max:g} as graded"), file=sys.stderr)
    if missing:
        print(f"NOT IN THE {args.format.upper()} FILE ({len(missing)}): {MISSING_ID_WHY[args.format]}; "
              "enter by hand:", file=sys.stderr)
        for row in missing:
            print(visible(f"  {row.student}: {row.status}, total {row.total:g} / {row.max:g}"), file=sys.stderr)
        return 1
    return 1 if held else 0

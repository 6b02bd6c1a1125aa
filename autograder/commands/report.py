"""``report``: the item analysis of an assignment."""

from __future__ import annotations

import time
from pathlib import Path

from .common import course_options, assignment_of, course_of


def add_report(sub) -> None:
    """The ``report`` command's arguments."""
    p = sub.add_parser(
        "report", help="write the item analysis of an assignment (HTML page and CSV)",
        description="From the recorded results (nothing is graded again): per graded part, how many "
                    "attempted it, mean points, full-credit share, discrimination (upper-lower 27%) and "
                    "the most common wrong answers grouped by the misconception their hint names; a "
                    "histogram of the totals. Writes report-<A>.html and report-<A>.csv.",
    )
    course_options(p)
    p.add_argument("--output-dir", metavar="DIR", help="folder to write into (default: the course directory)")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from ..report import render_table, write_report
    from ..safe_text import terminal_text

    course, assignment = course_of(args), assignment_of(args)
    start = time.perf_counter()
    analysis, html_path, csv_path, integrity = write_report(course, assignment,
                                                            Path(args.output_dir or course.root))
    elapsed = time.perf_counter() - start
    lines = [render_table(analysis), ""]
    if integrity is not None:
        lines.append(f"notebooks not the student's own: {len(integrity.not_own)}"
                     + "".join(f"\n  {s}: {why}" for s, why in integrity.not_own))
        lines.append(f"possible copying (lost parts fit a classmate's numbers): {len(integrity.suspects)}"
                     + "".join(f"\n  {x.student}: {x.classmate_parts} of {x.lost} lost parts fit "
                               f"{x.classmate}'s numbers" for x in integrity.suspects))
        lines.append("")
    lines.append(f"wrote the item analysis of {assignment} ({analysis.students} students) to {html_path} "
                 f"and {csv_path} in {elapsed:.1f} s")
    print(terminal_text("\n".join(lines)))  # hint labels and answers may hold what students wrote
    return 0

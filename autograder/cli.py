"""``python -m autograder``: the instructor's (and, for ``validate``, the student's) commands.

Exit status: 0 success; 1 the command ran but found something to act on (drift, unanswered
questions, duplicates or refused files); 2 a usage or configuration error (unknown
assignment, missing file, bad database URL).

Each verb is one module of ``commands/`` (its arguments beside its code); this module sets the
environment the grader needs, builds the parser from them and runs one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

# The grader runs test cells that may use JAX (and the sandbox inherits XLA_FLAGS): 8 simulated
# CPU devices, as the book and the homework assume. Set before anything can import jax; a value
# the instructor set wins.
JAX_ENV_DEFAULTS = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
for _key, _value in JAX_ENV_DEFAULTS.items():
    os.environ.setdefault(_key, _value)

from .commands import (collect, due, export, feedback, generate, grade, keys, override,  # noqa: E402
                       report, validate, variants)
from .commands.common import UsageError  # noqa: E402
from .commands.grade import render_grade_summary  # noqa: E402,F401  (kept where tests and tools read it)
from .course import CourseError, ensure_tools_on_path  # noqa: E402

EPILOG = """\
the instructor's loop (README "Teaching with it" walks a Canvas and a Moodle course through it):
  python -m autograder generate                      # solutions/ -> exercises/ (commit these)
  python -m autograder keys --roster canvas_gradebook_export.csv -o keys.csv   # or Moodle's participants.csv
  python -m autograder generate hw1-rooflines --roster roster.csv   # or: one notebook per student
  python -m autograder collect submissions.zip -a hw1-rooflines     # Moodle: --worksheet worksheet.csv
  python -m autograder due -a hw1-rooflines --date "2026-02-01 23:59 UTC" --per-day 10 --zero-after 7
  python -m autograder grade -a hw1-rooflines --workers 4           # again after a resubmission
  python -m autograder export -a hw1-rooflines --format canvas --lms-assignment-id 123456   # or moodle, csv
  python -m autograder feedback -a hw1-rooflines     # after the due date: --release-solutions
  python -m autograder report -a hw1-rooflines       # item analysis: report-<A>.html and .csv
  python -m autograder override -a hw1-rooflines -s STUDENT --part hw1-q5 --points 1 --reason "..."
a student, before submitting:
  python -m autograder validate exercises/hw1-rooflines/hw1-rooflines.ipynb

The course directory (nbgrader's layout: source/, release/, submitted/, autograded/,
feedback/, gradebook.db) is --course, else $SCALEBOOK_COURSE, else autograder/course/; only
keys, collect, variants and generate --roster create it. The gradebook is SQLite in the course
directory unless the first --db (or $SCALEBOOK_DB) gives an SQLAlchemy URL
(postgresql://user@host/db): the course keeps it and refuses another. Design: autograder/DESIGN.md.

exit status: 0 done; 1 done, but something needs your attention (exercises/ out of date,
questions not answered, duplicate or refused files); 2 usage or configuration error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Generate, validate, collect, grade and give feedback on the scalebook homework (nbgrader).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (generate.add_generate, keys.add_keys, variants.add_variants, validate.add_validate,
                collect.add_collect, grade.add_grade, due.add_due, override.add_override, export.add_export,
                feedback.add_feedback, report.add_report, add_demo):
        add(sub)  # each command's arguments are declared beside its code
    return parser


def add_demo(sub) -> None:
    """The ``demo`` command's arguments."""
    p = sub.add_parser(
        "demo", help="run the whole loop on the sample submissions (make grade-demo)",
        description="Build the sample submissions of tests/submissions/ into a temporary course, collect, "
                    "grade, export and write feedback, then print the grade table.",
    )
    p.add_argument("--keep", metavar="DIR", help="build the demo course in DIR and keep it")
    p.add_argument("--workers", type=int, metavar="N", help="as for grade")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(main, workdir=Path(args.keep) if args.keep else None, workers=args.workers)
    return 0


def exit_with(status: int) -> NoReturn:
    """Exit with ``status``, as ``python -m autograder`` does after every command.

    The interpreter's own garbage collections at exit walk every object still alive, several
    times, while the modules are torn down: after grading a class, 117,000 objects of 1,000
    modules. So: every open file object is flushed, one collection finalizes what the command
    let go of, and ``gc.freeze()`` keeps what is left out of those last collections. Exit after
    grading 24 notebooks: 0.13-0.145 s before, 0.086-0.091 s with this, of a 1.3 s run.
    Nothing buffered is lost, even where Python alone would lose it (a file in a reference
    cycle that only a collection finalizes)."""
    import gc
    import io

    for obj in gc.get_objects():
        if issubclass(type(obj), io.IOBase):  # type(), not isinstance(): no proxy's __class__
            try:
                if not obj.closed:
                    obj.flush()
            except Exception:  # a pipe or socket whose other end is gone
                pass
    gc.collect()
    gc.freeze()
    sys.exit(status)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    ensure_tools_on_path()
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return status
    except BrokenPipeError:  # `... | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (UsageError, CourseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 -- a clean message for known library failures
        from sqlalchemy.exc import ArgumentError, OperationalError

        from .collect import CollectError

        if isinstance(exc, CollectError):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if isinstance(exc, (ArgumentError, OperationalError)):
            print(f"error: cannot use the gradebook database: {exc}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

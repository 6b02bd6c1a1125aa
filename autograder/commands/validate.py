"""``validate``: a student checks their notebook's form before submitting it."""

from __future__ import annotations

from pathlib import Path

from .common import UsageError


def add_validate(sub) -> None:
    """The ``validate`` command's arguments."""
    p = sub.add_parser(
        "validate", help="check a notebook before submitting it (students)",
        description="Run your notebook top to bottom and say, for each graded question, whether it is "
                    "answered in the right form. It runs only the checks you can see, so it never tells "
                    "whether an answer is right. Exit 0 when every question is answered.",
    )
    p.add_argument("notebook", metavar="NOTEBOOK", help="your .ipynb file")
    p.add_argument("--timeout", type=float, default=120, metavar="S",
                   help="stop a cell that runs longer than S seconds (default 120)")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    from ..validate import main

    if not Path(args.notebook).is_file():
        raise UsageError(f"{args.notebook}: no such file")
    return main(args.notebook, timeout=args.timeout)

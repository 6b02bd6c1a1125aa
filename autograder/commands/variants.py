"""``variants``: per-student numbers on or off for the course."""

from __future__ import annotations

from .common import course_options, course_of


def add_variants(sub) -> None:
    """The ``variants`` command's arguments."""
    p = sub.add_parser(
        "variants", help="turn per-student numbers on or off for the course, or show which",
        description="With --on (the default for a new course) each student answers their own numbers, "
                    "drawn from their homework key; with --off everyone answers the book's numbers and "
                    "the notebooks ask for no key. Run generate/collect after changing it, before "
                    "handing notebooks out.",
    )
    course_options(p, assignment=False)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--on", dest="on", action="store_true", default=None)
    group.add_argument("--off", dest="on", action="store_false")
    p.set_defaults(func=cmd_variants)


def cmd_variants(args) -> int:
    from ..course import set_variants_enabled, variants_enabled

    course = course_of(args, create=True)
    if args.on is not None:
        set_variants_enabled(course, args.on)
    on = variants_enabled(course)
    print(f"per-student numbers are {'on' if on else 'off'} in {course.root}"
          + ("" if on else ": everyone answers the book's numbers"))
    return 0

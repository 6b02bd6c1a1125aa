"""The nbgrader settings the autograder uses, in one place.

``nbgrader_config(course)`` returns them as a traitlets ``Config`` for the nbgrader classes the
autograder drives directly (``GenerateAssignment``). ``write_course_config(course)`` also writes
them as ``<course>/nbgrader_config.py`` so that nbgrader's own command line and formgrader,
started from the course directory, see the same course root and gradebook.
"""

from __future__ import annotations

from pathlib import Path

from traitlets.config import Config

from .course import IGNORED_NAMES, Course

# Stubs that replace ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` in the student version
# (nbgrader's defaults, written out so that a change of nbgrader default cannot silently
# change the committed exercises).
CODE_STUB = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
TEXT_STUB = "YOUR ANSWER HERE"


def nbgrader_config(course: Course) -> Config:
    root = str(Path(course.root).resolve())
    return Config(
        {
            "CourseDirectory": {
                "root": root,
                "db_url": course.gradebook_url,
                "ignore": list(IGNORED_NAMES),
            },
            "ClearSolutions": {"code_stub": dict(CODE_STUB), "text_stub": TEXT_STUB, "enforce_metadata": True},
        }
    )


def write_course_config(course: Course) -> Path:
    """Write ``<course>/nbgrader_config.py`` (for ``nbgrader`` run by hand in the course)."""
    path = Path(course.root) / "nbgrader_config.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `python -m autograder`; the settings autograder/nbgrader_config.py uses.",
        "c = get_config()  # noqa: F821",
        f"c.CourseDirectory.root = {str(Path(course.root).resolve())!r}",
        # A database URL given with --db may hold a password: only the default SQLite one is written.
        f"c.CourseDirectory.db_url = {course.gradebook_url!r}" if not course.db_url else "",
        f"c.CourseDirectory.ignore = {list(IGNORED_NAMES)!r}",
        f"c.ClearSolutions.code_stub = {dict(CODE_STUB)!r}",
        f"c.ClearSolutions.text_stub = {TEXT_STUB!r}",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path

"""The nbgrader settings the autograder uses, in one place.

``nbgrader_config(root, db_url)`` returns them as a traitlets ``Config`` for the nbgrader
classes the autograder drives directly (``GenerateAssignment``). ``write_course_config(root,
db_url)`` also writes them as ``<root>/nbgrader_config.py`` so that nbgrader's own command line
and formgrader, started from the course directory, see the same course root and gradebook.

This module depends on nothing else in the package (``course.py`` builds on it).
"""

from __future__ import annotations

from pathlib import Path

from traitlets.config import Config

# Files that never belong to an assignment (editor and OS litter): nbgrader's
# ``CourseDirectory.ignore``, and what the autograder skips when it copies a folder.
IGNORED_NAMES = (".ipynb_checkpoints", "__pycache__", "*.pyc", ".DS_Store", "__MACOSX", "Thumbs.db")

# The gradebook's course: every assignment row refers to a row of nbgrader's ``course`` table by
# this id. nbgrader's ``CourseDirectory.course_id`` defaults to '', for which its ``Gradebook``
# creates no course row, so an assignment created through a CourseDirectory would refer to a
# course that does not exist: a foreign-key violation that SQLite (which does not enforce
# foreign keys) lets pass and PostgreSQL refuses. Every Gradebook and CourseDirectory the
# autograder makes uses this id (``default_course``, the default of nbgrader's ``Gradebook``).
COURSE_ID = "default_course"

# Stubs that replace ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` in the student version
# (nbgrader's defaults, written out so that a change of nbgrader default cannot silently
# change the committed exercises).
CODE_STUB = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
TEXT_STUB = "YOUR ANSWER HERE"


def nbgrader_config(root: Path, db_url: str) -> Config:
    """The settings for the course at ``root`` whose gradebook is the SQLAlchemy URL ``db_url``."""
    return Config(
        {
            "CourseDirectory": {
                "root": str(Path(root).resolve()),
                "db_url": db_url,
                "course_id": COURSE_ID,
                "ignore": list(IGNORED_NAMES),
            },
            "ClearSolutions": {"code_stub": dict(CODE_STUB), "text_stub": TEXT_STUB, "enforce_metadata": True},
        }
    )


def write_course_config(root: Path, db_url: str, *, write_db_url: bool = True,
                        url_file: Path | None = None) -> Path:
    """Write ``<root>/nbgrader_config.py`` (for ``nbgrader`` and formgrader run in the course).

    ``url_file``: the course's ``gradebook.url`` (mode 0600), which the config reads when
    nbgrader loads it, so formgrader opens the course's own gradebook without its password
    being copied into this plain-text file. ``write_db_url=False`` and no ``url_file`` leave
    the URL out."""
    path = Path(root) / "nbgrader_config.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `python -m autograder`; the settings autograder/nbgrader_config.py uses.",
        "c = get_config()  # noqa: F821",
        f"c.CourseDirectory.root = {str(Path(root).resolve())!r}",
        (f"c.CourseDirectory.db_url = open({str(Path(url_file).resolve())!r}).read().strip()" if url_file
         else f"c.CourseDirectory.db_url = {db_url!r}" if write_db_url else ""),
        f"c.CourseDirectory.course_id = {COURSE_ID!r}",
        f"c.CourseDirectory.ignore = {list(IGNORED_NAMES)!r}",
        f"c.ClearSolutions.code_stub = {dict(CODE_STUB)!r}",
        f"c.ClearSolutions.text_stub = {TEXT_STUB!r}",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def gradebook_version_in_process() -> None:
    """Make nbgrader read its gradebook schema's version in this process.

    A ``Gradebook`` that creates a database records the newest of nbgrader's migrations
    (``alembic_version``), and nbgrader asks for it by running the ``alembic heads`` command:
    a new Python that imports alembic, SQLAlchemy and the migrations, 3.1 to 3.3 s of CPU on a
    2-core machine, for every course, every scratch gradebook and every generation. The answer
    is a constant of the installed nbgrader; :func:`alembic_head` reads it from the same
    migration scripts with alembic's own API, in this process, in milliseconds. Idempotent;
    call it before nbgrader makes a gradebook."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


def alembic_head() -> str:
    """The revision ``alembic heads`` prints first for nbgrader's migrations (its schema's
    newest version, e.g. ``e43177bfe90b`` for nbgrader 0.9)."""
    from alembic.config import Config as AlembicConfig
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = AlembicConfig()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_heads()[0]

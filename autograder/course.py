"""An nbgrader course directory and where each kind of file lives in it.

Besides :class:`Course` (the layout), this module knows how to *prepare* a course for an
assignment: copy the instructor's source notebook from ``solutions/`` into the course, run
nbgrader's ``generate_assignment`` there (which writes ``release/`` and records the
assignment's notebooks, grade cells and checksums in the gradebook) and, for ``generate``,
compare or copy the release into ``exercises/``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import filecmp
import json
import logging
import os
import re
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from scalebook.variants import VariantSpec, default_variant, fill_placeholders

from .nbgrader_config import (COURSE_ID, IGNORED_NAMES, gradebook_version_in_process, nbgrader_config,
                              write_course_config)
from .notebook import is_identity_cell, read_cells
from .notebook import text as cell_text

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
EXERCISES = REPO / "exercises"
# the course's homework, in order (solutions/<a>/<a>.ipynb; tests check the two agree)
ASSIGNMENTS = ("hw1-rooflines", "hw2-hardware", "hw3-sharding", "hw4-parallelism",
               "hw5-transformers", "hw6-inference", "hw7-moe-long-context",
               "hw8-serving-systems")
# Where the instructor's course lives unless --course or $SCALEBOOK_COURSE says otherwise
# (ignored by git: it holds students' work and grades).
DEFAULT_COURSE_ROOT = REPO / "autograder" / "course"


def ensure_tools_on_path() -> None:
    """Put this interpreter's ``bin/`` first on PATH.

    nbgrader runs its tools as commands found through PATH (``alembic``: its ``Gradebook``
    does when it creates a database, unless :func:`.nbgrader_config.gradebook_version_in_process`
    has been called; its migrations do); with ``.venv/bin/python -m autograder`` (venv not
    activated) they would not be found.
    """
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + (os.pathsep + path if path else "")


class CourseError(Exception):
    """A problem the instructor must fix (unknown assignment, missing notebook, nbgrader error)."""


@contextlib.contextmanager
def open_gradebook(url: str) -> Iterator[Gradebook]:
    """``with open_gradebook(url) as gb:`` -- nbgrader's Gradebook at the SQLAlchemy ``url``,
    closed afterwards."""
    from nbgrader.api import Gradebook

    ensure_tools_on_path()
    gradebook_version_in_process()
    try:
        gb = Gradebook(url, course_id=COURSE_ID)
    except ModuleNotFoundError as exc:  # e.g. postgresql:// without its driver
        scheme = url.split(":", 1)[0]
        raise CourseError(
            f"the gradebook URL needs the Python package {exc.name!r} (the {scheme} driver), which is "
            f"not installed: pip install it into this environment, e.g. `pip install 'psycopg[binary]'`"
        ) from exc
    with gb:
        yield gb


@dataclass(frozen=True)
class Where:
    """One submission's files: the folder it was handed in (``Course.submitted``), where that
    folder must resolve to (no link out of ``submitted/``), the notebook's name, and its
    ``autograded`` folder."""

    submitted: Path
    resolved: Path
    notebook: str
    autograded: Path


@dataclass(frozen=True)
class GradingFiles:
    """What grading one assignment needs of the course, as plain values, read once
    (:meth:`Course.grading_files`) and handed to each stage, so that no stage reaches back
    into the course: the instructor's and the release notebook, the gradebook, every
    submission's files, and the secret that draws per-student numbers (None: everyone gets
    the published numbers)."""

    assignment: str
    root: Path                      # the course folder: no sandbox may see it
    source_notebook: Path
    release_notebook: Path
    gradebook_url: str
    submissions: dict[str, Where]   # every student with a submission folder, sorted
    secret: bytes | None = dataclasses.field(default=None, repr=False)


@dataclass(frozen=True)
class Course:
    """A standard nbgrader course directory rooted at ``root``.

    Layout (nbgrader's): ``source/<assignment>/`` instructor notebooks with solutions and hidden
    tests; ``release/<assignment>/`` student versions; ``submitted/<student>/<assignment>/``;
    ``autograded/<student>/<assignment>/``; ``feedback/<student>/<assignment>/``. The gradebook
    is SQLite at ``root/gradebook.db`` unless ``db_url`` names another SQLAlchemy database.
    """

    root: Path
    db_url: str | None = None

    @property
    def gradebook_url(self) -> str:
        return self.db_url or f"sqlite:///{(Path(self.root) / 'gradebook.db').resolve()}"

    def source(self, assignment: str) -> Path:
        return Path(self.root) / "source" / assignment

    def release(self, assignment: str) -> Path:
        return Path(self.root) / "release" / assignment

    def submitted(self, student: str, assignment: str) -> Path:
        return Path(self.root) / "submitted" / student / assignment

    def autograded(self, student: str, assignment: str) -> Path:
        return Path(self.root) / "autograded" / student / assignment

    def feedback(self, student: str, assignment: str) -> Path:
        return Path(self.root) / "feedback" / student / assignment

    # --- additions (not part of nbgrader's layout) -------------------------------------------

    def where(self, student: str, assignment: str) -> Where:
        """``student``'s submission of ``assignment``: its folders and notebook name."""
        base = (Path(self.root) / "submitted").resolve()
        return Where(self.submitted(student, assignment), base / student / assignment,
                     f"{assignment}.ipynb", self.autograded(student, assignment))

    def grading_files(self, assignment: str) -> GradingFiles:
        """What grading ``assignment`` needs of this course, read once as plain values (see
        :class:`GradingFiles`). The secret is read (made on first use) only for a homework
        with per-student numbers, in a course that gives them."""
        from scalebook.homework import spec_for  # late: its 7 homeworks take 0.4 s to import

        secret = variants_secret(self) if spec_for(assignment) is not None else None
        name = f"{assignment}.ipynb"
        return GradingFiles(assignment, Path(self.root), self.source(assignment) / name,
                            self.release(assignment) / name, self.gradebook_url,
                            {s: self.where(s, assignment) for s in self.submitted_students(assignment)},
                            secret)

    def submitted_students(self, assignment: str) -> list[str]:
        """Students with a ``submitted/<student>/<assignment>/`` folder, sorted (dot-names
        skipped)."""
        base = Path(self.root) / "submitted"
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir()
                      if not p.name.startswith(".") and (p / assignment).is_dir())

    def coursedir(self, assignment: str = ""):
        """nbgrader's ``CourseDirectory`` for this course (and optionally one assignment)."""
        from nbgrader.coursedir import CourseDirectory

        cd = CourseDirectory(root=str(Path(self.root).resolve()), db_url=self.gradebook_url,
                             course_id=COURSE_ID)
        cd.ignore = list(IGNORED_NAMES)
        if assignment:
            cd.assignment_id = assignment
        return cd

    def gradebook(self) -> contextlib.AbstractContextManager[Gradebook]:
        """``with course.gradebook() as gb:`` -- nbgrader's Gradebook, closed afterwards."""
        return open_gradebook(self.gradebook_url)

    def is_prepared(self, assignment: str, solutions: Path = SOLUTIONS) -> bool:
        """Whether ``source/`` matches ``solutions/`` and the gradebook knows the assignment."""
        src, release = solutions / assignment, self.release(assignment)
        render = self._render(assignment)
        if not release.is_dir() or not _same_tree(src, self.source(assignment), render):
            return False
        if render is not None and not _same_tree(src, self.templates(assignment)):
            return False
        from nbgrader.api import MissingEntry

        try:
            with self.gradebook() as gb:
                recorded = {nb.name for nb in gb.find_assignment(assignment).notebooks}
        except MissingEntry:
            return False
        return recorded == {p.stem for p in src.glob("*.ipynb")}

    def templates(self, assignment: str) -> Path:
        """The instructor's notebooks of a homework with per-student numbers, as written (not
        in nbgrader's layout): what a roster student's own problem text is filled from."""
        return Path(self.root) / "variants" / assignment

    def _render(self, assignment: str):
        """notebook -> the notebook as this course's class gets it (its ``{{...}}``
        placeholders and identity cell filled in: :func:`render_source`), or None when the
        homework has no per-student numbers."""
        from scalebook.homework import spec_for  # late: its 7 homeworks take 0.4 s to import
        spec = spec_for(assignment)
        if spec is None:
            return None
        on = variants_enabled(self)
        return lambda nb: render_source(nb, spec, variants_on=on)

    def prepare(self, assignment: str, *, solutions: Path = SOLUTIONS, force: bool = False) -> Path:
        """Make the course ready to collect and grade ``assignment``; return its release folder.

        Copies ``solutions/<assignment>/`` to ``source/<assignment>/``, fills in the problem text
        for the class (a homework with per-student numbers: :func:`render_source`), and runs
        nbgrader's ``generate_assignment`` in the course (release folder + gradebook records).
        Does nothing when that is already up to date, unless ``force``.
        """
        check_assignment(assignment, solutions)
        if not force and self.is_prepared(assignment, solutions):
            return self.release(assignment)
        source = self.source(assignment)
        if source.exists():
            _make_writable(source)
            shutil.rmtree(source)
        shutil.copytree(solutions / assignment, source, ignore=shutil.ignore_patterns(*IGNORED_NAMES))
        render = self._render(assignment)
        if render is not None:  # the text as written, {{placeholders}} and all: roster notebooks
            templates = self.templates(assignment)
            if templates.exists():
                shutil.rmtree(templates)
            shutil.copytree(source, templates)
        for path in sorted(source.glob("*.ipynb")) if render is not None else []:
            path.write_text(json.dumps(render(json.loads(path.read_text("utf-8"))), indent=1,
                                       ensure_ascii=False) + "\n", "utf-8")
        run_generate_assignment(self, assignment)
        # a URL given with --db may hold a password: nbgrader_config.py reads it from gradebook.url
        stored = Path(self.root) / DB_FILE
        write_course_config(self.root, self.gradebook_url, url_file=stored if self.db_url and stored.is_file() else None,
                            write_db_url=not self.db_url)
        return self.release(assignment)


# --- per-student numbers: the course's settings and its class notebook ---------------------------
# (autograder/variants.py has the rest: keys, roster notebooks, who handed in what)

SECRET_FILE = "variants.secret"
SETTINGS_FILE = "variants.json"


def read_json(path: Path, remedy: str):
    """The JSON in ``path`` (None when there is no such file); a file that is not JSON is a
    :class:`CourseError` that says ``remedy``."""
    if not Path(path).is_file():
        return None
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except ValueError as exc:
        raise CourseError(f"{path} is not valid JSON ({exc}): {remedy}") from None


def variants_enabled(course: "Course") -> bool:
    """Whether the course gives per-student numbers (the default) or everyone the same."""
    path = Path(course.root) / SETTINGS_FILE
    data = read_json(path, 'write {"enabled": true} or false')
    if data is None:
        return True
    value = data.get("enabled") if isinstance(data, dict) else None
    if not isinstance(value, bool):
        raise CourseError(f"{path} must be {{\"enabled\": true}} or {{\"enabled\": false}}")
    return value


def variants_secret(course: "Course") -> bytes | None:
    """The secret that draws the course's per-student numbers, or None when they are off."""
    return course_secret(course) if variants_enabled(course) else None


def set_variants_enabled(course: "Course", on: bool) -> None:
    Path(course.root).mkdir(parents=True, exist_ok=True)
    (Path(course.root) / SETTINGS_FILE).write_text(json.dumps({"enabled": bool(on)}) + "\n", "utf-8")


def course_secret(course: "Course", *, create: bool = True) -> bytes:
    """The course's secret; made (32 random bytes, mode 0600) on first use when ``create``."""
    path = Path(course.root) / SECRET_FILE
    if path.is_file():
        text = path.read_text("ascii").strip()
        try:
            secret = bytes.fromhex(text)
        except ValueError:
            secret = b""
        if len(secret) < 16:
            raise CourseError(f"{path} is damaged (not 32+ hex bytes): restore it from a backup; "
                              "a new secret would give every student new keys and numbers")
        return secret
    if not create:
        raise CourseError(f"the course has no {SECRET_FILE}: no keys were ever given out")
    Path(course.root).mkdir(parents=True, exist_ok=True)
    secret = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret.hex() + "\n")
    return secret


#: The first code cell of a homework with variants: what the student fills in.
IDENTITY_CELL = (
    "# Your id and homework key, from your course (the same key for every homework).\n"
    'STUDENT_ID = ""     # e.g. "jdoe42"\n'
    'HOMEWORK_KEY = ""   # e.g. "ABCD-EFGH-J"\n'
)
#: The same cell in a course that gives everyone the published numbers.
NO_VARIANTS_CELL = (
    "# This course gives everyone the same numbers: nothing to fill in here.\n"
    'STUDENT_ID = ""\n'
    "HOMEWORK_KEY = None\n"
)


_YOUR_NUMBERS = re.compile(r"^\*\*Your numbers\.\*\*.*?\n\n", re.MULTILINE | re.DOTALL)


def render_source(nb: dict, spec: VariantSpec, *, variants_on: bool) -> dict:
    """The instructor's notebook as the class gets it: placeholders in the text filled with
    ``[label]`` (variants on) or the published values (off); the identity cell asks for a key
    only when variants are on. Returns a new notebook."""
    out = copy.deepcopy(nb)
    published = None if variants_on else default_variant(spec)
    for cell in out.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = cell_text(cell.get("source"))
            if not variants_on:  # nothing to enter: drop the title's "Your numbers." paragraph
                text = _YOUR_NUMBERS.sub("", text)
            cell["source"] = fill_placeholders(text, spec, published)
        elif is_identity_cell(cell):
            cell["source"] = IDENTITY_CELL if variants_on else NO_VARIANTS_CELL
    return out


DB_FILE = "gradebook.url"  # the course's gradebook URL, when it is not the default SQLite file


def default_course(root: str | os.PathLike | None = None, db_url: str | None = None, *,
                   create: bool = True) -> Course:
    """The course at ``root``, else ``$SCALEBOOK_COURSE``, else ``autograder/course``.

    **The course remembers its gradebook.** A URL given (``db_url``, else ``$SCALEBOOK_DB``) is
    written into ``<course>/gradebook.url`` (mode 0600: it may hold a password) the first time,
    and every later command without one uses it; a later command with another URL is refused,
    as is a first URL for a course that already grades into its own ``gradebook.db``.
    ``create=False``: the course directory must exist (a mistyped ``--course`` is an error,
    not a new, empty course)."""
    root = Path(root or os.environ.get("SCALEBOOK_COURSE") or DEFAULT_COURSE_ROOT).expanduser().resolve()
    given = db_url or os.environ.get("SCALEBOOK_DB") or None
    if not root.is_dir():
        if not create:
            raise CourseError(f"there is no course at {root} (check --course / $SCALEBOOK_COURSE): "
                              "`keys --roster` or `collect` starts one")
        root.mkdir(parents=True)
    if given and same_url(given, Course(root).gradebook_url):
        given = None  # the course's own SQLite gradebook, named
    stored_path = root / DB_FILE
    stored = stored_path.read_text("utf-8").strip() if stored_path.is_file() else None
    if stored and given and not same_url(stored, given):
        raise CourseError(f"the course {root} keeps its gradebook at {shown_url(stored)} ({stored_path}), not "
                          f"{shown_url(given)}: leave out --db and $SCALEBOOK_DB, or give that URL")
    if given and not stored:
        if (root / "gradebook.db").is_file():
            raise CourseError(f"the course {root} already grades into its SQLite gradebook {root / 'gradebook.db'}; "
                              f"refusing to split it with {shown_url(given)}: leave out --db (or start a new "
                              "course directory for that database)")
        fd = os.open(stored_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(given + "\n")
        write_course_config(root, given, url_file=stored_path)
    return Course(root, db_url=stored or given)


def same_url(a: str, b: str) -> bool:
    """Whether two SQLAlchemy URLs name the same database (spelling aside)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(a) == make_url(b)
    except Exception:  # noqa: BLE001 -- not URLs: compare as text
        return a.strip() == b.strip()


def shown_url(url: str) -> str:
    """The URL with its password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001
        return "(an unreadable URL)"


def available_assignments(solutions: Path = SOLUTIONS) -> list[str]:
    """Assignments that have a source notebook ``solutions/<a>/<a>.ipynb``."""
    if not solutions.is_dir():
        return []
    return sorted(p.name for p in solutions.iterdir() if (p / f"{p.name}.ipynb").is_file())


def check_assignment(assignment: str, solutions: Path = SOLUTIONS) -> None:
    """Raise :class:`CourseError` unless ``assignment`` has a source notebook."""
    if (solutions / assignment / f"{assignment}.ipynb").is_file():
        return
    known = available_assignments(solutions) or list(ASSIGNMENTS)
    raise CourseError(
        f"unknown assignment {assignment!r}: there is no {solutions.name}/{assignment}/{assignment}.ipynb"
        f" (assignments: {', '.join(known)})"
    )


def notebook_names(assignment: str, solutions: Path = SOLUTIONS) -> list[str]:
    """File names of the assignment's notebooks (``hw1-rooflines.ipynb``), sorted."""
    return sorted(p.name for p in (solutions / assignment).glob("*.ipynb"))


def run_generate_assignment(course: Course, assignment: str) -> Path:
    """nbgrader ``generate_assignment`` of ``course.source(a)`` into ``course.release(a)``.

    Also creates or updates the assignment in the course's gradebook. Raises
    :class:`CourseError` with nbgrader's log when nbgrader fails (say, a duplicate grade_id).
    """
    from nbgrader.converters import GenerateAssignment
    from traitlets.config import Config

    ensure_tools_on_path()
    gradebook_version_in_process()
    Path(course.root).mkdir(parents=True, exist_ok=True)
    config = nbgrader_config(course.root, course.gradebook_url)
    config.merge(Config({"GenerateAssignment": {"create_assignment": True, "force": True}}))
    log_stream = _LogCapture()
    app = GenerateAssignment(coursedir=course.coursedir(assignment), config=config)
    app.log = log_stream.logger
    release = course.release(assignment)
    if release.exists():
        _make_writable(release)  # nbgrader makes release files read-only (444)
    try:
        app.start()
    except Exception as exc:  # nbgrader raises NbGraderException after logging the cause
        raise CourseError(
            f"nbgrader generate_assignment failed for {assignment}: {exc}\n{log_stream.text()}"
        ) from exc
    if not release.is_dir():
        raise CourseError(f"nbgrader wrote no release for {assignment}\n{log_stream.text()}")
    _make_writable(release)
    return release


def generate_exercises(
    assignments: list[str], *, check: bool = False, solutions: Path = SOLUTIONS, exercises: Path = EXERCISES
) -> dict[str, list[str]]:
    """Regenerate ``exercises/<a>/`` from ``solutions/<a>/``; return the drift found per assignment.

    Runs nbgrader in a temporary course directory (the real course and its gradebook are not
    touched). With ``check`` nothing is written; the returned lists say which files are
    missing, extra or different. Without ``check`` ``exercises/<a>/`` is made identical to the
    release (stale files are removed) and the lists say what was changed.
    """
    drift: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="scalebook-generate-") as tmp:
        course = Course(Path(tmp))
        for assignment in assignments:
            release = course.prepare(assignment, solutions=solutions, force=True)
            target = exercises / assignment
            changes = compare_trees(release, target)
            drift[assignment] = changes
            if changes and not check:
                if target.exists():
                    shutil.rmtree(target)
                target.mkdir(parents=True)
                for path in sorted(_files(release)):
                    out = target / path
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes((release / path).read_bytes())
    return drift


def compare_trees(new: Path, old: Path) -> list[str]:
    """Human-readable differences between the files under ``new`` and under ``old``."""
    new_files, old_files = set(_files(new)), set(_files(old)) if old.is_dir() else set()
    changes = [f"missing: {old / p}" for p in sorted(new_files - old_files)]
    changes += [f"stale (not generated): {old / p}" for p in sorted(old_files - new_files)]
    for p in sorted(new_files & old_files):
        a, b = new / p, old / p
        if p.suffix == ".ipynb":
            why = notebook_difference(a, b)
            if why:
                changes.append(f"differs: {b} ({why})")
        elif a.read_bytes() != b.read_bytes():
            changes.append(f"differs: {b}")
    return changes


def notebook_difference(a: Path, b: Path) -> str | None:
    """Why two notebooks differ in anything but volatile fields, or None if they do not."""
    try:
        nb_a, nb_b = json.loads(a.read_text("utf-8")), json.loads(b.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return f"unreadable: {exc}"
    cells_a, cells_b = nb_a.get("cells", []), nb_b.get("cells", [])
    if len(cells_a) != len(cells_b):
        return f"{len(cells_b)} cells instead of {len(cells_a)}"
    for i, (ca, cb) in enumerate(zip(cells_a, cells_b)):
        for key in ("cell_type", "id", "source", "outputs"):
            if _text(ca.get(key)) != _text(cb.get(key)):
                return f"cell {i}: {key} differs"
        if ca.get("metadata", {}).get("nbgrader") != cb.get("metadata", {}).get("nbgrader"):
            return f"cell {i}: nbgrader metadata differs"
    for key in ("nbformat", "nbformat_minor"):
        if nb_a.get(key) != nb_b.get(key):
            return f"{key} differs"
    if nb_a.get("metadata", {}).get("kernelspec") != nb_b.get("metadata", {}).get("kernelspec"):
        return "kernelspec differs"
    return None


def _text(value):
    return "".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else value


def _files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    ignored = set(IGNORED_NAMES)
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not any(part in ignored or part.endswith(".pyc") for part in rel.parts):
            out.append(rel)
    return out


def _same_tree(a: Path, b: Path, render=None) -> bool:
    """Whether ``b`` holds ``a``'s files; with ``render``, ``b``'s notebooks are ``a``'s rendered."""
    files_a, files_b = set(_files(a)), set(_files(b))
    if files_a != files_b:
        return False
    for p in files_a:
        if render is not None and p.suffix == ".ipynb":
            try:
                if render(json.loads((a / p).read_text("utf-8"))) != json.loads((b / p).read_text("utf-8")):
                    return False
            except ValueError:
                return False
        elif not filecmp.cmp(a / p, b / p, shallow=False):
            return False
    return True


def _make_writable(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            with contextlib.suppress(OSError):
                path.chmod(path.stat().st_mode | 0o200)


class _LogCapture:
    """A private logger for an nbgrader app; keeps its messages to show on failure."""

    def __init__(self) -> None:
        import io

        self.stream = io.StringIO()
        self.logger = logging.getLogger(f"autograder.nbgrader.{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        handler = logging.StreamHandler(self.stream)
        handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
        self.logger.addHandler(handler)

    def text(self) -> str:
        return self.stream.getvalue()


# --- the grading record (statuses and messages; scores live in the gradebook) -------------

GRADING_RECORD = "grading.json"  # the engine (grading/grade.py) writes it beside each autograded notebook
DIGEST_FILE = "submission.sha256"  # ... and the graded notebook's SHA-256 (grading/plan.py: was it resubmitted?)


def load_report(course: Course, assignment: str) -> dict[str, dict]:
    """``{student: {status, scores, max_scores, messages, problems}}`` of the last grading.

    Read from ``autograded/<student>/<assignment>/grading.json``, the record the grading
    engine writes with each autograded notebook (the gradebook has no column for a status
    such as "timed out", a problem or a check's message). Unreadable records are skipped.
    """
    base = Path(course.root) / "autograded"
    out: dict[str, dict] = {}
    if not base.is_dir():
        return out
    for folder in sorted(base.iterdir()):
        path = folder / assignment / GRADING_RECORD
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out[folder.name] = data
    return out


def grade_ids(notebook: Path) -> list[tuple[str, float]]:
    """``(grade_id, points)`` of the autograder test cells of a notebook, in order."""
    nb = json.loads(Path(notebook).read_text("utf-8"))
    return [(c.grade_id, c.points) for c in read_cells(nb) if c.is_test and c.grade_id]

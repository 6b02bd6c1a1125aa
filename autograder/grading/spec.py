"""The instructor's notebook, read into a :class:`Spec`: what a submission is graded against.

:func:`load_spec` reads the instructor's *source* notebook (its tests, hidden checks included)
and the student *release* (the cells a student sees, with the nbgrader checksums a submission's
locked cells are compared against), and keeps, for a homework with per-student numbers, the
course's secret. It takes paths and the secret as plain values, from the caller
(``grade.grade_assignment``, ``grade.course_spec``), so the stages that judge a notebook never
reach back into the course. :meth:`Spec.numbers_for` draws the numbers one student is graded
on, once, into plain :class:`StudentNumbers` that the check is handed: the check never calls
the solver's drawing itself. Only the instructor's files are read here; nothing here runs
student code.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

from scalebook.variants import Variant, VariantSpec, default_variant, draw, student_key

from ..notebook import Cell, checksum, read_cells, strip_hidden_tests
from .names import answer_names

SELF_CHECK_STUDENT = "instructor-self-check"


class SpecError(Exception):
    """The instructor's files are missing or inconsistent (not the student's fault)."""


@dataclasses.dataclass(frozen=True)
class TestCell:
    grade_id: str
    points: float
    source: str            # the instructor's, hidden tests included: what is executed
    release_source: str    # what the student sees
    checksum: str          # nbgrader checksum of the release cell
    names: tuple[str, ...]  # names it reads that it does not bind itself: the answers

    @functools.cached_property
    def code(self):
        """``source`` compiled, once per spec (a SyntaxError is raised again at each use)."""
        return compile(self.source, f"<test {self.grade_id}>", "exec")


@dataclasses.dataclass(frozen=True)
class LockedCell:
    grade_id: str
    cell_type: str
    source: str
    checksum: str


@dataclasses.dataclass(frozen=True)
class StudentNumbers:
    """The numbers one student is graded on, drawn once (:meth:`Spec.numbers_for`): ``variant``
    (what the hidden checks see as ``VARIANT``), ``drawn`` (its drawn inputs, kept in
    ``grading.json``) and ``key`` (the student's homework key; None when the course gives
    everyone the published numbers)."""

    variant: Variant
    drawn: dict
    key: str | None


@dataclasses.dataclass
class Spec:
    assignment: str
    notebook: str                       # file name, "<assignment>.ipynb"
    tests: list[TestCell]
    locked: dict[str, LockedCell]       # read-only cells that are not tests
    release: dict                       # the release notebook (JSON)
    source_nb: dict
    release_cells: tuple[Cell, ...]     # the two notebooks' cells, read once (notebook.read_cells)
    source_cells: tuple[Cell, ...]
    variants: VariantSpec | None = None  # what the homework varies (None: same for everyone)
    secret: bytes | None = dataclasses.field(default=None, repr=False)  # the course's

    @property
    def variants_on(self) -> bool:
        """Whether the course gives per-student numbers: it has a secret to draw them with."""
        return self.secret is not None

    def key_for(self, student: str) -> str | None:
        """``student``'s homework key (None: no per-student numbers in this course)."""
        if self.variants is None or self.secret is None:
            return None
        return student_key(self.secret, student)

    def numbers_for(self, student: str) -> StudentNumbers | None:
        """The numbers ``student`` is graded on, drawn with their key, or the published ones
        when the course gives everyone those (None: the homework has no variants)."""
        if self.variants is None:
            return None
        key = self.key_for(student)
        variant = default_variant(self.variants) if key is None else draw(self.variants, key)
        return StudentNumbers(variant, variant.drawn(), key)

    @functools.cached_property
    def release_by_gid(self) -> dict[str, dict]:
        """grade_id -> the release's first cell of that grade_id (JSON, not to be modified)."""
        raw = self.release.get("cells", [])
        return {c.grade_id: raw[c.index] for c in reversed(self.release_cells) if c.grade_id}

    @property
    def max_scores(self) -> dict[str, float]:
        return {t.grade_id: t.points for t in self.tests}

    def test(self, grade_id: str) -> TestCell:
        return next(t for t in self.tests if t.grade_id == grade_id)


def load_spec(assignment: str, src_path: Path, rel_path: Path, secret: bytes | None = None) -> Spec:
    """The assignment's tests (from the instructor's notebook ``src_path``) and locked cells
    (from the release ``rel_path``), what the homework varies, if anything, and the course's
    ``secret`` that draws per-student numbers (None: the course gives everyone the published
    numbers)."""
    name = f"{assignment}.ipynb"
    if not src_path.is_file():
        raise SpecError(f"no instructor notebook {src_path}: prepare the assignment first")
    if not rel_path.is_file():
        raise SpecError(f"no release notebook {rel_path}: run generate_assignment first")
    source_nb = json.loads(src_path.read_text("utf-8"))
    release = json.loads(rel_path.read_text("utf-8"))
    raw_release = release.get("cells", [])
    release_cells, source_cells = read_cells(release), read_cells(source_nb)
    rel_cells = {c.grade_id: c for c in release_cells if c.grade_id}
    tests, locked = [], {}
    for cell in source_cells:
        gid = cell.grade_id
        if not gid:
            continue
        if cell.is_test:
            rel = rel_cells.get(gid)
            if rel is None:
                raise SpecError(f"test cell {gid} is in {src_path} but not in {rel_path}: regenerate")
            if strip_hidden_tests(cell.source).strip() != rel.source.strip():
                raise SpecError(f"test cell {gid} differs between source and release: regenerate")
            try:
                names = answer_names(cell.source)
            except SyntaxError as exc:
                raise SpecError(f"test cell {gid} is not valid Python: {exc}") from None
            tests.append(TestCell(gid, cell.points, cell.source, rel.source,
                                  checksum(raw_release[rel.index]), names))
        elif cell.graded:
            raise SpecError(f"{gid}: only autograded code test cells are supported (found a "
                            f"graded {cell.cell_type} cell)")
    for gid, rel in rel_cells.items():
        if rel.is_read_only:
            locked[gid] = LockedCell(gid, rel.cell_type, rel.source, checksum(raw_release[rel.index]))
    if not tests:
        raise SpecError(f"{src_path} has no autograder test cells")
    from scalebook.homework import spec_for  # late: it imports NumPy and the homework's solver
    return Spec(assignment, name, tests, locked, release, source_nb, release_cells, source_cells,
                spec_for(assignment), secret)

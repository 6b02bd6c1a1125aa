"""Whose numbers a submission holds: notebooks not the student's own, and possible copying.

On a homework with per-student numbers every student answers their own numbers, so two kinds
of trouble become visible, and ``report`` lists both for the instructor:

- **Not the student's own notebook.** The grader compared the id and key each notebook holds
  with the student it was collected from (``grading.json``'s ``variant.problem``; the
  submission is graded with the submitter's numbers and flagged in the gradebook).
- **Answers that fit a classmate's numbers.** A part the student lost whose recorded answer
  passes that part's check when it is run with *another* student's numbers. The candidates
  come from an index of the answers that earned full credit, by answer value (within the
  check's 5%); each candidate is then confirmed by running the instructor's check on the
  student's recorded answer with the classmate's ``VARIANT``, in this process, once per part
  and distinct set of numbers (it runs no student code). So a copy is found when the classmate
  whose numbers it fits answered that part right, which is the case the issue asks about: a
  student who hands in a friend's correct work.

**The book's sample numbers are no one's.** A student who left their id and key empty sees
the published numbers and answers them; where a classmate drew the published value, that
answer would also fit the classmate. So a lost part whose answer passes its check with the
published numbers (``default_variant``) is counted for the book, and a student whose lost parts
fit the book at least as often as any one classmate is not listed (the grader has already
flagged their notebook as not keyed).

A match on one part can be chance (two students' numbers can give the same answer to a part,
and a slip can land on a classmate's answer); a student is listed as **possible copying** when
the answers of at least :data:`MIN_PARTS` parts they lost fit the numbers of one classmate, and
at least half of the parts they lost fit someone's. It is a lead for the instructor, not proof.

Pure functions of the recorded results and the assignment's spec (:func:`find_copies`).
"""

from __future__ import annotations

import ast
import bisect
from collections import defaultdict
from dataclasses import dataclass

from scalebook.variants import VariantSpec, default_variant, variant_from

from .grading.check import run_test
from .grading.spec import Spec
from .notebook import VARIANT_NAME

MIN_PARTS = 2       # lost parts that must fit one classmate's numbers to list a student
TOLERANCE = 0.05    # the checks' usual tolerance: the index's window around an answer


@dataclass(frozen=True)
class Recorded:
    """What the report knows of one student: their numbers, answers and scores per part."""

    student: str
    numbers: dict                    # drawn parameters graded against ({} if none recorded)
    answers: dict[str, dict]         # grade_id -> {answer name: value}
    scores: dict[str, float]
    max_scores: dict[str, float]
    problem: str | None = None       # the grader's note when the notebook was not their own


@dataclass(frozen=True)
class Suspect:
    student: str
    lost: int                             # parts the student did not get full credit on
    fitting: dict[str, tuple[str, ...]]   # grade_id -> classmates whose numbers the answer fits
    classmate: str                        # the classmate whose numbers the most parts fit
    classmate_parts: int

    @property
    def fitting_parts(self) -> int:
        return len(self.fitting)


def variant_keys(source: str, spec: VariantSpec) -> tuple[str, ...]:
    """The drawn parameters a test cell's check depends on: those of every problem whose
    ``VARIANT["qN_..."]`` it reads (all parameters if it uses ``VARIANT`` any other way)."""
    tree = ast.parse(source)
    uses = sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == VARIANT_NAME)
    keys = [node.slice.value for node in ast.walk(tree)
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == VARIANT_NAME and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)]
    if uses > len(keys):  # VARIANT passed whole, or indexed by a computed key
        return tuple(spec.parameters)
    problems = {key.split("_")[0] for key in keys}
    return tuple(name for name in spec.parameters if name.split("_")[0] in problems)


def _first_number(value) -> float | None:
    while isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def find_copies(spec: Spec, class_: list[Recorded]) -> list[Suspect]:
    """The students whose lost parts fit a classmate's numbers (see the module docstring)."""
    if spec.variants is None:
        return []
    own = {r.student: r for r in class_ if r.numbers}
    suspects_parts: dict[str, dict[str, set[str]]] = defaultdict(dict)
    book_parts: dict[str, int] = defaultdict(int)  # lost parts that fit the book's sample numbers
    sample = default_variant(spec.variants)
    published = sample.drawn()
    for test in spec.tests:
        gid = test.grade_id
        keys = variant_keys(test.source, spec.variants)
        if not keys or not test.names:
            continue
        first = test.names[0]
        index: list[tuple[float, str]] = []  # (answer value, student) of full-credit answers
        for r in own.values():
            if r.scores.get(gid, 0.0) >= r.max_scores.get(gid, 0.0) > 0:
                value = _first_number(r.answers.get(gid, {}).get(first))
                if value is not None:
                    index.append((value, r.student))
        index.sort()
        values = [v for v, _ in index]
        confirmed: dict[tuple, bool] = {}
        for r in own.values():
            if r.scores.get(gid, 0.0) >= r.max_scores.get(gid, 0.0):
                continue
            answers = r.answers.get(gid) or {}
            x = _first_number(answers.get(first))
            if x is None or any(isinstance(v, dict) for v in answers.values()):
                continue
            low, high = sorted((x / (1 + TOLERANCE), x * (1 + TOLERANCE)))
            mine = tuple(r.numbers.get(k) for k in keys)
            book_key = ("book", repr(sorted(answers.items())))
            if mine != tuple(published.get(k) for k in keys):
                if book_key not in confirmed:
                    confirmed[book_key] = run_test(
                        test, {n: {"value": v} for n, v in answers.items()}, sample)[0]
                if confirmed[book_key]:
                    book_parts[r.student] += 1
            fits = set()
            for _, other in index[bisect.bisect_left(values, low):bisect.bisect_right(values, high)]:
                theirs = tuple(own[other].numbers.get(k) for k in keys)
                if theirs == mine:
                    continue  # the same numbers for this part: not someone else's
                answer_key = (theirs, repr(sorted(answers.items())))
                if answer_key not in confirmed:
                    variant = variant_from(spec.variants, own[other].numbers)
                    passed, _ = run_test(test, {n: {"value": v} for n, v in answers.items()}, variant)
                    confirmed[answer_key] = passed
                if confirmed[answer_key]:
                    fits.add(other)
            if fits:
                suspects_parts[r.student][gid] = fits
    out = []
    for student, parts in sorted(suspects_parts.items()):
        r = own[student]
        lost = sum(1 for gid, top in r.max_scores.items() if r.scores.get(gid, 0.0) < top)
        tally: dict[str, int] = defaultdict(int)
        for classmates in parts.values():
            for c in classmates:
                tally[c] += 1
        classmate, count = max(sorted(tally.items()), key=lambda kv: kv[1])
        if book_parts[student] >= count:
            continue  # the answers fit the book's sample numbers at least as well: no one's
        if count >= MIN_PARTS and 2 * len(parts) >= lost:
            out.append(Suspect(student, lost, {g: tuple(sorted(c)) for g, c in parts.items()},
                               classmate, count))
    return out


def recorded_class(course, assignment: str, students: list[str]) -> list[Recorded]:
    """What each student's ``grading.json`` keeps (students without one are left out)."""
    from .grading.plan import load_result

    out = []
    for student in students:
        record = load_result(course, student, assignment)
        if record is None:
            continue
        variant = record.variant or {}
        answers = {gid: a for gid, a in (record.answers or {}).items() if isinstance(a, dict)}
        out.append(Recorded(student, dict(variant.get("numbers") or {}), answers, dict(record.scores),
                            dict(record.max_scores), variant.get("problem")))
    return out

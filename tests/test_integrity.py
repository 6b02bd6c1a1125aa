"""``report``'s "whose numbers" section at class scale (autograder/integrity.py).

A class of 2,000 is generated as the grader would have recorded it (gradebook rows and
grading.json): students with their own numbers and the reference answers to them, students with
slips, and students who handed in a classmate's answers (right for the classmate's numbers, not
for their own). The report must list exactly the copiers, each with a classmate whose numbers
their answers fit, and still take seconds.
"""

from __future__ import annotations

import random
import time

import pytest

from autograder.grading import check as checker
from autograder.grading.grade import course_spec
from autograder.grading.result import SubmissionResult
from autograder.course import Course
from autograder.integrity import Recorded, find_copies, variant_keys
from scalebook.homework import SPECS
from scalebook.variants import draw, student_key, variant_from
from test_variants import _cells, _solve
from gradecells import free_names, record_class

ASSIGNMENT = "hw1-rooflines"
SECRET = bytes.fromhex("c0ffee00" * 8)


def test_variant_keys_are_the_problems_a_check_reads():
    spec = SPECS[ASSIGNMENT]
    keys = variant_keys('_x = VARIANT["q7_B"] * VARIANT["q7_chip"]', spec)
    assert set(keys) == {n for n in spec.parameters if n.startswith("q7_")}
    assert variant_keys("f(VARIANT)", spec) == tuple(spec.parameters)  # passed whole: all of them
    assert variant_keys("x = 1", spec) == ()


def _templates(n: int) -> list[tuple[dict, dict]]:
    """``n`` students' (drawn numbers, reference answers by name)."""
    code, tests = _cells(ASSIGNMENT)
    names = set().union(*(free_names(t.source) for t in tests))
    out = []
    for i in range(n):
        student = f"t{i}"
        key = student_key(SECRET, student)
        out.append((draw(SPECS[ASSIGNMENT], key).drawn(), _solve(code, student, key, names, set())))
    return out


def _grade(spec, numbers: dict, answers: dict) -> tuple[dict, dict, dict]:
    """scores, messages and recorded answers of these answers checked against these numbers."""
    variant = variant_from(spec.variants, numbers)
    scores, messages, recorded = {}, {}, {}
    for t in spec.tests:
        values = {n: {"value": answers[n]} for n in t.names if n in answers}
        passed, message = checker.run_test(t, values, variant)
        scores[t.grade_id], messages[t.grade_id] = (t.points if passed else 0.0), message
        recorded[t.grade_id] = {n: answers[n] for n in t.names if n in answers}
    return scores, messages, recorded


def generate_class(course: Course, n: int, copiers: int, seed: int = 0):
    """Write ``n`` graded submissions: 80 template students' numbers shared round the class,
    every 7th student with two answers off by 2x (slips), and ``copiers`` students who handed in
    the answers of a template whose numbers differ from theirs. Returns {copier: source template}."""
    rng = random.Random(seed)
    course.prepare(ASSIGNMENT)
    spec = course_spec(course, ASSIGNMENT)
    templates = _templates(80)
    graded = {}  # (numbers index, answers index, slip) -> recorded pieces, computed once
    copied, results = {}, []
    copier_ids = set(rng.sample(range(n), copiers))
    for i in range(n):
        student = f"gen{i:05d}"
        mine = i % len(templates)
        source, slip = mine, i % 7 == 3 and i not in copier_ids
        if i in copier_ids:
            source = (mine + 1 + rng.randrange(len(templates) - 1)) % len(templates)
            copied[student] = source
        key = (mine, source, slip)
        if key not in graded:
            answers = dict(templates[source][1])
            if slip:
                for name in ("t_math", "intensity_dot"):
                    answers[name] = answers[name] * 2
            graded[key] = _grade(spec, templates[mine][0], answers)
        scores, messages, answers = graded[key]
        results.append(SubmissionResult(student, ASSIGNMENT, "graded", scores, dict(spec.max_scores),
                                        messages, [], answers, {"numbers": templates[mine][0], "problem": None}))
    record_class(course, spec, results)
    return copied, templates


@pytest.mark.slow
def test_report_finds_exactly_the_copiers_in_a_class_of_2000(tmp_path, capsys):
    from autograder.cli import main
    from autograder.report import read_integrity

    course = Course(tmp_path / "course")
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "variants.secret").write_text(SECRET.hex())
    t0 = time.perf_counter()
    copied, templates = generate_class(course, 2000, copiers=25)
    made = time.perf_counter() - t0
    start = time.perf_counter()
    integrity = read_integrity(course, ASSIGNMENT, [f"gen{i:05d}" for i in range(2000)])
    seconds = time.perf_counter() - start
    found = {s.student: s for s in integrity.suspects}
    assert set(found) == set(copied), (sorted(set(found) - set(copied)), sorted(set(copied) - set(found)))
    for student, source in copied.items():
        suspect = found[student]
        classmate = int(suspect.classmate[3:]) % len(templates)
        assert templates[classmate][0] == templates[source][0], student  # the numbers copied from
        assert suspect.classmate_parts >= 2
    assert integrity.not_own == ()
    start_cli = time.perf_counter()
    assert main(["report", "-a", ASSIGNMENT, "--course", str(course.root), "--output-dir",
                 str(tmp_path / "out")]) == 0
    whole = time.perf_counter() - start_cli
    with capsys.disabled():
        print(f"\nwhose numbers, 2000 students: {seconds:.2f} s; whole report {whole:.2f} s; "
              f"{len(found)} of {len(copied)} copiers found, no one else (generating took {made:.1f} s)")


def test_no_copying_is_found_where_everyone_has_the_same_numbers():
    spec_ = SPECS[ASSIGNMENT]
    numbers = draw(spec_, student_key(SECRET, "x")).drawn()
    class_ = [Recorded(f"s{i}", numbers, {}, {"g": 0.0}, {"g": 1.0}) for i in range(3)]

    class FakeSpec:
        variants = spec_
        tests = []
    assert find_copies(FakeSpec(), class_) == []


@pytest.mark.slow
def test_answers_to_the_books_sample_numbers_never_name_a_classmate(tmp_path):
    """A student who left the id empty answers the published numbers; a classmate who drew the
    published values (and answered right) must not be named as the source."""
    from scalebook.variants import default_variant

    course = Course(tmp_path / "course")
    course.prepare(ASSIGNMENT)
    spec = course_spec(course, ASSIGNMENT)
    code, tests = _cells(ASSIGNMENT)
    names = set().union(*(free_names(t.source) for t in tests))
    book_numbers = default_variant(SPECS[ASSIGNMENT]).drawn()
    book_answers = _solve(code, "", "", names, set())  # no key: the sample numbers
    (own_numbers, own_answers), (third_numbers, third_answers) = _templates(2)
    assert own_numbers != book_numbers
    class_ = []
    for student, numbers, answers in (("unkeyed", own_numbers, book_answers),
                                      ("drew_the_book", book_numbers, book_answers),
                                      ("copier", own_numbers, third_answers),
                                      ("source", third_numbers, third_answers)):
        scores, _, recorded = _grade(spec, numbers, answers)
        class_.append(Recorded(student, numbers, recorded, scores, dict(spec.max_scores)))
    lost = sum(1 for g, p in class_[0].scores.items() if p < spec.max_scores[g])
    assert lost >= 2  # the sample answers do lose parts on the student's own numbers
    found = {s.student: s.classmate for s in find_copies(spec, class_)}
    assert "unkeyed" not in found
    assert found.get("copier") == "source"  # a real copy is still found

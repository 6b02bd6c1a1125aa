"""The practice problems' contract, for every problem of every chapter and many draws: the
book's own numbers at seed 0, well-posed draws, the answer accepted, every accepted convention
accepted, every slip and pinned convention refused with its own hint and no other, a wrong
value refused; the problem text names every pinned convention; every worked problem of a
chapter has its practice problem."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scalebook.homework.parts import Distinct, _fill
from scalebook.practice import (CHAPTERS, PROBLEMS, check, draw, get_problem, parse_number, question,
                                solution, typeset_numbers)
from scalebook.variants import default_variant

ROOT = Path(__file__).resolve().parents[1]
SEEDS = range(20)
PER_CHAPTER = 10
ALL = sorted(PROBLEMS)


def _answers(problem, value_of):
    return {part.answer: repr(float(value_of(part))) for part in problem.parts}


def _worked_count(chapter: str) -> int:
    """The worked problems of the chapter's page: the answers folded in dropdowns in its
    "## Problems" section, before "### Think about it" (whose dropdowns are questions to think
    about, with no numbers to practise)."""
    text = (ROOT / "book" / f"{chapter.replace('_', '-')}.md").read_text()
    start = text.find("\n## Problems")
    end = text.find("\n### Think about it", start)
    if start < 0:
        return 0
    return len(re.findall(r"^:::+ ?\{dropdown\}", text[start:end if end > 0 else None], re.M))


def test_every_chapter_has_its_practice_set():
    short = {c: len(p) for c, p in CHAPTERS.items() if len(p) < PER_CHAPTER}
    assert not short, f"chapters with fewer than {PER_CHAPTER} practice problems: {short}"


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_worked_problem_can_be_practised(chapter):
    labels = sorted(p.worked for p in CHAPTERS[chapter] if p.worked)
    assert len(labels) == len(set(labels)), f"two practice problems repeat one worked problem: {labels}"
    assert len(labels) == _worked_count(chapter)
    assert all(p.chapter == chapter for p in CHAPTERS[chapter])


@pytest.mark.parametrize("problem_id", ALL)
def test_the_books_numbers_come_first_and_draws_are_deterministic(problem_id):
    problem = get_problem(problem_id)
    assert dict(draw(problem, 0)) == dict(default_variant(problem.spec))
    assert dict(draw(problem, 7)) == dict(draw(problem, 7))
    drawn = {tuple(sorted(draw(problem, s).drawn().items())) for s in range(1, 21)}
    assert len(drawn) > 1, "twenty seeds give the same numbers: nothing varies"


@pytest.mark.parametrize("problem_id", ALL)
def test_pinned_conventions_are_named_in_the_text(problem_id):
    problem = get_problem(problem_id)
    for part in problem.parts:
        for convention in part.pinned:
            assert convention.phrase in problem.text, (part.answer, convention.name)


@pytest.mark.parametrize("problem_id", ALL)
def test_right_answers_pass_and_each_slip_gets_its_own_hint(problem_id):
    problem = get_problem(problem_id)
    for seed in SEEDS:
        v = draw(problem, seed)
        text = question(problem, v)
        assert not re.search(r"\{[A-Za-z_]\w*(:[^}]*)?\}", text), f"an unfilled field: {text}"
        steps = problem.solution(v)
        assert steps and all(isinstance(s, str) and s for s in steps)
        results = check(problem, v, _answers(problem, lambda p: p.expected(v)))
        assert all(r.passed for r in results), (seed, results)
        for part in problem.parts:
            for convention in part.accepted:
                value = float(convention.value(v))
                if not math.isnan(value):
                    [result] = [r for r in check(problem, v, {part.answer: repr(value)})
                                if r.answer == part.answer]
                    assert result.passed, (seed, part.answer, convention.name, result)
            for name, value_of, hint in part.hinted():
                value = float(value_of(v))
                if math.isnan(value):
                    if isinstance(value_of, Distinct) and not math.isnan(value_of.raw(v)):
                        # silent: it passes, or earns a hint
                        [result] = [r for r in check(problem, v, {part.answer: repr(value_of.raw(v))})
                                    if r.answer == part.answer]
                        assert result.passed or "Hint:" in result.message, (seed, part.answer, name)
                    continue
                [result] = [r for r in check(problem, v, {part.answer: repr(value)})
                            if r.answer == part.answer]
                assert not result.passed, (seed, part.answer, name)
                assert result.message.count("Hint:") == 1, (seed, part.answer, name, result.message)
                assert _fill(hint, v, value) in result.message, (seed, part.answer, name)
            wrong = float(part.expected(v)) * 3.7
            [result] = [r for r in check(problem, v, {part.answer: repr(wrong)})
                        if r.answer == part.answer]
            assert not result.passed and part.answer in result.message


@pytest.mark.parametrize("text, value", [("1.5e9", 1.5e9), ("1,500", 1500.0), (" 2 ", 2.0),
                                         ("\u22123", -3.0), ("2 × 10^9", 2e9), ("2×10⁹", 2e9),
                                         ("3x10**-2", 0.03)])
def test_typed_numbers_read_as_written(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "nan", "inf", "1e999", "=1+1"])
def test_what_is_not_a_number_is_refused_with_a_message(text):
    with pytest.raises(ValueError, match="number"):
        parse_number(text)


def test_practice_runs_without_numpy():
    """The page runs the practice problems under Pyodide, which has no NumPy."""
    code = ("import sys; sys.modules['numpy'] = None\n"
            "import scalebook.practice as p\n"
            "for problem in p.PROBLEMS.values():\n"
            "    v = p.draw(problem, 3); p.check(problem, v, {}); problem.solution(v)\n"
            "print(len(p.PROBLEMS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(PROBLEMS)


@pytest.mark.parametrize("text, typeset", [
    ("peak 9.89e+14 FLOP/s", "peak 9.89\u202f×\u202f10¹⁴ FLOP/s"),
    ("1e+24 training FLOPs", "1\u202f×\u202f10²⁴ training FLOPs"),
    ("9.1e-09% dropped", "9.1\u202f×\u202f10⁻⁹% dropped"),
    ("type 1.5e9 or 2,048; v5e-8 and fp8e4m3 stay", "type 1.5e9 or 2,048; v5e-8 and fp8e4m3 stay"),
])
def test_typeset_numbers_writes_powers_of_ten_as_the_book_does(text, typeset):
    assert typeset_numbers(text) == typeset


def test_no_practice_text_prints_python_e_notation():
    """What a reader sees (statement, solution, hints) never reads "1.5e+10" (issue 45)."""
    e_notation = re.compile(r"\d\.?\d*e[+-]\d\d")
    for problem in PROBLEMS.values():
        v = draw(problem, 0)
        for line in (question(problem, v), *solution(problem, v)):
            assert not e_notation.search(line), (problem.id, line)

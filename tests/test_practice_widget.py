"""The practice view (scalebook.live.practice), its Jupyter widget driven through its
callbacks, the static block the book's pages carry, and the chapters' practice cells
(python -m scalebook.practice.embed). No browser: tests/test_practice_page.py has those."""

from __future__ import annotations

import html
import math
import random
import re
from pathlib import Path

import pytest

from scalebook.live import render, render_json
from scalebook.live import practice as live
from scalebook.practice import CHAPTERS, PROBLEMS, check, draw, get_problem, question, solution
from scalebook.practice import embed
from scalebook.widgets.practice import (PracticeWidget, block_html, practice, practice_set,
                                        set_html)

ROOT = Path(__file__).resolve().parents[1]
VIEW = "scalebook.live.practice"
SOME = sorted(PROBLEMS)[:: max(1, len(PROBLEMS) // 6)]  # a few problems of several chapters


def _right(problem, v) -> dict[str, str]:
    return {p.answer: repr(float(p.expected(v))) for p in problem.parts}


# --------------------------------------------------------------------------- the view


@pytest.mark.parametrize("problem_id", SOME)
def test_the_view_draws_the_problem_for_a_seed(problem_id):
    problem = get_problem(problem_id)
    for seed in (0, 1, 12345):
        out = render(VIEW, {"problem": problem_id, "seed": seed}, "seed")
        assert "error" not in out, out
        assert out["summary_html"] == (f"<p class='practice-text'>"
                                       f"{html.escape(question(problem, draw(problem, seed)))}</p>")
        assert [f["name"] for f in out["fields"]] == [p.answer for p in problem.parts]
        for part in problem.parts:
            assert f"name='{part.answer}'" in out["fields_html"]
            assert html.escape(problem.labels[part.answer]) in out["fields_html"]
        assert out["results"] == [] and out["solution_html"] == ""


@pytest.mark.parametrize("problem_id", SOME)
def test_the_views_verdicts_are_the_graders(problem_id):
    problem = get_problem(problem_id)
    rng = random.Random(problem_id)
    for seed in (0, 7, 99):
        v = draw(problem, seed)
        cases = [_right(problem, v)]
        for part in problem.parts:
            for _name, value_of, _hint in part.hinted():
                value = float(value_of(v))
                if not math.isnan(value):
                    cases.append({part.answer: repr(value)})
            cases.append({part.answer: repr(float(part.expected(v)) * rng.uniform(3, 9))})
        for answers in cases:
            out = render(VIEW, {"problem": problem_id, "seed": seed, **answers}, "check")
            expected = check(problem, v, answers)
            assert [(r["answer"], r["passed"], r["message"]) for r in out["results"]] == [
                (r.answer, r.passed, r.message) for r in expected]
            for r in out["results"]:
                assert (("✓ Right" in r["html"]) == r["passed"])
                assert html.escape(r["message"]) in r["html"] or r["message"] == "no answer yet"


def test_the_solution_comes_once_every_field_holds_a_number():
    problem = get_problem("sharded_matmuls.w6")
    v = draw(problem, 4)
    controls = {"problem": problem.id, "seed": 4}
    first = problem.parts[0].answer
    partly = render(VIEW, {**controls, first: "1"}, "check")
    assert partly["solution_html"] == ""
    wrong_everywhere = render(VIEW, {**controls, **{p.answer: "1" for p in problem.parts}}, "check")
    assert not any(r["passed"] for r in wrong_everywhere["results"])
    assert wrong_everywhere["solution_html"] == live.solution_html(problem, v)
    not_numbers = render(VIEW, {**controls, **{p.answer: "abc" for p in problem.parts}}, "check")
    assert not_numbers["solution_html"] == ""
    asked = render(VIEW, controls, "solution")
    assert asked["solution_html"] == live.solution_html(problem, v)
    for step in solution(problem, v):
        assert html.escape(step) in asked["solution_html"]


@pytest.mark.parametrize("controls, changed, message", [
    ({"problem": "nope.w1", "seed": 1}, "seed", "no practice problem"),
    ({"problem": "rooflines.matmul_time", "seed": -1}, "seed", "seed: -1 is out of range"),
    ({"problem": "rooflines.matmul_time", "seed": 1.5}, "seed", "seed: 1.5 is not a whole number"),
    ({"problem": "rooflines.matmul_time", "seed": "x"}, "seed", "seed: 'x' is not a whole number"),
    ({"problem": "rooflines.matmul_time", "seed": 1}, "erase", "unknown action"),
    ({"problem": "rooflines.matmul_time", "seed": 1, "t_lower_us": "9" * 300}, "check",
     "t_lower_us: 300 characters is too long"),
])
def test_bad_controls_are_a_message(controls, changed, message):
    out = render(VIEW, controls, changed)
    assert set(out) == {"error"} and out["error"].startswith(message), out


def test_a_hostile_answer_is_escaped_never_echoed_as_html():
    out = render(VIEW, {"problem": "rooflines.matmul_time", "seed": 2,
                        "t_lower_us": "<img src=x onerror=alert(1)>"}, "check")
    (result,) = out["results"]
    assert not result["passed"] and "<img" not in result["html"] and "&lt;img" in result["html"]


def test_render_json_is_what_the_browser_gets():
    import json

    out = json.loads(render_json(VIEW, json.dumps({"problem": "rooflines.intensity", "seed": 3,
                                                   "intensity": "2×10^2"}), "check"))
    assert out["results"][0]["answer"] == "intensity"


# --------------------------------------------------------------------------- the Jupyter widget


def test_the_jupyter_widget_runs_the_same_view_through_its_buttons():
    widget = PracticeWidget("sharded_matmuls.w2", rng=random.Random(1))
    problem = widget.problem
    assert widget.question.value == render(VIEW, {"problem": problem.id, "seed": 0})["summary_html"]
    widget.buttons["new"].click()
    seed = widget.seed
    assert seed != 0
    v = draw(problem, seed)
    assert widget.question.value == live.question_html(problem, v)
    # a slip earns the grader's hint; the right answer passes; then the solution shows
    part = problem.parts[0]
    name, value_of, hint = next((n, f, h) for n, f, h in part.hinted()
                                if not math.isnan(float(f(v))))
    widget.fields[part.answer].value = repr(float(value_of(v)))
    widget.buttons["check"].click()
    (expected,) = [r for r in check(problem, v, {part.answer: repr(float(value_of(v)))})
                   if r.answer == part.answer]
    assert html.escape(expected.message) in widget.verdicts[part.answer].value
    assert "Hint:" in widget.verdicts[part.answer].value, name
    for p in problem.parts:
        widget.fields[p.answer].value = repr(float(p.expected(v)))
    widget.buttons["check"].click()
    assert all("✓ Right" in box.value for box in widget.verdicts.values())
    assert widget.solution.value == live.solution_html(problem, v)
    widget.buttons["new"].click()  # draw again: fields and verdicts cleared
    assert widget.seed != seed and all(box.value == "" for box in widget.fields.values())
    assert all(box.value == "" for box in widget.verdicts.values())


def test_the_jupyter_widget_shows_a_bad_answer_as_a_message():
    widget = PracticeWidget("rooflines.matmul_time")
    widget.fields["t_lower_us"].value = "x" * 500
    widget.buttons["check"].click()
    assert "too long" in widget.message.value


def test_the_static_block_is_the_books_numbers_with_a_hidden_form():
    text = block_html("sharded_matmuls.w6")
    problem = get_problem("sharded_matmuls.w6")
    assert text.startswith("<section class='practice' id='practice-sharded_matmuls-w6'")
    assert live.question_html(problem, draw(problem, 0)) in text
    assert "<form class='practice-form' autocomplete='off' hidden>" in text
    for part in problem.parts:  # every input has its label
        field = f"practice-sharded_matmuls-w6-{part.answer}"
        assert f"<label for='{field}'>" in text and f"id='{field}'" in text
    bundle = practice("sharded_matmuls.w6")._repr_mimebundle_()
    assert bundle["text/html"] == text and "application/vnd.jupyter.widget-view+json" in bundle


def test_the_chapter_cell_shows_a_button_that_opens_the_widget():
    """The chapter's cell makes one button (the book stores every widget a page makes); its
    click opens the practice widget, in place."""
    cell = practice("rooflines.intensity")
    assert list(cell.children) == [cell.button]
    cell.button.click()
    (widget,) = cell.children
    assert isinstance(widget, PracticeWidget) and widget.problem.id == "rooflines.intensity"
    cell.button.click()  # a second click opens nothing more
    assert cell.children == (widget,)


@pytest.mark.parametrize("chapter", [c for c, p in CHAPTERS.items() if p])
def test_the_practice_set_lists_every_problem_of_the_chapter(chapter):
    text = set_html(chapter)
    problems = CHAPTERS[chapter]
    assert f"data-problems='{' '.join(p.id for p in problems)}'" in text
    for p in problems:
        anchor = f"#{live.dom_id(p)}'"
        assert (anchor in text) if p.worked else (f"data-problem='{p.id}'" in text)
    cell = practice_set(chapter)
    assert cell._repr_mimebundle_()["text/html"] == text
    assert [w.problem.id for w in cell.start()] == [p.id for p in problems if not p.worked]


# --------------------------------------------------------------------------- the chapters


def test_every_chapter_has_its_practice_cells_up_to_date():
    """Every worked problem's block right after its answer and the chapter's set before
    "Further reading": `python -m scalebook.practice.embed` wrote them and would change
    nothing now."""
    assert embed.main(["--check"]) == 0


@pytest.mark.parametrize("chapter", [c for c, p in CHAPTERS.items() if p])
def test_each_worked_problem_has_its_block_after_its_answer(chapter):
    text = embed.page(chapter).read_text()
    ends = embed.worked_dropdown_ends(text)
    for problem in CHAPTERS[chapter]:
        if problem.worked:
            after = text[ends[int(problem.worked) - 1]:]
            assert re.match(rf"\n```{{code-cell}} ipython3\n:tags: \[remove-input, practice\]\n\n"
                            rf"# practice sources \w+ .*\n.*\npractice\('{re.escape(problem.id)}'\)",
                            after), problem.id
    assert f"practice_set('{chapter}')" in text
    if "\n## Further reading" in text:
        assert text.index("## Practice set") < text.index("## Further reading")


def test_embedding_is_idempotent_and_strips_back_to_the_chapter():
    text = embed.page("sharded_matmuls").read_text()
    assert embed.embed(text, "sharded_matmuls") == text
    bare = embed.strip(text)
    assert ":tags: [remove-input, practice]" not in bare and "## Practice set" not in bare
    assert embed.embed(bare, "sharded_matmuls") == text

"""The practice blocks on the built book (after `make book`), in headless Chromium from disk:
the page's verdicts and hints are the CPython grader's, a reader's clicks work, the score is
kept in localStorage, and the blocks are accessible and fit a phone.

One page load per chapter: a reader's clicks and keys go on from the page the verdicts used;
the accessibility and phone checks open their own. The many draws go through the page's own
runtime (the Python the page runs in its worker, `window.sbPracticeRuntime()` of
web/src/practice.js, the call every click makes), a few through real clicks and keys.
"""

from __future__ import annotations

import html
import math
import random

import pytest

import live_browser as lb
from scalebook.live import render
from scalebook.practice import CHAPTERS, check, draw, get_problem, solution

pytestmark = [pytest.mark.browser, pytest.mark.book]

VIEW = "scalebook.live.practice"
DRAWS = 20
CHAPTERS_WITH_PROBLEMS = [c for c, problems in CHAPTERS.items() if problems]


def _page(chapter: str) -> str:
    return chapter.replace("_", "-")


@pytest.fixture
def desktop(browser):
    lb.viewport(browser, 1280, 900)
    lb.console_errors(browser)
    yield browser


def _open(driver, chapter: str) -> None:
    outside = lb.outside(lb.open_page(driver, _page(chapter)))
    assert not outside, outside
    driver.execute_script("window.localStorage.clear()")


@pytest.fixture(scope="module")
def chapter_page(request, browser) -> str:
    """The chapter ``request.param`` opened once at 1280 x 900 for the tests that read its
    page as it loads or drive it from there (pytest runs them together: the fixture is
    module-scoped, parametrized by chapter). The verdicts go through the page's runtime
    without touching its blocks, so a reader's first clicks after them meet the blocks as
    loaded; Python, started by the verdicts, is not started again for them."""
    lb.viewport(browser, 1280, 900)
    _open(browser, request.param)
    return request.param


#: Runs a list of [controls, changed] through the page's runtime, one after another (the
#: worker answers one at a time anyway); returns the parsed answers.
_RUN = """
const [calls, view, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
window.sbPracticeRuntime().then(async runtime => {
  const out = [];
  for (const [controls, changed] of calls) out.push(await runtime.render(view, controls, changed));
  return out;
}).then(done, error => done({failed: String(error)}));
"""


def _page_render(driver, calls: list) -> list[dict]:
    driver.set_script_timeout(600)
    out = driver.execute_async_script(_RUN, calls, VIEW)
    assert isinstance(out, list), out
    return out


def _cases(problem, v, rng: random.Random) -> list[dict[str, str]]:
    """The right answers; each slip and pinned convention, each accepted convention, of each
    part; a random wrong value per part."""
    cases = [{p.answer: repr(float(p.expected(v))) for p in problem.parts}]
    for part in problem.parts:
        values = [c.value for c in part.accepted] + [f for _n, f, _h in part.hinted()]
        for value_of in values:
            value = float(value_of(v))
            if not math.isnan(value):
                cases.append({part.answer: repr(value)})
        cases.append({part.answer: repr(float(part.expected(v)) * rng.choice((-1, 1))
                                        * rng.uniform(1.3, 40))})
    return cases


@pytest.mark.parametrize("chapter_page", CHAPTERS_WITH_PROBLEMS, indirect=True)
def test_the_pages_verdicts_and_hints_are_the_graders(desktop, chapter_page):
    driver, chapter = desktop, chapter_page
    problems = CHAPTERS[chapter]
    on_page = driver.execute_script(
        "return [...document.querySelectorAll('section.practice')].map(s => s.dataset.problem)")
    assert sorted(on_page) == sorted(p.id for p in problems)
    rng = random.Random(chapter)
    checked = 0
    for problem in problems:
        seeds = [0] + rng.sample(range(1, 10 ** 9), DRAWS - 1)
        calls, expected = [], []
        for seed in seeds:
            v = draw(problem, seed)
            calls.append([{"problem": problem.id, "seed": seed}, "seed"])
            expected.append(("draw", render(VIEW, {"problem": problem.id, "seed": seed}, "seed")))
            for answers in _cases(problem, v, rng):
                calls.append([{"problem": problem.id, "seed": seed, **answers}, "check"])
                expected.append(("check", [(r.answer, r.passed, r.message)
                                           for r in check(problem, v, answers)]))
        for (kind, want), got in zip(expected, _page_render(driver, calls), strict=True):
            assert "error" not in got, got
            if kind == "draw":
                assert got["summary_html"] == want["summary_html"]
                assert got["fields_html"] == want["fields_html"]
            else:
                assert [(r["answer"], r["passed"], r["message"]) for r in got["results"]] == want
                checked += 1
    assert checked >= DRAWS * len(problems) * 2
    assert not lb.console_errors(driver)


def _block(driver, problem_id: str):
    return driver.execute_script(
        "return document.querySelector(`section.practice[data-problem='${arguments[0]}']`)",
        problem_id)


def _state(driver, problem_id: str) -> dict:
    return driver.execute_script(
        "const s = document.querySelector(`section.practice[data-problem='${arguments[0]}']`)"
        ".sbPractice; return {state: s.state, busy: s.busy, done: s.done, seed: s.seed};",
        problem_id)


#: Whether the block of problem ``arguments[0]`` has answered a request after count
#: ``arguments[1]`` and has nothing running (for lb.wait_for: the wait happens in the page).
_ANSWERED = """
const s = document.querySelector(`section.practice[data-problem='${arguments[0]}']`).sbPractice;
return s.done > arguments[1] && !s.busy;
"""


def _click_and_wait(driver, problem_id: str, button: str, timeout: float = 120) -> dict:
    from selenium.webdriver.common.by import By

    before = _state(driver, problem_id)["done"]
    element = _block(driver, problem_id).find_element(By.CSS_SELECTOR, f"button[name='{button}']")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()
    if not lb.wait_for(driver, _ANSWERED, problem_id, before, timeout=timeout):
        raise AssertionError(f"{problem_id}: no answer to {button}")
    return _state(driver, problem_id)


def _text(driver, problem_id: str, selector: str) -> str:
    return driver.execute_script(
        "const e = document.querySelector(`section.practice[data-problem='${arguments[0]}'] "
        "${arguments[1]}`); return e ? e.textContent : null;", problem_id, selector)


def _as_text(markup: str) -> str:
    """What a reader reads of ``markup`` (the tags gone, the entities decoded)."""
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _type(driver, problem_id: str, answer: str, text: str) -> None:
    from selenium.webdriver.common.by import By

    field = _block(driver, problem_id).find_element(By.CSS_SELECTOR, f"input[name='{answer}']")
    field.clear()
    field.send_keys(text)


@pytest.mark.parametrize("chapter_page", CHAPTERS_WITH_PROBLEMS[-1:], indirect=True)
def test_a_reader_draws_slips_gets_the_hint_then_the_solution_and_a_score(desktop, chapter_page):
    driver, chapter = desktop, chapter_page
    problem = next((p for p in CHAPTERS[chapter] if p.worked), CHAPTERS[chapter][0])
    assert driver.execute_script("return document.querySelector('.practice-score').hidden") is False
    for _ in range(2):  # draw again as often as wanted
        state = _click_and_wait(driver, problem.id, "new")
        assert state["state"] == "live" and state["seed"] > 0
        v = draw(problem, state["seed"])
        shown = _text(driver, problem.id, ".practice-question")
        assert shown == _as_text(render(VIEW, {"problem": problem.id, "seed": state["seed"]})
                                 ["summary_html"])
    part = problem.parts[0]
    slip = next((f, h) for _n, f, h in part.hinted() if not math.isnan(float(f(v))))
    _type(driver, problem.id, part.answer, repr(float(slip[0](v))))
    _click_and_wait(driver, problem.id, "check")
    (want,) = [r for r in check(problem, v, {part.answer: repr(float(slip[0](v)))})
               if r.answer == part.answer]
    verdict = _text(driver, problem.id, f".practice-verdict[data-answer='{part.answer}']")
    assert verdict.startswith("✗ Not right") and want.message in verdict and "Hint:" in verdict
    for p in problem.parts:
        _type(driver, problem.id, p.answer, f"{float(p.expected(v)):.6g}")
    _click_and_wait(driver, problem.id, "check")
    for p in problem.parts:
        assert _text(driver, problem.id, f".practice-verdict[data-answer='{p.answer}']") == "✓ Right"
    shown = _text(driver, problem.id, ".practice-solution")
    assert all(step in shown for step in solution(problem, v))
    # the score: two checks, one problem solved, kept in localStorage; the reset clears it
    score = driver.execute_script(
        "return JSON.parse(localStorage.getItem('scalebook-practice:' + arguments[0]))", chapter)
    assert score == {problem.id: {"checks": 2, "solved": True}}
    total = len(CHAPTERS[chapter])
    text = driver.execute_script("return document.querySelector('.practice-score-text').textContent")
    assert text == f"Your score: 1 of {total} problems solved (2 checks)."
    driver.refresh()
    text = driver.execute_script("return document.querySelector('.practice-score-text').textContent")
    assert text == f"Your score: 1 of {total} problems solved (2 checks).", "the score survives a reload"
    driver.execute_script("document.querySelector('.practice-reset').click()")
    assert driver.execute_script(
        "return localStorage.getItem('scalebook-practice:' + arguments[0])", chapter) is None
    text = driver.execute_script("return document.querySelector('.practice-score-text').textContent")
    assert text == f"Your score: 0 of {total} problems solved (0 checks)."
    assert not lb.console_errors(driver)


@pytest.mark.parametrize("chapter_page", CHAPTERS_WITH_PROBLEMS[:1], indirect=True)
def test_keyboard_only_a_reader_checks_an_answer(desktop, chapter_page):
    from selenium.webdriver.common.keys import Keys

    driver, chapter = desktop, chapter_page
    problem = CHAPTERS[chapter][0]
    field = _block(driver, problem.id).find_element("css selector", "input")
    driver.execute_script("arguments[0].focus()", field)
    v = draw(problem, 0)
    before = _state(driver, problem.id)["done"]
    field.send_keys(f"{float(problem.parts[0].expected(v)):.6g}", Keys.ENTER)  # Enter submits
    assert lb.wait_for(driver, _ANSWERED, problem.id, before, timeout=120)
    verdict = _text(driver, problem.id, f".practice-verdict[data-answer='{problem.parts[0].answer}']")
    assert verdict == "✓ Right"


def test_practice_blocks_are_accessible_before_and_after_a_touch(desktop):
    driver = desktop
    chapter = CHAPTERS_WITH_PROBLEMS[0]
    problem = CHAPTERS[chapter][0]
    _open(driver, chapter)
    assert lb.axe_violations(driver) == []
    _click_and_wait(driver, problem.id, "new")
    _type(driver, problem.id, problem.parts[0].answer, "12345")
    _click_and_wait(driver, problem.id, "check")
    _click_and_wait(driver, problem.id, "solution")
    assert lb.axe_violations(driver) == []


def test_practice_fits_a_phone(browser):
    driver = browser
    lb.viewport(driver, 390, 844, mobile=True)
    try:
        chapter = CHAPTERS_WITH_PROBLEMS[-1]
        problem = CHAPTERS[chapter][0]
        _open(driver, chapter)
        assert lb.overflow_x(driver) == 0, lb.wide_elements(driver)
        _click_and_wait(driver, problem.id, "new")
        _type(driver, problem.id, problem.parts[0].answer, "1")
        _click_and_wait(driver, problem.id, "check")
        _click_and_wait(driver, problem.id, "solution")
        assert lb.overflow_x(driver) == 0, lb.wide_elements(driver)
        small = driver.execute_script(
            "return [...document.querySelectorAll('section.practice input, section.practice button,"
            " .practice-reset')].filter(e => e.offsetParent !== null).map(e => {"
            "  const r = e.getBoundingClientRect(); return [e.name || e.className, r.width, r.height];"
            "}).filter(([, w, h]) => w < 44 || h < 44)")
        assert small == [], small
    finally:
        lb.viewport(driver, 1280, 900)

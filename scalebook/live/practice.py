"""A practice problem on the page: draw its numbers, check the reader's answers, show the
worked solution, all through :mod:`scalebook.practice` (the grader's own checker and hints).

``view(controls, changed)`` follows the live contract (:mod:`scalebook.live`). ``controls``:

- ``problem``: the problem's id ("sharded_matmuls.w6");
- ``seed``: an integer; 0 is the book's own numbers;
- one text per answer field, by the part's ``answer`` name, as the reader typed it.

``changed`` is None or ``"seed"`` (show the problem for that seed), ``"check"`` (judge every
field: the grader's message with its hints; and the worked solution once every field holds a
number) or ``"solution"`` (the worked solution for these numbers). It returns::

    {"problem": id, "seed": int, "title": str,
     "summary_html": the problem's text as HTML,
     "fields_html": the labelled answer inputs (empty),
     "fields": [{"name", "label"}, ...],
     "results": [{"answer", "passed", "message", "html"}, ...],   # after "check"
     "solution_html": str}                                         # after "check"/"solution"

Every piece of HTML is built here, escaped; the page's script (web/src/practice.js) only puts
it in place. No formula, tolerance or hint exists anywhere else.
"""

from __future__ import annotations

import html
from typing import Any, Mapping

from ..practice import Problem, check, draw, get_problem, parse_number, question, solution

__all__ = ["view", "question_html", "fields_html", "result_html", "solution_html", "MAX_SEED"]

#: The largest seed the page draws ("New numbers" picks one in 1..MAX_SEED).
MAX_SEED = 999_999_999  # within scalebook.live.NUMBER_LIMIT

_ACTIONS = (None, "seed", "check", "solution")


def _seed(value: Any) -> int:
    """The control's seed as an int in 0..MAX_SEED; ``ValueError`` otherwise."""
    if isinstance(value, bool) or value is None:
        raise ValueError("seed: give a whole number")
    try:
        seed = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"seed: {str(value)[:20]!r} is not a whole number") from None
    if seed != value and not (isinstance(value, str) and value.strip().isdigit()):
        raise ValueError(f"seed: {value!r} is not a whole number")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed: {seed} is out of range (0 to {MAX_SEED:,})")
    return seed


def _is_number(text: Any) -> bool:
    """Whether ``text`` is a number the checker reads (an answer, right or wrong)."""
    try:
        parse_number(text)
    except ValueError:
        return False
    return True


def dom_id(problem: Problem, name: str = "") -> str:
    """The HTML id of the problem's block (or of its field ``name``): unique on the page."""
    base = "practice-" + problem.id.replace(".", "-")
    return f"{base}-{name}" if name else base


def question_html(problem: Problem, v: Mapping[str, Any]) -> str:
    """The problem's text with the numbers ``v``, escaped, as one paragraph."""
    return f"<p class='practice-text'>{html.escape(question(problem, v))}</p>"


def fields_html(problem: Problem) -> str:
    """One labelled text input per answer field, with an empty verdict line under it.

    Text, not ``type=number``: a reader may type "2×10^9" or "1,500"
    (:func:`scalebook.practice.parse_number` reads them)."""
    rows = []
    for part in problem.parts:
        name = html.escape(part.answer, quote=True)
        field = html.escape(dom_id(problem, part.answer), quote=True)
        rows.append(
            f"<div class='practice-field'><label for='{field}'>"
            f"{html.escape(problem.labels[part.answer])}</label> "
            f"<input type='text' id='{field}' name='{name}' inputmode='decimal' "
            f"autocomplete='off' spellcheck='false' aria-describedby='{field}-verdict'>"
            f"<div class='practice-verdict' id='{field}-verdict' data-answer='{name}'></div>"
            f"</div>")
    return "".join(rows)


def result_html(passed: bool, message: str) -> str:
    """One field's verdict: a word and a mark (never colour alone), then the grader's message
    (tolerance, hints) when it is not right."""
    if passed:
        return "<span class='practice-right'>✓ Right</span>"
    if message == "no answer yet":
        return "<span class='practice-empty'>No answer yet.</span>"
    return (f"<span class='practice-wrong'>✗ Not right</span> "
            f"<span class='practice-message'>{html.escape(message)}</span>")


def solution_html(problem: Problem, v: Mapping[str, Any]) -> str:
    """The worked solution for the numbers ``v``: the solver's lines, in order."""
    steps = "".join(f"<li>{html.escape(step)}</li>" for step in solution(problem, v))
    return (f"<p class='practice-solution-title'><strong>Solution for these numbers</strong></p>"
            f"<ol>{steps}</ol>")


def view(controls: Mapping[str, Any], changed: str | None = None) -> dict:
    """The problem ``controls["problem"]`` at ``controls["seed"]``, and, after a check, each
    field's verdict (module docstring). Raises ``ValueError`` for an unknown problem, a bad
    seed or an unknown action."""
    if changed not in _ACTIONS:
        raise ValueError(f"unknown action {str(changed)[:30]!r}")
    problem = get_problem(str(controls.get("problem", "")))
    seed = _seed(controls.get("seed", 0))
    v = draw(problem, seed)
    out: dict[str, Any] = {
        "problem": problem.id, "seed": seed, "title": problem.title,
        "summary_html": question_html(problem, v),
        "fields_html": fields_html(problem),
        "fields": [{"name": p.answer, "label": problem.labels[p.answer]} for p in problem.parts],
        "results": [], "solution_html": "",
    }
    if changed == "check":
        results = check(problem, v, {p.answer: controls.get(p.answer, "") for p in problem.parts})
        out["results"] = [{"answer": r.answer, "passed": r.passed, "message": r.message,
                           "html": result_html(r.passed, r.message)} for r in results]
        if all(_is_number(controls.get(p.answer, "")) for p in problem.parts):
            out["solution_html"] = solution_html(problem, v)
    elif changed == "solution":
        out["solution_html"] = solution_html(problem, v)
    return out

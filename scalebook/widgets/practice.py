"""Practice blocks in the book: a worked problem again with new numbers, and a chapter's
practice set, as static HTML for the site and as an ipywidget in Jupyter.

In a chapter, one hidden cell per block::

    from scalebook.widgets.practice import practice
    practice("sharded_matmuls.w6")          # after worked problem 6's answer
    practice_set("sharded_matmuls")         # at the end of the chapter

Each returns a :class:`Launcher` whose ``text/html`` is the static block (the problem with the
book's numbers, its answer inputs hidden until ``web/src/practice.js`` makes it live in the
reader's browser); Jupyter shows its "Practise here" button, which opens a
:class:`PracticeWidget` per problem, running the same :func:`scalebook.live.practice.view` on
every click, so the page, the notebook and the grader cannot disagree. Nothing here computes a
number: the view does.

The static block::

    <section class="practice" id="practice-<id>" data-problem="<id>" data-chapter="<chapter>"
             aria-label="...">
      <p class="practice-heading"> Try it with new numbers: <title> </p>
      <div class="practice-question"> the problem's text </div>
      <form class="practice-form" hidden> the answer inputs; New numbers, Check, Solution </form>
      <div class="practice-status" role="status"> messages (loading, errors) </div>
      <div class="practice-solution"></div>
      <p class="practice-note"> what a reader without JavaScript gets </p>
    </section>
"""

from __future__ import annotations

import html
import random

import ipywidgets as widgets

from ..live import practice as live
from ..live import render
from ..practice import CHAPTERS, Problem, get_problem

__all__ = ["practice", "practice_set", "PracticeWidget", "Launcher", "block_html", "set_html"]

_NOTE = ("These are the book's own numbers. With JavaScript on, “New numbers” draws the problem "
         "again and “Check” judges your answers in your browser with the course grader's own "
         "tolerance and hints; nothing leaves the page. In the chapter's notebook, "
         "“Practise here” runs the same practice as a widget.")


def _buttons_html(problem: Problem) -> str:
    ident = html.escape(live.dom_id(problem), quote=True)
    return (f"<div class='practice-buttons'>"
            f"<button type='button' name='new' aria-controls='{ident}-question'>New numbers</button>"
            f"<button type='submit' name='check'>Check</button>"
            f"<button type='button' name='solution'>Show the solution</button></div>")


def block_html(problem_id: str, heading: str = "Try it with new numbers") -> str:
    """The static block of problem ``problem_id`` at the book's numbers (module docstring)."""
    problem = get_problem(problem_id)
    out = live.view({"problem": problem.id, "seed": 0})
    ident = html.escape(live.dom_id(problem), quote=True)
    title = f"{heading}: {problem.title}"
    return (f"<section class='practice' id='{ident}' data-problem='{html.escape(problem.id, quote=True)}' "
            f"data-chapter='{html.escape(problem.chapter, quote=True)}' "
            f"aria-label='{html.escape(title, quote=True)}'>"
            f"<p class='practice-heading'><strong>{html.escape(heading)}:</strong> "
            f"{html.escape(problem.title)}</p>"
            f"<div class='practice-question' id='{ident}-question' aria-live='polite'>"
            f"{out['summary_html']}</div>"
            f"<form class='practice-form' autocomplete='off' hidden>"
            f"<div class='practice-fields'>{out['fields_html']}</div>{_buttons_html(problem)}</form>"
            f"<div class='practice-status' role='status'></div>"
            f"<div class='practice-solution'></div>"
            f"<p class='practice-note'>{html.escape(_NOTE)}</p></section>")


def set_html(chapter: str) -> str:
    """The chapter's practice set: the running score (kept in the reader's browser), a link to
    each worked problem's block, and a block for each problem of the set only."""
    problems = CHAPTERS[chapter]
    worked = [p for p in problems if p.worked]
    only = [p for p in problems if not p.worked]
    links = "".join(f"<li><a href='#{html.escape(live.dom_id(p), quote=True)}'>Problem {html.escape(p.worked)}: "
                    f"{html.escape(p.title)}</a></li>" for p in worked)
    listing = (f"<p>Worked problems above, with new numbers:</p><ul class='practice-links'>{links}</ul>"
               if worked else "")
    ids = html.escape(" ".join(p.id for p in problems), quote=True)
    score = (f"<div class='practice-score' data-chapter='{html.escape(chapter, quote=True)}' "
             f"data-problems='{ids}' hidden><p role='status' class='practice-score-text'></p>"
             f"<button type='button' class='practice-reset'>Reset my score</button></div>")
    blocks = "".join(block_html(p.id, heading=f"Practice {i}") for i, p in enumerate(only, 1))
    return (f"<div class='practice practice-set' data-chapter='{html.escape(chapter, quote=True)}'>"
            f"<p>{len(problems)} problems to practise, each with new numbers as often as you "
            f"like. Your score is kept in this browser only.</p>{score}{listing}</div>{blocks}")


class PracticeWidget(widgets.VBox):
    """A practice problem in Jupyter: its text, one text box per answer, New numbers, Check
    and Show the solution, each click one call of :func:`scalebook.live.practice.view`
    (through :func:`scalebook.live.render`, as the page calls it)."""

    def __init__(self, problem_id: str, seed: int = 0, rng: random.Random | None = None):
        self.problem = get_problem(problem_id)
        self.seed = seed
        self._rng = rng or random.Random()
        self.question = widgets.HTML()
        self.fields = {p.answer: widgets.Text(description="", placeholder="a number",
                                              layout=widgets.Layout(width="12em"))
                       for p in self.problem.parts}
        self.verdicts = {name: widgets.HTML() for name in self.fields}
        self.buttons = {"new": widgets.Button(description="New numbers"),
                        "check": widgets.Button(description="Check", button_style="primary"),
                        "solution": widgets.Button(description="Show the solution")}
        self.message = widgets.HTML()
        self.solution = widgets.HTML()
        self.last: dict = {}
        rows = [widgets.VBox([widgets.HTML(html.escape(self.problem.labels[name])),
                              self.fields[name], self.verdicts[name]]) for name in self.fields]
        super().__init__(children=[
            widgets.HTML(f"<b>Try it with new numbers:</b> {html.escape(self.problem.title)}"),
            self.question, *rows, widgets.HBox(list(self.buttons.values())), self.message,
            self.solution])
        self.buttons["new"].on_click(lambda _b: self.new_numbers())
        self.buttons["check"].on_click(lambda _b: self.check())
        self.buttons["solution"].on_click(lambda _b: self.show_solution())
        self._show(self._call("seed"))

    def _call(self, changed: str) -> dict:
        controls = {"problem": self.problem.id, "seed": self.seed,
                    **{name: box.value for name, box in self.fields.items()}}
        out = render("scalebook.live.practice", controls, changed)
        self.last = out
        return out

    def _show(self, out: dict) -> None:
        if "error" in out:
            self.message.value = f"<span style='color:#b00020'>⚠ {html.escape(out['error'])}</span>"
            return
        self.message.value = ""
        self.question.value = out["summary_html"]
        self.solution.value = out["solution_html"]
        by_name = {r["answer"]: r["html"] for r in out["results"]}
        for name, verdict in self.verdicts.items():
            verdict.value = by_name.get(name, "")

    def new_numbers(self, seed: int | None = None) -> None:
        """Draw the problem again (``seed``, else a fresh random one) and clear the answers."""
        self.seed = seed if seed is not None else self._rng.randint(1, live.MAX_SEED)
        for box in self.fields.values():
            box.value = ""
        self._show(self._call("seed"))

    def check(self) -> None:
        """Judge the typed answers: each field's verdict and hints; the solution when every
        field holds a number."""
        self._show(self._call("check"))

    def show_solution(self) -> None:
        self._show(self._call("solution"))



class Launcher(widgets.VBox):
    """What a chapter's practice cell displays: in Jupyter one button, "Practise here", that
    opens the practice widgets (``start()``); on the book's pages its ``text/html``, the static
    block. The widgets are made on the click, not when the chapter runs: the book's build
    stores the state of every widget a page created in the page itself (tens of kB per
    practice widget), so a page of practice carries only this button's few models."""

    def __init__(self, problem_ids: tuple[str, ...], static_html: str, label: str):
        self.problem_ids = tuple(problem_ids)
        self.static_html = static_html
        self.label = label
        self.problems: list[PracticeWidget] = []
        self.button = widgets.Button(description="Practise here", tooltip=label)
        self.button.on_click(lambda _b: self.start())
        super().__init__(children=[self.button])

    def start(self) -> list[PracticeWidget]:
        """Show the practice widget of each problem in place of the button; returns them."""
        if not self.problems:
            self.problems = [PracticeWidget(pid) for pid in self.problem_ids]
            self.children = self.problems
        return self.problems

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = self.static_html
        bundle["text/plain"] = self.label
        return bundle


def practice(problem_id: str) -> Launcher:
    """The practice block of problem ``problem_id`` (module docstring)."""
    problem = get_problem(problem_id)
    return Launcher((problem.id,), block_html(problem.id), f"{problem.title} (practice)")


def practice_set(chapter: str) -> Launcher:
    """The practice set of ``chapter`` ("sharded_matmuls"): its score and a block for each
    problem of the set only (the worked problems have theirs under their answers)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"no chapter {chapter!r}; chapters: {', '.join(CHAPTERS)}")
    only = tuple(p.id for p in CHAPTERS[chapter] if not p.worked)
    return Launcher(only, set_html(chapter), f"practice set of {chapter}")

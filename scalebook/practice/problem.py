"""A practice problem: a worked problem of the book again, with new numbers, checked as the
homework grader checks.

A :class:`Problem` is the book's worked problem (or a short problem of the chapter's practice
set) written once, as data:

- ``spec``: what varies, a :class:`~scalebook.variants.VariantSpec` whose every
  :class:`~scalebook.variants.Choice` lists the book's own number first, so the draw with seed 0
  is the problem as the book prints it;
- ``text``: the question, a format string over the drawn numbers (``"... over {chips} chips"``,
  ``"{d_model:,}"``); plain text, Unicode for symbols (×, ≈, ≤), no LaTeX;
- ``parts``: one :class:`~scalebook.homework.parts.Part` per answer field, the same dataclass
  the homework uses: its expected value is a solver call on the drawn numbers, its conventions
  are accepted or pinned, its slips carry the hints the grader gives;
- ``labels``: what each answer field asks for, with its unit ("AllReduce time, in ms");
- ``solution(v)``: the worked solution for *these* numbers, a few lines of plain text, every
  value computed by the solver.

A chapter writes its problems with :func:`one_answer` (one answer field: its part and, beside
it, its label) or :func:`problem` (each answer field as ``(part, label)``), their draws with
:func:`~scalebook.practice.common.draws`, so that a problem reads as its data and its id and
its answers' names are written once.

:func:`draw` gives the numbers for a seed: a well-posed draw by the same generic rule as the
homework (:func:`~scalebook.homework.parts.well_posed`: no slip within a check's tolerance of
the answer, no two hints on one value). :func:`check` judges the reader's typed answers with
:func:`~scalebook.homework.parts.feedback`, the message the homework's hidden test raises, so
the page, the Jupyter widget and the grader cannot disagree.

Pure functions over frozen dataclasses; numpy-free (it runs in the reader's browser).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..homework.parts import Part, feedback, well_posed
from .common import Draws
from ..units import format_scientific
from ..variants import Variant, VariantSpec, default_variant
from ..variants import draw as draw_variant

__all__ = ["Problem", "Result", "problem", "one_answer", "draw", "check", "parse_number",
           "question", "MAX_TRIES"]

#: Draws tried for one seed before a problem is declared broken (the tests draw hundreds).
MAX_TRIES = 200

_ID = re.compile(r"[a-z0-9_]+\.[a-z0-9_]+")


@dataclass(frozen=True)
class Problem:
    """One practice problem (see the module docstring).

    ``id``: ``"<chapter module>.<name>"`` (``"parallelism.w4"``), stable: the page's URL and the
    reader's saved score use it. ``worked``: the book's label of the worked problem it repeats
    ("4"), or "" for a problem of the practice set only.
    """

    id: str
    title: str
    spec: VariantSpec
    text: str
    parts: tuple[Part, ...]
    labels: Mapping[str, str]
    solution: Callable[[Mapping[str, Any]], tuple[str, ...]]
    worked: str = ""

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id):
            raise ValueError(f"practice problem id {self.id!r} must read 'chapter.name' "
                             "(lower case, digits, underscores)")
        if not self.parts:
            raise ValueError(f"practice problem {self.id!r} has no answer")
        answers = [p.answer for p in self.parts]
        if len(set(answers)) != len(answers):
            raise ValueError(f"practice problem {self.id!r} names an answer twice: {answers}")
        if set(self.labels) != set(answers):
            raise ValueError(f"practice problem {self.id!r}: labels {sorted(self.labels)} are "
                             f"not its answers {sorted(answers)}")

    @property
    def chapter(self) -> str:
        return self.id.split(".")[0]


def one_answer(id: str, title: str, draws: Draws, text: str, part: Part, *, label: str,
               solution: Callable[[Mapping[str, Any]], tuple[str, ...]],
               worked: str = "") -> Problem:
    """The common problem with one answer field: ``part``, asked for as ``label``. The same
    :class:`Problem` as ``Problem(id=id, title=title, spec=draws.spec(id), text=text,
    parts=(part,), labels={part.answer: label}, solution=solution, worked=worked)``: the id and
    the answer's name said once."""
    return Problem(id=id, title=title, spec=draws.spec(id), text=text, parts=(part,),
                   labels={part.answer: label}, solution=solution, worked=worked)


def problem(id: str, title: str, draws: Draws, text: str, *answers: tuple[Part, str],
            solution: Callable[[Mapping[str, Any]], tuple[str, ...]],
            worked: str = "") -> Problem:
    """A problem with several answer fields, each given as ``(part, label)``: the part that
    judges it and what the field asks for. The same :class:`Problem` as ``Problem(id=id,
    title=title, spec=draws.spec(id), text=text, parts=(part, ...), labels={part.answer:
    label, ...}, solution=solution, worked=worked)``: the id and each answer's name said once,
    each label beside its part."""
    return Problem(id=id, title=title, spec=draws.spec(id), text=text,
                   parts=tuple(part for part, _ in answers),
                   labels={part.answer: label for part, label in answers},
                   solution=solution, worked=worked)


@dataclass(frozen=True)
class Result:
    """The verdict on one answer field: ``passed``, and the message the grader would give (the
    tolerance and every hint earned), or why the text is not a number."""

    answer: str
    passed: bool
    message: str = ""


def draw(problem: Problem, seed: int) -> Variant:
    """The numbers of ``problem`` for ``seed``: the book's own at seed 0, else a deterministic
    draw that is well posed for every part. Raises ``RuntimeError`` for a problem whose choices
    give no well-posed draw (a broken definition, caught by the tests)."""
    if seed == 0:
        v = default_variant(problem.spec)
        if not well_posed(problem.parts, v):
            raise RuntimeError(f"practice problem {problem.id}: the book's own numbers are not "
                               "well posed (a slip lands within the tolerance of the answer)")
        return v
    for attempt in range(MAX_TRIES):
        v = draw_variant(problem.spec, f"P{seed}X{attempt}")
        if well_posed(problem.parts, v):
            return v
    raise RuntimeError(f"practice problem {problem.id}: no well-posed draw for seed {seed}")


#: A power of ten as Python's ``:g``/``:e`` formats print it ("9.89e+14", "1e+24", "9.1e-09").
_E_NOTATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)e([+-]\d{2,})(?!\w|\.\d)")


def typeset_numbers(text: str) -> str:
    """``text`` with every power of ten Python's formats print ("9.89e+14") written as the book
    writes one, :func:`scalebook.units.format_scientific` with the same digits ("9.89 × 10¹⁴";
    "1e+24" -> "1 × 10²⁴"). The problems' statements, solutions and hints format their numbers
    with ``:.3g`` and pass through here on their way to the reader."""
    def typeset(match: re.Match[str]) -> str:
        mantissa, exponent = match.groups()
        digits = len(mantissa.replace(".", "").lstrip("0")) or 1
        return format_scientific(float(f"{mantissa}e{exponent}"), digits)

    return _E_NOTATION.sub(typeset, text)


def question(problem: Problem, v: Mapping[str, Any]) -> str:
    """The problem's text with the numbers ``v``."""
    return typeset_numbers(problem.text.format(**dict(v)))


def solution(problem: Problem, v: Mapping[str, Any]) -> tuple[str, ...]:
    """The worked solution's lines for the numbers ``v``, numbers typeset."""
    return tuple(typeset_numbers(step) for step in problem.solution(v))


_NUMBER_SPACES = re.compile(r"[\s,_\u2009\u202f]")


def parse_number(text: str) -> float:
    """The reader's typed answer as a float: ``"1.5e9"``, ``"1,500"``, ``"−3"`` (a Unicode
    minus), ``"2 × 10^9"`` and ``"2×10⁹"`` read as written. Raises ``ValueError`` with a message
    for the reader."""
    if not isinstance(text, str):
        text = str(text)
    plain = _NUMBER_SPACES.sub("", text).replace("\u2212", "-")
    superscripts = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
    match = re.fullmatch(r"([-+]?[0-9.]+)[x×*]10(?:\^|\*\*)?([-+]?[0-9⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", plain)
    if match:
        plain = f"{match.group(1)}e{match.group(2).translate(superscripts)}"
    try:
        value = float(plain)
    except ValueError:
        raise ValueError(f"{text.strip()[:40]!r} is not a number; type one such as 1.5e9 or "
                         "1,500") from None
    if not math.isfinite(value):
        raise ValueError("type a finite number")
    return value


def check(problem: Problem, v: Mapping[str, Any], answers: Mapping[str, Any]) -> tuple[Result, ...]:
    """Each answer field judged on the numbers ``v``, as the homework grader judges it. A field
    left empty is not passed, with the message "no answer yet"."""
    results = []
    for part in problem.parts:
        raw = answers.get(part.answer, "")
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            results.append(Result(part.answer, False, "no answer yet"))
            continue
        try:
            value = parse_number(raw)
        except ValueError as exc:
            results.append(Result(part.answer, False, str(exc)))
            continue
        message = feedback(part, v, value)
        results.append(Result(part.answer, message is None, typeset_numbers(message or "")))
    return tuple(results)

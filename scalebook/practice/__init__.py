"""Practice on the page: every worked problem of the book again with new numbers, and a
practice set per chapter, checked with the homework grader's own tolerance and hints.

One module per chapter declares its problems as ``PROBLEMS``, a tuple of
:class:`~scalebook.practice.problem.Problem`; :data:`CHAPTERS` lists them in the book's order
and :func:`get_problem` finds one by id. The page (``scalebook.live.practice``, run by the
reader's browser), the Jupyter widget and the tests all go through
:func:`~scalebook.practice.problem.draw` and :func:`~scalebook.practice.problem.check`.
"""

from __future__ import annotations

from types import MappingProxyType

from . import (hardware, inference, moe_long_context, parallelism, rooflines, serving_systems,
               sharded_matmuls, transformers)
from .problem import (MAX_TRIES, Problem, Result, check, draw, parse_number, question,
                      solution, typeset_numbers)

__all__ = ["CHAPTERS", "PROBLEMS", "get_problem", "Problem", "Result", "check", "draw",
           "parse_number", "question", "solution", "typeset_numbers", "MAX_TRIES"]

#: chapter (its page's file name, ``book/<name>.md``, with "-" as "_") -> its problems.
CHAPTERS: MappingProxyType[str, tuple[Problem, ...]] = MappingProxyType({
    "rooflines": rooflines.PROBLEMS,
    "hardware": hardware.PROBLEMS,
    "sharded_matmuls": sharded_matmuls.PROBLEMS,
    "parallelism": parallelism.PROBLEMS,
    "transformers": transformers.PROBLEMS,
    "inference": inference.PROBLEMS,
    "moe_long_context": moe_long_context.PROBLEMS,
    "serving_systems": serving_systems.PROBLEMS,
})

#: Every problem by id.
PROBLEMS: MappingProxyType[str, Problem] = MappingProxyType(
    {p.id: p for problems in CHAPTERS.values() for p in problems})


def get_problem(problem_id: str) -> Problem:
    """The problem ``problem_id`` ("parallelism.w4"); ``ValueError`` naming the chapters if none."""
    try:
        return PROBLEMS[problem_id]
    except KeyError:
        raise ValueError(f"no practice problem {str(problem_id)[:60]!r}; chapters: "
                         f"{', '.join(CHAPTERS)}") from None

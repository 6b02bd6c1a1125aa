"""What each homework varies from student to student, and the call a notebook makes for it.

One module per homework declares its :class:`~scalebook.variants.VariantSpec` as ``SPEC``;
:data:`SPECS` lists them by assignment name. A homework without a module here has no variants:
every student answers the numbers printed in it.

A homework notebook's first code cell holds the student's ``STUDENT_ID`` and ``HOMEWORK_KEY``;
its read-only setup cell then runs ::

    VARIANT = your_numbers("hw1-rooflines", STUDENT_ID, HOMEWORK_KEY)

which prints the student's numbers and returns them; the problems' given cells read their
inputs from ``VARIANT``. The grader binds ``VARIANT`` itself, for the student who handed the
notebook in, before it runs the hidden checks.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType, ModuleType
from typing import Callable, TypeVar

from ..variants import KeyError_, Variant, VariantSpec, check_key, default_variant, draw

from .parts import Design, Part, check_answer, parts_by_answer

__all__ = ["SPECS", "spec_for", "your_numbers", "SAMPLE_NOTE", "PARTS", "NOTEBOOK_PARTS", "parts_of",
           "check_answer"]

#: Each homework with variants, by assignment name: its module in this package. A module is
#: imported the first time its homework is looked up: a notebook or a grader needs one
#: homework, and importing all eight costs 0.13 s of every template's and grader's start.
MODULES: MappingProxyType[str, str] = MappingProxyType({
    "hw1-rooflines": "hw1_rooflines",
    "hw2-hardware": "hw2_hardware",
    "hw3-sharding": "hw3_sharding",
    "hw4-parallelism": "hw4_parallelism",
    "hw5-transformers": "hw5_transformers",
    "hw6-inference": "hw6_inference",
    "hw7-moe-long-context": "hw7_moe_long_context",
    "hw8-serving-systems": "hw8_serving_systems",
})

T = TypeVar("T")


class _PerHomework(Mapping[str, T]):
    """A read-only mapping, assignment -> ``value(module)``, over the homeworks of
    :data:`MODULES` for which ``value`` is not None; a lookup imports only that homework."""

    def __init__(self, value: Callable[[ModuleType], T | None]):
        self._value = value

    def __getitem__(self, assignment: str) -> T:
        if assignment not in MODULES:
            raise KeyError(assignment)
        found = self._value(importlib.import_module(f"{__name__}.{MODULES[assignment]}"))
        if found is None:
            raise KeyError(assignment)
        return found

    def __iter__(self) -> Iterator[str]:
        return (a for a in MODULES if a in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _spec(module: ModuleType) -> VariantSpec:
    return module.SPEC


@functools.cache
def _parts(module: ModuleType) -> dict[str, Part | Design] | None:
    if not hasattr(module, "PARTS"):
        return None
    return parts_by_answer(module.PARTS + getattr(module, "DESIGNS", ()))


#: Each homework's :class:`~scalebook.variants.VariantSpec` (its module's ``SPEC``).
SPECS: Mapping[str, VariantSpec] = _PerHomework(_spec)

#: Each homework's declared parts, ``assignment -> {answer: Part | Design}`` (see :mod:`.parts`):
#: its module's ``PARTS`` and ``DESIGNS``; a homework whose module declares no ``PARTS`` checks
#: its answers in its notebook.
PARTS: Mapping[str, dict[str, Part | Design]] = _PerHomework(_parts)


def _notebook_parts(module: ModuleType) -> tuple[Part, ...] | None:
    return getattr(module, "NOTEBOOK_PARTS", None)


#: The numeric answers that a hidden check compiling a JAX program judges (its module's
#: ``NOTEBOOK_PARTS``): declared parts, judged by :func:`.parts.check_number`, outside ``PARTS``
#: (their grade cells call the homework's own check function).
NOTEBOOK_PARTS: Mapping[str, tuple[Part, ...]] = _PerHomework(_notebook_parts)


def parts_of(assignment: str) -> dict[str, Part | Design]:
    """The declared parts of ``assignment`` by answer name; ``KeyError`` if it declares none."""
    try:
        return PARTS[assignment]
    except KeyError:
        raise KeyError(f"{assignment!r} declares no parts; homeworks that do: {', '.join(PARTS)}") from None


SAMPLE_NOTE = ("These are the sample numbers of the book. Enter your STUDENT_ID and HOMEWORK_KEY "
               "in the first cell and run the notebook again to get yours: your answers are graded "
               "against your own numbers.")


def spec_for(assignment: str) -> VariantSpec | None:
    """The spec of ``assignment``, or None when it has no variants."""
    return SPECS.get(assignment)


def your_numbers(assignment: str, student_id: str, homework_key: str | None, *,
                 show: bool = True) -> Variant:
    """The student's numbers for ``assignment``, printed (``show``) and returned.

    ``homework_key`` None: the course gives everyone the published numbers. Both empty: the
    published sample numbers, with a note saying how to get one's own. Otherwise the key must be
    well formed and belong to ``student_id`` (its check character), else ``KeyError_`` (a
    ``ValueError``) says what to fix.
    """
    spec = spec_for(assignment)
    if spec is None:
        raise ValueError(f"{assignment!r} has no per-student numbers; homeworks that do: "
                         f"{', '.join(SPECS)}")
    student_id = student_id if isinstance(student_id, str) else ""
    if homework_key is None:
        variant, note = default_variant(spec), ""
    elif not student_id.strip() and not str(homework_key).strip():
        variant, note = default_variant(spec), SAMPLE_NOTE
    else:
        variant, note = draw(spec, check_key(student_id, homework_key)), ""
    if show:
        who = f" ({student_id.strip()})" if student_id.strip() and homework_key else ""
        print(f"Your numbers for {assignment}{who}:")
        print(variant.table())
        if note:
            print()
            print(note)
    return variant

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

from types import MappingProxyType

from ..variants import KeyError_, Variant, VariantSpec, check_key, default_variant, draw
from . import hw1_rooflines
from . import hw2_hardware
from . import hw3_sharding
from . import hw4_parallelism
from . import hw5_transformers
from . import hw6_inference
from . import hw7_moe_long_context

from .parts import Design, Part, check_answer, parts_by_answer

__all__ = ["SPECS", "spec_for", "your_numbers", "SAMPLE_NOTE", "PARTS", "parts_of", "check_answer"]

SPECS: MappingProxyType[str, VariantSpec] = MappingProxyType({
    hw1_rooflines.SPEC.assignment: hw1_rooflines.SPEC,
    hw2_hardware.SPEC.assignment: hw2_hardware.SPEC,
    hw3_sharding.SPEC.assignment: hw3_sharding.SPEC,
    hw4_parallelism.SPEC.assignment: hw4_parallelism.SPEC,
    hw5_transformers.SPEC.assignment: hw5_transformers.SPEC,
    hw6_inference.SPEC.assignment: hw6_inference.SPEC,
    hw7_moe_long_context.SPEC.assignment: hw7_moe_long_context.SPEC,
})

#: Each homework's declared parts, ``assignment -> {answer: Part | Design}`` (see :mod:`.parts`):
#: its module's ``PARTS`` and ``DESIGNS``; a homework whose module declares no ``PARTS`` checks
#: its answers in its notebook.
PARTS: MappingProxyType[str, dict[str, Part | Design]] = MappingProxyType({
    module.SPEC.assignment: parts_by_answer(module.PARTS + getattr(module, "DESIGNS", ()))
    for module in (hw1_rooflines, hw2_hardware, hw3_sharding, hw4_parallelism, hw5_transformers,
                   hw6_inference, hw7_moe_long_context)
    if hasattr(module, "PARTS")
})


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

"""A homework part as data: its answer, its expected value, the conventions it accepts or pins,
and the slips it recognises; one generic checker and one generic well-posedness rule over them.

A :class:`Part` is declared once, in its homework's module (``hw4_parallelism.PARTS``). Every
value in it is a function of the student's numbers ``v`` (the variant, a mapping ``name ->
value``) that calls the solver:

- ``expected(v)``: the reference answer, one solver call;
- a :class:`Convention` is another way an expert computes the same quantity (the exact ring
  factor (N − 1)/N against the first cut; 12 or 16 bytes per parameter). Its verdict is
  ``ACCEPTED`` (full marks) or ``PINNED``: the problem text names the convention it wants (its
  ``phrase`` must appear in the problem's markdown, a test checks it) and an answer under the
  other convention scores zero with a hint that names the convention wanted;
- a :class:`Slip` is a known error with its value and the hint it earns;
- each convention and slip names the entries of the alternatives catalog
  (:mod:`.alternatives`: bits for bytes, a multiply-add as one FLOP, per chip or global, ...)
  whose outcome it stands for (``alternatives``), and the part names those that do not apply to
  it, with the reason (``not_applicable``); tests/test_homework_alternatives.py asks every part
  every entry that applies to it.

A hinted value that is NaN does not apply to that draw: two slips that give the same value in
some draws (Z = 2 mesh copies and 2 bytes per element) are declared as the two single slips,
NaN where they coincide, and one merged slip, NaN elsewhere, whose hint names both causes.

Hints are format strings: ``{answer}`` is the student's value, any other name a variant value
(``"that is {answer:.3g} s for {q3_X} chips"``).

:func:`check_answer` is what a hidden test cell calls (:func:`test_cell_source` writes the cell);
:func:`well_posed` is the rule a homework's variant spec applies to every draw: no slip and no
pinned convention within the tolerance of an accepted answer, no accepted answer at twice or half
the reference, and no two hints that fire on one value.

Pure functions over frozen dataclasses; no global state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, SupportsFloat, Union

from ..units import format_percent
from ..variants import Variant
from .alternatives import (CATALOG, UNITS, Alternative, NotApplicable, alternative,
                           applies_by_unit, readings, role_of)

__all__ = ["ACCEPTED", "PINNED", "Convention", "Slip", "Part", "Design", "Example", "Verdict",
           "judge", "feedback", "check_answer", "well_posed", "test_cell_source", "parts_by_answer", "merged",
           "coinciding", "distinct_from", "Distinct", "describe", "as_float", "Number", "Value", "NotApplicable",
           "sources", "applicable", "targets", "Targets", "check_number", "whole_number",
           "judge_design", "near_best"]

ACCEPTED = "accepted"
PINNED = "pinned"

#: A value: a number (a float, or what the solver returns for one: an int, a NumPy scalar or 0-d
#: array), or, for an array part, a sequence of numbers.
Number = Union[SupportsFloat, Sequence[SupportsFloat]]
#: A value function: the student's numbers in, the value out.
Value = Callable[[Mapping[str, Any]], Number]
#: The margin, beyond a check's tolerance, that a slip keeps from an accepted answer in a
#: well-posed draw (6% for a 5% check), so napkin rounding of a slip never scores.
MARGIN = 1.2


#: A hint: a format string, or a function of the variant that returns one.
Hint = Union[str, Callable[[Mapping[str, Any]], str]]


@dataclass(frozen=True)
class Convention:
    """Another defensible way to compute the part's quantity.

    ``value(v)`` is the answer under this convention. ``verdict`` is :data:`ACCEPTED` or
    :data:`PINNED`; a pinned convention names the ``phrase`` the problem text must contain (the
    convention the problem asks for) and the ``hint`` an answer under this one earns.
    """

    name: str
    value: Value
    verdict: str = ACCEPTED
    phrase: str = ""
    hint: str = ""
    alternatives: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in (ACCEPTED, PINNED):
            raise ValueError(f"convention {self.name!r}: verdict must be {ACCEPTED!r} or {PINNED!r}")
        if self.verdict == PINNED and not (self.phrase and self.hint):
            raise ValueError(f"pinned convention {self.name!r} needs the phrase the problem text "
                             "contains and the hint that names it")


@dataclass(frozen=True)
class Slip:
    """A known error: ``value(v)`` is what it gives, ``hint`` what the feedback says (a format
    string, or a function of the variant that returns one); ``alternatives``: the catalog
    entries (:mod:`.alternatives`) whose cause the hint names."""

    name: str
    value: Value
    hint: Hint
    alternatives: tuple[str, ...] = ()


def _joined(prefix: str, hints: Sequence[Hint]) -> Hint:
    """One hint naming several causes: ``prefix`` then each hint, joined by " Or: " (a function of
    the variant when any of them is one)."""
    if all(isinstance(h, str) for h in hints):
        return prefix + " Or: ".join(h for h in hints if isinstance(h, str))
    return lambda v: prefix + " Or: ".join(h if isinstance(h, str) else h(v) for h in hints)


@dataclass(frozen=True)
class Part:
    """One graded answer.

    ``answer``: the variable the student binds (unique within a homework; the hidden test cell
    checks it). ``expected(v)``: the reference value. ``rel``: the relative tolerance (0.05 for
    napkin math, 0.001 for counts). ``positive``: the visible form check wants a value above 0.
    ``shape``: None for a number; for an array answer (a roofline curve at 14 batch sizes) its
    shape, ``(14,)``. An array part's values are sequences of that length, judged element by
    element: a value matches a target when every element lies within ``rel`` of the target's.
    ``unit``: the answer's dimension, one of :data:`~.alternatives.UNITS` ("s" for a time asked
    in ms); the catalog entries of that unit apply to it, and "" (undeclared) makes every entry
    apply. ``not_applicable``: the catalog entries that do not, each with its reason.
    """

    answer: str
    expected: Value
    rel: float = 0.05
    conventions: tuple[Convention, ...] = ()
    slips: tuple[Slip, ...] = ()
    positive: bool = True
    shape: tuple[int, ...] | None = None
    unit: str = ""
    not_applicable: tuple[NotApplicable, ...] = ()

    def __post_init__(self) -> None:
        if not 0 < self.rel < 1:
            raise ValueError(f"part {self.answer!r}: rel must be between 0 and 1")
        names = [c.name for c in self.conventions] + [s.name for s in self.slips]
        if len(set(names)) != len(names):
            raise ValueError(f"part {self.answer!r} names a convention or slip twice: {names}")
        if self.unit and self.unit not in UNITS:
            raise ValueError(f"part {self.answer!r}: unit {self.unit!r} is not one of {sorted(UNITS)}")
        for x in _declared(self):
            for name in x.alternatives:
                alternative(name)  # KeyError for a name not in the catalog

    @property
    def accepted(self) -> tuple[Convention, ...]:
        return tuple(c for c in self.conventions if c.verdict == ACCEPTED)

    @property
    def pinned(self) -> tuple[Convention, ...]:
        return tuple(c for c in self.conventions if c.verdict == PINNED)

    def hinted(self) -> tuple[tuple[str, Value, Hint], ...]:
        """(name, value, hint) of every pinned convention and slip: what earns a hint."""
        return (tuple((c.name, c.value, c.hint) for c in self.pinned)
                + tuple((s.name, s.value, s.hint) for s in self.slips))

    def not_applicable_reason(self, name: str, reading: str = "") -> str | None:
        """Why the catalog entry ``name`` (its reading ``reading``) does not apply to this part,
        or None."""
        return next((n.reason for n in self.not_applicable if n.alternative == name
                     and n.reading in ("", reading)), None)


@dataclass(frozen=True)
class Verdict:
    """How a value fares: ``passed``, and the hints it earns when it does not."""

    passed: bool
    hints: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Example:
    """A wrong choice for a :class:`Design` and a phrase its feedback must contain (the matrix
    test checks it for every drawn student)."""

    name: str
    value: Callable[[Mapping[str, Any]], Any]
    fragment: str


@dataclass(frozen=True)
class Design:
    """A part whose answer is a choice (a layout, a serving configuration, a degree of
    parallelism), graded by the solver.

    ``reference(v)``: the solver's best choice, which passes. ``judge(v, value)``: a
    :class:`Verdict`, passing every choice the solver finds feasible within the stated margin
    of its best, and saying why another fails ("needs 97.1 GiB per chip; the H100 has 74.5").
    ``form``: the visible check's one-line description of the answer's form (a list of 7).
    ``length``: the number of entries the answer list has, or None for a single number (the
    visible check is then :func:`scalebook.checks.check_number`'s). ``examples``: wrong
    choices the matrix test feeds the judge.
    """

    answer: str
    reference: Callable[[Mapping[str, Any]], Any]
    judge: Callable[[Mapping[str, Any], Any], "Verdict"]
    form: str
    length: int | None = None
    examples: tuple[Example, ...] = ()


def whole_number(value: Any, what: str) -> int | str:
    """The one rule of every design part for an answer that counts something: an int, or a
    float with a whole value (``103.0``, what arithmetic gives), as an int; anything else (a
    bool, ``32.9``, a string) is not truncated but refused: the message says it has to be a
    whole number."""
    if isinstance(value, (bool, str, bytes)):
        return f"{what} has to be a whole number, not {value!r}."
    if isinstance(value, int):
        return value
    try:
        x = float(value)
    except (TypeError, ValueError):
        return f"{what} has to be a whole number, not {value!r}."
    if not math.isfinite(x) or x != int(x):
        return f"{what} has to be a whole number, not {value!r}."
    return int(x)


def judge_design(part: Design, v: Mapping[str, Any], value: Any) -> Verdict:
    """A design part's verdict on ``value``: its judge's, and a design the solver refuses (a
    ``ValueError``: more pipeline stages than layers) judged like any infeasible one, failed
    with the solver's reason, never as an error of the grader."""
    try:
        return part.judge(v, list(value) if isinstance(value, tuple) else value)
    except ValueError as exc:
        return Verdict(False, (f"The course's solver cannot build this design: {exc}",))


def near_best(value: float, best: float, margin: float, said: str, compared: str) -> Verdict:
    """The last test of a :class:`Design`'s judge: passed when the student's feasible design
    scores ``value`` (a time, a cost: lower is better) at most ``margin`` above the solver's
    ``best``; else failed with ``said`` ("It meets the target, but ... costs $3.1"), how much
    worse it is, ``compared`` to what ("more than the cheapest configuration"), and the margin
    that full points need."""
    if value > (1 + margin) * best:
        return Verdict(False, (f"{said}, {value / best - 1:.0%} {compared} the course's solver "
                               f"finds: full points need one within {margin:.0%} of it.",))
    return Verdict(True)


def as_float(x: Number) -> float:
    """A scalar value as a float; ``TypeError`` for a sequence (an array part's value where a
    number belongs: a definition error)."""
    if isinstance(x, Sequence):
        raise TypeError("a number is expected here, not a sequence")
    return float(x)


def _near(value: float, target: float, rel: float) -> bool:
    return abs(value - target) <= rel * abs(target)


def _floats(x: Any) -> tuple[float, ...]:
    """A number or a sequence of numbers (a list, a tuple, a NumPy array) as a tuple of floats."""
    try:
        return tuple(float(e) for e in x)
    except TypeError:
        return (float(x),)


def _matches(value: Any, target: Any, rel: float) -> bool:
    """Whether ``value`` lies within ``rel`` of ``target``: a number, or every element of an
    array of the same length (NaN, the sign of a hint that does not apply, matches nothing)."""
    a, b = _floats(value), _floats(target)
    return len(a) == len(b) and all(_near(x, y, rel) for x, y in zip(a, b))


def _fill(hint: str | Callable[[Mapping[str, Any]], str], v: Mapping[str, Any], answer: float) -> str:
    """A hint's text: a format string over the variant and ``answer``, or a function of the
    variant that writes it (a figure the variant does not hold, such as X·Z)."""
    return (hint(v) if callable(hint) else hint).format(**dict(v), answer=answer)


class _Reads(Mapping[str, Any]):
    """A student's numbers that remember which ones were read."""

    def __init__(self, v: Mapping[str, Any]):
        self._v = v
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return self._v[name]

    def __iter__(self):
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)


def applicable(part: Part, v: Mapping[str, Any], spec: Any = None
               ) -> list[tuple[Alternative, str, float | None]]:
    """(entry, role input name or "", its value) for each catalog entry that applies to
    ``part`` at ``v``: an automatic entry of the part's unit (every one, for a part that
    declares none), once per varied input of its role the expected value reads (the roles come
    from ``spec``, by default ``v.spec``; none without one); an entry the part names in a
    convention, slip or ``not_applicable``."""
    spec = spec if spec is not None else getattr(v, "spec", None)
    reads = _Reads(v)
    part.expected(reads)
    named = {n for x in _declared(part) for n in x.alternatives}
    named |= {n.alternative for n in part.not_applicable}
    params = spec.parameters if spec is not None else {}
    out: list[tuple[Alternative, str, float | None]] = []
    for alt in CATALOG:
        if not (alt.auto and applies_by_unit(alt, part.unit)) and alt.name not in named:
            continue
        if alt.role:
            out += [(alt, name, float(v[name])) for name in sorted(reads.read)
                    if name in params and role_of(params[name].label, params[name].unit) == alt.role]
        else:
            out.append((alt, "", None))
    return out


@dataclass(frozen=True)
class Targets:
    """Everything a part's verdict at one student's numbers compares with, computed once: the
    accepted values, each pinned convention's and slip's (name, catalog entries, value, hint),
    and each catalog reading of an applicable entry with a hint of its own that the part does
    not declare not applicable, as (entry, value, hint); ``quiet``: each :class:`Distinct` slip
    silent at these numbers, with its raw value, as ``hinted``."""

    part: Part
    v: Mapping[str, Any]
    accepted: tuple[Any, ...]
    hinted: tuple[tuple[str, tuple[str, ...], Any, Hint], ...]
    catalog: tuple[tuple[str, tuple[float, ...], str], ...]
    quiet: tuple[tuple[str, tuple[str, ...], float, Hint], ...] = ()


def _catalog_readings(part: Part, v: Mapping[str, Any], expected: Any, spec: Any = None
                      ) -> tuple[tuple[str, tuple[float, ...], str], ...]:
    """(entry, reading, hint) of each catalog reading of ``expected`` that has a hint of its own
    and that ``part`` does not declare not applicable; none for a part without a unit."""
    if not part.unit:
        return ()
    out: list[tuple[str, tuple[float, ...], str]] = []
    for alt, _name, n in applicable(part, v, spec):
        if alt.hint:
            out += [(alt.name, reading, alt.hint.format(n=n if n is not None else 0.0))
                    for label, reading in readings(alt, _floats(expected), n)
                    if part.not_applicable_reason(alt.name, label) is None]
    return tuple(out)


def targets(part: Part, v: Mapping[str, Any], spec: Any = None) -> Targets:
    """The :class:`Targets` of ``part`` at ``v`` (``spec``: as for :func:`applicable`)."""
    expected = part.expected(v)
    hinted = tuple((x.name, x.alternatives, x.value(v), x.hint) for x in _hinting(part))
    quiet = tuple((x.name, x.alternatives, x.value.raw(v), x.hint)
                  for x, (*_n, value, _h) in zip(_hinting(part), hinted)
                  if isinstance(x.value, Distinct) and value != value)
    return Targets(part, v, tuple([expected] + [c.value(v) for c in part.accepted]), hinted,
                   _catalog_readings(part, v, expected, spec), quiet)


def _catalog_hint(t: Targets, value: Any, named: tuple[str, ...] = ()
                  ) -> tuple[str, tuple[str, ...], str] | None:
    """The catalog's own hint for ``value``: every entry of ``t.catalog`` not in ``named`` (the
    causes a declared hint already names) one of whose readings ``value`` matches; several in
    one hint that names each. None if none matches."""
    found: list[tuple[str, str]] = []
    for name, reading, hint in t.catalog:
        if name not in named and name not in [f for f, _h in found] and _matches(value, reading, t.part.rel):
            found.append((name, hint))
    if not found:
        return None
    names = tuple(f for f, _h in found)
    hint = found[0][1] if len(found) == 1 else (
        f"{len(found)} readings give about this value: " + " Or: ".join(h for _f, h in found))
    return " or ".join(names), names, hint


def sources(part: Part, v: Mapping[str, Any], value: Any, within: Targets | None = None
            ) -> tuple[bool, tuple[tuple[str, tuple[str, ...], str], ...]]:
    """How ``value`` is judged, with where each hint comes from: (passed, ((name, catalog
    entries it names, hint text), ...)). The declared pinned conventions and slips it matches;
    for a part that declares its unit, the catalog's own hint (:func:`_catalog_hint`: a value in
    bits, GiB or ms, per chip for all chips, ...) when no declared hint matches, or added to the
    one that does when the two causes give about the same value (as :func:`coinciding` does).
    ``within``: the part's :func:`targets` at ``v``, when already computed."""
    if within is None:      # the grader's path: the catalog's readings only for a wrong answer
        if any(_matches(value, a, part.rel)
               for a in [part.expected(v)] + [c.value(v) for c in part.accepted]):
            return True, ()
        within = targets(part, v)
    t = within
    if any(_matches(value, a, part.rel) for a in t.accepted):
        return True, ()
    out: list[tuple[str, tuple[str, ...], str]] = []
    for name, names, wrong, hint in t.hinted:
        if not _matches(value, wrong, part.rel):  # NaN is never near
            continue
        text = _fill(hint, v, value)
        if text not in [h for *_n, h in out]:
            out.append((name, names, text))
    if len(out) <= 1:
        found = _catalog_hint(t, value, out[0][1] if out else ())
        if found is not None and out:
            # a declared slip and a catalog reading coincide here: one hint names both causes
            name, names, hint = out[0]
            out[0] = (name, names + found[1], f"{hint} Or: {found[2]}")
        elif found is not None:
            out.append(found)
    if not out:     # a slip just outside the check, silent in the draw, still names its cause
        out += [(name, names, _fill(hint, v, value)) for name, names, wrong, hint in t.quiet
                if _matches(value, wrong, part.rel)][:1]
    return False, tuple(out)


def judge(part: Part, v: Mapping[str, Any], value: float, within: Targets | None = None) -> Verdict:
    """Whether ``value`` is right for the student with numbers ``v``, under the reference or
    an accepted convention; if not, the hints it earns (:func:`sources`; ``within``: the part's
    :func:`targets` at ``v``, when one caller judges several answers of one student)."""
    passed, found = sources(part, v, value, within)
    return Verdict(passed, tuple(hint for *_n, hint in found))


def check_number(part: Part, v: Mapping[str, Any], value: Any) -> None:
    """The number ``value`` judged as ``part`` on the numbers ``v``: ``AssertionError`` with
    :func:`feedback`'s message unless it passes. The hidden checks that compile a JAX program
    (hw3's and hw4's specs) judge their numeric answer with it, so those answers are declared
    parts too, asked every alternative like the others."""
    from ..checks import _as_number
    message = feedback(part, v, _as_number(value, part.answer, positive=False))
    if message is not None:
        raise AssertionError(message)


def check_answer(v: Variant, answer: str, value: Any) -> None:
    """The hidden check of one part: the part named ``answer`` of the homework ``v`` belongs to
    (``v.assignment``), judged on the student's numbers ``v``. Raises ``AssertionError`` whose
    message names the answer, the student's value and the tolerance (never the expected value),
    followed by the hints earned; returns ``None`` when the answer is right."""
    from . import parts_of  # the registry of every homework's parts

    part = parts_of(v.assignment)[answer]
    if isinstance(part, Design):
        verdict = judge_design(part, v, value)
        if not verdict.passed:
            # the judge's reasons are the hints: the feedback's hint column and the report's
            # grouping of wrong answers read what follows "Hint:", so a rejected design is
            # never shown without its reason
            reasons = verdict.hints or ("the course's solver rejects it.",)
            raise AssertionError(" ".join([f"{answer} = {value!r} does not meet the problem's "
                                           "conditions.", *(f"Hint: {h}" for h in reasons)]))
        return
    if part.shape is not None:
        from ..checks import _as_array  # NumPy-aware: only the notebook's check needs it
        message = feedback(part, v, tuple(float(x) for x in
                                          _as_array(value, answer, shape=part.shape,
                                                    positive=False).ravel()))
    else:
        from ..checks import _as_number
        message = feedback(part, v, _as_number(value, answer, positive=False))
    if message is not None:
        raise AssertionError(message)


def feedback(part: Part, v: Mapping[str, Any], value: Any) -> str | None:
    """What the grader says of ``value`` for the part ``part`` on the numbers ``v``: None when it
    is right (the reference or an accepted convention, within the part's tolerance), else a
    message naming the answer, the value and the tolerance (never the expected value),
    followed by every hint it earns. The homework's hidden check and the book's practice
    problems both print this."""
    verdict = judge(part, v, value)
    if verdict.passed:
        return None
    if part.shape is not None:
        target = _floats(part.expected(v))
        values = _floats(value)
        bad = [i for i, (x, t) in enumerate(zip(values, target)) if not _near(x, t, part.rel)]
        message = (f"{len(bad)} of {len(values)} values of {part.answer} are not within "
                   f"{format_percent(part.rel)} of the expected answers (the first is at index "
                   f"{bad[0] if bad else 0}).")
    else:
        message = (f"{part.answer} = {value:.4g} is not within {format_percent(part.rel)} "
                   f"of the expected answer.")
    return " ".join([message, *(f"Hint: {h}" for h in verdict.hints)])


Vector = tuple[float, ...]


def _values(part: Part, v: Mapping[str, Any]) -> tuple[list[Vector], list[tuple[Vector, Hint]]] | None:
    """(accepted values, (hinted value, hint) of the hints that apply) at ``v``, each a tuple of
    floats (one for a number); None if a value is not a number (or its solver call rejects
    the draw)."""
    try:
        accepted = [_floats(part.expected(v))] + [_floats(c.value(v)) for c in part.accepted]
        hinted = [(_floats(wrong(v)), hint) for _n, wrong, hint in part.hinted()]
    except (ValueError, ZeroDivisionError):
        return None
    hinted = [(x, hint) for x, hint in hinted if not any(math.isnan(e) for e in x)]
    if not all(math.isfinite(e) for x in accepted + [x for x, _ in hinted] for e in x):
        return None
    return accepted, hinted


def _overlap_one(a: float, b: float, rel: float) -> bool:
    lo_a, hi_a = sorted((a * (1 - rel), a * (1 + rel)))
    lo_b, hi_b = sorted((b * (1 - rel), b * (1 + rel)))
    return lo_a <= hi_b and lo_b <= hi_a


def _overlap(a: Any, b: Any, rel: float) -> bool:
    """Whether some value lies within ``rel`` of both ``a`` and ``b`` (element by element for
    arrays)."""
    x, y = _floats(a), _floats(b)
    return len(x) == len(y) and all(_overlap_one(p, q, rel) for p, q in zip(x, y))


def _declared(part: "Part") -> tuple["Convention | Slip", ...]:
    """A part's conventions and slips, the declarations that name catalog entries."""
    return (*part.conventions, *part.slips)


def _hinting(part: "Part") -> tuple["Convention | Slip", ...]:
    """A part's pinned conventions and slips: what earns a hint."""
    return (*part.pinned, *part.slips)


def part_well_posed(part: Part, v: Mapping[str, Any]) -> bool:
    """The generic rule for one part at ``v``: every value computable and finite; no hinted
    value (slip or pinned convention) within ``MARGIN × rel`` of an accepted one; neither twice
    nor half the reference accepted; no two different hints that fire on one value (the same
    hint declared for two conventions' slips may). For an array part "within" means every
    element within, so a hinted array must differ from the answer in one element at least."""
    values = _values(part, v)
    if values is None:
        return False
    accepted, hinted = values
    rel = part.rel
    reference = accepted[0]
    if any(x == 0 for x in reference):
        return False
    doubled, halved = tuple(2 * x for x in reference), tuple(x / 2 for x in reference)
    for h in [x for x, _ in hinted] + [doubled, halved]:
        if any(_matches(h, a, MARGIN * rel) for a in accepted):
            return False
    return not any(_overlap(a, b, rel) and ha != hb
                   for i, (a, ha) in enumerate(hinted) for b, hb in hinted[i + 1:])


def design_well_posed(part: Design, v: Mapping[str, Any]) -> bool:
    """A design draw is well posed when the solver finds a choice, it passes its own judge and
    every example fails."""
    try:
        best = part.reference(v)
    except ValueError:
        return False
    return part.judge(v, best).passed and not any(
        part.judge(v, e.value(v)).passed for e in part.examples)


def well_posed(parts: Iterable[Part | Design], v: Mapping[str, Any]) -> bool:
    """:func:`part_well_posed` (:func:`design_well_posed`) for every part."""
    return all(design_well_posed(p, v) if isinstance(p, Design) else part_well_posed(p, v)
               for p in parts)


def _gated(value: Value, keep: Callable[[Mapping[str, Any]], bool]) -> Value:
    """``value`` in the draws where ``keep(v)``, else NaN; a :class:`Distinct` stays one, so its
    quiet target (the raw value) is kept where it is silent."""
    nan = float("nan")
    if isinstance(value, Distinct):
        inner = value
        return Distinct(inner.expected, lambda v: inner.raw(v) if keep(v) else nan, inner.rel)
    return lambda v: value(v) if keep(v) else nan


def merged(a: Slip, b: Slip, hint: str, rel: float = 0.05) -> tuple[Slip, ...]:
    """Slips ``a`` and ``b``, and, in the draws where some value is within ``rel`` of both (so
    it would earn both hints), one hint that names both causes instead: four slips, each NaN
    (not applying) where the other form applies."""
    nan = float("nan")

    def close(v) -> bool:
        return _overlap(as_float(a.value(v)), as_float(b.value(v)), rel)

    both = a.alternatives + tuple(x for x in b.alternatives if x not in a.alternatives)
    return (Slip(a.name, _gated(a.value, lambda v: not close(v)), a.hint, a.alternatives),
            Slip(b.name, _gated(b.value, lambda v: not close(v)), b.hint, b.alternatives),
            Slip(f"{a.name} (or {b.name})", lambda v: a.value(v) if close(v) else nan, hint, both),
            Slip(f"{b.name} (or {a.name})", lambda v: b.value(v) if close(v) else nan, hint, both))


def coinciding(*slips: Slip, rel: float = 0.05) -> tuple[Slip, ...]:
    """:func:`merged` for any number of slips: at each draw the slips whose values overlap
    (some value lies within ``rel`` of each, chained) form a group; a slip alone in its group
    keeps its hint, and a group of several earns one hint that names every cause. Returns one
    slip per non-empty subset of ``slips`` (2**n − 1 of them; singles first, in order), each
    NaN (not applying) except at the draws where that subset is a group."""
    from itertools import combinations
    nan = float("nan")

    def groups(v) -> list[frozenset[int]]:
        values = [as_float(x.value(v)) for x in slips]
        order = sorted((i for i, x in enumerate(values) if not math.isnan(x)), key=lambda i: values[i])
        out: list[set[int]] = []
        for i in order:
            if out and any(_overlap(values[i], values[j], rel) for j in out[-1]):
                out[-1].add(i)
            else:
                out.append({i})
        return [frozenset(g) for g in out]

    def member(subset: frozenset[int]) -> Value:
        first = slips[min(subset)].value
        if len(subset) == 1 and isinstance(first, Distinct):  # alone, or silent in the draw
            return _gated(first, lambda v: subset in groups(v) or math.isnan(as_float(first(v))))
        return lambda v: as_float(first(v)) if subset in groups(v) else nan

    out = []
    for size in range(1, len(slips) + 1):
        for subset in combinations(range(len(slips)), size):
            chosen = [slips[i] for i in subset]
            hint = chosen[0].hint if size == 1 else _joined(
                f"{len(chosen)} slips give about this value: ", [x.hint for x in chosen])
            names = tuple(dict.fromkeys(n for x in chosen for n in x.alternatives))
            out.append(Slip(" or ".join(x.name for x in chosen), member(frozenset(subset)), hint,
                            names))
    return tuple(out)


@dataclass(frozen=True)
class Distinct:
    """A slip's (or pinned convention's) value in the draws where a check can tell it from the
    answer: ``value(v)``, or NaN where it lies within ``MARGIN × rel`` of ``expected(v)`` (the
    first cut of a ring over 64 chips is 1.6% off the exact cost). The well-posedness rule and
    the grouping of coinciding slips ignore it there, so such a draw is kept. Where it lies just
    outside the check (5% to 6% off for a 5% check) an answer near it fails, and still earns its
    hint: :func:`targets` keeps the :meth:`raw` value as a quiet target, which :func:`sources`
    asks when nothing else explains the answer."""

    expected: Value
    value: Value
    rel: float = 0.05

    def raw(self, v: Mapping[str, Any]) -> float:
        """The slip's value at ``v``, whether or not a check can tell it from the answer."""
        return as_float(self.value(v))

    def __call__(self, v: Mapping[str, Any]) -> float:
        x = self.raw(v)
        return float("nan") if _near(x, as_float(self.expected(v)), MARGIN * self.rel) else x


def distinct_from(expected: Value, value: Value, rel: float = 0.05) -> Distinct:
    """``value`` where a check at tolerance ``rel`` tells it from ``expected`` (beyond
    ``MARGIN × rel``): a :class:`Distinct`."""
    return Distinct(expected, value, rel)


def parts_by_answer(parts: Iterable[Part | Design]) -> dict[str, Part | Design]:
    """``answer -> Part`` (or Design); raises ``ValueError`` if two parts bind the same answer."""
    out: dict[str, Part | Design] = {}
    for part in parts:
        if part.answer in out:
            raise ValueError(f"two parts answer {part.answer!r}")
        out[part.answer] = part
    return out


def _visible(part: Part | Design) -> list[str]:
    """The visible form check of one answer."""
    name = part.answer
    if isinstance(part, Design) and part.length is not None:
        return [f"assert isinstance({name}, (list, tuple)) and len({name}) == {part.length}, (",
                f"    {f'{name} should be {part.form}.'!r})"]
    if isinstance(part, Part) and part.shape is not None:
        return ["from scalebook.checks import check_array",
                f'check_array({name}, "{name}", shape={part.shape!r}, positive={part.positive})']
    return ["from scalebook.checks import check_number",
            f'check_number({name}, "{name}")' if isinstance(part, Design) or part.positive else
            f'check_number({name}, "{name}", positive=False)']


def test_cell_source(part: Part | Design, *more: Part | Design) -> str:
    """The source of a graded test cell: a visible form check of each answer and a hidden check
    of one import and one ``check_answer`` call per answer. One part per cell as a rule; a cell
    that grades several answers for one point (hw1's ``bytes_read`` and ``bytes_written``)
    passes them all, in the order the prompt names them."""
    parts = (part, *more)
    visible: list[str] = []
    for p in parts:
        visible += [line for line in _visible(p) if line not in visible or not line.startswith("from ")]
    return "\n".join([
        *visible,
        "### BEGIN HIDDEN TESTS",
        "from scalebook.homework import check_answer",
        *(f'check_answer(VARIANT, "{p.answer}", {p.answer})' for p in parts),
        "### END HIDDEN TESTS",
    ])


setattr(test_cell_source, "__test__", False)  # not a pytest test


def describe(part: Part | Design) -> list[str]:
    """Lines that list what a part declares: its answer and tolerance, each convention with its
    verdict (and the phrase that pins it), each slip by name; a design part by its form."""
    if isinstance(part, Design):
        return [f"{part.answer}: design, {part.form}; judged by the solver"]
    shape = f", array {part.shape}" if part.shape is not None else ""
    unit = f", {part.unit}" if part.unit else ", unit not declared"
    lines = [f"{part.answer} (within {format_percent(part.rel)}{unit}{shape})"]
    named = {n for x in _declared(part) for n in x.alternatives}
    asked = [a.name + (f" (per {a.role} input)" if a.role else "") for a in CATALOG
             if (a.auto and applies_by_unit(a, part.unit)) or a.name in named]
    if asked:
        lines.append(f"    asked: {'; '.join(asked)}")
    for c in part.conventions:
        phrase = " ".join(c.phrase.split())
        pinned = f' -- the text says "{phrase}"' if c.verdict == PINNED else ""
        names = f" [{', '.join(c.alternatives)}]" if c.alternatives else ""
        lines.append(f"    convention {c.name}{names}: {c.verdict}{pinned}")
    slip_names = [s.name + (f" [{', '.join(s.alternatives)}]" if s.alternatives else "")
                  for s in part.slips]
    if slip_names:
        lines.append(f"    slips: {'; '.join(slip_names)}")
    for n in part.not_applicable:
        reading = f" ({n.reading})" if n.reading else ""
        lines.append(f"    not applicable {n.alternative}{reading}: {n.reason}")
    return lines


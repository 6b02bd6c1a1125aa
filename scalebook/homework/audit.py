"""Every part asked every alternative of the catalog that applies to it: how each resolves.

:func:`audit` runs one numeric :class:`~.parts.Part` on one student's numbers through each
entry of :data:`~.alternatives.CATALOG` that applies to it (its unit; for an entry with a role,
each varied input of that role the part's expected value reads) and says, for each reading that
leaves the part's tolerance, how the grader answers it:

- ``accepted``: full marks (a declared convention);
- ``hinted``: one hint, whose declared causes include the entry (a pinned convention, a slip,
  or the entry's own hint for a unit reading);
- ``not applicable``: the part says why, in its ``not_applicable``;
- ``silent``: zero marks and no hint; ``wrong cause``: one hint that names another cause;
  ``two hints``: more than one. These three are what tests/test_homework_alternatives.py
  forbids.

Pure functions; the catalog and the parts are data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from ..variants import VariantSpec
from .alternatives import CATALOG, Alternative, applies_by_unit, readings, role_of
from .parts import Part, _floats, _matches, sources

__all__ = ["Outcome", "audit", "applicable", "FORBIDDEN", "RESOLVED"]

RESOLVED = ("accepted", "hinted", "not applicable")
FORBIDDEN = ("silent", "wrong cause", "two hints")


@dataclass(frozen=True)
class Outcome:
    """One reading of one part on one student's numbers: the catalog entry, the reading
    (``"x"``, ``"/"``, ``"up"``, ``"down"``; with the role input's name), how it resolved
    (one of :data:`RESOLVED` or :data:`FORBIDDEN`) and the hints the grader gave."""

    part: str
    alternative: str
    reading: str
    resolution: str
    hints: tuple[str, ...] = ()
    causes: tuple[str, ...] = ()


class _Reads(Mapping[str, Any]):
    """A student's numbers that remember which ones were read."""

    def __init__(self, v: Mapping[str, Any]):
        self._v = v
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return self._v[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)


def _role_inputs(spec: VariantSpec, read: set[str], role: str) -> list[str]:
    return sorted(name for name in read if name in spec.parameters
                  and role_of(spec.parameters[name].label, spec.parameters[name].unit) == role)


def applicable(part: Part, spec: VariantSpec, v: Mapping[str, Any], unit: str = ""
               ) -> list[tuple[Alternative, str, float | None]]:
    """(entry, role input name or "", its value) for each catalog entry that applies to
    ``part`` at ``v``: an automatic entry of the part's unit (``unit`` overrides an undeclared
    one), once per varied input of its role the expected value reads; an entry the part names
    in a convention, slip or ``not_applicable``."""
    reads = _Reads(v)
    part.expected(reads)
    unit = part.unit or unit
    named = {n for x in (*part.conventions, *part.slips) for n in x.alternatives}
    named |= {n.alternative for n in part.not_applicable}
    out: list[tuple[Alternative, str, float | None]] = []
    for alt in CATALOG:
        if not (alt.auto and applies_by_unit(alt, unit)) and alt.name not in named:
            continue
        if alt.role:
            out += [(alt, name, float(v[name])) for name in _role_inputs(spec, reads.read, alt.role)]
        else:
            out.append((alt, "", None))
    return out


def audit(part: Part, spec: VariantSpec, v: Mapping[str, Any], unit: str = "") -> list[Outcome]:
    """How the grader answers each reading of each applicable catalog entry that leaves the
    part's tolerance (see the module docstring)."""
    expected = _floats(part.expected(v))
    out: list[Outcome] = []
    for alt, name, role_value in applicable(part, spec, v, unit):
        for label, value in readings(alt, expected, role_value):
            if any(math.isnan(x) for x in value) or _matches(value, expected, part.rel):
                continue
            reading = f"{label} {name}".strip()
            passed, found = sources(part, v, value if part.shape is not None else value[0])
            hints = tuple(h for *_n, h in found)
            causes = tuple(c for _n, cs, _h in found for c in cs)
            if passed:
                resolution = "accepted"
            elif len(found) > 1:
                resolution = "two hints"
            elif found and alt.name in found[0][1]:
                resolution = "hinted"
            elif part.not_applicable_reason(alt.name) is not None:
                resolution = "not applicable"
            elif found:
                resolution = "wrong cause"
            else:
                resolution = "silent"
            out.append(Outcome(part.answer, alt.name, reading, resolution, hints, causes))
    return out

"""Every part asked every alternative of the catalog that applies to it: how each resolves.

:func:`audit` runs one numeric :class:`~.parts.Part` on one student's numbers through each
entry of :data:`~.alternatives.CATALOG` that applies to it (its unit; for an entry with a role,
each varied input of that role the part's expected value reads) and says, for each reading that
leaves the part's tolerance, how the grader answers it:

- ``accepted``: full marks (a declared convention);
- ``hinted``: one hint, whose declared causes include the entry (a pinned convention, a slip,
  or the catalog's own hint for a part that declares its unit);
- ``not applicable``: the part says why, in its ``not_applicable``;
- ``silent``: zero marks and no hint; ``wrong cause``: one hint that names another cause;
  ``two hints``: more than one. These three are what tests/test_homework_alternatives.py
  forbids.

Pure functions; the catalog and the parts are data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..variants import VariantSpec
from .alternatives import readings
from .parts import Part, _floats, _matches, applicable, sources, targets

__all__ = ["Outcome", "audit", "FORBIDDEN", "RESOLVED"]

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


def audit(part: Part, spec: VariantSpec, v: Mapping[str, Any]) -> list[Outcome]:
    """How the grader answers each reading of each applicable catalog entry that leaves the
    part's tolerance (see the module docstring)."""
    within = targets(part, v, spec)
    expected = _floats(within.accepted[0])
    out: list[Outcome] = []
    for alt, name, role_value in applicable(part, v, spec):
        for label, value in readings(alt, expected, role_value):
            if any(math.isnan(x) for x in value) or _matches(value, expected, part.rel):
                continue
            reading = f"{label} {name}".strip()
            passed, found = sources(part, v, value if part.shape is not None else value[0], within)
            hints = tuple(h for *_n, h in found)
            causes = tuple(c for _n, cs, _h in found for c in cs)
            if passed:
                resolution = "accepted"
            elif len(found) > 1:
                resolution = "two hints"
            elif found and alt.name in found[0][1]:
                resolution = "hinted"
            elif part.not_applicable_reason(alt.name, label) is not None:
                resolution = "not applicable"
            elif found:
                resolution = "wrong cause"
            else:
                resolution = "silent"
            out.append(Outcome(part.answer, alt.name, reading, resolution, hints, causes))
    return out

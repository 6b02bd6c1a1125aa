"""Practice problems of the chapter book/hardware.md (see :mod:`scalebook.practice.problem`)."""

from __future__ import annotations

from ..homework.parts import Part, Slip
from ..variants import Choice, VariantSpec
from .problem import Problem

PROBLEMS: tuple[Problem, ...] = ()

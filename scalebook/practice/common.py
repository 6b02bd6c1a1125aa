"""What the chapters' practice problems share: unit factors, the variant spec of a problem, the
unit conventions every size accepts, the percent slip, and bytes as the text prints them.

An answer asked in GB (10⁹ bytes) and given in GiB (2³⁰) is 6.9% smaller; in MB against MiB,
4.6%. The chapters print decimal units, and a reader who divides by powers of two has made no
error of substance, so :func:`in_gib` and :func:`in_mib` declare those answers accepted.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..homework.parts import ACCEPTED, Convention, Slip, Value, as_float
from ..units import format_bytes
from ..variants import Choice, VariantSpec

__all__ = ["GB", "MB", "GIB", "MIB", "MS", "US", "DAY", "PERCENT_HINT", "spec", "in_gib", "in_mib",
           "percent_slip", "decimal_bytes", "bytes_text"]

GB = 1e9
MB = 1e6
GIB = 2.0**30
MIB = 2.0**20
MS = 1e-3
US = 1e-6
DAY = 86400.0

PERCENT_HINT = "the answer is asked in percent: {answer:.3g} looks like a fraction (× 100)."


def spec(problem_id: str, *, derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
         well_posed: Callable[[Mapping[str, Any]], bool] | None = None,
         derived_labels: Mapping[str, tuple[str, str]] | None = None,
         **parameters: Choice) -> VariantSpec:
    """The variant spec of the practice problem ``problem_id``: its drawn ``parameters`` (the
    book's value first in each), the figures ``derive`` adds for the text, and an optional
    ``well_posed`` rule on the draw (a setting that fits in HBM, say)."""
    return VariantSpec(assignment=f"practice:{problem_id}", parameters=parameters, derive=derive,
                       well_posed=well_posed, derived_labels=dict(derived_labels or {}))


def in_gib(value_gb: Value) -> Convention:
    """A size asked in GB, given in GiB: accepted."""
    return Convention("GiB instead of GB", lambda v: as_float(value_gb(v)) * GB / GIB, verdict=ACCEPTED)


def in_mib(value_mb: Value) -> Convention:
    """A size asked in MB, given in MiB: accepted."""
    return Convention("MiB instead of MB", lambda v: as_float(value_mb(v)) * MB / MIB, verdict=ACCEPTED)


def percent_slip(value_pct: Value) -> Slip:
    """A share asked in percent, given as a fraction of 1."""
    return Slip("a fraction, not a percentage", lambda v: as_float(value_pct(v)) / 100, PERCENT_HINT)


def decimal_bytes(nbytes: float) -> str:
    """Bytes as the chapters print them, in decimal units: ``"2.15 GB"``."""
    return format_bytes(nbytes, binary=False)


def bytes_text(b: float) -> str:
    """Bytes per element in words: "2 bytes", "1 byte", "0.5 bytes"."""
    return f"{b:g} byte" + ("" if b == 1 else "s")

"""What the chapters' practice problems share: unit factors, what a problem draws, the
unit conventions every size accepts, the classic slips (a percentage as a fraction, seconds for
µs, a multiply-add as one FLOP, bf16 as one byte) and bytes as the text prints them.

An answer asked in GB (10⁹ bytes) and given in GiB (2³⁰) is 6.9% smaller; in MB against MiB,
4.6%. The chapters print decimal units, and a reader who divides by powers of two has made no
error of substance, so :func:`in_gib` and :func:`in_mib` declare those answers accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..homework.parts import ACCEPTED, Convention, Hint, Slip, Value, as_float
from ..units import format_bytes
from ..variants import Choice, VariantSpec

__all__ = ["GB", "MB", "GIB", "MIB", "MS", "US", "DAY", "PERCENT_HINT", "Draws", "draws", "in_gib",
           "in_mib", "percent_slip", "decimal_bytes", "bytes_text", "FMA_HINT", "BF16_HINT",
           "US_HINT", "seconds_slip", "fma_slip", "one_byte_slip"]

GB = 1e9
MB = 1e6
GIB = 2.0**30
MIB = 2.0**20
MS = 1e-3
US = 1e-6
DAY = 86400.0

PERCENT_HINT = "the answer is asked in percent: {answer:.3g} looks like a fraction (× 100)."
#: The hints of the chapters' classic slips, said once.
FMA_HINT = "a multiply-add is 2 FLOPs: the matmul does 2·B·D·F of them."
BF16_HINT = "bf16 takes 2 bytes per element."
US_HINT = "the answer is asked in µs (1 s = 1e6 µs)."


@dataclass(frozen=True)
class Draws:
    """What a practice problem draws: its ``parameters`` (the book's value first in each), the
    figures ``derive`` adds for the text, an optional ``well_posed`` rule on the draw (a setting
    that fits in HBM, say) and the labels of the derived figures. :meth:`spec` names it after
    its problem, so a problem's id is written once."""

    parameters: Mapping[str, Choice]
    derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    well_posed: Callable[[Mapping[str, Any]], bool] | None = None
    derived_labels: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def spec(self, problem_id: str) -> VariantSpec:
        """The variant spec of the practice problem ``problem_id``."""
        return VariantSpec(assignment=f"practice:{problem_id}", parameters=self.parameters,
                           derive=self.derive, well_posed=self.well_posed,
                           derived_labels=dict(self.derived_labels))


def draws(*, derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
          well_posed: Callable[[Mapping[str, Any]], bool] | None = None,
          derived_labels: Mapping[str, tuple[str, str]] | None = None,
          **parameters: Choice) -> Draws:
    """The :class:`Draws` of a practice problem: its drawn ``parameters``, in the order given,
    ``derive``, ``well_posed`` and ``derived_labels`` as :class:`Draws` says."""
    return Draws(parameters=parameters, derive=derive, well_posed=well_posed,
                 derived_labels=dict(derived_labels or {}))


def in_gib(value_gb: Value) -> Convention:
    """A size asked in GB, given in GiB: accepted."""
    return Convention("GiB instead of GB", lambda v: as_float(value_gb(v)) * GB / GIB, verdict=ACCEPTED)


def in_mib(value_mb: Value) -> Convention:
    """A size asked in MB, given in MiB: accepted."""
    return Convention("MiB instead of MB", lambda v: as_float(value_mb(v)) * MB / MIB, verdict=ACCEPTED)


def percent_slip(value_pct: Value) -> Slip:
    """A share asked in percent, given as a fraction of 1."""
    return Slip("a fraction, not a percentage", lambda v: as_float(value_pct(v)) / 100, PERCENT_HINT)


def seconds_slip(value_s: Value) -> Slip:
    """A time asked in µs, given in seconds: ``value_s`` is the answer so given."""
    return Slip("seconds, not µs", value_s, US_HINT)


def fma_slip(value: Value, hint: Hint = FMA_HINT, alternatives: tuple[str, ...] = ()) -> Slip:
    """A multiply-add counted as one FLOP, not two: ``value`` is the answer so counted."""
    return Slip("one FLOP per multiply-add", value, hint, alternatives)


def one_byte_slip(value: Value, hint: Hint = BF16_HINT) -> Slip:
    """An element counted as one byte (bf16 takes 2): ``value`` is the answer so counted."""
    return Slip("one byte per element", value, hint)


def decimal_bytes(nbytes: float) -> str:
    """Bytes as the chapters print them, in decimal units: ``"2.15 GB"``."""
    return format_bytes(nbytes, binary=False)


def bytes_text(b: float) -> str:
    """Bytes per element in words: "2 bytes", "1 byte", "0.5 bytes"."""
    return f"{b:g} byte" + ("" if b == 1 else "s")

"""Human-readable printing of SI quantities. Computation stays in SI; only printing converts.

>>> format_seconds(3.2e-5)
'32 µs'
>>> format_bytes(2 * 2**20)
'2 MiB'
>>> format_flops(9.89e14)
'989 TFLOP/s'
"""

from __future__ import annotations

import math

_DECIMAL = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_BINARY = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))
_TIME = ((86400.0, "days"), (3600.0, "h"), (60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"),
         (1e-9, "ns"))


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")

#: Around the "×" of a power of ten: a narrow no-break space, so "2.55 × 10¹⁰" reads as a
#: number set in type and never breaks across lines or table cells.
_TIMES = "\u202f×\u202f"


def format_scientific(value: float, digits: int = 3) -> str:
    """``value`` as a power of ten with ``digits`` significant figures, superscript exponent:
    ``2.55e10`` -> ``"2.55 × 10¹⁰"`` (narrow no-break spaces around the ×), ``-1.5e-7`` ->
    ``"-1.50 × 10⁻⁷"`` (trailing zeros kept: they state the precision), ``0`` -> ``"0"``.
    The one way the book writes a power of ten, in prose, tables and widgets; never a caret."""
    value = float(value)
    if math.isnan(value):
        raise ValueError("format_scientific needs a number, got nan")
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value == 0:
        return "0"
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa}{_TIMES}10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _number(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant figures, without a trailing '.0', readable at
    any size: a plain integer where rounding up made an exponent (999.9 -> "1000"), and a
    power of ten beyond that ("8 × 10³³", never 30 digits; "1.5 × 10⁻⁷", never "0"), written
    as :func:`format_scientific` writes it."""
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" not in text:
        return text
    if 1 <= abs(value) < 10 ** (digits + 1):  # 1e+03 from rounding up
        return f"{value:.0f}"
    mantissa, exponent = text.split("e")
    return f"{mantissa}{_TIMES}10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def format_number(value: float, digits: int = 3) -> str:
    """A plain number with ``digits`` significant figures ("0.5", "243", "1000"), a power of
    ten beyond (as :func:`format_scientific`: "1 × 10⁵", "2 × 10⁻⁵"): axis ticks, ratios."""
    value = float(value)
    if math.isnan(value):
        raise ValueError("format_number needs a number, got nan")
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return "-" + _number(-value, digits) if value < 0 else _number(value, digits)


def _check(value: float, what: str) -> float:
    value = float(value)
    if math.isnan(value) or value < 0:
        raise ValueError(f"{what} must be a non-negative number, got {value!r}")
    return value


def format_seconds(seconds: float, digits: int = 3) -> str:
    """Seconds as ns / µs / ms / s / min / h / days, e.g. 0.0123 -> '12.3 ms'."""
    seconds = _check(seconds, "seconds")
    if math.isinf(seconds):
        return "∞ s"
    for scale, unit in _TIME:
        if seconds >= scale:
            return f"{_number(seconds / scale, digits)} {unit}"
    return f"{_number(seconds / 1e-9, digits)} ns"


def format_bytes(nbytes: float, digits: int = 3, *, binary: bool = True) -> str:
    """Bytes in KiB/MiB/GiB (``binary=True``) or kB/MB/GB (``binary=False``)."""
    nbytes = _check(nbytes, "bytes")
    if binary:
        for scale, unit in _BINARY:
            if nbytes >= scale:
                return f"{_number(nbytes / scale, digits)} {unit}"
        return f"{_number(nbytes, digits)} B"
    return _decimal(nbytes, "B", digits)


def format_bandwidth(bytes_per_s: float, digits: int = 3) -> str:
    """Bytes/s in decimal units, as datasheets print them: 3.35e12 -> '3.35 TB/s'."""
    return _decimal(_check(bytes_per_s, "bandwidth"), "B/s", digits)


def format_flops(flops_per_s: float, digits: int = 3) -> str:
    """FLOPs/s in decimal units: 1.97e14 -> '197 TFLOP/s'."""
    return _decimal(_check(flops_per_s, "FLOPs/s"), "FLOP/s", digits)


def format_count(value: float, digits: int = 3, unit: str = "") -> str:
    """A plain count (FLOPs, parameters, tokens) with a decimal prefix: 6.0e9 -> '6 G', or
    with ``unit`` '6 GFLOPs'; past the prefixes a power of ten: 7.2e24 -> '7.2×10²⁴ FLOPs'."""
    return _decimal(_check(value, "count"), unit, digits).rstrip()


def _decimal(value: float, unit: str, digits: int) -> str:
    if math.isinf(value):
        return f"∞ {unit}"
    if value >= 1e3 * _DECIMAL[0][0]:  # past the largest prefix: a power of ten, no prefix
        return f"{_number(value, digits)} {unit}"
    for scale, prefix in _DECIMAL:
        if value >= scale:
            return f"{_number(value / scale, digits)} {prefix}{unit}"
    return f"{_number(value, digits)} {unit}"


def format_integer(value: float) -> str:
    """A whole number (chips, sequences, tokens) with thousands separators up to 10¹⁵
    ("16,384"), as a power of ten beyond ("8×10³³"): a count from absurd inputs stays one
    readable word, never 30 digits."""
    value = _check(value, "count")
    if math.isinf(value):
        return "∞"
    if value < 1e15:
        return f"{round(value):,}"
    return _number(value, 3)


def format_percent(fraction: float) -> str:
    """A relative tolerance or share as a percentage, 3 significant figures: ``0.05`` -> ``"5%"``,
    ``0.001`` -> ``"0.1%"``."""
    return f"{fraction * 100:.3g}%"

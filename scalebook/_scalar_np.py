"""A scalar-only stand-in for the few NumPy names scalebook's solver modules use.

Why it exists: the live book runs scalebook in the reader's browser under Pyodide, and the
bundle ships no NumPy (its wheel alone is several MB). Every widget calls the solver with single
numbers, so NumPy is only ever asked scalar questions there: ``max(a, b)``, "is it finite",
"is it a 0-d value". This module answers exactly those, with NumPy's scalar semantics.
:mod:`scalebook._np` picks it only when ``import numpy`` finds no NumPy; in CPython the solver
always runs on the real NumPy.

What it covers, and nothing else (each name behaves as NumPy's does on a scalar):

- types for ``isinstance`` checks: ``ndarray``, ``generic``, ``number``, ``integer``,
  ``floating``, ``bool_`` (no value is ever an ``ndarray`` or ``bool_`` here);
- 0-d values: :class:`float64`, :class:`int64` and :class:`str_`, plain Python scalars with the
  0-d array attributes scalebook reads (``ndim = 0``, ``size = 1``, ``shape = ()``,
  ``item()``, ``astype()``);
- functions: ``asarray``, ``ndim``, ``shape``, ``maximum``, ``minimum`` (NaN-propagating),
  ``where``, ``isfinite``, ``isnan``, ``isinf``, ``any``, ``all``, ``sqrt`` (NaN below zero),
  ``floor``, ``clip``, ``full`` (shape ``()`` only).

Any array input (a list, tuple or range, or an object with ``__array__``) raises
:class:`ArrayInputError`, so an array code path can never quietly compute something else.
Other non-numbers go through ``float()`` as NumPy's ``asarray(x, dtype=float)`` would, so the
solver's "must be a number" messages read the same with and without NumPy.

One known difference: arithmetic on these values is Python's, so ``x / 0.0`` raises
``ZeroDivisionError`` where NumPy returns ``inf`` with a warning. The solver validates sizes
as positive before dividing, and tests/test_numpy_free.py checks that results agree.
"""

from __future__ import annotations

import math
import numbers

__all__ = [
    "ArrayInputError", "all", "any", "asarray", "bool_", "clip", "float64", "floating", "floor",
    "full", "generic", "int64", "integer", "isfinite", "isinf", "isnan", "maximum", "minimum",
    "ndarray", "ndim", "number", "shape", "sqrt", "str_", "where",
]


class ArrayInputError(NotImplementedError):
    """An array reached scalebook running without NumPy; only scalar inputs work there.

    Deliberately not a ValueError or TypeError: the solver's input checks catch those and
    reword them as "must be a number", which would hide the real cause.
    """


# --------------------------------------------------------------------------- types

class ndarray:
    """NumPy's array type; nothing is an instance, so ``isinstance(x, np.ndarray)`` is False."""


class generic:
    """Base of the NumPy scalar types below."""


class number(generic):
    """A NumPy number."""


class integer(number):
    """A NumPy integer: :class:`int64` is one, a plain Python ``int`` is not (as in NumPy)."""


class floating(number):
    """A NumPy float: :class:`float64` is one."""


class bool_(generic):
    """NumPy's bool; never instantiated here (comparisons give Python bools)."""


class _ZeroD:
    """The 0-d array attributes scalebook reads off ``asarray(x)`` and NumPy scalars."""

    ndim = 0
    size = 1
    shape = ()

    def item(self) -> object:
        """The plain Python value (``float``, ``int`` or ``str``)."""
        return self._plain(self)  # type: ignore[attr-defined]

    def astype(self, dtype: type) -> object:
        """The value as ``dtype`` (``float64``, ``int64``, ``float`` or ``int``)."""
        return asarray(dtype(self))


class float64(_ZeroD, float, floating):
    """A float carrying the 0-d attributes; arithmetic on it gives plain floats."""

    _plain = float


class int64(_ZeroD, int, integer):
    """An int carrying the 0-d attributes; arithmetic on it gives plain ints."""

    _plain = int


class str_(_ZeroD, str, generic):
    """A string carrying the 0-d attributes (what ``where(cond, "a", "b")`` returns)."""

    _plain = str


# --------------------------------------------------------------------------- inputs

def _is_array(value: object) -> bool:
    return isinstance(value, (list, tuple, range)) or hasattr(value, "__array__")


def _scalar(value: object) -> object:
    """``value`` unchanged, or :class:`ArrayInputError` when it is array-like."""
    if _is_array(value):
        raise ArrayInputError(
            f"scalebook is running without NumPy (the scalar stand-in scalebook/_scalar_np.py), "
            f"so it takes single numbers only; got the array-like {value!r}")
    return value


def asarray(value: object, dtype: type | None = None) -> object:
    """``value`` as a 0-d value: :class:`float64`, :class:`int64` or :class:`str_`.

    With ``dtype=float``, ``None`` is NaN and anything else goes through ``float()``, so
    ``"abc"`` raises ValueError and ``object()`` TypeError, as in NumPy.
    """
    value = _scalar(value)
    if dtype in (float, float64):
        return float64(math.nan if value is None else float(value))  # type: ignore[arg-type]
    if dtype in (int, int64):
        return int64(int(value))  # type: ignore[call-overload]
    if dtype is not None:
        raise NotImplementedError(f"the scalar stand-in has no dtype {dtype!r}")
    if isinstance(value, bool):
        raise NotImplementedError("the scalar stand-in has no 0-d bool; compare plain values")
    if isinstance(value, numbers.Integral):
        return int64(value)
    if isinstance(value, numbers.Real):
        return float64(value)
    if isinstance(value, str):
        return str_(value)
    raise NotImplementedError(f"the scalar stand-in cannot hold {type(value).__name__} values")


def ndim(value: object) -> int:
    """0: every non-array value is a scalar."""
    _scalar(value)
    return 0


def shape(value: object) -> tuple:
    """``()``: every non-array value is a scalar."""
    _scalar(value)
    return ()


# --------------------------------------------------------------------------- arithmetic

def _extreme(a: float, b: float, *, larger: bool) -> float64 | int64:
    """NumPy's ``maximum``/``minimum`` of two scalars: NaN wins; two ints give an int64."""
    _scalar(a), _scalar(b)  # refuse array input
    if isnan(a) or isnan(b):
        return float64(math.nan)
    pick = a if (a >= b if larger else a <= b) else b
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return int64(int(pick))
    return float64(pick)


def maximum(a: float, b: float) -> float64 | int64:
    """The larger of a and b; NaN if either is NaN."""
    return _extreme(a, b, larger=True)


def minimum(a: float, b: float) -> float64 | int64:
    """The smaller of a and b; NaN if either is NaN."""
    return _extreme(a, b, larger=False)


def clip(value: float, lo: float, hi: float) -> float64 | int64:
    """``minimum(maximum(value, lo), hi)``."""
    return minimum(maximum(value, lo), hi)


def where(condition: object, a: object, b: object) -> object:
    """``a`` if ``condition`` else ``b``, as a 0-d value (NumPy returns a 0-d array).

    For the string choices scalebook makes ("compute" or "comms"); unlike NumPy it does not
    promote an int branch to float when the other branch is a float.
    """
    return asarray(a if bool(_scalar(condition)) else b)


def sqrt(value: float) -> float64:
    """√value; NaN for a negative value (NumPy warns and returns NaN)."""
    x = float(_scalar(value))  # type: ignore[arg-type]
    return float64(math.sqrt(x) if x >= 0 else math.nan)


def floor(value: float) -> float64:
    """⌊value⌋ as a float; infinities and NaN pass through."""
    x = float(_scalar(value))  # type: ignore[arg-type]
    return float64(math.floor(x) if math.isfinite(x) else x)


def full(shape_: tuple, value: object, dtype: type | None = None) -> object:
    """A 0-d ``value`` (as ``dtype``); any other shape is an array."""
    if shape_ != ():
        raise ArrayInputError(f"the scalar stand-in cannot build an array of shape {shape_!r}")
    return asarray(value, dtype)


# --------------------------------------------------------------------------- predicates

def isfinite(value: float) -> bool:
    """Neither infinite nor NaN."""
    return math.isfinite(_scalar(value))  # type: ignore[arg-type]


def isnan(value: float) -> bool:
    """NaN."""
    return math.isnan(_scalar(value))  # type: ignore[arg-type]


def isinf(value: float) -> bool:
    """+inf or -inf."""
    return math.isinf(_scalar(value))  # type: ignore[arg-type]


def any(value: object) -> bool:  # noqa: A001 (NumPy's name)
    """Truth of one scalar."""
    return bool(_scalar(value))


def all(value: object) -> bool:  # noqa: A001 (NumPy's name)
    """Truth of one scalar."""
    return bool(_scalar(value))

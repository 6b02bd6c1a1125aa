"""Checks that homework test cells run on a student's answers.

Two kinds, as ``autograder/DESIGN.md`` describes:

- **Form checks** (visible to the student): :func:`check_number` and :func:`check_array` say
  whether an answer is a finite real number, positive, of the right shape. They never look at
  the expected value.
- **Value checks** (hidden in the student version): :func:`check_close` and
  :func:`check_allclose` compare an answer with the reference solver's value within a relative
  tolerance. Their messages name the variable and the tolerance but never the expected value.
  A check may carry *hints*: pairs ``(wrong_value, text)`` for answers that a known
  misconception produces ("used the sparse FLOPs figure"). When a failing answer lies within
  the tolerance of a hint's wrong value, the message ends with ``Hint: <text>``.

Every check raises ``AssertionError`` on failure (the grader turns its message into feedback)
and returns ``None`` on success. (Returning nothing matters: nbgrader reads a number that a
grade cell leaves as its output as partial credit.)

>>> check_close(296.0, 295.2, name="critical_batch")
>>> check_close(590.0, 295.2, name="critical_batch",
...             hints=[(590.4, "use the dense FLOPs/s, not the sparse one")])
Traceback (most recent call last):
...
AssertionError: critical_batch = 590 is not within 5% of the expected answer. Hint: use the dense FLOPs/s, not the sparse one

These are pure functions of their arguments; they import only numpy.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Sequence

import numpy as np

from .units import format_percent

__all__ = ["check_number", "check_array", "check_close", "check_allclose",
           "check_partition_spec"]


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_rel(rel: float) -> float:
    if (isinstance(rel, bool) or not isinstance(rel, numbers.Real) or not math.isfinite(rel)
            or not 0 < rel < 1):
        raise ValueError(f"rel must be a relative tolerance between 0 and 1, got {rel!r}")
    return float(rel)


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be the answer's variable name, got {name!r}")
    return name


def check_number(value: Any, name: str, *, positive: bool = True) -> None:
    """Assert that ``value`` is one finite real number (and, by default, greater than zero).

    Accepts Python ``int`` and ``float``, numpy integer and floating scalars and 0-d numeric
    numpy arrays. Rejects ``bool`` (``True`` is not an answer), strings, ``None``, complex
    numbers, lists, arrays with more than one element, NaN and infinities.

    Raises ``AssertionError`` whose message names ``name``; returns ``None``.
    """
    _as_number(value, name, positive=positive)


def _as_number(value: Any, name: str, *, positive: bool) -> float:
    """:func:`check_number`'s work; returns ``float(value)``."""
    _check_name(name)
    if value is None:
        raise AssertionError(f"{name} is None: assign it a number.")
    if isinstance(value, (bool, np.bool_)):
        raise AssertionError(f"{name} should be a number, got the boolean {value!r}.")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (str, bytes)):
        raise AssertionError(f"{name} should be a number, got the string {value!r}.")
    if isinstance(value, (np.bool_, bool)):
        raise AssertionError(f"{name} should be a number, got the boolean {value!r}.")
    if isinstance(value, (list, tuple, np.ndarray)):
        raise AssertionError(
            f"{name} should be a single number, got a {_type_name(value)} of several values."
        )
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        raise AssertionError(f"{name} should be a real number, got the complex {value!r}.")
    if not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise AssertionError(f"{name} should be a number, got a {_type_name(value)}.")
    number = float(value)
    if math.isnan(number):
        raise AssertionError(f"{name} is NaN: check the arithmetic that produced it.")
    if math.isinf(number):
        raise AssertionError(f"{name} is infinite: check for a division by zero.")
    if positive and not number > 0:
        raise AssertionError(f"{name} should be greater than zero, got {number:.4g}.")
    return number


def check_array(values: Any, name: str, *, shape: Sequence[int] | None = None,
                positive: bool = False) -> None:
    """Assert that ``values`` is an array (or nested list) of finite real numbers.

    ``shape``, if given, is the shape the answer must have, e.g. ``(14,)``. With
    ``positive=True`` every element must be greater than zero. Booleans, strings, ``None``
    and ragged lists are rejected. Raises ``AssertionError`` naming ``name``; returns ``None``.
    """
    _as_array(values, name, shape=shape, positive=positive)


def _as_array(values: Any, name: str, *, shape: Sequence[int] | None,
              positive: bool) -> np.ndarray:
    """:func:`check_array`'s work; returns the values as a float numpy array."""
    _check_name(name)
    if values is None:
        raise AssertionError(f"{name} is None: assign it an array of numbers.")
    if isinstance(values, (str, bytes)):
        raise AssertionError(f"{name} should be an array of numbers, got a string.")
    if isinstance(values, (numbers.Number, np.generic)):
        raise AssertionError(f"{name} should be an array of numbers, got a single number.")
    if not isinstance(values, (list, tuple, np.ndarray)):
        raise AssertionError(f"{name} should be an array of numbers, got a {_type_name(values)}.")
    try:
        raw = np.asarray(values)
    except ValueError:  # ragged nested lists
        raise AssertionError(f"{name} should be a rectangular array of numbers.") from None
    if raw.dtype == object:
        raise AssertionError(f"{name} should be an array of numbers, not a ragged or mixed list.")
    if raw.dtype.kind == "b":
        raise AssertionError(f"{name} should hold numbers, not booleans.")
    if raw.dtype.kind == "c":
        raise AssertionError(f"{name} should hold real numbers, not complex ones.")
    if raw.dtype.kind not in "iuf":
        raise AssertionError(f"{name} should hold numbers, got elements of type {raw.dtype}.")
    array = raw.astype(float)
    if array.ndim == 0:
        raise AssertionError(f"{name} should be an array of numbers, got a single number.")
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise AssertionError(
            f"{name} should have shape {tuple(shape)}, got shape {tuple(array.shape)}."
        )
    if not np.all(np.isfinite(array)):
        raise AssertionError(f"{name} contains NaN or infinite values.")
    if positive and not np.all(array > 0):
        raise AssertionError(f"{name} should hold only values greater than zero.")
    return array


def _hint_texts(hints: Iterable[tuple[Any, str]], matches) -> list[str]:
    texts = []
    for hint in hints:
        try:
            wrong, text = hint
        except (TypeError, ValueError):
            raise ValueError(f"a hint must be a pair (wrong_value, text), got {hint!r}") from None
        if not isinstance(text, str):
            raise ValueError(f"a hint's text must be a string, got {text!r}")
        if matches(wrong) and text not in texts:
            texts.append(text)
    return texts


def _with_hints(message: str, texts: list[str]) -> str:
    return " ".join([message, *(f"Hint: {text}" for text in texts)])


def _within(value: Any, target: Any, rel: float) -> Any:
    """|value − target| ≤ rel·|target| (elementwise for arrays)."""
    return np.abs(np.asarray(value, float) - np.asarray(target, float)) <= rel * np.abs(
        np.asarray(target, float))


def check_close(value: Any, expected: float, *, name: str, rel: float = 0.05,
                hints: Iterable[tuple[float, str]] = ()) -> None:
    """Assert that the number ``value`` is within ``rel`` (relative) of ``expected``.

    Passes when ``|value − expected| ≤ rel·|expected|``. On failure the ``AssertionError``
    names ``name``, the student's value and the tolerance — never ``expected``. Each hint is a
    pair ``(wrong_value, text)``: if ``value`` lies within ``rel`` of ``wrong_value``, the
    message gains ``Hint: text``. Form is checked first (as :func:`check_number` with
    ``positive=False``). Returns ``None``.
    """
    _check_name(name)
    rel = _check_rel(rel)
    number = _as_number(value, name, positive=False)
    expected = float(expected)
    if not math.isfinite(expected):
        raise ValueError(f"expected value for {name} must be finite")
    if bool(_within(number, expected, rel)):
        return
    texts = _hint_texts(hints, lambda wrong: bool(_within(number, float(wrong), rel)))
    message = (f"{name} = {number:.4g} is not within {format_percent(rel)} "
               f"of the expected answer.")
    raise AssertionError(_with_hints(message, texts))


def check_allclose(values: Any, expected: Any, *, name: str, rel: float = 0.05,
                   hints: Iterable[tuple[Any, str]] = ()) -> None:
    """Assert that every element of ``values`` is within ``rel`` (relative) of ``expected``.

    ``values`` must have the shape of ``expected`` (checked as :func:`check_array`). On failure
    the ``AssertionError`` names ``name``, how many elements miss and the first index that does,
    and the tolerance — never an expected value. Each hint is ``(wrong_values, text)``; it is
    added when *every* element of ``values`` lies within ``rel`` of ``wrong_values``. Returns
    ``None``.
    """
    _check_name(name)
    rel = _check_rel(rel)
    target = np.asarray(expected, dtype=float)
    if not np.all(np.isfinite(target)):
        raise ValueError(f"expected values for {name} must be finite")
    array = _as_array(values, name, shape=target.shape, positive=False)
    ok = _within(array, target, rel)
    if np.all(ok):
        return
    bad = np.argwhere(~ok)
    first = tuple(int(i) for i in bad[0])
    where = first[0] if len(first) == 1 else first

    def matches(wrong: Any) -> bool:
        wrong = np.asarray(wrong, dtype=float)
        return wrong.shape == target.shape and bool(np.all(_within(array, wrong, rel)))

    texts = _hint_texts(hints, matches)
    message = (f"{len(bad)} of {array.size} values of {name} are not within "
               f"{format_percent(rel)} of the expected answers (the first is at index {where}).")
    raise AssertionError(_with_hints(message, texts))


def _is_partition_spec(value: Any) -> bool:
    cls = type(value)
    return (str(getattr(cls, "__module__", "")).split(".")[0] == "jax"
            and getattr(cls, "__name__", "") in ("PartitionSpec", "P"))


def check_partition_spec(value: Any, name: str, *, rank: int,
                         axis_names: Sequence[str]) -> tuple:
    """Assert that ``value`` is a well-formed ``PartitionSpec`` for a rank-``rank`` array on a
    mesh with axes ``axis_names``; return it as a tuple, so ``PartitionSpec(*t)`` rebuilds it.

    Accepts a real ``jax.sharding.PartitionSpec`` (in the student's kernel), a tuple, or the
    plain list the grader captures (``P('X', None)`` arrives as ``["X", None]``). Each entry is
    ``None`` (dim not split), one axis name, or a tuple/list of axis names (dim split over
    several axes, major first); at most ``rank`` entries (missing trailing ones mean ``None``);
    no axis used twice. The returned tuple is canonical, so equal specs compare equal: one
    entry per dim (padded with ``None``), a one-axis entry as its name (``('X',)`` -> ``'X'``),
    a multi-axis entry as a tuple. Form only: it says nothing about whether the spec is the
    right answer. Raises ``AssertionError`` naming ``name``.

    >>> check_partition_spec(["X"], "spec", rank=2, axis_names=("X", "Y"))
    ('X', None)
    >>> check_partition_spec([["X", "Y"]], "spec", rank=2, axis_names=("X", "Y"))
    (('X', 'Y'), None)
    """
    _check_name(name)
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral) or rank < 0:
        raise ValueError(f"rank must be a non-negative integer, got {rank!r}")
    if isinstance(axis_names, str) or not all(isinstance(a, str) for a in axis_names):
        raise ValueError(f"axis_names must be a sequence of mesh axis names, got {axis_names!r}")
    known = tuple(axis_names)
    example = "PartitionSpec(" + ", ".join(["None"] * max(rank, 1)) + ")"
    if value is None:
        raise AssertionError(f"{name} is None: assign it a PartitionSpec such as {example}.")
    if _is_partition_spec(value):
        if getattr(value, "unreduced", None) or getattr(value, "reduced", None):
            raise AssertionError(f"{name} should say only how each dim is split: drop its "
                                 "unreduced/reduced axes.")
        entries = list(iter(value))
    elif isinstance(value, (list, tuple)):
        entries = list(value)
    else:
        raise AssertionError(f"{name} should be a jax.sharding.PartitionSpec, got a "
                             f"{_type_name(value)}.")
    if len(entries) > rank:
        raise AssertionError(f"{name} has {len(entries)} entries but the array has only {rank} "
                             f"dims: give at most one entry per dim.")
    normalized: list = []
    used: list[str] = []
    for position, entry in enumerate(entries):
        where = f"{name} entry {position}"
        if entry is None:
            normalized.append(None)
            continue
        axes = [entry] if isinstance(entry, str) else entry
        if not isinstance(axes, (list, tuple)) or not axes:
            raise AssertionError(f"{where} should be None, a mesh axis name or a tuple of axis "
                                 f"names, got a {_type_name(entry)}"
                                 + (" that is empty." if isinstance(axes, (list, tuple)) else "."))
        for axis in axes:
            if not isinstance(axis, str):
                raise AssertionError(f"{where} should name mesh axes with strings, got a "
                                     f"{_type_name(axis)}.")
            if axis not in known:
                shown = axis if len(axis) <= 20 else axis[:20] + "..."
                raise AssertionError(f"{where} uses {shown!r}, which is not a mesh axis; the "
                                     f"mesh axes are {', '.join(known) or 'none'}.")
            if axis in used:
                raise AssertionError(f"{name} uses mesh axis {axis!r} twice; an axis can split "
                                     "only one dim.")
            used.append(axis)
        normalized.append(str(axes[0]) if len(axes) == 1 else tuple(str(a) for a in axes))
    return tuple(normalized) + (None,) * (rank - len(normalized))

"""What a capture step reports: a value as plain JSON data (numbers, strings, booleans,
None, nested lists; NumPy arrays and scalars, JAX PartitionSpecs), or :class:`NotPlain`."""

from __future__ import annotations

import sys

MAX_DEPTH = 16
MAX_ELEMENTS = 200_000       # numbers in one captured value
MAX_STRING = 100_000         # characters in one captured string
MAX_INT_DIGITS = 1000


class NotPlain(Exception):
    """A value that cannot be reported as plain JSON data."""



# --- plain values ------------------------------------------------------------------------------

def to_plain(value, depth: int = 0, budget: list | None = None):
    """``value`` as JSON-able plain data, or raise :class:`NotPlain` saying why."""
    if budget is None:
        budget = [MAX_ELEMENTS]
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deeply")
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain(f"too large (more than {MAX_ELEMENTS} elements)")
    if value is None or type(value) is bool:
        return value
    if type(value) is int:
        if abs(value) >= 10 ** MAX_INT_DIGITS:
            raise NotPlain("an integer too large to report")
        return value
    if type(value) is float:
        return value
    if type(value) is str:
        if len(value) > MAX_STRING:
            raise NotPlain(f"a string longer than {MAX_STRING} characters")
        return value
    if type(value) in (list, tuple):
        return [to_plain(v, depth + 1, budget) for v in value]
    if _is_partition_spec(value):
        return _partition_spec_to_plain(value)
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.ndarray):
            return _array_to_plain(np, value, depth, budget)
        if isinstance(value, np.generic):
            if isinstance(value, np.bool_):
                return bool(value)
            if isinstance(value, np.integer):
                return to_plain(int(value), depth, budget)
            if isinstance(value, np.floating):
                return float(value)
            if isinstance(value, np.str_):
                return to_plain(str(value), depth, budget)
            raise NotPlain(f"not a plain value ({type(value).__name__})")
        if type(value).__module__.split(".")[0] in ("jax", "jaxlib") and hasattr(value, "__array__"):
            try:
                array = np.asarray(value)
            except Exception as exc:  # e.g. a tracer
                raise NotPlain(f"not a plain value ({type(value).__name__}: {exc})") from None
            return _array_to_plain(np, array, depth, budget)
    # subclasses of the plain types: their underlying value, whatever methods they override
    if isinstance(value, int):
        return to_plain(int.__int__(value), depth, budget)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return to_plain(str.__str__(value), depth, budget)
    raise NotPlain(f"not a plain value ({type(value).__name__})")


MAX_SPEC_ENTRIES = 64         # entries in one captured PartitionSpec (one per array dim)


def _is_partition_spec(value) -> bool:
    """A ``jax.sharding.PartitionSpec`` (in JAX 0.10 its class is ``jax.P``)."""
    cls = type(value)
    return (str(getattr(cls, "__module__", "")).split(".")[0] == "jax"
            and getattr(cls, "__name__", "") in ("PartitionSpec", "P"))


def _spec_axis(axis) -> str:
    if type(axis) is not str:
        raise NotPlain("a PartitionSpec whose mesh axis names are not strings")
    if len(axis) > 100:
        raise NotPlain("a PartitionSpec with a mesh axis name longer than 100 characters")
    return str.__str__(axis)


def _partition_spec_to_plain(value) -> list:
    """``P('X', None, ('X', 'Y'))`` -> ``["X", None, ["X", "Y"]]``: each entry None, a str, or
    a list of str. Anything else in it (an unconstrained entry, reduced/unreduced axes, an
    object posing as one) is not plain. Whatever the object's methods do, what comes back is
    built here from exact ``str`` and ``None`` only, at most ``MAX_SPEC_ENTRIES`` long."""
    for extra in ("unreduced", "reduced"):
        if getattr(value, extra, None):
            raise NotPlain(f"a PartitionSpec with {extra} axes")
    entries: list = []
    for entry in iter(value):
        if len(entries) >= MAX_SPEC_ENTRIES:
            raise NotPlain(f"a PartitionSpec with more than {MAX_SPEC_ENTRIES} entries")
        if entry is None:
            entries.append(None)
        elif type(entry) is str:
            entries.append(_spec_axis(entry))
        elif type(entry) in (tuple, list):
            if len(entry) > MAX_SPEC_ENTRIES:
                raise NotPlain(f"a PartitionSpec entry with more than {MAX_SPEC_ENTRIES} axes")
            entries.append([_spec_axis(axis) for axis in entry])
        else:
            raise NotPlain(f"a PartitionSpec entry that is not None, an axis name or a tuple "
                           f"of them ({type(entry).__name__})")
    return entries


def _array_to_plain(np, array, depth, budget):
    if array.size > budget[0]:
        raise NotPlain(f"too large (more than {MAX_ELEMENTS} elements)")
    kind = array.dtype.kind
    if kind in "biuf":
        budget[0] -= int(array.size)
        if array.ndim == 0:
            return array.item()
        return array.tolist()
    if kind in "US":
        return to_plain(array.tolist(), depth, budget)
    if kind == "O":
        return to_plain(array.tolist(), depth, budget)
    raise NotPlain(f"not a plain value (a numpy array of {array.dtype})")

"""Per-student variants of a homework: the same problems, each student's own numbers.

A homework declares, once, the inputs its problems may vary and the values each may take (a
:class:`VariantSpec` of :class:`Choice` parameters). A student's numbers are *drawn* from those
choices by a generator seeded with the student's **homework key**; the grader computes the same
draw for the student who handed the notebook in, and the hidden checks compare the student's
answers with the solver applied to those numbers.

Keys, and why a student cannot compute a classmate's numbers
    The course keeps a secret (32 random bytes, ``autograder`` writes it into the course
    folder). A student's key is ``HMAC-SHA256(secret, "key" ‖ student id)`` cut to 40 bits and
    written as 8 base-32 characters, plus one check character that anyone can compute from the
    student id and the 8 characters (:func:`key_check`). The check catches a mistyped key and a
    key entered with someone else's id, without revealing anything: to *make* a classmate's key
    one needs the secret. One key serves a student for every homework of the course; the seed of
    one homework's draw is ``SHA-256("variant" ‖ assignment ‖ key)``.

Drawing
    :func:`draw` walks the parameters in their declared order, picking each uniformly from its
    choices with :class:`random.Random` seeded as above, derives the problem's other inputs with
    the spec's ``derive`` function (a chip's peak FLOPs/s, say), and keeps the draw only if the
    spec's ``well_posed`` predicate holds (no degenerate case, answers in a sensible range);
    otherwise it draws again from the same generator. So a key always gives the same numbers,
    and every variant a student can get passed ``well_posed``.

The first value of every :class:`Choice` is the homework's *published* value: the
:func:`default_variant` is the sample every reader of the book sees, and the one a course that
turns variants off gives everyone.

Notebooks show a student's numbers twice: a given cell binds them from ``VARIANT`` and prints
them, and ``{{name}}`` placeholders in the problem text are filled in
(:func:`fill_placeholders`) in per-student notebooks, or shown as ``[label]`` in the one notebook
of a class, where the printed table gives the values.

Everything here is pure: functions of their arguments, no files, no global state.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import random
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Mapping

__all__ = [
    "Choice", "VariantSpec", "Variant", "draw", "default_variant", "variant_from", "student_key", "key_check",
    "normalize_key", "check_key", "KeyError_", "fill_placeholders", "placeholders",
    "format_value", "apart", "MAX_DRAWS",
]

_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
KEY_BODY = 8          # base-32 characters from the HMAC: 40 bits
MAX_DRAWS = 1000      # draws tried before a spec is declared broken


@dataclass(frozen=True)
class Choice:
    """One varied input: the values it may take, the published one first.

    ``label`` is how the problem text names it ("B", "the chip"); ``unit`` is printed after the
    value in the student's table ("tokens", "bytes/s"); ``fmt`` formats the value for text
    (default: :func:`format_value`).
    """

    values: tuple
    label: str
    unit: str = ""
    fmt: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.values, tuple) or not self.values:
            raise ValueError(f"a Choice needs a non-empty tuple of values, got {self.values!r}")
        if len(set(map(repr, self.values))) != len(self.values):
            raise ValueError(f"a Choice lists a value twice: {self.values!r}")
        if not isinstance(self.label, str) or not self.label:
            raise ValueError("a Choice needs a label, the name the problem text gives it")

    @property
    def default(self) -> Any:
        return self.values[0]


@dataclass(frozen=True)
class VariantSpec:
    """What one homework may vary.

    ``parameters`` maps a name (``"q1_B"``: problem 1's B) to its :class:`Choice`, in draw
    order. ``derive(params) -> dict`` adds the inputs that follow from the drawn ones (a chip's
    bandwidth, a product the text states); ``well_posed(values) -> bool`` rejects degenerate
    draws; ``derived_labels`` gives the label and unit of each derived name the text shows.
    """

    assignment: str
    parameters: Mapping[str, Choice]
    derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    well_posed: Callable[[Mapping[str, Any]], bool] | None = None
    derived_labels: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.parameters:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"parameter name {name!r} must be a Python identifier")

    def label(self, name: str) -> tuple[str, str]:
        """(label, unit) of a parameter or derived value shown in the text."""
        if name in self.parameters:
            choice = self.parameters[name]
            return choice.label, choice.unit
        if name in self.derived_labels:
            return self.derived_labels[name]
        raise KeyError(f"{self.assignment} has no variant value {name!r}")

    def combinations(self) -> int:
        """How many parameter combinations there are before ``well_posed`` filters them."""
        return math.prod(len(c.values) for c in self.parameters.values())


class Variant(Mapping[str, Any]):
    """One student's numbers: a read-only mapping ``name -> value`` (drawn and derived).

    ``key`` is the homework key it was drawn with ("" for the published default).
    """

    def __init__(self, spec: VariantSpec, values: Mapping[str, Any], key: str):
        self._spec = spec
        self._values = MappingProxyType(dict(values))
        self.key = key

    @property
    def spec(self) -> VariantSpec:
        return self._spec

    @property
    def assignment(self) -> str:
        return self._spec.assignment

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"{self._spec.assignment} has no variant value {name!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def drawn(self) -> dict[str, Any]:
        """The drawn parameters only (what distinguishes one variant from another)."""
        return {name: self._values[name] for name in self._spec.parameters}

    def table(self) -> str:
        """The student's numbers as text, one line per problem: ``Problem 1: B = 2048 tokens, ...``.

        A value belongs to problem N when its name starts with ``qN_``; others are listed last."""
        groups: dict[str, list[str]] = {}
        names = list(self._spec.parameters) + list(self._spec.derived_labels)
        for name in names:
            label, unit = self._spec.label(name)
            choice = self._spec.parameters.get(name)
            text = f"{label} = {format_value(self._values[name], choice.fmt if choice else None)}"
            text += f" {unit}" if unit else ""
            match = re.match(r"q(\d+)_", name)
            groups.setdefault(f"Problem {match.group(1)}" if match else "Other", []).append(text)
        return "\n".join(f"{group}: {', '.join(items)}" for group, items in groups.items())

    def __repr__(self) -> str:
        return f"Variant({self._spec.assignment!r}, {dict(self._values)!r})"


def apart(values: Iterable[float], rel: float) -> bool:
    """Whether every two of ``values`` differ by more than ``rel`` of the larger one: a spec's
    ``well_posed`` uses it so that an answer and its hinted slips never fall within one check's
    tolerance of each other."""
    ordered = sorted(float(v) for v in values)
    return all(b - a > rel * max(abs(a), abs(b)) for a, b in zip(ordered, ordered[1:]))


def format_value(value: Any, fmt: str | None = None) -> str:
    """How a variant value is written in problem text: integers plainly (``8192``), whole
    floats with thousands separators (``1,979``), others with 3 significant digits (``3.35``,
    ``8.2e11``), strings as they are."""
    if fmt is not None:
        return fmt.format(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e5:
            return f"{int(value):,}"                  # 1,979
        text = f"{value:.3g}"
        if "e" in text:
            mantissa, exponent = text.split("e")
            return f"{mantissa}e{int(exponent)}"      # 3.94e14, not 3.94e+14
        return text                                   # 3.35
    return str(value)


# --------------------------------------------------------------------------- keys

class KeyError_(ValueError):
    """A homework key that is malformed or does not belong to the student id entered with it."""


def normalize_key(key: str) -> str:
    """``"abcd-efgh j"`` -> ``"ABCDEFGHJ"``: upper case, dashes and spaces dropped."""
    if not isinstance(key, str):
        raise KeyError_(f"HOMEWORK_KEY should be a string such as \"ABCD-EFGH-J\", got a "
                        f"{type(key).__name__}")
    return re.sub(r"[\s-]", "", key).upper()


def key_check(student_id: str, body: str) -> str:
    """The check character of a key: public, a function of the id and the key's 8 characters."""
    digest = hashlib.sha256(f"scalebook-check\0{student_id.strip()}\0{body}".encode()).digest()
    return _B32[digest[0] >> 3]


def student_key(secret: bytes, student_id: str) -> str:
    """The homework key of ``student_id`` in the course whose secret is ``secret``:
    ``"ABCD-EFGH-J"`` (8 characters from HMAC-SHA256, a dash every 4, one check character)."""
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ValueError("the course secret must be at least 16 bytes")
    if not isinstance(student_id, str) or not student_id.strip():
        raise ValueError("a student id must be a non-empty string")
    mac = hmac.new(secret, f"scalebook-key\0{student_id.strip()}".encode(), hashlib.sha256).digest()
    body = base64.b32encode(mac[:5]).decode()  # 40 bits -> exactly 8 characters
    return f"{body[:4]}-{body[4:]}-{key_check(student_id, body)}"


def check_key(student_id: str, key: str) -> str:
    """The normalized key if it is well formed and its check character fits ``student_id``,
    else :class:`KeyError_` with a message a student can act on."""
    if not isinstance(student_id, str) or not student_id.strip():
        raise KeyError_("STUDENT_ID is empty: enter the id your course gave you, in quotes")
    plain = normalize_key(key)
    if len(plain) != KEY_BODY + 1 or any(ch not in _B32 for ch in plain):
        raise KeyError_(f"HOMEWORK_KEY {key!r} is not a homework key: it has 9 letters and "
                        "digits 2-7, such as \"ABCD-EFGH-J\" (dashes optional)")
    if key_check(student_id, plain[:KEY_BODY]) != plain[KEY_BODY]:
        raise KeyError_(f"HOMEWORK_KEY {key!r} does not belong to STUDENT_ID {student_id.strip()!r}: "
                        "check both for typos (each student has their own key)")
    return plain


# --------------------------------------------------------------------------- drawing

def _values(spec: VariantSpec, params: Mapping[str, Any]) -> dict[str, Any]:
    values = dict(params)
    if spec.derive is not None:
        derived = dict(spec.derive(MappingProxyType(values)))
        clash = set(derived) & set(values)
        if clash:
            raise ValueError(f"{spec.assignment}: derive() redefines drawn parameters {sorted(clash)}")
        values.update(derived)
    return values


def default_variant(spec: VariantSpec) -> Variant:
    """The published numbers: every parameter at its first value. Must be well posed."""
    values = _values(spec, {name: c.default for name, c in spec.parameters.items()})
    if spec.well_posed is not None and not spec.well_posed(MappingProxyType(values)):
        raise ValueError(f"{spec.assignment}: the published numbers fail the spec's well_posed check")
    return Variant(spec, values, "")


def variant_from(spec: VariantSpec, drawn: Mapping[str, Any], key: str = "") -> Variant:
    """Rebuild a variant from its drawn parameters (as ``grading.json`` keeps them)."""
    if set(drawn) != set(spec.parameters):
        raise ValueError(f"{spec.assignment}: drawn parameters {sorted(drawn)} are not the spec's "
                         f"{sorted(spec.parameters)}")
    return Variant(spec, _values(spec, {name: drawn[name] for name in spec.parameters}), key)


def _seed(assignment: str, key: str) -> int:
    digest = hashlib.sha256(f"scalebook-variant\0{assignment}\0{key}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


def draw(spec: VariantSpec, key: str) -> Variant:
    """The variant of ``spec`` for the (normalized or dashed) homework ``key``: deterministic.

    Each parameter is drawn uniformly from its choices, in declared order, then derived values
    are added; a draw that fails ``well_posed`` is replaced by the generator's next one.
    Raises ``RuntimeError`` if no well-posed draw turns up in :data:`MAX_DRAWS` tries (a broken
    spec, found by the tests, never by a student).
    """
    plain = normalize_key(key)
    if not plain:
        return default_variant(spec)
    rng = random.Random(_seed(spec.assignment, plain))
    for _ in range(MAX_DRAWS):
        params = {name: choice.values[rng.randrange(len(choice.values))]
                  for name, choice in spec.parameters.items()}
        values = _values(spec, params)
        if spec.well_posed is None or spec.well_posed(MappingProxyType(values)):
            return Variant(spec, values, plain)
    raise RuntimeError(f"{spec.assignment}: no well-posed variant in {MAX_DRAWS} draws")


# --------------------------------------------------------------------------- problem text

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def placeholders(text: str) -> list[str]:
    """The names of the ``{{name}}`` placeholders in ``text``, in order."""
    return _PLACEHOLDER.findall(text)


def fill_placeholders(text: str, spec: VariantSpec, variant: Variant | None) -> str:
    """``text`` with each ``{{name}}`` replaced: by the student's value when ``variant`` is given
    (a per-student notebook), else by ``[label]`` (the one notebook of a class, whose given
    cells print the student's values). An unknown name raises ``KeyError``."""

    def one(match: re.Match) -> str:
        name = match.group(1)
        label, _unit = spec.label(name)
        if variant is None:
            return f"[{label}]"
        choice = spec.parameters.get(name)
        return format_value(variant[name], choice.fmt if choice else None)

    return _PLACEHOLDER.sub(one, text)

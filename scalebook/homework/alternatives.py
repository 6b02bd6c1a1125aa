"""The standard ways a quantity of this course can be computed differently: a catalog of named,
reusable transformations, each with the cause it stands for.

A part (:class:`~scalebook.homework.parts.Part`) is asked every catalog entry that applies to
it, and says how each resolves (tests/test_homework_alternatives.py asks, for every part of
every homework and practice problem, on the book's numbers and on drawn students):

- a declared :class:`~scalebook.homework.parts.Convention` (accepted, or pinned with the
  problem text's phrase) or :class:`~scalebook.homework.parts.Slip` lists the entry in its
  ``alternatives``: its hint names that cause;
- an entry with a ``hint`` of its own (bits, GiB, ms, percent; a multiply-add as one FLOP;
  forward only; one layer or all; per chip or all chips; (N − 1)/N; bf16 or fp32) resolves
  itself for every part that declares its unit: the grader gives that hint (naming every entry
  whose reading the value matches) when no declared hint matches and the part does not
  declare the entry not applicable;
- the part's ``not_applicable`` names the entry with the reason it does not apply there ("an
  inference step has no backward pass").

Which entries apply to a part: those whose ``units`` include the part's ``unit`` (every entry
with units, for a part that declares none, so a new part is asked everything), and, for an
entry with a ``role``, once per input of that role the part reads (``"chips"``: a varied input
counted in chips, GPUs or devices; ``"layers"``: one counted in layers). An entry with
``auto=False`` needs the part's structure (which matmuls are attention, which tensors are K and
V, which cap the text mentions): it is asked of a part that names it in a convention's, slip's
or ``not_applicable``'s declaration, and listed for every part by ``--list``.

Each entry's transformation is a factor ``f`` (a number, or a function of the role input's
value); the two readings it stands for are the answer times ``f`` and the answer divided by it
(bits for bytes and bytes for bits), or only one of them (``directions``) where the course's
own convention is fixed. :func:`readings` gives them; ``floor or ceil`` and ``power of two``
round down and up instead.

No imports from the rest of the package: :mod:`.parts` uses this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Sequence

__all__ = ["UNITS", "Alternative", "CATALOG", "ROLES", "NotApplicable", "alternative",
           "readings", "role_of", "applies_by_unit", "NO_LINK", "ONE_PASS"]

#: The units a part declares (its answer's dimension, whatever scale the prompt asks: a part in
#: ms has unit "s"). "count": a whole number of things (chips, tokens, microbatches).
UNITS = frozenset({"s", "bytes", "bytes/s", "FLOPs", "FLOPs/s", "FLOPs/byte", "count",
                   "fraction", "ratio", "params", "tokens/s", "dollars"})

_ANY_AMOUNT = frozenset({"s", "bytes", "bytes/s", "FLOPs", "FLOPs/s", "count", "params",
                         "tokens/s", "dollars"})

#: A varied input's role, from its :class:`~scalebook.variants.Choice`'s label or unit.
ROLES = MappingProxyType({
    "chips": frozenset({"chips", "GPUs", "devices", "TPU chips"}),
    "layers": frozenset({"layers", "MoE layers"}),
})


@dataclass(frozen=True)
class Alternative:
    """One catalog entry (see the module docstring).

    ``name``: how parts refer to it. ``family``: units, counting, collectives, attention,
    limits, precision. ``cause``: what a student who computes it this way did, one line.
    ``factor``: the transformation, a number or, for an entry with a ``role``, a function of the
    role input's value. ``units``: the part units it applies to. ``hint``: for an entry that
    resolves itself (a unit reading), the hint every part of those units gives for it.
    ``auto``: asked of every part of its units (True), or only of parts that name it.
    """

    name: str
    family: str
    cause: str
    factor: float | Callable[[float], float] | Callable[[float], tuple[float, float]] | None
    units: frozenset[str]
    role: str = ""
    hint: str = ""
    auto: bool = True
    directions: tuple[str, ...] = ("x", "/")

    def __post_init__(self) -> None:
        if not self.units <= UNITS:
            raise ValueError(f"alternative {self.name!r}: unknown units {sorted(self.units - UNITS)}")
        if self.role and self.role not in ROLES:
            raise ValueError(f"alternative {self.name!r}: unknown role {self.role!r}")


def _round(x: float) -> tuple[float, float]:
    """A whole count rounded the other way: the whole numbers next below and above ``x`` (one
    off, when ``x`` is whole)."""
    if x == math.floor(x):
        return (x - 1, x + 1)
    return (float(math.floor(x)), float(math.ceil(x)))


def _pow2(x: float) -> tuple[float, float]:
    if x <= 0:
        return (float("nan"), float("nan"))
    k = math.log2(x)
    return (2.0 ** math.floor(k), 2.0 ** math.ceil(k))


CATALOG: tuple[Alternative, ...] = (
    # units: each resolves itself with its hint
    Alternative("bits for bytes", "units", "counted bits where the answer is in bytes (or bytes "
                "where it is in bits)", 8.0, frozenset({"bytes", "bytes/s"}),
                hint="That is 8 times off: a byte is 8 bits, and the answer is in bytes."),
    Alternative("GB read as GiB", "units", "read GB (10^9 bytes) as GiB (2^30 bytes), or back",
                2.0 ** 30 / 1e9, frozenset({"bytes", "bytes/s"}),
                hint="That is 7.4% off, the ratio of a GiB (2^30 bytes) to a GB (10^9 bytes): "
                     "this course's GB, TB and GB/s are powers of ten; give bytes."),
    Alternative("ms for s", "units", "gave milliseconds where seconds are asked, or back",
                1000.0, frozenset({"s"}),
                hint="That is 1000 times off: check the unit the part asks for (s or ms)."),
    Alternative("percent for fraction", "units", "gave a percentage where a fraction is asked, "
                "or back", 100.0, frozenset({"fraction"}),
                hint="That is 100 times off: check whether the part asks for a fraction (0.3) "
                     "or a percentage (30)."),
    # counting
    # one direction: the course always counts a multiply-add as 2 (FMA_PHRASE), so the other
    # reading is half the count (a part whose answer grows as the count falls, a critical batch,
    # names it)
    Alternative("multiply-add as 1 FLOP", "counting", "counted a multiply-add as 1 operation "
                "where the course counts 2", 2.0, frozenset({"FLOPs", "FLOPs/byte"}),
                hint="This course counts a multiply-add as 2 FLOPs (a multiply and an add); "
                     "counting it as 1 halves the count.", directions=("/",)),
    Alternative("forward only", "counting", "counted the forward pass only (2 of 6 FLOPs per "
                "parameter and token), or forward and backward where one pass is asked", 3.0,
                frozenset({"FLOPs"}),
                hint="That is 3 times off: a training step costs 6 FLOPs per parameter per token "
                     "(forward 2, backward 4), the forward pass alone 2; check which the part "
                     "asks for."),
    Alternative("one layer or all layers", "counting", "gave one layer's figure for all "
                "layers', or back", lambda L: L, _ANY_AMOUNT, role="layers",
                hint="That is {n:g} times off: check whether the part asks for one layer or all "
                     "{n:g}."),
    Alternative("per chip or global", "counting", "gave the figure per chip where the total "
                "over the chips is asked, or back", lambda n: n, _ANY_AMOUNT, role="chips",
                hint="That is {n:g} times off: check whether the part asks for one chip's share "
                     "or for all {n:g} chips together."),
    Alternative("embeddings counted", "counting", "counted the embedding lookup (and LM head) "
                "as matmuls, or left them out", None, frozenset({"FLOPs", "params", "bytes"}),
                auto=False),
    Alternative("norms and biases", "counting", "counted norms and biases, or left them out",
                None, frozenset({"FLOPs", "params", "bytes"}), auto=False),
    Alternative("total or active parameters", "counting", "used all experts' parameters where "
                "the active ones are meant, or back", None,
                frozenset({"FLOPs", "params", "bytes", "s"}), auto=False),
    Alternative("K and V", "counting", "counted only K (or only V) of the cache, or both where "
                "one is asked", 2.0, frozenset({"bytes", "s", "count"}), auto=False),
    Alternative("per replica", "counting", "gave the figure per model replica where per chip "
                "or global is asked", None, _ANY_AMOUNT, auto=False),
    # collectives
    Alternative("(N-1)/N", "collectives", "kept the exact (N − 1)/N ring factor where the first "
                "cut drops it, or back", lambda n: n / (n - 1) if n > 1 else float("nan"),
                frozenset({"s", "bytes"}), role="chips",
                hint="That is off by the ring factor (N − 1)/N, N = {n:g}: check whether the part "
                     "keeps the exact factor or takes the first cut; its text says which."),
    # asked of a time that reads a chip count (a collective's, mostly): the factor is 2 whatever
    # the count; the two give one value, so one hint names both
    Alternative("bidirectional link", "collectives", "used both directions of a link where "
                "one is meant, or back", lambda n: 2.0, frozenset({"s"}), role="chips",
                hint="That is twice or half the answer: check whether the link's bandwidth counts "
                     "one direction or both, as the text states it."),
    Alternative("ring or line", "collectives", "costed a ring where the axis has no "
                "wraparound, or back", 2.0, frozenset({"s"}), auto=False),
    Alternative("latency hops", "collectives", "counted N/2, N − 1 or per-stage hops", None,
                frozenset({"s"}), auto=False),
    Alternative("sequential or concurrent stages", "collectives", "added the stages of a "
                "multi-axis collective where they run at once, or back", None,
                frozenset({"s"}), auto=False),
    Alternative("AllReduce passes", "collectives", "costed an AllReduce as one pass where it "
                "is two (a ReduceScatter and an AllGather), or back", lambda n: 2.0,
                frozenset({"s"}), role="chips",
                hint="An AllReduce is two passes, a ReduceScatter then an AllGather: check the "
                     "count of passes."),
    # attention
    Alternative("causal mask", "attention", "halved the score and value matmuls for the "
                "causal mask, or did not", 2.0, frozenset({"FLOPs", "s"}), auto=False),
    # limits
    Alternative("physical cap", "limits", "applied a cap the text mentions (a node's GPUs, a "
                "slice's chips, the head count), or did not", None, frozenset({"count"}),
                auto=False),
    Alternative("floor or ceil", "limits", "rounded a whole count down where it must be "
                "rounded up, or back", _round, frozenset({"count"}),
                hint="That is one off: a whole count rounds up where it must hold or cover "
                     "something (chips for the weights) and down where it must fit (sequences in "
                     "memory); check which the part asks for."),
    # asked where a part names it: most counts here are exact (a pod's chips, a critical batch
    # the text asks unrounded), so the power of two is not a reading of every count
    Alternative("power of two", "limits", "rounded to a power of two, or did not", _pow2,
                frozenset({"count"}), auto=False),
    # precision
    Alternative("bf16 or fp32", "precision", "used 4 bytes (fp32) where 2 (bf16) are meant, "
                "or back, for weights, moments, gradients or a communicated tensor", 2.0,
                frozenset({"bytes"}),
                hint="That is twice or half the answer: check the bytes per element the text "
                     "gives (bf16 2, fp32 4, int8 1)."),
)

_BY_NAME = MappingProxyType({a.name: a for a in CATALOG})


@dataclass(frozen=True)
class NotApplicable:
    """A catalog entry that does not apply to a part, and why ("an inference step has no
    backward pass"); ``reading``: only its reading "x" (times its factor) or "/" (divided by
    it), or both (""). The grader gives no catalog hint for it; ``--list`` shows it."""

    alternative: str
    reason: str
    reading: str = ""

    def __post_init__(self) -> None:
        alternative(self.alternative)  # KeyError for a name not in the catalog
        if self.reading not in ("", "x", "/", "up", "down"):
            raise ValueError(f"not applicable {self.alternative!r}: reading {self.reading!r} is "
                             "one of x, /, up, down, or empty for both")
        if not self.reason.strip():
            raise ValueError(f"not applicable {self.alternative!r}: say why")


def alternative(name: str) -> Alternative:
    """The catalog entry ``name``; ``KeyError`` naming the catalog if none."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no alternative {name!r} in the catalog: {', '.join(_BY_NAME)}") from None


def role_of(label: str, unit: str) -> str:
    """The role (a key of :data:`ROLES`) of a varied input with this label and unit, or ""."""
    for role, words in ROLES.items():
        if unit in words or label in words:
            return role
    return ""


def applies_by_unit(alt: Alternative, unit: str) -> bool:
    """Whether ``alt`` applies to a part of ``unit`` ("": undeclared, so every entry does)."""
    return not unit or unit in alt.units


def readings(alt: Alternative, value: Sequence[float], role_value: float | None = None
             ) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """The two readings ``alt`` stands for of the value ``value`` (a tuple of floats, one for a
    number): ``("x f", value × f)`` and ``("/ f", value / f)``; for "power of two" the power of
    two below and above. Empty for an entry without a factor."""
    if alt.factor is None:
        return ()
    if alt.factor is _pow2 or alt.factor is _round:
        other_way = alt.factor
        low = tuple(other_way(x)[0] for x in value)
        high = tuple(other_way(x)[1] for x in value)
        return (("down", low), ("up", high))
    if callable(alt.factor):
        if role_value is None:
            raise ValueError(f"alternative {alt.name!r} needs the value of its {alt.role!r} input")
        f = float(alt.factor(role_value))  # type: ignore[arg-type]
    else:
        f = alt.factor
    both = (("x", tuple(x * f for x in value)), ("/", tuple(x / f for x in value)))
    return tuple((label, r) for label, r in both if label in alt.directions)


#: What a time with no communication in it declares: it reads a chip count, but no link and no
#: collective enters it (a step's compute, HBM reads).
NO_LINK = (NotApplicable("bidirectional link", "a time of compute or memory reads: no link "
                         "enters it"),
           NotApplicable("AllReduce passes", "a time of compute or memory reads: no collective "
                         "enters it"),
           NotApplicable("(N-1)/N", "a time of compute or memory reads: no ring factor enters it"))
#: What the time of a one-pass collective declares (an AllGather, an AllToAll, a ring's sends).
ONE_PASS = NotApplicable("AllReduce passes", "one pass (an AllGather, an AllToAll or a ring's "
                         "sends): only an AllReduce has two")


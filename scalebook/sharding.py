"""Sharding notation, per-device memory, and the four cases of a sharded matmul.

Notation (as in "How to Scale Your Model", Austin et al. 2025, part 3):

- ``Mesh({'X': 4, 'Y': 8, 'Z': 2})``: named mesh axes (single uppercase letters) and their sizes.
- ``A[I_X, J_Y]``: array A, dim I split over mesh axis X, dim J over Y. ``I_XY`` splits I over
  X and Y together (X major); a dim with no subscript (``J``) is replicated.
- ``C[I_X, K] {U_Y}``: C holds *unreduced* partial sums over Y: summing the Y copies gives C.
- ``A[I, J] ·_J B[J, K]``: a matmul contracting dim J.
- ``bf16[256, 2048]``: a dtype and a shape (see :func:`parse_shape`); kept apart from sharding.

Bytes follow the collectives convention (``scalebook.collectives``): a collective's ``nbytes``
is the array the collective's device group holds together, i.e. the per-device bytes *after* an
AllGather, or *before* a ReduceScatter / AllReduce.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, replace
from typing import Mapping, Sequence, Union

from scalebook import collectives
from scalebook.hardware import Chip, bytes_per_element, canonical_dtype, get_chip
from scalebook.units import format_bytes, format_seconds
from scalebook.torus import axis_wraps

__all__ = [
    "DimSharding", "Sharding", "Mesh", "parse_sharding", "parse_shape",
    "local_shape", "bytes_per_device", "total_bytes",
    "PlannedCollective", "MatmulPlan", "plan_matmul", "axis_collective_cost",
    "plan_reshard", "reshard_candidates",
]

_AXIS_RE = re.compile(r"[A-Z]+")
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_']*")
_DIM_RE = re.compile(r"(?P<dim>[A-Za-z][A-Za-z0-9']*)(?:_(?P<axes>\{[^{}]*\}|\S*))?")
_ARRAY_RE = re.compile(
    r"\s*(?P<name>[A-Za-z][A-Za-z0-9_']*)?\s*\[(?P<dims>[^\[\]]*)\]\s*"
    r"(?:\{(?P<unreduced>[^{}]*)\})?\s*"
)
_SHAPE_RE = re.compile(r"\s*(?P<dtype>[A-Za-z][A-Za-z0-9_]*)\s*\[(?P<dims>[^\[\]]*)\]\s*")


# --------------------------------------------------------------------------- notation

@dataclass(frozen=True)
class DimSharding:
    """One logical dim and the mesh axes it is split over (empty: replicated)."""

    name: str
    axes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.name}_{''.join(self.axes)}" if self.axes else self.name


@dataclass(frozen=True)
class Sharding:
    """A sharded array in the book's notation, e.g. ``C[I_X, K] {U_Y}``.

    Attributes:
        name: array name ("A"); may be "".
        dims: one :class:`DimSharding` per logical dim, in order.
        unreduced: mesh axes over which the array holds partial sums.
    """

    name: str
    dims: tuple[DimSharding, ...]
    unreduced: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.name}[{', '.join(str(dim) for dim in self.dims)}]"
        return f"{text} {{U_{''.join(self.unreduced)}}}" if self.unreduced else text

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(dim.name for dim in self.dims)

    @property
    def sharded_axes(self) -> tuple[str, ...]:
        """Mesh axes that split some dim, in order of appearance (unreduced axes not included)."""
        return tuple(axis for dim in self.dims for axis in dim.axes)

    def axes_of(self, dim_name: str) -> tuple[str, ...]:
        """Mesh axes splitting ``dim_name``; ``ValueError`` if the array has no such dim."""
        for dim in self.dims:
            if dim.name == dim_name:
                return dim.axes
        raise ValueError(f"{self} has no dim {dim_name!r}")

    def with_axes(self, dim_name: str, axes: Sequence[str]) -> "Sharding":
        """A copy with ``dim_name`` split over ``axes`` instead."""
        self.axes_of(dim_name)
        dims = tuple(DimSharding(d.name, tuple(axes)) if d.name == dim_name else d
                     for d in self.dims)
        return _validated(replace(self, dims=dims), str(self))


def _axes(text: str, where: str, source: str) -> tuple[str, ...]:
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text:
        raise ValueError(f"{source!r}: {where} has an underscore but no mesh axis after it")
    if not _AXIS_RE.fullmatch(text):
        raise ValueError(
            f"{source!r}: bad mesh axes {text!r} in {where}; mesh axes are single uppercase "
            "letters, e.g. X, Y, Z (XY means X then Y)"
        )
    return tuple(text)


def _validated(sharding: Sharding, source: str) -> Sharding:
    names = sharding.dim_names
    repeated_dims = sorted({n for n in names if names.count(n) > 1})
    if repeated_dims:
        raise ValueError(f"{source!r}: dim {repeated_dims[0]!r} appears twice")
    used = [*sharding.sharded_axes, *sharding.unreduced]
    repeated = sorted({axis for axis in used if used.count(axis) > 1})
    if repeated:
        raise ValueError(
            f"{source!r}: mesh axis {repeated[0]} is used twice in one array; an axis can split "
            "only one dim (and cannot also be unreduced)"
        )
    return sharding


def parse_sharding(text: str | Sharding) -> Sharding:
    """Parse ``"A[I_X, J_Y]"``, ``"A[I_XY, J]"``, ``"C[I_X, K] {U_Y}"`` (also ``I_{XY}``).

    A :class:`Sharding` passes through. Raises ``ValueError`` naming the string and the problem
    for unbalanced brackets, empty dims, lowercase or non-letter axes, or an axis used twice.
    """
    if isinstance(text, Sharding):
        return text
    if not isinstance(text, str):
        raise ValueError(f"a sharding must be a string such as 'A[I_X, J]', got {text!r}")
    if text.count("[") != text.count("]") or text.count("{") != text.count("}"):
        raise ValueError(f"{text!r}: unbalanced brackets")
    match = _ARRAY_RE.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r}: expected NAME[dim, dim, ...] with an optional {{U_axes}} suffix, "
            "e.g. 'A[I_X, J]' or 'C[I_X, K] {U_Y}'"
        )
    dims = []
    for position, part in enumerate(match["dims"].split(","), start=1):
        part = part.strip()
        if not part:
            raise ValueError(f"{text!r}: dim {position} is empty")
        dim = _DIM_RE.fullmatch(part)
        if dim is None:
            raise ValueError(
                f"{text!r}: cannot read dim {part!r}; write a dim name with optional mesh "
                "axes, e.g. I or I_X or I_XY"
            )
        axes = () if dim["axes"] is None else _axes(dim["axes"], f"dim {part!r}", text)
        dims.append(DimSharding(dim["dim"], axes))
    unreduced: tuple[str, ...] = ()
    if match["unreduced"] is not None:
        items = [item.strip() for item in match["unreduced"].split(",")]
        if not any(items):
            raise ValueError(f"{text!r}: empty unreduced set {{}}; write e.g. {{U_X}}")
        for item in items:
            if not item.startswith("U_"):
                raise ValueError(f"{text!r}: unreduced entries are written U_<axes>, got {item!r}")
            unreduced += _axes(item[2:], f"unreduced {item!r}", text)
    return _validated(Sharding(match["name"] or "", tuple(dims), unreduced), text)


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse ``"bf16[256, 2048]"`` into ``("bf16", (256, 2048))`` (dtype in catalog spelling)."""
    if not isinstance(text, str):
        raise ValueError(f"a shape must be a string such as 'bf16[256, 2048]', got {text!r}")
    match = _SHAPE_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r}: expected dtype[size, size, ...], e.g. 'bf16[256, 2048]'")
    dtype = canonical_dtype(match["dtype"])
    sizes = []
    for part in match["dims"].split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"{text!r}: sizes must be positive integers, got {part!r}")
        sizes.append(int(part))
    return dtype, tuple(sizes)


# --------------------------------------------------------------------------- mesh

@dataclass(frozen=True, init=False)
class Mesh:
    """A device mesh: named axes (single uppercase letters) with positive integer sizes.

    ``Mesh({'X': 4, 'Y': 8, 'Z': 2})`` has 64 devices. ``mesh['Y']`` is 8.
    """

    axes: tuple[tuple[str, int], ...]

    def __init__(self, axis_sizes: Mapping[str, int]) -> None:
        if not isinstance(axis_sizes, Mapping):
            raise ValueError(f"Mesh takes a mapping such as {{'X': 4, 'Y': 8}}, got {axis_sizes!r}")
        if not axis_sizes:
            raise ValueError("a Mesh needs at least one axis, e.g. Mesh({'X': 4})")
        pairs: list[tuple[str, int]] = []
        for name, size in axis_sizes.items():
            if not isinstance(name, str) or not re.fullmatch(r"[A-Z]", name):
                raise ValueError(f"mesh axis name {name!r} must be a single uppercase letter")
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
                raise ValueError(
                    f"mesh axis {name} must have a positive integer size, got {size!r}"
                )
            pairs.append((name, int(size)))
        object.__setattr__(self, "axes", tuple(pairs))

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.axes)

    @property
    def n_devices(self) -> int:
        """Total devices: the product of the axis sizes."""
        return math.prod(size for _, size in self.axes)

    def __getitem__(self, axis: str) -> int:
        for name, size in self.axes:
            if name == axis:
                return size
        raise ValueError(f"{self} has no axis {axis!r}")

    def size_of(self, axes: Sequence[str]) -> int:
        """Devices spanned by ``axes`` together: the product of their sizes."""
        return math.prod(self[axis] for axis in axes)

    def __str__(self) -> str:
        return f"Mesh({self.sizes!r})"

    __repr__ = __str__


# --------------------------------------------------------------------------- memory

def _check_against_mesh(sharding: Sharding, mesh: Mesh) -> None:
    for axis in (*sharding.sharded_axes, *sharding.unreduced):
        if axis not in mesh.axis_names:
            raise ValueError(f"{sharding} uses mesh axis {axis}, which {mesh} does not have")


def _check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise ValueError(f"shape must be a sequence of positive integers, got {shape!r}")
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
            raise ValueError(f"shape sizes must be positive integers, got {shape!r}")
    return tuple(int(size) for size in shape)


def local_shape(shape: Sequence[int], sharding: str | Sharding, mesh: Mesh) -> tuple[int, ...]:
    """The shard one device holds: each dim divided by the product of its mesh axes' sizes.

    ``local_shape((256, 2048), "A[I_XY, J]", Mesh({'X': 4, 'Y': 8}))`` is ``(8, 2048)``.
    Raises ``ValueError`` on a rank mismatch, an axis the mesh lacks, or a dim the axes do not
    divide evenly.
    """
    sharding = parse_sharding(sharding)
    shape = _check_shape(shape)
    if len(shape) != sharding.rank:
        raise ValueError(f"shape {shape} has rank {len(shape)} but {sharding} has rank "
                         f"{sharding.rank}")
    _check_against_mesh(sharding, mesh)
    local = []
    for size, dim in zip(shape, sharding.dims):
        ways = mesh.size_of(dim.axes)
        if size % ways:
            raise ValueError(
                f"{sharding}: dim {dim.name} of size {size} does not divide evenly over "
                f"{''.join(dim.axes)} ({ways} devices)"
            )
        local.append(size // ways)
    return tuple(local)


def bytes_per_device(shape: Sequence[int], dtype: str, sharding: str | Sharding,
                     mesh: Mesh) -> float:
    """Bytes of one device's shard: product of :func:`local_shape` × bytes per element."""
    return math.prod(local_shape(shape, sharding, mesh)) * bytes_per_element(dtype)


def total_bytes(shape: Sequence[int], dtype: str, sharding: str | Sharding, mesh: Mesh) -> float:
    """Bytes over the whole mesh, replicas included: :func:`bytes_per_device` × n_devices.

    ``bf16[256, 2048]`` as ``A[I_XY, J]`` on ``Mesh({'X': 4, 'Y': 8, 'Z': 2})``: 32 KiB per
    device, 2 MiB in all (the 1 MiB array, twice over Z).
    """
    return bytes_per_device(shape, dtype, sharding, mesh) * mesh.n_devices


# --------------------------------------------------------------------------- matmul planner

@dataclass(frozen=True)
class PlannedCollective:
    """One collective in a matmul plan.

    Attributes:
        kind: "AllGather", "ReduceScatter" or "AllReduce".
        operand: the array it acts on ("A", "B", or the output "C").
        dim: the dim gathered (AllGather) or scattered onto (ReduceScatter); None for AllReduce.
        axes: mesh axes it runs over.
        before / after: the array's sharding before and after, in book notation.
        group_size: devices in each collective group (product of the axes' sizes).
        nbytes: logical bytes per group (collectives convention), when shapes are known.
        cost: modelled cost, when shapes and chip are known.
    """

    kind: str
    operand: str
    dim: str | None
    axes: tuple[str, ...]
    before: str
    after: str
    group_size: int
    nbytes: float | None = None
    cost: collectives.CollectiveCost | None = None

    @property
    def time(self) -> float | None:
        return None if self.cost is None else float(self.cost.time)

    def __str__(self) -> str:
        return f"{self.kind}_{''.join(self.axes)} {self.before} -> {self.after}"


@dataclass(frozen=True)
class MatmulPlan:
    """How to compute ``lhs ·_J rhs`` on a mesh, following the four cases of HSYM part 3.

    Attributes:
        case: 1 no contracting dim sharded; 2 one side sharded on it; 3 both sharded on it;
            4 both operands split a non-contracting dim over the same mesh axis.
        description: one sentence on what happens.
        lhs, rhs: the inputs as given; lhs_used, rhs_used: as multiplied, after any AllGathers.
        local_result: what the local matmul yields (may carry ``{U_...}``).
        output: the final result, after any AllReduce / ReduceScatter.
        collectives: in execution order.
        flops_per_device: ``2 × product of local dim sizes`` (needs shapes).
        compute_time: flops_per_device / chip.flops(dtype) (needs shapes and chip).
        comms_time: sum of the collectives' times, not overlapped with compute.
    """

    case: int
    description: str
    contracting: str
    lhs: str
    rhs: str
    lhs_used: str
    rhs_used: str
    local_result: str
    output: str
    collectives: tuple[PlannedCollective, ...]
    dtype: str = "bf16"
    chip_name: str | None = None
    flops_per_device: float | None = None
    compute_time: float | None = None
    comms_time: float | None = None

    def explain(self) -> str:
        """A few lines of plain text: the case, each step with bytes and time, the result."""
        lines = [f"Case {self.case}: {self.description}",
                 f"  {self.lhs} ·_{self.contracting} {self.rhs}"]
        step = 1
        gathers = [c for c in self.collectives if c.kind == "AllGather"]
        reductions = [c for c in self.collectives if c.kind != "AllGather"]
        for collective in gathers:
            lines.append(f"  {step}. {collective}{_cost_note(collective)}")
            step += 1
        matmul = (f"  {step}. local matmul {self.lhs_used} ·_{self.contracting} "
                  f"{self.rhs_used} -> {self.local_result}")
        if self.flops_per_device is not None:
            matmul += f"  ({self.flops_per_device:.3g} FLOPs per device"
            matmul += (f", {format_seconds(self.compute_time)})" if self.compute_time is not None
                       else ")")
        lines.append(matmul)
        step += 1
        for collective in reductions:
            lines.append(f"  {step}. {collective}{_cost_note(collective)}")
            step += 1
        summary = f"Result: {self.output}"
        if self.comms_time is not None and self.compute_time is not None:
            summary += (f"; communication {format_seconds(self.comms_time)}, "
                        f"compute {format_seconds(self.compute_time)} on {self.chip_name}")
        lines.append(summary)
        return "\n".join(lines)


def _cost_note(collective: PlannedCollective) -> str:
    if collective.nbytes is None:
        return ""
    note = f"  ({format_bytes(collective.nbytes)} per group"
    if collective.cost is not None:
        note += f", {format_seconds(float(collective.cost.time))}, {collective.cost.regime}"
    return note + ")"


_REDUCE_CHOICES = ("all_reduce", "reduce_scatter", "none")


def plan_matmul(lhs: str | Sharding, rhs: str | Sharding, mesh: Mesh, *, contracting: str,
                shapes: Mapping[str, int] | None = None, dtype: str = "bf16",
                chip: Chip | str | None = None, output_name: str = "C",
                reduce: str = "all_reduce", scatter_dim: str | None = None,
                gather: str | None = None,
                wraparound: Union[bool, str, Mapping[str, bool]] = True,
                hop_latency: float = collectives.DEFAULT_HOP_LATENCY) -> MatmulPlan:
    """Plan ``lhs ·_J rhs`` (``J = contracting``) on ``mesh``: which case, which collectives.

    The four cases (HSYM part 3):

    1. Neither operand splits J: multiply the local shards; no communication.
    2. One operand splits J: AllGather that operand's J first, then as case 1.
    3. Both split J over the same axes: the local matmul gives partial sums ``{U_axes}``; then
       AllReduce (``reduce="all_reduce"``, default), ReduceScatter onto ``scatter_dim``
       (``reduce="reduce_scatter"``; default the last output dim), or stop (``reduce="none"``).
       If the two sides split J over *different* axes, one side (see ``gather``) is AllGathered
       on J and then sliced locally (free) to match the other, and it goes on as case 3; if the
       slice is impossible (its other dims use those axes), the other side is gathered too.
    4. Both operands split a non-contracting dim over the same mesh axis: the result would need
       that axis twice, so AllGather one operand's offending dims first; then cases 1–3 apply.
       The plan reports case 4 (its first problem).

    ``gather`` ("lhs" or "rhs") picks which operand is gathered in case 4 or on a mismatch;
    by default the one moving fewer bytes when ``shapes`` are known, else the rhs.
    ``shapes`` maps dim names to sizes (e.g. ``{'I': 1024, 'J': 4096, 'K': 8192}``); with it the
    plan gives collective bytes and local FLOPs; with ``chip`` too, times: TPU collectives over
    ICI (``wraparound``: True/False for every axis, a mapping axis → bool, or "auto" to apply
    :func:`scalebook.collectives.has_wraparound`), GPU collectives over NVLink / NICs.
    Batched matmuls (a non-contracting dim in both operands) and unreduced inputs are not
    modelled and raise ``ValueError``.
    """
    a, b = parse_sharding(lhs), parse_sharding(rhs)
    a = a if a.name else replace(a, name="A")
    b = b if b.name else replace(b, name="B")
    if not isinstance(mesh, Mesh):
        raise ValueError(f"mesh must be a Mesh, got {mesh!r}")
    if reduce not in _REDUCE_CHOICES:
        raise ValueError(f"reduce must be one of {_REDUCE_CHOICES}, got {reduce!r}")
    if gather not in (None, "lhs", "rhs"):
        raise ValueError(f"gather must be 'lhs', 'rhs' or None, got {gather!r}")
    if not isinstance(output_name, str) or not _NAME_RE.fullmatch(output_name):
        raise ValueError(f"output_name must be an array name such as 'C', got {output_name!r}")
    for operand in (a, b):
        _check_against_mesh(operand, mesh)
        if operand.unreduced:
            raise ValueError(f"{operand} is unreduced; reduce it before multiplying")
        if contracting not in operand.dim_names:
            raise ValueError(f"contracting dim {contracting!r} is not a dim of {operand}")
    shared = (set(a.dim_names) & set(b.dim_names)) - {contracting}
    if shared:
        raise ValueError(
            f"dim {sorted(shared)[0]!r} is in both {a} and {b} but is not the contracting dim; "
            "batched matmuls are not modelled"
        )
    sizes = _check_dim_sizes(shapes, a, b, mesh) if shapes is not None else None
    if chip is not None:
        chip = get_chip(chip)
    dtype = canonical_dtype(dtype)
    planner = _Planner(mesh, sizes, dtype, chip, wraparound, hop_latency)
    a0, b0 = a, b

    def nc_axes(s: Sharding) -> set[str]:
        return {axis for dim in s.dims if dim.name != contracting for axis in dim.axes}

    case = 0
    notes = []
    conflict = nc_axes(a) & nc_axes(b)
    if conflict:
        case = 4
        side = planner.choose_side(gather, a, b, lambda s: _drop_axes(s, contracting, conflict))
        before = a if side == "lhs" else b
        after = planner.gather_dims(before, lambda dim: dim != contracting, conflict)
        a, b = (after, b) if side == "lhs" else (a, after)
        notes.append(f"{a0} and {b0} both split a non-contracting dim over "
                     f"{''.join(sorted(conflict))}; AllGather {before.name} there first")

    ja, jb = a.axes_of(contracting), b.axes_of(contracting)
    if ja and jb and ja != jb:
        side = _mismatch_side(gather, a, b, contracting, planner)
        gathered, kept = (a, b) if side == "lhs" else (b, a)
        target = kept.axes_of(contracting)
        extra, sliceable = _mismatch_fix(gathered, kept, contracting)
        gathered = planner.gather_dims(gathered, lambda dim: dim == contracting, set(extra))
        j = contracting
        if gathered.axes_of(j) == target:
            notes.append(f"{j} is split differently on the two sides: AllGather {gathered.name}'s "
                         f"{j} over {''.join(extra)} so both are {j}_{''.join(target)}")
        elif sliceable:
            gathered = gathered.with_axes(j, target)
            notes.append(f"{j} is split differently on the two sides: AllGather {gathered.name}'s "
                         f"{j}, slice it locally (free) to {j}_{''.join(target)}")
        else:
            kept = planner.gather_dims(kept, lambda dim: dim == j, set(target))
            notes.append(f"{j} is split differently on the two sides and cannot be re-sliced "
                         "to match, so AllGather it on both")
        a, b = (gathered, kept) if side == "lhs" else (kept, gathered)
        case = case or (3 if a.axes_of(j) else 2)
    elif bool(ja) != bool(jb):
        sharded = a if ja else b
        case = case or 2
        done = planner.gather_dims(sharded, lambda dim: dim == contracting,
                                   set(sharded.axes_of(contracting)))
        a, b = (done, b) if ja else (a, done)
        notes.append(f"{sharded.name} splits the contracting dim {contracting}: AllGather it")
    elif ja and jb:
        case = case or 3
    else:
        case = case or 1

    partial = a.axes_of(contracting)
    out_dims = tuple(d for d in a.dims if d.name != contracting) + tuple(
        d for d in b.dims if d.name != contracting)
    local_result = Sharding(output_name, out_dims, partial)
    output = local_result
    if partial:
        notes.append(f"both split {contracting} over {''.join(partial)}: the local matmul "
                     f"gives partial sums {{U_{''.join(partial)}}}")
        output = planner.reduce(local_result, reduce, scatter_dim)

    flops = compute_time = None
    if sizes is not None:
        local = {d.name: sizes[d.name] // mesh.size_of(d.axes) for d in (*a.dims, *b.dims)
                 if d.name != contracting}
        local_j = sizes[contracting] // mesh.size_of(partial)
        flops = 2.0 * math.prod(local.values()) * local_j
        if chip is not None:
            compute_time = flops / chip.flops(dtype)
    comms_time = None
    if chip is not None and sizes is not None:
        comms_time = float(sum(step.cost.time for step in planner.steps if step.cost is not None))
    description = _CASE_TEXT[case]
    if notes:
        description += " " + "; ".join(notes) + "."
    return MatmulPlan(
        case=case, description=description, contracting=contracting,
        lhs=str(a0), rhs=str(b0), lhs_used=str(a), rhs_used=str(b),
        local_result=str(local_result), output=str(output),
        collectives=tuple(planner.steps), dtype=dtype,
        chip_name=None if chip is None else chip.name,
        flops_per_device=flops, compute_time=compute_time, comms_time=comms_time,
    )


_CASE_TEXT = {
    1: "Neither operand splits the contracting dim: multiply the local shards, no communication.",
    2: "One operand splits the contracting dim: AllGather it along that dim, then multiply.",
    3: "Both operands split the contracting dim: multiply locally into partial sums, then "
       "reduce them.",
    4: "Both operands split a non-contracting dim over the same mesh axis, which the output "
       "cannot hold: AllGather one operand first.",
}


def _mismatch_fix(gathered: Sharding, kept: Sharding,
                  contracting: str) -> tuple[tuple[str, ...], bool]:
    """For J split differently on the two sides: which of ``gathered``'s J axes to AllGather so
    it can match ``kept``, and whether the match is possible at all (by a free local slice).

    If dropping some axes leaves exactly ``kept``'s axes, only those are gathered. Otherwise
    all are gathered and J is re-sliced locally, which needs ``kept``'s J axes to be free in
    ``gathered``.
    """
    mine, target = gathered.axes_of(contracting), kept.axes_of(contracting)
    if tuple(ax for ax in mine if ax in target) == target:
        return tuple(ax for ax in mine if ax not in target), True
    other = {ax for dim in gathered.dims if dim.name != contracting for ax in dim.axes}
    return mine, not (other & set(target))


def _mismatch_side(gather: str | None, a: Sharding, b: Sharding, contracting: str,
                   planner: "_Planner") -> str:
    """Which side to AllGather when J is split differently: ``gather`` if given; else a side
    whose fix needs one AllGather, the one moving fewer bytes when shapes are known; else rhs."""
    if gather is not None:
        return gather
    options = {}
    for side, (mine, other) in (("lhs", (a, b)), ("rhs", (b, a))):
        extra, sliceable = _mismatch_fix(mine, other, contracting)
        after = mine.with_axes(contracting, [ax for ax in mine.axes_of(contracting)
                                             if ax not in extra])
        moved = planner.nbytes(after)
        options[side] = (not sliceable, 0.0 if moved is None else moved)
    return "lhs" if options["lhs"] < options["rhs"] else "rhs"


def _drop_axes(sharding: Sharding, contracting: str, axes: set[str]) -> Sharding:
    for dim in sharding.dims:
        if dim.name != contracting and set(dim.axes) & axes:
            sharding = sharding.with_axes(dim.name, [ax for ax in dim.axes if ax not in axes])
    return sharding


def _check_dim_sizes(shapes: Mapping[str, int], a: Sharding, b: Sharding,
                     mesh: Mesh) -> dict[str, int]:
    if not isinstance(shapes, Mapping):
        raise ValueError(f"shapes must map dim names to sizes, e.g. {{'I': 1024}}, got {shapes!r}")
    sizes: dict[str, int] = {}
    for operand in (a, b):
        missing = [name for name in operand.dim_names if name not in shapes]
        if missing:
            raise ValueError(f"shapes has no size for dim {missing[0]!r} of {operand}")
        shape = _check_shape([shapes[name] for name in operand.dim_names])
        local_shape(shape, operand, mesh)  # divisibility
        sizes.update(zip(operand.dim_names, shape))
    return sizes


class _Planner:
    """Builds the collective list, with bytes and times when shapes and chip are known."""

    def __init__(self, mesh: Mesh, sizes: dict[str, int] | None, dtype: str, chip: Chip | None,
                 wraparound: Union[bool, str, Mapping[str, bool]], hop_latency: float) -> None:
        if not (isinstance(wraparound, bool) or wraparound == "auto"
                or isinstance(wraparound, Mapping)):
            raise ValueError(f"wraparound must be True, False, 'auto' or a mapping axis -> bool, "
                             f"got {wraparound!r}")
        self.mesh, self.sizes, self.dtype, self.chip = mesh, sizes, dtype, chip
        self.wraparound, self.hop_latency = wraparound, hop_latency
        self.steps: list[PlannedCollective] = []

    def nbytes(self, sharding: Sharding) -> float | None:
        if self.sizes is None:
            return None
        shape = [self.sizes[name] for name in sharding.dim_names]
        return bytes_per_device(shape, self.dtype, sharding, self.mesh)

    def choose_side(self, gather: str | None, a: Sharding, b: Sharding, gathered) -> str:
        if gather is not None:
            return gather
        lhs_bytes, rhs_bytes = self.nbytes(gathered(a)), self.nbytes(gathered(b))
        if lhs_bytes is not None and rhs_bytes is not None:  # shapes known
            return "lhs" if lhs_bytes < rhs_bytes else "rhs"
        return "rhs"

    def gather_dims(self, sharding: Sharding, which, axes: set[str]) -> Sharding:
        for dim in sharding.dims:
            removed = tuple(ax for ax in dim.axes if ax in axes)
            if not which(dim.name) or not removed:
                continue
            after = sharding.with_axes(dim.name, [ax for ax in dim.axes if ax not in axes])
            self.add("AllGather", sharding, after, dim.name, removed, self.nbytes(after))
            sharding = after
        return sharding

    def reduce(self, result: Sharding, how: str, scatter_dim: str | None) -> Sharding:
        axes = result.unreduced
        if how == "none":
            return result
        reduced = replace(result, unreduced=())
        if how == "all_reduce":
            self.add("AllReduce", result, reduced, None, axes, self.nbytes(result))
            return reduced
        dim_name = scatter_dim if scatter_dim is not None else result.dims[-1].name
        if dim_name not in result.dim_names:
            raise ValueError(f"scatter_dim {dim_name!r} is not a dim of {result}")
        after = reduced.with_axes(dim_name, (*reduced.axes_of(dim_name), *axes))
        if self.sizes is not None:
            local_shape([self.sizes[n] for n in after.dim_names], after, self.mesh)
        self.add("ReduceScatter", result, after, dim_name, axes, self.nbytes(result))
        return after

    def add(self, kind: str, before: Sharding, after: Sharding, dim: str | None,
            axes: tuple[str, ...], nbytes: float | None) -> None:
        group = self.mesh.size_of(axes)
        cost = None if nbytes is None or self.chip is None else self.cost(kind, nbytes, axes)
        self.steps.append(PlannedCollective(kind, before.name, dim, tuple(axes), str(before),
                                            str(after), group, nbytes, cost))

    def cost(self, kind: str, nbytes: float, axes: tuple[str, ...]) -> collectives.CollectiveCost:
        chip = self.chip
        assert chip is not None
        return axis_collective_cost(kind, nbytes, axes, self.mesh, chip,
                                    wraparound=self.wraparound, hop_latency=self.hop_latency)


def axis_collective_cost(kind: str, nbytes: float, axes: Sequence[str], mesh: Mesh,
                         chip: Chip | str, *,
                         wraparound: Union[bool, str, Mapping[str, bool]] = "auto",
                         hop_latency: float = collectives.DEFAULT_HOP_LATENCY
                         ) -> collectives.CollectiveCost:
    """:func:`scalebook.collectives.collective_cost` over named ``axes`` of ``mesh``.

    The mesh's axis sizes are passed on. On an ICI torus ``wraparound`` says which axes are
    rings: ``"auto"`` (default) as the chip's slices are built, taking the mesh as the slice it
    fills, mesh axis ``i`` on physical axis ``i`` (:func:`scalebook.torus.axis_wraps`: a v5p
    mesh 4x4x4 is a cube, every axis a ring; a v5p mesh 4x4 is the slice 4x4x1, no ring; a
    mesh with more axes than the torus has each axis taken as a slice of its own);
    True/False for every axis, or a mapping axis → bool; on GPUs it is ignored (NVLink and NICs
    have no wraparound).
    """
    chip = get_chip(chip)
    axes = tuple(axes)
    sizes = [mesh[axis] for axis in axes] or [1]
    if not chip.has_ici_torus:
        return collectives.collective_cost(kind, nbytes, sizes, chip, hop_latency=hop_latency)
    if wraparound == "auto":
        whole = [mesh[axis] for axis in mesh.axis_names]
        if len(whole) <= len(chip.max_slice):
            wraps = dict(zip(mesh.axis_names, axis_wraps(chip, whole)))
            flags = [wraps[axis] for axis in axes] or [False]
        else:
            flags = [axis_wraps(chip, (size,))[0] for size in sizes]
    elif isinstance(wraparound, Mapping):
        missing = [axis for axis in axes if axis not in wraparound]
        if missing:
            raise ValueError(f"wraparound mapping has no entry for axis {missing[0]}")
        flags = [bool(wraparound[axis]) for axis in axes]
    elif isinstance(wraparound, bool):
        flags = [wraparound] * len(sizes)
    else:
        raise ValueError(f"wraparound must be True, False, 'auto' or a mapping axis -> bool, "
                         f"got {wraparound!r}")
    return collectives.collective_cost(kind, nbytes, sizes, chip, wraparound=flags,
                                       hop_latency=hop_latency)


# --------------------------------------------------------------------------- resharding

def _axes_map(sharding: Sharding) -> dict[str, tuple[str, ...]]:
    return {dim.name: dim.axes for dim in sharding.dims}


def _with(sharding: Sharding, axes: Mapping[str, Sequence[str]]) -> Sharding:
    """``sharding`` with each dim's axes replaced by ``axes[dim]`` (same dim order)."""
    for name, value in axes.items():
        sharding = sharding.with_axes(name, value)
    return sharding


def plan_reshard(result: Sharding, target: Sharding, mesh: Mesh, sizes: Mapping[str, int],
                 dtype: str, chip: Chip | str,
                 wraparound: Union[bool, str, Mapping[str, bool]] = "auto"
                 ) -> tuple[tuple[PlannedCollective, ...], tuple[str, ...], str | None]:
    """The steps that turn the plan's ``result`` into ``target``: free local slices, AllToAlls
    (an axis moving between dims), AllGathers (an axis dropped). Returns ``(collectives,
    slices, why_not)``; ``why_not`` is a reason when no such steps reach ``target``."""
    if tuple(sorted(result.unreduced)) != tuple(sorted(target.unreduced)):
        if target.unreduced and result.unreduced:
            return (), (), (f"the partial sums are over {''.join(result.unreduced)}, not "
                            f"{''.join(target.unreduced)}")
        if target.unreduced:
            return (), (), "nothing here leaves partial sums over those axes"
        return (), (), "the result still holds partial sums"
    have, want = _axes_map(result), _axes_map(target)
    for dim in want:
        kept = [a for a in have[dim] if a in want[dim]]
        added = [a for a in want[dim] if a not in have[dim]]
        if tuple(kept + added) != want[dim]:
            return (), (), (f"{dim}_{''.join(want[dim])} puts the axes of {dim} in another "
                            "order, a permutation of devices not modelled here")
    in_result = {a for axes in have.values() for a in axes}
    moved = {a: (src, dst) for src in have for dst in want if dst != src
             for a in have[src] if a in want[dst]}
    current = {dim: list(axes) for dim, axes in have.items()}
    sharding = result
    steps: list[PlannedCollective] = []
    slices: list[str] = []

    def order(dim: str) -> list[str]:  # the target's order, for axes the dim holds now
        return [a for a in have[dim] if a in current[dim]] + [
            a for a in want[dim] if a in current[dim] and a not in have[dim]]

    def nbytes(s: Sharding) -> float:
        return bytes_per_device([sizes[n] for n in s.dim_names], dtype, s, mesh)

    def check(s: Sharding) -> Sharding:
        local_shape([sizes[n] for n in s.dim_names], s, mesh)  # divisibility
        return s

    for dim in want:  # 1. free: split a dim further over an axis the result is copied over
        for axis in want[dim]:
            if axis not in in_result:
                current[dim].append(axis)
                before, sharding = sharding, check(_with(sharding, {dim: order(dim)}))
                slices.append(f"slice {dim} locally over {axis} (free): {before} -> {sharding}")
    for axis, (src, dst) in moved.items():  # 2. an axis moves from one dim to the other
        current[src].remove(axis)
        current[dst].append(axis)
        before = sharding
        sharding = check(_with(sharding, {src: order(src), dst: order(dst)}))
        volume = nbytes(before) * mesh[axis]
        cost = axis_collective_cost("AllToAll", volume, (axis,), mesh, chip,
                                    wraparound=wraparound)
        steps.append(PlannedCollective("AllToAll", before.name, dst, (axis,), str(before),
                                       str(sharding), mesh[axis], volume, cost))
    for dim in want:  # 3. drop the axes the output does not split this dim over
        dropped = tuple(a for a in current[dim] if a not in want[dim])
        if not dropped:
            continue
        current[dim] = [a for a in current[dim] if a not in dropped]
        before, sharding = sharding, _with(sharding, {dim: order(dim)})
        volume = nbytes(sharding)
        cost = axis_collective_cost("AllGather", volume, dropped, mesh, chip,
                                    wraparound=wraparound)
        steps.append(PlannedCollective("AllGather", before.name, dim, dropped, str(before),
                                       str(sharding), mesh.size_of(dropped), volume, cost))
    return tuple(steps), tuple(slices), None


def reshard_candidates(partial: tuple[str, ...], target: Sharding
                       ) -> list[tuple[str | None, str, str | None]]:
    """``(gather, reduce, scatter_dim)`` choices to try: which operand to AllGather when
    one must be (the planner's pick first), and how to reduce partial sums."""
    reductions: list[tuple[str, str | None]] = [("all_reduce", None)]
    if partial:
        reductions += [("reduce_scatter", "B"), ("reduce_scatter", "F")]
        if target.unreduced:
            reductions.insert(0, ("none", None))
    return [(gather, *r) for gather in (None, "lhs", "rhs") for r in reductions]

"""A sharded-matmul explorer: ``A[B, D] ·_D W[D, F]`` on a mesh of up to three axes.

Pick a chip, a mesh ("X=2, Y=4"), the sizes B, D, F and the sharding of each operand and of
the output in the book's notation ("A[B_X, D_Y]"); the explorer shows the local shapes and
bytes per chip, which of the four cases applies, each collective with its time, the compute
time, and whether the step is compute- or communication-bound. Beside it, the time of the
collective against its message size on one mesh axis, with its latency floor and bandwidth
line: the latency- and bandwidth-bound regimes.

Every number comes from :func:`scalebook.sharding.plan_matmul` (the case and its collectives),
:mod:`scalebook.sharding` (local shapes, bytes) and :mod:`scalebook.collectives` (the curves and
the extra collectives that turn the plan's result into the requested output).

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`sharded_matmul_state` (pure) -> :class:`ShardedMatmulState`;
2. **drawing**: :func:`draw_sharded_matmul` draws a state on two axes and returns its artists
   by name; :func:`update_sharded_matmul` moves them to another state;
3. **widget**: :func:`sharded_matmul_explorer` -> :class:`ShardedMatmulExplorer` (an
   :class:`~scalebook.widgets.Explorer`).

The output. ``plan_matmul`` ends with the local result, reduced (AllReduce or ReduceScatter)
when it holds partial sums. The explorer picks the reduction that reaches the requested output
most cheaply (``Out[B_X, F_Y] {U_Y}`` keeps the partial sums), then adds what is still needed:
a free local slice for an axis the result is replicated over, an AllToAll for an axis that moves
from one dim to the other, an AllGather for an axis to drop. An output that no such step reaches
(partial sums over other axes, axes reordered within a dim) is reported as not reachable, and
the explorer prices the plan up to its own result.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

import ipywidgets as widgets
import numpy as np

from .. import collectives
from ..hardware import Chip, canonical_dtype, chip_names, get_chip
from ..sharding import (
    MatmulPlan,
    Mesh,
    PlannedCollective,
    Sharding,
    bytes_per_device,
    local_shape,
    parse_sharding,
    plan_matmul,
)
from ..units import format_bytes, format_seconds
from . import Explorer, _figure, _log2_slider, _log_ticks

__all__ = [
    "ShardedMatmulState", "OperandInfo", "sharded_matmul_state", "parse_mesh",
    "collective_cost", "collective_curve", "draw_sharded_matmul", "update_sharded_matmul",
    "sharded_matmul_summary", "sharded_matmul_explorer", "ShardedMatmulExplorer",
    "LAYOUTS", "CUSTOM", "MESSAGE_RANGE", "TIME_RANGE", "KINDS",
]

#: Mesh axis names the explorer offers (at most three axes).
MESH_AXES = ("X", "Y", "Z")
#: Dtypes offered.
DTYPES = ("bf16", "fp16", "fp8", "int8")
#: Collective kinds, in legend order, and their colours.
KINDS = ("AllGather", "ReduceScatter", "AllReduce", "AllToAll")
_KIND_COLOURS = {"AllGather": "#1f5fa8", "ReduceScatter": "#5a9e2f", "AllReduce": "#d9731a",
                 "AllToAll": "#8e44ad"}
_COMPUTE_COLOUR = "0.35"

#: Fixed ranges of the message-size plot (bytes, seconds), so the axes never jump.
MESSAGE_RANGE = (1.0e2, 1.0e11)
TIME_RANGE = (1.0e-7, 1.0e1)
_MESSAGES = np.geomspace(*MESSAGE_RANGE, 91)
#: Rows the bar chart has room for before it needs a full redraw.
_BAR_ROWS = 5

#: The layout dropdown's entry for hand-edited shardings.
CUSTOM = "custom"

#: Named layouts: mesh, lhs, rhs, out. Choosing one fills those four fields.
LAYOUTS: dict[str, tuple[str, str, str, str]] = {
    "data parallel (case 1)": ("X=4", "A[B_X, D]", "W[D, F]", "Out[B_X, F]"),
    "FSDP: gather the weights (case 2)": ("X=4", "A[B_X, D]", "W[D_X, F]", "Out[B_X, F]"),
    "tensor parallel, AllReduce (case 3)": ("X=4", "A[B, D_X]", "W[D_X, F]", "Out[B, F]"),
    "tensor parallel, ReduceScatter (case 3)": ("X=4", "A[B, D_X]", "W[D_X, F]", "Out[B, F_X]"),
    "data × tensor parallel (case 3)": ("X=2, Y=4", "A[B_X, D_Y]", "W[D_Y, F]", "Out[B_X, F]"),
    "B and F on one axis (case 4)": ("X=4", "A[B_X, D]", "W[D, F_X]", "Out[B_X, F]"),
}
_DEFAULT_LAYOUT = "data × tensor parallel (case 3)"

Wraparound = Union[bool, str]


# --------------------------------------------------------------------------- parsing

_MESH_ITEM = re.compile(r"\s*(?P<axis>[^\s=:]+)\s*[=:]\s*(?P<size>[^\s,]+)\s*")


def parse_mesh(mesh: str | Mapping[str, int] | Mesh) -> Mesh:
    """A :class:`~scalebook.sharding.Mesh` from ``"X=2, Y=4"`` (``X:2`` also reads), a mapping
    ``{'X': 2, 'Y': 4}`` or a Mesh: one to three axes named X, Y, Z, sizes positive integers.
    Raises ``ValueError`` with a one-line message otherwise."""
    if isinstance(mesh, Mesh):
        sizes = mesh.sizes
    elif isinstance(mesh, Mapping):
        sizes = dict(mesh)
    elif isinstance(mesh, str):
        if not mesh.strip():
            raise ValueError("mesh: empty; write its axes as X=2, Y=4")
        sizes = {}
        for part in mesh.strip().strip("{}()").split(","):
            match = _MESH_ITEM.fullmatch(part)
            if match is None:
                raise ValueError(f"mesh: cannot read {part.strip()!r}; write its axes as "
                                 "X=2, Y=4 (up to three axes named X, Y, Z)")
            axis = match["axis"].strip("'\"")
            if axis in sizes:
                raise ValueError(f"mesh: axis {axis} appears twice")
            if not match["size"].isdigit():
                raise ValueError(f"mesh: axis {axis} needs a positive whole number of "
                                 f"devices, got {match['size']!r}")
            sizes[axis] = int(match["size"])
    else:
        raise ValueError(f"mesh must be text such as 'X=2, Y=4' or a mapping, got {mesh!r}")
    if not 1 <= len(sizes) <= len(MESH_AXES):
        raise ValueError(f"mesh: give one to three axes (X, Y, Z), got {len(sizes)}")
    for axis, size in sizes.items():
        if axis not in MESH_AXES:
            raise ValueError(f"mesh: axis {axis!r} is not offered; name the axes X, Y, Z")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"mesh: axis {axis} needs a positive whole number of devices, "
                             f"got {size!r}")
    return Mesh({axis: int(size) for axis, size in sizes.items()})


def _operand(field: str, text: str | Sharding, dims: tuple[str, str], default_name: str
             ) -> Sharding:
    """Parse one sharding field and check it names exactly ``dims`` (in either order)."""
    try:
        sharding = parse_sharding(text)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None
    if sorted(sharding.dim_names) != sorted(dims):
        example = f"{default_name}[{dims[0]}, {dims[1]}]"
        raise ValueError(f"{field}: {sharding} must have the dims {dims[0]} and {dims[1]}, "
                         f"e.g. {example}")
    if not sharding.name:
        sharding = Sharding(default_name, sharding.dims, sharding.unreduced)
    return sharding


def _axes_in_mesh(field: str, sharding: Sharding, mesh: Mesh) -> None:
    for axis in (*sharding.sharded_axes, *sharding.unreduced):
        if axis not in mesh.axis_names:
            raise ValueError(f"{field}: {sharding} uses mesh axis {axis}, which the mesh "
                             f"({_mesh_text(mesh)}) does not have")


def _mesh_text(mesh: Mesh) -> str:
    return ", ".join(f"{axis}={size}" for axis, size in mesh.axes)


def _size(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a whole number of elements, got {value!r}")
    if not math.isfinite(value) or value < 1 or abs(value - round(value)) > 1e-6 * value:
        raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
    return int(round(value))


# --------------------------------------------------------------------------- costs

def _flags(chip: Chip, mesh: Mesh, axes: Sequence[str], wraparound: Wraparound) -> list[bool]:
    if wraparound == "auto":
        return [collectives.has_wraparound(chip, mesh[axis]) for axis in axes]
    return [bool(wraparound)] * len(axes)


def collective_cost(kind: str, nbytes: float | np.ndarray, axes: Sequence[str], mesh: Mesh,
                    chip: str | Chip, *, wraparound: Wraparound = True
                    ) -> collectives.CollectiveCost:
    """The cost of one collective of ``nbytes`` (collectives convention: the array the group
    holds together) over mesh ``axes``, priced as :func:`~scalebook.sharding.plan_matmul`
    prices it: TPU ICI rings (``all_gather_multi_axis``, ..., ``all_to_all`` on one axis),
    GPU NVLink/NICs (``gpu_all_gather``, ...) over ``mesh.size_of(axes)`` GPUs.

    ``kind`` is one of :data:`KINDS`; ``wraparound`` True, False or "auto"
    (:func:`scalebook.collectives.has_wraparound`). ``nbytes`` may be an array (a curve).
    """
    chip = get_chip(chip)
    axes = tuple(axes)
    if kind not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    if chip.is_gpu:
        function = {"AllGather": collectives.gpu_all_gather,
                    "ReduceScatter": collectives.gpu_reduce_scatter,
                    "AllReduce": collectives.gpu_all_reduce,
                    "AllToAll": collectives.gpu_all_to_all}[kind]
        return function(nbytes, mesh.size_of(axes), chip)
    flags = _flags(chip, mesh, axes, wraparound)
    if kind == "AllToAll":
        if len(axes) != 1:
            raise ValueError("an AllToAll is priced over one mesh axis at a time")
        return collectives.all_to_all(nbytes, mesh[axes[0]], chip, wraparound=flags[0])
    function = {"AllGather": collectives.all_gather_multi_axis,
                "ReduceScatter": collectives.reduce_scatter_multi_axis,
                "AllReduce": collectives.all_reduce_multi_axis}[kind]
    return function(nbytes, [mesh[axis] for axis in axes], chip, wraparound=flags)


# --------------------------------------------------------------------------- state

@dataclass(frozen=True)
class OperandInfo:
    """One array of the step: its ``role`` ("lhs", "rhs", "lhs as multiplied", ...), its
    ``sharding`` in the notation, global ``shape``, the ``local`` shape one chip holds and
    ``nbytes`` per chip (bytes)."""

    role: str
    sharding: str
    shape: tuple[int, ...]
    local: tuple[int, ...]
    nbytes: float


@dataclass(frozen=True)
class ShardedMatmulState:
    """One sharded matmul ``lhs ·_D rhs`` on ``mesh`` and what it costs on ``chip``.

    Attributes (SI units):
        chip, mesh, B, D, F, dtype, wraparound: the inputs.
        lhs, rhs, out: the shardings as given (normalised notation).
        plan: :func:`~scalebook.sharding.plan_matmul`'s plan (case, description, collectives).
        reduce: the reduction used for partial sums ("all_reduce", "reduce_scatter", "none"),
            ``scatter_dim`` the dim a ReduceScatter scatters onto.
        reshard: collectives after the plan that reach the requested output (AllToAll,
            AllGather); ``slices``: free local slices, as text.
        reachable: whether the requested output is reached; ``output`` what the step ends with;
            ``output_note`` one line on how (or why not).
        steps: every collective in order (``plan.collectives + reshard``).
        operands: local shapes and bytes per chip (:class:`OperandInfo`).
        flops_per_device, compute_time: the local matmul (FLOPs, s).
        comms_time: the sum of every step's time (s), not overlapped.
        bound: "compute" or "communication" (the larger time); ``ratio``: compute / comms.
        plot_axes: the mesh axes of the message-size plot; ``plot_kinds`` the collectives drawn.
    """

    chip: str
    is_gpu: bool
    mesh: Mesh
    B: int
    D: int
    F: int
    dtype: str
    wraparound: Wraparound
    lhs: str
    rhs: str
    out: str
    plan: MatmulPlan
    reduce: str
    scatter_dim: str | None
    reshard: tuple[PlannedCollective, ...]
    slices: tuple[str, ...]
    reachable: bool
    output: str
    output_note: str
    operands: tuple[OperandInfo, ...]
    flops_per_device: float
    compute_time: float
    comms_time: float
    bound: str
    ratio: float
    plot_axes: tuple[str, ...]
    plot_kinds: tuple[str, ...]

    @property
    def case(self) -> int:
        return self.plan.case

    @property
    def steps(self) -> tuple[PlannedCollective, ...]:
        return (*self.plan.collectives, *self.reshard)

    @property
    def plot_group(self) -> int:
        """Devices in a collective group over :attr:`plot_axes`."""
        return self.mesh.size_of(self.plot_axes)

    def curve(self, kind: str, nbytes: np.ndarray | float = _MESSAGES
              ) -> collectives.CollectiveCost:
        """``kind``'s cost against message size over :attr:`plot_axes` (what the plot draws)."""
        return collective_curve(self, kind, nbytes)


def collective_curve(state: ShardedMatmulState, kind: str,
                     nbytes: np.ndarray | float = _MESSAGES) -> collectives.CollectiveCost:
    """``kind``'s cost at message sizes ``nbytes`` over the state's plot axes, chip and
    wraparound: the curve the message-size plot draws."""
    return collective_cost(kind, nbytes, state.plot_axes, state.mesh, state.chip,
                           wraparound=state.wraparound)


def _axes_map(sharding: Sharding) -> dict[str, tuple[str, ...]]:
    return {dim.name: dim.axes for dim in sharding.dims}


def _with(sharding: Sharding, axes: Mapping[str, Sequence[str]]) -> Sharding:
    """``sharding`` with each dim's axes replaced by ``axes[dim]`` (same dim order)."""
    for name, value in axes.items():
        sharding = sharding.with_axes(name, value)
    return sharding


def _reshard(result: Sharding, target: Sharding, mesh: Mesh, sizes: Mapping[str, int],
             dtype: str, chip: Chip, wraparound: Wraparound
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
        cost = collective_cost("AllToAll", volume, (axis,), mesh, chip, wraparound=wraparound)
        steps.append(PlannedCollective("AllToAll", before.name, dst, (axis,), str(before),
                                       str(sharding), mesh[axis], volume, cost))
    for dim in want:  # 3. drop the axes the output does not split this dim over
        dropped = tuple(a for a in current[dim] if a not in want[dim])
        if not dropped:
            continue
        current[dim] = [a for a in current[dim] if a not in dropped]
        before, sharding = sharding, _with(sharding, {dim: order(dim)})
        volume = nbytes(sharding)
        cost = collective_cost("AllGather", volume, dropped, mesh, chip, wraparound=wraparound)
        steps.append(PlannedCollective("AllGather", before.name, dim, dropped, str(before),
                                       str(sharding), mesh.size_of(dropped), volume, cost))
    return tuple(steps), tuple(slices), None


def _candidates(partial: tuple[str, ...], target: Sharding
                ) -> list[tuple[str | None, str, str | None]]:
    """``(gather, reduce, scatter_dim)`` choices to try: which operand to AllGather when
    one must be (the planner's pick first), and how to reduce partial sums."""
    reductions = [("all_reduce", None)]
    if partial:
        reductions += [("reduce_scatter", "B"), ("reduce_scatter", "F")]
        if target.unreduced:
            reductions.insert(0, ("none", None))
    return [(gather, *r) for gather in (None, "lhs", "rhs") for r in reductions]


def sharded_matmul_state(chip: str | Chip = "TPU v5e", *,
                         mesh: str | Mapping[str, int] | Mesh = "X=2, Y=4",
                         B: float = 4096, D: float = 8192, F: float = 16384,
                         lhs: str = "A[B_X, D_Y]", rhs: str = "W[D_Y, F]",
                         out: str = "Out[B_X, F]", dtype: str = "bf16",
                         wraparound: Wraparound = True, axis: str = "auto",
                         layout: str | None = None) -> ShardedMatmulState:
    """Plan and price ``lhs ·_D rhs -> out`` with ``lhs`` over dims B, D, ``rhs`` over D, F and
    ``out`` over B, F (each in either order), sizes ``B``, ``D``, ``F`` in ``dtype``, on a
    ``mesh`` of ``chip`` chips.

    ``wraparound`` (TPUs): True (rings), False (lines) or "auto" (as a slice of that size is
    built). ``axis`` is the mesh axis of the message-size plot, or "auto" for the axes of the
    longest collective. ``layout`` is the name of a :data:`LAYOUTS` entry the widget carries
    along; it does not change the result.

    Raises ``ValueError`` (one line) for a malformed sharding or mesh, a dim the sizes do not
    split evenly, an axis not in the mesh, an unknown chip or dtype, or a chip without that
    dtype.
    """
    chip = get_chip(chip)
    dtype = canonical_dtype(dtype)
    peak = chip.flops(dtype)  # a clear error for a dtype the chip lacks
    mesh = parse_mesh(mesh)
    if wraparound not in (True, False, "auto"):
        raise ValueError(f"wraparound must be True, False or 'auto', got {wraparound!r}")
    sizes = {"B": _size("B", B), "D": _size("D", D), "F": _size("F", F)}
    a = _operand("lhs", lhs, ("B", "D"), "A")
    b = _operand("rhs", rhs, ("D", "F"), "W")
    target = _operand("out", out, ("B", "F"), "Out")
    for field, sharding in (("lhs", a), ("rhs", b), ("out", target)):
        _axes_in_mesh(field, sharding, mesh)
        try:
            local_shape([sizes[n] for n in sharding.dim_names], sharding, mesh)
        except ValueError as exc:
            raise ValueError(f"{field}: {exc}") from None
    if a.unreduced or b.unreduced:
        raise ValueError("lhs/rhs: an operand with partial sums {U_...} must be reduced "
                         "before it is multiplied")
    if axis != "auto" and axis not in mesh.axis_names:
        raise ValueError(f"plot axis {axis} is not in the mesh ({_mesh_text(mesh)})")

    def plan(gather: str | None, reduce: str, scatter_dim: str | None) -> MatmulPlan:
        return plan_matmul(a, b, mesh, contracting="D", shapes=sizes, dtype=dtype, chip=chip,
                           output_name=target.name, reduce=reduce, scatter_dim=scatter_dim,
                           gather=gather, wraparound=wraparound)

    first = plan(None, "all_reduce", None)
    partial = parse_sharding(first.local_result).unreduced
    best = None
    why_not = failed = ""  # the first reason no route reaches the output; the first error
    for gather, reduce, scatter_dim in _candidates(partial, target):
        try:
            candidate = (first if (gather, reduce) == (None, "all_reduce")
                         else plan(gather, reduce, scatter_dim))
            steps, slices, reason = _reshard(parse_sharding(candidate.output), target, mesh,
                                             sizes, dtype, chip, wraparound)
        except ValueError as exc:  # a dim too small to split on the way: try another route
            failed = failed or str(exc)
            continue
        if reason is not None:
            why_not = why_not or reason
            continue
        total = candidate.comms_time + sum(s.time for s in steps)
        key = (total, len(steps) + len(slices))
        if best is None or key < best[0]:
            best = (key, candidate, reduce, scatter_dim, steps, slices)
    if best is not None:
        _, chosen, reduce, scatter_dim, reshard, slices = best
        output, reachable = str(target), True
        extra = list(slices) + [str(s) for s in reshard]  # the slices come first
        if extra:
            output_note = (f"{target} needs more after the plan's result {chosen.output}: "
                           + "; then ".join(extra) + ".")
        else:
            output_note = f"The plan ends with {target}, as asked."
    else:
        chosen, reduce, scatter_dim, reshard, slices = first, "all_reduce", None, (), ()
        output, reachable = chosen.output, False
        output_note = (f"{target} is not reachable here ({why_not or failed}); shown: the plan up to "
                       f"{chosen.output}.")

    operands = [_info("lhs", a, sizes, dtype, mesh), _info("rhs", b, sizes, dtype, mesh)]
    if chosen.lhs_used != chosen.lhs:
        operands.append(_info("lhs as multiplied", chosen.lhs_used, sizes, dtype, mesh))
    if chosen.rhs_used != chosen.rhs:
        operands.append(_info("rhs as multiplied", chosen.rhs_used, sizes, dtype, mesh))
    operands.append(_info("local result", chosen.local_result, sizes, dtype, mesh))
    operands.append(_info("output", output, sizes, dtype, mesh))

    compute = float(chosen.flops_per_device) / peak
    comms = float(chosen.comms_time) + float(sum(s.time for s in reshard))
    steps = (*chosen.collectives, *reshard)
    plot_axes = _plot_axes(axis, steps, mesh)
    kinds = tuple(k for k in KINDS if any(s.kind == k and s.axes == plot_axes for s in steps))
    return ShardedMatmulState(
        chip=chip.name, is_gpu=chip.is_gpu, mesh=mesh, B=sizes["B"], D=sizes["D"],
        F=sizes["F"], dtype=dtype, wraparound=wraparound, lhs=str(a), rhs=str(b),
        out=str(target), plan=chosen, reduce=reduce, scatter_dim=scatter_dim, reshard=reshard,
        slices=slices, reachable=reachable, output=output, output_note=output_note,
        operands=tuple(operands), flops_per_device=float(chosen.flops_per_device),
        compute_time=compute, comms_time=comms,
        bound="compute" if compute >= comms else "communication",
        ratio=math.inf if comms == 0 else compute / comms,
        plot_axes=plot_axes, plot_kinds=kinds or ("AllGather",))


def _info(role: str, sharding: str | Sharding, sizes: Mapping[str, int], dtype: str,
          mesh: Mesh) -> OperandInfo:
    sharding = parse_sharding(sharding)
    shape = tuple(sizes[n] for n in sharding.dim_names)
    return OperandInfo(role, str(sharding), shape, local_shape(shape, sharding, mesh),
                       float(bytes_per_device(shape, dtype, sharding, mesh)))


def _plot_axes(axis: str, steps: Sequence[PlannedCollective], mesh: Mesh) -> tuple[str, ...]:
    """The chosen axis; for "auto", the axes of the longest collective, else the first mesh
    axis with more than one device."""
    if axis != "auto":
        return (axis,)
    if steps:
        return max(steps, key=lambda s: s.time).axes
    return next(((name,) for name, size in mesh.axes if size > 1), (mesh.axis_names[0],))


# --------------------------------------------------------------------------- drawing

def draw_sharded_matmul(axes: Sequence, state: ShardedMatmulState) -> dict[str, object]:
    """Draw ``state`` on two axes.

    Left, log-log: the time of each collective kind of the plan on the plot axes (or an
    AllGather) against message size V (bytes, the array the group holds together), from
    :func:`collective_curve`; for the first kind its latency floor (dashed), its bandwidth
    term (dotted) and the crossover V* where the two are equal (a vertical); the plan's
    collectives on those axes as markers at their own V; and the compute time as a horizontal
    line. Right: a bar per step on a log time axis: the compute, then each collective.

    Clears the axes first; both have fixed ranges (:data:`MESSAGE_RANGE`,
    :data:`TIME_RANGE`). Returns the artists by name: ``curve/<kind>``, ``marker/<kind>``,
    ``latency``, ``bandwidth``, ``crossover``, ``compute`` (``Line2D``), ``latency_label``,
    ``bandwidth_label``, ``title``, ``bars_title`` (``Text``), ``legend``, ``bars``
    (``BarContainer``) and ``bar_labels`` (list of ``Text``).
    """
    ax_curve, ax_bars = axes
    for ax in axes:
        ax.clear()
    ax_curve.set(xscale="log", yscale="log", xlim=MESSAGE_RANGE, ylim=TIME_RANGE,
                 xlabel="message size V (bytes the group holds together)",
                 ylabel="time (s)")
    _log_ticks(ax_curve.xaxis, lambda v: format_bytes(v, 2, binary=False))
    _log_ticks(ax_curve.yaxis, lambda v: format_seconds(v, 2))
    ax_curve.grid(True, which="major", alpha=0.3)
    rows = max(_BAR_ROWS, 1 + len(state.steps))
    ax_bars.set(xscale="log", xlim=TIME_RANGE, ylim=(rows - 0.4, -0.6), xlabel="time (s)")
    _log_ticks(ax_bars.xaxis, lambda v: format_seconds(v, 2))
    ax_bars.set_yticks([])
    ax_bars.grid(True, axis="x", which="major", alpha=0.3)
    artists: dict[str, object] = {"_rows": rows}
    for kind in KINDS:
        colour = _KIND_COLOURS[kind]
        (artists[f"curve/{kind}"],) = ax_curve.plot([], [], color=colour, lw=2)
        (artists[f"marker/{kind}"],) = ax_curve.plot([], [], color=colour, marker="o", ls="",
                                                     ms=9, mec="black", zorder=5)
    grey = dict(color="0.45", lw=1)
    (artists["latency"],) = ax_curve.plot([], [], ls="--", **grey)
    (artists["bandwidth"],) = ax_curve.plot([], [], ls=":", **grey)
    (artists["crossover"],) = ax_curve.plot([], [], ls=":", color="0.3", lw=1)
    (artists["compute"],) = ax_curve.plot([], [], color=_COMPUTE_COLOUR, lw=1.5, ls="-.")
    small = dict(fontsize=8, color="0.3")
    artists["latency_label"] = ax_curve.text(1, 1, "", ha="right", va="bottom", **small)
    artists["bandwidth_label"] = ax_curve.text(1, 1, "", ha="left", va="bottom", **small)
    artists["title"] = ax_curve.text(0.0, 1.02, "", transform=ax_curve.transAxes, fontsize=9.5)
    artists["bars_title"] = ax_bars.text(0.0, 1.02, "", transform=ax_bars.transAxes,
                                         fontsize=9.5)
    artists["bars"], artists["bar_labels"], artists["legend"] = None, [], None
    update_sharded_matmul(axes, artists, state)
    return artists


def _bar_rows(state: ShardedMatmulState) -> list[tuple[str, float, str]]:
    rows = [("local matmul", state.compute_time, _COMPUTE_COLOUR)]
    for step in state.steps:
        rows.append((f"{step.kind}_{''.join(step.axes)} {step.operand}", float(step.time),
                     _KIND_COLOURS.get(step.kind, "0.5")))
    return rows


def update_sharded_matmul(axes: Sequence, artists: dict, state: ShardedMatmulState
                          ) -> list | None:
    """Move :func:`draw_sharded_matmul`'s artists to ``state``; return every artist that
    depends on the state (what a blitting redraw paints), or None when the bar chart needs more
    rows than it has (a full redraw)."""
    ax_curve, ax_bars = axes
    if 1 + len(state.steps) > artists["_rows"]:
        return None
    shown = state.plot_kinds if state.plot_group > 1 else ()
    curves = {kind: state.curve(kind) for kind in shown}
    for kind in KINDS:
        if kind in curves:
            artists[f"curve/{kind}"].set_data(_MESSAGES, curves[kind].time)
        else:
            artists[f"curve/{kind}"].set_data([], [])
        marks = [s for s in state.steps if s.kind == kind and s.axes == state.plot_axes]
        artists[f"marker/{kind}"].set_data([s.nbytes for s in marks], [s.time for s in marks])
    lo, hi = MESSAGE_RANGE
    axes_text = "".join(state.plot_axes)
    if shown:
        first = curves[shown[0]]
        per_byte = float(state.curve(shown[0], 1.0).bandwidth_time)
        crossover = first.latency_time / per_byte
        artists["latency"].set_data([lo, hi], [first.latency_time] * 2)
        artists["bandwidth"].set_data(_MESSAGES, first.bandwidth_time)
        artists["crossover"].set_data([crossover] * 2, TIME_RANGE)
        y = first.latency_time * 1.15
        artists["latency_label"].set_position((crossover / 2, y))
        artists["latency_label"].set_text("← latency-bound")
        artists["bandwidth_label"].set_position((crossover * 2, y))
        artists["bandwidth_label"].set_text("bandwidth-bound →")
        wrap = ("NVLink/NIC" if state.is_gpu else
                {True: "ring", False: "line", "auto": "as built"}[state.wraparound])
        artists["title"].set_text(
            f"{' / '.join(shown)} over {axes_text} ({state.plot_group} chips, {wrap}): "
            f"latency {format_seconds(first.latency_time)}, crossover "
            f"{format_bytes(crossover, binary=False)}")
    else:
        for name in ("latency", "bandwidth", "crossover"):
            artists[name].set_data([], [])
        for name in ("latency_label", "bandwidth_label"):
            artists[name].set_text("")
        artists["title"].set_text(f"axis {axes_text} has {state.plot_group} device: "
                                  "no communication over it")
    artists["compute"].set_data([lo, hi], [state.compute_time] * 2)

    labels = [f"{kind} over {axes_text}" for kind in shown] + ["compute time"]
    legend = artists.get("legend")
    if legend is None or [t.get_text() for t in legend.get_texts()] != labels:
        if legend is not None:
            legend.remove()
        handles = [artists[f"curve/{kind}"] for kind in shown] + [artists["compute"]]
        artists["legend"] = ax_curve.legend(handles, labels, loc="upper left", fontsize=8)

    for artist in [*(artists["bars"] or []), *artists["bar_labels"]]:
        artist.remove()
    rows = _bar_rows(state)
    floor = TIME_RANGE[0]
    widths = [max(t, floor * 1.01) - floor for _, t, _ in rows]
    bars = ax_bars.barh(range(len(rows)), widths, left=floor, height=0.7,
                        color=[c for _, _, c in rows], edgecolor="black", linewidth=0.5)
    artists["bars"] = bars
    artists["bar_labels"] = [
        ax_bars.annotate(f"{name}: {format_seconds(t)}", (max(t, floor), i), xytext=(3, 0),
                         textcoords="offset points", va="center", fontsize=8)
        for i, (name, t, _) in enumerate(rows)]
    ratio = "∞" if math.isinf(state.ratio) else f"{state.ratio:.2f}"
    artists["bars_title"].set_text(f"{state.bound}-bound: compute / comms = {ratio}")
    return [*(artists[f"curve/{k}"] for k in KINDS), artists["latency"], artists["bandwidth"],
            artists["crossover"], artists["compute"], *(artists[f"marker/{k}"] for k in KINDS),
            artists["latency_label"], artists["bandwidth_label"], artists["legend"],
            artists["title"], *bars, *artists["bar_labels"], artists["bars_title"]]


# --------------------------------------------------------------------------- summary

def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(f"{n:,}" for n in shape) + "]"


def sharded_matmul_summary(state: ShardedMatmulState) -> str:
    """An HTML summary: the case, arrays with local shapes and bytes per chip, each collective
    with bytes, time and regime, the compute time and the verdict."""
    esc = html.escape
    plan = state.plan
    cell = "<td style='padding:0 8px'>{}</td>"
    arrays = "".join(
        "<tr>" + "".join(cell.format(c) for c in (
            esc(o.role), f"<code>{esc(o.sharding)}</code>", _shape_text(o.shape),
            _shape_text(o.local), format_bytes(o.nbytes))) + "</tr>"
        for o in state.operands)
    steps = "".join(
        "<tr>" + "".join(cell.format(c) for c in (
            esc(s.kind), "".join(s.axes) + f" ({s.group_size})",
            f"<code>{esc(s.before)}</code> → <code>{esc(s.after)}</code>",
            format_bytes(s.nbytes), format_seconds(s.time), esc(s.cost.regime))) + "</tr>"
        for s in state.steps) or f"<tr>{cell.format('none')}</tr>"
    ratio = "∞" if math.isinf(state.ratio) else f"{state.ratio:.2f}"
    colour = "#1f5fa8" if state.bound == "compute" else "#b00020"
    note_colour = "inherit" if state.reachable else "#b00020"
    mesh = _mesh_text(state.mesh)
    return (
        "<div style='font-size:90%'>"
        f"<b>Case {state.case}</b>: {esc(plan.description)}<br>"
        f"<code>{esc(state.lhs)} ·_D {esc(state.rhs)} → {esc(state.output)}</code> on "
        f"{state.mesh.n_devices} × {esc(state.chip)} (mesh {esc(mesh)}), {esc(state.dtype)}<br>"
        f"<span style='color:{note_colour}'>{esc(state.output_note)}</span>"
        "<table style='border-collapse:collapse'><tr><th>array</th><th>sharding</th>"
        "<th>global shape</th><th>per chip</th><th>bytes per chip</th></tr>"
        f"{arrays}</table>"
        "<table style='border-collapse:collapse'><tr><th>collective</th><th>axes (chips)</th>"
        "<th>sharding</th><th>V (bytes)</th><th>time</th><th>regime</th></tr>"
        f"{steps}</table>"
        f"local matmul: {state.flops_per_device:.3g} FLOPs per chip, compute "
        f"<b>{format_seconds(state.compute_time)}</b>; communication "
        f"<b>{format_seconds(state.comms_time)}</b> (not overlapped) → "
        f"<b style='color:{colour}'>{state.bound}-bound</b> (compute / comms = {ratio})"
        "</div>")


# --------------------------------------------------------------------------- widget

class ShardedMatmulExplorer(Explorer):
    """The explorer's :class:`~scalebook.widgets.Explorer`: choosing a ``layout`` fills the
    mesh and sharding fields at once; editing one of them switches ``layout`` to "custom"."""

    _FIELDS = ("mesh", "lhs", "rhs", "out")

    def link_controls(self, changed) -> None:
        """A layout fills the mesh and sharding fields; editing one picks the matching layout,
        or "custom"."""
        if changed is self.controls["layout"]:
            chosen = LAYOUTS.get(self.controls["layout"].value)
            if chosen is not None:
                self.set_quietly(dict(zip(self._FIELDS, chosen)))
        elif any(changed is self.controls[name] for name in self._FIELDS):
            current = tuple(self.controls[name].value for name in self._FIELDS)
            match = next((name for name, v in LAYOUTS.items() if v == current), CUSTOM)
            self.set_quietly({"layout": match})


def _text(description: str, value: str, width: str) -> widgets.Text:
    return widgets.Text(value=value, description=description, continuous_update=False,
                        style={"description_width": "initial"},
                        layout=widgets.Layout(width=width))


def sharded_matmul_explorer(chip: str = "TPU v5e", *, layout: str = _DEFAULT_LAYOUT,
                            mesh: str | None = None, lhs: str | None = None,
                            rhs: str | None = None, out: str | None = None,
                            B: float = 4096, D: float = 8192, F: float = 16384,
                            dtype: str = "bf16", wraparound: Wraparound = True,
                            axis: str = "auto", dpi: float = 100) -> ShardedMatmulExplorer:
    """An explorer of ``A[B, D] ·_D W[D, F]`` on a mesh.

    ``layout`` picks one of :data:`LAYOUTS` (mesh and shardings); ``mesh``, ``lhs``, ``rhs``,
    ``out`` override its fields. The default, data × tensor parallel on a 2 × 4 mesh of v5e,
    is communication-bound at D = 8,192 and compute-bound at D = 16,384.

    Controls (``w.controls``): ``layout`` (a :data:`LAYOUTS` name or "custom"), ``chip``,
    ``dtype``, ``wraparound`` (True, "auto", False), ``mesh``, ``lhs``, ``rhs``, ``out``
    (text fields, applied on Enter), ``B``, ``D``, ``F`` (log2 sliders: 8–1,048,576,
    128–65,536, 128–131,072) and ``axis`` ("auto", X, Y, Z: the plot's mesh axis).
    ``w.state`` is a :class:`ShardedMatmulState`; ``w.artists`` are
    :func:`draw_sharded_matmul`'s. A rejected input leaves ``w.error`` (one line, shown under
    the fields) and keeps the last good state and picture. Raises ``ValueError`` when the
    initial inputs are rejected.
    """
    if layout not in LAYOUTS and layout != CUSTOM:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}, {CUSTOM}")
    fields = dict(zip(ShardedMatmulExplorer._FIELDS, LAYOUTS.get(layout, LAYOUTS[_DEFAULT_LAYOUT])))
    given = {"mesh": mesh, "lhs": lhs, "rhs": rhs, "out": out}
    fields.update({k: v for k, v in given.items() if v is not None})
    if layout != CUSTOM and tuple(fields.values()) != LAYOUTS[layout]:
        layout = next((n for n, v in LAYOUTS.items() if v == tuple(fields.values())), CUSTOM)
    dtype = canonical_dtype(dtype)
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not offered; choose one of {', '.join(DTYPES)}")
    if wraparound not in (True, False, "auto"):
        raise ValueError(f"wraparound must be True, False or 'auto', got {wraparound!r}")
    if axis not in ("auto", *MESH_AXES):
        raise ValueError(f"axis must be 'auto' or one of {', '.join(MESH_AXES)}, got {axis!r}")
    controls = {
        "layout": widgets.Dropdown(options=[*LAYOUTS, CUSTOM], value=layout,
                                   description="layout", layout=widgets.Layout(width="40%")),
        "chip": widgets.Dropdown(options=chip_names(), value=get_chip(chip).name,
                                 description="chip", layout=widgets.Layout(width="22%")),
        "dtype": widgets.Dropdown(options=DTYPES, value=dtype, description="dtype",
                                  layout=widgets.Layout(width="17%")),
        "wraparound": widgets.Dropdown(
            options=[("rings (wraparound)", True), ("as built", "auto"),
                     ("lines (no wraparound)", False)],
            value=wraparound, description="ICI axes", layout=widgets.Layout(width="21%")),
        "mesh": _text("mesh", fields["mesh"], "22%"),
        "lhs": _text("lhs", fields["lhs"], "26%"),
        "rhs": _text("rhs", fields["rhs"], "26%"),
        "out": _text("out", fields["out"], "26%"),
        "B": _log2_slider("B", B, 3, 20, 1),
        "D": _log2_slider("D", D, 7, 16, 1),
        "F": _log2_slider("F", F, 7, 17, 1),
        "axis": widgets.Dropdown(options=[("plot axis: auto", "auto"),
                                          *[(f"plot axis: {a}", a) for a in MESH_AXES]],
                                 value=axis, layout=widgets.Layout(width="18%")),
    }
    for name in ("B", "D", "F"):
        controls[name].layout.width = "27%"
    figure = _figure((10, 3.9), dpi, ncols=2)
    figure.axes[0].set_position([0.085, 0.13, 0.5, 0.78])  # the curve gets most of the width
    figure.axes[1].set_position([0.615, 0.13, 0.36, 0.78])
    return ShardedMatmulExplorer(
        controls, figure, sharded_matmul_state,
        lambda fig, state: draw_sharded_matmul(fig.axes, state), sharded_matmul_summary,
        layout_rows=[("layout", "chip", "dtype", "wraparound"), ("mesh", "lhs", "rhs", "out"),
                     ("B", "D", "F", "axis")],
        refresh=lambda fig, artists, state: update_sharded_matmul(fig.axes, artists, state))

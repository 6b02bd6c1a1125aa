"""The sharded-matmul explorer's numbers: parsing, plan, state, plot series, summary, live view.

``A[B, D] ·_D W[D, F]`` on a mesh of up to three axes: pick a chip, a mesh ("X=2, Y=4"), the
sizes B, D, F and the sharding of each operand and of the output in the book's notation
("A[B_X, D_Y]"). The state holds the local shapes and bytes per chip, which of the four cases
applies, each collective with its time, the compute time, and whether the step is compute- or
communication-bound; the series are the time of the collective against its message size on
one mesh axis, with its latency floor and bandwidth line, and a bar per step.

Every number comes from :func:`scalebook.sharding.plan_matmul` (the case and its collectives),
:mod:`scalebook.sharding` (local shapes, bytes) and :mod:`scalebook.collectives` (the curves and
the extra collectives that turn the plan's result into the requested output). Everything here
is plain Python (no ipywidgets, no matplotlib, no NumPy arrays: a curve is a loop over
:data:`MESSAGES`), so the same functions feed the Jupyter widget
(:func:`scalebook.widgets.sharded_matmul.sharded_matmul_explorer`, drawn with matplotlib) and
the book's static site (:func:`view`, drawn in the reader's browser by Chart.js).

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
import numbers
import re
from dataclasses import dataclass
from typing import Mapping, Sequence, TypeVar, Union

from .. import collectives
from ..hardware import Chip, canonical_dtype, get_chip
from ..sharding import (
    MatmulPlan,
    Mesh,
    PlannedCollective,
    Sharding,
    axis_collective_cost,
    bytes_per_device,
    local_shape,
    parse_sharding,
    plan_matmul,
    plan_reshard,
    reshard_candidates,
)
from ..units import format_bytes, format_count, format_seconds
from . import chart

__all__ = [
    "ShardedMatmulState", "OperandInfo", "sharded_matmul_state", "parse_mesh", "mesh_text",
    "collective_cost", "collective_curve", "sharded_matmul_summary", "sharded_matmul_series",
    "sharded_matmul_chart", "linked_controls", "view", "LAYOUTS", "CUSTOM", "DEFAULT_LAYOUT",
    "FIELDS", "MESH_AXES", "DTYPES", "KINDS", "KIND_COLOURS", "MESSAGE_RANGE", "TIME_RANGE",
    "MESSAGES", "MESSAGE_TICKS", "TIME_TICKS", "BAR_ROWS", "FIGURE_PX", "PANEL_SHARES",
    "bar_end",
]

#: Mesh axis names the explorer offers (at most three axes).
MESH_AXES = ("X", "Y", "Z")
#: Dtypes offered.
DTYPES = ("bf16", "fp16", "fp8", "int8")
#: Collective kinds, in legend order, and their colours.
KINDS = ("AllGather", "ReduceScatter", "AllReduce", "AllToAll")
KIND_COLOURS = {"AllGather": "#1f5fa8", "ReduceScatter": "#5a9e2f", "AllReduce": "#d9731a",
                "AllToAll": "#8e44ad"}
#: The compute time's line and bar (matplotlib grey 0.35), the latency floor and bandwidth
#: line (grey 0.45), the crossover and the regime labels (grey 0.3), an unknown kind's bar.
COMPUTE_COLOUR = "#595959"
GUIDE_COLOUR = "#737373"
CROSSOVER_COLOUR = "#4d4d4d"
OTHER_COLOUR = "#808080"
#: Dash patterns (pixels) of matplotlib's "--", ":" and "-." lines.
DASHED, DOTTED, DASH_DOT = (4, 2), (1, 3), (6, 2, 1, 2)

#: Fixed ranges of the message-size plot (bytes, seconds), so the axes never jump.
MESSAGE_RANGE = (1.0e2, 1.0e11)
TIME_RANGE = (1.0e-7, 1.0e1)
#: Message sizes V of the curves (bytes): 91 points, ten per decade, 10^2 to 10^11.
MESSAGES: tuple[float, ...] = tuple(10.0 ** (2 + k / 10) for k in range(91))
#: Rows the bar chart has room for before it needs more (a full redraw in Jupyter).
BAR_ROWS = 5
#: Size of the Jupyter figure in pixels (10 x 3.9 inches at 100 dpi), and the share of its
#: width each panel takes (the curve gets most of it).
FIGURE_PX = (1000, 390)
PANEL_SHARES = (0.6, 0.4)

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
DEFAULT_LAYOUT = "data × tensor parallel (case 3)"
#: The controls a layout fills.
FIELDS = ("mesh", "lhs", "rhs", "out")

Wraparound = Union[bool, str]
_T = TypeVar("_T")


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
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
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
                             f"({mesh_text(mesh)}) does not have")


def mesh_text(mesh: Mesh) -> str:
    """A mesh as the mesh field reads it: "X=2, Y=4"."""
    return ", ".join(f"{axis}={size}" for axis, size in mesh.axes)


def _size(name: str, value: object) -> int:
    """A size in elements: a whole number >= 1 (4096.0 reads as 4096), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a whole number of elements, got {value!r}")
    number = float(value)  # int, float or a NumPy scalar: the same test for each
    if not math.isfinite(number) or number < 1 or abs(number - round(number)) > 1e-6 * number:
        raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")
    return int(round(value))


# --------------------------------------------------------------------------- costs

def collective_cost(kind: str, nbytes: float, axes: Sequence[str], mesh: Mesh,
                    chip: str | Chip, *, wraparound: Wraparound = "auto"
                    ) -> collectives.CollectiveCost:
    """The cost of one collective of ``nbytes`` (collectives convention: the array the group
    holds together) over mesh ``axes``, priced as :func:`~scalebook.sharding.plan_matmul`
    prices it: :func:`scalebook.sharding.axis_collective_cost`, i.e. the solver's one entry
    point :func:`scalebook.collectives.collective_cost` on the chip's real interconnect.

    ``kind`` is one of :data:`KINDS`; ``wraparound`` True, False or "auto" (default: as the
    chip's slices are built, :func:`scalebook.collectives.has_wraparound`). ``nbytes`` is one
    size in bytes, as :func:`~scalebook.sharding.axis_collective_cost` takes it (a curve is a
    loop over sizes, which runs without NumPy).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    return axis_collective_cost(kind, nbytes, axes, mesh, chip, wraparound=wraparound)


def _priced(value: _T | None, what: str) -> _T:
    """``value``, a number the solver fills only when it has the shapes and the chip (a
    collective's bytes, time or cost; a plan's FLOPs or time). Every plan here is given both,
    so None is a bug, not a bad input: RuntimeError (a "cannot compute" for the reader), never
    a silent wrong number."""
    if value is None:
        raise RuntimeError(f"{what} was planned without shapes or a chip, so it has no cost")
    return value


def _seconds(step: PlannedCollective) -> float:
    """``step``'s time (s)."""
    return _priced(step.time, str(step))


def _bytes(step: PlannedCollective) -> float:
    """``step``'s message size V (bytes the group holds together)."""
    return _priced(step.nbytes, str(step))


def _regime(step: PlannedCollective) -> str:
    """Whether ``step`` is latency- or bandwidth-bound: one message size, so one regime."""
    regime = _priced(step.cost, str(step)).regime
    if not isinstance(regime, str):
        raise RuntimeError(f"{step} was priced at several message sizes, not one")
    return regime


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

    chip: Chip
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

    def curve(self, kind: str, nbytes: float) -> collectives.CollectiveCost:
        """``kind``'s cost at message size ``nbytes`` (bytes) over :attr:`plot_axes`: one
        point of what the plot draws."""
        return collective_curve(self, kind, nbytes)


def collective_curve(state: ShardedMatmulState, kind: str,
                     nbytes: float) -> collectives.CollectiveCost:
    """``kind``'s cost at message size ``nbytes`` (bytes) over the state's plot axes, chip and
    wraparound: one point of the curve the message-size plot draws (a loop over
    :data:`MESSAGES`)."""
    return collective_cost(kind, nbytes, state.plot_axes, state.mesh, state.chip,
                           wraparound=state.wraparound)


def sharded_matmul_state(chip: str | Chip = "TPU v5e", *,
                         mesh: str | Mapping[str, int] | Mesh = "X=2, Y=4",
                         B: float = 4096, D: float = 8192, F: float = 16384,
                         lhs: str = "A[B_X, D_Y]", rhs: str = "W[D_Y, F]",
                         out: str = "Out[B_X, F]", dtype: str = "bf16",
                         wraparound: Wraparound = "auto", axis: str = "auto",
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
        raise ValueError(f"plot axis {axis} is not in the mesh ({mesh_text(mesh)})")

    def plan(gather: str | None, reduce: str, scatter_dim: str | None) -> MatmulPlan:
        return plan_matmul(a, b, mesh, contracting="D", shapes=sizes, dtype=dtype, chip=chip,
                           output_name=target.name, reduce=reduce, scatter_dim=scatter_dim,
                           gather=gather, wraparound=wraparound)

    first = plan(None, "all_reduce", None)
    partial = parse_sharding(first.local_result).unreduced
    best = None
    why_not = failed = ""  # the first reason no route reaches the output; the first error
    for gather, reduce, scatter_dim in reshard_candidates(partial, target):
        try:
            candidate = (first if (gather, reduce) == (None, "all_reduce")
                         else plan(gather, reduce, scatter_dim))
            steps, slices, reason = plan_reshard(parse_sharding(candidate.output), target,
                                                 mesh, sizes, dtype, chip, wraparound)
        except ValueError as exc:  # a dim too small to split on the way: try another route
            failed = failed or str(exc)
            continue
        if reason is not None:
            why_not = why_not or reason
            continue
        total = _priced(candidate.comms_time, "the plan") + sum(_seconds(s) for s in steps)
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
        output_note = (f"{target} is not reachable here ({why_not or failed}); shown: the "
                       f"plan up to {chosen.output}.")

    operands = [_info("lhs", a, sizes, dtype, mesh), _info("rhs", b, sizes, dtype, mesh)]
    if chosen.lhs_used != chosen.lhs:
        operands.append(_info("lhs as multiplied", chosen.lhs_used, sizes, dtype, mesh))
    if chosen.rhs_used != chosen.rhs:
        operands.append(_info("rhs as multiplied", chosen.rhs_used, sizes, dtype, mesh))
    operands.append(_info("local result", chosen.local_result, sizes, dtype, mesh))
    operands.append(_info("output", output, sizes, dtype, mesh))

    flops = float(_priced(chosen.flops_per_device, "the plan"))
    compute = flops / peak
    comms = float(_priced(chosen.comms_time, "the plan")) + float(sum(map(_seconds, reshard)))
    steps = (*chosen.collectives, *reshard)
    plot_axes = _plot_axes(axis, steps, mesh)
    kinds = tuple(k for k in KINDS if any(s.kind == k and s.axes == plot_axes for s in steps))
    return ShardedMatmulState(
        chip=chip, is_gpu=chip.has_nvlink_domain, mesh=mesh, B=sizes["B"], D=sizes["D"],
        F=sizes["F"], dtype=dtype, wraparound=wraparound, lhs=str(a), rhs=str(b),
        out=str(target), plan=chosen, reduce=reduce, scatter_dim=scatter_dim, reshard=reshard,
        slices=slices, reachable=reachable, output=output, output_note=output_note,
        operands=tuple(operands), flops_per_device=flops,
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
        return max(steps, key=_seconds).axes
    return next(((name,) for name, size in mesh.axes if size > 1), (mesh.axis_names[0],))


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
            format_bytes(_bytes(s)), format_seconds(_seconds(s)), esc(_regime(s)))) + "</tr>"
        for s in state.steps) or f"<tr>{cell.format('none')}</tr>"
    ratio = "∞" if math.isinf(state.ratio) else f"{state.ratio:.2f}"
    colour = "#1f5fa8" if state.bound == "compute" else "#b00020"
    note_colour = "inherit" if state.reachable else "#b00020"
    mesh = mesh_text(state.mesh)
    return (
        "<div style='font-size:90%'>"
        f"<b>Case {state.case}</b>: {esc(plan.description)}<br>"
        f"<code>{esc(state.lhs)} ·_D {esc(state.rhs)} → {esc(state.output)}</code> on "
        f"{state.mesh.n_devices} × {esc(state.chip.name)} (mesh {esc(mesh)}), {esc(state.dtype)}<br>"
        f"<span style='color:{note_colour}'>{esc(state.output_note)}</span>"
        "<table style='border-collapse:collapse'><tr><th>array</th><th>sharding</th>"
        "<th>global shape</th><th>per chip</th><th>bytes per chip</th></tr>"
        f"{arrays}</table>"
        "<table style='border-collapse:collapse'><tr><th>collective</th><th>axes (chips)</th>"
        "<th>sharding</th><th>V (bytes)</th><th>time</th><th>regime</th></tr>"
        f"{steps}</table>"
        f"local matmul: {format_count(state.flops_per_device, unit='FLOPs')} per chip, compute "
        f"<b>{format_seconds(state.compute_time)}</b>; communication "
        f"<b>{format_seconds(state.comms_time)}</b> (not overlapped) → "
        f"<b style='color:{colour}'>{state.bound}-bound</b> (compute / comms = {ratio})"
        "</div>")




# --------------------------------------------------------------------------- plot series

def _every_other_decade(lo: float, hi: float, text) -> list[list]:
    """Ticks at every other power of ten in [lo, hi], from the first (10^2, 10^4, ... bytes;
    10^-7, 10^-5, ... s): the decades matplotlib's ``LogLocator(numticks=7)`` picked for
    these ranges before the figure read its ticks from here."""
    return chart.decade_ticks(lo, hi, text)[::2]


#: The tick marks of the message axis (bytes) and of both time axes (seconds), shared by the
#: Jupyter figure and the live chart.
MESSAGE_TICKS = _every_other_decade(*MESSAGE_RANGE, lambda v: format_bytes(v, 2, binary=False))
TIME_TICKS = _every_other_decade(*TIME_RANGE, lambda v: format_seconds(v, 2))


def _bar_rows(state: ShardedMatmulState) -> list[list]:
    """[name, seconds, colour, text] per bar: the local matmul, then each collective in order;
    the text printed after the bar reads "name: time"."""
    rows = [("local matmul", float(state.compute_time), COMPUTE_COLOUR)]
    for step in state.steps:
        rows.append((f"{step.kind}_{''.join(step.axes)} {step.operand}", _seconds(step),
                     KIND_COLOURS.get(step.kind, OTHER_COLOUR)))
    return [[name, t, colour, f"{name}: {format_seconds(t)}"] for name, t, colour in rows]


def _topology_text(state: ShardedMatmulState) -> str:
    """What the plot axes are: "NVLink/NIC" on GPUs; on a torus "ring", "line" or "rings and
    lines", reading "auto" as the chip's slices are built."""
    chip = state.chip
    if not chip.has_ici_torus:
        return "NVLink/NIC"
    if state.wraparound == "auto":
        flags = {collectives.has_wraparound(chip, state.mesh[a]) for a in state.plot_axes}
    else:
        flags = {bool(state.wraparound)}
    return "rings and lines" if len(flags) > 1 else ("ring" if flags.pop() else "line")


def sharded_matmul_series(state: ShardedMatmulState) -> dict:
    """Every number the explorer's figure draws, as plain lists (bytes, seconds).

    The message-size panel, over the state's plot axes: ``curves`` ``{kind: [[V, T(V)], ...]}``
    for each kind drawn (none when the axes hold one device), over :data:`MESSAGES`;
    ``markers`` ``{kind: [[V, T], ...]}``, the plan's collectives on those axes; for the first
    kind drawn, ``latency`` (its floor α, s), ``bandwidth`` ([[V, V·β], ...], β the seconds
    per byte) and ``crossover`` V* = α / β (bytes), where the two terms are equal, with the
    regime ``labels`` ([[x, y, text, align], ...]) either side; None for each when nothing is
    drawn. ``compute``: the local matmul's time (s); ``legend``: the labelled lines' texts;
    ``title``.

    The bar panel: ``bars`` ([name, seconds, colour, text] per step, the local matmul
    first), ``rows`` (at least :data:`BAR_ROWS`), ``bars_title``.
    """
    shown = state.plot_kinds if state.plot_group > 1 else ()
    axes_text = "".join(state.plot_axes)
    curves = {kind: [[v, float(collective_curve(state, kind, v).time)] for v in MESSAGES]
              for kind in shown}
    markers = {kind: [[float(_bytes(s)), _seconds(s)] for s in state.steps
                      if s.kind == kind and s.axes == state.plot_axes] for kind in KINDS}
    latency = bandwidth = crossover = labels = None
    if shown:
        unit = collective_curve(state, shown[0], 1.0)  # latency and seconds per byte
        latency, per_byte = float(unit.latency_time), float(unit.bandwidth_time)
        bandwidth = [[v, v * per_byte] for v in MESSAGES]
        crossover = latency / per_byte
        y = latency * 1.15
        labels = [[crossover / 2, y, "← latency-bound", "right"],
                  [crossover * 2, y, "bandwidth-bound →", "left"]]
        wrap = _topology_text(state)
        title = (f"{' / '.join(shown)} over {axes_text} ({state.plot_group} chips, {wrap}): "
                 f"latency {format_seconds(latency)}, crossover "
                 f"{format_bytes(crossover, binary=False)}")
    else:
        title = (f"axis {axes_text} has {state.plot_group} device: "
                 "no communication over it")
    ratio = "∞" if math.isinf(state.ratio) else f"{state.ratio:.2f}"
    return {
        "curves": curves, "markers": markers, "latency": latency, "bandwidth": bandwidth,
        "crossover": crossover, "labels": labels, "compute": float(state.compute_time),
        "legend": [f"{kind} over {axes_text}" for kind in shown] + ["compute time"],
        "title": title,
        "bars": _bar_rows(state),
        "rows": max(BAR_ROWS, 1 + len(state.steps)),
        "bars_title": f"{state.bound}-bound: compute / comms = {ratio}",
    }


def bar_end(seconds: float) -> float:
    """Where a bar of ``seconds`` ends on the log time axis: bars start at its left edge,
    :data:`TIME_RANGE`'s low end, and the shortest still shows (1% past that edge)."""
    return max(seconds, TIME_RANGE[0] * 1.01)


def sharded_matmul_chart(series: dict) -> dict:
    """:func:`sharded_matmul_series` as a :mod:`~scalebook.live.chart` description: time
    against message size (left, log-log) and a bar per step on a log time axis (right), as the
    Jupyter figure draws them, in its drawing order (markers on top)."""
    lo, hi = MESSAGE_RANGE
    legend = iter(series["legend"])
    curve = [chart.line(series["curves"][kind], KIND_COLOURS[kind], label=next(legend))
             for kind in KINDS if kind in series["curves"]]
    if series["latency"] is not None:
        latency, crossover = series["latency"], series["crossover"]
        curve += [chart.line([[lo, latency], [hi, latency]], GUIDE_COLOUR, width=1,
                             dash=DASHED),
                  chart.line(series["bandwidth"], GUIDE_COLOUR, width=1, dash=DOTTED),
                  chart.line([[crossover, TIME_RANGE[0]], [crossover, TIME_RANGE[1]]],
                             CROSSOVER_COLOUR, width=1, dash=DOTTED)]
    compute = series["compute"]
    curve.append(chart.line([[lo, compute], [hi, compute]], COMPUTE_COLOUR, width=1.5,
                            dash=DASH_DOT, label=next(legend)))
    for x, y, text, align in series["labels"] or ():
        curve.append(chart.annotations([[x, y]], [text], CROSSOVER_COLOUR, align=align))
    curve += [chart.points(series["markers"][kind], KIND_COLOURS[kind], size=9)
              for kind in KINDS]
    _, seconds, colours, texts = zip(*series["bars"])
    bars = chart.bars([bar_end(t) for t in seconds], colours, texts, horizontal=True)
    return chart.chart([
        chart.panel(series["title"],
                    chart.axis("log", lo, hi, "message size V (bytes the group holds together)",
                               ticks=MESSAGE_TICKS),
                    chart.axis("log", *TIME_RANGE, "time (s)", ticks=TIME_TICKS),
                    curve, legend="upper left", width=PANEL_SHARES[0]),
        chart.panel(series["bars_title"],
                    chart.axis("log", *TIME_RANGE, "time (s)", ticks=TIME_TICKS),
                    chart.axis("category", categories=[""] * series["rows"]),
                    [bars], width=PANEL_SHARES[1]),
    ], width=FIGURE_PX[0], height=FIGURE_PX[1])


# --------------------------------------------------------------------------- live view

def linked_controls(values: Mapping[str, object], changed: str | None) -> dict[str, object]:
    """The controls a move of control ``changed`` sets as well, with their new values (only
    those that change): choosing a named ``layout`` fills the mesh and sharding fields
    (:data:`FIELDS`); editing one of those picks the layout with exactly those four values,
    or :data:`CUSTOM`. ``values`` are all the controls' values after the move. A plot
    ``axis`` the new mesh lacks goes back to "auto" (else every later move would be refused
    until the reader found the axis control)."""
    if changed == "layout":
        chosen = LAYOUTS.get(str(values["layout"]))
        updates: dict[str, object] = dict(zip(FIELDS, chosen)) if chosen else {}
    elif changed in FIELDS:
        current = tuple(values[name] for name in FIELDS)
        updates = {"layout": next((name for name, fields in LAYOUTS.items()
                                   if fields == current), CUSTOM)}
    else:
        updates = {}
    axis = values.get("axis", "auto")
    mesh = updates.get("mesh")  # a layout's mesh text (LAYOUTS), when a layout was chosen
    if isinstance(mesh, str) and axis != "auto":
        try:
            lacks = axis not in parse_mesh(mesh).axis_names
        except ValueError:
            lacks = False
        if lacks:
            updates["axis"] = "auto"
    return {name: value for name, value in updates.items() if values.get(name) != value}


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its control values (the Jupyter control names: ``layout``,
    ``chip``, ``dtype``, ``wraparound``, ``mesh``, ``lhs``, ``rhs``, ``out``, ``B``, ``D``,
    ``F``, ``axis``) after control ``changed`` moved: the summary, the chart and, when the move
    fills or renames linked controls (:func:`linked_controls`), their new values. A rejected
    input raises ``ValueError``; when the move had filled fields first (a layout on a chip
    without that dtype), ``{"error": message, "controls": ...}``: the page fills them too, as
    the Jupyter widget does."""
    updates = linked_controls(controls, changed)
    try:
        state = sharded_matmul_state(**{**controls, **updates})
    except ValueError as exc:
        if not updates:
            raise
        return {"error": str(exc), "controls": updates}
    out = {"summary_html": sharded_matmul_summary(state),
           "chart": sharded_matmul_chart(sharded_matmul_series(state))}
    if updates:
        out["controls"] = updates
    return out

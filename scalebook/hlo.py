"""Read the collectives out of compiled XLA (HLO) text and name the mesh axes they run over.

``jax.jit(f).lower(*args).compile().as_text()`` is the program XLA will run on *one* device
after SPMD partitioning. Every communication in it is one of five ops, each with the groups of
devices that talk to each other:

- ``all-gather``, ``reduce-scatter``, ``all-reduce``, ``all-to-all``: ``replica_groups``, either
  explicit lists ``{{0,1,2,3},{4,5,6,7}}``, the iota form ``[2,4]<=[8]`` / ``[4,2]<=[2,4]T(1,0)``,
  the mesh form ``mesh['a'=2,'b'=4] {'a'}`` or ``{}`` (one group of all devices);
- ``collective-permute``: ``source_target_pairs={{0,1},{1,2},...}``.

A group's members are *partition numbers*: partition ``p`` runs on ``mesh.devices.flat[p]``, so
its mesh coordinates are ``numpy.unravel_index(p, mesh.devices.shape)`` (on a mesh whose devices
are not in id order this differs from ``device.id``). The axes of an op are the mesh axes along
which the members of a group (or a source and its target) differ, listed in mesh order. Groups
that are not whole rows of the mesh (say devices {0, 2} on a 4-wide axis) still report every
axis they touch; nothing marks them as partial.

Bytes: ``nbytes`` is the size of the op's result on one device, summed over a tuple result
(dtype sizes as XLA stores them; ``pred`` is one byte). Async pairs count once, at the
``-start``; for ``all-gather-start`` and ``collective-permute-start`` the result is a tuple
``(operands, outputs, ...)`` and only the outputs (element 1) are counted; an
``all-reduce-start`` returns its outputs alone. Ops wrapped in ``async-start`` computations are
counted where they sit inside the wrapped computation. Every instruction is counted once, even
inside a loop body.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from scalebook.units import format_bytes

if TYPE_CHECKING:  # JAX is imported where it is used, so importing this module stays cheap
    import jax

__all__ = [
    "HloCollective", "hlo_collectives", "compiled_collectives", "compiled_text", "summarize",
    "KINDS", "DTYPE_BYTES",
    "MatmulCase", "Comparison", "MATMUL_CASES", "MATMUL_SHAPES",
    "predicted_matmul_kinds", "compiled_matmul_kinds", "planner_vs_compiler",
]

KINDS = {
    "all-gather": "AllGather",
    "reduce-scatter": "ReduceScatter",
    "all-reduce": "AllReduce",
    "all-to-all": "AllToAll",
    "collective-permute": "CollectivePermute",
}

DTYPE_BYTES = {
    "pred": 1, "s2": 1, "u2": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1,
    "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4, "tf32": 4,
    "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16,
    "token": 0,
}
# 8-bit floats: f8e4m3fn, f8e5m2, f8e4m3b11fnuz, ...; 4-bit ones are stored a byte each too.
_F8_RE = re.compile(r"f[48]e\d+m\d+\w*")

_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*")
_ARRAY_RE = re.compile(r"(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\]")
_OPCODE_RE = re.compile(r"\s*(?P<op>[a-z][a-z0-9\-]*)\(")
_INT_RE = re.compile(r"-?\d+")


@dataclass(frozen=True)
class HloCollective:
    """One collective op in compiled HLO.

    Attributes:
        kind: "AllGather" | "ReduceScatter" | "AllReduce" | "AllToAll" | "CollectivePermute".
        axes: mesh axis names the op's device groups span, in mesh order (() for a no-op group).
        nbytes: bytes of the op's result on one device, summed over a tuple result.
        shape: the result shape as XLA prints it, layouts dropped, e.g. "f32[8,16]".
    """

    kind: str
    axes: tuple[str, ...]
    nbytes: int
    shape: str

    def __str__(self) -> str:
        over = "".join(self.axes) if self.axes else "no axis"
        return f"{self.kind} over {over}: {self.shape} ({format_bytes(self.nbytes)})"


# --------------------------------------------------------------------------- text scanning

def _balanced(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes ``text[start]`` (which must be ``open_``)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {open_}{close} in HLO text: {text[start:start + 80]!r}")


def _skip_layout(text: str, pos: int) -> int:
    """Skip an array's layout ``{1,0}`` / ``{1,0:T(8,128)}`` if one starts at ``pos``."""
    if pos < len(text) and text[pos] == "{":
        return _balanced(text, pos, "{", "}")
    return pos


def _read_shape(text: str, pos: int) -> tuple[Any, int]:
    """Parse one HLO shape at ``pos``: a list for a tuple, a (dtype, dims) pair for an array."""
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if text.startswith("/*", pos):
        pos = text.index("*/", pos) + 2
        return _read_shape(text, pos)
    if pos < len(text) and text[pos] == "(":
        items: list[Any] = []
        pos += 1
        while True:
            while pos < len(text) and text[pos] in " ,":
                pos += 1
            if text.startswith("/*", pos):
                pos = text.index("*/", pos) + 2
                continue
            if pos < len(text) and text[pos] == ")":
                return items, pos + 1
            item, pos = _read_shape(text, pos)
            items.append(item)
    match = _ARRAY_RE.match(text, pos)
    if match is None:
        raise ValueError(f"cannot read an HLO shape at {text[pos:pos + 60]!r}")
    dims = tuple(int(d.replace("<=", "")) for d in match["dims"].split(",") if d.strip())
    return (match["dtype"], dims), _skip_layout(text, match.end())


def _dtype_bytes(dtype: str) -> int:
    if dtype in DTYPE_BYTES:
        return DTYPE_BYTES[dtype]
    if _F8_RE.fullmatch(dtype):
        return 1
    raise ValueError(f"unknown HLO element type {dtype!r}")


def _shape_bytes(shape: Any) -> int:
    if isinstance(shape, list):
        return sum(_shape_bytes(item) for item in shape)
    dtype, dims = shape
    return _dtype_bytes(dtype) * math.prod(dims)


def _shape_text(shape: Any) -> str:
    if isinstance(shape, list):
        return "(" + ", ".join(_shape_text(item) for item in shape) + ")"
    dtype, dims = shape
    return f"{dtype}[{','.join(str(d) for d in dims)}]"


def _attribute(line: str, key: str) -> str | None:
    """The raw text of attribute ``key=...`` on an instruction line (None when absent)."""
    match = re.search(r"[\s,]" + re.escape(key) + r"=", line)
    if match is None:
        return None
    pos = match.end()
    if line.startswith("mesh[", pos):
        end = _balanced(line, pos + 4, "[", "]")
        if line.startswith(", device_ids=(", end):
            end = _balanced(line, end + len(", device_ids="), "(", ")")
        while end < len(line) and line[end] == " ":
            end += 1
        if end < len(line) and line[end] == "{":
            end = _balanced(line, end, "{", "}")
        return line[pos:end]
    if line.startswith("{", pos):
        return line[pos:_balanced(line, pos, "{", "}")]
    match = re.compile(r"\[[\d,]*\]<=\[[\d,]*\](?:T\([\d,]*\))?").match(line, pos)
    if match is None:
        raise ValueError(f"cannot read {key}= in HLO line: {line.strip()[:200]!r}")
    return match.group(0)


# --------------------------------------------------------------------------- device groups

def _iota_groups(text: str) -> list[list[int]]:
    """``[G,S]<=[d0,d1,...]T(p...)``: arange, reshape to d, transpose by p, reshape to [G,S]."""
    match = re.fullmatch(r"\[([\d,]*)\]<=\[([\d,]*)\](?:T\(([\d,]*)\))?", text)
    if match is None:
        raise ValueError(f"bad iota replica groups {text!r}")
    out_dims = [int(d) for d in match[1].split(",") if d]
    in_dims = [int(d) for d in match[2].split(",") if d]
    ids = np.arange(math.prod(in_dims)).reshape(in_dims)
    if match[3]:
        ids = ids.transpose([int(p) for p in match[3].split(",")])
    if math.prod(out_dims) != ids.size:
        raise ValueError(f"iota replica groups {text!r}: sizes do not match")
    return ids.reshape(out_dims[0], -1).tolist()


def _nested_groups(text: str) -> list[list[int]]:
    """``{{0,1},{2,3}}`` -> [[0, 1], [2, 3]]; ``{}`` -> []."""
    inner = text.strip()[1:-1].strip()
    groups = re.findall(r"\{([^{}]*)\}", inner)
    return [[int(i) for i in _INT_RE.findall(group)] for group in groups]


def _device_list(text: str) -> np.ndarray:
    """A mesh's ``device_ids=(...)``: ``[2,4]T(1,0)`` (arange reshaped and transposed), the same
    with a ``[dims]<=`` prefix, or a plain list of ids."""
    match = re.fullmatch(r"\s*(?:\[[\d,]*\]<=)?\[([\d,]*)\](?:T\(([\d,]*)\))?\s*", text)
    if match is None:
        return np.array([int(i) for i in _INT_RE.findall(text)])
    dims = [int(d) for d in match[1].split(",") if d]
    ids = np.arange(math.prod(dims)).reshape(dims)
    if match[2]:
        ids = ids.transpose([int(p) for p in match[2].split(",")])
    return ids.ravel()


def _mesh_groups(text: str) -> list[list[int]]:
    """``mesh['a'=2,'b'=4][, device_ids=(...)] {'a'}`` (sub-axes ``'a':(pre)size`` too)."""
    header_end = _balanced(text, 4, "[", "]")
    sizes: dict[str, int] = {}
    for name, size in re.findall(r"'([^']*)'=(\d+)", text[5:header_end - 1]):
        sizes[name] = int(size)
    rest = text[header_end:]
    device_ids = None
    if rest.startswith(", device_ids=("):
        close = _balanced(rest, len(", device_ids="), "(", ")")
        body = rest[len(", device_ids=("):close - 1]
        device_ids = _device_list(body)
        rest = rest[close:]
    brace = rest.find("{")
    if not sizes or brace < 0:
        raise ValueError(f"bad mesh replica groups {text!r}")
    names = list(sizes)
    shape = [sizes[n] for n in names]
    total = math.prod(shape)
    if device_ids is None:
        device_ids = np.arange(total)
    if device_ids.size != total:
        raise ValueError(f"mesh replica groups {text!r}: {device_ids.size} ids for {total} devices")
    coords = np.array(np.unravel_index(np.arange(total), shape)).T  # [device position, axis]
    key = coords.copy()
    rank = np.zeros(total, dtype=np.int64)
    for ref in re.findall(r"'([^']*)'(?::\((\d+)\)(\d+))?", rest[brace:]):
        name, pre, sub = ref
        if name not in sizes:
            raise ValueError(f"mesh replica groups {text!r}: unknown axis {name!r}")
        axis = names.index(name)
        pre_size, sub_size = (int(pre), int(sub)) if pre else (1, sizes[name])
        component = (coords[:, axis] // pre_size) % sub_size
        key[:, axis] -= component * pre_size
        rank = rank * sub_size + component
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for position in range(total):
        groups.setdefault(tuple(key[position]), []).append((int(rank[position]),
                                                           int(device_ids.ravel()[position])))
    return [[device for _, device in sorted(members)] for members in groups.values()]


def _replica_groups(text: str | None) -> list[list[int]]:
    if text is None:
        return []
    if text.startswith("mesh["):
        return _mesh_groups(text)
    if text.startswith("{"):
        return _nested_groups(text)
    return _iota_groups(text)


def _coordinates(mesh: Any) -> np.ndarray:
    """Mesh coordinates of each partition number (row p: coordinates of partition p)."""
    shape = mesh.devices.shape
    return np.array(np.unravel_index(np.arange(math.prod(shape)), shape)).T


def _differing_axes(groups: Iterable[Sequence[int]], mesh: Any) -> tuple[str, ...]:
    coords = _coordinates(mesh)
    varying: set[int] = set()
    for group in groups:
        for device in group:
            if not 0 <= device < len(coords):
                raise ValueError(f"device {device} is not in the {len(coords)}-device mesh")
        if len(group) > 1:
            members = coords[list(group)]
            varying.update(int(a) for a in np.nonzero((members != members[0]).any(axis=0))[0])
    return tuple(mesh.axis_names[a] for a in sorted(varying))


def _group_axes(groups: list[list[int]], mesh: Any) -> tuple[str, ...]:
    if not groups:  # {}: every device in one group
        return tuple(name for name, size in zip(mesh.axis_names, mesh.devices.shape) if size > 1)
    return _differing_axes(groups, mesh)


def _pair_axes(pairs_text: str, mesh: Any) -> tuple[str, ...]:
    return _differing_axes(_nested_groups(pairs_text), mesh)


# --------------------------------------------------------------------------- public API

def _check_mesh(mesh: Any) -> None:
    from jax.sharding import Mesh

    if not isinstance(mesh, Mesh):
        raise ValueError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}")


def hlo_collectives(hlo_text: str, mesh: Any) -> list[HloCollective]:
    """Every collective in compiled HLO text, in program order, with its mesh axes and bytes.

    ``hlo_text``: ``jax.jit(f).lower(*args).compile().as_text()``; ``mesh``: the
    ``jax.sharding.Mesh`` the program was partitioned over. See the module docstring for how
    groups map to axes and how bytes are counted.
    """
    if not isinstance(hlo_text, str):
        raise ValueError(f"hlo_text must be a str of HLO, got {type(hlo_text).__name__}")
    _check_mesh(mesh)
    found: list[HloCollective] = []
    for line in hlo_text.splitlines():
        head = _INSTR_RE.match(line)
        if head is None:
            continue
        try:
            shape, pos = _read_shape(line, head.end())
        except ValueError:
            continue  # not an instruction with a shape we read (e.g. a computation header)
        opcode = _OPCODE_RE.match(line, pos)
        if opcode is None:
            continue
        op = opcode["op"]
        start = op.endswith("-start")
        base = op[: -len("-start")] if start else op
        if base not in KINDS:
            continue
        if start and base in ("all-gather", "collective-permute") and isinstance(shape, list) \
                and len(shape) >= 2:
            shape = shape[1]  # (operands, outputs, contexts...): count the outputs only
        if base == "collective-permute":
            pairs = _attribute(line, "source_target_pairs")
            axes = _pair_axes(pairs, mesh) if pairs is not None else ()
        else:
            axes = _group_axes(_replica_groups(_attribute(line, "replica_groups")), mesh)
        found.append(HloCollective(KINDS[base], axes, _shape_bytes(shape), _shape_text(shape)))
    return found


def _mesh_of(args: Sequence[Any], jit_kwargs: dict[str, Any]) -> Any:
    from jax.sharding import NamedSharding

    candidates = list(args)
    for key in ("in_shardings", "out_shardings"):
        value = jit_kwargs.get(key)
        candidates.extend(value if isinstance(value, (tuple, list)) else [value])
    for value in candidates:
        sharding = value if isinstance(value, NamedSharding) else getattr(value, "sharding", None)
        if isinstance(sharding, NamedSharding):
            return sharding.mesh
    raise ValueError("no argument (or in/out sharding) has a NamedSharding; pass mesh=...")


def compiled_collectives(fn: Any, *args: Any, mesh: Any = None, **jit_kwargs: Any
                         ) -> list[HloCollective]:
    """Compile ``jax.jit(fn, **jit_kwargs)`` for ``args`` and list its collectives.

    The mesh is ``mesh=`` if given, else that of the first argument (or in/out sharding) with a
    ``NamedSharding``. ``args`` may be arrays or ``jax.ShapeDtypeStruct`` s with shardings.
    """
    import jax

    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    if mesh is None:
        mesh = _mesh_of(args, jit_kwargs)
    _check_mesh(mesh)
    text = compiled_text(jax.jit(fn, **jit_kwargs).lower(*args).compile())
    return hlo_collectives(text, mesh)


def compiled_text(compiled: jax.stages.Compiled) -> str:
    """The optimised HLO text of a compiled computation (JAX gives None where a backend has none)."""
    text = compiled.as_text()
    if text is None:
        raise RuntimeError("this JAX backend gives no HLO text for a compiled computation")
    return text


def summarize(collectives: Iterable[HloCollective]) -> list[str]:
    """One line per distinct (kind, axes, bytes), in first-seen order, with its count:
    e.g. "AllGather over X: 2 x 4 KiB" (two AllGathers over X, each with a 4 KiB result)."""
    counts: Counter = Counter()
    for c in collectives:
        if not isinstance(c, HloCollective):
            raise ValueError(f"summarize takes HloCollective items, got {type(c).__name__}")
        counts[(c.kind, c.axes, c.nbytes)] += 1
    return [f"{kind} over {''.join(axes) if axes else 'no axis'}: {n} x {format_bytes(nbytes)}"
            for (kind, axes, nbytes), n in counts.items()]


# --------------------------------------------------------------------------- planner vs XLA

MATMUL_SHAPES = {"I": 16, "J": 32, "K": 64}
"""Dim sizes used by :data:`MATMUL_CASES` (f32): small enough to compile in a blink."""


@dataclass(frozen=True)
class MatmulCase:
    """``lhs ·_J rhs -> out`` in book notation, with what XLA emitted and why it differs.

    Attributes:
        lhs, rhs: operand shardings, e.g. "A[I_X, J]", "B[J, K_Y]" (contracting dim J).
        out: requested output sharding, e.g. "C[I_X, K]" (no unreduced axes).
        xla: the collectives XLA emitted (JAX 0.10.2, CPU, 2x4 Auto mesh), as
            :func:`compiled_matmul_kinds` writes them, sorted.
        note: one line: the plan case, and why XLA differs when it does.
    """

    lhs: str
    rhs: str
    out: str
    xla: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class Comparison:
    """One row of :func:`planner_vs_compiler`: the planner's collectives against XLA's."""

    lhs: str
    rhs: str
    out: str
    predicted: list[str]
    compiled: list[str]
    agree: bool
    note: str = ""


def _label(kind: str, axes: Sequence[str]) -> str:
    return f"{kind}({''.join(axes)})"


def _moved(kind: str, nbytes: float, group: int) -> float:
    """Bytes one device sends in a ring collective (AllReduce = ReduceScatter + AllGather)."""
    share = nbytes * (group - 1) / group
    return 2 * share if kind == "AllReduce" else share


def _planned(a: Any, b: Any, c: Any, mesh: Any, gather: str) -> tuple[float, list[str]]:
    """Plan ``a · b`` with ``gather``, then fix the output to ``c``: (bytes moved, labels)."""
    from scalebook import sharding as sh

    contracting = next(name for name in a.dim_names if name in b.dim_names)
    partial = set(a.axes_of(contracting)) | set(b.axes_of(contracting))
    scatter = [d.name for d in c.dims if set(d.axes) & partial]
    plan = sh.plan_matmul(a, b, mesh, contracting=contracting, gather=gather,
                          reduce="reduce_scatter" if scatter else "all_reduce",
                          scatter_dim=scatter[0] if scatter else None,
                          shapes=MATMUL_SHAPES, dtype="f32")
    labels = [_label(p.kind, p.axes) for p in plan.collectives]
    moved = 0.0
    for p in plan.collectives:
        if p.nbytes is None:
            raise RuntimeError("plan_matmul was given shapes, so it must size every collective")
        moved += _moved(p.kind, p.nbytes, p.group_size)
    result = sh.parse_sharding(plan.output)
    for dim in result.dims:
        dropped = tuple(ax for ax in dim.axes if ax not in c.axes_of(dim.name))
        if dropped:
            labels.append(_label("AllGather", dropped))
            result = result.with_axes(dim.name, [ax for ax in dim.axes if ax not in dropped])
            shape = [MATMUL_SHAPES[n] for n in result.dim_names]
            moved += _moved("AllGather", sh.bytes_per_device(shape, "f32", result, mesh),
                            mesh.size_of(dropped))
    return moved, sorted(labels)


def predicted_matmul_kinds(lhs: str, rhs: str, out: str, mesh_sizes: dict[str, int]
                           ) -> list[str]:
    """The collectives :func:`scalebook.sharding.plan_matmul` predicts, as sorted labels.

    The reduction follows the requested output: ReduceScatter onto a dim the output splits
    over the contracting dim's axes, else AllReduce. The plan's output is then brought to
    ``out``: an axis ``out`` drops from a dim costs an AllGather over it; an axis ``out`` adds
    is a free local slice. Like a compiler, it tries a few equivalent plans and keeps the one
    whose ring collectives move the fewest bytes per device (f32, :data:`MATMUL_SHAPES`):
    AllGathering either operand where the planner must gather one (``gather="lhs"/"rhs"``),
    and, where only one operand splits J, slicing the other's J the same way (free) and
    reducing partial sums instead of gathering. Ties keep the planner's default.
    """
    from scalebook import sharding as sh

    mesh = sh.Mesh(mesh_sizes)
    a, b, c = (sh.parse_sharding(s) for s in (lhs, rhs, out))
    contracting = next(name for name in a.dim_names if name in b.dim_names)
    operands = [(a, b)]
    for mine, other, first in ((a, b, True), (b, a, False)):
        axes = other.axes_of(contracting)
        if axes and not mine.axes_of(contracting) and not set(axes) & set(mine.sharded_axes):
            sliced = mine.with_axes(contracting, axes)
            operands.append((sliced, other) if first else (other, sliced))
    options = [_planned(x, y, c, mesh, gather) for x, y in operands for gather in ("rhs", "lhs")]
    return min(options, key=lambda option: option[0])[1]


def _partition_spec(sharding: str) -> Any:
    from jax.sharding import PartitionSpec

    from scalebook.sharding import parse_sharding

    entries = []
    for dim in parse_sharding(sharding).dims:
        entries.append(None if not dim.axes else dim.axes[0] if len(dim.axes) == 1 else dim.axes)
    return PartitionSpec(*entries)


def compiled_matmul_kinds(lhs: str, rhs: str, out: str, mesh: Any) -> list[str]:
    """Compile ``jnp.dot`` with these shardings (f32, :data:`MATMUL_SHAPES`) on ``mesh``
    (a jax Mesh) and list XLA's collectives as sorted labels such as "AllGather(X)"."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from scalebook.sharding import parse_sharding

    _check_mesh(mesh)
    specs = [NamedSharding(mesh, _partition_spec(s)) for s in (lhs, rhs, out)]
    shapes = [tuple(MATMUL_SHAPES[n] for n in parse_sharding(s).dim_names) for s in (lhs, rhs)]
    args = [jax.ShapeDtypeStruct(shape, jnp.float32, sharding=spec)
            for shape, spec in zip(shapes, specs)]
    found = compiled_collectives(jnp.dot, *args, mesh=mesh, in_shardings=tuple(specs[:2]),
                                 out_shardings=specs[2])
    return sorted(_label(c.kind, c.axes) for c in found)


def _case(lhs: str, rhs: str, out: str, xla: Sequence[str], note: str) -> MatmulCase:
    return MatmulCase(lhs, rhs, out, tuple(sorted(xla)), note)


_AG, _AR, _CP = "AllGather", "AllReduce", "CollectivePermute"

MATMUL_CASES: tuple[MatmulCase, ...] = (
    _case("A[I_X, J]", "B[J, K_Y]", "C[I_X, K_Y]", [],
          "case 1: J is not split, so each device multiplies its blocks; no communication"),
    _case("A[I_X, J]", "B[J, K_Y]", "C[I, K]", [f"{_AG}(X)", f"{_AG}(Y)"],
          "case 1, then the replicated output is gathered over X and over Y"),
    _case("A[I_Y, J]", "B[J, K_X]", "C[I_Y, K_X]", [],
          "case 1 with the axes swapped; no communication"),
    _case("A[I, J]", "B[J, K]", "C[I_X, K_Y]", [],
          "nothing split on the way in: each device computes only its own block of C"),
    _case("A[I, J_X]", "B[J, K]", "C[I, K]", [f"{_AG}(X)"],
          "case 2: AllGather A's J over X, then multiply"),
    _case("A[I, J_Y]", "B[J, K]", "C[I, K]", [f"{_AG}(Y)"],
          "case 2 over the 4-wide axis Y"),
    _case("A[I_X, J_Y]", "B[J, K]", "C[I_X, K]", [f"{_AG}(Y)"],
          "case 2: AllGather A's J over Y; I stays split over X"),
    _case("A[I_X, J]", "B[J_Y, K]", "C[I_X, K]", [f"{_AR}(Y)"],
          "case 2 the cheap way: slice A's J over Y for free and AllReduce C (2 KiB) "
          "instead of gathering B (8 KiB)"),
    _case("A[I, J_X]", "B[J_X, K]", "C[I, K]", [f"{_AR}(X)"],
          "case 3: partial sums over X, then AllReduce"),
    _case("A[I, J_Y]", "B[J_Y, K]", "C[I, K]", [f"{_AR}(Y)"],
          "case 3 over Y"),
    _case("A[I, J_Y]", "B[J_Y, K]", "C[I, K_Y]", [f"{_AR}(Y)"],
          "differs: XLA on CPU AllReduces and keeps its slice of K; it forms no ReduceScatter"),
    _case("A[I, J_X]", "B[J_X, K]", "C[I_X, K]", [f"{_AR}(X)", f"{_CP}(XY)"],
          "differs: XLA slices I over half of Y first (halving the AllReduce), then a "
          "CollectivePermute moves each block to the device that C[I_X, K] puts it on"),
    _case("A[I_X, J_Y]", "B[J_Y, K]", "C[I_X, K]", [f"{_AR}(Y)"],
          "case 3 over Y with I split over X"),
    _case("A[I_X, J_Y]", "B[J_Y, K]", "C[I_X, K_Y]", [f"{_AR}(Y)"],
          "differs: AllReduce then a local slice of K, where the planner ReduceScatters"),
    _case("A[I, J_XY]", "B[J_XY, K]", "C[I, K]", [f"{_AR}(XY)"],
          "case 3 over both axes: one AllReduce across all 8 devices"),
    _case("A[I_X, J]", "B[J, K_X]", "C[I_X, K]", [f"{_AG}(Y)", f"{_CP}(XY)"],
          "differs (case 4): the planner gathers A, then the output, over X (3 KiB moved); "
          "XLA reshuffles B's blocks with a CollectivePermute and gathers K over Y"),
    _case("A[I_Y, J]", "B[J, K_Y]", "C[I, K_Y]", [f"{_AG}(Y)"],
          "case 4: gather A's I over Y, which the output leaves unsplit anyway"),
    _case("A[I_X, J_Y]", "B[J_Y, K_X]", "C[I_X, K]", [f"{_AG}(X)", f"{_AR}(Y)"],
          "cases 4 and 3: gather B's K over X, AllReduce the partial sums over Y"),
    _case("A[I, J_X]", "B[J_Y, K]", "C[I, K]", [f"{_AG}(X)", f"{_AG}(Y)"],
          "differs (J split over different axes): the planner gathers A's J, re-slices it "
          "over Y and AllReduces; XLA gathers both operands (7 KiB moved either way)"),
    _case("A[I_X, J_Y]", "B[J_Y, K]", "C[I, K]", [f"{_AG}(X)", f"{_AR}(Y)"],
          "case 3, then the output is gathered over X"),
)
"""``A[I, J] ·_J B[J, K]`` on a 2x4 mesh (X=2, Y=4): what XLA emitted, and why it differs."""


def planner_vs_compiler(cases: Iterable[MatmulCase] = MATMUL_CASES, mesh: Any = None
                        ) -> list[Comparison]:
    """For each case, the planner's collectives (:func:`predicted_matmul_kinds`) against those
    XLA compiles (:func:`compiled_matmul_kinds`) on ``mesh`` (default: a 2x4 Auto mesh with
    axes X, Y over the first 8 devices; needs 8, e.g. ``--xla_force_host_platform_device_count=8``).
    """
    import jax
    from jax.sharding import AxisType

    if mesh is None:
        if len(jax.devices()) < 8:
            raise ValueError(f"planner_vs_compiler needs 8 devices, JAX sees {len(jax.devices())}; "
                             "set XLA_FLAGS=--xla_force_host_platform_device_count=8")
        mesh = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)
    _check_mesh(mesh)
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))
    rows = []
    for case in cases:
        if not isinstance(case, MatmulCase):
            raise ValueError(f"cases must be MatmulCase items, got {type(case).__name__}")
        predicted = predicted_matmul_kinds(case.lhs, case.rhs, case.out, sizes)
        compiled = compiled_matmul_kinds(case.lhs, case.rhs, case.out, mesh)
        rows.append(Comparison(case.lhs, case.rhs, case.out, predicted, compiled,
                               predicted == compiled, case.note))
    return rows

"""Who holds what: a sharded array on a mesh, and the four cases of a sharded matmul, drawn from
:mod:`scalebook.sharding`'s own objects (a :class:`~scalebook.sharding.Mesh`, a sharding in the
book's notation, a :class:`~scalebook.sharding.MatmulPlan`).

- :func:`array_on_mesh`: a 2-D array cut into the blocks its sharding makes, each block in its
  own colour, and the mesh's devices coloured by the block they hold;
- :func:`matmul_cases`: one row per case, the two operands as block diagrams (cut lines along
  the sharded dims), the local result and the collectives the planner adds.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

from matplotlib.patches import Rectangle

from ..picture import Picture
from ..sharding import Mesh, Sharding, parse_sharding, plan_matmul
from ._draw import GREY, new_figure, shard_colour, words_list


def block_index(sharding: Sharding, mesh: Mesh, device: Mapping[str, int]) -> tuple[int, ...]:
    """The block of each dim that ``device`` (its coordinate on each mesh axis) holds: for a dim
    split over axes (a, b) the index is ``device[a] * size(b) + device[b]`` (the first axis the
    major one, as the book's notation and JAX order them); 0 for a replicated dim."""
    index = []
    for dim in sharding.dims:
        i = 0
        for axis in dim.axes:
            i = i * mesh[axis] + device[axis]
        index.append(i)
    return tuple(index)


def devices(mesh: Mesh) -> list[dict[str, int]]:
    """Every device of ``mesh`` as its coordinates, the last axis fastest."""
    names = mesh.axis_names
    return [dict(zip(names, coords))
            for coords in itertools.product(*(range(mesh[a]) for a in names))]


def array_on_mesh(spec: str, mesh: Mesh) -> Picture:
    """A 2-D array in the book's notation (``"A[I_X, J_Y]"``) on a 2-axis ``mesh``: left, the
    array cut into its blocks, each block labelled with how many devices hold it; right, the
    mesh, each device coloured by (and labelled with) the block it holds."""
    sharding = parse_sharding(spec)
    if sharding.rank != 2 or len(mesh.axis_names) != 2:
        raise ValueError("array_on_mesh draws a 2-D array on a 2-axis mesh")
    counts = [mesh.size_of(dim.axes) for dim in sharding.dims]
    holders: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for device in devices(mesh):
        holders.setdefault(block_index(sharding, mesh, device), []).append(
            tuple(device.values()))
    figure = new_figure(8.0, 3.6)
    left, right = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    rows, cols = counts
    for r in range(rows):
        for c in range(cols):
            number = r * cols + c
            left.add_patch(Rectangle((c / cols, 1 - (r + 1) / rows), 1 / cols, 1 / rows,
                                     facecolor=shard_colour(number), edgecolor="white", lw=1.5))
            if rows * cols <= 32:
                left.text((c + 0.5) / cols, 1 - (r + 0.5) / rows,
                          f"{r},{c}\n×{len(holders[(r, c)])}", ha="center", va="center",
                          fontsize=7 if rows * cols > 8 else 9, color="white")
    names = sharding.dim_names
    left.set(xlim=(0, 1), ylim=(0, 1), xticks=[], yticks=[],
             xlabel=f"{sharding.dims[1]}: {cols} block{'s' * (cols > 1)}",
             ylabel=f"{sharding.dims[0]}: {rows} block{'s' * (rows > 1)}")
    left.set_title(f"{sharding}: its blocks (copies)", fontsize=9)
    ax0, ax1 = mesh.axis_names
    for device in devices(mesh):
        x, y = device[ax0], device[ax1]
        block = block_index(sharding, mesh, device)
        number = block[0] * cols + block[1]
        right.add_patch(Rectangle((y, mesh[ax0] - 1 - x), 0.9, 0.9,
                                  facecolor=shard_colour(number), edgecolor="black", lw=0.5))
        right.text(y + 0.45, mesh[ax0] - 1 - x + 0.45, f"{block[0]},{block[1]}", ha="center",
                   va="center", fontsize=8, color="white")
    right.set(xlim=(-0.1, mesh[ax1]), ylim=(-0.1, mesh[ax0]), xticks=[], yticks=[],
              xlabel=f"mesh axis {ax1} ({mesh[ax1]})", ylabel=f"mesh axis {ax0} ({mesh[ax0]})")
    right.set_aspect("equal")
    right.set_title(f"{mesh}: the block each device holds", fontsize=9)
    copies = mesh.n_devices // (rows * cols)
    replicated = [a for a in mesh.axis_names if a not in sharding.sharded_axes]
    split = "; ".join(f"{dim} in {n} block{'s' * (n > 1)}" + (f" over {''.join(dim.axes)}"
                                                            if dim.axes else " (not split)")
                      for dim, n in zip(sharding.dims, counts))
    pairs = ", ".join(f"({', '.join(map(str, d.values()))}) holds "
                      f"({', '.join(map(str, block_index(sharding, mesh, d)))})"
                      for d in devices(mesh))
    alt = (f"Sharding diagram of {sharding} on {mesh} ({mesh.n_devices} devices): {split}, so "
           f"the array is {rows * cols} block{'s' * (rows * cols > 1)}, each stored {copies} "
           f"time{'s' * (copies > 1)}"
           + (f" (replicated over {words_list(replicated)})" if replicated else "")
           + f", and each device holds 1/{rows * cols} of it. Device ({ax0}, {ax1}) holds block "
           f"({names[0]}, {names[1]}): {pairs}.")
    return Picture(figure, alt)


def _operand(ax, sharding: Sharding, mesh: Mesh, x0: float, width: float, height: float,
             colour: str) -> None:
    """A 2-D operand as a rectangle with its cut lines (one per block boundary)."""
    rows, cols = (mesh.size_of(dim.axes) for dim in sharding.dims)
    ax.add_patch(Rectangle((x0, 0), width, height, facecolor=colour, alpha=0.35,
                           edgecolor="black", lw=1))
    for r in range(1, rows):
        ax.plot([x0, x0 + width], [height * r / rows] * 2, color="black", lw=0.6)
    for c in range(1, cols):
        ax.plot([x0 + width * c / cols] * 2, [0, height], color="black", lw=0.6)
    ax.text(x0 + width / 2, -0.12, str(sharding), ha="center", va="top", fontsize=8)


def matmul_cases(cases: Mapping[int, tuple[str, str]], mesh: Mesh, *,
                 contracting: str = "J") -> Picture:
    """One row per case (``{case: (lhs, rhs)}``): the operands cut into their blocks, then what
    the planner (:func:`plan_matmul`) does: the AllGathers before, the local matmul's result,
    the AllReduce / ReduceScatter after, and the output."""
    plans = {case: plan_matmul(lhs, rhs, mesh, contracting=contracting)
             for case, (lhs, rhs) in cases.items()}
    figure = new_figure(8.0, 1.25 * len(plans) + 0.4)
    described = []
    for row, (case, plan) in enumerate(plans.items()):
        ax = figure.add_subplot(len(plans), 1, row + 1)
        _operand(ax, parse_sharding(plan.lhs), mesh, 0.0, 0.9, 0.8, shard_colour(0))
        ax.text(1.05, 0.4, "·", fontsize=16, ha="center", va="center")
        _operand(ax, parse_sharding(plan.rhs), mesh, 1.2, 0.9, 0.8, shard_colour(1))
        before = [c for c in plan.collectives if c.kind == "AllGather"]
        after = [c for c in plan.collectives if c.kind != "AllGather"]
        steps = (" → ".join(f"{c.kind}_{''.join(c.axes)}({c.operand})" for c in before)
                 + (" → " if before else "") + f"local: {plan.local_result}"
                 + "".join(f" → {c.kind}_{''.join(c.axes)}" for c in after)
                 + f" → {plan.output}")
        ax.text(2.3, 0.4, steps, fontsize=8, va="center", ha="left")
        ax.text(-0.08, 0.4, f"case {plan.case}", fontsize=9, ha="right", va="center",
                fontweight="bold")
        ax.set(xlim=(-0.6, 6.2), ylim=(-0.35, 0.9))
        ax.axis("off")
        comms = (words_list([f"{c.kind} over {''.join(c.axes)}" for c in plan.collectives])
                 or "no communication")
        described.append(f"case {plan.case}, {plan.lhs} times {plan.rhs}: {comms}, local "
                         f"result {plan.local_result}, output {plan.output}")
    figure.suptitle(f"The four cases on {mesh}, contracting over {contracting}", fontsize=10)
    alt = ("Block diagrams of sharded matmuls, one row per case, each operand drawn cut into "
           f"the blocks its sharding makes on {mesh}, then the planner's steps: "
           + "; ".join(described) + ".")
    return Picture(figure, alt)


def operand_grid_labels(spec: str, mesh: Mesh) -> Sequence[str]:
    """The label of each device's block, row by row of the mesh ("0,1"), for tests and text."""
    sharding = parse_sharding(spec)
    return [",".join(map(str, block_index(sharding, mesh, d))) for d in devices(mesh)]

"""A sharded-matmul explorer: ``A[B, D] ·_D W[D, F]`` on a mesh of up to three axes.

Pick a chip, a mesh ("X=2, Y=4"), the sizes B, D, F and the sharding of each operand and of
the output in the book's notation ("A[B_X, D_Y]"); the explorer shows the local shapes and
bytes per chip, which of the four cases applies, each collective with its time, the compute
time, and whether the step is compute- or communication-bound. Beside it, the time of the
collective against its message size on one mesh axis, with its latency floor and bandwidth
line: the latency- and bandwidth-bound regimes.

The front end here is the controls; the state, chart and summary are
:mod:`scalebook.live.sharded_matmul`'s, drawn by :class:`~scalebook.widgets.explorer.Explorer`.
Choosing a ``layout`` fills the mesh and sharding fields; editing one of them switches
``layout`` to "custom" (the live view's ``linked_controls``, as on the book's page).
"""

from __future__ import annotations

import ipywidgets as widgets

from ..hardware import canonical_dtype, chip_names, get_chip
from ..live.sharded_matmul import (CUSTOM, DEFAULT_LAYOUT, DTYPES, FIELDS, LAYOUTS, MESH_AXES,
                                   Wraparound, sharded_matmul_state)
from .controls import log2_slider
from .explorer import Explorer

__all__ = ["sharded_matmul_explorer"]


def _text(description: str, value: str, width: str) -> widgets.Text:
    return widgets.Text(value=value, description=description, continuous_update=False,
                        style={"description_width": "initial"},
                        layout=widgets.Layout(width=width))


def sharded_matmul_explorer(chip: str = "TPU v5e", *, layout: str = DEFAULT_LAYOUT,
                            mesh: str | None = None, lhs: str | None = None,
                            rhs: str | None = None, out: str | None = None,
                            B: float = 4096, D: float = 8192, F: float = 16384,
                            dtype: str = "bf16", wraparound: Wraparound = "auto",
                            axis: str = "auto", dpi: float = 100) -> Explorer:
    """An explorer of ``A[B, D] ·_D W[D, F]`` on a mesh.

    ``layout`` picks one of :data:`LAYOUTS` (mesh and shardings); ``mesh``, ``lhs``, ``rhs``,
    ``out`` override its fields. The default, data × tensor parallel on a 2 × 4 mesh of v5e,
    is communication-bound at D = 8,192 and compute-bound at D = 32,768 (its 4-chip axis is a
    line, as a v5e slice that small is built).

    Controls (``w.controls``): ``layout`` (a :data:`LAYOUTS` name or "custom"), ``chip``,
    ``dtype``, ``wraparound`` ("auto", the default: each axis as the chip's slices are built;
    True, rings; False, lines), ``mesh``, ``lhs``, ``rhs``, ``out``
    (text fields, applied on Enter), ``B``, ``D``, ``F`` (log2 sliders: 8–1,048,576,
    128–65,536, 128–131,072) and ``axis`` ("auto", X, Y, Z: the plot's mesh axis).
    ``w.state`` is a :class:`~scalebook.live.sharded_matmul.ShardedMatmulState`. A rejected
    input leaves ``w.error`` (one line, shown under
    the fields) and keeps the last good state and picture. Raises ``ValueError`` when the
    initial inputs are rejected.
    """
    if layout not in LAYOUTS and layout != CUSTOM:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}, {CUSTOM}")
    fields = dict(zip(FIELDS, LAYOUTS.get(layout, LAYOUTS[DEFAULT_LAYOUT])))
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
            options=[("as built (the chip's slices)", "auto"), ("rings (wraparound)", True),
                     ("lines (no wraparound)", False)],
            value=wraparound, description="ICI axes", layout=widgets.Layout(width="21%")),
        "mesh": _text("mesh", fields["mesh"], "22%"),
        "lhs": _text("lhs", fields["lhs"], "26%"),
        "rhs": _text("rhs", fields["rhs"], "26%"),
        "out": _text("out", fields["out"], "26%"),
        "B": log2_slider("B", B, 3, 20, 1),
        "D": log2_slider("D", D, 7, 16, 1),
        "F": log2_slider("F", F, 7, 17, 1),
        "axis": widgets.Dropdown(options=[("plot axis: auto", "auto"),
                                          *[(f"plot axis: {a}", a) for a in MESH_AXES]],
                                 value=axis, layout=widgets.Layout(width="18%")),
    }
    for name in ("B", "D", "F"):
        controls[name].layout.width = "27%"
    return Explorer("scalebook.live.sharded_matmul", controls, state=sharded_matmul_state,
                    dpi=dpi,
                    layout_rows=[("layout", "chip", "dtype", "wraparound"),
                                 ("mesh", "lhs", "rhs", "out"), ("B", "D", "F", "axis")])

"""The sharded-matmul explorer on the book's static page (scalebook.live.sharded_matmul): what
the page shows for a reader's move equals what the Jupyter widget shows after the same move,
the layout and the free-text fields stay linked as in Jupyter, a rejected input comes back as
an error, and the view gives the same JSON with NumPy missing (as in the browser)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalebook.live import render
from scalebook.live import sharded_matmul as live
from scalebook.widgets import figure as F
from scalebook.widgets.sharded_matmul import sharded_matmul_explorer

MODULE = "scalebook.live.sharded_matmul"
ROOT = Path(__file__).resolve().parents[1]

#: A reader's moves from the default explorer: (control, new value), in order. The page sends
#: the values after the move and the name of the control moved.
MOVES = {
    "default": [],
    "slider": [("D", 16384.0)],
    "layout fills the fields": [("layout", "FSDP: gather the weights (case 2)")],
    "typed sharding, custom": [("lhs", "A[B_X, D]")],
    "typed sharding, back to a layout": [("lhs", "A[B_X, D]"), ("lhs", "A[B_X, D_Y]")],
    "typed mesh, three axes": [("mesh", "X=2, Y=2, Z=2"), ("out", "Out[B_Z, F_XY]"),
                               ("rhs", "W[D_X, F_YZ]"), ("lhs", "A[B_XY, D_Z]")],
    "gpu, lines, plot axis": [("chip", "H100"), ("wraparound", False), ("axis", "X")],
    "one-device axis": [("mesh", "X=1, Y=4"), ("axis", "X")],
    "reduce-scatter output, int8": [("layout", "tensor parallel, ReduceScatter (case 3)"),
                                   ("chip", "TPU v5p"), ("dtype", "int8"), ("B", 256.0)],
    "unreachable output": [("out", "Out[B_YX, F]")],
}


def _reader(moves: list[tuple[str, object]]):
    """Play ``moves`` on a Jupyter explorer and, in step, on the page's view: returns the
    explorer and the view's last answer (with the values the page holds after it)."""
    widget = sharded_matmul_explorer()
    values, out = widget.values(), render(MODULE, widget.values())
    for name, value in moves:
        widget.controls[name].value = value  # Jupyter: link_controls, then update
        values = {**values, name: value}
        out = render(MODULE, values, name)  # the page: the view, then the controls it sets
        values = {**values, **out.get("controls", {})}
    return widget, values, out


def _xy(artist) -> tuple:
    return tuple(zip(*(list(map(float, d)) for d in artist.get_data())))


@pytest.mark.parametrize("case", MOVES)
def test_the_page_shows_what_jupyter_shows_after_the_same_moves(case):
    widget, values, out = _reader(MOVES[case])
    assert widget.error == "" and "error" not in out
    assert values == widget.values()  # the fields and the layout linked the same way
    assert out["summary_html"] == widget.summary.value
    left, right = out["chart"]["panels"]
    # the figure is drawn from this very chart (scalebook.widgets.figure), read back here
    assert widget.chart == out["chart"]
    assert F.read_back(widget.drawing, out["chart"]) == F.chart_data(out["chart"])
    labelled = [s["label"] for s in left["series"] if s.get("label")]
    legend = widget.figure.axes[0].get_legend()
    assert labelled == [t.get_text() for t in legend.get_texts()]
    rows = len(right["y"]["categories"])  # Jupyter's rows, top to bottom
    assert widget.figure.axes[1].get_ylim() == pytest.approx((rows - 0.5, -0.5))
    ax_curve, ax_bars = widget.figure.axes
    for axis, ticks in ((ax_curve.xaxis, left["x"]["ticks"]), (ax_curve.yaxis, left["y"]["ticks"]),
                        (ax_bars.xaxis, right["x"]["ticks"])):
        assert [list(t) for t in zip(axis.get_ticklocs(), (label.get_text() for label in
                                     axis.get_ticklabels()))] == ticks


def test_the_default_picture_holds_the_hand_numbers():
    """The default step, as the page draws it: an AllReduce over Y of 4 v5e as a v5e slice
    is built, a line (no wraparound short of 16 chips): latency 2·3 hops·1 µs = 6 µs,
    crossover 6 µs · 45 GB/s / (2 · 3/4) = 180 kB."""
    out = live.view({**sharded_matmul_explorer().values()})
    left, right = out["chart"]["panels"]
    assert left["title"] == ("AllReduce over Y (4 chips, line): latency 6 µs, crossover 180 kB")
    (curve,) = [s for s in left["series"] if s.get("label") == "AllReduce over Y"]
    assert len(curve["points"]) == 91 and curve["points"][0][0] == 100.0
    assert curve["points"][-1][0] == 1e11
    assert [x for x, _ in right["x"]["ticks"]] == [1e-7, 1e-5, 1e-3, 1e-1, 10.0]
    assert right["title"] == "communication-bound: compute / comms = 0.31"
    assert right["series"][0]["texts"][0].startswith("local matmul: ")
    assert [p["width"] for p in (left, right)] == [0.6, 0.4]
    json.dumps(out, allow_nan=False)  # valid JSON: nothing infinite


def test_a_plot_axis_the_new_mesh_lacks_goes_back_to_auto():
    """Plot axis Y, then a layout on a one-axis mesh: the axis resets, so the next moves are
    not all refused (they were, until the reader found the axis control)."""
    values = {**sharded_matmul_explorer().values(), "axis": "Y"}
    fsdp = "FSDP: gather the weights (case 2)"
    assert live.linked_controls({**values, "layout": fsdp}, "layout")["axis"] == "auto"
    assert "axis" not in live.linked_controls({**values, "mesh": "X=2, Y=4"}, "mesh")
    out = live.view({**values, "layout": fsdp}, "layout")
    assert "error" not in out and out["controls"]["axis"] == "auto"


def test_layout_and_fields_stay_linked():
    values = sharded_matmul_explorer().values()
    fsdp = "FSDP: gather the weights (case 2)"
    assert live.linked_controls({**values, "layout": fsdp}, "layout") == {
        "mesh": "X=4", "lhs": "A[B_X, D]", "rhs": "W[D_X, F]"}  # out is already Out[B_X, F]
    assert live.linked_controls({**values, "layout": "custom"}, "layout") == {}
    assert live.linked_controls({**values, "rhs": "W[D, F]"}, "rhs") == {"layout": "custom"}
    assert live.linked_controls({**values, "B": 64.0}, "B") == {}
    assert live.linked_controls(values, None) == {}
    out = live.view({**values, "layout": fsdp}, "layout")
    assert out["controls"] == live.linked_controls({**values, "layout": fsdp}, "layout")
    assert "Case 2" in out["summary_html"]


@pytest.mark.parametrize("name, value, message", [
    ("mesh", "X=2; Y=4", "mesh: cannot read 'X=2; Y=4'"),
    ("mesh", "X=3, Y=4", "does not divide evenly"),
    ("lhs", "A[B_X, D_Y", "unbalanced brackets"),
    ("out", "Out[B_Z, F]", "mesh axis Z, which the mesh (X=2, Y=4) does not have"),
    ("B", 4095.5, "B must be a whole number"),
    ("axis", "Z", "plot axis Z is not in the mesh"),
    ("chip", "V100", "V100 has no bf16"),
])
def test_bad_input_is_the_jupyter_error(name, value, message):
    widget = sharded_matmul_explorer()
    values = {**widget.values(), name: value}
    out = render(MODULE, values, name)
    widget.controls[name].value = value
    assert message in out["error"] and out["error"] == widget.error
    assert set(out) <= {"error", "controls"}


def test_a_layout_on_a_chip_without_the_dtype_still_fills_the_fields():
    """Jupyter fills the fields, then rejects the state; the page must end with the same
    fields, so the view returns them with the error."""
    widget = sharded_matmul_explorer("V100", dtype="fp16")
    widget.controls["dtype"].value = "bf16"
    widget.controls["layout"].value = "data parallel (case 1)"
    values = {**widget.values(), "layout": "data parallel (case 1)", "mesh": "X=2, Y=4",
              "lhs": "A[B_X, D_Y]", "rhs": "W[D_Y, F]"}
    out = render(MODULE, values, "layout")
    assert out["error"] == widget.error == "V100 has no bf16 FLOPs/s figure; it has: fp16"
    assert {**values, **out["controls"]} == widget.values()


_NO_NUMPY = """
import json, sys
if sys.argv[1] == "blocked":
    sys.modules["numpy"] = None
from scalebook.live import render
print(json.dumps([render("scalebook.live.sharded_matmul", v, c)
                  for v, c in json.loads(sys.stdin.read())]))
"""


def test_the_view_is_the_same_without_numpy():
    """The browser has no NumPy: every answer, errors included, must be the same JSON."""
    base = sharded_matmul_explorer().values()
    calls = [(base, None)] + [({**base, name: value}, name) for name, value in (
        ("chip", "H100"), ("wraparound", "auto"), ("mesh", "X=2, Y=2, Z=2"), ("B", 8.0),
        ("layout", "B and F on one axis (case 4)"), ("out", "Out[B, F] {U_Y}"),
        ("axis", "X"), ("mesh", "X=0"), ("B", float("nan")))]
    calls += [({**base, "out": "Out[B_Z, F_XY]", "rhs": "W[D_X, F_YZ]", "lhs": "A[B_XY, D_Z]",
                "mesh": "X=2, Y=2, Z=2"}, "lhs")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = {mode: subprocess.run([sys.executable, "-c", _NO_NUMPY, mode], input=json.dumps(
        calls), capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        for mode in ("numpy", "blocked")}
    for mode, run in runs.items():
        assert run.returncode == 0, f"{mode}: {run.stderr[-3000:]}"
    assert runs["numpy"].stdout == runs["blocked"].stdout
    answers = json.loads(runs["blocked"].stdout)
    assert sum("error" in a for a in answers) == 2 and "chart" in answers[0]

"""One renderer for every widget (scalebook.widgets.figure): the Jupyter figure shows exactly
the chart description the live view returns, the one the book's page draws, read back from the
matplotlib artists after a first drawing and after moves that take the fast path."""

from __future__ import annotations

import pytest

from scalebook.live import render
from scalebook.widgets import chip_comparison, roofline_explorer
from scalebook.widgets import figure as F
from scalebook.widgets.calculator import transformer_calculator
from scalebook.widgets.layout_planner import layout_planner
from scalebook.widgets.moe import moe_explorer
from scalebook.widgets.serving import serving_explorer
from scalebook.widgets.sharded_matmul import sharded_matmul_explorer

#: Each widget, and moves a reader makes: (control, value), in turn.
MOVES = {
    roofline_explorer: [("B", 1024.0), ("compare", "H100"), ("w_dtype", "int8")],
    chip_comparison: [("metric", "hbm_bandwidth"), ("log", True),
                      ("chips", ("TPU v5e", "TPU v5p")), ("metric", "flops:fp4")],
    transformer_calculator: [("mfu", 0.5), ("seq_len", 131072), ("preset", "LLaMA-3 8B")],
    serving_explorer: [("batch", 64), ("chip", "H200"), ("preset", "LLaMA-3 8B")],
    layout_planner: [("tp", 4), ("fsdp", 256), ("chip", "TPU v5e"), ("best", None)],
    sharded_matmul_explorer: [("B", 2.0 ** 12), ("dtype", "int8"), ("axis", "X")],
    moe_explorer: [("top_k", 4), ("ep", 16), ("tokens_per_chip", 2.0 ** 14)],
}


def _move(w, name, value) -> None:
    if name in w.buttons:
        w.buttons[name].click()
    else:
        w.controls[name].value = value


@pytest.mark.parametrize("make", list(MOVES), ids=lambda f: f.__name__)
def test_the_figure_is_the_live_views_chart(make):
    w = make(dpi=40)
    assert F.read_back(w.drawing, w.chart) == F.chart_data(w.chart)
    fast = 0
    for name, value in MOVES[make]:
        drawing = w.drawing
        _move(w, name, value)
        assert w.error == "", (name, w.error)
        # the same door the page goes through, with the same values, gives this very chart
        assert w.view == render(w.live, w.values(), None) or name in ("preset", "best")
        assert F.read_back(w.drawing, w.chart) == F.chart_data(w.chart), name
        fast += w.drawing is drawing
    # at least one move moved the artists in place (the fast path); the MoE chart's time axis
    # follows its data, so each of its moves draws anew
    assert fast >= 1 or make is moe_explorer


def test_a_changed_frame_is_drawn_anew_and_equal_to_a_fresh_figure():
    w = serving_explorer(dpi=40)
    drawing = w.drawing
    w.controls["n_chips"].value = 1
    w.controls["preset"].value = "LLaMA-3 8B"  # other decades on the time axis
    assert w.drawing is not drawing
    fresh = serving_explorer("LLaMA-3 8B", "H100", 1, dpi=40)
    assert w.png == fresh.png
    w.controls["batch"].value = 96  # the fast path, equal to a fresh drawing
    fresh = serving_explorer("LLaMA-3 8B", "H100", 1, batch=96, dpi=40)
    assert w.png == fresh.png


def test_long_figure_texts_wrap_inside_the_figure():
    w = layout_planner(tp=32, fsdp=16, dpi=40)
    flags = w.drawing.texts[1].get_text()
    assert "\n" in flags and all(len(line) <= w.chart["width"] / 6.6 for line in flags.splitlines())


def test_an_empty_panel_shows_its_note():
    w = chip_comparison(["TPU v5e", "H100"], metric="flops:fp4", dpi=40)
    note = w.drawing.notes[0]
    assert note.get_visible() and "fp4" in note.get_text() and "B200" in note.get_text()

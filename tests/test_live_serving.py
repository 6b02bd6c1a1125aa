"""The serving explorer's live view (scalebook.live.serving) is the Jupyter widget: for several
control states, the summary, every drawn series, the shaded no-fit batches, the critical-batch
line, the panel titles and the not-fit flag equal what the matplotlib figure shows; linked
controls move the same way; bad input comes back as an error. Also the chart features and the
control kind this widget added (chart areas, a second y axis, figure texts, panel widths; a
selection slider)."""

from __future__ import annotations

import json
import math

import pytest

from scalebook.live import chart, render
from scalebook.live.serving import BATCH_RANGE, MEMORY_KINDS, linked_controls, serving_series
from scalebook.live.serving import serving_state
from scalebook.widgets import figure as F
from scalebook.widgets.serving import serving_explorer

MODULE = "scalebook.live.serving"


@pytest.fixture(scope="module")
def explorer():
    return serving_explorer(dpi=30)


#: The control values of the book's cell, ``serving_explorer()``.
DEFAULTS = dict(preset="LLaMA-3 70B", chip="H100", n_chips=8, prompt_len=2048, gen_len=2048,
                batch=32, weight_dtype="bf16", cache_dtype="bf16", compute_dtype="bf16",
                kv_sharding="heads")


def _at(widget, changes: dict):
    """The widget at :data:`DEFAULTS` plus ``changes`` (set quietly, then one update)."""
    widget.set_quietly({**DEFAULTS, **changes})
    widget.update()
    return widget


def _xy(artist) -> list[list[float]]:
    return [[float(x), float(y)] for x, y in zip(*artist.get_data())]


def _series(panel: dict, label: str | None = None, kind: str | None = None) -> list[dict]:
    return [s for s in panel["series"] if (label is None or s.get("label") == label)
            and (kind is None or s["kind"] == kind)]


STATES = [
    {},  # the case study: fits, never compute-bound
    {"prompt_len": 128, "gen_len": 128, "batch": 512},  # a critical batch, compute-bound
    {"batch": 1024},  # the cache does not fit: shaded batches, the flag
    {"n_chips": 2, "batch": 16},  # just past the limit of 14
    {"preset": "LLaMA-3 405B", "batch": 1},  # the weights alone do not fit
    {"preset": "LLaMA-3 8B", "n_chips": 1, "chip": "TPU v5e", "cache_dtype": "int8",
     "batch": 96},  # other decades on every axis
    {"chip": "TPU v5e", "n_chips": 16, "batch": 8},  # past K = 8 chips the cache is copied
    {"weight_dtype": "fp8", "compute_dtype": "fp8", "batch": 256},
]


@pytest.mark.parametrize("changes", STATES)
def test_view_is_the_jupyter_widget(explorer, changes):
    widget = _at(explorer, changes)
    assert widget.error == ""
    out = render(MODULE, widget.values())
    assert "error" not in out and "controls" not in out
    json.dumps(out, allow_nan=False)  # what the browser receives: finite JSON
    assert out["summary_html"] == widget.summary.value
    # the Jupyter figure is drawn from this very chart (scalebook.widgets.figure): read back
    assert widget.chart == out["chart"]
    assert F.read_back(widget.drawing, out["chart"]) == F.chart_data(out["chart"])
    memory, step, curve = out["chart"]["panels"]
    heading, flag = out["chart"]["texts"]
    assert flag["colour"] == "#b00020" and flag["bold"]
    assert (flag["text"] != "") == (not widget.state.fits)
    for kind, colour in MEMORY_KINDS:  # the stacked bar: one rectangle per kind
        (rect,) = _series(memory, kind, "area")
        assert rect["colour"] == colour
    (time,) = _series(step, "time per token")
    (rate,) = _series(step, "tokens/s per chip")
    assert "axis" not in time and rate["axis"] == "y2"
    (critical,) = _series(step, "critical batch")
    assert (critical["points"] == []) == math.isinf(widget.state.critical_batch)
    # the shaded batches whose cache does not fit, the whole height of the time axis
    (shade,) = _series(step, "cache does not fit", "area")
    xs = sorted({x for x, _ in shade["points"]})
    assert {y for _, y in shade["points"]} == set(widget.figure.axes[1].get_ylim())
    assert (xs[-1] > xs[0]) == (widget.state.max_batch < BATCH_RANGE[1])
    # the axes: the figure's own ranges
    ax_m, ax_t, ax_r, ax_c = widget.figure.axes
    for spec, lim in ((memory["y"], ax_m.get_ylim()), (step["x"], ax_t.get_xlim()),
                      (step["y"], ax_t.get_ylim()), (step["y2"], ax_r.get_ylim()),
                      (curve["x"], ax_c.get_xlim()), (curve["y"], ax_c.get_ylim())):
        assert (spec["min"], spec["max"]) == pytest.approx(lim)


def test_not_fit_flag_shade_and_critical_batch_move_with_the_controls():
    """What the brief asks to see live, in numbers: the flag turns on one sequence past the
    limit, the shading starts at the largest batch that fits, B* appears at a short context."""
    base = dict(DEFAULTS, n_chips=2)
    fits, past = (render(MODULE, {**base, "batch": b}) for b in (12, 16))
    assert fits["chart"]["texts"][1]["text"] == ""
    assert past["chart"]["texts"][1]["text"] == (
        "the cache does not fit: at most 14 sequences of 4,096 tokens")
    for out in (fits, past):
        (shade,) = _series(out["chart"]["panels"][1], "cache does not fit")
        assert min(x for x, _ in shade["points"]) == 14.0
    long, short = (render(MODULE, {**DEFAULTS, "prompt_len": n,
                                   "gen_len": n}) for n in (2048, 128))
    # the weight matmuls' critical batch does not move with the context: the same line at both
    b_star = serving_state(prompt_len=128, gen_len=128).critical_batch
    assert math.isfinite(b_star) and b_star == serving_state().critical_batch
    for out in (long, short):
        assert [x for x, _ in _series(out["chart"]["panels"][1], "critical batch")[0]["points"]] \
            == [b_star, b_star]


def test_weights_the_matmuls_cannot_run_in_put_the_matmuls_back_to_bf16(explorer):
    values = dict(DEFAULTS, weight_dtype="int8",
                  compute_dtype="fp8")
    out = render(MODULE, values, "weight_dtype")
    assert out["controls"] == {"compute_dtype": "bf16"}
    widget = _at(explorer, {"weight_dtype": "fp8", "compute_dtype": "fp8"})
    widget.controls["weight_dtype"].value = "int8"  # the Jupyter widget does the same
    assert widget.controls["compute_dtype"].value == "bf16" and widget.error == ""
    assert out["summary_html"] == widget.summary.value
    # moving the matmuls themselves to a dtype the weights are not in is refused, not undone
    assert "only with int8 weights" in render(MODULE, {**values, "weight_dtype": "bf16",
                                                       "compute_dtype": "int8"},
                                              "compute_dtype")["error"]
    assert linked_controls(values, "cache_dtype") == {}
    assert linked_controls({"weight_dtype": "fp8", "compute_dtype": "fp8"}, "weight_dtype") == {}


@pytest.mark.parametrize("changes, message", [
    ({"n_chips": 0}, "chips must be a positive integer"),
    ({"n_chips": 16}, "tensor parallelism over 16 GPUs leaves the 8-GPU NVLink node"),
    ({"chip": "A100", "weight_dtype": "fp8"}, "A100 has no fp8 units"),
    ({"chip": "TPU v5e", "n_chips": 1024}, "a TPU v5e slice has at most 256 chips"),
    ({"compute_dtype": "int8"}, "matmuls run in int8 only with int8 weights"),
])
def test_bad_input_is_an_error_as_in_jupyter(explorer, changes, message):
    values = {**DEFAULTS, **changes}
    out = render(MODULE, values)
    assert set(out) == {"error"} and message in out["error"]
    widget = _at(explorer, changes)
    assert widget.error == out["error"]


def test_series_leave_out_what_is_not_finite():
    s = serving_series(serving_state())
    assert s["critical"] == pytest.approx(serving_state().critical_batch)
    json.dumps(s, allow_nan=False)


def test_static_html_offers_every_control(explorer):
    widget = _at(explorer, {})
    page = widget._repr_mimebundle_()["text/html"]
    assert "data-widget='scalebook.live.serving'" in page
    for name in widget.controls:
        assert f"name='{name}'" in page
    ladder = widget.controls["batch"].options
    index = [v for _, v in ladder].index(32)
    assert (f"<input type='range' name='batch' min='0' max='{len(ladder) - 1}' step='1' "
            f"value='{index}'><output>32</output>") in page
    assert ("<input type='number' name='n_chips' step='1' min='0' max='1000000000' "
            "inputmode='numeric' value='8'>") in page


# --------------------------------------------------------------------------- chart features


def test_selection_slider_becomes_a_range_over_its_options():
    import ipywidgets

    from scalebook.widgets.live_html import control_spec, controls_html

    slider = ipywidgets.SelectionSlider(options=[("1", 1), ("1,024", 1024), ("4,096", 4096)],
                                        value=1024, description="batch")
    spec = control_spec("batch", slider)
    assert spec == {"name": "batch", "label": "batch", "kind": "selectslider",
                    "options": [["1", 1], ["1,024", 1024], ["4,096", 4096]], "value": 1024}
    html = controls_html({"batch": spec}, [("batch",)])
    assert ("<input type='range' name='batch' min='0' max='2' step='1' value='1'>"
            "<output>1,024</output>") in html


def test_chart_areas_second_axis_texts_and_widths():
    area = chart.area([[1, 2], [3, 2], [3, 4]], "#b000201f", label="shade")
    assert area == {"kind": "area", "points": [[1.0, 2.0], [3.0, 2.0], [3.0, 4.0]],
                    "colour": "#b000201f", "label": "shade"}
    right = chart.line([[1, 10]], "#000000", y2=True)
    assert right["axis"] == "y2" and "axis" not in chart.line([[1, 10]], "#000000")
    assert chart.points([[1, 2]], "#000000", y2=True)["axis"] == "y2"
    x, y = chart.axis("log", 1, 10), chart.axis("linear", 0, 1)
    with pytest.raises(ValueError, match="needs the panel's y2 axis"):
        chart.panel("t", x, y, [right])
    with pytest.raises(ValueError, match="width share must be positive"):
        chart.panel("t", x, y, [area], width=0)
    panel = chart.panel("t", x, y, [area, right], y2=chart.axis("log", 1, 100), width=0.5)
    assert panel["y2"]["max"] == 100 and panel["width"] == 0.5
    assert chart.panel("t", x, y, [])["y2"] is None and chart.panel("t", x, y, [])["width"] == 1
    figure = chart.chart([panel], width=100, height=50,
                         texts=[chart.text("heading"), chart.text("flag", colour="#b00020",
                                                                  bold=True)])
    assert figure["texts"] == [{"text": "heading", "colour": "#000000", "bold": False},
                               {"text": "flag", "colour": "#b00020", "bold": True}]
    assert chart.chart([panel], width=100, height=50)["texts"] == []

"""The book's widgets, driven the way a reader drives them: set a control's value, then check
the computed state and the data of the matplotlib artists (drawn from the live view's chart by
scalebook.widgets.figure). No browser, no kernel."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest

from scalebook import get_chip, roofline
from scalebook.live.comparison import comparison_state
from scalebook.live.roofline import roofline_state
from scalebook.live.roofline import utilisation as _utilisation
from scalebook.widgets import (
    METRICS,
    chip_comparison,
    comparison_table,
    roofline_explorer,
    table_markdown,
)


def utilisation(state, point, batches):
    """The roofline utilisation at each batch of ``batches``."""
    return np.array([_utilisation(state, point, float(b)) for b in np.ravel(batches)])

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- roofline state

def test_roofline_state_matches_the_solver():
    state = roofline_state("TPU v5e", B=64, D=8192, F=4096)
    cost = roofline.matmul_cost(64, 8192, 4096)
    bounds = roofline.matmul_time(64, 8192, 4096, "TPU v5e")
    point = state.main
    assert state.flops == cost.flops and state.nbytes == cost.total_bytes
    assert state.intensity == pytest.approx(cost.intensity)
    assert point.t_math == pytest.approx(bounds.t_math)
    assert point.t_comms == pytest.approx(bounds.t_comms)
    assert point.lower == pytest.approx(bounds.lower) and point.upper == pytest.approx(bounds.upper)
    assert point.critical_intensity == pytest.approx(roofline.critical_intensity("TPU v5e"))
    assert point.critical_batch == pytest.approx(243.2, rel=1e-3)
    assert point.attainable_flops == pytest.approx(cost.intensity * get_chip("v5e").hbm_bandwidth)
    assert point.bound == "memory"


def test_large_batch_is_compute_bound_and_caps_at_peak():
    state = roofline_state("H100", B=4096, D=8192, F=8192)
    assert state.main.bound == "compute"
    assert state.main.attainable_flops == get_chip("H100").flops("bf16")


def test_int8_weights_halve_the_critical_batch_and_compute_in_bf16():
    bf16 = roofline_state("TPU v5e").main
    mixed = roofline_state("TPU v5e", x_dtype="bf16", w_dtype="int8").main
    assert mixed.compute_dtype == "bf16"
    assert mixed.critical_batch == pytest.approx(bf16.critical_batch / 2)
    all_int8 = roofline_state("TPU v5e", x_dtype="int8", w_dtype="int8").main
    assert all_int8.compute_dtype == "int8"
    assert all_int8.critical_batch == pytest.approx(bf16.critical_batch)


def test_per_example_weights_never_become_compute_bound():
    for B in (1, 256, 65536):
        state = roofline_state("TPU v5e", B=B, x_dtype="bf16", w_dtype="int8", per_example=True)
        assert state.intensity == pytest.approx(2.0, rel=0.01)
        assert math.isinf(state.main.critical_batch)
        assert state.main.bound == "memory"


def test_compare_adds_a_second_chip_and_ignores_a_duplicate():
    assert [p.chip.name for p in roofline_state("v5e", compare="H100").points] == ["TPU v5e", "H100"]
    assert [p.chip.name for p in roofline_state("v5e", compare="TPU v5e").points] == ["TPU v5e"]
    assert len(roofline_state("v5e", compare="").points) == 1


def test_utilisation_is_the_roofline_fraction():
    state = roofline_state("TPU v5e", D=8192, F=8192)
    batches = np.array([1.0, 64.0, 4096.0])
    cost = roofline.matmul_cost(batches, 8192, 8192)
    expected = np.minimum(1.0, cost.intensity * 8.1e11 / 1.97e14)
    np.testing.assert_allclose(utilisation(state, state.main, batches), expected)


@pytest.mark.parametrize("kwargs, message", [
    ({"chip": "TPU v9"}, "unknown chip 'TPU v9'"),
    ({"compare": "GTX 480"}, "unknown chip 'GTX 480'"),
    ({"chip": "V100"}, "V100 has no bf16"),
    ({"x_dtype": "fp12"}, "unknown dtype"),
    ({"B": 0}, "B must be at least 1"),
    ({"D": float("nan")}, "D must be at least 1"),
])
def test_bad_roofline_input_is_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        roofline_state(**kwargs)


# --------------------------------------------------------------------------- roofline widget

@pytest.fixture(scope="module")
def explorer():
    return roofline_explorer("TPU v5e", compare="H100", B=64, D=8192, F=8192)


def _xy(artist):
    return np.asarray(artist.get_xdata(), float), np.asarray(artist.get_ydata(), float)


def _roofline_artist(explorer, chip: int, what: str):
    """The artist of chip ``chip`` (0: the main one): ``roof``, ``ridge``, ``point`` on the
    left panel (after the intensity line), ``util``, ``critical``, ``now`` on the right (the
    critical line only where the batch is finite), in the view's chart order."""
    if what in ("roof", "ridge", "point"):
        return explorer.drawing.series[0][1 + 3 * chip + ("roof", "ridge", "point").index(what)][0]
    right = [s for s in explorer.drawing.series[1]]
    order = []
    for c, point in enumerate(explorer.state.points):
        order += [(c, "util")] + ([(c, "critical")] if not math.isinf(point.critical_batch)
                                  else []) + [(c, "now")]
    return right[order.index((chip, what))][0] if (chip, what) in order else None


def _legend(explorer) -> list[str]:
    return [t.get_text() for t in explorer.figure.axes[0].get_legend().get_texts()]


def test_explorer_default_figure(explorer):
    state = explorer.state
    assert explorer.error == ""
    for i, point in enumerate(state.points):
        x, y = _xy(_roofline_artist(explorer, i, "roof"))
        np.testing.assert_allclose(y, np.minimum(point.peak_flops, x * point.bandwidth))
        mx, my = _xy(_roofline_artist(explorer, i, "point"))
        assert mx[0] == pytest.approx(state.intensity)
        assert my[0] == pytest.approx(point.attainable_flops)
        rx, _ = _xy(_roofline_artist(explorer, i, "ridge"))
        assert rx[0] == pytest.approx(point.critical_intensity)
    assert "memory-bound" in explorer.drawing.titles[0].get_text()
    assert _legend(explorer) == ["TPU v5e (bf16)", "H100 (bf16)"]


def test_moving_b_recomputes_and_moves_the_markers(explorer):
    old_png = explorer.png
    explorer.controls["B"].value = 1024
    state = explorer.state
    assert state.B == 1024 and state.main.bound == "compute"
    mx, my = _xy(_roofline_artist(explorer, 0, "point"))
    assert mx[0] == pytest.approx(roofline.matmul_cost(1024, 8192, 8192).intensity)
    assert my[0] == pytest.approx(get_chip("v5e").flops("bf16"))
    nx, ny = _xy(_roofline_artist(explorer, 0, "now"))
    assert nx[0] == 1024 and ny[0] == pytest.approx(1.0)
    assert "compute-bound" in explorer.drawing.titles[0].get_text()
    assert "B = 1,024" in explorer.drawing.titles[1].get_text()
    assert explorer.png != old_png and explorer.image.value == explorer.png
    explorer.controls["B"].value = 64


def test_moving_d_and_f_changes_the_utilisation_curve(explorer):
    before = _xy(_roofline_artist(explorer, 0, "util"))[1].copy()
    explorer.controls["D"].value = 512
    explorer.controls["F"].value = 512
    state = explorer.state
    assert (state.D, state.F) == (512, 512)
    x, after = _xy(_roofline_artist(explorer, 0, "util"))
    np.testing.assert_allclose(after, utilisation(state, state.main, x))
    assert not np.allclose(before, after)
    explorer.controls["D"].value = explorer.controls["F"].value = 8192


def test_changing_chips_rebuilds_the_lines(explorer):
    explorer.controls["compare"].value = ""
    assert [p.chip.name for p in explorer.state.points] == ["TPU v5e"]
    assert len(explorer.drawing.series[0]) == 1 + 3 and _legend(explorer) == ["TPU v5e (bf16)"]
    explorer.controls["chip"].value = "B200"
    explorer.controls["compare"].value = "TPU v6e"
    assert [p.chip.name for p in explorer.state.points] == ["B200", "TPU v6e"]
    x, y = _xy(_roofline_artist(explorer, 0, "roof"))
    assert y.max() == get_chip("B200").flops("bf16")
    assert _legend(explorer) == ["B200 (bf16)", "TPU v6e (bf16)"]
    explorer.controls["chip"].value = "TPU v5e"
    explorer.controls["compare"].value = "H100"


def test_int8_weights_move_the_critical_batch_line(explorer):
    explorer.controls["w_dtype"].value = "int8"
    cx, _ = _xy(_roofline_artist(explorer, 0, "critical"))
    assert cx[0] == pytest.approx(121.6, rel=1e-3)
    explorer.controls["per_example"].value = True
    assert _roofline_artist(explorer, 0, "critical") is None  # no batch is enough
    assert math.isinf(explorer.state.main.critical_batch)
    explorer.controls["per_example"].value = False
    explorer.controls["w_dtype"].value = "bf16"


def test_a_rejected_control_value_shows_an_error_and_keeps_the_picture(explorer):
    good_state, good_png = explorer.state, explorer.png
    explorer.controls["chip"].value = "V100"  # has fp16 units only
    assert "V100 has no bf16" in explorer.error
    assert "V100 has no bf16" in explorer.message.value
    assert explorer.state is good_state and explorer.png == good_png
    explorer.controls["x_dtype"].value = "fp16"
    explorer.controls["w_dtype"].value = "fp16"
    assert explorer.error == "" and explorer.message.value == ""
    assert explorer.state.main.chip.name == "V100" and explorer.state.main.compute_dtype == "fp16"
    explorer.controls["chip"].value = "TPU v5e"
    explorer.controls["x_dtype"].value = explorer.controls["w_dtype"].value = "bf16"
    assert explorer.error == ""


def test_static_pages_get_a_png_next_to_the_widget_view(explorer):
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(PNG_SIGNATURE) and png == explorer.png
    width, height = explorer.figure.canvas.get_width_height()
    assert (width, height) == (1000, 390)
    # the page gets the chart's texts and titles, to reserve the live picture's room
    assert "data-frame=" in bundle["text/html"]


@pytest.mark.parametrize("kwargs, message", [
    ({"chip": "TPU v9"}, "unknown chip"),
    ({"compare": "nope"}, "unknown chip"),
    ({"w_dtype": "fp32"}, "not offered"),
    ({"chip": "V100"}, "V100 has no bf16"),
])
def test_explorer_rejects_bad_initial_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        roofline_explorer(**kwargs)


# --------------------------------------------------------------------------- chip comparison

def test_comparison_state_values_and_missing_figures():
    state = comparison_state(["TPU v5e", "V100", "h100"], "flops:bf16")
    assert state.chips == ("TPU v5e", "V100", "H100")
    assert state.values[0] == 1.97e14 and state.values[2] == 9.89e14
    assert math.isnan(state.values[1])  # a V100 has no bf16 units
    critical = comparison_state(["TPU v5e"], "critical:bf16")
    assert critical.values[0] == pytest.approx(roofline.critical_intensity("v5e"))
    assert len(state.rows) == 3 and len(state.header) == len(METRICS) + 1


@pytest.mark.parametrize("chips, metric, message", [
    (["TPU v5e", "TPU v99"], "flops:bf16", "unknown chip 'TPU v99'"),
    (["TPU v5e"], "flops:bf17", "unknown metric"),
    ([], "flops:bf16", "at least one chip"),
])
def test_bad_comparison_input_is_a_clear_error(chips, metric, message):
    with pytest.raises(ValueError, match=message):
        comparison_state(chips, metric)


def _bars(w):
    """Heights and texts of the comparison's bars, as the figure draws them."""
    artists = w.drawing.series[0][0]
    n = len(artists) // 2
    return [b.get_height() for b in artists[:n]], [t.get_text() for t in artists[n:]]


def test_comparison_bars_are_relative_and_labelled():
    state = comparison_state(["TPU v5p", "V100", "B200"], "hbm_bandwidth")
    assert state.relative == pytest.approx((2.8 / 8.0, 0.9 / 8.0, 1.0))
    assert state.labels == ("2.8 TB/s", "900 GB/s", "8 TB/s")
    w = chip_comparison(["TPU v5p", "V100", "B200"], metric="hbm_bandwidth")
    heights, texts = _bars(w)
    np.testing.assert_allclose(heights, state.relative)
    assert texts == list(state.labels)
    assert [t.get_text() for t in w.figure.axes[0].get_xticklabels()] == list(state.chips)
    assert w.drawing.titles[0].get_text() == "HBM bandwidth"

    w.controls["chips"].value = ("TPU v5p", "V100")
    w.controls["metric"].value = "flops:fp8"
    assert _bars(w) == ([0.0, 0.0], ["n/a", "n/a"])
    # an empty chart says why, in the middle of the plot (not a blank picture)
    note = w.drawing.notes[0]
    assert note.get_visible() and "no chip chosen has a figure for fp8" in note.get_text()
    assert w.chart["panels"][0]["note"] == note.get_text()
    w.controls["chips"].value = ("TPU v5p", "H100")
    assert not w.drawing.notes[0].get_visible()


def test_comparison_table_and_markdown():
    header, rows = comparison_table(["TPU v5e", "V100"], ["flops:bf16", "hbm_bytes"])
    assert header == ("chip", "bf16 FLOP/s", "HBM capacity")
    assert rows == (("TPU v5e", "197 TFLOP/s", "16 GB"), ("V100", "—", "32 GB"))
    text = table_markdown(header, rows)
    assert text.splitlines()[0] == "| chip | bf16 FLOP/s | HBM capacity |"
    assert text.splitlines()[1] == "|---|---|---|"
    assert comparison_table(["TPU v5e"], ["flops:int8"])[1][0][1] == "394 TOP/s"


def test_chip_comparison_widget_follows_its_controls():
    w = chip_comparison(["TPU v5e", "H100"], metric="flops:bf16")
    assert _bars(w)[0] == pytest.approx([197 / 989, 1.0])
    assert _bars(w)[1] == ["197 TFLOP/s", "989 TFLOP/s"]
    w.controls["chips"].value = ("TPU v5e", "TPU v6e", "B200")
    assert w.state.chips == ("TPU v5e", "TPU v6e", "B200")
    assert len(_bars(w)[0]) == 3
    w.controls["metric"].value = "critical:bf16"
    critical = [roofline.critical_intensity(c) for c in w.state.chips]
    assert _bars(w)[0] == pytest.approx([c / max(critical) for c in critical])
    assert _bars(w)[1][0] == "243 FLOPs/byte"
    w.controls["log"].value = True
    assert w.figure.axes[0].get_yscale() == "log"
    w.controls["metric"].value = "hbm_bytes"  # the fast path again, on the log axis
    b200 = get_chip("B200").hbm_bytes / 1e9  # 180 GB: the HGX B200's
    assert _bars(w)[0] == pytest.approx([16 / b200, 32 / b200, 1.0])
    assert "<table" in w.summary.value and "TPU v6e" in w.summary.value
    w.controls["chips"].value = ()
    assert "at least one chip" in w.error and w.state.chips == ("TPU v5e", "TPU v6e", "B200")
    assert base64.b64decode(w._repr_mimebundle_()["image/png"]).startswith(PNG_SIGNATURE)


def test_chip_comparison_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown chip"):
        chip_comparison(["TPU v5e", "Radeon 9700"])
    with pytest.raises(ValueError, match="unknown metric"):
        chip_comparison(metric="colour")

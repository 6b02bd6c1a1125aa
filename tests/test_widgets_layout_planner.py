"""The layout planner driven through its controls and its best-layout button, as a reader would."""

from __future__ import annotations

import pytest
from widget_box import Box

from scalebook.live import render
from scalebook.training import PRESETS, TrainingLayout, best_training_layout, plan_training
from scalebook.live.layout_planner import (CUSTOM, MEMORY_KINDS, MODEL_FIELDS, TIME_KINDS,
                                          ideal_step, planner_chart, planner_series,
                                          planner_state)
from scalebook.widgets import figure as F
from scalebook.widgets.layout_planner import layout_planner

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GIB = 2.0 ** 30


@pytest.fixture()
def planner():
    return layout_planner("LLaMA-3 70B", "TPU v5p", 1024, global_batch=2048, seq_len=8192,
                          fsdp=128, tp=8, remat="full", dpi=40)


def _height(artist):
    return artist.get_height()


def _named(drawing) -> dict:
    """The planner figure's artists by what they show, in the live view's chart order."""
    memory, time = drawing.series
    out = {f"memory/{kind}": Box(s[0]) for (kind, _), s in zip(MEMORY_KINDS, memory)}
    out["hbm"] = memory[len(MEMORY_KINDS)][0]
    out.update({f"time/{kind}": Box(s[0]) for (kind, _), s in zip(TIME_KINDS, time)})
    out["ideal"] = time[len(TIME_KINDS)][0]
    out.update(zip(("memory_title", "time_title"), drawing.titles))
    out.update(zip(("heading", "flags"), drawing.texts))
    return out


def test_default_state_matches_the_solver(planner):
    expected = plan_training(PRESETS["LLaMA-3 70B"], TrainingLayout(fsdp=128, tp=8, remat="full"),
                             "TPU v5p", global_batch=2048, seq_len=8192, n_chips=1024)
    plan = planner.state.plan
    assert planner.error == ""
    assert plan.memory == expected.memory and plan.step_time == expected.step_time
    assert plan.mfu == pytest.approx(expected.mfu)
    for kind in ("weights", "gradients", "optimizer", "activations"):
        assert _height(_named(planner.drawing)[f"memory/{kind}"]) == pytest.approx(
            getattr(plan.memory, kind) / GIB)
    assert _named(planner.drawing)["hbm"].get_ydata()[0] == pytest.approx(96e9 / GIB)
    ideal = plan.flops_per_step / (1024 * 4.59e14)
    assert ideal_step(plan) == pytest.approx(ideal)
    heights = [_height(_named(planner.drawing)[f"time/{k}"]) for k in ("compute", "comms_exposed",
                                                                "bubble")]
    assert heights == pytest.approx([plan.step_time.compute / ideal,
                                     plan.step_time.comms_exposed / ideal, 0.0])
    assert sum(heights) == pytest.approx(1 / plan.mfu)  # the bar's height is 1 / MFU
    assert f"MFU {plan.mfu:.0%}" in _named(planner.drawing)["time_title"].get_text()
    assert planner.png.startswith(PNG_SIGNATURE)
    assert f"MFU {plan.mfu:.1%}" in planner.summary.value


def test_choosing_a_preset_fills_the_model_fields(planner):
    planner.controls["preset"].value = "LLaMA-3 405B"
    cfg = PRESETS["LLaMA-3 405B"]
    for name in MODEL_FIELDS:
        assert planner.controls[name].value == getattr(cfg, name)
    assert planner.state.config.d_model == 16384 and planner.state.config.n_layers == 126
    assert planner.controls["preset"].value == "LLaMA-3 405B"


def test_editing_a_model_field_switches_to_custom(planner):
    planner.controls["n_layers"].value = 40
    assert planner.controls["preset"].value == CUSTOM
    assert planner.state.config.n_layers == 40
    assert planner.state.config.name == "custom model"
    # choosing a preset again restores its fields
    planner.controls["preset"].value = "LLaMA-3 70B"
    assert planner.controls["n_layers"].value == 80
    assert planner.state.config == PRESETS["LLaMA-3 70B"].__class__(
        **{n: getattr(PRESETS["LLaMA-3 70B"], n) for n in MODEL_FIELDS}, name="LLaMA-3 70B")


@pytest.mark.parametrize("name, value, check", [
    ("d_model", 4096, lambda s: s.config.d_model == 4096),
    ("d_ff", 14336, lambda s: s.config.d_ff == 14336),
    ("n_heads", 32, lambda s: s.config.n_heads == 32),
    ("n_kv_heads", 16, lambda s: s.config.n_kv_heads == 16),
    ("vocab_size", 32000, lambda s: s.config.vocab_size == 32000),
    ("seq_len", 4096, lambda s: s.plan.seq_len == 4096),
    ("global_batch", 1024, lambda s: s.plan.global_batch == 1024),
    ("chip", "H100", lambda s: s.plan.chip_name == "H100" and s.plan.hbm_capacity == 80e9),
    ("n_chips", 512, lambda s: "degrees multiply to 1024, not the 512 chips" in s.flags),
    ("dp", 2, lambda s: s.plan.layout.dp == 2 and s.plan.n_chips == 2048),
    ("fsdp", 64, lambda s: s.plan.layout.fsdp == 64),
    ("tp", 4, lambda s: s.plan.layout.tp == 4),
    ("pp", 4, lambda s: s.plan.layout.pp == 4 and s.plan.step_time.bubble > 0),
    ("zero_stage", 1, lambda s: s.plan.layout.zero_stage == 1),
    ("microbatches", 2, lambda s: s.plan.layout.microbatches == 2),
    ("remat", "selective", lambda s: s.plan.layout.remat == "selective"),
    ("overlap", False, lambda s: s.plan.step_time.comms_exposed == pytest.approx(
        s.plan.comms_time)),
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_every_control_recomputes(planner, name, value, check):
    before = planner.state
    old_png = planner.png
    planner.controls[name].value = value
    assert planner.error == ""
    assert planner.state is not before
    assert check(planner.state)
    assert planner.png != old_png and planner.image.value == planner.png


def test_best_layout_button_applies_the_search(planner):
    planner.buttons["best"].click()
    best = best_training_layout(PRESETS["LLaMA-3 70B"], "TPU v5p", 1024, global_batch=2048,
                                seq_len=8192)
    lay = best.layout
    assert planner.error == ""
    assert planner.state.plan.layout == lay
    for name in ("dp", "fsdp", "tp", "pp", "zero_stage", "microbatches", "remat"):
        assert planner.controls[name].value == getattr(lay, name)
    assert planner.state.plan.step_time.total == pytest.approx(best.step_time.total)
    assert planner.state.plan.fits and planner.state.n_chips == 1024


def test_best_layout_button_says_when_nothing_fits(planner):
    planner.controls["preset"].value = "LLaMA-3 405B"
    planner.controls["chip"].value = "H100"
    planner.controls["n_chips"].value = 8
    planner.controls["dp"].value = 1
    planner.controls["fsdp"].value = 8
    planner.controls["tp"].value = 1
    good_state = planner.state
    planner.buttons["best"].click()
    assert planner.error.startswith("no layout of 8 H100 chips fits")
    assert "\n" not in planner.error
    assert planner.state is good_state


def test_the_four_flags_appear(planner):
    # does not fit: 405B keeping every activation (with full remat it fits, 86 of 89 GiB)
    planner.controls["preset"].value = "LLaMA-3 405B"
    planner.controls["remat"].value = "none"
    assert any(f.startswith("does not fit: needs") for f in planner.state.flags)
    assert "does not fit" in planner.summary.value
    assert "does not fit" in _named(planner.drawing)["memory_title"].get_text()
    planner.controls["remat"].value = "full"
    planner.controls["preset"].value = "LLaMA-3 70B"
    # communication-bound: the default layout's exposed TP traffic
    planner.controls["tp"].value = 32
    planner.controls["fsdp"].value = 32
    flags = planner.state.flags
    assert any(f.startswith("communication-bound: exposed communication is") for f in flags)
    # TP past its useful degree: SwiGLU's 1.5 · 28,672 · W / C = 16 on TPU v5p, dividing the
    # 64 heads (the two-matrix bound said ~11 before issue 42); and past the 8 KV heads
    assert "TP past its useful degree (tp=32 > ~16)" in flags
    assert any("8 KV heads" in f for f in flags)
    # degrees whose product is not the chip count
    planner.controls["fsdp"].value = 16
    assert "degrees multiply to 512, not the 1024 chips" in planner.state.flags
    assert "degrees multiply to 512" in planner.summary.value
    # the figure carries the flags too (a static page shows only the picture)
    drawn = _named(planner.drawing)["flags"].get_text().replace("\n", " ")
    assert "degrees multiply to 512, not the 1024 chips" in drawn
    assert "TP past its useful degree" in drawn
    assert len(planner.figure.texts) == 2  # the heading and the flags, not old copies
    assert "\n" in _named(planner.drawing)["flags"].get_text()  # wrapped to the figure's width
    assert "fsdp=16 tp=32" in _named(planner.drawing)["heading"].get_text()


def test_a_clean_layout_says_no_warnings(planner):
    planner.controls["remat"].value = "selective"
    planner.controls["tp"].value = 4
    planner.controls["fsdp"].value = 128
    planner.controls["pp"].value = 2
    planner.controls["microbatches"].value = 16
    assert planner.state.flags == ()
    assert _named(planner.drawing)["flags"].get_text() == "no warnings"
    assert "no warnings" in planner.summary.value


@pytest.mark.parametrize("name, value, message", [
    ("tp", 0, "tp must be a positive integer"),
    ("n_chips", -4, "n_chips must be a positive integer"),
    ("n_kv_heads", 7, "n_kv_heads (7) must divide n_heads (64)"),
    ("pp", 128, "pp=128 is more pipeline stages than the 80 layers"),
    ("global_batch", 0, "global batch must be a positive integer"),
])
def test_bad_input_is_a_one_line_error_and_keeps_the_picture(planner, name, value, message):
    good_png, good_state = planner.png, planner.state
    planner.controls[name].value = value
    assert message in planner.error and "\n" not in planner.error
    assert message in planner.message.value
    assert planner.png == good_png and planner.state is good_state


_TINY_KW = dict(n_layers=4, d_model=64, d_ff=256, n_heads=4, n_kv_heads=4, vocab_size=1000,
                seq_len=16, global_batch=8, chip="H100", n_chips=4, dp=4, zero_stage=0,
                preset=CUSTOM)


def test_state_and_drawing_work_without_widgets():
    state = planner_state(**_TINY_KW)
    assert state.plan.fits and state.plan.n_chips == 4
    chart = planner_chart(planner_series(state))
    fig = F.new_figure(chart, dpi=20)
    drawing = F.draw(fig, chart)
    axes, artists = fig.axes, _named(drawing)
    plan = state.plan
    assert artists["time/compute"].get_height() == pytest.approx(
        plan.step_time.compute / ideal_step(plan))
    assert artists["memory/optimizer"].get_y() == pytest.approx(
        (plan.memory.weights + plan.memory.gradients) / GIB)
    assert axes[0].get_ylim() == pytest.approx((0, 1.5 * 80e9 / GIB))
    # another state on the same chip moves the artists; another chip needs new axes
    other = planner_state(**{**_TINY_KW, "dp": 2, "n_chips": 2})
    assert F.update(drawing, planner_chart(planner_series(other))) is not None
    assert _named(drawing)["memory/optimizer"].get_y() == pytest.approx(
        (other.plan.memory.weights + other.plan.memory.gradients) / GIB)
    h200 = planner_state(**{**_TINY_KW, "chip": "H200"})
    assert F.update(drawing, planner_chart(planner_series(h200))) is None


@pytest.mark.parametrize("kwargs, message", [
    ({"preset": "GPT-5"}, "unknown preset"),
    ({"chip": "V100"}, "V100 has no bf16 figure"),
    ({"tp": 0}, "tp must be a positive integer"),
])
def test_bad_initial_inputs_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        layout_planner(**kwargs)


# --------------------------------------------------------------------------- the live view

LIVE = "scalebook.live.layout_planner"


def _jupyter_after(planner, values: dict, changed: str | None):
    """The Jupyter planner after a reader set ``values``, ``changed`` last (a control, the
    "best" button, or None)."""
    planner.set_quietly({k: v for k, v in values.items() if k != changed})
    if changed == "best":
        planner.update()
        planner.buttons["best"].click()
    elif changed is None:
        planner.update()
    else:
        planner.controls[changed].value = values[changed]  # as a reader: links, then updates
    return planner


def _rect(bar) -> list[float]:
    return [bar.get_x(), bar.get_x() + bar.get_width(), bar.get_y(),
            bar.get_y() + bar.get_height()]


@pytest.mark.parametrize("changes, changed", [
    ({}, None),
    ({"preset": "LLaMA-3 405B"}, "preset"),  # fills the model fields: does not fit, off scale
    ({"preset": "LLaMA-3 8B", "fsdp": 1024, "tp": 1}, "preset"),
    ({"d_model": 4096}, "d_model"),  # a hand-edited model is "custom"
    ({"chip": "H100", "tp": 16, "fsdp": 64}, "chip"),  # TP across nodes, another HBM
    ({"pp": 4, "fsdp": 32, "microbatches": 8, "zero_stage": 1, "remat": "none"}, "pp"),
    ({"overlap": False, "n_chips": 512}, "overlap"),  # degrees do not multiply to the chips
    ({"seq_len": 2048, "global_batch": 512}, "best"),  # the search sets the layout fields
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_live_view_is_the_jupyter_widget(planner, changes, changed):
    """What the static page draws and writes back for these control values equals what the
    Jupyter planner shows after a reader makes the same changes."""
    from matplotlib.colors import to_rgba

    values = {**planner.values(), **changes}
    out = render(LIVE, values, changed)
    planner = _jupyter_after(planner, values, changed)
    assert "error" not in out and planner.error == ""
    assert {**values, **out.get("controls", {})} == planner.values()
    assert out["summary_html"] == planner.summary.value
    a = _named(planner.drawing)
    heading, flags = out["chart"]["texts"]
    assert heading["text"] == a["heading"].get_text()
    assert flags["text"] == a["flags"].get_text().replace("\n", " ")
    assert flags["colour"] == a["flags"].get_color()
    memory, time = out["chart"]["panels"]
    assert memory["title"] == a["memory_title"].get_text()
    assert time["title"] == a["time_title"].get_text()
    for panel, prefix, ax in ((memory, "memory", planner.figure.axes[0]),
                              (time, "time", planner.figure.axes[1])):
        assert [panel["y"]["min"], panel["y"]["max"]] == list(ax.get_ylim())
        assert [panel["x"]["min"], panel["x"]["max"]] == list(ax.get_xlim())
        assert panel["y"]["ticks"] == [[float(t), label.get_text()] for t, label in
                                       zip(ax.get_yticks(), ax.get_yticklabels())]
        areas = [s for s in panel["series"] if s["kind"] == "area"]
        for series in areas:  # each stacked segment is the matplotlib bar, corner for corner
            kind = {"exposed comms": "comms_exposed"}.get(series["label"], series["label"])
            bar = a[f"{prefix}/{kind}"]
            (x0, y0), (x1, _), (_, y1), _ = series["points"]
            assert [x0, x1, y0, y1] == _rect(bar)
            assert to_rgba(series["colour"]) == bar.get_facecolor()
        (line,) = [s for s in panel["series"] if s["kind"] == "line"]
        artist = a["hbm" if prefix == "memory" else "ideal"]
        assert line["points"] == [[float(x), float(y)] for x, y in zip(*artist.get_data())]
        assert line["label"] == artist.get_label()
    assert len(memory["series"]) == 5 and len(time["series"]) == 4


def test_live_view_links_the_preset_and_the_model_fields():
    values = layout_planner(dpi=20).values()
    out = render(LIVE, {**values, "preset": "LLaMA-3 405B"}, "preset")
    assert out["controls"] == {n: getattr(PRESETS["LLaMA-3 405B"], n) for n in MODEL_FIELDS}
    assert out["chart"]["texts"][0]["text"].startswith("LLaMA-3 405B, 2,048 × 8,192 tokens")
    assert render(LIVE, {**values, "n_layers": 40}, "n_layers")["controls"] == {"preset": CUSTOM}
    assert "controls" not in render(LIVE, {**values, "preset": CUSTOM}, "preset")
    assert "controls" not in render(LIVE, values, "tp")
    assert "controls" not in render(LIVE, values, None)


@pytest.mark.slow  # searches every layout of the model (seconds)
def test_live_best_button_sets_the_searched_layout():
    values = layout_planner(dpi=20).values()
    out = render(LIVE, values, "best")
    best = best_training_layout(PRESETS["LLaMA-3 70B"], "TPU v5p", 1024, global_batch=2048,
                                seq_len=8192)
    assert out["controls"] == {n: getattr(best.layout, n) for n in
                               ("dp", "fsdp", "tp", "pp", "zero_stage", "microbatches", "remat")}
    assert f"MFU {best.mfu:.1%}" in out["summary_html"]


@pytest.mark.parametrize("changes, changed, message", [
    ({"tp": 0}, "tp", "tp must be a positive integer"),
    ({"n_kv_heads": 7}, "n_kv_heads", "n_kv_heads (7) must divide n_heads (64)"),
    ({"global_batch": 0}, "global_batch", "global batch must be a positive integer"),
    ({"preset": "LLaMA-3 405B", "chip": "H100", "n_chips": 8, "fsdp": 8, "tp": 1}, "best",
     "no layout of 8 H100 chips fits"),
    ({"tp": 0}, "best", "tp must be a positive integer"),
    # the preset fills its fields even though they are then rejected, in both
    ({"pp": 100}, "preset", "pp=100 is more pipeline stages than the 80 layers"),
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_live_view_rejects_bad_input_as_the_widget_does(planner, changes, changed, message):
    values = {**planner.values(), **changes}
    if changed == "preset":  # from 405B (126 layers, 100 stages fit) back to 70B
        planner.set_quietly({"preset": "LLaMA-3 405B"})
        values["n_layers"], values["preset"] = 126, "LLaMA-3 70B"
    out = render(LIVE, values, changed)
    assert message in out["error"] and "\n" not in out["error"]
    assert set(out) <= {"error", "controls"}
    planner = _jupyter_after(planner, values, changed)
    assert planner.error == out["error"]
    assert {**values, **out.get("controls", {})} == planner.values()


def test_static_html_offers_every_control_and_the_button(planner):
    import json
    import re

    page = planner._repr_mimebundle_()["text/html"]
    assert f"data-widget='{LIVE}'" in page
    specs = json.loads(re.search(r'data-controls="([^"]*)"', page).group(1)
                       .replace("&quot;", '"').replace("&amp;", "&").replace("&#x27;", "'"))
    assert [s["name"] for s in specs] == [*planner.controls, "best"]
    values = planner.values()
    assert {s["name"]: s["value"] for s in specs if s["kind"] != "button"} == values
    assert [s["kind"] for s in specs if s["name"] in MODEL_FIELDS] == ["int"] * 6
    assert "<button type='button' class='sb-live-control' name='best' " \
           "title='search for the fastest fitting layout'>best layout</button>" in page
    assert planner.summary.value in page
    # the page's first live picture is this one
    out = render(LIVE, values)
    assert out["summary_html"] == planner.summary.value


def test_live_defaults_are_the_widgets():
    from scalebook.live.layout_planner import DEFAULTS

    assert layout_planner(dpi=20).values() == dict(DEFAULTS)
    assert render(LIVE, {}) == render(LIVE, dict(DEFAULTS))


@pytest.mark.parametrize("top, step", [(134.1, 20), (111.8, 20), (2.5, 0.5), (24.0, 5),
                                       (144.0, 25), (0.7, 0.2), (1e4, 2000)])
def test_axis_ticks_take_the_smallest_nice_step(top, step):
    from scalebook.live.layout_planner import axis_ticks

    ticks = axis_ticks(top)
    values = [v for v, _ in ticks]
    assert values[0] == 0.0 and len(values) <= 7
    assert values[1] == pytest.approx(step)
    assert values[-1] <= top < values[-1] + step
    assert [text for _, text in ticks] == [f"{v:g}" for v in values]


def test_the_summary_states_the_models_assumptions(planner):
    """Issue 25 item 3: the planner never hides TP traffic; it says so beside its numbers."""
    text = planner.summary.value
    assert "tensor-parallel collectives are never hidden" in text
    assert "flash-style attention" in text

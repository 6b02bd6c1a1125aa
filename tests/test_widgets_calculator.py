"""The transformer calculator driven through its controls, as a reader would: every displayed
number equals the solver's, presets fill the model fields, bad input shows a message."""

from __future__ import annotations

import math

import pytest
from widget_box import Box

from scalebook import training, transformer
from scalebook.live import render
from scalebook.training import PRESETS
from scalebook.live.calculator import (
    CUSTOM,
    FLOPS_STYLES,
    MEMORY_KINDS,
    MODEL_FIELDS,
    PARAM_BLOCKS,
    calculator_state,
    flops_curves,
)
from scalebook.widgets.calculator import transformer_calculator

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DAY = 86400.0


@pytest.fixture()
def calc():
    return transformer_calculator("LLaMA-3 70B", seq_len=8192, tokens_trillions=15.0,
                                  global_batch=2048, remat="full", chip="H100", n_chips=16384,
                                  mfu=0.4, dpi=40)


def test_default_state_matches_the_solver(calc):
    cfg = transformer.llama3_70b()
    s = calc.state
    assert calc.error == ""
    assert s.params == transformer.param_count(cfg)
    assert s.params.total == 70_553_706_496
    # training FLOPs = 6·P_matmul·D + 12·L·T·H·d_h·D, by hand and by the solver
    by_hand = (6 * 69_501_714_432 + 12 * 80 * 8192 * 64 * 128) * 15e12
    assert s.training_flops == pytest.approx(by_hand)
    assert s.training_flops == pytest.approx(
        transformer.training_flops(cfg, 15e12, include_attention=True, seq_len=8192))
    # days at 40% MFU on 16,384 H100s (dense bf16 9.89e14 FLOPs/s)
    assert s.days == pytest.approx(by_hand / (16384 * 9.89e14 * 0.4) / DAY)
    assert s.seconds_at_peak == pytest.approx(s.seconds * 0.4)
    # the 6·N·D days most estimates quote, told apart from the days with attention
    six_nd = 6 * 70_553_706_496 * 15e12 / (16384 * 9.89e14 * 0.4)
    assert s.seconds_6nd == pytest.approx(six_nd) and s.seconds_6nd < s.seconds
    assert f"{six_nd / DAY:,.1f} days by 6·N·D alone" in calc.summary.value
    assert "6·P plus the attention core" in calc.summary.value
    mem = training.training_memory(cfg, global_batch=2048, seq_len=8192, remat="full")
    assert s.memory == mem
    assert s.memory_per_chip == pytest.approx(mem.total / 16384)
    assert s.min_chips == training.fewest_chips(mem.total, "H100")
    assert s.crossover == 43008
    assert calc.png.startswith(PNG_SIGNATURE)


def _named(calc) -> dict:
    """The calculator figure's artists by what they show, in the live view's chart order."""
    (bars,), flops, memory = calc.drawing.series
    out = {f"param/{label}": bar for (label, _), bar in zip(PARAM_BLOCKS, bars)}
    names = [name for name, *_ in FLOPS_STYLES]
    out.update({f"flops/{name}": s[0] for name, s in zip(names, flops)})
    out["crossover"], out["now"] = flops[len(names)][0], flops[len(names) + 1][0]
    out.update({f"memory/{kind}": Box(s[0]) for (kind, _), s in zip(MEMORY_KINDS, memory)})
    out["hbm"] = memory[len(MEMORY_KINDS)][0]
    out.update(zip(("param_title", "flops_title", "memory_title"), calc.drawing.titles))
    out["heading"] = calc.drawing.texts[0]
    return out


def test_drawn_artists_show_the_state(calc):
    s, a = calc.state, _named(calc)
    for label, fn in PARAM_BLOCKS:
        assert a[f"param/{label}"].get_height() == pytest.approx(fn(s.params) / s.params.total)
    assert a["param/MLP"].get_height() == pytest.approx(80 * 3 * 8192 * 28672 / 70_553_706_496)
    # the attention curve crosses the MLP's at the crossover context
    assert list(a["crossover"].get_xdata()) == [43008, 43008]
    at_cross = flops_curves(s, [43008.0])
    assert at_cross["attention"][0] == pytest.approx(at_cross["mlp"][0])
    assert a["now"].get_xdata()[0] == 8192
    assert a["now"].get_ydata()[0] == pytest.approx(12 * 80 * 8192 * 64 * 128
                                                     / (6 * 69_501_714_432))
    hbm = 80e9
    bottom = 0.0
    for kind, _ in MEMORY_KINDS:
        bar = a[f"memory/{kind}"]
        assert bar.get_y() == pytest.approx(bottom)
        assert bar.get_height() == pytest.approx(getattr(s.memory, kind) / 16384 / hbm)
        bottom += bar.get_height()
    assert f"{s.days:,.1f} days" in a["heading"].get_text().replace("\n", " ")
    assert "43,008" in a["flops_title"].get_text()
    assert f"{s.days:,.1f} days" in calc.summary.value
    assert f"{s.params.total:,}" in calc.summary.value  # every parameter, not rounded


def test_preset_fills_fields_and_editing_makes_custom(calc):
    calc.controls["preset"].value = "LLaMA-3 405B"
    cfg = PRESETS["LLaMA-3 405B"]
    for name in MODEL_FIELDS:
        assert calc.controls[name].value == getattr(cfg, name)
    assert calc.state.params.total == transformer.param_count(cfg).total
    calc.controls["n_kv_heads"].value = 128  # MHA instead of GQA: more K/V weights
    assert calc.controls["preset"].value == CUSTOM
    assert calc.state.config.name == "custom model"
    kv = calc.state.params.attention_k + calc.state.params.attention_v
    assert kv == 2 * 126 * 16384 * 128 * 128
    calc.controls["preset"].value = "LLaMA-3 8B"
    assert calc.controls["d_model"].value == 4096
    assert calc.state.params.total == 8_030_261_248


def test_every_control_recomputes(calc):
    before = calc.state
    calc.controls["seq_len"].value = 65536
    assert calc.state.per_token.attention_share > before.per_token.attention_share
    assert calc.state.per_token.attention_share > 0.5  # past the crossover
    calc.controls["tokens_trillions"].value = 30.0
    assert calc.state.tokens == 30e12
    calc.controls["mfu"].value = 0.8
    assert calc.state.mfu == 0.8
    days = calc.state.days
    calc.controls["n_chips"].value = 8192
    assert calc.state.days == pytest.approx(2 * days)
    calc.controls["chip"].value = "TPU v5p"
    assert calc.state.hbm_bytes == 96e9
    calc.controls["remat"].value = "none"
    assert calc.state.remat == "none"
    calc.controls["global_batch"].value = 16
    assert calc.state.global_batch == 16
    assert calc.error == ""


@pytest.mark.parametrize("name, value, message", [
    ("n_chips", 0, "chips must be a positive integer"),
    ("seq_len", -5, "sequence length must be a positive integer"),
    ("tokens_trillions", 0.0, "token budget"),
    ("d_model", 0, "d_model must be a positive integer"),
    ("n_kv_heads", 7, "must divide n_heads"),
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_bad_input_shows_a_message_and_keeps_the_picture(calc, name, value, message):
    good, png = calc.state, calc.png
    calc.controls[name].value = value
    assert message in calc.error
    assert message in calc.message.value
    assert calc.state is good and calc.png == png
    calc.controls[name].value = {"n_chips": 16384, "seq_len": 8192, "tokens_trillions": 15.0,
                                 "d_model": 8192, "n_kv_heads": 8}[name]
    assert calc.error == "" and calc.message.value == ""


def test_state_validation():
    fields = {n: getattr(PRESETS["LLaMA-3 8B"], n) for n in MODEL_FIELDS}
    with pytest.raises(ValueError, match="mfu"):
        calculator_state(**fields, mfu=1.5)
    with pytest.raises(ValueError):
        calculator_state(**fields, chip="no such chip")
    with pytest.raises(ValueError):
        transformer_calculator("GPT-5")
    s = calculator_state(**fields, tokens_trillions=1.0, n_chips=1024, mfu=0.5)
    assert s.days == pytest.approx(
        transformer.training_flops(PRESETS["LLaMA-3 8B"], 1e12, include_attention=True,
                                   seq_len=8192) / (1024 * 9.89e14 * 0.5) / DAY)
    assert math.isfinite(s.crossover)


# --------------------------------------------------------------------------- the live view

LIVE = "scalebook.live.calculator"


def _xy(artist) -> list[list[float]]:
    return [[float(x), float(y)] for x, y in zip(*artist.get_data())]


@pytest.mark.parametrize("changes, changed", [
    ({}, None),
    ({"seq_len": 131072, "mfu": 0.55}, "mfu"),
    ({"preset": "LLaMA-3 8B"}, "preset"),  # the preset fills the model fields
    ({"n_kv_heads": 64}, "n_kv_heads"),  # an edited field makes the model custom (MHA)
    ({"chip": "TPU v5p", "n_chips": 1024, "remat": "none", "tokens_trillions": 2.5,
      "global_batch": 16}, "n_chips"),  # 1,024 chips: the memory bar is off the scale
    ({"preset": CUSTOM, "d_model": 2048, "n_heads": 16, "n_kv_heads": 4, "d_ff": 5504,
      "n_layers": 24, "vocab_size": 32000, "seq_len": 512}, "seq_len"),
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_live_view_is_the_jupyter_widget(calc, changes, changed):
    """What the static page draws for these control values, and the controls it writes back,
    equal what the Jupyter widget shows after a reader makes the same changes."""
    values = {**calc.values(), **changes}
    calc.set_quietly({k: v for k, v in changes.items() if k != changed})
    if changed is None:
        calc.update()
    else:
        calc.controls[changed].value = changes[changed]  # as a reader: links, then updates
    out = render(LIVE, values, changed)
    assert "error" not in out and calc.error == ""
    assert {**values, **out.get("controls", {})} == calc.values()
    assert out["summary_html"] == calc.summary.value
    params, flops, memory = out["chart"]["panels"]
    a = _named(calc)
    assert out["chart"]["texts"][0]["text"] == a["heading"].get_text()
    for panel, key in ((params, "param_title"), (flops, "flops_title"), (memory, "memory_title")):
        assert panel["title"] == a[key].get_text()
    (bars,) = params["series"]
    assert params["x"]["categories"] == [label for label, _ in PARAM_BLOCKS]
    assert bars["values"] == [a[f"param/{label}"].get_height() for label, _ in PARAM_BLOCKS]
    lines = [s["points"] for s in flops["series"]]
    for name in ("matmul", "mlp", "attention", "total", "crossover", "now"):
        artist = a[name if name in ("crossover", "now") else f"flops/{name}"]
        assert _xy(artist) in lines, name
    areas = [s for s in memory["series"] if s["kind"] == "area"]
    assert [s["label"] for s in areas] == [kind for kind, _ in MEMORY_KINDS]
    for series, (kind, colour) in zip(areas, MEMORY_KINDS):
        bar = a[f"memory/{kind}"]
        (x0, y0), (x1, _), (_, y1), _ = series["points"]
        assert series["colour"] == colour
        assert [x0, x1, y0, y1] == [bar.get_x(), bar.get_x() + bar.get_width(), bar.get_y(),
                                    bar.get_y() + bar.get_height()]
    assert _xy(a["hbm"]) in [s["points"] for s in memory["series"]]


def test_live_view_writes_back_linked_controls():
    fields = {n: getattr(PRESETS["LLaMA-3 70B"], n) for n in MODEL_FIELDS}
    values = {"preset": "LLaMA-3 405B", **fields}
    out = render(LIVE, values, "preset")
    assert out["controls"] == {n: getattr(PRESETS["LLaMA-3 405B"], n) for n in MODEL_FIELDS}
    assert out["summary_html"].startswith("<div style='font-size:90%'><b>LLaMA-3 405B</b>")
    assert render(LIVE, {**values, "preset": "LLaMA-3 70B", "d_ff": 28000},
                  "d_ff")["controls"] == {"preset": CUSTOM}
    assert "controls" not in render(LIVE, values, "mfu")
    assert "controls" not in render(LIVE, {**values, "preset": CUSTOM}, "preset")


@pytest.mark.parametrize("name, value, message", [
    ("n_chips", 0, "chips must be a positive integer, got 0"),
    ("n_kv_heads", 7, "n_kv_heads (7) must divide n_heads (64)"),
    ("tokens_trillions", -1.0, "the token budget must be a positive number of trillions"),
    ("seq_len", -5, "sequence length must be a positive integer, got -5"),
])
def test_live_view_rejects_bad_input_as_the_widget_does(calc, name, value, message):
    values = {**calc.values(), name: value}
    out = render(LIVE, values, name)
    assert message in out["error"] and "summary_html" not in out
    # an edited model field makes the model custom even when it is rejected, as in Jupyter
    assert out.get("controls") == ({"preset": CUSTOM} if name in MODEL_FIELDS else None)
    calc.controls[name].value = value
    assert calc.error == out["error"]
    assert {**values, **out.get("controls", {})} == calc.values()


def test_live_view_keeps_a_filled_preset_with_an_error(calc):
    """A preset chosen while another input is bad: the fields fill and the error shows, on the
    page as in Jupyter."""
    values = {**calc.values(), "n_chips": 0, "preset": "LLaMA-3 8B"}
    out = render(LIVE, values, "preset")
    fields = {n: getattr(PRESETS["LLaMA-3 8B"], n) for n in MODEL_FIELDS}
    assert out == {"error": "chips must be a positive integer, got 0", "controls": fields}
    calc.controls["n_chips"].value = 0
    calc.controls["preset"].value = "LLaMA-3 8B"
    assert calc.error == out["error"]
    assert {**values, **out["controls"]} == calc.values()
    assert "controls" not in render(LIVE, values, "n_chips")  # no preset moved: nothing filled


def test_live_view_rejects_what_the_jupyter_controls_cannot_hold():
    """A slider clamps and an IntText rounds in Jupyter; the view refuses such values itself."""
    values = {"preset": "LLaMA-3 8B", **{n: getattr(PRESETS["LLaMA-3 8B"], n)
                                          for n in MODEL_FIELDS}}
    assert render(LIVE, {**values, "mfu": 1.5}) == {"error": "mfu must be a number in (0, 1], got 1.5"}
    assert render(LIVE, {**values, "global_batch": 2.5}) == {
        "error": "global batch must be a positive integer, got 2.5"}
    assert "unknown chip" in render(LIVE, {**values, "chip": "no such chip"})["error"].lower()


def test_live_view_runs_without_numpy_and_is_json():
    """The browser has no NumPy: the view, in a fresh interpreter where ``import numpy``
    fails, gives the same JSON as here (and the runtime bundles the module)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    values = {"preset": "LLaMA-3 8B", **{n: getattr(PRESETS["LLaMA-3 8B"], n)
                                          for n in MODEL_FIELDS}, "seq_len": 32768}
    script = ("import sys; sys.modules['numpy'] = None\n"
              "from scalebook.live import render_json\n"
              f"print(render_json({LIVE!r}, sys.stdin.read(), 'seq_len'))\n"
              "assert not [m for m, mod in sys.modules.items() if mod is not None and "
              "m.split('.')[0] in ('numpy', 'matplotlib', 'ipywidgets')]\n")
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(values), cwd=root,
                          capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(proc.stdout) == json.loads(json.dumps(render(LIVE, values, "seq_len")))
    sys.path.insert(0, str(root / "web"))
    try:
        import build_live
    finally:
        sys.path.remove(str(root / "web"))
    assert "scalebook/live/calculator.py" in build_live.scalebook_sources(root)

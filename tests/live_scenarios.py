"""The live widgets' browser scenarios, shared by the files that open the built pages in
Chromium (tests/test_live_widgets.py, test_live_pages.py, test_live_site.py): what each widget's
first touch and moves are, and how what a page shows is held against CPython's
:func:`scalebook.live.render` and the Jupyter widget at the same control values."""

from __future__ import annotations

import json

import pytest

import live_browser as lb
from scalebook.live import render
from scalebook.widgets import chip_comparison, roofline_explorer


def built_page(page: str) -> str:
    """The built page's HTML (a clear failure when the book has not been built)."""
    path = lb.HTML / "book" / f"{page}.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make book` first", pytrace=False)
    return path.read_text(encoding="utf-8")


def jupyter(module: str):
    """The Jupyter explorer a live module stands for, at the book's settings."""
    if module == "scalebook.live.roofline":
        return roofline_explorer("TPU v5e", compare="H100", B=64, D=8192, F=8192)
    if module == "scalebook.live.calculator":
        from scalebook.widgets.calculator import transformer_calculator

        return transformer_calculator("LLaMA-3 405B", seq_len=8192, tokens_trillions=15.6,
                                      chip="H100", n_chips=16384, mfu=0.4, global_batch=2048,
                                      remat="full")
    if module == "scalebook.live.serving":
        from scalebook.widgets.serving import serving_explorer

        return serving_explorer()
    if module == "scalebook.live.layout_planner":
        from scalebook.widgets.layout_planner import layout_planner

        return layout_planner(preset="LLaMA-3 70B", chip="TPU v5p", n_chips=2048,
                              global_batch=2048, seq_len=8192, fsdp=256, tp=8, remat="selective")
    if module == "scalebook.live.moe":
        from scalebook.widgets.moe import moe_explorer

        return moe_explorer()
    if module == "scalebook.live.service":
        from scalebook.widgets.service import service_simulator

        return service_simulator()
    if module == "scalebook.live.sharded_matmul":
        from scalebook.widgets.sharded_matmul import sharded_matmul_explorer

        return sharded_matmul_explorer()
    # as Part 2 calls it (book/hardware.md, "The catalog")
    return chip_comparison(["TPU v5e", "TPU v5p", "TPU v6e", "TPU7x", "H100", "B200",
                            "GB200 NVL72", "MI355X"], metric="critical:bf16")


def jupyter_at(module: str, values: dict, pressed: str | None = None):
    """That explorer with its controls set to ``values`` (as the browser read them), then its
    button ``pressed`` clicked, if any (the best-layout search, say)."""
    widget = jupyter(module)
    widget.set_quietly({k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
    widget.update()
    buttons = getattr(widget, "buttons", {})
    if pressed in buttons:
        buttons[pressed].click()
    return widget



#: Per live module: its page, the control the first touch clicks, and the moves that follow
#: (control, how, value: see live_browser.move). Each widget moves at least two controls.
SCENARIOS = {
    "scalebook.live.roofline": ("rooflines", "x_dtype", [
        ("B", "value", 10.0),  # the slider's exponent: B = 2^10
        ("w_dtype", "label", "int8"),
        ("compare", "label", "B200"),
        ("per_example", "checked", True),
        ("D", "value", 9.5),
        ("chip", "label", "V100"),  # no bf16 on a V100: an error, the picture stays
        ("x_dtype", "label", "fp16"),
    ]),
    "scalebook.live.comparison": ("hardware", "metric", [
        ("metric", "label", "HBM bandwidth"),
        ("log", "checked", True),
        ("chips", "options", ["TPU v5e", "H100", "V100"]),
        ("metric", "label", "fp8 FLOP/s"),  # the V100 has none: "n/a", no bar
        ("metric", "label", "fp4 FLOP/s"),  # none has fp4: the empty chart says why
        ("chips", "options", []),  # nothing chosen: an error
    ]),
    "scalebook.live.calculator": ("transformers", "remat", [
        ("seq_len", "value", 131072),  # a typed whole number
        ("preset", "label", "LLaMA-3 8B"),  # fills the model fields
        ("n_kv_heads", "value", 32),  # an edited field: the model becomes "custom"
        ("tokens_trillions", "value", 2.5),  # a typed number
        ("mfu", "value", 0.55),
        ("chip", "label", "TPU v5p"),
        ("n_chips", "value", 0),  # no chips: an error, the picture stays
        ("preset", "label", "LLaMA-3 70B"),  # the fields fill, the error stays (as in Jupyter)
        ("n_chips", "value", 64),  # the memory bar off the scale
        ("remat", "label", "none"),
    ]),
    "scalebook.live.serving": ("inference", "cache_dtype", [
        ("batch", "value", 17),  # the slider's stop 17: batch 512, past the cache limit
        ("n_chips", "value", 4),  # a typed count
        ("prompt_len", "value", 6),  # prompt 128 (stop 6) and reply 128 (stop 13): B* shows
        ("gen_len", "value", 13),
        ("weight_dtype", "label", "fp8"),
        ("compute_dtype", "label", "fp8"),
        ("weight_dtype", "label", "int8"),  # fp8 matmuls need fp8 weights: back to bf16
        ("n_chips", "value", 16),  # beyond an 8-GPU node: an error, the picture stays
        ("chip", "label", "TPU v5e"),
        ("cache_dtype", "label", "int8"),
    ]),
    "scalebook.live.service": ("serving-systems", "policy", [
        ("policy", "label", "static"),  # the static batch: TTFT jumps, goodput falls
        ("kv", "label", "contiguous"),  # reserved caches: fewer sequences fit
        ("seed", "value", 3),  # a typed seed: another trace
        ("policy", "label", "continuous"),
    ]),
    "scalebook.live.layout_planner": ("parallelism", "remat", [
        ("tp", "value", 1),  # a typed degree: the layout no longer fills the chips
        ("fsdp", "value", 2048),
        ("chip", "label", "H100"),  # another HBM: the axes change
        ("preset", "label", "LLaMA-3 405B"),  # fills the model fields: does not fit
        ("n_chips", "value", 8),
        ("best", "click", None),  # the search: nothing fits on 8 H100s, an error
        ("pp", "value", 0),  # a rejected degree: an error, the picture stays
        ("pp", "value", 64),  # more stages than the 8B's 32 layers: that preset is disabled
        ("pp", "value", 1),
        ("n_layers", "value", 40),  # an edited field: the model becomes "custom"
        ("overlap", "checked", False),
        ("n_chips", "value", 1024),
        ("best", "click", None),  # the search sets the layout fields
        ("zero_stage", "label", "ZeRO-1 (optimizer)"),
    ]),
    "scalebook.live.moe": ("moe-long-context", "capacity_factor", [
        ("top_k", "value", 4),  # the selection slider's stop 4: top-16
        ("ep", "value", 3),  # EP = 8: one NVLink node
        ("chip", "label", "TPU v5p"),  # the AllToAll on the torus
        ("d_model", "value", 4096),  # a typed width
        ("ep", "value", 9),  # EP = 512 does not divide 256 experts: an error, the picture stays
        ("ep", "value", 6),
        ("tokens_per_chip", "value", 8),  # 2^8 tokens per chip: memory-bound experts
    ]),
    "scalebook.live.sharded_matmul": ("sharded-matmuls", "dtype", [
        ("D", "value", 14),  # the slider's exponent: D = 2^14, now compute-bound
        ("layout", "label", "FSDP: gather the weights (case 2)"),  # fills mesh and shardings
        ("mesh", "value", "X=2, Y=4"),  # typed: the layout becomes "custom"
        ("rhs", "value", "W[D_Y, F]"),
        ("lhs", "value", "A[B_X, D_Y"),  # unbalanced: an error, the picture stays
        ("lhs", "value", "A[B_X, D_Y]"),  # the fields of a named layout: it is chosen again
        ("wraparound", "label", "lines (no wraparound)"),
        ("axis", "label", "plot axis: X"),
        ("chip", "label", "H100"),
        ("B", "value", 8),
        ("mesh", "value", "X=3, Y=4"),  # B = 256 does not split over 3: an error
    ]),
}



def check_state(driver, module: str, index: int, previous_summary: str | None,
                 changed: str | None = None) -> dict:
    """What the widget shows now equals CPython's render for the values it read after control
    ``changed`` moved, and the Jupyter widget's numbers at those values (plus the controls the
    view wrote back, a preset's fields say, which the page's inputs must now show)."""
    state = lb.widget_state(driver, index)
    values, shown = state["last"]["values"], state["last"]["result"]
    expected = json.loads(json.dumps(render(module, values, changed)))
    assert shown == expected, f"Pyodide and CPython disagree at {values}"
    written = expected.get("controls", {})
    for name, value in written.items():
        assert lb.control_value(driver, index, name) == value, name
    jupyter = jupyter_at(module, {**values, **written}, changed)
    if "error" in expected:
        assert jupyter.error == expected["error"]
        message = driver.execute_script(
            "return document.querySelectorAll('.sb-live')[arguments[0]]"
            ".querySelector('.sb-live-message').textContent", index)
        assert expected["error"] in message
        if previous_summary is not None:  # the last good numbers stay
            assert lb.summary_matches(driver, index, previous_summary)
        return expected
    assert jupyter.error == "" and expected["summary_html"] == jupyter.summary.value
    assert lb.summary_matches(driver, index, expected["summary_html"])
    assert lb.drawn_texts(driver, index) == {  # the figure's texts and the panel titles
        "texts": [t["text"] for t in expected["chart"].get("texts", [])],
        "titles": [panel["title"] for panel in expected["chart"]["panels"]]}
    shown = driver.execute_script(SHOWN, index)
    # an empty panel says why (a note over its plot), and no bar text runs out of its plot
    assert shown["notes"] == [panel.get("note") or "" for panel in expected["chart"]["panels"]]
    for left, right, area_left, area_right, text in shown["texts"]:
        assert area_left - 0.5 <= left and right <= area_right + 0.5, text
    # options the view refuses with the others are disabled, with its reason
    for name, refused in expected.get("disabled", {}).items():
        for value, reason in refused:
            option = shown["options"][name].get(json.dumps(value))
            assert option is not None and (option[0] or option[2]) and option[1] == (
                reason if option[0] else option[1]), (name, value, option)
    drawn = lb.drawn_series(driver, index)
    for panel, datasets in zip(expected["chart"]["panels"], drawn):
        assert len(datasets) == len(panel["series"])
        for series, data in zip(panel["series"], datasets):
            assert data == (series["values"] if series["kind"] == "bars" else series["points"])
    return expected


#: What a widget shows besides its series: each panel's note ("" when hidden), each bar or
#: point text's box against its plot area, and each drop-down option's state by its value
#: (JSON): [disabled, reason, selected].
SHOWN = """
const root = document.querySelectorAll('.sb-live')[arguments[0]];
const specs = JSON.parse(root.dataset.controls);
const form = root.querySelector('.sb-live-controls');
const options = {};
for (const spec of specs.filter(s => s.kind === 'select' || s.kind === 'multiselect')) {
  options[spec.name] = {};
  for (const o of form.elements[spec.name].options)
    options[spec.name][JSON.stringify(spec.options[+o.value][1])] = [o.disabled, o.title, o.selected];
}
return {
  notes: [...root.querySelectorAll('.sb-live-note')].map(n => n.hidden ? '' : n.textContent),
  texts: root.sbLive.charts.flatMap(c => (c.sbTextBoxes || []).map(b =>
    [b.left, b.right, c.chartArea.left, c.chartArea.right, b.text])),
  options};
"""


def first_touch(page: str) -> tuple[str, str, int]:
    """A page's first widget: its module, the control a first touch clicks, its index."""
    module = lb.LIVE_PAGES[page][0]
    return module, SCENARIOS[module][1], 0


FIGURE = """
const root = document.querySelectorAll('.sb-live')[arguments[0]];
const box = root.querySelector('.sb-live-chart');
return {stacked: !!box && box.classList.contains('sb-live-stacked'),
  canvases: [...root.querySelectorAll('.sb-live-chart canvas')].map(c =>
    [c.clientWidth, c.clientHeight, c.getAttribute('role'), c.getAttribute('aria-label') || '']),
  tickFonts: root.sbLive.charts.flatMap(c => Object.values(c.options.scales).map(s => s.ticks.font.size)),
  controls: [...root.querySelectorAll('.sb-live-controls input:not([type=checkbox]), '
    + '.sb-live-controls select, .sb-live-controls button')].map(e =>
    [e.name || e.textContent, e.getBoundingClientRect().height]),
  height: root.getBoundingClientRect().height};
"""


def reserved_height(driver, index: int) -> float:
    """The widget's height before the touch, once the page reserved the live picture's room
    (sbLive.reserved: after the static picture is decoded)."""
    if not lb.wait_for(driver, "return !!document.querySelectorAll('.sb-live')[arguments[0]]"
                               ".sbLive.reserved", index, timeout=10):
        raise AssertionError("the page did not reserve the live picture's room")
    return driver.execute_script(FIGURE, index)["height"]

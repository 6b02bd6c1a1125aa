"""The live widgets on the static site: the same numbers as Jupyter, from scalebook itself, in
a browser with no kernel and nothing loaded from outside the site.

Three layers, cheapest first:

- the contract (no build, no browser): ``scalebook.live`` views agree with the Jupyter
  explorers, and an explorer's ``text/html`` carries its controls, figure and numbers;
- the built site (after ``make book``): the runtime is in ``_static/live`` and only pages
  with a widget load its small script;
- Chromium opening the built pages from disk (file://): for each widget, touch it, wait for
  Python, move controls, and check what the page shows against CPython's
  :func:`scalebook.live.render` for the same control values, and against the Jupyter widget.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import statistics
import time
from pathlib import Path

import pytest

import live_browser as lb
from scalebook.live import render
from scalebook.widgets import chip_comparison, roofline_explorer

REPO = Path(__file__).resolve().parent.parent
LIVE = lb.HTML / "_static" / "live"

# --------------------------------------------------------------------------- the contract


def _jupyter(module: str):
    """The Jupyter explorer a live module stands for, at the book's settings."""
    if module == "scalebook.live.roofline":
        return roofline_explorer("TPU v5e", compare="H100", B=64, D=8192, F=8192)
    if module == "scalebook.live.calculator":
        from scalebook.widgets.transformer_calculator import transformer_calculator

        return transformer_calculator("LLaMA-3 405B", seq_len=8192, tokens_trillions=15.6,
                                      chip="H100", n_chips=16384, mfu=0.4, global_batch=2048,
                                      remat="full")
    if module == "scalebook.live.serving":
        from scalebook.widgets.serving_explorer import serving_explorer

        return serving_explorer()
    if module == "scalebook.live.layout_planner":
        from scalebook.widgets.layout_planner import layout_planner

        return layout_planner(preset="LLaMA-3 70B", chip="TPU v5p", n_chips=2048,
                              global_batch=2048, seq_len=8192, fsdp=256, tp=8, remat="selective")
    if module == "scalebook.live.moe":
        from scalebook.widgets.moe_explorer import moe_explorer

        return moe_explorer()
    if module == "scalebook.live.sharded_matmul":
        from scalebook.widgets.sharded_matmul import sharded_matmul_explorer

        return sharded_matmul_explorer()
    return chip_comparison(["TPU v5e", "TPU v5p", "TPU v6e", "A100", "H100", "B200"],
                           metric="critical:bf16")


def _jupyter_at(module: str, values: dict, pressed: str | None = None):
    """That explorer with its controls set to ``values`` (as the browser read them), then its
    button ``pressed`` clicked, if any (the best-layout search, say)."""
    widget = _jupyter(module)
    widget.set_quietly({k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
    widget.update()
    buttons = getattr(widget, "buttons", {})
    if pressed in buttons:
        buttons[pressed].click()
    return widget


@pytest.mark.parametrize("changes", [
    {}, {"B": 1024.0, "w_dtype": "int8"}, {"compare": "", "per_example": True},
    {"chip": "B200", "compare": "H200", "x_dtype": "fp8", "w_dtype": "fp4", "D": 2 ** 9.5},
])
def test_roofline_view_is_the_jupyter_widget(changes):
    widget = _jupyter("scalebook.live.roofline")
    values = {**widget.values(), **changes}
    widget = _jupyter_at("scalebook.live.roofline", values)
    out = render("scalebook.live.roofline", values)
    assert out["summary_html"] == widget.summary.value
    left, right = out["chart"]["panels"]
    assert left["title"] == widget.artists["title"].get_text()
    assert right["title"] == widget.artists["util_title"].get_text()
    for point in widget.state.points:  # every curve the matplotlib figure draws, point by point
        name = point.chip
        lines = {tuple(map(tuple, s["points"])) for s in left["series"] + right["series"]}
        for artist in ("roof", "util", "point", "now"):
            xy = tuple(zip(*(list(map(float, d)) for d in widget.artists[f"{artist}/{name}"]
                             .get_data())))
            assert xy in lines, f"{artist}/{name} is not in the live chart"


@pytest.mark.parametrize("changes", [
    {}, {"metric": "hbm_bandwidth", "log": True}, {"chips": ["V100", "H100"], "metric": "flops:fp8"},
])
def test_comparison_view_is_the_jupyter_widget(changes):
    widget = _jupyter("scalebook.live.comparison")
    values = {**widget.values(), **changes}
    values["chips"] = list(values["chips"])
    widget = _jupyter_at("scalebook.live.comparison", values)
    out = render("scalebook.live.comparison", values)
    assert out["summary_html"] == widget.summary.value
    (panel,) = out["chart"]["panels"]
    (bars,) = panel["series"]
    assert bars["values"] == [b.get_height() for b in widget.artists["bars"]]
    assert bars["texts"] == [t.get_text() for t in widget.artists["values"]]
    assert panel["x"]["categories"] == [t.get_text() for t in widget.artists["names"]]
    assert panel["y"]["scale"] == ("log" if values["log"] else "linear")


def test_rejected_input_is_an_error_not_an_exception():
    assert render("scalebook.live.roofline", {"chip": "V100"}) == {
        "error": "V100 has no bf16 FLOPs/s figure; it has: fp16"}
    assert "choose at least one chip" in render("scalebook.live.comparison", {"chips": []})["error"]
    assert "not a live widget module" in render("os", {})["error"]
    assert "not a live widget module" in render("scalebook.roofline", {})["error"]


def _placeholder(widget) -> str:
    return widget._repr_mimebundle_()["text/html"]


@pytest.mark.parametrize("module", ["scalebook.live.roofline", "scalebook.live.comparison",
                                    "scalebook.live.calculator"])
def test_static_html_carries_controls_figure_and_numbers(module):
    widget = _jupyter(module)
    page = _placeholder(widget)
    assert f"data-widget='{module}'" in page
    specs = json.loads(re.search(r'data-controls="([^"]*)"', page).group(1)
                       .replace("&quot;", '"').replace("&amp;", "&").replace("&#x27;", "'"))
    assert [s["name"] for s in specs] == list(widget.controls)
    for spec in specs:  # the same options and defaults as the ipywidgets
        control = widget.controls[spec["name"]]
        value = list(control.value) if spec["kind"] == "multiselect" else control.value
        assert spec["value"] == value
        if "options" in spec:
            assert [o[1] for o in spec["options"]] == list(control._options_values)
        assert f"name='{spec['name']}'" in page
    # without JavaScript: the controls stay hidden, the figure and the numbers show
    assert "<form class='sb-live-controls' hidden>" in page
    png = base64.b64decode(re.search(r"src='data:image/png;base64,([^']+)'", page).group(1))
    assert png == widget.png
    assert widget.summary.value in page


def test_a_control_the_static_page_cannot_offer_is_refused():
    import ipywidgets

    from scalebook.widgets.live_html import control_spec

    with pytest.raises(TypeError, match="cannot offer"):
        control_spec("colour", ipywidgets.ColorPicker())


def test_free_text_controls_become_inputs_at_their_values():
    import ipywidgets

    from scalebook.widgets.live_html import control_spec, controls_html

    controls = {"n_chips": ipywidgets.IntText(value=256, description="chips"),
                "mfu": ipywidgets.FloatText(value=0.4, description="MFU"),
                "mesh": ipywidgets.Text(value="data=4, model=2", description="mesh")}
    specs = {name: control_spec(name, c) for name, c in controls.items()}
    assert [s["kind"] for s in specs.values()] == ["int", "float", "text"]
    assert [s["value"] for s in specs.values()] == [256, 0.4, "data=4, model=2"]
    html = controls_html(specs, [("n_chips", "mfu", "mesh")])
    assert "<input type='number' name='n_chips' step='1' value='256'>" in html
    assert "<input type='number' name='mfu' step='any' value='0.4'>" in html
    assert "<input type='text' name='mesh' value='data=4, model=2'>" in html


def test_a_button_becomes_an_html_button_without_a_value():
    import ipywidgets

    from scalebook.widgets.live_html import control_spec, controls_html

    spec = control_spec("best", ipywidgets.Button(description="best layout",
                                                  tooltip="search <all> layouts"))
    assert spec == {"name": "best", "label": "best layout", "kind": "button", "value": None,
                    "tooltip": "search <all> layouts"}
    assert controls_html({"best": spec}, [("best",)]) == (
        "<form class='sb-live-controls' hidden><div class='sb-live-row'><button type='button' "
        "class='sb-live-control' name='best' title='search &lt;all&gt; layouts'>best layout"
        "</button></div></form>")


def test_runtime_cache_key_follows_the_bundled_sources(tmp_path):
    import sys

    sys.path.insert(0, str(REPO / "web"))
    try:
        import build_live
    finally:
        sys.path.remove(str(REPO / "web"))
    for name in ("web", "scalebook"):
        shutil.copytree(REPO / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
    key = build_live.cache_key(tmp_path)
    assert build_live.cache_key(tmp_path) == key
    widgets = tmp_path / "scalebook" / "widgets" / "__init__.py"  # not bundled: same key
    widgets.write_text(widgets.read_text() + "\n# changed\n")
    assert build_live.cache_key(tmp_path) == key
    solver = tmp_path / "scalebook" / "roofline.py"
    solver.write_text(solver.read_text() + "\n# changed\n")
    assert build_live.cache_key(tmp_path) != key
    assert "scalebook/live/roofline.py" in build_live.scalebook_sources(tmp_path)
    assert "scalebook/tinytransformer.py" not in build_live.scalebook_sources(tmp_path)


def test_requests_outside_the_site_are_caught():
    site = (lb.HTML / "book" / "rooflines.html").as_uri()
    urls = [site, "data:image/png;base64,AA==", "blob:null/1234", "https://cdn.example/x.js",
            "http://127.0.0.1:8000/_static/x.js", "file:///etc/hostname", "ws://localhost/"]
    assert lb.outside(urls) == urls[3:]


# --------------------------------------------------------------------------- the built site

def _built(page: str) -> str:
    path = lb.HTML / "book" / f"{page}.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make book` first", pytrace=False)
    return path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_site_ships_one_runtime_and_only_widget_pages_load_its_script():
    manifest = json.loads((LIVE / "manifest.json").read_text())
    for name, size in manifest["bytes"].items():
        assert (LIVE / name).stat().st_size == size, name
    for name in ("widgets.js", "loader.js", "pyodide.asm.wasm.js", "stdlib.zip.js",
                 "scalebook.zip.js", "chart.umd.min.js"):
        assert name in manifest["bytes"]
    for page in ("rooflines", "hardware", "sharded-matmuls", "parallelism", "transformers",
                 "inference"):
        html = _built(page)
        assert ("_static/live/widgets.js" in html) == (page in lb.LIVE_PAGES), page
        assert html.count("class='sb-live'") == len(lb.LIVE_PAGES.get(page, [])), page


# --------------------------------------------------------------------------- in Chromium

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
    "scalebook.live.layout_planner": ("parallelism", "remat", [
        ("tp", "value", 1),  # a typed degree: the layout no longer fills the chips
        ("fsdp", "value", 2048),
        ("chip", "label", "H100"),  # another HBM: the axes change
        ("preset", "label", "LLaMA-3 405B"),  # fills the model fields: does not fit
        ("n_chips", "value", 8),
        ("best", "click", None),  # the search: nothing fits on 8 H100s, an error
        ("pp", "value", 0),  # a rejected degree: an error, the picture stays
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

#: The widget's scripts and style sheet may add this much to a page before any touch.
WIDGET_BYTES_BEFORE_TOUCH = 100_000
#: The whole page before a touch: the bytes read from disk, the issue's measure (a static
#: host's gzip sends about a third of that; the failure message gives both).
PAGE_BYTES_BEFORE_TOUCH = 3_000_000
READY_SECONDS = 5.0
REDRAW_MEDIAN_MS = 50.0


def _gzip_size(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), 6))


def _check_state(driver, module: str, index: int, previous_summary: str | None,
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
    jupyter = _jupyter_at(module, {**values, **written}, changed)
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
    drawn = lb.drawn_series(driver, index)
    for panel, datasets in zip(expected["chart"]["panels"], drawn):
        assert len(datasets) == len(panel["series"])
        for series, data in zip(panel["series"], datasets):
            assert data == (series["values"] if series["kind"] == "bars" else series["points"])
    return expected


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("module", SCENARIOS)
def test_widget_is_live_from_disk(browser, module):
    page, first, moves = SCENARIOS[module]
    _built(page)
    index = lb.LIVE_PAGES[page].index(module)
    lb.console_errors(browser)  # drop what an earlier page logged
    before = lb.open_page(browser, page)
    assert not lb.outside(before), f"{page} loads from outside the site: {lb.outside(before)}"
    # Sphinx appends "?v=<checksum>" once the files exist in _static (a rebuild)
    live_files = {u.split("?")[0].rsplit("/", 1)[-1] for u in before if "/_static/live/" in u}
    assert live_files == {"widgets.js", "widgets.css"}, live_files
    widget_bytes = sum((LIVE / f).stat().st_size for f in live_files)
    assert widget_bytes < WIDGET_BYTES_BEFORE_TOUCH
    files = {lb._site_file(u) for u in before} - {None}
    raw = lb.page_weight(before)
    assert raw < PAGE_BYTES_BEFORE_TOUCH, (
        f"{page}: {raw:,} bytes from disk before a touch "
        f"({sum(_gzip_size(f) for f in files):,} gzip-compressed)")
    assert browser.execute_script(  # before the touch: the static figure, decoded
        "const img = document.querySelectorAll('.sb-live')[arguments[0]]"
        ".querySelector('.sb-live-figure img'); return img.complete && img.naturalWidth > 0",
        index)

    lb.touch(browser, index, first)
    loading = browser.execute_script(
        "const root = document.querySelectorAll('.sb-live')[arguments[0]];"
        "return [root.sbLive.state, root.querySelector('.sb-live-message').textContent];", index)
    assert loading == ["loading", "loading Python…"], loading  # the reader sees it is coming
    state = lb.wait_live(browser, index, timeout=60)
    ready_s = (state["timings"]["ready"] - state["timings"]["touch"]) / 1e3
    assert ready_s < READY_SECONDS, f"Python took {ready_s:.2f} s to start"
    summary = _check_state(browser, module, index, None)["summary_html"]
    for control, how, value in moves:
        assert lb.move(browser, index, control, how, value) is not None, control
        result = _check_state(browser, module, index, summary, control)
        summary = result.get("summary_html", summary)

    after = lb.requests(browser)
    assert not lb.outside(after), f"{page} loads from outside the site: {lb.outside(after)}"
    assert not lb.console_errors(browser)


_CLICK = """
const root = document.querySelectorAll('.sb-live')[arguments[0]];
root.querySelector(`[name='${arguments[1]}']`).click();
return [root.sbLive.state, root.sbLive.redraws.length,
        root.querySelector('.sb-live-message').textContent];
"""


@pytest.mark.browser
@pytest.mark.slow
def test_a_button_says_it_is_busy_and_waits_for_python(browser):
    """The planner's "best layout" pressed before Python is ready runs once it is; pressed
    when live, it first shows that it is searching (the search takes a while), then sets the
    layout fields to what CPython's search finds."""
    module, page = "scalebook.live.layout_planner", "parallelism"
    index = lb.LIVE_PAGES[page].index(module)
    lb.open_page(browser, page)
    assert browser.execute_script(_CLICK, index, "best") == ["loading", 0, "loading Python…"]
    state = lb.wait_live(browser, index)
    deadline = time.monotonic() + 30
    while len(state["redraws"]) < 2 and time.monotonic() < deadline:  # the picture, the search
        time.sleep(0.05)
        state = lb.widget_state(browser, index)
    assert state["last"]["changed"] == "best"
    expected = render(module, state["last"]["values"], "best")
    assert state["last"]["result"] == json.loads(json.dumps(expected))
    assert lb.move(browser, index, "tp", "value", 2) is not None  # another layout
    assert lb.control_value(browser, index, "tp") == 2
    assert browser.execute_script(_CLICK, index, "best") == ["live", 3, "best layout…"]
    deadline = time.monotonic() + 30
    while len(lb.widget_state(browser, index)["redraws"]) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    state = lb.widget_state(browser, index)
    for name, value in state["last"]["result"]["controls"].items():
        assert lb.control_value(browser, index, name) == value, name
    assert state["last"]["result"]["controls"] == expected["controls"]
    assert not lb.console_errors(browser)


@pytest.mark.browser
@pytest.mark.slow
def test_redraw_is_fast(browser):
    """Median redraw (read the controls, Python, Chart.js) for 40 moves of B's slider."""
    lb.open_page(browser, "rooflines")
    lb.touch(browser, 0, "x_dtype")
    lb.wait_live(browser, 0)
    times = [lb.move(browser, 0, "B", "value", 2 + (i % 80) / 8) for i in range(40)]
    assert all(t is not None for t in times)
    assert statistics.median(times) < REDRAW_MEDIAN_MS, times
    assert not lb.console_errors(browser)

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

Each page's first touch at a laptop's size (its layout, no layout shift, no long task while
Python starts, axe before and after) is checked here too, on the same cold start as its
widget's scenario. Each page at a phone's size is in test_live_pages.py, the site as a reader
uses it (hostile input, drag, back and reload, axe, HTTP) in test_live_site.py: three files,
so a parallel run opens them in three browsers at once.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

import live_browser as lb
from live_scenarios import (FIGURE, SCENARIOS, built_page, check_state, first_touch, jupyter,
                            jupyter_at, reserved_height)
from scalebook.live import MESSAGE_LIMIT, render, render_json
from scalebook.widgets import figure as F

pytestmark = pytest.mark.book  # reads the built site (make test: after the build)


REPO = Path(__file__).resolve().parent.parent
LIVE = lb.HTML / "_static" / "live"

# --------------------------------------------------------------------------- the contract


@pytest.mark.parametrize("changes", [
    {}, {"B": 1024.0, "w_dtype": "int8"}, {"compare": "", "per_example": True},
    {"chip": "B200", "compare": "H200", "x_dtype": "fp8", "w_dtype": "fp4", "D": 2 ** 9.5},
])
def test_roofline_view_is_the_jupyter_widget(changes):
    widget = jupyter("scalebook.live.roofline")
    values = {**widget.values(), **changes}
    widget = jupyter_at("scalebook.live.roofline", values)
    out = render("scalebook.live.roofline", values)
    assert out["summary_html"] == widget.summary.value
    # the Jupyter figure is drawn from this chart (scalebook.widgets.figure): read back
    assert widget.chart == out["chart"]
    assert F.read_back(widget.drawing, out["chart"]) == F.chart_data(out["chart"])
    left, right = out["chart"]["panels"]
    assert len(left["series"]) == 1 + 3 * len(widget.state.points)  # a roof, ridge, point each


@pytest.mark.parametrize("changes", [
    {}, {"metric": "hbm_bandwidth", "log": True}, {"chips": ["V100", "H100"], "metric": "flops:fp8"},
    {"chips": ["MI300X", "TPU7x", "GB300 NVL72"], "metric": "flops:fp8"},
])
def test_comparison_view_is_the_jupyter_widget(changes):
    widget = jupyter("scalebook.live.comparison")
    values = {**widget.values(), **changes}
    values["chips"] = list(values["chips"])
    widget = jupyter_at("scalebook.live.comparison", values)
    out = render("scalebook.live.comparison", values)
    assert out["summary_html"] == widget.summary.value
    (panel,) = out["chart"]["panels"]
    (bars,) = panel["series"]
    assert widget.chart == out["chart"]
    assert F.read_back(widget.drawing, out["chart"]) == F.chart_data(out["chart"])
    ticks = widget.figure.axes[0].get_xticklabels()
    assert panel["x"]["categories"] == [t.get_text() for t in ticks] == values["chips"]
    assert panel["y"]["scale"] == ("log" if values["log"] else "linear")


#: The issue's hostile inputs (and a few more): each must come back as a message, never as an
#: exception, a silent stale picture, or a raw echo of the input.
HOSTILE = [
    ("scalebook.live.calculator", {"d_model": 1e200}, "d_model: 1e+200 is out of range"),
    ("scalebook.live.calculator", {"n_layers": 1e300}, "n_layers: 1e+300 is out of range"),
    ("scalebook.live.layout_planner", {"d_model": 1e200}, "d_model: 1e+200 is out of range"),
    ("scalebook.live.layout_planner", {"d_ff": 1e300}, "d_ff: 1e+300 is out of range"),
    ("scalebook.live.layout_planner", {"dp": 1e200}, "dp: 1e+200 is out of range"),
    ("scalebook.live.calculator", {"n_chips": 8e30}, "n_chips: 8e+30 is out of range"),
    ("scalebook.live.serving", {"n_chips": -4e30}, "n_chips: -4e+30 is out of range"),
    ("scalebook.live.service", {"rate": 1e300}, "rate: 1e+300 is out of range"),
    ("scalebook.live.calculator", {"mfu": float("nan")}, "mfu: nan is out of range"),
    ("scalebook.live.sharded_matmul", {"mesh": "X" * 100_000},
     "mesh: 100,000 characters is too long (at most 200)"),
]


@pytest.mark.parametrize("module, controls, message", HOSTILE)
def test_hostile_input_is_a_short_message(module, controls, message):
    out = render(module, controls)
    assert set(out) == {"error"} and out["error"].startswith(message), out
    assert len(out["error"]) <= MESSAGE_LIMIT


@pytest.mark.parametrize("failure", [ZeroDivisionError("float division by zero"),
                                     OverflowError("(34, 'Numerical result out of range')"),
                                     KeyError("chip")])
def test_any_exception_in_a_view_is_a_message(monkeypatch, failure):
    import scalebook.live.roofline as roofline

    def view(controls, changed=None):
        raise failure

    monkeypatch.setattr(roofline, "view", view)
    out = render("scalebook.live.roofline", {})
    assert out == {"error": "cannot compute with these inputs: " + (
        str(failure) if isinstance(failure, ArithmeticError) else repr(failure))}


def test_a_non_finite_number_in_a_view_is_a_message_not_invalid_json(monkeypatch):
    import scalebook.live.roofline as roofline

    real = roofline.view
    monkeypatch.setattr(roofline, "view", lambda controls, changed=None: {
        **real(controls, changed), "summary_html": float("inf")})
    out = render("scalebook.live.roofline", {})
    assert out["error"].startswith("cannot compute with these inputs: these inputs give a "
                                   "number too large to compute (summary_html is not finite)")
    assert json.loads(render_json("scalebook.live.roofline", "{}")) == render(
        "scalebook.live.roofline", {})


def test_a_long_message_from_a_view_is_cut(monkeypatch):
    import scalebook.live.roofline as roofline

    monkeypatch.setattr(roofline, "view", lambda controls, changed=None: {
        "error": "bad: " + "y" * 10_000, "controls": {"B": 2.0}})
    out = render("scalebook.live.roofline", {})
    assert len(out["error"]) == MESSAGE_LIMIT and out["error"].endswith("…")
    assert out["controls"] == {"B": 2.0}


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
    widget = jupyter(module)
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
    assert "<form class='sb-live-controls' autocomplete='off' hidden>" in page
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
    assert ("<input type='number' name='n_chips' step='1' min='0' max='1000000000' "
            "inputmode='numeric' value='256'>") in html
    assert ("<input type='number' name='mfu' step='any' min='0' max='1000000000' "
            "inputmode='decimal' value='0.4'>") in html
    assert "<input type='text' name='mesh' value='data=4, model=2'>" in html


def test_a_button_becomes_an_html_button_without_a_value():
    import ipywidgets

    from scalebook.widgets.live_html import control_spec, controls_html

    spec = control_spec("best", ipywidgets.Button(description="best layout",
                                                  tooltip="search <all> layouts"))
    assert spec == {"name": "best", "label": "best layout", "kind": "button", "value": None,
                    "tooltip": "search <all> layouts"}
    assert controls_html({"best": spec}, [("best",)]) == (
        "<form class='sb-live-controls' autocomplete='off' hidden><div class='sb-live-row'>"
        "<button type='button' "
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

@pytest.mark.slow
def test_chart_js_is_compiled_while_it_streams_in():
    """Chart.js ships with V8's compile hint on its first line, so its functions are compiled
    off the main thread as the script loads, not when the first chart is made."""
    path = LIVE / "chart.umd.min.js"
    if not path.is_file():
        pytest.fail(f"{path} is missing: build the book first with `make book`")
    assert path.read_bytes().startswith(b"//# allFunctionsCalledOnLoad\n")


@pytest.mark.slow
def test_the_site_ships_one_runtime_and_only_widget_pages_load_its_script():
    manifest = json.loads((LIVE / "manifest.json").read_text())
    for name, size in manifest["bytes"].items():
        assert (LIVE / name).stat().st_size == size, name
    for name in ("widgets.js", "loader.js", "worker.js.js", "pyodide.asm.wasm.0.js", "stdlib.zip.0.js",
                 "scalebook.zip.0.js", "chart.umd.min.js"):
        assert name in manifest["bytes"]
    for page in ("rooflines", "hardware", "sharded-matmuls", "parallelism", "transformers",
                 "inference"):
        html = built_page(page)
        assert ("_static/live/widgets.js" in html) == (page in lb.LIVE_PAGES), page
        assert html.count("class='sb-live'") == len(lb.LIVE_PAGES.get(page, [])), page


# --------------------------------------------------------------------------- in Chromium

#: The widget's scripts and style sheet may add this much to a page before any touch.
WIDGET_BYTES_BEFORE_TOUCH = 100_000
#: The whole page before a touch: the bytes read from disk, the issue's measure (a static
#: host's gzip sends about a third of that; the failure message gives both).
PAGE_BYTES_BEFORE_TOUCH = 3_000_000


def _gzip_size(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), 6))



@pytest.fixture(scope="module")
def axe_as_loaded() -> dict[str, list]:
    """axe's violations on pages of the site as loaded at 1280 x 900, before any touch, by
    page ("book/rooflines"): what first_touch_at_desktop found on its pages, which
    test_every_page_is_axe_clean then need not run again on the same page in the same state."""
    return {}


@pytest.fixture(scope="module", params=list(lb.LIVE_PAGES))
def first_touch_at_desktop(request, browser, axe_as_loaded) -> dict:
    """A widget page opened fresh from disk at 1280 x 900 and its first widget touched once,
    with what a reader's first touch shows on the way, for the two tests that need a page's
    first touch at a laptop's size (its widget's scenario, its layout and start-up): one cold
    start of Python serves both, where each used to load the page and start Python again.
    The page stays open and live for the scenario's moves (pytest runs a page's tests
    together: the fixture is module-scoped and parametrized by page)."""
    page = request.param
    module, first, index = first_touch(page)
    built_page(page)
    lb.viewport(browser, 1280, 900)
    lb.console_errors(browser)  # drop what an earlier page logged
    seen: dict = {"page": page, "module": module, "index": index}
    seen["requests_before_touch"] = lb.open_page(browser, page)
    seen["static_figure_decoded"] = browser.execute_script(
        "const img = document.querySelectorAll('.sb-live')[arguments[0]]"
        ".querySelector('.sb-live-figure img'); return img.complete && img.naturalWidth > 0",
        index)
    seen["axe_before_touch"] = axe_as_loaded[f"book/{page}"] = lb.axe_violations(browser)
    seen["reserved_height"] = reserved_height(browser, index)
    lb.watch_long_tasks(browser)
    lb.touch(browser, index, first)
    seen["loading"] = browser.execute_script(
        "const root = document.querySelectorAll('.sb-live')[arguments[0]];"
        "return [root.sbLive.state, root.querySelector('.sb-live-message').textContent];", index)
    state = lb.wait_live(browser, index, timeout=120)  # how fast: bench/live_widgets.py
    touched, ready = state["timings"]["touch"], state["timings"]["ready"]
    seen["blocks_while_starting"] = [t for t in lb.own_script_blocks(browser, touched, ready)
                                     if t[1] > 50]
    seen["long_tasks_while_starting"] = lb.long_tasks(browser, touched)
    # Chart.js was warmed up while Python started (widgets.js warmCharts), to its last step:
    # a warm-up that threw would leave the first picture's drawing to pay Chart.js's compile
    warm = "return performance.getEntriesByName('sb-live-charts-warm').length"
    lb.wait_for(browser, warm, timeout=10)
    seen["charts_warmed"] = browser.execute_script(warm)
    seen["figure_when_live"] = browser.execute_script(FIGURE, index)
    seen["console_errors_when_live"] = lb.console_errors(browser)
    seen["axe_when_live"] = lb.axe_violations(browser)
    return seen


@pytest.mark.browser
@pytest.mark.slow
def test_desktop_side_by_side_without_layout_shift_and_no_long_task(first_touch_at_desktop):
    """At 1280 x 900 the panels stand side by side; going live moves what follows the figure
    by at most 2 px (the page reserved the live picture's room before the touch); while
    Python starts (touch to ready) no script of the widgets blocks the main thread over 50 ms
    (Python starts in a worker; what else the browser does meanwhile is not the widgets'; the
    first picture's drawing is measured by the bench); axe finds nothing to fault before or
    after the touch."""
    seen = first_touch_at_desktop
    assert seen["axe_before_touch"] == []
    assert seen["blocks_while_starting"] == [], (seen["blocks_while_starting"],
                                                 seen["long_tasks_while_starting"])
    assert seen["charts_warmed"] == 1
    figure = seen["figure_when_live"]
    assert not figure["stacked"]
    assert not seen["console_errors_when_live"]
    assert seen["axe_when_live"] == []
    shift = figure["height"] - seen["reserved_height"]  # what follows the widget moves by this
    assert abs(shift) <= 2, shift


@pytest.mark.browser
@pytest.mark.slow
def test_widget_is_live_from_disk(browser, first_touch_at_desktop):
    seen = first_touch_at_desktop
    page, module, index = seen["page"], seen["module"], seen["index"]
    _first, moves = SCENARIOS[module][1:]
    before = seen["requests_before_touch"]
    assert not lb.outside(before), f"{page} loads from outside the site: {lb.outside(before)}"
    # Sphinx appends "?v=<checksum>" once the files exist in _static (a rebuild)
    live_files = {u.split("?")[0].rsplit("/", 1)[-1] for u in before if "/_static/live/" in u}
    # a page with practice blocks also loads theirs (tests/test_practice_page.py)
    live_files -= {"practice.js", "practice.css"}
    assert live_files == {"widgets.js", "widgets.css"}, live_files
    widget_bytes = sum((LIVE / f).stat().st_size for f in live_files)
    assert widget_bytes < WIDGET_BYTES_BEFORE_TOUCH
    files = {lb._site_file(u) for u in before} - {None}
    raw = lb.page_weight(before)
    assert raw < PAGE_BYTES_BEFORE_TOUCH, (
        f"{page}: {raw:,} bytes from disk before a touch "
        f"({sum(_gzip_size(f) for f in files):,} gzip-compressed)")
    assert seen["static_figure_decoded"]  # before the touch: the static figure, decoded
    # the reader sees it is coming
    assert seen["loading"] == ["loading", "loading Python…"], seen["loading"]
    assert not seen["console_errors_when_live"]

    summary = check_state(browser, module, index, None)["summary_html"]
    for control, how, value in moves:
        assert lb.move(browser, index, control, how, value) is not None, control
        result = check_state(browser, module, index, summary, control)
        summary = result.get("summary_html", summary)

    after = lb.requests(browser)
    assert not lb.outside(after), f"{page} loads from outside the site: {lb.outside(after)}"
    assert not lb.console_errors(browser)


@pytest.mark.browser
@pytest.mark.slow
def test_every_page_is_axe_clean(desktop, axe_as_loaded):
    """axe-core (WCAG 2.1 A and AA) finds nothing on any page of the book, as loaded at
    1280 x 900. A widget page's run before its first touch above is that run; the others (or
    all, when this test runs alone) are loaded and run here."""
    found = {}
    for page in lb.all_pages():
        violations = axe_as_loaded.get(page)
        if violations is None:
            desktop.get((lb.HTML / f"{page}.html").as_uri())
            violations = lb.axe_violations(desktop)
        if violations:
            found[page] = violations
    assert found == {}

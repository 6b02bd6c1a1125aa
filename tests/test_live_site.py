"""The live site as a reader uses it, in Chromium: hostile input typed into a page, a drag, back
and reload, a long search that can be cancelled, a busy button, every page at a phone's width,
and the runtime over HTTP. (Every page through axe is in test_live_widgets.py, which has run
axe on the widget pages as loaded already.)"""

from __future__ import annotations

import json

import pytest

import live_browser as lb
from live_scenarios import built_page, check_state, first_touch
from scalebook.live import render

pytestmark = pytest.mark.book  # reads the built site (make test: after the build)


def _live(driver, page: str) -> tuple[str, str, int]:
    """``page`` open with its first widget live at the book's settings: the page the test
    before left live, put back to the book's settings with its reset button (which also
    clears the address), or else opened fresh and touched. Its module, first control, index.
    Starting Python is most of what a page costs here, and these tests ask nothing of the
    start; the tests that do (a button pressed before Python is ready, Back and reload, the
    runtime over HTTP) open their own page."""
    module, first, index = first_touch(page)
    state = None
    if driver.execute_script("return location.href.split(/[?#]/)[0]") == lb.page_url(page):
        state = lb.widget_state(driver, index)
    if state is not None and state["state"] == "live" and not state["busy"]:
        driver.execute_script("document.querySelectorAll('.sb-live')[arguments[0]]"
                              ".querySelector('.sb-live-reset').click()", index)
        lb.settle(driver, index, state["done"])
        assert "sb-" not in driver.execute_script("return location.search + location.hash")
    else:
        lb.open_page(driver, page)
        lb.touch(driver, index, first)
        lb.wait_live(driver, index, timeout=120)
    return module, first, index


#: The issue's hostile inputs, typed into the page: (page, control, value, message start).
#: A page's inputs together (Python starts once per page), the planner's last: the search
#: test that follows goes on from its live page.
HOSTILE_ON_PAGE = [
    ("transformers", "d_model", "1e200", "d_model: 1e+200 is out of range"),
    ("transformers", "n_layers", "1e300", "n_layers: 1e+300 is out of range"),
    ("transformers", "n_chips", "abc", "chips: enter a whole number"),
    ("sharded-matmuls", "mesh", "X" * 100_000, "mesh: 100,000 characters is too long"),
    ("parallelism", "d_model", "1e200", "d_model: 1e+200 is out of range"),
    ("parallelism", "d_ff", "1e300", "d_ff: 1e+300 is out of range"),
    ("parallelism", "dp", "1e200", "dp: 1e+200 is out of range"),
]


@pytest.mark.browser
@pytest.mark.slow
def test_hostile_inputs_show_messages_keep_the_picture_and_lock_nothing(desktop):
    """Each hostile input shows its message (as CPython's render gives it), the last good
    picture and numbers stay, marked stale, every control stays enabled, and putting the
    field back brings the picture back."""
    opened = None
    for page, control, value, message in HOSTILE_ON_PAGE:
        if page != opened:
            module, first, index = _live(desktop, page)
            opened = page
        good = lb.widget_state(desktop, index)["last"]
        old = lb.control_value(desktop, index, control)
        lb.move(desktop, index, control, "value", value)
        shown = desktop.execute_script(
            "const root = document.querySelectorAll('.sb-live')[arguments[0]];"
            "return [root.querySelector('.sb-live-message').textContent,"
            "  root.classList.contains('sb-live-stale'),"
            "  [...root.querySelectorAll('input, select, button')].filter(e => e.disabled).length];",
            index)
        assert shown[0].startswith("⚠ " + message), shown[0][:200]
        assert len(shown[0]) < 500 and shown[1] and shown[2] == 0, shown
        assert lb.summary_matches(desktop, index, good["result"]["summary_html"])
        state = lb.widget_state(desktop, index)
        if state["last"] is not good and state["last"]["values"] != good["values"]:
            expected = render(module, state["last"]["values"], control)
            assert state["last"]["result"] == json.loads(json.dumps(expected))
        lb.move(desktop, index, control, "value", old)
        state = lb.widget_state(desktop, index)
        assert "error" not in state["last"]["result"], state["last"]["result"]
        assert not desktop.execute_script(
            "return document.querySelectorAll('.sb-live')[arguments[0]]"
            ".classList.contains('sb-live-stale')", index)
    assert not lb.console_errors(desktop)


@pytest.mark.browser
@pytest.mark.slow
def test_best_layout_shows_progress_blocks_nothing_and_cancels(desktop):
    """"best layout" (a search over thousands of layouts) counts its seconds with a cancel
    button, and no script of the widgets blocks the main thread over 50 ms while it searches
    (the search runs in the worker); cancelling keeps the old
    picture and the widget (with Python restarted) answers the next move."""
    module, first, index = _live(desktop, "parallelism")
    since = lb.watch_long_tasks(desktop)
    lb.press(desktop, index, "best")
    state = lb.widget_state(desktop, index)
    searching = [t for t in lb.own_script_blocks(desktop, since, state["timings"]["answered"])
                 if t[1] > 50]
    assert searching == [], (searching, lb.long_tasks(desktop, since))
    assert state["last"]["changed"] == "best"
    assert state["last"]["result"] == json.loads(json.dumps(
        render(module, state["last"]["values"], "best")))

    # a new question: the search is kept per question, so the same one again answers at once
    assert lb.move(desktop, index, "overlap", "checked", False) is not None
    check_state(desktop, module, index, None, "overlap")
    state = lb.widget_state(desktop, index)
    picture = state["last"]
    done = state["done"]
    desktop.execute_script(_CLICK, index, "best")
    message = desktop.execute_script(
        "return document.querySelectorAll('.sb-live')[arguments[0]]"
        ".querySelector('.sb-live-message')", index)
    assert message.text.startswith("best layout…")
    desktop.execute_script("arguments[0].querySelector('.sb-live-cancel').click()", message)
    state = lb.settle(desktop, index, done)
    assert "cancelled" in message.text
    assert lb.widget_state(desktop, index)["last"] == picture
    assert lb.move(desktop, index, "tp", "value", 4) is not None
    check_state(desktop, module, index, None, "tp")
    assert not lb.console_errors(desktop)


_CLICK = """
const root = document.querySelectorAll('.sb-live')[arguments[0]];
root.querySelector(`[name='${arguments[1]}']`).click();
return [root.sbLive.state, root.sbLive.redraws.length,
        root.querySelector('.sb-live-message').textContent];
"""


_DRAG = """
const [index, name, positions] = arguments;
const root = document.querySelectorAll('.sb-live')[index];
const field = root.querySelector(`[name='${name}']`);
const before = root.sbLive.done;
for (const p of positions) {
  field.value = String(p);
  field.dispatchEvent(new Event('input', {bubbles: true}));
}
return before;
"""


@pytest.mark.browser
@pytest.mark.slow
def test_a_drag_of_60_moves_settles_on_its_final_value(desktop):
    """60 input events in one go (a fast drag): the widget renders far fewer times than
    that (moves of one control replace each other while Python works) and ends showing
    exactly CPython's picture for the final value."""
    module, first, index = _live(desktop, "rooflines")
    drawn = len(lb.widget_state(desktop, index)["redraws"])
    positions = [2 + k / 8 for k in range(60)]
    state = lb.settle(desktop, index, desktop.execute_script(_DRAG, index, "B", positions))
    assert len(state["redraws"]) - drawn <= 3, len(state["redraws"]) - drawn
    assert state["last"]["values"]["B"] == 2 ** positions[-1]
    check_state(desktop, module, index, None, "B")


@pytest.mark.browser
@pytest.mark.slow
def test_back_and_reload_restore_the_settings_with_their_picture(desktop):
    """The widget's settings go into the page's address; after leaving the page and coming
    Back (or a reload) the controls show them and the picture is CPython's for them; reset
    returns to the book's settings and clears the address."""
    module, first, index = _live(desktop, "rooflines")
    lb.move(desktop, index, "chip", "label", "H100")
    lb.move(desktop, index, "B", "value", 11.0)
    values = lb.widget_state(desktop, index)["last"]["values"]
    assert "sb-roofline=" in desktop.current_url
    lb.open_page(desktop, "hardware")
    desktop.back()
    for again in (desktop.refresh, None):  # Back, then a reload
        state = lb.wait_live(desktop, index, timeout=120)
        assert state["last"]["values"] == values
        assert lb.control_value(desktop, index, "chip") == "H100"
        check_state(desktop, module, index, None, None)
        if again:
            again()
    done = lb.widget_state(desktop, index)["done"]
    desktop.execute_script(
        "document.querySelectorAll('.sb-live')[arguments[0]].querySelector('.sb-live-reset').click()",
        index)
    state = lb.settle(desktop, index, done)
    assert state["last"]["values"]["chip"] == "TPU v5e"
    assert "sb-roofline=" not in desktop.current_url
    assert not lb.console_errors(desktop)


#: Per section of the chapter (h2 and below), whether its content is skipped (not rendered).
_SKIPPED = """
const sections = [...document.querySelectorAll('.bd-article section > section')];
return sections.map(s => !s.firstElementChild.checkVisibility({contentVisibilityAuto: true}));
"""


@pytest.mark.browser
@pytest.mark.slow
def test_far_sections_are_not_rendered_and_whole_page_measures_still_reach_them(phone):
    """On screen a chapter renders only the sections near the view (book.css), so a widget
    going live does not re-lay out the whole chapter; the tests' whole-page measures
    (sideways overflow, axe) render every section first, so nothing a far section does
    escapes them."""
    phone.get((lb.HTML / "book" / "parallelism.html").as_uri())
    skipped = phone.execute_script(_SKIPPED)
    assert len(skipped) > 10 and not skipped[0] and skipped[-1], skipped
    assert lb.overflow_x(phone) == 0
    phone.execute_script(
        "const far = [...document.querySelectorAll('.bd-article section > section')].pop();"
        "const code = document.createElement('code'); code.style.whiteSpace = 'pre';"
        "code.textContent = 'x'.repeat(400); far.append(code);")
    assert phone.execute_script(_SKIPPED)[-1], "the far section is still skipped"
    assert lb.overflow_x(phone) > 0, "a far section's overflow escaped the measure"
    assert phone.execute_script(_SKIPPED)[-1], "the measure left the far section rendered"


@pytest.mark.browser
@pytest.mark.slow
def test_no_page_is_wider_than_a_phone(phone):
    """At 390 x 844 no page of the book scrolls sideways (long inline code did on two)."""
    wide = {}
    for page in lb.all_pages():
        phone.get((lb.HTML / f"{page}.html").as_uri())
        if lb.overflow_x(phone):   # every section laid out, near the screen or not
            wide[page] = lb.wide_elements(phone)
    assert wide == {}


@pytest.mark.browser
@pytest.mark.slow
def test_a_button_says_it_is_busy_and_waits_for_python(desktop):
    """The planner's "best layout" pressed before Python is ready runs once it is (after the
    first picture), and sets the layout fields to what CPython's search finds."""
    module, page = "scalebook.live.layout_planner", "parallelism"
    index = lb.LIVE_PAGES[page].index(module)
    lb.open_page(desktop, page)
    state, drawn, message = desktop.execute_script(_CLICK, index, "best")
    assert (state, drawn) == ("loading", 0) and message.startswith("best layout…"), message
    lb.wait_live(desktop, index, timeout=120)
    state = lb.widget_state(desktop, index)
    assert len(state["redraws"]) == 2 and state["last"]["changed"] == "best"
    expected = render(module, state["last"]["values"], "best")
    assert state["last"]["result"] == json.loads(json.dumps(expected))
    for name, value in expected["controls"].items():
        assert lb.control_value(desktop, index, name) == value, name
    assert not lb.console_errors(desktop)


@pytest.mark.browser
@pytest.mark.slow
def test_over_http_the_worker_streams_the_wasm_file_and_skips_its_embedded_copy(desktop):
    """Served over http (a static host), a page's worker fetches pyodide.asm.wasm itself (so
    Chromium can keep its compiled code for the next page) and loads none of the wasm's
    embedded chunks; the widget is live and shows CPython's picture; a second page in the same
    browser starts from the cache and is live too."""
    module, first, index = first_touch("rooflines")
    built_page("rooflines")
    with lb.http_server(lb.HTML) as address:
        lb.SERVER = address
        try:
            lb.open_page(desktop, "rooflines")
            lb.touch(desktop, index, first)
            lb.wait_live(desktop, index, timeout=120)
            loaded = [u.split("?")[0].rsplit("/", 1)[-1] for u in lb.SERVED
                      if "/_static/live/" in u]
            assert "pyodide.asm.wasm" in loaded, loaded
            assert not [u for u in loaded if u.startswith("pyodide.asm.wasm.")], loaded
            check_state(desktop, module, index, None)
            lb.open_page(desktop, "hardware")
            other, touch, other_index = first_touch("hardware")
            lb.touch(desktop, other_index, touch)
            state = lb.wait_live(desktop, other_index, timeout=120)
            assert desktop.execute_script("return window.sbLiveMarks && "
                                          "document.querySelector('.sb-live').sbLive.state")
            assert state["state"] == "live"
            assert not lb.console_errors(desktop)
        finally:
            lb.SERVER = None

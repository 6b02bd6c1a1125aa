"""Each page with a live widget, in Chromium at a laptop's and at a phone's size: the panels
side by side or stacked, nothing scrolls sideways, going live moves nothing that follows, no
script of the widgets blocks the main thread, and axe finds nothing to fault. The fixtures
``desktop`` and ``phone`` are in conftest.py; the scenarios in live_scenarios.py."""

from __future__ import annotations

import time

import pytest

import live_browser as lb
from live_scenarios import FIGURE, first_touch, reserved_height

pytestmark = pytest.mark.book  # reads the built site (make test: after the build)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("page", list(lb.LIVE_PAGES))
def test_phone_stacks_readable_charts_and_nothing_scrolls_sideways(phone, page):
    """At 390 x 844 the page is no wider than the screen before and after the touch, going
    live moves nothing (the stacked panels' room is reserved before the touch), the
    live panels stack, each at least 300 px wide and 250 px tall with 11 px tick labels,
    every control is at least 44 px tall (a finger), and axe finds nothing to fault."""
    module, first, index = first_touch(page)
    lb.open_page(phone, page)
    assert lb.overflow_x(phone) == 0, lb.wide_elements(phone)
    before = reserved_height(phone, index)
    # a tap focuses the control (a tap on a <select> opens the phone's own picker instead of
    # clicking, which an emulated phone does not pass on): the focus is the first touch
    phone.execute_script("document.querySelectorAll('.sb-live')[arguments[0]]"
                         ".querySelector(`[name='${arguments[1]}']`).focus()", index, first)
    lb.wait_live(phone, index, timeout=120)
    figure = phone.execute_script(FIGURE, index)
    assert figure["stacked"], figure
    assert abs(figure["height"] - before) <= 2, (before, figure["height"])  # no layout shift
    for width, height, role, label in figure["canvases"]:
        assert width >= 300 and height >= 250, figure["canvases"]
        assert role == "img" and label.startswith("chart: ")
    assert min(figure["tickFonts"]) >= 11
    small = [(name, h) for name, h in figure["controls"] if h < 44]
    assert not small, f"controls too small to touch: {small}"
    assert lb.overflow_x(phone) == 0, lb.wide_elements(phone)
    assert lb.axe_violations(phone) == []
    assert not lb.console_errors(phone)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("page", list(lb.LIVE_PAGES))
def test_desktop_side_by_side_without_layout_shift_and_no_long_task(desktop, page):
    """At 1280 x 900 the panels stand side by side; going live moves what follows the figure
    by at most 2 px (the page reserved the live picture's room before the touch); while
    Python starts (touch to ready) no script of the widgets blocks the main thread over 50 ms
    (Python starts in a worker; what else the browser does meanwhile is not the widgets'; the
    first picture's drawing is measured by the bench); axe finds nothing to fault before or
    after the touch."""
    module, first, index = first_touch(page)
    lb.open_page(desktop, page)
    assert lb.axe_violations(desktop) == []
    before = reserved_height(desktop, index)
    lb.watch_long_tasks(desktop)
    lb.touch(desktop, index, first)
    state = lb.wait_live(desktop, index, timeout=120)
    starting = [t for t in lb.own_script_blocks(desktop, state["timings"]["touch"],
                                                state["timings"]["ready"]) if t[1] > 50]
    assert starting == [], (starting, lb.long_tasks(desktop, state["timings"]["touch"]))
    # Chart.js was warmed up while Python started (widgets.js warmCharts), to its last step:
    # a warm-up that threw would leave the first picture's drawing to pay Chart.js's compile
    warm = "return performance.getEntriesByName('sb-live-charts-warm').length"
    for _ in range(100):
        if desktop.execute_script(warm):
            break
        time.sleep(0.1)
    assert desktop.execute_script(warm) == 1
    figure = desktop.execute_script(FIGURE, index)
    assert not figure["stacked"]
    assert not lb.console_errors(desktop)
    assert lb.axe_violations(desktop) == []
    shift = figure["height"] - before  # the widget's own height: what follows it moves by this
    assert abs(shift) <= 2, shift

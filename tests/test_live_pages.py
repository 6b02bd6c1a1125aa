"""Each page with a live widget, in Chromium at a phone's size: the panels stacked, nothing
scrolls sideways, going live moves nothing that follows, and axe finds nothing to fault. The
same page at a laptop's size is in test_live_widgets.py, which starts Python once per page
for its first touch there and its widget's scenario. The fixture ``phone`` is in conftest.py;
the scenarios in live_scenarios.py."""

from __future__ import annotations

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

"""Drive the book's live widgets in headless Chromium, as a reader opening the files from disk.

Shared by tests/test_live_widgets.py and bench/live_widgets.py. Chromium (Debian's chromium
and chromium-driver) runs through Selenium with its DevTools performance log on, so every
request a page makes is recorded: :func:`requests` lists them, :func:`outside` picks those
that leave the site, :func:`page_weight` adds up the bytes of what a page loaded.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

REPO = Path(__file__).resolve().parent.parent
HTML = REPO / "_build" / "html"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

#: The chapters with live widgets, and their widgets' scalebook.live modules in page order.
LIVE_PAGES = {
    "rooflines": ["scalebook.live.roofline"],
    "hardware": ["scalebook.live.comparison"],
    "sharded-matmuls": ["scalebook.live.sharded_matmul"],
    "inference": ["scalebook.live.serving"],
    "transformers": ["scalebook.live.calculator"],
    "parallelism": ["scalebook.live.layout_planner"],
    "moe-long-context": ["scalebook.live.moe"],
}


def missing_browser() -> list[str]:
    """The Debian binaries the browser needs that are not installed."""
    return [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (Selenium WebDriver) with console and network logging, on a fresh
    profile; no network services of its own (no sync, no component updates)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="scalebook-live-")
    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1300,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_script_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def page_url(page: str) -> str:
    return (HTML / "book" / f"{page}.html").as_uri()


#: Documents of the browser itself (its new-tab page loads chrome:// resources on start-up),
#: not of any page of the book.
_BROWSER_UI = ("chrome://", "chrome-untrusted://", "devtools://")


def requests(driver) -> list[str]:
    """URLs requested since the last call (Network.requestWillBeSent in the DevTools log) by
    any document other than the browser's own user interface."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            params = message["params"]
            if not params.get("documentURL", "").startswith(_BROWSER_UI):
                urls.append(params["request"]["url"])
    return urls


def _site_file(url: str) -> Path | None:
    """The file under _build/html that a file:// URL names, or None."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path)).resolve()
    return path if path.is_relative_to(HTML.resolve()) else None


def outside(urls: list[str]) -> list[str]:
    """The URLs that are not a file of the built site. ``data:`` URLs are bytes already in the
    page and ``blob:`` URLs bytes the page made itself; anything else (http, https, ws, a
    file outside _build/html) is a load from outside the site."""
    return [u for u in urls if not (u.startswith(("data:", "blob:")) or _site_file(u))]


def page_weight(urls: list[str]) -> int:
    """Bytes of the distinct site files among ``urls`` (the page's data: images are inside
    the HTML file, so they count with it)."""
    files = {_site_file(u) for u in urls} - {None}
    return sum(f.stat().st_size for f in files)


def open_page(driver, page: str) -> list[str]:
    """Load ``page`` from disk and return the URLs it requested before any touch."""
    requests(driver)  # drop what came before
    driver.get(page_url(page))
    deadline = time.monotonic() + 30
    while driver.execute_script("return document.readyState") != "complete":
        if time.monotonic() > deadline:
            raise TimeoutError(f"{page} did not finish loading")
        time.sleep(0.05)
    return requests(driver)


def widget_element(driver, index: int):
    return driver.execute_script(
        "return document.querySelectorAll('.sb-live')[arguments[0]]", index)


def widget_state(driver, index: int) -> dict:
    """The widget's ``sbLive`` record (web/src/widgets.js) without its Chart objects."""
    return driver.execute_script(
        "const s = document.querySelectorAll('.sb-live')[arguments[0]].sbLive;"
        "return {state: s.state, last: s.last, timings: s.timings, redraws: s.redraws};", index)


def wait_live(driver, index: int, timeout: float = 60.0) -> dict:
    """Wait until widget ``index`` has drawn its first live picture; returns its state."""
    deadline = time.monotonic() + timeout
    while True:
        state = widget_state(driver, index)
        if state["state"] == "failed":
            raise RuntimeError(f"widget {index} failed to start: {console_errors(driver)}")
        if state["state"] == "live" and state["last"] is not None:
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"widget {index} not live after {timeout} s: {state['state']}")
        time.sleep(0.02)


def touch(driver, index: int, control: str) -> None:
    """A reader's first touch: a real mouse click on control ``control`` of widget ``index``."""
    from selenium.webdriver.common.by import By

    root = widget_element(driver, index)
    field = root.find_element(By.CSS_SELECTOR, f"[name='{control}']")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
    field.click()


#: Set a control's input as a reader would leave it, then fire the event a reader's action
#: fires (input for sliders, lists and boxes; change for typed fields); returns the redraw's
#: milliseconds as the widget measured them, or null when no redraw happened.
_MOVE = """
const [index, name, how, value] = arguments;
const root = document.querySelectorAll('.sb-live')[index];
const field = root.querySelector(`[name='${name}']`);
const before = root.sbLive.redraws.length;
if (how === 'checked') field.checked = value;
else if (how === 'options') for (const o of field.options) o.selected = value.includes(o.textContent);
else if (how === 'label') field.value = [...field.options].find(o => o.textContent === value).value;
else field.value = String(value);
const typed = field.type === 'number' || field.type === 'text';
field.dispatchEvent(new Event(typed ? 'change' : 'input', {bubbles: true}));
const after = root.sbLive.redraws;
return after.length > before ? after[after.length - 1] : null;
"""


def move(driver, index: int, control: str, how: str, value: object) -> float | None:
    """Move a control of widget ``index``: ``how`` is "value" (a slider position or a typed
    number/text), "label" (choose the option shown as ``value``), "options" (select exactly
    the options shown in the list ``value``), "checked" (tick or untick) or "click" (press
    the button ``control``; ``value`` is unused: see :func:`press`)."""
    if how == "click":
        return press(driver, index, control)
    return driver.execute_script(_MOVE, index, control, how, value)


_PRESS = """
const [index, name] = arguments;
const root = document.querySelectorAll('.sb-live')[index];
const before = root.sbLive.redraws.length;
root.querySelector(`[name='${name}']`).click();
return before;
"""


def press(driver, index: int, button: str, timeout: float = 30.0) -> float | None:
    """Click button ``button`` of widget ``index`` and wait for the redraw its action makes
    (the page first paints a busy message, so the redraw comes after the click returns);
    returns the redraw's milliseconds, or None when none came within ``timeout`` seconds."""
    before = driver.execute_script(_PRESS, index, button)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        redraws = widget_state(driver, index)["redraws"]
        if len(redraws) > before:
            return redraws[-1]
        time.sleep(0.02)
    return None


def control_value(driver, index: int, name: str) -> object:
    """The value control ``name`` of widget ``index`` shows now, as the widget reads it: the
    chosen option's value, a checkbox's state, a number field's number, else the text."""
    return driver.execute_script(
        "const root = document.querySelectorAll('.sb-live')[arguments[0]];"
        "const spec = JSON.parse(root.dataset.controls).find(s => s.name === arguments[1]);"
        "const field = root.querySelector(`[name='${arguments[1]}']`);"
        "if (spec.kind === 'select') return spec.options[+field.value][1];"
        "if (spec.kind === 'checkbox') return field.checked;"
        "if (spec.kind === 'int' || spec.kind === 'float') return Number(field.value);"
        "return field.value;", index, name)


def summary_matches(driver, index: int, expected_html: str) -> bool:
    """Whether the widget shows ``expected_html`` as its summary, compared after the browser
    parsed both (so quoting and entity spelling do not matter, every character does)."""
    return driver.execute_script(
        "const t = document.createElement('template'); t.innerHTML = arguments[1];"
        "const shown = document.querySelectorAll('.sb-live')[arguments[0]]"
        "  .querySelector('.sb-live-summary');"
        "return shown.innerHTML === t.innerHTML;", index, expected_html)


def drawn_series(driver, index: int) -> list[list]:
    """What Chart.js holds, per panel and dataset: [[x, y], ...] for lines and points, the
    heights for bars."""
    return driver.execute_script(
        "const s = document.querySelectorAll('.sb-live')[arguments[0]].sbLive;"
        "return s.charts.map(c => c.data.datasets.map(d => d.data.map("
        "  p => (typeof p === 'number') ? p : [p.x, p.y])));", index)


def drawn_texts(driver, index: int) -> dict[str, list[str]]:
    """The texts the live figure shows: the figure's own lines ("texts", a flag say) and the
    panel titles ("titles"), as the reader sees them (textContent)."""
    return driver.execute_script(
        "const root = document.querySelectorAll('.sb-live')[arguments[0]];"
        "const text = sel => [...root.querySelectorAll(sel)].map(e => e.textContent);"
        "return {texts: text('.sb-live-texts > div'), titles: text('.sb-live-title')};", index)


#: Console errors that are not the widgets', each for a stated reason: Sphinx 7.4 writes
#: sphinx-thebe's inline configuration twice, so its second `const` declaration throws
#: (harmless upstream bug, thebe is off; also allowed in tests/test_book.py).
KNOWN_NOISE = (re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),)


def console_errors(driver, allowed: tuple = KNOWN_NOISE) -> list[str]:
    """SEVERE console entries since the last call, less those matching ``allowed``."""
    return [e["message"] for e in driver.get_log("browser")
            if e.get("level") == "SEVERE" and not any(p.search(e["message"]) for p in allowed)]

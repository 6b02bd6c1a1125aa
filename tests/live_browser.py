"""Drive the book's live widgets in headless Chromium, as a reader opening the files from disk.

Shared by tests/test_live_*.py, tests/live_scenarios.py and bench/live_widgets.py. Chromium (Debian's chromium
and chromium-driver) runs through Selenium with its DevTools performance log on, so every
request a page makes is recorded: :func:`requests` lists them, :func:`outside` picks those
that leave the site, :func:`page_weight` adds up the bytes of what a page loaded.
"""

from __future__ import annotations

import functools
import http.server

import json
import re
import shutil
import tempfile
import threading
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
    "serving-systems": ["scalebook.live.service"],
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


#: Where pages are opened: None, from disk (file://, the default); else the address of a
#: static HTTP server of HTML (:func:`http_server`), as a reader's static host serves them.
SERVER: str | None = None


def all_pages() -> list[str]:
    """Every page of the built site, as paths under _build/html without ".html"; not the root's
    redirect (a bare ``<meta http-equiv="Refresh">`` to book/index.html, itself in the list):
    opened, it is already on its way to that page, and a script run on it meets a document
    being replaced."""
    return sorted(p.relative_to(HTML).with_suffix("").as_posix()
                  for p in HTML.glob("**/*.html")
                  if "_static" not in p.parts and "_sources" not in p.parts
                  and not _is_redirect(p))


def _is_redirect(path) -> bool:
    head = path.read_text("utf-8")[:400].lower()
    return head.lstrip().startswith("<meta http-equiv=\"refresh\"") and "<body" not in head


def page_url(page: str) -> str:
    if SERVER is not None:
        return f"{SERVER}/book/{page}.html"
    return (HTML / "book" / f"{page}.html").as_uri()


@contextmanager
def http_server(root: Path) -> Iterator[str]:
    """A static HTTP server of ``root`` on a free local port, for the time of the block: its
    address ("http://127.0.0.1:PORT"). ``.wasm`` goes out as application/wasm."""
    SERVED.clear()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


#: The paths :func:`http_server` served, in order (a worker's requests included, which the
#: DevTools log of the page leaves out).
SERVED: list[str] = []


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".js": "text/javascript"}

    def do_GET(self) -> None:
        SERVED.append(self.path)
        super().do_GET()

    def log_message(self, *args) -> None:  # the bench prints its own lines
        pass


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
    if SERVER is not None and url.startswith(SERVER + "/"):
        path = (HTML / unquote(parsed.path).lstrip("/")).resolve()
        return path if path.is_relative_to(HTML.resolve()) else None
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
    if not wait_for(driver, "return document.readyState === 'complete'", timeout=30):
        raise TimeoutError(f"{page} did not finish loading")
    return requests(driver)


#: Waits inside the page until ``condition`` (a function body over ``args``) returns a truthy
#: value, checking every 20 ms on the page's timer; answers that value, or null at the
#: deadline.
_WAIT_FOR = """
const [condition, args, timeout] = arguments;
const done = arguments[arguments.length - 1];
const test = new Function(condition);
const deadline = performance.now() + timeout * 1000;
(function check() {
  let value = null;
  try { value = test.apply(null, args); } catch (error) { value = null; }
  if (value) return done(value);
  if (performance.now() > deadline) return done(null);
  setTimeout(check, 20);
})();
"""


def wait_for(driver, condition: str, *args, timeout: float = 20.0):
    """Wait until the JavaScript function body ``condition`` (its arguments ``args``) returns
    a truthy value in the page, and return that value; None if it never did in ``timeout``
    seconds. The waiting happens in the page (one WebDriver call), not in a loop of calls from
    here, which would keep chromedriver, the page and this process busy the whole time."""
    previous = driver.timeouts.script
    driver.set_script_timeout(timeout + 30)
    try:
        return driver.execute_async_script(_WAIT_FOR, condition, list(args), timeout)
    finally:
        driver.set_script_timeout(previous)


def widget_element(driver, index: int):
    return driver.execute_script(
        "return document.querySelectorAll('.sb-live')[arguments[0]]", index)


def widget_state(driver, index: int) -> dict:
    """The widget's ``sbLive`` record (web/src/widgets.js) without its Chart objects."""
    return driver.execute_script(
        "const s = document.querySelectorAll('.sb-live')[arguments[0]].sbLive;"
        "return {state: s.state, busy: s.busy, done: s.done, last: s.last, timings: s.timings,"
        " redraws: s.redraws};", index)


#: Whether widget ``arguments[0]`` has reached ``arguments[1]``: "live" (its first live
#: picture drawn, nothing running; "failed" if it could not start) or "settled" (a request
#: finished after count ``arguments[2]``, nothing queued or running), for :func:`wait_for`.
_REACHED = """
const [index, until, before] = arguments;
const s = document.querySelectorAll('.sb-live')[index].sbLive;
if (until === 'live' && s.state === 'failed') return 'failed';
if (until === 'live' && s.state === 'live' && s.last != null && !s.busy) return until;
if (until === 'settled' && s.done > before && !s.busy) return until;
return null;
"""


def wait_live(driver, index: int, timeout: float = 60.0) -> dict:
    """Wait until widget ``index`` has drawn its first live picture; returns its state."""
    outcome = wait_for(driver, _REACHED, index, "live", 0, timeout=timeout)
    state = widget_state(driver, index)
    if outcome == "failed":
        raise RuntimeError(f"widget {index} failed to start: {console_errors(driver)}")
    if outcome != "live":
        raise TimeoutError(f"widget {index} not live after {timeout} s: {state['state']}")
    return state


def touch(driver, index: int, control: str) -> None:
    """A reader's first touch: a real mouse click on control ``control`` of widget ``index``."""
    from selenium.webdriver.common.by import By

    root = widget_element(driver, index)
    field = root.find_element(By.CSS_SELECTOR, f"[name='{control}']")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
    field.click()


#: Set a control's input as a reader would leave it, then fire the event a reader's action
#: fires (input for sliders, lists and boxes; change for typed fields). Returns the widget's
#: count of finished requests before the move.
_MOVE = """
const [index, name, how, value] = arguments;
const root = document.querySelectorAll('.sb-live')[index];
const field = root.querySelector(`[name='${name}']`);
const before = root.sbLive.done;
if (how === 'checked') field.checked = value;
else if (how === 'options') for (const o of field.options) o.selected = value.includes(o.textContent);
else if (how === 'label') field.value = [...field.options].find(o => o.textContent === value).value;
else field.value = String(value);
const typed = field.type === 'number' || field.type === 'text';
field.dispatchEvent(new Event(typed ? 'change' : 'input', {bubbles: true}));
return before;
"""


def settle(driver, index: int, done_before: int, timeout: float = 60.0) -> dict:
    """Wait until widget ``index`` has finished a request after ``done_before`` and has
    nothing queued or running (Python answers in a worker, asynchronously); its state."""
    outcome = wait_for(driver, _REACHED, index, "settled", done_before, timeout=timeout)
    state = widget_state(driver, index)
    if outcome != "settled":
        raise TimeoutError(f"widget {index} did not settle in {timeout} s: {state['state']}")
    return state


def move(driver, index: int, control: str, how: str, value: object) -> float | None:
    """Move a control of widget ``index`` and wait for the widget to settle: ``how`` is
    "value" (a slider position or a typed number/text), "label" (choose the option shown as
    ``value``), "options" (select exactly the options shown in the list ``value``),
    "checked" (tick or untick) or "click" (press the button ``control``; ``value`` is
    unused). Returns the milliseconds from the move to its picture, or None when the move
    drew nothing (a refused input)."""
    if how == "click":
        return press(driver, index, control)
    drawn = len(widget_state(driver, index)["redraws"])
    state = settle(driver, index, driver.execute_script(_MOVE, index, control, how, value))
    return state["redraws"][-1] if len(state["redraws"]) > drawn else None


_PRESS = """
const [index, name] = arguments;
const root = document.querySelectorAll('.sb-live')[index];
const before = root.sbLive.done;
root.querySelector(`[name='${name}']`).click();
return before;
"""


def press(driver, index: int, button: str, timeout: float = 60.0) -> float | None:
    """Click button ``button`` of widget ``index`` and wait for its action's picture;
    returns its milliseconds, or None when it drew nothing."""
    drawn = len(widget_state(driver, index)["redraws"])
    state = settle(driver, index, driver.execute_script(_PRESS, index, button), timeout)
    return state["redraws"][-1] if len(state["redraws"]) > drawn else None


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


#: Console errors that are not the widgets', each for a stated reason. None today: the
#: THEBE_JS_URL error Sphinx 7.4 caused on every page is gone (_ext/theme_fixes.py).
KNOWN_NOISE: tuple = ()


def console_errors(driver, allowed: tuple = KNOWN_NOISE) -> list[str]:
    """SEVERE console entries since the last call, less those matching ``allowed``."""
    return [e["message"] for e in driver.get_log("browser")
            if e.get("level") == "SEVERE" and not any(p.search(e["message"]) for p in allowed)]


def viewport(driver, width: int, height: int, *, mobile: bool = False) -> None:
    """Make the page's viewport ``width`` x ``height`` CSS pixels (a phone with ``mobile``:
    its meta viewport applies and touch events exist), for the pages loaded next."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 3 if mobile else 1,
        "mobile": mobile})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": mobile})


#: Records every long task (a main-thread task over 50 ms, the browser's own definition)
#: from now on in window.sbLongTasks as [start ms, duration ms], and every long animation
#: frame's scripts (Chromium's Long Animation Frames API: which script ran how long in a frame
#: over 50 ms) in window.sbLongScripts as [start ms, duration ms, source URL, invoker].
_WATCH_LONG_TASKS = """
window.sbLongTasks = [];
window.sbLongScripts = [];
new PerformanceObserver(list => {
  for (const e of list.getEntries()) window.sbLongTasks.push([e.startTime, e.duration]);
}).observe({type: 'longtask'});
new PerformanceObserver(list => {
  for (const frame of list.getEntries())
    for (const s of frame.scripts || [])
      window.sbLongScripts.push([s.startTime, s.duration, s.sourceURL || '', s.invoker || '']);
}).observe({type: 'long-animation-frame'});
return performance.now();
"""


def watch_long_tasks(driver) -> float:
    """Start recording the page's long tasks; returns the page's clock (ms) now."""
    return driver.execute_script(_WATCH_LONG_TASKS)


def own_script_blocks(driver, since: float = 0.0, until: float = float("inf")
                      ) -> list[list]:
    """The main-thread blocks the live widgets' own scripts caused between ``since`` and
    ``until`` (the page's clock, ms): [[start, ms, script, invoker], ...] for each script of
    the site's ``_static/live/`` (widgets.js, loader.js, Chart.js, the embedded runtime's
    chunks) that ran in a long animation frame. What the browser does for other reasons in
    the same stretch (a garbage collection, another page's work on a loaded machine, axe
    itself) is not the widgets' to answer for, and is left out."""
    return [s for s in script_blocks(driver, since, until) if "/_static/live/" in s[2]]


def script_blocks(driver, since: float = 0.0, until: float = float("inf")) -> list[list]:
    """Every script that ran in a long animation frame between ``since`` and ``until``, from
    any source: [[start, ms, script, invoker], ...]. A callback the widgets scheduled
    (``setTimeout``, an idle callback) often carries no source URL, so
    :func:`own_script_blocks` misses it; this does not."""
    return [s for s in driver.execute_script("return window.sbLongScripts || []")
            if since <= s[0] < until]


def long_tasks(driver, since: float = 0.0) -> list[list[float]]:
    """The long tasks recorded since ``since`` (the page's clock, ms): [[start, ms], ...]."""
    return [t for t in driver.execute_script("return window.sbLongTasks || []") if t[0] >= since]


AXE = REPO / "web" / "node_modules" / "axe-core" / "axe.min.js"
#: WCAG 2.1 levels A and AA, the ADA Title II rule's standard.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_violations(driver) -> list[dict]:
    """axe-core (pinned in web/package-lock.json, injected here, never shipped) over the whole
    page for WCAG 2.1 A and AA: [{id, impact, nodes: [target :: summary, ...]}, ...]. Without
    preloading style sheets: from file:// its XMLHttpRequests for them fail (console errors
    that are axe's, not the page's), and the one rule that reads them (orientation lock)
    then reports "incomplete", never a violation, either way."""
    if not driver.execute_script("return !!window.axe"):
        driver.execute_script(AXE.read_text(encoding="utf-8"))
    with every_section_rendered(driver):
        return driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}, preload: false})"
            ".then(r => done("
            "  r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n =>"
            "    n.target.join(' ') + ' :: ' + n.failureSummary.slice(0, 300))}))),"
            "  e => done([{id: 'axe failed', impact: 'critical', nodes: [String(e)]}]));", WCAG_AA)


def overflow_x(driver) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no sideways scrolling), in
    any of its sections, near the screen or not."""
    with every_section_rendered(driver):
        return driver.execute_script(
            "return Math.max(0, document.documentElement.scrollWidth - window.innerWidth)")


@contextmanager
def every_section_rendered(driver) -> Iterator[None]:
    """For the time of the block, the page renders every section, not only those near the
    screen (book.css: ``content-visibility: auto``), as each looks once a reader scrolls to
    it. A measure of the whole page needs it: a skipped section's overflow does not widen the
    page, and axe cannot find the colours behind text that is not painted. Afterwards the
    page skips its far sections again."""
    driver.execute_script(
        "const s = document.createElement('style'); s.id = 'sb-test-every-section';"
        "s.textContent = '* { content-visibility: visible !important; }';"
        "document.head.append(s); document.body.offsetHeight;")
    try:
        yield
    finally:
        driver.execute_script("document.getElementById('sb-test-every-section')?.remove()")


def wide_elements(driver) -> list[str]:
    """The elements that reach past the viewport's right edge (for a failure message)."""
    with every_section_rendered(driver):
        return driver.execute_script(
            "return [...document.querySelectorAll('body *')].filter(e => {"
            "  const r = e.getBoundingClientRect(); return r.right > window.innerWidth + 1"
            "    && r.width > 0 && getComputedStyle(e).position !== 'fixed';"
            "}).slice(0, 8).map(e => e.tagName + '.' + e.className + ' '"
            "  + (e.textContent || '').slice(0, 60))")

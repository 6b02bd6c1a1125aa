"""The live widgets on the static site, measured in headless Chromium from disk (file://) and
over HTTP (a local static server, as a reader's static host serves the site).

Prints, per built site (the current one, and with ``--before DIR`` an older build measured in
the same run, side by side) and per way of opening it (file://, http):

1. each widget page's weight before any touch (site files read from disk, and gzip);
2. first-touch bytes: the site files a page loads after the first touch (the runtime);
3. time to live: from the first touch to the first live picture, on a first page (a fresh
   browser profile) and on a second page (the same profile: the runtime's decoded files in
   its IndexedDB cache, where the site has one);
4. the longest main-thread block from the touch to the first live picture, and while "best
   layout" searches (touch to picture): the longest "long task" or script of a Long Animation
   Frame (PerformanceObserver), whatever caused it (the headline); and the longest block of
   scripts loaded from ``_static/live/`` (LoAF's source URL), which misses the widgets' own
   ``setTimeout``/idle callbacks (they carry no URL), so it under-reports;
5. redraw time per control move (from the move to its picture): median and 95th percentile.

    make book && .venv/bin/python bench/live_widgets.py [--before DIR] [--runs 3] [--moves 30]
        [--only file|http] [--pages rooflines,inference]

Timings are wall-clock on whatever machine runs this: compare the columns of one run only.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import live_browser as lb  # noqa: E402

#: Widget pages, the control a first touch clicks, and a slider moved for the redraw figure.
PAGES = {
    "rooflines": ("x_dtype", "B", [2 + k / 8 for k in range(0, 100, 3)]),
    "hardware": ("metric", None, []),
    "sharded-matmuls": ("dtype", "B", list(range(3, 21))),
    "inference": ("cache_dtype", "batch", list(range(0, 24, 2))),
    "transformers": ("remat", "mfu", [0.3, 0.4, 0.5, 0.6, 0.45]),
    "parallelism": ("remat", None, []),
    "moe-long-context": ("capacity_factor", None, []),
    "serving-systems": ("policy", None, []),
}

#: Move a control and return when its picture is drawn: works on today's widgets (which
#: answer asynchronously, from a worker) and on older builds (which redrew synchronously).
_MOVE = """
const [name, value, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const root = document.querySelector('.sb-live');
const field = root.querySelector(`[name='${name}']`);
const before = root.sbLive.redraws.length;
field.value = String(value);
field.dispatchEvent(new Event(field.type === 'number' ? 'change' : 'input', {bubbles: true}));
const wait = () => (root.sbLive.redraws.length > before && !root.sbLive.busy)
  ? done(root.sbLive.redraws[root.sbLive.redraws.length - 1]) : setTimeout(wait, 5);
wait();
"""


def _live(driver, page: str, touch: str) -> dict:
    """Open ``page``, touch its first widget, wait for the live picture: ms to live, the
    longest long task meanwhile, and the bytes loaded after the touch."""
    lb.open_page(driver, page)
    lb.watch_long_tasks(driver)
    served = len(lb.SERVED)
    lb.touch(driver, 0, touch)
    deadline = time.monotonic() + 180
    while True:
        state = driver.execute_script(
            "const s = document.querySelector('.sb-live').sbLive;"
            "return {state: s.state, n: s.redraws.length, busy: !!s.busy, t: s.timings};")
        if state["state"] == "live" and state["n"] > 0 and not state["busy"]:
            break
        if state["state"] == "failed" or time.monotonic() > deadline:
            raise RuntimeError(f"{page}: not live ({state['state']})")
        time.sleep(0.01)
    drawn = driver.execute_script("return performance.now()")
    touched = state["t"]["touch"]
    # the longest block: any long task, or any script of a long animation frame, whatever
    # its source (the widgets' timer and idle callbacks carry no URL: "own" misses them)
    blocks = [d for s, d in lb.long_tasks(driver, touched) if s <= drawn]
    blocks += [b[1] for b in lb.script_blocks(driver, touched, drawn)]
    own = [b[1] for b in lb.own_script_blocks(driver, touched, drawn)]
    loaded = lb.requests(driver)
    if lb.SERVER is not None:  # the worker's own fetches (the .wasm) too, which the log misses
        loaded = [lb.SERVER + path for path in lb.SERVED[served:]]
    return {"ms": drawn - touched, "block": max(blocks, default=0.0),
            "own": max(own, default=0.0), "bytes": lb.page_weight(loaded)}


def _best(driver) -> dict:
    """On the planner page (live already): press "best layout", wait for its picture."""
    since = lb.watch_long_tasks(driver)
    start = time.monotonic()
    before = driver.execute_script("return document.querySelector('.sb-live').sbLive.redraws.length")
    driver.execute_script("document.querySelector('.sb-live [name=best]').click()")
    while driver.execute_script(
            "const s = document.querySelector('.sb-live').sbLive;"
            "return s.redraws.length <= arguments[0] || !!s.busy;", before):
        time.sleep(0.01)
    blocks = [d for s, d in lb.long_tasks(driver, since)]
    blocks += [b[1] for b in lb.script_blocks(driver, since)]
    return {"ms": (time.monotonic() - start) * 1e3, "block": max(blocks, default=0.0)}


def _redraws(driver, control: str, positions: list, moves: int) -> list[float]:
    driver.set_script_timeout(60)
    return [driver.execute_async_script(_MOVE, control, positions[i % len(positions)])
            for i in range(moves)]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure(html: Path, runs: int, moves: int) -> dict:
    """Every figure of the module docstring for the site built in ``html``."""
    lb.HTML = html
    out = {"weight": {}, "first": {}, "second": {}, "best": [], "redraw": {}}
    names = list(PAGES)
    for page, (touch, control, positions) in PAGES.items():
        # the second page: the next widget page, in the same browser (its cache, if any)
        other = names[(names.index(page) + 1) % len(names)]
        for _ in range(runs):
            with lb.chromium() as driver:  # a fresh profile: nothing cached
                lb.viewport(driver, 1280, 900)
                files = {lb._site_file(u) for u in lb.open_page(driver, page)} - {None}
                out["weight"][page] = (sum(f.stat().st_size for f in files),
                                       sum(len(gzip.compress(f.read_bytes(), 6)) for f in files))
                out["first"].setdefault(page, []).append(_live(driver, page, touch))
                if control and page not in out["redraw"]:
                    out["redraw"][page] = _redraws(driver, control, positions, moves)
                if page == "parallelism":
                    out["best"].append(_best(driver))
                out["second"].setdefault(page, []).append(_live(driver, other, PAGES[other][0]))
    return out


def _row(values: list[dict], key: str) -> str:
    xs = [v[key] for v in values]
    return f"{statistics.median(xs):8.0f} (max {max(xs):6.0f})"


def report(name: str, m: dict) -> None:
    print(f"\n=== {name}")
    print("page weight before a touch, bytes (raw from disk / gzip):")
    for page, (raw, packed) in m["weight"].items():
        print(f"   {page:<16}{raw:>12,}{packed:>12,}")
    print("first touch loads, bytes (site files after the touch: first page, then the next "
          "page in the same browser):")
    for page in m["first"]:
        print(f"   {page:<16}{m['first'][page][0]['bytes']:>12,}{m['second'][page][0]['bytes']:>12,}")
    print("time to live, ms: this page first, then the next page in the same browser "
          "(median of runs, max);\nlongest main-thread block from touch to picture, ms (any long task or long-frame script,\n"
          "whatever its source; then only the scripts of _static/live/, which misses the widgets'\n"
          "timer callbacks)")
    for page in m["first"]:
        print(f"   {page:<16}first {_row(m['first'][page], 'ms')}  second "
              f"{_row(m['second'][page], 'ms')}  block first {_row(m['first'][page], 'block')}"
              f"  second {_row(m['second'][page], 'block')}  widgets' own scripts: first "
              f"{_row(m['first'][page], 'own')}  second {_row(m['second'][page], 'own')}")
    if m["best"]:
        print(f"best layout: press to picture {_row(m['best'], 'ms')} ms, longest main-thread "
              f"block {_row(m['best'], 'block')} ms")
    print("redraw per move, ms: median, p95, max")
    for page, times in m["redraw"].items():
        print(f"   {page:<16}{statistics.median(times):8.1f}{_p95(times):8.1f}{max(times):8.1f}"
              f"   ({len(times)} moves)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="an older build's _build/html, measured too")
    parser.add_argument("--runs", type=int, default=3, help="fresh browsers per page")
    parser.add_argument("--moves", type=int, default=30, help="slider moves per page")
    parser.add_argument("--only", choices=("file", "http"), help="one way of opening pages")
    parser.add_argument("--pages", help="comma-separated pages (default: every widget page)")
    args = parser.parse_args()
    if args.pages:
        for page in set(PAGES) - set(args.pages.split(",")):
            del PAGES[page]
    sites = ([("before: " + str(args.before), args.before)] if args.before else []) + [
        ("now: " + str(lb.HTML), lb.HTML)]
    results = []
    for name, html in sites:
        if args.only != "http":
            lb.SERVER = None
            results.append((f"{name} (file://)", measure(html, args.runs, args.moves)))
        if args.only != "file":
            with lb.http_server(html) as address:
                lb.SERVER = address
                results.append((f"{name} (http)", measure(html, args.runs, args.moves)))
            lb.SERVER = None
    for name, m in results:
        report(name, m)


if __name__ == "__main__":
    main()

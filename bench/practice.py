"""The practice blocks on the built book, timed in headless Chromium from disk (file://).

For each chapter page with practice blocks it clicks, on real buttons of the page:

1. the first "New numbers" of the page (Python starts in the worker: a cold start, fresh
   browser profile, then the same with the runtime in the profile's IndexedDB cache);
2. "New numbers" again and again, on every block of the page in turn: from the click to the
   new problem drawn (median, 95th percentile);
3. "Check" with an answer typed in each field (a random wrong value): from the click to the
   verdicts drawn (median, 95th percentile).

The time is the page's own (web/src/practice.js records performance.now() from the click to
the answer drawn in ``sbPractice.timings``).

    make book && .venv/bin/python bench/practice.py [--clicks 40]

Timings are wall-clock on whatever machine runs this: compare the columns of one run only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

import live_browser as lb  # noqa: E402
from scalebook.practice import CHAPTERS  # noqa: E402

#: Click button ``name`` of block ``index`` (after typing ``answer`` in each field, if given)
#: and return, once it is drawn, the page's time from the click to the answer drawn.
_CLICK = """
const [index, name, answer, done] = [arguments[0], arguments[1], arguments[2],
                                     arguments[arguments.length - 1]];
const root = document.querySelectorAll('section.practice')[index];
if (answer !== null) for (const input of root.querySelectorAll('.practice-fields input'))
  input.value = answer;
const state = root.sbPractice;
const before = state.done;
root.querySelector(`button[name='${name}']`).click();
const wait = () => {
  if (state.done > before && !state.busy) done(state.timings[state.timings.length - 1].ms);
  else setTimeout(wait, 2);
};
wait();
"""


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure(page: str, clicks: int) -> dict:
    out: dict = {}
    with lb.chromium() as driver:
        driver.set_script_timeout(300)
        for visit in ("cold", "cached"):
            lb.open_page(driver, page)
            out[f"first_{visit}"] = driver.execute_async_script(_CLICK, 0, "new", None)
        blocks = driver.execute_script("return document.querySelectorAll('section.practice').length")
        new, checks = [], []
        for i in range(clicks):
            new.append(driver.execute_async_script(_CLICK, i % blocks, "new", None))
            checks.append(driver.execute_async_script(_CLICK, i % blocks, "check", f"{1.2345 + i}"))
        out.update(blocks=blocks, new=new, check=checks)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=40)
    args = parser.parse_args()
    if lb.missing_browser():
        sys.exit(f"needs Debian's chromium and chromium-driver: missing {lb.missing_browser()}")
    print(f"{'page':18} {'blocks':>6} {'first, cold':>12} {'first, cached':>14} "
          f"{'new: median':>12} {'p95':>7} {'check: median':>14} {'p95':>7}   (ms)")
    for chapter, problems in CHAPTERS.items():
        if not problems:
            continue
        page = chapter.replace("_", "-")
        start = time.monotonic()
        m = measure(page, args.clicks)
        print(f"{page:18} {m['blocks']:>6} {m['first_cold']:>12.0f} {m['first_cached']:>14.0f} "
              f"{statistics.median(m['new']):>12.1f} {_p95(m['new']):>7.1f} "
              f"{statistics.median(m['check']):>14.1f} {_p95(m['check']):>7.1f}"
              f"   ({args.clicks} clicks each, {time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()

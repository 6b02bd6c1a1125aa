"""The live widgets on the static site, measured in headless Chromium from disk (file://).

Prints, in one run:

1. each chapter's weight before any touch: the bytes of every site file the page loaded
   (raw, as read from disk, and gzip-compressed, as a static host would send them), and how
   much of it the live widgets add (their script, style sheet and static figure);
2. the runtime a first touch loads (bytes, from _static/live/manifest.json);
3. the time from the first touch to the first live picture, per widget page (fresh page
   load each run), with the loader's stages;
4. the redraw time per control (read the inputs, Python, Chart.js): median and 95th
   percentile over many moves.

    make book && .venv/bin/python bench/live_widgets.py [--runs 5] [--moves 40] [--page P]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import live_browser as lb  # noqa: E402

CHAPTERS = ("index", "rooflines", "hardware", "sharded-matmuls", "parallelism",
            "transformers", "inference")

#: Per widget page: the control the first touch clicks, and the moves per control
#: (see live_browser.move), cycled through during the redraw measurement.
MOVES = {
    "rooflines": ("x_dtype", {
        "B": [("value", 2 + k / 8) for k in range(0, 100, 3)],
        "D": [("value", 7 + k / 2) for k in range(19)],
        "F": [("value", 7 + k / 2) for k in range(19)],
        "chip": [("label", c) for c in ("TPU v4p", "TPU v5p", "TPU v6e", "H100", "B200")],
        "compare": [("label", c) for c in ("none", "A100", "H200", "TPU v6e", "H100")],
        "x_dtype": [("label", d) for d in ("fp8", "bf16", "int8", "fp16")],
        "w_dtype": [("label", d) for d in ("int8", "int4", "fp8", "bf16")],
        "per_example": [("checked", True), ("checked", False)],
    }),
    "hardware": ("metric", {
        "chips": [("options", c) for c in (["TPU v5e", "H100"], ["A100", "H100", "B200"],
                                           ["TPU v3", "TPU v4p", "TPU v5p", "TPU v6e"])],
        "metric": [("label", m) for m in ("HBM bandwidth", "bf16 FLOP/s", "HBM capacity",
                                          "critical intensity, bf16")],
        "log": [("checked", True), ("checked", False)],
    }),
    "inference": ("cache_dtype", {  # sliders move by their stops (indices)
        "batch": [("value", k) for k in range(0, 24, 2)],
        "prompt_len": [("value", k) for k in range(0, 22, 3)],
        "gen_len": [("value", k) for k in range(0, 26, 3)],
        "n_chips": [("value", n) for n in (8, 4, 2, 1, 8)],
        "preset": [("label", p) for p in ("LLaMA-3 8B", "LLaMA-3 405B", "LLaMA-3 70B")],
        "chip": [("label", c) for c in ("H200", "B200", "H100")],
        "weight_dtype": [("label", d) for d in ("int8", "fp8", "bf16")],
        "cache_dtype": [("label", d) for d in ("int8", "fp8", "bf16")],
        # weight_dtype's 40th move left int8 weights: int8 and bf16 matmuls both run
        "compute_dtype": [("label", d) for d in ("int8", "bf16")],
    }),
    "transformers": ("remat", {
        "preset": [("label", p) for p in ("LLaMA-3 8B", "LLaMA-3 70B", "LLaMA-3 405B")],
        "n_layers": [("value", n) for n in (32, 80, 126, 48)],
        "d_model": [("value", d) for d in (4096, 8192, 16384)],
        "n_kv_heads": [("value", k) for k in (8, 16, 32)],
        "seq_len": [("value", t) for t in (2048, 8192, 32768, 131072)],
        "tokens_trillions": [("value", t) for t in (1, 2.5, 15, 15.6)],
        "global_batch": [("value", b) for b in (256, 1024, 2048)],
        "remat": [("label", r) for r in ("none", "selective", "full")],
        "chip": [("label", c) for c in ("TPU v5p", "B200", "H100")],
        "n_chips": [("value", n) for n in (1024, 4096, 16384)],
        "mfu": [("value", m) for m in (0.3, 0.4, 0.5, 0.6)],
    }),
    "parallelism": ("remat", {
        "preset": [("label", p) for p in ("LLaMA-3 8B", "LLaMA-3 405B", "LLaMA-3 70B")],
        "n_layers": [("value", n) for n in (40, 80, 126)],
        "d_model": [("value", d) for d in (4096, 8192, 16384)],
        "d_ff": [("value", f) for f in (14336, 28672, 53248)],
        "n_heads": [("value", h) for h in (32, 64, 128)],
        "n_kv_heads": [("value", k) for k in (4, 8, 16)],
        "vocab_size": [("value", v) for v in (32000, 128256)],
        "seq_len": [("value", t) for t in (2048, 8192, 32768)],
        "global_batch": [("value", b) for b in (512, 2048, 4096)],
        "chip": [("label", c) for c in ("H100", "TPU v5e", "B200", "TPU v5p")],
        "n_chips": [("value", n) for n in (1024, 2048, 4096)],
        "dp": [("value", d) for d in (2, 1)],
        "fsdp": [("value", f) for f in (128, 256, 512)],
        "tp": [("value", t) for t in (4, 8, 16)],
        "pp": [("value", p) for p in (1, 2, 4)],
        "zero_stage": [("label", z) for z in ("ZeRO-1 (optimizer)", "ZeRO-3 (+ weights)")],
        "microbatches": [("value", m) for m in (1, 4, 8)],
        "remat": [("label", r) for r in ("none", "selective", "full")],
        "overlap": [("checked", False), ("checked", True)],
        # a search over ~3,000 layouts, not a redraw: outside the 50 ms budget
        "best": [("click", None)],
    }),
    "sharded-matmuls": ("dtype", {
        "B": [("value", k) for k in range(3, 21)],
        "D": [("value", k) for k in range(7, 17)],
        "F": [("value", k) for k in range(7, 18)],
        "layout": [("label", name) for name in (
            "data parallel (case 1)", "FSDP: gather the weights (case 2)",
            "tensor parallel, AllReduce (case 3)", "tensor parallel, ReduceScatter (case 3)",
            "B and F on one axis (case 4)", "data × tensor parallel (case 3)")],
        "chip": [("label", c) for c in ("TPU v5p", "H100", "TPU v6e", "TPU v5e")],
        "dtype": [("label", d) for d in ("int8", "fp16", "bf16")],
        "wraparound": [("label", w) for w in ("as built", "lines (no wraparound)",
                                              "rings (wraparound)")],
        "mesh": [("value", m) for m in ("X=4, Y=2", "X=2, Y=2, Z=2", "X=1, Y=8", "X=2, Y=4")],
        "lhs": [("value", t) for t in ("A[B_X, D]", "A[B, D_Y]", "A[B_XY, D]", "A[B_X, D_Y]")],
        "rhs": [("value", t) for t in ("W[D_Y, F_X]", "W[D, F_Y]", "W[D_Y, F]")],
        "out": [("value", t) for t in ("Out[B_X, F_Y]", "Out[B, F]", "Out[B_X, F]")],
        "axis": [("label", a) for a in ("plot axis: X", "plot axis: Y", "plot axis: auto")],
    }),
}

#: A button runs an action (a search) rather than a redraw: this many presses, not --moves.
PRESSES = 10


#: The issue's budget for a chapter before any touch: bytes read from disk (raw).
PAGE_BUDGET = 3_000_000


def _weights(driver, page: str) -> dict:
    urls = lb.open_page(driver, page)
    files = {lb._site_file(u) for u in urls} - {None}
    raw = sum(f.stat().st_size for f in files)
    packed = sum(len(gzip.compress(f.read_bytes(), 6)) for f in files)
    live = sum(f.stat().st_size for f in files if "_static/live" in str(f))
    figures = driver.execute_script(
        "return [...document.querySelectorAll('.sb-live-figure img')]"
        ".reduce((n, img) => n + img.getAttribute('src').length, 0)")
    return {"raw": raw, "gzip": packed, "widget": live + figures, "outside": lb.outside(urls)}


def _ready(driver, page: str, touch: str, runs: int) -> list[dict]:
    out = []
    for _ in range(runs):
        lb.open_page(driver, page)
        lb.touch(driver, 0, touch)
        state = lb.wait_live(driver, 0)
        marks = driver.execute_script("return window.sbLiveMarks")
        out.append({"ready": state["timings"]["ready"] - state["timings"]["touch"],
                    **{k: marks[k] - marks["start"] for k in ("scripts", "decoded", "python",
                                                               "ready")}})
    return out


def _redraws(driver, page: str, touch: str, moves: dict, n: int) -> dict[str, list[float]]:
    lb.open_page(driver, page)
    lb.touch(driver, 0, touch)
    lb.wait_live(driver, 0)
    out = {}
    for control, sequence in moves.items():
        times = []
        count = min(n, PRESSES) if sequence[0][0] == "click" else n
        for i in range(count):
            how, value = sequence[i % len(sequence)]
            times.append(lb.move(driver, 0, control, how, value))
        out[control] = [t for t in times if t is not None]
        if len(out[control]) < count:
            raise RuntimeError(f"{page}: {control} did not redraw every time")
    errors = lb.console_errors(driver)
    return out if not errors else {"console errors": errors}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="page loads per ready-time figure")
    parser.add_argument("--moves", type=int, default=40, help="moves per control")
    parser.add_argument("--page", action="append", choices=list(MOVES),
                        help="only this widget page (repeatable; default: all of them)")
    args = parser.parse_args()
    pages = args.page or list(MOVES)
    manifest = json.loads((lb.HTML / "_static" / "live" / "manifest.json").read_text())
    with lb.chromium() as driver:
        weights = {page: _weights(driver, page) for page in CHAPTERS}
        ready = {page: _ready(driver, page, MOVES[page][0], args.runs) for page in pages}
        redraws = {page: _redraws(driver, page, MOVES[page][0], MOVES[page][1], args.moves)
                   for page in pages}

    print(f"1. Page weight before any touch (site files the page loaded; budget "
          f"{PAGE_BUDGET:,} bytes raw, from disk)")
    print(f"   {'chapter':<16}{'raw (disk)':>14}{'gzip':>12}{'of it widgets':>16}  outside")
    for page, w in weights.items():
        print(f"   {page:<16}{w['raw']:>14,}{w['gzip']:>12,}{w['widget']:>16,}  "
              f"{len(w['outside'])}" + ("  OVER BUDGET" if w["raw"] >= PAGE_BUDGET else ""))
    first_use = {k: v for k, v in manifest["bytes"].items()
                 if k not in ("widgets.js", "widgets.css", "stdlib-modules.txt")}
    print(f"\n2. First touch loads {sum(first_use.values()):,} bytes (runtime {manifest['key']}):")
    for name, size in sorted(first_use.items(), key=lambda kv: -kv[1]):
        print(f"   {name:<24}{size:>12,}")
    print(f"\n3. Touch to first live picture, ms, {args.runs} page loads each"
          " (loader stages from its start: scripts, decoded, python, ready)")
    for page, runs in ready.items():
        times = [r["ready"] for r in runs]
        stages = {k: statistics.median(r[k] for r in runs)
                  for k in ("scripts", "decoded", "python", "ready")}
        print(f"   {page:<12} median {statistics.median(times):7.0f}  max {max(times):7.0f}   "
              + "  ".join(f"{k} {v:.0f}" for k, v in stages.items()))
    print(f"\n4. Redraw per control move, ms ({args.moves} moves each; budget 50 ms median)")
    print(f"   {'widget page':<17}{'control':<14}{'median':>8}{'p95':>8}{'max':>8}")
    for page, controls in redraws.items():
        for control, times in controls.items():
            if control == "console errors":
                print(f"   {page:<12}CONSOLE ERRORS: {times}")
                continue
            print(f"   {page:<17}{control:<14}{statistics.median(times):8.1f}"
                  f"{_p95(times):8.1f}{max(times):8.1f}")


if __name__ == "__main__":
    main()

"""How long one control change takes in the book's widgets: recompute, redraw, re-encode the PNG.

Drives each widget through its controls exactly as a slider or dropdown would (setting
``control.value`` runs the same callback) and prints the median and 95th-percentile
milliseconds per update. The budget is well under 100 ms per update.

    .venv/bin/python bench/widget_latency.py          # a few seconds
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from scalebook.hardware import chip_names  # noqa: E402
from scalebook.widgets import METRICS, chip_comparison, roofline_explorer  # noqa: E402
from scalebook.widgets.layout_planner import layout_planner  # noqa: E402
from scalebook.live.sharded_matmul import LAYOUTS  # noqa: E402
from scalebook.widgets.sharded_matmul import sharded_matmul_explorer  # noqa: E402
from scalebook.widgets.calculator import transformer_calculator  # noqa: E402

BUDGET_MS = 100.0


def time_updates(widget, name: str, values) -> np.ndarray:
    """Milliseconds for each ``widget.controls[name].value = v``, in order."""
    control = widget.controls[name]
    times = []
    for value in values:
        start = time.perf_counter()
        control.value = value
        times.append((time.perf_counter() - start) * 1e3)
        if widget.error:
            raise RuntimeError(f"{name} = {value!r} was rejected: {widget.error}")
    return np.array(times)


def report(label: str, times: np.ndarray) -> tuple[float, float]:
    median, p95 = float(np.median(times)), float(np.percentile(times, 95))
    print(f"{label:<44} {len(times):>4} {median:>9.1f} {p95:>9.1f}")
    return median, p95


def main() -> int:
    print(f"{'widget: control':<44} {'n':>4} {'median ms':>9} {'p95 ms':>9}")
    results = []

    explorer = roofline_explorer("TPU v5e", compare="H100")
    sweep = np.geomspace(1, 65536, 60)
    results.append(report("roofline explorer: B slider",
                          time_updates(explorer, "B", np.concatenate([sweep, sweep[::-1]]))))
    d_values = np.geomspace(128, 65536, 30)
    results.append(report("roofline explorer: D slider",
                          time_updates(explorer, "D", np.concatenate([d_values, d_values[::-1]]))))
    chips = [n for n in chip_names() if n != "V100"]  # a V100 has no bf16 figure
    results.append(report("roofline explorer: chip dropdown",
                          time_updates(explorer, "chip", chips * 3)))
    results.append(report("roofline explorer: weight dtype dropdown",
                          time_updates(explorer, "w_dtype", ["int8", "bf16", "fp8", "int4"] * 5)))

    comparison = chip_comparison()
    results.append(report("chip comparison: metric dropdown",
                          time_updates(comparison, "metric", [m.key for m in METRICS] * 3)))
    selections = [tuple(c) for c in itertools.combinations(chips, 4)][:30]
    results.append(report("chip comparison: chip selection",
                          time_updates(comparison, "chips", selections)))

    matmul = sharded_matmul_explorer()
    sizes = [2.0 ** k for k in range(3, 21)]
    results.append(report("sharded matmul: B slider",
                          time_updates(matmul, "B", sizes + sizes[::-1])))
    results.append(report("sharded matmul: chip dropdown",
                          time_updates(matmul, "chip",
                                       ["TPU v5p", "H100", "TPU v6e", "B200", "TPU v5e"] * 4)))
    results.append(report("sharded matmul: layout dropdown",
                          time_updates(matmul, "layout", list(LAYOUTS) * 3)))

    planner = layout_planner()
    results.append(report("layout planner: TP box",
                          time_updates(planner, "tp", [1, 2, 4, 8, 16, 8, 4] * 4)))
    results.append(report("layout planner: remat dropdown",
                          time_updates(planner, "remat", ["none", "selective", "full"] * 6)))
    results.append(report("layout planner: preset dropdown",
                          time_updates(planner, "preset",
                                       ["LLaMA-3 8B", "LLaMA-3 405B", "LLaMA-3 70B"] * 5)))

    calculator = transformer_calculator()
    results.append(report("transformer calculator: context box",
                          time_updates(calculator, "seq_len",
                                       [2 ** k for k in range(10, 21)] * 2)))
    results.append(report("transformer calculator: MFU slider",
                          time_updates(calculator, "mfu", [0.2, 0.3, 0.4, 0.5, 0.6] * 4)))
    results.append(report("transformer calculator: preset dropdown",
                          time_updates(calculator, "preset",
                                       ["LLaMA-3 8B", "LLaMA-3 405B", "LLaMA-3 70B"] * 5)))

    worst = max(p95 for _, p95 in results)
    print(f"worst 95th percentile: {worst:.1f} ms (budget {BUDGET_MS:.0f} ms per update)")
    return 0 if worst < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())

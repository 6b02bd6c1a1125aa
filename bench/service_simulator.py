"""How fast the serving simulator runs: simulated seconds per wall-clock second, and what the
step model (scalebook.service.steps) buys over pricing each step with scalebook.inference.

For each scenario it runs ``simulate`` (60 simulated seconds, the widget's trace) a few times
and prints the median wall time, the steps simulated, the speed as simulated / wall seconds
(the budget: a 60 s trace in under a second, i.e. a ratio above 60), and, as the comparison,
the ratio of the time ``inference.decode_step`` would take to price the same number of steps
one call each (each batch size's tensor-parallel AllReduce priced afresh, as a first ask) to
the whole simulation's time.

    .venv/bin/python bench/service_simulator.py

Wall-clock on whatever machine runs it: compare the ratios of one run, not across machines.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scalebook import inference  # noqa: E402
from scalebook.service import Scheduler, Server, Workload, simulate, step_model  # noqa: E402

SCENARIOS = {
    "70B on 8 H100, 8 req/s, continuous": (Server(), Workload(arrival_rate=8.0), Scheduler()),
    "70B on 8 H100, 16 req/s, 512-token chunks": (Server(), Workload(arrival_rate=16.0),
                                                   Scheduler(chunk_size=512)),
    "70B on 8 H100, 2 req/s, speculative k=4": (Server(), Workload(arrival_rate=2.0),
                                                Scheduler(spec_k=4)),
    "70B on 8 H100, 8 req/s, static": (Server(), Workload(arrival_rate=8.0),
                                       Scheduler(policy="static")),
    "8B on 1 H100, 40 req/s, continuous": (Server(model="LLaMA-3 8B", n_chips=1),
                                           Workload(arrival_rate=40.0), Scheduler()),
}
DURATION, REPEATS = 60.0, 5


def main() -> int:
    per_call = []
    cfg = Server().config
    for b in range(1, 41):
        start = time.perf_counter()
        inference.decode_step(cfg, "H100", batch=b, context_len=1500, n_chips=8)
        per_call.append(time.perf_counter() - start)
    call = statistics.median(per_call)
    print(f"inference.decode_step on 8 H100s: {call * 1e6:.0f} us a call")
    print(f"{'scenario':<44} {'steps':>6} {'wall s':>7} {'sim s / wall s':>15} "
          f"{'per-call pricing / sim':>23}")
    worst = float("inf")
    for label, (server, workload, scheduler) in SCENARIOS.items():
        times, result = [], None
        for _ in range(REPEATS):
            start = time.perf_counter()
            model = step_model(server)
            result = simulate(server, workload, scheduler, duration=DURATION, model=model)
            times.append(time.perf_counter() - start)
        wall = statistics.median(times)
        assert result is not None
        speed = result.end / wall
        worst = min(worst, speed)
        print(f"{label:<44} {result.steps:>6} {wall:>7.3f} {speed:>15.0f} "
              f"{result.steps * call / wall:>23.1f}")
    verdict = "within" if worst > DURATION else "OVER"
    print(f"slowest: {worst:.0f} simulated seconds per second ({verdict} the budget of "
          f"{DURATION:.0f}: a {DURATION:.0f} s trace in under a second)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

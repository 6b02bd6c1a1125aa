"""How long drawing a class's numbers takes: ``draw`` for each student of a homework, with every
well-posedness check its parts make (hw4's layout search, hw6's serving searches, ...). It is
what the convention matrix, the integrity report and the roster's keys pay before any grading.

    .venv/bin/python bench/class_draw.py [--students 60] [--runs 3] [--before DIR] [hw4-parallelism ...]

Each run is a fresh Python process drawing ``--students`` students of one homework; the figure
is its CPU seconds (the median of ``--runs``). ``--before DIR``: an older checkout of the
project, run in turn with this one (A B A B ...), and the ratio now / before of each pair.
CPU seconds on whatever machine runs it: compare the ratios of one run, not across machines.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOMEWORKS = ("hw4-parallelism", "hw6-inference", "hw8-serving-systems")
DRAW = """
import sys
sys.path.insert(0, sys.argv[1])
from scalebook.homework import spec_for
from scalebook.variants import draw, student_key
spec = spec_for(sys.argv[2])
for i in range(int(sys.argv[3])):
    draw(spec, student_key(bytes(32), f"student{i}"))
"""


def cpu_seconds(tree: Path, homework: str, students: int) -> float:
    """CPU seconds of one process drawing ``students`` students of ``homework`` from ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", DRAW, str(tree), homework, str(students)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("homeworks", nargs="*", default=list(HOMEWORKS))
    ap.add_argument("--students", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", type=Path, help="an older checkout, timed in turn with this one")
    args = ap.parse_args(argv)
    print(f"{'homework':<22} {'now, CPU s':>11}" + (f" {'before':>8} {'now / before':>13}" if args.before else ""))
    for hw in args.homeworks:
        now, old, ratios = [], [], []
        for _ in range(args.runs):
            now.append(cpu_seconds(ROOT, hw, args.students))
            if args.before:
                old.append(cpu_seconds(args.before, hw, args.students))
                ratios.append(now[-1] / old[-1])
        line = f"{hw:<22} {statistics.median(now):>11.2f}"
        if args.before:
            line += f" {statistics.median(old):>8.2f} {statistics.median(ratios):>13.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One course's class of 500 students and their homework numbers, drawn once per test process.

Drawing is not free: each draw is checked well posed against every part, its slips and its
conventions, and hw4's design part searches the training layouts (a class costs seconds to a
minute per homework). ``tests/test_homework_parts.py`` (the convention matrix, the reference
solution) and ``tests/test_variants.py`` (the notebooks graded for the first students, the
spread of the draws) judge the same class, drawn here once per run: in a parallel run the first
worker to need a homework's class draws it and leaves the drawn numbers in a folder of the run,
where the other workers read them (they derive the rest, as the grader does from grading.json).
"""

from __future__ import annotations

import fcntl
import functools
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from scalebook.homework import SPECS
from scalebook.variants import Variant, draw, student_key, variant_from

#: A fixed course secret, so a failure names its student and key.
SECRET = bytes.fromhex("5ca1ab1e" * 8)
#: Students in the class.
CLASS_SIZE = 500


class Student(NamedTuple):
    name: str
    key: str
    numbers: Variant


def _drawn(spec: Any, key: str) -> tuple[str, dict[str, Any]]:
    """The normalized key and the drawn parameters of the variant ``key`` draws."""
    variant = draw(spec, key)
    return variant.key, variant.drawn()


def _drawn_once(assignment: str, keys: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each key as its variant keeps it (normalized) with its drawn parameters: drawn by the first
    worker of this pytest-xdist run that asks, read by the others (a lock per homework; the run's
    id names the folder)."""
    spec = SPECS[assignment]
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return [_drawn(spec, key) for key in keys]
    folder = Path(tempfile.gettempdir()) / f"scalebook-class-{run}"
    folder.mkdir(exist_ok=True)
    path = folder / f"{assignment}.pickle"
    with open(folder / f"{assignment}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = path.with_suffix(".partial")
            partial.write_bytes(pickle.dumps([_drawn(spec, key) for key in keys]))
            partial.replace(path)
        return pickle.loads(path.read_bytes())


@functools.cache
def class_of(assignment: str) -> tuple[Student, ...]:
    """The class's students ``s000`` ... ``s499`` with their keys and drawn numbers."""
    names = [f"s{i:03d}" for i in range(CLASS_SIZE)]
    keys = [student_key(SECRET, name) for name in names]
    spec = SPECS[assignment]
    return tuple(Student(name, key, variant_from(spec, drawn, plain))
                 for name, key, (plain, drawn) in zip(names, keys, _drawn_once(assignment, keys)))

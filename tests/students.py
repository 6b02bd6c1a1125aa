"""One course's class of 500 students and their homework numbers, drawn once per test process.

Drawing is not free: each draw is checked well posed against every part, its slips and its
conventions, and hw4's design part searches the training layouts (a class costs seconds to a
minute per homework). ``tests/test_homework_parts.py`` (the convention matrix, the reference
solution) and ``tests/test_variants.py`` (the notebooks graded for the first students, the
spread of the draws) judge the same class, drawn here once per process (in a parallel run,
once in each worker that runs one of them).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from scalebook.homework import SPECS
from scalebook.variants import Variant, draw, student_key

#: A fixed course secret, so a failure names its student and key.
SECRET = bytes.fromhex("5ca1ab1e" * 8)
#: Students in the class.
CLASS_SIZE = 500


class Student(NamedTuple):
    name: str
    key: str
    numbers: Variant


@functools.cache
def class_of(assignment: str) -> tuple[Student, ...]:
    """The class's students ``s000`` ... ``s499`` with their keys and drawn numbers."""
    spec = SPECS[assignment]
    students = []
    for i in range(CLASS_SIZE):
        name = f"s{i:03d}"
        key = student_key(SECRET, name)
        students.append(Student(name, key, draw(spec, key)))
    return tuple(students)

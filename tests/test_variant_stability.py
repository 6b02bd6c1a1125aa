"""A student's numbers never change under them: the draws of 200 keys per homework are pinned.

The grader recomputes a student's numbers from their key when it grades, so a change to a
homework's choices or well-posedness rule that changes some student's draw grades that student
against numbers their notebook never printed, if the course updates while the homework is out.
A deliberate change (a new homework, or one not yet handed out) regenerates the fingerprints:

    python tests/test_variant_stability.py > tests/data/variant_draws.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from scalebook.homework import SPECS
from scalebook.variants import draw

FINGERPRINTS = Path(__file__).resolve().parent / "data" / "variant_draws.json"
KEYS = [f"STAB{i:04d}" for i in range(200)]


def fingerprint(assignment: str) -> str:
    """SHA-256 of the drawn parameters of every key in :data:`KEYS`, in order."""
    digest = hashlib.sha256()
    for key in KEYS:
        drawn = draw(SPECS[assignment], key).drawn()
        digest.update(json.dumps(drawn, sort_keys=True, default=repr).encode())
    return digest.hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_no_students_numbers_change(assignment):
    pinned = json.loads(FINGERPRINTS.read_text())
    assert assignment in pinned, f"{assignment} has no pinned draws; regenerate {FINGERPRINTS.name}"
    assert fingerprint(assignment) == pinned[assignment], (
        f"the draws of {assignment} changed: students would be graded against numbers their "
        "notebook did not print. Keep the old draws (see hw2_hardware.drawn_as_first_published) "
        "or, for a homework not yet handed out, regenerate the fingerprints (module docstring).")


if __name__ == "__main__":
    json.dump({a: fingerprint(a) for a in sorted(SPECS)}, sys.stdout, indent=1)
    print()

"""``python -m scalebook.homework --list [ASSIGNMENT ...]``: every declared part of the homeworks,
with each convention's verdict (and the phrase of the problem text that pins it) and each slip,
each part's unit (which alternatives of the catalog it is asked) and the alternatives it
declares not applicable, with the reason."""

from __future__ import annotations

import sys

from . import NOTEBOOK_PARTS, PARTS
from .parts import describe


def main(argv: list[str]) -> int:
    if "--list" not in argv:
        print(__doc__.strip())
        return 2
    wanted = [a for a in argv if a != "--list"] or sorted(PARTS)
    unknown = [a for a in wanted if a not in PARTS]
    if unknown:
        print(f"no declared parts for {', '.join(unknown)}; homeworks that have them: "
              f"{', '.join(sorted(PARTS))}")
        return 2
    for assignment in wanted:
        print(f"## {assignment}")
        for part in PARTS[assignment].values():
            print("\n".join(describe(part)))
        for part in NOTEBOOK_PARTS.get(assignment, ()):
            lines = describe(part)
            print("\n".join([lines[0] + " -- judged inside the notebook's JAX check", *lines[1:]]))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

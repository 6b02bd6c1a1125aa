"""The instructor's grading tools: generate, validate, collect, grade, export, feedback.

Run ``python -m autograder --help``. The design (what runs trusted, what runs sandboxed) is in
``autograder/DESIGN.md``.
"""

import sys as _sys

# nbgrader imports nbformat, which imports jsonschema, which imports the optional package
# rfc3987_syntax when it is installed (jupyter-events asks for it); that package compiles 39
# grammars on import: 1.2 s of every command's start-up on a 2-core machine, spent on
# checking the "iri" string format that no notebook schema uses. Marking it as absent makes
# jsonschema leave those two formats unchecked, as it does wherever the package is missing.
_sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # typeshed: modules only, yet None is import's "absent"

"""The instructor's grading tools: generate, validate, collect, grade, export, feedback.

Run ``python -m autograder --help``. The design (what runs trusted, what runs sandboxed) is in
``autograder/DESIGN.md``.
"""

import os as _os
import sys as _sys

# nbgrader imports nbformat, which imports jsonschema, which imports the optional package
# rfc3987_syntax when it is installed (jupyter-events asks for it); that package compiles 39
# grammars on import: 1.2 s of every command's start-up on a 2-core machine, spent on
# checking the "iri" string format that no notebook schema uses. Marking it as absent makes
# jsonschema leave those two formats unchecked, as it does wherever the package is missing.
_sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # typeshed: modules only, yet None is import's "absent"

# NumPy's OpenBLAS starts its worker threads (one per core beyond the first) when it is
# imported, and each spins a while before it sleeps: 0.1 s of CPU in a grading run's first
# second, while the sandboxes start on the same two cores. The grader does no linear algebra
# worth a thread (the sandbox sets the same for the students' code). Where NumPy is already
# imported, or the variable set, nothing changes.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _nbgrader_without_its_server_extensions() -> None:
    """Make ``import nbgrader.api`` (or any nbgrader module) skip ``nbgrader/__init__.py``.

    That file imports nbgrader's four Jupyter server extensions (tornado, jupyter_server, the
    exchange, 512 modules in all), which only a running Jupyter server uses. For a grading run
    on a 2-core machine they cost 0.6 s of CPU at start-up, while the sandboxes are starting
    on the same cores, and 0.15 s of tearing the modules down at exit. The package is entered
    in ``sys.modules`` as the import system would make it, only with its ``__init__`` not run:
    every submodule still loads from the package's own folder, and ``nbgrader.__version__``
    is read from ``nbgrader._version`` as ``__init__`` does. A process that imported nbgrader
    before this package keeps it as it is; a Jupyter server loads the extensions in its own
    process.
    """
    import importlib.util

    if "nbgrader" in _sys.modules:
        return
    spec = importlib.util.find_spec("nbgrader")
    if spec is None or spec.submodule_search_locations is None:
        return  # not installed: the commands that need it say so when they import it
    package = importlib.util.module_from_spec(spec)
    _sys.modules["nbgrader"] = package
    from nbgrader._version import __version__

    package.__version__ = __version__  # type: ignore[attr-defined]


_nbgrader_without_its_server_extensions()

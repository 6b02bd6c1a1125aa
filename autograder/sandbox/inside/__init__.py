"""The untrusted side of grading: run a submission's code cells, report plain values.

This package runs *inside* the sandbox (``autograder/sandbox/bwrap.py`` binds it read-only into a
bubblewrap container, as the package ``runner``) with only the standard library imported before
the student's code; nothing in it imports the grader (the trusted side is the rest of
``autograder/sandbox/``).
Nothing it reports is trusted: the grader treats every byte it writes as data (size-capped
JSON, schema-validated in ``autograder/grading/check.py``), so a student who subverts this runner can
at worst set their own answer values -- which they could do anyway by writing them.

Protocol. The job is one JSON object on stdin::

    {"steps": [{"kind": "code", "index": 3, "source": "x = 1"},
               {"kind": "capture", "grade_id": "q1", "names": ["x"]}, ...],
     "limits": {"cell_output": 20000, "total_output": 200000}}

Steps run in order in one namespace (like a kernel). A code cell that raises (anything,
``SystemExit`` and ``KeyboardInterrupt`` included) is recorded and the next cell still runs.
A capture step converts the current values of the names a test cell reads into plain JSON
values (numbers, strings, booleans, None, nested lists; numpy arrays and scalars become lists
and numbers). Each step's record is written as one line of JSON on the result channel (a pipe
whose fd is ``argv[1]``) as soon as it is known, so a run that is killed part-way still
reports the questions it reached::

    {"t": "ready"}                  (sent by the runner itself once the sandbox is complete)
    {"t": "start", "index": 3}
    {"t": "cell", "index": 3, "stdout": "...", "stderr": "...", "error": null | {...}}
    {"t": "capture", "grade_id": "q1", "values": {"x": {"value": 1.5}, "f": {"error": "..."}}}
    {"t": "done"}

Two ways to start: :func:`main` ``(FD, CONFIG)`` (a fresh process per submission; when started
as root inside the sandbox it first drops to the config's uid and sets no_new_privs; then it
installs the seccomp filter, see :func:`install_seccomp`), or :func:`serve` in a pre-imported
template process (see ``template.TemplateSandbox``) that forks one child per submission, which
then calls :func:`run_job`.

Its modules, in the order a run meets them: ``start`` (a fresh runner: limits, privileges,
filter, ``ready``), ``privileges``, ``seccomp``, ``job`` (the steps and the result channel),
``cells`` (a cell's code as IPython would run it), ``plain`` (captured values as plain data),
and ``zygote`` (the template that forks a child per job).
"""

from __future__ import annotations

from .cells import CELL_MAGIC_ERROR, NotebookShell, compile_cell, python_source
from .job import READY, Channel, read_job, run_job
from .plain import NotPlain, to_plain
from .privileges import drop_privileges
from .seccomp import (SECCOMP_ARCH, SECCOMP_CLONE, SECCOMP_CLONE3, SECCOMP_DENY, SandboxSetupError, install_seccomp,
                      seccomp_program)
from .start import main, setup
from .zygote import preload, serve, serve_templates, warm_up

__all__ = ["CELL_MAGIC_ERROR", "READY", "SECCOMP_ARCH", "SECCOMP_CLONE", "SECCOMP_CLONE3", "SECCOMP_DENY",
           "Channel", "NotPlain", "NotebookShell", "SandboxSetupError", "compile_cell", "drop_privileges",
           "install_seccomp", "main", "preload", "python_source", "read_job", "run_job",
           "seccomp_program", "serve", "serve_templates", "setup", "to_plain", "warm_up"]

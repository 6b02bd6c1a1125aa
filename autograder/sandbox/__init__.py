"""The trust boundary. ``inside/`` runs INSIDE the sandbox (standard library only; its
output is untrusted bytes; no module outside it imports it); every other module here is the
trusted side that starts it:

- ``limits``: what one run may use (:class:`Limits`) and what came back (:class:`Outcome`);
- ``cgroup``: the job's memory, by cgroup;
- ``process``: one started sandbox process, pumped to its end and killed with all it started
  (what both ways of starting one share);
- ``bwrap``: what the sandbox may see, and the bwrap command that starts it;
- ``launch``: the design (its docstring), what a template preloads, and a fresh sandbox per
  submission (:class:`FreshSandbox`);
- ``template``: a pre-imported template that forks one child per job (:class:`TemplateSandbox`),
  and the parent the workers' templates are forked from (:class:`TemplateParent`);
- ``pick``: which sandbox to use here (:func:`check_sandbox`, :func:`make_sandbox`,
  :func:`run_remote`).
"""

from __future__ import annotations

from .bwrap import bwrap_command, read_only_binds, sandbox_env, sandbox_python, system_binds
from .cgroup import JOB_CGROUP_PREFIX, JobCgroup, job_cgroup, memory_cap, memory_cgroup
from .launch import DEFAULT_PRELOAD, FreshSandbox, notebook_preload, notebook_warm_up
from .limits import GiB, MiB, Limits, Outcome, SandboxError
from .pick import check_sandbox, make_sandbox, make_template_parent, run_remote
from .template import TemplateParent, TemplateSandbox

__all__ = ["DEFAULT_PRELOAD", "GiB", "JOB_CGROUP_PREFIX", "FreshSandbox", "JobCgroup", "Limits", "MiB",
           "Outcome", "SandboxError", "TemplateParent", "TemplateSandbox", "bwrap_command",
           "check_sandbox", "job_cgroup", "make_sandbox", "make_template_parent", "memory_cap",
           "memory_cgroup", "notebook_preload", "notebook_warm_up", "read_only_binds", "run_remote",
           "sandbox_env", "sandbox_python", "system_binds"]

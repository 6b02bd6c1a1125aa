"""The untrusted side of grading: run a submission's code cells, report plain values.

This file runs *inside* the sandbox (``autograder/sandbox/launch.py`` binds it read-only into a
bubblewrap container) with only the standard library imported before the student's code.
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

Two ways to start: ``python runner.py FD [UID]`` (a fresh process per submission; when started
as root inside the sandbox it first drops to ``UID`` and sets no_new_privs; then it installs
the seccomp filter, see :func:`install_seccomp`), or
:func:`serve` in a pre-imported template process (see ``template.TemplateSandbox``) that forks one
child per submission, which then calls :func:`run_job`.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import resource  # here, not per job: a template's jobs would each import it (0.75 ms)
import sys
import traceback
from types import CodeType
from typing import Mapping

MAX_DEPTH = 16
MAX_ELEMENTS = 200_000       # numbers in one captured value
MAX_STRING = 100_000         # characters in one captured string
MAX_INT_DIGITS = 1000


class NotPlain(Exception):
    """A value that cannot be reported as plain JSON data."""


# --- privileges --------------------------------------------------------------------------------

def drop_privileges(uid: int) -> None:
    """Become ``uid`` (no groups, no capabilities, no_new_privs). Fails closed."""
    if os.getuid() == 0 or os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _no_new_privs()
    _clear_capabilities()
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise SystemExit("runner: could not drop privileges")


def _clear_capabilities() -> None:
    """Empty every capability set (the uid change empties all but the inheritable one)."""
    try:
        import ctypes

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}, all zero
        libc = ctypes.CDLL(None, use_errno=True)
        libc.capset(ctypes.byref(Header(0x20080522, 0)), data)  # _LINUX_CAPABILITY_VERSION_3
    except Exception:  # pragma: no cover
        pass


def _no_new_privs() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    except Exception:  # pragma: no cover - best effort; bwrap sets it too
        pass


# --- seccomp ----------------------------------------------------------------------------------
#
# A classic-BPF seccomp filter, installed after the uid switch and no_new_privs and before any of
# the student's code (in each forked child of the template too, after the template has made that
# child's namespaces). It closes what rlimits and bwrap do not: without it the student's process
# could make a user namespace (unshare, clone with CLONE_NEWUSER) and, "root" in there, mount a
# tmpfs of its own -- memory outside RLIMIT_AS and the scratch cap -- or reach kernel surfaces no
# notebook needs. Denied with EPERM: the namespace and mount calls, the keyring, bpf,
# userfaultfd, perf_event_open, io_uring, and clone with any CLONE_NEW* flag; clone3 (whose
# flags live in memory a filter cannot read) gets ENOSYS, so libc falls back to clone, which is
# checked. Threads, fork and subprocess use clone without those flags and work as before. A
# syscall of another ABI (i386 by int 0x80) kills the process, an x32 one gets EPERM. On an
# architecture without a table here, or if the filter cannot be installed, the runner refuses
# to run the job: it exits without the "ready" record and the grader reports a sandbox error.

READY = {"t": "ready"}          # first record on the result channel, sent after setup succeeded

SECCOMP_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}     # AUDIT_ARCH_*
_COMMON_NEW = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
               "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
               "fsmount": 432, "fspick": 433, "mount_setattr": 442, "open_tree_attr": 467}
SECCOMP_DENY = {
    "x86_64": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
               "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
               "userfaultfd": 323, "perf_event_open": 298, **_COMMON_NEW},
    "aarch64": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
                "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
                "userfaultfd": 282, "perf_event_open": 241, **_COMMON_NEW},
}
SECCOMP_CLONE = {"x86_64": 56, "aarch64": 220}
SECCOMP_CLONE3 = 435
# CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET (CLONE_NEWTIME, 0x80, is only
# accepted by unshare and clone3, both refused)
CLONE_NEW_MASK = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
X32_SYSCALL_BIT = 0x40000000

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06


class SandboxSetupError(RuntimeError):
    """The sandbox could not be completed: the student's code must not run."""


def seccomp_program(arch: str) -> list[tuple[int, int, int, int]]:
    """The filter for ``arch`` as (code, jt, jf, k) instructions. Raises for an unknown arch."""
    if arch not in SECCOMP_ARCH:
        raise SandboxSetupError(f"no seccomp syscall table for the {arch!r} architecture; "
                                "refusing to run untrusted code without the filter")
    prog: list[list] = []   # [code, jt, jf, k], jumps as labels until resolved

    def op(code, k, jt=0, jf=0):
        prog.append([code, jt, jf, k])

    op(_BPF_LD_W_ABS, 4)                                   # seccomp_data.arch
    op(_BPF_JEQ_K, SECCOMP_ARCH[arch], 1, 0)
    op(_BPF_RET_K, SECCOMP_RET_KILL_PROCESS)
    op(_BPF_LD_W_ABS, 0)                                   # seccomp_data.nr
    if arch == "x86_64":
        op(_BPF_JGE_K, X32_SYSCALL_BIT, "eperm", 0)
    for nr in sorted(set(SECCOMP_DENY[arch].values())):
        op(_BPF_JEQ_K, nr, "eperm", 0)
    op(_BPF_JEQ_K, SECCOMP_CLONE3, "enosys", 0)
    op(_BPF_JEQ_K, SECCOMP_CLONE[arch], 0, "allow")
    op(_BPF_LD_W_ABS, 16)                                  # low 32 bits of args[0]: the flags
    op(_BPF_JSET_K, CLONE_NEW_MASK, "eperm", "allow")
    labels = {"allow": len(prog), "eperm": len(prog) + 1, "enosys": len(prog) + 2}
    op(_BPF_RET_K, SECCOMP_RET_ALLOW)
    op(_BPF_RET_K, SECCOMP_RET_ERRNO | EPERM)
    op(_BPF_RET_K, SECCOMP_RET_ERRNO | ENOSYS)
    out = []
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        assert 0 <= jt < 256 and 0 <= jf < 256
        out.append((code, jt, jf, k))
    return out


def _seccomp_mode() -> str | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Seccomp:"):
                    return line.split()[1]
    except OSError:
        pass
    return None


def install_seccomp(arch: str | None = None) -> None:
    """Install the filter on this (single-threaded) process; fail closed."""
    import ctypes
    import struct

    arch = arch or os.uname().machine
    if struct.calcsize("P") != 8:
        raise SandboxSetupError("the seccomp filter needs a 64-bit Python")
    program = seccomp_program(arch)
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError as exc:
        raise SandboxSetupError(f"cannot count this process's threads: {exc}") from None
    if threads != 1:  # prctl filters only the calling thread (and what it starts later)
        raise SandboxSetupError(f"the runner has {threads} threads before the student's code")

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(program))(*[SockFilter(*ins) for ins in program])
    fprog = SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 39, 22, 2
    libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
               ctypes.c_ulong(0))
    if libc.prctl(PR_GET_NO_NEW_PRIVS, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 1:
        raise SandboxSetupError("no_new_privs could not be set")
    ret = libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER),
                     ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p), ctypes.c_ulong(0),
                     ctypes.c_ulong(0))
    if ret != 0:
        err = ctypes.get_errno()
        raise SandboxSetupError(f"the seccomp filter could not be installed: {os.strerror(err)}")
    if _seccomp_mode() != "2":
        raise SandboxSetupError("the seccomp filter is not in force after installing it")


# --- output capture ----------------------------------------------------------------------------

class CappedText(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int, name: str):
        self.cap, self.name = cap, name
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, s) -> int:
        if not isinstance(s, str):
            s = str(s)
        room = self.cap - self.kept
        if room > 0:
            piece = s[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def text(self) -> str:
        out = "".join(self.parts)
        if self.dropped:
            out += f"\n[... {self.dropped} more characters not kept]\n"
        return out


# --- plain values ------------------------------------------------------------------------------

def to_plain(value, depth: int = 0, budget: list | None = None):
    """``value`` as JSON-able plain data, or raise :class:`NotPlain` saying why."""
    if budget is None:
        budget = [MAX_ELEMENTS]
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deeply")
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain(f"too large (more than {MAX_ELEMENTS} elements)")
    if value is None or type(value) is bool:
        return value
    if type(value) is int:
        if abs(value) >= 10 ** MAX_INT_DIGITS:
            raise NotPlain("an integer too large to report")
        return value
    if type(value) is float:
        return value
    if type(value) is str:
        if len(value) > MAX_STRING:
            raise NotPlain(f"a string longer than {MAX_STRING} characters")
        return value
    if type(value) in (list, tuple):
        return [to_plain(v, depth + 1, budget) for v in value]
    if _is_partition_spec(value):
        return _partition_spec_to_plain(value)
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.ndarray):
            return _array_to_plain(np, value, depth, budget)
        if isinstance(value, np.generic):
            if isinstance(value, np.bool_):
                return bool(value)
            if isinstance(value, np.integer):
                return to_plain(int(value), depth, budget)
            if isinstance(value, np.floating):
                return float(value)
            if isinstance(value, np.str_):
                return to_plain(str(value), depth, budget)
            raise NotPlain(f"not a plain value ({type(value).__name__})")
        if type(value).__module__.split(".")[0] in ("jax", "jaxlib") and hasattr(value, "__array__"):
            try:
                array = np.asarray(value)
            except Exception as exc:  # e.g. a tracer
                raise NotPlain(f"not a plain value ({type(value).__name__}: {exc})") from None
            return _array_to_plain(np, array, depth, budget)
    # subclasses of the plain types: their underlying value, whatever methods they override
    if isinstance(value, int):
        return to_plain(int.__int__(value), depth, budget)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return to_plain(str.__str__(value), depth, budget)
    raise NotPlain(f"not a plain value ({type(value).__name__})")


MAX_SPEC_ENTRIES = 64         # entries in one captured PartitionSpec (one per array dim)


def _is_partition_spec(value) -> bool:
    """A ``jax.sharding.PartitionSpec`` (in JAX 0.10 its class is ``jax.P``)."""
    cls = type(value)
    return (str(getattr(cls, "__module__", "")).split(".")[0] == "jax"
            and getattr(cls, "__name__", "") in ("PartitionSpec", "P"))


def _spec_axis(axis) -> str:
    if type(axis) is not str:
        raise NotPlain("a PartitionSpec whose mesh axis names are not strings")
    if len(axis) > 100:
        raise NotPlain("a PartitionSpec with a mesh axis name longer than 100 characters")
    return str.__str__(axis)


def _partition_spec_to_plain(value) -> list:
    """``P('X', None, ('X', 'Y'))`` -> ``["X", None, ["X", "Y"]]``: each entry None, a str, or
    a list of str. Anything else in it (an unconstrained entry, reduced/unreduced axes, an
    object posing as one) is not plain. Whatever the object's methods do, what comes back is
    built here from exact ``str`` and ``None`` only, at most ``MAX_SPEC_ENTRIES`` long."""
    for extra in ("unreduced", "reduced"):
        if getattr(value, extra, None):
            raise NotPlain(f"a PartitionSpec with {extra} axes")
    entries: list = []
    for entry in iter(value):
        if len(entries) >= MAX_SPEC_ENTRIES:
            raise NotPlain(f"a PartitionSpec with more than {MAX_SPEC_ENTRIES} entries")
        if entry is None:
            entries.append(None)
        elif type(entry) is str:
            entries.append(_spec_axis(entry))
        elif type(entry) in (tuple, list):
            if len(entry) > MAX_SPEC_ENTRIES:
                raise NotPlain(f"a PartitionSpec entry with more than {MAX_SPEC_ENTRIES} axes")
            entries.append([_spec_axis(axis) for axis in entry])
        else:
            raise NotPlain(f"a PartitionSpec entry that is not None, an axis name or a tuple "
                           f"of them ({type(entry).__name__})")
    return entries


def _array_to_plain(np, array, depth, budget):
    if array.size > budget[0]:
        raise NotPlain(f"too large (more than {MAX_ELEMENTS} elements)")
    kind = array.dtype.kind
    if kind in "biuf":
        budget[0] -= int(array.size)
        if array.ndim == 0:
            return array.item()
        return array.tolist()
    if kind in "US":
        return to_plain(array.tolist(), depth, budget)
    if kind == "O":
        return to_plain(array.tolist(), depth, budget)
    raise NotPlain(f"not a plain value (a numpy array of {array.dtype})")


# --- notebook code -----------------------------------------------------------------------------
#
# A code cell runs as the Python Jupyter's IPython kernel runs for it. Valid Python is compiled as
# it is: IPython's input transformation leaves it alone (the one exception, a pasted "In [n]: "
# prompt, is sent on to IPython), and no IPython is imported for it. Any other cell goes through
# IPython's own transformation (``TransformerManager().transform_cell``), here in the sandbox: it
# is super-linear on hostile input (it retokenises the whole cell once per magic, and its help
# pattern backtracks quadratically on long lines), so its cost is charged to the submission's
# own limits, never to the grader. What it makes of ``%magic``, ``!cmd``, ``x = !cmd`` and
# ``x?`` is a call on ``get_ipython()``, answered by :class:`NotebookShell`.

CELL_MAGIC_ERROR = "cell magics (%%) are not supported by the grader"
_PASTED_PROMPT = re.compile(r"^\s*In \[\d+\]: ", re.M)


def compile_cell(source: str, filename: str, compiled: Mapping[str, CodeType] | None = None):
    """The code object Jupyter would run for the code cell ``source``.

    ``compiled``: source -> code object of cells compiled once before (a template's warm-up:
    the release copy's cells, which a job's read-only and untouched cells repeat); such a cell
    gets that code object under its own ``filename``, as compiling it again would give.
    Raises SyntaxError as Jupyter would (for a cell magic: :data:`CELL_MAGIC_ERROR`)."""
    known = compiled.get(source) if compiled else None
    if known is not None:
        return _renamed(known, filename)
    code = _plain_python(source, filename)
    if code is None:
        code = compile(_ipython_source(source), filename, "exec", dont_inherit=True)
    return code


def _renamed(code: CodeType, filename: str) -> CodeType:
    """``code`` and every code object nested in it (functions, classes, comprehensions) with
    ``co_filename`` = ``filename``: what ``compile`` gives for that name."""
    consts = tuple(_renamed(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def python_source(source: str) -> str:
    """The Python Jupyter runs for the code cell ``source``: itself if it is valid Python, else
    IPython's transformation of it. Raises SyntaxError for a cell magic."""
    return source if _plain_python(source, "<cell>") is not None else _ipython_source(source)


def _plain_python(source: str, filename: str):
    """``source`` compiled, if it is Python that IPython would run unchanged; else None."""
    if _PASTED_PROMPT.search(source):
        return None
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte (before Python 3.12)
        return None


def _ipython_source(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(source)
    if code.startswith("get_ipython().run_cell_magic("):
        raise SyntaxError(CELL_MAGIC_ERROR)
    return code


class NotebookShell:
    """What ``get_ipython()`` gives the student's code: a stand-in for the IPython shell.

    ``%time statement`` runs the statement in the notebook's namespace (so that, as in Jupyter,
    the names it binds exist afterwards) and returns its value if it is an expression. Every
    other line magic, shell command (``!cmd``, ``x = !cmd``, which gets an empty list) and help
    request (``x?``) is skipped, and one line on the cell's stderr says so: it is the grader's
    run, not a kernel, and neither the shell nor the network is there. A cell magic raises
    SyntaxError, as a cell beginning with ``%%`` does.
    """

    def __init__(self, namespace: dict):
        self._namespace = namespace

    def get_ipython(self) -> "NotebookShell":
        return self

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1):
        if magic_name.startswith("%"):  # "%%name" not at the top of the cell
            raise SyntaxError(CELL_MAGIC_ERROR)
        if magic_name == "time" and line.strip():  # in the caller's scope, as IPython's %time
            return self._time(line, sys._getframe(_stack_depth).f_locals)
        self._skipped(f"%{magic_name} {line}".rstrip())
        return None

    def run_cell_magic(self, magic_name: str, line: str, cell: str):
        raise SyntaxError(CELL_MAGIC_ERROR)

    def system(self, cmd: str) -> None:
        self._skipped(f"!{cmd}")

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> list:
        self._skipped(f"!{cmd}")
        return []

    def show_usage(self) -> None:
        self._skipped("?")

    def _time(self, statement: str, scope: dict):
        try:
            expression = compile(statement, "<%time>", "eval", dont_inherit=True)
        except SyntaxError:
            exec(compile_cell(statement, "<%time>"), self._namespace, scope)
            return None
        return eval(expression, self._namespace, scope)

    @staticmethod
    def _skipped(what: str) -> None:
        sys.stderr.write(f"[grader: not run] {what[:200]}\n")


class Channel:
    """Line-delimited JSON records on a pipe."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, record: dict) -> None:
        data = (json.dumps(record, allow_nan=True, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError:
                return  # the grader stopped listening (or the student closed the fd)
            view = view[n:]


def _error_record(exc: BaseException) -> dict:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next  # the runner's own frames are not the student's business
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {"ename": type(exc).__name__, "evalue": str(exc)[:2000], "traceback": text[-8000:]}


def run_job(job: dict, channel: Channel, compiled: Mapping[str, CodeType] | None = None) -> None:
    """Run the job's steps, reporting each on ``channel``. Never raises for student errors.
    ``compiled``: cells compiled before (see :func:`compile_cell`)."""
    limits = job.get("limits", {})
    cell_cap = int(limits.get("cell_output", 20_000))
    total_cap = int(limits.get("total_output", 200_000))
    used = 0
    ns: dict = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
    ns["get_ipython"] = NotebookShell(ns).get_ipython
    real_stdout, real_stderr = sys.stdout, sys.stderr
    for step in job["steps"]:
        kind = step.get("kind")
        if kind == "code":
            index = step["index"]
            channel.send({"t": "start", "index": index})
            room = max(0, min(cell_cap, total_cap - used))
            out, err = CappedText(room, "stdout"), CappedText(room, "stderr")
            sys.stdout, sys.stderr = out, err
            error = None
            try:
                code = compile_cell(step["source"], f"<cell {index}>", compiled)
                exec(code, ns)
            except BaseException as exc:  # SystemExit, KeyboardInterrupt, MemoryError too
                try:
                    error = _error_record(exc)
                except BaseException:
                    error = {"ename": "Error", "evalue": "", "traceback": ""}
            finally:
                sys.stdout, sys.stderr = real_stdout, real_stderr
            _close_figures()
            stdout, stderr = out.text(), err.text()
            used += len(stdout) + len(stderr)
            channel.send({"t": "cell", "index": index, "stdout": stdout, "stderr": stderr,
                          "error": error})
        elif kind == "capture":
            values = {}
            for name in step["names"]:
                if name not in ns:
                    continue
                try:
                    values[name] = {"value": to_plain(ns[name])}
                except NotPlain as exc:
                    values[name] = {"error": str(exc)}
                except BaseException as exc:  # a hostile __eq__/__len__ ...
                    values[name] = {"error": f"not a plain value ({type(exc).__name__})"}
            channel.send({"t": "capture", "grade_id": step["grade_id"], "values": values})
    channel.send({"t": "done"})


def _close_figures() -> None:
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close("all")  # as the inline backend does after each cell
        except BaseException:
            pass


def read_job(stream) -> dict:
    data = stream.read()
    job = json.loads(data)
    if not isinstance(job, dict) or not isinstance(job.get("steps"), list):
        raise ValueError("runner: bad job")
    return job


def apply_rlimits(limits: dict) -> None:
    """Set soft = hard limits (an unprivileged process can never raise them again)."""
    names = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU,
             "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
             "nofile": resource.RLIMIT_NOFILE}
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, value in limits.items():
        if key == "cpu":  # SIGXCPU at the limit, SIGKILL a second later
            resource.setrlimit(names[key], (int(value) - 1, int(value)))
        else:
            resource.setrlimit(names[key], (int(value), int(value)))


def _exit_at_cpu_limit() -> None:
    """Pid 1 of a namespace (a template's job; as an ordinary user, the runner) is immune to
    signals it has no handler for, RLIMIT_CPU's SIGXCPU included: without a handler it would
    run on to the hard limit and die of SIGKILL, which reads as a crash, not as a CPU limit.
    Exiting with 128 + SIGXCPU reports it as a process killed by SIGXCPU would be."""
    import signal

    signal.signal(signal.SIGXCPU, lambda signum, frame: os._exit(128 + signum))


def setup(config: dict) -> None:
    """Limits, then the uid, then the seccomp filter: all before any of the student's code is
    read. Raises :class:`SandboxSetupError` if the filter cannot be installed."""
    try:  # if memory runs out on the machine, the kernel kills a student's process first
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    apply_rlimits(config.get("rlimits", {}))
    if os.getpid() == 1:
        _exit_at_cpu_limit()
    if config.get("uid") is not None:
        drop_privileges(int(config["uid"]))
    else:
        _no_new_privs()
    install_seccomp()


def _setup_failed(exc: BaseException) -> None:
    """No "ready" record was sent: the grader reports a sandbox error, not a student's run."""
    try:
        os.write(2, f"runner: sandbox error: {type(exc).__name__}: {exc}\n".encode())
    except BaseException:
        pass
    os._exit(72)


def main(argv: list[str]) -> None:
    fd = int(argv[1])
    channel = Channel(fd)
    try:
        setup(json.loads(argv[2]) if len(argv) > 2 else {})
    except BaseException as exc:
        _setup_failed(exc)
    channel.send(READY)  # the first record: the sandbox is complete, the student's code may run
    job = read_job(sys.stdin.buffer)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    try:
        run_job(job, channel)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(0)  # do not wait for threads the student started


# --- template (zygote) mode --------------------------------------------------------------------
#
# ``serve`` runs as pid 1 of a bwrap sandbox (``sandbox.TemplateSandbox``), still root but with
# only CAP_SETUID, CAP_SETGID, CAP_SYS_ADMIN, CAP_KILL and CAP_NET_ADMIN, after importing the
# usual modules. Per job it makes a new pid namespace for its next child and forks G, pid 1 of
# that namespace (then sets its own children's namespace back: the next job gets a new one).
# G makes new mount, IPC and UTS namespaces, mounts an empty /tmp, /dev/shm and its own /proc,
# sets the limits, drops to the job's uid, installs the seccomp filter (after its namespaces and
# mounts are made: nothing of them is left to do), sends "ready" and runs the job; everything G
# starts dies with it (the kernel kills a pid namespace whose pid 1 exits). The template waits
# for G and reports how it ended; it kills G when the grader asks. The template itself is not
# dumpable (no ptrace, no /proc/<pid>/fd access), is outside every job's pid namespace (a job
# cannot signal it) and runs as another uid than any job; a job can reach neither the template
# nor any other job. (Forking G from the template itself, not from a child of it that made the
# namespaces, saves a fork and an exit of a copy of the template per job.)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID = 0x20000, 0x04000000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 0x4000, 0x40000
MS_REMOUNT, MS_BIND = 32, 4096


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source: str, target: str, fstype, flags: int, data) -> None:
    _check(libc.mount(source.encode() if source else None, target.encode(),
                      fstype.encode() if fstype else None, flags,
                      data.encode() if data else None), f"mount {target}")


def _mounts_below(prefix: str) -> list[str]:
    """Mount points strictly below ``prefix``, outermost first (from /proc/self/mountinfo)."""
    points = set()
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point.startswith(prefix + "/"):
                points.add(point)
    return sorted(points, key=lambda p: (p.count("/"), p))


def _fresh_tmp(libc, scratch: int) -> None:
    """Mount an empty, size-capped /tmp, keeping the read-only binds the sandbox put below it.

    A venv or checkout that lives under the host's /tmp (a CI clone) is bound into the sandbox
    at the same path; a plain tmpfs over /tmp would hide it, and the student's own
    ``subprocess.run([sys.executable, ...])`` would fail. Each such mount is held by an O_PATH
    descriptor across the new mount and bound back, read-only, on top of it.
    """
    held = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in _mounts_below("/tmp")]
    _mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch},mode=1777")
    for path, fd in held:
        source = f"/proc/self/fd/{fd}"
        if os.path.isdir(source):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            open(path, "a").close()
        _mount(libc, source, path, None, MS_BIND | MS_REC, None)
        _mount(libc, "", path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
        os.close(fd)


def preload(modules: list[str]) -> None:
    """Import what most submissions import, once, in the template process."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    if "matplotlib" in sys.modules:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
            from matplotlib import font_manager

            font_manager.fontManager  # noqa: B018  (the font list is read now, not per job)
        except Exception:
            pass


class _NoJax:
    """A meta-path finder that refuses JAX: a template forks every job, and JAX's runtime (its
    threads) must not be loaded in a process that forks. A student who imports JAX gets it in
    their own job."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in ("jax", "jaxlib"):
            raise ImportError(f"{name} is not imported in a template's warm-up")
        return None


def warm_up(sources: list[str], budget: float = 2.0) -> dict[str, CodeType]:
    """Run the release notebook's cells once in the template, output discarded, errors (a
    stub's NotImplementedError) ignored, JAX refused, in a namespace dropped after, figures
    closed: what every student's run loads lazily (a solver module, matplotlib's text and font
    caches) is then loaded once, not in every job. At most ``budget`` seconds of cells.

    Returns each plain-Python cell's code object as a job compiles it (:func:`compile_cell`),
    by source: a job reuses them for the cells it runs unchanged (hw1: 31.1 -> 30.6 ms of CPU
    per job)."""
    import time

    compiled: dict[str, CodeType] = {}
    for source in sources:
        code = _plain_python(source, "<cell>")
        if code is not None:
            compiled[source] = code
    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    real = sys.stdout, sys.stderr
    end = time.monotonic() + budget
    sys.meta_path.insert(0, _NoJax)
    try:
        sys.stdout = sys.stderr = io.StringIO()
        for source in sources:
            if time.monotonic() > end:
                break
            try:
                exec(compile(source, "<warm-up>", "exec"), ns)
            except BaseException:
                pass
        _warm_plotting()
    finally:
        sys.stdout, sys.stderr = real
        sys.meta_path.remove(_NoJax)
        ns.clear()
        _close_figures()
    return compiled


def _warm_plotting() -> None:
    """Draw one throwaway figure with what homework plots use (log axes, lines, a reference
    line, labels, a legend, a grid), so that matplotlib's lazy state -- font lookups, text
    and tick machinery -- is built once here, not in every job. A release notebook's own plot
    cell rarely gets that far in the warm-up: it plots the student's answers, which a stub
    does not bind (hw1: 36.5 -> 34.6 ms of CPU per job)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ax.loglog([1.0, 2.0, 4.0], [1.0, 2.0, 3.0], "o-", label="a")
        ax.plot([1.0, 4.0], [2.0, 2.0], "s-", label="b")
        ax.axhline(2.0, color="gray", linestyle="--", label="c")
        ax.axvline(2.0, color="k", linestyle=":")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title("t")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        plt.show()
    except Exception:
        pass


def _reseed() -> None:
    """A fresh process would have fresh random state: give the child one too."""
    import random

    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(int.from_bytes(os.urandom(4), "little"))
        except Exception:
            pass


def _job(header: dict, fds: list[int], compiled: Mapping[str, CodeType]) -> None:
    """G: pid 1 of a fresh pid namespace. Never returns."""
    try:
        libc = _libc()
        _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        _mount(libc, "", "/", None, MS_REC | MS_PRIVATE, None)
        scratch = int(header.get("scratch", 128 << 20))
        _fresh_tmp(libc, scratch)
        if os.path.isdir("/dev/shm"):
            _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=16m,mode=1777")
        _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        os.makedirs("/tmp/.mpl", exist_ok=True)  # _fresh_tmp may have made it for the font list
        os.chmod("/tmp/.mpl", 0o1777)
        os.chdir("/tmp")
        in_r, out_w, result_w = fds
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        os.dup2(result_w, 3)
        os.closerange(4, 1 << 16)  # the template's socket and every other job's fd
        try:
            setup({"rlimits": header.get("rlimits", {}), "uid": header.get("uid")})
        except BaseException as exc:
            _setup_failed(exc)
        libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: like any process of its own
        Channel(3).send(READY)
        _reseed()
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      line_buffering=True)
        job = read_job(io.FileIO(0, "r", closefd=False))
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        run_job(job, Channel(3), compiled)
    except BaseException as exc:
        try:
            os.write(2, f"runner: {type(exc).__name__}: {exc}\n".encode())
        except BaseException:
            pass
        os._exit(70)
    os._exit(0)


def _prepare(config: dict) -> dict[str, CodeType]:
    """What a template does once, before its first job: import, warm up, become undumpable."""
    preload(config.get("preload", []))
    compiled = warm_up(config.get("warm_up", []))
    _libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    sys.stdout.flush()
    sys.stderr.flush()
    return compiled


def serve(sock_fd: int, config_json: str) -> None:
    """A template on its own: prepare, then serve jobs over the Unix socket ``sock_fd``."""
    import socket

    config = json.loads(config_json)
    sock = socket.socket(fileno=sock_fd)
    _serve_jobs(sock, config, _prepare(config))


def serve_templates(sock_fd: int, config_json: str) -> None:
    """The parent of templates (``template.TemplateParent``): prepare once, then fork one
    template per request that arrives on ``sock_fd``.

    A request is one JSON line carrying, by SCM_RIGHTS, the new template's socket to the grader
    and a descriptor of its cgroup's entry file, opened by the grader. The forked template
    writes ``0`` into that file (it moves itself into its own cgroup, so what it and its jobs
    allocate from then on is charged there, not here), makes a network namespace of its own
    (the jobs of two templates run at once: they must not reach each other over the loopback)
    and serves jobs like any template. This process only forks; it never runs a job."""
    import signal
    import socket

    config = json.loads(config_json)
    sock = socket.socket(fileno=sock_fd)
    compiled = _prepare(config)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the templates as they end
    sock.sendall(json.dumps({"ready": True}).encode() + b"\n")
    buf = b""
    while True:
        lines, fds, buf = _recv_lines(sock, buf, 4)
        if not any(line.strip() for line in lines) and not fds:
            continue
        try:
            request = json.loads(lines[0]) if len(lines) == 1 else None
        except ValueError:
            request = None
        if request != {"template": True} or len(fds) != 2:
            os._exit(3)  # protocol error: the grader starts a new parent
        if os.fork() == 0:
            sock.close()
            _forked_template(socket.socket(fileno=fds[0]), fds[1], config, compiled)
        for fd in fds:
            os.close(fd)


def _recv_lines(sock, buf: bytes, max_fds: int) -> tuple[list[bytes], list[int], bytes]:
    """The next message from the grader: its complete lines (after ``buf``, what was left of
    a line), the descriptors it carried, and what is left of a line now. Exits when the
    grader has closed the socket."""
    import socket

    msg, fds, _, _ = socket.recv_fds(sock, 65536, max_fds)
    if not msg:
        os._exit(0)
    lines = (buf + msg).split(b"\n")
    return lines[:-1], fds, lines[-1]


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP, CLONE_NEWNET = 0x8913, 0x8914, 0x1, 0x40000000


def _loopback_up() -> None:
    """Bring up ``lo`` in a new network namespace, as bwrap's --unshare-net does."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _forked_template(sock, cgroup_entry: int, config: dict, compiled: Mapping[str, CodeType]) -> None:
    """A template forked by :func:`serve_templates`: its own cgroup and network, then jobs.
    Never returns."""
    import signal

    try:
        os.write(cgroup_entry, b"0")
        os.close(cgroup_entry)
        _check(_libc().unshare(CLONE_NEWNET), "unshare")
        _loopback_up()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except BaseException as exc:
        try:
            sock.sendall(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        except BaseException:
            pass
        os._exit(3)
    try:
        _serve_jobs(sock, config, compiled)
    except BaseException:
        pass
    os._exit(0)


def _serve_jobs(sock, config: dict, compiled: Mapping[str, CodeType]) -> None:
    """The template's loop: one job at a time, over a Unix socket from the grader."""
    import fcntl
    import select
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    libc = _libc()
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def send(obj) -> None:
        sock.sendall(json.dumps(obj).encode() + b"\n")

    send({"ready": True, "modules": sorted(m for m in config.get("preload", []) if m in sys.modules)})
    buf = b""
    child = None
    pidfd = None
    while True:
        if child is None:
            lines, fds, buf = _recv_lines(sock, buf, 8)
            headers = [ln for ln in lines if ln.strip() and b'"kill"' not in ln]  # stale kills
            if not fds and not headers:
                continue
            if len(fds) != 3 or len(headers) != 1:
                os._exit(3)  # protocol error: the grader starts a new template
            header = json.loads(headers[0])
            # out of the way of 0-3, which G sets up from these
            fds = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in fds] + fds
            for fd in fds[3:]:
                os.close(fd)
            fds = fds[:3]
            if libc.unshare(CLONE_NEWPID) != 0:  # the next child is pid 1 of a new one
                os._exit(3)
            child = os.fork()
            if child == 0:
                _job(header, fds, compiled)
            if libc.setns(own_pid_ns, CLONE_NEWPID) != 0:  # so that the next job gets a new one
                os._exit(3)
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(child)
            send({"started": True})
            continue
        if pidfd is None:  # never: it is set with child, above; a bug ends this template
            os._exit(3)
        ready, _, _ = select.select([sock.fileno(), pidfd], [], [])
        if pidfd in ready:
            _, status, usage = os.wait4(child, 0)
            os.close(pidfd)
            child, pidfd = None, None
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            # the CPU seconds of the job's processes (those waited for), for the bench
            send({"exit": code, "cpu": usage.ru_utime + usage.ru_stime})
            continue
        data = sock.recv(65536)
        if not data:
            os.kill(child, signal.SIGKILL)
            os._exit(0)
        buf += data
        while b"\n" in buf:
            line, _, buf = buf.partition(b"\n")
            if b"kill" in line:
                try:
                    os.kill(child, signal.SIGKILL)  # pid 1 of its namespace: all of the job
                except ProcessLookupError:
                    pass


if __name__ == "__main__":
    main(sys.argv)

"""The trusted side of grading: validate a submission, plan its run, check the answers.

Everything here runs in the grader's own process and never executes the student's code:

1. :func:`load_spec` reads the *instructor's* notebook (``course.source(a)``, hidden tests
   included) and the student version (``course.release(a)``, for checksums).
2. :func:`validate` parses a submitted file as data (size-capped JSON), compares every locked
   cell with the release by nbgrader checksum and grade_id, and plans the sandboxed run: the
   submission's code cells in order, read-only cells restored to the instructor's version,
   test cells replaced by *capture* steps that report the values their names hold there.
3. :func:`score` turns what came back from the sandbox -- untrusted bytes -- into scores: each
   record is size-capped, parsed and schema-checked, each value checked to be plain data; then
   each test cell's *instructor* source runs here in a fresh namespace holding only those
   values. ``AssertionError`` gives zero and its message; a missing name gives "not answered".

A student can therefore at most set the values of their own answers. See ``DESIGN.md``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import dataclasses
import functools
import io
import json
import math
import re
import signal

from scalebook.variants import Variant, VariantSpec, default_variant, draw, student_key

from ..course import is_identity_cell
from ..safe_cells import RenderBudget, safe_attachments, safe_cell_text
from ..sandbox import Limits, Outcome

MAX_NOTEBOOK_BYTES = 64 << 20
MAX_CELLS = 5000              # cells in a submission (the homework has under 100)
MAX_SOURCE_CHARS = 8 << 20    # characters of source, all cells together
MAX_NESTING = 64              # depth of the notebook's JSON (a real one is under 20)
MAX_JSON_OBJECTS = 500_000    # JSON objects in it (abandons parsing past this)
MAX_JSON_ITEMS = 4_000_000    # list elements + object members in it
MAX_RECORD_BYTES = 4 << 20
MAX_MESSAGE = 2000
PLAIN_DEPTH = 16
PLAIN_ELEMENTS = 200_000

# Per-student numbers (autograder/variants.py): the hidden checks read the student's numbers
# from VARIANT, which the grader binds and never takes from the student; the notebook's
# STUDENT_ID and HOMEWORK_KEY are captured once, before the first test, to compare with the
# student who handed it in.
VARIANT_NAME = "VARIANT"
IDENTITY = "__identity__"
IDENTITY_NAMES = ("STUDENT_ID", "HOMEWORK_KEY")
SELF_CHECK_STUDENT = "instructor-self-check"

_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"

# Submission statuses, most serious first; "graded" means nothing went wrong.
GRADER_ERROR = "grader error"
INVALID = "invalid notebook"
TAMPERED = "tampered with a test cell"
TIMED_OUT = "timed out"
MEMORY = "memory limit"
OUTPUT = "output limit"
CRASHED = "crashed"
EXITED = "exited early"
GRADED = "graded"
SEVERITY = [GRADER_ERROR, INVALID, TAMPERED, TIMED_OUT, MEMORY, OUTPUT, CRASHED, EXITED, GRADED]


class SpecError(Exception):
    """The instructor's files are missing or inconsistent (not the student's fault)."""


@dataclasses.dataclass
class SubmissionResult:
    student: str
    assignment: str
    status: str
    scores: dict[str, float]
    max_scores: dict[str, float]
    messages: dict[str, str]
    problems: list[str]
    # grade_id -> {answer name: the value the test saw (short plain data) or {"error": why}}:
    # what the instructor's report groups wrong answers by
    answers: dict[str, dict] = dataclasses.field(default_factory=dict)
    # per-student numbers: {"numbers": the drawn inputs graded against, "entered_id",
    # "entered_key": what the notebook held, "problem": why it is not the submitter's own, or
    # None}; empty for a homework without variants
    variant: dict = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SubmissionResult":
        fields = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        return cls(**fields)


# --- the instructor's notebook -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TestCell:
    grade_id: str
    points: float
    source: str            # the instructor's, hidden tests included: what is executed
    release_source: str    # what the student sees
    checksum: str          # nbgrader checksum of the release cell
    names: tuple[str, ...]  # names it reads that it does not bind itself: the answers

    @functools.cached_property
    def code(self):
        """``source`` compiled, once per spec (a SyntaxError is raised again at each use)."""
        return compile(self.source, f"<test {self.grade_id}>", "exec")


@dataclasses.dataclass(frozen=True)
class LockedCell:
    grade_id: str
    cell_type: str
    source: str
    checksum: str


@dataclasses.dataclass
class Spec:
    assignment: str
    notebook: str                       # file name, "<assignment>.ipynb"
    tests: list[TestCell]
    locked: dict[str, LockedCell]       # read-only cells that are not tests
    release: dict                       # the release notebook (JSON)
    source_nb: dict
    variants: VariantSpec | None = None  # what the homework varies (None: same for everyone)
    variants_on: bool = False            # the course gives per-student numbers
    secret: bytes | None = dataclasses.field(default=None, repr=False)  # the course's
    template: dict | None = None         # the source notebook as written, {{placeholders}} kept

    def variant_of(self, student: str) -> Variant | None:
        """The numbers ``student`` is graded on (None: the homework has no variants)."""
        if self.variants is None:
            return None
        if not self.variants_on or self.secret is None:
            return default_variant(self.variants)
        return draw(self.variants, student_key(self.secret, student))

    def key_of(self, student: str) -> str | None:
        if self.variants is None or not self.variants_on or self.secret is None:
            return None
        return student_key(self.secret, student)

    @property
    def max_scores(self) -> dict[str, float]:
        return {t.grade_id: t.points for t in self.tests}

    def test(self, grade_id: str) -> TestCell:
        return next(t for t in self.tests if t.grade_id == grade_id)


def _text(source) -> str:
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _nbg(cell: dict) -> dict:
    meta = cell.get("metadata")
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def checksum(cell: dict) -> str:
    """nbgrader's cell checksum (``nbgrader.utils.compute_checksum``) of a JSON cell.

    A pure function of the cell's type, source and nbgrader metadata, remembered for the
    cells every submission repeats (nbgrader's own takes 0.4 ms a cell: 18 ms a notebook)."""
    meta = json.dumps(_nbg(cell), sort_keys=True)
    return _checksum(str(cell.get("cell_type")), _text(cell.get("source")), meta)


@functools.lru_cache(maxsize=4096)
def _checksum(cell_type: str, source: str, nbgrader_json: str) -> str:
    import nbformat
    from nbgrader.utils import compute_checksum

    node = nbformat.from_dict({"cell_type": cell_type, "source": source,
                               "metadata": {"nbgrader": json.loads(nbgrader_json)}})
    return compute_checksum(node)


def _bound_at_top(stmt: ast.AST) -> set[str]:
    """Names a top-level statement (or a for/with target) binds in the cell's (module) scope:
    assignment, for, with, except and match targets, imports, def and class names -- not what
    nested functions, classes, lambdas or comprehensions bind in their own scopes."""
    out: set[str] = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            stack.extend(node.decorator_list)  # evaluated here; their bodies are other scopes
            continue
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                               ast.GeneratorExp)):
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            out.add(node.rest)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _read_in(node: ast.AST) -> set[str]:
    """Names a statement or expression may read from the cell's scope, over-approximated as
    before inside nested scopes (loaded names, less what imports, defs, arguments and
    comprehension targets within it define)."""
    loaded, defined = set(), set()
    for node in ast.walk(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            loaded.add(node.target.id)  # x += 1 reads x
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del):
            loaded.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                defined.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for gen in node.generators:
                for t in ast.walk(gen.target):
                    if isinstance(t, ast.Name):
                        defined.add(t.id)
    return loaded - defined


def _scan(stmts: list[ast.stmt], bound: set[str]) -> set[str]:
    """The answer names of a block run in order, given the names ``bound`` before it."""
    answers: set[str] = set()
    bound = set(bound)
    for st in stmts:
        if isinstance(st, (ast.For, ast.AsyncFor)):
            answers |= (_read_in(st.iter) | _read_in(st.target)) - bound
            answers |= _scan(st.body, bound | _bound_at_top(st.target))  # its first iteration
            answers |= _scan(st.orelse, bound)
        elif isinstance(st, (ast.If, ast.While)):
            answers |= _read_in(st.test) - bound
            answers |= _scan(st.body, bound) | _scan(st.orelse, bound)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            inner = set(bound)
            for item in st.items:
                answers |= _read_in(item.context_expr) - inner
                if item.optional_vars is not None:
                    answers |= _read_in(item.optional_vars) - inner
                    inner |= _bound_at_top(item.optional_vars)
            answers |= _scan(st.body, inner)
        elif isinstance(st, (ast.Try, ast.TryStar)):  # try/except and try/except* (3.11+)
            answers |= _scan(st.body, bound) | _scan(st.orelse, bound) | _scan(st.finalbody, bound)
            for h in st.handlers:
                if h.type is not None:
                    answers |= _read_in(h.type) - bound
                answers |= _scan(h.body, bound | ({h.name} if h.name else set()))
        else:  # simple statements; match, def and class over-approximated as a whole
            answers |= _read_in(st) - bound
        bound |= _bound_at_top(st)
    return answers


def answer_names(source: str) -> tuple[str, ...]:
    """The student's answers a test cell reads: the only names captured and given to it.

    The cell's statements are taken in order: a name is an answer name if a statement reads
    it before any earlier statement bound it. So ``ans = np.asarray(ans)`` reads the student's
    ``ans``, while ``_expected = ...`` followed by ``check(x, _expected)`` does not make
    ``_expected`` an answer: the test's own names are neither sent into the sandbox (where the
    student could read them) nor filled in from the student's namespace. The bodies of ``for``,
    ``while``, ``if``, ``with`` and ``try`` are followed in order too (a loop as its first
    iteration; each branch from what was bound before it). Function and class bodies, lambdas,
    comprehensions and ``match`` are over-approximated: capturing a value too many is harmless
    there, one too few would mark an answered question "not answered". Builtins are never
    answers.
    """
    return tuple(sorted(_scan(ast.parse(source).body, set()) - set(dir(builtins)) - {VARIANT_NAME}))


def strip_hidden_tests(source: str) -> str:
    out, hidden = [], False
    for line in source.splitlines(keepends=True):
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        elif not hidden:
            out.append(line)
    return "".join(out)


def load_spec(course, assignment: str) -> Spec:
    """The assignment's tests (from ``source/``) and locked cells (from ``release/``), and, for a
    homework with per-student numbers, what it varies and the course's secret."""
    name = f"{assignment}.ipynb"
    src_path, rel_path = course.source(assignment) / name, course.release(assignment) / name
    if not src_path.is_file():
        raise SpecError(f"no instructor notebook {src_path}: prepare the assignment first")
    if not rel_path.is_file():
        raise SpecError(f"no release notebook {rel_path}: run generate_assignment first")
    source_nb = json.loads(src_path.read_text("utf-8"))
    release = json.loads(rel_path.read_text("utf-8"))
    rel_cells = {}
    for cell in release.get("cells", []):
        gid = _nbg(cell).get("grade_id")
        if gid:
            rel_cells[gid] = cell
    tests, locked = [], {}
    for cell in source_nb.get("cells", []):
        nbg = _nbg(cell)
        gid = nbg.get("grade_id")
        if not gid:
            continue
        if nbg.get("grade") and cell.get("cell_type") == "code":
            rel = rel_cells.get(gid)
            if rel is None:
                raise SpecError(f"test cell {gid} is in {src_path} but not in {rel_path}: regenerate")
            src = _text(cell.get("source"))
            if strip_hidden_tests(src).strip() != _text(rel.get("source")).strip():
                raise SpecError(f"test cell {gid} differs between source and release: regenerate")
            try:
                names = answer_names(src)
            except SyntaxError as exc:
                raise SpecError(f"test cell {gid} is not valid Python: {exc}") from None
            tests.append(TestCell(gid, float(nbg.get("points", 0)), src, _text(rel.get("source")),
                                  checksum(rel), names))
        elif nbg.get("grade"):
            raise SpecError(f"{gid}: only autograded code test cells are supported (found a "
                            f"graded {cell.get('cell_type')} cell)")
    for gid, cell in rel_cells.items():
        nbg = _nbg(cell)
        if nbg.get("locked") and not nbg.get("grade") and not nbg.get("solution"):
            locked[gid] = LockedCell(gid, cell.get("cell_type", ""), _text(cell.get("source")),
                                     checksum(cell))
    if not tests:
        raise SpecError(f"{src_path} has no autograder test cells")
    from scalebook.homework import spec_for  # late: its 7 homeworks take 0.4 s to import
    variants = spec_for(assignment)
    if variants is None:
        return Spec(assignment, name, tests, locked, release, source_nb)
    from ..course import variants_secret

    secret = variants_secret(course)
    on = secret is not None
    template_path = course.templates(assignment) / name
    template = json.loads(template_path.read_text("utf-8")) if template_path.is_file() else None
    return Spec(assignment, name, tests, locked, release, source_nb, variants, on, secret, template)


# --- the submission ----------------------------------------------------------------------------

@dataclasses.dataclass
class Validation:
    """A submission checked against the spec, and the plan of its sandboxed run."""

    notebook: dict | None                 # the parsed submission (None: not a notebook)
    invalid: str | None                   # why it is not a gradable notebook
    tampered: dict[str, str]              # grade_id -> what was done to the test cell
    problems: list[str]
    steps: list[dict]                     # the job for sandbox/inside.py
    test_positions: dict[str, int]        # grade_id -> index of the test cell in the submission

    def job(self, limits: Limits) -> dict:
        return {"steps": self.steps,
                "limits": {"cell_output": limits.cell_output, "total_output": limits.total_output}}


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (not Unicode; unwritable as UTF-8) replaced by U+FFFD.

    JSON can carry them (``"\\ud800"``) and Python keeps them in a ``str``; every string from a
    student -- the notebook, the sandbox's records -- goes through this before it can reach a
    file, a message or the gradebook."""
    return _SURROGATE.sub("\ufffd", text)


class _TooBig(ValueError):
    pass


def _nbgrader_ok(nbg: dict) -> str | None:
    """Why a cell's nbgrader metadata is malformed, or None. Types as nbgrader writes them."""
    for key in ("grade_id", "checksum", "cell_type"):
        if key in nbg and not isinstance(nbg[key], str):
            return f"its nbgrader {key} is not a string"
    for key in ("grade", "solution", "locked", "task"):
        if key in nbg and not isinstance(nbg[key], bool):
            return f"its nbgrader {key} is not true/false"
    points = nbg.get("points", 0)
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not (-1e9 < points < 1e9):
        return "its nbgrader points is not a number"
    if "schema_version" in nbg and type(nbg["schema_version"]) is not int:
        return "its nbgrader schema_version is not an integer"
    return None


def _walk_json(root, clean: bool) -> str | None:
    """Check the parsed notebook's shape (depth, size) without recursion, cleaning strings
    (surrogates) in place if ``clean``. Returns why it is not acceptable, or None."""
    stack = [(root, 1)]
    items = 0
    while stack:
        obj, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"its JSON is nested more than {MAX_NESTING} levels deep"
        if isinstance(obj, dict):
            items += len(obj)
            if clean and any(_SURROGATE.search(k) for k in obj):
                pairs = [(clean_text(k), v) for k, v in obj.items()]
                obj.clear()
                obj.update(pairs)
            for k, v in obj.items():
                if isinstance(v, (dict, list)):
                    stack.append((v, depth + 1))
                elif clean and isinstance(v, str):
                    obj[k] = clean_text(v)
        elif isinstance(obj, list):
            items += len(obj)
            for i, v in enumerate(obj):
                if isinstance(v, (dict, list)):
                    stack.append((v, depth + 1))
                elif clean and isinstance(v, str):
                    obj[i] = clean_text(v)
        if items > MAX_JSON_ITEMS:
            return f"it has more than {MAX_JSON_ITEMS} JSON values"
    return None


def parse_notebook(data: bytes) -> tuple[dict | None, str | None]:
    """The submission as a notebook dict, or (None, why not).

    Strict, as the input is hostile: size, number of cells, total source, JSON depth and
    number of values are capped; every field the grader uses must have its nbformat/nbgrader
    type; lone surrogates in any string are replaced. What passes can be copied, compared,
    hashed and written without surprises.
    """
    if len(data) > MAX_NOTEBOOK_BYTES:
        return None, f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB"
    objects = [0]

    def count(obj: dict) -> dict:
        objects[0] += 1
        if objects[0] > MAX_JSON_OBJECTS:
            raise _TooBig(f"it has more than {MAX_JSON_OBJECTS} JSON objects")
        return obj

    try:
        nb = json.loads(data.decode("utf-8"), object_hook=count)
    except UnicodeDecodeError:
        return None, "the file is not UTF-8 text"
    except _TooBig as exc:
        return None, f"the file is too large a notebook ({exc})"
    except (ValueError, RecursionError) as exc:
        return None, f"the file is not valid JSON ({clean_text(str(exc))[:200]})"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, "the file is JSON but not a Jupyter notebook"
    if nb.get("nbformat") != 4:
        return None, f"unsupported notebook format {ascii(nb.get('nbformat'))[:50]} (need nbformat 4)"
    if len(nb["cells"]) > MAX_CELLS:
        return None, f"the notebook has more than {MAX_CELLS} cells"
    why = _walk_json(nb, clean=bool(_SURROGATE_ESCAPE.search(data)))
    if why is not None:
        return None, f"the notebook is malformed: {why}"
    total = 0
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            return None, f"cell {i} is not a notebook cell"
        src = cell.get("source", "")
        if not isinstance(src, str) and not (isinstance(src, list) and all(isinstance(s, str) for s in src)):
            return None, f"cell {i} has a malformed source"
        total += len(src) if isinstance(src, str) else sum(map(len, src))
        if total > MAX_SOURCE_CHARS:
            return None, f"the notebook has more than {MAX_SOURCE_CHARS >> 20} M characters of source"
        if not isinstance(cell.get("metadata", {}), dict):
            return None, f"cell {i} has malformed metadata"
        nbg = cell.get("metadata", {}).get("nbgrader")
        if nbg is not None and not isinstance(nbg, dict):
            return None, f"cell {i} has malformed nbgrader metadata"
        why = _nbgrader_ok(nbg) if nbg is not None else None
        if why is not None:
            return None, f"cell {i} has malformed nbgrader metadata: {why}"
    return nb, None


def _personal_text(spec: Spec, student: str | None) -> dict[str, str]:
    """grade_id -> a read-only markdown cell's text in ``student``'s own (roster) notebook."""
    variant = spec.variant_of(student) if student is not None and spec.variants_on else None
    if variant is None or spec.variants is None:  # (a variant is drawn from spec.variants)
        return {}
    from scalebook.variants import fill_placeholders

    out = {}
    for cell in (spec.template or spec.source_nb).get("cells", []):
        gid = _nbg(cell).get("grade_id")
        if gid in spec.locked and cell.get("cell_type") == "markdown":
            out[gid] = fill_placeholders(_text(cell.get("source")), spec.variants, variant)
    return out


def validate(spec: Spec, data: bytes | None, *, missing: str | None = None,
             student: str | None = None) -> Validation:
    """Check a submission against the spec and plan its run. ``student``: who handed it in
    (their own roster notebook's problem text counts as unchanged)."""
    if data is None:
        return Validation(None, missing or "no notebook was submitted", {}, [], [], {})
    nb, why = parse_notebook(data)
    if nb is None:
        return Validation(None, why, {}, [], [], {})
    cells = nb["cells"]
    by_gid: dict[str, list[int]] = {}
    for i, cell in enumerate(cells):
        gid = _nbg(cell).get("grade_id")
        if isinstance(gid, str) and gid:
            by_gid.setdefault(gid, []).append(i)
    known = {t.grade_id for t in spec.tests} | set(spec.locked)
    if not known & set(by_gid):
        return Validation(nb, f"this is not the {spec.assignment} notebook (none of its cells are there)",
                          {}, [], [], {})
    tampered: dict[str, str] = {}
    positions: dict[str, int] = {}
    for t in spec.tests:
        where = by_gid.get(t.grade_id, [])
        if not where:
            tampered[t.grade_id] = "the test cell was deleted"
            continue
        if len(where) > 1:
            tampered[t.grade_id] = "the test cell appears more than once"
            continue
        cell = cells[where[0]]
        if cell.get("cell_type") != "code":
            tampered[t.grade_id] = f"the test cell was changed into a {cell.get('cell_type')} cell"
            continue
        try:
            same = checksum(cell) == t.checksum
        except Exception:
            same = False
        if not same or _text(cell.get("source")) != t.release_source:
            tampered[t.grade_id] = "the test cell was edited"
            continue
        positions[t.grade_id] = where[0]
    problems = [f"{TAMPERED} {gid}: {what}; the question scores zero" for gid, what in tampered.items()]
    restored: dict[int, str] = {}
    personal = _personal_text(spec, student)
    changed_code: list[str] = []
    for gid, lc in spec.locked.items():
        where = by_gid.get(gid, [])
        if not where:
            if lc.cell_type == "code":  # a deleted prompt changes nothing that is graded
                problems.append(f"read-only cell {gid} was deleted")
            continue
        for i in where:
            cell = cells[i]
            try:
                same = checksum(cell) == lc.checksum and _text(cell.get("source")) == lc.source
            except Exception:
                same = False
            if not same and gid in personal:
                same = _text(cell.get("source")) == personal[gid]
            # only a read-only *code* cell matters (its original is what runs); a prompt's text
            # differs in any notebook with other numbers written in, and changes nothing graded
            if not same and lc.cell_type == "code":
                changed_code.append(gid)
            if lc.cell_type == "code" and cell.get("cell_type") == "code":
                restored[i] = lc.source
    if changed_code:
        problems.append(f"read-only code cell(s) {', '.join(changed_code)} were changed; the originals were run")
    steps: list[dict] = []
    test_ids = {t.grade_id for t in spec.tests}
    by_pos = {i: gid for gid, i in positions.items()}
    identity_due = spec.variants is not None and spec.variants_on
    for i, cell in enumerate(cells):
        if i in by_pos:
            if identity_due:  # what the notebook says about whose numbers it holds
                steps.append({"kind": "capture", "grade_id": IDENTITY, "names": list(IDENTITY_NAMES)})
                identity_due = False
            t = spec.test(by_pos[i])
            steps.append({"kind": "capture", "grade_id": t.grade_id, "names": list(t.names)})
            continue
        if cell.get("cell_type") != "code":
            continue
        if _nbg(cell).get("grade_id") in test_ids:
            continue  # a tampered copy of a test cell: never run
        steps.append({"kind": "code", "index": i, "source": restored.get(i, _text(cell.get("source")))})
    return Validation(nb, None, tampered, problems, steps, positions)


# --- what came back ----------------------------------------------------------------------------

class _Budget:
    def __init__(self, n: int):
        self.n = n


def plain(value, depth: int = 0, budget: _Budget | None = None):
    """A copy of ``value`` if it is plain JSON data within limits (strings cleaned of lone
    surrogates), else raise ValueError."""
    budget = budget or _Budget(PLAIN_ELEMENTS)
    budget.n -= 1
    if budget.n < 0 or depth > PLAIN_DEPTH:
        raise ValueError("too large")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if len(value) > 100_000:
            raise ValueError("too long a string")
        return clean_text(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, list):
        return [plain(v, depth + 1, budget) for v in value]
    raise ValueError(f"not plain data ({type(value).__name__})")


@dataclasses.dataclass
class RunReport:
    """The sandbox's records, validated."""

    cells: dict[int, dict]                  # index -> {"stdout","stderr","error"}
    captures: dict[str, dict]               # grade_id -> name -> {"value"} | {"error"}
    started: list[int]                      # cell indices in the order they started
    done: bool
    junk: int                               # records that were not valid


def read_records(validation: Validation, outcome: Outcome) -> RunReport:
    code_indices = {s["index"] for s in validation.steps if s["kind"] == "code"}
    capture_names = {s["grade_id"]: set(s["names"]) for s in validation.steps if s["kind"] == "capture"}
    rep = RunReport({}, {}, [], False, 0)
    for line in outcome.lines:
        if len(line) > MAX_RECORD_BYTES:
            rep.junk += 1
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rep.junk += 1
            continue
        if not isinstance(rec, dict):
            rep.junk += 1
            continue
        t = rec.get("t")
        try:
            if t == "start":
                i = rec["index"]
                if type(i) is int and i in code_indices:
                    rep.started.append(i)
            elif t == "cell":
                i = rec["index"]
                if type(i) is not int or i not in code_indices or i in rep.cells:
                    raise ValueError
                out, err, error = rec.get("stdout", ""), rec.get("stderr", ""), rec.get("error")
                if not isinstance(out, str) or not isinstance(err, str):
                    raise ValueError
                if error is not None:
                    if not isinstance(error, dict):
                        raise ValueError
                    error = {k: clean_text(str(error.get(k, ""))[:8000])
                             for k in ("ename", "evalue", "traceback")}
                rep.cells[i] = {"stdout": clean_text(out[:100_000]), "stderr": clean_text(err[:100_000]),
                                "error": error}
            elif t == "capture":
                gid = rec["grade_id"]
                values = rec["values"]
                if gid not in capture_names or gid in rep.captures or not isinstance(values, dict):
                    raise ValueError
                clean = {}
                for name, entry in values.items():
                    if name not in capture_names[gid] or not isinstance(entry, dict):
                        continue
                    if "value" in entry:
                        try:
                            clean[name] = {"value": plain(entry["value"])}
                        except (ValueError, RecursionError):
                            clean[name] = {"error": "not a plain value (too large or malformed)"}
                    else:
                        why = str(entry.get("error", "not a plain value"))[:300]
                        clean[name] = {"error": clean_text(why)}
                rep.captures[gid] = clean
            elif t == "done":
                rep.done = True
            else:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            rep.junk += 1
    return rep


# --- checking ----------------------------------------------------------------------------------

def run_test(test: TestCell, values: dict[str, dict],
             variant: Variant | None = None) -> tuple[bool, str]:
    """Run the instructor's test cell on the captured values, with ``VARIANT`` bound to the
    numbers the student is graded on. (passed, message)."""
    ns: dict = {"__name__": "__grader__", "__builtins__": builtins}
    if variant is not None:
        ns[VARIANT_NAME] = variant
    for name, entry in values.items():
        if name in test.names and "value" in entry:  # answer names only, never the test's own
            ns[name] = copy.deepcopy(entry["value"])
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(test.code, ns)
    except AssertionError as exc:
        msg = clean_text(str(exc)).strip() or "AssertionError: the answer is not correct."
        return False, msg[:MAX_MESSAGE]
    except NameError as exc:
        missing: str | None = getattr(exc, "name", None)
        captured = values.get(missing) if missing else None
        if captured is not None and "error" in captured:
            return False, (f"{missing} is {captured['error']}: answers must be numbers, strings, "
                           f"lists or arrays of numbers, or PartitionSpecs.")
        if missing in test.names:
            return False, f"not answered: there is no variable {missing} when this question is checked."
        return False, clean_text(f"NameError: {exc}")[:MAX_MESSAGE]
    except RecursionError:
        return False, "RecursionError while checking the answer."
    except Exception as exc:  # the answer made the check fail some other way
        return False, clean_text(f"{type(exc).__name__}: {exc}")[:MAX_MESSAGE]
    return True, ""


def solution_submission(spec: Spec, student: str = SELF_CHECK_STUDENT) -> bytes:
    """The release notebook with every answer cell holding the instructor's solution (and,
    for a homework with per-student numbers, ``student``'s id and key in its identity cell)."""
    solutions = {}
    for cell in spec.source_nb.get("cells", []):
        nbg = _nbg(cell)
        if nbg.get("solution") and cell.get("cell_type") == "code" and nbg.get("grade_id"):
            solutions[nbg["grade_id"]] = _text(cell.get("source"))
    key = spec.key_of(student)
    nb = copy.deepcopy(spec.release)
    for cell in nb.get("cells", []):
        gid = _nbg(cell).get("grade_id")
        if gid in solutions:
            cell["source"] = solutions[gid]
        if key is not None and is_identity_cell(cell):
            cell["source"] = f"STUDENT_ID = {student!r}\nHOMEWORK_KEY = {key!r}\n"
    return json.dumps(nb).encode()


def _memory_trouble(rep: RunReport, outcome: Outcome) -> bool:
    if any(c["error"] and c["error"]["ename"] == "MemoryError" for c in rep.cells.values()):
        return True
    if outcome.signal in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGKILL):
        low = outcome.raw_output.lower()
        return any(w in low for w in ("bad_alloc", "memoryerror", "cannot allocate", "out of memory",
                                      "resource_exhausted", "failed to allocate"))
    return False


def _where(validation: "Validation", stopped_in: int | None) -> str:
    """Where a run stopped, by question: the test the stopped cell was working towards."""
    if stopped_in is None:
        return ""
    after = sorted((i, gid) for gid, i in validation.test_positions.items() if i > stopped_in)
    if after:
        return f" in the code for {after[0][1]} (cell {stopped_in})"
    return f" after the last question (cell {stopped_in})"


def score(spec: Spec, student: str, validation: Validation, outcome: Outcome | None,
          limits: Limits) -> tuple[SubmissionResult, RunReport | None]:
    """The result of one submission. ``outcome`` is None when nothing was run."""
    max_scores = spec.max_scores
    scores = {gid: 0.0 for gid in max_scores}
    messages: dict[str, str] = {}
    answers: dict[str, dict] = {}
    if validation.invalid is not None:
        for gid in max_scores:
            messages[gid] = f"{INVALID}: {validation.invalid}"
        return SubmissionResult(student, spec.assignment, INVALID, scores, dict(max_scores),
                                messages, [f"{INVALID}: {validation.invalid}"]), None
    problems = list(validation.problems)
    statuses = [TAMPERED] if validation.tampered else []
    rep = read_records(validation, outcome) if outcome is not None else RunReport({}, {}, [], True, 0)
    stopped_in = None
    if outcome is not None and not rep.done:
        unfinished = [i for i in rep.started if i not in rep.cells]
        stopped_in = unfinished[0] if unfinished else (rep.started[-1] if rep.started else None)
    where = _where(validation, stopped_in)
    if outcome is not None:
        if outcome.timed_out:
            statuses.append(TIMED_OUT)
            problems.append(f"{TIMED_OUT}: the notebook's code ran longer than {limits.timeout:g} s{where}")
        elif outcome.cpu_exceeded:
            statuses.append(TIMED_OUT)
            problems.append(f"{TIMED_OUT}: the notebook's code used more than "
                            f"{limits.rlimits()['cpu'] - 1} s of CPU time{where}")
        if outcome.output_exceeded:
            statuses.append(OUTPUT)
            problems.append(f"{OUTPUT}: the notebook's code wrote more than "
                            f"{limits.output >> 20} MB of output{where}; it was stopped")
        if outcome.memory_exceeded:  # the job's cgroup hit its cap (all its processes together)
            statuses.append(MEMORY)
            problems.append(f"{MEMORY}: the notebook's processes together needed more than "
                            f"{limits.job_memory_bytes() / (1 << 30):g} GB of memory"
                            + (where if not rep.done else "") + "; they were stopped")
        elif _memory_trouble(rep, outcome):
            statuses.append(MEMORY)
            problems.append(f"{MEMORY}: the notebook's code needed more than "
                            f"{limits.memory / (1 << 30):g} GB of memory"
                            + (where if not rep.done else ""))
        if not rep.done and not (outcome.timed_out or outcome.output_exceeded or outcome.cpu_exceeded):
            if outcome.signal is not None and MEMORY not in statuses:
                try:
                    signame = signal.Signals(outcome.signal).name
                except ValueError:
                    signame = str(outcome.signal)
                statuses.append(CRASHED)
                problems.append(f"{CRASHED}: the notebook's code was killed by {signame}{where}")
            elif outcome.signal is None:
                statuses.append(EXITED)
                problems.append(f"{EXITED}: the notebook's code ended the run (exit status "
                                f"{outcome.returncode}){where}; later questions were not reached")
        if rep.junk:
            problems.append(f"{rep.junk} unexpected record(s) from the notebook's run were ignored")
    variant = spec.variant_of(student)
    variant_note = _variant_note(spec, student, variant, rep.captures.get(IDENTITY), outcome)
    if variant_note.get("problem"):  # whose numbers: the real problem, so said first
        problems.insert(0, f"numbers: {variant_note['problem']}")
    for t in spec.tests:
        gid = t.grade_id
        if gid in validation.tampered:
            messages[gid] = f"{TAMPERED}: {validation.tampered[gid]}; this question scores zero."
            continue
        values = rep.captures.get(gid)
        if values is None:
            if outcome is not None and not rep.done:
                why = next((s for s in statuses if s != TAMPERED), EXITED)
                messages[gid] = f"not graded: the notebook's code stopped ({why}) before this question."
            else:
                messages[gid] = "not graded: this question was not reached."
            continue
        passed, msg = run_test(t, values, variant)
        if passed:
            scores[gid] = t.points
        messages[gid] = msg
        answers[gid] = {name: recorded_answer(values[name]) for name in t.names if name in values}
    status = min(statuses, key=SEVERITY.index) if statuses else GRADED
    return SubmissionResult(student, spec.assignment, status, scores, dict(max_scores), messages,
                            problems, answers, variant_note), rep


def _variant_note(spec: Spec, student: str, variant: Variant | None, captured: dict | None,
                  outcome) -> dict:
    """What ``grading.json`` keeps about the numbers: those graded against and, with variants
    on, whether the notebook held the submitter's own id and key."""
    if variant is None:
        return {}
    note = {"numbers": {k: v for k, v in variant.drawn().items()}, "entered_id": None,
            "entered_key": None, "problem": None}
    key = spec.key_of(student)
    if key is None or outcome is None:
        return note
    from .. import variants as course_variants

    identity = course_variants.identity_problem(student, key, captured, variants_on=True)
    note.update(identity.to_json())
    return note


MAX_RECORDED_ANSWER = 200  # characters of JSON: a number, a short list, a PartitionSpec


def recorded_answer(entry: dict):
    """What ``grading.json`` keeps of one captured answer: the value itself when it is short,
    else a note; the reasons a value could not be captured stay as they are."""
    if "value" not in entry:
        return {"error": str(entry.get("error", "not captured"))[:MAX_RECORDED_ANSWER]}
    text = json.dumps(entry["value"])
    if len(text) > MAX_RECORDED_ANSWER:
        return {"error": f"a value of {len(text)} characters (not kept)"}
    return entry["value"]


# --- the autograded copy -----------------------------------------------------------------------

def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def _error(ename: str, evalue: str, traceback: str = "") -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": (traceback or f"{ename}: {evalue}").splitlines()}


def _release_test_cell(spec: Spec, gid: str) -> dict:
    for cell in spec.release.get("cells", []):
        if _nbg(cell).get("grade_id") == gid:
            return copy.deepcopy(cell)
    raise KeyError(gid)


def _gid(cell: dict) -> str | None:
    gid = _nbg(cell).get("grade_id")
    return gid if isinstance(gid, str) and gid else None


def _tags(cell: dict) -> list[str] | None:
    meta = cell.get("metadata")
    tags = meta.get("tags") if isinstance(meta, dict) else None
    if isinstance(tags, list) and all(isinstance(t, str) and t and "," not in t for t in tags):
        return list(dict.fromkeys(clean_text(t)[:200] for t in tags[:50]))  # unique, as nbformat says
    return None


def autograded_notebook(spec: Spec, validation: Validation, result: SubmissionResult,
                        rep: RunReport | None) -> dict:
    """The submission with outputs: its cells' output from the sandbox, each test's result.

    Built anew, never copied from the submission wholesale, so that it always validates with
    nbformat: notebook metadata, and the metadata of every cell matched by grade_id, come from
    the release copy (the instructor's); test and read-only cells are the instructor's version;
    from the student it keeps only each cell's type, id, source, raster-image attachments, and
    for cells of their own well-typed ``tags``. A markdown or raw cell whose text could run code in
    a browser is shown as text (see :func:`safe_cell_text`); the submission itself is untouched.
    """
    release_cells = spec.release.get("cells", [])
    release_by_gid: dict[str, dict] = {}
    for cell in release_cells:
        gid = _gid(cell)
        if gid is not None:
            release_by_gid.setdefault(gid, cell)
    notebook = validation.notebook if validation.invalid is None else None
    submitted = notebook is not None
    base_cells = notebook["cells"] if notebook is not None else release_cells
    by_pos = {i: gid for gid, i in validation.test_positions.items()}
    seen_tests: set[str] = set()
    seen_gids: set[str] = set()
    trusted = {_text(c.get("source")) for c in release_cells if c.get("cell_type") in ("markdown", "raw")}
    budget = RenderBudget()
    cells = []
    for i, cell in enumerate(base_cells):
        gid = _gid(cell)
        kind = cell.get("cell_type")
        if gid in result.max_scores and (i in by_pos or not submitted or gid in validation.tampered):
            if gid in seen_tests:
                continue
            seen_tests.add(gid)
            cells.append(_graded_test_cell(spec, result, gid))
            continue
        # the instructor's cell of this grade_id (first occurrence, same type): its nbgrader
        # metadata, and for read-only cells its source (what was run)
        rel: dict | None = None
        if gid is not None and gid not in seen_gids:
            rel = release_by_gid.get(gid)
            if rel is not None and (rel.get("cell_type") != kind or gid in result.max_scores):
                rel = None
            if rel is not None:
                seen_gids.add(gid)
        if rel is not None and isinstance(rel.get("metadata"), dict):
            meta = copy.deepcopy(rel["metadata"])  # the instructor's, nbgrader's included
        else:
            meta = {}
            tags = _tags(cell)
            if tags:
                meta["tags"] = tags
        from_release = rel is not None and gid in spec.locked
        source = _text((rel if rel is not None and from_release else cell).get("source"))
        raw = cell.get("attachments")
        attachments = safe_attachments(raw) if kind != "code" and _valid_attachments(raw) else {}
        if kind != "code" and not from_release and source not in trusted:
            source = safe_cell_text(kind, source, attachments, budget)
        new = {"cell_type": kind, "id": cell.get("id"), "metadata": meta, "source": source}
        if kind == "code":
            new["execution_count"] = None
            outputs = []
            ran = rep.cells.get(i) if rep is not None and submitted else None
            if ran:
                if ran["stdout"]:
                    outputs.append(_stream("stdout", ran["stdout"]))
                if ran["stderr"]:
                    outputs.append(_stream("stderr", ran["stderr"]))
                if ran["error"]:
                    e = ran["error"]
                    outputs.append(_error(e["ename"], e["evalue"], e["traceback"]))
            new["outputs"] = outputs
        elif attachments:
            new["attachments"] = attachments
        cells.append(new)
    for t in spec.tests:  # deleted test cells come back at the end, with their result
        if t.grade_id not in seen_tests:
            cells.append(_graded_test_cell(spec, result, t.grade_id))
    seen_ids: set[str] = set()
    for i, cell in enumerate(cells):
        cid = cell.get("id")
        if not isinstance(cid, str) or not _CELL_ID.fullmatch(cid) or cid in seen_ids:
            cid = f"cell-{i}"
            while cid in seen_ids:
                cid += "x"
        cell["id"] = cid
        seen_ids.add(cid)
    meta = spec.release.get("metadata")
    minor = spec.release.get("nbformat_minor")
    return {"cells": cells, "metadata": copy.deepcopy(meta) if isinstance(meta, dict) else {},
            "nbformat": 4, "nbformat_minor": max(minor, 5) if type(minor) is int else 5}


def _graded_test_cell(spec: Spec, result: SubmissionResult, gid: str) -> dict:
    rel = _release_test_cell(spec, gid)
    meta = rel.get("metadata")
    return {"cell_type": "code", "id": rel.get("id"), "execution_count": None,
            "metadata": meta if isinstance(meta, dict) else {},
            "source": _text(rel.get("source")), "outputs": _test_outputs(result, gid)}


_MIME = re.compile(r"[a-zA-Z0-9]+/[a-zA-Z0-9\-\+\.]+")


def _valid_attachments(value) -> bool:
    """nbformat's schema for attachments: {name: {mimetype: str | [str]}}."""
    return isinstance(value, dict) and len(value) <= 100 and all(
        isinstance(k, str) and isinstance(v, dict)
        and all(isinstance(m, str) and _MIME.fullmatch(m) and m != "application/json"
                and (isinstance(d, str) or (isinstance(d, list) and all(isinstance(x, str) for x in d)))
                for m, d in v.items())
        for k, v in value.items())


def grader_error(spec: Spec, student: str, stage: str, exc: BaseException) -> SubmissionResult:
    """The record of a submission the grader failed on (its own fault or an input it did not
    foresee): zero, flagged in the gradebook, graded again with ``--force`` once fixed."""
    what = clean_text(f"{type(exc).__name__}: {exc}")[:300]
    max_scores = spec.max_scores
    msg = f"{GRADER_ERROR}: the grader failed while {stage}; this question is not graded yet."
    return SubmissionResult(student, spec.assignment, GRADER_ERROR, {g: 0.0 for g in max_scores},
                            dict(max_scores), {g: msg for g in max_scores},
                            [f"{GRADER_ERROR} while {stage} ({what}): recorded as zero and "
                             f"flagged; fix the grader and grade this student again with --force"])


def _test_outputs(result: SubmissionResult, gid: str) -> list[dict]:
    pts, top = result.scores.get(gid, 0.0), result.max_scores.get(gid, 0.0)
    if pts >= top and top > 0:
        return [_stream("stdout", f"Passed: {_fmt(pts)}/{_fmt(top)} points\n")]
    msg = result.messages.get(gid, "") or "the check failed"
    return [_error("AssertionError", msg, f"AssertionError: {msg}\n(0/{_fmt(top)} points)")]


def _fmt(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else str(x)

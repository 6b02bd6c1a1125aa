"""The graded homework: source notebooks in solutions/, student versions in exercises/.

What is pinned down here (autograder/DESIGN.md is the contract):

- structure: nbgrader metadata, unique grade ids, points, no outputs, prompts that state the
  tolerance a check uses;
- the student version is exactly the source with each solution region replaced by nbgrader's
  stub and each hidden-test region removed, with valid nbgrader checksums — no solution code,
  no hidden check, no drift;
- every test cell is self-contained: run on its own in a namespace holding only the answer
  names it uses, bound to the reference answers as the grader reports them (plain values), it
  passes; a wrong answer fails it; every hint it declares fires for its wrong value, and the
  known misconceptions (sparse GPU FLOPs, 2B intensity for bf16, bidirectional link bandwidth,
  ...) computed here by hand from datasheet numbers get their hint;
- (slow) the source notebooks run top to bottom in a Jupyter kernel without an error, and the
  student versions fail only where an answer is missing.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import inspect
import json
import math
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

import scalebook.checks as checks
from autograder.course import available_assignments, render_source
from autograder.notebook import is_identity_cell
from gradecells import free_names, recording_checks
from scalebook.homework import spec_for
from scalebook.variants import default_variant

REPO = Path(__file__).resolve().parent.parent
# Every homework in solutions/ is held to these checks as soon as its source notebook exists.
ASSIGNMENTS = tuple(available_assignments())

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
MARKERS = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)
DEFAULT_REL = 0.05


# --------------------------------------------------------------------------- helpers

def notebook_path(kind: str, assignment: str) -> Path:
    return REPO / kind / assignment / f"{assignment}.ipynb"


_CACHE: dict = {}


def load(kind: str, assignment: str):
    key = (kind, assignment)
    if key not in _CACHE:
        _CACHE[key] = nbformat.read(str(notebook_path(kind, assignment)), as_version=4)
    return _CACHE[key]


def nbg(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def is_test(cell) -> bool:
    return bool(nbg(cell).get("grade")) and cell.cell_type == "code"


def is_answer(cell) -> bool:
    return bool(nbg(cell).get("solution")) and not nbg(cell).get("grade")


def graded_cells(nb) -> list:
    return [c for c in nb.cells if is_test(c)]


def region(source: str, begin: str, end: str) -> tuple[str, str, str]:
    """(before, inside, after) of the single ``begin``...``end`` region in ``source``."""
    assert source.count(begin) == 1 and source.count(end) == 1, source
    head, rest = source.split(begin, 1)
    inside, tail = rest.split(end, 1)
    return head, inside.strip("\n"), tail


def solution_code(cell) -> str:
    return region(cell.source, BEGIN_SOLUTION, END_SOLUTION)[1]


def release_source(cell) -> str:
    """What nbgrader generate_assignment makes of a source cell (solution stub, tests hidden)."""
    source = cell.source
    if is_answer(cell):
        head, _, tail = region(source, BEGIN_SOLUTION, END_SOLUTION)
        source = head + CODE_STUB + tail
    if is_test(cell):
        head, _, tail = region(source, BEGIN_HIDDEN, END_HIDDEN)
        source = head + tail
    return source


def assigned_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def answer_names(assignment: str) -> set[str]:
    """The names the test cells of an assignment read: the answers, and nothing else."""
    return set().union(*(free_names(c.source) for c in graded_cells(load("solutions", assignment))))


def plain(value):
    """A value exactly as the grader's runner reports it (numpy arrays -> lists, numpy scalars ->
    numbers, a jax PartitionSpec -> a list of its entries)."""
    from autograder.sandbox.inside import to_plain

    return to_plain(value)


def assert_same_answer(got, want) -> None:
    """Numbers and arrays agree to 1e-12 (relative); strings and specs are equal."""
    try:
        got_array, want_array = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    except (TypeError, ValueError):
        assert got == want, (got, want)
    else:
        np.testing.assert_allclose(got_array, want_array, rtol=1e-12)


def sample_variant(assignment: str):
    """The book's sample numbers of a homework with per-student numbers (None: it has none).
    The source notebook's identity cell is empty, so it runs with these."""
    spec = spec_for(assignment)
    return None if spec is None else default_variant(spec)


def reference_answers(assignment: str) -> dict:
    """Run the source notebook's non-test code cells in this process; return the answers."""
    key = ("answers", assignment)
    if key not in _CACHE:
        namespace: dict = {"__name__": "__homework__"}
        cwd = os.getcwd()
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            for cell in load("solutions", assignment).cells:
                if cell.cell_type == "code" and not is_test(cell):
                    exec(compile(cell.source, nbg(cell).get("grade_id", "cell"), "exec"), namespace)
            plt.close("all")
        finally:
            os.chdir(cwd)
        _CACHE[key] = {name: plain(namespace[name]) for name in answer_names(assignment)}
    return _CACHE[key]


def run_test_cell(cell, answers: dict, variant=None) -> None:
    """Execute a test cell the way the trusted grader does: a fresh namespace with only the
    answers, and ``VARIANT`` (the sample numbers unless ``variant`` says otherwise)."""
    namespace = {name: answers[name] for name in free_names(cell.source) if name in answers}
    grade_id = nbg(cell)["grade_id"]
    variant = variant if variant is not None else sample_variant(grade_id_assignment(grade_id))
    if variant is not None:
        namespace["VARIANT"] = variant
    exec(compile(cell.source, grade_id, "exec"), namespace)


def grade_id_assignment(grade_id: str) -> str:
    prefix = grade_id.split("-")[0] + "-"
    return next(a for a in ASSIGNMENTS if a.startswith(prefix))


def recorded_checks(assignment: str, cell) -> list:
    key = ("calls", assignment, nbg(cell)["grade_id"])
    if key not in _CACHE:
        with recording_checks() as calls:
            run_test_cell(cell, reference_answers(assignment))
        _CACHE[key] = calls
    return _CACHE[key]


def checks_called(source: str) -> str:
    """The source of the homework module functions a hidden test calls
    (``from scalebook.homework.hw7_moe_long_context import check_q7b_dispatch``): the check a
    two-line cell hands its answers to."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scalebook.homework."):
            module = importlib.import_module(node.module)
            out += [inspect.getsource(getattr(module, a.name)) for a in node.names]
    return "\n".join(out)


def failure(cell, answers: dict) -> str:
    with pytest.raises(AssertionError) as info:
        run_test_cell(cell, answers)
    return str(info.value)


def all_test_cells():
    return [pytest.param(a, nbg(c)["grade_id"], id=nbg(c)["grade_id"])
            for a in ASSIGNMENTS for c in graded_cells(load("solutions", a))]


def find_cell(assignment: str, grade_id: str):
    return next(c for c in load("solutions", assignment).cells if nbg(c).get("grade_id") == grade_id)


def problem_text(assignment: str, grade_id: str) -> str:
    """The title cell plus the markdown of the problem a cell belongs to, up to the cell (the
    problem's statement and its parts' prompts)."""
    nb = load("solutions", assignment)
    title, current = nb.cells[0].source, []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if cell.source.lstrip().startswith("## Problem"):
                current = []
            current.append(cell.source)
        if nbg(cell).get("grade_id") == grade_id:
            return title + "\n" + "\n".join(current)
    raise KeyError(grade_id)


# --------------------------------------------------------------------------- structure

@pytest.mark.parametrize("kind", ["solutions", "exercises"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebook_format_and_no_outputs(kind, assignment):
    nb = load(kind, assignment)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, nbg(cell).get("grade_id")


@pytest.mark.parametrize("kind", ["solutions", "exercises"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_ids_and_cell_ids_unique(kind, assignment):
    nb = load(kind, assignment)
    ids = [nbg(c)["grade_id"] for c in nb.cells]  # every cell is an nbgrader cell
    assert len(ids) == len(set(ids))
    assert all(i.startswith(assignment.split("-")[0] + "-") for i in ids)
    cell_ids = [c.id for c in nb.cells]
    assert len(cell_ids) == len(set(cell_ids))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grade_ids_unique_across_assignments(assignment):
    others = [a for a in ASSIGNMENTS if a != assignment]
    mine = {nbg(c)["grade_id"] for c in load("solutions", assignment).cells}
    for other in others:
        assert not mine & {nbg(c)["grade_id"] for c in load("solutions", other).cells}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_cell_roles(assignment):
    nb = load("solutions", assignment)
    for cell in nb.cells:
        meta = nbg(cell)
        assert meta["schema_version"] == 3
        gid = meta["grade_id"]
        if is_test(cell):
            assert meta["locked"] and not meta["solution"], gid
            assert meta["points"] in (1, 2), gid
            assert cell.source.count(BEGIN_HIDDEN) == 1 and cell.source.count(END_HIDDEN) == 1, gid
            assert BEGIN_SOLUTION not in cell.source
        elif is_answer(cell):
            assert cell.cell_type == "code" and not meta["locked"], gid
            assert cell.source.count(BEGIN_SOLUTION) == 1 and BEGIN_HIDDEN not in cell.source, gid
        elif is_identity_cell(cell):  # the student's id and key: theirs to fill in
            assert spec_for(assignment) is not None and not meta["locked"], gid
        else:  # read-only prompts and "given" cells
            assert meta["locked"] and not meta["grade"] and not meta["solution"], gid
            assert not any(m in cell.source for m in MARKERS), gid


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_points_match_the_prompts(assignment):
    nb = load("solutions", assignment)
    points = {nbg(c)["grade_id"]: nbg(c)["points"] for c in graded_cells(nb)}
    total = re.search(r"\*\*(\d+) points\*\*", nb.cells[0].source)
    assert total and int(total.group(1)) == sum(points.values())
    prefix = assignment.split("-")[0]
    for cell in nb.cells:
        heading = re.match(r"## Problem (\d+) .*\((\d+) points?\)", cell.source)
        if cell.cell_type == "markdown" and heading:
            number, stated = heading.groups()
            got = sum(p for g, p in points.items() if re.match(rf"{prefix}-q{number}[a-z]*-", g))
            assert got == int(stated), (assignment, number)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_title_explains_grading(assignment):
    title = load("solutions", assignment).cells[0].source
    for phrase in ("within 5%", "SI unit", "Validate", "Restart & Run All", "visible",
                   "How to Scale Your"):
        assert phrase in title, phrase


# --------------------------------------------------------------------------- student version

@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_are_the_generated_release(assignment):
    """Same cells in the same order; answers stubbed, hidden tests removed, problem text filled
    in for the class (``{{name}}`` -> ``[label]``), nothing else changed."""
    source, release = load("solutions", assignment), load("exercises", assignment)
    spec = spec_for(assignment)
    if spec is not None:
        source = nbformat.from_dict(render_source(source, spec, variants_on=True))
    assert [nbg(c)["grade_id"] for c in source.cells] == [nbg(c)["grade_id"] for c in release.cells]
    for src, rel in zip(source.cells, release.cells):
        gid = nbg(src)["grade_id"]
        assert rel.cell_type == src.cell_type and rel.id == src.id, gid
        assert rel.source.rstrip() == release_source(src).rstrip(), (
            f"{gid}: exercises/ is out of date; run `python -m autograder generate`")
        for key in ("grade", "solution", "locked", "points"):
            assert nbg(rel).get(key) == nbg(src).get(key), (gid, key)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_hold_no_solution_and_no_hidden_test(assignment):
    release = load("exercises", assignment)
    text = notebook_path("exercises", assignment).read_text("utf-8")
    for marker in MARKERS:
        assert marker not in text
    assert "check_close" not in text and "check_allclose" not in text
    release_lines = {line.strip() for c in release.cells for line in c.source.splitlines()}
    for cell in load("solutions", assignment).cells:
        if is_answer(cell):
            for line in solution_code(cell).splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    assert line not in release_lines, line
            assert CODE_STUB in next(c for c in release.cells if c.id == cell.id).source


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_carry_valid_nbgrader_checksums(assignment):
    from nbgrader.utils import compute_checksum

    for cell in load("exercises", assignment).cells:
        meta = nbg(cell)
        if is_identity_cell(cell):  # the student's to edit: nbgrader checks nothing of it
            continue
        assert "checksum" in meta, meta["grade_id"]
        assert meta["checksum"] == compute_checksum(cell), meta["grade_id"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_visible_checks_test_form_only(assignment):
    """In the student version a test cell imports from scalebook.checks and checks form only."""
    for cell in graded_cells(load("exercises", assignment)):
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.ImportFrom):
                assert node.module == "scalebook.checks", ast.unparse(node)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                assert ast.unparse(node.value.func) in ("check_number", "check_array"), ast.unparse(node)
            else:
                assert isinstance(node, ast.Assert), ast.unparse(node)


# --------------------------------------------------------------------------- test cells

@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_read_only_answer_names(assignment):
    """A test cell reads nothing but answers: no 'given' names, no other student state."""
    nb = load("solutions", assignment)
    solved = set().union(*(assigned_names(solution_code(c)) for c in nb.cells if is_answer(c)))
    given = set().union(*(assigned_names(c.source) for c in nb.cells
                          if c.cell_type == "code" and not is_answer(c) and not is_test(c)))
    for cell in graded_cells(nb):
        names = free_names(cell.source)
        assert names, nbg(cell)["grade_id"]
        assert names <= solved, (nbg(cell)["grade_id"], names - solved)
        assert not names & given, (nbg(cell)["grade_id"], names & given)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cell_locals_cannot_clash_with_student_names(assignment):
    """Every name a test cell binds starts with '_'. The grader captures, from the student's
    run, every name a test cell reads (even one the cell assigns first), so a local such as
    ``chip`` or ``intensity`` would pick up a student's variable of that name."""
    nb = load("solutions", assignment)
    answers = answer_names(assignment)
    for cell in graded_cells(nb):
        gid = nbg(cell)["grade_id"]
        assigned = assigned_names(cell.source)
        assert all(n.startswith("_") for n in assigned), (gid, sorted(assigned))
        tree = ast.parse(cell.source)
        imported = {(a.asname or a.name).split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        captured = read - imported - set(dir(builtins)) - {"VARIANT"}  # VARIANT: the grader's
        assert captured - {n for n in captured if n.startswith("_")} <= answers, gid


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_reference_answer_needs_only_the_given_inputs(assignment):
    """A solution works from the stated inputs alone, not from another part's answer, so one
    part's reference answer never depends on another's (and partial submissions are fair)."""
    nb = load("solutions", assignment)
    answers = answer_names(assignment)
    given: dict = {}
    for cell in nb.cells:
        if (cell.cell_type == "code" and not is_answer(cell) and not is_test(cell)
                and not free_names(cell.source) & answers):  # skip the plot of answers
            exec(cell.source, given)
    reference = reference_answers(assignment)
    for cell in nb.cells:
        if is_answer(cell):
            namespace = dict(given)
            exec(solution_code(cell), namespace)
            bound = assigned_names(solution_code(cell)) & answers
            assert bound, nbg(cell)["grade_id"]
            for name in bound:
                assert_same_answer(plain(namespace[name]), reference[name])


@pytest.mark.parametrize("assignment, grade_id", all_test_cells())
def test_test_cell_is_self_contained_and_passes_reference(assignment, grade_id):
    cell = find_cell(assignment, grade_id)
    answers = reference_answers(assignment)
    json.dumps({n: answers[n] for n in free_names(cell.source)})  # plain values, as reported
    run_test_cell(cell, answers)
    calls = recorded_checks(assignment, cell)
    # a cell whose only answer is JAX code (hw7 7(b)) is checked against what the grader
    # compiles from it, not against a number: it must compile and read the HLO itself
    jax_only = "compiled_collectives(" in cell.source + checks_called(cell.source)
    assert calls or jax_only, f"{grade_id} has no hidden value check"
    assert {name for _, name, *_ in calls} <= free_names(cell.source)


@pytest.mark.parametrize("assignment, grade_id", all_test_cells())
def test_missing_answer_is_a_name_error(assignment, grade_id):
    cell = find_cell(assignment, grade_id)
    with pytest.raises(NameError):
        run_test_cell(cell, {})


@pytest.mark.parametrize("assignment, grade_id", all_test_cells())
def test_wrong_answers_fail_without_revealing_the_answer(assignment, grade_id):
    cell = find_cell(assignment, grade_id)
    answers = reference_answers(assignment)
    for kind, name, expected, rel, _ in recorded_checks(assignment, cell):
        if kind == "design":        # a choice, not a number: tests/test_homework_parts.py
            continue
        for factor in (1.3, 0.6):
            wrong = plain(np.asarray(answers[name], float) * factor)
            message = failure(cell, {**answers, name: wrong})
            assert name in message and f"{rel * 100:.3g}%" in message
            for shown in re.findall(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?", message):
                for value in np.atleast_1d(expected):
                    if abs(value) > 1:  # small integers (counts, indices, "5%") carry nothing
                        assert not math.isclose(float(shown), value, rel_tol=0.01), message


@pytest.mark.parametrize("assignment, grade_id", all_test_cells())
def test_every_declared_hint_fires_for_its_wrong_value(assignment, grade_id):
    cell = find_cell(assignment, grade_id)
    answers = reference_answers(assignment)
    for kind, name, expected, rel, hints in recorded_checks(assignment, cell):
        for wrong, text in hints:
            message = failure(cell, {**answers, name: plain(np.asarray(wrong, float)
                                                           if kind == "array" else wrong)})
            assert f"Hint: {text}" in message, (name, text)


@pytest.mark.parametrize("assignment, grade_id", all_test_cells())
def test_prompt_states_any_non_default_tolerance(assignment, grade_id):
    cell = find_cell(assignment, grade_id)
    text = problem_text(assignment, grade_id)
    for kind, name, _, rel, _ in recorded_checks(assignment, cell):
        if kind != "design":
            assert f"within {rel * 100:.3g}%" in text, (name, rel)


V_ICI = 16 * 512 * 4096 * 2  # hw2 problem 5's array, bytes
BATCH = 2.0 ** np.arange(14)

# (assignment, test cell, answer name, the value a misconception gives, text the hint must carry)
# Each wrong value is worked out by hand from the problem's datasheet numbers, not by scalebook.
MISCONCEPTIONS = [
    ("hw1-rooflines", "hw1-q5-h100-test", "critical_batch_gpu", 1979e12 / 3.35e12,
     "with sparsity"),
    ("hw1-rooflines", "hw1-q5-h100-test", "critical_batch_gpu", 989e12 / 3.35e12 / 2,
     "about B, not 2B"),
    ("hw1-rooflines", "hw1-q2-mixed-test", "critical_batch_mixed", 1.97e14 / 8.2e11,
     "each weight is one byte"),
    ("hw1-rooflines", "hw1-q2-mixed-test", "critical_batch_mixed", 3.94e14 / 8.2e11,
     "use the bf16 rate"),
    ("hw1-rooflines", "hw1-q1e-critical-test", "critical_batch_int8", 3.94e14 / 8.2e11,
     "about 2B"),
    ("hw1-rooflines", "hw1-q1e-critical-test", "critical_batch_int8", 1.97e14 / 8.2e11 / 2,
     "twice the bf16 rate"),
    ("hw1-rooflines", "hw1-q1c-times-test", "t_math", 2 * 1024 * 4096 * 8192 / 8.2e11,
     "bandwidth belongs in T_comms"),
    ("hw1-rooflines", "hw1-q1c-times-test", "t_math", 2 * 1024 * 4096 * 8192 / 1.97e14,
     "twice its bf16 rate"),
    ("hw1-rooflines", "hw1-q1b-intensity-test", "intensity", 2 * 1024, "shortcut"),
    ("hw1-rooflines", "hw1-q1a-bytes-test", "bytes_read", 2 * (1024 * 4096 + 4096 * 8192),
     "one byte per element"),
    ("hw1-rooflines", "hw1-q1d-bounds-test", "t_lower",
     2 * 1024 * 4096 * 8192 / 3.94e14 + (1024 * 4096 + 4096 * 8192 + 1024 * 8192) / 8.2e11,
     "not their sum"),
    ("hw1-rooflines", "hw1-q3a-small-test", "flops_small",
     np.minimum(1.97e14, BATCH * 8.1e11), "B << D shortcut"),
    ("hw1-rooflines", "hw1-q3c-crossover-test", "b_compute_bound_small", 1.97e14 / 8.1e11,
     "rule of thumb"),
    ("hw1-rooflines", "hw1-q4a-intensity-test", "intensity_per_example", 2 * 64, "its own D x F"),
    ("hw1-rooflines", "hw1-q6-dot-test", "intensity_dot", 1.0, "bytes, not elements"),
    ("hw1-rooflines", "hw1-q7a-times-test", "t_comms_shard", 1024 * 8192 * 2 / 9e10,
     "one way"),
    ("hw1-rooflines", "hw1-q7b-dcrit-test", "d_critical", 2 * 1.97e14 / 9e10, "one way"),
    ("hw1-rooflines", "hw1-q7b-dcrit-test", "d_critical", 2 * 1.97e14 / 8.1e11, "not HBM"),
    ("hw2-hardware", "hw2-q1a-latency-test", "t_token", 405e9 / (64 * 2.8e12), "2 bytes"),
    ("hw2-hardware", "hw2-q1a-latency-test", "t_token", 810e9 / 2.8e12, "at the same time"),
    ("hw2-hardware", "hw2-q1b-capacity-test", "min_chips_for_weights", 810 / 96, "round up"),
    ("hw2-hardware", "hw2-q2a-chips-test", "pod_hosts", 8960 / 8, "4 chips"),
    ("hw2-hardware", "hw2-q2b-cores-test", "pod_tensorcores", 8960, "2 TensorCores"),
    ("hw2-hardware", "hw2-q2c-totals-test", "pod_flops", 8960 * 9.18e14, "bf16 rate"),
    ("hw2-hardware", "hw2-q2c-totals-test", "pod_hbm_bytes", 8960 * 96 * 2**30, "1e9 bytes"),
    ("hw2-hardware", "hw2-q3a-critical-test", "critical_batch_pcie", 1.97e14 / 1.5e10 / 2,
     "about B, not 2B"),
    ("hw2-hardware", "hw2-q3a-critical-test", "critical_batch_pcie", 1.97e14 / 8.1e11,
     "HBM answer"),
    ("hw2-hardware", "hw2-q3b-time-test", "t_pcie_matmul", 2 * 8192 * 8192 / 8.1e11, "cross PCIe"),
    ("hw2-hardware", "hw2-q4a-b64-test", "t_matmul_b64",
     2 * (64 * 4096 + 4096 * 16384 + 64 * 16384) / 1.6e12, "one byte per element"),
    ("hw2-hardware", "hw2-q4b-b1024-test", "t_matmul_b1024", 2 * 1024 * 4096 * 16384 / 9.2e14,
     "twice its bf16 rate"),
    ("hw2-hardware", "hw2-q5a-neighbour-test", "t_neighbour", V_ICI / 9e10 + 1e-6,
     "both directions"),
    ("hw2-hardware", "hw2-q5b-swap-test", "t_swap", 2 * V_ICI / 4.5e10 + 1e-6,
     "own 4.5e+10 bytes/s"),
    ("hw2-hardware", "hw2-q5c-ring-test", "t_ring", V_ICI / 4.5e10 + 8e-6, "half of A"),
    ("hw2-hardware", "hw2-q5d-line-test", "t_line", V_ICI / 9e10 + 7e-6, "no wraparound"),
    ("hw2-hardware", "hw2-q6a-cores-test", "h100_cuda_cores", 132 * 4, "sub-partitions"),
    ("hw2-hardware", "hw2-q6b-vector-test", "h100_vector_flops", 132 * 128 * 1.98e9,
     "2 FLOPs"),
    ("hw2-hardware", "hw2-q6c-ratio-test", "tensor_to_vector_ratio",
     1979e12 / (132 * 128 * 2 * 1.98e9), "with sparsity"),
    ("hw2-hardware", "hw2-q6d-h100-crit-test", "crit_h100_bf16", 1979e12 / 3.35e12,
     "with sparsity"),
    ("hw2-hardware", "hw2-q6d-h100-crit-test", "crit_h100_fp8", 3958e12 / 3.35e12,
     "with sparsity"),
    ("hw2-hardware", "hw2-q6e-b200-crit-test", "crit_b200_bf16", 4.5e15 / 8e12, "with sparsity"),
    ("hw2-hardware", "hw2-q6g-b200-large-test", "t_b200_large", 2 * 8192**3 / 4.5e15,
     "with sparsity"),
]


@pytest.mark.parametrize("assignment, grade_id, name, wrong, fragment", [
    pytest.param(*row, id=f"{row[1]}:{row[2]}:{row[4]}") for row in MISCONCEPTIONS])
def test_known_misconception_gets_its_hint(assignment, grade_id, name, wrong, fragment):
    cell = find_cell(assignment, grade_id)
    message = failure(cell, {**reference_answers(assignment), name: plain(wrong)})
    assert "Hint:" in message and fragment in message, message


# --------------------------------------------------------------------------- notebooks, executed

@contextlib.contextmanager
def kernel_environment():
    """The environment a homework kernel starts in: JAX on the CPU, no display, this repo importable."""
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu",
           "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _execute(path: Path, tmp_path: Path, *, allow_errors: bool):
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    with kernel_environment():
        NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=allow_errors,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_notebook_runs_clean(assignment, tmp_path):
    """Every cell, hidden tests included, passes with the reference solution in a real kernel."""
    nb = _execute(notebook_path("solutions", assignment), tmp_path, allow_errors=False)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    # A grade cell must leave no value behind: nbgrader would read a number as partial credit.
    for cell in graded_cells(nb):
        assert not [o for o in cell.outputs if o.output_type == "execute_result"], nbg(cell)["grade_id"]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_answered_exercise_passes_nbgrader_validate(assignment, tmp_path):
    """A student who pastes in the reference answers passes nbgrader's own Validate, checksums intact."""
    from nbgrader.validator import Validator

    solutions = {c.id: c for c in load("solutions", assignment).cells}
    nb = nbformat.read(str(notebook_path("exercises", assignment)), as_version=4)
    for cell in nb.cells:
        if is_answer(cell):
            cell.source = cell.source.replace(CODE_STUB, solution_code(solutions[cell.id]))
    path = tmp_path / f"{assignment}.ipynb"
    nbformat.write(nb, str(path))
    with kernel_environment():
        results = Validator().validate(str(path))
    assert results == {}, results


_MISSING = re.compile(r"name '(\w+)' is not defined")


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_notebook_fails_only_for_missing_answers(assignment, tmp_path):
    """Run unanswered, the student version errs exactly where an answer is missing:

    - every answer cell raises ``NotImplementedError`` (the stub), and nothing else;
    - every test cell raises ``NameError`` for one of the answer names (the answer the stub
      left unbound) — no ``AssertionError``, no other error;
    - a read-only cell (prompt, given, plot) either runs clean or raises ``NameError`` for an
      answer name (the plot of answers not yet given); the setup and "given" inputs run clean.
    """
    nb = _execute(notebook_path("exercises", assignment), tmp_path, allow_errors=True)
    answers = answer_names(assignment)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        gid = nbg(cell)["grade_id"]
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert len(errors) <= 1, gid
        if is_answer(cell):
            assert errors and errors[0].ename == "NotImplementedError", gid
        elif is_test(cell) or free_names(cell.source) & answers:
            assert errors and errors[0].ename == "NameError", gid
            missing = _MISSING.search(errors[0].evalue)
            assert missing and missing.group(1) in answers, (gid, errors[0].evalue)
        else:
            assert not errors, (gid, errors and errors[0].evalue)

"""Per-student numbers: keys, draws, and every homework's variant check through its notebook.

For each homework with a spec in ``scalebook.homework``, 500 students of one course
(``tests/students.py``: the class the convention matrix judges too, drawn once) each get
their own numbers (at least 90% distinct, every problem's inputs varying). For the first
``GRADED`` of them the notebook itself is exercised as the grader runs it: the reference
solution's cells, run from those numbers, score full marks when the notebook's test cells run
with that student's ``VARIANT``, and the slips the checks name (each hint's wrong value), as well
as an answer off by a factor of 2 either way, score zero on that part.

The same promise for all 500 students is kept one level down, where it is cheap:
``tests/test_homework_parts.py``'s convention matrix judges every declared part's reference,
accepted conventions, pinned conventions and slips for 500 drawn students, and checks that each
notebook's test cell is exactly the one generated from its part. What this file adds is the
notebook's own wiring (its solution cells, its test cells run by the grader's path), which does
not change from one student's numbers to the next; hw4's design part searches every training
layout per student, so 500 notebook runs cost CI more than 15 minutes for no further check.
"""

from __future__ import annotations

import collections
import contextlib
import io
import math
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.course import SOLUTIONS
from autograder.notebook import is_identity_cell
from autograder.sandbox.inside import to_plain
from gradecells import free_names, nbgrader_metadata, recording_checks, run_as_grader
from scalebook.homework import SPECS, your_numbers
from students import CLASS_SIZE, SECRET, class_of
from scalebook.variants import (Choice, KeyError_, VariantSpec, check_key, default_variant, draw,
                                fill_placeholders, format_value, key_check, normalize_key,
                                placeholders, student_key)

VARIANTS = CLASS_SIZE
#: Students whose notebook is run and graded (the first ones of the VARIANTS drawn).
GRADED = 40

# --------------------------------------------------------------------------- keys and draws

TOY = VariantSpec(
    assignment="toy",
    parameters={"q1_B": Choice((8, 16, 32), "B", "tokens"), "q1_chip": Choice(("TPU v5e", "H100"), "chip")},
    derive=lambda p: {"q1_twice": 2 * p["q1_B"]},
    well_posed=lambda v: not (v["q1_B"] == 32 and v["q1_chip"] == "H100"),
    derived_labels={"q1_twice": ("2B", "tokens")},
)


def test_a_key_is_nine_characters_with_a_check_that_fits_only_its_student():
    key = student_key(SECRET, "alice")
    assert len(key) == 11 and key[4] == key[9] == "-"
    plain = normalize_key(key)
    assert check_key("alice", key) == plain
    assert check_key(" alice ", key.lower().replace("-", " ")) == plain  # case, spaces, dashes
    assert key_check("alice", plain[:8]) == plain[8]
    # another student's key is refused by its check character (1 in 32 slips through by chance)
    others = [student_key(SECRET, f"s{i}") for i in range(200)]
    passed = sum(key_check("alice", normalize_key(k)[:8]) == normalize_key(k)[8] for k in others)
    assert passed < 20
    with pytest.raises(KeyError_, match="does not belong to STUDENT_ID 'bob'"):
        check_key("bob", key) if key_check("bob", plain[:8]) != plain[8] else check_key("bob", "AAAA-AAAA-A")


@pytest.mark.parametrize("bad, why", [
    ("", "not a homework key"), ("ABCD-EFGH", "not a homework key"), ("ABCD-EFGH-11", "not a homework key"),
    ("ABCD-EF0H-J", "not a homework key"), (42, "should be a string"),
])
def test_malformed_keys_get_a_clear_error(bad, why):
    with pytest.raises(KeyError_, match=why):
        check_key("alice", bad)


def test_keys_depend_on_the_secret_and_the_id():
    assert student_key(SECRET, "alice") == student_key(SECRET, "alice")
    assert student_key(SECRET, "alice") != student_key(SECRET, "bob")
    assert student_key(SECRET, "alice") != student_key(bytes(32), "alice")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        student_key(b"short", "alice")
    with pytest.raises(ValueError, match="non-empty"):
        student_key(SECRET, " ")


def test_a_draw_is_deterministic_well_posed_and_covers_the_choices():
    seen = collections.Counter()
    for i in range(300):
        key = student_key(SECRET, f"s{i}")
        v = draw(TOY, key)
        assert v == draw(TOY, key.lower())  # same key, same numbers
        assert v["q1_twice"] == 2 * v["q1_B"]
        assert not (v["q1_B"] == 32 and v["q1_chip"] == "H100")  # never the ill-posed pair
        seen[(v["q1_B"], v["q1_chip"])] += 1
    assert len(seen) == 5  # every well-posed pair turns up
    assert min(seen.values()) > 300 / 5 / 2


def test_the_default_variant_is_every_first_choice():
    v = default_variant(TOY)
    assert (v["q1_B"], v["q1_chip"], v["q1_twice"], v.key) == (8, "TPU v5e", 16, "")
    assert draw(TOY, "") == v


def test_a_spec_whose_published_numbers_are_ill_posed_is_refused():
    bad = VariantSpec("bad", {"q1_B": Choice((1, 2), "B")}, well_posed=lambda v: v["q1_B"] > 1)
    with pytest.raises(ValueError, match="published numbers"):
        default_variant(bad)
    never = VariantSpec("never", {"q1_B": Choice((1, 2), "B")}, well_posed=lambda v: False)
    with pytest.raises(RuntimeError, match="no well-posed variant"):
        draw(never, student_key(SECRET, "x"))


def test_choices_are_checked():
    with pytest.raises(ValueError, match="non-empty tuple"):
        Choice([1, 2], "B")
    with pytest.raises(ValueError, match="twice"):
        Choice((1, 1), "B")
    with pytest.raises(ValueError, match="identifier"):
        VariantSpec("x", {"q1-B": Choice((1,), "B")})


def test_placeholders_fill_with_values_or_labels():
    text = "B = {{q1_B}} tokens on a {{ q1_chip }}, {{q1_twice}} in all"
    assert placeholders(text) == ["q1_B", "q1_chip", "q1_twice"]
    assert fill_placeholders(text, TOY, None) == "B = [B] tokens on a [chip], [2B] in all"
    v = draw(TOY, student_key(SECRET, "s1"))
    assert fill_placeholders(text, TOY, v) == (
        f"B = {v['q1_B']} tokens on a {v['q1_chip']}, {v['q1_twice']} in all")
    with pytest.raises(KeyError, match="no variant value 'q9_x'"):
        fill_placeholders("{{q9_x}}", TOY, None)


@pytest.mark.parametrize("value, text", [
    (8192, "8192"), (3.94e14, "3.94e14"), (8.2e11, "8.2e11"), (1979.0, "1,979"), (3.35, "3.35"),
    (4.8, "4.8"), ("H100", "H100"), (1.5e-3, "0.0015"), (2e-5, "2e-5"),
])
def test_values_are_written_as_a_person_would(value, text):
    assert format_value(value) == text


def test_a_homework_module_is_imported_when_its_homework_is_looked_up():
    """A notebook's ``your_numbers`` (and a grader's ``spec_for``) imports its own homework's
    module, not all eight; every module declares the assignment it is listed under."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from scalebook.homework import your_numbers\n"
            "your_numbers('hw3-sharding', '', '', show=False)\n"
            "print(sorted(m for m in sys.modules if m.startswith('scalebook.homework.hw')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "['scalebook.homework.hw3_sharding']", out.stdout + out.stderr
    from scalebook.homework import MODULES, PARTS

    assert list(SPECS) == list(MODULES) and len(SPECS) == 8
    assert all(SPECS[a].assignment == a for a in MODULES)
    assert "hw9-nothing" not in SPECS and SPECS.get("hw9-nothing") is None
    assert set(PARTS) <= set(MODULES) and PARTS["hw1-rooflines"] is PARTS["hw1-rooflines"]


def test_your_numbers_prints_the_students_numbers_and_explains_the_sample(capsys):
    v = your_numbers("hw1-rooflines", "", "")
    out = capsys.readouterr().out
    assert "sample numbers" in out and "STUDENT_ID" in out
    assert v == default_variant(SPECS["hw1-rooflines"])
    key = student_key(SECRET, "alice")
    mine = your_numbers("hw1-rooflines", "alice", key)
    out = capsys.readouterr().out
    assert "(alice)" in out and "sample numbers" not in out
    assert f"B = {mine['q1_B']} tokens" in out
    assert your_numbers("hw1-rooflines", "", None, show=False) == v  # variants off: the published ones
    with pytest.raises(ValueError, match="does not belong"):
        other = next(k for k in (student_key(SECRET, f"x{i}") for i in range(100))
                     if key_check("alice", normalize_key(k)[:8]) != normalize_key(k)[8])
        your_numbers("hw1-rooflines", "alice", other)
    with pytest.raises(ValueError, match="no per-student numbers"):
        your_numbers("hw9-none", "alice", key)


# --------------------------------------------------------------------------- 500 variants

def _notebook(assignment: str):
    return nbformat.read(str(SOLUTIONS / assignment / f"{assignment}.ipynb"), as_version=4)


def _variant_reads(source: str) -> tuple[str, ...] | None:
    """The VARIANT entries a cell reads, or None where it uses VARIANT some other way."""
    keys = re.findall(r"""VARIANT\[\s*["'](\w+)["']\s*\]""", source)
    if source.count("VARIANT") != len(keys):
        return None
    return tuple(sorted(set(keys)))


def _compiles(cell) -> bool:
    """A cell that compiles a JAX program: seconds each time, so run once per set of its numbers."""
    return ".compile()" in cell.source


def _cells(assignment: str):
    """(solution code cells, each with its problem's prefix if it is a read-only experiment), tests."""
    nb = _notebook(assignment)
    run = [c for c in nb.cells if c.cell_type == "code" and not nbgrader_metadata(c).get("grade")
           and not is_identity_cell(c)]
    tests = [c for c in nb.cells if c.cell_type == "code" and nbgrader_metadata(c).get("grade")]
    code = []
    for c in run:
        gid = nbgrader_metadata(c)["grade_id"]
        problem = re.search(r"-(q\d+)", gid)
        experiment = _compiles(c) and nbgrader_metadata(c).get("locked") and problem
        code.append((compile(c.source, gid, "exec"), f"{problem[1]}_" if experiment else None))
    return code, tests


def _solve(code, student: str, key: str, names: set[str], seen: set) -> dict:
    """The reference solution run from this student's numbers: answer name -> plain value.

    A read-only experiment (a cell that compiles JAX and prints what it finds, binding no
    answer) runs for the first student with its problem's numbers only: ``seen`` remembers them.
    """
    import matplotlib.pyplot as plt

    namespace = {"__name__": "__homework__", "STUDENT_ID": student, "HOMEWORK_KEY": key}
    with contextlib.redirect_stdout(io.StringIO()):
        for compiled, prefix in code:
            if prefix:
                numbers = (compiled.co_filename, tuple(
                    (k, v) for k, v in namespace["VARIANT"].items() if k.startswith(prefix)))
                if numbers in seen:
                    continue
                seen.add(numbers)
            exec(compiled, namespace)
    plt.close("all")
    return {n: to_plain(namespace[n]) for n in names if n in namespace}


def _fails(cell, answers: dict, variant) -> str | None:
    try:
        run_as_grader(cell, answers, variant)
    except AssertionError as exc:
        return str(exc)
    return None


class _CompiledChecks:
    """Runs test cells, once per input for those that compile JAX (same inputs, same verdict).

    The inputs of a check are the student's answers it reads and the VARIANT entries it reads;
    a check that compiles a JAX program takes seconds, and 500 students share a few dozen
    shapes, so its verdict and recorded value checks are kept by those inputs.
    """

    def __init__(self) -> None:
        self.memo: dict = {}

    def run(self, cell, answers: dict, variant) -> tuple[str | None, list]:
        reads = _variant_reads(cell.source) if _compiles(cell) else None
        key = None
        if reads is not None:
            names = sorted(free_names(cell.source))
            key = (nbgrader_metadata(cell)["grade_id"], repr([answers.get(n) for n in names]),
                   tuple(variant[k] for k in reads))
            if key in self.memo:
                return self.memo[key]
        with recording_checks() as calls:
            result = (_fails(cell, answers, variant), calls)
        if key is not None:
            self.memo[key] = result
        return result


@pytest.mark.slow
@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_variants_grade_the_solution_full_and_the_named_slips_zero(assignment):
    os.environ.setdefault("MPLBACKEND", "Agg")
    spec = SPECS[assignment]
    code, tests = _cells(assignment)
    names = set().union(*(free_names(t.source) for t in tests))
    drawn, per_problem = set(), collections.defaultdict(set)
    seen, checks = set(), _CompiledChecks()
    answer_range: dict[str, list[float]] = collections.defaultdict(lambda: [math.inf, -math.inf])
    slips = 0
    for i, (student, key, variant) in enumerate(class_of(assignment)):
        drawn.add(tuple(variant.drawn().items()))
        for name, value in variant.drawn().items():
            per_problem[name.split("_")[0]].add((name, value))
        if i >= GRADED:
            continue
        answers = _solve(code, student, key, names, seen)
        for cell in tests:
            gid = nbgrader_metadata(cell)["grade_id"]
            why, calls = checks.run(cell, answers, variant)
            assert why is None, f"{student} ({key}), {gid}: the reference answer fails: {why}"
            for kind, name, expected, rel, hints in calls:
                if kind == "design":    # a choice, not a number: tests/test_homework_parts.py
                    continue
                values = np.atleast_1d(np.asarray(expected, float))
                assert np.all(np.isfinite(values)) and np.all(values > 0), (student, gid, name)
                low, high = answer_range[name]
                answer_range[name] = [min(low, values.min()), max(high, values.max())]
                right = answers[name]
                wrong_values = [(w, f"Hint: {t}") for w, t in hints]
                wrong_values += [(np.asarray(right, float) * f, None) for f in (2.0, 0.5)]
                for wrong, must_say in wrong_values:
                    wrong = to_plain(np.asarray(wrong, float) if kind == "array" else wrong)
                    message, _ = checks.run(cell, {**answers, name: wrong}, variant)
                    assert message is not None, (
                        f"{student} ({key}), {gid}: the slip {must_say or 'x2 / x0.5'} for {name} passes")
                    if must_say:
                        assert must_say in message, (student, gid, name, must_say, message)
                    slips += 1
    assert len(drawn) >= 0.9 * VARIANTS, f"only {len(drawn)} distinct variants in {VARIANTS}"
    for problem, values in per_problem.items():
        assert len({v for _, v in values}) > 1, f"{problem} never varies"
    summary = ", ".join(f"{n} {lo:.3g}..{hi:.3g}" for n, (lo, hi) in sorted(answer_range.items()))
    print(f"\n{assignment}: {len(drawn)} distinct variants of {VARIANTS}; {GRADED} notebooks graded, "
          f"{slips} slips graded zero; "
          f"answers ranged: {summary}")


#: Choices that no well-posed draw keeps, left declared because the draws are pinned
#: (tests/test_variant_stability.py): a replacement would make some draws well posed that were
#: not, and so change those students' numbers while a homework is out.
NEVER_DRAWN = {
    "hw1-rooflines": {"q1_B": [256]},           # its "weights only" slip lies 3% from the answer
    "hw4-parallelism": {"q2_model": ["LLaMA-3 8B"],  # 1 or 2 GPUs: several slips give one count
                        "q2_gpu": ["H200"]},    # 70B needs 8.01: unrounded and rounded down meet
    "hw5-transformers": {"q2_T": [32768]},      # backward only and the causal discount meet
}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", sorted(SPECS))
def test_every_choice_turns_up_in_the_class(assignment):
    """Every choice a homework declares is some student's number in the class of 500, but the
    ones :data:`NEVER_DRAWN` names; and those never are."""
    seen = collections.defaultdict(set)
    for student in class_of(assignment):
        for name, value in student.numbers.drawn().items():
            seen[name].add(value)
    missing = {name: [x for x in choice.values if x not in seen[name]]
               for name, choice in SPECS[assignment].parameters.items()}
    assert {name: xs for name, xs in missing.items() if xs} == NEVER_DRAWN.get(assignment, {})

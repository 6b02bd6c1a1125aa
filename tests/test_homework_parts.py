"""The contract of every declared homework part (scalebook/homework/parts.py), data-driven.

- each declared part has one graded cell in its source notebook, whose source is exactly what
  ``scalebook.homework.cells`` writes (a form check and a two-line hidden check), so the notebook
  and the definition cannot drift; a pinned convention's phrase is in its problem's text;
- the convention matrix: for 500 drawn students of every homework that declares parts, the
  reference value and every accepted convention pass, every pinned convention and every slip
  scores zero with its own hint and no other; and the notebook's own solution cells, run on the
  student's numbers, score full marks;
- the checker and the generic well-posedness rule on small hand-made parts.

The hand-worked answers of tests/test_hw*.py stay the independent oracle of the values.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from scalebook.homework import PARTS, check_answer, spec_for
from scalebook.homework.cells import checked_answer, checked_answers, sync_notebook
from scalebook.homework.parts import (ACCEPTED, PINNED, Convention, Design, Distinct, Part, Slip,
                                      coinciding, distinct_from, judge, merged, part_well_posed,
                                      targets, test_cell_source)
from scalebook.variants import default_variant
from students import CLASS_SIZE, class_of

REPO = Path(__file__).resolve().parent.parent
STUDENTS = CLASS_SIZE
#: Students whose notebooks the reference solution is run for (hw4's design part searches every
#: layout, half a second each; the matrix checks the reference value for all 500).
SOLUTION_RUNS = 60


def _notebook(assignment: str) -> dict:
    return json.loads((REPO / "solutions" / assignment / f"{assignment}.ipynb").read_text("utf-8"))


def _text(cell: dict) -> str:
    return "".join(cell["source"])


@pytest.fixture(scope="module", params=sorted(PARTS))
def assignment(request) -> str:
    return request.param


def students(assignment: str) -> list:
    """The class's numbers (tests/students.py), the published sample first in place of the last
    student: 500 in all."""
    return [default_variant(spec_for(assignment))] + [
        s.numbers for s in class_of(assignment)[:STUDENTS - 1]]


# --------------------------------------------------------------------------- notebook contract

def test_every_declared_part_has_its_generated_test_cell(assignment):
    nb = _notebook(assignment)
    parts = PARTS[assignment]
    checked = [n for c in nb["cells"] for n in checked_answers(c, parts)]
    assert sorted(checked) == sorted(parts), "a declared part has no grade cell, or two"
    path = REPO / "solutions" / assignment / f"{assignment}.ipynb"
    assert sync_notebook(path, assignment, check=True) == [], (
        "test cells differ from their definitions: run `make generate`")


def test_hidden_test_cells_are_a_few_lines(assignment):
    nb = _notebook(assignment)
    parts = PARTS[assignment]
    for cell in nb["cells"]:
        if checked_answer(cell, parts):
            hidden = _text(cell).split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            assert len(hidden.strip().splitlines()) <= 3


def _problem_text(nb: dict, answer: str, parts) -> str:
    """The title and the markdown of the problem whose grade cell checks ``answer``, up to it."""
    text, title = [], _text(nb["cells"][0])
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            if _text(cell).startswith("## Problem"):
                text = []
            text.append(_text(cell))
        if answer in checked_answers(cell, parts):
            return title + "\n".join(text)
    raise AssertionError(f"no grade cell checks {answer}")


def test_pinned_conventions_are_named_in_the_problem_text(assignment):
    nb = _notebook(assignment)
    parts = PARTS[assignment]
    for part in parts.values():
        for convention in getattr(part, "pinned", ()):
            assert convention.phrase in _problem_text(nb, part.answer, parts), (
                f"{part.answer}: the text does not say {convention.phrase!r}, which pins "
                f"{convention.name!r} out")


def test_published_numbers_are_well_posed(assignment):
    sample = default_variant(spec_for(assignment))
    assert all(part_well_posed(p, sample) for p in PARTS[assignment].values()
               if isinstance(p, Part))


# --------------------------------------------------------------------------- convention matrix

@pytest.mark.slow
def test_convention_matrix(assignment):
    """For 500 students: reference and accepted conventions pass; a pinned convention or a slip
    gets exactly its own hint; a design part passes the solver's choice and explains each
    example's failure."""
    failures = []
    for v in students(assignment):
        for part in PARTS[assignment].values():
            if isinstance(part, Design):
                if not part.judge(v, part.reference(v)).passed:
                    failures.append((v.key, part.answer, "reference"))
                for example in part.examples:
                    verdict = part.judge(v, example.value(v))
                    if verdict.passed or not any(example.fragment in h for h in verdict.hints):
                        failures.append((v.key, part.answer, example.name, verdict))
                continue
            expected = part.expected(v)
            if not judge(part, v, expected).passed:
                failures.append((v.key, part.answer, "reference"))
            for c in part.accepted:
                if not judge(part, v, c.value(v)).passed:
                    failures.append((v.key, part.answer, c.name))
            within = targets(part, v)   # what the grader computes per wrong answer, once here
            for name, wrong, hint in part.hinted():
                value = wrong(v)    # the student's slip, computed apart from the grader's targets
                if value != value:                  # NaN: this slip does not apply here
                    # ... or is silent (a Distinct near the answer): it passes, or earns a hint
                    raw = wrong.raw(v) if isinstance(wrong, Distinct) else math.nan
                    if raw == raw:
                        quiet = judge(part, v, raw, within)
                        if not (quiet.passed or quiet.hints):
                            failures.append((v.key, part.answer, name, "fails with no hint"))
                    continue
                verdict = judge(part, v, value, within)
                own = hint(v) if callable(hint) else hint
                own = own.format(**dict(v), answer=value)
                # one hint, its own; where a catalog reading coincides, that cause follows it
                if verdict.passed or len(verdict.hints) != 1 or not verdict.hints[0].startswith(own):
                    failures.append((v.key, part.answer, name, verdict))
    assert not failures, f"{len(failures)} failures, first: {failures[:5]}"


def _sections(nb: dict) -> list[list[dict]]:
    """The notebook's cells, problem by problem (the title and setup first)."""
    sections: list[list[dict]] = [[]]
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and _text(cell).startswith("## Problem"):
            sections.append([])
        sections[-1].append(cell)
    return sections


def _compiles_jax(section: list[dict]) -> bool:
    return any("import jax" in _text(x) and "your_numbers(" not in _text(x) for x in section)


def _jax_answers(nb: dict, parts) -> set[str]:
    """The declared answers of the problems that compile a JAX program."""
    return {n for s in _sections(nb) if _compiles_jax(s) for c in s for n in checked_answers(c, parts)}


def _solution_cells(nb: dict) -> list[str]:
    """The code the reference solution runs, but the identity cell, the setup's draw (the
    grader binds VARIANT) and the problems that compile a JAX program (their checks are
    exercised by tests/test_hw*.py)."""
    out = []
    for cell in (c for section in _sections(nb) for c in section if not _compiles_jax(section)):
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        source = _text(cell)
        if cell["cell_type"] != "code" or nbg.get("grade") or "STUDENT_ID =" in source:
            continue
        source = "\n".join(line for line in source.splitlines() if "= your_numbers(" not in line)
        out.append(source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""))
    return out


@pytest.mark.slow
def test_reference_solution_scores_full_marks_for_every_student(assignment):
    nb = _notebook(assignment)
    code = compile("\n".join(_solution_cells(nb)), f"{assignment} solution", "exec")
    parts = PARTS[assignment]
    answers = set(parts) - _jax_answers(nb, parts)
    for v in students(assignment)[:SOLUTION_RUNS]:
        namespace = {"VARIANT": v, "print": lambda *a, **k: None}
        exec(code, namespace)
        plt.close("all")  # the plot a solution draws; Jupyter's inline backend closes it after its cell
        for answer in answers:
            check_answer(v, answer, namespace[answer])


# --------------------------------------------------------------------------- the machinery

TOY = Part("t", lambda v: 100.0, conventions=(
    Convention("exact", lambda v: 90.0, ACCEPTED),
    Convention("GiB", lambda v: 107.4 * v["k"], PINNED, phrase="1 GB = 1e9 bytes",
               hint="This problem counts 1 GB = 1e9 bytes, not GiB."),
), slips=(Slip("half", lambda v: 50.0, "You gave {answer:.3g}: that is half of it."),))


def test_judge_accepts_the_reference_and_accepted_conventions_only():
    assert judge(TOY, {"k": 1}, 101).passed and judge(TOY, {"k": 1}, 89).passed
    assert judge(TOY, {"k": 1}, 107.4) .hints == ("This problem counts 1 GB = 1e9 bytes, not GiB.",)
    assert judge(TOY, {"k": 1}, 50).hints == ("You gave 50: that is half of it.",)
    assert judge(TOY, {"k": 1}, 70) == judge(TOY, {"k": 1}, 70.0)
    assert not judge(TOY, {"k": 1}, 70).passed and judge(TOY, {"k": 1}, 70).hints == ()


def test_well_posed_rejects_a_slip_or_pinned_value_near_an_accepted_one_and_two_hints_at_once():
    assert part_well_posed(TOY, {"k": 1})
    assert not part_well_posed(TOY, {"k": 0.9})         # GiB value 96.7: accepted, so no hint
    clash = Part("t", lambda v: 100.0, slips=(Slip("a", lambda v: 30.0, "a"),
                                               Slip("b", lambda v: 31.0, "b")))
    assert not part_well_posed(clash, {})               # 30.5 would get both hints
    doubled = Part("t", lambda v: 100.0, conventions=(Convention("x2", lambda v: 200.0),))
    assert not part_well_posed(doubled, {})             # twice the answer must stay wrong
    broken = Part("t", lambda v: 1 / 0)
    assert not part_well_posed(broken, {})


def test_a_slip_just_outside_the_check_keeps_the_draw_and_its_hint():
    """A slip silent in a draw (within MARGIN × rel of the answer) keeps the draw well posed, as
    students' pinned numbers need; an answer at it that the check fails still earns its hint
    (hw8's int4 slip, 5.8% off on the A100 at B = 128, S = 2,048, once got none)."""
    part = Part("t", lambda v: 100.0, slips=(
        Slip("k", distinct_from(lambda v: 100.0, lambda v: v["k"]), "k"),))
    assert part_well_posed(part, {"k": 105.8}) and part_well_posed(part, {"k": 104.0})
    assert judge(part, {"k": 105.8}, 105.8).hints == ("k",)
    assert judge(part, {"k": 104.0}, 104.0).passed
    assert judge(part, {"k": 130.0}, 130.0).hints == ("k",)
    assert judge(part, {"k": 105.8}, 120.0).hints == ()
    # merged and coinciding keep a silent slip's hint too
    for slips in (merged(part.slips[0], Slip("j", lambda v: 50.0, "j"), "both"),
                  coinciding(part.slips[0], Slip("j", lambda v: 50.0, "j"))):
        both = Part("t", lambda v: 100.0, slips=slips)
        assert judge(both, {"k": 105.8}, 105.8).hints == ("k",)
        assert judge(both, {"k": 105.8}, 50.0).hints == ("j",)
        assert isinstance(both.slips[0].value, Distinct)


def test_pinned_convention_needs_its_phrase_and_hint():
    with pytest.raises(ValueError, match="phrase"):
        Convention("GiB", lambda v: 1.0, PINNED)


def test_test_cell_is_two_hidden_lines_that_read_only_the_answer():
    source = test_cell_source(TOY)
    hidden = source.split("### BEGIN HIDDEN TESTS\n")[1].split("### END HIDDEN TESTS")[0]
    assert hidden.strip().splitlines() == ["from scalebook.homework import check_answer",
                                           'check_answer(VARIANT, "t", t)']
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    assert names == {"check_number", "check_answer", "VARIANT", "t"}


def test_a_rejected_design_is_told_why_as_a_hint():
    """The judge's reasons follow "Hint:", which the feedback's hint column and the report's
    grouping of wrong answers read: a design answer is never rejected without its reason."""
    from autograder.feedback import split_hint
    for assignment, answer, wrong, reason in [
        ("hw4-parallelism", "training_layout", lambda v: [v["q10_n"], 1, 1, 1, 0, 1, "none"],
         "It does not fit: it needs"),
        ("hw7-moe-long-context", "design_ep", lambda v: 2 * 64, "more than the 64 chips"),
        ("hw8-serving-systems", "serving_design", lambda v: [4, 256, 0, 0], "meets them on 2 H100s"),
    ]:
        v = default_variant(spec_for(assignment))
        with pytest.raises(AssertionError) as info:
            check_answer(v, answer, wrong(v))
        message, hint = split_hint(str(info.value))
        assert message.startswith(f"{answer} = ") and reason in hint, str(info.value)


def test_an_array_part_is_judged_element_by_element():
    curve = Part("c", lambda v: (1.0, 2.0, 4.0), shape=(3,), slips=(
        Slip("no peak", lambda v: (1.0, 2.0, 8.0), "take the peak"),))
    assert judge(curve, {}, [1.01, 1.98, 4.1]).passed
    assert judge(curve, {}, (1.0, 2.0, 8.0)) .hints == ("take the peak",)
    assert judge(curve, {}, (1.0, 2.0, 6.0)) .hints == ()        # one element off: no hint
    assert not judge(curve, {}, (1.0, 2.0)).passed                # wrong length never passes
    assert part_well_posed(curve, {})
    same = Part("c", lambda v: (1.0, 2.0), shape=(2,), slips=(Slip("x", lambda v: (1.0, 2.02), "x"),))
    assert not part_well_posed(same, {})                          # every element within 6%


def test_coinciding_slips_earn_one_hint_that_names_every_cause():
    from scalebook.homework.parts import coinciding
    slips = coinciding(Slip("a", lambda v: v["a"], "A."), Slip("b", lambda v: v["b"], "B."),
                       Slip("c", lambda v: 50.0, "C."))
    part = Part("t", lambda v: 100.0, slips=slips)
    assert len(slips) == 7
    apart, together = {"a": 30.0, "b": 70.0}, {"a": 30.0, "b": 30.5}
    assert judge(part, apart, 30).hints == ("A.",) and judge(part, apart, 70).hints == ("B.",)
    assert judge(part, together, 30).hints == ("2 slips give about this value: A. Or: B.",)
    assert judge(part, together, 50).hints == ("C.",)
    assert part_well_posed(part, apart) and part_well_posed(part, together)


def test_a_cell_may_grade_several_answers():
    a, b = Part("a", lambda v: 1.0), Part("b", lambda v: 2.0, shape=(14,))
    source = test_cell_source(a, b)
    hidden = source.split("### BEGIN HIDDEN TESTS\n")[1].split("### END HIDDEN TESTS")[0]
    assert hidden.strip().splitlines() == ["from scalebook.homework import check_answer",
                                           'check_answer(VARIANT, "a", a)',
                                           'check_answer(VARIANT, "b", b)']
    assert 'check_array(b, "b", shape=(14,), positive=True)' in source
    cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade": True}}, "source": source}
    assert checked_answers(cell, {"a": a, "b": b}) == ("a", "b")
    assert checked_answers(cell, {"a": a}) == ()                  # one undeclared: left alone


def test_the_list_names_every_part_and_each_pinned_phrase(capsys):
    from scalebook.homework.__main__ import main
    assert main(["--list", "hw1-rooflines"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in PARTS["hw1-rooflines"])
    assert 'pinned -- the text says "A multiply-add counts as **2** FLOPs"' in out
    assert main(["--list", "hw9-nothing"]) == 2

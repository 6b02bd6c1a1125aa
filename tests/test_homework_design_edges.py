"""The design parts' edge cases an audit found: one whole-number rule for every design part, a
design the solver refuses judged like any infeasible one, messages that do not contradict
themselves, and instructor comments that tell the truth."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scalebook.homework import PARTS, check_answer, spec_for
from scalebook.homework.parts import Design, whole_number
from scalebook.variants import default_variant, draw, student_key

REPO = Path(__file__).resolve().parent.parent
SECRET = b"design-edges-secret-0123456789ab"


def _message(v, answer, value) -> str:
    """What the grader says of ``value`` (empty when it passes)."""
    try:
        check_answer(v, answer, value)
    except AssertionError as exc:
        return str(exc)
    return ""


def test_whole_number_rule():
    assert whole_number(103, "x") == 103 and whole_number(103.0, "x") == 103
    for bad in (32.9, True, "32", float("nan")):
        assert "has to be a whole number" in whole_number(bad, "x")


def test_design_ep_non_whole_is_refused_not_truncated():
    v = default_variant(spec_for("hw7-moe-long-context"))
    best = PARTS["hw7-moe-long-context"]["design_ep"].reference(v)
    assert _message(v, "design_ep", float(best)) == ""          # 32.0 is 32
    message = _message(v, "design_ep", best + 0.9)
    assert "has to be a whole number" in message and "Hint:" in message


def test_design_ep_beyond_the_chips_says_so():
    v = default_variant(spec_for("hw7-moe-long-context"))
    message = _message(v, "design_ep", v["q6_E"])
    if v["q6_E"] > 64:
        assert "more than the 64 chips" in message and "not a power of two" not in message


def _layout_variant():
    """A drawn hw4 student whose N GPUs are more than the model's layers."""
    spec = spec_for("hw4-parallelism")
    for i in range(400):
        v = draw(spec, student_key(SECRET, f"s{i}"))
        if v["q10_n"] > 80:
            return v
    pytest.skip("no draw with more GPUs than layers")


def test_layout_the_solver_refuses_gets_a_normal_verdict():
    v = _layout_variant()
    n = v["q10_n"]
    message = _message(v, "training_layout", [1, 1, 1, n, 3, n, "full"])
    assert message.startswith("training_layout = ") and "Hint:" in message
    assert "pipeline stages" in message and "ValueError" not in message


def test_whole_valued_floats_are_one_rule_for_every_design_part():
    for assignment, answer in (("hw4-parallelism", "training_layout"),
                               ("hw6-inference", "serving_config"),
                               ("hw7-moe-long-context", "design_ep")):
        v = default_variant(spec_for(assignment))
        part = PARTS[assignment][answer]
        best = part.reference(v)
        as_float = ([float(x) if isinstance(x, int) else x for x in best] if isinstance(best, list)
                    else float(best))
        assert _message(v, answer, as_float) == "", (assignment, as_float)
        if isinstance(best, list):
            half = [x + 0.5 if isinstance(x, int) else x for x in best]
            assert "whole number" in _message(v, answer, half), assignment


def test_serving_memory_message_gives_the_shortfall_in_singular_and_plural():
    v = default_variant(spec_for("hw6-inference"))
    judge = PARTS["hw6-inference"]["serving_config"].judge
    best = PARTS["hw6-inference"]["serving_config"].reference(v)
    tight = judge(v, [best[0], best[1] + 1, best[2]]).hints[0]
    need, hold = (float(x) for x in re.findall(r"([\d.]+) GB", tight)[:2])
    assert need != hold and "short" in tight
    one = judge(v, [1, 1, "bf16"]).hints[0]
    assert "1 caches" not in one and f"1 {v['q8_gpu']}s" not in one


def test_solution_comments_give_the_reference_design():
    """A "sample numbers: [...]" comment of a design answer in a solution notebook (released to
    students) is the reference answer on the published numbers."""
    for assignment in ("hw6-inference",):
        nb = json.loads((REPO / "solutions" / assignment / f"{assignment}.ipynb").read_text("utf-8"))
        v = default_variant(spec_for(assignment))
        for cell in nb["cells"]:
            for line in cell["source"]:
                m = re.match(r"(\w+) = .*# sample numbers: (\[.*\])", line)
                if m and isinstance(PARTS[assignment].get(m.group(1)), Design):
                    assert json.loads(m.group(2)) == PARTS[assignment][m.group(1)].reference(v)

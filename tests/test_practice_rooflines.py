"""Part 1's worked problems, beyond the contract every practice problem keeps
(tests/test_practice.py): they follow the catalog, their draws pose the question they claim to
pose, and the numbers the chapter's answers rely on hold."""

from __future__ import annotations

import pytest

from scalebook.hardware import CATALOG, get_chip, on_chip_memory
from scalebook.practice import draw
from scalebook.practice import rooflines as practice
from scalebook.roofline import critical_batch_size, matmul_cost, matmul_time

SEEDS = range(40)


def _choices(problem, name):
    return set(problem.spec.parameters[name].values)


def test_the_critical_batch_problems_draw_every_chip_of_the_catalog_that_has_the_dtype():
    bf16 = {c.name for c in CATALOG if "bf16" in c.flops_per_s}
    assert _choices(practice.W5, "tpu") | _choices(practice.W5, "gpu") == bf16
    assert _choices(practice.W5, "tpu") == {n for n in bf16 if not get_chip(n).is_gpu}
    assert _choices(practice.W7, "chip") == {c.name for c in CATALOG
                                             if {"int8", "bf16"} <= set(c.flops_per_s)
                                             and c.flops("int8") >= c.flops("bf16")}
    assert _choices(practice.W8, "chip") == {c.name for c in CATALOG if "fp8" in c.flops_per_s}


def test_the_int8_peak_is_once_or_twice_the_bf16_peak_or_below_it_as_problem_7_says():
    ratios = {c.name: round(c.flops("int8") / c.flops("bf16"), 1) for c in CATALOG
              if {"int8", "bf16"} <= set(c.flops_per_s)}
    assert {r for r in ratios.values() if r >= 1} == {1.0, 2.0}, ratios
    assert [n for n, r in ratios.items() if r < 1] == ["GB300 NVL72"]  # fp4 took its place
    # where the two peaks are equal, int8 everything halves the critical batch
    assert critical_batch_size("TPU v4p", compute_dtype="int8") == pytest.approx(
        critical_batch_size("TPU v4p") / 2)
    assert critical_batch_size("TPU v5e", compute_dtype="int8") == pytest.approx(
        critical_batch_size("TPU v5e"))


@pytest.mark.parametrize("seed", SEEDS)
def test_problem_9_draws_a_weight_that_fits_on_chip(seed):
    v = draw(practice.W9, seed)
    level = practice.on_chip_level(v["chip"])
    assert level == ("l2" if get_chip(v["chip"]).is_gpu else "vmem")
    assert 2 * v["D"] * v["F"] <= on_chip_memory(v["chip"], level)


@pytest.mark.parametrize("seed", SEEDS)
def test_problem_6_draws_a_batch_where_the_sparse_figure_misleads(seed):
    v = draw(practice.W6, seed)
    b_star = critical_batch_size(v["chip"])
    assert b_star < v["B"] < 2 * b_star  # compute-bound, but "memory-bound" by the printed peak
    t = matmul_time(v["B"], v["D"], v["F"], v["chip"])
    assert max(t.t_math / 2, t.t_comms) < 0.9 * t.lower  # the printed peak predicts too fast


def test_problem_4_is_memory_bound_only_because_of_its_output():
    v = draw(practice.W4, 0)
    t = matmul_time(v["T"], v["d"], v["S"], v["chip"])
    assert t.bound_by == "comms"
    reads_only = matmul_cost(v["T"], v["d"], v["S"])
    assert reads_only.flops / reads_only.bytes_read > 4 * critical_batch_size(v["chip"])

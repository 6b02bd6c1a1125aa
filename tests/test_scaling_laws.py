"""Tests for scalebook.scaling_laws: the compute-optimal split and the Chinchilla fit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scalebook import scaling_laws as sl


def test_compute_optimal_spends_the_budget():
    opt = sl.compute_optimal(3.8e25)
    assert opt.params == pytest.approx(math.sqrt(3.8e25 / 120))  # 5.63e11, worked by hand
    assert opt.tokens == pytest.approx(20 * opt.params)
    assert 6 * opt.params * opt.tokens == pytest.approx(3.8e25)
    assert opt.tokens_per_param == 20


def test_compute_optimal_chinchilla_itself():
    # Chinchilla: 70e9 parameters on 1.4e12 tokens, 6·N·D = 5.88e23 FLOPs
    opt = sl.compute_optimal(6 * 70e9 * 1.4e12)
    assert opt.params == pytest.approx(70e9)
    assert opt.tokens == pytest.approx(1.4e12)


def test_compute_optimal_other_ratio_and_arrays():
    opt = sl.compute_optimal(np.array([1e21, 1e23]), tokens_per_param=40)
    assert opt.params == pytest.approx(np.sqrt(np.array([1e21, 1e23]) / 240))
    # 100x the compute buys 10x the parameters and 10x the tokens
    assert opt.params[1] / opt.params[0] == pytest.approx(10)


def test_tokens_per_param():
    assert sl.tokens_per_param(8e9, 15e12) == pytest.approx(1875)
    assert sl.tokens_per_param(405e9, 15.6e12) == pytest.approx(38.5, rel=1e-2)


def test_chinchilla_loss():
    # E + A/N^α + B/D^β by hand for N = 70e9, D = 1.4e12
    by_hand = 1.69 + 406.4 / 70e9 ** 0.34 + 410.7 / 1.4e12 ** 0.28
    assert sl.chinchilla_loss(70e9, 1.4e12) == pytest.approx(by_hand)
    assert sl.chinchilla_loss(70e9, 1.4e12) == pytest.approx(1.94, abs=0.01)
    # more of both never hurts, and the loss stays above the irreducible E
    assert sl.chinchilla_loss(140e9, 1.4e12) < sl.chinchilla_loss(70e9, 1.4e12)
    assert sl.chinchilla_loss(1e15, 1e18) > sl.CHINCHILLA_FIT.E


@pytest.mark.parametrize("bad", [0, -1e20, "1e24", None, True, math.inf])
def test_bad_input(bad):
    with pytest.raises(ValueError):
        sl.compute_optimal(bad)
    with pytest.raises(ValueError):
        sl.chinchilla_loss(bad, 1e12)


def test_bad_ratio():
    with pytest.raises(ValueError):
        sl.compute_optimal(1e24, tokens_per_param=0)
    with pytest.raises(ValueError):
        sl.chinchilla_loss(1e9, 1e12, fit="chinchilla")


def test_the_published_fit_contradicts_the_20_to_1_rule_and_the_refit_does_not():
    # Hoffmann et al.'s approach-3 constants: 1e24 FLOPs -> 41e9 parameters on 4.0e12 tokens
    opt = sl.loss_optimal(1e24)
    assert opt.params == pytest.approx(41.3e9, rel=0.01)
    assert opt.tokens == pytest.approx(4.04e12, rel=0.01)
    assert opt.tokens_per_param == pytest.approx(98, rel=0.01)
    assert 6 * opt.params * opt.tokens == pytest.approx(1e24)
    # it is the minimum: a step either way along 6ND = C raises the loss
    for k in (0.9, 1.1):
        n = opt.params * k
        assert sl.chinchilla_loss(n, 1e24 / (6 * n)) > sl.chinchilla_loss(opt.params, opt.tokens)
    # Besiroglu et al.'s re-fit: about 18 per parameter, near the paper's 20
    refit = sl.loss_optimal(1e24, fit=sl.BESIROGLU_FIT)
    assert refit.tokens_per_param == pytest.approx(18.1, rel=0.02)
    with pytest.raises(ValueError, match="ChinchillaFit"):
        sl.loss_optimal(1e24, fit=(1, 2, 3))

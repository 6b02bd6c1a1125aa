"""scalebook.step_fit: fitting a step-time model with a free efficiency and a fixed overhead,
and telling two models apart on the committed H100 decode run (book Part 6)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from scalebook import decoding, inference, step_fit

RUN = Path(__file__).resolve().parent.parent / "book" / "data" / "h100-2026-11-26.json"


def test_the_fit_recovers_an_overhead_and_an_efficiency_by_hand():
    fit = step_fit.fit_with_overhead([1e-3, 2e-3, 4e-3], [1.5e-3, 2.5e-3, 4.5e-3])
    assert fit.overhead == pytest.approx(0.5e-3) and fit.efficiency == pytest.approx(1.0)
    assert fit.rms == pytest.approx(0.0, abs=1e-12)
    half = step_fit.fit_with_overhead([1e-3, 2e-3, 4e-3], [2.2e-3, 4.2e-3, 8.2e-3])
    assert half.overhead == pytest.approx(0.2e-3) and half.efficiency == pytest.approx(0.5)
    assert half.fitted(1e-3) == pytest.approx(2.2e-3)


def test_a_negative_overhead_is_clamped_to_zero():
    # measured grows faster than predicted, so the unconstrained line wants t_0 < 0
    fit = step_fit.fit_with_overhead([1.0, 2.0, 3.0], [0.5, 2.0, 3.5])
    assert fit.overhead == 0.0 and fit.efficiency > 0


def test_the_comparison_picks_the_model_that_generated_the_data():
    # two models that agree at small steps and part ways at large ones, like phased/overlapped
    low = [1.0, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 9.0]
    high = [1.0, 1.1, 1.2, 1.5, 2.5, 4.0, 7.0, 13.0]
    noise = [1.02, 0.97, 1.01, 0.99, 1.03, 0.98, 1.01, 0.99]
    measured = [0.4 + h / 0.8 * n for h, n in zip(high, noise)]
    c = step_fit.compare_fits({"low": low, "high": high}, measured, resamples=300)
    assert c.best == "high" and c.robust and c.bootstrap_share["high"] > 0.9
    assert c.fits["high"].overhead == pytest.approx(0.4, rel=0.2)
    assert c.fits["high"].efficiency == pytest.approx(0.8, rel=0.1)


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="at least three"):
        step_fit.fit_with_overhead([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive finite"):
        step_fit.fit_with_overhead([1.0, -2.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="two models"):
        step_fit.compare_fits({"a": [1.0] * 5}, [1.0] * 5)
    with pytest.raises(ValueError, match="one predicted time per"):
        step_fit.compare_fits({"a": [1.0] * 5, "b": [1.0] * 4}, [1.0] * 5)


def _h100():
    run = json.loads(RUN.read_text())
    spec = run["decoder"]
    cfg = decoding.DecoderConfig(**{k: spec[k] for k in ("vocab", "d_model", "n_layers",
                                                         "n_heads", "n_kv_heads", "d_ff")})
    chip = decoding.measured_chip(run["peak_flops"], run["bandwidth"], dtype="bf16")
    steps, measured = [], []
    for sweep in run["decode"]:
        for b, t in zip(sweep["batches"], sweep["seconds"]):
            steps.append(inference.decode_step(cfg.shape(), chip, batch=b,
                                               context_len=sweep["context_len"]))
            measured.append(t)
    return run, steps, measured


def test_raw_closeness_cannot_tell_the_h100_models_apart():
    # The phased step is never below the overlapped bound and the measurement sits above the
    # phased step almost everywhere: "closer to the phased one" is then true by construction.
    _, steps, measured = _h100()
    assert all(s.time >= s.time_overlapped * (1 - 1e-12) for s in steps)
    assert sum(t > s.time for s, t in zip(steps, measured)) >= 0.9 * len(steps)


def test_with_a_free_overhead_and_efficiency_the_phased_model_fits_the_h100_better():
    _, steps, measured = _h100()
    c = step_fit.compare_fits({"phased": [s.time for s in steps],
                               "overlapped": [s.time_overlapped for s in steps]}, measured)
    assert c.best == "phased" and c.robust and c.bootstrap_share["phased"] >= 0.95
    # both fits find about the peak rates (e near 1) and a fixed cost of about 0.4 ms per step
    for fit in c.fits.values():
        assert 0.9 < fit.efficiency < 1.1 and 0.3e-3 < fit.overhead < 0.6e-3
    assert c.fits["phased"].rms < 0.9 * c.fits["overlapped"].rms


def test_the_h100_knee_moves_little_but_its_claim_rests_on_the_end_points():
    run, _, _ = _h100()
    short = run["decode"][0]
    spread = decoding.knee_spread(short["batches"], short["seconds"], resamples=200)
    assert 150 < spread.low < spread.knee < spread.high < 300
    assert all(180 < k < 250 for k in spread.drop_one)
    # dropping B = 1 or B = 1,024 leaves a power law nearly as good: no knee claimed
    dropped = {b for b, ok in zip(short["batches"], spread.drop_one_supported) if not ok}
    assert dropped == {1, 1024}
    with pytest.raises(ValueError, match="at least four"):
        decoding.knee_spread([1, 2, 4], [1.0, 1.0, 2.0])
    assert math.isfinite(spread.knee)


def test_the_residual_figure_describes_its_own_numbers():
    from scalebook.diagrams import fits as fit_figures
    from scalebook.picture import png_description

    fit = step_fit.fit_with_overhead([1e-3, 2e-3, 4e-3], [1.5e-3, 2.5e-3, 4.6e-3])
    pic = fit_figures.fit_residuals({"model": fit}, ["a", "b", "c"])
    worst = "abc"[max(range(3), key=lambda i: abs(fit.residuals[i]))]
    assert "overhead" in pic.alt and f"{100 * fit.rms:.0f}%" in pic.alt and f"at {worst}." in pic.alt
    assert png_description(pic._repr_png_()) == pic.alt
    with pytest.raises(ValueError, match="one residual per label"):
        fit_figures.fit_residuals({"model": fit}, ["a", "b"])

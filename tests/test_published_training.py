"""Published training runs (book/data/published/training.json) beside the planner: Parts 4 and 5."""

import pytest

from scalebook import published
from scalebook.published import load_measurements, parse_measurements, predict, reality_check
from scalebook.training import TrainingLayout, plan_training

TRAINING = [m for m in load_measurements()
            if m.quantity in ("training_mfu", "training_hfu", "run_chip_hours")]


def test_at_least_ten_runs_across_parts_4_and_5():
    assert len(TRAINING) >= 10
    for chapter in ("parallelism", "transformers"):
        assert len([m for m in TRAINING if m.chapter == chapter]) >= 5, chapter
    assert {m.system.chip for m in TRAINING} >= {"H100", "A100", "TPU v5e", "TPU v5p"}


@pytest.mark.parametrize("m", TRAINING, ids=[m.id for m in TRAINING])
def test_every_ratio_sits_inside_its_stated_band(m):
    row = next(r for r in reality_check(m.chapter) if r.measurement.id == m.id)
    lo, hi = m.band
    assert lo <= row.ratio <= hi, (m.id, row.ratio, m.band)


@pytest.mark.parametrize("m", [m for m in TRAINING if m.quantity != "run_chip_hours"],
                         ids=lambda m: m.id)
def test_the_prediction_is_the_planners_for_the_stated_setting(m):
    s = m.setting
    layout = TrainingLayout(**{k: s[k] for k in ("dp", "fsdp", "tp", "pp", "zero_stage",
                                                 "microbatches", "remat") if k in s})
    plan = plan_training(published.training_config(m), layout, m.system.chip,
                         global_batch=s["global_batch"], seq_len=s["seq_len"])
    if m.quantity == "training_mfu":
        assert predict(m) == pytest.approx(plan.mfu)
    else:  # hardware FLOPs utilisation counts the recomputed forward pass
        assert predict(m) == pytest.approx(plan.mfu * plan.hardware_flops_per_step
                                           / plan.flops_per_step)
        assert predict(m) > plan.mfu


def test_only_the_named_interleaving_row_beats_the_planner():
    """The planner is an upper bound on MFU; the one row above it is the named 1F1B-bubble
    error (Meta's interleaved schedule at 16 microbatches over 16 stages)."""
    above = [r.measurement.id for c in ("parallelism", "transformers")
             for r in reality_check(c) if r.ratio > 1]
    assert above == ["llama3-405b-h100x16384-mfu"]


def test_chip_hours_ratio_is_the_implied_mfu():
    from scalebook.training import implied_mfu, training_flops_from_params
    for m in (m for m in TRAINING if m.quantity == "run_chip_hours"):
        flops = training_flops_from_params(m.setting["active_params"], m.setting["tokens"])
        r = published.ratio(m, predict(m))
        assert r == pytest.approx(implied_mfu(flops, m.system.chip, chip_hours=m.value))
        assert 0.3 < r < 0.4, m.id  # both whole runs sit near a third of the bf16 peak


def test_the_markdown_table_shows_percent_and_chip_hours():
    text = published.reality_check_markdown("transformers")
    assert "61.1%" in text and "M chip-h" in text
    assert "MFU (TP 8, PP 16, DP 64" in published.reality_check_markdown("parallelism")


def test_a_training_row_without_its_model_shape_is_refused():
    data = {"sources": {"s": {"title": "t", "url": "https://x", "kind": "paper"}},
            "measurements": [{
                "id": "bad", "chapter": "parallelism", "quantity": "training_mfu", "value": 0.4,
                "unit": "1", "system": {"chip": "H100", "n_devices": 8, "description": "node"},
                "setting": {"d_model": 4096, "tp": 8}, "band": [0.5, 1.0],
                "band_reason": "upper bound for the test", "source": "s", "locator": "here",
                "quote": "a quoted row of text"}]}
    with pytest.raises(ValueError, match="needs setting"):
        parse_measurements(data)


@pytest.mark.parametrize("chapter", ["parallelism", "transformers"])
def test_parts_4_and_5_show_their_reality_check_before_the_takeaways(chapter):
    from pathlib import Path
    text = (Path(published.DATA_DIR).parent.parent / f"{chapter}.md").read_text(encoding="utf-8")
    check = text.index("\n## Reality check")
    assert check < text.index("\n## Takeaways")
    assert f'published.reality_check_markdown("{chapter}")' in text[check:]

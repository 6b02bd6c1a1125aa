"""Part 5 (Transformers at scale) as built: its glued numbers are the solver's, its experiment
ran and printed the compiler's count beside the formula, and it links its homework.

Reads _build/html/book/transformers.html, which `make test` builds (`make book`) before pytest;
a missing build is a failure, not a skip (as in test_book.py).
"""

from __future__ import annotations

import re

import pytest

from bookpage import built_page, has_number, visible_text
from scalebook import scaling_laws, training, transformer
from scalebook.units import format_bytes, format_scientific

DAY = 86400.0

pytestmark = [pytest.mark.slow, pytest.mark.book]


@pytest.fixture(scope="module")
def page() -> str:
    return built_page("transformers")


@pytest.fixture(scope="module")
def text(page) -> str:
    return visible_text(page)



def test_parameter_counts_are_the_solvers(text):
    l8 = transformer.llama3_8b()
    c8 = transformer.param_count(l8)
    assert c8.total == 8_030_261_248
    assert has_number(text, "8,030,261,248")
    assert has_number(text, f"{(c8.attention_k + c8.attention_v) // 32:,}")      # K+V per layer, GQA
    assert has_number(text, f"{2 * 4096 * 32 * 128:,}")                          # ... and without
    for cfg in (transformer.llama3_70b(), training.llama3_405b()):
        assert has_number(text, f"{transformer.param_count(cfg).total:,}")


def test_flops_and_crossover_are_the_solvers(text):
    l8, l70 = transformer.llama3_8b(), transformer.llama3_70b()
    assert has_number(text, f"{transformer.attention_crossover_context(l8):,.0f}")    # 21,504
    assert has_number(text, f"{transformer.attention_crossover_context(l70):,.0f}")   # 43,008
    f8 = transformer.flops_per_token(l8, 8192)
    # typeset "1.23 × 10¹⁴", never a caret (visible_text turns the narrow spaces into spaces)
    assert format_scientific(f8.training, 3).replace("\u202f", " ") in text
    share = f"{100 * f8.attention_share:.0f}%"
    assert share in text


def test_memory_is_the_solvers(text):
    state = training.training_memory(transformer.llama3_70b()).state
    assert f"{state / 1e12:.2f} TB" in text                             # 1.13 TB
    assert has_number(text, f"{training.fewest_chips(state, 'H100'):,}")      # 15


def test_case_study_table(text):
    l405 = training.llama3_405b()
    plan = training.best_training_layout(l405, "H100", 16384, global_batch=2048, seq_len=8192)
    assert plan.layout.describe() in text
    assert f"{100 * plan.mfu:.0f}%" in text
    days = 15.6e12 / plan.tokens_per_step * plan.step_time.total / DAY
    assert has_number(text, f"{days:.0f}")
    flops = training.training_flops_from_params(transformer.param_count(l405).total, 15.6e12)
    implied = training.implied_mfu(flops, "H100", chip_hours=30.84e6)
    assert f"{100 * implied:.0f}% MFU" in text or f"{100 * implied:.0f}%" in text
    for published in ("38%–41%", "3.8 × 10²⁵", "(the paper’s)"):
        assert published in text, published
    # the 6ND days and the with-attention days are both on the page, each named
    six_nd = training.run_time(flops, 16384, "H100", mfu=0.4) / DAY
    with_attn = training.run_time(plan.flops_per_step * 15.6e12 / plan.tokens_per_step, 16384,
                                  "H100", mfu=0.4) / DAY
    assert round(six_nd) != round(with_attn)
    assert f"{six_nd:.0f} at 40% (6·N·D)" in text
    assert has_number(text, f"{with_attn:.0f}")


def test_layout_by_hand_agrees_with_the_planner(text):
    l70 = transformer.llama3_70b()
    plan = training.best_training_layout(l70, "TPU v5p", 8192, global_batch=2048, seq_len=8192)
    assert (plan.layout.fsdp, plan.layout.tp) == (2048, 4)
    assert "FSDP 2,048 × TP 4" in text and plan.layout.describe() in text
    assert "Across pods" in text and "73,440" in text


def test_activations_are_the_llama_blocks(text):
    l70 = transformer.llama3_70b()
    per_tok = training.block_activation_bytes_per_token(l70, 8192)
    assert re.search(re.escape(f"{per_tok / l70.d_model:.1f}") + r"\s*·D bytes per token", text)
    none = training.activation_bytes_per_layer(l70, 1, 8192, remat="none") * 80
    assert format_bytes(none, binary=False) in text
    assert "flash-style" in text and "Korthikanti" in text


def test_scaling_law_numbers(text):
    opt = scaling_laws.compute_optimal(1e24)
    assert f"{opt.params / 1e9:.0f} billion" in text
    assert f"{opt.tokens / 1e12:.1f} trillion" in text
    # the published fit's own optimum (98 per parameter) and the re-fit's, both shown
    for fit in (scaling_laws.CHINCHILLA_FIT, scaling_laws.BESIROGLU_FIT):
        o = scaling_laws.loss_optimal(1e24, fit=fit)
        assert f"{o.params / 1e9:.0f} billion" in text and has_number(text, f"{o.tokens_per_param:,.0f}")


def test_cost_analysis_experiment_ran(text):
    match = re.search(r"XLA / formula = (\d+\.\d+)", text)
    assert match, "the experiment did not print its ratio"
    ratio = float(match.group(1))
    assert 0.95 < ratio < 1.1, ratio
    assert f"{ratio:.3f}" in text.split("XLA / formula", 1)[1]   # the prose quotes the same
    assert re.search(r"measured (fp32|bf16) matmul peak", text) and "MFU" in text


def test_worked_problems_homework_and_widget(page, text):
    assert len(re.findall(r'<details class="sd-sphinx-override sd-dropdown', page)) >= 10 or \
        page.count("sd-dropdown") >= 10
    assert "hw5-transformers.ipynb" in page
    assert len(re.findall(r"<img", page)) >= 2        # the share plot and the widget's PNG
    for section in ("Counting a Transformer", "The memory of training", "Step time and MFU",
                    "Case study", "Scaling laws in one page"):
        assert section in text, section

"""Part 7 (MoE and long context) as built: its glued numbers are the solver's, its JAX
experiment ran and its compiled AllToAll and ppermute bytes equal the solver's, and it links its
homework and shows its live widget.

Reads _build/html/book/moe-long-context.html, which `make test` builds (`make book`) first; a
missing build is a failure, not a skip.
"""

from __future__ import annotations

import pytest

from bookpage import built_page, has_number, visible_text
from scalebook import collectives, long_context as lc, moe, transformer
from scalebook.units import format_bytes, format_seconds

pytestmark = [pytest.mark.slow, pytest.mark.book]

EP, TOK = 64, 4096      # the chapter's running example: DeepSeek-V3's experts on 64 H100s


@pytest.fixture(scope="module")
def page() -> str:
    return built_page("moe-long-context")


@pytest.fixture(scope="module")
def text(page) -> str:
    return visible_text(page)


def test_counts_are_the_published_ones(text):
    mix, ds = moe.moe_param_count(moe.mixtral_8x7b()), moe.moe_param_count(moe.deepseek_v3())
    for value in (mix.total, mix.active, ds.total, ds.active):
        assert has_number(text, f"{value:,.0f}"), value
    assert has_number(text, "671.0") and has_number(text, "37.6")


def test_critical_batches_and_dispatch_are_the_solvers(text):
    assert has_number(text, f"{moe.dense_critical_batch('H100'):,.0f}")
    assert has_number(text, f"{moe.moe_critical_batch('H100', 256, 8):,.0f}")
    ds = moe.deepseek_v3()
    a2a = moe.moe_all_to_all(TOK, ds.base.d_model, ds.top_k, EP, "H100")
    for value in (format_seconds(a2a.dispatch.time), format_seconds(a2a.forward),
                  format_bytes(a2a.nbytes, binary=False)):
        assert value in text, value
    slip = collectives.collective_cost("all_gather", a2a.nbytes, EP, "H100").time
    assert format_seconds(slip) in text
    cross = moe.ep_fsdp_crossover_tokens(256, 2048, 8)
    assert has_number(text, f"{cross:,.0f}")


def test_long_context_numbers_are_the_solvers(text):
    l70 = transformer.llama3_70b()
    shape = lc.AttentionShape(n_heads=64, n_kv_heads=8, d_head=128)
    assert format_bytes(transformer.kv_cache_bytes(l70, seq_len=131072), binary=False) in text
    ring = lc.ring_attention(131072, 16, shape, "TPU v5p", zigzag=False)
    zig = lc.ring_attention(131072, 16, shape, "TPU v5p")
    for value in (format_seconds(ring.time), format_seconds(zig.time),
                  format_bytes(ring.kv_block_bytes, binary=False)):
        assert value in text, value
    assert has_number(text, f"{lc.ring_overlap_block(shape, 'TPU v5p'):,.0f}")
    assert has_number(text, f"{ring.schedule.imbalance:.2f}")


def test_serving_case_study_says_it_does_not_fit_on_one_node(text):
    ds = moe.deepseek_v3()
    assert moe.moe_max_batch(ds, "H100", context_len=131072, n_chips=8, weight_dtype="fp8") == 0
    assert "not even without a single cache" in text


def test_serving_case_study_shards_mla_as_served(text):
    ds = moe.deepseek_v3()
    kw = dict(context_len=131072, n_chips=16, weight_dtype="fp8")
    tp = moe.moe_max_batch(ds, "H100", attention="tp", **kw)
    dp = moe.moe_max_batch(ds, "H100", attention="dp", **kw)
    assert (tp, dp) == (4, 32)
    words = " ".join(text.split())
    assert f"{tp} sequences with TP attention and {dp} with DP attention" in words
    assert f"{ds.mla.decode_intensity(128):.0f} FLOPs per byte" in text
    assert "Its cache cannot be split by head" in text


def test_layouts_reality_check_and_ulysses_are_the_solvers(text):
    ds = moe.deepseek_v3()
    node = moe.expert_weight_layouts(ds, "H100", n_chips=8, tokens_per_chip=TOK)
    wide = moe.expert_weight_layouts(ds, "H100", n_chips=EP, tokens_per_chip=TOK)
    for value in (node["EP"].comm, node["TP"].comm, wide["TP"].comm):
        assert format_seconds(value) in text
    assert "Reality check" in text
    from scalebook import published
    for row in published.reality_check("moe-long-context"):
        assert f"{row.ratio:.2f}" in text
    shape = lc.AttentionShape(n_heads=64, n_kv_heads=8, d_head=128)
    assert f"{lc.ulysses_over_ring_bytes(shape, 8):.3f}" in text
    assert "Ulysses sends $1/C$ as much" not in text


def test_jax_experiment_ran_and_matched_the_solver(page, text):
    assert "per device per AllToAll: HLO 20,480 B, solver V/N = 20,480 B" in text
    assert "sends per layer: HLO 7, solver 7; bytes per send: HLO 8,192 B, solver 8,192 B" in text
    assert "max |EP - reference on kept choices| = 0.0e+00" in text
    assert "Traceback" not in page


def test_homework_widget_and_figures(page, text):
    assert "hw7-moe-long-context.ipynb" in page
    assert "data-widget=\"scalebook.live.moe\"" in page or "data-widget='scalebook.live.moe'" in page
    assert page.count("<img") >= 5     # four figures and the widget's static picture
    for n in range(1, 13):                  # twelve worked problems, each in a dropdown
        assert f"{n}. " in text
    assert "12. For Mixtral on one H100 node" in text

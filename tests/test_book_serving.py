"""Part 8 (Serving systems) as built: its glued numbers are the solver's (scalebook.service),
it holds its worked problems, figures (each with alt text), the live simulator, the JAX
experiments' printed checks and the reality check, and it leaves room for its practice set.

Reads _build/html/book/serving-systems.html, which `make test` builds (`make book`) before
pytest; a missing build is a failure, not a skip (as in test_book.py).
"""

from __future__ import annotations

import re

import pytest

from bookpage import built_page, has_number, visible_text
from scalebook import service as sv
from scalebook.service import reality
from scalebook.units import format_seconds

# The chapter's stated inputs (book/serving-systems.md): the running example.
SERVER = sv.Server(model="LLaMA-3 70B", chip="H100", n_chips=8)
PROMPT, REPLY, RATE = 1024, 256, 8.0
SLO = sv.SLO(ttft=1.0, tpot=0.050)

pytestmark = [pytest.mark.slow, pytest.mark.book]


@pytest.fixture(scope="module")
def page() -> str:
    return built_page("serving-systems")


@pytest.fixture(scope="module")
def text(page) -> str:
    return visible_text(page)


def test_hook_numbers_are_the_simulators(text):
    m = sv.step_model(SERVER)
    base = sv.simulate(SERVER, sv.Workload(arrival_rate=RATE, prompt_len=PROMPT,
                                           reply_len=REPLY), slo=SLO)
    for value in (format_seconds(m.decode_time(1, PROMPT + REPLY)), format_seconds(base.ttft(50)),
                  format_seconds(base.tpot(50)), f"{max(s.batch for s in base.samples):,}"):
        assert has_number(text, value), value


def test_one_step_formulas_on_the_page(text):
    m = sv.step_model(SERVER)
    cmp = sv.compare_batching(m, prompt_len=PROMPT, reply_min=1, reply_max=2 * REPLY - 1,
                              batch_cap=256)
    assert has_number(text, f"{cmp.gain:,.1f}")
    pc = sv.prefix_caching(m, prompt_len=2500, shared_len=2000, hit_rate=0.9)
    assert has_number(text, f"{100 * pc.compute_saved:.0f}%")
    chunk = sv.largest_chunk(m, decode_batch=64, context_len=1024, tpot_slo=0.05, prompt_len=4096)
    assert has_number(text, f"{chunk:,}")
    sp = sv.speculative_decoding(m, draft=SERVER.with_(model="LLaMA-3 8B"), batch=1,
                                 context_len=PROMPT, alpha=0.8, k=4)
    assert has_number(text, f"{sp.speedup:,.2f}")
    assert has_number(text, f"{sv.expected_tokens(0.8, 4):.2f}")


def test_worked_problems_figures_and_widget(page, text):
    for n in range(1, 15):                           # fourteen worked problems
        assert re.search(rf"\b{n}\. ", text), n
    for n in range(1, 15):
        assert f'id="serving-w{n}"' in page, n
    figures = ["fig-latency-load", "fig-kv-blocks", "fig-chunk", "fig-spec", "fig-goodput",
               "fig-kv-trace"]
    for name in figures:
        assert f'id="{name}"' in page, name
    assert page.count("<img") >= len(figures) + 1      # the figures and the widget's picture
    assert "scalebook.live.service" in page
    assert "Practice set" in text


def test_jax_experiments_ran(text):
    assert "paged vs dense attention: max |error|" in text
    assert "identical to the target's greedy output: True" in text
    assert "every request's reply equals its greedy generation alone" in text
    assert "8 devices: cpu" in text


def test_reality_check_rows(text):
    for row in reality.reality_rows():
        assert has_number(text, f"{row.ratio:.2f}"), row.gain.id
        assert row.in_band


def test_disaggregation_numbers_are_the_simulators(text):
    """Worked problem 14 (section 5) and the DistServe row of the reality check."""
    w = sv.Workload(arrival_rate=RATE, prompt_len=PROMPT, reply_len=REPLY)
    d = sv.compare_disaggregation(SERVER, w, prefill_servers=1, decode_servers=1, link="nic",
                                  slo=SLO, duration=30.0)
    assert has_number(text, f"{d.colocated_rate:,.1f}")
    assert has_number(text, f"{d.disaggregated_rate:,.1f}")
    assert has_number(text, f"{d.gain:,.2f}")
    row = next(r for r in reality.reality_rows() if r.gain.id == "distserve")
    assert has_number(text, f"{row.predicted:.1f}") and has_number(text, f"{row.ratio:.2f}")

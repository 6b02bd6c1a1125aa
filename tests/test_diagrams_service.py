"""Part 8's figures: each is drawn from the solver's objects and its alt text carries their
numbers (so a figure and its description cannot disagree)."""

from __future__ import annotations

import pytest

from scalebook import service as sv
from scalebook.diagrams import service as figs
from scalebook.picture import png_bytes, png_description

SERVER = sv.Server()


@pytest.fixture(scope="module")
def m():
    return sv.step_model(SERVER)


def _check(pic, *numbers):
    data = png_bytes(pic.figure, pic.alt, dpi=30)
    assert png_description(data) == pic.alt
    for n in numbers:
        assert n in pic.alt, (n, pic.alt)


def test_kv_blocks_alt_counts_the_slots():
    lay = sv.kv_layout([20, 33, 7], block_size=16, max_len=64)
    pic = figs.kv_blocks([20, 33, 7], block_size=16, max_len=64)
    _check(pic, f"{lay.used:,}", f"{lay.paged:,}", f"{lay.reserved:,}")


def test_chunk_and_speculation_figures(m):
    cps = [sv.chunked_prefill(m, prompt_len=2048, chunk=c, decode_batch=32, context_len=1024)
           for c in (256, 1024)]
    _check(figs.chunk_trade(cps, tpot_slo=0.05), "256", "1024")
    specs = {2: [sv.speculative_decoding(m, draft=None, batch=b, context_len=1024, alpha=0.8, k=2)
                 for b in (1, 64)]}
    pic = figs.speculation_against_batch(specs, [1, 64])
    _check(pic, f"{specs[2][0].speedup:.2f}×")


def test_trace_figures():
    runs = [sv.simulate(SERVER, sv.Workload(arrival_rate=r), duration=10) for r in (2.0, 6.0)]
    _check(figs.latency_against_load({"continuous": runs}), "2 requests/s", "6")
    _check(figs.goodput_against_load({"continuous": runs}), "continuous")
    _check(figs.kv_over_time({"paged": runs[0]}), f"{max(s.batch for s in runs[0].samples)}")

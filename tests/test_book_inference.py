"""Part 6 (Inference) as built: its glued numbers are the solver's, its case study is the one the
solver's functions give for the stated inputs, its KV-cache experiment ran and printed measured
beside predicted, and it links its homework and shows its widget.

Reads _build/html/book/inference.html, which `make test` builds (`make book`) before pytest;
a missing build is a failure, not a skip (as in test_book.py).
"""

from __future__ import annotations

import math
import re

import pytest

from bookpage import built_page, has_number, visible_text
from scalebook import inference as inf
from scalebook import get_chip, training, transformer
from scalebook.units import format_seconds


# The chapter's stated inputs (book/inference.md): the running example and the case study.
NODE, CTX, LONG, SHORT = 8, 4096, 8192, 1024
TARGET, RESERVE = 0.050, 0.10
PRICE = {"TPU v5e": 1.20, "H100": 3.00}
SIZES = {"TPU v5e": (1, 2, 4, 8, 16), "H100": (1, 2, 4, 8)}

pytestmark = [pytest.mark.slow, pytest.mark.book]


@pytest.fixture(scope="module")
def page() -> str:
    return built_page("inference")


@pytest.fixture(scope="module")
def text(page) -> str:
    return visible_text(page)



def _no_critical_batch_from(cfg, chip, **dtypes) -> int:
    """The shortest context at which the solver's critical batch is inf (scan, not bisection)."""
    s = 1
    while not math.isinf(inf.decode_critical_batch(cfg, chip, context_len=s, overlap=True,
                                                   **dtypes)):
        s += 1
    return s


@pytest.fixture(scope="module")
def models():
    return transformer.llama3_8b(), transformer.llama3_70b(), training.llama3_405b()


def test_hook_and_the_two_phases(text, models):
    _, l70, _ = models
    one = inf.decode_step(l70, "H100", batch=1, context_len=CTX, n_chips=NODE)
    many = inf.decode_step(l70, "H100", batch=64, context_len=CTX, n_chips=NODE)
    for value in (format_seconds(one.time), format_seconds(many.time), f"{one.tokens_per_s:,.0f}",
                  f"{many.tokens_per_s:,.0f}", format_seconds(one.t_memory),
                  format_seconds(one.t_compute)):
        assert has_number(text, value), value
    # 5.27 ms of HBM and 0.2 ms of one-shot/NVLS AllReduces (a 14-step ring made it 7.49 ms)
    assert one.bound == "memory" and format_seconds(one.time) == "5.44 ms"
    pf = inf.prefill(l70, "H100", prompt_len=2048, n_chips=NODE)
    assert pf.bound == "compute"
    for value in (format_seconds(pf.t_compute), format_seconds(pf.t_memory),
                  format_seconds(pf.time), f"{pf.intensity:,.0f}"):
        assert has_number(text, value), value


def test_critical_batches_are_the_solvers(text, models):
    l8, l70, _ = models
    assert has_number(text, f"{inf.decode_critical_batch(l70, 'H100'):,.0f}")            # 295
    assert has_number(text, f"{inf.decode_critical_batch(l70, 'TPU v5e'):,.0f}")         # 243
    assert has_number(text, f"{inf.decode_critical_batch(l70, 'H100', weight_dtype='int8'):,.0f}")
    for s in (256, 512, 1024):
        assert has_number(text, f"{inf.decode_critical_batch(l70, 'H100', context_len=s, overlap=True):,.0f}"), s
    assert math.isinf(inf.decode_critical_batch(l70, "H100", context_len=CTX, overlap=True))
    assert "never" in text
    # the phased model: the matmuls' B* does not move with the context, attention never turns
    assert inf.decode_critical_batch(l70, "H100", context_len=CTX, overlap=False) == \
        inf.decode_critical_batch(l70, "H100")
    assert "Attention never turns compute-bound" in text
    assert "artefact of the assumption" in text
    s_inf = _no_critical_batch_from(l70, "H100")
    assert s_inf == 1477 and has_number(text, f"{s_inf:,}")
    assert has_number(text, f"{_no_critical_batch_from(l8, 'H100'):,}")
    assert has_number(text, f"{_no_critical_batch_from(l70, 'TPU v5e'):,}")


def test_decode_as_phases_beside_the_overlapped_bound(text, models):
    _, l70, _ = models
    top = inf.max_batch(l70, "H100", context_len=SHORT, n_chips=NODE)
    st = inf.decode_step(l70, "H100", batch=top, context_len=SHORT, n_chips=NODE)
    assert st.time > 1.2 * st.time_overlapped
    assert format_seconds(st.time) in text and format_seconds(st.time_overlapped) in text  # 62 / 44 ms
    assert "lower bound" in text


def test_tp_on_real_slices_and_the_two_cache_splits(text, models):
    l8, l70, _ = models
    assert "4×2 slice" in text and "4×4" in text
    assert format_seconds(inf.tp_comm_time(l8, "TPU v5e", n_chips=8, tokens=1)) in text
    for how in inf.KV_SHARDINGS:
        b = inf.max_batch(l70, "TPU v5e", context_len=LONG, n_chips=16, weight_dtype="int8",
                          kv_sharding=how)
        st = inf.decode_step(l70, "TPU v5e", batch=b, context_len=LONG, n_chips=16,
                             weight_dtype="int8", kv_sharding=how)
        assert has_number(text, f"{b:,}") and format_seconds(st.time) in text, how
    # the N = 1 row has no AllReduces to show
    assert "0 ns" not in text


def test_kv_cache_and_max_batch_are_the_solvers(text, models):
    l8, l70, l405 = models
    for cfg in (l8, l70, l405):
        assert has_number(text, f"{inf.kv_bytes_per_token(cfg):,.0f}")
    assert has_number(text, "327,680") and "2.68 GB" in text
    assert has_number(text, f"{inf.max_batch(l70, 'H100', context_len=LONG, n_chips=NODE):,}")   # 185
    for wd, cd in (("bf16", "int8"), ("int8", "bf16"), ("int8", "int8")):
        assert has_number(text, f"{inf.max_batch(l70, 'H100', context_len=LONG, n_chips=NODE, weight_dtype=wd, cache_dtype=cd):,}")
        assert has_number(text, f"{inf.max_batch(l70, 'TPU v5e', context_len=LONG, n_chips=16, weight_dtype=wd, cache_dtype=cd):,}")
    mha = transformer.TransformerConfig(d_model=8192, n_layers=80, n_heads=64, d_ff=28672,
                                        vocab_size=128256)
    assert has_number(text, f"{inf.max_batch(mha, 'H100', context_len=LONG, n_chips=NODE):,}")


def test_latency_throughput_and_quantised_weights(text, models):
    l8, l70, _ = models
    h100, v5e = get_chip("H100"), get_chip("TPU v5e")
    assert format_seconds(h100.hbm_bytes / h100.hbm_bandwidth) in text     # 23.9 ms
    assert format_seconds(v5e.hbm_bytes / v5e.hbm_bandwidth) in text       # 19.8 ms
    top = inf.max_batch(l70, h100, context_len=SHORT, n_chips=NODE)
    end = inf.decode_step(l70, h100, batch=top, context_len=SHORT, n_chips=NODE)
    assert has_number(text, f"{top:,}") and has_number(text, f"{end.tokens_per_s_per_chip:,.0f}")
    bf16, int8 = (inf.decode_step(l8, h100, batch=1, context_len=SHORT, weight_dtype=wd)
                  for wd in ("bf16", "int8"))
    ratio = int8.time / bf16.time
    assert 0.45 < ratio < 0.55 and f"{ratio:.2f}" in text
    assert format_seconds(int8.time) in text and format_seconds(bf16.time) in text


def test_tensor_parallelism_numbers(text, models):
    l8, l70, _ = models
    assert f"{2 * l8.n_layers} per decode step for LLaMA-3 8B" in text
    assert f"{2 * l70.n_layers} for 70B" in text
    for n in (2, 4, 8):
        st = inf.decode_step(l8, "H100", batch=1, context_len=CTX, n_chips=n)
        assert format_seconds(st.t_comm) in text and format_seconds(st.time) in text, n
    eight = inf.decode_step(l8, "H100", batch=1, context_len=CTX, n_chips=8)
    # the page says they stay small inside the node (NVLS / one-shot), and that rings would
    # overtake the memory time at 8
    assert eight.t_comm < 0.2 * eight.t_memory
    ring = inf.decode_step(l8, "H100", batch=1, context_len=CTX, n_chips=8, algorithm="ring")
    assert ring.t_comm > ring.t_memory and format_seconds(ring.time) in text
    v16 = inf.decode_step(l8, "TPU v5e", batch=1, context_len=CTX, n_chips=16)
    assert format_seconds(v16.t_memory) in text and format_seconds(v16.t_comm) in text


def _case_rows(l70):
    """The case study, recomputed from its stated inputs with the solver's functions."""
    rows = {}
    for chip in ("TPU v5e", "H100"):
        for wd in ("bf16", "int8"):
            smallest = inf.smallest_slice(l70, chip, context_len=CTX, weight_dtype=wd,
                                          reserve=RESERVE, sizes=SIZES[chip])
            options = []
            for n in (s for s in SIZES[chip] if s >= smallest):
                b = inf.best_batch(l70, chip, latency_target=TARGET, context_len=CTX, n_chips=n,
                                   weight_dtype=wd, reserve=RESERVE)
                if b:
                    st = inf.decode_step(l70, chip, batch=b, context_len=CTX, n_chips=n,
                                         weight_dtype=wd)
                    cost = inf.cost_per_million_tokens(st.tokens_per_s, n_chips=n,
                                                       price_per_chip_hour=PRICE[chip])
                    options.append((cost, n, b, st))
            rows[chip, wd] = (smallest, min(options, key=lambda o: o[0]))
    return rows


def test_case_study_table(page, text, models):
    _, l70, _ = models
    rows = _case_rows(l70)
    table = text[text.index("smallest slice that fits"):text.index("The smallest slice is the wrong")]
    for (chip, wd), (smallest, (cost, n, b, st)) in rows.items():
        row = re.search(re.escape(chip) + r" " + wd + r" (.*?)(?= TPU v5e | H100 |$)", table)
        assert row, (chip, wd)
        cells = row.group(1)
        assert cells.startswith(f"{smallest} (B = "), (chip, wd, cells)
        for value in (f"{b} (HBM)", format_seconds(st.time), f"{st.tokens_per_s_per_chip:,.0f}",
                      f"${cost:.2f}"):
            assert value in cells, (chip, wd, value, cells)
    # the stated inputs are on the page, the prices as assumptions
    assert "assumptions for illustration" in text
    assert "$1.20" in text and "$3.00" in text and "50 ms per output token" in text
    # the prose's claims hold for these numbers
    assert rows["H100", "int8"][1][0] < rows["TPU v5e", "int8"][1][0]


def test_kv_cache_experiment_ran(text):
    match = re.search(r"predicted crossover B\* = (\d+\.\d); knee fit: B = (\S+), RMS log "
                      r"residual ([\d.]+) \(power law B\^(-?[\d.]+): ([\d.]+)\) -> "
                      r"(a knee|no knee the data support)", text)
    assert match, "the experiment did not print its crossover and knee fit"
    b_star = match.group(1)
    # the prose quotes the fit's quality and claims a knee only when the cell said so
    rms, slope, power, verdict = match.group(3), match.group(4), match.group(5), match.group(6)
    assert f"residual of {rms}" in text and f"{slope} and a residual of {power}" in text
    assert ("supports a knee there" in text) == (verdict == "a knee")
    assert float(b_star) > 1
    # the prose quotes the same prediction the cell printed
    assert re.search(r"put the crossover at \S* ?B\^\* = ?\S* " + re.escape(b_star) + r" sequences",
                     text), "the prose does not quote the printed B*"
    header = text.index("meas/pred")
    rows = re.findall(r"(\d+) ([\d.]+) ms ([\d.]+) ms [\d.]+ ms [\d.]+ ms ([\d.]+) ",
                      text[header:header + 2000])
    assert [int(r[0]) for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    for _, measured, predicted, ratio in rows:
        assert float(ratio) == pytest.approx(float(measured) / float(predicted), abs=0.02)
    assert "What differs on a CPU" in text


def test_worked_problems_homework_and_widget(page, text):
    assert page.count("sd-dropdown") >= 12
    assert "hw6-inference.ipynb" in page
    assert len(re.findall(r"<img", page)) >= 4   # intensity, latency-throughput, widget, experiment
    for section in ("Two phases: prefill and decode", "The KV cache", "Latency and throughput",
                    "Sharding for inference", "Disaggregated prefill and decode", "Case study",
                    "Explore it", "Run it"):
        assert section in text, section
    assert "serving_explorer" in text


def test_h100_decode_run_against_both_models(text):
    """The recorded H100 run: the page computes both predictions with today's solver from the
    run's own C and W, and names the setting where they part most with the largest cache."""
    import json
    from pathlib import Path

    from scalebook import decoding

    run = json.loads((Path(__file__).resolve().parent.parent / "book" / "data"
                      / "h100-2026-11-26.json").read_text())
    spec = run["decoder"]
    cfg = decoding.DecoderConfig(**{k: spec[k] for k in ("vocab", "d_model", "n_layers",
                                                       "n_heads", "n_kv_heads", "d_ff")})
    chip = decoding.measured_chip(run["peak_flops"], run["bandwidth"], dtype="bf16")
    dtypes = dict(weight_dtype="bf16", cache_dtype="bf16", compute_dtype="bf16")
    assert "The same decode on an H100" in text
    header = text.index("meas/phased")
    table = text[header:header + 4000]
    for sweep in run["decode"]:
        for b, seconds in zip(sweep["batches"], sweep["seconds"]):
            p = inf.decode_step(cfg.shape(), chip, batch=b, context_len=sweep["context_len"],
                                **dtypes)
            row = (rf"{sweep['context_len']} {b} {seconds * 1e3:.2f} ms {p.time * 1e3:.2f} ms "
                   rf"{p.time_overlapped * 1e3:.2f} ms")
            assert re.search(re.escape(row), table), f"row {row!r} not on the page"
    # raw closeness cannot tell the models apart; fitted with a free overhead and efficiency
    # each, the phased model has the smaller residual (scalebook.step_fit), and the knee is
    # reported with its spread beside the bend of the solver's own step
    from scalebook import step_fit

    steps, measured = [], []
    for sweep in run["decode"]:
        for b, seconds in zip(sweep["batches"], sweep["seconds"]):
            steps.append(inf.decode_step(cfg.shape(), chip, batch=b,
                                         context_len=sweep["context_len"], **dtypes))
            measured.append(seconds)
    fits = step_fit.compare_fits({"phased": [s.time for s in steps],
                                  "overlapped": [s.time_overlapped for s in steps]}, measured)
    assert fits.best == "phased"
    assert "Raw closeness cannot pick a model" in text
    for fit in fits.fits.values():
        assert f"{100 * fit.rms:.0f}%" in text and f"{fit.efficiency:.2f}" in text
    short = run["decode"][0]
    spread = decoding.knee_spread(short["batches"], short["seconds"])
    predicted = [inf.decode_step(cfg.shape(), chip, batch=b, context_len=short["context_len"],
                                 **dtypes).time for b in short["batches"]]
    for value in (spread.knee, spread.low, spread.high, min(spread.drop_one), max(spread.drop_one),
                  decoding.knee_batch(short["batches"], predicted)):
        assert has_number(text, f"{value:,.0f}"), value


"""The serving explorer driven through its controls, as a reader would: every number it shows
and every drawn bar and marker equals the solver's (scalebook.inference), the not-fit flag
appears exactly when the cache does not fit, and bad input shows a message and keeps the
picture."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest
from widget_box import Box

from scalebook import inference as inf
from scalebook.training import PRESETS
from scalebook.transformer import llama3_70b, param_count
from scalebook.units import format_seconds
from scalebook.live.serving import (
    BATCH_RANGE,
    MEMORY_KINDS,
    SERVING_CHIPS,
    curve_batches,
    memory_fractions,
    not_fit_message,
    serving_state,
)
from scalebook.live.serving import serving_chart, serving_series
from scalebook.widgets import figure as F
from scalebook.widgets.serving import serving_explorer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
L70 = llama3_70b()
P70 = param_count(L70)
H100_HBM, H100_BW, H100_FLOPS = 80e9, 3.35e12, 9.89e14


@pytest.fixture()
def explorer():
    return serving_explorer(dpi=40)


def _named(drawing) -> dict:
    """The serving figure's artists by what they show, in the order of the live view's chart
    (scalebook.live.serving.serving_chart), as scalebook.widgets.figure drew them."""
    memory, step, curve = drawing.series
    out = {f"memory/{kind}": Box(memory[i][0]) for i, (kind, _) in enumerate(MEMORY_KINDS)}
    out["hbm"] = memory[len(MEMORY_KINDS)][0]
    out["no_fit"] = Box(step[0][0])
    out.update(zip(("time", "critical", "time_now", "rate", "rate_now"),
                   (s[0] for s in step[1:])))
    out.update(zip(("curve", "curve_over", "curve_now"), (s[0] for s in curve)))
    out.update(zip(("memory_title", "time_title", "curve_title"), drawing.titles))
    out.update(zip(("heading", "flag"), drawing.texts))
    return out


def _xy(artist) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(artist.get_xdata(), float), np.asarray(artist.get_ydata(), float)


def _solver_kwargs(state) -> dict:
    return dict(context_len=state.context_len, n_chips=state.n_chips,
                weight_dtype=state.weight_dtype, cache_dtype=state.cache_dtype,
                kv_sharding=state.kv_sharding)


def _assert_matches_solver(state) -> None:
    """Every solver-made figure of ``state`` against a direct call to the solver."""
    cfg, chip = PRESETS[state.preset], state.chip.name
    kw = _solver_kwargs(state)
    assert state.decode == inf.decode_step(cfg, chip, batch=state.batch,
                                           compute_dtype=state.compute_dtype, **kw)
    assert list(state.curve) == inf.latency_throughput(
        cfg, chip, batches=curve_batches(state.batch), compute_dtype=state.compute_dtype, **kw)
    assert state.max_batch == inf.max_batch(cfg, chip, **kw)
    assert state.critical_batch == inf.decode_critical_batch(
        cfg, chip, context_len=state.context_len, weight_dtype=state.weight_dtype,
        cache_dtype=state.cache_dtype, compute_dtype=state.compute_dtype, overlap=False)
    assert state.prefill == inf.prefill(cfg, chip, prompt_len=state.prompt_len,
                                        n_chips=state.n_chips, weight_dtype=state.weight_dtype,
                                        cache_dtype=state.cache_dtype,
                                        compute_dtype=state.compute_dtype,
                                        kv_sharding=state.kv_sharding)
    assert state.weight_bytes == inf.weight_bytes(cfg, state.weight_dtype)
    assert state.kv_bytes == state.batch * state.context_len * inf.kv_bytes_per_token(
        cfg, state.cache_dtype)


def _assert_drawn(w) -> None:
    """The artists show ``w.state``: bar heights are bytes per chip over HBM, the markers sit at
    the solver's time per token and tokens/s per chip, the curves are the solver's."""
    s, a = w.state, _named(w.drawing)
    hbm = s.hbm_bytes
    expected = {"weights": s.weight_bytes / s.n_chips / hbm,
                "KV cache": s.kv_bytes / s.n_chips / hbm,
                "free": max(0.0, 1 - (s.weight_bytes + s.kv_bytes) / s.n_chips / hbm)}
    bottom = 0.0
    for kind, _ in MEMORY_KINDS:
        bar = a[f"memory/{kind}"]
        assert bar.get_y() == pytest.approx(bottom)
        assert bar.get_height() == pytest.approx(expected[kind])
        bottom += bar.get_height()
    d = s.decode
    assert tuple(_xy(a["time_now"])) == ([s.batch], [pytest.approx(d.time)])
    assert tuple(_xy(a["rate_now"])) == ([s.batch], [pytest.approx(d.batch / d.time / s.n_chips)])
    cx, cy = _xy(a["curve_now"])
    assert (cx[0], cy[0]) == (pytest.approx(d.tokens_per_s_per_chip), pytest.approx(d.time))
    bx, ty = _xy(a["time"])
    assert list(bx) == list(s.batches)
    np.testing.assert_allclose(ty, [c.time for c in s.curve])
    np.testing.assert_allclose(_xy(a["rate"])[1], [c.tokens_per_s_per_chip for c in s.curve])
    # the solid curve holds exactly the batches that fit; the dotted one the rest (plus the
    # last fitting point, so that the two join)
    fits = [c.tokens_per_s_per_chip for b, c in zip(s.batches, s.curve) if b <= s.max_batch]
    np.testing.assert_allclose(_xy(a["curve"])[0], fits)
    over = len(s.batches) - len(fits)
    assert len(_xy(a["curve_over"])[0]) == (over + 1 if fits and over else over)
    left = max(s.max_batch, BATCH_RANGE[0])
    assert a["no_fit"].get_x() == pytest.approx(left)
    assert a["no_fit"].get_width() == pytest.approx(max(0.0, BATCH_RANGE[1] - left))
    critical = _xy(a["critical"])[0]
    if math.isfinite(s.critical_batch):
        assert list(critical) == [pytest.approx(s.critical_batch)] * 2
    else:
        assert len(critical) == 0
    assert (a["flag"].get_text() != "") == (s.max_batch < s.batch)
    assert f"matmuls {d.weights_bound}-bound" in a["time_title"].get_text()
    assert w.image.value == w.png and w.png.startswith(PNG_SIGNATURE)


# --------------------------------------------------------------------------- the case study


def test_default_is_the_case_study_and_matches_the_solver(explorer):
    s = explorer.state
    assert explorer.error == ""
    assert (s.preset, s.chip.name, s.n_chips, s.context_len, s.batch) == (
        "LLaMA-3 70B", "H100", 8, 4096, 32)
    assert (s.weight_dtype, s.cache_dtype, s.compute_dtype) == ("bf16",) * 3
    _assert_matches_solver(s)
    # by hand: 141.1 GB of weights, 327,680 cache bytes per token
    assert s.weight_bytes == 2 * 70_553_706_496
    assert s.kv_bytes_per_token == 2 * 80 * 8 * 128 * 2
    assert s.kv_bytes == 32 * 4096 * 327_680
    # (640 GB − 141.1 GB) / (4,096 · 327,680 B) = 371 sequences
    assert s.max_batch == int((8 * H100_HBM - 2 * 70_553_706_496) // (4096 * 327_680)) == 371
    assert s.fits
    # the step reads every matmul weight and the 32 caches over 8 chips' HBM, then AllReduces
    t_memory = (2 * P70.matmul + 32 * 4096 * 327_680) / (8 * H100_BW)
    assert s.decode.t_memory == pytest.approx(t_memory)
    # both phases are memory-bound at B = 32, so their sum is the overlapped bound
    assert s.decode.time == pytest.approx(t_memory + s.decode.t_comm)
    assert s.decode.time == pytest.approx(s.decode.time_overlapped)
    assert s.decode.bound == s.decode.weights_bound == "memory"
    assert s.decode.tokens_per_s_per_chip == pytest.approx(32 / s.decode.time / 8)
    assert s.comm_share == pytest.approx(s.decode.t_comm / s.decode.time)
    # 0.51 ms of AllReduces (NVLS: the switch sums) in a 7.3 ms step; as 14-step rings they
    # were 2.6 ms of 9.4 ms
    assert 0.05 < s.comm_share < 0.1
    # the weight matmuls turn compute-bound at C / W_hbm sequences whatever the cache
    assert s.critical_batch == pytest.approx(H100_FLOPS / H100_BW)


def test_default_figure_and_summary(explorer):
    _assert_drawn(explorer)
    s, a = explorer.state, _named(explorer.drawing)
    assert a["flag"].get_text() == ""
    assert list(_xy(a["hbm"])[1]) == [1.0, 1.0]
    assert f"matmuls compute-bound from B* = {s.critical_batch:,.0f}" in a["time_title"].get_text()
    assert "LLaMA-3 70B" in a["heading"].get_text() and "8 × H100" in a["heading"].get_text()
    summary = explorer.summary.value
    assert "memory-bound" in summary
    assert format_seconds(s.decode.time) in summary
    assert f"{s.decode.tokens_per_s_per_chip:,.0f} tokens/s per chip" in summary
    assert f"{s.comm_share:.0%}" in summary
    assert ("attention against the cache, one new token per sequence, stays memory-bound at any "
            "batch") in summary
    assert format_seconds(s.decode.time_overlapped) in summary
    assert "371" in summary


# --------------------------------------------------------------------------- every control


@pytest.mark.parametrize("name, value, check", [
    ("batch", 64, lambda s: s.decode.tokens == 64 and s.fits),
    ("prompt_len", 128, lambda s: s.context_len == 128 + 2048),
    ("gen_len", 6144, lambda s: s.context_len == 2048 + 6144 and s.max_batch == 185),
    ("n_chips", 4, lambda s: s.decode.t_memory == pytest.approx(
        (2 * P70.matmul + 32 * 4096 * 327_680) / (4 * H100_BW))),
    ("chip", "H200", lambda s: s.hbm_bytes == 141e9 and s.max_batch == int(
        (8 * 141e9 - 2 * 70_553_706_496) // (4096 * 327_680))),
    ("chip", "TPU v5p", lambda s: s.hbm_bytes == 96e9 and s.decode.t_comm > 0),
    ("weight_dtype", "int8", lambda s: s.weight_bytes == 70_553_706_496
     and s.decode.weight_bytes == P70.matmul),
    ("weight_dtype", "fp8", lambda s: s.weight_bytes == 70_553_706_496),
    ("cache_dtype", "fp8", lambda s: s.kv_bytes_per_token == 163_840),
    ("cache_dtype", "int8", lambda s: s.kv_bytes == 32 * 4096 * 163_840),
    ("preset", "LLaMA-3 8B", lambda s: s.weight_bytes == 2 * 8_030_261_248),
    ("preset", "LLaMA-3 405B", lambda s: not s.fits and s.max_batch == 0),
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_every_control_recomputes_what_the_solver_says(explorer, name, value, check):
    before = explorer.state
    explorer.controls[name].value = value
    s = explorer.state
    assert explorer.error == ""
    assert s is not before and (s.chip.name if name == "chip" else getattr(s, name)) == value
    assert s == serving_state(**explorer.values())
    assert check(s)
    _assert_matches_solver(s)
    _assert_drawn(explorer)


def test_fp8_matmuls_run_at_the_fp8_peak(explorer):
    explorer.controls["weight_dtype"].value = "fp8"
    bf16_compute = explorer.state.decode.t_compute
    explorer.controls["compute_dtype"].value = "fp8"
    s = explorer.state
    assert explorer.error == "" and s.compute_dtype == "fp8"
    assert s.decode.t_compute == pytest.approx(s.decode.flops / (8 * 1.979e15))
    assert s.decode.t_compute == pytest.approx(bf16_compute * 9.89e14 / 1.979e15)
    _assert_matches_solver(s)
    # going back to bf16 weights puts the matmuls back to bf16 instead of refusing
    explorer.controls["weight_dtype"].value = "bf16"
    assert explorer.error == ""
    assert explorer.controls["compute_dtype"].value == "bf16"
    assert explorer.state.compute_dtype == "bf16"


def test_moving_the_batch_slides_the_point_along_the_curve(explorer):
    a = _named(explorer.drawing)
    for batch in (1, 8, 96, 256):
        explorer.controls["batch"].value = batch
        s = explorer.state
        assert s.decode == inf.decode_step(L70, "H100", batch=batch, context_len=4096, n_chips=8)
        # the point lies on the curve: its batch is one of the curve's
        i = list(s.batches).index(batch)
        assert _xy(a["time_now"])[1][0] == pytest.approx(s.curve[i].time)
        assert _xy(a["curve_now"])[0][0] == pytest.approx(s.curve[i].tokens_per_s_per_chip)
    # latency and throughput both grow with the batch
    times = [c.time for c in explorer.state.curve]
    rates = [c.tokens_per_s for c in explorer.state.curve]
    assert times == sorted(times) and rates == sorted(rates)


def test_a_short_context_marks_the_critical_batch(explorer):
    explorer.controls["prompt_len"].value = 128
    explorer.controls["gen_len"].value = 128
    s = explorer.state
    b_star = inf.decode_critical_batch(L70, "H100", context_len=256, overlap=False)
    assert math.isfinite(b_star) and s.critical_batch == pytest.approx(b_star)
    assert list(_xy(_named(explorer.drawing)["critical"])[0]) == [pytest.approx(b_star)] * 2
    assert f"B* = {b_star:,.0f}" in _named(explorer.drawing)["time_title"].get_text()
    below, above = (inf.decode_step(L70, "H100", batch=b, context_len=256, n_chips=8)
                    for b in (math.floor(b_star), math.ceil(b_star)))
    assert below.weights_bound == "memory" and above.weights_bound == "compute"
    explorer.controls["batch"].value = 512
    assert explorer.state.decode.weights_bound == "compute"
    assert "compute-bound" in explorer.summary.value


def test_a_batch_sharded_cache_halves_the_cache_per_chip_on_16_v5e(explorer):
    # LLaMA-3 70B has K = 8 KV heads: split by head, each of the 16 chips holds a copy of its
    # heads' share; split by sequence, each group of 8 chips holds half the batch.
    for name, value in (("chip", "TPU v5e"), ("n_chips", 16), ("batch", 8),
                        ("prompt_len", 1024), ("gen_len", 1024)):
        explorer.controls[name].value = value
    heads = explorer.state
    explorer.controls["kv_sharding"].value = "batch"
    batch = explorer.state
    assert explorer.error == ""
    assert heads.kv_per_chip == pytest.approx(8 * 2048 * 327_680 / 8)
    assert batch.kv_per_chip == pytest.approx(heads.kv_per_chip / 2)
    assert batch.max_batch > heads.max_batch
    _assert_matches_solver(batch)
    assert "split by batch" in _named(explorer.drawing)["heading"].get_text()


# --------------------------------------------------------------------------- the not-fit flag


@pytest.mark.parametrize("settings", [
    {"batch": 256}, {"batch": 384}, {"batch": 4096},
    {"gen_len": 6144, "batch": 192}, {"gen_len": 6144, "batch": 128},
    {"n_chips": 2, "batch": 12}, {"n_chips": 2, "batch": 16}, {"n_chips": 1, "batch": 1},
    {"cache_dtype": "fp8", "batch": 512}, {"cache_dtype": "fp8", "batch": 768},
    {"preset": "LLaMA-3 405B", "weight_dtype": "fp8", "batch": 1},
    {"preset": "LLaMA-3 405B", "chip": "B200", "weight_dtype": "fp8", "batch": 1024},
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_the_flag_appears_exactly_when_the_cache_does_not_fit(explorer, settings):
    for name, value in settings.items():
        explorer.controls[name].value = value
    s = explorer.state
    assert explorer.error == ""
    assert s.max_batch == inf.max_batch(PRESETS[s.preset], s.chip.name, **_solver_kwargs(s))
    flag = _named(explorer.drawing)["flag"].get_text()
    if s.max_batch < s.batch:
        assert not s.fits and flag
        assert "⚠" in explorer.summary.value
        if s.max_batch == 0:
            assert flag.startswith("the weights alone do not fit")
        else:
            assert flag == (f"the cache does not fit: at most {s.max_batch:,} sequences of "
                            f"{s.context_len:,} tokens")
        assert s.weights_per_chip + s.kv_per_chip > s.hbm_bytes
        assert _named(explorer.drawing)["memory/free"].get_height() == 0.0
    else:
        assert s.fits and flag == "" and "⚠" not in explorer.summary.value
        assert s.weights_per_chip + s.kv_per_chip <= s.hbm_bytes
    _assert_drawn(explorer)


def test_the_flag_turns_on_one_sequence_past_the_limit(explorer):
    explorer.controls["n_chips"].value = 2
    limit = explorer.state.max_batch
    assert limit == int((160e9 - 2 * 70_553_706_496) // (4096 * 327_680)) == 14
    explorer.controls["batch"].value = 12
    assert _named(explorer.drawing)["flag"].get_text() == ""
    explorer.controls["batch"].value = 16
    assert _named(explorer.drawing)["flag"].get_text() == (
        "the cache does not fit: at most 14 sequences of 4,096 tokens")
    assert _named(explorer.drawing)["flag"].get_color() == "#b00020"


def test_a_batch_of_exactly_the_limit_fits_and_one_more_does_not():
    at = serving_state(batch=371)
    past = serving_state(batch=372)
    assert at.max_batch == past.max_batch == 371
    assert at.fits and not past.fits
    for state, flagged in ((at, False), (past, True)):
        chart = serving_chart(serving_series(state))
        artists = _named(F.draw(F.new_figure(chart, dpi=20), chart))
        assert (artists["flag"].get_text() != "") is flagged
        assert (not_fit_message(state) != "") is flagged
        # with room for exactly 371 caches, 371 of them leave under one cache of HBM free
        free = artists["memory/free"].get_height() * state.hbm_bytes * state.n_chips
        assert free < (4096 * 327_680 if not flagged else 1e-6)


# --------------------------------------------------------------------------- presets


@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
@pytest.mark.parametrize("preset", list(PRESETS))
def test_presets_load_the_model(explorer, preset):
    explorer.controls["preset"].value = preset
    s = explorer.state
    assert s.config == PRESETS[preset]
    assert s.weight_bytes == 2 * param_count(PRESETS[preset]).total
    assert preset in explorer.summary.value or PRESETS[preset].name in explorer.summary.value
    _assert_matches_solver(s)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("steps, message", [
    ([("n_chips", 0)], "chips must be a positive integer"),
    ([("n_chips", 16)], "tensor parallelism over 16 GPUs leaves the 8-GPU NVLink node"),
    ([("chip", "A100"), ("weight_dtype", "fp8")], "A100 has no fp8 units"),
    ([("chip", "TPU v5e"), ("n_chips", 16), ("weight_dtype", "fp8")],
     "TPU v5e has no fp8 units"),
    ([("compute_dtype", "int8")], "matmuls run in int8 only with int8 weights"),
    ([("chip", "TPU v5e"), ("n_chips", 1024)], "a TPU v5e slice has at most 256 chips"),
])
@pytest.mark.slow  # builds a matplotlib widget per parameter set (many figures)
def test_bad_input_shows_a_message_and_keeps_the_picture(explorer, steps, message):
    *setup, (name, value) = steps
    for n, v in setup:
        explorer.controls[n].value = v
    assert explorer.error == ""
    good, png, artists = explorer.state, explorer.png, _named(explorer.drawing)
    heights = [artists[f"memory/{k}"].get_height() for k, _ in MEMORY_KINDS]
    explorer.controls[name].value = value
    assert message in explorer.error
    assert message in explorer.message.value
    assert explorer.state is good and explorer.png == png and explorer.image.value == png
    assert [artists[f"memory/{k}"].get_height() for k, _ in MEMORY_KINDS] == heights
    default = {"n_chips": 8, "weight_dtype": "bf16", "compute_dtype": "bf16"}
    if name in default:
        explorer.controls[name].value = default[name]
    else:
        explorer.controls["n_chips"].value = 8
    assert explorer.error == "" and explorer.message.value == ""


@pytest.mark.parametrize("kwargs, message", [
    ({"preset": "GPT-5"}, "unknown model 'GPT-5'"),
    ({"chip": "H900"}, "unknown chip 'H900'"),
    ({"batch": 0}, "batch must be a positive integer"),
    ({"prompt_len": 2.5}, "prompt length must be a positive integer"),
    ({"gen_len": -1}, "generated length must be a positive integer"),
    ({"cache_dtype": "fp4"}, "cache dtype fp4 is not offered"),
    ({"weight_dtype": "fp12"}, "unknown dtype"),
    ({"chip": "V100"}, "V100 has no bf16"),
])
def test_state_rejects_bad_input_with_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        serving_state(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"preset": "GPT-5"}, "unknown model"),
    ({"chip": "V100"}, "V100 has no bf16 units"),
    ({"weight_dtype": "fp4"}, "weight dtype fp4 is not offered"),
    ({"n_chips": 0}, "chips must be a positive integer"),
    ({"chip": "A100", "weight_dtype": "fp8"}, "A100 has no fp8 units"),
])
def test_factory_rejects_bad_initial_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        serving_explorer(dpi=20, **kwargs)


# --------------------------------------------------------------------------- drawing paths


def test_new_decades_redraw_the_axes_and_the_fast_path_matches_a_fresh_drawing(explorer):
    axes = explorer.figure.axes
    limits_70b = axes[1].get_ylim(), axes[2].get_ylim()
    s8 = serving_state(preset="LLaMA-3 8B", n_chips=1, batch=32)
    # the 8B on one chip needs other decades: the fast path declines, a full redraw follows
    assert F.update(explorer.drawing, serving_chart(serving_series(s8))) is None
    explorer.controls["n_chips"].value = 1
    explorer.controls["preset"].value = "LLaMA-3 8B"
    assert explorer.state == s8
    assert (axes[1].get_ylim(), axes[2].get_ylim()) != limits_70b
    assert axes[3].get_xlim() == axes[2].get_ylim()  # the curve's x is the throughput axis
    _assert_drawn(explorer)
    # a batch change keeps the decades: drawn by the fast path, equal to a fresh drawing
    explorer.controls["batch"].value = 96
    fresh = serving_explorer("LLaMA-3 8B", "H100", 1, batch=96, dpi=40)
    for name in ("time", "rate", "curve", "curve_over", "time_now", "rate_now", "curve_now"):
        for mine, theirs in zip(_xy(_named(explorer.drawing)[name]), _xy(_named(fresh.drawing)[name])):
            np.testing.assert_allclose(mine, theirs)
    assert fresh.png == explorer.png


def test_the_axes_are_the_whole_decades_around_the_curve(explorer):
    _, ax_time, ax_rate, ax_curve = explorer.figure.axes
    times = [c.time for c in explorer.state.curve]
    rates = [c.tokens_per_s_per_chip for c in explorer.state.curve]
    # 7.5 ms at B = 1 to 0.27 s at B = 4,096; 17 to 2,200 tokens/s per chip
    assert 1e-3 < min(times) < 1e-2 and 0.1 < max(times) < 1.0
    assert 10 < min(rates) < 100 and 1e3 < max(rates) < 1e4
    assert ax_time.get_ylim() == pytest.approx((1e-3, 1.0))
    assert ax_rate.get_ylim() == pytest.approx((10.0, 1e4))
    assert ax_curve.get_xlim() == pytest.approx((10.0, 1e4))
    assert ax_curve.get_ylim() == pytest.approx((1e-3, 1.0))
    assert ax_time.get_xlim() == pytest.approx(BATCH_RANGE)


def test_curve_batches_and_memory_fractions():
    grid = curve_batches()
    assert grid[0] == 1 and grid[-1] == 4096 and list(grid) == sorted(set(grid))
    assert 37 in curve_batches(37) and 37 not in grid
    s = serving_state()
    fractions = memory_fractions(s)
    assert fractions["weights"] == pytest.approx(2 * 70_553_706_496 / 8 / H100_HBM)
    assert sum(fractions.values()) == pytest.approx(1.0)
    assert len(serving_chart(serving_series(s))["panels"]) == 3
    assert "TPU v5e" in SERVING_CHIPS and "V100" not in SERVING_CHIPS


def test_static_pages_get_a_png_next_to_the_widget_view(explorer):
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(PNG_SIGNATURE) and png == explorer.png


def test_past_eight_chips_each_chip_holds_a_copy_of_its_heads_cache(explorer):
    """LLaMA-3 70B has 8 KV heads: on 16 TPU v5e chips the cache is split 8 ways, not 16."""
    explorer.controls["chip"].value = "TPU v5e"
    explorer.controls["n_chips"].value = 16
    explorer.controls["batch"].value = 8
    s = explorer.state
    assert explorer.error == ""
    assert s.kv_per_chip == pytest.approx(s.batch * s.context_len * 327_680 / 8)
    bar = _named(explorer.drawing)["memory/KV cache"].get_height()
    assert bar == pytest.approx(s.kv_per_chip / 16e9)
    assert s.max_batch == inf.max_batch(llama3_70b(), "TPU v5e", context_len=s.context_len,
                                        n_chips=16)

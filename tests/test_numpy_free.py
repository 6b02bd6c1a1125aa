"""scalebook's solver without NumPy: the live book runs it in Pyodide, which has none.

:mod:`scalebook._np` hands the solver modules the real NumPy when it is installed and the
scalar stand-in :mod:`scalebook._scalar_np` when it is not. The battery below (solver calls on
every chip, several dtypes and models, bad inputs included; then the widgets' scalar state and
summary functions) runs in fresh interpreters, one per mode:

- ``numpy``: NumPy as installed, the reference;
- ``blocked``: ``sys.modules["numpy"] = None`` before scalebook is imported, as in the browser;
- ``widgets``: the solver modules imported with NumPy blocked, then NumPy unblocked so that the
  widget layer (ipywidgets, matplotlib, its module-level ``np.logspace`` grids) can import; the
  widgets' scalar state functions then reach the solver through the stand-in.

Every result must be identical between modes: floats by ``repr``, ints as ints, strings and
error messages character for character. Array input under the stand-in must fail loudly.
``python tests/test_numpy_free.py MODE`` prints one mode's battery as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODES = ("numpy", "blocked", "widgets")
#: Modules that need real arrays or JAX; the browser never imports them.
ARRAY_MODULES = ("scalebook.tinytransformer", "scalebook.decoding", "scalebook.hlo",
                 "scalebook.checks", "jax")


# --------------------------------------------------------------------------- normalising

def plain(value: object) -> object:
    """``value`` as JSON that tells equal results from unequal ones across processes.

    Floats become their ``repr`` (so 0.1 + 0.2 and 0.3 differ), ints stay ints (so 4 and 4.0
    differ), NumPy scalars and 0-d arrays become their Python value, dataclasses become their
    fields plus their properties (so a property that fails is compared too).
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"@type": type(value).__name__}
        out.update({f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)})
        for name in dir(type(value)):
            if isinstance(getattr(type(value), name, None), property):
                out["@" + name] = outcome(lambda: getattr(value, name))
        return out
    if hasattr(value, "_asdict"):
        return plain(value._asdict())
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # NumPy scalars, 0-d
        return plain(value.item())
    if hasattr(value, "tolist"):  # a real array: cannot match the stand-in, which refuses
        return {"@array": plain(value.tolist())}
    return f"@repr {value!r}"


def outcome(call: Callable[[], object]) -> object:
    """``plain(call())``, or ``"ERR <type>: <message>"`` when it raises."""
    try:
        return plain(call())
    except Exception as error:  # noqa: BLE001 (every error is a result to compare)
        return f"ERR {type(error).__name__}: {error}"


# --------------------------------------------------------------------------- the batteries

#: Inputs every size check must refuse with the same words, NumPy or not.
BAD_SIZES = (0, -1, float("nan"), float("inf"), True, "4096", None, 2.5, 1 + 2j, 10**400)
#: Array inputs: real NumPy computes them, the stand-in must refuse them (ArrayInputError).
ARRAYS = ([1.0, 2.0], (64, 128), range(1, 4))


def solver_battery() -> dict[str, object]:
    """Scalar calls into every solver module the widgets import, keyed by a label."""
    from scalebook import (collectives, hardware, inference, networks, parallelism, roofline,
                           scaling_laws, training, transformer, validation)

    out: dict[str, object] = {}

    def add(label: str, call: Callable[[], object]) -> None:
        assert label not in out, label
        out[label] = outcome(call)

    models = (transformer.llama3_8b(), transformer.llama3_70b(), training.llama3_405b())
    for chip in hardware.chip_names():
        c = hardware.get_chip(chip)
        add(f"chip {chip}", lambda: c)
        for dt in ("bf16", "fp16", "fp8", "int8"):
            add(f"crit {chip} {dt}", lambda: roofline.critical_intensity(chip, dt))
            add(f"cbs {chip} {dt}", lambda: roofline.critical_batch_size(
                chip, compute_dtype="bf16", weight_dtype=dt))
            add(f"att {chip} {dt}", lambda: roofline.attainable_flops(37.5, chip, dt))
        for B, D, F in ((1, 128, 128), (64, 8192, 8192), (4096, 8192, 28672), (65536,) * 3):
            add(f"mmt {chip} {B} {D} {F}", lambda: roofline.matmul_time(B, D, F, chip))
            add(f"mmt int8 {chip} {B}", lambda: roofline.matmul_time(
                B, D, F, chip, x_dtype="bf16", w_dtype="int8"))
        add(f"wlt {chip}", lambda: roofline.weight_load_time(1.4e11, chip, n_chips=8))
        add(f"ew {chip}", lambda: roofline.elementwise_time((4096, 8192), chip))
        add(f"ccd {chip}", lambda: roofline.critical_contracting_dim(chip))
        for nbytes in (0, 1.0, 4096, 2.5e8, 1e11):
            if c.is_gpu:
                for name in ("gpu_all_gather", "gpu_reduce_scatter", "gpu_all_reduce",
                             "gpu_all_to_all"):
                    add(f"{name} {chip} {nbytes}", lambda: getattr(collectives, name)(
                        nbytes, 64, chip))
            else:
                for name in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
                    for wrap in (True, False):
                        add(f"{name} {chip} {nbytes} {wrap}", lambda: getattr(collectives, name)(
                            nbytes, 8, chip, wraparound=wrap))
                for name in ("all_gather_multi_axis", "reduce_scatter_multi_axis",
                             "all_reduce_multi_axis"):
                    add(f"{name} {chip} {nbytes}", lambda: getattr(collectives, name)(
                        nbytes, [4, 8], chip, wraparound=[True, False]))
        for cfg in models:
            m = f"{cfg.d_model} {chip}"
            for b in (1, 32, 256):
                add(f"dec {m} {b}", lambda: inference.decode_step(
                    cfg, chip, batch=b, context_len=4096, n_chips=8))
            add(f"dec int8 {m}", lambda: inference.decode_step(
                cfg, chip, batch=16, context_len=8192, n_chips=8, weight_dtype="int8",
                cache_dtype="int8"))
            add(f"pre {m}", lambda: inference.prefill(
                cfg, chip, prompt_len=2048, batch=4, n_chips=8))
            add(f"dcb {m}", lambda: inference.decode_critical_batch(
                cfg, chip, context_len=4096, n_chips=8))
            add(f"mb {m}", lambda: inference.max_batch(cfg, chip, context_len=4096, n_chips=8))
            add(f"ss {m}", lambda: inference.smallest_slice(cfg, chip, context_len=4096,
                                                            batch=16))
            add(f"lt {m}", lambda: inference.latency_throughput(
                cfg, chip, batches=[1, 8, 64, 512], context_len=4096, n_chips=8))
            add(f"fc {m}", lambda: training.fewest_chips(6.49e12, chip, headroom=0.1))
        add(f"axbw {chip}", lambda: parallelism.axis_bandwidth(chip))
        add(f"cbf {chip}", lambda: parallelism.critical_batch_per_chip_fsdp(chip, n_axes=3))
        add(f"mtp {chip}", lambda: parallelism.max_tensor_parallel(chip, 32768))
        for strategy in ("dp", "fsdp", "tp", "fsdp_tp"):
            add(f"mccb {chip} {strategy}", lambda: parallelism.max_chips_compute_bound(
                16e6, chip, strategy, d_ff=32768, n_axes=3))
        add(f"rt {chip}", lambda: training.run_time(3.8e25, 16384, chip, mfu=0.4))

    for cfg in models:
        m = str(cfg.d_model)
        add(f"pc {m}", lambda: transformer.param_count(cfg))
        add(f"tf {m}", lambda: transformer.training_flops(
            cfg, 1.5e13, include_attention=True, seq_len=8192))
        for ctx in (1, 2048, 131072):
            add(f"fpt {m} {ctx}", lambda: transformer.flops_per_token(cfg, ctx))
        add(f"kv {m}", lambda: transformer.kv_cache_bytes(cfg, seq_len=8192, batch=4))
        add(f"acc {m}", lambda: transformer.attention_crossover_context(cfg))
        for remat in training.REMAT_MODES:
            add(f"tm {m} {remat}", lambda: training.training_memory(
                cfg, precision=training.MIXED_PRECISION_ADAM, global_batch=2048,
                seq_len=8192, remat=remat))
        for layout in (dict(fsdp=256, tp=8), dict(dp=2, fsdp=64, tp=8, pp=2, microbatches=8,
                                                  remat="full", zero_stage=1)):
            add(f"plan {m} {layout}", lambda: training.plan_training(
                cfg, training.TrainingLayout(**layout), "TPU v5p", global_batch=2048,
                seq_len=8192, n_chips=2048))
    add("best layout", lambda: training.best_training_layout(
        transformer.llama3_8b(), "H100", 64, global_batch=256, seq_len=4096))

    stack = parallelism.MLPStack(d_model=8192, d_ff=32768, n_layers=4)
    for name, args in (("data_parallel", (8,)), ("fsdp", (256,)), ("tensor_parallel", (8,)),
                       ("fsdp_tensor_parallel", (64, 4)), ("pipeline_parallel", (4, 16))):
        add(f"par {name}", lambda: getattr(parallelism, name)(stack, "TPU v5p", 1e6, *args))
    add("par best", lambda: parallelism.best_layout(stack, "TPU v5p", 1e6, 1024))
    add("par ofd", lambda: parallelism.optimal_fsdp_degree(1e6, 1024, 32768))
    for k, mb in ((1, 1), (4, 4), (4, 16), (8, 63), (2.5, 4)):
        add(f"bubble {k} {mb}", lambda: parallelism.pipeline_bubble_fraction(k, mb))
    add("minmb", lambda: parallelism.min_microbatches(8, 0.1))

    su = networks.H100_SUPERPOD_SU
    add("net levels", lambda: networks.levels(su))
    add("net bisection", lambda: networks.bisection_bandwidth(networks.H100_SUPERPOD))
    for name in ("cluster_all_gather", "cluster_reduce_scatter", "cluster_all_reduce",
                 "cluster_all_to_all"):
        for nbytes in (0, 1e6, 1e10):
            add(f"{name} {nbytes}", lambda: getattr(networks, name)(nbytes, networks.H100_SUPERPOD))

    for flops in (1e21, 3.8e25):
        add(f"co {flops}", lambda: scaling_laws.compute_optimal(flops))
        add(f"loss {flops}", lambda: scaling_laws.chinchilla_loss(7e10, 1.5e13))
    add("tpp", lambda: scaling_laws.tokens_per_param(8e9, 15e12))
    add("tb", lambda: roofline.time_bounds(1e12, 1e9, flops_per_s=1e14, bytes_per_s=1e12))
    add("tb zero", lambda: roofline.time_bounds(0, 0, flops_per_s=1e14, bytes_per_s=1e12))

    for bad in BAD_SIZES:
        b = repr(bad)[:12]
        add(f"bad dec {b}", lambda: inference.decode_step(
            transformer.llama3_8b(), "H100", batch=bad, context_len=4096))
        add(f"bad mmc {b}", lambda: roofline.matmul_cost(bad, 8, 8))
        add(f"bad pos {b}", lambda: validation.positive(bad, "size"))
        add(f"bad posint {b}", lambda: validation.positive_int(bad, "count"))
        add(f"bad ag {b}", lambda: collectives.all_gather(bad, 8, "TPU v5e"))
        add(f"bad fc {b}", lambda: training.fewest_chips(bad, "H100"))
        add(f"bad co {b}", lambda: scaling_laws.compute_optimal(bad))
        add(f"bad bubble {b}", lambda: parallelism.pipeline_bubble_fraction(bad, 4))
        add(f"bad wlt {b}", lambda: roofline.weight_load_time(1e9, "H100", n_chips=bad))
    add("bad chip", lambda: roofline.matmul_time(8, 8, 8, "H1000"))
    add("bad dtype", lambda: roofline.critical_intensity("H100", "bf17"))
    return out


def array_battery() -> dict[str, object]:
    """Array inputs: real NumPy computes them; the stand-in refuses each one."""
    from scalebook import collectives, roofline, scaling_laws, validation

    out = {}
    for array in ARRAYS:
        out[f"positive {array!r}"] = outcome(lambda: validation.positive(array, "size"))
        out[f"matmul_cost {array!r}"] = outcome(lambda: roofline.matmul_cost(array, 8, 8))
        out[f"all_gather {array!r}"] = outcome(lambda: collectives.all_gather(array, 8, "TPU v5e"))
        out[f"compute_optimal {array!r}"] = outcome(lambda: scaling_laws.compute_optimal(array))
    return out


def widget_battery() -> dict[str, object]:
    """The widgets' scalar state, summary and per-point functions for many control states."""
    from scalebook.live import comparison as C
    from scalebook.live import roofline as R
    from scalebook.training import PRESETS
    from scalebook.live import layout_planner as LP
    from scalebook.live import serving as SE
    from scalebook.live import sharded_matmul as SM
    from scalebook.live import calculator as TC

    out: dict[str, object] = {}

    def add(label: str, call: Callable[[], object]) -> None:
        assert label not in out, label
        out[label] = outcome(call)

    for chip, compare in (("TPU v5e", "H100"), ("H100", ""), ("B200", "TPU v6e"), ("V100", None)):
        for B, D, F, x, w, per in ((1, 8192, 8192, "bf16", "bf16", False),
                                   (64, 8192, 28672, "bf16", "int8", False),
                                   (4096, 4096, 4096, "fp8", "fp8", False),
                                   (100.5, 1024, 4096, "bf16", "bf16", True)):
            key = f"{chip} {compare} {B} {D} {F} {x} {w} {per}"
            kw = dict(B=B, D=D, F=F, x_dtype=x, w_dtype=w, per_example=per, compare=compare)
            add(f"roofline_state {key}", lambda: R.roofline_state(chip, **kw))
            add(f"roofline_summary {key}", lambda: R.roofline_summary(R.roofline_state(chip, **kw)))
            for b in (1.0, 300.0, 65536.0):
                add(f"utilisation {key} {b}", lambda: R.utilisation(
                    R.roofline_state(chip, **kw), R.roofline_state(chip, **kw).main, b))
    for bad in (dict(B=0), dict(D=float("nan")), dict(F="8"), dict(x_dtype="bf17")):
        add(f"roofline bad {bad}", lambda: R.roofline_state("H100", **bad))

    for chips, metric, log in (((("TPU v5e", "TPU v5p", "H100", "B200")), "flops:bf16", False),
                               (("V100", "A100", "TPU v4"), "flops:fp8", True),
                               (("H100",), "hbm_bytes", False), ((), "flops:bf16", False),
                               (("H100",), "nonsense", False)):
        add(f"comparison_state {chips} {metric} {log}", lambda: C.comparison_state(
            chips, metric, log=log))
        add(f"comparison_html {chips} {metric} {log}", lambda: C.comparison_html(
            C.comparison_state(chips, metric, log=log)))

    for preset in PRESETS:
        cfg = PRESETS[preset]
        model = {f: getattr(cfg, f) for f in TC.MODEL_FIELDS}
        for extra in (dict(), dict(seq_len=131072, tokens_trillions=2.5, chip="TPU v5p",
                                   n_chips=4096, mfu=0.55, remat="selective", global_batch=512),
                      dict(chip="A100", n_chips=1, remat="none"), dict(mfu=1.5),
                      dict(seq_len=0), dict(tokens_trillions=float("inf"))):
            key = f"{preset} {extra}"
            add(f"calculator_state {key}", lambda: TC.calculator_state(
                preset=preset, **model, **extra))
            add(f"calculator_summary {key}", lambda: TC.calculator_summary(
                TC.calculator_state(preset=preset, **model, **extra)))
            add(f"param_fractions {key}", lambda: TC.param_fractions(
                TC.calculator_state(preset=preset, **model, **extra)))

        for chip, n_chips, layout in (
                ("TPU v5p", 2048, dict(fsdp=256, tp=8)),
                ("H100", 1024, dict(dp=4, fsdp=32, tp=8, pp=1, zero_stage=1, remat="full")),
                ("H100", 1024, dict(fsdp=16, tp=8, pp=8, microbatches=16, remat="selective")),
                ("TPU v5e", 256, dict(dp=256, zero_stage=0)),
                ("TPU v5p", 2048, dict(fsdp=300))):
            key = f"{preset} {chip} {n_chips} {layout}"
            kw = dict(preset=preset, **{f: getattr(cfg, f) for f in LP.MODEL_FIELDS},
                      seq_len=8192, global_batch=2048, chip=chip, n_chips=n_chips, **layout)
            add(f"planner_state {key}", lambda: LP.planner_state(**kw))
            add(f"planner_summary {key}", lambda: LP.planner_summary(LP.planner_state(**kw)))
            add(f"ideal_step {key}", lambda: LP.ideal_step(LP.planner_state(**kw).plan))

        for chip, n_chips, dtypes, batch in (
                ("H100", 8, ("bf16", "bf16", "bf16"), 32), ("TPU v5e", 16, ("int8", "int8", "bf16"), 64),
                ("B200", 4, ("fp8", "fp8", "fp8"), 256), ("TPU v5e", 1, ("bf16", "bf16", "bf16"), 1),
                ("TPU v5e", 64, ("fp8", "bf16", "bf16"), 8), ("H100", 16, ("bf16", "bf16", "bf16"), 8),
                ("H100", 8, ("int8", "bf16", "fp8"), 8), ("H100", 0, ("bf16",) * 3, 8)):
            key = f"{preset} {chip} {n_chips} {dtypes} {batch}"
            kw = dict(preset=preset, chip=chip, n_chips=n_chips, prompt_len=2048, gen_len=1024,
                      batch=batch, weight_dtype=dtypes[0], cache_dtype=dtypes[1],
                      compute_dtype=dtypes[2])
            add(f"serving_state {key}", lambda: SE.serving_state(**kw))
            add(f"serving_summary {key}", lambda: SE.serving_summary(SE.serving_state(**kw)))
            add(f"memory_fractions {key}", lambda: SE.memory_fractions(SE.serving_state(**kw)))
            add(f"not_fit_message {key}", lambda: SE.not_fit_message(SE.serving_state(**kw)))

    for chip in ("TPU v5e", "TPU v5p", "H100"):
        for layout, (mesh, lhs, rhs, res) in SM.LAYOUTS.items():
            dtypes = ("bf16", "fp8", "int8") if chip == "H100" else ("bf16", "int8", "bf16")
            for dtype, wrap in zip(dtypes, (True, "auto", False)):
                key = f"{chip} {layout} {dtype} {wrap}"
                kw = dict(mesh=mesh, lhs=lhs, rhs=rhs, out=res, dtype=dtype, wraparound=wrap,
                          layout=layout)
                add(f"sharded_state {key}", lambda: SM.sharded_matmul_state(chip, **kw))
                add(f"sharded_summary {key}", lambda: SM.sharded_matmul_summary(
                    SM.sharded_matmul_state(chip, **kw)))
                for kind in SM.KINDS:
                    for nbytes in (1e2, 3.3e6, 1e11):
                        add(f"curve point {key} {kind} {nbytes}", lambda: SM.sharded_matmul_state(
                            chip, **kw).curve(kind, nbytes))
    for bad in (dict(mesh="X=3"), dict(mesh="X=0"), dict(lhs="A[B_Q, D]"), dict(B=4095),
                dict(rhs="W[D_X, F]{U_X}"), dict(axis="Z"), dict(dtype="fp64"),
                dict(dtype="fp8")):
        add(f"sharded bad {bad}", lambda: SM.sharded_matmul_state("TPU v5e", **bad))
    return out


def run_mode(mode: str) -> dict[str, object]:
    """Set up ``mode`` (see the module docstring), then run the batteries it covers."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode in ("blocked", "widgets"):
        sys.modules["numpy"] = None  # type: ignore[assignment]  # `import numpy` now fails
    import scalebook
    from scalebook import (_np, collectives, inference, networks, parallelism,  # noqa: F401
                           roofline, scaling_laws, sharding, topology, training, transformer,
                           units, validation)

    result: dict[str, object] = {
        "np": _np.np.__name__,
        "have_numpy": _np.HAVE_NUMPY,
        "version": scalebook.__version__,
        "loaded": sorted(m for m in sys.modules if m.startswith("scalebook") or m in ARRAY_MODULES),
    }
    if mode == "widgets":
        del sys.modules["numpy"]  # the widget layer (matplotlib, grids) imports the real one
    if mode in ("numpy", "blocked"):
        result["solver"] = solver_battery()
        result["arrays"] = array_battery()
    if mode in ("numpy", "widgets"):
        result["widgets"] = widget_battery()
    return result


# --------------------------------------------------------------------------- running the modes

@pytest.fixture(scope="module")
def battery() -> dict[str, dict]:
    """Each mode's battery, from its own fresh interpreter."""
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    results = {}
    for mode in MODES:
        proc = subprocess.run([sys.executable, __file__, mode], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{mode}:\n{proc.stderr[-4000:]}"
        results[mode] = json.loads(proc.stdout)
    return results


def differences(reference: dict, other: dict) -> list[str]:
    """Labels whose results differ (or exist in only one), each with both results."""
    return [f"{label}:\n  numpy:    {reference.get(label)!r}\n  stand-in: {other.get(label)!r}"
            for label in sorted(set(reference) | set(other))
            if reference.get(label, "<missing>") != other.get(label, "<missing>")]


def test_each_mode_runs_on_the_numpy_it_claims(battery):
    assert battery["numpy"]["np"] == "numpy" and battery["numpy"]["have_numpy"] is True
    for mode in ("blocked", "widgets"):
        assert battery[mode]["np"] == "scalebook._scalar_np", mode
        assert battery[mode]["have_numpy"] is False, mode


def test_the_solver_gives_identical_results_without_numpy(battery):
    reference, scalar = battery["numpy"]["solver"], battery["blocked"]["solver"]
    assert len(reference) >= 1000
    errors = [label for label, value in reference.items() if str(value).startswith("ERR")]
    # the battery is mostly real results; the errors are the deliberate bad inputs
    assert len(errors) < len(reference) / 5, errors
    assert any(label.startswith("bad ") for label in errors)
    assert not differences(reference, scalar), "\n".join(differences(reference, scalar)[:20])


def test_the_widgets_scalar_states_are_identical_on_the_stand_in(battery):
    reference, scalar = battery["numpy"]["widgets"], battery["widgets"]["widgets"]
    assert len(reference) >= 500
    assert sum(str(v).startswith("ERR") for v in reference.values()) < len(reference) / 5
    assert not differences(reference, scalar), "\n".join(differences(reference, scalar)[:20])


def test_array_input_without_numpy_is_refused_loudly(battery):
    reference, scalar = battery["numpy"]["arrays"], battery["blocked"]["arrays"]
    assert set(reference) == set(scalar) and len(scalar) == 4 * len(ARRAYS)
    computed = [label for label, value in reference.items() if not str(value).startswith("ERR")]
    assert len(computed) >= 2 * len(ARRAYS)  # real NumPy does compute these
    for label, value in scalar.items():
        assert value.startswith("ERR ArrayInputError: scalebook is running without NumPy"), label


def test_without_numpy_no_array_module_is_imported(battery):
    loaded = battery["blocked"]["loaded"]
    assert "scalebook.roofline" in loaded and "scalebook._scalar_np" in loaded
    assert not set(loaded) & set(ARRAY_MODULES), loaded


# --------------------------------------------------------------------------- the stand-in itself

def _same(ours: object, theirs: object) -> bool:
    """Equal value and kind: NaN equals NaN; an int is not a float."""
    import numpy

    if isinstance(theirs, str) or isinstance(ours, str):
        return str(ours) == str(theirs)
    if isinstance(theirs, (bool, numpy.bool_)):
        return bool(ours) == bool(theirs) and isinstance(ours, bool)
    if math.isnan(float(theirs)):
        return math.isnan(float(ours))
    integral = isinstance(theirs, numbers.Integral)
    return float(ours) == float(theirs) and isinstance(ours, numbers.Integral) == integral


NAN, INF = math.nan, math.inf
SCALAR_CASES = [
    ("maximum", (1.0, 2.0)), ("maximum", (3, 2)), ("maximum", (1, 2.5)), ("maximum", (NAN, 1.0)),
    ("maximum", (1.0, NAN)), ("maximum", (-0.0, 0.0)), ("minimum", (1.0, 2.0)),
    ("minimum", (2, 3)), ("minimum", (INF, 5.0)), ("minimum", (1.0, NAN)),
    ("where", (True, "compute", "comms")), ("where", (False, "compute", "comms")),
("sqrt", (16.0,)), ("sqrt", (2,)), ("sqrt", (INF,)),
    ("floor", (2.7,)), ("floor", (-2.5,)), ("floor", (INF,)), ("clip", (0.3, 1.0, 8)),
    ("clip", (12.0, 1.0, 8)), ("clip", (4.0, 1.0, 8)), ("isfinite", (INF,)),
    ("isfinite", (3,)), ("isnan", (NAN,)), ("isnan", (1.0,)), ("isinf", (-INF,)),
    ("any", (0.0,)), ("all", (2.0,)), ("ndim", (3.5,)), ("shape", (7,)),
]


@pytest.mark.parametrize("name, args", SCALAR_CASES, ids=[f"{n}{a}" for n, a in SCALAR_CASES])
def test_stand_in_matches_numpy_on_scalars(name, args):
    import numpy

    from scalebook import _scalar_np

    ours, theirs = getattr(_scalar_np, name)(*args), getattr(numpy, name)(*args)
    if name == "shape":
        assert ours == theirs == ()
    else:
        assert _same(ours, theirs), (ours, theirs)
        assert numpy.ndim(theirs) == getattr(ours, "ndim", 0) == 0


def test_stand_in_sqrt_of_a_negative_is_nan_like_numpy():
    import numpy

    from scalebook import _scalar_np

    with numpy.errstate(invalid="ignore"):
        assert math.isnan(numpy.sqrt(-1.0)) and math.isnan(_scalar_np.sqrt(-1.0))


def test_stand_in_zero_d_values_behave_like_numpys():
    import numpy

    from scalebook import _scalar_np as snp

    for value, dtype in ((2.5, float), (7, None), (3.0, None), ("comms", None), ("12", float)):
        ours, theirs = snp.asarray(value, dtype=dtype), numpy.asarray(value, dtype=dtype)
        assert (ours.ndim, ours.size, ours.shape) == (theirs.ndim, theirs.size, theirs.shape)
        assert ours.item() == theirs.item() and type(ours.item()) is type(theirs.item())
    assert math.isnan(snp.asarray(None, dtype=float)) and math.isnan(
        numpy.asarray(None, dtype=float))
    assert type(snp.floor(7.9).astype(snp.int64).item()) is int
    assert snp.floor(7.9).astype(snp.int64) == 7
    assert str(snp.where(True, "compute", "comms")) == "compute"
    assert snp.full((), 5, dtype=snp.int64).item() == 5
    assert isinstance(snp.int64(3), snp.integer) and not isinstance(3, snp.integer)
    assert isinstance(snp.float64(3.0), snp.floating) and not isinstance(3.0, snp.floating)
    assert not isinstance(snp.asarray(1.0), snp.ndarray)


@pytest.mark.parametrize("bad", ["abc", object(), {"a": 1}, 1 + 2j, 10**400])
def test_stand_in_refuses_non_numbers_with_numpys_exception_types(bad):
    import numpy

    from scalebook import _scalar_np as snp

    with pytest.raises((TypeError, ValueError, OverflowError)) as theirs:
        numpy.asarray(bad, dtype=float)
    with pytest.raises(theirs.type):
        snp.asarray(bad, dtype=float)


@pytest.mark.parametrize("call", [
    lambda s: s.asarray([1.0, 2.0], dtype=float), lambda s: s.asarray((1, 2)),
    lambda s: s.maximum([1.0], 2.0), lambda s: s.minimum(1.0, (2.0,)), lambda s: s.ndim([1]),
    lambda s: s.shape(range(3)), lambda s: s.isfinite([1.0]), lambda s: s.sqrt([4.0]),
    lambda s: s.full((3,), 1.0), lambda s: s.where([True], 1.0, 2.0),
    lambda s: s.asarray(__import__("numpy").ones(2)),
], ids=["asarray-list", "asarray-tuple", "maximum", "minimum", "ndim", "shape", "isfinite",
        "sqrt", "full", "where", "ndarray"])
def test_stand_in_refuses_every_array(call):
    from scalebook import _scalar_np as snp

    with pytest.raises(snp.ArrayInputError, match="running without NumPy|cannot build an array"):
        call(snp)
    assert not issubclass(snp.ArrayInputError, (TypeError, ValueError))


@pytest.mark.parametrize("body, message", [
    ("raise ImportError('numpy is broken')", "numpy is broken"),
    ("import a_dependency_numpy_lacks_xyz", "a_dependency_numpy_lacks_xyz"),
])
def test_a_broken_numpy_is_not_mistaken_for_a_missing_one(tmp_path, body, message):
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text(body + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", "import scalebook.roofline"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr[-2000:]


if __name__ == "__main__":
    json.dump(run_mode(sys.argv[1]), sys.stdout, indent=0, sort_keys=True)

"""Run the book's measuring experiments on a real accelerator and record the raw timings.

The chapters execute their experiments on whatever JAX finds; the book itself is built on a CPU.
This script runs the same measurements (Part 1's matmul sweep, Part 6's decode sweep at a short
and at long contexts) on an accelerator, with the accelerator-sized settings the chapters name,
and writes the raw numbers with their provenance to a JSON file. The chapters read that file to
set a real GPU's timings beside the solver's predictions, which they compute at build time: the
file holds measurements only, never a predicted value.

    python bench/accelerator_runs.py OUT.json

Commit a run under a new name (``book/data/<device>-<date>.json``) and point the chapters at it:
the book's execution cache is keyed on the cells' code, so a page re-runs when the name it
reads changes, not when a file's contents do.

Nothing here runs in the tests (they never need an accelerator).
"""
from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from scalebook import decoding


def matmul_sweep(dtype=jnp.bfloat16, d: int = 8192) -> dict:
    """Part 1: one [B, D] · [D, F] matmul per batch, D = F = d."""
    matmul = jax.jit(jnp.dot)
    key = jax.random.key(0)
    w = jax.random.normal(key, (d, d), dtype)
    batches = [2 ** k for k in range(14)]
    times = []
    for b in batches:
        x = jax.random.normal(key, (b, d), dtype)
        times.append(decoding.median_time(matmul, x, w, repeats=20))
    return {"d_model": d, "d_ff": d, "batches": batches, "seconds": times}


def decode_sweep(cfg: decoding.DecoderConfig, params: dict, context_len: int,
                 batches: list[int], dtype=jnp.bfloat16) -> dict:
    """Part 6: one jitted decode step per batch, with a random cache of context_len tokens."""
    times = [decoding.time_decode_step(params, cfg, batch=b, context_len=context_len,
                                       dtype=dtype, repeats=10) for b in batches]
    return {"context_len": context_len, "batches": batches, "seconds": times}


def main(out: str) -> None:
    device = jax.devices()[0]
    dtype = jnp.bfloat16
    started = time.perf_counter()
    cfg = decoding.DecoderConfig(vocab=32768, d_model=4096, n_layers=4, n_heads=32,
                                 n_kv_heads=8, d_ff=14336)
    params = decoding.init_params(cfg, dtype)
    weight_bytes = decoding.matmul_weight_count(params) * jnp.dtype(dtype).itemsize
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        gpu = "unknown"
    record = {
        "provenance": {
            "date": datetime.date.today().isoformat(),
            "device_kind": device.device_kind, "platform": device.platform,
            "nvidia_smi": gpu, "jax": jax.__version__, "python": platform.python_version(),
            "script": "bench/accelerator_runs.py",
        },
        "dtype": "bf16",
        "peak_flops": decoding.measure_peak_flops(8192, dtype, repeats=20),
        "bandwidth": decoding.measure_bandwidth(2e9, dtype, repeats=20),
        "bandwidth_probe_bytes": 2e9,
        "matmul": matmul_sweep(dtype),
        "decoder": {"vocab": cfg.vocab, "d_model": cfg.d_model, "n_layers": cfg.n_layers,
                    "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads, "d_ff": cfg.d_ff,
                    "weight_bytes": weight_bytes},
        "decode": [
            decode_sweep(cfg, params, 128, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]),
            # where the weight matmuls turn compute-bound while attention still reads a large
            # cache: the sum of phases and the overlapped roofline part ways here
            decode_sweep(cfg, params, 1024, [1, 4, 16, 64, 128, 256, 512, 1024]),
            decode_sweep(cfg, params, 4096, [1, 2, 4, 8, 16, 32, 64, 128, 256]),
            decode_sweep(cfg, params, 16384, [1, 2, 4, 8, 16, 32, 64]),
        ],
    }
    record["provenance"]["wall_seconds"] = round(time.perf_counter() - started, 1)
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record["provenance"]))
    print(f"C = {record['peak_flops'] / 1e12:.1f} TFLOP/s, W = {record['bandwidth'] / 1e12:.2f} TB/s")
    for sweep in record["decode"]:
        print(sweep["context_len"], [f"{t * 1e3:.2f}" for t in sweep["seconds"]])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "accelerator_runs.json")

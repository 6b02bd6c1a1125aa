"""Benchmark: the Part 6 decode experiment on whatever device JAX finds, with the knee fit.

    python bench/decode_knee.py            # on a GPU or TPU: bf16, the chapter's 2 GB model

Measures the device's C (a square bf16 matmul) and W (a sum over a vector as large as the
weights), times one decode step at each batch, and prints each beside
``scalebook.inference.decode_step`` for a "chip" with the measured C and W (both the phased
time and the overlapped bound), then ``decoding.knee_fit``: the knee, its RMS log residual, the
power law's slope and residual, and whether the data support a knee. Prints ratios measured
side by side in one run; asserts nothing.

Seen once on the project's lent H100 (2026-11-26, the same model, batches 1 to 2,048, two
sweeps): C = 6.9e14 FLOP/s, W = 2.4e12 B/s, solver B* = 284; the knee fit put the bend at
213-284 with an RMS log residual of 0.13-0.17 against 0.29-0.38 for a power law (supported in
three of four fits at the 0.15 threshold); measured/phased 1.5-2.0 (the small model's fixed
costs), and at B = 2,048 the measured step (9.5 ms) sat nearer the phased model (7.7 ms) than
the overlapped bound (6.0 ms). The CPU build machine's timings bend smoothly instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from scalebook import decoding, inference


def main() -> None:
    device = jax.devices()[0]
    on_cpu = device.platform == "cpu"
    dtype, name = (jnp.float32, "fp32") if on_cpu else (jnp.bfloat16, "bf16")
    if on_cpu:
        cfg = decoding.DecoderConfig(vocab=4096, d_model=768, n_layers=4, n_heads=12,
                                     n_kv_heads=4, d_ff=2048)
        context_len, batches = 64, [1, 2, 4, 8, 16, 32, 64]
    else:
        cfg = decoding.DecoderConfig(vocab=32768, d_model=4096, n_layers=4, n_heads=32,
                                     n_kv_heads=8, d_ff=14336)
        context_len, batches = 128, [1, 4, 16, 64, 128, 256, 512, 1024]
    params = decoding.init_params(cfg, dtype)
    shape = cfg.shape()
    weight_bytes = decoding.matmul_weight_count(params) * jnp.dtype(dtype).itemsize
    C = decoding.measure_peak_flops(1024 if on_cpu else 8192, dtype)
    W = decoding.measure_bandwidth(weight_bytes, dtype)
    chip = decoding.measured_chip(C, W, dtype=name)
    kw = dict(weight_dtype=name, cache_dtype=name, compute_dtype=name)
    b_star = inference.decode_critical_batch(shape, chip, context_len=context_len,
                                             overlap=False, **kw)
    print(f"device {device.platform} {device.device_kind!r} {name}: C = {C:.3e} FLOP/s, "
          f"W = {W:.3e} B/s, weights {weight_bytes / 1e9:.2f} GB, B* = {b_star:.1f}")
    times = []
    print(f"{'B':>5} {'measured ms':>12} {'phased ms':>10} {'overlap ms':>10} {'meas/phased':>11}")
    for b in batches:
        m = decoding.time_decode_step(params, cfg, batch=b, context_len=context_len, dtype=dtype)
        p = inference.decode_step(shape, chip, batch=b, context_len=context_len, **kw)
        times.append(m)
        print(f"{b:>5} {m * 1e3:>12.3f} {p.time * 1e3:>10.3f} {p.time_overlapped * 1e3:>10.3f} "
              f"{m / p.time:>11.2f}")
    fit = decoding.knee_fit(batches, times)
    print(f"knee fit: B = {fit.knee:.1f}, RMS log residual {fit.rms:.3f}; power law "
          f"B^{fit.slope:.2f}, residual {fit.power_law_rms:.3f}; supported: {fit.supported}")


if __name__ == "__main__":
    main()

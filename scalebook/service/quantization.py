"""Quantization for serving: what storing and multiplying in fewer bits does to the roofline.

- **Weight-only int4** (AWQ, Lin et al. MLSys 2024; GPTQ, Frantar et al. ICLR 2023): weights
  stored in 4 bits and widened to bf16 in the kernel. Decode is memory-bound, so its step reads
  a quarter of the bytes; prefill is compute-bound and gains nothing (the widening is not
  priced here). Accuracy: within about a point on common benchmarks for 4-bit at 70B scale, worse
  for small models (the papers' tables).
- **W8A8 / fp8** (SmoothQuant, Xiao et al. ICML 2023; fp8 on Hopper): weights and activations
  in 8 bits run the matmuls at the chip's 8-bit peak, twice bf16: the compute-bound prefill and
  large-batch decode speed up; weights are half the bytes too.
- **int8/fp8 KV cache**: half the cache bytes: twice the tokens fit and attention reads half.

Each scheme is a triple (weights, cache, compute) of dtypes passed to the step model.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .. import inference
from ..validation import positive_int
from .steps import Server, step_model

__all__ = ["SCHEMES", "QuantizedServing", "quantized_serving"]

#: Serving quantization schemes: name -> (weight_dtype, cache_dtype, compute_dtype).
SCHEMES: Mapping[str, tuple[str, str, str]] = MappingProxyType({
    "bf16": ("bf16", "bf16", "bf16"),
    "int4 weights (AWQ/GPTQ)": ("int4", "bf16", "bf16"),
    "W8A8 int8": ("int8", "bf16", "int8"),
    "fp8 weights+activations": ("fp8", "bf16", "fp8"),
    "fp8 + fp8 KV cache": ("fp8", "fp8", "fp8"),
})


@dataclass(frozen=True)
class QuantizedServing:
    """A server under one scheme (see :func:`quantized_serving`).

    Attributes:
        scheme: the scheme's name.
        weight_bytes: bytes of the weights (one copy).
        batch_fits: sequences of ``context_len`` tokens whose cache fits.
        decode_step: decode step at ``batch`` (or ``batch_fits`` if smaller) (s).
        prefill: prefill of one ``prompt_len`` prompt (s).
        tokens_per_s: ``batch / decode_step`` (output tokens/s, the slice).
        cost_per_million: decode cost per million output tokens (the server's price).
    """

    scheme: str
    weight_bytes: float
    batch_fits: int
    decode_step: float
    prefill: float
    tokens_per_s: float
    cost_per_million: float


def quantized_serving(server: Server, scheme: str, *, batch: int, context_len: int,
                      prompt_len: int) -> QuantizedServing:
    """Price ``server`` under ``scheme`` (a key of :data:`SCHEMES`) at ``batch`` sequences of
    ``context_len`` cached tokens (capped by what fits) and a ``prompt_len`` prefill."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    w, c, x = SCHEMES[scheme]
    srv = server.with_(weight_dtype=w, cache_dtype=c, compute_dtype=x)
    model = step_model(srv)
    s = positive_int(context_len, "context_len")
    fits = int(model.kv_capacity_tokens // s)
    b = min(positive_int(batch, "batch"), fits)
    if b < 1:
        raise ValueError(f"not one sequence of {s} tokens fits under {scheme}")
    step = model.decode_time(b, b * s)
    rate = b / step
    return QuantizedServing(
        scheme=scheme, weight_bytes=inference.weight_bytes(srv.config, w), batch_fits=fits,
        decode_step=step, prefill=model.prefill_time(positive_int(prompt_len, "prompt_len")),
        tokens_per_s=rate,
        cost_per_million=inference.cost_per_million_tokens(
            rate, n_chips=srv.n_chips, price_per_chip_hour=srv.price_per_chip_hour))

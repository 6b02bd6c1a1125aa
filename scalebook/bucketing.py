"""Data parallelism's mechanics: gradient buckets reduced while the backward pass runs.

A data-parallel step must AllReduce every gradient (``G`` bytes per replica). Frameworks do
not wait for the whole backward pass: PyTorch DDP groups gradients into buckets of ``S`` bytes
(``bucket_cap_mb``, 25 MB by default) in reverse layer order and launches a bucket's AllReduce
as soon as its last gradient exists; Megatron's ``overlap_grad_reduce`` does the same per
bucket of its contiguous gradient buffer. The model here:

- the backward pass of length ``T_b`` produces gradient bytes at a uniform rate, so bucket
  ``i`` (of ``k = ceil(G/S)``) is ready at ``t_i = T_b · min(1, i·S/G)``;
- buckets are reduced one at a time, in order, on one communication stream, each taking
  ``c(S)`` = :func:`scalebook.collectives.collective_cost` ("AllReduce", ``S`` bytes), which
  includes the per-step latency that makes small buckets expensive;
- bucket ``i`` finishes at ``f_i = max(t_i, f_{i−1}) + c(S_i)``;
- the **exposed** time is ``max(0, f_k − T_b)``: what the step waits for after its last
  backward matmul.

The last bucket is ready only at ``T_b``, so at least ``c(S_last)`` is always exposed: small
buckets shorten that tail but pay the latency ``k`` times; large buckets pay it once but start
late. **Gradient accumulation** with ``no_sync`` (DDP) reduces only after the last of ``M``
microbatches, so the window it hides behind is that microbatch's backward pass, ``T_b / M``;
reducing after every microbatch instead hides each reduction behind its own microbatch but
sends ``M`` times the bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scalebook.collectives import collective_cost
from scalebook.hardware import Chip, get_chip
from scalebook.validation import positive, positive_int

__all__ = ["BucketTimeline", "bucket_timeline", "exposed_gradient_reduction",
           "accumulation_exposed", "DDP_DEFAULT_BUCKET_BYTES"]

DDP_DEFAULT_BUCKET_BYTES = 25 * 2**20
"""PyTorch DDP's default ``bucket_cap_mb=25`` (MiB), in bytes."""


@dataclass(frozen=True)
class BucketTimeline:
    """One backward pass's gradient reduction: ``n_buckets`` of ``bucket_bytes`` (the last may
    be smaller), ``per_bucket`` seconds per full bucket's AllReduce, ``finish`` (s after the
    backward pass began) and ``exposed`` = ``max(0, finish − backward_time)`` seconds."""

    n_buckets: int
    bucket_bytes: float
    per_bucket: float
    backward_time: float
    finish: float
    exposed: float


def bucket_timeline(gradient_bytes: float, bucket_bytes: float, backward_time: float,
                    n_replicas: int, chip: Chip | str, **collective_options) -> BucketTimeline:
    """The bucketed AllReduce of ``gradient_bytes`` over ``n_replicas`` chips behind a backward
    pass of ``backward_time`` seconds (module docstring). ``collective_options`` go to
    :func:`scalebook.collectives.collective_cost` (e.g. ``gpus_per_node``)."""
    G = float(positive(gradient_bytes, "gradient_bytes"))
    S = min(float(positive(bucket_bytes, "bucket_bytes")), G)
    T = float(positive(backward_time, "backward_time"))
    n = positive_int(n_replicas, "n_replicas")
    chip = get_chip(chip)
    k = math.ceil(G / S - 1e-9)
    full = float(collective_cost("AllReduce", S, [n], chip, **collective_options).time)
    last_bytes = G - (k - 1) * S
    last = (full if last_bytes == S else
            float(collective_cost("AllReduce", last_bytes, [n], chip,
                                  **collective_options).time))
    finish = 0.0
    for i in range(1, k + 1):
        ready = T * min(1.0, i * S / G)
        finish = max(ready, finish) + (last if i == k else full)
    return BucketTimeline(n_buckets=k, bucket_bytes=S, per_bucket=full, backward_time=T,
                          finish=finish, exposed=max(0.0, finish - T))


def exposed_gradient_reduction(gradient_bytes: float, bucket_bytes: float, backward_time: float,
                               n_replicas: int, chip: Chip | str,
                               **collective_options) -> float:
    """Seconds of gradient AllReduce left after the backward pass: ``bucket_timeline(...)
    .exposed``."""
    return bucket_timeline(gradient_bytes, bucket_bytes, backward_time, n_replicas, chip,
                           **collective_options).exposed


def accumulation_exposed(gradient_bytes: float, bucket_bytes: float, backward_time: float,
                         microbatches: int, n_replicas: int, chip: Chip | str, *,
                         no_sync: bool = True, **collective_options) -> float:
    """Exposed reduction seconds per step of ``M = microbatches`` accumulated microbatches, the
    whole step's backward pass taking ``backward_time`` seconds.

    ``no_sync=True`` (DDP's ``no_sync`` / reduce once): one reduction, hidden only behind the
    last microbatch's backward pass, ``T_b / M``. ``no_sync=False``: ``M`` reductions, each
    behind its own microbatch's ``T_b / M`` (``M`` times the bytes on the wire).
    """
    M = positive_int(microbatches, "microbatches")
    window = float(positive(backward_time, "backward_time")) / M
    one = exposed_gradient_reduction(gradient_bytes, bucket_bytes, window, n_replicas, chip,
                                     **collective_options)
    return one if no_sync else M * one

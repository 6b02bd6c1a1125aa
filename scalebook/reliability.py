"""Failures at scale: checkpoint size and write time, interruption rates, the checkpoint
interval, and the goodput that is left.

Everything is per training job, in SI units (bytes, seconds, bytes/s). The model is the
first-order one of Young (1974, "A first order approximation to the optimum checkpoint
interval", CACM 17(9)) and Daly (2006, "A higher order estimate of the optimum
checkpoint interval for restart dumps", FGCS 22(3)):

- failures arrive at random (a Poisson process) with mean time between them ``M`` for the
  whole synchronous job: one chip's failure stops every chip, so ``M_job = M_chip / N``;
- a checkpoint stalls training for ``δ`` seconds every ``τ`` seconds of work;
- a failure costs a restart ``R`` (detect, reschedule, reload) plus, on average, half an
  interval of lost work, ``(τ + δ) / 2``.

Then the fraction of wall-clock time that trains (*goodput*) is, to first order in
``(τ + δ)/M`` and ``R/M``::

    goodput ≈ τ / (τ + δ) · (1 − (R + (τ + δ)/2) / M)

and the interval that maximises it is Young's ``τ* = sqrt(2 δ M)`` (valid for ``δ ≪ M``).
**Asynchronous checkpointing** copies the state to host memory (stall ``δ`` = the copy over
PCIe) and writes it to storage in the background; the lost work on a failure grows by the write
time, which this model adds to the half-interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scalebook.hardware import Chip, get_chip
from scalebook.training import MIXED_PRECISION_ADAM, PrecisionPolicy
from scalebook.validation import positive, positive_int

__all__ = [
    "SECONDS_PER_DAY",
    "checkpoint_bytes",
    "checkpoint_write_time",
    "job_mtbf",
    "mtbf_from_interruptions",
    "young_interval",
    "goodput",
    "CheckpointPlan",
    "checkpoint_plan",
]

SECONDS_PER_DAY = 86_400.0


def checkpoint_bytes(n_params: float, precision: PrecisionPolicy = MIXED_PRECISION_ADAM) -> float:
    """Bytes of a full training checkpoint: ``P · (b_weights + b_optimizer)``.

    Weights in the policy's dtype plus the optimizer state (master copy and moments); gradients
    are not saved (they are rebuilt by the next step). Mixed-precision Adam: 2 + 12 = 14 bytes
    per parameter, so LLaMA-3 405B (405e9 parameters) writes 5.67e12 bytes.
    """
    if not isinstance(precision, PrecisionPolicy):
        raise ValueError(f"precision must be a PrecisionPolicy, got {type(precision).__name__}")
    return float(positive(n_params, "n_params")) * (precision.weight_bytes
                                                    + precision.optimizer_bytes)


def checkpoint_write_time(nbytes: float, write_bandwidth: float) -> float:
    """Seconds to write ``nbytes`` at ``write_bandwidth`` bytes/s (the storage system's
    sustained aggregate write rate, or all chips' host links if those are slower)."""
    return float(positive(nbytes, "nbytes")) / float(positive(write_bandwidth, "write_bandwidth"))


def job_mtbf(chip_mtbf: float, n_chips: int) -> float:
    """Mean seconds between interruptions of a synchronous job of ``n_chips``:
    ``M_chip / N`` (independent failures; any one stops the job)."""
    return float(positive(chip_mtbf, "chip_mtbf")) / positive_int(n_chips, "n_chips")


def mtbf_from_interruptions(n_interruptions: int, seconds: float) -> float:
    """Observed mean seconds between interruptions: ``seconds / n``. The LLaMA 3 405B run saw
    419 unexpected interruptions in 54 days on 16,384 H100s (Grattafiori et al. 2024, Table 5):
    54 · 86,400 / 419 = 11,135 s, about 3.1 hours."""
    return float(positive(seconds, "seconds")) / positive_int(n_interruptions, "n_interruptions")


def young_interval(checkpoint_stall: float, mtbf: float) -> float:
    """Young's optimal seconds of work between checkpoints: ``τ* = sqrt(2 δ M)`` with ``δ`` the
    seconds a checkpoint stalls training and ``M`` the job's mean seconds between failures."""
    stall = float(positive(checkpoint_stall, "checkpoint_stall"))
    return math.sqrt(2.0 * stall * float(positive(mtbf, "mtbf")))


def goodput(interval: float, checkpoint_stall: float, mtbf: float, restart: float, *,
            background_write: float = 0.0) -> float:
    """Fraction of wall-clock time that trains (module docstring), first order in 1/M::

        goodput = τ/(τ + δ) · (1 − (R + (τ + δ)/2 + w) / M)

    ``interval`` τ (s of work between checkpoints), ``checkpoint_stall`` δ (s training stops per
    checkpoint; may be 0), ``mtbf`` M (s), ``restart`` R (s per failure), ``background_write``
    w (s an asynchronous write runs after the stall: a failure during it loses one more
    interval's worth, charged here as w). Clipped at 0 when failures outrun progress.
    """
    tau = float(positive(interval, "interval"))
    delta = float(positive(checkpoint_stall, "checkpoint_stall", allow_zero=True))
    M = float(positive(mtbf, "mtbf"))
    R = float(positive(restart, "restart", allow_zero=True))
    w = float(positive(background_write, "background_write", allow_zero=True))
    lost = (R + (tau + delta) / 2.0 + w) / M
    return max(0.0, tau / (tau + delta) * (1.0 - lost))


@dataclass(frozen=True)
class CheckpointPlan:
    """A checkpointing scheme priced: bytes, stall and background write per checkpoint (s), the
    interval (s), the job's MTBF (s) and the resulting goodput (fraction)."""

    nbytes: float
    stall: float
    background_write: float
    interval: float
    mtbf: float
    goodput: float


def checkpoint_plan(n_params: float, n_chips: int, chip: Chip | str, *, mtbf: float,
                    restart: float, write_bandwidth: float, asynchronous: bool = False,
                    precision: PrecisionPolicy = MIXED_PRECISION_ADAM) -> CheckpointPlan:
    """Price checkpointing ``n_params`` sharded over ``n_chips`` chips at Young's interval.

    Synchronous: the stall is the whole write, ``δ = bytes / write_bandwidth``. Asynchronous:
    the stall is each chip's copy of its shard to host memory over PCIe,
    ``δ = bytes / (N · pcie_bandwidth)``, and the write (``bytes / write_bandwidth``) runs in
    the background; a new checkpoint cannot start before the last write ends, so the interval
    is ``max(τ*, write)``. ``mtbf`` is the job's (see :func:`job_mtbf`), ``restart`` R in seconds.
    """
    chip = get_chip(chip)
    n = positive_int(n_chips, "n_chips")
    nbytes = checkpoint_bytes(n_params, precision)
    write = checkpoint_write_time(nbytes, write_bandwidth)
    if asynchronous:
        stall, background = nbytes / (n * chip.pcie_bandwidth), write
    else:
        stall, background = write, 0.0
    tau = max(young_interval(stall, mtbf), background)
    return CheckpointPlan(nbytes=nbytes, stall=stall, background_write=background, interval=tau,
                          mtbf=float(mtbf),
                          goodput=goodput(tau, stall, mtbf, restart, background_write=background))

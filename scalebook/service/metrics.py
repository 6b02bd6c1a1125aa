"""From a step to a service: latency metrics, SLOs, goodput, Little's law and the prefill queue.

A request arrives at ``t_arrive`` with a prompt of ``T`` tokens and wants a reply of ``R``
tokens. The server hands back its first token at ``t_first`` and its last at ``t_done``:

    TTFT    = t_first − t_arrive                    time to first token (s)
    TPOT    = (t_done − t_first) / (R − 1)          time per output token after the first (s)
    latency = t_done − t_arrive = TTFT + (R − 1)·TPOT                      (s)

A service level objective (:class:`SLO`) bounds TTFT and TPOT; **goodput** is the rate of
requests that meet both (requests/s), throughput the rate of all finished requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..validation import positive

__all__ = ["SLO", "RequestResult", "percentile", "little_queue", "md1_wait", "mm1_wait",
           "prefill_queue_ttft", "goodput_of", "attainment"]


@dataclass(frozen=True)
class SLO:
    """Service level objectives: ``ttft`` and ``tpot`` bounds (s each), and optionally ``tbt``,
    a bound on the longest time between two tokens of a request (s; Sarathi-Serve's SLO is a
    tail of this gap: a prefill that stalls the decoders breaks it while the mean TPOT barely
    moves)."""

    ttft: float = 1.0
    tpot: float = 0.05
    tbt: float | None = None

    def __post_init__(self) -> None:
        positive(self.ttft, "ttft")
        positive(self.tpot, "tpot")
        if self.tbt is not None:
            positive(self.tbt, "tbt")


@dataclass(frozen=True)
class RequestResult:
    """One finished request: arrival, first token and last token times (s), its lengths, and
    the longest time between two of its tokens (s; 0 if unknown or one token)."""

    arrive: float
    first: float
    done: float
    prompt_len: int
    reply_len: int
    max_gap: float = 0.0

    @property
    def ttft(self) -> float:
        """``first − arrive`` (s)."""
        return self.first - self.arrive

    @property
    def tpot(self) -> float:
        """``(done − first) / (R − 1)`` (s per token); 0 for a one-token reply."""
        return (self.done - self.first) / (self.reply_len - 1) if self.reply_len > 1 else 0.0

    @property
    def latency(self) -> float:
        """``done − arrive`` (s)."""
        return self.done - self.arrive

    def meets(self, slo: SLO) -> bool:
        """Whether the TTFT and TPOT bounds hold (and the gap bound, if the SLO has one)."""
        return (self.ttft <= slo.ttft and self.tpot <= slo.tpot
                and (slo.tbt is None or self.max_gap <= slo.tbt))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values``, interpolating linearly between order
    statistics (NumPy's default): position ``(n − 1)·q/100`` in the sorted list. NaN if empty."""
    if not 0.0 <= float(q) <= 100.0:
        raise ValueError(f"q must be a percentage in [0, 100], got {q!r}")
    xs = sorted(float(v) for v in values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * float(q) / 100.0
    i = int(pos)
    if i + 1 >= len(xs):
        return xs[-1]
    return xs[i] + (pos - i) * (xs[i + 1] - xs[i])


def little_queue(arrival_rate: float, mean_time_in_system: float) -> float:
    """Little's law: requests in the system on average, ``L = λ · W`` (λ in requests/s, W in s).

    5 requests/s each in the server for 20 s on average: 100 in flight, which is the batch a
    continuous-batching server must hold.
    """
    return positive(arrival_rate, "arrival_rate") * positive(mean_time_in_system,
                                                             "mean_time_in_system")


def _utilisation(arrival_rate: float, service_time: float) -> float:
    rho = positive(arrival_rate, "arrival_rate") * positive(service_time, "service_time")
    if rho >= 1.0:
        raise ValueError(f"the queue is unstable: utilisation λ·s = {rho:.3g} ≥ 1 "
                         "(arrivals outrun the server)")
    return rho


def md1_wait(arrival_rate: float, service_time: float) -> float:
    """Mean wait in an M/D/1 queue (Poisson arrivals, fixed service time ``s``), before service:
    ``W_q = ρ·s / (2·(1 − ρ))`` with ``ρ = λ·s`` (Pollaczek–Khinchine) (s). Raises for ρ ≥ 1."""
    rho = _utilisation(arrival_rate, service_time)
    return rho * service_time / (2.0 * (1.0 - rho))


def mm1_wait(arrival_rate: float, service_time: float) -> float:
    """Mean wait in an M/M/1 queue (exponential service of mean ``s``): ``ρ·s / (1 − ρ)`` (s)."""
    rho = _utilisation(arrival_rate, service_time)
    return rho * service_time / (1.0 - rho)


def prefill_queue_ttft(arrival_rate: float, prefill_time: float) -> float:
    """Mean TTFT when prompts queue for a prefill server that takes one at a time:
    ``md1_wait(λ, t_prefill) + t_prefill`` (s). It grows as ``1 / (1 − ρ)`` as the load
    ``ρ = λ·t_prefill`` nears 1: a prefill of 0.1 s at 9 requests/s waits 0.45 s."""
    return md1_wait(arrival_rate, prefill_time) + prefill_time


def goodput_of(results: Sequence[RequestResult], slo: SLO, duration: float) -> float:
    """Requests per second that met ``slo``: ``#{meets} / duration`` (requests/s)."""
    d = positive(duration, "duration")
    return sum(1 for r in results if r.meets(slo)) / d


def attainment(results: Sequence[RequestResult], slo: SLO) -> float:
    """Fraction of ``results`` meeting ``slo`` (0–1); 0 for none."""
    n = len(results)
    return sum(1 for r in results if r.meets(slo)) / n if n else 0.0



"""Capacity planning: the rate a server sustains within its SLOs, and the chips a target needs.

All three answers come from :func:`~.simulator.simulate`, so a worked problem's number and the
widget's agree. Following DistServe (Zhong et al., OSDI 2024), a server's **goodput** is the
highest arrival rate at which a target share (90% by default) of requests meet both SLOs;
:func:`max_rate` finds it by bisection over ``λ`` with a fixed seed (the answer is a property of
that trace, good to the bisection's tolerance and the trace's noise, a few percent for a 60 s
trace).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from ..validation import positive, positive_int
from .metrics import SLO
from .simulator import Scheduler, SimResult, Workload, simulate
from .steps import Server, step_model

__all__ = ["goodput", "meets_slo", "max_rate", "max_rate_where", "bisect_rate", "CapacityPlan",
           "chips_needed"]


def goodput(server: Server, workload: Workload, scheduler: Scheduler = Scheduler(), *,
            slo: SLO = SLO(), duration: float = 60.0, seed: int = 0) -> float:
    """Requests per second meeting ``slo`` in a simulated trace (:attr:`SimResult.goodput`)."""
    return simulate(server, workload, scheduler, slo=slo, duration=duration, seed=seed).goodput


def meets_slo(server: Server, workload: Workload, scheduler: Scheduler = Scheduler(), *,
              slo: SLO = SLO(), target: float = 0.9, duration: float = 60.0,
              seed: int = 0) -> bool:
    """Whether at least ``target`` of the requests (0–1) meet ``slo`` in the simulated trace."""
    t = positive(target, "target")
    return simulate(server, workload, scheduler, slo=slo, duration=duration,
                    seed=seed).attainment >= t


def max_rate_where(server: Server, workload: Workload, scheduler: Scheduler,
                   ok: Callable[[SimResult], bool], *, slo: SLO = SLO(),
                   duration: float = 60.0, seed: int = 0, tolerance: float = 0.02,
                   rate_max: float = 1000.0) -> float:
    """The highest arrival rate (requests/s) whose simulated trace satisfies ``ok`` (a test on
    the :class:`SimResult`), assuming it holds below a rate where it holds; 0 if not even
    ``λ = 0.01`` passes. Bisection on a log scale to ``tolerance`` (relative); the workload's
    own rate is ignored."""
    model = step_model(server)

    def passes(rate: float) -> bool:
        w = Workload(arrival_rate=rate, prompt_len=workload.prompt_len,
                     reply_len=workload.reply_len, distribution=workload.distribution,
                     shared_prefix=workload.shared_prefix,
                     prefix_hit_rate=workload.prefix_hit_rate)
        return ok(simulate(server, w, scheduler, slo=slo, duration=duration, seed=seed,
                           model=model))

    return bisect_rate(passes, tolerance=tolerance, rate_max=rate_max)


def bisect_rate(passes: Callable[[float], bool], *, tolerance: float = 0.02,
                rate_max: float = 1000.0) -> float:
    """The highest rate (requests/s) at which ``passes(rate)`` holds, assuming it holds below
    any rate where it holds: doubling from 0.01, then bisection on a log scale to
    ``tolerance`` (relative); 0 if not even 0.01 passes. Behind :func:`max_rate_where` and
    :func:`~.disaggregated.compare_disaggregation`."""
    lo = 0.01
    if not passes(lo):
        return 0.0
    hi = lo
    while hi < rate_max and passes(hi * 2.0):
        hi *= 2.0
    lo, hi = hi, min(hi * 2.0, rate_max)
    if hi <= lo:
        return lo
    while hi / lo > 1.0 + positive(tolerance, "tolerance"):
        mid = math.sqrt(lo * hi)
        if passes(mid):
            lo = mid
        else:
            hi = mid
    return lo


def max_rate(server: Server, workload: Workload, scheduler: Scheduler = Scheduler(), *,
             slo: SLO = SLO(), target: float = 0.9, duration: float = 60.0, seed: int = 0,
             tolerance: float = 0.02, rate_max: float = 1000.0) -> float:
    """The highest ``λ`` (requests/s) at which ``target`` of the requests meet ``slo``: the
    server's goodput in DistServe's sense (:func:`max_rate_where` with that test). 0 if not
    even ``λ = 0.01`` does."""
    t = positive(target, "target")
    return max_rate_where(server, workload, scheduler, lambda r: r.attainment >= t, slo=slo,
                          duration=duration, seed=seed, tolerance=tolerance, rate_max=rate_max)


@dataclass(frozen=True)
class CapacityPlan:
    """Chips for a target rate (see :func:`chips_needed`).

    Attributes:
        n_chips: chips per replica (the tensor-parallel slice).
        rate_per_replica: :func:`max_rate` of one replica (requests/s).
        replicas: ``ceil(target_rate / rate_per_replica)``.
        cost_per_hour: ``replicas · n_chips · price``.
    """

    n_chips: int
    rate_per_replica: float
    replicas: int
    cost_per_hour: float

    @property
    def chips(self) -> int:
        """``replicas · n_chips``."""
        return self.replicas * self.n_chips


def chips_needed(server: Server, workload: Workload, target_rate: float,
                 scheduler: Scheduler = Scheduler(), *, slo: SLO = SLO(), target: float = 0.9,
                 slice_sizes: Sequence[int] = (1, 2, 4, 8), duration: float = 60.0,
                 seed: int = 0) -> list[CapacityPlan]:
    """For each slice size, the replicas of ``server`` needed to serve ``target_rate``
    requests/s within ``slo``, cheapest first. A slice size whose replica cannot meet the SLO
    at any rate (or cannot hold the model) is left out. Replicas are independent (a load
    balancer splits the Poisson stream, which stays Poisson)."""
    rate = positive(target_rate, "target_rate")
    plans = []
    for n in slice_sizes:
        srv = server.with_(n_chips=positive_int(n, "slice size"))
        try:
            r = max_rate(srv, workload, scheduler, slo=slo, target=target, duration=duration,
                         seed=seed)
        except ValueError:
            continue
        if r <= 0:
            continue
        replicas = math.ceil(rate / r)
        plans.append(CapacityPlan(n_chips=srv.n_chips, rate_per_replica=r, replicas=replicas,
                                  cost_per_hour=replicas * srv.n_chips * srv.price_per_chip_hour))
    return sorted(plans, key=lambda p: (p.cost_per_hour, p.n_chips))

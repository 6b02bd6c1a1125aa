"""Disaggregated prefill and decode (DistServe, Zhong et al., OSDI 2024; Splitwise, Patel et al.,
ISCA 2024): prompts are prefilled on one pool of servers, replies decoded on another, and each
request's cache crosses a link in between.

A request arrives (Poisson, rate ``λ``), goes to one of ``P`` **prefill servers**, which run
the simulator's loop (:func:`~.simulator.run_trace`) on prompts alone: its first token comes out
there, so its TTFT is the prefill queue plus the prefill pass. Its prompt's cache then crosses to
one of ``D`` **decode servers**:

    t_transfer = T · max(c_p / n_p, c_d / n_d) / W_link                      (s)

with ``c`` a server's cache bytes per token (its copies past ``K`` chips included,
:attr:`StepModel.kv_bytes_per_token`), ``n`` its chips and ``W_link`` one chip's link bandwidth,
one way: every chip sends or receives its own shard over its own link at once, and the busier
side sets the time. ``W_link`` is NVLink when the two pools share a node and the node's NIC
share per GPU when they do not (:mod:`scalebook.topology`). A decode server receives one cache
at a time (transfers to it queue; transfers to different decode servers overlap), and the
transfer starts when the prefill ends (not overlapped layer by layer, as Splitwise does: a
first cut that overcharges a long prompt's hand-off). The decode server runs the same loop as a
decode-only server: the request is admitted when its cache fits, without a prefill pass, and
decodes its other ``R − 1`` tokens, so its TPOT includes the hand-off and the decode queue.

What is assumed, in one place:

- dispatch is round-robin: arrivals to the prefill servers in turn, prefilled requests to the
  decode servers in the order their prefills end (a real router picks the least loaded; this is
  the simplest balanced rule, and :func:`simulate_replicas` deals colocated replicas the same
  way, so a comparison is like for like);
- a prefill server releases a prompt's cache when its prefill ends (the transfer is short beside
  it) and nothing pushes back on the prefill pool when the decode pool is full: a request waits
  in the decode server's queue;
- each server is a :class:`~.steps.Server` priced by the same step model as everywhere in this
  package (phases run one after another, nothing overlapped).

:func:`compare_disaggregation` sets ``P`` prefill and ``D`` decode servers against ``P + D``
colocated replicas of the same server (equal chips) and reports each one's goodput in
DistServe's sense (:func:`~.capacity.max_rate`'s: the highest ``λ`` at which 90% of requests
meet both SLOs), per chip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..topology import gpu_node
from ..validation import positive, positive_int
from .capacity import bisect_rate
from .metrics import SLO, RequestResult, attainment, percentile
from .simulator import Scheduler, SimResult, Workload, draw_requests, run_trace
from .steps import Server, StepModel, step_model

__all__ = ["link_bandwidth", "transfer_time", "PoolResult", "simulate_replicas",
           "simulate_disaggregated", "Disaggregation", "compare_disaggregation"]


def link_bandwidth(server: Server, link: str | float) -> float:
    """One chip's bandwidth for the cache hand-off, one way (bytes/s): ``"nvlink"`` (the pools
    share a node: the GPU's NVLink), ``"nic"`` (they do not: the node's NIC share per GPU), or a
    number of bytes/s. 450 GB/s and 50 GB/s on an H100 node."""
    if isinstance(link, str):
        node = gpu_node(server.chip)
        if link == "nvlink":
            return node.nvlink_bandwidth_per_gpu
        if link == "nic":
            return node.scale_out_bandwidth_per_gpu
        raise ValueError(f"link must be 'nvlink', 'nic' or bytes/s, got {link!r}")
    return positive(link, "link")


def transfer_time(prefill: StepModel, decode: StepModel, prompt_len: float,
                  bandwidth: float) -> float:
    """Moving a ``T``-token prompt's cache from a prefill server to a decode server (s):
    ``T · max(c_p/n_p, c_d/n_d) / W`` (see the module docstring). LLaMA-3 70B on 8 H100s each
    side, 1,024 tokens: 0.33 GB over 8 NVLinks of 450 GB/s, 0.09 ms; over the NICs, 0.8 ms."""
    per_chip = max(prefill.kv_bytes_per_token / prefill.server.n_chips,
                   decode.kv_bytes_per_token / decode.server.n_chips)
    return positive(prompt_len, "prompt_len", allow_zero=True) * per_chip / positive(
        bandwidth, "bandwidth")


@dataclass(frozen=True)
class PoolResult:
    """A simulated trace of a pool of servers (colocated replicas, or prefill and decode pools).

    Attributes:
        requests: the finished requests (arrival, first token, last token), in order of arrival.
        arrived: requests that arrived in ``[0, duration)``.
        end: when the last server stopped (s; at least ``duration``).
        slo: the SLO the metrics test.
        chips: chips in the pool.
        servers: each server's own :class:`SimResult` (prefill servers first).
        transfer: mean cache hand-off per request, queueing for the link included (s; 0 for
            colocated replicas).
    """

    requests: tuple[RequestResult, ...]
    arrived: int
    end: float
    slo: SLO
    chips: int
    servers: tuple[SimResult, ...]
    transfer: float = 0.0

    @property
    def goodput(self) -> float:
        """Requests per second that met the SLO: ``#meeting / end``."""
        return sum(1 for r in self.requests if r.meets(self.slo)) / self.end

    @property
    def attainment(self) -> float:
        """Share of the arrived requests that finished within the SLO (0–1)."""
        if not self.arrived:
            return 1.0
        return attainment(self.requests, self.slo) * len(self.requests) / self.arrived

    @property
    def throughput(self) -> float:
        """Finished requests per second: ``finished / end``."""
        return len(self.requests) / self.end

    def ttft(self, q: float) -> float:
        """The ``q``-th percentile of TTFT (s)."""
        return percentile([r.ttft for r in self.requests], q)

    def tpot(self, q: float) -> float:
        """The ``q``-th percentile of TPOT (s), replies longer than one token."""
        return percentile([r.tpot for r in self.requests if r.reply_len > 1], q)


def _deal(arrivals: list[tuple[float, int, int, int]], k: int
          ) -> list[list[tuple[int, tuple[float, int, int, int]]]]:
    """Round-robin: arrival ``i`` to server ``i mod k``, each keeping its arrivals' indices."""
    out: list[list[tuple[int, tuple[float, int, int, int]]]] = [[] for _ in range(k)]
    for i, a in enumerate(arrivals):
        out[i % k].append((i, a))
    return out


def simulate_replicas(server: Server, workload: Workload, replicas: int,
                      scheduler: Scheduler = Scheduler(), *, slo: SLO = SLO(),
                      duration: float = 60.0, seed: int = 0,
                      model: StepModel | None = None) -> PoolResult:
    """``replicas`` colocated copies of ``server`` (each prefills and decodes), the workload's
    arrivals dealt to them round-robin; one :func:`~.simulator.run_trace` each."""
    k = positive_int(replicas, "replicas")
    m = model if model is not None else step_model(server)
    d = positive(duration, "duration")
    arrivals = draw_requests(workload, d, seed)
    done: list[RequestResult | None] = [None] * len(arrivals)
    runs, end = [], d
    for j, share in enumerate(_deal(arrivals, k)):
        res, out = run_trace(server, workload, scheduler, slo=slo, duration=d, seed=seed + j,
                             model=m, arrivals=[a for _, a in share])
        runs.append(res)
        end = max(end, res.end)
        for (i, _), r in zip(share, out):
            done[i] = r
    return PoolResult(requests=tuple(r for r in done if r is not None), arrived=len(arrivals),
                      end=end, slo=slo, chips=k * server.n_chips, servers=tuple(runs))


def simulate_disaggregated(prefill: Server, decode: Server, workload: Workload, *,
                           prefill_servers: int = 1, decode_servers: int = 1,
                           link: str | float = "nvlink",
                           prefill_scheduler: Scheduler = Scheduler(),
                           decode_scheduler: Scheduler = Scheduler(), slo: SLO = SLO(),
                           duration: float = 60.0, seed: int = 0,
                           models: tuple[StepModel, StepModel] | None = None) -> PoolResult:
    """``P`` prefill servers and ``D`` decode servers with the cache handed off between them
    (see the module docstring). ``prefill_scheduler`` batches prompts on a prefill server
    (whole prompts in one pass by default; ``chunk_size`` caps the prompt tokens of a pass);
    ``decode_scheduler`` must be continuous. ``models`` may pass the two step models."""
    p = positive_int(prefill_servers, "prefill_servers")
    q = positive_int(decode_servers, "decode_servers")
    if decode_scheduler.policy != "continuous":
        raise ValueError("the decode pool needs continuous batching")
    mp, md = models if models is not None else (step_model(prefill), step_model(decode))
    if prefill.config != decode.config:
        raise ValueError("the prefill and decode servers must serve the same model")
    bw = link_bandwidth(prefill, link)
    d = positive(duration, "duration")
    arrivals = draw_requests(workload, d, seed)
    n = len(arrivals)
    # 1. prefill: each request's prompt alone (a reply of one token: the first)
    first = [math.nan] * n
    runs: list[SimResult] = []
    end = d
    for j, share in enumerate(_deal(arrivals, p)):
        prompts = [(t, prompt, 1, cached) for _, (t, prompt, _, cached) in share]
        res, out = run_trace(prefill, workload, prefill_scheduler, slo=slo, duration=d,
                             seed=seed + j, model=mp, arrivals=prompts)
        runs.append(res)
        end = max(end, res.end)
        for (i, _), r in zip(share, out):
            if r is not None:
                first[i] = r.first
    # 2. the hand-off: in order of prefill ends, round-robin to the decode servers, each
    # receiving one cache at a time
    order = sorted((i for i in range(n) if not math.isnan(first[i])), key=lambda i: first[i])
    link_free = [0.0] * q
    ready = [math.nan] * n
    queues: list[list[int]] = [[] for _ in range(q)]
    waited = 0.0
    for k, i in enumerate(order):
        j = k % q
        start = max(first[i], link_free[j])
        ready[i] = start + transfer_time(mp, md, arrivals[i][1], bw)
        link_free[j] = ready[i]
        waited += ready[i] - first[i]
        queues[j].append(i)
    # 3. decode: each server takes its requests as they become ready
    done: list[RequestResult | None] = [None] * n
    for j, idx in enumerate(queues):
        idx.sort(key=lambda i: ready[i])
        if not idx:
            continue
        arr = [(ready[i], arrivals[i][1], arrivals[i][2], 0) for i in idx]
        res, out = run_trace(decode, workload, decode_scheduler, slo=slo, duration=d,
                             seed=seed + p + j, model=md, arrivals=arr,
                             ready_first=[first[i] for i in idx])
        runs.append(res)
        end = max(end, res.end)
        for i, r in zip(idx, out):
            if r is not None:
                done[i] = RequestResult(arrive=arrivals[i][0], first=first[i], done=r.done,
                                        prompt_len=r.prompt_len, reply_len=r.reply_len,
                                        max_gap=r.max_gap)
    for i in range(n):               # one-token replies are done when their prefill is
        if done[i] is None and arrivals[i][2] <= 1 and not math.isnan(first[i]):
            done[i] = RequestResult(arrive=arrivals[i][0], first=first[i], done=first[i],
                                    prompt_len=arrivals[i][1], reply_len=arrivals[i][2])
    return PoolResult(requests=tuple(r for r in done if r is not None), arrived=n, end=end,
                      slo=slo, chips=p * prefill.n_chips + q * decode.n_chips,
                      servers=tuple(runs), transfer=waited / len(order) if order else 0.0)


@dataclass(frozen=True)
class Disaggregation:
    """Colocated replicas against prefill and decode pools on the same chips
    (see :func:`compare_disaggregation`).

    Attributes:
        prefill_servers, decode_servers: ``P`` and ``D``.
        chips: chips in either arrangement.
        colocated_rate: the highest ``λ`` (requests/s) at which ``target`` of the requests meet
            the SLO on ``P + D`` colocated replicas.
        disaggregated_rate: the same for the ``P``/``D`` pools.
        transfer: one mean-length prompt's cache hand-off, alone on the link (s).
    """

    prefill_servers: int
    decode_servers: int
    chips: int
    colocated_rate: float
    disaggregated_rate: float
    transfer: float

    @property
    def gain(self) -> float:
        """``disaggregated_rate / colocated_rate`` (the same chips, so also per chip)."""
        return self.disaggregated_rate / self.colocated_rate if self.colocated_rate else math.inf

    @property
    def colocated_per_chip(self) -> float:
        """``colocated_rate / chips`` (requests/s per chip)."""
        return self.colocated_rate / self.chips

    @property
    def disaggregated_per_chip(self) -> float:
        """``disaggregated_rate / chips`` (requests/s per chip)."""
        return self.disaggregated_rate / self.chips


def compare_disaggregation(server: Server, workload: Workload, *, prefill_servers: int,
                           decode_servers: int, link: str | float = "nvlink",
                           scheduler: Scheduler = Scheduler(),
                           prefill_scheduler: Scheduler = Scheduler(),
                           decode_scheduler: Scheduler = Scheduler(), slo: SLO = SLO(),
                           target: float = 0.9, duration: float = 60.0, seed: int = 0,
                           tolerance: float = 0.02) -> Disaggregation:
    """Goodput (DistServe's: the highest ``λ`` with ``target`` of requests within ``slo``) of
    ``P + D`` colocated replicas of ``server`` (``scheduler``) against ``P`` prefill and ``D``
    decode servers like it: the same chips, the same arrivals (one seed), bisection on ``λ``
    as :func:`~.capacity.max_rate` does."""
    p = positive_int(prefill_servers, "prefill_servers")
    q = positive_int(decode_servers, "decode_servers")
    t = positive(target, "target")
    m = step_model(server)

    def at(rate: float) -> Workload:
        return Workload(arrival_rate=rate, prompt_len=workload.prompt_len,
                        reply_len=workload.reply_len, distribution=workload.distribution,
                        shared_prefix=workload.shared_prefix,
                        prefix_hit_rate=workload.prefix_hit_rate)

    colocated = bisect_rate(
        lambda r: simulate_replicas(server, at(r), p + q, scheduler, slo=slo, duration=duration,
                                    seed=seed, model=m).attainment >= t, tolerance=tolerance)
    disaggregated = bisect_rate(
        lambda r: simulate_disaggregated(
            server, server, at(r), prefill_servers=p, decode_servers=q, link=link,
            prefill_scheduler=prefill_scheduler, decode_scheduler=decode_scheduler, slo=slo,
            duration=duration, seed=seed, models=(m, m)).attainment >= t, tolerance=tolerance)
    return Disaggregation(prefill_servers=p, decode_servers=q, chips=(p + q) * server.n_chips,
                          colocated_rate=colocated, disaggregated_rate=disaggregated,
                          transfer=transfer_time(m, m, workload.prompt_len,
                                                 link_bandwidth(server, link)))

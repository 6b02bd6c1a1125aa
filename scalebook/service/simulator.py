"""A discrete-event simulation of one server: requests arrive, a scheduler batches them, every
step's time comes from the solver's roofline (:mod:`.steps`).

The server (:class:`~.steps.Server`) is one copy of a model on a slice. Requests arrive as a
Poisson process of rate ``λ`` (exponential gaps), with prompt and reply lengths drawn from a
:class:`Workload`. The :class:`Scheduler` decides each step what runs:

- ``policy="continuous"`` (Orca's iteration-level scheduling, vLLM's default): between any two
  steps finished sequences leave and waiting ones are admitted while the batch cap and the KV
  cache allow. Without chunks (``chunk_size=0``) admitted prompts are prefilled in a pass of
  their own, during which the decoding sequences wait (the prefill-first rule of vLLM's V0
  scheduler without chunked prefill); with chunks (Sarathi-Serve; what vLLM's V1 scheduler
  always does, ``chunk_size`` playing its ``max_num_batched_tokens``) every step carries the
  decode tokens first, plus up to ``chunk_size − B`` prompt tokens, one pass.
- :func:`run_trace` is the loop itself, open to a pool: it takes given arrivals, and can run a
  decode-only server whose requests arrive with their caches written
  (:mod:`.disaggregated`).
- ``policy="static"``: the server takes up to ``max_batch`` waiting requests when it is empty,
  prefills them together and decodes until the longest reply is done; finished sequences ride
  along as padding (their slot and cache still priced), and nobody joins until the batch ends.
- ``paged=True``: a sequence holds the cache it has written, in ``block_size``-token blocks
  (half a block of fragmentation on average). A request is admitted when the cache can hold
  what the running sequences and it are expected to need (prompts plus mean replies); if the
  cache still overflows, the newest sequence is preempted (its cache dropped, requeued at the
  front, its prompt and reply so far recomputed later, as vLLM does). ``paged=False``:
  admission reserves ``T + R_max`` per sequence.
- prefix caching: a request's first ``shared_prefix`` tokens are found cached with probability
  ``prefix_hit_rate``; its prefill skips them and, paged, it shares their blocks.
- speculative decoding (``spec_k > 0``): each decode step is a round of ``k`` draft steps and
  one verification pass (:mod:`.speculative`); each sequence gains ``1 + (accepted guesses)``
  tokens per round, drawn with acceptance ``α``. The cache's growth is booked at the mean,
  ``E[tokens]`` per sequence per round (each sequence's finish is drawn exactly).

Every step costs :meth:`StepModel.time` of its query tokens, attention pairs and cache tokens,
so the simulator agrees with the one-step formulas of the other modules. The trace runs until
every request that arrived in ``[0, duration)`` is done, or until ``2·duration`` (an overloaded
server's leftovers count as unfinished). Everything is plain Python (no NumPy), seeded, and
deterministic: the same inputs give the same trace, in Jupyter and in the browser.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass

from ..validation import positive, positive_int
from .metrics import SLO, RequestResult, attainment, percentile
from .speculative import expected_tokens
from .steps import Server, StepModel, step_model

__all__ = ["Workload", "Scheduler", "Sample", "SimResult", "simulate", "run_trace",
           "DISTRIBUTIONS", "POLICIES", "draw_requests"]

#: How prompt and reply lengths are drawn around their means.
DISTRIBUTIONS = ("fixed", "uniform", "exponential")
#: Scheduling policies.
POLICIES = ("continuous", "static")


@dataclass(frozen=True)
class Workload:
    """The traffic: Poisson arrivals and length distributions.

    Attributes:
        arrival_rate: λ, requests per second.
        prompt_len, reply_len: mean lengths (tokens).
        distribution: ``"fixed"`` (every request at the mean), ``"uniform"`` (integers from 1 to
            ``2·mean − 1``) or ``"exponential"`` (geometric of that mean, capped at 4× the mean).
        shared_prefix: leading prompt tokens every request shares (a system prompt).
        prefix_hit_rate: probability the shared prefix is found cached (0–1).
    """

    arrival_rate: float = 4.0
    prompt_len: int = 1024
    reply_len: int = 256
    distribution: str = "uniform"
    shared_prefix: int = 0
    prefix_hit_rate: float = 0.0

    def __post_init__(self) -> None:
        positive(self.arrival_rate, "arrival_rate")
        positive_int(self.prompt_len, "prompt_len")
        positive_int(self.reply_len, "reply_len")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, "
                             f"got {self.distribution!r}")
        if int(self.shared_prefix) < 0:
            raise ValueError(f"shared_prefix must be non-negative, got {self.shared_prefix!r}")
        if not 0.0 <= float(self.prefix_hit_rate) <= 1.0:
            raise ValueError(f"prefix_hit_rate is a fraction in [0, 1], "
                             f"got {self.prefix_hit_rate!r}")

    def longest(self, mean: int) -> int:
        """The largest length the distribution draws for ``mean`` (tokens)."""
        return {"fixed": mean, "uniform": 2 * mean - 1, "exponential": 4 * mean}[self.distribution]

    @property
    def max_reply(self) -> int:
        """The longest reply (tokens): what a contiguous cache reserves."""
        return self.longest(self.reply_len)


@dataclass(frozen=True)
class Scheduler:
    """How the server batches (see the module docstring).

    Attributes:
        policy: ``"continuous"`` or ``"static"``.
        max_batch: the most sequences in a batch.
        chunk_size: token budget of a step with chunked prefill; 0 for whole-prompt prefills.
        paged: paged KV cache (True) or reserve ``T + R_max`` per sequence (False).
        block_size: tokens per KV block (paged).
        spec_k: draft length of speculative decoding; 0 for none.
        spec_alpha: acceptance probability of a drafted token (0–1).
        draft_model: the draft's preset name, run on the same chips; None for heads on the
            target (their cost left out).
    """

    policy: str = "continuous"
    max_batch: int = 256
    chunk_size: int = 0
    paged: bool = True
    block_size: int = 16
    spec_k: int = 0
    spec_alpha: float = 0.8
    draft_model: str | None = "LLaMA-3 8B"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        positive_int(self.max_batch, "max_batch")
        positive_int(self.block_size, "block_size")
        if int(self.chunk_size) < 0 or int(self.spec_k) < 0:
            raise ValueError("chunk_size and spec_k must be non-negative")
        if self.chunk_size and self.policy == "static":
            raise ValueError("chunked prefill needs continuous batching")
        if not 0.0 <= float(self.spec_alpha) <= 1.0:
            raise ValueError(f"spec_alpha is a fraction in [0, 1], got {self.spec_alpha!r}")


@dataclass(frozen=True)
class Sample:
    """The server's state after a step: time (s), KV cache bytes held, sequences in the batch,
    requests waiting."""

    time: float
    kv_bytes: float
    batch: int
    waiting: int


@dataclass(frozen=True)
class SimResult:
    """A simulated trace.

    Attributes:
        server, workload, scheduler, slo, duration: the inputs.
        requests: the finished requests, in order of arrival.
        arrived: requests that arrived in ``[0, duration)``.
        end: when the simulation stopped (s).
        steps: forward passes run; busy: seconds spent in them.
        memory_blocked, cap_blocked: steps after which a waiting request was kept out by the KV
            cache, or by the batch cap.
        preempted: sequences evicted for lack of cache.
        tokens_out: output tokens produced, unfinished requests' included (tokens; with
            speculation, the rounds' mean).
        kv_capacity: cache bytes that fit beside the weights.
        samples: :class:`Sample` s, at most about 400, evenly in time.
        token_gaps: ``(gap, tokens)`` per decode round: the time since the round before (s;
            a prefill-only step in between counts in it) and the sequences that got a token.
    """

    server: Server
    workload: Workload
    scheduler: Scheduler
    slo: SLO
    duration: float
    requests: tuple[RequestResult, ...]
    arrived: int
    end: float
    steps: int
    busy: float
    memory_blocked: int
    cap_blocked: int
    preempted: int
    tokens_out: float
    kv_capacity: float
    samples: tuple[Sample, ...]
    token_gaps: tuple[tuple[float, int], ...] = ()

    @property
    def unfinished(self) -> int:
        """Requests still in the server when it stopped."""
        return self.arrived - len(self.requests)

    @property
    def throughput(self) -> float:
        """Finished requests per second of the trace: ``finished / end``."""
        return len(self.requests) / self.end if self.end > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Output tokens produced per second of the trace: ``tokens_out / end`` (the tokens of
        requests still running at the end count: they were produced)."""
        return self.tokens_out / self.end if self.end > 0 else 0.0

    @property
    def goodput(self) -> float:
        """Requests per second that met the SLO: ``#meeting / end`` (unfinished ones miss)."""
        met = sum(1 for r in self.requests if r.meets(self.slo))
        return met / self.end if self.end > 0 else 0.0

    @property
    def attainment(self) -> float:
        """Share of the arrived requests that finished within the SLO (0–1); 1 when none
        arrived (nothing was missed)."""
        if not self.arrived:
            return 1.0
        return attainment(self.requests, self.slo) * len(self.requests) / self.arrived

    def tbt(self, q: float) -> float:
        """The ``q``-th percentile of the time between tokens over every token of the trace
        (s): each round's gap counted once per sequence it served (Sarathi-Serve's TBT).
        NaN without rounds."""
        pairs = sorted(p for p in self.token_gaps if p[1] > 0)
        total = sum(n for _, n in pairs)
        if not total:
            return math.nan
        rank, seen = float(q) / 100.0 * total, 0
        for gap, n in pairs:
            seen += n
            if seen >= rank:
                return gap
        return pairs[-1][0]

    def ttft(self, q: float) -> float:
        """The ``q``-th percentile of TTFT (s)."""
        return percentile([r.ttft for r in self.requests], q)

    def tpot(self, q: float) -> float:
        """The ``q``-th percentile of TPOT (s), replies longer than one token."""
        return percentile([r.tpot for r in self.requests if r.reply_len > 1], q)

    @property
    def utilisation(self) -> float:
        """Share of the trace the server spent stepping (0–1)."""
        return self.busy / self.end if self.end > 0 else 0.0

    @property
    def binding(self) -> str:
        """What limits this server, in words: the KV cache (HBM), the batch cap, the SLO
        (TTFT or TPOT) or nothing (the arrivals are too few to keep it busy)."""
        steps = max(self.steps, 1)
        if self.memory_blocked / steps > 0.2 or self.preempted:
            return "HBM: the KV cache is full and requests wait for room"
        if self.cap_blocked / steps > 0.2:
            return "the batch cap: requests wait for a slot"
        if self.attainment < 0.9:
            late_first = sum(1 for r in self.requests if r.ttft > self.slo.ttft)
            slow = sum(1 for r in self.requests if r.tpot > self.slo.tpot)
            which = "TTFT" if late_first >= slow else "TPOT"
            return f"the {which} SLO: fewer than 90% of requests meet it"
        waits = [x.waiting for x in self.samples]
        if self.unfinished > 0.02 * self.arrived or (waits and sum(waits) / len(waits) > 1.0):
            return "the step time: requests queue though the cache and the cap have room"
        return "nothing: the server keeps up with the arrivals"


def draw_requests(workload: Workload, duration: float, seed: int
                  ) -> list[tuple[float, int, int, int]]:
    """The requests arriving in ``[0, duration)``: ``(arrival time, prompt, reply, cached
    prefix)`` each, from a :class:`random.Random` seeded with ``seed``."""
    rng = random.Random(seed)
    d = positive(duration, "duration")
    out: list[tuple[float, int, int, int]] = []
    t = rng.expovariate(workload.arrival_rate)

    def length(mean: int) -> int:
        if workload.distribution == "fixed":
            return mean
        if workload.distribution == "uniform":
            return rng.randint(1, 2 * mean - 1)
        return min(4 * mean, 1 + int(rng.expovariate(1.0 / max(mean - 0.5, 0.5))))

    while t < d:
        prompt, reply = length(workload.prompt_len), length(workload.reply_len)
        hit = (workload.shared_prefix > 0 and rng.random() < workload.prefix_hit_rate)
        cached = min(workload.shared_prefix, prompt - 1) if hit else 0
        out.append((t, prompt, reply, cached))
        t += rng.expovariate(workload.arrival_rate)
    return out


@dataclass
class _Seq:
    """A request inside the server (mutable bookkeeping, private to :func:`simulate`)."""

    index: int
    prompt: int          # tokens to prefill (grows on recompute after preemption)
    cached: int          # prefix tokens found cached (not prefilled, not held)
    reply_left: int      # tokens still to produce after the prefill's first token
    filled: int = 0      # prompt tokens prefilled so far
    start: int = 0       # decode round at which it joined
    rounds: int = 0      # rounds it needs
    booked: float = 0.0  # context tokens booked on its behalf in the sums
    joined_at: float = 0.0  # when it started decoding
    reserved: float = 0.0  # cache tokens it holds (paged) or has reserved (contiguous)
    commit: float = 0.0    # what admission counted for it: expected final size, or reserved


def simulate(server: Server, workload: Workload, scheduler: Scheduler = Scheduler(), *,
             slo: SLO = SLO(), duration: float = 60.0, seed: int = 0,
             model: StepModel | None = None) -> SimResult:
    """Simulate ``duration`` seconds of arrivals on ``server`` (see the module docstring).

    ``model`` may pass a prebuilt :func:`~.steps.step_model` of ``server`` (the widget keeps
    one). Raises ``ValueError`` if not one sequence fits beside the weights.
    """
    return run_trace(server, workload, scheduler, slo=slo, duration=duration, seed=seed,
                     model=model)[0]


def run_trace(server: Server, workload: Workload, scheduler: Scheduler = Scheduler(), *,
              slo: SLO = SLO(), duration: float = 60.0, seed: int = 0,
              model: StepModel | None = None,
              arrivals: list[tuple[float, int, int, int]] | None = None,
              ready_first: list[float] | None = None
              ) -> tuple[SimResult, list[RequestResult | None]]:
    """The event loop behind :func:`simulate`, open to a pool of servers
    (:mod:`.disaggregated`): returns the :class:`SimResult` and, per arrival, its
    :class:`RequestResult` (None if unfinished), in the order of ``arrivals``.

    ``arrivals`` replaces the workload's draw (``(time, prompt, reply, cached prefix)`` each,
    sorted by time). ``ready_first`` (one time per arrival, s) makes this a decode-only server:
    each request arrives with its prompt's cache already written and its first token already
    out at that time (a prefill server made both); it is admitted without a prefill pass and
    decodes its remaining ``reply − 1`` tokens. Its ``max_gap`` then counts from that first
    token, so the hand-off between servers shows in it.
    """
    m = model if model is not None else step_model(server)
    if m.server != server:
        raise ValueError("model was built for another server")
    d = positive(duration, "duration")
    sch, wl = scheduler, workload
    capacity = float(m.kv_capacity_tokens)
    prefix_hold = wl.shared_prefix if (wl.prefix_hit_rate > 0 and sch.paged) else 0
    capacity -= prefix_hold
    if capacity < wl.prompt_len + 1:
        raise ValueError(f"{server.config.name or 'the model'} leaves room for "
                         f"{max(0, int(capacity))} cache tokens on {server.n_chips} "
                         f"{server.chip}: not even one request fits")
    draft = None
    k = int(sch.spec_k)
    if k and sch.draft_model is not None:
        draft = step_model(server.with_(model=sch.draft_model))
    mean_tokens = expected_tokens(sch.spec_alpha, k) if k else 1.0
    rng = random.Random(seed * 7919 + 1)
    if arrivals is None:
        arrivals = draw_requests(wl, d, seed)
    ready = ready_first is not None
    if ready_first is not None:
        if len(ready_first) != len(arrivals):
            raise ValueError("ready_first needs one time per arrival")
        if sch.policy != "continuous":
            raise ValueError("a decode-only server needs continuous batching")
    first: list[float] = (list(ready_first) if ready_first is not None
                          else [math.nan] * len(arrivals))
    done: list[RequestResult | None] = [None] * len(arrivals)
    frag = (sch.block_size - 1) / 2.0 if sch.paged else 0.0
    max_reply = wl.max_reply

    def rounds_for(tokens: int) -> int:
        """Verification rounds until ``tokens`` more tokens are out (1 per round without
        speculation)."""
        if not k or tokens <= 0:
            return max(tokens, 0)
        n = got = 0
        while got < tokens:
            j = 0
            while j < k and rng.random() < sch.spec_alpha:
                j += 1
            got += j + 1
            n += 1
        return n

    waiting: deque[_Seq] = deque()
    prefilling: list[_Seq] = []
    running: dict[int, _Seq] = {}
    order: list[int] = []            # running indices in order of joining (for preemption)
    finish: list[tuple[int, int]] = []   # heap of (round, index)
    ctx_sum = 0.0                    # context tokens the decoders attend to (prefix included)
    held = 0.0                       # cache tokens held (paged) or reserved (contiguous)
    committed = 0.0                  # admission's count: Σ expected final sizes, or reserved
    g = 0                            # decode rounds done
    round_end: list[float] = []      # when round g + 1 ended (round_end[g])
    round_gap: list[float] = []      # and how long after the round before it
    round_batch: list[int] = []      # sequences that got a token in it
    now, nxt = 0.0, 0
    steps = mem_blocked = cap_blocked = preempted = 0
    tokens_out = 0.0
    busy = 0.0
    samples: list[Sample] = []
    gap, last_sample = d / 400.0, -math.inf
    static_active = False
    static_ctx0 = 0.0                # the static batch: Σ prompts, its size, its first round
    static_size = static_g0 = 0
    limit = 2.0 * d

    def need(s: _Seq) -> tuple[float, float]:
        """(cache tokens taken now, tokens admission counts): paged, its own prompt tokens
        and half a block now, and counts that plus a mean reply; contiguous, ``T + R_max``."""
        if sch.paged:
            own = s.prompt - s.cached + frag
            return own, own + min(s.reply_left, wl.reply_len)
        return s.prompt + max_reply, s.prompt + max_reply

    def finish_request(s: _Seq) -> None:
        t0, prompt, reply, _ = arrivals[s.index]
        gap = 0.0
        if s.rounds:   # its tokens came at the ends of rounds start+1 … start+rounds
            gap = max(round_end[s.start] - s.joined_at,
                      max(round_gap[s.start + 1:s.start + s.rounds], default=0.0))
        done[s.index] = RequestResult(arrive=t0, first=first[s.index], done=now,
                                      prompt_len=prompt, reply_len=reply, max_gap=gap)

    def join(s: _Seq) -> None:
        """A prefilled sequence starts decoding (its first token is out)."""
        nonlocal ctx_sum, tokens_out
        if math.isnan(first[s.index]):
            first[s.index] = now
            tokens_out += 1
        if s.reply_left <= 0:
            release(s)
            finish_request(s)
            return
        s.start, s.rounds = g, rounds_for(s.reply_left)
        s.joined_at = first[s.index] if ready else now
        s.booked = s.prompt + 1.0
        ctx_sum += s.booked
        running[s.index] = s
        order.append(s.index)
        heapq.heappush(finish, (g + s.rounds, s.index))

    def settle(s: _Seq) -> None:
        """Book a leaving decoder's growth since it joined: ``(g − start)·E[tokens]`` cache
        tokens (kept out of the per-round loop: the sums grow by ``B·E`` each round)."""
        grown = (g - s.start) * mean_tokens
        s.booked += grown
        if sch.paged:
            s.reserved += grown

    def release(s: _Seq) -> None:
        nonlocal held, committed
        held -= s.reserved
        committed -= s.commit

    while True:
        while nxt < len(arrivals) and arrivals[nxt][0] <= now:
            t0, prompt, reply, cached = arrivals[nxt]
            waiting.append(_Seq(index=nxt, prompt=prompt, cached=cached, reply_left=reply - 1))
            nxt += 1
        if not waiting and not prefilling and not running:
            if nxt >= len(arrivals):
                break
            now = arrivals[nxt][0]
            continue
        if now > limit:
            break
        # ---- admission
        admitted: list[_Seq] = []
        if sch.policy == "continuous" or not static_active:
            slots = sch.max_batch - len(running) - len(prefilling)
            while waiting and slots > 0:
                s = waiting[0]
                take, want = need(s)
                if committed + want > capacity:
                    mem_blocked += 1
                    break
                waiting.popleft()
                s.reserved, s.commit = take, want
                held += take
                committed += want
                admitted.append(s)
                slots -= 1
            if waiting and slots <= 0:
                cap_blocked += 1
        if ready:                     # decode-only: the caches came written, no prefill pass
            for s in admitted:
                join(s)
            admitted = []
            if not running:
                continue
        # ---- one step
        b = len(running)
        if sch.policy == "static" and not static_active:
            if not admitted:          # nothing fits: cannot happen, capacity was checked
                raise RuntimeError("static batch could not admit a request")
            q = float(sum(s.prompt - s.cached for s in admitted))
            pairs = float(sum((s.prompt - s.cached) * s.prompt for s in admitted))
            dt = m.time(q, pairs, sum(s.prompt for s in admitted))
            now += dt
            static_size = len(admitted)
            static_ctx0 = float(sum(s.prompt for s in admitted))
            static_g0 = g
            static_active = True
            for s in admitted:
                join(s)
            decoded = False
        elif sch.chunk_size == 0 and admitted:
            q = float(sum(s.prompt - s.cached for s in admitted))
            pairs = float(sum((s.prompt - s.cached) * s.prompt for s in admitted))
            dt = m.time(q, pairs, sum(s.prompt for s in admitted))
            now += dt
            for s in admitted:
                join(s)
            decoded = False
        else:
            prefilling.extend(admitted)
            decode_q = b * (k + 1)
            budget = sch.chunk_size - decode_q if sch.chunk_size else 0
            if sch.chunk_size and b == 0:
                budget = sch.chunk_size
            q, pairs, cache = float(decode_q), ctx_sum * (k + 1), ctx_sum
            if sch.policy == "static":
                ctx = static_ctx0 + static_size * (g - static_g0 + 1) * mean_tokens
                q, pairs, cache = float(static_size * (k + 1)), ctx * (k + 1), ctx
            done_prefill: list[_Seq] = []
            for s in prefilling:
                if budget <= 0:
                    break
                todo = s.prompt - s.cached - s.filled
                c = min(todo, budget)
                offset = s.cached + s.filled
                q += c
                pairs += c * (offset + c)
                cache += offset + c
                s.filled += c
                budget -= c
                if s.filled >= s.prompt - s.cached:
                    done_prefill.append(s)
            if q <= 0:
                raise RuntimeError("a step with nothing to do")
            dt = m.time(q, pairs, cache)
            if (b or sch.policy == "static") and k and draft is not None:
                nb = static_size if sch.policy == "static" else b
                dt += k * draft.decode_time(nb, cache)
            now += dt
            decoded = b > 0
            if decoded:
                g += 1
                round_gap.append(now - round_end[-1] if round_end else now)
                round_end.append(now)
                round_batch.append(b)
                ctx_sum += b * mean_tokens
                tokens_out += b * mean_tokens
                if sch.paged:
                    held += b * mean_tokens
            for s in done_prefill:
                prefilling.remove(s)
                join(s)
        steps += 1
        busy += dt
        # ---- finished sequences leave
        while finish and finish[0][0] <= g:
            _, i = heapq.heappop(finish)
            if i not in running:
                continue
            s = running.pop(i)
            settle(s)
            ctx_sum -= s.booked
            order.remove(i)
            release(s)
            finish_request(s)
        if sch.policy == "static" and static_active and not running and not prefilling:
            static_active = False
        # ---- preemption: the paged cache overflowed
        while sch.paged and held > capacity and len(order) > 1:
            i = order.pop()
            s = running.pop(i)
            made = min(s.reply_left, int(round((g - s.start) * mean_tokens)))
            settle(s)
            ctx_sum -= s.booked
            release(s)
            waiting.appendleft(_Seq(index=i, prompt=s.prompt + made, cached=s.cached,
                                    reply_left=s.reply_left - made))
            preempted += 1
        if now - last_sample >= gap:
            samples.append(Sample(time=now, kv_bytes=max(held, 0.0) * m.kv_bytes_per_token
                                  + prefix_hold * m.kv_bytes_per_token,
                                  batch=len(running) + len(prefilling), waiting=len(waiting)))
            last_sample = now
    finished = tuple(r for r in done if r is not None)
    return SimResult(server=server, workload=wl, scheduler=sch, slo=slo, duration=d,
                     requests=finished, arrived=len(arrivals), end=max(now, d), steps=steps,
                     busy=busy, memory_blocked=mem_blocked, cap_blocked=cap_blocked,
                     preempted=preempted, tokens_out=tokens_out,
                     kv_capacity=m.kv_capacity_tokens * m.kv_bytes_per_token,
                     samples=tuple(samples),
                     token_gaps=tuple(zip(round_gap[1:], round_batch[1:]))), done

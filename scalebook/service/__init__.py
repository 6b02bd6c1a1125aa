"""Serving systems (Part 8): a model deployed as a service, priced by the solver.

API summary (every function is pure, over frozen dataclasses; times in s, rates per s, memory
in bytes or tokens as named; every step time comes from :mod:`scalebook.inference` through
:mod:`.steps`, the one place this package reads it)::

    steps         Server(model="LLaMA-3 70B", chip="H100", n_chips=8, weight_dtype, cache_dtype,
                         compute_dtype, reserve=0.1, price_per_chip_hour=2.0)   .with_(**changes)
                  step_model(server) -> StepModel: .time(q, pairs, cache), .decode_time(B, ΣS),
                         .prefill_time(T, B=1), .kv_capacity_tokens, .kv_bytes_per_token
    metrics       SLO(ttft=1.0, tpot=0.05, tbt=None); RequestResult(arrive, first, done,
                         prompt_len, reply_len, max_gap) .ttft .tpot .latency .meets(slo)
                  percentile(xs, q), little_queue(λ, W) = λ·W, md1_wait(λ, s), mm1_wait(λ, s),
                  prefill_queue_ttft(λ, t_prefill), goodput_of(results, slo, duration),
                  attainment(results, slo)
    batching      expected_max_uniform(B, r_min, r_max), static_slot_use(B, r_min, r_max),
                  mean_context_continuous(T, R) = T + (R − 1)/2,
                  compare_batching(server, prompt_len, reply_min, reply_max, batch_cap)
                         -> BatchingComparison(.static_tokens_per_s, .continuous_tokens_per_s,
                            .gain, .static_batch, .continuous_batch, ...)
    paged         blocks_needed(tokens, b), kv_layout(lengths, block_size, max_len) -> KVLayout
                         (.used .paged .reserved .paged_waste .reserved_waste),
                  batch_that_fits(capacity_tokens, mean_len, max_len, block_size) -> BatchFit,
                  shared_sampling(prompt_len, reply_len, n_samples, block_size) -> SharedSampling
    prefix        cached_prefill_time(model, T, h), prefix_caching(server, prompt_len,
                         shared_len, hit_rate) -> PrefixCaching(.ttft_cold .ttft_hit
                         .ttft_mean .compute_saved .memory_held)
    chunked       mixed_step_time(model, decode_batch, context_len, chunk, chunk_offset),
                  chunked_prefill(server, prompt_len, chunk, decode_batch, context_len)
                         -> ChunkedPrefill(.tpot_chunked .tpot_stall .ttft_chunked .ttft_whole),
                  largest_chunk(server, decode_batch, context_len, tpot_slo, prompt_len)
    speculative   expected_tokens(α, k) = (1 − α^{k+1})/(1 − α),
                  speedup_memory_bound(α, k, c) = E/(k·c + 1), verify_time(model, B, S, k),
                  speculative_decoding(target, draft, batch, context_len, alpha, k)
                         -> Speculation(.speedup .tpot .round_time ...),
                  best_draft_length(target, draft, batch, context_len, alpha, k_max=16)
    quantization  SCHEMES {name: (weight, cache, compute dtype)},
                  quantized_serving(server, scheme, batch, context_len, prompt_len)
                         -> QuantizedServing(.decode_step .prefill .batch_fits
                            .tokens_per_s .cost_per_million)
    simulator     Workload(arrival_rate, prompt_len, reply_len, distribution="uniform",
                         shared_prefix=0, prefix_hit_rate=0.0)
                  Scheduler(policy="continuous"|"static", max_batch=256, chunk_size=0,
                         paged=True, block_size=16, spec_k=0, spec_alpha=0.8,
                         draft_model="LLaMA-3 8B"|None)
                  simulate(server, workload, scheduler, slo=SLO(), duration=60, seed=0)
                         -> SimResult(.requests .throughput .tokens_per_s .goodput .attainment
                            .ttft(q) .tpot(q) .tbt(q) .binding .samples .preempted ...)
    capacity      goodput(server, workload, scheduler, slo, duration, seed),
                  meets_slo(..., target=0.9), max_rate(..., target=0.9) (DistServe's goodput:
                  the highest λ at which 90% meet the SLO), max_rate_where(server, workload,
                  scheduler, ok) (the highest λ whose trace passes any test ok(SimResult)),
                  chips_needed(server, workload, target_rate, scheduler, slo,
                         slice_sizes=(1, 2, 4, 8)) -> [CapacityPlan], cheapest first,
                  bisect_rate(passes) (the bisection behind them)
    disaggregated link_bandwidth(server, "nvlink"|"nic"|bytes/s), transfer_time(prefill_model,
                         decode_model, T, bandwidth),
                  simulate_replicas(server, workload, replicas, scheduler) -> PoolResult,
                  simulate_disaggregated(prefill, decode, workload, prefill_servers=P,
                         decode_servers=D, link="nvlink") -> PoolResult(.goodput .attainment
                            .ttft(q) .tpot(q) .transfer .servers),
                  compare_disaggregation(server, workload, prefill_servers=P,
                         decode_servers=D, link, slo, target=0.9) -> Disaggregation
                            (.colocated_rate .disaggregated_rate .gain .transfer)
                  (every server runs the simulator's loop, run_trace; colocated replicas and
                  the pools get the same arrivals, dealt round-robin)

Everything here is plain Python (no NumPy), so the browser's Pyodide worker runs the same
simulator as Jupyter (:mod:`scalebook.live.service`).
"""

from __future__ import annotations

from .batching import (BatchingComparison, compare_batching, expected_max_uniform,
                       mean_context_continuous, static_slot_use)
from .capacity import (CapacityPlan, bisect_rate, chips_needed, goodput, max_rate,
                       max_rate_where, meets_slo)
from .chunked import ChunkedPrefill, chunked_prefill, largest_chunk, mixed_step_time
from .disaggregated import (Disaggregation, PoolResult, compare_disaggregation,
                            link_bandwidth, simulate_disaggregated, simulate_replicas,
                            transfer_time)
from .metrics import (SLO, RequestResult, attainment, goodput_of, little_queue, md1_wait,
                      mm1_wait, percentile, prefill_queue_ttft)
from .paged import (BatchFit, KVLayout, SharedSampling, batch_that_fits, blocks_needed,
                    kv_layout, shared_sampling)
from .prefix import PrefixCaching, cached_prefill_time, prefix_caching
from .quantization import SCHEMES, QuantizedServing, quantized_serving
from .simulator import (Sample, Scheduler, SimResult, Workload, draw_requests, run_trace,
                        simulate)
from .speculative import (Speculation, best_draft_length, expected_tokens, speculative_decoding,
                          speedup_memory_bound, verify_time)
from .steps import Server, StepModel, fits, resolve_model, step_model

__all__ = [
    "Server", "StepModel", "step_model", "resolve_model", "fits",
    "SLO", "RequestResult", "percentile", "little_queue", "md1_wait", "mm1_wait",
    "prefill_queue_ttft", "goodput_of", "attainment",
    "expected_max_uniform", "static_slot_use", "mean_context_continuous",
    "BatchingComparison", "compare_batching",
    "blocks_needed", "KVLayout", "kv_layout", "BatchFit", "batch_that_fits",
    "SharedSampling", "shared_sampling",
    "PrefixCaching", "prefix_caching", "cached_prefill_time",
    "mixed_step_time", "ChunkedPrefill", "chunked_prefill", "largest_chunk",
    "expected_tokens", "speedup_memory_bound", "verify_time", "Speculation",
    "speculative_decoding", "best_draft_length",
    "SCHEMES", "QuantizedServing", "quantized_serving",
    "Workload", "Scheduler", "Sample", "SimResult", "simulate", "draw_requests",
    "goodput", "meets_slo", "max_rate", "max_rate_where", "CapacityPlan", "chips_needed",
    "bisect_rate", "run_trace",
    "link_bandwidth", "transfer_time", "PoolResult", "simulate_replicas",
    "simulate_disaggregated", "Disaggregation", "compare_disaggregation",
]

"""scalebook.inference: each formula against a hand count, and the shape of the trade-offs."""

from __future__ import annotations

import math

import pytest

from scalebook import inference as inf
from scalebook.collectives import collective_cost, gpu_all_reduce
from scalebook.hardware import get_chip
from scalebook.transformer import TransformerConfig, llama3_8b, llama3_70b, param_count

L70 = llama3_70b()
H100, V5E = get_chip("H100"), get_chip("TPU v5e")
P70 = param_count(L70)


def test_weight_and_cache_bytes_by_hand():
    assert inf.weight_bytes(L70) == 2 * 70_553_706_496
    assert inf.weight_bytes(L70, "int8") == 70_553_706_496
    assert inf.kv_bytes_per_token(L70) == 2 * 80 * 8 * 128 * 2 == 327_680
    assert inf.kv_bytes_per_token(L70, "fp8") == 163_840
    # GQA: the 8B's 8 KV heads cost a quarter of what its 32 query heads would.
    mha = TransformerConfig(d_model=4096, n_layers=32, n_heads=32, d_ff=14336, vocab_size=128256)
    assert inf.kv_bytes_per_token(mha) == 4 * inf.kv_bytes_per_token(llama3_8b())


def test_decode_step_by_hand():
    step = inf.decode_step(L70, H100, batch=4, context_len=1000)
    flops = 4 * (2 * P70.matmul + 4 * 80 * 1000 * 64 * 128)
    bytes_ = 2 * P70.matmul + 4 * 1000 * 327_680
    assert step.flops == pytest.approx(flops)
    assert step.t_compute == pytest.approx(flops / 9.89e14)
    assert step.t_memory == pytest.approx(bytes_ / 3.35e12)
    assert step.t_comm == 0 and step.time == step.t_memory and step.bound == "memory"
    assert step.tokens == 4 and step.tokens_per_s == pytest.approx(4 / step.time)


def test_tensor_parallel_divides_the_work_and_adds_two_allreduces_per_layer():
    one = inf.decode_step(L70, H100, batch=8, context_len=2048)
    eight = inf.decode_step(L70, H100, batch=8, context_len=2048, n_chips=8)
    assert eight.t_memory == pytest.approx(one.t_memory / 8)
    assert eight.t_compute == pytest.approx(one.t_compute / 8)
    # each AllReduce by the node's fastest algorithm (NVLS on H100s for 128 kB)
    per = collective_cost("AllReduce", 8 * 8192 * 2, 8, H100)
    assert per.algorithm == "nvls"
    assert eight.t_comm == pytest.approx(2 * 80 * per.time)
    ring = inf.decode_step(L70, H100, batch=8, context_len=2048, n_chips=8, algorithm="ring")
    assert ring.t_comm == pytest.approx(2 * 80 * gpu_all_reduce(8 * 8192 * 2, 8, H100).time)
    assert eight.time == pytest.approx(eight.t_memory + eight.t_comm)
    assert eight.tokens_per_s_per_chip == pytest.approx(eight.tokens_per_s / 8)


def test_prefill_is_compute_bound_and_writes_the_cache():
    p = inf.prefill(L70, H100, prompt_len=2048)
    assert p.bound == "compute" and p.tokens == 2048
    assert p.flops == pytest.approx(2048 * (2 * P70.matmul + 4 * 80 * 2048 * 64 * 128))
    assert p.kv_bytes == 2048 * 327_680
    assert p.intensity > 1000 > inf.decode_step(L70, H100, batch=1, context_len=2048).intensity


def test_critical_batch_without_cache_is_the_chips_ratio():
    assert inf.decode_critical_batch(L70, H100) == pytest.approx(9.89e14 * 2 / (2 * 3.35e12))
    assert inf.decode_critical_batch(llama3_8b(), V5E) == pytest.approx(1.97e14 / 8.1e11)
    # int8 weights with bf16 compute: half the bytes per FLOP, half the critical batch.
    assert inf.decode_critical_batch(L70, H100, weight_dtype="int8") == pytest.approx(
        inf.decode_critical_batch(L70, H100) / 2)
    # At the critical batch, compute and memory times agree.
    b = inf.decode_critical_batch(L70, H100, context_len=500, overlap=True)
    lo, hi = (inf.decode_step(L70, H100, batch=n, context_len=500) for n in (math.floor(b), math.ceil(b)))
    assert lo.bound == "memory" and hi.bound == "compute"


def test_the_overlapped_bound_finds_no_critical_batch_from_its_limit_on():
    s = inf.overlap_bound_limit(llama3_8b(), H100)
    assert s == 394  # the chapter's worked problem 6
    assert math.isinf(inf.decode_critical_batch(llama3_8b(), H100, context_len=s, overlap=True))
    assert math.isfinite(inf.decode_critical_batch(llama3_8b(), H100, context_len=s - 1,
                                                   overlap=True))
    # an int8 cache halves c, so the bound holds out to a longer context
    assert inf.overlap_bound_limit(llama3_8b(), H100, cache_dtype="int8") > s


def test_the_critical_batch_defaults_to_the_phased_model():
    # the overlapped bound finds no B* at 4,096 cached tokens, an artefact of its assumption;
    # the default is the phased model's C·b_w/(2W), the same at every context
    assert inf.decode_critical_batch(L70, H100, context_len=4096) == pytest.approx(
        9.89e14 * 2 / (2 * 3.35e12))
    assert math.isinf(inf.decode_critical_batch(L70, H100, context_len=4096, overlap=True))


def test_a_long_cache_keeps_attention_memory_bound_but_not_the_weight_matmuls():
    # Under the overlapped bound the totals never balance at 4,096 cached tokens ...
    assert inf.decode_critical_batch(L70, H100, context_len=4096, overlap=True) == math.inf
    step = inf.decode_step(L70, H100, batch=100_000, context_len=4096)
    assert step.bound == "memory"
    # ... but the kernels run in turn: the weight matmuls turn compute-bound near C·b/(2W)
    # whatever the context, and only attention stays memory-bound.
    phased = inf.decode_critical_batch(L70, H100, context_len=4096, overlap=False)
    assert phased == pytest.approx(9.89e14 * 2 / (2 * 3.35e12))
    assert step.weights_bound == "compute"
    assert step.t_attention_memory > step.t_attention_compute


def test_decode_time_at_a_long_context_is_the_sum_of_its_phases():
    # LLaMA-3 70B, 8 H100s, B = 1,486, S = 4,096; every term by hand.
    b, s, n = 1486, 4096, 8
    weight_flops = b * 2 * P70.matmul
    attn_flops = b * 4 * 80 * s * 64 * 128
    w_bytes, kv = 2 * P70.matmul, b * s * 327_680
    t_w = max(weight_flops / (n * 9.89e14), w_bytes / (n * 3.35e12))
    t_a = max(attn_flops / (n * 9.89e14), kv / (n * 3.35e12))
    comm = 2 * 80 * collective_cost("AllReduce", b * 8192 * 2, n, H100).time
    step = inf.decode_step(L70, H100, batch=b, context_len=s, n_chips=n)
    assert step.time == pytest.approx(t_w + t_a + comm)
    # The old roofline of the totals is kept as a stated lower bound, and it is strictly lower
    # here: the weight matmuls are compute-bound while attention waits on HBM.
    overlapped = max((weight_flops + attn_flops) / (n * 9.89e14), (w_bytes + kv) / (n * 3.35e12)) + comm
    assert step.time_overlapped == pytest.approx(overlapped)
    assert step.time > 1.15 * step.time_overlapped


def test_phased_and_overlapped_agree_when_both_phases_are_memory_bound():
    step = inf.decode_step(L70, H100, batch=16, context_len=2048, n_chips=8)
    assert step.time == pytest.approx(step.time_overlapped)


def test_past_k_chips_the_cache_is_copied_not_split():
    assert inf.kv_replication(L70, 8) == 1 and inf.kv_replication(L70, 16) == 2
    assert inf.kv_replication(L70, 4) == 1
    on8 = inf.decode_step(L70, V5E, batch=64, context_len=256, n_chips=8)
    on16 = inf.decode_step(L70, V5E, batch=64, context_len=256, n_chips=16)
    assert on16.kv_bytes == 2 * on8.kv_bytes == 2 * 64 * 256 * 327_680
    # per chip: half the weights, the same cache
    assert on16.t_memory == pytest.approx(
        (on8.weight_bytes / 16 + 64 * 256 * 327_680 / 8) / 8.1e11)
    free16 = 16 * 16e9 - inf.weight_bytes(L70)
    assert inf.max_batch(L70, V5E, context_len=4096, n_chips=16) == int(free16 // (2 * 4096 * 327_680))


def test_tp_comm_time_refuses_a_dtype_or_algorithm_that_is_not_a_string_by_name():
    """The pricing is kept per question; a question the cache cannot key is still answered by
    the dtype and algorithm checks, not by the cache's ``unhashable type``."""
    with pytest.raises(ValueError, match="dtype must be a string"):
        inf.tp_comm_time(L70, H100, n_chips=8, tokens=16, dtype=["bf16"])
    with pytest.raises(ValueError, match="algorithm must be one of"):
        inf.tp_comm_time(L70, H100, n_chips=8, tokens=16, algorithm=["ring"])
    assert inf.tp_comm_time(L70, H100, n_chips=1, tokens=16, algorithm=["ring"]) == 0.0


def test_tp_on_a_v5e_4x2_runs_over_its_two_real_axes():
    # 8 v5e chips are a 4x2 slice without wraparound: each AllReduce is 2 AllGathers whose
    # link bandwidths add over the two axes (W + W, lines) and whose hops add (3 + 1).
    assert inf.tp_slice_axes(V5E, 8) == (4, 2) and inf.tp_slice_axes(V5E, 16) == (4, 4)
    assert inf.tp_slice_axes("TPU v5p", 16) == (4, 2, 2)
    cfg, tokens = llama3_8b(), 1
    v = tokens * 4096 * 2
    one = 2 * (v * 7 / 8 / (4.5e10 + 4.5e10) + (3 + 1) * 1e-6)
    assert inf.tp_comm_time(cfg, V5E, n_chips=8, tokens=tokens) == pytest.approx(2 * 32 * one)
    # the single 8-chip line priced before was 7 hops and one link: about twice as long
    line = 2 * (v * 7 / 8 / 4.5e10 + 7 * 1e-6)
    assert inf.tp_comm_time(cfg, V5E, n_chips=8, tokens=tokens) < 0.6 * 2 * 32 * line
    # 16 chips: a 4x4 with no wraparound on either axis, 3 + 3 hops, not a 16-ring
    one16 = 2 * (v * 15 / 16 / (4.5e10 + 4.5e10) + (3 + 3) * 1e-6)
    assert inf.tp_comm_time(cfg, V5E, n_chips=16, tokens=tokens) == pytest.approx(2 * 32 * one16)
    with pytest.raises(ValueError, match="power-of-two"):
        inf.tp_slice_axes(V5E, 12)


def test_a_batch_sharded_cache_is_not_copied():
    # LLaMA-3 70B (K = 8) on 16 v5e chips: by head, every cache sits on 2 chips; by sequence,
    # the two groups of 8 chips each hold half the batch's caches.
    assert inf.kv_replication(L70, 16, "batch") == 1 and inf.kv_groups(L70, 16, "batch") == 2
    heads = inf.decode_step(L70, V5E, batch=64, context_len=256, n_chips=16)
    batch = inf.decode_step(L70, V5E, batch=64, context_len=256, n_chips=16, kv_sharding="batch")
    assert batch.kv_bytes / 16 == 64 * 256 * 327_680 / 16 == heads.kv_bytes / 16 / 2
    # an odd batch: the busier group holds ceil(65 / 2) = 33 sequences
    odd = inf.decode_step(L70, V5E, batch=65, context_len=256, n_chips=16, kv_sharding="batch")
    assert odd.kv_bytes == 2 * 33 * 256 * 327_680
    free16 = 16 * 16e9 - inf.weight_bytes(L70)
    per_seq = 4096 * 327_680
    assert inf.max_batch(L70, V5E, context_len=4096, n_chips=16, kv_sharding="batch") == \
        2 * int(free16 / 2 // per_seq)
    # up to K chips the two layouts are the same
    assert inf.max_batch(L70, H100, context_len=8192, n_chips=8, kv_sharding="batch") == 185
    with pytest.raises(ValueError, match="kv_sharding"):
        inf.kv_replication(L70, 16, "sequence")


def test_requests_per_second_by_hand():
    rate = inf.requests_per_second(1000.0, reply_len=250, n_chips=8)
    assert rate.per_slice == pytest.approx(4.0) and rate.per_chip == pytest.approx(0.5)
    with pytest.raises(ValueError, match="reply_len"):
        inf.requests_per_second(1000.0, reply_len=0)


def test_continuous_batching_steady_state_by_hand():
    q = inf.continuous_batching(batch=64, prompt_len=2048, reply_len=2048, step_time=0.02,
                                kv_bytes_per_token=327_680)
    assert q.finished_per_step == pytest.approx(64 / 2048)              # 1/32 per step
    assert q.kv_tokens_freed_per_step == pytest.approx(64 / 2048 * 4096)  # 128 tokens
    # progress is spread over 0..R-1: the average cache is T + (R-1)/2, not T + R
    assert q.mean_context == pytest.approx(2048 + 2047 / 2)
    assert q.mean_kv_bytes == pytest.approx(64 * (2048 + 1023.5) * 327_680)
    assert q.requests_per_s == pytest.approx(64 / (2048 * 0.02))
    assert q.prefill_tokens_per_s == pytest.approx(q.requests_per_s * 2048)


def test_continuous_batching_needs_only_the_inputs_its_outputs_use():
    # the queue's shape needs B, T and R alone (the old signature required a step time and a
    # cache size for these too)
    q = inf.continuous_batching(batch=64, prompt_len=2048, reply_len=2048)
    assert q.finished_per_step == pytest.approx(1 / 32)
    assert q.kv_tokens_freed_per_step == pytest.approx(128)
    assert q.requests_per_s is None and q.prefill_tokens_per_s is None and q.mean_kv_bytes is None
    with_time = inf.continuous_batching(batch=64, prompt_len=2048, reply_len=2048, step_time=0.02)
    assert with_time.requests_per_s == pytest.approx(1.5625) and with_time.mean_kv_bytes is None
    with pytest.raises(ValueError, match="step_time"):
        inf.continuous_batching(batch=64, prompt_len=2048, reply_len=2048, step_time=0.0)


def test_decode_chips_per_prefill_chip_for_a_traffic_mix():
    # the name says what it returns (the old name, prefill_decode_ratio, read the other way up)
    assert not hasattr(inf, "prefill_decode_ratio")
    chat = inf.decode_chips_per_prefill_chip([(1.0, 2048, 2048)], prefill_tokens_per_s_per_chip=8000,
                                    decode_tokens_per_s_per_chip=400)
    assert chat == pytest.approx((2048 / 400) / (2048 / 8000)) == pytest.approx(20.0)
    # a mix: 3 chats to 1 summarisation (8,192 in, 256 out)
    mix = inf.decode_chips_per_prefill_chip([(3, 2048, 2048), (1, 8192, 256)],
                                   prefill_tokens_per_s_per_chip=8000,
                                   decode_tokens_per_s_per_chip=400)
    assert mix == pytest.approx((3 * 2048 + 256) / 400 / ((3 * 2048 + 8192) / 8000))
    with pytest.raises(ValueError, match="mix"):
        inf.decode_chips_per_prefill_chip([], prefill_tokens_per_s_per_chip=1, decode_tokens_per_s_per_chip=1)


def test_decode_step_from_counts_alone():
    st = inf.decode_step_from_counts(70e9, 327_680, H100, batch=1, context_len=4096, n_chips=8)
    assert st.time == pytest.approx((70e9 * 2 + 4096 * 327_680) / (8 * 3.35e12))
    assert st.t_comm == 0
    # past C·b/(2W) the weight phase is compute-bound: 2·B·P/(n·C)
    big = inf.decode_step_from_counts(70e9, 327_680, H100, batch=1000, context_len=100, n_chips=8)
    assert big.weights_bound == "compute"
    assert big.time == pytest.approx(2 * 1000 * 70e9 / (8 * 9.89e14) + 1000 * 100 * 327_680 / (8 * 3.35e12))
    # it agrees with the full model's memory phases when given the full model's counts
    full = inf.decode_step(L70, H100, batch=4, context_len=1000)
    counts = inf.decode_step_from_counts(P70.matmul, 327_680, H100, batch=4, context_len=1000)
    assert counts.t_memory == pytest.approx(full.t_memory)


def test_2d_weight_stationary_communication_by_hand():
    b = 256
    one_d = inf.weight_stationary_2d(L70, H100, batch=b, x=1, y=8)
    # x = 1 is 1-D tensor parallelism: two AllReduces of B·D per layer
    assert one_d.bytes_y == 2 * b * 8192 * 2 and one_d.bytes_x == 0
    assert one_d.t_comm == pytest.approx(inf.tp_comm_time(L70, H100, n_chips=8, tokens=b))
    two_d = inf.weight_stationary_2d(L70, H100, batch=b, x=2, y=4)
    assert two_d.bytes_y == 2 * b * 8192 / 2 * 2
    # the gated MLP's gate and up are two partial sums over x: 2F, not F (1.74x for 70B)
    assert two_d.bytes_x == b * (2 * 28672 + (64 + 16) * 128) / 4 * 2
    assert two_d.bytes_x / (b * (28672 + 80 * 128) / 4 * 2) == pytest.approx(1.737, abs=1e-3)
    per = lambda v, n: collective_cost("AllReduce", v, n, H100).time  # noqa: E731
    layer = (2 * per(b * 28672 / 4 * 2, 2) + per(b * 80 * 128 / 4 * 2, 2)
             + 2 * per(b * 8192 / 2 * 2, 4))
    assert two_d.t_comm == pytest.approx(80 * layer)
    # on one node the switch sums in place (NVLS), so 1-D's single group of 8 is no slower
    # than 2-D's smaller groups: the 2x4 mesh saves no time on a node ...
    assert two_d.t_comm > one_d.t_comm
    # ... and on a 16x16 v5e pod the bytes per chip fall too, where 1-D's stay 2·B·D
    pod = inf.weight_stationary_2d(L70, V5E, batch=b, x=16, y=16)
    assert pod.bytes_x + pod.bytes_y == pytest.approx(
        b * (2 * 28672 + 80 * 128) / 16 * 2 + 2 * b * 8192 / 16 * 2)
    assert pod.bytes_x + pod.bytes_y < 0.5 * one_d.bytes_y
    # on a v5e, x and y must be the slice's own axes (4x2 for 8 chips)
    assert inf.weight_stationary_2d(L70, V5E, batch=b, x=4, y=2).t_comm > 0
    with pytest.raises(ValueError, match="axes 4x2"):
        inf.weight_stationary_2d(L70, V5E, batch=b, x=8, y=1)


def test_model_parallel_limit_is_where_ici_overtakes_hbm():
    cfg = llama3_8b()
    # NVLS and one-shot AllReduces take 2 steps or 1, not a ring's 2(n−1): inside an H100 node
    # tensor parallelism keeps paying at batch 1 (0.07 ms of AllReduces against 0.58 ms of HBM
    # on 8 GPUs)
    assert math.isinf(inf.model_parallel_limit(cfg, H100, batch=1, context_len=4096))
    at = inf.decode_step(cfg, H100, batch=1, context_len=4096, n_chips=8)
    assert at.t_comm < 0.2 * at.t_memory
    # priced as 14-step rings, the AllReduces overtook HBM at 8 GPUs
    ring8, ring4 = (inf.decode_step(cfg, H100, batch=1, context_len=4096, n_chips=k,
                                    algorithm="ring") for k in (8, 4))
    assert ring8.t_comm > ring8.t_memory and ring4.t_comm <= ring4.t_memory
    # a big batch moves more bytes per AllReduce but also reads more cache: none within a node
    assert math.isinf(inf.model_parallel_limit(L70, H100, batch=1, context_len=4096, sizes=[2, 4]))


def test_model_parallel_limit_is_finite_with_a_long_cache_split_by_head():
    # Past K = 8 chips a head-split cache stops splitting, so its reads never fall below the
    # AllReduces; the old criterion (t_comm > t_memory) found no limit at all at S = 8,192.
    sizes = [2, 4, 8, 16, 32, 64, 128, 256]
    limit = inf.model_parallel_limit(L70, V5E, batch=64, context_len=8192, sizes=sizes)
    assert math.isfinite(limit)
    steps = {n: inf.decode_step(L70, V5E, batch=64, context_len=8192, n_chips=n) for n in sizes}
    # the criterion: AllReduces above the weights' HBM time at the limit and at every larger size
    assert all(steps[n].t_comm > steps[n].t_weights_memory for n in sizes if n >= limit)
    below = max(n for n in sizes if n < limit)
    assert steps[below].t_comm <= steps[below].t_weights_memory
    # the cache split does not move it (the cache is left out, as the docstring says)
    assert inf.model_parallel_limit(L70, V5E, batch=64, context_len=8192, sizes=sizes,
                                    kv_sharding="batch") == limit


def test_model_parallel_limit_holds_at_every_larger_slice():
    # The AllReduce time is not monotonic in chips on a v5e (a 16-long axis wraps around where
    # an 8-long one does not: 4.05 ms at 2 chips, 3.44 at 4, 8.15 at 64, 7.27 at 128 for 70B
    # at B = 64), so "the first size that crosses" is not a limit; the limit must be a size from
    # which every larger one crosses, and adding smaller sizes to the list cannot move it up.
    comm = {n: inf.decode_step(L70, V5E, batch=64, context_len=4096, n_chips=n).t_comm
            for n in (2, 4, 64, 128)}
    assert comm[4] < comm[2] and comm[128] < comm[64]
    # (on a v5p, 8B at B = 32 and 4,096 tokens, the old first crossing was 32 chips while 64,
    # a cube with wraparound, did not cross)
    sizes = [2, 4, 8, 16, 32, 64, 128, 256]
    for chip in (V5E, get_chip("TPU v5p")):
        for cfg in (L70, llama3_8b()):
            for b in (1, 16, 32, 64, 256):
                limit = inf.model_parallel_limit(cfg, chip, batch=b, context_len=4096,
                                                 sizes=sizes)
                for n in sizes:
                    st = inf.decode_step(cfg, chip, batch=b, context_len=4096, n_chips=n)
                    if n >= limit:
                        assert st.t_comm > st.t_weights_memory, (chip.name, cfg.name, b, n)
                # dropping the sizes below 8 leaves the limit where it was (or at 8)
                assert inf.model_parallel_limit(cfg, chip, batch=b, context_len=4096,
                                                sizes=[s for s in sizes if s >= 8]) \
                    == max(limit, 8)
    # v5p: the default sizes stop at a power-of-two slice the generation ships (no 32-long axis)
    assert math.isfinite(inf.model_parallel_limit(L70, "TPU v5p", batch=1, context_len=4096))


def test_max_batch_and_smallest_slice():
    assert inf.max_batch(L70, H100, context_len=8192, n_chips=8) == 185
    assert inf.max_batch(L70, H100, context_len=8192, n_chips=1) == 0      # 141 GB > 80 GB
    assert inf.max_batch(L70, H100, context_len=8192, n_chips=8, reserve=0.1) < 185
    assert inf.smallest_slice(L70, H100, context_len=8192) == 2
    assert inf.smallest_slice(L70, V5E, context_len=8192) == 16
    assert inf.smallest_slice(L70, V5E, context_len=8192, weight_dtype="int8") == 8
    assert inf.smallest_slice(L70, H100, context_len=8192, batch=100) == 8
    with pytest.raises(ValueError, match="does not fit"):
        inf.smallest_slice(L70, H100, context_len=8192, batch=10_000)


def test_latency_grows_with_batch_and_best_batch_is_the_largest_that_meets_the_target():
    curve = inf.latency_throughput(L70, H100, batches=[1, 8, 64, 512], context_len=1024, n_chips=8)
    times = [s.time for s in curve]
    rates = [s.tokens_per_s for s in curve]
    assert times == sorted(times) and rates == sorted(rates)
    target = 0.02
    b = inf.best_batch(L70, H100, latency_target=target, context_len=4096, n_chips=8)
    assert 1 < b <= inf.max_batch(L70, H100, context_len=4096, n_chips=8)
    assert inf.decode_step(L70, H100, batch=b, context_len=4096, n_chips=8).time <= target
    assert inf.decode_step(L70, H100, batch=b + 1, context_len=4096, n_chips=8).time > target
    assert inf.best_batch(L70, H100, latency_target=1e-4, context_len=4096, n_chips=8) == 0
    assert inf.best_batch(L70, H100, latency_target=1.0, context_len=4096, n_chips=1) == 0


def test_cost_per_million_tokens():
    assert inf.cost_per_million_tokens(1000, n_chips=8, price_per_chip_hour=2.0) == pytest.approx(
        8 * 2.0 / 3600 / 1000 * 1e6)


@pytest.mark.parametrize("call, match", [
    (lambda: inf.decode_step(L70, "H900", batch=1, context_len=1), "unknown chip|H900"),
    (lambda: inf.decode_step(L70, H100, batch=1, context_len=1, weight_dtype="int3"), "unknown dtype"),
    (lambda: inf.decode_step(L70, H100, batch=0, context_len=1), "batch"),
    (lambda: inf.decode_step("70B", H100, batch=1, context_len=1), "TransformerConfig"),
    (lambda: inf.decode_step(L70, H100, batch=1, context_len=1, n_chips=16), "NVLink node"),
    (lambda: inf.max_batch(L70, H100, context_len=1, reserve=1.0), "reserve"),
    (lambda: inf.cost_per_million_tokens(0, n_chips=1, price_per_chip_hour=1), "tokens_per_s"),
])
def test_bad_input_gets_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_attention_split_by_sequence_pays_two_alltoalls_per_layer():
    # 16 v5e chips, K = 8: two groups; the two chips that hold the same KV head trade the
    # queries in and the outputs back, [B, H/K, d_h] each way, twice per layer
    b = 64
    alltoall = collective_cost("AllToAll", b * 8 * 128 * 2, [2], V5E).time
    assert inf.kv_regroup_time(L70, V5E, n_chips=16, tokens=b) == pytest.approx(2 * 80 * alltoall)
    heads = inf.decode_step(L70, V5E, batch=b, context_len=8192, n_chips=16, weight_dtype="int8")
    split = inf.decode_step(L70, V5E, batch=b, context_len=8192, n_chips=16, weight_dtype="int8",
                            kv_sharding="batch")
    assert split.t_comm == pytest.approx(heads.t_comm + 2 * 80 * alltoall)
    # up to K chips there is one group and nothing to trade
    assert inf.kv_regroup_time(L70, V5E, n_chips=8, tokens=b) == 0.0


def test_prefill_offers_the_causal_discount():
    full = inf.prefill(L70, H100, prompt_len=8192)
    causal = inf.prefill(L70, H100, prompt_len=8192, causal=True)
    assert causal.t_attention_compute == pytest.approx(full.t_attention_compute * 8193 / 16384)
    assert causal.t_weights_compute == full.t_weights_compute
    share = lambda st: st.t_attention_compute / (st.t_attention_compute + st.t_weights_compute)  # noqa: E731
    assert share(full) == pytest.approx(0.13, abs=0.01)                      # 13% of an 8K prefill
    long_full = inf.prefill(L70, H100, prompt_len=131072)
    long_causal = inf.prefill(L70, H100, prompt_len=131072, causal=True)
    assert share(long_full) == pytest.approx(0.71, abs=0.01)                 # dominates at 128K
    assert share(long_causal) == pytest.approx(0.55, abs=0.01)

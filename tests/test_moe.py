"""scalebook.moe: counts against the published configs, every formula against a hand count."""

from __future__ import annotations

import math

import pytest

from scalebook import collectives, moe, training
from scalebook.hardware import get_chip
from scalebook.transformer import TransformerConfig, param_count

MIX, DS = moe.mixtral_8x7b(), moe.deepseek_v3()
H100, V5P = get_chip("H100"), get_chip("TPU v5p")


def test_mixtral_counts_match_the_paper_and_training_active_params():
    p = moe.moe_param_count(MIX)
    # by hand: 32 layers x 8 experts x 3 x 4096 x 14336 routed; attention 2x4096^2 + 2x4096x1024
    assert p.routed == 32 * 8 * 3 * 4096 * 14336
    assert p.attention == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
    assert p.router == 32 * 4096 * 8
    assert p.total == 46_702_792_704                      # "46.7B" (Jiang et al. 2024)
    assert p.active == pytest.approx(12.88e9, rel=1e-3)   # "12.9B active"
    assert p.active == pytest.approx(
        training.active_params(p.total - p.routed, p.routed, n_experts=8, top_k=2))


def test_deepseek_v3_counts_match_the_report():
    p = moe.moe_param_count(DS)
    assert p.total == pytest.approx(671e9, rel=1e-3)      # 671B without the MTP module
    assert p.active == pytest.approx(37e9, rel=0.02)      # "37B activated"
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    assert p.attention == 61 * (mla + 1536 + 512)
    assert p.shared == 58 * 3 * 7168 * 2048
    assert p.dense_mlp == 3 * 3 * 7168 * 18432
    assert p.router == 58 * (7168 * 256 + 256)
    assert moe.kv_bytes_per_token(DS) == 61 * 576 * 2 == 70_272


def test_flops_use_active_not_total_params():
    p = moe.moe_param_count(MIX)
    assert moe.flops_per_token(MIX) == 2 * p.active_matmul
    assert moe.training_flops(MIX, 1e12) == pytest.approx(6 * p.active_matmul * 1e12)
    assert moe.training_flops(MIX, 1e12) < 6 * p.total * 1e12 / 3
    # attention: 4 L T H d_h for GQA, the transformer module's count
    extra = moe.flops_per_token(MIX, context_len=1000) - moe.flops_per_token(MIX)
    assert extra == pytest.approx(4 * 32 * 1000 * 32 * 128)


def test_dense_equivalent_has_the_same_active_mlp():
    d = moe.dense_equivalent(MIX)
    assert d.d_ff == 2 * 14336
    p = moe.moe_param_count(MIX)
    assert param_count(d).mlp == pytest.approx(p.active_routed)


def test_critical_batch_is_e_over_k_times_dense():
    dense = moe.dense_critical_batch(H100)
    assert dense == pytest.approx(9.89e14 * 2 / (2 * 3.35e12))
    assert moe.moe_critical_batch(H100, 256, 8) == pytest.approx(32 * dense)
    assert moe.moe_critical_batch(H100, 8, 2, weight_dtype="fp8", compute_dtype="fp8") == \
        pytest.approx(4 * 1.979e15 / (2 * 3.35e12))


def test_layer_roofline_crosses_near_the_critical_batch():
    b_star = moe.moe_critical_batch(H100, MIX.n_experts, MIX.top_k)
    below = moe.moe_layer_roofline(MIX, H100, tokens=b_star / 2)
    above = moe.moe_layer_roofline(MIX, H100, tokens=b_star * 2)
    assert below.bound == "memory" and above.bound == "compute"
    one = moe.moe_layer_roofline(MIX, H100, tokens=1)
    assert one.weight_bytes == pytest.approx(2 * MIX.expert_params * 2)   # two experts read
    assert moe.experts_touched(8, 2, 1) == pytest.approx(2)
    assert moe.experts_touched(8, 2, 16) == pytest.approx(8 * (1 - 0.75 ** 16))


def test_capacity_and_drops_by_hand():
    assert moe.expert_capacity(4096, 64, 1, 1.0) == 64
    assert moe.expert_capacity(4096, 64, 2, 1.25) == 160
    assert moe.expert_capacity(100, 8, 2, 1.0) == 25
    assert moe.dropped_fraction([10, 0, 3, 7], 5) == pytest.approx((5 + 2) / 20)
    assert moe.dropped_fraction([0, 0], 1) == 0.0
    low = moe.expected_dropped_fraction(4096, 64, 1, 1.0)
    high = moe.expected_dropped_fraction(4096, 64, 1, 1.25)
    assert 0.03 < low < 0.07 and high < low / 10
    # one expert, everything fits at c = 1
    assert moe.expected_dropped_fraction(16, 1, 1, 1.0) == 0.0


def test_expected_drops_against_a_direct_binomial_sum():
    B, E, k, c = 64, 8, 2, 1.0
    cap = moe.expert_capacity(B, E, k, c)
    p = k / E
    excess = sum((x - cap) * math.comb(B, x) * p ** x * (1 - p) ** (B - x)
                 for x in range(cap + 1, B + 1))
    assert moe.expected_dropped_fraction(B, E, k, c) == pytest.approx(E * excess / (B * k))


def test_imbalance_sets_step_time_and_capacity_caps_it():
    assert moe.imbalance([1, 1, 1, 1]) == 1
    assert moe.imbalance([4, 2, 1, 1]) == 2
    assert moe.imbalanced_time(1e-3, [4, 2, 1, 1]) == pytest.approx(2e-3)
    # c·mean = 2.5 rounds up to 3 slots (expert_capacity's rounding): 3/2 = 1.5, not c = 1.25
    assert moe.imbalanced_time(1e-3, [4, 2, 1, 1], capacity_factor=1.25) == pytest.approx(1.5e-3)
    with pytest.raises(ValueError):
        moe.imbalance([0, 0])


def test_node_limited_routing():
    free = moe.expected_nodes_per_token(256, 8, 8)
    assert free == pytest.approx(8 * (1 - math.comb(224, 8) / math.comb(256, 8)))
    assert 5 < free < 5.5
    assert moe.expected_nodes_per_token(256, 8, 8, max_nodes=4) == 4
    assert moe.expected_nodes_per_token(8, 8, 8) == 8


def test_part7_groups_are_priced_by_the_one_entry_point():
    # 16 v5p chips as one axis form no cube: a line; the cube 4x4x4 is a full torus
    assert collectives.collective_cost("all_to_all", 1e9, 16, V5P).time == \
        collectives.all_to_all(1e9, 16, V5P, wraparound=False).time
    assert moe.tpu_ep_axes(V5P, 64) == [4, 4, 4]
    cube = collectives.collective_cost("all_to_all", 1e9, [4, 4, 4], V5P)
    assert cube.time == pytest.approx(3 * collectives.all_to_all(1e9 / 16, 4, V5P).time)
    assert collectives.collective_cost("all_to_all", 1e9, 64, H100).time == \
        collectives.gpu_all_to_all(1e9, 64, H100).time
    assert collectives.collective_cost("all_gather", 1e9, [4, 4], V5P).time == \
        collectives.all_gather_multi_axis(1e9, [4, 4], V5P, wraparound=False).time
    # a v5e axis shorter than 16 has no wraparound
    assert collectives.collective_cost("all_to_all", 1e9, 8, "TPU v5e").time == \
        collectives.all_to_all(1e9, 8, "TPU v5e", wraparound=False).time
    two = collectives.collective_cost("all_to_all", 1e9, [4, 4], V5P)
    assert two.time == pytest.approx(2 * collectives.all_to_all(1e9 / 4, 4, V5P,
                                                                wraparound=False).time)
    assert collectives.collective_cost("ppermute", 1e6, 8, H100).time == pytest.approx(1e6 / 4.5e11 + collectives.DEFAULT_HOP_LATENCY)
    with pytest.raises(ValueError):
        collectives.collective_cost("broadcast", 1, 2, H100)


def test_dispatch_bytes_by_hand_and_the_allgather_slip():
    a2a = moe.moe_all_to_all(4096, 7168, 8, 64, H100)
    V = 8 * 4096 * 64 * 7168 * 2
    assert a2a.nbytes == V
    assert a2a.sent_per_chip == pytest.approx(63 / 64 * V / 64)
    # across 8 nodes: 56/64 of each chip's block leaves by its 50 GB/s NIC
    assert a2a.dispatch.bandwidth_time == pytest.approx(V / 64 * 56 / 64 / 50e9)
    assert a2a.forward == pytest.approx(2 * a2a.dispatch.time)
    assert a2a.training == pytest.approx(4 * a2a.dispatch.time)
    gather = collectives.collective_cost("all_gather", V, 64, H100)
    # the slip: an AllGather over NCCL's rail rings moves V·(N−1)/N through g NICs a node, the
    # AllToAll V/N·(N−g)/N through each GPU's own: N·(N−1)/(g·(N−g)) = 9 times longer here
    assert gather.bandwidth_time == pytest.approx(9 * a2a.dispatch.bandwidth_time)
    capped = moe.moe_all_to_all(4096, 7168, 8, 64, H100, capacity_factor=1.25)
    assert capped.nbytes == pytest.approx(1.25 * V)


def test_expert_layouts_trade_token_traffic_for_weight_traffic():
    small = moe.expert_weight_layouts(DS, H100, n_chips=8, tokens_per_chip=256)
    big = moe.expert_weight_layouts(DS, H100, n_chips=8, tokens_per_chip=65536 * 4)
    for lay in (small, big):
        assert len({round(l.weight_bytes_per_chip) for l in lay.values()}) == 1
    # FSDP's traffic does not grow with tokens; EP's and TP's do
    assert small["FSDP"].comm == pytest.approx(big["FSDP"].comm)
    assert big["EP"].comm == pytest.approx(1024 * small["EP"].comm, rel=0.02)  # bar latency
    assert small["EP"].comm < small["FSDP"].comm
    # in a switch EP sends 2·k·t·D·b per chip, FSDP E·3·D·F_e·b: they cross at t = 3·E·F_e/(2k)
    assert big["FSDP"].comm < big["EP"].comm
    assert moe.expert_memory_per_chip(DS, ep=64) == pytest.approx(
        moe.moe_param_count(DS).routed * 2 / 64)
    with pytest.raises(ValueError):
        moe.expert_memory_per_chip(DS, ep=48)


def test_bad_shapes_are_refused_clearly():
    base = TransformerConfig(d_model=64, n_layers=2, n_heads=4, d_ff=128, vocab_size=100)
    with pytest.raises(ValueError, match="top_k"):
        moe.MoEConfig(base=base, n_experts=4, top_k=5, d_expert=32)
    with pytest.raises(ValueError, match="n_dense_layers"):
        moe.MoEConfig(base=base, n_experts=4, top_k=1, d_expert=32, n_dense_layers=2)
    with pytest.raises(ValueError):
        moe.moe_param_count(base)
    with pytest.raises(ValueError):
        moe.expert_capacity(0, 4, 1, 1.0)


def test_a_capped_step_uses_whole_slots_and_padded_buffers_cost_c_every_step():
    loads = [3, 1, 1, 1, 1, 1, 1, 1]            # mean 1.25: ⌈1.25 × 1.25⌉ = 2 slots
    assert moe.imbalanced_time(1.0, loads, capacity_factor=1.25) == pytest.approx(1.6)
    balanced = [100] * 8                        # padded: 125 slots computed even when balanced
    assert moe.imbalanced_time(1.0, balanced, capacity_factor=1.25) == pytest.approx(1.0)
    assert moe.imbalanced_time(1.0, balanced, capacity_factor=1.25, padded=True) == \
        pytest.approx(1.25)
    with pytest.raises(ValueError, match="capacity_factor"):
        moe.imbalanced_time(1.0, balanced, padded=True)


def test_mla_cache_is_576_wide_and_absorbed_decode_costs_3_4x_the_mha_count():
    mla = DS.mla
    assert mla.cache_width == 512 + 64 == 576
    assert mla.cache_bytes_per_token_layer("bf16") == 1152
    assert mla.absorbed_flops_per_key(128) == 2 * 128 * (576 + 512) == 278_528
    assert mla.expanded_flops_per_key(128) == 2 * 128 * (128 + 64 + 128) == 81_920
    assert moe.attention_flops_per_key(DS, absorbed=True) == pytest.approx(
        3.4 * moe.attention_flops_per_key(DS))
    # decode from the latent: 241.8 FLOPs per cache byte against an H100's ridge of 295
    assert mla.decode_intensity(128) == pytest.approx(278_528 / 1152)
    assert 0.8 < mla.decode_intensity(128) / (H100.flops("bf16") / H100.hbm_bandwidth) < 0.85
    assert mla.decode_intensity(128, queries_per_read=2) == pytest.approx(2 * 241.78, rel=1e-3)
    with_ctx = moe.flops_per_token(DS, context_len=1000, absorbed=True) - moe.flops_per_token(DS)
    assert with_ctx == pytest.approx(61 * 278_528 * 1000)
    # grouped-query models have no absorbed form: the flag changes nothing
    assert moe.flops_per_token(MIX, context_len=10, absorbed=True) == \
        moe.flops_per_token(MIX, context_len=10)


def test_mla_latent_is_copied_under_tp_attention_and_weights_under_dp():
    kw = dict(context_len=131072, n_chips=16, weight_dtype="fp8")
    # the old model split the latent 16 ways and fitted 66 sequences
    assert moe.moe_max_batch(DS, H100, **kw) == 4
    assert moe.moe_max_batch(DS, H100, attention="tp", **kw) == 4
    assert moe.moe_max_batch(DS, H100, attention="dp", **kw) == 32
    assert moe.non_routed_bytes(DS, "fp8") == pytest.approx(17.1e9, rel=0.01)
    for attention in moe.ATTENTION_LAYOUTS:
        assert moe.moe_max_batch(DS, H100, context_len=131072, n_chips=8, weight_dtype="fp8",
                                 attention=attention) == 0
    # grouped-query caches still split over the KV heads under TP
    per_seq = 131072 * moe.kv_bytes_per_token(MIX)
    free = H100.hbm_bytes - moe.weight_bytes(MIX) / 8
    assert moe.moe_max_batch(MIX, H100, context_len=131072, n_chips=8) == int(free // (per_seq / 8))
    with pytest.raises(ValueError, match="attention"):
        moe.moe_max_batch(DS, H100, context_len=1024, attention="sp")


def test_mla_decode_reads_the_whole_latent_on_every_tp_rank():
    kw = dict(batch=4, context_len=131072, n_chips=16, weight_dtype="fp8", compute_dtype="fp8")
    tp = moe.moe_decode_step(DS, H100, attention="tp", **kw)
    dp = moe.moe_decode_step(DS, H100, attention="dp", **kw)
    cache = 4 * 131072 * moe.kv_bytes_per_token(DS)
    assert tp.kv_bytes == pytest.approx(cache)            # every rank reads every latent
    assert dp.kv_bytes == pytest.approx(cache / 16)
    assert dp.weight_bytes > moe.non_routed_bytes(DS, "fp8")   # a whole copy on every chip
    attn = 4 * 131072 * 61 * 278_528 / 16
    assert tp.attention_flops == pytest.approx(attn)
    assert tp.t_compute == pytest.approx((tp.flops - attn) / H100.flops("fp8")
                                         + attn / H100.flops("bf16"))
    # at 66 sequences (what the old cache split allowed) the absorbed attention alone is 9.3 ms
    big = moe.moe_decode_step(DS, H100, batch=66, context_len=131072, n_chips=16,
                              weight_dtype="fp8", compute_dtype="fp8")
    assert big.attention_flops / H100.flops("bf16") == pytest.approx(9.3e-3, rel=0.01)


def test_wide_ep_reaches_the_critical_batch_that_one_node_cannot():
    n = moe.smallest_ep_for_critical_batch(DS, H100, context_len=4096)
    target = moe.moe_critical_batch(H100, 256, 8, weight_dtype="fp8", compute_dtype="fp8")
    assert n is not None and n % 8 == 0
    assert moe.moe_max_batch(DS, H100, context_len=4096, n_chips=n, weight_dtype="fp8",
                             attention="dp") >= target
    assert moe.moe_max_batch(DS, H100, context_len=4096, n_chips=n - 8, weight_dtype="fp8",
                             attention="dp") < target
    assert moe.smallest_ep_for_critical_batch(DS, H100, context_len=4096, max_chips=16) is None


def test_expert_tp_reduce_scatters_one_summed_output_per_token():
    lay = moe.expert_weight_layouts(DS, H100, n_chips=64, tokens_per_chip=4096)
    b = 2
    gather = collectives.collective_cost("all_gather", 4096 * 64 * 7168 * b, 64, H100)
    scatter = collectives.collective_cost("reduce_scatter", 4096 * 64 * 7168 * b, 64, H100)
    assert lay["TP"].comm == pytest.approx(gather.time + scatter.time)
    assert lay["TP"].comm == pytest.approx(18.6e-3, rel=0.01)     # was 83.4 ms with k·B·D·b
    node = moe.expert_weight_layouts(DS, H100, n_chips=8, tokens_per_chip=4096)
    assert node["EP"].weight_bytes_per_chip == pytest.approx(2.82e9, rel=0.01)
    assert node["EP"].comm == pytest.approx(1.83e-3, rel=0.01)
    # in one NVLink node TP moves what EP moves
    assert node["TP"].comm == pytest.approx(node["EP"].comm, rel=0.01)


def test_training_flops_count_matmul_weights_not_the_embedding_lookup():
    p = moe.moe_param_count(DS)
    assert moe.training_flops(DS, 14.8e12) == pytest.approx(6 * p.active_matmul * 14.8e12)
    assert moe.training_flops(DS, 14.8e12) == pytest.approx(3.25e24, rel=0.01)
    assert 6 * p.active * 14.8e12 == pytest.approx(3.33e24, rel=0.01)


def test_prefill_throughput_is_compute_bound_at_peak():
    tps = moe.moe_prefill_throughput(DS, H100, prompt_len=2000, n_chips=8)
    p = moe.moe_param_count(DS)
    per_token = (2 * p.active_matmul / H100.flops("fp8")
                 + 1000 * moe.attention_flops_per_key(DS) / H100.flops("bf16"))
    assert tps == pytest.approx(8 / per_token)
    assert moe.moe_prefill_throughput(DS, H100, prompt_len=2000, cached_share=0.5) == \
        pytest.approx(2 * tps / 8)
    with pytest.raises(ValueError, match="cached_share"):
        moe.moe_prefill_throughput(DS, H100, prompt_len=2000, cached_share=1.0)


def test_64_v5p_chips_are_the_wrapped_cube_not_16x4():
    from scalebook import topology
    with pytest.raises(ValueError):
        topology.tpu_slice("v5p", "16x4")
    a2a = moe.moe_all_to_all(4096, 7168, 8, moe.tpu_ep_axes(V5P, 64), V5P)
    assert a2a.dispatch.time == pytest.approx(7.84e-3, rel=0.01)

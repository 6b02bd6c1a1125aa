"""scalebook.long_context: ring and all-to-all context parallelism against hand counts."""

from __future__ import annotations

import pytest

from scalebook import collectives, long_context as lc
from scalebook.hardware import get_chip

L70 = lc.AttentionShape(n_heads=64, n_kv_heads=8, d_head=128)
V5P, H100 = get_chip("TPU v5p"), get_chip("H100")


def test_contiguous_causal_ring_is_twice_the_ideal_and_zigzag_is_balanced():
    for cp in (2, 4, 8, 16):
        plain = lc.causal_ring_schedule(cp)
        zig = lc.causal_ring_schedule(cp, zigzag=True)
        assert plain.step_time == pytest.approx(cp - 0.5)     # half a block, then full blocks
        assert plain.ideal == pytest.approx(cp / 2)
        assert zig.step_time == pytest.approx(cp / 2)
        assert zig.imbalance == pytest.approx(1)
        assert all(len(set(row)) == 1 for row in zig.work)   # every chip equal at every step
    # total work is the causal half of the whole score matrix in both layouts
    assert sum(map(sum, lc.causal_ring_schedule(8).work)) == pytest.approx(8 * 8 / 2)


def test_ring_attention_by_hand():
    r = lc.ring_attention(131072, 16, L70, V5P, zigzag=False)
    blk = 131072 // 16
    assert r.kv_block_bytes == 2 * blk * 8 * 128 * 2
    assert r.steps == 15 and r.bytes_per_layer == 15 * r.kv_block_bytes
    assert r.send.time == pytest.approx(collectives.ppermute(r.kv_block_bytes, V5P, n_devices=16).time)
    assert r.block_flops == 4 * blk * blk * 64 * 128
    assert r.t_block == pytest.approx(r.block_flops / 4.59e14)
    assert r.overlapped
    # contiguous causal: half a block then 15 full blocks, each hiding its send
    assert r.time == pytest.approx(0.5 * r.t_block + 15 * r.t_block)
    zig = lc.ring_attention(131072, 16, L70, V5P)
    assert zig.time == pytest.approx(16 * 0.5 * r.t_block)
    assert r.memory_bytes == pytest.approx(2 * blk * 64 * 128 * 2 + 3 * r.kv_block_bytes)


def test_overlap_condition():
    t = lc.ring_overlap_block(L70, V5P)
    assert t == pytest.approx(4.59e14 * 8 * 2 / (2 * 64 * 9e10))
    blk = 2 ** 9   # 512 < 637: the send shows
    slow = lc.ring_attention(blk * 8, 8, L70, V5P, causal=False)
    fast = lc.ring_attention(2 ** 11 * 8, 8, L70, V5P, causal=False)
    assert not slow.overlapped and fast.overlapped
    assert slow.time == pytest.approx(7 * slow.send.time + slow.t_block)


def test_ulysses_by_hand_and_its_limit():
    u = lc.ulysses_attention(131072, 8, L70, H100)
    V = (64 + 16) * 131072 * 128 * 2
    assert u.qkv.nbytes == V
    assert u.qkv.time == pytest.approx(collectives.gpu_all_to_all(V, 8, H100).time)
    assert u.bytes_sent_per_chip == pytest.approx(7 / 8 * (V + 64 * 131072 * 128 * 2) / 8)
    assert u.memory_bytes == pytest.approx(131072 * (128 + 16) / 8 * 128 * 2)
    with pytest.raises(ValueError, match="n_kv_heads"):
        lc.ulysses_attention(131072, 16, L70, H100)
    # per-chip bytes fall as 1/C for Ulysses; ring's stay near the whole sequence's KV
    ring = lc.ring_attention(131072, 8, L70, H100)
    assert ring.bytes_per_layer > 0.8 * 2 * 131072 * 8 * 128 * 2 * 7 / 8


def test_bad_input():
    with pytest.raises(ValueError):
        lc.AttentionShape(n_heads=6, n_kv_heads=4, d_head=8)
    with pytest.raises(ValueError, match="chunks"):
        lc.ring_attention(100, 8, L70, V5P)


def test_ulysses_sends_more_than_ring_for_gqa_until_c_exceeds_h_over_k_plus_1():
    shape = lc.AttentionShape(n_heads=64, n_kv_heads=8, d_head=128)
    uly = lc.ulysses_attention(131072, 8, shape, H100)
    ring = lc.ring_attention(131072, 8, shape, H100)
    ratio = uly.bytes_sent_per_chip / ring.bytes_per_layer
    assert ratio == pytest.approx(lc.ulysses_over_ring_bytes(shape, 8)) == pytest.approx(9 / 8)
    assert ratio > 1 > 1 / 8            # "Ulysses sends 1/C as much" holds for neither
    mha = lc.AttentionShape(n_heads=8, n_kv_heads=8, d_head=128)
    assert lc.ulysses_over_ring_bytes(mha, 8) == pytest.approx(2 / 8)

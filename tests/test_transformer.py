"""Tests for scalebook.transformer: parameter counts, FLOPs, KV cache and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scalebook import transformer as tf
from scalebook.hardware import get_chip

LLAMA8 = tf.llama3_8b()
LLAMA70 = tf.llama3_70b()


def test_defaults_for_kv_heads_and_head_width():
    cfg = tf.TransformerConfig(d_model=512, n_layers=2, n_heads=8, d_ff=2048, vocab_size=1000)
    assert cfg.n_kv_heads == 8
    assert cfg.d_head == 64
    assert cfg.mlp_matrices == 3
    assert LLAMA8.d_head == 128 and LLAMA8.n_kv_heads == 8


def test_llama3_8b_param_count():
    counts = tf.param_count(LLAMA8)
    assert counts.total == pytest.approx(8.0e9, rel=0.02)
    assert counts.total == 8_030_261_248  # the published count, norms included
    assert counts.attention_q == 32 * 4096 * 4096
    assert counts.attention_k == counts.attention_v == 32 * 4096 * 1024
    assert counts.attention_o == counts.attention_q
    assert counts.mlp == 32 * 3 * 4096 * 14336
    assert counts.norms == 32 * 2 * 4096 + 4096
    assert counts.embedding == counts.unembedding == 128256 * 4096
    assert counts.matmul == counts.attention + counts.mlp + 128256 * 4096


def test_llama3_70b_param_count():
    counts = tf.param_count(LLAMA70)
    assert counts.total == pytest.approx(70.6e9, rel=0.02)
    assert counts.total == 70_553_706_496


def test_example_configs():
    assert tf.EXAMPLE_CONFIGS["llama3-8b"] == LLAMA8
    assert tf.EXAMPLE_CONFIGS["llama3-70b"] == LLAMA70


def test_tied_and_ungated_variants():
    tied = tf.TransformerConfig(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
                                vocab_size=128256, tied_embeddings=True)
    assert tf.param_count(LLAMA8).total - tf.param_count(tied).total == 128256 * 4096
    assert tf.param_count(tied).matmul == tf.param_count(LLAMA8).matmul  # still a D x V matmul
    plain = tf.TransformerConfig(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
                                 vocab_size=128256, gated_mlp=False)
    assert tf.param_count(LLAMA8).mlp - tf.param_count(plain).mlp == 32 * 4096 * 14336


def test_training_flops():
    matmul = tf.param_count(LLAMA8).matmul
    assert tf.training_flops(LLAMA8, 1e12) == pytest.approx(6 * matmul * 1e12)
    # HSYM part 5: LLaMA-3 70B on 15T tokens is about 6.3e24 FLOPs.
    assert tf.training_flops(LLAMA70, 15e12) == pytest.approx(6.3e24, rel=0.02)
    with_attn = tf.training_flops(LLAMA8, 1e6, include_attention=True, seq_len=8192)
    extra = 12 * 32 * 8192 * 32 * 128 * 1e6
    assert with_attn - tf.training_flops(LLAMA8, 1e6) == pytest.approx(extra)
    swept = tf.training_flops(LLAMA8, np.array([1.0, 2.0]))
    np.testing.assert_allclose(swept, [6 * matmul, 12 * matmul])


def test_inference_flops_per_token():
    matmul = tf.param_count(LLAMA8).matmul
    assert tf.inference_flops_per_token(LLAMA8) == pytest.approx(2 * matmul)
    assert tf.inference_flops_per_token(LLAMA8, context_len=4096) == pytest.approx(
        2 * matmul + 4 * 32 * 4096 * 32 * 128)
    assert tf.attention_flops_per_token(LLAMA8, 0) == 0.0


def test_kv_cache_8b_at_8192_is_one_gib():
    assert tf.kv_cache_bytes(LLAMA8, seq_len=8192) == 1_073_741_824
    assert tf.kv_cache_bytes(LLAMA8, seq_len=8192, batch=4, dtype="int8") == 2 * 1_073_741_824
    swept = tf.kv_cache_bytes(LLAMA8, seq_len=np.array([4096, 8192]))
    np.testing.assert_allclose(swept, [2 ** 29, 2 ** 30])


def test_bad_inputs():
    with pytest.raises(ValueError, match="d_model must be a positive integer"):
        tf.TransformerConfig(d_model=0, n_layers=2, n_heads=8, d_ff=2048, vocab_size=1000)
    with pytest.raises(ValueError, match=r"n_kv_heads \(3\) must divide n_heads \(8\)"):
        tf.TransformerConfig(d_model=512, n_layers=2, n_heads=8, n_kv_heads=3, d_ff=2048,
                             vocab_size=1000)
    with pytest.raises(ValueError, match="gated_mlp must be True or False"):
        tf.TransformerConfig(d_model=512, n_layers=2, n_heads=8, d_ff=2048, vocab_size=1000,
                             gated_mlp="yes")
    with pytest.raises(ValueError, match="needs seq_len"):
        tf.training_flops(LLAMA8, 1e6, include_attention=True)
    with pytest.raises(ValueError, match="tokens must be positive"):
        tf.training_flops(LLAMA8, 0)
    with pytest.raises(ValueError, match="seq_len must be positive"):
        tf.kv_cache_bytes(LLAMA8, seq_len=-1)
    with pytest.raises(ValueError, match="unknown dtype"):
        tf.kv_cache_bytes(LLAMA8, seq_len=8192, dtype="bf12")
    with pytest.raises(ValueError, match="context_len must be non-negative"):
        tf.inference_flops_per_token(LLAMA8, context_len=-5)
    with pytest.raises(ValueError, match="cfg must be a TransformerConfig"):
        tf.param_count("llama")


# --------------------------------------------------------------------------- attention intensity

# LLaMA-3 70B's attention: 64 query heads over 8 KV heads of 128 (G = 8).
GQA = dict(n_heads=64, n_kv_heads=8, head_dim=128)
H100 = get_chip("H100")
# A round-number chip: C / W = 2e14 / 1e12 = 200 FLOPs/byte in bf16.
ROUND = H100.replace(name="round", flops_per_s={"bf16": 2e14}, hbm_bandwidth=1e12)


def test_decode_attention_cost_by_hand():
    cost = tf.attention_cost(8192, **GQA)  # decode is the default phase
    assert cost.phase == "decode"
    assert cost.flops == 4 * 8192 * 64 * 128 == 268_435_456
    assert cost.kv_bytes == 2 * 8192 * 8 * 128 * 2 == 33_554_432  # the layer's bf16 KV cache
    assert cost.q_bytes == cost.out_bytes == 64 * 128 * 2
    assert cost.total_bytes == 33_587_200
    # 2·S·H / (S·K·b + H·b) = 2·8192·64 / (8192·8·2 + 64·2) = 1,048,576 / 131,200
    assert cost.intensity == pytest.approx(1_048_576 / 131_200)
    assert cost.intensity < 8  # below the limit G = 8


def test_prefill_attention_cost_by_hand():
    cost = tf.attention_cost(8192, phase="prefill", **GQA)
    assert cost.flops == 4 * 8192 ** 2 * 64 * 128
    assert cost.q_bytes == cost.out_bytes == 8192 * 64 * 128 * 2
    assert cost.kv_bytes == 2 * 8192 * 8 * 128 * 2
    # 2·S·H / (H·b + K·b) = 2·8192·64 / (128 + 16)
    assert cost.intensity == pytest.approx(2 * 8192 * 64 / 144)
    causal = tf.attention_cost(8192, phase="prefill", causal=True, **GQA)
    assert causal.flops == 4 * (8192 * 8193 / 2) * 64 * 128  # query i sees i + 1 keys
    assert causal.total_bytes == cost.total_bytes
    # MHA (K = H): 2·S·H / (2·H·b) = S / b -- 4096 FLOPs/byte at S = 8192 in bf16.
    mha = tf.attention_cost(8192, phase="prefill", n_heads=32, n_kv_heads=32, head_dim=128)
    assert mha.intensity == pytest.approx(4096)


def test_decode_intensity_rises_to_twice_g_over_kv_bytes_and_batch_does_not_help():
    contexts = np.array([1, 8, 64, 8192, 1e9])
    intensity = tf.attention_cost(contexts, **GQA).intensity
    assert np.all(np.diff(intensity) > 0)
    assert intensity[0] == pytest.approx(2 * 64 / (8 * 2 + 64 * 2))  # S = 1: 128/144
    assert intensity[-1] == pytest.approx(8, rel=1e-6)
    assert tf.attention_intensity_limit(n_heads=64, n_kv_heads=8) == 8.0  # 2·G / 2 bytes
    assert tf.attention_intensity_limit(n_heads=32, n_kv_heads=32) == 1.0  # MHA
    assert tf.attention_intensity_limit(n_heads=64, n_kv_heads=8, kv_dtype="int8") == 16.0
    one = tf.attention_cost(4096, **GQA)
    many = tf.attention_cost(4096, batch=32, **GQA)
    assert many.flops == 32 * one.flops and many.total_bytes == 32 * one.total_bytes
    assert many.intensity == pytest.approx(one.intensity)


def test_int8_kv_cache_doubles_decode_intensity_for_long_contexts():
    bf16 = tf.attention_cost(1e6, **GQA)
    int8 = tf.attention_cost(1e6, kv_dtype="int8", **GQA)
    assert int8.kv_bytes == bf16.kv_bytes / 2
    assert int8.q_bytes == bf16.q_bytes  # queries stay in bf16
    assert int8.intensity == pytest.approx(2 * bf16.intensity, rel=1e-4)


def test_critical_context_for_prefill():
    # I* = 200: S* = 200 · (64·2 + 8·2) / (2·64) = 225; causal: 200 · 144 / 64 − 1 = 449.
    s_star = tf.attention_critical_context(ROUND, phase="prefill", **GQA)
    assert s_star == pytest.approx(225)
    assert tf.attention_cost(s_star, phase="prefill", **GQA).intensity == pytest.approx(200)
    causal = tf.attention_critical_context(ROUND, phase="prefill", causal=True, **GQA)
    assert causal == pytest.approx(449)
    assert tf.attention_cost(causal, phase="prefill", causal=True,
                             **GQA).intensity == pytest.approx(200)
    # MHA: S* = I* · b = 400.
    assert tf.attention_critical_context(ROUND, phase="prefill", n_heads=16, n_kv_heads=16,
                                         head_dim=64) == pytest.approx(400)
    # LLaMA-3 70B on an H100: 9.89e14 / 3.35e12 · 144 / 128 ≈ 332 tokens.
    assert tf.attention_critical_context("H100", phase="prefill", **GQA) == pytest.approx(
        9.89e14 / 3.35e12 * 144 / 128)
    # A tiny critical intensity makes every causal prompt compute-bound: clipped at 0.
    easy = H100.replace(flops_per_s={"bf16": 1e12})  # I* = 0.3
    assert tf.attention_critical_context(easy, phase="prefill", causal=True, **GQA) == 0.0


def test_critical_context_for_decode_is_never_for_gqa_and_finite_for_wide_mqa():
    assert tf.attention_critical_context("H100", phase="decode", **GQA) == math.inf
    assert tf.attention_critical_context(ROUND, phase="decode", **GQA) == math.inf
    # MQA, 128 heads, int8 cache: limit 2·128 / 1 = 256 > 200, so
    # S* = I*·H·b / (2·H − I*·K·b_kv) = 200·128·2 / (256 − 200) = 51,200 / 56.
    mqa = dict(n_heads=128, n_kv_heads=1, head_dim=128)
    s_star = tf.attention_critical_context(ROUND, phase="decode", kv_dtype="int8", **mqa)
    assert s_star == pytest.approx(51_200 / 56)
    assert tf.attention_cost(s_star, kv_dtype="int8", **mqa).intensity == pytest.approx(200)
    # At exactly the limit (2·H = I*·K·b_kv) it never crosses.
    edge = ROUND.replace(flops_per_s={"bf16": 2.56e14})  # I* = 256
    assert tf.attention_critical_context(edge, phase="decode", kv_dtype="int8", **mqa) == math.inf


@pytest.mark.parametrize("kwargs, message", [
    ({"phase": "generate"}, "phase must be one of prefill, decode"),
    ({"phase": None}, "phase must be one of prefill, decode"),
    ({"n_kv_heads": 3}, r"n_kv_heads \(3\) must divide n_heads \(64\)"),
    ({"n_heads": 0}, "n_heads must be a positive integer"),
    ({"head_dim": 12.5}, "head_dim must be a positive integer"),
    ({"context_len": 0}, "context_len must be positive"),
    ({"context_len": np.array([1, -2])}, "context_len must be positive"),
    ({"dtype": "bf12"}, "unknown dtype"),
    ({"kv_dtype": "int3"}, "unknown dtype"),
    ({"batch": 0}, "batch must be a positive integer"),
    ({"causal": "yes"}, "causal must be True or False"),
])
def test_attention_cost_rejects_bad_input(kwargs, message):
    args = dict(context_len=1024, **GQA)
    args.update(kwargs)
    context = args.pop("context_len")
    with pytest.raises(ValueError, match=message):
        tf.attention_cost(context, **args)


@pytest.mark.parametrize("chip, kwargs, message", [
    ("TPU v9", {}, "unknown chip"),
    ("H100", {"dtype": "fp32"}, "H100 has no fp32 FLOPs/s figure"),
    ("H100", {"phase": "both"}, "phase must be one of prefill, decode"),
    ("H100", {"n_kv_heads": 5}, r"n_kv_heads \(5\) must divide n_heads \(64\)"),
    ("H100", {"causal": 1}, "causal must be True or False"),
])
def test_attention_critical_context_rejects_bad_input(chip, kwargs, message):
    args = dict(phase="prefill", **GQA)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        tf.attention_critical_context(chip, **args)


def test_attention_intensity_limit_rejects_bad_input():
    with pytest.raises(ValueError, match=r"n_kv_heads \(3\) must divide n_heads \(8\)"):
        tf.attention_intensity_limit(n_heads=8, n_kv_heads=3)
    with pytest.raises(ValueError, match="unknown dtype"):
        tf.attention_intensity_limit(n_heads=8, n_kv_heads=1, dtype="fp9")


# --------------------------------------------------------------------------- FLOPs per token by block


def test_flops_per_token_by_block_llama3_70b():
    f = tf.flops_per_token(LLAMA70, 8192)
    D, L, H, K, dh, F, V = 8192, 80, 64, 8, 128, 28672, 128256
    assert f.attention_projections == 2 * L * D * (2 * H + 2 * K) * dh
    assert f.mlp == 2 * L * 3 * D * F
    assert f.unembedding == 2 * D * V
    assert f.attention_core == 4 * L * 8192 * H * dh
    assert f.matmul == 2 * tf.param_count(LLAMA70).matmul
    assert f.training == 3 * f.forward == pytest.approx(
        tf.training_flops(LLAMA70, 1, include_attention=True, seq_len=8192))
    assert f.backward == 2 * f.forward
    assert f.attention_share == pytest.approx(21474836480 / (139003428864 + 21474836480))


def test_flops_per_token_sweeps_context():
    f = tf.flops_per_token(LLAMA8, np.array([1024, 8192, 131072]))
    assert f.attention_core.shape == (3,)
    assert np.all(np.diff(f.attention_share) > 0)  # attention's share grows with T
    with pytest.raises(ValueError):
        tf.flops_per_token("llama", 8192)
    with pytest.raises(ValueError):
        tf.flops_per_token(LLAMA8, -1)


def test_attention_crossover_context():
    # 3·D·F / (2·H·d_h), worked by hand
    assert tf.attention_crossover_context(LLAMA8) == 3 * 4096 * 14336 / (2 * 32 * 128) == 21504
    assert tf.attention_crossover_context(LLAMA70) == 43008
    layer = (8192 * (2 * 64 + 2 * 8) * 128 + 3 * 8192 * 28672) / (2 * 64 * 128)
    assert tf.attention_crossover_context(LLAMA70, against="layer") == layer
    # at the crossover the core's FLOPs equal the MLP's
    f = tf.flops_per_token(LLAMA70, 43008)
    assert f.attention_core == pytest.approx(f.mlp)
    # KV heads do not enter the MLP crossover: GQA changes the projections only
    mha = tf.TransformerConfig(d_model=4096, n_layers=32, n_heads=32, d_ff=14336,
                               vocab_size=128256)
    assert tf.attention_crossover_context(mha) == 21504
    assert tf.attention_crossover_context(mha, against="layer") > \
        tf.attention_crossover_context(LLAMA8, against="layer")
    with pytest.raises(ValueError, match="against"):
        tf.attention_crossover_context(LLAMA8, against="embedding")

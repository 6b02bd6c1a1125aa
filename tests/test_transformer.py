"""Tests for scalebook.transformer: parameter counts, FLOPs, KV cache and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from scalebook import transformer as tf

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

"""Counting a decoder-only Transformer: parameters, FLOPs and KV cache.

Follows the accounting of "How to Scale Your Model" (Austin et al., 2025, part 4), for a
LLaMA-style block: pre-norm attention with grouped-query attention (GQA) and rotary positions,
then a gated (SwiGLU) or plain MLP. No biases. Units: counts, FLOPs, bytes.

Notation: ``D`` = d_model, ``L`` = n_layers, ``H`` = n_heads (query heads), ``K`` = n_kv_heads,
``d_h`` = d_head, ``F`` = d_ff, ``V`` = vocab_size, ``T`` = sequence (context) length.

Per layer, the weights are
    W_q[D, H·d_h], W_k[D, K·d_h], W_v[D, K·d_h], W_o[H·d_h, D]   (attention)
    W_gate[D, F], W_up[D, F], W_down[F, D]                       (gated MLP; 2 matrices if not)
    two RMSNorm scales of D each.
Plus the embedding table [V, D], a final RMSNorm (D) and the unembedding [D, V] (shared with
the embedding when ``tied_embeddings``). Norms are counted (they are 0.003% of an 8B model) so
the totals match published parameter counts exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Union

import numpy as np

from scalebook.hardware import bytes_per_element
from scalebook.validation import positive, positive_int

ArrayLike = Union[float, int, np.ndarray]

__all__ = [
    "TransformerConfig",
    "ParamCount",
    "param_count",
    "training_flops",
    "inference_flops_per_token",
    "attention_flops_per_token",
    "kv_cache_bytes",
    "llama3_8b",
    "llama3_70b",
    "EXAMPLE_CONFIGS",
]




@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """Shape of a decoder-only Transformer (keyword arguments only).

    Attributes:
        d_model: D, residual width.
        n_layers: L.
        n_heads: H, query heads.
        d_ff: F, MLP hidden width.
        vocab_size: V.
        n_kv_heads: K, key/value heads (GQA); defaults to ``n_heads`` (multi-head attention).
            Must divide ``n_heads``.
        d_head: per-head width; defaults to ``d_model // n_heads``.
        gated_mlp: True for a SwiGLU MLP with three D×F matrices, False for two.
        tied_embeddings: True when the unembedding reuses the embedding table.
        name: a label for printing.
    """

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    vocab_size: int
    n_kv_heads: int | None = None
    d_head: int | None = None
    gated_mlp: bool = True
    tied_embeddings: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        for field in ("d_model", "n_layers", "n_heads", "d_ff", "vocab_size"):
            positive_int(getattr(self, field), field)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        positive_int(self.n_kv_heads, "n_kv_heads")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads})")
        if self.d_head is None:
            if self.d_model < self.n_heads:
                raise ValueError(f"d_model ({self.d_model}) is smaller than n_heads "
                                 f"({self.n_heads}); give d_head explicitly")
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        positive_int(self.d_head, "d_head")
        for flag in ("gated_mlp", "tied_embeddings"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag} must be True or False, got {getattr(self, flag)!r}")

    @property
    def mlp_matrices(self) -> int:
        """3 for a gated (SwiGLU) MLP, 2 otherwise."""
        return 3 if self.gated_mlp else 2


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts by kind, summed over all layers."""

    attention_q: int
    attention_k: int
    attention_v: int
    attention_o: int
    mlp: int
    norms: int
    embedding: int
    unembedding: int  # 0 when tied to the embedding

    @property
    def attention(self) -> int:
        return self.attention_q + self.attention_k + self.attention_v + self.attention_o

    @property
    def non_embedding(self) -> int:
        """Attention + MLP + norms (Kaplan et al.'s "non-embedding" N)."""
        return self.attention + self.mlp + self.norms

    @property
    def total(self) -> int:
        return self.non_embedding + self.embedding + self.unembedding

    @property
    def matmul(self) -> int:
        """Weights used in a matmul on every token: attention, MLP and the ``D × V`` unembedding.

        The embedding is a table lookup (no FLOPs) and norms are elementwise, so they are left
        out; a tied unembedding is still a ``D × V`` matmul, so it is always counted here.
        """
        return self.attention + self.mlp + max(self.unembedding, self.embedding)


def param_count(cfg: TransformerConfig) -> ParamCount:
    """Parameters of ``cfg``, by kind.

    Per layer: ``D·H·d_h`` (q) + ``2·D·K·d_h`` (k, v) + ``H·d_h·D`` (o) + ``(3 or 2)·D·F`` (MLP)
    + ``2·D`` (norms); plus ``V·D`` embedding, ``D`` final norm and ``D·V`` unembedding unless tied.
    LLaMA-3 8B: 8,030,261,248; LLaMA-3 70B: 70,553,706,496.
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    D, L, dh = cfg.d_model, cfg.n_layers, cfg.d_head
    q_width, kv_width = cfg.n_heads * dh, cfg.n_kv_heads * dh
    embedding = cfg.vocab_size * D
    return ParamCount(
        attention_q=L * D * q_width,
        attention_k=L * D * kv_width,
        attention_v=L * D * kv_width,
        attention_o=L * q_width * D,
        mlp=L * cfg.mlp_matrices * D * cfg.d_ff,
        norms=L * 2 * D + D,
        embedding=embedding,
        unembedding=0 if cfg.tied_embeddings else embedding,
    )


def attention_flops_per_token(cfg: TransformerConfig, context_len: ArrayLike) -> ArrayLike:
    """Forward FLOPs one token spends in attention scores and mixing, over all layers.

    ``L · 4 · T · H · d_h``: ``2·T·H·d_h`` for ``q · Kᵀ`` and as much for ``softmax · V`` against
    ``T`` keys. No discount for causal masking (HSYM part 4 counts the same way).
    """
    t = positive(context_len, "context_len", allow_zero=True)
    return 4.0 * cfg.n_layers * t * cfg.n_heads * cfg.d_head


def training_flops(cfg: TransformerConfig, tokens: ArrayLike, *, include_attention: bool = False,
                   seq_len: int | None = None) -> ArrayLike:
    """Training FLOPs (forward + backward) for ``tokens`` tokens.

    ``6 · P_matmul · tokens`` where ``P_matmul`` = :attr:`ParamCount.matmul` (2 FLOPs per weight
    per token forward, 4 backward). With ``include_attention``, add ``3 ×`` the forward
    attention FLOPs at context ``seq_len``: ``12 · L · seq_len · H · d_h`` per token.
    LLaMA-3 8B on 1e12 tokens: 4.5e22 FLOPs without attention.
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    tokens = positive(tokens, "tokens")
    flops = 6.0 * param_count(cfg).matmul * tokens
    if include_attention:
        if seq_len is None:
            raise ValueError("include_attention=True needs seq_len (tokens per sequence)")
        seq_len = positive_int(seq_len, "seq_len")
        flops = flops + 3.0 * attention_flops_per_token(cfg, seq_len) * tokens
    elif seq_len is not None:
        positive_int(seq_len, "seq_len")
    return flops


def inference_flops_per_token(cfg: TransformerConfig, *, context_len: ArrayLike = 0) -> ArrayLike:
    """Forward FLOPs to process one token: ``2 · P_matmul + 4 · L · context_len · H · d_h``.

    The second term is attention against ``context_len`` cached keys and values (0 ignores it).
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return 2.0 * param_count(cfg).matmul + attention_flops_per_token(cfg, context_len)


def kv_cache_bytes(cfg: TransformerConfig, *, seq_len: ArrayLike, batch: ArrayLike = 1,
                   dtype: str = "bf16") -> ArrayLike:
    """Bytes of cached keys and values: ``2 · L · K · d_h · seq_len · batch · bytes(dtype)``.

    LLaMA-3 8B at 8192 tokens in bf16: ``2·32·8·128·8192·2`` = 1 GiB (1,073,741,824 bytes).
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    seq = positive(seq_len, "seq_len")
    b = positive(batch, "batch")
    return 2.0 * cfg.n_layers * cfg.n_kv_heads * cfg.d_head * seq * b * bytes_per_element(dtype)


def llama3_8b() -> TransformerConfig:
    """A LLaMA-3 8B-like shape: D 4096, 32 layers, 32 heads, 8 KV heads, F 14336, V 128256."""
    return TransformerConfig(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336,
                             vocab_size=128256, name="LLaMA-3 8B-like")


def llama3_70b() -> TransformerConfig:
    """A LLaMA-3 70B-like shape: D 8192, 80 layers, 64 heads, 8 KV heads, F 28672, V 128256."""
    return TransformerConfig(d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_ff=28672,
                             vocab_size=128256, name="LLaMA-3 70B-like")


#: Example shapes by short name.
EXAMPLE_CONFIGS: Mapping[str, TransformerConfig] = MappingProxyType(
    {"llama3-8b": llama3_8b(), "llama3-70b": llama3_70b()}
)

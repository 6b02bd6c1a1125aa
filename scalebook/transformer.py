"""Counting a decoder-only Transformer: parameters, FLOPs, KV cache and attention's intensity.

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

The attention core (``softmax(q·Kᵀ)·V``) has its own roofline: :func:`attention_cost` counts its
FLOPs and bytes at prefill and at decode, and :func:`attention_critical_context` gives the
context length where it turns compute-bound on a chip (for decode, usually never).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Union, overload

from scalebook._np import np

from scalebook.hardware import Chip, bytes_per_element, get_chip
from scalebook.validation import FloatOrArray, positive, positive_int

ArrayLike = Union[float, int, np.ndarray]

#: The two ways a Transformer runs attention: a whole prompt at once, or one new token.
ATTENTION_PHASES: tuple[str, ...] = ("prefill", "decode")

__all__ = [
    "TransformerConfig",
    "ParamCount",
    "param_count",
    "training_flops",
    "inference_flops_per_token",
    "attention_flops_per_token",
    "kv_cache_bytes",
    "ATTENTION_PHASES",
    "AttentionCost",
    "attention_cost",
    "attention_intensity_limit",
    "attention_critical_context",
    "llama3_8b",
    "llama3_70b",
    "EXAMPLE_CONFIGS",
    "FlopsPerToken",
    "flops_per_token",
    "attention_crossover_context",
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
    # Left out, these two are derived in __post_init__ (n_kv_heads = n_heads, d_head = D // H), so
    # every constructed config holds ints: the annotation states that, the None default is only
    # the constructor's "derive it" marker.
    n_kv_heads: int = None  # type: ignore[assignment]
    d_head: int = None  # type: ignore[assignment]
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
    return _param_count(cfg)


@functools.lru_cache(maxsize=256)
def _param_count(cfg: TransformerConfig) -> ParamCount:
    """:func:`param_count`, kept per config (frozen, so one answer serves every caller): a
    layout search or a class's draw counts the same model's parameters thousands of times."""
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


@overload
def attention_flops_per_token(cfg: TransformerConfig, context_len: float) -> float: ...
@overload
def attention_flops_per_token(cfg: TransformerConfig, context_len: np.ndarray) -> np.ndarray: ...
def attention_flops_per_token(cfg: TransformerConfig, context_len: ArrayLike) -> ArrayLike:
    """Forward FLOPs one token spends in attention scores and mixing, over all layers.

    ``L · 4 · T · H · d_h``: ``2·T·H·d_h`` for ``q · Kᵀ`` and as much for ``softmax · V`` against
    ``T`` keys. No discount for causal masking (HSYM part 4 counts the same way).
    """
    t = positive(context_len, "context_len", allow_zero=True)
    return 4.0 * cfg.n_layers * t * cfg.n_heads * cfg.d_head


def training_flops(cfg: TransformerConfig, tokens: FloatOrArray, *, include_attention: bool = False,
                   seq_len: int | None = None) -> FloatOrArray:
    """Training FLOPs (forward + backward) for ``tokens`` tokens.

    ``6 · P_matmul · tokens`` where ``P_matmul`` = :attr:`ParamCount.matmul` (2 FLOPs per weight
    per token forward, 4 backward). With ``include_attention``, add ``3 ×`` the forward
    attention FLOPs at context ``seq_len``: ``12 · L · seq_len · H · d_h`` per token.
    LLaMA-3 8B on 1e12 tokens: 4.5e22 FLOPs without attention.
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    tokens = positive(tokens, "tokens")
    flops: FloatOrArray = 6.0 * param_count(cfg).matmul * tokens
    if include_attention:
        if seq_len is None:
            raise ValueError("include_attention=True needs seq_len (tokens per sequence)")
        seq_len = positive_int(seq_len, "seq_len")
        flops = flops + 3.0 * attention_flops_per_token(cfg, seq_len) * tokens
    elif seq_len is not None:
        positive_int(seq_len, "seq_len")
    return flops


@overload
def inference_flops_per_token(cfg: TransformerConfig, *, context_len: float = 0) -> float: ...
@overload
def inference_flops_per_token(cfg: TransformerConfig, *, context_len: np.ndarray) -> np.ndarray: ...
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


# --------------------------------------------------------------------------- attention intensity


@dataclass(frozen=True)
class AttentionCost:
    """FLOPs and HBM bytes of the attention core of one layer (scores and mixing only).

    The projections ``W_q, W_k, W_v, W_o`` are ordinary matmuls priced by
    :mod:`scalebook.roofline`; this is the part between them, ``softmax(q·Kᵀ)·V``, whose
    "weights" are the keys and values themselves.

    Attributes (FLOPs and bytes, numbers or arrays over a sweep of context lengths):
        phase: "prefill" or "decode".
        flops: ``q·Kᵀ`` plus ``probabilities·V`` (the softmax's few FLOPs per score are left out).
        q_bytes: queries read.
        kv_bytes: keys and values read (for decode: the whole KV cache of the layer).
        out_bytes: attention output written.
    """

    phase: str
    flops: ArrayLike
    q_bytes: ArrayLike
    kv_bytes: ArrayLike
    out_bytes: ArrayLike

    @property
    def total_bytes(self) -> ArrayLike:
        """q + K + V read, plus the output written (bytes)."""
        return self.q_bytes + self.kv_bytes + self.out_bytes

    @property
    def intensity(self) -> ArrayLike:
        """Arithmetic intensity, FLOPs / total bytes (FLOPs per byte)."""
        return self.flops / self.total_bytes


def _attention_shape(n_heads: int, n_kv_heads: int, head_dim: int) -> tuple[int, int, int]:
    H = positive_int(n_heads, "n_heads")
    K = positive_int(n_kv_heads, "n_kv_heads")
    dh = positive_int(head_dim, "head_dim")
    if H % K:
        raise ValueError(f"n_kv_heads ({K}) must divide n_heads ({H})")
    return H, K, dh


def _phase(phase: object) -> str:
    key = phase.strip().lower() if isinstance(phase, str) else None
    if key not in ATTENTION_PHASES:
        raise ValueError(f"phase must be one of {', '.join(ATTENTION_PHASES)}, got {phase!r}")
    return key


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what} must be True or False, got {value!r}")
    return value


def attention_cost(context_len: ArrayLike, *, n_heads: int, n_kv_heads: int, head_dim: int,
                   phase: str = "decode", dtype: str = "bf16", kv_dtype: str | None = None,
                   batch: int = 1, causal: bool = False) -> AttentionCost:
    """FLOPs and bytes of one layer's attention core at context length ``S = context_len``.

    Grouped-query attention: ``H = n_heads`` query heads share ``K = n_kv_heads`` key/value heads
    of width ``d = head_dim`` (``G = H / K`` query heads per KV head; ``K = H`` is multi-head,
    ``K = 1`` multi-query attention). ``b`` = bytes per element of ``dtype`` (queries, output)
    and ``b_kv`` of ``kv_dtype`` (keys and values; default ``dtype``). Every term is multiplied
    by ``batch``: each sequence has its own keys and values, so batching never changes the
    intensity of attention (unlike the weight matmuls, whose weights all sequences share).

    ``phase="decode"``: one new query per sequence against ``S`` cached keys and values::

        FLOPs = 4·S·H·d                         (2·S·H·d for q·Kᵀ, as much for ·V)
        bytes = 2·S·K·d·b_kv + 2·H·d·b          (read the KV cache; read q, write the output)

    ``phase="prefill"``: all ``S`` positions of a prompt at once, the way a fused
    (flash-attention) kernel runs it, so the ``S × S`` scores never reach HBM::

        FLOPs = 4·S²·H·d                        (every query against every key)
              = 2·S·(S + 1)·H·d                 (causal=True: query i sees keys 0..i only)
        bytes = 2·S·H·d·b + 2·S·K·d·b_kv        (read Q, K, V; write the output)

    ``causal`` affects prefill only (a decoded token sees the whole cache anyway); the default
    counts all ``S²`` pairs, as :func:`attention_flops_per_token` does. The new token's own key
    and value, written to the cache by the projection, are not counted. All layers have the
    same cost, so a model's attention is ``n_layers`` times this at the same intensity.

    LLaMA-3 70B (H 64, K 8, d 128), bf16, decode at S = 8192: 268,435,456 FLOPs over
    33,587,200 bytes, about 8 FLOPs/byte; prefill: ``2·8192·64 / 144`` ≈ 7,282 FLOPs/byte.
    """
    H, K, dh = _attention_shape(n_heads, n_kv_heads, head_dim)
    key = _phase(phase)
    S = positive(context_len, "context_len")
    batch = positive_int(batch, "batch")
    _flag(causal, "causal")
    b = bytes_per_element(dtype)
    b_kv = bytes_per_element(kv_dtype if kv_dtype is not None else dtype)
    kv_bytes = batch * 2.0 * S * K * dh * b_kv
    if key == "decode":
        return AttentionCost(phase=key, flops=batch * 4.0 * S * H * dh,
                             q_bytes=batch * 1.0 * H * dh * b, kv_bytes=kv_bytes,
                             out_bytes=batch * 1.0 * H * dh * b)
    pairs = S * (S + 1.0) / 2.0 if causal else S * S
    return AttentionCost(phase=key, flops=batch * 4.0 * pairs * H * dh,
                         q_bytes=batch * S * H * dh * b, kv_bytes=kv_bytes,
                         out_bytes=batch * S * H * dh * b)


def attention_intensity_limit(*, n_heads: int, n_kv_heads: int, dtype: str = "bf16",
                              kv_dtype: str | None = None) -> float:
    """The intensity decode attention tends to as the context grows: ``2·G / b_kv`` FLOPs/byte.

    From :func:`attention_cost`, decode intensity is ``2·S·H / (S·K·b_kv + H·b)``, which rises
    with ``S`` towards ``2·H / (K·b_kv) = 2·G / b_kv`` with ``G = n_heads / n_kv_heads``. Each
    cached key or value element (``b_kv`` bytes) is read once and used by the ``G`` query heads
    of its group, one multiply-add (2 FLOPs) each, whatever the context length: a longer
    context adds FLOPs and bytes in the same proportion. In bf16 the limit is ``G`` itself:
    1 for multi-head attention, 8 for LLaMA-3 (64 or 32 query heads over 8 KV heads), far below
    any accelerator's critical intensity (H100: 9.89e14 / 3.35e12 ≈ 295), so decode attention
    stays memory-bound at every context length. Only a large ``G`` with a narrow KV dtype
    (e.g. multi-query attention with 128 heads and an int8 cache: 256) can cross it.
    """
    H, K, _ = _attention_shape(n_heads, n_kv_heads, 1)
    b_kv = bytes_per_element(kv_dtype if kv_dtype is not None else dtype)
    bytes_per_element(dtype)  # validate the query dtype too
    return 2.0 * H / (K * b_kv)


def attention_critical_context(chip: Chip | str, *, n_heads: int, n_kv_heads: int,
                               head_dim: int, phase: str, dtype: str = "bf16",
                               kv_dtype: str | None = None, causal: bool = False) -> float:
    """Context length ``S*`` above which attention is compute-bound on ``chip`` (tokens).

    Sets the intensity of :func:`attention_cost` equal to the chip's critical intensity
    ``I* = C / W`` (``C`` = dense peak in ``dtype``, ``W`` = HBM bandwidth; the same ratio as
    :func:`scalebook.roofline.critical_intensity`) and solves for ``S``:

    - prefill: ``I = 2·S·H / (H·b + K·b_kv)``, so ``S* = I*·(H·b + K·b_kv) / (2·H)``; with
      ``causal=True``, ``I = (S + 1)·H / (H·b + K·b_kv)`` and
      ``S* = I*·(H·b + K·b_kv) / H − 1`` (clipped at 0). LLaMA-3 70B on an H100 in bf16:
      ``295.2 · 144 / 128 ≈ 332`` tokens — prefill of any real prompt is compute-bound.
    - decode: ``I = 2·S·H / (S·K·b_kv + H·b)``, so ``S* = I*·H·b / (2·H − I*·K·b_kv)`` when
      the limit ``2·H / (K·b_kv)`` (:func:`attention_intensity_limit`) exceeds ``I*``, and
      ``math.inf`` (never compute-bound) otherwise — the usual case: the intensity tends to
      ``2·G / b_kv`` (``G`` query heads per KV head), a constant no context length can raise.

    The result is a real number; attention is compute-bound for ``S > S*``.
    """
    H, K, dh = _attention_shape(n_heads, n_kv_heads, head_dim)
    key = _phase(phase)
    _flag(causal, "causal")
    chip = get_chip(chip)
    critical = chip.flops(dtype) / chip.hbm_bandwidth
    b = bytes_per_element(dtype)
    b_kv = bytes_per_element(kv_dtype if kv_dtype is not None else dtype)
    if key == "prefill":
        if causal:
            return max(0.0, critical * (H * b + K * b_kv) / H - 1.0)
        return critical * (H * b + K * b_kv) / (2.0 * H)
    headroom = 2.0 * H - critical * K * b_kv
    if headroom <= 0:
        return math.inf
    return critical * H * b / headroom


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


# --------------------------------------------------------------------------- FLOPs by block


@dataclass(frozen=True)
class FlopsPerToken:
    """Forward FLOPs one token costs, by block, over all layers (numbers or arrays over a sweep
    of context lengths).

    Attributes:
        attention_projections: ``2 ·`` the weights of ``W_q, W_k, W_v, W_o``:
            ``2·L·D·(2·H + 2·K)·d_h``.
        mlp: ``2 · (3 or 2)·L·D·F``.
        unembedding: ``2 · D · V`` (the logits; the embedding lookup costs nothing).
        attention_core: ``q·Kᵀ`` and ``softmax·V`` against ``T`` keys, ``4·L·T·H·d_h``
            (:func:`attention_flops_per_token`).
        context_len: T, the context the attention core was counted at (tokens).
    """

    attention_projections: ArrayLike
    mlp: ArrayLike
    unembedding: ArrayLike
    attention_core: ArrayLike
    context_len: ArrayLike

    @property
    def matmul(self) -> ArrayLike:
        """The weight matmuls: ``2 · P_matmul`` FLOPs (:attr:`ParamCount.matmul`)."""
        return self.attention_projections + self.mlp + self.unembedding

    @property
    def forward(self) -> ArrayLike:
        """Everything the forward pass does for one token (FLOPs)."""
        return self.matmul + self.attention_core

    @property
    def backward(self) -> ArrayLike:
        """Twice the forward: each matmul's input gradient and weight gradient (FLOPs)."""
        return 2.0 * self.forward

    @property
    def training(self) -> ArrayLike:
        """Forward + backward = ``3 ×`` forward: ``6·P_matmul + 12·L·T·H·d_h`` (FLOPs)."""
        return 3.0 * self.forward

    @property
    def attention_share(self) -> ArrayLike:
        """The attention core's fraction of the forward FLOPs (0 to 1)."""
        return self.attention_core / self.forward


def flops_per_token(cfg: TransformerConfig, context_len: ArrayLike) -> FlopsPerToken:
    """Forward FLOPs per token of ``cfg`` at context ``T = context_len``, split by block.

    Every weight costs 2 FLOPs per token (a multiply and an add); the attention core costs
    ``4·L·T·H·d_h`` (:func:`attention_flops_per_token`, no causal discount). ``training`` is
    3 × the forward: the backward pass computes two matmuls for every forward one. The sum
    ``3 · forward`` equals ``training_flops(cfg, 1, include_attention=True, seq_len=T)``.
    LLaMA-3 70B at T = 8192: matmuls 1.39e11 FLOPs, attention core 2.15e10, 13% of the forward.
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    counts = param_count(cfg)
    core = attention_flops_per_token(cfg, context_len)
    return FlopsPerToken(
        attention_projections=2.0 * counts.attention,
        mlp=2.0 * counts.mlp,
        unembedding=2.0 * max(counts.unembedding, counts.embedding),
        attention_core=core,
        context_len=context_len,
    )


def attention_crossover_context(cfg: TransformerConfig, *, against: str = "mlp") -> float:
    """Context length (tokens) where the attention core's FLOPs equal those of ``against``.

    Per layer and token the core costs ``4·T·H·d_h``; the MLP ``2·m·D·F`` (``m`` = 3 gated,
    2 plain); all the layer's weight matmuls ``2·(D·(2H + 2K)·d_h + m·D·F)``. Setting them
    equal:

        against="mlp":     T* = m·D·F / (2·H·d_h)
        against="layer":   T* = (D·(2H + 2K)·d_h + m·D·F) / (2·H·d_h)

    Above ``T*`` attention does more arithmetic than the MLP (or than all the weights). LLaMA-3
    8B: ``3·4096·14336 / (2·4096)`` = 21,504 tokens against the MLP; LLaMA-3 70B: 43,008.
    Counting causal masking (half the pairs) would double ``T*``.
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    key = against.strip().lower() if isinstance(against, str) else None
    if key not in ("mlp", "layer"):
        raise ValueError(f"against must be 'mlp' or 'layer', got {against!r}")
    D, H, K, dh = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    weights = cfg.mlp_matrices * D * cfg.d_ff
    if key == "layer":
        weights += D * (2 * H + 2 * K) * dh
    return weights / (2.0 * H * dh)

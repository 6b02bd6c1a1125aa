"""Part 8's mechanisms in plain JAX: a paged KV cache, speculative decoding, continuous batching.

- :func:`paged_cache` / :func:`paged_attention`: the keys and values of sequences of different
  lengths stored in a pool of fixed-size blocks, each sequence's blocks listed in a *block
  table*; attention gathers a sequence's blocks through its table (vLLM's PagedAttention,
  written as a gather, not a kernel). :func:`dense_attention` is the reference.
- :func:`speculative_generate`: greedy speculative decoding with the course's tiny decoder
  (:mod:`scalebook.decoding`) as the target and a smaller draft; the output is the target's own
  greedy output, token for token.
- :func:`continuous_batching`: a batch of slots; between steps finished sequences leave and
  waiting ones join; each step is one batched forward pass, sharded over a mesh axis.

Small sizes, CPU-friendly; the point is the bookkeeping, checked exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from . import decoding
from .validation import positive_int

__all__ = ["PagedCache", "paged_cache", "paged_attention", "dense_attention",
           "SpeculativeRun", "speculative_generate", "layer_draft", "BatchStep",
           "continuous_batching"]


# --------------------------------------------------------------------------- paged attention
@dataclass(frozen=True)
class PagedCache:
    """Keys and values in blocks.

    Attributes:
        k_pool, v_pool: ``[n_blocks, block_size, K, d_h]`` each.
        tables: ``int32[B, max_blocks]``: sequence ``b``'s ``j``-th block is ``tables[b, j]``
            (unused entries point at block 0 and are masked by ``lengths``).
        lengths: ``int32[B]`` tokens per sequence.
        block_size: tokens per block.
    """

    k_pool: jax.Array
    v_pool: jax.Array
    tables: jax.Array
    lengths: jax.Array
    block_size: int

    @property
    def pool_bytes(self) -> int:
        """Bytes of the two pools (what the paged cache holds)."""
        return int(self.k_pool.nbytes + self.v_pool.nbytes)


def paged_cache(keys: Sequence[np.ndarray], values: Sequence[np.ndarray], *,
                block_size: int, seed: int = 0) -> PagedCache:
    """Store each sequence's ``k, v[len_b, K, d_h]`` in ``ceil(len_b / block_size)`` blocks of a
    shared pool, in a shuffled order (the blocks of a sequence need not be adjacent: that is the
    point of the table). Built on the host with NumPy."""
    b = positive_int(block_size, "block_size")
    lens = [int(k.shape[0]) for k in keys]
    counts = [-(-n // b) for n in lens]
    total = sum(counts)
    K, dh = keys[0].shape[1:]
    order = np.random.default_rng(seed).permutation(total)
    k_pool = np.zeros((total, b, K, dh), keys[0].dtype)
    v_pool = np.zeros_like(k_pool)
    tables = np.zeros((len(keys), max(counts)), np.int32)
    nxt = 0
    for s, (k, v) in enumerate(zip(keys, values)):
        for j in range(counts[s]):
            slot = int(order[nxt])
            nxt += 1
            piece = slice(j * b, min((j + 1) * b, lens[s]))
            k_pool[slot, :piece.stop - piece.start] = k[piece]
            v_pool[slot, :piece.stop - piece.start] = v[piece]
            tables[s, j] = slot
    return PagedCache(jnp.asarray(k_pool), jnp.asarray(v_pool), jnp.asarray(tables),
                      jnp.asarray(lens, jnp.int32), b)


def _attend_one(q: jax.Array, k: jax.Array, v: jax.Array, length: jax.Array) -> jax.Array:
    """``q[H, d_h]`` against ``k, v[S, K, d_h]``, the first ``length`` positions valid."""
    H, dh = q.shape
    K = k.shape[1]
    qg = q.reshape(K, H // K, dh)
    s = jnp.einsum("kgd,skd->kgs", qg, k) / math.sqrt(dh)
    s = jnp.where(jnp.arange(k.shape[0]) < length, s, -jnp.inf)
    return jnp.einsum("kgs,skd->kgd", jax.nn.softmax(s, axis=-1), v).reshape(H, dh)


@jax.jit
def paged_attention(q: jax.Array, cache: PagedCache) -> jax.Array:
    """One query per sequence, ``q[B, H, d_h]``, against its paged cache: gather the blocks the
    table lists (``k_pool[tables[b]]`` is ``[max_blocks, block, K, d_h]``), flatten them to
    ``[max_blocks·block, K, d_h]`` and attend to the first ``lengths[b]``. ``[B, H, d_h]``."""
    def one(qb, table, length):
        k = cache.k_pool[table].reshape(-1, *cache.k_pool.shape[2:])
        v = cache.v_pool[table].reshape(-1, *cache.v_pool.shape[2:])
        return _attend_one(qb, k, v, length)
    return jax.vmap(one)(q, cache.tables, cache.lengths)


def dense_attention(q: jax.Array, keys: Sequence[np.ndarray],
                    values: Sequence[np.ndarray]) -> jax.Array:
    """The reference: each sequence's query against its own contiguous ``k, v``."""
    return jnp.stack([_attend_one(q[b], jnp.asarray(k), jnp.asarray(v), jnp.int32(k.shape[0]))
                      for b, (k, v) in enumerate(zip(keys, values))])


jax.tree_util.register_dataclass(PagedCache, data_fields=["k_pool", "v_pool", "tables", "lengths"],
                                 meta_fields=["block_size"])


# --------------------------------------------------------------------------- speculative decoding
def layer_draft(params: dict, cfg: decoding.DecoderConfig, n_layers: int
                ) -> tuple[dict, decoding.DecoderConfig]:
    """A draft made of the target's first ``n_layers`` blocks with its embeddings: smaller and
    cheaper (``n_layers / L`` of the blocks), and often right (a layer-skipping draft)."""
    n = positive_int(n_layers, "n_layers")
    if n >= cfg.n_layers:
        raise ValueError("a draft needs fewer layers than the target")
    small = decoding.DecoderConfig(vocab=cfg.vocab, d_model=cfg.d_model, n_layers=n,
                                   n_heads=cfg.n_heads, n_kv_heads=cfg.n_kv_heads,
                                   d_ff=cfg.d_ff, rope_base=cfg.rope_base, seed=cfg.seed)
    return {**params, "layers": params["layers"][:n]}, small


@dataclass(frozen=True)
class SpeculativeRun:
    """A speculative generation: the tokens, and per round the draft tokens proposed and how
    many the target accepted."""

    tokens: np.ndarray
    rounds: int
    proposed: int
    accepted: tuple[int, ...]

    @property
    def alpha(self) -> float:
        """Measured per-token acceptance: accepted guesses over guesses the target judged (a
        guess after a rejection is never judged)."""
        judged = sum(a + (1 if a < self.proposed else 0) for a in self.accepted)
        return sum(self.accepted) / judged if judged else 1.0

    @property
    def tokens_per_round(self) -> float:
        """Tokens emitted per verification pass (the accepted guesses plus the target's own)."""
        return sum(a + 1 for a in self.accepted) / self.rounds


@jax.jit(static_argnums=(1,))
def _argmax_all(params: dict, cfg: decoding.DecoderConfig, tokens: jax.Array) -> jax.Array:
    return jnp.argmax(decoding.forward(params, tokens, cfg), axis=-1).astype(jnp.int32)


def _pad(seq: list[int]) -> np.ndarray:
    """``seq`` right-padded with zeros to the next power of two (causal attention: padding
    after a position never changes it), so a few shapes are compiled, not one per length."""
    width = 1 << (len(seq) - 1).bit_length()
    out = np.zeros((1, width), np.int32)
    out[0, :len(seq)] = seq
    return out


def _greedy_next(params: dict, cfg: decoding.DecoderConfig, seq: list[int]) -> np.ndarray:
    """Argmax of the model's logits at every position of ``seq``: ``int32[len(seq)]``."""
    return np.asarray(_argmax_all(params, cfg, jnp.asarray(_pad(seq))))[0, :len(seq)]


def speculative_generate(target: dict, target_cfg: decoding.DecoderConfig, draft: dict,
                         draft_cfg: decoding.DecoderConfig, prompt: np.ndarray, n_new: int, *,
                         k: int) -> SpeculativeRun:
    """Greedy speculative decoding of one sequence (``prompt[T]``) for ``n_new`` tokens.

    Each round: the draft proposes ``k`` tokens greedily; the target runs **one** pass over the
    sequence plus the guesses and keeps the guesses up to its first disagreement, then appends
    its own next token (so every round emits at least one). Without a KV cache (each pass
    recomputes the prefix): the bookkeeping, not the speed, is what this checks.
    """
    k = positive_int(k, "k")
    seq = [int(t) for t in prompt]
    start = len(seq)
    accepted: list[int] = []
    while len(seq) - start < n_new:
        guess: list[int] = []
        for _ in range(k):
            nxt = _greedy_next(draft, draft_cfg, seq + guess)[-1]
            guess.append(int(nxt))
        judged = _greedy_next(target, target_cfg, seq + guess)
        own = [int(t) for t in judged[len(seq) - 1:]]        # target's choice at each guess
        a = 0
        while a < k and guess[a] == own[a]:
            a += 1
        seq += guess[:a] + [own[a]]
        accepted.append(a)
    out = np.asarray(seq[start:start + n_new], np.int32)
    return SpeculativeRun(tokens=out, rounds=len(accepted), proposed=k, accepted=tuple(accepted))


# --------------------------------------------------------------------------- continuous batching
@dataclass(frozen=True)
class BatchStep:
    """One step of :func:`continuous_batching`: which request sits in each slot (None: empty),
    who joined before it and who left after it."""

    step: int
    slots: tuple[int | None, ...]
    joined: tuple[int, ...]
    left: tuple[int, ...]


def continuous_batching(params: dict, cfg: decoding.DecoderConfig,
                        prompts: Sequence[np.ndarray], reply_lens: Sequence[int], *,
                        mesh: Mesh, axis: str = "batch"
                        ) -> tuple[list[np.ndarray], list[BatchStep]]:
    """Serve ``prompts`` greedily with as many slots as the mesh axis has devices.

    Before each step, free slots take waiting requests in order; each step is one forward pass
    over the slots' sequences (right-padded to a common length, the token array sharded over
    ``axis`` so each device runs its own slots), reading each sequence's logits at its last
    real position; a sequence that has its ``reply_len`` tokens leaves after the step. Without a
    KV cache (each step recomputes the prefix). Returns each request's reply and the log.
    """
    n_slots = mesh.shape[axis]
    waiting = list(range(len(prompts)))
    slots: list[int | None] = [None] * n_slots
    seqs = {i: [int(t) for t in p] for i, p in enumerate(prompts)}
    replies: dict[int, list[int]] = {i: [] for i in range(len(prompts))}
    # each device runs the forward pass of its own slots; the weights are replicated
    step_fn = jax.jit(jax.shard_map(
        lambda tok: jnp.argmax(decoding.forward(params, tok, cfg), axis=-1).astype(jnp.int32),
        mesh=mesh, in_specs=P(axis, None), out_specs=P(axis, None)))
    sharding = NamedSharding(mesh, P(axis, None))
    log: list[BatchStep] = []
    step = 0
    while waiting or any(s is not None for s in slots):
        joined: list[int] = []
        for j in range(n_slots):
            if slots[j] is None and waiting:
                request = waiting.pop(0)
                slots[j] = request
                joined.append(request)
        width = max(len(seqs[s]) for s in slots if s is not None)
        width = 1 << (width - 1).bit_length()          # pad to a power of two: few compilations
        tok = np.zeros((n_slots, width), np.int32)
        for j, s in enumerate(slots):
            if s is not None:
                tok[j, :len(seqs[s])] = seqs[s]
        nxt = np.asarray(step_fn(jax.device_put(tok, sharding)))
        occupied = tuple(slots)
        left = []
        for j, s in enumerate(slots):
            if s is None:
                continue
            t = int(nxt[j, len(seqs[s]) - 1])
            seqs[s].append(t)
            replies[s].append(t)
            if len(replies[s]) == reply_lens[s]:
                left.append(s)
                slots[j] = None
        log.append(BatchStep(step=step, slots=occupied, joined=tuple(joined),
                             left=tuple(left)))
        step += 1
    return [np.asarray(replies[i], np.int32) for i in range(len(prompts))], log

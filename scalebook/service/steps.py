"""A serving step's time, from :mod:`scalebook.inference`: the one place this package reads it.

A server runs forward passes. Each pass (a *step*) processes ``q`` query tokens (one per decoding
sequence, a whole prompt, or a prompt's chunk), lets them attend to ``pairs`` (query, cached token)
pairs in all, and reads or writes ``cache`` tokens of keys and values. :mod:`scalebook.inference`
prices such a pass as phases run one after another (its module docstring):

    t_weights   = max(q · 2·P / (n·C), P·b_w / (n·W))                the weight matmuls
    t_attention = max(pairs · 4·L·H·d_h / (n·C), cache · c·r / (n·W))  attention against the cache
    t_step      = t_weights + t_attention + t_comm(q)                  (s)

with ``P`` the matmul parameters, ``C`` a chip's peak FLOP/s in the compute dtype, ``W`` its HBM
bandwidth, ``b_w`` and ``c`` the bytes of a weight and of one token's cache, ``r`` the cache's
copies past ``K`` chips and ``t_comm`` the tensor-parallel AllReduces. A decode step of ``B``
sequences with ``S_i`` cached tokens has ``q = B``, ``pairs = cache = Σ S_i``; a prefill of ``B``
prompts of ``T`` tokens has ``q = B·T``, ``pairs = B·T²``, ``cache = B·T`` (no causal discount,
as the solver counts).

:func:`step_model` reads the four per-unit coefficients off one call of
:func:`scalebook.inference.decode_step` (batch 1, context 1), so a :class:`StepModel` reproduces
``decode_step(...).time`` and ``prefill(...).time`` exactly (the tests hold it to that). The
AllReduce time is priced by :func:`scalebook.inference.tp_comm_time` at every power of two of
tokens up to 2**20 and interpolated linearly between (the alpha-beta cost is linear in bytes for
one algorithm): a ``tp_comm_time`` call for a token count not asked before costs about half a
millisecond, too slow for a simulator that takes thousands of steps of ever-changing batches.
"""

from __future__ import annotations

import bisect
from functools import lru_cache
from dataclasses import dataclass, field, replace

from .. import inference
from ..hardware import Chip, get_chip
from ..training import PRESETS
from ..transformer import TransformerConfig
from ..validation import positive, positive_int

__all__ = ["Server", "StepModel", "step_model", "resolve_model", "fits", "COMM_GRID"]

#: Token counts at which the AllReduce time is priced exactly: 1, 2, 4, ..., 2**20.
COMM_GRID: tuple[int, ...] = tuple(2 ** k for k in range(21))


def resolve_model(model: TransformerConfig | str) -> TransformerConfig:
    """A :class:`TransformerConfig`, or a preset's name (``"LLaMA-3 70B"``) turned into one."""
    if isinstance(model, TransformerConfig):
        return model
    if isinstance(model, str) and model in PRESETS:
        return PRESETS[model]
    raise ValueError(f"unknown model {model!r}; give a TransformerConfig or one of "
                     f"{', '.join(PRESETS)}")


@dataclass(frozen=True)
class Server:
    """One copy of a model on a tensor-parallel slice: what a service replicates.

    Attributes:
        model: the model (a preset's name or a :class:`TransformerConfig`).
        chip: the chip's catalog name (``"H100"``, ``"TPU v5e"``).
        n_chips: chips serving the copy (tensor parallel).
        weight_dtype, cache_dtype, compute_dtype: storage of the weights and the KV cache, and
            the matmuls' dtype (as in :mod:`scalebook.inference`).
        reserve: fraction of HBM kept for activations and the runtime (0 to below 1).
        price_per_chip_hour: what one chip costs per hour (any currency), for costs.
    """

    model: TransformerConfig | str = "LLaMA-3 70B"
    chip: str = "H100"
    n_chips: int = 8
    weight_dtype: str = "bf16"
    cache_dtype: str = "bf16"
    compute_dtype: str = "bf16"
    reserve: float = 0.1
    price_per_chip_hour: float = 2.0

    @property
    def config(self) -> TransformerConfig:
        """The model's :class:`TransformerConfig`."""
        return resolve_model(self.model)

    def with_(self, **changes: object) -> "Server":
        """A copy with some fields changed (``server.with_(n_chips=4)``)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class StepModel:
    """Per-unit costs of a forward pass on one :class:`Server` (see the module docstring).

    Attributes:
        server: the server priced.
        t_token_compute: ``2·P / (n·C)``: weight-matmul compute per query token (s).
        t_weights_read: ``P·b_w / (n·W)``: reading every weight once (s).
        t_pair_compute: ``4·L·H·d_h / (n·C)``: attention compute per (query, cached token) pair (s).
        t_cache_read: ``c·r / (n·W)``: reading or writing one token's cache (s).
        kv_bytes_per_token: ``c · r``: cache bytes one token of one sequence holds on the slice,
            copies included (bytes).
        kv_capacity_tokens: ``(n·HBM·(1 − reserve) − weight bytes) / (c·r)``: cache tokens that
            fit beside the weights (tokens; 0 when the weights do not fit).
        comm_grid: ``tp_comm_time`` at the token counts of :data:`COMM_GRID` (s).
    """

    server: Server
    t_token_compute: float
    t_weights_read: float
    t_pair_compute: float
    t_cache_read: float
    kv_bytes_per_token: float
    kv_capacity_tokens: int
    comm_grid: tuple[float, ...] = field(repr=False)

    def comm_time(self, tokens: float) -> float:
        """Tensor-parallel AllReduce time of a pass over ``tokens`` tokens (s): exact at the
        powers of two of :data:`COMM_GRID`, linear between; 0 for no tokens."""
        if tokens <= 0:
            return 0.0
        grid = COMM_GRID
        if tokens >= grid[-1]:
            return self.comm_grid[-1] * tokens / grid[-1]
        if tokens <= 1:
            return self.comm_grid[0]
        i = bisect.bisect_right(grid, tokens) - 1
        lo, hi = grid[i], grid[i + 1]
        f = (tokens - lo) / (hi - lo)
        return self.comm_grid[i] + f * (self.comm_grid[i + 1] - self.comm_grid[i])

    def time(self, query_tokens: float, pairs: float, cache_tokens: float) -> float:
        """One forward pass (s): ``max(q·t_token_compute, t_weights_read)
        + max(pairs·t_pair_compute, cache·t_cache_read) + comm_time(q)``."""
        return (max(query_tokens * self.t_token_compute, self.t_weights_read)
                + max(pairs * self.t_pair_compute, cache_tokens * self.t_cache_read)
                + self.comm_time(query_tokens))

    def decode_time(self, batch: float, context_tokens: float) -> float:
        """A decode step of ``batch`` sequences holding ``context_tokens`` cached tokens in all
        (s): ``time(B, ΣS, ΣS)``. Equals ``inference.decode_step(...).time`` at ``ΣS = B·S``."""
        if batch <= 0:
            return 0.0
        return self.time(batch, context_tokens, context_tokens)

    def prefill_time(self, prompt_len: float, batch: float = 1) -> float:
        """Prefill of ``batch`` prompts of ``prompt_len`` tokens in one pass (s):
        ``time(B·T, B·T², B·T)``. Equals ``inference.prefill(...).time``."""
        return self.time(batch * prompt_len, batch * prompt_len ** 2, batch * prompt_len)

    def chunk_pairs(self, chunk: float, offset: float) -> float:
        """Attention pairs of a prompt chunk of ``chunk`` tokens after ``offset`` already cached:
        ``chunk · (offset + chunk)`` (each token against the cache so far, no causal discount)."""
        return chunk * (offset + chunk)


def step_model(server: Server) -> StepModel:
    """The :class:`StepModel` of ``server``, read off :mod:`scalebook.inference`.

    One ``decode_step(batch=1, context_len=1)`` gives the four phase coefficients (its
    ``t_weights_compute``, ``t_weights_memory``, ``t_attention_compute``,
    ``t_attention_memory``); ``kv_bytes_per_token · kv_replication`` the cache per token;
    ``max_batch``'s arithmetic the tokens that fit; ``tp_comm_time`` the AllReduces.
    """
    if not isinstance(server, Server):
        raise ValueError(f"server must be a Server, got {type(server).__name__}")
    try:
        hash(server)
    except TypeError:                     # a field the dataclass did not expect: say which below
        return _step_model(server)
    return _cached_step_model(server)


def _step_model(server: Server) -> StepModel:
    """:func:`step_model`'s arithmetic, for a ``Server``."""
    cfg = server.config
    chip: Chip = get_chip(server.chip)
    n = positive_int(server.n_chips, "n_chips")
    reserve = float(server.reserve)
    if not 0.0 <= reserve < 1.0:
        raise ValueError(f"reserve must be a fraction in [0, 1), got {server.reserve!r}")
    positive(server.price_per_chip_hour, "price_per_chip_hour")
    one = inference.decode_step(cfg, chip, batch=1, context_len=1, n_chips=n,
                                weight_dtype=server.weight_dtype, cache_dtype=server.cache_dtype,
                                compute_dtype=server.compute_dtype)
    per_token = (inference.kv_bytes_per_token(cfg, server.cache_dtype)
                 * inference.kv_replication(cfg, n))
    free = (n * chip.hbm_bytes * (1.0 - reserve)
            - inference.weight_bytes(cfg, server.weight_dtype))
    capacity = max(0, int(free // per_token))
    comm = tuple(inference.tp_comm_time(cfg, chip, n_chips=n, tokens=t) if n > 1 else 0.0
                 for t in COMM_GRID)
    return StepModel(server=server, t_token_compute=one.t_weights_compute,
                     t_weights_read=one.t_weights_memory, t_pair_compute=one.t_attention_compute,
                     t_cache_read=one.t_attention_memory, kv_bytes_per_token=per_token,
                     kv_capacity_tokens=capacity, comm_grid=comm)


#: A pure function of a frozen ``Server``, kept for the servers seen last: a simulation, a
#: widget redraw and a practice check ask for the same few nodes again and again, and each
#: costs 22 priced AllReduces (:data:`COMM_GRID`).
_cached_step_model = lru_cache(maxsize=128)(_step_model)


def fits(model: StepModel) -> bool:
    """Whether the weights fit with room for at least one token of cache."""
    return model.kv_capacity_tokens > 0

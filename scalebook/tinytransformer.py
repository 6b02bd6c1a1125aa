"""A small transformer in plain JAX, trainable five ways on a mesh.

The model is a decoder-only Transformer small enough to compile in seconds on a CPU with eight
simulated devices (``XLA_FLAGS=--xla_force_host_platform_device_count=8``): ``n_layers`` blocks
of pre-norm causal multi-head attention and a ReLU MLP, learned token and position embeddings,
a separate unembedding, all in fp32, no biases, parameter-free RMS norms. Everything is plain
``jax.numpy``; the optimizer is Adam written out in a few lines.

One training step is trained five ways (Part 4 of the book, HSYM part 5):

- ``"single"``: one device, no mesh;
- ``"dp"``: data parallelism over ``Mesh({'data': 8})``: replicated parameters, batch split;
- ``"fsdp"``: FSDP / ZeRO-3 over ``Mesh({'data': 8})``: every parameter (and Adam moment) split
  along its first dimension over ``data``, batch split;
- ``"tp"``: Megatron tensor parallelism over ``Mesh({'model': 8})``: attention heads and the
  MLP's hidden units split (``W_q, W_k, W_v, W_in`` by columns, ``W_o, W_out`` by rows), batch
  replicated;
- ``"fsdp_tp"``: both on ``Mesh({'data': 2, 'model': 4})``.

Nothing in the model code mentions communication: the parameters and the batch carry
``NamedSharding`` s on an Auto (GSPMD) mesh and ``jax.jit`` inserts the collectives, which
:func:`train` reads back from the compiled HLO with :mod:`scalebook.hlo`.

:func:`pipeline_forward` runs the layers as a GPipe schedule over 4 stages with
``jax.shard_map`` and ``jax.lax.ppermute``, and counts the idle stage-ticks of the schedule.
:func:`predicted_comm_bytes` predicts what the compiled step's collectives add up to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

from scalebook import hlo
from scalebook.parallelism import pipeline_bubble_fraction

__all__ = [
    "Config",
    "TrainResult",
    "PipelineResult",
    "STRATEGIES",
    "init_params",
    "param_count",
    "make_batch",
    "forward",
    "forward_layers",
    "loss_fn",
    "adam_update",
    "param_specs",
    "batch_spec",
    "make_mesh",
    "train",
    "pipeline_forward",
    "predicted_comm_bytes",
    "compiled_comm_bytes",
]

#: The strategies :func:`train` accepts.
STRATEGIES: tuple[str, ...] = ("single", "dp", "fsdp", "tp", "fsdp_tp")

#: Mesh shape and axis names each strategy trains on.
MESHES: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "dp": ((8,), ("data",)),
    "fsdp": ((8,), ("data",)),
    "tp": ((8,), ("model",)),
    "fsdp_tp": ((2, 4), ("data", "model")),
}

_LAYER_KEYS = ("w_qkv", "wo", "w_in", "w_out")
_BYTES = 4  # everything is fp32


@dataclass(frozen=True)
class Config:
    """Shapes and training settings of the tiny transformer.

    Attributes:
        vocab: V, tokens in the vocabulary.
        d_model: D, the residual width.
        n_heads: H, attention heads (``D / H`` wide each).
        d_ff: F, the MLP's hidden width.
        n_layers: L, Transformer blocks.
        seq_len: T, tokens per sequence.
        batch: B, sequences per step (the same fixed batch every step).
        learning_rate: Adam's step size.
        seed: PRNG seed of the initial weights and the synthetic data.
    """

    vocab: int = 64
    d_model: int = 64
    n_heads: int = 8
    d_ff: int = 256
    n_layers: int = 4
    seq_len: int = 16
    batch: int = 16
    learning_rate: float = 3e-3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab", "d_model", "n_heads", "d_ff", "n_layers", "seq_len", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not (isinstance(self.learning_rate, (int, float)) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def tokens(self) -> int:
        """Tokens per step, ``B · T``."""
        return self.batch * self.seq_len


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        losses: the loss before each step's update (nats per token).
        step_hlo: the compiled (post-partitioning) HLO text of one training step.
        collectives: the collectives in ``step_hlo``, in program order.
        mesh: the mesh the step ran on (None for "single").
    """

    losses: list[float]
    step_hlo: str
    collectives: list[hlo.HloCollective]
    mesh: Any = field(default=None, repr=False)


@dataclass(frozen=True)
class PipelineResult:
    """What :func:`pipeline_forward` returns.

    Attributes:
        output: the last stage's activations, ``[B, T, D]``, in the input's batch order.
        idle_ticks: stage-ticks in which a stage had no microbatch (summed over stages).
        total_ticks: stage-ticks in the schedule, ``K · (M + K − 1)``.
        stages, microbatches: K and M.
        step_hlo: the compiled HLO of the schedule (its CollectivePermutes are the
            stage-to-stage sends).
    """

    output: jax.Array
    idle_ticks: int
    total_ticks: int
    stages: int
    microbatches: int
    step_hlo: str = field(default="", repr=False)

    @property
    def idle_fraction(self) -> float:
        """``idle_ticks / total_ticks``; equals the bubble ``(K − 1)/(M + K − 1)``."""
        return self.idle_ticks / self.total_ticks

    def __iter__(self):  # allows ``output, idle = pipeline_forward(...)``
        return iter((self.output, self.idle_ticks))


# --------------------------------------------------------------------------- model


def _check_config(cfg: Any) -> Config:
    if not isinstance(cfg, Config):
        raise ValueError(f"cfg must be a tinytransformer.Config, got {type(cfg).__name__}")
    return cfg


def init_params(cfg: Config = Config(), key: jax.Array | None = None) -> dict:
    """Initial parameters, deterministic in ``key`` (default ``jax.random.key(cfg.seed)``).

    Matrices are normal with standard deviation ``1/sqrt(fan_in)`` (embeddings 1). Structure::

        {"embed": [V, D], "pos": [T, D], "unembed": [D, V],
         "layers": ({"w_qkv": [D, 3, D], "wo": [D, D], "w_in": [D, F], "w_out": [F, D]}, ...)}

    ``w_qkv[:, 0]``, ``[:, 1]``, ``[:, 2]`` are the query, key and value projections, kept in
    one array as Megatron-LM does, so that tensor parallelism splits all three by heads with
    one sharding and reduces their input gradient with one AllReduce.
    """
    cfg = _check_config(cfg)
    if key is None:
        key = jax.random.key(cfg.seed)
    D, F, V, T = cfg.d_model, cfg.d_ff, cfg.vocab, cfg.seq_len
    keys = iter(jax.random.split(key, 3 + 6 * cfg.n_layers))

    def normal(shape, fan_in):
        return jax.random.normal(next(keys), shape, jnp.float32) / math.sqrt(fan_in)

    layers = []
    for _ in range(cfg.n_layers):
        layers.append({"w_qkv": normal((D, 3, D), D), "wo": normal((D, D), D),
                       "w_in": normal((D, F), D),
                       "w_out": normal((F, D), F)})
    return {"embed": normal((V, D), 1), "pos": normal((T, D), 1),
            "unembed": normal((D, V), D), "layers": tuple(layers)}


def param_count(cfg: Config = Config()) -> int:
    """Parameters: ``V·D + T·D + D·V + L·(4·D² + 2·D·F)``."""
    cfg = _check_config(cfg)
    D, F = cfg.d_model, cfg.d_ff
    return 2 * cfg.vocab * D + cfg.seq_len * D + cfg.n_layers * (4 * D * D + 2 * D * F)


def make_batch(cfg: Config = Config()) -> dict:
    """The fixed synthetic dataset: ``{"inputs", "targets"}``, int32 ``[B, T]`` each.

    Every sequence follows ``x[t+1] = (5·x[t] + 3) mod V`` from a random first token, with one
    token in eight replaced by a random one, so the next token is predictable most of the time
    and the loss has somewhere to go. ``targets`` is ``inputs`` shifted left by one.
    """
    cfg = _check_config(cfg)
    rng = np.random.default_rng(cfg.seed + 1)
    seq = np.empty((cfg.batch, cfg.seq_len + 1), np.int64)
    seq[:, 0] = rng.integers(0, cfg.vocab, cfg.batch)
    for t in range(cfg.seq_len):
        seq[:, t + 1] = (5 * seq[:, t] + 3) % cfg.vocab
        noise = rng.random(cfg.batch) < 0.125
        seq[noise, t + 1] = rng.integers(0, cfg.vocab, int(noise.sum()))
    return {"inputs": jnp.asarray(seq[:, :-1], jnp.int32),
            "targets": jnp.asarray(seq[:, 1:], jnp.int32)}


def _rms_norm(x: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def _block(layer: dict, h: jax.Array, n_heads: int) -> jax.Array:
    """One pre-norm block on ``h[B, T, D]``: ``h + attn(norm h)``, then ``h + mlp(norm h)``."""
    B, T, D = h.shape
    x = _rms_norm(h)
    qkv = jnp.einsum("btd,dcf->btcf", x, layer["w_qkv"]).reshape(B, T, 3, n_heads, -1)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    causal = jnp.tril(jnp.ones((T, T), bool))
    scores = jnp.where(causal, scores, -1e30)
    mixed = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    h = h + mixed.reshape(B, T, D) @ layer["wo"]
    x = _rms_norm(h)
    return h + jax.nn.relu(x @ layer["w_in"]) @ layer["w_out"]


def forward_layers(params: dict, h: jax.Array, cfg: Config = Config()) -> jax.Array:
    """The Transformer blocks alone: ``h[B, T, D]`` in, ``[B, T, D]`` out (no final norm)."""
    cfg = _check_config(cfg)
    for layer in params["layers"]:
        h = _block(layer, h, cfg.n_heads)
    return h


def forward(params: dict, inputs: jax.Array, cfg: Config = Config()) -> jax.Array:
    """Logits ``[B, T, V]`` for int tokens ``inputs[B, T]``."""
    h = params["embed"][inputs] + params["pos"][None, : inputs.shape[1]]
    h = forward_layers(params, h, cfg)
    return _rms_norm(h) @ params["unembed"]


def loss_fn(params: dict, batch: dict, cfg: Config = Config()) -> jax.Array:
    """Mean next-token cross-entropy over the ``B · T`` positions of ``batch``, in nats."""
    logits = forward(params, batch["inputs"], cfg)
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, batch["targets"][..., None], axis=-1)
    return -jnp.mean(picked)


def adam_update(params, grads, m, v, step, *, lr: float, b1: float = 0.9, b2: float = 0.999,
                eps: float = 1e-8):
    """One Adam step (Kingma and Ba 2015); ``step`` counts from 1. Returns (params, m, v)."""
    m = jax.tree.map(lambda m_, g: b1 * m_ + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v_, g: b2 * v_ + (1 - b2) * g * g, v, grads)
    c1 = 1 - b1 ** step
    c2 = 1 - b2 ** step
    params = jax.tree.map(lambda p, m_, v_: p - lr * (m_ / c1) / (jnp.sqrt(v_ / c2) + eps),
                          params, m, v)
    return params, m, v


# --------------------------------------------------------------------------- shardings


def _check_strategy(strategy: Any) -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return strategy


def param_specs(strategy: str, cfg: Config = Config()) -> dict:
    """A ``PartitionSpec`` for every parameter, same structure as :func:`init_params`.

    - "single", "dp": replicated, ``P()``;
    - "fsdp": first dimension over ``data`` (``W_in[D_data, F]``, ``W_out[F_data, D]``, ...);
    - "tp": ``W_q, W_k, W_v, W_in`` by columns over ``model`` (heads, hidden units), ``W_o,
      W_out`` by rows; embeddings replicated;
    - "fsdp_tp": the "tp" split plus the other dimension over ``data``; embeddings' first
      dimension over ``data``.
    """
    cfg = _check_config(cfg)
    strategy = _check_strategy(strategy)
    if strategy in ("single", "dp"):
        layer = {k: P() for k in _LAYER_KEYS}
        return {"embed": P(), "pos": P(), "unembed": P(),
                "layers": tuple(dict(layer) for _ in range(cfg.n_layers))}
    if strategy == "fsdp":
        layer = {k: P("data", None) for k in _LAYER_KEYS}
        return {"embed": P("data", None), "pos": P("data", None), "unembed": P("data", None),
                "layers": tuple(dict(layer) for _ in range(cfg.n_layers))}
    data = "data" if strategy == "fsdp_tp" else None
    column, row = P(data, "model"), P("model", data)
    layer = {"w_qkv": P(data, None, "model"), "wo": row, "w_in": column, "w_out": row}
    edge = P()
    return {"embed": edge, "pos": edge, "unembed": edge,
            "layers": tuple(dict(layer) for _ in range(cfg.n_layers))}


def batch_spec(strategy: str) -> P:
    """``PartitionSpec`` of the ``[B, T]`` token arrays: batch over ``data`` where there is one."""
    strategy = _check_strategy(strategy)
    return P("data", None) if strategy in ("dp", "fsdp", "fsdp_tp") else P()


def make_mesh(strategy: str) -> jax.sharding.Mesh | None:
    """The 8-device Auto mesh of a strategy (:data:`MESHES`); None for "single"."""
    strategy = _check_strategy(strategy)
    return None if strategy == "single" else _sharded_mesh(strategy)


def _sharded_mesh(strategy: str) -> jax.sharding.Mesh:
    shape, names = MESHES[strategy]
    if len(jax.devices()) < math.prod(shape):
        raise ValueError(f"strategy {strategy!r} needs {math.prod(shape)} devices, JAX sees "
                         f"{len(jax.devices())}; set "
                         "XLA_FLAGS=--xla_force_host_platform_device_count=8 before importing jax")
    return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape),
                         devices=jax.devices()[: math.prod(shape)])


# --------------------------------------------------------------------------- training


def _is_spec(x: Any) -> bool:
    return isinstance(x, P)


def train(strategy: str, *, steps: int = 20, cfg: Config = Config(),
          mesh: jax.sharding.Mesh | None = None) -> TrainResult:
    """Train ``steps`` Adam steps on the fixed batch under ``strategy``.

    The parameters, both Adam moments and the batch are placed with ``NamedSharding`` s from
    :func:`param_specs` and :func:`batch_spec` on ``mesh`` (default :func:`make_mesh`); the step
    is ``jax.jit`` ted with matching in/out shardings, so the compiler chooses the collectives.
    Returns the per-step losses, the compiled step's HLO text and its collectives.
    """
    strategy = _check_strategy(strategy)
    cfg = _check_config(cfg)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    params = init_params(cfg)
    batch = make_batch(cfg)
    lr = float(cfg.learning_rate)

    def step(params, m, v, batch, t):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch, cfg)
        params, m, v = adam_update(params, grads, m, v, t, lr=lr)
        return params, m, v, loss

    zeros = jax.tree.map(jnp.zeros_like, params)
    if strategy == "single":
        device = jax.devices()[0]
        params, m, v, batch = jax.device_put((params, zeros, zeros, batch), device)
        jitted = jax.jit(step)
        mesh = None
    else:
        if mesh is None:
            mesh = _sharded_mesh(strategy)
        needed = set(MESHES[strategy][1])
        if not needed <= set(mesh.axis_names):
            raise ValueError(f"strategy {strategy!r} needs mesh axes {sorted(needed)}, "
                             f"the mesh has {mesh.axis_names}")
        p_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), param_specs(strategy, cfg),
                            is_leaf=_is_spec)
        b_sh = {k: NamedSharding(mesh, batch_spec(strategy)) for k in batch}
        rep = NamedSharding(mesh, P())
        params, m, v = (jax.device_put(tree, p_sh) for tree in (params, zeros, zeros))
        batch = jax.device_put(batch, b_sh)
        jitted = jax.jit(step, in_shardings=(p_sh, p_sh, p_sh, b_sh, rep),
                         out_shardings=(p_sh, p_sh, p_sh, rep))
    t0 = jnp.asarray(1.0, jnp.float32)
    compiled = jitted.lower(params, m, v, batch, t0).compile()
    step_hlo = hlo.compiled_text(compiled)
    collectives = [] if mesh is None else hlo.hlo_collectives(step_hlo, mesh)
    losses = []
    for i in range(steps):
        params, m, v, loss = compiled(params, m, v, batch, jnp.asarray(i + 1.0, jnp.float32))
        losses.append(float(loss))
    return TrainResult(losses=losses, step_hlo=step_hlo, collectives=collectives, mesh=mesh)


# --------------------------------------------------------------------------- communication


def predicted_comm_bytes(strategy: str, cfg: Config = Config(), *,
                         reduce_scatter: bool = False) -> dict[str, int]:
    """The bytes the collectives of one compiled training step should add up to, by kind.

    Keys are ``"<Kind>(<axes>)"`` as :func:`compiled_comm_bytes` writes them; values are summed
    result bytes per device, the convention of :class:`scalebook.hlo.HloCollective` (the result
    of an AllGather or an AllReduce is the whole array, that of a ReduceScatter one shard of it).
    Everything is fp32 (4 bytes). ``P`` = :func:`param_count`, ``P_L`` the weights of the
    Transformer blocks, ``P_E = P − P_L`` the embeddings, ``A = B·T·D`` activation elements,
    ``n`` the ``data`` degree, ``y`` the ``model`` degree:

    - "dp": the gradients are AllReduced over ``data``: ``4·P``, plus 4 for the scalar loss;
    - "fsdp": the weights are AllGathered over ``data`` once, ``4·P`` (one ``jit`` keeps the
      gathered copy for the backward pass instead of gathering again as ZeRO-3 does layer by
      layer), and the gradients reduced over ``data``;
    - "tp": per layer one AllReduce of ``A`` after ``W_o`` and one after ``W_out`` in the
      forward pass, and one each for the input gradients of ``W_qkv`` and ``W_in`` in the
      backward pass: ``4 · 4·L·A`` bytes over ``model``;
    - "fsdp_tp": the TP AllReduces on a data shard of the batch, ``4 · 4·L·A / n``; the FSDP
      gather of the block weights a model column holds, ``4·P_L / y``, and their gradient
      reduction; the replicated embeddings' gradients AllReduced over ``data``, ``4·P_E``.

    A gradient reduction onto shards is a ReduceScatter whose result is ``1/n`` of the array
    when ``reduce_scatter=True`` (what TPUs and GPUs emit). XLA on CPU instead AllReduces the
    whole gradient and slices its shard, so the default (``False``) counts an AllReduce of the
    whole array, which is what the CPU build of this book measures.
    """
    cfg = _check_config(cfg)
    strategy = _check_strategy(strategy)
    if not isinstance(reduce_scatter, bool):
        raise ValueError(f"reduce_scatter must be True or False, got {reduce_scatter!r}")
    P_all = param_count(cfg)
    D, F, L = cfg.d_model, cfg.d_ff, cfg.n_layers
    P_layers = L * (4 * D * D + 2 * D * F)
    P_edges = P_all - P_layers
    loss = _BYTES  # the mean loss over a batch split over data
    if strategy == "single":
        return {}
    if strategy == "dp":
        return {"AllReduce(data)": _BYTES * P_all + loss}

    def fsdp_part(sharded: int, n: int, replicated: int) -> dict[str, int]:
        out = {"AllGather(data)": _BYTES * sharded}
        if reduce_scatter:
            out["ReduceScatter(data)"] = _BYTES * sharded // n
            out["AllReduce(data)"] = _BYTES * replicated + loss
        else:
            out["AllReduce(data)"] = _BYTES * (sharded + replicated) + loss
        return out

    if strategy == "fsdp":
        return fsdp_part(P_all, MESHES["fsdp"][0][0], 0)
    activations = cfg.tokens * D
    if strategy == "tp":
        return {"AllReduce(model)": _BYTES * 4 * L * activations}
    n, y = MESHES["fsdp_tp"][0]
    out = fsdp_part(P_layers // y, n, P_edges)
    out["AllReduce(model)"] = _BYTES * 4 * L * activations // n
    return out


def compiled_comm_bytes(collectives: list[hlo.HloCollective]) -> dict[str, int]:
    """Summed result bytes of compiled collectives by ``"<Kind>(<axes>)"``, e.g. from
    :attr:`TrainResult.collectives` (``"AllReduce(data,model)"`` for an op over both axes)."""
    out: dict[str, int] = {}
    for c in collectives:
        if not isinstance(c, hlo.HloCollective):
            raise ValueError(f"expected HloCollective items, got {type(c).__name__}")
        key = f"{c.kind}({','.join(c.axes)})"
        out[key] = out.get(key, 0) + c.nbytes
    return out


# --------------------------------------------------------------------------- pipeline


def _stack_stages(params: dict, stages: int) -> dict:
    """Layer weights stacked as ``[K, L/K, ...]``: stage ``s`` holds layers ``s·L/K ...``."""
    layers = params["layers"]
    per = len(layers) // stages
    return {k: jnp.stack([jnp.stack([layers[s * per + j][k] for j in range(per)])
                          for s in range(stages)]) for k in _LAYER_KEYS}


def pipeline_forward(params: dict, x: jax.Array, *, stages: int = 4, microbatches: int = 4,
                     mesh: jax.sharding.Mesh | None = None,
                     cfg: Config = Config()) -> PipelineResult:
    """Run the Transformer blocks on ``x[B, T, D]`` as a GPipe forward schedule.

    Device ``s`` of the ``stage`` mesh axis holds layers ``s·L/K`` to ``(s+1)·L/K − 1``. The
    batch is cut into ``M`` microbatches of ``B/M`` sequences. At tick ``t = 0 ... M+K−2``
    stage ``s`` works on microbatch ``t − s`` if ``0 <= t − s < M`` and idles otherwise; after
    each tick every stage passes its result to stage ``s+1`` with ``jax.lax.ppermute``. Stage
    ``K−1`` collects the outputs. Of the ``K·(M+K−1)`` stage-ticks, ``K·(K−1)`` are idle: the
    bubble ``(K−1)/(M+K−1)`` (:func:`scalebook.parallelism.pipeline_bubble_fraction`).

    ``mesh`` needs an axis named ``stage`` of size ``stages`` (default: a 1-D mesh over the
    first ``stages`` devices). The result matches :func:`forward_layers` on the whole batch.
    """
    cfg = _check_config(cfg)
    K, M = stages, microbatches
    for name, value in (("stages", K), ("microbatches", M)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if cfg.n_layers % K:
        raise ValueError(f"{cfg.n_layers} layers do not split evenly into {K} stages")
    B, T, D = x.shape
    if B % M:
        raise ValueError(f"batch {B} does not split into {M} microbatches")
    if mesh is None:
        if len(jax.devices()) < K:
            raise ValueError(f"{K} stages need {K} devices, JAX sees {len(jax.devices())}")
        mesh = jax.make_mesh((K,), ("stage",), axis_types=(AxisType.Auto,),
                             devices=jax.devices()[:K])
    if "stage" not in mesh.axis_names or mesh.shape["stage"] != K:
        raise ValueError(f"mesh needs an axis 'stage' of size {K}, got {dict(mesh.shape)}")
    stacked = _stack_stages(params, K)
    micro = x.reshape(M, B // M, T, D)
    ticks = M + K - 1

    def schedule(stage_params, micro):
        mine = jax.tree.map(lambda a: a[0], stage_params)  # [L/K, ...] for this stage
        s = jax.lax.axis_index("stage")
        carry = jnp.zeros_like(micro[0])
        outputs = jnp.zeros_like(micro)
        idle = jnp.zeros((), jnp.int32)
        for t in range(ticks):
            feed = micro[min(t, M - 1)]
            h = jnp.where(s == 0, feed, carry)
            for j in range(cfg.n_layers // K):
                h = _block(jax.tree.map(lambda a: a[j], mine), h, cfg.n_heads)
            index = t - s
            active = (index >= 0) & (index < M)
            idle = idle + jnp.where(active, 0, 1)
            done = active & (s == K - 1)
            slot = jnp.clip(index, 0, M - 1)
            outputs = jnp.where(done, outputs.at[slot].set(h), outputs)
            if t < ticks - 1:
                carry = jax.lax.ppermute(h, "stage", [(i, i + 1) for i in range(K - 1)])
        return outputs[None], idle[None]

    spec = P("stage")
    run = jax.jit(jax.shard_map(schedule, mesh=mesh, in_specs=(spec, P()),
                                out_specs=(spec, spec)))
    stacked = jax.device_put(stacked, NamedSharding(mesh, spec))
    micro = jax.device_put(micro, NamedSharding(mesh, P()))
    compiled = run.lower(stacked, micro).compile()
    outputs, idle = compiled(stacked, micro)
    return PipelineResult(output=outputs[-1].reshape(B, T, D), idle_ticks=int(idle.sum()),
                          total_ticks=K * ticks, stages=K, microbatches=M,
                          step_hlo=hlo.compiled_text(compiled))


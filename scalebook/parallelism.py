"""Parallelism strategies for training a stack of MLP layers, priced as per-chip rooflines.

The model is the one "How to Scale Your Model" (HSYM; Austin et al., 2025, part 5) prices every
strategy on: ``n_layers`` blocks, each ``Out[B, D] = In[B, D] · W_in[D, F] · W_out[F, D]``,
trained on a global batch of ``B`` tokens per step. Attention, norms and the gating matrix are
left out; :mod:`scalebook.transformer` counts a full Transformer.

Notation (HSYM part 5):

- ``D`` = d_model, ``F`` = d_ff, ``L`` = n_layers, ``B`` = global batch in tokens;
- ``X`` = data-parallel (DP or FSDP) degree, ``Y`` = tensor-parallel degree, ``K`` = pipeline
  stages, ``M`` = microbatches, ``N = X·Y·K`` chips;
- ``C`` = peak FLOPs/s of one chip in the compute dtype;
- ``W`` = the bytes/s one chip pushes out along one mesh axis in a ring collective (see
  :func:`axis_bandwidth`). Sharding over ``n`` mesh axes at once multiplies it by ``n``.

Conventions (every strategy uses them, so the strategies compare fairly):

- **FLOPs.** A matmul ``[b, d] · [d, f]`` costs ``2·b·d·f`` FLOPs. One layer's forward pass is two
  of them, ``4·B·D·F``; the backward pass is twice that, ``8·B·D·F`` (one matmul for the weight
  gradient and one for the input gradient per forward matmul). Training therefore costs
  ``12·B·D·F = 6·B·(2·D·F)`` FLOPs per layer: 6 FLOPs per token per parameter. A chip does
  ``1/N`` of them, taking ``FLOPs / C`` seconds.
- **Collectives** use HSYM's closed forms for a ring, large-degree limit: an AllGather or a
  ReduceScatter of an array whose full size is ``V`` bytes takes ``V / W``; an AllReduce takes
  ``2·V / W``. A degree-1 axis communicates nothing.
- **Overlap.** Within the forward pass, and within the backward pass, communication overlaps
  compute: a layer's time is ``max(compute_fwd, comms_fwd) + max(compute_bwd, comms_bwd)``.
  Collectives on different axes add up (HSYM's FSDP+TP accounting). The result is a lower bound
  on the step time; the optimizer update and the loss are not priced.
- **Memory** per chip: parameters (``param_dtype``), gradients (``grad_dtype``, sharded like the
  parameters), Adam state (two moments in ``optimizer_dtype``, fp32 by default, plus an optional
  fp32 master copy of the weights, off by default as in HSYM's "bf16 parameters + fp32 Adam =
  10 bytes per parameter"; with it on, mixed precision costs the familiar 16 bytes per parameter
  with gradients), and activations: with full rematerialisation, each layer keeps only its input
  ``In`` (``tokens × D`` in ``activation_dtype``, bf16 by default) for the backward pass. Transient
  buffers (the ``[B, F]`` intermediate, FSDP's gathered weights) are not counted.

Layout arithmetic for any model (:func:`sequences_per_batch`, :func:`data_parallel_degree`,
:func:`split_batch`, :func:`tokens_per_chip`) checks that degrees divide and says how a batch
spreads; :func:`data_parallel_bandwidth` gives the ``W`` a GPU's data-parallel axis really
gets once a model replica spans nodes (the NICs, not NVLink).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from scalebook._np import np

from scalebook.hardware import Chip, bytes_per_element, canonical_dtype, get_chip
from scalebook.transformer import TransformerConfig
from scalebook.validation import positive, positive_int

ArrayLike = Union[float, int, np.ndarray]

#: Bytes per parameter of the fp32 master copy of the weights, when kept.
MASTER_WEIGHT_BYTES = 4.0

__all__ = [
    "MLPStack",
    "Layout",
    "MemoryPerChip",
    "TrainingEstimate",
    "axis_bandwidth",
    "point_to_point_bandwidth",
    "estimate",
    "data_parallel",
    "fsdp",
    "tensor_parallel",
    "fsdp_tensor_parallel",
    "pipeline_parallel",
    "best_layout",
    "critical_batch_per_chip_dp",
    "critical_batch_per_chip_fsdp",
    "max_tensor_parallel",
    "TensorParallelLimit",
    "tensor_parallel_limit",
    "min_batch_per_chip_fsdp_tp",
    "optimal_fsdp_degree",
    "max_chips_compute_bound",
    "pipeline_bubble_fraction",
    "min_microbatches",
    "PIPELINE_SCHEDULES",
    "PipelineScheduleCost",
    "pipeline_schedule_cost",
    "pipeline_timeline",
    "accumulation_critical_batch",
    "ACCUMULATION_SCHEMES",
    "AccumulationCost",
    "accumulation_cost",
    "tensor_parallel_exposed_fraction",
    "STRATEGIES",
    "sequences_per_batch",
    "data_parallel_degree",
    "BatchSplit",
    "split_batch",
    "tokens_per_chip",
    "data_parallel_bandwidth",
    "data_parallel_critical_batch",
    "dcn_critical_batch_per_pod",
    "nic_bytes_per_gpu",
]

#: Strategy names accepted by :func:`max_chips_compute_bound`.
STRATEGIES: tuple[str, ...] = ("dp", "fsdp", "tp", "fsdp_tp")
_STRATEGY_ALIASES = {"fsdp+tp": "fsdp_tp", "2d": "fsdp_tp", "zero3": "fsdp", "zero-3": "fsdp",
                     "megatron": "tp", "data": "dp"}


def _scalar_or_array(value: ArrayLike) -> ArrayLike:
    arr = np.asarray(value)
    return arr.item() if arr.ndim == 0 else arr


def _label_or_array(labels: np.ndarray) -> str | np.ndarray:
    """An array of labels, or its one label as a str when it is 0-d."""
    return str(labels.item()) if labels.ndim == 0 else labels


# --------------------------------------------------------------------------- model and layout


@dataclass(frozen=True)
class MLPStack:
    """A stack of ``n_layers`` MLP blocks ``In[B, D] · W_in[D, F] · W_out[F, D]``, with its formats.

    Attributes:
        d_model: D, the residual width.
        d_ff: F, the hidden width.
        n_layers: L.
        param_dtype: dtype the weights are stored and gathered in (bf16).
        grad_dtype: dtype gradients are stored and reduced in (bf16).
        activation_dtype: dtype of the checkpointed layer inputs and of tensor-parallel
            activation collectives (bf16).
        compute_dtype: dtype of the matmuls; sets the chip's FLOPs/s (bf16).
        optimizer_dtype: dtype of Adam's two moment estimates (fp32).
        master_weights: keep an fp32 master copy of the weights in the optimizer state
            (default False, HSYM's accounting; True gives the ZeRO paper's mixed-precision 16
            bytes per parameter together with bf16 parameters and gradients).
    """

    d_model: int
    d_ff: int
    n_layers: int
    param_dtype: str = "bf16"
    grad_dtype: str = "bf16"
    activation_dtype: str = "bf16"
    compute_dtype: str = "bf16"
    optimizer_dtype: str = "fp32"
    master_weights: bool = False

    def __post_init__(self) -> None:
        for name in ("d_model", "d_ff", "n_layers"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        for name in ("param_dtype", "grad_dtype", "activation_dtype", "compute_dtype",
                     "optimizer_dtype"):
            object.__setattr__(self, name, canonical_dtype(getattr(self, name)))
        if not isinstance(self.master_weights, bool):
            raise ValueError(f"master_weights must be True or False, got {self.master_weights!r}")

    @property
    def params_per_layer(self) -> int:
        """Weights in one layer: W_in and W_out, ``2·D·F``."""
        return 2 * self.d_model * self.d_ff

    @property
    def n_params(self) -> int:
        """Weights in the whole stack: ``2·D·F·L``."""
        return self.params_per_layer * self.n_layers

    @property
    def optimizer_bytes_per_param(self) -> float:
        """Adam state per parameter in bytes: two moments, plus 4 with an fp32 master copy."""
        extra = MASTER_WEIGHT_BYTES if self.master_weights else 0.0
        return 2.0 * bytes_per_element(self.optimizer_dtype) + extra

    @property
    def training_bytes_per_param(self) -> float:
        """Parameters + gradients + Adam state in bytes per parameter: 12, or 16 with master."""
        return (bytes_per_element(self.param_dtype) + bytes_per_element(self.grad_dtype)
                + self.optimizer_bytes_per_param)

    def training_flops(self, tokens: ArrayLike) -> ArrayLike:
        """Training FLOPs for one step over ``tokens`` tokens: ``6 · tokens · 2·D·F · L``."""
        tokens = positive(tokens, "tokens")
        return 6.0 * tokens * self.n_params


@dataclass(frozen=True)
class Layout:
    """How ``N = data · tensor · stages`` chips share the work.

    Attributes:
        data: X, the number of batch shards (data-parallel degree).
        tensor: Y, the tensor (Megatron) parallel degree: W_in is split along F, W_out along F,
            activations between layers along D.
        stages: K, the number of pipeline stages, each holding ``L / K`` consecutive layers.
        microbatches: M, the number of microbatches a pipelined step is cut into (1 without
            pipelining; gradient accumulation is not modelled).
        shard_params: FSDP (ZeRO-3): parameters, gradients and optimizer state are also split
            X ways and gathered layer by layer. False is plain data parallelism (replicas).
        data_axes: how many mesh axes the data degree spans (multiplies its bandwidth).
        tensor_axes: how many mesh axes the tensor degree spans (multiplies its bandwidth).
    """

    data: int = 1
    tensor: int = 1
    stages: int = 1
    microbatches: int = 1
    shard_params: bool = False
    data_axes: int = 1
    tensor_axes: int = 1

    def __post_init__(self) -> None:
        for name in ("data", "tensor", "stages", "microbatches", "data_axes", "tensor_axes"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        if not isinstance(self.shard_params, bool):
            raise ValueError(f"shard_params must be True or False, got {self.shard_params!r}")
        if self.microbatches > 1 and self.stages == 1:
            raise ValueError("microbatches > 1 needs stages > 1: gradient accumulation without a "
                             "pipeline is not modelled")
        if self.shard_params and self.stages > 1:
            raise ValueError("FSDP (shard_params=True) combined with pipelining is not modelled")

    @property
    def n_chips(self) -> int:
        """N = data · tensor · stages."""
        return self.data * self.tensor * self.stages

    @property
    def strategy(self) -> str:
        """A short name: "dp", "fsdp", "tp", "fsdp+tp", "pp", "dp+pp", ... or "single chip"."""
        parts = []
        if self.shard_params:
            parts.append("fsdp")
        elif self.data > 1:
            parts.append("dp")
        if self.tensor > 1:
            parts.append("tp")
        if self.stages > 1:
            parts.append("pp")
        return "+".join(parts) or "single chip"


# --------------------------------------------------------------------------- bandwidths


def axis_bandwidth(chip: Chip | str, *, wraparound: bool = True) -> float:
    """Bytes/s one chip sends along one mesh axis during a ring collective: HSYM's ``W``.

    - TPU, axis with wraparound (a true ring): both directions of the axis link are used,
      ``2 × link_bandwidth_one_way`` (v5p: 1.8e11, HSYM part 5's ``W_ici``). Without wraparound
      only one direction's worth, ``link_bandwidth_one_way``.
    - GPU inside an NVSwitch node: every link reaches every other GPU, so a collective uses
      the chip's whole one-way NVLink bandwidth, ``links × one-way`` (H100: 4.5e11, HSYM part 12).
    Across GPU nodes or TPU pods the figure is far lower: pass ``bandwidth=`` to the estimators.
    """
    chip = get_chip(chip)
    if chip.has_nvlink_domain:
        return chip.interconnect_bandwidth_one_way
    return chip.link_bandwidth_bidirectional if wraparound else chip.link_bandwidth_one_way


def point_to_point_bandwidth(chip: Chip | str) -> float:
    """Bytes/s one chip sends to one neighbour (pipeline stage to stage).

    TPU: one direction of one ICI link. GPU in an NVSwitch node: all its NVLinks, one way.
    """
    chip = get_chip(chip)
    return (chip.interconnect_bandwidth_one_way if chip.has_nvlink_domain
            else chip.link_bandwidth_one_way)


# --------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class MemoryPerChip:
    """Bytes one chip holds during training (each field a float, or an array over a sweep)."""

    parameters: ArrayLike
    gradients: ArrayLike
    optimizer_state: ArrayLike
    activations: ArrayLike

    @property
    def total(self) -> ArrayLike:
        return self.parameters + self.gradients + self.optimizer_state + self.activations


@dataclass(frozen=True)
class TrainingEstimate:
    """The per-chip roofline of one training step. Times in seconds, memory in bytes.

    Fields that depend on the batch are arrays when ``global_batch_tokens`` was an array.

    Attributes:
        model, layout, chip, global_batch_tokens: the inputs.
        tokens_per_data_shard: ``B / X``, the per-chip batch HSYM compares with ``C / W``.
        memory: per-chip memory; ``fits`` says whether ``memory.total <= chip.hbm_bytes``.
        forward_compute_time, backward_compute_time: per layer, per chip
            (``4·B·D·F / (X·Y·C)`` and twice that).
        forward_comms_time, backward_comms_time: per layer, per chip, summed over axes.
        bubble_fraction: idle fraction of a pipelined step, ``(K-1)/(M+K-1)``; 0 without one.
        compute_time: the chip's FLOPs for the step at peak, ``(L/K)·12·B·D·F / (X·Y·C)``.
        step_time: lower bound, ``(L/K)·(max(fwd) + max(bwd)) / (1 - bubble)``.
        bound: "compute" when compute covers communication in both passes, else "comms".
    """

    model: MLPStack
    layout: Layout
    chip: Chip
    global_batch_tokens: ArrayLike
    tokens_per_data_shard: ArrayLike
    memory: MemoryPerChip
    fits: bool | np.ndarray
    forward_compute_time: ArrayLike
    backward_compute_time: ArrayLike
    forward_comms_time: ArrayLike
    backward_comms_time: ArrayLike
    bubble_fraction: float
    compute_time: ArrayLike
    step_time: ArrayLike
    bound: str | np.ndarray

    @property
    def strategy(self) -> str:
        return self.layout.strategy

    @property
    def n_chips(self) -> int:
        return self.layout.n_chips

    @property
    def compute_time_per_layer(self) -> ArrayLike:
        """Forward + backward compute for one layer on one chip, seconds."""
        return self.forward_compute_time + self.backward_compute_time

    @property
    def comms_time_per_layer(self) -> ArrayLike:
        """Forward + backward communication for one layer on one chip, seconds."""
        return self.forward_comms_time + self.backward_comms_time

    @property
    def compute_fraction(self) -> ArrayLike:
        """``compute_time / step_time``: the best model-FLOPs utilisation this layout allows."""
        return self.compute_time / self.step_time


def estimate(model: MLPStack, layout: Layout, chip: Chip | str, global_batch_tokens: ArrayLike,
             *, bandwidth: float | None = None,
             p2p_bandwidth: float | None = None) -> TrainingEstimate:
    """Price one training step of ``model`` laid out as ``layout`` on ``chip``.

    ``global_batch_tokens`` (B) may be a number or an array (a batch sweep). ``bandwidth``
    overrides the per-axis ring bandwidth ``W`` (default :func:`axis_bandwidth`);
    ``p2p_bandwidth`` the stage-to-stage bandwidth (default :func:`point_to_point_bandwidth`).

    Per layer and per chip, with ``B_x = B/X`` tokens per data shard, ``P = 2·D·F/Y`` weights
    of the layer per tensor shard, bytes per element ``b_p, b_g, b_a``, ``W_x = data_axes·W``,
    ``W_y = tensor_axes·W``:

    - compute: forward ``4·B_x·D·F/(Y·C)``, backward twice that;
    - DP: backward AllReduce of the gradients, ``2·P·b_g / W_x``;
    - FSDP: forward AllGather of the weights ``P·b_p / W_x``; backward AllGather again plus a
      ReduceScatter of the gradients, ``P·(b_p + b_g) / W_x``;
    - TP: in each pass an AllGather of the layer input and a ReduceScatter of its output,
      ``2·B_x·D·b_a / W_y`` (HSYM shares the backward pass's re-gather of ``In`` with the forward);
    - PP: each stage sends its ``B_x × D`` boundary activations forward and their gradients back,
      ``B_x·D·b_a / p2p`` per pass, spread over its ``L/K`` layers.
    """
    chip = get_chip(chip)
    if not isinstance(model, MLPStack):
        raise ValueError(f"model must be an MLPStack, got {type(model).__name__}")
    if not isinstance(layout, Layout):
        raise ValueError(f"layout must be a Layout, got {type(layout).__name__}")
    tokens = positive(global_batch_tokens, "global_batch_tokens")
    ring = axis_bandwidth(chip) if bandwidth is None else positive(bandwidth, "bandwidth")
    p2p = (point_to_point_bandwidth(chip) if p2p_bandwidth is None
           else positive(p2p_bandwidth, "p2p_bandwidth"))
    if np.ndim(ring) or np.ndim(p2p):
        raise ValueError("bandwidth and p2p_bandwidth must be single numbers")

    D, F, L = model.d_model, model.d_ff, model.n_layers
    X, Y, K, M = layout.data, layout.tensor, layout.stages, layout.microbatches
    if Y > min(D, F):
        raise ValueError(f"tensor degree {Y} exceeds min(d_model, d_ff) = {min(D, F)}")
    if K > L:
        raise ValueError(f"{K} pipeline stages exceed the model's {L} layers")
    if np.any(np.asarray(tokens) < X * M):
        raise ValueError(f"global_batch_tokens must be at least data × microbatches = {X * M} "
                         f"so every shard gets a token, got {global_batch_tokens!r}")

    C = chip.flops(model.compute_dtype)
    b_p = bytes_per_element(model.param_dtype)
    b_g = bytes_per_element(model.grad_dtype)
    b_a = bytes_per_element(model.activation_dtype)
    W_x = layout.data_axes * ring
    W_y = layout.tensor_axes * ring
    layers_per_stage = L / K
    tokens_per_shard = tokens / X
    weights_per_shard = 2.0 * D * F / Y  # one layer's weights after tensor sharding

    forward_compute = 4.0 * tokens_per_shard * D * F / (Y * C)
    backward_compute = 2.0 * forward_compute

    forward_comms = 0.0 * tokens_per_shard
    backward_comms = 0.0 * tokens_per_shard
    if X > 1 and layout.shard_params:
        gather = weights_per_shard * b_p / W_x
        forward_comms = forward_comms + gather
        backward_comms = backward_comms + gather + weights_per_shard * b_g / W_x
    elif X > 1:
        backward_comms = backward_comms + 2.0 * weights_per_shard * b_g / W_x
    if Y > 1:
        tensor_comms = 2.0 * tokens_per_shard * D * b_a / W_y
        forward_comms = forward_comms + tensor_comms
        backward_comms = backward_comms + tensor_comms
    if K > 1:
        send = tokens_per_shard * D * b_a / (p2p * layers_per_stage)
        forward_comms = forward_comms + send
        backward_comms = backward_comms + send

    bubble = pipeline_bubble_fraction(K, M)
    compute_time = layers_per_stage * (forward_compute + backward_compute)
    busy = np.maximum(forward_compute, forward_comms) + np.maximum(backward_compute, backward_comms)
    step_time = layers_per_stage * busy / (1.0 - bubble)
    comms_bound = (forward_comms > forward_compute) | (backward_comms > backward_compute)

    param_shards = Y * (X if layout.shard_params else 1)
    params_per_chip = layers_per_stage * model.params_per_layer / param_shards
    resident_tokens = tokens_per_shard if K == 1 else tokens_per_shard * min(M, K) / M
    memory = MemoryPerChip(
        parameters=params_per_chip * b_p,
        gradients=params_per_chip * b_g,
        optimizer_state=params_per_chip * model.optimizer_bytes_per_param,
        activations=_scalar_or_array(layers_per_stage * resident_tokens * (D / Y) * b_a),
    )
    fits = memory.total <= chip.hbm_bytes
    return TrainingEstimate(
        model=model, layout=layout, chip=chip, global_batch_tokens=tokens,
        tokens_per_data_shard=_scalar_or_array(tokens_per_shard),
        memory=memory,
        fits=bool(fits) if np.ndim(fits) == 0 else fits,
        forward_compute_time=_scalar_or_array(forward_compute),
        backward_compute_time=_scalar_or_array(backward_compute),
        forward_comms_time=_scalar_or_array(forward_comms),
        backward_comms_time=_scalar_or_array(backward_comms),
        bubble_fraction=float(bubble),
        compute_time=_scalar_or_array(compute_time),
        step_time=_scalar_or_array(step_time),
        bound=_label_or_array(np.where(comms_bound, "comms", "compute")),
    )


def data_parallel(model: MLPStack, chip: Chip | str, global_batch_tokens: ArrayLike,
                  n_chips: int, *, n_axes: int = 1,
                  bandwidth: float | None = None) -> TrainingEstimate:
    """Pure data parallelism over ``n_chips``: ``In[B_X, D] · W_in[D, F] · W_out[F, D]``.

    Every chip holds the whole model and optimizer; gradients are AllReduced in the backward
    pass. Compute-bound when ``B / N > C / (n_axes · W)`` (:func:`critical_batch_per_chip_dp`).
    """
    layout = Layout(data=n_chips, data_axes=n_axes)
    return estimate(model, layout, chip, global_batch_tokens, bandwidth=bandwidth)


def fsdp(model: MLPStack, chip: Chip | str, global_batch_tokens: ArrayLike, n_chips: int, *,
         n_axes: int = 1, bandwidth: float | None = None) -> TrainingEstimate:
    """FSDP / ZeRO-3 over ``n_chips``: ``In[B_X, D] · W_in[D_X, F] · W_out[F, D_X]``.

    Weights, gradients and Adam state are split ``N`` ways; weights are AllGathered in both
    passes and gradients ReduceScattered. Same threshold as DP, ``B / N > C / (n_axes · W)``.
    """
    layout = Layout(data=n_chips, shard_params=True, data_axes=n_axes)
    return estimate(model, layout, chip, global_batch_tokens, bandwidth=bandwidth)


def tensor_parallel(model: MLPStack, chip: Chip | str, global_batch_tokens: ArrayLike,
                    n_chips: int, *, n_axes: int = 1,
                    bandwidth: float | None = None) -> TrainingEstimate:
    """Tensor (Megatron) parallelism: ``In[B, D_Y] · W_in[D, F_Y] · W_out[F_Y, D]``.

    Weights split ``Y = n_chips`` ways along F; activations AllGathered before ``W_in`` and
    ReduceScattered after ``W_out``. Compute-bound when ``Y < n_axes · F · W / C``
    (:func:`max_tensor_parallel`), whatever the batch.
    """
    layout = Layout(tensor=n_chips, tensor_axes=n_axes)
    return estimate(model, layout, chip, global_batch_tokens, bandwidth=bandwidth)


def fsdp_tensor_parallel(model: MLPStack, chip: Chip | str, global_batch_tokens: ArrayLike,
                         fsdp_degree: int, tensor_degree: int, *, fsdp_axes: int = 1,
                         tensor_axes: int = 1,
                         bandwidth: float | None = None) -> TrainingEstimate:
    """FSDP over X chips times tensor parallelism over Y: ``In[B_X, D_Y] · W_in[D_X, F_Y] ...``.

    FSDP gathers ``2·D·F/Y`` weights per layer over the X axis; TP gathers and scatters
    ``B/X × D`` activations over Y. See :func:`min_batch_per_chip_fsdp_tp` for its limit.
    """
    layout = Layout(data=fsdp_degree, tensor=tensor_degree, shard_params=True,
                    data_axes=fsdp_axes, tensor_axes=tensor_axes)
    return estimate(model, layout, chip, global_batch_tokens, bandwidth=bandwidth)


def pipeline_parallel(model: MLPStack, chip: Chip | str, global_batch_tokens: ArrayLike,
                      stages: int, microbatches: int, *,
                      p2p_bandwidth: float | None = None) -> TrainingEstimate:
    """Pipeline parallelism: ``stages`` chips each hold ``L / K`` consecutive layers.

    The batch is cut into ``microbatches``; the step takes ``(M + K - 1)`` microbatch slots of
    which ``K - 1`` are bubble (:func:`pipeline_bubble_fraction`). Memory assumes a 1F1B
    schedule: the first stage holds the checkpointed inputs of ``min(M, K)`` microbatches for
    each of its layers. Each stage holds all the weights and Adam state of its layers.
    """
    layout = Layout(stages=stages, microbatches=microbatches)
    return estimate(model, layout, chip, global_batch_tokens, p2p_bandwidth=p2p_bandwidth)


def best_layout(model: MLPStack, chip: Chip | str, global_batch_tokens: float, n_chips: int,
                *, bandwidth: float | None = None) -> TrainingEstimate:
    """The fastest DP / FSDP / TP / FSDP+TP / DP+TP layout of ``n_chips`` that fits in HBM.

    Tries every split ``X · Y = n_chips`` (Y at most min(D, F)), with and without parameter
    sharding, one mesh axis each. Ties go to the layout using less memory. Raises ``ValueError``
    if nothing fits.
    """
    n_chips = positive_int(n_chips, "n_chips")
    tokens = positive(global_batch_tokens, "global_batch_tokens")
    if np.ndim(tokens):
        raise ValueError("best_layout takes a single global batch size, not an array")
    best: TrainingEstimate | None = None
    for tensor in range(1, n_chips + 1):
        if n_chips % tensor or tensor > min(model.d_model, model.d_ff):
            continue
        data = n_chips // tensor
        if data > tokens:
            continue
        for shard in (False, True) if data > 1 else (False,):
            est = estimate(model, Layout(data=data, tensor=tensor, shard_params=shard), chip,
                           tokens, bandwidth=bandwidth)
            if not est.fits:
                continue
            key = (est.step_time, est.memory.total)
            if best is None or key < (best.step_time, best.memory.total):
                best = est
    if best is None:
        raise ValueError(f"no DP/FSDP/TP layout of {n_chips} chips fits {model} in "
                         f"{get_chip(chip).name}'s {get_chip(chip).hbm_bytes:.3g} bytes of HBM")
    return best


# --------------------------------------------------------------------------- closed-form limits


def _intensity(chip: Chip, n_axes: int, bandwidth: float | None, dtype: str,
               compute_dtype: str | None = None) -> float:
    """HSYM's ``alpha = C / W`` in tokens, for any dtype: ``C · (b / 2) / (n_axes · W)``.

    ``b`` is the traffic's bytes per element (``dtype``) and ``C`` the chip's FLOPs/s in
    ``compute_dtype`` (default ``dtype``). The ``b / 2`` makes the result dtype-independent
    when compute and traffic share a dtype (HSYM part 5: int8 doubles C and halves the bytes);
    fp8 matmuls with bf16 traffic (the usual fp8 training recipe) double it.
    """
    n_axes = positive_int(n_axes, "n_axes")
    ring = axis_bandwidth(chip) if bandwidth is None else positive(bandwidth, "bandwidth")
    if np.ndim(ring):
        raise ValueError("bandwidth must be a single number")
    flops = chip.flops(compute_dtype if compute_dtype is not None else dtype)
    return flops * (bytes_per_element(dtype) / 2.0) / (n_axes * ring)


def critical_batch_per_chip_fsdp(chip: Chip | str, *, n_axes: int = 1,
                                 bandwidth: float | None = None, dtype: str = "bf16",
                                 compute_dtype: str | None = None) -> float:
    """Tokens per chip above which FSDP (and DP) is compute-bound: ``B / X > C / (n_axes · W)``.

    Derivation (HSYM part 5): per layer, FSDP's forward pass computes ``4·B·D·F/X`` FLOPs while
    AllGathering ``2·D·F`` bf16 weights (``4·D·F / W`` seconds); the backward pass doubles both.
    DP's backward AllReduce of the same gradients costs the same. So compute wins when
    ``B/X · 4DF / C > 4DF / W``. TPU v5p, one axis: ``4.59e14 / 1.8e11 = 2550`` tokens.
    For another ``dtype`` (compute and traffic both in it) the value is ``C·(b/2) / W``.
    ``compute_dtype`` sets ``C`` alone: fp8 matmuls with ``dtype="bf16"`` traffic double the
    threshold (H100: 2,198 -> 4,398 tokens inside a node).
    """
    return _intensity(get_chip(chip), n_axes, bandwidth, dtype, compute_dtype)


def critical_batch_per_chip_dp(chip: Chip | str, *, n_axes: int = 1,
                               bandwidth: float | None = None, dtype: str = "bf16",
                               compute_dtype: str | None = None) -> float:
    """Tokens per chip above which pure data parallelism is compute-bound; equal to FSDP's.

    DP's backward pass computes ``8·B·D·F/X`` FLOPs per layer against an AllReduce of ``2·D·F``
    bf16 gradients (``2 · 4·D·F / W`` seconds): ``B / X > C / W`` again.
    """
    return critical_batch_per_chip_fsdp(chip, n_axes=n_axes, bandwidth=bandwidth, dtype=dtype,
                                        compute_dtype=compute_dtype)


def max_tensor_parallel(chip: Chip | str, d_ff: int, *, n_axes: int = 1,
                        bandwidth: float | None = None, dtype: str = "bf16",
                        overlap: bool = True, max_exposed_fraction: float = 0.2,
                        mlp_matrices: int = 2, compute_dtype: str | None = None) -> int:
    """Largest tensor-parallel degree Y whose activation traffic stays acceptable.

    Per layer the forward pass computes ``2·m·B·D·F / Y`` FLOPs per chip (``T_math``; ``m =
    mlp_matrices``: 2 for HSYM's ``W_in, W_out`` MLP, 3 for a SwiGLU's gate, up and down) and
    AllGathers plus ReduceScatters ``B × D`` bf16 activations, ``4·B·D / W`` seconds
    (``T_comm``); their ratio ``T_comm / T_math = 2·Y·C / (m·F·W)`` does not depend on the
    batch. A SwiGLU's third matrix adds compute and no traffic, so its bound is 1.5× higher.
    The bound counts the MLP only; :func:`tensor_parallel_limit` adds what a Transformer's
    heads allow.

    - ``overlap=True`` (HSYM part 5's bound; it assumes collective matmuls that hide the
      traffic under the matmuls): compute-bound while ``T_math > T_comm``, so
      ``Y < F·W/C``: ``floor(n_axes · F · W / C)``. TPU v5p, F = 28672: 11.
    - ``overlap=False`` (each collective sits between two dependent matmuls and waits, as
      :func:`scalebook.training.plan_training` prices it): the exposed share is
      ``T_comm / (T_math + T_comm)``; keeping it at most ``f = max_exposed_fraction`` needs
      ``Y ≤ f/(1 − f) · F·W/C``. TPU v5p, F = 28672, f = 0.2: 2.

    Returns at least 1 (no tensor parallelism).
    """
    d_ff = positive_int(d_ff, "d_ff")
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap must be True or False, got {overlap!r}")
    m = positive_int(mlp_matrices, "mlp_matrices")
    limit = m / 2.0 * d_ff / _intensity(get_chip(chip), n_axes, bandwidth, dtype, compute_dtype)
    if not overlap:
        f = positive(max_exposed_fraction, "max_exposed_fraction")
        if np.ndim(f) or f >= 1:
            raise ValueError(f"max_exposed_fraction must be a number in (0, 1), got "
                             f"{max_exposed_fraction!r}")
        limit *= f / (1.0 - f)
    return max(1, math.floor(limit * (1 + 1e-12)))


@dataclass(frozen=True)
class TensorParallelLimit:
    """The tensor-parallel degrees a Transformer can use on a chip (:func:`tensor_parallel_limit`).

    Attributes:
        bandwidth_bound: the largest Y whose MLP traffic hides under its matmuls
            (:func:`max_tensor_parallel` with the model's MLP matrices), not yet a degree the
            model can use.
        head_bound: the largest Y at most ``bandwidth_bound`` that divides the query heads
            (each chip owns whole heads).
        kv_bound: the largest such Y that also divides the key/value heads: beyond it every
            KV head must be replicated.
        kv_replication: how many chips hold each KV head at ``head_bound`` (1 when none).
        kv_extra_params_per_layer: weights per chip that replication adds per layer, from
            holding ``W_k`` and ``W_v`` of a whole KV head instead of ``1/Y`` of all of them.
        kv_extra_fraction: that, over a chip's share of a layer's weights at ``head_bound``.
    """

    bandwidth_bound: int
    head_bound: int
    kv_bound: int
    kv_replication: int
    kv_extra_params_per_layer: float
    kv_extra_fraction: float


def _largest_divisor_at_most(n: int, limit: int) -> int:
    return max(d for d in range(1, max(1, min(n, limit)) + 1) if n % d == 0)


def tensor_parallel_limit(cfg: TransformerConfig, chip: Chip | str, *, n_axes: int = 1,
                          bandwidth: float | None = None, dtype: str = "bf16",
                          overlap: bool = True, max_exposed_fraction: float = 0.2,
                          compute_dtype: str | None = None) -> TensorParallelLimit:
    """Tensor-parallel degrees for ``cfg`` (a :class:`scalebook.transformer.TransformerConfig`).

    The bandwidth bound is :func:`max_tensor_parallel` with ``cfg.mlp_matrices`` (3 for
    SwiGLU: ``floor(1.5·F·W/C)``). Megatron splits attention by heads, so a degree must divide
    the ``H`` query heads; with grouped-query attention the ``K`` key/value heads cap it at the
    largest divisor of ``K`` unless each KV head is replicated on ``Y/K`` chips, which costs
    every chip ``W_k, W_v`` of one whole head, ``2·D·d_h`` weights per layer, instead of
    ``2·D·K·d_h/Y`` (and recomputes those projections ``Y/K`` times). LLaMA-3 70B on one TPU
    v5p axis: bandwidth bound 16, 16 divides 64 heads, 8 KV heads cap it at 8; at 16 each KV
    head sits on 2 chips. ``compute_dtype`` (e.g. fp8 matmuls with bf16 traffic) sets ``C``.
    """
    if not isinstance(cfg, TransformerConfig):
        raise ValueError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    m = cfg.mlp_matrices
    bound = max_tensor_parallel(chip, cfg.d_ff, n_axes=n_axes, bandwidth=bandwidth,
                                dtype=dtype, overlap=overlap,
                                max_exposed_fraction=max_exposed_fraction, mlp_matrices=m,
                                compute_dtype=compute_dtype)
    H, K, D, dh = cfg.n_heads, cfg.n_kv_heads, cfg.d_model, cfg.d_head
    head_bound = _largest_divisor_at_most(H, bound)
    kv_bound = _largest_divisor_at_most(K, head_bound)
    replication = head_bound // K if head_bound > K else 1
    extra = 2.0 * D * dh * (1.0 - K / head_bound) if head_bound > K else 0.0
    per_layer = (D * (H + 2 * K) * dh + H * dh * D + m * D * cfg.d_ff) / head_bound
    return TensorParallelLimit(bandwidth_bound=bound, head_bound=head_bound, kv_bound=kv_bound,
                               kv_replication=replication, kv_extra_params_per_layer=extra,
                               kv_extra_fraction=extra / per_layer)


def tensor_parallel_exposed_fraction(chip: Chip | str, d_ff: int, tp: ArrayLike, *,
                                     n_axes: int = 1, bandwidth: float | None = None,
                                     dtype: str = "bf16", mlp_matrices: int = 2) -> ArrayLike:
    """Share of a TP layer's time spent waiting on its collectives when they are not
    overlapped: ``r / (1 + r)`` with ``r = T_comm / T_math = Y·C / (F·W)`` (see
    :func:`max_tensor_parallel`; ``mlp_matrices`` = 3 for a SwiGLU MLP divides ``r`` by 1.5).
    TPU v5p, F = 28672, Y = 8: r = 0.71, 42% (two matrices); 0.47, 32% (SwiGLU)."""
    d_ff = positive_int(d_ff, "d_ff")
    y = positive(tp, "tp")
    m = positive_int(mlp_matrices, "mlp_matrices")
    r = y / (m / 2.0 * d_ff / _intensity(get_chip(chip), n_axes, bandwidth, dtype))
    return _scalar_or_array(r / (1.0 + r))


def min_batch_per_chip_fsdp_tp(chip: Chip | str, d_ff: int, *, fsdp_axes: int = 1,
                               tensor_axes: int = 1, bandwidth: float | None = None,
                               dtype: str = "bf16", compute_dtype: str | None = None) -> float:
    """Smallest per-chip batch ``B / N`` at which the best FSDP × TP split is compute-bound.

    Result: ``B / N > 4·α² / (F · M_X · M_Y)`` with ``α = C / W`` (one axis), ``M_X, M_Y`` the
    mesh axes given to FSDP and TP.

    Derivation (HSYM part 5, forward pass, which has the most communication per FLOP): with
    ``N = X·Y``, ``T_math = 4·B·D·F / (N·C)``, ``T_fsdp = 4·D·F / (Y·M_X·W)`` and
    ``T_tp = 4·B·D / (X·M_Y·W)``. Their sum is smallest at ``X² = B·N·M_X / (F·M_Y)``
    (:func:`optimal_fsdp_degree`), where it equals ``(8·D / W)·sqrt(B·F / (N·M_X·M_Y))``.
    Requiring ``T_math`` to exceed it gives the bound. HSYM's headline ``2·2550² / F`` is the
    case ``M_X = 2, M_Y = 1`` on TPU v5p (F = 32768: 397 tokens; one axis each: 794).
    """
    d_ff = positive_int(d_ff, "d_ff")
    fsdp_axes = positive_int(fsdp_axes, "fsdp_axes")
    tensor_axes = positive_int(tensor_axes, "tensor_axes")
    alpha = _intensity(get_chip(chip), 1, bandwidth, dtype, compute_dtype)
    return 4.0 * alpha ** 2 / (d_ff * fsdp_axes * tensor_axes)


def optimal_fsdp_degree(global_batch_tokens: ArrayLike, n_chips: int, d_ff: int, *,
                        fsdp_axes: int = 1, tensor_axes: int = 1) -> ArrayLike:
    """FSDP degree X minimising FSDP + TP communication time: ``sqrt(B·N·M_X / (F·M_Y))``.

    Clipped to ``[1, N]``; the tensor degree is ``N / X``. Real layouts round to a divisor of N.
    """
    tokens = positive(global_batch_tokens, "global_batch_tokens")
    n_chips = positive_int(n_chips, "n_chips")
    d_ff = positive_int(d_ff, "d_ff")
    fsdp_axes = positive_int(fsdp_axes, "fsdp_axes")
    tensor_axes = positive_int(tensor_axes, "tensor_axes")
    x = np.sqrt(tokens * n_chips * fsdp_axes / (d_ff * tensor_axes))
    return _scalar_or_array(np.clip(x, 1.0, n_chips))


def max_chips_compute_bound(global_batch_tokens: ArrayLike, chip: Chip | str,
                            strategy: str = "fsdp", *, d_ff: int | None = None,
                            n_axes: int = 1, tensor_axes: int = 1,
                            bandwidth: float | None = None, dtype: str = "bf16") -> ArrayLike:
    """Most chips a global batch of B tokens keeps compute-bound under ``strategy``.

    - "dp", "fsdp": ``floor(B / critical_batch_per_chip_fsdp)`` = ``floor(B · n_axes · W / C)``
      (HSYM: 16M tokens on v5p over 3 axes, 18,823 chips);
    - "fsdp_tp": ``floor(B / min_batch_per_chip_fsdp_tp)`` with ``fsdp_axes = n_axes``
      and ``tensor_axes``; needs ``d_ff``;
    - "tp": :func:`max_tensor_parallel`, which does not depend on B; needs ``d_ff``.
    Returns an int, or an int array when B is an array.
    """
    tokens = positive(global_batch_tokens, "global_batch_tokens")
    chip = get_chip(chip)
    key = strategy.strip().lower() if isinstance(strategy, str) else None
    key = _STRATEGY_ALIASES.get(key, key)
    if key not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if key in ("tp", "fsdp_tp") and d_ff is None:
        raise ValueError(f"strategy {key!r} needs d_ff")
    if key == "tp" and d_ff is not None:  # (d_ff is given: checked just above)
        limit = max_tensor_parallel(chip, d_ff, n_axes=n_axes, bandwidth=bandwidth, dtype=dtype)
        return _scalar_or_array(np.full(np.shape(tokens), limit, dtype=np.int64))
    if key == "fsdp_tp" and d_ff is not None:
        per_chip = min_batch_per_chip_fsdp_tp(chip, d_ff, fsdp_axes=n_axes,
                                              tensor_axes=tensor_axes, bandwidth=bandwidth,
                                              dtype=dtype)
    else:
        per_chip = critical_batch_per_chip_fsdp(chip, n_axes=n_axes, bandwidth=bandwidth,
                                                dtype=dtype)
    chips = np.floor(np.asarray(tokens) / per_chip * (1 + 1e-12)).astype(np.int64)
    return _scalar_or_array(chips)


# --------------------------------------------------------------------------- pipelining


def pipeline_bubble_fraction(stages: ArrayLike, microbatches: ArrayLike) -> ArrayLike:
    """Idle fraction of a pipelined step: ``(K - 1) / (M + K - 1)``.

    A GPipe or 1F1B schedule over K stages and M microbatches runs ``M + K - 1`` microbatch
    slots per pass, and each stage works in M of them. K = 4, M = 4: 3/7; M = 16: 3/19.
    Either argument may be an array of positive integers (a sweep).
    """
    k = positive(stages, "stages")
    m = positive(microbatches, "microbatches")
    for value, what in ((k, "stages"), (m, "microbatches")):
        if np.any(np.asarray(value) % 1 != 0):
            raise ValueError(f"{what} must be positive integers, got {value!r}")
    return _scalar_or_array((np.asarray(k) - 1.0) / (np.asarray(m) + np.asarray(k) - 1.0))


def min_microbatches(stages: int, max_bubble_fraction: float) -> int:
    """Fewest microbatches M keeping the bubble at or below ``max_bubble_fraction``.

    From ``(K-1)/(M+K-1) <= f``: ``M >= (K - 1)·(1 - f) / f``. K = 8, f = 0.1: 63.
    """
    stages = positive_int(stages, "stages")
    f = positive(max_bubble_fraction, "max_bubble_fraction")
    if np.ndim(f) or f >= 1:
        raise ValueError(f"max_bubble_fraction must be a number in (0, 1), "
                         f"got {max_bubble_fraction!r}")
    return max(1, math.ceil((stages - 1) * (1 - f) / f - 1e-9))


PIPELINE_SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2",
                                       "dualpipe")
"""Schedules :func:`pipeline_schedule_cost` knows."""


@dataclass(frozen=True)
class PipelineScheduleCost:
    """Bubble and memory of one pipeline schedule (see :func:`pipeline_schedule_cost`).

    Attributes:
        schedule, stages, microbatches: the inputs (``K``, ``M``).
        busy: seconds one stage computes per step, ``M·(t_F + t_B + t_W)``.
        bubble: seconds one stage idles per step.
        bubble_fraction: ``bubble / (busy + bubble)``.
        weight_copies: copies of the stage's weights each device holds (2 for DualPipe).
        in_flight: microbatches' worth of activations the busiest stage holds at once.
    """

    schedule: str
    stages: int
    microbatches: int
    busy: float
    bubble: float
    weight_copies: int
    in_flight: float

    @property
    def bubble_fraction(self) -> float:
        return self.bubble / (self.busy + self.bubble)


def pipeline_schedule_cost(schedule: str, stages: int, microbatches: int, *,
                           t_forward: float = 1.0, t_backward_input: float = 1.0,
                           t_backward_weight: float = 1.0, chunks: int = 2,
                           t_overlapped: float | None = None) -> PipelineScheduleCost:
    """Idle time and memory of a pipeline schedule over ``K = stages`` stages and
    ``M = microbatches`` microbatches, per stage per step.

    A microbatch's work on one stage is its forward ``F = t_forward``, its input-gradient
    backward ``B = t_backward_input`` and its weight-gradient backward ``W =
    t_backward_weight`` (seconds, or any unit; by default 1 each, the usual ``B + W ≈ 2F``).
    Busy time per stage: ``M·(F + B + W)``. Bubbles:

    - ``"gpipe"`` (all forwards, then all backwards; Huang et al. 2019) and ``"1f1b"``
      (PipeDream-Flush; Narayanan et al. 2021): ``(K−1)·(F + B + W)``, so the familiar
      fraction ``(K−1)/(M+K−1)``. GPipe holds all ``M`` microbatches' activations, 1F1B ``K``.
    - ``"interleaved"`` (Narayanan et al. 2021): ``v = chunks`` non-adjacent layer chunks per
      device shrink every tick ``v`` times: ``(K−1)·(F+B+W)/v``, for ``v`` times more
      stage-to-stage sends and activations of ``K·(1 + (K−1)/(v·K)) = K + (K−1)/v``
      microbatches (Korthikanti et al. 2022, section 4.2.3).
    - ``"zb-h1"`` (zero bubble, Qi et al. 2024): ``B`` and ``W`` are split and the ``W``
      passes fill the cool-down: ``(K−1)·(F + B − W)``; memory as 1F1B.
    - ``"zb-h2"``: more warm-up forwards fill the start too; the bubble is ``max(0,
      (K−1)·(F + B − 2W))`` (0 when ``W`` takes as long as ``F``), for ``2K − 1`` microbatches
      in flight.
    - ``"dualpipe"`` (DeepSeek-AI 2024): microbatches enter from both ends, each device holds
      two stages' weights, and a forward chunk of one runs overlapped with a backward chunk of
      another, taking ``t_overlapped`` (``F&B``, default ``F + B + W``: no gain from the
      overlap): ``(K/2 − 1)·(F&B + B − 2W)``; ``K + 1`` microbatches in flight. Needs even K.

    The zero-bubble and DualPipe formulas are the papers' (Qi et al. 2024; DeepSeek-V3
    technical report, table 2, whose ``B`` is the whole backward, ``B + W`` here); they assume
    ``M ≥ K`` (``2K`` for zb-h2) so the steady state is reached.
    """
    key = schedule.strip().lower() if isinstance(schedule, str) else None
    if key not in PIPELINE_SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; known: {', '.join(PIPELINE_SCHEDULES)}")
    K = positive_int(stages, "stages")
    M = positive_int(microbatches, "microbatches")
    F = float(positive(t_forward, "t_forward"))
    B = float(positive(t_backward_input, "t_backward_input"))
    W = float(positive(t_backward_weight, "t_backward_weight"))
    v = positive_int(chunks, "chunks")
    FB = F + B + W if t_overlapped is None else float(positive(t_overlapped, "t_overlapped"))
    busy = M * (F + B + W)
    if key == "gpipe":
        return PipelineScheduleCost(key, K, M, busy, (K - 1) * (F + B + W), 1, M)
    if key == "1f1b":
        return PipelineScheduleCost(key, K, M, busy, (K - 1) * (F + B + W), 1, min(M, K))
    if key == "interleaved":
        return PipelineScheduleCost(key, K, M, busy, (K - 1) * (F + B + W) / v, 1,
                                    min(M, K + (K - 1) / v))
    if key == "zb-h1":
        return PipelineScheduleCost(key, K, M, busy, (K - 1) * max(0.0, F + B - W), 1,
                                    min(M, K))
    if key == "zb-h2":
        return PipelineScheduleCost(key, K, M, busy, (K - 1) * max(0.0, F + B - 2 * W), 1,
                                    min(M, 2 * K - 1))
    if K % 2:
        raise ValueError(f"DualPipe needs an even number of stages, got {K}")
    return PipelineScheduleCost(key, K, M, busy, max(0.0, (K // 2 - 1) * (FB + B - 2 * W)), 2,
                                min(M, K + 1))


def pipeline_timeline(schedule: str, stages: int, microbatches: int, *,
                      t_forward: float = 1.0, t_backward: float = 2.0
                      ) -> tuple[tuple[tuple[str, int, float, float], ...], ...]:
    """When each stage runs each pass, for drawing a schedule: GPipe or 1F1B.

    Returns, per stage, ``(kind, microbatch, start, end)`` tuples, ``kind`` "F" or "B", in the
    stage's order. Each stage runs one pass at a time; ``F`` of microbatch ``m`` on stage
    ``s`` waits for ``F(s−1, m)``, ``B(s, m)`` for ``B(s+1, m)`` (the last stage's for its own
    ``F``). Orders: GPipe runs ``F0 … F(M−1)`` then ``B0 … B(M−1)``; 1F1B runs ``K−1−s``
    warm-up forwards, then alternates one forward and one backward, then the remaining
    backwards. Each op starts as soon as its stage is free and its input has arrived (sends
    take no time). The idle share of the resulting step is
    :func:`pipeline_bubble_fraction` for both.
    """
    key = schedule.strip().lower() if isinstance(schedule, str) else None
    if key not in ("gpipe", "1f1b"):
        raise ValueError(f"pipeline_timeline draws 'gpipe' or '1f1b', got {schedule!r}")
    K = positive_int(stages, "stages")
    M = positive_int(microbatches, "microbatches")
    tf, tb = float(positive(t_forward, "t_forward")), float(positive(t_backward, "t_backward"))
    orders = []
    for s in range(K):
        if key == "gpipe":
            order = [("F", m) for m in range(M)] + [("B", m) for m in range(M)]
        else:
            warm = min(M, K - 1 - s)
            order = [("F", m) for m in range(warm)]
            for i in range(M - warm):
                order += [("F", warm + i), ("B", i)]
            order += [("B", m) for m in range(M - warm, M)]
        orders.append(order)
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * K
    position = [0] * K
    timeline: list[list[tuple[str, int, float, float]]] = [[] for _ in range(K)]
    while any(position[s] < len(orders[s]) for s in range(K)):
        progressed = False
        for s in range(K):
            if position[s] == len(orders[s]):
                continue
            kind, m = orders[s][position[s]]
            if kind == "F":
                needs = [("F", s - 1, m)] if s > 0 else []
            else:
                needs = [("B", s + 1, m)] if s < K - 1 else [("F", s, m)]
            if any(n not in done for n in needs):
                continue
            start = max([free[s]] + [done[n] for n in needs])
            end = start + (tf if kind == "F" else tb)
            done[(kind, s, m)] = end
            free[s] = end
            timeline[s].append((kind, m, start, end))
            position[s] += 1
            progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    return tuple(tuple(ops) for ops in timeline)


#: Data-parallel schemes :func:`accumulation_cost` prices under gradient accumulation.
ACCUMULATION_SCHEMES: tuple[str, ...] = ("dp", "zero1", "zero2", "fsdp")
_SCHEME_ALIASES = {"ddp": "dp", "zero0": "dp", "zero-0": "dp", "zero-1": "zero1",
                   "zero-2": "zero2", "zero3": "fsdp", "zero-3": "fsdp"}


def _scheme(scheme: object) -> str:
    key = scheme.strip().lower() if isinstance(scheme, str) else None
    key = _SCHEME_ALIASES.get(key, key) if key is not None else None
    if key not in ACCUMULATION_SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(ACCUMULATION_SCHEMES)}, "
                         f"got {scheme!r}")
    return key


@dataclass(frozen=True)
class AccumulationCost:
    """One layer of a data-parallel step run as ``M`` accumulated microbatches, per chip.

    Times in seconds per layer per step, in units of ``2·D·F`` weights (they cancel in every
    ratio). ``per_microbatch_*`` traffic repeats for every microbatch and overlaps that
    microbatch's pass; ``once_*`` traffic runs once per step and can overlap only one
    microbatch's pass: the reduction only the **last** microbatch's backward pass (the summed
    gradient exists only once it has run: DDP's ``no_sync``, Megatron's
    ``overlap_grad_reduce``), the gather of updated weights only the **first** microbatch's
    forward pass of the next step.

    Attributes:
        scheme, microbatches, tokens_per_chip: the inputs (tokens per chip per step, ``B/X``).
        compute_forward, compute_backward: one microbatch's passes.
        per_microbatch_forward, per_microbatch_backward: traffic every microbatch repeats.
        once_forward, once_backward: traffic once per step.
        exposed: ``(M−1)·[max(0, pf − cf) + max(0, pb − cb)]
        + max(0, pf + of − cf) + max(0, pb + ob − cb)``.
    """

    scheme: str
    microbatches: int
    tokens_per_chip: float
    compute_forward: float
    compute_backward: float
    per_microbatch_forward: float
    per_microbatch_backward: float
    once_forward: float
    once_backward: float

    @property
    def compute(self) -> float:
        """The step's compute: ``M`` microbatches, forward and backward."""
        return self.microbatches * (self.compute_forward + self.compute_backward)

    @property
    def exposed(self) -> float:
        M = self.microbatches
        cf, cb = self.compute_forward, self.compute_backward
        pf, pb = self.per_microbatch_forward, self.per_microbatch_backward
        return ((M - 1) * (max(0.0, pf - cf) + max(0.0, pb - cb))
                + max(0.0, pf + self.once_forward - cf) + max(0.0, pb + self.once_backward - cb))

    @property
    def exposed_fraction(self) -> float:
        """Exposed communication's share of the step, ``exposed / (compute + exposed)``."""
        return self.exposed / (self.compute + self.exposed)


def accumulation_cost(chip: Chip | str, microbatches: int, tokens_per_chip: float, *,
                      scheme: str, n_axes: int = 1, bandwidth: float | None = None,
                      compute_dtype: str = "bf16", reduce_dtype: str = "bf16",
                      param_dtype: str = "bf16") -> AccumulationCost:
    """Price one layer of data parallelism with gradient accumulation (:class:`AccumulationCost`).

    ``B/X = tokens_per_chip`` tokens per chip per step in ``M = microbatches`` microbatches of
    ``b = B/(X·M)``. Per layer of ``2·D·F`` weights (set ``D·F = 1``; it cancels), with
    ``C`` = the chip's FLOPs/s in ``compute_dtype`` and ``W`` the ring bandwidth
    (:func:`axis_bandwidth`, times ``n_axes``), ``g`` the gradient-reduction bytes per element
    (``reduce_dtype``; fp32, many frameworks' default, doubles them) and ``p`` the weight bytes
    (``param_dtype``): one microbatch computes ``4·b/C`` forward and ``8·b/C`` backward, and

    - ``"dp"`` (replicated, ZeRO-0): one AllReduce of the summed gradients per step,
      ``2·2g/W``, overlapping only the last microbatch's backward pass;
    - ``"zero1"`` (optimizer state sharded): one ReduceScatter per step, ``2g/W``, under the
      last backward pass; one AllGather of the updated weights, ``2p/W``, under the first
      forward pass of the next step;
    - ``"zero2"`` (gradients sharded too): a ReduceScatter after **every** microbatch (the
      gradients cannot accumulate in a shard before they are reduced), and the AllGather of
      updated weights once per step;
    - ``"fsdp"`` (ZeRO-3): every microbatch gathers the weights for its forward and again for
      its backward pass and ReduceScatters its gradients.

    Collective times are HSYM's large-ring forms (``V/W`` per gather, ``2V/W`` per
    AllReduce), and a layer's traffic overlaps its own pass only (per-layer prefetch).
    """
    key = _scheme(scheme)
    M = positive_int(microbatches, "microbatches")
    tokens = positive(tokens_per_chip, "tokens_per_chip")
    if np.ndim(tokens):
        raise ValueError("tokens_per_chip must be a single number")
    chip = get_chip(chip)
    n_axes = positive_int(n_axes, "n_axes")
    ring = axis_bandwidth(chip) if bandwidth is None else positive(bandwidth, "bandwidth")
    if np.ndim(ring):
        raise ValueError("bandwidth must be a single number")
    W = n_axes * ring
    C = chip.flops(compute_dtype)
    g = 2.0 * bytes_per_element(canonical_dtype(reduce_dtype))  # 2 weights per D·F
    p = 2.0 * bytes_per_element(canonical_dtype(param_dtype))
    b = tokens / M
    cf, cb = 4.0 * b / C, 8.0 * b / C
    pf = pb = of = ob = 0.0
    if key == "dp":
        ob = 2.0 * g / W
    elif key == "zero1":
        ob, of = g / W, p / W
    elif key == "zero2":
        pb, of = g / W, p / W
    else:
        pf, pb = p / W, p / W + g / W
    return AccumulationCost(scheme=key, microbatches=M, tokens_per_chip=float(tokens),
                            compute_forward=cf, compute_backward=cb,
                            per_microbatch_forward=pf, per_microbatch_backward=pb,
                            once_forward=of, once_backward=ob)


def accumulation_critical_batch(chip: Chip | str, microbatches: int, *,
                                scheme: str | None = None, shard_params: bool | None = None,
                                n_axes: int = 1, bandwidth: float | None = None,
                                dtype: str = "bf16", compute_dtype: str | None = None,
                                reduce_dtype: str | None = None) -> float:
    """Tokens per chip per step above which data parallelism with gradient accumulation over
    ``M = microbatches`` hides all its communication (:func:`accumulation_cost`).

    Every scheme needs ``B/X ≥ M·C/W`` (bf16 traffic), for a different reason:

    - ``"dp"`` and ``"zero1"`` reduce once per step, but the reduction can only start when the
      last microbatch has produced its gradients, so it hides under that microbatch's backward
      pass alone: ``b = B/(X·M) ≥ C/W``; below that it is exposed once per step (a cost that
      ``M`` amortises, :attr:`AccumulationCost.exposed_fraction`). ZeRO-1's AllGather of the
      updated weights likewise hides under one microbatch's forward pass;
    - ``"zero2"`` ReduceScatters after every microbatch (``b ≥ C/(2W)``) and gathers the
      updated weights once, under the first microbatch's forward (``b ≥ C/W``);
    - ``"fsdp"`` gathers and scatters for every microbatch: ``b ≥ C/W``.

    What differs below the threshold is how much is exposed: once per step for DP and ZeRO-1,
    every microbatch for ZeRO-2's scatters and all of FSDP's traffic. TPU v5p, one axis,
    ``M = 4``: 10,200 tokens per chip per step for each. ``shard_params`` is the older
    two-way switch (False = "dp", True = "fsdp"). ``compute_dtype`` (default ``dtype``) sets
    ``C``: fp8 matmuls double it and so the threshold, with the traffic still in ``dtype``;
    ``reduce_dtype`` (default ``dtype``) the gradient bytes: fp32 reductions double DP's and
    ZeRO-1's threshold.
    """
    if scheme is None:
        if shard_params is None:
            raise ValueError("give scheme ('dp', 'zero1', 'zero2' or 'fsdp') or shard_params")
        if not isinstance(shard_params, bool):
            raise ValueError(f"shard_params must be True or False, got {shard_params!r}")
        scheme = "fsdp" if shard_params else "dp"
    key = _scheme(scheme)
    M = positive_int(microbatches, "microbatches")
    chip = get_chip(chip)
    compute = canonical_dtype(compute_dtype if compute_dtype is not None else dtype)
    reduce = canonical_dtype(reduce_dtype if reduce_dtype is not None else dtype)
    one = accumulation_cost(chip, M, 1.0, scheme=key, n_axes=n_axes, bandwidth=bandwidth,
                            compute_dtype=compute, reduce_dtype=reduce, param_dtype=dtype)
    # Priced at B/X = 1 token, compute is per token of B/X and traffic does not depend on it:
    # the busiest microbatch pass (which carries the once-per-step traffic) sets the bound.
    return max(0.0, (one.per_microbatch_forward + one.once_forward) / one.compute_forward,
               (one.per_microbatch_backward + one.once_backward) / one.compute_backward)


# --------------------------------------------------------------------------- layout arithmetic


def _whole(value: ArrayLike, what: str) -> int:
    """A positive whole number given as an int or an integer-valued float (``16e6``)."""
    number = positive(value, what)
    if np.ndim(number) or not float(number).is_integer():
        raise ValueError(f"{what} must be a positive whole number, got {value!r}")
    return int(number)


def sequences_per_batch(global_batch_tokens: ArrayLike, seq_len: int) -> int:
    """Sequences in a global batch: ``global_batch_tokens / seq_len``, a whole number.

    A 16M-token batch (2^24 = 16,777,216 tokens) of 8,192-token sequences is 2,048 sequences.
    Raises ``ValueError`` when the batch is not a whole number of sequences.
    """
    tokens = _whole(global_batch_tokens, "global_batch_tokens")
    seq_len = positive_int(seq_len, "seq_len")
    if tokens % seq_len:
        raise ValueError(f"a global batch of {tokens} tokens is not a whole number of "
                         f"{seq_len}-token sequences ({tokens / seq_len:g})")
    return tokens // seq_len


def data_parallel_degree(n_chips: int, *, tp: int = 1, pp: int = 1, cp: int = 1) -> int:
    """Data-parallel degree left once the model is laid out: ``n_chips / (tp · pp · cp)``.

    One model replica spans ``tp · pp · cp`` chips (tensor, pipeline and context parallel);
    the rest of the chips hold replicas, each with its share of the batch (fsdp and dp
    together). LLaMA-3 405B on 16,384 H100s with tp 8, pp 16: 128; with cp 16 as well: 8
    (Dubey et al. 2024, table 4). Raises ``ValueError`` when the degrees do not divide
    ``n_chips``.
    """
    n = positive_int(n_chips, "n_chips")
    tp, pp, cp = positive_int(tp, "tp"), positive_int(pp, "pp"), positive_int(cp, "cp")
    replica = tp * pp * cp
    if n % replica:
        raise ValueError(f"n_chips={n} is not divisible by tp·pp·cp = {replica} "
                         f"(tp={tp}, pp={pp}, cp={cp})")
    return n // replica


@dataclass(frozen=True)
class BatchSplit:
    """How one step's global batch spreads over a ``dp · tp · pp · cp`` layout.

    Attributes:
        global_batch_tokens, seq_len, dp, tp, pp, cp, microbatches: the inputs.
        sequences: ``B / T`` sequences in the global batch.
        sequences_per_replica: ``B / (T · dp)``, the sequences each model replica takes.
        tokens_per_chip: ``B / (dp · cp)`` — the tokens whose activations pass through every
            chip of a replica in one step: tensor-parallel chips share the same tokens and every
            pipeline stage sees all of its replica's tokens; only context parallelism splits
            them further (a ``T / cp`` slice of each sequence per chip).
        tokens_per_microbatch: ``tokens_per_chip / microbatches``.
        sequences_per_microbatch: ``sequences_per_replica / microbatches``.
        compute_tokens_per_chip: ``B / N`` with ``N = dp·tp·pp·cp`` — each chip's share of the
            work: a step's ``6·P·B`` FLOPs are ``6·P·(B/N)`` per chip, whatever the layout.
    """

    global_batch_tokens: int
    seq_len: int
    dp: int
    tp: int
    pp: int
    cp: int
    microbatches: int

    @property
    def n_chips(self) -> int:
        """N = dp · tp · pp · cp."""
        return self.dp * self.tp * self.pp * self.cp

    @property
    def sequences(self) -> int:
        return self.global_batch_tokens // self.seq_len

    @property
    def sequences_per_replica(self) -> int:
        return self.sequences // self.dp

    @property
    def sequences_per_microbatch(self) -> int:
        return self.sequences_per_replica // self.microbatches

    @property
    def tokens_per_chip(self) -> float:
        return self.global_batch_tokens / (self.dp * self.cp)

    @property
    def tokens_per_microbatch(self) -> float:
        return self.tokens_per_chip / self.microbatches

    @property
    def compute_tokens_per_chip(self) -> float:
        return self.global_batch_tokens / self.n_chips


def split_batch(global_batch_tokens: ArrayLike, seq_len: int, *, dp: int, tp: int = 1,
                pp: int = 1, cp: int = 1, microbatches: int = 1) -> BatchSplit:
    """Split a batch of ``B`` tokens in sequences of ``T`` over a layout (:class:`BatchSplit`).

    Every replica must get whole sequences, every microbatch whole sequences, and context
    parallelism whole slices of each sequence, so ``T`` must divide ``B``, ``dp`` the sequence
    count, ``microbatches`` the sequences per replica, and ``cp`` the sequence length; each
    failure raises ``ValueError`` naming the numbers. LLaMA-3 405B's 16M-token batch of
    8,192-token sequences over dp 128 (tp 8, pp 16): 2,048 sequences, 16 per replica,
    131,072 tokens through every chip, 1,024 tokens of work per chip.
    """
    tokens = _whole(global_batch_tokens, "global_batch_tokens")
    seq_len = positive_int(seq_len, "seq_len")
    dp, tp = positive_int(dp, "dp"), positive_int(tp, "tp")
    pp, cp = positive_int(pp, "pp"), positive_int(cp, "cp")
    microbatches = positive_int(microbatches, "microbatches")
    sequences = sequences_per_batch(tokens, seq_len)
    if sequences % dp:
        raise ValueError(f"{sequences} sequences do not split evenly over dp={dp} replicas")
    per_replica = sequences // dp
    if per_replica % microbatches:
        raise ValueError(f"{per_replica} sequences per replica do not split into "
                         f"microbatches={microbatches} equal microbatches")
    if seq_len % cp:
        raise ValueError(f"seq_len={seq_len} does not split evenly over cp={cp} chips")
    return BatchSplit(global_batch_tokens=tokens, seq_len=seq_len, dp=dp, tp=tp, pp=pp, cp=cp,
                      microbatches=microbatches)


def tokens_per_chip(global_batch_tokens: ArrayLike, seq_len: int, *, dp: int, tp: int = 1,
                    pp: int = 1, cp: int = 1, microbatches: int = 1) -> float:
    """Tokens each chip processes per microbatch: ``B / (dp · cp · microbatches)``.

    The per-step figure is ``B / (dp · cp)`` (:attr:`BatchSplit.tokens_per_chip`): tensor and
    pipeline parallelism do not divide the tokens a chip sees, only the work it does on each.
    With ``microbatches = 1`` this is HSYM's per-chip batch ``B / X`` that data-parallel
    communication is compared against. Checks as :func:`split_batch`.
    """
    return split_batch(global_batch_tokens, seq_len, dp=dp, tp=tp, pp=pp, cp=cp,
                       microbatches=microbatches).tokens_per_microbatch


def data_parallel_bandwidth(chip: Chip | str, replica_chips: int, *, dp: int | None = None,
                            chips_per_node: int | None = None,
                            nic_bandwidth: float | None = None,
                            nvlink_bandwidth: float | None = None) -> float:
    """HSYM's ``W`` for the data-parallel axis of a GPU layout, in bytes/s per GPU.

    One model replica spans ``R = replica_chips`` GPUs (``tp · pp · cp``), laid out innermost;
    GPU ``i`` of every replica forms one data-parallel group, so a GPU's DP peers sit ``R``
    GPUs apart. ``W`` is defined by the AllReduce of the ``V`` gradient bytes one GPU holds
    taking ``2·V / W`` (many nodes: the ring factor ``(n−1)/n`` dropped;
    :func:`scalebook.collectives.collective_cost` keeps it). The AllReduce runs as NCCL's
    rail-aligned rings (one per NIC rail, each GPU's NIC carrying its own ring), with
    ``g = chips_per_node`` (default the chip's ``chips_per_host``), ``W_nic`` one GPU's NIC one
    way (``chip.nic_bandwidth_per_chip``, 50 GB/s on an H100) and ``W_nvl`` its NVLink one way
    (450 GB/s):

    - the whole group in one node (``dp`` given and ``R · dp <= g``): ``W = W_nvl``;
    - ``R >= g`` (a replica fills ``k = R/g`` whole nodes or more): every peer is in another
      node, so each GPU's ring leaves through its own NIC: ``W = W_nic`` (50 GB/s);
    - ``R < g``, ``r = g / R`` peers per node: ``r`` rail rings share the node, each GPU sending
      ``(r−1)/r`` of its bytes over NVLink and ``1/r`` through its NIC at once:
      ``W = 1 / max((r−1)/(r·W_nvl), 1/(r·W_nic))``: pure DP on H100s (r = 8) is NIC-bound at
      ``8 · 50 = 400`` GB/s.

    DP is compute-bound when the tokens per replica exceed ``C / W``, i.e. the tokens of
    global batch per GPU exceed ``C / (R · W)``: :func:`data_parallel_critical_batch`.
    GPUs only; TPUs use :func:`axis_bandwidth`.
    """
    chip = get_chip(chip)
    if not chip.has_nvlink_domain:
        raise ValueError(f"{chip.name} has no NVLink domain; for TPU mesh axes use "
                         "axis_bandwidth")
    R = positive_int(replica_chips, "replica_chips")
    g = (chip.chips_per_host if chips_per_node is None
         else positive_int(chips_per_node, "chips_per_node"))
    nic = (chip.nic_bandwidth_per_chip if nic_bandwidth is None
           else positive(nic_bandwidth, "nic_bandwidth"))
    nvl = (chip.interconnect_bandwidth_one_way if nvlink_bandwidth is None
           else positive(nvlink_bandwidth, "nvlink_bandwidth"))
    if np.ndim(nic) or np.ndim(nvl):
        raise ValueError("nic_bandwidth and nvlink_bandwidth must be single numbers")
    if dp is not None:
        dp = positive_int(dp, "dp")
        if dp == 1:
            raise ValueError("dp=1 has no data-parallel collective, so no DP bandwidth")
        if R * dp <= g:
            return float(nvl)
    if R >= g:
        return float(nic)
    if g % R:
        raise ValueError(f"replica_chips={R} must divide the {g} GPUs of a node "
                         f"(or be at least a node)")
    r = g // R
    if dp is not None and dp % r:
        raise ValueError(f"dp={dp} spans nodes but is not a multiple of the {r} replicas "
                         f"per node")
    return 1.0 / max((r - 1) / (r * nvl), 1.0 / (r * nic))


def data_parallel_critical_batch(chip: Chip | str, replica_chips: int = 1, *,
                                 per: str = "chip", dtype: str = "bf16",
                                 compute_dtype: str | None = None, microbatches: int = 1,
                                 **bandwidth) -> float:
    """Tokens above which a GPU layout's data-parallel AllReduce hides under the backward pass.

    Derivation: one replica of ``R = replica_chips`` GPUs (``tp·pp·cp``) takes ``B_r`` tokens
    per step and holds ``2·P`` bytes of bf16 gradients, ``2·P/R`` per GPU. Per GPU the backward
    pass computes ``4·P·B_r / (R·C)`` seconds; the AllReduce of its ``2·P/R`` bytes takes
    ``2·(2·P/R) / W`` (:func:`data_parallel_bandwidth`). Compute wins when

        B_r > C / W                    tokens per replica   (``per="replica"``)
        B / N = B_r / R > C / (R·W)    tokens of global batch per GPU   (``per="chip"``)

    H100 (C = 9.89e14): pure DP, ``W`` = 400 GB/s (rail rings, NIC-bound): 2,472 per GPU;
    TP 8 filling the node, ``W = W_nic`` = 50 GB/s: 19,780 per replica, which is again
    2,472 per GPU; a replica across ``k`` nodes: ``C / (k·g·W_nic)`` per GPU (1,236 for
    k = 2). ``bandwidth`` passes ``chips_per_node``, ``nic_bandwidth``, ``nvlink_bandwidth``
    on. For another ``dtype`` (compute and traffic both in it) ``C`` becomes ``C·(b/2)``;
    ``compute_dtype`` sets ``C`` alone (fp8 matmuls, bf16 traffic: twice the threshold).

    With ``M = microbatches`` per step (gradient accumulation, or a pipeline's microbatches)
    the AllReduce can start only after the last microbatch's backward pass, which is all that
    can hide it (for a pipeline, on its first stage, which finishes last): the threshold is
    ``M`` times larger. A replica of TP 8 × PP 4 H100 nodes with 1F1B at ``M = 27`` (bubble
    at most 10%): ``27 · 19,780`` tokens per replica, 16,689 per GPU.
    """
    M = positive_int(microbatches, "microbatches")
    if per not in ("chip", "replica"):
        raise ValueError(f"per must be 'chip' or 'replica', got {per!r}")
    chip = get_chip(chip)
    R = positive_int(replica_chips, "replica_chips")
    W = data_parallel_bandwidth(chip, R, **bandwidth)
    C = chip.flops(compute_dtype if compute_dtype is not None else dtype)
    per_replica = M * C * (bytes_per_element(dtype) / 2.0) / W
    return per_replica if per == "replica" else per_replica / R


def nic_bytes_per_gpu(chip: Chip | str, nbytes: float, group: int, *, kind: str = "AllGather",
                      stride: int = 1, chips_per_node: int | None = None) -> float:
    """Bytes one GPU's NIC sends for one collective of an array of ``nbytes`` (its full,
    gathered size) over a group of ``group`` GPUs whose members sit ``stride`` apart.

    Rail-aligned model (NCCL's rings, one per NIC rail): a group has ``g_in = gcd(group,
    node // stride)`` members in each node it touches (1 when ``stride >= node``), so it spans
    ``k = group / g_in`` nodes. An AllGather or ReduceScatter moves ``nbytes·(k−1)/k`` into (and
    out of) each node, spread over the ``g_in`` NICs of its members; an AllReduce twice that.
    The node's other GPUs run their own groups' collectives on their own NICs at the same time.
    A group inside one node (``k = 1``) sends nothing over the network.
    """
    chip = get_chip(chip)
    if not chip.has_nvlink_domain:
        raise ValueError(f"{chip.name} has no NVLink domain; NIC bytes are a GPU figure")
    n = positive_int(group, "group")
    stride = positive_int(stride, "stride")
    node = (chip.chips_per_host if chips_per_node is None
            else positive_int(chips_per_node, "chips_per_node"))
    V = positive(nbytes, "nbytes", allow_zero=True)
    if np.ndim(V):
        raise ValueError("nbytes must be a single number")
    key = kind.replace(" ", "").lower() if isinstance(kind, str) else ""
    factor = {"allgather": 1.0, "reducescatter": 1.0, "allreduce": 2.0}.get(key)
    if factor is None:
        raise ValueError(f"kind must be AllGather, ReduceScatter or AllReduce, got {kind!r}")
    g_in = math.gcd(n, node // stride) if stride < node else 1
    k = n // g_in
    return float(factor * V * (k - 1) / k / g_in)


def dcn_critical_batch_per_pod(chip: Chip | str, *, bandwidth: float | None = None,
                               dtype: str = "bf16", microbatches: int = 1) -> float:
    """Tokens per pod (slice) above which data parallelism across pods over the data-centre
    network (DCN) hides under the backward pass.

    Derivation (HSYM part 5): each pod of ``n`` chips holds one model copy, sharded over its
    chips (FSDP inside the pod), so each chip holds ``2·P/n`` bytes of gradients and
    AllReduces them with the same chip of every other pod over DCN, at
    ``W_dcn = host_network_bandwidth / chips_per_host`` per chip (``bandwidth=`` overrides):
    ``2·(2·P/n) / W_dcn`` seconds (ring factor dropped). Its backward pass computes
    ``4·P·B_pod / (n·C)`` seconds. Compute wins when ``B_pod > C / W_dcn``, whatever the pod's
    size ``n``. TPU v5p: 4.59e14 / (2.5e10 / 4) = 73,440 tokens per pod.

    When each pod accumulates ``M = microbatches`` microbatches per step, the AllReduce can
    start only once the last one has produced its gradients, so it hides under that
    microbatch's backward pass alone: ``B_pod > M·C / W_dcn`` (or it is exposed once per step).
    """
    M = positive_int(microbatches, "microbatches")
    chip = get_chip(chip)
    W = (chip.nic_bandwidth_per_chip if bandwidth is None
         else positive(bandwidth, "bandwidth"))
    if np.ndim(W):
        raise ValueError("bandwidth must be a single number")
    return M * chip.flops(dtype) * (bytes_per_element(dtype) / 2.0) / W

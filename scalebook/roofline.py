"""Roofline arithmetic: FLOPs, bytes, arithmetic intensity and time bounds.

A kernel that does ``F`` FLOPs and moves ``M`` bytes on a chip with peak ``C`` FLOPs/s and
bandwidth ``W`` bytes/s needs at least

    T_math  = F / C        (s)
    T_comms = M / W        (s)

If the two overlap perfectly the runtime is ``max(T_math, T_comms)``; if they do not overlap at
all it is ``T_math + T_comms``. The sum is never more than twice the max, so the lower bound is
within 2x of the truth. Arithmetic intensity ``I = F / M`` (FLOPs/byte) decides which side
binds: compute when ``I > C / W``, the chip's critical intensity.

Sizes may be numpy arrays (for plots); they must be positive.
Reference for the model: Austin et al., "How to Scale Your Model" (2025), part 1.

Matmuls run on the matrix units (MXU, tensor cores) and are timed against ``chip.flops(dtype)``;
element-wise ops (adds, multiplies, activations) run on the vector units (a TPU's VPU, a GPU's
CUDA cores) and are timed against :func:`scalebook.hardware.vector_flops`, some 15-30x lower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ._np import np
from .hardware import Chip, bytes_per_element, canonical_dtype, get_chip, vector_flops
from .validation import positive, positive_int

Number = Union[float, int, np.ndarray]


@dataclass(frozen=True)
class OpCost:
    """FLOPs and HBM traffic of one operation; what :class:`MatmulCost` and
    :class:`ElementwiseCost` have in common."""

    flops: Number
    bytes_read: Number
    bytes_written: Number

    @property
    def total_bytes(self) -> Number:
        """Bytes read + bytes written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> Number:
        """Arithmetic intensity: FLOPs / total bytes (FLOPs per byte)."""
        return self.flops / self.total_bytes


@dataclass(frozen=True)
class MatmulCost(OpCost):
    """FLOPs and HBM traffic of one matmul. FLOPs count a multiply-add as 2; bytes are bytes."""


def matmul_cost(
    B: Number,
    D: Number,
    F: Number,
    *,
    x_dtype: str = "bf16",
    w_dtype: str | None = None,
    out_dtype: str | None = None,
    batched_weights: bool = False,
    weights_on_chip: bool = False,
) -> MatmulCost:
    """Exact cost of ``Out[B, F] = X[B, D] ·_D W[D, F]``.

    FLOPs = 2·B·D·F. Bytes read = B·D·x + D·F·w, bytes written = B·F·o, where x, w, o are the
    bytes per element of ``x_dtype``, ``w_dtype`` (default: ``x_dtype``) and ``out_dtype``
    (default: ``x_dtype``). With ``batched_weights=True`` every example has its own weight
    matrix ``W[B, D, F]``, so the weights cost B·D·F·w bytes and the intensity tends to 2/w
    whatever B is.

    With ``weights_on_chip=True`` the weights already sit in on-chip memory (a TPU's VMEM, a
    GPU's SMEM or L2: see :func:`scalebook.hardware.on_chip_memory`), loaded by an earlier
    kernel, so they cost no HBM traffic: bytes = B·D·x + B·F·o and the intensity is
    2·D·F / (D·x + F·o), independent of B. bf16, D = F = 4096: 2,048 FLOPs/byte. Whether they
    fit is the caller's question (2·D·F bytes in bf16 against the on-chip size).

    No B << D approximation is made: this is the number a plot of exact byte counts uses.
    """
    B, D, F = positive(B, "B"), positive(D, "D"), positive(F, "F")
    x = bytes_per_element(x_dtype)
    w = bytes_per_element(w_dtype or x_dtype)
    o = bytes_per_element(out_dtype or x_dtype)
    if batched_weights and weights_on_chip:
        raise ValueError("per-example weights (batched_weights) cannot also stay on chip")
    weight_elements = 0.0 if weights_on_chip else (B * D * F if batched_weights else D * F)
    return MatmulCost(
        flops=2.0 * B * D * F,
        bytes_read=B * D * x + weight_elements * w,
        bytes_written=B * F * o,
    )


def dot_product_cost(N: Number, *, dtype: str = "bf16") -> MatmulCost:
    """Cost of ``x[N] · y[N]``: 2·N FLOPs over 2·N·b + b bytes, intensity ≈ 1/b.

    A dot product is a matmul with B = F = 1; in bf16 its intensity is below 0.5 FLOPs/byte,
    hundreds of times under any accelerator's critical intensity.
    """
    return matmul_cost(1, N, 1, x_dtype=dtype)


def critical_intensity(chip: Chip | str, dtype: str = "bf16", *, bandwidth: float | None = None) -> float:
    """The chip's critical arithmetic intensity C / W in FLOPs/byte.

    C is the dense peak in ``dtype``; W is HBM bandwidth unless ``bandwidth`` (bytes/s) is given,
    e.g. an ICI link for a network roofline. TPU v5e bf16: 1.97e14 / 8.1e11 ≈ 243.
    """
    chip = get_chip(chip)
    w = chip.hbm_bandwidth if bandwidth is None else positive(bandwidth, "bandwidth")
    return chip.flops(dtype) / w


def critical_batch_size(
    chip: Chip | str, *, compute_dtype: str = "bf16", weight_dtype: str | None = None
) -> float:
    """Tokens per matmul above which ``X[B, D] · W[D, F]`` is compute-bound (B << D, F).

    With B small the weights dominate the traffic: bytes ≈ D·F·w, FLOPs = 2·B·D·F, so the
    intensity is ≈ 2B / w. Setting it equal to C / W gives

        B* = (C / W) · w / 2     (tokens)

    C is the peak in ``compute_dtype``; w is the bytes per element of ``weight_dtype`` (default:
    ``compute_dtype``). TPU v5e: bf16 ≈ 243, int8 weights with bf16 compute ≈ 122, int8
    everything ≈ 243. H100 bf16 (dense 9.89e14 FLOPs/s) ≈ 295.
    """
    chip = get_chip(chip)
    w = bytes_per_element(weight_dtype or compute_dtype)
    return critical_intensity(chip, compute_dtype) * w / 2.0


def mxu_useful_fraction(chip: Chip | str, *dims: int) -> float:
    """Share of a TPU MXU's work that is useful when each of ``dims`` (a matmul's contracting
    and output dimensions; the batch streams through unpadded) is padded up to a multiple of
    the chip's systolic array width s = ``chip.mxu_size``:

        Π n / (⌈n / s⌉ · s)          (a fraction, 1 when every n is a multiple of s)

    TPU v5e (s = 128), D = F = 200: (200/256)² = 0.61. Raises ``ValueError`` for a chip without
    an MXU size in the catalog (the GPUs) or without dims.
    """
    chip = get_chip(chip)
    if chip.mxu_size is None:
        raise ValueError(f"{chip.name} has no systolic array size in the catalog")
    if not dims:
        raise ValueError("give the padded dimensions, e.g. mxu_useful_fraction('v5e', D, F)")
    s = chip.mxu_size
    fraction = 1.0
    for n in dims:
        n = positive_int(n, "dimension")
        fraction *= n / (-(-n // s) * s)
    return fraction


@dataclass(frozen=True)
class TimeBounds:
    """Lower and upper bounds on runtime from compute time and communication time (s)."""

    t_math: Number
    t_comms: Number

    @property
    def lower(self) -> Number:
        """max(T_math, T_comms): perfect overlap."""
        return np.maximum(self.t_math, self.t_comms)

    @property
    def upper(self) -> Number:
        """T_math + T_comms: no overlap; at most 2x the lower bound."""
        return self.t_math + self.t_comms

    @property
    def bound_by(self) -> str | np.ndarray:
        """"compute" where T_math ≥ T_comms, else "comms" (memory or network bandwidth)."""
        result = np.where(np.asarray(self.t_math) >= np.asarray(self.t_comms), "compute", "comms")
        return str(result) if result.ndim == 0 else result


def time_bounds(flops: Number, nbytes: Number, *, flops_per_s: float, bytes_per_s: float) -> TimeBounds:
    """T_math = flops / flops_per_s and T_comms = nbytes / bytes_per_s, in seconds.

    ``nbytes`` may be zero (a kernel that moves nothing); ``flops`` may be zero too.
    """
    flops = positive(flops, "flops", allow_zero=True)
    nbytes = positive(nbytes, "nbytes", allow_zero=True)
    flops_per_s = positive(flops_per_s, "flops_per_s")
    bytes_per_s = positive(bytes_per_s, "bytes_per_s")
    return TimeBounds(t_math=flops / flops_per_s, t_comms=nbytes / bytes_per_s)


def matmul_time(
    B: Number,
    D: Number,
    F: Number,
    chip: Chip | str,
    *,
    x_dtype: str = "bf16",
    w_dtype: str | None = None,
    out_dtype: str | None = None,
    compute_dtype: str | None = None,
    batched_weights: bool = False,
    weights_on_chip: bool = False,
) -> TimeBounds:
    """Time bounds of one matmul on one chip, weights and activations in HBM (the weights on
    chip with ``weights_on_chip=True``, see :func:`matmul_cost`).

    T_math = 2·B·D·F / C with C the peak in ``compute_dtype`` (default: the wider of x and w,
    i.e. int8 weights with bf16 activations compute in bf16); T_comms = exact bytes / HBM BW.
    """
    chip = get_chip(chip)
    cost = matmul_cost(B, D, F, x_dtype=x_dtype, w_dtype=w_dtype, out_dtype=out_dtype,
                       batched_weights=batched_weights, weights_on_chip=weights_on_chip)
    if compute_dtype is None:
        wider = max((x_dtype, w_dtype or x_dtype), key=bytes_per_element)
        compute_dtype = canonical_dtype(wider)
    return time_bounds(cost.flops, cost.total_bytes, flops_per_s=chip.flops(compute_dtype),
                       bytes_per_s=chip.hbm_bandwidth)


def attainable_flops(intensity: Number, chip: Chip | str, dtype: str = "bf16",
                     *, bandwidth: float | None = None) -> Number:
    """The roofline: min(C, I · W) FLOPs/s for arithmetic intensity I (FLOPs/byte)."""
    chip = get_chip(chip)
    intensity = positive(intensity, "intensity")
    w = chip.hbm_bandwidth if bandwidth is None else positive(bandwidth, "bandwidth")
    return np.minimum(chip.flops(dtype), np.asarray(intensity) * w) if isinstance(
        intensity, np.ndarray) else min(chip.flops(dtype), intensity * w)


def two_chip_sharded_matmul(
    B: Number, D: Number, F: Number, chip: Chip | str, *, dtype: str = "bf16",
    bandwidth: float | None = None,
) -> TimeBounds:
    """Network roofline of ``X[B, D_X] ·_D W[D_X, F]`` split over 2 chips along D.

    Each chip multiplies its half: T_math = 2·B·(D/2)·F / C = B·D·F / C. The two partial
    sums must then be added, so each chip sends its ``B·F`` partial result (b bytes each) over
    one link: T_comms = B·F·b / W, with W the one-way link bandwidth unless ``bandwidth`` is
    given. Compute-bound when D > b·C / W — a condition on D, not B, since both times scale
    with B·F.
    """
    chip = get_chip(chip)
    B, D, F = positive(B, "B"), positive(D, "D"), positive(F, "F")
    w = chip.link_bandwidth_one_way if bandwidth is None else positive(bandwidth, "bandwidth")
    b = bytes_per_element(dtype)
    return time_bounds(2.0 * B * (D / 2.0) * F, B * F * b, flops_per_s=chip.flops(dtype),
                       bytes_per_s=w)


def critical_contracting_dim(chip: Chip | str, *, dtype: str = "bf16",
                             bandwidth: float | None = None) -> float:
    """The D above which :func:`two_chip_sharded_matmul` is compute-bound: b·C / W.

    TPU v5e bf16 over one ICI link one way: 2 · 1.97e14 / 4.5e10 ≈ 8,756.
    """
    chip = get_chip(chip)
    w = chip.link_bandwidth_one_way if bandwidth is None else positive(bandwidth, "bandwidth")
    return bytes_per_element(dtype) * chip.flops(dtype) / w


def weight_load_time(param_bytes: Number, chip: Chip | str, *, n_chips: int = 1,
                     bandwidth: float | None = None) -> Number:
    """Lower bound on the time to read every parameter once: bytes / (n_chips · W) seconds.

    Sampling one token needs every weight read from HBM at least once, so this is the floor on
    per-token latency of a model split over ``n_chips`` chips (W = HBM bandwidth by default).
    """
    chip = get_chip(chip)
    param_bytes = positive(param_bytes, "param_bytes")
    if not isinstance(n_chips, (int, np.integer)) or n_chips < 1:
        raise ValueError(f"n_chips must be a positive integer, got {n_chips!r}")
    w = chip.hbm_bandwidth if bandwidth is None else positive(bandwidth, "bandwidth")
    return param_bytes / (n_chips * w)


# --------------------------------------------------------------------------- element-wise ops

@dataclass(frozen=True)
class ElementwiseCost(OpCost):
    """FLOPs and HBM traffic of one element-wise op over arrays of ``elements`` elements each."""

    elements: Number


def _element_count(shape: object) -> Number:
    """Elements in ``shape``: a tuple or list is an array shape (the product of its sizes, each a
    positive integer); a number or numpy array is already an element count."""
    if isinstance(shape, (tuple, list)):
        if not shape:
            raise ValueError("shape is empty; give the array's dimensions, e.g. (8192, 8192)")
        count = 1
        for size in shape:
            count *= positive_int(size, "each dimension of shape")
        return float(count)
    return positive(shape, "shape (element count)")


def elementwise_cost(
    shape: object,
    *,
    n_inputs: int = 2,
    flops_per_element: Number = 1,
    dtype: str = "bf16",
    out_dtype: str | None = None,
    n_outputs: int = 1,
) -> ElementwiseCost:
    """Exact cost of an element-wise op ``out = op(in_1, ..., in_k)`` on same-shape arrays.

    With N elements per array (``shape`` is a shape such as ``(8192, 8192)`` or an element
    count), b and o the bytes per element of ``dtype`` (inputs) and ``out_dtype`` (default: the
    same):

        FLOPs         = N · f                  (f = ``flops_per_element``)
        bytes read    = k · N · b              (k = ``n_inputs``; each input read once from HBM)
        bytes written = n_outputs · N · o
        intensity     = f / (k·b + n_outputs·o)   FLOPs/byte, independent of N

    f is the caller's count: 1 for an add, multiply or max (so relu is 1); an activation such as
    exp or gelu costs whatever the problem states. Adding two bf16 [8192, 8192] arrays:
    8192² FLOPs over 3 · 2 · 8192² bytes, intensity 1/6. Inputs broadcast from smaller arrays
    (a bias) are not modelled: pass them as separate traffic if they matter.
    """
    n = _element_count(shape)
    k = positive_int(n_inputs, "n_inputs")
    outputs = positive_int(n_outputs, "n_outputs")
    f = positive(flops_per_element, "flops_per_element", allow_zero=True)
    b = bytes_per_element(dtype)
    o = bytes_per_element(out_dtype or dtype)
    return ElementwiseCost(elements=n, flops=n * f, bytes_read=k * n * b,
                           bytes_written=outputs * n * o)


def vector_critical_intensity(chip: Chip | str, *, fma_flops: int = 1,
                              bandwidth: float | None = None) -> float:
    """Critical intensity of the chip's vector unit: V / W in FLOPs/byte.

    V is :func:`scalebook.hardware.vector_flops` (GPU: CUDA cores, counting an FMA as
    ``fma_flops`` FLOPs, default 1 so that V is the rate of plain adds and multiplies; TPU: the
    VPU); W is HBM bandwidth unless ``bandwidth`` (bytes/s) is given. TPU v5e:
    6.14e12 / 8.1e11 ≈ 7.6; H100: 3.35e13 / 3.35e12 ≈ 10. An element-wise op whose intensity is
    below this (any add or multiply of bf16 arrays: 1/6) is memory-bound.
    """
    chip = get_chip(chip)
    w = chip.hbm_bandwidth if bandwidth is None else positive(bandwidth, "bandwidth")
    return vector_flops(chip, fma_flops=fma_flops) / w


def elementwise_time(
    shape: object,
    chip: Chip | str,
    *,
    n_inputs: int = 2,
    flops_per_element: Number = 1,
    dtype: str = "bf16",
    out_dtype: str | None = None,
    n_outputs: int = 1,
    fma_flops: int = 1,
    flops_per_s: float | None = None,
    bandwidth: float | None = None,
) -> TimeBounds:
    """Time bounds of one element-wise op on one chip, its arrays in HBM.

    T_math = FLOPs / V and T_comms = bytes / W (seconds), FLOPs and bytes from
    :func:`elementwise_cost`. V is the VECTOR unit's peak, not the matrix units':
    :func:`scalebook.hardware.vector_flops` (the TPU's VPU; the GPU's fp32 CUDA cores, whatever
    the storage dtype, since they compute in fp32), or ``flops_per_s`` if the problem states one.
    On a GPU ``fma_flops=1`` (default) counts one FLOP per core per cycle, right for adds,
    multiplies and maxes; an op built from FMAs may count 2 FLOPs per element with
    ``fma_flops=2``. W is HBM bandwidth unless ``bandwidth`` is given.

    Adding two bf16 [8192, 8192] arrays on a TPU v5e: T_comms = 6 · 8192² / 8.1e11 ≈ 497 µs,
    T_math = 8192² / 6.14e12 ≈ 11 µs: memory-bound ("comms"), as element-wise ops almost
    always are.
    """
    chip = get_chip(chip)
    cost = elementwise_cost(shape, n_inputs=n_inputs, flops_per_element=flops_per_element,
                            dtype=dtype, out_dtype=out_dtype, n_outputs=n_outputs)
    v = (vector_flops(chip, fma_flops=fma_flops) if flops_per_s is None
         else positive(flops_per_s, "flops_per_s"))
    w = chip.hbm_bandwidth if bandwidth is None else positive(bandwidth, "bandwidth")
    return time_bounds(cost.flops, cost.total_bytes, flops_per_s=v, bytes_per_s=w)

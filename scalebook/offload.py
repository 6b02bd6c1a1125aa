"""Offload to host memory and compressed communication: ZeRO-Offload, activation offload,
ZeRO++ and fp8 collectives.

Per chip, per training step, SI units (bytes, seconds, bytes/s).

**ZeRO-Offload** (Ren et al. 2021, "ZeRO-Offload: Democratizing Billion-Scale Model
Training") keeps the fp32 master weights and Adam moments in host memory and runs the
optimizer on the CPU. Each step a chip sends its gradient shard down over PCIe and receives the
updated bf16 weights back: ``2 · b · P_shard`` bytes over one PCIe direction each (``b`` = 2
bytes for bf16), so the transfer takes ``b · P_shard / W_pcie`` each way (the two directions
run at once). The CPU's Adam streams the state through host memory: it reads and writes the
fp32 master and two moments (24 bytes) and reads the gradient and writes the weight
(2 + 2), 28 bytes per parameter, bound by the host's memory bandwidth ``W_host`` shared by the
``g`` chips of a host: ``28 · g · P_shard / W_host``. ZeRO-Infinity (Rajbhandari et al. 2021)
moves the same state on to NVMe: the same formula with the NVMe bandwidth in place of
``W_host``.

**Activation offload** copies the activations a layer saves for its backward pass to host
memory during the forward pass and back during the backward pass: ``A`` bytes each way per
step over PCIe, hidden if it takes less than the pass it overlaps.

**ZeRO++** (Wang et al. 2023, "ZeRO++: Extremely Efficient Collective Communication for Giant
Model Training") cuts ZeRO-3's cross-node bytes per parameter per step from ``2 + 2 + 2``
(bf16 weight AllGather forward and backward, bf16 gradient ReduceScatter) to ``1 + 0 + 0.5``:
qwZ gathers int8 weights (plus a small per-block scale, neglected here), hpZ keeps a secondary
bf16 copy of the weights sharded *within* a node so the backward gather never leaves it, and
qgZ reduces gradients in int4. That is the paper's 4x.

**fp8 communication** sends collectives' payloads in one byte per element instead of two; the
time is :func:`scalebook.collectives.collective_cost` of the smaller array, priced there once.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalebook.collectives import collective_cost
from scalebook.hardware import Chip, bytes_per_element, canonical_dtype, get_chip
from scalebook.validation import positive, positive_int

__all__ = [
    "CPU_ADAM_BYTES_PER_PARAM",
    "OffloadCost",
    "optimizer_offload",
    "activation_offload_time",
    "ZERO3_BYTES_PER_PARAM",
    "ZEROPP_BYTES_PER_PARAM",
    "zero_cross_node_bytes",
    "collective_time_in",
    "zero_step_comm_times",
]

CPU_ADAM_BYTES_PER_PARAM = 28.0
"""Host-memory bytes one CPU Adam update touches per parameter: fp32 master and two moments
read and written (24) + the bf16 gradient read (2) + the bf16 weight written (2)."""

ZERO3_BYTES_PER_PARAM = {"weight gather (forward)": 2.0, "weight gather (backward)": 2.0,
                         "gradient reduce-scatter": 2.0}
"""ZeRO-3's cross-node payload per parameter per step (bf16 everywhere)."""

ZEROPP_BYTES_PER_PARAM = {"weight gather (forward)": 1.0, "weight gather (backward)": 0.0,
                          "gradient reduce-scatter": 0.5}
"""ZeRO++'s: int8 weights (qwZ), backward gather inside the node (hpZ), int4 gradients (qgZ)."""


@dataclass(frozen=True)
class OffloadCost:
    """One step of ZeRO-Offload on one chip: ``pcie`` seconds of transfer (each direction, run
    at once), ``cpu_update`` seconds of CPU Adam, and ``total`` = their sum (the update needs
    the gradients first and the next forward pass needs the weights back)."""

    params_per_chip: float
    pcie: float
    cpu_update: float

    @property
    def total(self) -> float:
        return self.pcie + self.cpu_update


def optimizer_offload(params_per_chip: float, chip: Chip | str, *,
                      host_memory_bandwidth: float, chips_per_host: int | None = None,
                      gradient_dtype: str = "bf16") -> OffloadCost:
    """ZeRO-Offload's per-step cost for a chip holding ``params_per_chip`` parameters' optimizer
    state on the host (module docstring): PCIe ``b · P / W_pcie`` and CPU Adam
    ``28 · g · P / W_host`` (``g`` chips share the host; default the chip's ``chips_per_host``).
    """
    chip = get_chip(chip)
    P = float(positive(params_per_chip, "params_per_chip"))
    b = bytes_per_element(canonical_dtype(gradient_dtype))
    g = positive_int(chips_per_host if chips_per_host is not None else chip.chips_per_host,
                     "chips_per_host")
    W_host = float(positive(host_memory_bandwidth, "host_memory_bandwidth"))
    return OffloadCost(params_per_chip=P, pcie=b * P / chip.pcie_bandwidth,
                       cpu_update=CPU_ADAM_BYTES_PER_PARAM * g * P / W_host)


def activation_offload_time(activation_bytes: float, chip: Chip | str) -> float:
    """Seconds to copy ``activation_bytes`` one way over the chip's PCIe link (out in the
    forward pass, back in the backward): ``A / W_pcie``."""
    return float(positive(activation_bytes, "activation_bytes")) / get_chip(chip).pcie_bandwidth


def zero_cross_node_bytes(n_params: float, *, plus_plus: bool = False) -> dict[str, float]:
    """Cross-node bytes per step of a ZeRO-3 (or ``plus_plus``: ZeRO++) data group, by
    collective, before the ``(n−1)/n`` ring factor: ``P ·`` the bytes per parameter of
    :data:`ZERO3_BYTES_PER_PARAM` or :data:`ZEROPP_BYTES_PER_PARAM`."""
    P = float(positive(n_params, "n_params"))
    table = ZEROPP_BYTES_PER_PARAM if plus_plus else ZERO3_BYTES_PER_PARAM
    return {name: P * b for name, b in table.items()}


def collective_time_in(kind: str, n_elements: float, dtype: str, axis_sizes, chip: Chip | str,
                       **options) -> float:
    """Seconds of ``kind`` over ``n_elements`` sent in ``dtype`` (e.g. "fp8" against "bf16"):
    :func:`scalebook.collectives.collective_cost` of ``n_elements · bytes_per_element``."""
    nbytes = float(positive(n_elements, "n_elements")) * bytes_per_element(canonical_dtype(dtype))
    return float(collective_cost(kind, nbytes, axis_sizes, chip, **options).time)


def zero_step_comm_times(n_params: float, n_chips: int, chip: Chip | str, *,
                         plus_plus: bool = False, gpus_per_node: int | None = None
                         ) -> dict[str, float]:
    """Seconds per step of each ZeRO-3 collective over ``n_chips`` GPUs in nodes of
    ``gpus_per_node`` (default the chip's), each priced by
    :func:`scalebook.collectives.collective_cost` on the whole model's array:

    - ZeRO-3: AllGather of the bf16 weights (2P bytes) before the forward and again before
      the backward pass, ReduceScatter of the bf16 gradients (2P);
    - ZeRO++: the forward AllGather in int8 (P bytes; qwZ), the backward one inside each node
      from the secondary bf16 partition (2P over ``gpus_per_node`` GPUs; hpZ), the gradient
      ReduceScatter in int4 (P/2 bytes; qgZ, a hierarchical AllToAll in the paper, priced here
      as the ReduceScatter that moves the same bytes).

    Per-block quantisation scales and the dequantise/requantise kernels are left out.
    """
    chip = get_chip(chip)
    P = float(positive(n_params, "n_params"))
    n = positive_int(n_chips, "n_chips")
    g = positive_int(gpus_per_node if gpus_per_node is not None else chip.chips_per_host,
                     "gpus_per_node")

    def cost(kind: str, nbytes: float, size: int) -> float:
        return float(collective_cost(kind, nbytes, [size], chip,
                                     gpus_per_node=min(g, size)).time)

    if plus_plus:
        return {"weight gather (forward)": cost("AllGather", P, n),
                "weight gather (backward)": cost("AllGather", 2 * P, min(g, n)),
                "gradient reduce-scatter": cost("ReduceScatter", P / 2, n)}
    return {"weight gather (forward)": cost("AllGather", 2 * P, n),
            "weight gather (backward)": cost("AllGather", 2 * P, n),
            "gradient reduce-scatter": cost("ReduceScatter", 2 * P, n)}

"""Practice problems of the chapter book/hardware.md (see :mod:`scalebook.practice.problem`).

Its worked problems, in the chapter's order (``worked``): a datasheet's "with sparsity" figure
(1), bidirectional link bandwidth and a NIC's bits per second (2), HBM in GiB (3), the clock
behind a peak (4), a GPU's on-chip memory (5), a TPU's VPU beside its MXU (6), padding to the
systolic array (7), wraparound on a TPU slice (8), leaving the slice over the DCN (9), an NVL72
rack against 8-GPU nodes (10), an Ironwood pod (11) and the per-token floor on an NVL72 rack
(12). Then the practice set's own problems: reading most of HBM, a latency budget, a GPU
AllGather in and across nodes, elementwise work on CUDA cores, loading weights over PCIe and
what a compiler's cost analysis counts. None repeats a graded problem of hw2.

Problems written before the chapter had worked problems keep their ids ("hardware.sparsity"),
so a reader's saved score stays; the new ones are "hardware.wN". Chip figures come from the
catalog (``scalebook.hardware``) and are stated in the text where the answer needs them. Sizes
are in GB or MB (10⁹, 10⁶ bytes) unless the text says GiB or MiB; times in ms or µs as asked.
"""

from __future__ import annotations


from ..homework.alternatives import NO_LINK, ONE_PASS, NotApplicable
from ..collectives import all_gather, all_gather_first_cut, collective_cost, has_wraparound
from ..hardware import (WRAP_WHOLE_CUBES, bytes_per_element, cuda_core_flops, get_chip,
                        on_chip_memory, vpu_flops)
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from, merged
from ..roofline import (critical_batch_size, critical_intensity, elementwise_cost,
                        elementwise_time, matmul_cost, mxu_useful_fraction,
                        vector_critical_intensity, weight_load_time)
from ..topology import format_topology, tpu_slice
from ..torus import CUBE_EDGE
from ..training import fewest_chips
from ..units import format_bandwidth, format_count, format_flops, format_seconds
from ..variants import Choice
from .common import (GB, GIB, MB, MIB, MS, US, bytes_text, decimal_bytes, draws, fma_slip,
                     percent_slip)
from .problem import Problem, one_answer, problem

KIB = 2.0**10


# --------------------------------------------------------------------------- 1. padding

def _pad_pct(v):
    return 100.0 * mxu_useful_fraction(v["chip"], v["D"], v["F"])


def _pad_other_tile_pct(v):
    """The share with the other generation's MXU width (128 against 256)."""
    other = "TPU v5e" if get_chip(v["chip"]).mxu_size == 256 else "TPU v6e"
    return 100.0 * mxu_useful_fraction(other, v["D"], v["F"])


def _pad_solution(v):
    s = get_chip(v["chip"]).mxu_size
    return (
        f"A {v['chip']} MXU is {s} × {s}: D and F are padded up to multiples of {s}, "
        f"{-(-v['D'] // s) * s:,} and {-(-v['F'] // s) * s:,}.",
        f"Useful share: ({v['D']:,}/{-(-v['D'] // s) * s:,}) × ({v['F']:,}/{-(-v['F'] // s) * s:,}) "
        f"= {_pad_pct(v):.3g}%.",
    )


PADDING = one_answer(
    "hardware.padding", "The padding tax of a systolic array",
    draws(well_posed=lambda v: _pad_pct(v) < 97,
           chip=Choice(("TPU v5e", "TPU v6e", "TPU v5p"), "chip"),
           D=Choice((200, 300, 1000, 600, 1500), "D"),
           F=Choice((200, 700, 2500, 900, 4096), "F")),
    ("A layer multiplies activations by a weight W[D, F] with D = {D:,} and F = {F:,} on a "
     "{chip}. The MXU pads the contracting and output dimensions up to a multiple of its "
     "systolic array's width (the batch streams through unpadded). What share of the MXU's "
     "work is useful, in %?"),
    Part("useful_pct", _pad_pct, rel=0.02, slips=(
        Slip("one dimension padded", distinct_from(
            _pad_pct, lambda v: 100.0 * mxu_useful_fraction(v["chip"], v["D"]), 0.02),
             "the weight block fills the array in both directions: pad D and F, and "
             "multiply the two useful shares."),
        Slip("the other MXU width", distinct_from(_pad_pct, _pad_other_tile_pct, 0.02),
             "check the {chip}'s array width: 128 × 128 on most TPUs, 256 × 256 on a v6e."),
        percent_slip(_pad_pct),
    ), unit="fraction"),
    label="useful share of the MXU's work, in %", solution=_pad_solution, worked="7")


# --------------------------------------------------------------------------- 2. sweeping HBM

def _sweep_derive(v):
    chip = get_chip(v["chip"])
    return {"hbm_gb": chip.hbm_bytes / GB, "bw_text": format_bandwidth(chip.hbm_bandwidth)}


def _sweep_ms(v):
    chip = get_chip(v["chip"])
    return weight_load_time(v["fill_pct"] / 100 * chip.hbm_bytes, chip) / MS


def _sweep_solution(v):
    chip = get_chip(v["chip"])
    nbytes = v["fill_pct"] / 100 * chip.hbm_bytes
    return (
        f"The step reads {v['fill_pct']}% of {decimal_bytes(chip.hbm_bytes)} = {decimal_bytes(nbytes)}.",
        f"At {v['bw_text']}: {decimal_bytes(nbytes)} / {v['bw_text']} = {format_seconds(_sweep_ms(v) * MS)}, "
        "whatever the kernel does.",
    )


HBM_SWEEP = one_answer(
    "hardware.hbm_sweep", "A step that reads most of HBM",
    draws(derive=_sweep_derive,
           chip=Choice(("H100", "TPU v5e", "H200", "B200", "TPU v5p", "A100", "TPU v6e"),
                       "chip"),
           fill_pct=Choice((90, 75, 60, 50), "share of HBM", "%")),
    ("A decode step on one {chip} ({hbm_gb:g} GB of HBM at {bw_text}) reads its weights "
     "and KV cache, which fill {fill_pct}% of the HBM, once each. What is the lower bound "
     "on the step's time, in ms?"),
    Part("step_ms", _sweep_ms, slips=(
        Slip("the whole HBM", lambda v: _sweep_ms(v) * 100 / v["fill_pct"],
             "the step reads only what is stored, {fill_pct}% of the HBM, not all of it."),
        Slip("seconds", lambda v: _sweep_ms(v) * MS,
             "the answer is asked in ms (1 s = 1,000 ms)."),
    ), unit="s"),
    label="lower bound on the step time, in ms", solution=_sweep_solution)


# --------------------------------------------------------------------------- 3. a latency budget

def _budget_derive(v):
    chip = get_chip(v["gpu"])
    return {"bw_text": format_bandwidth(chip.hbm_bandwidth), "b": bytes_per_element(v["dtype"]),
            "b_text": bytes_text(bytes_per_element(v["dtype"]))}


def _budget_params_b(v, n_chips=8, b=None):
    """Parameters whose weights one node reads in 1/rate seconds, in billions."""
    seconds_per_byte = weight_load_time(1.0, v["gpu"], n_chips=n_chips)
    b = bytes_per_element(v["dtype"]) if b is None else b
    return 1.0 / v["rate"] / seconds_per_byte / b / 1e9


def _budget_solution(v):
    node_bw = 8 * get_chip(v["gpu"]).hbm_bandwidth
    return (
        f"Each token must read every weight once: T_token ≥ P·b / (8·W). At {v['rate']} tokens/s "
        f"the budget is {format_seconds(1 / v['rate'])}.",
        f"In that time the node's 8 × {v['bw_text']} = {format_bandwidth(node_bw)} read "
        f"{decimal_bytes(node_bw / v['rate'])}: at {v['b_text']} per parameter, "
        f"{_budget_params_b(v):.3g} billion parameters.",
    )


TOKEN_BUDGET = one_answer(
    "hardware.token_budget", "How big a model can answer this fast?",
    draws(derive=_budget_derive,
           gpu=Choice(("H100", "H200", "B200", "A100"), "GPU"),
           rate=Choice((50, 20, 100, 30), "tokens per second"),
           dtype=Choice(("bf16", "int8", "int4"), "weight type")),
    ("You want one conversation to get {rate} tokens per second from a model whose {dtype} "
     "weights ({b_text} per parameter) are split evenly over one node of 8 {gpu}s "
     "({bw_text} of HBM bandwidth each). Counting only the weight reads, how many "
     "parameters, in billions, can the model have at most?"),
    Part("max_params_b", _budget_params_b, slips=(
        Slip("one GPU", lambda v: _budget_params_b(v, n_chips=1),
             "the weights are split over all 8 GPUs, and each reads its own share at the "
             "same time: the node reads 8 times faster than one GPU."),
        Slip("two bytes per parameter", distinct_from(
            _budget_params_b, lambda v: _budget_params_b(v, b=2.0)),
             "the weights are {dtype}: {b_text} per parameter, not bf16's 2."),
    ), unit="params"),
    label="largest model, in billions of parameters", solution=_budget_solution)


# --------------------------------------------------------------------------- 4. datasheet sparsity

def _rate_text(flops_per_s: float, dtype: str) -> str:
    """A tensor-core rate as a datasheet prints it: OP/s for integers, FLOP/s otherwise."""
    text = format_flops(flops_per_s)
    return text.replace("FLOP/s", "OP/s") if dtype.startswith("int") else text


#: (chip, dtype) pairs whose datasheet rate is printed "with sparsity".
SPARSE_CASES = {"A100 in bf16": ("A100", "bf16"), "H200 in fp8": ("H200", "fp8"),
                "A100 in int8": ("A100", "int8"), "H200 in bf16": ("H200", "bf16"),
                "B200 in fp4": ("B200", "fp4"), "H100 in int8": ("H100", "int8")}


def _sparse_chip_dtype(v):
    return SPARSE_CASES[v["case"]]


def _sparse_derive(v):
    chip_name, dtype = SPARSE_CASES[v["case"]]
    chip = get_chip(chip_name)
    return {"chip": chip_name, "dtype": dtype, "b": bytes_per_element(dtype),
            "b_text": bytes_text(bytes_per_element(dtype)),
            "sparse_text": _rate_text(chip.flops(dtype) * 2, dtype),
            "bw_text": format_bandwidth(chip.hbm_bandwidth)}


def _sparse_intensity(v):
    return critical_intensity(v["chip"], v["dtype"])


def _sparse_batch(v):
    return critical_batch_size(v["chip"], compute_dtype=v["dtype"])


def _sparse_solution(v):
    chip = get_chip(v["chip"])
    return (
        f"Halve the 'with sparsity' figure: {_rate_text(chip.flops(v['dtype']), v['dtype'])} dense.",
        f"Critical intensity C/W = {_rate_text(chip.flops(v['dtype']), v['dtype'])} / {v['bw_text']} = "
        f"{_sparse_intensity(v):.4g} FLOPs/byte.",
        f"With {v['dtype']} weights ({v['b_text']} each) a matmul's intensity is about 2B/b, so "
        f"B* = (C/W)·b/2 = {format_count(_sparse_batch(v))} tokens.",
    )


SPARSITY = problem(
    "hardware.sparsity", "Reading a datasheet: dense, not sparse",
    draws(derive=_sparse_derive,
           case=Choice(tuple(SPARSE_CASES), "chip and number type")),
    ("The {chip} datasheet lists {sparse_text} of {dtype} tensor-core throughput \"with "
     "sparsity\" and {bw_text} of HBM bandwidth. For dense matmuls in {dtype}, what is its "
     "critical arithmetic intensity, in FLOPs (or integer OPs) per byte, and above how many tokens per "
     "matmul is X[B, D] · W[D, F] compute-bound when the weights are {dtype} too "
     "(B much smaller than D and F)?"),
    (Part("critical_intensity", _sparse_intensity, slips=(
         Slip("with sparsity", lambda v: 2 * _sparse_intensity(v),
              "a figure 'with sparsity' is twice the dense rate: halve it first."),
     ), unit="FLOPs/byte"),
     "critical intensity, in FLOPs/byte"),
    (Part("critical_batch", _sparse_batch, slips=(
         *merged(Slip("with sparsity", lambda v: 2 * _sparse_batch(v),
                      "a figure 'with sparsity' is twice the dense rate: halve it first."),
                 Slip("the intensity (or bf16 weights)",
                      distinct_from(_sparse_batch, _sparse_intensity),
                      "that is the critical intensity in FLOPs per byte, the critical batch "
                      "only for 2-byte weights. A matmul with few tokens does 2B FLOPs per "
                      "weight, read as {b_text}: B* = (C/W)·b/2."),
                 "halve the 'with sparsity' figure; and that value is the critical intensity "
                 "(FLOPs per byte), not the batch: with weights of {b_text}, B* = (C/W)·b/2."),
     ), unit="count"),
     "critical batch, in tokens"),
    solution=_sparse_solution, worked="1")


# --------------------------------------------------------------------------- 5. wraparound

#: (chip, slice shape, axis size): the slice the AllGather runs on and the axis it uses. On
#: v4p/v5p a slice of whole 4x4x4 cubes is a full torus and a smaller one has no wraparound; on
#: v5e/v6e an axis wraps only when it spans 16 chips (scalebook.torus.axis_wraps).
WRAP_CASES = {
    "v5p 2x4x4": ("TPU v5p", (2, 4, 4), 4),
    "v5p 4x4x4": ("TPU v5p", (4, 4, 4), 4),
    "v5p 4x4x8": ("TPU v5p", (4, 4, 8), 8),
    "v4p 2x4x4": ("TPU v4p", (2, 4, 4), 4),
    "v5e 16x16": ("TPU v5e", (16, 16), 16),
    "v5e 8x16": ("TPU v5e", (8, 16), 8),
    "v6e 4x8": ("TPU v6e", (4, 8), 8),
    "v6e 16x16": ("TPU v6e", (16, 16), 16),
}


def _wrap(v) -> bool:
    return has_wraparound(v["chip"], v["N"], v["shape"])


def _wrap_ms(v, wraparound=None):
    ring = _wrap(v) if wraparound is None else wraparound
    return all_gather(v["V_gb"] * GB, v["N"], v["chip"], wraparound=ring).time / MS


def _wrap_first_cut_ms(v):
    return all_gather_first_cut(v["V_gb"] * GB, v["N"], v["chip"], wraparound=_wrap(v)).time / MS


def _wrap_derive(v):
    chip_name, shape, n = WRAP_CASES[v["case"]]
    return {"chip": chip_name, "shape": shape, "N": n, "topology": format_topology(shape),
            "link_text": format_bandwidth(get_chip(chip_name).link_bandwidth_one_way)}


def _wrap_solution(v):
    cost = all_gather(v["V_gb"] * GB, v["N"], v["chip"], wraparound=_wrap(v))
    if get_chip(v["chip"]).wraparound_rule == WRAP_WHOLE_CUBES:
        rule = ("a slice of whole 4 × 4 × 4 cubes is a full 3D torus; a smaller slice has no "
                "wraparound links")
    else:
        longest = max(get_chip(v["chip"]).max_slice)
        rule = f"an axis wraps only when it spans the full {longest} chips"
    kind = "a ring: data flows both ways round" if _wrap(v) else "a line: no wraparound"
    return (
        f"On a {v['chip']} {rule}, so the {v['N']}-chip axis of {v['topology']} is {kind}.",
        f"Bandwidth term {cost.formula} = {format_seconds(cost.bandwidth_time)}; latency "
        f"{format_seconds(cost.latency_time)}.",
        f"Total {format_seconds(cost.time)}.",
    )


def _wrap_slip(actual: bool, hint: str) -> Slip:
    """The time under the other topology, where this axis is ``actual``."""
    def value(v):
        return _wrap_ms(v, wraparound=not actual) if _wrap(v) == actual else float("nan")
    return Slip("as a line" if actual else "as a ring", value, hint)


WRAPAROUND = one_answer(
    "hardware.wraparound", "Does this axis have wraparound?",
    draws(derive=_wrap_derive,
           case=Choice(tuple(WRAP_CASES), "chip and slice"),
           V_gb=Choice((1.0, 0.5, 2.0, 0.25), "V", "GB")),
    ("An AllGather over the {N}-chip axis of a {chip} slice of shape {topology} collects a "
     "{V_gb:g} GB array (the whole gathered array), {link_text} per ICI link one way, 1 µs "
     "per hop. Whether the axis has wraparound follows the generation's rule in the "
     "chapter. How long does it take, in ms, by the chapter's model?"),
    Part("allgather_ms", _wrap_ms, conventions=(
        Convention("first cut", _wrap_first_cut_ms),
    ), slips=(
        _wrap_slip(True, "this axis of a {chip} {topology} slice has wraparound: it is a "
                         "ring, and the shards travel both ways round it."),
        _wrap_slip(False, "this axis of a {chip} {topology} slice has no wraparound: it is "
                          "a line (a slice smaller than a 4 × 4 × 4 cube, or a v5e/v6e axis "
                          "shorter than 16), so the data streams one way past the end "
                          "chips, V·(N−1)/N / W."),
    ), unit="s", not_applicable=(
    ONE_PASS,)),
    label="AllGather time, in ms", solution=_wrap_solution, worked="8")


# --------------------------------------------------------------------------- 6. GPU AllGather

def _gag_derive(v):
    chip = get_chip(v["gpu"])
    return {"nvlink_text": format_bandwidth(chip.interconnect_bandwidth_one_way),
            "nic_text": format_bandwidth(chip.nic_bandwidth_per_chip),
            "n_gpus": 8 * v["nodes"]}


def _gag_ms(v, n, **kw):
    return collective_cost("all_gather", v["V_gb"] * GB, n, v["gpu"], **kw).time / MS


def _gag_node_ms(v):
    return _gag_ms(v, 8)


def _gag_cluster_ms(v):
    return _gag_ms(v, 8 * v["nodes"])


def _gag_solution(v):
    node = collective_cost("all_gather", v["V_gb"] * GB, 8, v["gpu"])
    cluster = collective_cost("all_gather", v["V_gb"] * GB, 8 * v["nodes"], v["gpu"])
    return (
        f"In one node every GPU reaches every other through the NVSwitches at {v['nvlink_text']}: "
        f"V·(N−1)/N / W_nvlink = {format_seconds(node.time)}.",
        f"Across {v['nodes']} nodes NCCL runs one ring per NIC rail; each GPU's NIC moves "
        f"{v['nic_text']}: {cluster.formula} = {format_seconds(cluster.time)}, "
        f"{cluster.time / node.time:.3g} times longer.",
    )


GPU_ALLGATHER = problem(
    "hardware.gpu_allgather", "An AllGather inside a node and across nodes",
    draws(derive=_gag_derive,
           gpu=Choice(("H100", "B200", "A100", "H200"), "GPU"),
           V_gb=Choice((1.0, 0.5, 2.0, 4.0), "V", "GB"),
           nodes=Choice((8, 2, 4, 16), "nodes")),
    ("An AllGather collects a {V_gb:g} GB array over {gpu} GPUs (NVLink: {nvlink_text} per "
     "GPU one way through the node's switches; network: {nic_text} per GPU one way through "
     "its own NIC; 1 µs per step). How long does it take, in ms, over the 8 GPUs of one "
     "node, and over {n_gpus} GPUs in {nodes} nodes, priced as NCCL runs it (one ring per "
     "NIC rail, the chapter's model)?"),
    (Part("node_ms", _gag_node_ms, slips=(
         Slip("one NVLink port", lambda v: _gag_ms(
             v, 8, nvlink_bandwidth=get_chip(v["gpu"]).link_bandwidth_one_way),
              "every NVLink port of a GPU goes to a switch and they all carry data at once: "
              "use the GPU's total NVLink bandwidth, not one port's."),
     ), unit="s"),
     "one node of 8, in ms"),
    (Part("cluster_ms", _gag_cluster_ms, slips=(
         Slip("NVLink everywhere", lambda v: _gag_ms(v, 8 * v["nodes"],
                                                     gpus_per_node=8 * v["nodes"]),
              "NVLink stops at the node: between nodes the data crosses each GPU's NIC, "
              "about 9 times slower."),
         Slip("one flat ring", lambda v: _gag_ms(v, 8 * v["nodes"], scheme="flat"),
              "NCCL does not run one ring paced by the slowest link for every byte: it runs "
              "one ring per NIC rail, each carrying its share, while NVLink moves the rest."),
     ), unit="s"),
     "across the nodes, in ms"),
    solution=_gag_solution)


# --------------------------------------------------------------------------- 7. vector units

def _ew_derive(v):
    from ..hardware import vector_flops
    chip = get_chip(v["gpu"])
    return {"vec_text": format_flops(vector_flops(chip, fma_flops=1)),
            "bw_text": format_bandwidth(chip.hbm_bandwidth)}


def _ew_us(v, dtype="bf16"):
    return elementwise_time((v["B"], v["D"]), v["gpu"], dtype=dtype).lower / US


def _ew_bytes_per_element(v):
    cost = elementwise_cost((v["B"], v["D"]))
    return cost.total_bytes / cost.elements


def _ew_flops(v, fma_flops=1):
    return vector_critical_intensity(v["gpu"], fma_flops=fma_flops) * _ew_bytes_per_element(v)


def _ew_solution(v):
    cost = elementwise_cost((v["B"], v["D"]))
    t = elementwise_time((v["B"], v["D"]), v["gpu"])
    return (
        f"x + y reads two bf16 arrays and writes one: 3 × 2 × {v['B']:,} × {v['D']:,} = "
        f"{decimal_bytes(cost.total_bytes)}, for {cost.flops:.3g} FLOPs (intensity "
        f"{cost.intensity:.3g} FLOPs/byte).",
        f"HBM: {format_seconds(t.t_comms)}; CUDA cores: {format_seconds(t.t_math)}. Lower bound "
        f"{format_seconds(t.lower)}, memory-bound.",
        f"The CUDA cores' critical intensity is {vector_critical_intensity(v['gpu']):.3g} "
        f"FLOPs/byte; × 6 bytes per element = {_ew_flops(v):.3g} FLOPs per element before they "
        "set the time.",
    )


ELEMENTWISE = problem(
    "hardware.elementwise", "Elementwise work on the vector units",
    draws(derive=_ew_derive,
           gpu=Choice(("A100", "H100", "V100", "H200"), "GPU"),
           B=Choice((8192, 4096, 16384), "B"),
           D=Choice((8192, 4096, 12288), "D")),
    ("A residual add out = x + y runs on bf16[{B:,}, {D:,}] arrays on one {gpu} (HBM: "
     "{bw_text}; CUDA cores: {vec_text} counting one FLOP per add or multiply); x and y are "
     "read from HBM and out is written there. What is the lower bound on its time, in µs? "
     "And how many FLOPs per element could an elementwise op on the same three arrays do "
     "before the CUDA cores, not HBM, set its time (one FLOP per add or multiply)?"),
    (Part("add_us", _ew_us, slips=(
         Slip("reads only", lambda v: _ew_us(v) * 2 / 3,
              "the output is written back to HBM too: three arrays move, not two."),
         Slip("fp32", lambda v: _ew_us(v, dtype="fp32"),
              "the arrays are bf16, 2 bytes per element; the CUDA cores compute in fp32 but "
              "HBM moves bf16."),
     ), unit="s"),
     "residual add, in µs"),
    (Part("flops_per_element", _ew_flops, conventions=(
         Convention("an FMA as two FLOPs", lambda v: _ew_flops(v, fma_flops=2),
                    verdict=PINNED, phrase="one FLOP per add or multiply",
                    hint="the problem counts one FLOP per add or multiply, the CUDA cores' rate "
                         "for plain instructions; NVIDIA's datasheet counts a fused "
                         "multiply-add as two."),
     ), slips=(
         Slip("per byte", lambda v: vector_critical_intensity(v["gpu"]),
              "that is FLOPs per byte; each element moves 6 bytes (two bf16 reads, one "
              "write)."),
     ), unit="FLOPs", not_applicable=(
         NotApplicable("forward only", "an elementwise op's FLOPs per element: no training "
                       "step, no backward pass"),)),
     "FLOPs per element at the crossover"),
    solution=_ew_solution)


# --------------------------------------------------------------------------- 8. PCIe

def _pcie_derive(v):
    chip = get_chip(v["chip"])
    return {"pcie_text": format_bandwidth(chip.pcie_bandwidth),
            "bw_text": format_bandwidth(chip.hbm_bandwidth)}


def _pcie_bytes(v):
    return v["params_b"] * 1e9 * bytes_per_element("bf16")


def _pcie_s(v, n_chips=None):
    chip = get_chip(v["chip"])
    return weight_load_time(_pcie_bytes(v), chip, n_chips=n_chips or v["N"],
                            bandwidth=chip.pcie_bandwidth)


def _pcie_ratio(v):
    return _pcie_s(v) / weight_load_time(_pcie_bytes(v), v["chip"], n_chips=v["N"])


def _pcie_solution(v):
    return (
        f"{v['params_b']} billion bf16 parameters = {decimal_bytes(_pcie_bytes(v))}, "
        f"{decimal_bytes(_pcie_bytes(v) / v['N'])} per chip.",
        f"Each chip's share over its own PCIe link at {v['pcie_text']}: {format_seconds(_pcie_s(v))}.",
        f"Reading the same share from HBM at {v['bw_text']}: "
        f"{format_seconds(weight_load_time(_pcie_bytes(v), v['chip'], n_chips=v['N']))}, "
        f"{_pcie_ratio(v):.3g} times faster.",
    )


PCIE = problem(
    "hardware.pcie", "Loading weights from the host",
    draws(derive=_pcie_derive,
           well_posed=lambda v: _pcie_bytes(v) <= 0.9 * v["N"] * get_chip(v["chip"]).hbm_bytes,
           chip=Choice(("TPU v5e", "TPU v6e", "TPU v5p", "H100", "A100"), "chip"),
           params_b=Choice((70, 8, 13, 34), "parameters", "billion"),
           N=Choice((16, 8, 4, 32), "chips")),
    ("The bf16 weights of a {params_b}-billion-parameter model are copied from host memory "
     "into the HBM of {N} {chip} chips, split evenly, each chip over its own PCIe link "
     "({pcie_text} host to chip) at the same time. How long does the copy take at least, "
     "in s, and how many times longer is that than reading the same weights once out of "
     "HBM ({bw_text} per chip)?"),
    (Part("copy_s", _pcie_s, slips=(
         Slip("one link", lambda v: _pcie_s(v, n_chips=1),
              "each of the {N} chips receives its own share over its own PCIe link, all at "
              "once."),
         Slip("HBM bandwidth", lambda v: weight_load_time(_pcie_bytes(v), v["chip"],
                                                         n_chips=v["N"]),
              "the bytes come from the host over PCIe, not out of HBM: use the PCIe "
              "bandwidth."),
     ), unit="s", not_applicable=(
     ONE_PASS,)),
     "copy over PCIe, in s"),
    (Part("pcie_over_hbm", _pcie_ratio, slips=(
         Slip("upside down", lambda v: 1 / _pcie_ratio(v),
              "the copy over PCIe is the slower one: the ratio is above 1."),
     ), unit="ratio"),
     "PCIe time / HBM time"),
    solution=_pcie_solution)


# --------------------------------------------------------------------------- 9. leaving the slice

def _dcn_derive(v):
    chip = get_chip(v["chip"])
    return {"host_text": format_bandwidth(chip.host_network_bandwidth),
            "per_host": chip.chips_per_host,
            "link_text": format_bandwidth(chip.link_bandwidth_one_way)}


def _dcn_ms(v, **kw):
    return collective_cost("ppermute", v["V_mb"] * MB, 2, v["chip"], network="dcn", **kw).time / MS


def _ici_ms(v, **kw):
    return collective_cost("ppermute", v["V_mb"] * MB, 2, v["chip"], **kw).time / MS


def _dcn_solution(v):
    chip = get_chip(v["chip"])
    return (
        f"The host's {v['host_text']} is shared by its {v['per_host']} chips: "
        f"{format_bandwidth(chip.nic_bandwidth_per_chip)} each, so {v['V_mb']:g} MB take "
        f"{format_seconds(_dcn_ms(v) * MS)} over the DCN.",
        f"To an ICI neighbour, one link at {v['link_text']} one way: "
        f"{format_seconds(_ici_ms(v) * MS)}, {_dcn_ms(v) / _ici_ms(v):.3g} times faster.",
    )


DCN = problem(
    "hardware.dcn", "Leaving the slice",
    draws(derive=_dcn_derive,
           chip=Choice(("TPU v5e", "TPU v5p", "TPU v6e", "TPU v4p"), "chip"),
           V_mb=Choice((100.0, 500.0, 1000.0, 50.0, 250.0), "V", "MB")),
    ("Every chip of a {chip} slice sends {V_mb:g} MB (10⁶ bytes) to its counterpart in "
     "another slice, all at once, over the data-centre network: each host moves "
     "{host_text} each way, shared by its {per_host} chips. How long does that take, in ms? "
     "And how long does sending the same {V_mb:g} MB to an ICI neighbour take, over one "
     "link ({link_text} one way), in ms? (1 µs of latency each.)"),
    (Part("dcn_ms", _dcn_ms, slips=(
         Slip("the whole host's bandwidth", lambda v: _dcn_ms(
             v, bandwidth=get_chip(v["chip"]).host_network_bandwidth),
              "all {per_host} chips of a host send at once and share its network: each gets "
              "1/{per_host} of it."),
     ), unit="s"),
     "over the DCN, in ms"),
    (Part("ici_ms", _ici_ms, slips=(
         Slip("both directions", lambda v: _ici_ms(
             v, bandwidth=2 * get_chip(v["chip"]).link_bandwidth_one_way),
              "a send to one neighbour uses one link in one direction: the one-way figure."),
     ), unit="s"),
     "to an ICI neighbour, in ms"),
    solution=_dcn_solution, worked="9")


# --------------------------------------------------------------------------- 10. cost analysis

def _ca_cost(v):
    return matmul_cost(v["B"], v["D"], v["F"], x_dtype=v["dtype"])


def _ca_mb(v):
    return _ca_cost(v).total_bytes / MB


def _ca_intensity(v):
    return _ca_cost(v).intensity


def _ca_solution(v):
    c = _ca_cost(v)
    b = bytes_per_element(v["dtype"])
    return (
        f"FLOPs: 2·B·D·F = {c.flops:.4g} (a multiply-add is 2).",
        f"Bytes: (B·D + D·F + B·F) × {b:g} = {c.bytes_read:.4g} read + {c.bytes_written:.4g} "
        f"written = {decimal_bytes(c.total_bytes)}.",
        f"Intensity {c.flops:.4g} / {c.total_bytes:.4g} = {c.intensity:.4g} FLOPs/byte.",
    )


COST_ANALYSIS = problem(
    "hardware.cost_analysis", "What a compiler's cost analysis counts",
    draws(dtype=Choice(("bf16", "fp32"), "number type"),
           B=Choice((256, 512, 1024, 4096), "B"),
           D=Choice((1024, 4096, 8192), "D"),
           F=Choice((2048, 8192, 16384), "F")),
    ("XLA's cost_analysis of X[B, D] · W[D, F] → Out[B, F] with B = {B:,}, D = {D:,}, "
     "F = {F:,}, all in {dtype}, on a chip where {dtype} is native, counts every input byte "
     "read once and the output written once. How many MB (10⁶ bytes) does it count, and "
     "what is the matmul's arithmetic intensity, in FLOPs per byte?"),
    (Part("bytes_mb", _ca_mb, slips=(
         Slip("no output", lambda v: _ca_cost(v).bytes_read / MB,
              "the output Out[B, F] is written to memory too: count its bytes."),
         Slip("2 bytes per element", distinct_from(
             _ca_mb, lambda v: matmul_cost(v["B"], v["D"], v["F"]).total_bytes / MB),
              "the arrays are {dtype}: 4 bytes per element for fp32, 2 for bf16."),
     ), unit="bytes"),
     "bytes accessed, in MB"),
    (Part("intensity", _ca_intensity, slips=(
         fma_slip(lambda v: _ca_intensity(v) / 2),
         Slip("no output", lambda v: _ca_cost(v).flops / _ca_cost(v).bytes_read,
              "the output Out[B, F] is written to memory too: count its bytes."),
     ), unit="FLOPs/byte"),
     "intensity, in FLOPs/byte"),
    solution=_ca_solution)


# =========================================================================== worked problems
# The chapter's worked problems that are not in the practice set above, in the order the
# chapter prints them (``worked`` is their number there).

# --------------------------------------------------------------------------- w2. bidirectional

def _w2_derive(v):
    chip = get_chip(v["gpu"])
    return {"bidi_text": format_bandwidth(2 * chip.interconnect_bandwidth_one_way),
            "nic_gbit": f"{chip.nic_bandwidth_per_chip * 8 / 1e9:.0f}"}


def _w2_nvlink_ms(v, factor=1.0):
    """V / (one-way NVLink bytes/s of the GPU), in ms; ``factor`` scales the bandwidth."""
    return v["V_gb"] * GB / (factor * get_chip(v["gpu"]).interconnect_bandwidth_one_way) / MS


def _w2_nic_ms(v, factor=1.0):
    return v["V_gb"] * GB / (factor * get_chip(v["gpu"]).nic_bandwidth_per_chip) / MS


def _w2_solution(v):
    chip = get_chip(v["gpu"])
    return (
        f"'{v['bidi_text']} bidirectional' adds both directions: one way it is "
        f"{format_bandwidth(chip.interconnect_bandwidth_one_way)}, and a send uses one direction.",
        f"{v['V_gb']:g} GB / {format_bandwidth(chip.interconnect_bandwidth_one_way)} = "
        f"{format_seconds(_w2_nvlink_ms(v) * MS)}.",
        f"The NIC's {v['nic_gbit']} Gb/s is bits: / 8 = "
        f"{format_bandwidth(chip.nic_bandwidth_per_chip)}, so "
        f"{format_seconds(_w2_nic_ms(v) * MS)}, "
        f"{_w2_nic_ms(v) / _w2_nvlink_ms(v):.3g} times longer.",
    )


W2 = problem(
    "hardware.w2", "Bidirectional bandwidth and bits per second",
    draws(derive=_w2_derive,
           gpu=Choice(("H100", "B200", "A100", "H200"), "GPU"),
           V_gb=Choice((1.0, 4.0, 0.5, 2.0), "V", "GB")),
    ("The {gpu} datasheet lists {bidi_text} of NVLink bandwidth per GPU, \"bidirectional\", "
     "and each GPU of the node has its own {nic_gbit} Gb/s network card. One GPU sends a "
     "{V_gb:g} GB shard to another GPU of its node, through the NVLink switches, with nothing "
     "else on the links. How long does that take at least, in ms? And how long does sending "
     "the same shard to a GPU in another node through the NIC take, in ms? (Bandwidth only.)"),
    (Part("nvlink_ms", _w2_nvlink_ms, slips=(
         Slip("bidirectional", lambda v: _w2_nvlink_ms(v, factor=2.0),
              "the bidirectional figure adds both directions; a send from one GPU to another "
              "uses one: halve it."),
     ), unit="s"),
     "over NVLink, in ms"),
    (Part("nic_ms", _w2_nic_ms, slips=(
         Slip("bits as bytes", lambda v: _w2_nic_ms(v, factor=8.0),
              "a NIC's rate is in bits per second: divide by 8 for bytes ({nic_gbit} Gb/s is "
              "{nic_gbit} / 8 GB/s)."),
     ), unit="s"),
     "through the NIC, in ms"),
    solution=_w2_solution, worked="2")


# --------------------------------------------------------------------------- w4. the clock

def _w4_derive(v):
    chip = get_chip(v["gpu"])
    return {"sms": chip.cores, "fp32_per_sm": chip.fp32_cores_per_sm,
            "boost_ghz": f"{chip.boost_clock_hz / 1e9:.2f}",
            "bf16_text": format_flops(chip.flops("bf16"))}


def _w4_scale(v):
    return v["f_ghz"] * 1e9 / get_chip(v["gpu"]).boost_clock_hz


def _w4_fp32_tflops(v, fma_flops=2):
    return cuda_core_flops(v["gpu"], fma_flops=fma_flops) * _w4_scale(v) / 1e12


def _w4_bf16_tflops(v):
    return get_chip(v["gpu"]).flops("bf16") * _w4_scale(v) / 1e12


def _w4_solution(v):
    peak = cuda_core_flops(v["gpu"])
    return (
        f"Datasheet fp32: {v['sms']} SMs × {v['fp32_per_sm']} cores × 2 FLOPs per FMA × "
        f"{v['boost_ghz']} GHz = {format_flops(peak)}.",
        f"At {v['f_ghz']} GHz every unit does {_w4_scale(v):.3g} of that: "
        f"{format_flops(_w4_fp32_tflops(v) * 1e12)}.",
        f"The tensor cores scale alike: {v['bf16_text']} × {_w4_scale(v):.3g} = "
        f"{format_flops(_w4_bf16_tflops(v) * 1e12)}.",
    )


W4 = problem(
    "hardware.w4", "The clock behind the peak",
    draws(derive=_w4_derive,
           well_posed=lambda v: v["f_ghz"] * 1e9 < get_chip(v["gpu"]).boost_clock_hz,
           gpu=Choice(("H100", "A100", "B200", "H200"), "GPU"),
           f_ghz=Choice((1.75, 1.6, 1.3, 1.2, 1.1), "sustained clock", "GHz")),
    ("An {gpu} has {sms} SMs of {fp32_per_sm} fp32 CUDA cores each; its datasheet peaks "
     "assume the {boost_ghz} GHz boost clock, and count a fused multiply-add as 2 FLOPs. "
     "Under a long training run it holds {f_ghz} GHz. What fp32 rate do its CUDA cores "
     "reach at that clock, in TFLOP/s (FMA as 2 FLOPs)? And its dense bf16 tensor-core rate "
     "({bf16_text} at boost), if it scales with the clock the same way, in TFLOP/s?"),
    (Part("fp32_tflops", _w4_fp32_tflops, slips=(
         Slip("the boost clock", lambda v: cuda_core_flops(v["gpu"]) / 1e12,
              "that is the datasheet's peak at the {boost_ghz} GHz boost clock; at "
              "{f_ghz} GHz every core does proportionally less."),
         Slip("an FMA as one FLOP", lambda v: _w4_fp32_tflops(v, fma_flops=1),
              "the problem counts a fused multiply-add as 2 FLOPs, as the datasheet does."),
     ), unit="FLOPs/s"),
     "CUDA cores at that clock, in TFLOP/s"),
    (Part("bf16_tflops", _w4_bf16_tflops, slips=(
         Slip("the boost clock", lambda v: get_chip(v["gpu"]).flops("bf16") / 1e12,
              "the datasheet figure assumes the boost clock: scale it by {f_ghz} / "
              "{boost_ghz}."),
     ), unit="FLOPs/s"),
     "tensor cores (bf16) at that clock, in TFLOP/s"),
    solution=_w4_solution, worked="4")


# --------------------------------------------------------------------------- w5. on-chip SRAM

def _w5_derive(v):
    chip = get_chip(v["gpu"])
    return {"sms": chip.cores,
            "reg_kib": f"{on_chip_memory(chip, 'registers') / KIB:g}",
            "smem_kib": f"{on_chip_memory(chip, 'smem') / KIB:g}",
            "l2_mib": f"{on_chip_memory(chip, 'l2') / MIB:g}",
            "hbm_gb": f"{chip.hbm_bytes / GB:g}"}


def _w5_bytes(v, per_sm_total=True):
    chip = v["gpu"]
    return (on_chip_memory(chip, "registers", total=per_sm_total)
            + on_chip_memory(chip, "smem", total=per_sm_total) + on_chip_memory(chip, "l2"))


def _w5_mib(v):
    return _w5_bytes(v) / MIB


def _w5_ratio(v):
    return get_chip(v["gpu"]).hbm_bytes / _w5_bytes(v)


def _w5_solution(v):
    chip = v["gpu"]
    reg, smem = (on_chip_memory(chip, level, total=True) / MIB for level in ("registers", "smem"))
    return (
        f"Registers: {v['sms']} × {v['reg_kib']} KiB = {reg:.4g} MiB; shared memory/L1: "
        f"{v['sms']} × {v['smem_kib']} KiB = {smem:.4g} MiB; L2: {v['l2_mib']} MiB.",
        f"In all {_w5_mib(v):.4g} MiB = {decimal_bytes(_w5_bytes(v))}.",
        f"HBM: {v['hbm_gb']} GB / {decimal_bytes(_w5_bytes(v))} = {_w5_ratio(v):,.0f} times more.",
    )


W5 = problem(
    "hardware.w5", "How much memory is on the chip?",
    draws(derive=_w5_derive,
           gpu=Choice(("H100", "A100", "B200", "V100"), "GPU")),
    ("An {gpu} has {sms} SMs, each with {reg_kib} KiB of registers and {smem_kib} KiB of "
     "shared memory/L1, and one L2 cache of {l2_mib} MiB shared by all of them. How much "
     "on-chip memory is that in all, in MiB (2²⁰ bytes)? And how many times more does its "
     "{hbm_gb} GB of HBM hold?"),
    (Part("sram_mib", _w5_mib, conventions=(
         Convention("MB instead of MiB", lambda v: _w5_bytes(v) / MB),
     ), slips=(
         Slip("one SM", lambda v: _w5_bytes(v, per_sm_total=False) / MIB,
              "registers and shared memory are per SM: multiply them by the {sms} SMs "
              "(the L2 is one for the chip)."),
         Slip("no registers", lambda v: (_w5_bytes(v) - on_chip_memory(
             v["gpu"], "registers", total=True)) / MIB,
              "the register files are on-chip memory too, and as large as the shared "
              "memory: count them."),
     ), unit="bytes", not_applicable=(
         NotApplicable("bf16 or fp32", "on-chip memory capacities: no element size enters "
                       "them"),
         NotApplicable("GB read as GiB", "sizes in KiB and MiB: MB for MiB (4.9% off) is "
                       "accepted, and a GiB's 7.4% is no reading of them"),)),
     "on-chip memory, in MiB"),
    (Part("hbm_over_sram", _w5_ratio, slips=(
         Slip("one SM", lambda v: get_chip(v["gpu"]).hbm_bytes / _w5_bytes(v, False),
              "registers and shared memory are per SM: multiply them by the {sms} SMs."),
     ), unit="ratio"),
     "HBM / on-chip memory"),
    solution=_w5_solution, worked="5")


# --------------------------------------------------------------------------- w6. the VPU

def _w6_derive(v):
    chip = get_chip(v["chip"])
    sublanes, lanes = chip.vreg_shape
    return {"cores": chip.cores, "sublanes": sublanes, "lanes": lanes, "alus": chip.vpu_alus,
            "clock_ghz": f"{chip.core_clock_hz / 1e9:g}",
            "mxu_text": format_flops(chip.flops("bf16")),
            "bw_text": format_bandwidth(chip.hbm_bandwidth),
            "core_word": "TensorCore" if chip.cores == 1 else "TensorCores"}


def _w6_tflops(v):
    return vpu_flops(v["chip"]) / 1e12


def _w6_ratio(v):
    return get_chip(v["chip"]).flops("bf16") / vpu_flops(v["chip"])


def _w6_flops_per_element(v, nbytes=4.0):
    """FLOPs per element at which the VPU takes as long as HBM, for ``nbytes`` moved per element
    (one bf16 array read, one written: 4 bytes)."""
    return vpu_flops(v["chip"]) / get_chip(v["chip"]).hbm_bandwidth * nbytes


def _w6_solution(v):
    return (
        f"VPU: {v['cores']} × {v['sublanes']} × {v['lanes']} × {v['alus']} ALUs × "
        f"{v['clock_ghz']} GHz = {format_flops(vpu_flops(v['chip']))}.",
        f"MXUs: {v['mxu_text']}, {_w6_ratio(v):.3g} times faster.",
        f"The op moves 4 bytes per element (2 read, 2 written): the VPU sets its time above "
        f"{format_flops(vpu_flops(v['chip']))} / {v['bw_text']} × 4 bytes = "
        f"{_w6_flops_per_element(v):.3g} FLOPs per element.",
    )


W6 = problem(
    "hardware.w6", "The VPU beside the MXU",
    draws(derive=_w6_derive,
           chip=Choice(("TPU v5p", "TPU v5e"), "chip")),
    ("A {chip} chip has {cores} {core_word}. Each has a VPU of {sublanes} × {lanes} "
     "positions with {alus} ALUs each, at {clock_ghz} GHz, one FLOP per ALU per cycle; the "
     "chip's MXUs do {mxu_text} in bf16 and its HBM moves {bw_text}. What is the chip's "
     "VPU rate, in TFLOP/s, and how many times faster are its MXUs? And how many FLOPs per "
     "element can an elementwise op that reads one bf16 array from HBM and writes one do "
     "before the VPU, not HBM, sets its time?"),
    (Part("vpu_tflops", _w6_tflops, slips=(
         Slip("one TensorCore", distinct_from(_w6_tflops,
                                              lambda v: _w6_tflops(v) / v["cores"]),
              "the chip has {cores} TensorCores, each with its own VPU: multiply by {cores}."),
         Slip("two FLOPs per ALU", lambda v: 2 * _w6_tflops(v),
              "each VPU ALU does one FLOP per cycle (a vadd or a vmul), not two."),
     ), unit="FLOPs/s"),
     "VPU, in TFLOP/s"),
    (Part("mxu_over_vpu", _w6_ratio, slips=(
         Slip("one TensorCore", distinct_from(_w6_ratio, lambda v: _w6_ratio(v) * v["cores"]),
              "the chip has {cores} TensorCores, each with its own VPU."),
     ), unit="ratio"),
     "MXU / VPU"),
    (Part("flops_per_element", _w6_flops_per_element, slips=(
         Slip("per byte", lambda v: _w6_flops_per_element(v, nbytes=1.0),
              "that is FLOPs per byte; each element moves 4 bytes (a bf16 read and a bf16 "
              "write)."),
         Slip("reads only", lambda v: _w6_flops_per_element(v, nbytes=2.0),
              "the output is written back to HBM too: 4 bytes per element, not 2."),
     ), unit="FLOPs", not_applicable=(
         NotApplicable("forward only", "an elementwise op's FLOPs per element: no training "
                       "step, no backward pass"),
         NotApplicable("multiply-add as 1 FLOP", "the text counts one FLOP per VPU ALU per "
                       "cycle: no multiply-add enters the count"),)),
     "FLOPs per element at the crossover"),
    solution=_w6_solution, worked="6")


# --------------------------------------------------------------------------- w3. GiB

#: How much larger a GiB is than a GB, for the hints.
_GIB_TEXT = {"gib_pct": f"{100 * (GIB / GB - 1):.1f}%", "gib_factor": f"{GIB / GB:.4f}"}

def _w3_derive(v):
    chip = get_chip(v["chip"])
    b = bytes_per_element(v["dtype"])
    return {"hbm_gib": f"{chip.hbm_bytes / GIB:g}", "b_text": bytes_text(b), **_GIB_TEXT}


def _w3_gb(v):
    return get_chip(v["chip"]).hbm_bytes / GB


def _w3_params_b(v, hbm_bytes=None):
    hbm = get_chip(v["chip"]).hbm_bytes if hbm_bytes is None else hbm_bytes
    return (1 - v["reserve_pct"] / 100) * hbm / bytes_per_element(v["dtype"]) / 1e9


def _w3_gib_as_gb(v):
    """The HBM's bytes if its GiB figure is read as GB."""
    return get_chip(v["chip"]).hbm_bytes / GIB * GB


def _w3_solution(v):
    chip = get_chip(v["chip"])
    return (
        f"1 GiB = 2³⁰ = {GIB:,.0f} bytes: {v['hbm_gib']} GiB = {chip.hbm_bytes:,.0f} bytes "
        f"= {_w3_gb(v):.4g} GB.",
        f"Keep {v['reserve_pct']}% free: {100 - v['reserve_pct']}% × {_w3_gb(v):.4g} GB = "
        f"{decimal_bytes((1 - v['reserve_pct'] / 100) * chip.hbm_bytes)}, / {v['b_text']} per "
        f"parameter = {_w3_params_b(v):.4g} billion parameters.",
    )


W3 = problem(
    "hardware.w3", "A datasheet in GiB",
    draws(derive=_w3_derive,
           chip=Choice(("TPU7x",), "chip"),
           reserve_pct=Choice((25, 10, 20, 40, 50), "kept free", "%"),
           dtype=Choice(("bf16", "fp8", "int4", "fp32"), "weight type")),
    ("Google's page for the {chip} (Ironwood) gives each chip {hbm_gib} GiB of HBM. How many "
     "GB (10⁹ bytes) is that? And if {reserve_pct}% of it is kept free for activations and "
     "the KV cache, how many billion parameters in {dtype} ({b_text} each) fit in the rest?"),
    (Part("hbm_gb", _w3_gb, slips=(
         Slip("GiB as GB", lambda v: _w3_gib_as_gb(v) / GB,
              "a GiB is 2³⁰ bytes, {gib_pct} more than a GB (10⁹): multiply by "
              "{gib_factor}.", ("GB read as GiB",)),
     ), unit="bytes", not_applicable=(
         NotApplicable("bf16 or fp32", "a chip's HBM capacity: no element size enters it"),)),
     "HBM, in GB"),
    (Part("params_b", _w3_params_b, slips=(
         Slip("GiB as GB", lambda v: _w3_params_b(v, hbm_bytes=_w3_gib_as_gb(v)),
              "a GiB is 2³⁰ bytes, {gib_pct} more than a GB (10⁹)."),
         Slip("nothing kept free", lambda v: _w3_params_b(v) / (1 - v["reserve_pct"] / 100),
              "{reserve_pct}% of the HBM is kept for activations and the KV cache."),
     ), unit="params"),
     "parameters that fit, in billions"),
    solution=_w3_solution, worked="3")


# --------------------------------------------------------------------------- w11. Ironwood pod

def _w11_slice(v):
    return tpu_slice(v["chip"], v["shape"])


def _w11_derive(v):
    chip = get_chip(v["chip"])
    return {"topology": format_topology(v["shape"]), "fp8_text": format_flops(chip.flops("fp8")),
            "hbm_gib": f"{chip.hbm_bytes / GIB:g}", "chips": _w11_slice(v).chips,
            "cube": CUBE_EDGE, "cube_chips": CUBE_EDGE**3, **_GIB_TEXT}


def _w11_eflops(v, dtype="fp8"):
    return _w11_slice(v).flops(dtype) / 1e18


def _w11_hbm_tb(v):
    return _w11_slice(v).hbm_bytes / 1e12


def _w11_hbm_gib_as_gb_tb(v):
    return _w11_slice(v).chips * get_chip(v["chip"]).hbm_bytes / GIB * GB / 1e12


def _w11_cubes(v):
    return _w11_slice(v).chips / CUBE_EDGE**3


def _w11_solution(v):
    s = _w11_slice(v)
    return (
        f"{v['topology']} = {s.chips:,} chips = {s.chips:,} / {CUBE_EDGE}³ = {_w11_cubes(v):g} "
        f"cubes of {CUBE_EDGE} × {CUBE_EDGE} × {CUBE_EDGE}.",
        f"fp8: {s.chips:,} × {v['fp8_text']} = {_w11_eflops(v):.4g} EFLOP/s.",
        f"HBM: {s.chips:,} × {v['hbm_gib']} GiB = {decimal_bytes(s.hbm_bytes)} (a GiB is 2³⁰ "
        "bytes).",
    )


W11 = problem(
    "hardware.w11", "An Ironwood pod",
    draws(derive=_w11_derive,
           chip=Choice(("TPU7x",), "chip"),
           shape=Choice(((16, 24, 24), (8, 16, 16), (16, 16, 16), (4, 8, 8), (8, 8, 16)),
                        "slice")),
    ("A {chip} (Ironwood) slice of shape {topology} is built from cubes of {cube} × "
     "{cube} × {cube} chips; each chip does {fp8_text} of dense fp8 and holds {hbm_gib} GiB of HBM. "
     "How many cubes is the slice, what is its fp8 peak, in EFLOP/s (10¹⁸), and how much "
     "HBM does it hold, in TB (10¹² bytes)?"),
    (Part("cubes", _w11_cubes, rel=0.01, slips=(
         Slip("a cube of 16", lambda v: _w11_slice(v).chips / CUBE_EDGE**2,
              "a cube is {cube} × {cube} × {cube} = {cube_chips} chips, not "
              "{cube} × {cube}."),
     ), unit="count", not_applicable=(
         NotApplicable("floor or ceil", "the slice is a whole number of cubes: nothing is "
                       "rounded"),)),
     "cubes of 4 × 4 × 4"),
    (Part("fp8_eflops", _w11_eflops, slips=(
         Slip("bf16", lambda v: _w11_eflops(v, dtype="bf16"),
              "that is the bf16 rate; fp8 runs twice as fast on this chip."),
         Slip("with sparsity", lambda v: 2 * _w11_eflops(v),
              "the chip's {fp8_text} is already the dense rate: no factor 2."),
     ), unit="FLOPs/s"),
     "fp8 peak, in EFLOP/s"),
    (Part("hbm_tb", _w11_hbm_tb, slips=(
         Slip("GiB as GB", _w11_hbm_gib_as_gb_tb,
              "a GiB is 2³⁰ bytes, {gib_pct} more than a GB: {hbm_gib} GiB per chip is more "
              "than {hbm_gib} GB.", ("GB read as GiB",)),
     ), unit="bytes", not_applicable=(
         NotApplicable("bf16 or fp32", "a slice's HBM capacity: no element size enters it"),)),
     "HBM, in TB"),
    solution=_w11_solution, worked="11")


# --------------------------------------------------------------------------- w10. NVL72 rack

#: The rack and the 8-GPU system it is set against: the same Blackwell GPUs' NVLink and NICs.
RACK, HGX = "GB200 NVL72", "B200"


def _w10_derive(v):
    rack, hgx = get_chip(RACK), get_chip(HGX)
    return {"bidi_text": format_bandwidth(2 * rack.interconnect_bandwidth_one_way),
            "nvlink_text": format_bandwidth(rack.interconnect_bandwidth_one_way),
            "hgx_nvlink_text": format_bandwidth(hgx.interconnect_bandwidth_one_way),
            "nic_text": format_bandwidth(hgx.nic_bandwidth_per_chip),
            "gpus": rack.chips_per_host, "per_node": hgx.chips_per_host,
            "nodes": rack.chips_per_host // hgx.chips_per_host,
            "a_kind": {"all_gather": "An AllGather",
                       "reduce_scatter": "A ReduceScatter"}[v["kind"]]}


def _w10_cost(v, chip, **kw):
    """As rings (the problem says so): the rack's 71 steps, the nodes' rail rings."""
    return collective_cost(v["kind"], v["V_gb"] * GB, get_chip(RACK).chips_per_host, chip,
                           algorithm="ring", **kw)


def _w10_rack_ms(v):
    return _w10_cost(v, RACK).time / MS


def _w10_nodes_ms(v):
    return _w10_cost(v, HGX).time / MS


def _w10_solution(v):
    rack, nodes = _w10_cost(v, RACK), _w10_cost(v, HGX)
    return (
        f"In the NVL72 rack every GPU reaches every other through the NVLink switches at "
        f"{v['nvlink_text']} one way: {rack.formula} = {format_seconds(rack.time)}.",
        f"In {v['nodes']} nodes of {v['per_node']}, the bytes that leave a node cross each "
        f"GPU's NIC at {v['nic_text']}: {nodes.formula} = {format_seconds(nodes.time)}, "
        f"{nodes.time / rack.time:.3g} times longer.",
    )


W10 = problem(
    "hardware.w10", "One NVLink domain of 72 against nodes of 8",
    draws(derive=_w10_derive,
           kind=Choice(("all_gather", "reduce_scatter"), "collective"),
           V_gb=Choice((4.0, 1.0, 2.0, 8.0, 0.5), "V", "GB")),
    ("{a_kind} over {gpus} Blackwell GPUs works on a {V_gb:g} GB array (the whole "
     "gathered array, or each GPU's unreduced input). In a GB200 NVL72 rack all {gpus} sit "
     "in one NVLink domain ({bidi_text} per GPU, \"bidirectional\"); as HGX B200 systems "
     "they sit in {nodes} nodes of {per_node}, with {hgx_nvlink_text} of NVLink per GPU "
     "one way inside a node and {nic_text} per GPU one way through its NIC between nodes. "
     "Price both as NCCL's rings (in the rack one ring of {gpus}, across nodes one ring "
     "per NIC rail; 1 µs per step). How long does it take in "
     "the rack, and in the {nodes} nodes, in ms?"),
    (Part("rack_ms", _w10_rack_ms, slips=(
         Slip("bidirectional", lambda v: _w10_cost(
             v, RACK, nvlink_bandwidth=2 * get_chip(RACK).interconnect_bandwidth_one_way
         ).time / MS,
              "{bidi_text} adds both directions; a GPU sends {nvlink_text} one way."),
     ), unit="s"),
     "in one NVL72 rack, in ms"),
    (Part("nodes_ms", _w10_nodes_ms, slips=(
         Slip("NVLink everywhere", distinct_from(_w10_nodes_ms, _w10_rack_ms),
              "that is the NVL72 rack: an HGX node's NVLink stops at {per_node} GPUs, and "
              "between nodes the data crosses the NICs."),
         Slip("one flat ring", distinct_from(
             _w10_nodes_ms, lambda v: _w10_cost(v, HGX, scheme="flat").time / MS),
              "NCCL does not run one ring paced by the NIC for every byte: it runs one ring "
              "per NIC rail, each carrying its share, while NVLink moves the rest."),
     ), unit="s"),
     "in 8-GPU nodes, in ms"),
    solution=_w10_solution, worked="10")


# --------------------------------------------------------------------------- w12. NVL72 floor

def _w12_derive(v):
    chip = get_chip(v["gpu"])
    b = bytes_per_element(v["dtype"])
    return {"b_text": bytes_text(b), "bw_text": format_bandwidth(chip.hbm_bandwidth),
            "hbm_text": decimal_bytes(chip.hbm_bytes), "gpus": chip.chips_per_host}


def _w12_bytes(v, b=None):
    return v["params_b"] * 1e9 * (bytes_per_element(v["dtype"]) if b is None else b)


def _w12_ms(v, n_chips=None, b=None):
    n_chips = get_chip(v["gpu"]).chips_per_host if n_chips is None else n_chips
    return weight_load_time(_w12_bytes(v, b), v["gpu"], n_chips=n_chips) / MS


def _w12_fewest(v, b=None):
    return fewest_chips(_w12_bytes(v, b), v["gpu"])


def _w12_solution(v):
    return (
        f"{v['params_b']:,} billion parameters × {v['b_text']} = {decimal_bytes(_w12_bytes(v))}.",
        f"Spread over {v['gpus']} GPUs, each reading its share at {v['bw_text']}: "
        f"{decimal_bytes(_w12_bytes(v))} / ({v['gpus']} × {v['bw_text']}) = "
        f"{format_seconds(_w12_ms(v) * MS)} per token, at most {1 / (_w12_ms(v) * MS):,.0f} "
        "tokens per second for one conversation.",
        f"To hold the weights at all: {decimal_bytes(_w12_bytes(v))} / {v['hbm_text']}, rounded "
        f"up: {_w12_fewest(v)} GPUs.",
    )


W12 = problem(
    "hardware.w12", "How fast can a rack speak?",
    draws(derive=_w12_derive,
           gpu=Choice(("GB200 NVL72", "GB300 NVL72"), "rack"),
           params_b=Choice((405, 671, 1000, 235), "parameters", "billion"),
           dtype=Choice(("bf16", "fp8", "fp4"), "weight type")),
    ("A model of {params_b:,} billion parameters, stored in {dtype} ({b_text} per "
     "parameter), is split evenly over the {gpus} GPUs of a {gpu} rack, "
     "{bw_text} of HBM bandwidth and {hbm_text} of HBM each. Counting only the weight "
     "reads, what is the lower bound on the time per token of one conversation, in ms? And "
     "how few of these GPUs could hold the weights at all (nothing else)?"),
    (Part("token_ms", _w12_ms, slips=(
         Slip("one GPU", lambda v: _w12_ms(v, n_chips=1),
              "each of the {gpus} GPUs reads its own share of the weights at the same time."),
         Slip("two bytes per parameter", distinct_from(_w12_ms,
                                                       lambda v: _w12_ms(v, b=2.0)),
              "the weights are {dtype}: {b_text} per parameter."),
     ), unit="s"),
     "time per token, in ms"),
    (Part("fewest_gpus", _w12_fewest, rel=0.01, slips=(
         Slip("two bytes per parameter", distinct_from(
             _w12_fewest, lambda v: _w12_fewest(v, b=2.0), rel=0.01),
              "the weights are {dtype}: {b_text} per parameter."),
     ), unit="count"),
     "fewest GPUs that hold the weights"),
    solution=_w12_solution, worked="12")


PROBLEMS: tuple[Problem, ...] = (
    # the worked problems, in the chapter's order
    SPARSITY, W2, W3, W4, W5, W6, PADDING, WRAPAROUND, DCN, W10, W11, W12,
    # the practice set's own
    HBM_SWEEP, TOKEN_BUDGET, GPU_ALLGATHER, ELEMENTWISE, PCIE, COST_ANALYSIS)

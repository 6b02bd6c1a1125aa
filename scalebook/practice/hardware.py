"""Practice problems of the chapter book/hardware.md (see :mod:`scalebook.practice.problem`).

The chapter has no worked problems; this is its practice set, one problem per idea: padding to
the systolic array, reading all of HBM, the per-token latency floor, datasheet FLOPs "with
sparsity" and the critical intensity and batch, wraparound on a TPU axis, a GPU AllGather inside
and across nodes, vector-unit (elementwise) work, loading weights over PCIe, the DCN step, and
what a compiler's cost analysis counts. None repeats a graded problem of hw2.

Chip figures come from the catalog (``scalebook.hardware``) and are stated in the text where the
answer needs them. Sizes are in GB or MB (10⁹, 10⁶ bytes); times in ms or µs as asked.
"""

from __future__ import annotations


from ..homework.alternatives import NO_LINK, ONE_PASS
from ..collectives import all_gather, all_gather_first_cut, collective_cost, has_wraparound
from ..hardware import bytes_per_element, get_chip
from ..homework.parts import PINNED, Convention, Part, Slip, distinct_from, merged
from ..roofline import (critical_batch_size, critical_intensity, elementwise_cost,
                        elementwise_time, matmul_cost, mxu_useful_fraction,
                        vector_critical_intensity, weight_load_time)
from ..units import format_bandwidth, format_count, format_flops, format_seconds
from ..variants import Choice
from .common import GB, MB, MS, US, bytes_text, decimal_bytes, percent_slip, spec
from .problem import Problem










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


PADDING = Problem(
    id="hardware.padding",
    title="The padding tax of a systolic array",
    spec=spec("hardware.padding",
               well_posed=lambda v: _pad_pct(v) < 97,
               chip=Choice(("TPU v5e", "TPU v6e", "TPU v5p"), "chip"),
               D=Choice((200, 300, 1000, 600, 1500), "D"),
               F=Choice((200, 700, 2500, 900, 4096), "F")),
    text=("A layer multiplies activations by a weight W[D, F] with D = {D:,} and F = {F:,} on a "
          "{chip}. The MXU pads the contracting and output dimensions up to a multiple of its "
          "systolic array's width (the batch streams through unpadded). What share of the MXU's "
          "work is useful, in %?"),
    parts=(
        Part("useful_pct", _pad_pct, rel=0.02, slips=(
            Slip("one dimension padded", distinct_from(
                _pad_pct, lambda v: 100.0 * mxu_useful_fraction(v["chip"], v["D"]), 0.02),
                 "the weight block fills the array in both directions: pad D and F, and "
                 "multiply the two useful shares."),
            Slip("the other MXU width", distinct_from(_pad_pct, _pad_other_tile_pct, 0.02),
                 "check the {chip}'s array width: 128 × 128 on most TPUs, 256 × 256 on a v6e."),
            percent_slip(_pad_pct),
        ), unit="fraction"),
    ),
    labels={"useful_pct": "useful share of the MXU's work, in %"},
    solution=_pad_solution,
)


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


HBM_SWEEP = Problem(
    id="hardware.hbm_sweep",
    title="A step that reads most of HBM",
    spec=spec("hardware.hbm_sweep", derive=_sweep_derive,
               chip=Choice(("H100", "TPU v5e", "H200", "B200", "TPU v5p", "A100", "TPU v6e"),
                           "chip"),
               fill_pct=Choice((90, 75, 60, 50), "share of HBM", "%")),
    text=("A decode step on one {chip} ({hbm_gb:g} GB of HBM at {bw_text}) reads its weights "
          "and KV cache, which fill {fill_pct}% of the HBM, once each. What is the lower bound "
          "on the step's time, in ms?"),
    parts=(
        Part("step_ms", _sweep_ms, slips=(
            Slip("the whole HBM", lambda v: _sweep_ms(v) * 100 / v["fill_pct"],
                 "the step reads only what is stored, {fill_pct}% of the HBM, not all of it."),
            Slip("seconds", lambda v: _sweep_ms(v) * MS,
                 "the answer is asked in ms (1 s = 1,000 ms)."),
        ), unit="s"),
    ),
    labels={"step_ms": "lower bound on the step time, in ms"},
    solution=_sweep_solution,
)


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


TOKEN_BUDGET = Problem(
    id="hardware.token_budget",
    title="How big a model can answer this fast?",
    spec=spec("hardware.token_budget", derive=_budget_derive,
               gpu=Choice(("H100", "H200", "B200", "A100"), "GPU"),
               rate=Choice((50, 20, 100, 30), "tokens per second"),
               dtype=Choice(("bf16", "int8", "int4"), "weight type")),
    text=("You want one conversation to get {rate} tokens per second from a model whose {dtype} "
          "weights ({b_text} per parameter) are split evenly over one node of 8 {gpu}s "
          "({bw_text} of HBM bandwidth each). Counting only the weight reads, how many "
          "parameters, in billions, can the model have at most?"),
    parts=(
        Part("max_params_b", _budget_params_b, slips=(
            Slip("one GPU", lambda v: _budget_params_b(v, n_chips=1),
                 "the weights are split over all 8 GPUs, and each reads its own share at the "
                 "same time: the node reads 8 times faster than one GPU."),
            Slip("two bytes per parameter", distinct_from(
                _budget_params_b, lambda v: _budget_params_b(v, b=2.0)),
                 "the weights are {dtype}: {b_text} per parameter, not bf16's 2."),
        ), unit="params"),
    ),
    labels={"max_params_b": "largest model, in billions of parameters"},
    solution=_budget_solution,
)


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


SPARSITY = Problem(
    id="hardware.sparsity",
    title="Reading a datasheet: dense, not sparse",
    spec=spec("hardware.sparsity", derive=_sparse_derive,
               case=Choice(tuple(SPARSE_CASES), "chip and number type")),
    text=("The {chip} datasheet lists {sparse_text} of {dtype} tensor-core throughput \"with "
          "sparsity\" and {bw_text} of HBM bandwidth. For dense matmuls in {dtype}, what is its "
          "critical arithmetic intensity, in FLOPs (or integer OPs) per byte, and above how many tokens per "
          "matmul is X[B, D] · W[D, F] compute-bound when the weights are {dtype} too "
          "(B much smaller than D and F)?"),
    parts=(
        Part("critical_intensity", _sparse_intensity, slips=(
            Slip("with sparsity", lambda v: 2 * _sparse_intensity(v),
                 "a figure 'with sparsity' is twice the dense rate: halve it first."),
        ), unit="FLOPs/byte"),
        Part("critical_batch", _sparse_batch, slips=(
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
    ),
    labels={"critical_intensity": "critical intensity, in FLOPs/byte",
            "critical_batch": "critical batch, in tokens"},
    solution=_sparse_solution,
)


# --------------------------------------------------------------------------- 5. wraparound

def _wrap(v) -> bool:
    return has_wraparound(v["chip"], v["N"])


def _wrap_ms(v, wraparound=None):
    ring = _wrap(v) if wraparound is None else wraparound
    return all_gather(v["V_gb"] * GB, v["N"], v["chip"], wraparound=ring).time / MS


def _wrap_first_cut_ms(v):
    return all_gather_first_cut(v["V_gb"] * GB, v["N"], v["chip"], wraparound=_wrap(v)).time / MS


def _wrap_well_posed(v):
    chip = get_chip(v["chip"])
    return v["N"] in (4, 8, 16) or chip.wraparound_rule == "multiple-of-4"


def _wrap_derive(v):
    return {"link_text": format_bandwidth(get_chip(v["chip"]).link_bandwidth_one_way)}


def _wrap_solution(v):
    cost = all_gather(v["V_gb"] * GB, v["N"], v["chip"], wraparound=_wrap(v))
    rule = ("an axis that is a multiple of 4" if get_chip(v["chip"]).wraparound_rule
            == "multiple-of-4" else "only an axis that spans the full 16 chips")
    kind = "a ring: data flows both ways round" if _wrap(v) else "a line: no wraparound"
    return (
        f"On a {v['chip']} {rule} has wraparound, so this axis of {v['N']} is {kind}.",
        f"Bandwidth term {cost.formula} = {format_seconds(cost.bandwidth_time)}; latency "
        f"{format_seconds(cost.latency_time)}.",
        f"Total {format_seconds(cost.time)}.",
    )


def _wrap_slip(actual: bool, hint: str) -> Slip:
    """The time under the other topology, where this axis is ``actual``."""
    def value(v):
        return _wrap_ms(v, wraparound=not actual) if _wrap(v) == actual else float("nan")
    return Slip("as a line" if actual else "as a ring", value, hint)


WRAPAROUND = Problem(
    id="hardware.wraparound",
    title="Does this axis have wraparound?",
    spec=spec("hardware.wraparound", derive=_wrap_derive, well_posed=_wrap_well_posed,
               chip=Choice(("TPU v5e", "TPU v6e", "TPU v5p", "TPU v4p"), "chip"),
               N=Choice((16, 8, 4, 12), "N", "chips"),
               V_gb=Choice((1.0, 0.5, 2.0, 0.25), "V", "GB")),
    text=("An AllGather over one axis of {N} {chip} chips collects a {V_gb:g} GB array (the whole "
          "gathered array), {link_text} per ICI link one way, 1 µs per hop. Whether the axis has "
          "wraparound follows the chip's rule in the chapter. How long does it take, in ms, by "
          "the chapter's model?"),
    parts=(
        Part("allgather_ms", _wrap_ms, conventions=(
            Convention("first cut", _wrap_first_cut_ms),
        ), slips=(
            _wrap_slip(True, "this axis of a {chip} has wraparound: it is a ring, and the "
                             "shards travel both ways round it."),
            _wrap_slip(False, "this axis of a {chip} has no wraparound: it is a line, so the "
                              "data streams one way past the end chips, V·(N−1)/N / W."),
        ), unit="s", not_applicable=(
        ONE_PASS,)),
    ),
    labels={"allgather_ms": "AllGather time, in ms"},
    solution=_wrap_solution,
)


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


GPU_ALLGATHER = Problem(
    id="hardware.gpu_allgather",
    title="An AllGather inside a node and across nodes",
    spec=spec("hardware.gpu_allgather", derive=_gag_derive,
               gpu=Choice(("H100", "B200", "A100", "H200"), "GPU"),
               V_gb=Choice((1.0, 0.5, 2.0, 4.0), "V", "GB"),
               nodes=Choice((8, 2, 4, 16), "nodes")),
    text=("An AllGather collects a {V_gb:g} GB array over {gpu} GPUs (NVLink: {nvlink_text} per "
          "GPU one way through the node's switches; network: {nic_text} per GPU one way through "
          "its own NIC; 1 µs per step). How long does it take, in ms, over the 8 GPUs of one "
          "node, and over {n_gpus} GPUs in {nodes} nodes, priced as NCCL runs it (one ring per "
          "NIC rail, the chapter's model)?"),
    parts=(
        Part("node_ms", _gag_node_ms, slips=(
            Slip("one NVLink port", lambda v: _gag_ms(
                v, 8, nvlink_bandwidth=get_chip(v["gpu"]).link_bandwidth_one_way),
                 "every NVLink port of a GPU goes to a switch and they all carry data at once: "
                 "use the GPU's total NVLink bandwidth, not one port's."),
        ), unit="s"),
        Part("cluster_ms", _gag_cluster_ms, slips=(
            Slip("NVLink everywhere", lambda v: _gag_ms(v, 8 * v["nodes"],
                                                        gpus_per_node=8 * v["nodes"]),
                 "NVLink stops at the node: between nodes the data crosses each GPU's NIC, "
                 "about 9 times slower."),
            Slip("one flat ring", lambda v: _gag_ms(v, 8 * v["nodes"], scheme="flat"),
                 "NCCL does not run one ring paced by the slowest link for every byte: it runs "
                 "one ring per NIC rail, each carrying its share, while NVLink moves the rest."),
        ), unit="s"),
    ),
    labels={"node_ms": "one node of 8, in ms", "cluster_ms": "across the nodes, in ms"},
    solution=_gag_solution,
)


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


ELEMENTWISE = Problem(
    id="hardware.elementwise",
    title="Elementwise work on the vector units",
    spec=spec("hardware.elementwise", derive=_ew_derive,
               gpu=Choice(("A100", "H100", "V100", "H200"), "GPU"),
               B=Choice((8192, 4096, 16384), "B"),
               D=Choice((8192, 4096, 12288), "D")),
    text=("A residual add out = x + y runs on bf16[{B:,}, {D:,}] arrays on one {gpu} (HBM: "
          "{bw_text}; CUDA cores: {vec_text} counting one FLOP per add or multiply); x and y are "
          "read from HBM and out is written there. What is the lower bound on its time, in µs? "
          "And how many FLOPs per element could an elementwise op on the same three arrays do "
          "before the CUDA cores, not HBM, set its time (one FLOP per add or multiply)?"),
    parts=(
        Part("add_us", _ew_us, slips=(
            Slip("reads only", lambda v: _ew_us(v) * 2 / 3,
                 "the output is written back to HBM too: three arrays move, not two."),
            Slip("fp32", lambda v: _ew_us(v, dtype="fp32"),
                 "the arrays are bf16, 2 bytes per element; the CUDA cores compute in fp32 but "
                 "HBM moves bf16."),
        ), unit="s"),
        Part("flops_per_element", _ew_flops, conventions=(
            Convention("an FMA as two FLOPs", lambda v: _ew_flops(v, fma_flops=2),
                       verdict=PINNED, phrase="one FLOP per add or multiply",
                       hint="the problem counts one FLOP per add or multiply, the CUDA cores' rate "
                            "for plain instructions; NVIDIA's datasheet counts a fused "
                            "multiply-add as two."),
        ), slips=(
            Slip("per byte", lambda v: vector_critical_intensity(v["gpu"]),
                 "that is FLOPs per byte; each element moves 6 bytes (two bf16 reads, one "
                 "write)."),
        ), unit="FLOPs"),
    ),
    labels={"add_us": "residual add, in µs",
            "flops_per_element": "FLOPs per element at the crossover"},
    solution=_ew_solution,
)


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


PCIE = Problem(
    id="hardware.pcie",
    title="Loading weights from the host",
    spec=spec("hardware.pcie", derive=_pcie_derive,
               well_posed=lambda v: _pcie_bytes(v) <= 0.9 * v["N"] * get_chip(v["chip"]).hbm_bytes,
               chip=Choice(("TPU v5e", "TPU v6e", "TPU v5p", "H100", "A100"), "chip"),
               params_b=Choice((70, 8, 13, 34), "parameters", "billion"),
               N=Choice((16, 8, 4, 32), "chips")),
    text=("The bf16 weights of a {params_b}-billion-parameter model are copied from host memory "
          "into the HBM of {N} {chip} chips, split evenly, each chip over its own PCIe link "
          "({pcie_text} host to chip) at the same time. How long does the copy take at least, "
          "in s, and how many times longer is that than reading the same weights once out of "
          "HBM ({bw_text} per chip)?"),
    parts=(
        Part("copy_s", _pcie_s, slips=(
            Slip("one link", lambda v: _pcie_s(v, n_chips=1),
                 "each of the {N} chips receives its own share over its own PCIe link, all at "
                 "once."),
            Slip("HBM bandwidth", lambda v: weight_load_time(_pcie_bytes(v), v["chip"],
                                                            n_chips=v["N"]),
                 "the bytes come from the host over PCIe, not out of HBM: use the PCIe "
                 "bandwidth."),
        ), unit="s", not_applicable=(
        ONE_PASS,)),
        Part("pcie_over_hbm", _pcie_ratio, slips=(
            Slip("upside down", lambda v: 1 / _pcie_ratio(v),
                 "the copy over PCIe is the slower one: the ratio is above 1."),
        ), unit="ratio"),
    ),
    labels={"copy_s": "copy over PCIe, in s", "pcie_over_hbm": "PCIe time / HBM time"},
    solution=_pcie_solution,
)


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


DCN = Problem(
    id="hardware.dcn",
    title="Leaving the slice",
    spec=spec("hardware.dcn", derive=_dcn_derive,
               chip=Choice(("TPU v5e", "TPU v5p", "TPU v6e", "TPU v4p"), "chip"),
               V_mb=Choice((100.0, 500.0, 1000.0, 50.0, 250.0), "V", "MB")),
    text=("Every chip of a {chip} slice sends {V_mb:g} MB (10⁶ bytes) to its counterpart in "
          "another slice, all at once, over the data-centre network: each host moves "
          "{host_text} each way, shared by its {per_host} chips. How long does that take, in ms? "
          "And how long does sending the same {V_mb:g} MB to an ICI neighbour take, over one "
          "link ({link_text} one way), in ms? (1 µs of latency each.)"),
    parts=(
        Part("dcn_ms", _dcn_ms, slips=(
            Slip("the whole host's bandwidth", lambda v: _dcn_ms(
                v, bandwidth=get_chip(v["chip"]).host_network_bandwidth),
                 "all {per_host} chips of a host send at once and share its network: each gets "
                 "1/{per_host} of it."),
        ), unit="s"),
        Part("ici_ms", _ici_ms, slips=(
            Slip("both directions", lambda v: _ici_ms(
                v, bandwidth=2 * get_chip(v["chip"]).link_bandwidth_one_way),
                 "a send to one neighbour uses one link in one direction: the one-way figure."),
        ), unit="s"),
    ),
    labels={"dcn_ms": "over the DCN, in ms", "ici_ms": "to an ICI neighbour, in ms"},
    solution=_dcn_solution,
)


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


COST_ANALYSIS = Problem(
    id="hardware.cost_analysis",
    title="What a compiler's cost analysis counts",
    spec=spec("hardware.cost_analysis",
               dtype=Choice(("bf16", "fp32"), "number type"),
               B=Choice((256, 512, 1024, 4096), "B"),
               D=Choice((1024, 4096, 8192), "D"),
               F=Choice((2048, 8192, 16384), "F")),
    text=("XLA's cost_analysis of X[B, D] · W[D, F] → Out[B, F] with B = {B:,}, D = {D:,}, "
          "F = {F:,}, all in {dtype}, on a chip where {dtype} is native, counts every input byte "
          "read once and the output written once. How many MB (10⁶ bytes) does it count, and "
          "what is the matmul's arithmetic intensity, in FLOPs per byte?"),
    parts=(
        Part("bytes_mb", _ca_mb, slips=(
            Slip("no output", lambda v: _ca_cost(v).bytes_read / MB,
                 "the output Out[B, F] is written to memory too: count its bytes."),
            Slip("2 bytes per element", distinct_from(
                _ca_mb, lambda v: matmul_cost(v["B"], v["D"], v["F"]).total_bytes / MB),
                 "the arrays are {dtype}: 4 bytes per element for fp32, 2 for bf16."),
        ), unit="bytes"),
        Part("intensity", _ca_intensity, slips=(
            Slip("one FLOP per multiply-add", lambda v: _ca_intensity(v) / 2,
                 "a multiply-add is 2 FLOPs: the matmul does 2·B·D·F of them."),
            Slip("no output", lambda v: _ca_cost(v).flops / _ca_cost(v).bytes_read,
                 "the output Out[B, F] is written to memory too: count its bytes."),
        ), unit="FLOPs/byte"),
    ),
    labels={"bytes_mb": "bytes accessed, in MB", "intensity": "intensity, in FLOPs/byte"},
    solution=_ca_solution,
)


PROBLEMS: tuple[Problem, ...] = (PADDING, HBM_SWEEP, TOKEN_BUDGET, SPARSITY, WRAPAROUND,
                                 GPU_ALLGATHER, ELEMENTWISE, PCIE, DCN, COST_ANALYSIS)

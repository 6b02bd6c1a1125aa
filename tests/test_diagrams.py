"""The book's figures (scalebook.diagrams): drawn from the solver's objects, with alt text whose
numbers are the solver's, carried inside the PNG."""

from __future__ import annotations

import re

import pytest

from scalebook import collectives, get_chip, roofline, topology, torus
from scalebook.diagrams import collectives as C
from scalebook.diagrams import hardware as H
from scalebook.diagrams import roofline as R
from scalebook.diagrams import sharding as S
from scalebook.picture import Picture, png_description
from scalebook.sharding import Mesh, plan_matmul
from scalebook.units import format_bandwidth, format_integer, format_seconds

CASES = {1: ("A[I_X, J]", "B[J, K_Y]"), 2: ("A[I_X, J_Y]", "B[J, K]"),
         3: ("A[I, J_X]", "B[J_X, K]"), 4: ("A[I_X, J]", "B[J, K_X]")}


def _check(picture: Picture) -> str:
    assert isinstance(picture, Picture)
    png = picture._repr_png_()
    assert png_description(png) == picture.alt  # the PNG carries its words
    from io import BytesIO

    from PIL import Image

    assert Image.open(BytesIO(png)).mode == "P"  # a palette: a third of RGBA's bytes
    assert not re.search(r"\bnan\b|\bNone\b|10\^|\de[+-]\d", picture.alt), picture.alt
    return picture.alt


def test_roofline_plot_names_each_ridge_and_where_kernels_sit():
    alt = _check(R.roofline_plot(["TPU v5e", "H100"], [("dot", 0.5), ("big", 1000.0)]))
    for chip in ("TPU v5e", "H100"):
        assert f"{roofline.critical_intensity(chip):,.0f} FLOPs/byte" in alt
    assert "dot at 0.5 FLOPs/byte" in alt and "memory-bound" in alt and "compute-bound" in alt


def test_batch_rule_figure_gives_the_exact_first_compute_bound_batch():
    alt = _check(R.times_against_batch("TPU v5e", 8192, 8192))
    batches = range(1, 4096)
    exact = next(b for b in batches if roofline.matmul_cost(b, 8192, 8192).intensity
                 > roofline.critical_intensity("TPU v5e"))
    assert f"B = {exact:,}" in alt
    assert f"≈ {roofline.critical_batch_size('TPU v5e'):,.0f} tokens" in alt


def test_intensity_figure_finds_the_smallest_compute_bound_square_matmul():
    alt = _check(R.intensity_against_size("TPU v5e"))
    first = next(n for n in range(1, 4096) if roofline.matmul_cost(n, n, n).intensity
                 > roofline.critical_intensity("TPU v5e"))
    assert f"from N = {first:,}" in alt


def test_overlap_timeline_states_both_bounds():
    alt = _check(R.overlap_timeline(40e-6, 160e-6))
    assert format_seconds(160e-6) in alt and format_seconds(200e-6) in alt


def test_measured_roofline_reports_the_fraction_of_peak():
    alt = _check(R.measured_roofline([10, 100], [1e11, 8e11], ["B=1", "B=8"], 1e12, 1e11))
    assert "B=8, reaches 80% of the measured peak" in alt


def test_hardware_figures_quote_the_catalog():
    h100 = get_chip("H100")
    alt = _check(H.hbm_read_time(["H100", "TPU v5e"]))
    assert f"{h100.hbm_bytes / h100.hbm_bandwidth * 1e3:.1f} ms" in alt
    node = topology.gpu_node(h100)
    alt = _check(H.gpu_node_diagram(h100))
    assert format_bandwidth(node.nvlink_bandwidth_per_gpu) in alt
    assert format_bandwidth(node.scale_out_bandwidth_per_gpu) in alt
    alt = _check(H.padding_tax("TPU v5e"))
    assert f"{100 * roofline.mxu_useful_fraction('TPU v5e', 129, 129):.3g}%" in alt
    alt = _check(H.bandwidth_ladder({"X": {"HBM": 2e12, "PCIe": 5e10}}))
    assert "40 times" in alt
    alt = _check(H.scale_up_domains([("H100 node", 8, 4.5e11, 5e10)]))
    assert "9 times less" in alt


def test_torus_slices_follow_the_wraparound_rule():
    alt = _check(H.torus_slices("TPU v5e", [(4, 4), (16, 4)]))
    for shape in ((4, 4), (16, 4)):
        kinds = ["ring" if w else "line" for w in torus.axis_wraps("TPU v5e", shape)]
        assert f"the {shape[0]}-chip axis is a {kinds[0]}, the {shape[1]}-chip axis a {kinds[1]}" in alt
    assert "ring" in alt and "line" in alt  # the two shapes differ


def test_block_index_is_major_axis_first():
    mesh = Mesh({"X": 2, "Y": 4})
    sharding = S.parse_sharding("A[I_XY, J]")
    assert S.block_index(sharding, mesh, {"X": 1, "Y": 2}) == (6, 0)
    assert S.operand_grid_labels("A[I_X, J_Y]", mesh)[:5] == ["0,0", "0,1", "0,2", "0,3", "1,0"]


def test_array_on_mesh_counts_blocks_and_copies():
    alt = _check(S.array_on_mesh("A[I_X, J]", Mesh({"X": 4, "Y": 8})))
    assert "4 blocks, each stored 8 times (replicated over Y)" in alt
    assert "1/4 of it" in alt
    alt = _check(S.array_on_mesh("A[I_X, J_Y]", Mesh({"X": 2, "Y": 4})))
    assert "each stored 1 time," in alt and "(1, 3) holds (1, 3)" in alt
    with pytest.raises(ValueError):
        S.array_on_mesh("A[I_X, J, K]", Mesh({"X": 2, "Y": 4}))


def test_matmul_cases_say_what_the_planner_does():
    mesh = Mesh({"X": 4, "Y": 8})
    alt = _check(S.matmul_cases(CASES, mesh))
    for case, (lhs, rhs) in CASES.items():
        plan = plan_matmul(lhs, rhs, mesh, contracting="J")
        assert f"case {plan.case}, {plan.lhs} times {plan.rhs}" in alt
        assert f"output {plan.output}" in alt
    assert "AllReduce over X" in alt and "no communication" in alt


@pytest.mark.parametrize("n", [2, 5, 8])
def test_ring_holdings(n):
    gather = C.ring_holdings(n, "AllGather")
    assert [len(h) for h in gather[0]] == [1] * n
    assert all(sorted(h) == list(range(n)) for h in gather[-1])
    assert len(gather) == n // 2 + 1
    scatter = C.ring_holdings(n, "ReduceScatter")
    assert len(scatter) == n and all(len(h) == n for h in scatter[-1])
    assert all(len(h) == s + 1 for s, step in enumerate(scatter) for h in step)
    with pytest.raises(ValueError):
        C.ring_holdings(n, "AllToAll")


def test_ring_and_all_to_all_pictures_describe_their_steps():
    assert "after 4 steps every chip holds all 8" in _check(C.ring_steps(8))
    assert "after 7 steps" in _check(C.ring_steps(8, "ReduceScatter"))
    assert "sends one block to each of the other 3" in _check(C.all_to_all_blocks(4))


def test_torus_all_gather_quotes_the_solver_times():
    v5p = get_chip("TPU v5p")
    alt = _check(C.torus_all_gather(128 * 2**20, (4, 4), v5p))
    both = collectives.collective_cost("AllGather", 128 * 2**20, [4, 4], v5p)
    assert format_seconds(both.time) in alt


def test_time_against_size_marks_the_crossover():
    import numpy as np

    sizes = np.geomspace(2**10, 2**32, 50)
    cost = collectives.all_gather(sizes, 16, "TPU v5p")
    alt = _check(C.time_against_size([("AG", cost, "#000000", "-")], sizes,
                                     crossover=("the AG", 1e6, cost)))
    assert "V* = " in alt and format_seconds(float(cost.time[0])) in alt
    assert format_integer(16) == "16"


# --------------------------------------------------------------------------- Parts 4-7 (ready
# for the chapters; not inserted yet)

def test_who_holds_what_follows_each_strategys_sharding():
    from scalebook.diagrams import parallelism as P

    alt = _check(P.who_holds_what(4))
    assert "DP: each device holds batch 1/4, weights all and optimizer state all" in alt
    assert "FSDP: each device holds batch 1/4, weights 1/4 and optimizer state 1/4" in alt
    assert "TP: each device holds batch all, weights 1/4" in alt


@pytest.mark.parametrize("schedule", ["GPipe", "1F1B"])
def test_pipeline_schedule_states_the_solvers_bubble(schedule):
    from scalebook import parallelism
    from scalebook.diagrams import parallelism as P

    alt = _check(P.pipeline_schedule(schedule, 4, 8))
    assert f"{float(parallelism.pipeline_bubble_fraction(4, 8)):.0%}" in alt and "3/11" in alt


def test_memory_figures_sum_by_kind_and_find_the_largest_batch():
    from scalebook import inference, training, transformer
    from scalebook.diagrams import memory as M
    from scalebook.units import format_bytes

    fp = training.training_memory(transformer.llama3_70b())
    alt = _check(M.training_memory_stack({"70B": fp}, "H100"))
    assert format_bytes(fp.moments) in alt and "does not fit" in alt
    cfg, h100 = transformer.llama3_70b(), get_chip("H100")
    alt = _check(M.kv_cache_fill(cfg, h100, n_chips=8, context=4096))
    weights = inference.weight_bytes(cfg) / 8
    per_seq = inference.kv_bytes_per_token(cfg) * 4096 / 8
    assert f"B = {int((h100.hbm_bytes - weights) // per_seq):,} sequences" in alt


def test_moe_dispatch_counts_remote_tokens_and_overflow():
    from scalebook.diagrams import experts as E

    routes = [[0, 1], [0, 2], [0, 3], [0, 1]]  # expert 0 gets every token
    alt = _check(E.moe_dispatch(routes, 2, 4, capacity_factor=1.0))
    assert "expert 0 overflows" in alt
    # tokens 0-1 start on device 0 (experts 0-1), tokens 2-3 on device 1 (experts 2-3)
    assert "device 0 sends 1 and receives 3; device 1 sends 3 and receives 1" in alt
    with pytest.raises(ValueError):
        E.moe_dispatch(routes, 3, 4)


def test_ring_vs_zigzag_matches_the_schedule():
    from scalebook import long_context
    from scalebook.diagrams import long_context as L

    alt = _check(L.ring_vs_zigzag(4))
    c = long_context.causal_ring_schedule(4)
    assert f"{c.step_time:g} blocks against an ideal of {c.ideal:g}" in alt
    assert "1.00 times the ideal" in alt


def test_training_memory_stack_takes_a_plans_per_chip_memory():
    from scalebook import training, transformer
    from scalebook.diagrams import memory as M
    from scalebook.units import format_bytes

    plans = {s: training.plan_training(transformer.llama3_70b(),
                                       training.TrainingLayout(dp=256, zero_stage=s, remat="full"),
                                       "TPU v5p", global_batch=256, seq_len=8192).memory
             for s in (0, 3)}
    alt = _check(M.training_memory_stack({f"ZeRO-{s}": m for s, m in plans.items()}, "TPU v5p"))
    assert f"ZeRO-3: weights {format_bytes(plans[3].weights)}" in alt
    assert f"optimizer {format_bytes(plans[0].optimizer)}" in alt and "does not fit" in alt


def test_comms_over_compute_finds_where_dp_hides_its_traffic():
    import numpy as np

    from scalebook import parallelism as par, transformer
    from scalebook.diagrams import parallelism as P

    cfg = transformer.llama3_70b()
    mlp = par.MLPStack(d_model=cfg.d_model, d_ff=cfg.d_ff, n_layers=cfg.n_layers)
    tokens = np.array([64.0, 1024.0, 16384.0])
    alt = _check(P.comms_over_compute(mlp, {"DP": par.Layout(data=256),
                                            "FSDP 16 × TP 16": par.Layout(data=16, tensor=16,
                                                                          shard_params=True)},
                                      "TPU v5p", tokens))
    # DP's ratio falls as 1/(B/N): below 1 only at the sampled 16,384; TP 16 never
    assert "DP from" in alt and "below 1 from about 16,384 tokens per chip" in alt
    assert "FSDP 16 × TP 16 from" in alt and "never hides it" in alt


def test_transformer_cost_figures_quote_the_solver():
    import numpy as np

    from scalebook import scaling_laws, training, transformer
    from scalebook.diagrams import transformer_costs as T

    l8 = transformer.llama3_8b()
    alt = _check(T.parameter_breakdown({"8B": l8}))
    assert f"of {format_integer(transformer.param_count(l8).total)}" in alt
    alt = _check(T.attention_share({"8B": l8}, np.geomspace(512, 2 ** 20, 20), mark=8192))
    assert format_integer(round(transformer.attention_crossover_context(l8))) in alt
    opt = scaling_laws.loss_optimal(1e24)
    alt = _check(T.isoflop_loss(1e24))
    assert f"lowest at {float(opt.params) / 1e9:.0f} billion" in alt and "10²⁴" in alt
    plan = training.plan_training(transformer.llama3_70b(),
                                  training.TrainingLayout(fsdp=512, tp=4, remat="full"),
                                  "TPU v5p", global_batch=2048, seq_len=8192)
    alt = _check(T.step_time_stack({"FSDP × TP": plan}))
    assert f"step {format_seconds(plan.step_time.total)}, MFU {plan.mfu:.0%}" in alt


def test_decode_figures_quote_the_steps():
    from scalebook import inference, transformer
    from scalebook.diagrams import decode as Dc

    cfg = transformer.llama3_8b()
    steps = inference.latency_throughput(cfg, "H100", batches=[1, 64, 512], context_len=1024)
    alt = _check(Dc.step_time_against_batch({1024: steps}, critical_batch=295, title="8B"))
    assert f"{format_seconds(steps[0].time)} at B = 1" in alt and "B* = 295" in alt
    alt = _check(Dc.latency_against_throughput({"8B": steps}, title="8B"))
    assert f"to B = 512 where HBM is full, {format_seconds(steps[-1].time)}" in alt
    tp = {n: inference.decode_step(cfg, "H100", batch=1, context_len=4096, n_chips=n)
          for n in (1, 8)}
    alt = _check(Dc.step_by_chips(tp, title="8B"))
    assert "N = 1: memory" in alt and "AllReduces none" in alt
    assert f"AllReduces {format_seconds(tp[8].t_comm)}" in alt
    alt = _check(Dc.measured_decode(steps, [(1, 0.01), (64, 0.02)], critical_batch=float("inf"),
                                    knee=float("nan"), title="tiny"))
    assert "Critical batch none" in alt and "B = 64: 20 ms" in alt


def test_expert_figures_quote_the_solver():
    import numpy as np

    from scalebook import moe
    from scalebook.diagrams import experts as E

    ds = moe.deepseek_v3()
    dense = moe.MoEConfig(base=ds.base, n_experts=ds.top_k, top_k=ds.top_k, d_expert=ds.d_expert)
    alt = _check(E.moe_roofline(ds, dense, "H100", np.geomspace(1, 2 ** 17, 20)))
    assert f"about {format_integer(round(moe.moe_critical_batch(get_chip('H100'), 256, 8)))}" in alt
    cross = moe.ep_fsdp_crossover_tokens(ds.n_experts, ds.d_expert, ds.top_k)
    alt = _check(E.expert_layouts(ds, "H100", n_chips=8, tokens_per_chip=[64, 4096],
                                  crossover=cross))
    assert f"about {format_integer(round(cross))} tokens per chip" in alt
    alt = _check(E.drops_against_capacity(4096, 64, 2, np.linspace(1, 2, 11)))
    assert f"{moe.expected_dropped_fraction(4096, 64, 2, 1.0):.2%} dropped" in alt

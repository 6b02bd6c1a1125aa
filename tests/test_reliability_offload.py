"""Failures at scale (scalebook.reliability), DP bucketing (scalebook.bucketing), offload and
compressed communication (scalebook.offload)."""

import math

import pytest

from scalebook.bucketing import accumulation_exposed, bucket_timeline
from scalebook.collectives import collective_cost
from scalebook.hardware import get_chip
from scalebook.offload import (
    activation_offload_time, collective_time_in, optimizer_offload, zero_cross_node_bytes,
)
from scalebook.reliability import (
    SECONDS_PER_DAY, checkpoint_bytes, checkpoint_plan, goodput, job_mtbf,
    mtbf_from_interruptions, young_interval,
)
from scalebook.training import BF16_ADAM


# --------------------------------------------------------------------------- reliability

def test_checkpoint_is_weights_plus_optimizer_not_gradients():
    assert checkpoint_bytes(405e9) == pytest.approx(405e9 * 14)
    assert checkpoint_bytes(1e9, BF16_ADAM) < checkpoint_bytes(1e9)


def test_llama3_interruption_rate_is_one_every_three_hours():
    M = mtbf_from_interruptions(419, 54 * SECONDS_PER_DAY)
    assert M / 3600 == pytest.approx(3.09, abs=0.01)
    # per-GPU MTBF implied, then back to the job
    assert job_mtbf(M * 16384, 16384) == pytest.approx(M)


def test_young_interval_maximises_first_order_goodput():
    delta, M, R = 30.0, 3 * 3600.0, 600.0
    tau = young_interval(delta, M)
    assert tau == pytest.approx(math.sqrt(2 * delta * M))
    best = goodput(tau, delta, M, R)
    for other in (tau / 3, tau / 1.5, tau * 1.5, tau * 3):
        assert goodput(other, delta, M, R) < best


def test_goodput_falls_with_restart_time_and_is_clipped():
    assert goodput(600, 10, 3600, 60) > goodput(600, 10, 3600, 600)
    assert goodput(600, 10, 100, 600) == 0.0


def test_asynchronous_checkpoint_stalls_for_the_pcie_copy_only_and_waits_for_the_write():
    kw = dict(mtbf=mtbf_from_interruptions(419, 54 * SECONDS_PER_DAY), restart=600.0,
              write_bandwidth=2e12)
    sync = checkpoint_plan(405e9, 16384, "H100", **kw)
    asyn = checkpoint_plan(405e9, 16384, "H100", asynchronous=True, **kw)
    assert sync.stall == pytest.approx(405e9 * 14 / 2e12)
    assert asyn.stall == pytest.approx(405e9 * 14 / (16384 * get_chip("H100").pcie_bandwidth))
    assert asyn.interval >= asyn.background_write
    assert asyn.goodput > sync.goodput


# --------------------------------------------------------------------------- bucketing

def test_one_bucket_is_fully_exposed_and_small_buckets_pay_latency():
    G, T = 16e9, 0.05
    one = bucket_timeline(G, G, T, 64, "H100", gpus_per_node=8)
    whole = float(collective_cost("AllReduce", G, [64], "H100", gpus_per_node=8).time)
    assert one.n_buckets == 1 and one.exposed == pytest.approx(whole)
    mid = bucket_timeline(G, 25 * 2**20, T, 64, "H100", gpus_per_node=8)
    tiny = bucket_timeline(G, 2**16, T, 64, "H100", gpus_per_node=8)
    assert mid.exposed < one.exposed and mid.exposed < tiny.exposed


def test_exposed_is_at_least_the_last_bucket_and_zero_overlap_window_means_all():
    t = bucket_timeline(1e9, 1e8, 10.0, 16, "H100", gpus_per_node=8)
    assert t.exposed == pytest.approx(t.per_bucket)  # everything else hid


def test_no_sync_hides_behind_the_last_microbatch_only():
    args = (16e9, 25 * 2**20, 0.4, 8, 64, "H100")
    reduce_once = accumulation_exposed(*args, gpus_per_node=8)
    whole_window = bucket_timeline(16e9, 25 * 2**20, 0.4, 64, "H100", gpus_per_node=8).exposed
    assert reduce_once > whole_window  # the window is T_b / M, not T_b
    assert accumulation_exposed(*args, no_sync=False, gpus_per_node=8) == pytest.approx(
        8 * reduce_once)


# --------------------------------------------------------------------------- offload, ZeRO++

def test_zero_offload_cpu_update_dominates_pcie():
    cost = optimizer_offload(1e9, "H100", host_memory_bandwidth=300e9)
    assert cost.pcie == pytest.approx(2e9 / 64e9)
    assert cost.cpu_update == pytest.approx(28 * 8 * 1e9 / 300e9)
    assert cost.total == pytest.approx(cost.pcie + cost.cpu_update)


def test_activation_offload_is_bytes_over_pcie():
    assert activation_offload_time(64e9, "H100") == pytest.approx(1.0)


def test_zeropp_cuts_cross_node_bytes_fourfold():
    z3 = sum(zero_cross_node_bytes(1e9).values())
    zpp = sum(zero_cross_node_bytes(1e9, plus_plus=True).values())
    assert z3 / zpp == pytest.approx(4.0)


def test_fp8_collective_is_the_bf16_one_on_half_the_bytes():
    bf16 = collective_time_in("AllGather", 1e9, "bf16", [64], "H100", gpus_per_node=8)
    fp8 = collective_time_in("AllGather", 1e9, "fp8", [64], "H100", gpus_per_node=8)
    assert fp8 == pytest.approx(float(collective_cost("AllGather", 1e9, [64], "H100",
                                                      gpus_per_node=8).time))
    assert fp8 < bf16 < 2.01 * fp8


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_bad_input_is_refused(bad):
    with pytest.raises(ValueError):
        checkpoint_bytes(bad)
    with pytest.raises(ValueError):
        bucket_timeline(1e9, bad, 1.0, 8, "H100")


def test_zeropp_halves_the_forward_gather_and_beats_zero3_in_time():
    from scalebook.offload import zero_step_comm_times
    z3 = zero_step_comm_times(70e9, 256, "H100")
    zpp = zero_step_comm_times(70e9, 256, "H100", plus_plus=True)
    assert sum(zpp.values()) < sum(z3.values())
    assert zpp["weight gather (forward)"] < 0.55 * z3["weight gather (forward)"]
    # hpZ's backward gather never leaves the node: its time does not grow with the cluster
    assert zero_step_comm_times(70e9, 1024, "H100", plus_plus=True)[
        "weight gather (backward)"] == pytest.approx(zpp["weight gather (backward)"])


def test_the_figures_carry_alt_text_from_their_numbers():
    from scalebook.diagrams.checkpointing import goodput_vs_interval
    from scalebook.diagrams.dp_buckets import exposed_vs_bucket_size
    pic = exposed_vs_bucket_size(16e9, 0.07, 64, "H100", [2**20, 25 * 2**20, 2**30],
                                 gpus_per_node=8)
    assert "25 MiB" in pic.alt and "64 H100s" in pic.alt
    pic = goodput_vs_interval(mtbf=11135.0, restart=600.0, sync_stall=30.0, async_stall=0.1,
                              async_write=30.0)
    assert "Young's interval" in pic.alt and "%" in pic.alt

"""The sharded-matmul explorer, driven the way a reader drives it: set a control's value, then
check the state against hand-derived numbers and the solver, and the plot's data."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from scalebook import collectives
from scalebook.sharding import Mesh, bytes_per_device, local_shape
from scalebook.live.sharded_matmul import LAYOUTS, collective_cost, parse_mesh, sharded_matmul_state
from scalebook.widgets.sharded_matmul import sharded_matmul_explorer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
LINK = 45e9  # TPU v5e: one ICI link, one way (bytes/s)
PEAK = 197e12  # TPU v5e bf16 FLOP/s
HOP = 1e-6  # seconds per ICI hop (the collectives default)
MiB = 2 ** 20


def _xy(artist):
    return np.asarray(artist.get_xdata(), float), np.asarray(artist.get_ydata(), float)


# --------------------------------------------------------------------------- state

def test_fsdp_weight_gather_matches_hand_numbers():
    """A[B_X, D] ·_D W[D_X, F] on 4 chips: case 2, AllGather W over X, a line (a v5e axis
    of 4 has no wraparound: only the full 16 does)."""
    state = sharded_matmul_state("TPU v5e", mesh="X=4", B=4096, D=8192, F=16384,
                                 lhs="A[B_X, D]", rhs="W[D_X, F]", out="Out[B_X, F]")
    assert state.case == 2 and state.reachable and state.output == "Out[B_X, F]"
    lhs, rhs, *_, out = state.operands
    assert lhs.local == (1024, 8192) and lhs.nbytes == 1024 * 8192 * 2 == 16 * MiB
    assert rhs.local == (2048, 16384) and rhs.nbytes == 64 * MiB
    assert out.local == (1024, 16384) and out.nbytes == 32 * MiB
    (gather,) = state.steps
    assert (gather.kind, gather.axes, gather.group_size) == ("AllGather", ("X",), 4)
    V = 8192 * 16384 * 2  # the whole W, gathered on every chip
    assert gather.nbytes == V
    hand = V * (4 - 1) / 4 / LINK + (4 - 1) * HOP  # along a line: one link in, N − 1 hops
    assert gather.time == pytest.approx(hand, rel=1e-12)
    assert gather.time == pytest.approx(
        collectives.all_gather(V, 4, "TPU v5e", wraparound=False).time)
    assert gather.cost.regime == "bandwidth-bound"
    flops = 2 * 1024 * 8192 * 16384  # local B x full D x F
    assert state.flops_per_device == flops
    assert state.compute_time == pytest.approx(flops / PEAK)
    assert state.comms_time == pytest.approx(hand)
    assert state.bound == "communication"
    assert state.ratio == pytest.approx(flops / PEAK / hand)


def test_default_is_a_tensor_parallel_all_reduce_that_d_pushes_over_the_line():
    state = sharded_matmul_state()  # v5e, X=2, Y=4, A[B_X, D_Y] · W[D_Y, F] -> Out[B_X, F]
    assert state.case == 3 and state.plan.local_result == "Out[B_X, F] {U_Y}"
    (reduce,) = state.steps
    V = 2048 * 16384 * 2  # this chip's unreduced B/2 x F block
    assert (reduce.kind, reduce.axes, reduce.nbytes) == ("AllReduce", ("Y",), V)
    # the chip's real topology by default: a v5e axis of 4 is a line, so 2.24 ms, where the
    # old default (rings for every chip) gave 1.12 ms, against the chapter's v5e rule
    hand = 2 * (V * 3 / 4 / LINK + 3 * HOP)  # twice an AllGather along a line
    assert reduce.time == pytest.approx(hand, rel=1e-12)
    assert reduce.time == pytest.approx(2.2429621e-3, rel=1e-6)
    ring = sharded_matmul_state(wraparound=True).steps[0]
    assert ring.time == pytest.approx(2 * (V * 3 / 4 / (2 * LINK) + 2 * HOP))
    assert state.compute_time == pytest.approx(2 * 2048 * 2048 * 16384 / PEAK)
    assert state.bound == "communication" and state.ratio == pytest.approx(0.3111, rel=1e-3)
    # compute / comms = D · W / (2·C · (N − 1)/N) up to latency: 4x D crosses over
    assert sharded_matmul_state(D=16384).bound == "communication"
    assert sharded_matmul_state(D=32768).bound == "compute"


def test_collective_cost_prices_steps_as_the_planner_does():
    state = sharded_matmul_state(mesh="X=2, Y=4, Z=2", lhs="A[B_X, D_YZ]", rhs="W[D_YZ, F]",
                                 wraparound=False)
    for step in state.steps:
        again = collective_cost(step.kind, step.nbytes, step.axes, state.mesh, "TPU v5e",
                                wraparound=False)
        assert again.time == pytest.approx(step.time)
    (reduce,) = state.steps
    assert reduce.axes == ("Y", "Z")
    V = reduce.nbytes  # lines, two axes: W + W of bandwidth, (4 - 1) + (2 - 1) hops
    assert reduce.time == pytest.approx(2 * (V * 7 / 8 / (2 * LINK) + 4 * HOP))


@pytest.mark.parametrize("out, kinds, reachable, note", [
    ("Out[B_X, F_Y]", ["ReduceScatter"], True, "as asked"),
    ("Out[B_X, F] {U_Y}", [], True, "as asked"),
    ("Out[B_XY, F]", ["ReduceScatter"], True, "as asked"),
    ("Out[B_Y, F_X]", ["ReduceScatter", "AllToAll"], True, "needs more"),
    ("Out[F, B_X]", ["AllReduce"], True, "as asked"),
    ("Out[B_YX, F]", ["AllReduce"], False, "not reachable"),
    ("Out[B, F] {U_X}", ["AllReduce"], False, "partial sums are over Y, not X"),
])
def test_output_sharding_picks_the_reduction_and_says_what_else_is_needed(out, kinds,
                                                                          reachable, note):
    state = sharded_matmul_state(out=out)
    assert [s.kind for s in state.steps] == kinds
    assert state.reachable is reachable and note in state.output_note
    assert "\n" not in state.output_note


def test_an_output_gathered_further_costs_an_extra_all_gather():
    state = sharded_matmul_state(mesh="X=4", lhs="A[B_X, D]", rhs="W[D, F]", out="Out[B, F]")
    assert state.case == 1 and state.reachable
    (gather,) = state.reshard
    V = 4096 * 16384 * 2
    assert (gather.kind, gather.nbytes) == ("AllGather", V)
    assert gather.time == pytest.approx(
        collectives.all_gather(V, 4, "TPU v5e", wraparound=False).time)
    assert "needs more" in state.output_note and state.comms_time == pytest.approx(gather.time)
    sliced = sharded_matmul_state(mesh="X=4, Y=2", lhs="A[B_X, D]", rhs="W[D, F]",
                                  out="Out[B_X, F_Y]")
    assert sliced.steps == () and sliced.slices and "free" in sliced.output_note


def test_gpus_use_the_nvlink_model():
    state = sharded_matmul_state("H100", mesh="X=2, Y=4")
    (reduce,) = state.steps
    assert reduce.time == pytest.approx(
        collectives.collective_cost("AllReduce", reduce.nbytes, 4, "H100").time)
    assert state.compute_time == pytest.approx(2 * 2048 * 2048 * 16384 / 989e12)


def test_parse_mesh():
    assert parse_mesh("X=2, Y=4") == Mesh({"X": 2, "Y": 4})
    assert parse_mesh(" X:8 ") == Mesh({"X": 8})
    assert parse_mesh({"Z": 2, "X": 2}).axis_names == ("Z", "X")
    for text, message in [("", "empty"), ("X=2, Y=four", "whole number"), ("Q=2", "X, Y, Z"),
                          ("X=2, X=4", "twice"), ("X=0", "positive"), ("X2", "cannot read"),
                          ("X=1, Y=1, Z=1, X=2", "twice"), ({"X": 1.5}, "whole number")]:
        with pytest.raises(ValueError, match=message):
            parse_mesh(text)


# --------------------------------------------------------------------------- widget

@pytest.fixture(scope="module")
def explorer():
    return sharded_matmul_explorer()


class _Empty:
    """A line the figure does not have (a kind not drawn): no data."""

    def get_xdata(self):
        return []

    def get_ydata(self):
        return []


def _named(w) -> dict:
    """The explorer's artists by what they show, found through the live view's chart: a
    collective's curve by its label, its markers by their colour, the guides by colour and
    dash, the bars and their labels."""
    from scalebook.live.sharded_matmul import (COMPUTE_COLOUR, CROSSOVER_COLOUR, GUIDE_COLOUR,
                                               KIND_COLOURS, KINDS)

    left, right = w.chart["panels"]
    made = w.drawing.series
    out = {f"{what}/{kind}": _Empty() for kind in KINDS for what in ("curve", "marker")}
    for spec, artists in zip(left["series"], made[0]):
        kind = next((k for k in KINDS if KIND_COLOURS[k] == spec["colour"]), None)
        if spec["kind"] == "points":
            out[f"marker/{kind}"] = artists[0]
        elif spec["kind"] == "line" and spec["label"] and kind is not None:
            out[f"curve/{kind}"] = artists[0]
        elif spec["kind"] == "line" and spec["colour"] == COMPUTE_COLOUR:
            out["compute"] = artists[0]
        elif spec["kind"] == "line" and spec["colour"] == GUIDE_COLOUR:
            out["latency" if spec["dash"] == [4, 2] else "bandwidth"] = artists[0]
        elif spec["kind"] == "line" and spec["colour"] == CROSSOVER_COLOUR:
            out["crossover"] = artists[0]
    (bars,) = made[1]
    n = len(bars) // 2
    out["bars"], out["bar_labels"] = bars[:n], bars[n:]
    out["title"], out["bars_title"] = w.drawing.titles
    return out


def test_plot_data_are_the_solvers_curves(explorer):
    state = explorer.state
    x, y = _xy(_named(explorer)["curve/AllReduce"])
    np.testing.assert_allclose(y, collectives.all_reduce(x, 4, "TPU v5e", wraparound=False).time)
    assert x.min() <= 1e3 and x.max() >= 1e10
    (step,) = state.steps
    mx, my = _xy(_named(explorer)["marker/AllReduce"])
    assert mx.tolist() == [step.nbytes] and my[0] == pytest.approx(step.time)
    assert _xy(_named(explorer)["latency"])[1][0] == pytest.approx(6 * HOP)
    np.testing.assert_allclose(_xy(_named(explorer)["bandwidth"])[1],
                               2 * x * 3 / 4 / LINK)
    # latency = bandwidth time at V* = 6 µs · 45 GB/s / (2 · 3/4) = 180 kB (a line)
    assert _xy(_named(explorer)["crossover"])[0][0] == pytest.approx(180e3)
    assert _xy(_named(explorer)["compute"])[1][0] == pytest.approx(state.compute_time)
    assert len(_xy(_named(explorer)["curve/AllGather"])[0]) == 0
    title = _named(explorer)["bars_title"].get_text()
    assert title == "communication-bound: compute / comms = 0.31"
    heights = [b.get_width() + b.get_x() for b in _named(explorer)["bars"]]
    assert heights == pytest.approx([state.compute_time, step.time])

    explorer.controls["axis"].value = "X"  # no collective runs over X: an AllGather, unmarked
    assert explorer.state.plot_axes == ("X",) and explorer.state.plot_kinds == ("AllGather",)
    x, y = _xy(_named(explorer)["curve/AllGather"])
    np.testing.assert_allclose(y, collectives.all_gather(x, 2, "TPU v5e", wraparound=False).time)
    assert len(_xy(_named(explorer)["marker/AllGather"])[0]) == 0
    assert len(_xy(_named(explorer)["curve/AllReduce"])[0]) == 0
    explorer.controls["axis"].value = "auto"


@pytest.mark.parametrize("name, value, check", [
    ("chip", "TPU v5p", lambda s: s.chip.name == "TPU v5p"),
    ("dtype", "int8", lambda s: s.dtype == "int8"),
    # rings where the default (as built) has a line: the AllReduce takes half as long
    ("wraparound", True, lambda s: s.wraparound is True and s.comms_time < 0.6 * 2.243e-3),
    ("mesh", "X=2, Y=8", lambda s: s.mesh.n_devices == 16),
    ("lhs", "A[B_X, D]", lambda s: s.case == 2),
    ("rhs", "W[D, F_Y]", lambda s: s.case == 2),
    ("out", "Out[B_X, F_Y]", lambda s: s.steps[0].kind == "ReduceScatter"),
    ("B", 256, lambda s: s.B == 256 and s.steps[0].nbytes == 128 * 16384 * 2),
    ("D", 32768, lambda s: s.D == 32768 and s.bound == "compute"),
    ("F", 1024, lambda s: s.F == 1024),
    ("axis", "X", lambda s: s.plot_axes == ("X",)),
    ("layout", "FSDP: gather the weights (case 2)", lambda s: s.case == 2),
])
def test_every_control_recomputes_and_redraws(explorer, name, value, check):
    before_state, before_png = explorer.state, explorer.png
    old = explorer.values()
    explorer.controls[name].value = value
    assert explorer.error == ""
    assert check(explorer.state) and explorer.state != before_state
    assert explorer.png != before_png and explorer.image.value == explorer.png
    for key in ("layout", "mesh", "lhs", "rhs", "out"):  # restore, layout first
        explorer.controls[key].value = old[key]
    for key, v in old.items():
        explorer.controls[key].value = v
    assert explorer.state == before_state


def test_the_layouts_reach_all_four_cases(explorer):
    cases = {}
    for name, (mesh, lhs, rhs, out) in LAYOUTS.items():
        explorer.controls["layout"].value = name
        assert explorer.error == ""
        values = explorer.values()
        assert (values["mesh"], values["lhs"], values["rhs"], values["out"]) == (mesh, lhs,
                                                                                 rhs, out)
        cases[name] = explorer.state.case
    assert sorted(set(cases.values())) == [1, 2, 3, 4]
    explorer.controls["lhs"].value = "A[B, D]"  # an edit leaves the named layout
    assert explorer.controls["layout"].value == "custom"
    explorer.controls["layout"].value = "data × tensor parallel (case 3)"
    assert explorer.state == sharded_matmul_state()


def test_the_four_cases_through_the_sharding_fields(explorer):
    fields = {  # case: lhs, rhs (mesh X=2, Y=4)
        1: ("A[B_X, D]", "W[D, F_Y]"),
        2: ("A[B_X, D_Y]", "W[D, F]"),
        3: ("A[B_X, D_Y]", "W[D_Y, F]"),
        4: ("A[B_X, D]", "W[D, F_X]"),
    }
    for case, (lhs, rhs) in fields.items():
        explorer.controls["lhs"].value = lhs
        explorer.controls["rhs"].value = rhs
        assert explorer.error == "" and explorer.state.case == case, (case, explorer.error)
    explorer.controls["layout"].value = "data × tensor parallel (case 3)"


@pytest.mark.parametrize("name, value, message", [
    ("lhs", "A[B_X, D_Y", "lhs: 'A[B_X, D_Y': unbalanced brackets"),
    ("lhs", "A[B_x, D_Y]", "mesh axes are single uppercase letters"),
    ("lhs", "A[B, E]", "must have the dims B and D"),
    ("rhs", "W[D_Y, F_Y]", "used twice"),
    ("rhs", "W D F", "expected NAME[dim, dim, ...]"),
    ("out", "Out[B_Z, F]", "mesh axis Z, which the mesh (X=2, Y=4) does not have"),
    ("out", "", "out:"),
    ("mesh", "X=2; Y=4", "cannot read"),
    ("mesh", "X=3, Y=4", "does not divide evenly"),
    ("mesh", "A=2", "name the axes X, Y, Z"),
    ("axis", "Z", "plot axis Z is not in the mesh"),
    ("chip", "V100", "V100 has no bf16"),
])
def test_bad_input_gives_one_line_and_keeps_the_picture(explorer, name, value, message):
    good_state, good_png = explorer.state, explorer.png
    old = explorer.controls[name].value
    explorer.controls[name].value = value
    assert message in explorer.error and "\n" not in explorer.error
    assert "Traceback" not in explorer.error
    assert message.split(":")[0] in explorer.message.value
    assert explorer.state is good_state and explorer.png == good_png
    explorer.controls[name].value = old
    assert explorer.error == "" and explorer.message.value == ""


def test_summary_lists_arrays_collectives_and_the_verdict(explorer):
    text = explorer.summary.value
    for piece in ("Case 3", "A[B_X, D_Y]", "[2,048, 16,384]", "64 MiB", "AllReduce",
                  "bandwidth-bound", "communication-bound", "0.31"):
        assert piece in text, piece


def test_static_pages_get_a_png(explorer):
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(PNG_SIGNATURE) and png == explorer.png


@pytest.mark.parametrize("kwargs, message", [
    ({"layout": "pipeline"}, "unknown layout"),
    ({"lhs": "A[B_X, D"}, "unbalanced"),
    ({"dtype": "fp32"}, "not offered"),
    ({"axis": "Q"}, "axis must be"),
    ({"chip": "TPU v9"}, "unknown chip"),
])
def test_explorer_rejects_bad_initial_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sharded_matmul_explorer(**kwargs)


def test_local_shapes_come_from_the_sharding_module():
    state = sharded_matmul_state(mesh="X=2, Y=4", lhs="A[B_XY, D]", rhs="W[D, F]",
                                 out="Out[B_XY, F]")
    mesh = Mesh({"X": 2, "Y": 4})
    lhs = state.operands[0]
    assert lhs.local == local_shape((4096, 8192), "A[B_XY, D]", mesh) == (512, 8192)
    assert lhs.nbytes == bytes_per_device((4096, 8192), "bf16", "A[B_XY, D]", mesh)


def test_a_long_plan_redraws_the_bar_chart_with_more_rows():
    w = sharded_matmul_explorer()
    w.controls["mesh"].value = "X=2, Y=2, Z=2"
    w.controls["out"].value = "Out[B_Z, F_XY]"
    w.controls["rhs"].value = "W[D_X, F_YZ]"
    w.controls["lhs"].value = "A[B_XY, D_Z]"
    assert w.error == ""
    kinds = [s.kind for s in w.state.steps]
    assert kinds == ["AllGather"] * 3 + ["AllToAll"] * 3
    labels = [t.get_text().split(":")[0] for t in _named(w)["bar_labels"]]
    assert labels[0] == "local matmul" and len(_named(w)["bars"]) == 7
    assert labels[4] == "AllToAll_X Out" and w.state.reachable
    x, y = _xy(_named(w)["curve/AllToAll"])  # auto: the axis of the longest step
    axis = w.state.plot_axes[0]
    np.testing.assert_allclose(y, collectives.all_to_all(x, 2, "TPU v5e", wraparound=False).time)
    assert axis in "XYZ" and w.state.plot_kinds == ("AllGather", "AllToAll")


def test_wraparound_choices():
    ring, line, auto = (sharded_matmul_state(wraparound=w).steps[0] for w in (True, False, "auto"))
    assert line.cost.bandwidth_time == pytest.approx(2 * ring.cost.bandwidth_time)
    assert line.cost.latency_time == pytest.approx(2 * 3 * HOP)  # 2 x (4 - 1) hops on a line
    assert auto.time == line.time  # a v5e axis of 4 chips has no wraparound link
    # a v5p mesh smaller than a 4x4x4 cube is a slice without wraparound
    v5p = sharded_matmul_state("TPU v5p", wraparound="auto").steps[0]
    assert v5p.time == sharded_matmul_state("TPU v5p", wraparound=False).steps[0].time

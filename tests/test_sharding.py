"""Tests for scalebook.sharding: notation, per-device bytes, and the matmul planner."""

import dataclasses

import pytest

from scalebook import collectives
from scalebook.sharding import (
    DimSharding, MatmulPlan, Mesh, Sharding, bytes_per_device, local_shape, parse_shape,
    parse_sharding, plan_matmul, total_bytes,
)

MESH = Mesh({'X': 4, 'Y': 8, 'Z': 2})
SHAPES = {'I': 1024, 'J': 4096, 'K': 8192}


# --------------------------------------------------------------------------- parsing

def test_parse_simple_and_multi_axis():
    s = parse_sharding("A[I_X, J_Y]")
    assert s == Sharding("A", (DimSharding("I", ("X",)), DimSharding("J", ("Y",))), ())
    t = parse_sharding("A[I_XY, J]")
    assert t.dims == (DimSharding("I", ("X", "Y")), DimSharding("J", ()))
    assert t.sharded_axes == ("X", "Y") and t.rank == 2 and t.dim_names == ("I", "J")
    assert str(t) == "A[I_XY, J]"


def test_parse_unreduced_and_braces_and_spacing():
    s = parse_sharding("C[I_X, K] {U_Y}")
    assert s.unreduced == ("Y",)
    assert str(s) == "C[I_X, K] {U_Y}"
    assert parse_sharding("C[I_{XY},K]{U_Z}") == parse_sharding("C[I_XY, K] {U_Z}")
    assert parse_sharding("C[I, K] {U_X, U_Y}").unreduced == ("X", "Y")
    assert parse_sharding("W_in[D_X, F]").name == "W_in"
    assert parse_sharding(s) is s


def test_sharding_helpers():
    s = parse_sharding("A[I_X, J]")
    assert s.axes_of("I") == ("X",)
    assert str(s.with_axes("J", ["Y"])) == "A[I_X, J_Y]"
    with pytest.raises(ValueError, match="no dim 'K'"):
        s.axes_of("K")
    with pytest.raises(ValueError, match="used twice"):
        s.with_axes("J", ["X"])


@pytest.mark.parametrize("text, message", [
    ("A[I_X, J_Y", "unbalanced"),
    ("A[I_X]]", "unbalanced"),
    ("C[I, K] {U_X", "unbalanced"),
    ("A[I_X, , J]", "dim 2 is empty"),
    ("A[]", "dim 1 is empty"),
    ("A[I_x, J]", "uppercase"),
    ("A[I_1, J]", "uppercase"),
    ("A[I_, J]", "no mesh axis"),
    ("A[I_X, J_X]", "axis X is used twice"),
    ("A[I_XX, J]", "axis X is used twice"),
    ("C[I_X, K] {U_X}", "axis X is used twice"),
    ("A[I, I]", "dim 'I' appears twice"),
    ("C[I, K] {V_X}", "U_<axes>"),
    ("C[I, K] {}", "empty unreduced"),
    ("A I_X, J", "expected NAME"),
    ("A[I-X, J]", "cannot read dim"),
])
def test_parse_errors_name_string_and_problem(text, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_sharding(text)
    assert repr(text) in str(info.value)


def test_parse_rejects_non_strings():
    with pytest.raises(ValueError, match="must be a string"):
        parse_sharding(42)


def test_parse_shape():
    assert parse_shape("bf16[256, 2048]") == ("bf16", (256, 2048))
    assert parse_shape("float32[8]") == ("fp32", (8,))
    with pytest.raises(ValueError, match="positive integers"):
        parse_shape("bf16[256, 0]")
    with pytest.raises(ValueError, match="unknown dtype"):
        parse_shape("bf17[2]")
    with pytest.raises(ValueError, match="expected dtype"):
        parse_shape("bf16 256")


# --------------------------------------------------------------------------- mesh

def test_mesh():
    assert MESH.n_devices == 64
    assert MESH['Y'] == 8 and MESH.axis_names == ("X", "Y", "Z")
    assert MESH.size_of(("X", "Y")) == 32
    assert str(MESH) == "Mesh({'X': 4, 'Y': 8, 'Z': 2})"
    assert Mesh({'X': 4, 'Y': 8, 'Z': 2}) == MESH and hash(Mesh({'X': 4, 'Y': 8, 'Z': 2}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        MESH.axes = ()


@pytest.mark.parametrize("axes, message", [
    ({'x': 4}, "single uppercase letter"),
    ({'XY': 4}, "single uppercase letter"),
    ({'X': 0}, "positive integer"),
    ({'X': 2.5}, "positive integer"),
    ({'X': True}, "positive integer"),
    ({}, "at least one axis"),
    ([('X', 4)], "mapping"),
])
def test_mesh_validation(axes, message):
    with pytest.raises(ValueError, match=message):
        Mesh(axes)


def test_mesh_unknown_axis():
    with pytest.raises(ValueError, match="no axis 'W'"):
        MESH['W']


# --------------------------------------------------------------------------- memory

def test_book_example_32_kib_per_device_2_mib_in_all():
    dtype, shape = parse_shape("bf16[256, 2048]")
    assert local_shape(shape, "A[I_XY, J]", MESH) == (8, 2048)
    assert bytes_per_device(shape, dtype, "A[I_XY, J]", MESH) == 32768
    assert total_bytes(shape, dtype, "A[I_XY, J]", MESH) == 2 * 2**20


def test_local_shape_and_bytes_other_shardings():
    assert local_shape((256, 2048), "A[I_X, J_Y]", MESH) == (64, 256)
    assert local_shape((256, 2048), "A[I, J]", MESH) == (256, 2048)
    assert bytes_per_device((256, 2048), "fp32", "A[I_X, J_YZ]", MESH) == 64 * 128 * 4
    assert total_bytes((256, 2048), "int4", "A[I_XYZ, J]", MESH) == 256 * 2048 * 0.5
    # unreduced arrays hold full-size partial sums
    assert local_shape((256, 2048), "C[I_X, J] {U_Y}", MESH) == (64, 2048)


@pytest.mark.parametrize("shape, sharding, message", [
    ((256, 2048, 4), "A[I_X, J]", "rank"),
    ((256, 2048), "A[I_W, J]", "axis W"),
    ((100, 2048), "A[I_XY, J]", "does not divide evenly"),
    ((256, 0), "A[I_X, J]", "positive integers"),
    ("256", "A[I_X, J]", "sequence"),
])
def test_local_shape_errors(shape, sharding, message):
    with pytest.raises(ValueError, match=message):
        local_shape(shape, sharding, MESH)


def test_bytes_unknown_dtype():
    with pytest.raises(ValueError, match="unknown dtype"):
        bytes_per_device((256, 2048), "bf17", "A[I_X, J]", MESH)


# --------------------------------------------------------------------------- planner: four cases

def test_case_1_local_matmul_no_comms():
    plan = plan_matmul("A[I_X, J]", "B[J, K_Y]", MESH, contracting="J")
    assert plan.case == 1
    assert plan.collectives == ()
    assert plan.output == "C[I_X, K_Y]"
    assert plan.comms_time is None and plan.flops_per_device is None


def test_case_2_all_gather_the_sharded_contracting_dim():
    plan = plan_matmul("A[I_X, J_Y]", "B[J, K]", MESH, contracting="J",
                       shapes=SHAPES, chip="v5p")
    assert plan.case == 2
    (gather,) = plan.collectives
    assert (gather.kind, gather.operand, gather.dim, gather.axes) == ("AllGather", "A", "J", ("Y",))
    assert (gather.before, gather.after) == ("A[I_X, J_Y]", "A[I_X, J]")
    assert gather.group_size == 8
    assert gather.nbytes == 1024 // 4 * 4096 * 2  # A[I_X, J] per device, bf16
    assert gather.time == pytest.approx(collectives.all_gather(gather.nbytes, 8, "v5p").time)
    assert plan.output == "C[I_X, K]"
    assert plan.flops_per_device == 2 * 256 * 4096 * 8192
    assert plan.compute_time == pytest.approx(plan.flops_per_device / 4.59e14)
    assert plan.comms_time == pytest.approx(gather.time)
    # the rhs can be the sharded one too
    rhs = plan_matmul("A[I_X, J]", "B[J_Y, K]", MESH, contracting="J")
    assert rhs.case == 2 and rhs.collectives[0].operand == "B" and rhs.output == "C[I_X, K]"


def test_case_3_partial_sums_then_all_reduce():
    plan = plan_matmul("A[I, J_X]", "B[J_X, K]", MESH, contracting="J",
                       shapes=SHAPES, chip="v5p")
    assert plan.case == 3
    assert plan.local_result == "C[I, K] {U_X}"
    (reduce,) = plan.collectives
    assert (reduce.kind, reduce.operand, reduce.axes) == ("AllReduce", "C", ("X",))
    assert reduce.nbytes == 1024 * 8192 * 2  # the unreduced C each device holds
    assert reduce.time == pytest.approx(collectives.all_reduce(reduce.nbytes, 4, "v5p").time)
    assert plan.output == "C[I, K]"
    assert plan.flops_per_device == 2 * 1024 * (4096 // 4) * 8192


def test_case_3_reduce_scatter_or_leave_unreduced():
    rs = plan_matmul("A[I, J_X]", "B[J_X, K]", MESH, contracting="J", reduce="reduce_scatter")
    assert rs.output == "C[I, K_X]"
    assert rs.collectives[0].kind == "ReduceScatter" and rs.collectives[0].dim == "K"
    onto_i = plan_matmul("A[I_Y, J_X]", "B[J_X, K]", MESH, contracting="J",
                         reduce="reduce_scatter", scatter_dim="I")
    assert onto_i.output == "C[I_YX, K]"
    left = plan_matmul("A[I_Y, J_X]", "B[J_X, K]", MESH, contracting="J", reduce="none")
    assert left.output == "C[I_Y, K] {U_X}" and left.collectives == ()


def test_case_4_same_axis_on_both_non_contracting_dims():
    plan = plan_matmul("A[I_X, J]", "B[J, K_X]", MESH, contracting="J")
    assert plan.case == 4
    (gather,) = plan.collectives
    assert (gather.kind, gather.operand, gather.dim, gather.axes) == ("AllGather", "B", "K", ("X",))
    assert plan.output == "C[I_X, K]"
    # with shapes the smaller operand is gathered: A (8 MiB) rather than B (64 MiB)
    sized = plan_matmul("A[I_X, J]", "B[J, K_X]", MESH, contracting="J", shapes=SHAPES)
    assert sized.collectives[0].operand == "A" and sized.output == "C[I, K_X]"
    forced = plan_matmul("A[I_X, J]", "B[J, K_X]", MESH, contracting="J", shapes=SHAPES,
                         gather="rhs")
    assert forced.collectives[0].operand == "B"


def test_case_4_then_case_2():
    plan = plan_matmul("A[I_X, J_Y]", "B[J, K_X]", MESH, contracting="J", gather="lhs")
    assert plan.case == 4
    assert [(c.operand, c.dim, c.axes) for c in plan.collectives] == [
        ("A", "I", ("X",)), ("A", "J", ("Y",))]
    assert plan.output == "C[I, K_X]"


def test_mismatched_contracting_axes_gather_one_side():
    plan = plan_matmul("A[I, J_X]", "B[J_Y, K]", MESH, contracting="J")
    assert plan.case == 3
    assert [(c.kind, c.operand, c.axes) for c in plan.collectives] == [
        ("AllGather", "B", ("Y",)), ("AllReduce", "C", ("X",))]
    assert plan.rhs_used == "B[J_X, K]"  # gathered, then sliced locally
    assert plan.output == "C[I, K]"
    # only the extra axis is gathered when that leaves a match
    sub = plan_matmul("A[I, J_X]", "B[J_XY, K]", MESH, contracting="J", gather="rhs")
    assert sub.collectives[0].axes == ("Y",) and sub.rhs_used == "B[J_X, K]"
    # when re-slicing is impossible both sides are gathered (then it is case 2's shape)
    both = plan_matmul("A[I_Y, J_X]", "B[J_Y, K_X]", MESH, contracting="J")
    assert both.case == 2
    assert {c.operand for c in both.collectives} == {"A", "B"}
    assert both.output == "C[I_Y, K_X]"


def test_plan_explain_and_frozen():
    plan = plan_matmul("A[I, J_X]", "B[J_X, K]", MESH, contracting="J", shapes=SHAPES,
                       chip="v5p")
    text = plan.explain()
    assert text.startswith("Case 3:")
    assert "AllReduce_X C[I, K] {U_X} -> C[I, K]" in text
    assert "16 MiB" in text and "TPU v5p" in text
    assert len(text.splitlines()) >= 4
    assert isinstance(plan, MatmulPlan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.case = 1


def test_plan_times_options():
    no_wrap = plan_matmul("A[I, J_X]", "B[J_X, K]", MESH, contracting="J", shapes=SHAPES,
                          chip="v5p", wraparound=False)
    wrap = plan_matmul("A[I, J_X]", "B[J_X, K]", MESH, contracting="J", shapes=SHAPES,
                       chip="v5p")
    bw = [p.collectives[0].cost.bandwidth_time for p in (no_wrap, wrap)]
    assert bw[0] == pytest.approx(2 * bw[1])
    auto = plan_matmul("A[I, J_X]", "B[J_X, K]", Mesh({'X': 8}), contracting="J",
                       shapes=SHAPES, chip="v5e", wraparound="auto")  # v5e: 8 is not 16
    assert auto.collectives[0].cost.bandwidth_time == pytest.approx(
        2 * 1024 * 8192 * 2 * 7 / 8 / 4.5e10)
    gpu = plan_matmul("A[I, J_X]", "B[J_X, K]", Mesh({'X': 8}), contracting="J",
                      shapes=SHAPES, chip="H100")
    assert gpu.comms_time == pytest.approx(
        collectives.collective_cost("AllReduce", 1024 * 8192 * 2, 8, "H100").time)
    assert gpu.collectives[0].cost.algorithm == "nvls"  # the switch sums 16 MB in place
    multi = plan_matmul("A[I, J_XY]", "B[J_XY, K]", MESH, contracting="J", shapes=SHAPES,
                        chip="v5p")
    assert multi.comms_time == pytest.approx(
        collectives.all_reduce_multi_axis(1024 * 8192 * 2, [4, 8], "v5p").time)
    assert multi.collectives[0].group_size == 32


@pytest.mark.parametrize("kwargs, message", [
    (dict(lhs="A[I, J]", rhs="B[J, K]", contracting="L"), "contracting dim 'L'"),
    (dict(lhs="A[I, J]", rhs="B[J, I]", contracting="J"), "batched"),
    (dict(lhs="A[I_W, J]", rhs="B[J, K]", contracting="J"), "axis W"),
    (dict(lhs="A[I, J] {U_X}", rhs="B[J, K]", contracting="J"), "unreduced"),
    (dict(lhs="A[I, J", rhs="B[J, K]", contracting="J"), "unbalanced"),
    (dict(lhs="A[I, J]", rhs="B[J, K]", contracting="J", reduce="sum"), "reduce must be"),
    (dict(lhs="A[I, J]", rhs="B[J, K]", contracting="J", gather="left"), "gather must be"),
    (dict(lhs="A[I, J]", rhs="B[J, K]", contracting="J", shapes={'I': 8, 'J': 8}),
     "no size for dim 'K'"),
    (dict(lhs="A[I_X, J]", rhs="B[J, K]", contracting="J", shapes={'I': 6, 'J': 8, 'K': 8}),
     "divide evenly"),
    (dict(lhs="A[I, J_X]", rhs="B[J_X, K]", contracting="J", reduce="reduce_scatter",
          scatter_dim="Q"), "scatter_dim 'Q'"),
    (dict(lhs="A[I, J_X]", rhs="B[J_X, K]", contracting="J", shapes=SHAPES, chip="v5p",
          wraparound="sometimes"), "wraparound must be"),
    (dict(lhs="A[I, J]", rhs="B[J, K]", contracting="J", dtype="bf17"), "unknown dtype"),
    (dict(lhs="A[I, J]", rhs="B[J, K]", contracting="J", chip="v9"), "unknown chip"),
])
def test_planner_bad_input(kwargs, message):
    lhs, rhs = kwargs.pop("lhs"), kwargs.pop("rhs")
    with pytest.raises(ValueError, match=message):
        plan_matmul(lhs, rhs, MESH, **kwargs)


def test_planner_needs_a_mesh():
    with pytest.raises(ValueError, match="must be a Mesh"):
        plan_matmul("A[I, J]", "B[J, K]", {'X': 4}, contracting="J")


def test_plan_reshard_moves_drops_and_slices_axes():
    """The resharding planner (moved here from the live explorer): an axis moving between dims
    is an AllToAll of the array the group holds together, a dropped axis an AllGather, an axis
    the result is copied over a free local slice."""
    from scalebook import collectives
    from scalebook.sharding import parse_sharding, plan_reshard, reshard_candidates
    mesh = Mesh({"X": 4, "Y": 2})
    sizes = {"B": 64, "F": 128}
    steps, slices, why = plan_reshard(parse_sharding("Out[B_X, F]"), parse_sharding("Out[B, F_X]"),
                                      mesh, sizes, "bf16", "TPU v5e")
    assert why is None and slices == ()
    (a2a,) = steps
    # V = the whole array the 4 chips hold together: one chip's 1/4 block times 4
    assert (a2a.kind, a2a.axes, a2a.nbytes) == ("AllToAll", ("X",), 64 * 128 * 2)
    assert a2a.time == pytest.approx(collectives.collective_cost(
        "AllToAll", a2a.nbytes, [4], "TPU v5e").time)  # as built: a 4-chip v5e axis is a line
    steps, _, _ = plan_reshard(parse_sharding("Out[B_X, F]"), parse_sharding("Out[B, F]"),
                               mesh, sizes, "bf16", "TPU v5e")
    assert [s.kind for s in steps] == ["AllGather"] and steps[0].nbytes == 64 * 128 * 2
    _, slices, _ = plan_reshard(parse_sharding("Out[B_X, F]"), parse_sharding("Out[B_X, F_Y]"),
                                mesh, sizes, "bf16", "TPU v5e")
    assert len(slices) == 1 and "free" in slices[0]
    _, _, why = plan_reshard(parse_sharding("Out[B, F] {U_X}"), parse_sharding("Out[B, F]"),
                             mesh, sizes, "bf16", "TPU v5e")
    assert why == "the result still holds partial sums"
    assert reshard_candidates((), parse_sharding("Out[B, F]")) == [
        (None, "all_reduce", None), ("lhs", "all_reduce", None), ("rhs", "all_reduce", None)]

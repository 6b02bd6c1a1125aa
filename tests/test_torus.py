"""TPU slices as shipped: wraparound per slice shape, shipped shapes, mesh axes on physical axes."""

import pytest

from scalebook import collectives as c
from scalebook import torus
from scalebook.torus import AxisPlacement

GB = 1e9
W_V5P = 9e10


def test_a_slice_smaller_than_a_cube_has_no_wraparound():
    # Google's v5p page: 2x2x1, 2x2x2 and 2x4x4 have no wraparound links; 4x4x4 and up do
    for shape in [(2, 2, 1), (2, 2, 2), (2, 4, 4)]:
        assert torus.axis_wraps("v5p", shape) == (False, False, False)
    assert torus.axis_wraps("v5p", (4, 4, 4)) == (True, True, True)
    assert torus.axis_wraps("v5p", (8, 16, 16)) == (True, True, True)


def test_a_2x4x4_v5p_axis_is_priced_as_a_line():
    # the old "multiple of 4" rule gave the two 4-axes wraparound
    cost = c.collective_cost("AllGather", GB, [2, 4, 4], "v5p")
    assert cost.formula == "V·(N−1)/N / (W + W + W)"
    assert cost.bandwidth_time == pytest.approx(GB * 31 / 32 / (3 * W_V5P))


def test_worked_problem_6s_16_chip_v5p_block_is_two_lines():
    # a v5p "4x4" block on its own is the slice 4x4x1: no wraparound, 2·W not 4·W
    ag = c.collective_cost("AllGather", GB, [4, 4], "v5p")
    assert ag.bandwidth_time == pytest.approx(GB * 15 / 16 / (2 * W_V5P))
    # inside a full cube the same two axes are rings: half the time
    cube = torus.place_mesh("v5p", (4, 4, 4), (4, 4, 4))
    ring = c.collective_cost("AllGather", GB, list(cube[:2]), "v5p")
    assert ring.bandwidth_time == pytest.approx(ag.bandwidth_time / 2)


def test_shapes_that_do_not_exist_are_refused_with_the_list():
    with pytest.raises(ValueError) as info:
        torus.check_slice_shape("v5p", (16, 4))
    assert "4x4x4" in str(info.value) and "2x4x4" in str(info.value)
    with pytest.raises(ValueError, match="not shipped"):
        torus.check_slice_shape("v5p", (2, 2, 4))   # a v4 shape, not a v5p one
    assert torus.check_slice_shape("v5p", (4, 2, 4)) == (4, 2, 4)   # 2x4x4, axes in any order
    assert torus.check_slice_shape("v5p", (12, 16, 20)) == (12, 16, 20)  # whole cubes
    assert torus.check_slice_shape("v5e", (16, 8)) == (16, 8)


def test_a_mesh_axis_on_a_segment_of_a_ring_is_a_line():
    # v5e 16x16 as Mesh((64, 4)): TP = 4 is a 4-chip segment of a 16-chip ring
    tp_of_64, tp = torus.place_mesh("v5e", (16, 16), (64, 4))
    assert tp == AxisPlacement(4, (0,), (4,), (False,), (1,))
    assert c.collective_cost("AllGather", GB, [tp], "v5e").formula == "V·(N−1)/N / (W)"
    # the other axis takes every 4th chip of that ring (a ring of 4, links shared 4 ways)
    # and the whole second ring
    assert tp_of_64 == AxisPlacement(64, (0, 1), (4, 16), (True, True), (4, 1))
    cost = c.collective_cost("AllGather", GB, [tp_of_64], "v5e")
    assert cost.bandwidth_time == pytest.approx(GB * 63 / 64 / (2 * 4.5e10 / 4 + 2 * 4.5e10))


def test_a_mesh_axis_may_span_two_physical_axes():
    # v5p 4x4x4 as Mesh((4, 16)): the 16-axis covers two physical rings of 4
    four, sixteen = torus.place_mesh("v5p", (4, 4, 4), (4, 16))
    assert sixteen.physical == (0, 1) and sixteen.rings == (True, True)
    assert four.physical == (2,) and four.rings == (True,)
    cost = c.collective_cost("AllGather", GB, [sixteen], "v5p")
    assert cost.bandwidth_time == pytest.approx(GB * 15 / 16 / (4 * W_V5P))
    # one 16-chip v5p line (the group as its own slice) is four times slower
    assert c.collective_cost("AllGather", GB, 16, "v5p").bandwidth_time == pytest.approx(
        4 * cost.bandwidth_time)


def test_place_mesh_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="does not fill"):
        torus.place_mesh("v5p", (4, 4, 4), (4, 8))
    # 8 on a 4x4x4 cube: one whole 4-ring and a 2-chip segment of another axis
    first, second = torus.place_mesh("v5p", (4, 4, 4), (8, 8))
    assert second == AxisPlacement(8, (0, 1), (4, 2), (True, False), (1, 1))
    assert first.size == 8 and torus.link_share(first) < torus.link_share(second) + 1


def test_placements_are_for_tpus_only():
    cube = torus.place_mesh("v5p", (4, 4, 4), (64,))
    with pytest.raises(ValueError, match="TPU torus"):
        c.collective_cost("AllGather", GB, list(cube), "H100")
    with pytest.raises(ValueError, match="wraparound"):
        c.collective_cost("AllGather", GB, list(cube), "v5p", wraparound=True)

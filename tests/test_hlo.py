"""scalebook.hlo: collectives read from HLO text, by hand-written snippets and by real compiles.

Expected values are derived by hand: on the 2x4 mesh (X=2, Y=4) partition p sits at
(p // 4, p % 4), so {0,1,2,3} spans Y, {0,4} spans X, and f32[8,2] is 8*2*4 = 64 bytes.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

from scalebook.hlo import HloCollective, compiled_collectives, hlo_collectives, summarize


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)


def one(text, mesh):
    found = hlo_collectives(text, mesh)
    assert len(found) == 1, found
    return found[0]


# --------------------------------------------------------------------------- hand-written HLO

def test_explicit_groups_map_to_axes(mesh):
    y = one("  %ar = f32[8,2]{1,0} all-reduce(%p), channel_id=1, "
            "replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, to_apply=%add", mesh)
    assert y == HloCollective("AllReduce", ("Y",), 64, "f32[8,2]")
    x = one("ROOT %ar.2 = bf16[16]{0} all-reduce(%p), replica_groups={{0,4},{1,5},{2,6},{3,7}}, "
            "to_apply=%add", mesh)
    assert x == HloCollective("AllReduce", ("X",), 32, "bf16[16]")


def test_empty_groups_mean_every_device(mesh):
    c = one("%ar = f32[4]{0} all-reduce(%p), replica_groups={}, to_apply=%add", mesh)
    assert c.axes == ("X", "Y")


def test_iota_groups(mesh):
    y = one("%ag = f32[16,8]{1,0} all-gather(%p), replica_groups=[2,4]<=[8], dimensions={0}", mesh)
    assert (y.kind, y.axes, y.nbytes) == ("AllGather", ("Y",), 512)
    # arange(8).reshape(2,4).T -> {0,4},{1,5},{2,6},{3,7}: the X pairs
    x = one("%rs = f32[2,8]{1,0} reduce-scatter(%p), replica_groups=[4,2]<=[2,4]T(1,0), "
            "dimensions={0}, to_apply=%add", mesh)
    assert (x.kind, x.axes, x.nbytes) == ("ReduceScatter", ("X",), 64)
    # arange(8).reshape(4,2).T -> {0,2,4,6},{1,3,5,7}: members differ along X and Y (half of Y)
    odd = one("%ar = f32[2]{0} all-reduce(%p), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=%add",
              mesh)
    assert odd.axes == ("X", "Y")


def test_mesh_form_groups(mesh):
    text = ("%ag = f32[16,8]{1,0} all-gather(%p), channel_id=1, "
            "replica_groups=mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'{axes}'}, dimensions={0}, "
            "use_global_device_ids=true")
    assert one(text.replace("{axes}", "axis_0"), mesh).axes == ("X",)
    assert one(text.replace("{axes}", "axis_2"), mesh).axes == ("Y",)
    # sub-axes of one 8-wide axis: (1)4 is the minor 4 (= Y), (4)2 the major 2 (= X)
    sub = "%ar = f32[2]{0} all-reduce(%p), replica_groups=mesh['a'=8] {'a':(SUB)}, to_apply=%add"
    assert one(sub.replace("(SUB)", "(1)4"), mesh).axes == ("Y",)
    assert one(sub.replace("(SUB)", "(4)2"), mesh).axes == ("X",)
    # explicit device order: mesh position q holds partition device_ids[q]
    listed = ("%ar = f32[2]{0} all-reduce(%p), replica_groups=mesh['a'=2,'b'=4], "
              "device_ids=(0,4,1,5,2,6,3,7) {'a'}, to_apply=%add")
    assert one(listed, mesh).axes == ("Y",)
    # as XLA prints a transposed iota: arange(8).reshape(2,4).T -> positions hold 0,4,1,5,...
    iota = ("%ar = f32[2]{0} all-reduce(%p), replica_groups=mesh['axis_0'=1,'axis_1'=4,"
            "'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_BB'}, to_apply=%add")
    assert one(iota.replace("BB", "1"), mesh).axes == ("Y",)
    assert one(iota.replace("BB", "2"), mesh).axes == ("X",)


def test_tuple_results_sum_their_bytes(mesh):
    c = one("%a2a = (f32[4,8]{1,0}, f32[4]{0}, /*index=2*/s8[10]{0}) all-to-all(%a, %b, %c), "
            "channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}", mesh)
    assert c.kind == "AllToAll"
    assert c.nbytes == 4 * 8 * 4 + 4 * 4 + 10
    assert c.shape == "(f32[4,8], f32[4], s8[10])"


def test_async_pairs_count_once_and_only_outputs(mesh):
    text = "\n".join([
        # all-gather-start result = (operand, output): only the f32[16,8] output counts
        "%ags = (f32[8,8]{1,0}, f32[16,8]{1,0}) all-gather-start(%p), channel_id=1, "
        "replica_groups={{0,4},{1,5},{2,6},{3,7}}, dimensions={0}, use_global_device_ids=true",
        "%agd = f32[16,8]{1,0} all-gather-done(%ags)",
        "%ars = bf16[4,4]{1,0} all-reduce-start(%q), replica_groups=[2,4]<=[8], to_apply=%add",
        "%ard = bf16[4,4]{1,0} all-reduce-done(%ars)",
        # collective-permute-start result = (operand, output, contexts)
        "%cps = (f32[2,2]{1,0}, f32[2,2]{1,0}, u32[], u32[]) collective-permute-start(%r), "
        "source_target_pairs={{0,1},{1,2},{2,3},{3,0},{4,5},{5,6},{6,7},{7,4}}",
        "%cpd = f32[2,2]{1,0} collective-permute-done(%cps)",
    ])
    found = hlo_collectives(text, mesh)
    assert found == [
        HloCollective("AllGather", ("X",), 512, "f32[16,8]"),
        HloCollective("AllReduce", ("Y",), 32, "bf16[4,4]"),
        HloCollective("CollectivePermute", ("Y",), 16, "f32[2,2]"),
    ]


def test_collective_permute_axes(mesh):
    x = one("%cp = f32[8]{0} collective-permute(%p), channel_id=1, "
            "source_target_pairs={{0,4},{4,0},{1,5},{5,1},{2,6},{6,2},{3,7},{7,3}}", mesh)
    assert (x.kind, x.axes, x.nbytes) == ("CollectivePermute", ("X",), 32)
    diag = one("%cp = f32[8]{0} collective-permute(%p), source_target_pairs={{0,5}}", mesh)
    assert diag.axes == ("X", "Y")


def test_other_lines_are_ignored(mesh):
    text = "\n".join([
        "HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}",
        "ENTRY %main (p: f32[8]) -> f32[8] {",
        "  %p = f32[8]{0} parameter(0), sharding={devices=[2,4]<=[8]}",
        "  %f = f32[8]{0} fusion(%all-reduce.1), kind=kLoop, calls=%fused_all-reduce",
        "  %d = f32[8]{0} all-reduce-done(%all-reduce-start)",
        "  ROOT %t = (f32[8]{0}) tuple(%f)",
        "}",
    ])
    assert hlo_collectives(text, mesh) == []


def test_bad_input(mesh):
    with pytest.raises(ValueError, match="str"):
        hlo_collectives(b"all-reduce", mesh)
    with pytest.raises(ValueError, match="Mesh"):
        hlo_collectives("", {"X": 2, "Y": 4})
    with pytest.raises(ValueError, match="device 9"):
        hlo_collectives("%a = f32[2]{0} all-reduce(%p), replica_groups={{0,9}}", mesh)
    with pytest.raises(ValueError, match="element type"):
        hlo_collectives("%a = q7[2]{0} all-reduce(%p), replica_groups={}", mesh)
    with pytest.raises(ValueError, match="NamedSharding"):
        compiled_collectives(lambda a: a, jnp.ones(4))
    with pytest.raises(ValueError, match="HloCollective"):
        summarize(["AllGather"])


def test_summarize_groups_repeats():
    ag = HloCollective("AllGather", ("X",), 4096, "f32[32,32]")
    ar = HloCollective("AllReduce", ("X", "Y"), 64, "f32[16]")
    assert summarize([ag, ar, ag]) == ["AllGather over X: 2 x 4 KiB", "AllReduce over XY: 1 x 64 B"]


# --------------------------------------------------------------------------- real compiles

def sharded(mesh, spec, shape=(16, 8)):
    return jax.device_put(jnp.ones(shape, jnp.float32), NamedSharding(mesh, spec))


def smap(mesh, f, in_spec, out_spec):
    return jax.shard_map(f, mesh=mesh, in_specs=in_spec, out_specs=out_spec)


def test_compiled_all_gather(mesh):
    x = sharded(mesh, P("X", None))
    found = compiled_collectives(lambda a: a * 2, x, out_shardings=NamedSharding(mesh, P()))
    assert [(c.kind, c.axes, c.nbytes) for c in found] == [("AllGather", ("X",), 16 * 8 * 4)]


def test_compiled_psum_is_all_reduce_over_y(mesh):
    f = smap(mesh, lambda a: jax.lax.psum(a, "Y"), P("X", "Y"), P("X", None))
    found = compiled_collectives(f, sharded(mesh, P("X", "Y")))
    assert [(c.kind, c.axes, c.nbytes) for c in found] == [("AllReduce", ("Y",), 8 * 2 * 4)]


def test_compiled_psum_scatter(mesh):
    f = smap(mesh, lambda a: jax.lax.psum_scatter(a, "Y", scatter_dimension=0, tiled=True),
             P("X", None), P(("X", "Y"), None))
    found = compiled_collectives(f, sharded(mesh, P("X", None)))
    assert [(c.kind, c.axes, c.nbytes) for c in found] == [("ReduceScatter", ("Y",), 2 * 8 * 4)]


def test_compiled_all_to_all(mesh):
    f = smap(mesh, lambda a: jax.lax.all_to_all(a, "Y", 0, 1, tiled=True), P("X", None),
             P("X", "Y"))
    found = compiled_collectives(f, sharded(mesh, P("X", None)))
    # the local f32[8,8] block goes out as four f32[2,8] pieces: 256 bytes in all
    assert [(c.kind, c.axes, c.nbytes) for c in found] == [("AllToAll", ("Y",), 8 * 8 * 4)]


def test_compiled_ppermute(mesh):
    ring = [(i, (i + 1) % 4) for i in range(4)]
    f = smap(mesh, lambda a: jax.lax.ppermute(a, "Y", ring), P("X", "Y"), P("X", "Y"))
    found = compiled_collectives(f, sharded(mesh, P("X", "Y")))
    assert [(c.kind, c.axes, c.nbytes) for c in found] == [("CollectivePermute", ("Y",), 64)]
    g = smap(mesh, lambda a: jax.lax.ppermute(a, "X", [(0, 1), (1, 0)]), P("X", "Y"), P("X", "Y"))
    assert [c.axes for c in compiled_collectives(g, sharded(mesh, P("X", "Y")))] == [("X",)]


def test_groups_are_partition_numbers_not_device_ids():
    """On a mesh whose devices are not in id order, groups still follow mesh positions."""
    devices = np.array(jax.devices()[:8]).reshape(4, 2).T    # ids [[0,2,4,6],[1,3,5,7]]
    mesh = Mesh(devices, ("X", "Y"), axis_types=(AxisType.Auto,) * 2)
    f = smap(mesh, lambda a: jax.lax.psum(a, "Y"), P("X", "Y"), P("X", None))
    assert [c.axes for c in compiled_collectives(f, sharded(mesh, P("X", "Y")))] == [("Y",)]


def test_mesh_keyword_and_abstract_args(mesh):
    spec = jax.ShapeDtypeStruct((16, 8), jnp.float32, sharding=NamedSharding(mesh, P(None, "Y")))
    found = compiled_collectives(lambda a: a.sum(axis=1), spec, mesh=mesh,
                                 out_shardings=NamedSharding(mesh, P()))
    assert [(c.kind, c.axes) for c in found] == [("AllReduce", ("Y",))]

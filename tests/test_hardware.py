import dataclasses

import pytest

from scalebook.hardware import (CATALOG, Chip, bytes_per_element, canonical_dtype, chip_names,
                                cuda_core_flops, get_chip)


@pytest.mark.parametrize("spelling, name", [
    ("H100", "H100"), ("h100-sxm", "H100"), ("H100 SXM", "H100"), ("TPU v5e", "TPU v5e"),
    ("v5e", "TPU v5e"), ("trillium", "TPU v6e"), ("TPU_v5p", "TPU v5p"), ("tpu v4", "TPU v4p"),
    ("b200", "B200"), ("A100-80GB", "A100"), ("v3", "TPU v3"), ("H200", "H200"), ("V100", "V100"),
])
def test_get_chip_accepts_usual_spellings(spelling, name):
    assert get_chip(spelling).name == name


def test_catalog_has_the_planned_chips():
    assert set(chip_names()) == {"TPU v3", "TPU v4p", "TPU v5e", "TPU v5p", "TPU v6e",
                                 "V100", "A100", "H100", "H200", "B200"}


@pytest.mark.parametrize("bad", ["H900", "tpu v9", "", "   ", None, 3])
def test_unknown_chip_lists_the_known_ones(bad):
    with pytest.raises(ValueError) as err:
        get_chip(bad)
    if isinstance(bad, str) and bad.strip():
        assert "known chips" in str(err.value) and "TPU v5e" in str(err.value)


def test_chip_passes_through():
    chip = get_chip("v5e")
    assert get_chip(chip) is chip


def test_every_chip_names_a_source_and_figures_are_si():
    for chip in CATALOG:
        assert chip.sources, chip.name
        assert chip.hbm_bytes > 1e9 and chip.hbm_bandwidth > 1e11
        assert all(f > 1e13 for f in chip.flops_per_s.values())


# Figures from shared/facts/hardware.md (dense FLOPs/s, bytes/s).
@pytest.mark.parametrize("name, dtype, flops, hbm_bw", [
    ("TPU v5e", "bf16", 1.97e14, 8.1e11), ("TPU v5e", "int8", 3.94e14, 8.1e11),
    ("TPU v5p", "bf16", 4.59e14, 2.8e12), ("TPU v5p", "int8", 9.18e14, 2.8e12),
    ("TPU v4p", "bf16", 2.75e14, 1.2e12), ("TPU v6e", "bf16", 9.2e14, 1.6e12),
    ("TPU v3", "bf16", 1.4e14, 9.0e11), ("V100", "fp16", 1.25e14, 9.0e11),
    ("A100", "bf16", 3.12e14, 2.0e12), ("H100", "bf16", 9.89e14, 3.35e12),
    ("H100", "fp8", 1.979e15, 3.35e12), ("H200", "bf16", 9.89e14, 4.8e12),
    ("B200", "bf16", 2.25e15, 8.0e12), ("B200", "fp4", 9.0e15, 8.0e12),
])
def test_catalog_figures_match_vetted_facts(name, dtype, flops, hbm_bw):
    chip = get_chip(name)
    assert chip.flops(dtype) == flops
    assert chip.hbm_bandwidth == hbm_bw


def test_h100_catalog_holds_dense_not_sparse_flops():
    # The spec sheet prints 1,979 TFLOP/s bf16 "with sparsity"; the catalog must hold 989.
    assert get_chip("H100").flops("bf16") == pytest.approx(9.89e14)
    assert get_chip("H100").flops("bf16") != pytest.approx(1.979e15)


def test_link_bandwidths():
    v5p = get_chip("v5p")
    assert v5p.link_bandwidth_one_way == 9.0e10
    assert v5p.link_bandwidth_bidirectional == 1.8e11
    h100 = get_chip("H100")
    assert h100.interconnect_bandwidth_one_way == pytest.approx(4.5e11)  # 18 x 25 GB/s
    assert get_chip("B200").interconnect_bandwidth_one_way == pytest.approx(9.0e11)


def test_unknown_dtype_for_chip_names_the_ones_it_has():
    with pytest.raises(ValueError, match="V100 has no bf16.*fp16"):
        get_chip("V100").flops("bf16")
    with pytest.raises(ValueError, match="unknown dtype 'bf17'"):
        get_chip("H100").flops("bf17")


def test_replace_overrides_and_merges_flops():
    v5e = get_chip("v5e")
    mine = v5e.replace(hbm_bandwidth=8.2e11, flops_per_s={"bf16": 2e14})
    assert mine.hbm_bandwidth == 8.2e11 and mine.flops("bf16") == 2e14
    assert mine.flops("int8") == v5e.flops("int8")
    assert v5e.hbm_bandwidth == 8.1e11  # the catalog entry is untouched
    with pytest.raises(ValueError, match="no field"):
        v5e.replace(hbm_speed=1.0)
    with pytest.raises(ValueError, match="hbm_bandwidth must be positive"):
        v5e.replace(hbm_bandwidth=0)
    with pytest.raises(ValueError, match="must be positive"):
        v5e.replace(flops_per_s={"bf16": -1})


def test_chip_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_chip("H100").hbm_bandwidth = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        get_chip("H100").flops_per_s["bf16"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("dtype, size", [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1),
                                         ("int8", 1), ("int4", 0.5), ("bfloat16", 2),
                                         ("float32", 4), ("FP8", 1)])
def test_bytes_per_element(dtype, size):
    assert bytes_per_element(dtype) == size


@pytest.mark.parametrize("bad", ["int3", "", "bf 16", None, 2])
def test_unknown_dtype_raises(bad):
    with pytest.raises(ValueError, match="dtype"):
        bytes_per_element(bad)


def test_canonical_dtype():
    assert canonical_dtype("bfloat16") == "bf16"
    assert canonical_dtype(" INT8 ") == "int8"


def test_cuda_core_flops_h100():
    # 132 SMs x 128 fp32 cores x 2 FLOPs/FMA x 1.98 GHz ~= 66.9 TFLOP/s
    assert cuda_core_flops("H100") == pytest.approx(132 * 128 * 2 * 1.98e9)
    assert get_chip("H100").flops("bf16") / cuda_core_flops("H100") == pytest.approx(14.8, rel=0.01)
    with pytest.raises(ValueError, match="no vetted"):
        cuda_core_flops("v5e")
    with pytest.raises(ValueError, match="no vetted"):
        cuda_core_flops("B200")


def test_chip_validates_its_figures():
    with pytest.raises(ValueError, match="hbm_bytes must be positive"):
        Chip(name="x", vendor="google", hbm_bytes=0, hbm_bandwidth=1, flops_per_s={"bf16": 1},
             link_bandwidth_one_way=1, links_per_chip=1, topology="", max_slice=(1,),
             chips_per_host=1, pcie_bandwidth=1, host_network_bandwidth=1, cores=1)

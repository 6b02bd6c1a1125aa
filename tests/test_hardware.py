import dataclasses

import pytest

from scalebook.hardware import (CATALOG, Chip, bytes_per_element, canonical_dtype, chip_names,
                                cuda_core_flops, get_chip, on_chip_memory, vector_flops,
                                vpu_flops)


@pytest.mark.parametrize("spelling, name", [
    ("H100", "H100"), ("h100-sxm", "H100"), ("H100 SXM", "H100"), ("TPU v5e", "TPU v5e"),
    ("v5e", "TPU v5e"), ("trillium", "TPU v6e"), ("TPU_v5p", "TPU v5p"), ("tpu v4", "TPU v4p"),
    ("b200", "B200"), ("A100-80GB", "A100"), ("v3", "TPU v3"), ("H200", "H200"), ("V100", "V100"),
    ("ironwood", "TPU7x"), ("tpu7x", "TPU7x"), ("v7", "TPU7x"), ("TPU v7", "TPU7x"),
    ("gb200", "GB200 NVL72"), ("GB300-NVL72", "GB300 NVL72"), ("hgx-b300", "B300"),
    ("mi300x", "MI300X"), ("MI325X", "MI325X"), ("Instinct MI355X", "MI355X"),
])
def test_get_chip_accepts_usual_spellings(spelling, name):
    assert get_chip(spelling).name == name


def test_catalog_has_the_planned_chips():
    assert set(chip_names()) == {"TPU v3", "TPU v4p", "TPU v5e", "TPU v5p", "TPU v6e", "TPU7x",
                                 "V100", "A100", "H100", "H200", "B200", "B300", "GB200 NVL72",
                                 "GB300 NVL72", "MI300X", "MI325X", "MI355X"}


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


def test_cuda_core_flops_b200_matches_its_datasheet_fp32():
    # the clock is derived from the HGX B200 datasheet's 75 TFLOPS of FP32 over 148 x 128 cores
    assert cuda_core_flops("B200") == pytest.approx(148 * 128 * 2 * 1.98e9)
    assert cuda_core_flops("B200") == pytest.approx(75e12, rel=0.005)


def test_chip_validates_its_figures():
    with pytest.raises(ValueError, match="hbm_bytes must be positive"):
        Chip(name="x", vendor="google", hbm_bytes=0, hbm_bandwidth=1, flops_per_s={"bf16": 1},
             link_bandwidth_one_way=1, links_per_chip=1, topology="", max_slice=(1,),
             chips_per_host=1, pcie_bandwidth=1, host_network_bandwidth=1, cores=1)


# --------------------------------------------------------------------------- FMA convention

def test_cuda_core_flops_fma_convention():
    # H100 SXM: 132 SMs x 128 fp32 cores x 1.98e9 Hz = 3.345e13 FMA/s (one op per core per cycle)
    assert cuda_core_flops("H100", fma_flops=1) == pytest.approx(132 * 128 * 1.98e9)
    assert cuda_core_flops("H100", fma_flops=1) == pytest.approx(3.35e13, rel=0.01)
    # counting an FMA as two FLOPs: 2 x 3.345e13 = 6.69e13; NVIDIA's datasheet prints 67 TFLOPS fp32
    assert cuda_core_flops("H100", fma_flops=2) == pytest.approx(2 * 132 * 128 * 1.98e9)
    assert cuda_core_flops("H100", fma_flops=2) == pytest.approx(67e12, rel=0.01)
    # the default is unchanged: FMA = 2 FLOPs
    assert cuda_core_flops("H100") == cuda_core_flops("H100", fma_flops=2)
    # A100: 108 x 64 x 1.41e9 = 9.75e12 FMA/s; x 2 = 19.5 TFLOPS, the datasheet's fp32 figure
    assert cuda_core_flops("A100") == pytest.approx(19.5e12, rel=0.01)


@pytest.mark.parametrize("bad", [0, 3, True, 2.5, "2", None])
def test_cuda_core_flops_refuses_other_fma_counts(bad):
    with pytest.raises(ValueError, match="fma_flops must be 1 .* or 2"):
        cuda_core_flops("H100", fma_flops=bad)


# --------------------------------------------------------------------------- vector units

def test_vpu_flops_v5p_matches_hsym():
    # HSYM part 2, appendix A: 2 cores x 8 sublanes x 128 lanes x 4 ALUs x 1.75e9 Hz
    # = 1.4e13 FLOPs/s
    assert vpu_flops("v5p") == pytest.approx(2 * 8 * 128 * 4 * 1.75e9)
    assert vpu_flops("v5p") == pytest.approx(1.4e13, rel=0.03)


def test_vpu_flops_v5e_is_derived_from_the_layout():
    # 1 core x 8 x 128 x 4 ALUs x 1.5e9 Hz = 6.14e12 FLOPs/s, ~32x below the MXUs' 1.97e14
    assert vpu_flops("v5e") == pytest.approx(8 * 128 * 4 * 1.5e9)
    assert get_chip("v5e").flops("bf16") / vpu_flops("v5e") == pytest.approx(32.1, rel=0.01)


@pytest.mark.parametrize("name", ["v3", "v4p", "v6e"])
def test_vpu_flops_refuses_tpus_without_sourced_figures(name):
    with pytest.raises(ValueError, match="no sourced vpu_alus, core_clock_hz"):
        vpu_flops(name)


def test_vpu_flops_refuses_gpus():
    with pytest.raises(ValueError, match="H100 is a GPU.*cuda_core_flops"):
        vpu_flops("H100")


def test_vector_flops_dispatches_by_vendor():
    assert vector_flops("H100", fma_flops=1) == pytest.approx(132 * 128 * 1.98e9)
    assert vector_flops("H100") == cuda_core_flops("H100")
    assert vector_flops("v5p") == vpu_flops("v5p")
    assert vector_flops("v5p", fma_flops=1) == vpu_flops("v5p")  # no FMA convention on a VPU
    with pytest.raises(ValueError, match="fma_flops"):
        vector_flops("v5p", fma_flops=4)
    assert vector_flops("B200") == cuda_core_flops("B200")
    with pytest.raises(ValueError, match="no sourced"):
        vector_flops("TPU v3")


def test_every_tpu_has_the_8x128_vreg_layout():
    # TPU7x: no sourced vreg layout yet (the JAX TPU Hardware Reference does not list it)
    for chip in CATALOG:
        expected = None if chip.is_gpu or chip.name == "TPU7x" else (8, 128)
        assert chip.vreg_shape == expected, chip.name


# --------------------------------------------------------------------------- on-chip memory

@pytest.mark.parametrize("name, level, nbytes", [
    # shared/facts/hardware.md: H100 256 kB SMEM/L1 and 256 kB registers per SM, L2 about 50 MB
    ("H100", "smem", 256 * 1024), ("H100", "registers", 256 * 1024), ("H100", "l2", 50 * 2**20),
    # NVIDIA A100 whitepaper: 192 KB L1/SMEM and 256 KB registers per SM, 40 MB L2
    ("A100", "smem", 192 * 1024), ("A100", "registers", 256 * 1024), ("A100", "l2", 40 * 2**20),
    ("V100", "smem", 128 * 1024), ("V100", "l2", 6 * 2**20),
    # HSYM part 2: 128 MiB of VMEM on a TPU v5e; JAX TPU Hardware Reference: 64 MiB per v5p core
    ("v5e", "vmem", 128 * 2**20), ("v5p", "vmem", 64 * 2**20), ("v6e", "vmem", 128 * 2**20),
])
def test_on_chip_memory(name, level, nbytes):
    assert on_chip_memory(name, level) == nbytes


def test_on_chip_memory_totals():
    # 132 SMs x 256 KiB = 33 MiB of SMEM/L1 on an H100
    assert on_chip_memory("H100", "smem", total=True) == 132 * 256 * 1024
    # 2 TensorCores x 64 MiB of VMEM on a v5p chip
    assert on_chip_memory("v5p", "vmem", total=True) == 2 * 64 * 2**20
    assert on_chip_memory("H100", "l2", total=True) == on_chip_memory("H100", "l2")  # per chip


def test_a100_l2_is_what_cuda_reports():
    # deviceQuery on an A100-SXM4-80GB reports "L2 Cache Size: 41943040 bytes"
    assert get_chip("A100").l2_bytes == 41943040


def test_on_chip_memory_refuses_clearly():
    with pytest.raises(ValueError, match="unknown on-chip memory level 'l3'; known: vmem, smem"):
        on_chip_memory("H100", "l3")
    with pytest.raises(ValueError, match="H100 has no 'vmem'.*TPUs only"):
        on_chip_memory("H100", "vmem")
    with pytest.raises(ValueError, match="TPU v5e has no 'l2'.*GPUs only"):
        on_chip_memory("v5e", "l2")
    with pytest.raises(ValueError, match="no sourced 'l2' size"):
        on_chip_memory(get_chip("H100").replace(l2_bytes=None), "l2")


def test_new_chip_fields_are_validated():
    v5e = get_chip("v5e")
    with pytest.raises(ValueError, match="vmem_bytes_per_core must be positive or None"):
        v5e.replace(vmem_bytes_per_core=0)
    with pytest.raises(ValueError, match="vreg_shape must be"):
        v5e.replace(vreg_shape=(8,))
    with pytest.raises(ValueError, match="vreg_shape must be"):
        v5e.replace(vreg_shape=(True, 128))
    assert v5e.replace(core_clock_hz=1.0e9).core_clock_hz == 1.0e9
    assert vpu_flops(v5e.replace(core_clock_hz=1.0e9)) == pytest.approx(8 * 128 * 4 * 1.0e9)


def test_interconnect_and_wraparound_rule_are_explicit_fields():
    """Collectives read these fields, not the vendor or the name (issue 25)."""
    from scalebook.hardware import (FULL_MESH, ICI_TORUS, NVLINK_MESH, NVLINK_SWITCH,
                                    WRAP_FULL_AXIS, WRAP_WHOLE_CUBES)
    rules = {c.name: (c.interconnect, c.wraparound_rule, c.nics_per_host) for c in CATALOG}
    for name in ("TPU v4p", "TPU v5p", "TPU7x"):
        assert rules[name] == (ICI_TORUS, WRAP_WHOLE_CUBES, None), name
    for name in ("TPU v3", "TPU v5e", "TPU v6e"):
        assert rules[name] == (ICI_TORUS, WRAP_FULL_AXIS, None), name
    assert rules["V100"] == (NVLINK_MESH, None, 8)
    for name in ("A100", "H100", "H200", "B200", "B300"):
        assert rules[name] == (NVLINK_SWITCH, None, 8), name
    for name in ("GB200 NVL72", "GB300 NVL72"):
        assert rules[name] == (NVLINK_SWITCH, None, 72), name
    for name in ("MI300X", "MI325X", "MI355X"):
        assert rules[name] == (FULL_MESH, None, 8), name
    # a renamed v5p keeps its rule: nothing is read from a trailing "p"
    renamed = get_chip("v5p").replace(name="custom torus")
    from scalebook.torus import axis_wraps
    assert axis_wraps(renamed, (4, 4, 8)) == (True,) * 3
    assert axis_wraps(renamed, (2, 4, 4)) == (False,) * 3
    assert get_chip("H100").nic_bandwidth_per_chip == pytest.approx(5e10)
    assert get_chip("v5p").nic_bandwidth_per_chip == pytest.approx(6.25e9)
    with pytest.raises(ValueError, match="interconnect must be one of"):
        get_chip("H100").replace(interconnect="pcie")
    with pytest.raises(ValueError, match="needs a wraparound_rule"):
        get_chip("v5e").replace(wraparound_rule=None)
    with pytest.raises(ValueError, match="nics_per_host"):
        get_chip("H100").replace(nics_per_host=0)

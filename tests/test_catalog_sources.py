"""Every catalog figure names its source (``Chip.cited``), and the chips added for 2026 hold the
figures their vendors publish, per chip and dense."""

import dataclasses

import pytest

from scalebook.hardware import (CATALOG, FIGURE_FIELDS, FULL_MESH, GiB, NVLINK_SWITCH,
                                WRAP_WHOLE_CUBES, cuda_core_flops, get_chip, on_chip_memory,
                                uncited_figures, vector_flops)


@pytest.mark.parametrize("chip", CATALOG, ids=lambda c: c.name)
def test_no_catalog_figure_is_without_a_source(chip):
    assert uncited_figures(chip) == ()
    for figure in chip.figures:
        assert chip.source_of(figure).strip(), (chip.name, figure)


@pytest.mark.parametrize("chip", CATALOG, ids=lambda c: c.name)
def test_a_citation_names_a_figure_the_chip_holds(chip):
    # a stale citation (a figure removed, a dtype dropped) is as wrong as a missing one
    assert set(chip.cited) <= set(chip.figures), chip.name


def test_the_check_fails_for_a_figure_without_a_source():
    h100 = get_chip("H100")
    bare = h100.replace(cited={k: v for k, v in h100.cited.items() if k != "hbm_bandwidth"})
    assert uncited_figures(bare) == ("hbm_bandwidth",)
    with pytest.raises(ValueError, match="hbm_bandwidth has no source"):
        bare.source_of("hbm_bandwidth")
    # a figure added without its source is caught too: a new dtype, a newly filled field
    assert uncited_figures(h100.replace(flops_per_s={"fp4": 1e16})) == ("flops_per_s.fp4",)
    assert uncited_figures(get_chip("TPU v3").replace(vpu_alus=4)) == ("vpu_alus",)


def test_figures_lists_numeric_fields_and_each_dtype():
    chip = get_chip("TPU7x")
    assert "hbm_bytes" in chip.figures and "flops_per_s.fp8" in chip.figures
    assert "vmem_bytes_per_core" not in chip.figures  # None: nothing to cite
    assert "slice_shapes" in chip.figures
    assert "slice_shapes" not in get_chip("H100").figures  # empty: nothing to cite
    with pytest.raises(ValueError, match="holds no figure 'vmem_bytes_per_core'"):
        chip.source_of("vmem_bytes_per_core")


@pytest.mark.parametrize("bad", [{"hbm": "x"}, {"flops_per_s.fp3": "x"}, {"hbm_bytes": ""},
                                 {"hbm_bytes": None}])
def test_cited_refuses_unknown_names_and_empty_sources(bad):
    with pytest.raises(ValueError, match="cited names no figure|must be non-empty text"):
        get_chip("H100").replace(cited=bad)


def test_every_numeric_field_is_a_figure():
    numeric = {f.name for f in dataclasses.fields(CATALOG[0])
               if f.type in ("float", "int", "float | None", "int | None", "tuple[int, ...]",
                             "tuple[int, int] | None", "tuple[tuple[int, ...], ...]")}
    assert numeric == set(FIGURE_FIELDS)


# --------------------------------------------------------------------------- 2026 chips

def test_tpu7x_per_google_tpu7x_page():
    chip = get_chip("ironwood")
    assert chip.hbm_bytes == 192 * 2 ** 30 == 192 * GiB  # GiB, as Google prints it
    assert chip.hbm_bandwidth == pytest.approx(7.38e12)
    assert chip.flops("bf16") == pytest.approx(2.307e15)
    assert chip.flops("fp8") == pytest.approx(4.614e15)
    # 1,200 GB/s of ICI per chip, both directions, over six torus links
    assert 2 * chip.interconnect_bandwidth_one_way == pytest.approx(1.2e12)
    assert chip.chips_per_host == 4 and chip.cores == 2
    assert chip.wraparound_rule == WRAP_WHOLE_CUBES
    assert 16 * 24 * 24 == 9216 and chip.max_slice == (16, 24, 24)
    assert chip.nic_bandwidth_per_chip == pytest.approx(100e9 / 8)  # 100 Gb/s DCN per chip


@pytest.mark.parametrize("name, hbm, bf16, fp8, fp4", [
    ("GB200 NVL72", 13.4e12 / 72, 2.5e15, 5e15, 1e16),
    ("GB300 NVL72", 20e12 / 72, 2.5e15, 5e15, 1.5e16),
])
def test_nvl72_per_gpu_is_the_rack_over_72(name, hbm, bf16, fp8, fp4):
    chip = get_chip(name)
    assert chip.chips_per_host == 72 and chip.max_slice == (72,) and chip.nics_per_host == 72
    assert chip.hbm_bytes == pytest.approx(hbm)
    assert chip.hbm_bandwidth == pytest.approx(8e12)  # 576 TB/s / 72
    assert (chip.flops("bf16"), chip.flops("fp8"), chip.flops("fp4")) == pytest.approx(
        (bf16, fp8, fp4))
    # NVLink 5: 1.8 TB/s per GPU both ways = 18 links x 50 GB/s each way
    assert chip.links_per_chip == 18 and chip.link_bandwidth_one_way == 5e10
    assert 72 * 2 * chip.interconnect_bandwidth_one_way == pytest.approx(130e12, rel=0.01)
    assert chip.interconnect == NVLINK_SWITCH and chip.switch_reduction


def test_nvl72_nics_connectx7_then_connectx8():
    assert get_chip("GB200 NVL72").nic_bandwidth_per_chip == pytest.approx(400e9 / 8)
    assert get_chip("GB300 NVL72").nic_bandwidth_per_chip == pytest.approx(800e9 / 8)
    assert get_chip("B300").nic_bandwidth_per_chip == pytest.approx(800e9 / 8)


def test_b300_is_an_8_gpu_hgx_node():
    chip = get_chip("B300")
    assert chip.chips_per_host == 8 and chip.switch_reduction
    # Blackwell Ultra's uplift is fp4 only: bf16 and fp8 as the HGX B200
    b200 = get_chip("B200")
    assert chip.flops("bf16") == b200.flops("bf16") and chip.flops("fp8") == b200.flops("fp8")
    assert chip.flops("fp4") == pytest.approx(1.5 * b200.flops("fp4"))
    assert "int8" not in chip.dtypes


def test_b200_models_the_hgx_node_180_gb():
    assert get_chip("B200").hbm_bytes == 180e9


@pytest.mark.parametrize("name, hbm, hbm_bw, bf16, fp8, cus, link", [
    ("MI300X", 192e9, 5.3e12, 1.3074e15, 2.6149e15, 304, 64e9),
    ("MI325X", 256e9, 6.0e12, 1.3074e15, 2.6149e15, 304, 64e9),
    ("MI355X", 288e9, 8.0e12, 2.5166e15, 5.0332e15, 256, 76.8e9),
])
def test_amd_dense_figures_and_infinity_fabric(name, hbm, hbm_bw, bf16, fp8, cus, link):
    chip = get_chip(name)
    assert chip.vendor == "amd" and chip.is_gpu and chip.has_nvlink_domain
    assert (chip.hbm_bytes, chip.hbm_bandwidth, chip.cores) == (hbm, hbm_bw, cus)
    assert chip.flops("bf16") == pytest.approx(bf16) and chip.flops("fp8") == pytest.approx(fp8)
    # a full mesh of 8: seven links, one to each other GPU; the datasheet's per-link figure is
    # both directions together
    assert chip.interconnect == FULL_MESH and chip.links_per_chip == chip.chips_per_host - 1 == 7
    assert chip.link_bandwidth_one_way == pytest.approx(link)
    assert not chip.switch_reduction


@pytest.mark.parametrize("name", ["MI300X", "MI355X"])
def test_amd_gpus_have_no_cuda_cores_or_smem(name):
    with pytest.raises(ValueError, match=f"{name} has no vetted .* an AMD GPU .*no CUDA cores"):
        cuda_core_flops(name)
    with pytest.raises(ValueError, match="no CUDA cores"):
        vector_flops(name)
    with pytest.raises(ValueError, match="modelled for NVIDIA GPUs only"):
        on_chip_memory(name, "smem")


@pytest.mark.parametrize("name", ["B300", "GB200 NVL72", "GB300 NVL72"])
def test_new_nvidia_gpus_refuse_unvetted_on_chip_figures(name):
    with pytest.raises(ValueError, match="no vetted CUDA-core count"):
        cuda_core_flops(name)
    with pytest.raises(ValueError, match="no sourced 'l2'"):
        on_chip_memory(name, "l2")

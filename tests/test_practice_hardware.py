"""Part 2's worked problems (scalebook/practice/hardware.py) against numbers worked by hand
from the catalog, and the chapter's outline they hang on. The generic contract of every
practice problem (slips, hints, draws) is tests/test_practice.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scalebook import get_chip
from scalebook.practice import CHAPTERS, check, draw, get_problem
from scalebook.practice.hardware import WRAP_CASES, _wrap

CHAPTER = Path(__file__).resolve().parents[1] / "book" / "hardware.md"
GIB = 2.0**30


def _expected(problem_id: str, seed: int = 0) -> dict[str, float]:
    problem = get_problem(problem_id)
    v = draw(problem, seed)
    return {part.answer: float(part.expected(v)) for part in problem.parts}


#: Which slice axes are rings, by Google's rule: on v4p/v5p only slices of whole 4x4x4 cubes are
#: tori; on v5e/v6e only an axis of the full 16 chips wraps.
RINGS = {"v5p 2x4x4": False, "v5p 4x4x4": True, "v5p 4x4x8": True, "v4p 2x4x4": False,
         "v5e 16x16": True, "v5e 8x16": False, "v6e 4x8": False, "v6e 16x16": True}


@pytest.mark.parametrize("case", sorted(WRAP_CASES))
def test_wraparound_follows_the_slice_shape(case):
    assert set(RINGS) == set(WRAP_CASES)
    problem = get_problem("hardware.wraparound")
    v = draw(problem, 0)
    v = {**dict(v), "case": case, **problem.spec.derive({**dict(v), "case": case})}
    assert _wrap(v) is RINGS[case]


def test_half_a_cube_costs_the_ring():
    """The book's draw is the 4-chip axis of a v5p 2x4x4 slice: a line, so the gather takes
    V·(N−1)/N / W plus 3 hops, twice the bandwidth term of the same axis in a whole cube."""
    v5p = get_chip("TPU v5p")
    [t_ms] = _expected("hardware.wraparound").values()
    line = 1e9 * 3 / 4 / v5p.link_bandwidth_one_way + 3e-6
    assert t_ms == pytest.approx(line * 1e3)


def test_ironwood_hbm_is_read_in_gib():
    tpu7x = get_chip("TPU7x")
    assert tpu7x.hbm_bytes == 192 * GIB
    answers = _expected("hardware.w3")
    assert answers["hbm_gb"] == pytest.approx(192 * GIB / 1e9)
    # 25% kept free, bf16: 0.75 × 206.2 GB / 2 bytes
    assert answers["params_b"] == pytest.approx(0.75 * 192 * GIB / 2 / 1e9)
    problem = get_problem("hardware.w3")
    v = draw(problem, 0)
    [result, _] = check(problem, v, {"hbm_gb": "192"})
    assert not result.passed and "2³⁰" in result.message


def test_an_ironwood_pod():
    answers = _expected("hardware.w11")
    assert answers["cubes"] == 144  # 16 × 24 × 24 = 9,216 chips
    assert answers["fp8_eflops"] == pytest.approx(9216 * get_chip("TPU7x").flops("fp8") / 1e18)
    assert answers["hbm_tb"] == pytest.approx(9216 * 192 * GIB / 1e12)


def test_bidirectional_and_bits():
    h100 = get_chip("H100")
    answers = _expected("hardware.w2")
    assert answers["nvlink_ms"] == pytest.approx(1e9 / 450e9 * 1e3)
    assert answers["nic_ms"] == pytest.approx(1e9 / 50e9 * 1e3)
    assert 2 * h100.interconnect_bandwidth_one_way == 900e9  # what NVIDIA prints
    problem = get_problem("hardware.w2")
    v = draw(problem, 0)
    results = check(problem, v, {"nvlink_ms": repr(1e9 / 900e9 * 1e3),
                                 "nic_ms": repr(1e9 / (400e9) * 1e3)})
    assert [r.passed for r in results] == [False, False]
    assert "halve it" in results[0].message and "bits" in results[1].message


def test_the_rack_is_one_nvlink_domain_and_beats_nodes_of_eight():
    assert get_chip("GB200 NVL72").chips_per_host == 72
    problem = get_problem("hardware.w10")
    for seed in range(10):
        v = draw(problem, seed)
        rack, nodes = (float(p.expected(v)) for p in problem.parts)
        assert rack < nodes
    # book numbers: 4 GB over 72 GPUs at 900 GB/s, 71 steps of 1 µs
    rack_ms = _expected("hardware.w10")["rack_ms"]
    assert rack_ms == pytest.approx((4e9 * 71 / 72 / 900e9 + 71e-6) * 1e3)


def test_the_rack_token_floor():
    gb200 = get_chip("GB200 NVL72")
    answers = _expected("hardware.w12")
    assert answers["token_ms"] == pytest.approx(405e9 * 2 / (72 * gb200.hbm_bandwidth) * 1e3)
    assert answers["fewest_gpus"] == -(-405e9 * 2 // gb200.hbm_bytes)


def test_clock_and_on_chip_memory():
    h100 = get_chip("H100")
    clock = _expected("hardware.w4")
    assert clock["fp32_tflops"] == pytest.approx(132 * 128 * 2 * 1.75e9 / 1e12)
    scale = 1.75e9 / h100.boost_clock_hz
    assert clock["bf16_tflops"] == pytest.approx(h100.flops("bf16") * scale / 1e12)
    sram = _expected("hardware.w5")
    assert sram["sram_mib"] == pytest.approx(132 * 256 / 1024 * 2 + 50)
    vpu = _expected("hardware.w6")
    assert vpu["vpu_tflops"] == pytest.approx(2 * 8 * 128 * 4 * 1.75e9 / 1e12)


def test_the_chapter_keeps_its_outline():
    text = CHAPTER.read_text()
    headings = re.findall(r"^(##+ .+)$", text, re.M)
    for heading in ("## Inside a chip", "## What a datasheet's numbers mean",
                    "## How chips connect", "### Scale-up and scale-out",
                    "## Run it: your device against the catalog",
                    "## Reality check", "## Takeaways", "## Problems", "## Further reading"):
        assert heading in headings, heading
    # the colleague's measured table goes under "Reality check", just before the takeaways
    assert headings.index("## Takeaways") == headings.index("## Reality check") + 1
    # the old wraparound rule ("an axis that is a multiple of 4") is gone
    assert "multiple of" not in text.split("## How chips connect")[1].split("## The catalog")[0]
    worked = [p.worked for p in CHAPTERS["hardware"] if p.worked]
    assert len(worked) >= 10
    for n in worked:
        assert f"**{n}. {{glue:text}}`w{n}_title`** {{glue:text}}`w{n}_q`" in text


def test_the_comparison_colours_every_vendor():
    """Part 2's comparison sets AMD beside Google and NVIDIA: each vendor its own colour."""
    from scalebook.live.comparison import OTHER_COLOUR, comparison_series, comparison_state

    state = comparison_state(["TPU7x", "GB200 NVL72", "MI355X"], "flops:fp8")
    colours = comparison_series(state)["colours"]
    assert len(set(colours)) == 3 and OTHER_COLOUR not in colours

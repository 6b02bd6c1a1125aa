"""The built book: every chapter exists, executed cleanly, shows the solver's numbers and its
figures, and renders in a real browser without page errors.

`make test` builds the book (`make book`) before it runs pytest; these tests read
_build/html and never build it themselves, so a missing build is a failure, not a skip.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import pytest

from bookpage import built_page, has_number, visible_text
from live_browser import every_section_rendered

from scalebook import collectives, get_chip, parallelism, roofline, training, transformer
from scalebook.sharding import Mesh, plan_matmul
from scalebook.units import format_seconds

REPO = Path(__file__).resolve().parent.parent
HTML = REPO / "_build" / "html"
SCREENSHOTS = REPO / "_build" / "screenshots"

CHAPTERS = {
    "rooflines": "Part 1 — Rooflines",
    "hardware": "Part 2 — TPUs and GPUs",
    "sharded-matmuls": "Part 3 — Sharded matrix multiplication and collectives",
    "parallelism": "Part 4 — Parallelism strategies for training",
    "transformers": "Part 5 — Transformers at scale",
    "inference": "Part 6 — Inference",
}

pytestmark = [pytest.mark.slow, pytest.mark.book]


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_built_without_errors(name):
    page = built_page(name)
    assert f"<h1>{CHAPTERS[name]}" in page
    text = visible_text(page)
    for bad in ("Traceback", "Error:", "NotImplementedError", "{glue"):
        assert bad not in text, f"{name}: {bad!r} in the page"
    # no output written to stderr (warnings from JAX or matplotlib would show up here)
    assert "output stderr" not in page, f"{name}: a cell wrote to stderr"
    # every image is a file the site ships
    sources = re.findall(r'<img[^>]*\bsrc="([^"]+)"', page)
    assert sources, f"{name}: no figure"
    for src in sources:
        assert (HTML / "book" / src).resolve().is_file(), f"{name}: missing image {src}"
    # the widgets show their PNG, and no widget JavaScript is fetched from a CDN
    assert "application/vnd.jupyter.widget-view+json" not in page
    assert "embed-amd.js" not in page and "require.min.js" not in page
    for section in ("Learning goals", "Takeaways", "Problems", "Further reading"):
        assert f">{section}<" in page, f"{name}: no {section!r} section"


def test_rooflines_numbers_come_from_the_solver():
    text = visible_text(built_page("rooflines"))
    v5e_batch = f"{roofline.critical_batch_size('TPU v5e'):,.0f}"
    h100_batch = f"{roofline.critical_batch_size('H100'):,.0f}"
    wrong = roofline.critical_batch_size("H100") * 2  # the "with sparsity" figure
    d_star = f"{roofline.critical_contracting_dim('TPU v5e'):,.0f}"
    int8_weights = f"{roofline.critical_batch_size('TPU v5e', weight_dtype='int8'):,.0f}"
    for number in (v5e_batch, h100_batch, f"{wrong:,.0f}", d_star, int8_weights):
        assert re.search(rf"\b{re.escape(number)}\b", text), f"{number} not on the page"
    assert v5e_batch == "243" and d_star == "8,756"
    # the measurement ran and printed predicted next to measured
    assert "pred GFLOP/s" in text and "meas GFLOP/s" in text
    assert len(re.findall(r"<img", built_page("rooflines"))) >= 3  # plot, widget, measurement
    assert "hw1-rooflines.ipynb" in built_page("rooflines")


def test_hardware_numbers_come_from_the_solver():
    page = built_page("hardware")
    text = visible_text(page)
    params = transformer.param_count(transformer.llama3_70b()).total
    t_token = format_seconds(roofline.weight_load_time(params * 2, "H100", n_chips=8))
    assert t_token in text
    assert "XLA cost_analysis" in text and "scalebook model" in text
    assert re.search(r"\b1,073,741,824\b", text)  # 2·B·D·F for the cost-analysis matmul
    assert "hw2-hardware.ipynb" in page
    assert len(re.findall(r"<img", page)) >= 3  # two figures and the comparison widget
    # the scale-up domains: 70B on one NVL72 rack, and an Ironwood pod of 9,216 chips
    rack = roofline.weight_load_time(params * 2, "GB200 NVL72", n_chips=72)
    assert format_seconds(rack) in text
    assert has_number(text, "9,216")
    # wraparound by slice shape: an AllGather over the 4-chip axis of a v5p cube and of 2x4x4
    for shape in ((4, 4, 4), (2, 4, 4)):
        ring = collectives.has_wraparound("TPU v5p", 4, shape)
        cost = collectives.collective_cost("AllGather", 1e9, 4, "TPU v5p", wraparound=ring)
        assert format_seconds(cost.time) in text, shape
    assert ">Reality check<" in page and text.count("Answer") >= 12


def test_sharded_matmuls_numbers_come_from_the_solver():
    page = built_page("sharded-matmuls")
    text = visible_text(page)
    # the hook: a bf16[8192, 32768] weight gathered over 16 TPU v5p chips, 1,024 tokens each
    # (one 16-chip axis of a whole-cube slice, so a ring)
    hook = plan_matmul("A[B_X, D]", "W[D_X, F]", Mesh({"X": 16}), contracting="D",
                       shapes={"B": 1024 * 16, "D": 8192, "F": 32768}, chip="TPU v5p",
                       wraparound=True)
    assert format_seconds(hook.compute_time) in text
    assert format_seconds(hook.comms_time) in text
    assert f"{parallelism.critical_batch_per_chip_fsdp('TPU v5p'):,.0f}" == "2,550"
    assert re.search(r"\b2,550\b", text)
    # the JAX cells ran: five shard_map collectives checked against NumPy, the four cases
    # compiled and set beside the planner
    assert text.count("matches NumPy") >= 5
    assert text.count("planner :") >= 4 and text.count("compiled:") >= 4
    assert "hw3-sharding.ipynb" in page
    assert len(re.findall(r"<img", page)) >= 3
    # 1 GB over 32 H100s: NCCL's rail-aligned rings (4.91 ms) beside the staged hierarchy and
    # one flat ring; the page once presented the hierarchy as what NCCL does
    for scheme in ("rail", "hierarchical", "flat"):
        cost = collectives.collective_cost("AllReduce", 1e9, 32, "H100", scheme=scheme)
        assert format_seconds(cost.time) in text, scheme
    assert "rail-aligned" in text


def test_parallelism_numbers_come_from_the_solver():
    page = built_page("parallelism")
    text = visible_text(page)
    assert re.search(r"\b" + re.escape(f"{parallelism.critical_batch_per_chip_fsdp('TPU v5p'):,.0f}")
                     + r"\b", text)
    bubble = parallelism.pipeline_bubble_fraction(4, 16)
    assert f"{100 * bubble:.0f}%" in text or f"{100 * bubble:.1f}%" in text
    # the five training runs and the pipeline printed their loss table and collectives
    for label in ("single", "dp", "fsdp", "tp", "fsdp_tp"):
        assert re.search(rf"\({'abcde'[('single', 'dp', 'fsdp', 'tp', 'fsdp_tp').index(label)]}\) "
                         rf"{label}\b", text), label
    assert "GPipe over 4 stages" in text
    assert "predicted" in text and "compiled" in text
    assert "hw4-parallelism.ipynb" in page
    # the schedule with its backward pass, and communication against batch per strategy
    assert len(re.findall(r"<img", page)) >= 3
    # thresholds per GPU: TP 8 in the node needs 19,780 tokens per replica = 2,472 per GPU,
    # the same as pure DP with rail rings; across v5p pods, 73,440 tokens per pod
    per_gpu = parallelism.data_parallel_critical_batch("H100", 8)
    assert per_gpu == parallelism.data_parallel_critical_batch("H100", 1)
    assert has_number(text, f"{per_gpu:,.0f}") and "per GPU" in text
    assert has_number(text, f"{parallelism.dcn_critical_batch_per_pod('TPU v5p'):,.0f}")
    # activations from the LLaMA block's own tensors: 40.5·D bytes per token for 70B
    block = training.block_activation_bytes_per_token(transformer.llama3_70b(), 8192)
    assert f"{block / 8192:.1f}" in text and "flash-style" in text
    for heading in ("Hybrid sharding", "Gradient accumulation", "Zero bubble", "DualPipe",
                    "Across pods"):
        assert heading in text, heading
    # one bandwidth notation with Part 3: W_axis for the per-axis ring bandwidth, written intact
    assert "C/W_\\text{axis}" in text and " ext{" not in text


# --------------------------------------------------------------------------- a real browser

def _serve(directory: Path):
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output readable
        pass


# Console entries that are not errors of this book, each for a stated reason. None today: the
# book has a favicon (_config.yml) and no repeated inline script (_ext/theme_fixes.py), the
# two sources of console errors on every page before.
_ALLOWED: tuple = ()


@pytest.mark.browser
@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_renders_in_a_browser(browser, name):
    built_page(name)  # fails clearly if the book was not built
    server = _serve(HTML)
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        browser.get(f"{origin}/book/{name}.html")
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        assert CHAPTERS[name] in browser.title
        heading = browser.execute_script("return document.querySelector('h1').textContent")
        assert CHAPTERS[name] in heading
        images = browser.execute_script(
            "return [...document.querySelectorAll('article img')]"
            ".map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        assert images, f"{name}: no <img> in the article"
        broken = [src for src, complete, width in images if not (complete and width > 0)]
        assert not broken, f"{name}: images not rendered: {broken}"

        # MathJax is served from the book's own _static (sphinx-mathjax-offline), so formulas
        # are typeset with no network: wait for MathJax to finish, then look for its output.
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(browser, 20).until(lambda d: d.execute_script(
            "return !!(window.MathJax && MathJax.startup && MathJax.startup.promise)"))
        browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "MathJax.startup.promise.then(() => done(true), () => done(false));")
        typeset = browser.execute_script("return document.querySelectorAll('mjx-container').length")
        assert typeset > 0, f"{name}: no formula was typeset by MathJax"

        # a full-page screenshot, kept as a build artifact: every section at its real height
        with every_section_rendered(browser):
            height = browser.execute_script("return document.documentElement.scrollHeight")
            browser.set_window_size(1300, min(height + 100, 16000))
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            assert browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))

        problems = []
        for entry in browser.get_log("browser"):
            if entry.get("level") != "SEVERE":
                continue
            message = entry.get("message", "")
            if any(pattern.search(message) for pattern in _ALLOWED):
                continue
            problems.append(message)
        assert not problems, f"{name}: page errors: {problems}"
    finally:
        server.shutdown()
        server.server_close()


def test_rooflines_quotes_the_recorded_h100_run():
    """The H100 section reads the recorded run (book/data) and computes its roofline at build
    time: the page's peak and bandwidth are the file's, its datasheet fraction the catalog's."""
    import json

    run = json.loads((Path(__file__).resolve().parent.parent / "book" / "data"
                      / "h100-2026-11-26.json").read_text())
    text = visible_text(built_page("rooflines"))
    assert "The same sweep on an H100" in text
    h100 = get_chip("H100")
    assert f"{run['peak_flops'] / 1e12:.0f} TFLOP/s" in text
    assert f"{run['bandwidth'] / 1e12:.2f} TB/s" in text
    fraction = f"{100 * run['peak_flops'] / h100.flops('bf16'):.0f}"
    assert re.search(rf"\(\s*{fraction}\s*% of the dense datasheet", text)
    assert run["provenance"]["jax"] in text and run["provenance"]["date"] in text

"""How the grader reads and writes notebook text (autograder/sandbox/inside/, autograder/grading/).

Reading: a code cell runs as Jupyter runs it. Valid Python -- continuation lines that begin with
``%`` or ``!=`` included -- runs as written; IPython's syntax (line magics, shell commands,
help) is transformed by IPython itself, in the sandbox, and answered by a stand-in
``get_ipython()``: ``%time`` runs its statement, everything else is skipped with a note on the
cell's stderr; cell magics are refused. Writing: nothing a student wrote in markdown, raw
cells, outputs or attachments reaches the autograded notebook in a form a browser would run,
while ordinary markdown (math, code, links) is kept byte for byte and the submission untouched.

The tests that run submissions need bubblewrap (marked ``sandbox``); the rest need nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile import active_html, fixture  # noqa: E402

from autograder import safe_cells  # noqa: E402
from autograder.grading import check as checker  # noqa: E402
from autograder.grading.autograded import autograded_notebook  # noqa: E402
from autograder.grading.submission import validate  # noqa: E402
from autograder.sandbox import inside as runner  # noqa: E402
from autograder.course import Course  # noqa: E402
from autograder.grading.grade import course_spec, grade_assignment  # noqa: E402
from autograder.sandbox import FreshSandbox, Limits, TemplateSandbox  # noqa: E402

LIMITS = Limits(timeout=30, memory=1 << 30, nproc=64)
A = fixture.ASSIGNMENT


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    return fixture.prepared(tmp_path_factory)


@pytest.fixture(scope="module")
def spec(prepared):
    return course_spec(Course(prepared), A)


# --- reading: code cells as Jupyter runs them ---------------------------------------------------

# Right answers, written with what Jupyter accepts: IPython syntax around q1, continuation lines
# that begin with "%" (q2) and "!=" (q4), and q3's answer bound by a %time statement.
IPYTHON_ANSWERS = {
    "q1-answer": "%matplotlib inline\n!ls /\nlisting = !ls\n"
                 "intensity = peak_flops / hbm_bw\nintensity?\n?",
    "q2-answer": "batch = np.array([1, 2, 4, 8, 16])\n"
                 "times = (2.0 * batch + 1.0\n         % 1000)\nplt.plot(batch, times)",
    "q3-answer": "%time answer = 6",
    "q4-answer": "chip = 'TPU v5e'\nanswer = (10.0 if chip\n          != '' else 0.0)",
}


def ipython_submission(release: dict) -> dict:
    """All right (IPYTHON_ANSWERS), plus a cell magic and a cell after it, of the student's own."""
    nb = fixture.honest(release, **IPYTHON_ANSWERS)
    q1 = next(i for i, c in enumerate(nb["cells"])
              if c["metadata"].get("nbgrader", {}).get("grade_id") == "q1-answer")
    nb["cells"][q1 + 1:q1 + 1] = [
        {"cell_type": "code", "id": "magic", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "%%time\nnever_bound = 1"},
        {"cell_type": "code", "id": "after", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "after_the_magic = 1"},
    ]
    return nb


@pytest.mark.parametrize("source", [
    "x = (7\n     % 4)",
    "ok = (1\n      != 2)",
    "msg = ('%d items'\n       % 3)",
    "flags = (1\n         != 2, 3)",
    "s = '''\n%not a magic\n!not a command\n'''",
    "\n\nx = 1  # leading blank lines",
])
def test_valid_python_runs_as_written(source):
    assert runner.python_source(source) == source
    compile(runner.python_source(source), "<cell>", "exec")


@pytest.mark.parametrize("source", [
    "%matplotlib inline\nx = 1",
    "!ls\nfiles = !ls -la",
    "x = !ls",
    "%time y = 1",
    "value?\n??value",
    "?",
    "  a = 1\n  b = 2",           # Jupyter dedents a wholly indented cell
    "In [1]: w = 5",              # and strips a pasted prompt (valid Python, but not what it runs)
    "def f():\n    %time t = 1\n    return t",
])
def test_ipython_syntax_is_transformed_by_ipython(source):
    from IPython.core.inputtransformer2 import TransformerManager

    assert runner.python_source(source) == TransformerManager().transform_cell(source)


def _run_cells(*sources: str) -> tuple[dict, str]:
    ns: dict = {"__name__": "__main__"}
    ns["get_ipython"] = runner.NotebookShell(ns).get_ipython
    with contextlib.redirect_stderr(io.StringIO()) as err:
        for source in sources:
            exec(runner.compile_cell(source, "<cell>"), ns)
    return ns, err.getvalue()


def test_the_stand_in_shell():
    ns, err = _run_cells("%matplotlib inline\n!ls\nfiles = !ls",
                         "%time y = 6 * 7\nz = %time 2 + 3\nhelp_me = 1\nhelp_me?",
                         "def f():\n    %time local = 1\n    return 1\nf()",
                         "get_ipython().run_line_magic('pip', 'install numpy')")
    assert (ns["files"], ns["y"], ns["z"]) == ([], 42, 5)
    assert "local" not in ns  # %time in a function binds in the function's scope, as in IPython
    assert err.splitlines() == ["[grader: not run] %matplotlib inline", "[grader: not run] !ls",
                                "[grader: not run] !ls", "[grader: not run] %pinfo help_me",
                                "[grader: not run] %pip install numpy"]
    for cell_magic in ("%%time\nx = 1", "\n\n%%bash\nls", "x = 1\n%%bash",
                       "get_ipython().run_cell_magic('time', '', 'x')"):
        with pytest.raises(SyntaxError, match=re.escape(runner.CELL_MAGIC_ERROR)):
            _run_cells(cell_magic)


def test_the_grader_sends_cells_untransformed(spec):
    """IPython's transformation is super-linear on hostile input; it runs in the sandbox, on the
    submission's own time, so the job carries each cell's text as the student wrote it."""
    nb = ipython_submission(spec.release)
    v = validate(spec, json.dumps(nb).encode())
    sent = {s["index"]: s["source"] for s in v.steps if s["kind"] == "code"}
    for i, cell in enumerate(nb["cells"]):
        if i in sent and not cell["metadata"].get("nbgrader", {}).get("locked"):
            assert sent[i] == cell["source"]


@pytest.mark.sandbox
@pytest.mark.parametrize("make", [TemplateSandbox, FreshSandbox], ids=["template", "fresh"])
def test_ipython_code_gets_its_points(spec, make):
    """validate -> the sandbox -> score: honest IPython code earns full marks, its skipped
    commands are noted on the cell's stderr, a cell magic is refused and the next cell runs."""
    nb = ipython_submission(spec.release)
    v = validate(spec, json.dumps(nb).encode())
    sandbox = make()
    try:
        outcome = sandbox.run(LIMITS.job(v.steps), LIMITS)
    finally:
        sandbox.close()
    result, rep = checker.score(spec, "ipython", v, outcome, LIMITS, spec.numbers_for("ipython"))
    assert result.status == "graded", (result.problems, outcome.raw_output[-2000:])
    assert result.scores == fixture.POINTS, result.messages
    index = {c.get("id"): i for i, c in enumerate(nb["cells"])}
    q1 = next(i for i, c in enumerate(nb["cells"])
              if c["metadata"].get("nbgrader", {}).get("grade_id") == "q1-answer")
    assert rep.cells[q1]["error"] is None
    assert rep.cells[q1]["stderr"].splitlines() == [
        "[grader: not run] %matplotlib inline", "[grader: not run] !ls /", "[grader: not run] !ls",
        "[grader: not run] %pinfo intensity", "[grader: not run] ?"]
    magic = rep.cells[index["magic"]]["error"]
    assert (magic["ename"], magic["evalue"]) == ("SyntaxError", runner.CELL_MAGIC_ERROR)
    assert rep.cells[index["after"]]["error"] is None


@pytest.mark.slow
@pytest.mark.sandbox
def test_jupyter_agrees(prepared, tmp_path):
    """The same submission through plain nbgrader autograde (a real IPython kernel) scores the
    same: full marks, as Jupyter runs it."""
    ours = fixture.copy_course(prepared, tmp_path / "ours")
    theirs = fixture.copy_course(prepared, tmp_path / "theirs")
    for root in (ours, theirs):
        fixture.submit(root, "ipython", ipython_submission(fixture.release_notebook(root)))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", A, "--force",
                           f"--CourseDirectory.root={theirs}"], cwd=theirs, capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    grade_assignment(Course(ours), A, limits=LIMITS, progress=False)
    assert fixture.scores_in_gradebook(theirs) == {"ipython": fixture.POINTS}
    assert fixture.scores_in_gradebook(ours) == fixture.scores_in_gradebook(theirs)


# --- writing: no active HTML in the autograded copy ---------------------------------------------

DEFANG = re.compile(r"<(?=[A-Za-z/!?])")


@pytest.mark.parametrize("fragment", [
    "<p>text</p>", "<br>", "<br />", "<img src=\"https://x.org/a.png\" alt=\"a\" width=\"30\">",
    "<a href=\"#sec\">s</a>", "<a href=\"mailto:a@b.c\">m</a>", "<a href=\"../x.ipynb\">r</a>",
    "<th style=\"text-align:right\">x</th>", "<code class=\"language-python\">x</code>",
    "<input class=\"task-list-item-checkbox\" type=\"checkbox\" disabled checked/>",
    "<img src=\"data:image/png;base64,iVBORw0KGgo=\">", "a < b", "x &lt;script&gt;",
])
def test_inert_html_accepts_formatting(fragment):
    assert safe_cells.inert_html(fragment)


@pytest.mark.parametrize("fragment", [
    "<script>x</script>", "<SCRIPT>x</SCRIPT>", "<img src=x onerror=y>", "<img src=x OnLoad=y>",
    "<a href=\"javascript:x\">", "<a href=\" JaVaScRiPt:x\">", "<a href=\"java\tscript:x\">",
    "<a href=\"&#106;avascript:x\">", "<a href=\"javascript&colon;x\">", "<a href=vbscript:x>",
    "<img src=\"data:image/svg+xml;base64,PHN2Zz4=\">", "<a href=\"data:text/html,x\">",
    "<svg>", "<math>", "<iframe>", "<object>", "<embed>", "<style>", "<link>", "<meta>", "<base>",
    "<form>", "<!-- c -->", "<!doctype html>", "<?xml?>", "<img/src=x/onerror=y>",
    "<img src=\"x\"onerror=\"y\">", "<img src=\"a\" alt=\">\" onerror=\"y\">", "<b x=1>",
    "<span style=\"color:red\">", "<input type=\"text\">", "<details ontoggle=x>", "<a target=_blank>",
    "<div class=\"full-credit\">", "a <b", "<b\u00a0onclick=x>",
])
def test_inert_html_refuses_anything_else(fragment):
    assert not safe_cells.inert_html(fragment)


@pytest.mark.parametrize("source", active_html.ACTIVE_MARKDOWN)
def test_active_markdown_is_shown_as_text(source):
    shown = safe_cells.safe_cell_text("markdown", source, {}, safe_cells.RenderBudget(10 ** 6))
    assert shown.startswith(safe_cells.SHOWN_AS_TEXT)
    assert DEFANG.sub("<\u200b", source) in shown  # all of it still readable
    for page in active_html.rendered(shown):
        assert active_html.active_dom(page) == [], page


@pytest.mark.parametrize("source", active_html.ORDINARY)
def test_ordinary_markdown_is_kept(source):
    assert safe_cells.safe_cell_text("markdown", source, {}, safe_cells.RenderBudget(10 ** 6)) == source


def test_autograded_copy_has_no_active_html(spec):
    """Markdown with script, handlers, javascript: links, SVG and an iframe, raw HTML cells, stale
    HTML/SVG/JS/widget outputs and non-image attachments: none of it active in the copy."""
    nb = active_html.active_html_submission(spec.release)
    assert active_html.active_in_notebook(nb)  # the judge sees the attack in the submission
    data = json.dumps(nb).encode()
    v = validate(spec, data)
    result, _ = checker.score(spec, "mallory", v, None, LIMITS, spec.numbers_for("mallory"))
    graded = autograded_notebook(spec, v, result, None)
    assert active_html.active_in_notebook(graded) == []
    text = json.dumps(graded, ensure_ascii=False)
    for source in active_html.ACTIVE_MARKDOWN + active_html.ACTIVE_RAW:
        if "<" in source:  # its markup is defanged wherever it is shown
            assert json.dumps(source, ensure_ascii=False)[1:-1] not in text
    assert "<script" not in text
    import nbformat

    nbformat.validate(nbformat.from_dict(graded))
    kept = [c["source"] for c in graded["cells"] if c["cell_type"] == "markdown"]
    for source in active_html.ORDINARY + ["![plot](attachment:plot.png)"]:
        assert source in kept
    by_id = {c["id"]: c for c in graded["cells"]}
    assert list(by_id["html-markdown-300"]["attachments"]) == ["plot.png"]
    intro = "".join(spec.release["cells"][0]["source"])
    assert intro in kept  # the instructor's own cells are the instructor's


def test_render_budget_bounds_the_work(spec):
    """A submission full of large markdown cells costs the trusted grader bounded time: once
    MAX_RENDER_TOTAL characters have been rendered, nothing more is, and a cell left unchecked
    is shown as text."""
    nb = fixture.honest(spec.release)
    nasty = ("| a " * 1000 + "|\n" + "|-" * 1000 + "|\n" + "[x](<y " * 1000 + "\n") * 4
    assert len(nasty) < safe_cells.MAX_RENDER_CELL
    nb["cells"][1:1] = [{"cell_type": "markdown", "id": f"big{i}", "metadata": {}, "source": nasty}
                        for i in range(40)]
    v = validate(spec, json.dumps(nb).encode())
    result, _ = checker.score(spec, "big", v, None, LIMITS, spec.numbers_for("big"))
    start = time.perf_counter()
    graded = autograded_notebook(spec, v, result, None)
    elapsed = time.perf_counter() - start
    big = [c["source"] for c in graded["cells"] if c["id"].startswith("big")]
    kept = [s for s in big if s == nasty]
    shown = [s for s in big if s.startswith(safe_cells.SHOWN_AS_TEXT)]
    assert len(kept) + len(shown) == 40
    assert 0 < len(kept) * len(nasty) <= safe_cells.MAX_RENDER_TOTAL   # the work is bounded
    print(f"autograded notebook with 40 nasty cells written in {elapsed:.2f} s")


@pytest.mark.sandbox
def test_grading_keeps_the_submission_and_neutralises_its_copy(prepared, tmp_path):
    """grade_assignment end to end: full marks for the right answers, the submitted file byte
    for byte as it was, and an autograded notebook with nothing active in it."""
    course = fixture.copy_course(prepared, tmp_path / "course")
    release = fixture.release_notebook(course)
    folder = fixture.submit(course, "mallory", active_html.active_html_submission(release))
    before = (folder / f"{A}.ipynb").read_bytes()
    report = grade_assignment(Course(course), A, workers=1, limits=LIMITS, progress=False)
    result = report.by_student()["mallory"]
    assert result.status == "graded" and result.scores == fixture.POINTS, result.messages
    assert (folder / f"{A}.ipynb").read_bytes() == before
    graded = json.loads((course / "autograded" / "mallory" / A / f"{A}.ipynb").read_text("utf-8"))
    assert active_html.active_in_notebook(graded) == []
    kept = [c["source"] for c in graded["cells"] if c["cell_type"] == "markdown"]
    assert all(source in kept for source in active_html.ORDINARY)

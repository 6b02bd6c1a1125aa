"""The students' two ways into the course: `make lab` (JupyterLab, where every chapter opens and
runs as a notebook and the homework is at hand) and the built site, where every chapter page
offers its notebook, without outputs, for download.

The site tests read _build/html, which `make test` builds (`make book`) before pytest runs; a
missing build is a failure, not a skip (as in test_book.py).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest
import yaml
from myst_nb.core.read import read_myst_markdown_notebook

pytestmark = pytest.mark.book  # reads the built site (make test: after the build)

REPO = Path(__file__).resolve().parent.parent
HTML = REPO / "_build" / "html"
HOMEWORK = sorted(p.name for p in (REPO / "exercises").iterdir() if p.is_dir())


def _chapters() -> list[str]:
    """The chapters of _toc.yml (``book/rooflines``, ...), in order; the root page is not one."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8"))
    return [ch["file"] for part in toc["parts"] for ch in part["chapters"]]


CHAPTERS = _chapters()


def _code_sources(nb) -> list[str]:
    return [cell.source.strip() for cell in nb.cells if cell.cell_type == "code"]


# --------------------------------------------------------------------------- the extension

def test_blank_notebook_keeps_inputs_and_drops_outputs():
    sys.path.insert(0, str(REPO / "_ext"))
    try:
        from notebook_download import blank_notebook
    finally:
        sys.path.remove(str(REPO / "_ext"))
    text = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
            "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
            "# Title\n\n```{code-cell} ipython3\n:tags: [remove-input]\n\nx = 1\n```\n\nText.\n\n"
            "```{code-cell} ipython3\nprint(x)\n```\n")
    nb = blank_notebook(text)
    nbformat.validate(nb)
    install, check = nb.cells[:2]  # what to install, and a check that stops saying so
    assert install.cell_type == "markdown" and "pip install -r requirements.txt" in install.source
    assert _code_sources(nb) == [check.source, "x = 1", "print(x)"]
    with pytest.raises(ModuleNotFoundError, match="pip install -r requirements.txt"):
        exec(check.source.replace('"scalebook"', '"no_such_package_here"'), {})
    exec(check.source, {})  # here scalebook is installed: the check passes
    assert nb.cells[3].metadata["tags"] == ["remove-input"]
    assert all(c.outputs == [] and c.execution_count is None
               for c in nb.cells if c.cell_type == "code")
    assert "jupytext" not in nb.metadata and nb.metadata["kernelspec"]["name"] == "python3"


def test_blank_notebook_writes_the_glued_values_into_the_prose():
    sys.path.insert(0, str(REPO / "_ext"))
    try:
        from notebook_download import blank_notebook, fill_glue
    finally:
        sys.path.remove(str(REPO / "_ext"))

    def out(text, markdown=None):
        data = {"text/plain": repr(text) if isinstance(text, str) else str(text)}
        if markdown:
            data["text/markdown"] = markdown
        return {"output_type": "display_data", "data": data, "metadata": {}}

    glued = {"node": out("8"), "flops": out(7.9123), "table": out(None, "| a |\n|---|\n| 1 |")}
    prose = ("A node of {glue:text}`node` GPUs, {glue:text}`flops:.2f` PFLOP/s, {glue}`node`.\n\n"
             "```{glue:md} table\n:format: myst\n```\n\nAfter.")
    assert fill_glue(prose, glued) == ("A node of 8 GPUs, 7.91 PFLOP/s, 8.\n\n| a |\n|---|\n"
                                       "| 1 |\n\nAfter.")
    with pytest.raises(KeyError):
        fill_glue("{glue:text}`missing`", glued)
    text = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
            "---\n\nA node of {glue:text}`node` GPUs.\n")
    nb = blank_notebook(text, glued)
    assert nb.cells[-1].source == "A node of 8 GPUs."


def test_a_glued_figure_becomes_its_picture_with_its_description_and_caption():
    """A ``{glue:figure}`` in the downloaded notebook is the build's PNG as a cell attachment,
    described by the alt text the PNG carries, with the caption under it: no directive left."""
    import base64

    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from scalebook.picture import png_bytes

    sys.path.insert(0, str(REPO / "_ext"))
    try:
        from notebook_download import blank_notebook
    finally:
        sys.path.remove(str(REPO / "_ext"))
    figure = Figure()
    figure.add_subplot().plot([1, 2])
    png = base64.b64encode(png_bytes(figure, "Line: 1 to 2")).decode()
    glued = {"fig-x": {"output_type": "display_data", "metadata": {},
                       "data": {"text/plain": "Picture", "image/png": png}}}
    text = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
            "---\n\nBefore.\n\n```{glue:figure} fig-x\n:name: fig-x\n\nWhat to see.\n```\n")
    cell = blank_notebook(text, glued).cells[-1]
    assert cell.source == "Before.\n\n![Line: 1 to 2](attachment:fig-x.png)\n\n*What to see.*"
    assert cell.attachments == {"fig-x.png": {"image/png": png}}


# --------------------------------------------------------------------------- the built site

@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_page_offers_its_notebook_without_outputs(chapter):
    page_path = HTML / f"{chapter}.html"
    if not page_path.is_file():
        pytest.fail(f"{page_path} is missing: build the book first with `make book` "
                    "(`make test` does this before running pytest)")
    page = page_path.read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+\.ipynb)"[^>]*\bclass="[^"]*download-notebook-button', page)
    assert len(links) == 1, f"{chapter}: no (or several) .ipynb download buttons: {links}"
    target = (page_path.parent / links[0]).resolve()
    assert target.is_file(), f"{chapter}: {links[0]} is not in the site"
    assert HTML.resolve() in target.parents

    nb = nbformat.read(target, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, f"{chapter}: no code cells"
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code), \
        f"{chapter}: the downloaded notebook has outputs"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    # the chapter's code cells, as myst-nb (the book build's own reader) reads the source
    source = (REPO / f"{chapter}.md").read_text(encoding="utf-8")
    assert _code_sources(nb)[1:] == _code_sources(read_myst_markdown_notebook(source))
    # whole: the prose shows the build's numbers (no MyST-NB glue roles Jupyter cannot
    # render), and the notebook starts by saying what to install
    prose = "".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert "{glue" not in prose, f"{chapter}: glue placeholders in the downloaded notebook"
    assert "pip install -r requirements.txt" in nb.cells[0].source


# --------------------------------------------------------------------------- make lab

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Lab:
    """A `make lab` server: REST calls with its token, kernel code run over its websocket."""

    def __init__(self, port: int, token: str):
        self.base = f"http://127.0.0.1:{port}"
        self.token = token

    def call(self, method: str, path: str, body: dict | None = None):
        request = urllib.request.Request(
            self.base + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def run_code(self, kernel_id: str, code: str, timeout: float = 120) -> str:
        """Execute ``code`` in the kernel; its stdout (fails on an error reply)."""
        import websocket  # websocket-client, pinned in requirements.txt

        ws = websocket.create_connection(
            f"ws://127.0.0.1:{self.base.rsplit(':', 1)[1]}/api/kernels/{kernel_id}/channels",
            header=[f"Authorization: token {self.token}"], timeout=timeout)
        try:
            msg_id = uuid.uuid4().hex
            ws.send(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                           "session": uuid.uuid4().hex, "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell",
                "content": {"code": code, "silent": False, "store_history": False,
                            "user_expressions": {}, "allow_stdin": False},
            }))
            out, deadline = [], time.monotonic() + timeout
            while time.monotonic() < deadline:
                msg = json.loads(ws.recv())
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])
                elif msg["msg_type"] == "error":
                    pytest.fail("kernel error: " + "\n".join(msg["content"]["traceback"]))
                elif msg["msg_type"] == "execute_reply":
                    assert msg["content"]["status"] == "ok", msg["content"]
                    return "".join(out)
            pytest.fail("the kernel did not answer in time")
        finally:
            ws.close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_make_lab_opens_chapters_as_notebooks_and_lists_the_homework(tmp_path):
    port, token = _free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items()
           if k not in ("XLA_FLAGS", "JAX_PLATFORMS", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    # `make lab` must set the JAX settings itself (the test suite's own are removed above); the
    # user's Jupyter config, data, settings and runtime files stay out of it.
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")):
        env[var] = str(tmp_path / sub)
    log = tmp_path / "lab.log"
    args = f"--no-browser --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_PORT={port}",
                                 f"LAB_ARGS={args}"], cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    lab = _Lab(port, token)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, "make lab exited:\n" + log.read_text(errors="replace")
            try:
                lab.call("GET", "/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "no server:\n" + log.read_text(errors="replace")
                time.sleep(0.5)

        # it listens on loopback only, and asks for the token
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{lab.base}/api/contents/book", timeout=10)
        assert refused.value.code == 403

        for chapter in CHAPTERS:
            model = lab.call("GET", f"/api/contents/{chapter}.md?type=notebook&content=1")
            assert model["type"] == "notebook", chapter
            cells = model["content"]["cells"]
            assert any(c["cell_type"] == "code" and c["source"].strip() for c in cells), chapter
            assert any(c["cell_type"] == "markdown" for c in cells), chapter
            assert model["content"]["metadata"]["kernelspec"]["name"] == "python3"

        for hw in HOMEWORK:
            listing = lab.call("GET", f"/api/contents/exercises/{hw}")
            assert f"{hw}.ipynb" in {item["name"] for item in listing["content"]}, hw
            model = lab.call("GET", f"/api/contents/exercises/{hw}/{hw}.ipynb?content=1")
            assert model["type"] == "notebook" and model["content"]["cells"]

        # a chapter's kernel runs in book/ with the book build's 8 simulated CPU devices
        chapter = CHAPTERS[0]
        session = lab.call("POST", "/api/sessions", {
            "path": f"{chapter}.md", "name": Path(chapter).name, "type": "notebook",
            "kernel": {"name": "python3"}})
        printed = lab.run_code(session["kernel"]["id"], (
            "import os, jax\n"
            "print(jax.device_count(), jax.default_backend(), os.path.basename(os.getcwd()))"))
        assert printed.split() == ["8", "cpu", Path(chapter).parent.name]

        lab.call("POST", "/api/shutdown")
        assert proc.wait(timeout=90) == 0, log.read_text(errors="replace")
        deadline = time.monotonic() + 30  # the kernel goes with the server
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _group_alive(proc.pid), "processes of `make lab` are left running"
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

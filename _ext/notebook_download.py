"""Offer each chapter as a runnable Jupyter notebook (.ipynb) from the built site.

A chapter is a MyST Markdown notebook (``book/*.md`` with ``jupytext`` front matter). For every
such page the HTML build writes ``_sources/<page>.ipynb``: the chapter converted by jupytext,
every code cell with no outputs and no execution count, so a reader downloads the inputs and
runs them in any Jupyter (each chapter sets its own JAX device count before importing JAX).
The page's download menu (sphinx-book-theme's header button) then lists ``.ipynb`` beside the
``.md`` source and the PDF print.

The notebooks are written when the build finishes, so they are the last word on those paths:
the theme's launch buttons, if ever configured, copy the *executed* notebook to the same place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupytext
import nbformat
from myst_nb.core.read import is_myst_markdown_notebook
from sphinx.application import Sphinx

_PAGES_KEY = "notebook_download_pages"


def blank_notebook(source: str) -> nbformat.NotebookNode:
    """The notebook a MyST Markdown notebook's text describes, inputs only: every code cell
    without outputs or execution count, and no jupytext metadata (a plain .ipynb)."""
    nb = jupytext.reads(source, fmt="md:myst")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("jupytext", None)
    return nb


def _note_notebook_page(app: Sphinx, pagename: str, templatename: str,
                        context: dict[str, Any], doctree: Any) -> None:
    """For a notebook page, point the theme's download menu at its .ipynb (runs before the
    theme builds its header buttons) and remember the page for ``_write_notebooks``."""
    if doctree is None or pagename not in app.env.found_docs:
        return
    path = Path(app.env.doc2path(pagename))
    if path.suffix != ".md" or not is_myst_markdown_notebook(path.read_text(encoding="utf-8")):
        return
    context["ipynb_source"] = f"{pagename}.ipynb"
    getattr(app, _PAGES_KEY).add(pagename)


def _write_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for pagename in sorted(getattr(app, _PAGES_KEY)):
        source = Path(app.env.doc2path(pagename)).read_text(encoding="utf-8")
        target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(blank_notebook(source), str(target))


def setup(app: Sphinx) -> dict[str, Any]:
    setattr(app, _PAGES_KEY, set())
    # sphinx-book-theme adds its header buttons at priority 501; the default (500) runs first.
    app.connect("html-page-context", _note_notebook_page, priority=500)
    app.connect("build-finished", _write_notebooks)
    # The pages are noted in the writing process, so writing must stay in this one.
    return {"parallel_read_safe": True, "parallel_write_safe": False}

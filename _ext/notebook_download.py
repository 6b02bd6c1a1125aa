"""Offer each chapter as a runnable Jupyter notebook (.ipynb) from the built site.

A chapter is a MyST Markdown notebook (``book/*.md`` with ``jupytext`` front matter). For every
such page the HTML build writes ``_sources/<page>.ipynb``: the chapter converted by jupytext,
every code cell with no outputs and no execution count, so a reader downloads the inputs and
runs them in any Jupyter (each chapter sets its own JAX device count before importing JAX).

Two things make the download whole rather than a page of placeholders:

- the prose's glued numbers (``{glue:text}`name```, ``{glue:md}`` blocks: MyST-NB roles that
  Jupyter does not render) are replaced by the values the build computed, read from the
  executed page's ``<page>.glue.json``; the cells that glue them still run and recompute them;
- a first cell says what to install, and stops with that message where ``scalebook`` is
  missing, so the notebook runs top to bottom or says why it cannot.
The page's download menu (sphinx-book-theme's header button) then lists ``.ipynb`` beside the
``.md`` source and the PDF print.

The notebooks are written when the build finishes, so they are the last word on those paths:
the theme's launch buttons, if ever configured, copy the *executed* notebook to the same place.
"""

from __future__ import annotations

import ast
import base64
import json
import re
from pathlib import Path
from typing import Any, Mapping

import jupytext
import nbformat
from myst_nb.core.read import is_myst_markdown_notebook
from sphinx.application import Sphinx

from scalebook.picture import png_description

_PAGES_KEY = "notebook_download_pages"


#: The first two cells of every downloaded chapter.
INSTALL_NOTE = (
    "**To run this notebook** you need the course's Python package, `scalebook`, with JAX, "
    "matplotlib and ipywidgets: in a clone of the course repository run `pip install -r "
    "requirements.txt` once (or `make lab`, which also starts JupyterLab), then open this "
    "notebook in that environment. The numbers in the text were computed when the book was "
    "built; the code cells recompute them.")
INSTALL_CHECK = (
    "# What this chapter needs: `pip install -r requirements.txt` in the course repository.\n"
    "import importlib.util\n"
    "if importlib.util.find_spec(\"scalebook\") is None:\n"
    "    raise ModuleNotFoundError(\"this chapter needs the course's package scalebook: in a \"\n"
    "                              \"clone of the course repository run \"\n"
    "                              \"`pip install -r requirements.txt`\")")

#: ``{glue:text}`name``` or ``{glue:text}`name:format```, and the plain ``{glue}`` role.
_GLUE_ROLE = re.compile(r"\{glue(?::(text|md))?\}`([^`:]+)(?::([^`]*))?`")
#: A ``{glue:md}`` (or ``{glue}``) block directive, with its options, fenced by 3+ ` or :.
_GLUE_BLOCK = re.compile(r"^(`{3,}|:{3,})\{glue(?::md)?\}\s+(\S+)[^\n]*\n(?:[^\n]*\n)*?\1[ \t]*$",
                         re.M)

#: A ``{glue:figure}`` directive: its name, its options, and its caption, fenced by 3+ ` or :.
_GLUE_FIGURE = re.compile(r"^(`{3,}|:{3,})\{glue:figure\}\s+(\S+)[^\n]*\n((?:[^\n]*\n)*?)\1[ \t]*$",
                          re.M)


def _figure_markdown(name: str, body: str, output: Mapping[str, Any],
                     attachments: dict[str, Any]) -> str:
    """A glued figure as the notebook's Markdown: the build's PNG as a cell attachment, its
    alt text from the PNG's own description, and the caption (the directive's body less its
    ``:option:`` lines) in italics under it."""
    caption = " ".join(line.strip() for line in body.splitlines()
                       if line.strip() and not line.lstrip().startswith(":"))
    png = output["data"].get("image/png")
    if png is None:
        return f"*{caption}*" if caption else ""
    alt = png_description(base64.b64decode(png)) or caption or name
    attachments[f"{name}.png"] = {"image/png": png}
    alt = alt.replace("[", "(").replace("]", ")")
    picture = f"![{alt}](attachment:{name}.png)"
    return f"{picture}\n\n*{caption}*" if caption else picture


def _plain(output: Mapping[str, Any]) -> str:
    """A glued value's text: its text/plain, a string's quotes removed."""
    text = output["data"].get("text/plain", "")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, str) else text


def fill_glue(markdown: str, glued: Mapping[str, Mapping[str, Any]],
              attachments: dict[str, Any] | None = None) -> str:
    """``markdown`` with every glue role and block replaced by its value from ``glued`` (a
    ``<page>.glue.json``: name -> the output the build recorded). A ``:format`` applies to a
    number as MyST-NB applies it; a ``{glue:figure}`` becomes the build's picture (added to
    ``attachments``, the cell's attachments) with its caption. Raises ``KeyError`` for a name
    nothing glued."""
    found: dict[str, Any] = {} if attachments is None else attachments
    def role(match: re.Match) -> str:
        kind, name, spec = match.groups()
        output = glued[name]
        if kind == "md":
            return output["data"].get("text/markdown", _plain(output)).strip()
        text = _plain(output)
        return format(float(text), spec) if spec else text

    def block(match: re.Match) -> str:
        output = glued[match.group(2)]
        return output["data"].get("text/markdown", _plain(output)).strip()

    def figure(match: re.Match) -> str:
        return _figure_markdown(match.group(2), match.group(3), glued[match.group(2)], found)

    return _GLUE_ROLE.sub(role, _GLUE_BLOCK.sub(block, _GLUE_FIGURE.sub(figure, markdown)))


def blank_notebook(source: str, glued: Mapping[str, Mapping[str, Any]] | None = None
                   ) -> nbformat.NotebookNode:
    """The notebook a MyST Markdown notebook's text describes, inputs only: every code cell
    without outputs or execution count, no jupytext metadata (a plain .ipynb), the glued
    values of ``glued`` written into the prose (:func:`fill_glue`), and the install note and
    check first."""
    nb = jupytext.reads(source, fmt="md:myst")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown" and glued is not None:
            attachments: dict[str, Any] = {}
            cell.source = fill_glue(cell.source, glued, attachments)
            if attachments:
                cell.attachments = attachments
    nb.cells[:0] = [nbformat.v4.new_markdown_cell(INSTALL_NOTE),
                    nbformat.v4.new_code_cell(INSTALL_CHECK)]
    nb.metadata.pop("jupytext", None)
    return nb


def glue_values(app: Sphinx, pagename: str) -> dict[str, Any] | None:
    """What the build glued on ``pagename`` (MyST-NB's ``<page>.glue.json`` beside the executed
    notebook), or None for a page that glues nothing."""
    path = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.glue.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


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
        nbformat.write(blank_notebook(source, glue_values(app, pagename)), str(target))


def setup(app: Sphinx) -> dict[str, Any]:
    setattr(app, _PAGES_KEY, set())
    # sphinx-book-theme adds its header buttons at priority 501; the default (500) runs first.
    app.connect("html-page-context", _note_notebook_page, priority=500)
    app.connect("build-finished", _write_notebooks)
    # The pages are noted in the writing process, so writing must stay in this one.
    return {"parallel_read_safe": True, "parallel_write_safe": False}

"""Every figure of the book described in words: an ``<img>``'s alt text read from its PNG.

A chapter's figure is a :class:`scalebook.picture.Picture`, glued and shown with
``{glue:figure}``; its PNG carries what it shows in the standard ``Description`` text chunk,
written from the same numbers that drew it. MyST-NB writes that PNG to a file named by its
hash and gives the ``<img>`` no alt, so the HTML writer falls back to the file name
(``../_images/ab92….png``): a screen reader would read a hash out. This extension reads the
chunk back and sets the image's alt text (WCAG 2.1 SC 1.1.1).

An image with neither an alt of its own nor a ``Description`` (a plain matplotlib figure shown
with ``plt.show()``) gets the alt text :data:`MISSING` and a warning; with the book's
``--warningiserror`` the warning fails the build when ``figure_alt_required`` is True (the
default). Set it False in ``_config.yml`` only while a chapter is being converted: the marker
then stays on the page, where tests/test_figures.py finds it.

It also ships ``_static/book.css``: the book's own style sheet (long inline code wraps on a
phone; print styles for ``make pdf``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

_LOG = logging.getLogger(__name__)

#: The alt text of an image nobody described: a test over the built site rejects it.
MISSING = "MISSING ALT TEXT: this figure has no description"


def _png_description(path: Path) -> str | None:
    """The ``Description`` chunk of the PNG at ``path`` (scalebook.picture.png_description)."""
    if str(Path(__file__).resolve().parent.parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from scalebook.picture import png_description

    try:
        return png_description(path.read_bytes())
    except OSError:
        return None


def _image_path(app: Sphinx, node: nodes.image) -> Path | None:
    """The file behind ``node`` (MyST-NB's outputs and the book's own images)."""
    candidates = node.get("candidates", {})
    uri = candidates.get("*") or candidates.get("image/png") or node.get("uri", "")
    if not uri or "://" in uri or uri.startswith("data:"):
        return None
    path = Path(uri)
    return path if path.is_absolute() else Path(app.srcdir) / path


def describe_images(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Give every image of ``docname`` its PNG's description as alt text (module docstring)."""
    for node in doctree.findall(nodes.image):
        if node.get("alt", "").strip():
            continue
        path = _image_path(app, node)
        description = _png_description(path) if path is not None else None
        if description and description.strip():
            node["alt"] = description.strip()
            continue
        node["alt"] = MISSING
        if app.config.figure_alt_required:
            _LOG.warning(f"figure without a description (alt text): {path or node.get('uri')}; "
                         "draw it as a scalebook.picture.Picture and glue it",
                         location=node, type="figure_alt", subtype="missing")


def _static_path(app: Sphinx) -> None:
    static = str(Path(__file__).resolve().parent / "static")
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("figure_alt_required", True, "env")
    app.connect("doctree-resolved", describe_images)
    app.connect("builder-inited", _static_path)
    app.add_css_file("book.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}

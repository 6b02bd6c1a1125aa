"""Load the search index on the search page only, not on every chapter.

pydata-sphinx-theme puts Sphinx's search scripts in every page's ``<head>``, among them
``searchindex.js``: the index of every word of the book (53 KB today, and it grows with the
book), counted in the 3 MB a chapter may weigh before the reader touches a widget. A chapter
page needs the index only for the theme's search-as-you-type, which this book leaves off
(the theme's default, ``search_as_you_type = False``): there the search box is a form that
opens ``search.html``, which loads the index itself and lists the results.

So when the HTML build finishes, and only while search-as-you-type is off, this extension
removes the index's ``<script>`` tag from every page but ``search.html``. The other two search
scripts (``searchtools.js``, ``language_data.js``; 26 KB, fixed) stay: ``sphinx_highlight.js``
looks at whether they are loaded to decide whether to highlight searched words, so keeping
them keeps every page behaving as before. A page without the tag is left as it is.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

_LOG = logging.getLogger(__name__)

#: The tag the theme writes (pydata_sphinx_theme/layout.html, block extrahead), the path
#: relative to the page, with the indentation before it and the line break after it.
_INDEX_TAG = re.compile(r'[ \t]*<script src="(?:\.\./)*searchindex\.js"></script>\n?')


def without_search_index(html: str) -> str:
    """``html`` without the search index's ``<script>`` tag."""
    return _INDEX_TAG.sub("", html)


def search_as_you_type(app: Sphinx) -> bool:
    """Whether the theme searches as the reader types (then every page needs the index)."""
    options = app.builder.theme.get_options(app.builder.theme_options)
    return str(options.get("search_as_you_type", False)).lower() == "true"


def _drop_search_index(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or search_as_you_type(app):
        return
    outdir = Path(app.outdir)
    search_page = outdir / f"search{app.builder.out_suffix}"
    changed = 0
    for page in outdir.rglob(f"*{app.builder.out_suffix}"):
        if page == search_page:
            continue
        html = page.read_text(encoding="utf-8")
        lighter = without_search_index(html)
        if lighter != html:
            page.write_text(lighter, encoding="utf-8")
            changed += 1
    _LOG.info(f"search_scripts: {changed} pages no longer load searchindex.js")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _drop_search_index)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

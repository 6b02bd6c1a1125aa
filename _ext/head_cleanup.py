"""Keep the browser's console clean and say what search can do from disk.

Two post-build fixes to the pages Sphinx and its extensions write:

- Sphinx 7.4 with sphinx-thebe writes thebe's inline configuration twice in every page's
  ``<head>`` (``<script>const THEBE_JS_URL = ...</script>``), so the second ``const``
  throws "Identifier 'THEBE_JS_URL' has already been declared" on every page. An inline
  ``<script>`` identical to an earlier one on the same page is removed (:func:`without_repeats`).
- Opened from disk (file://), the search page lists its hits, but the browser refuses
  searchtools.js's fetch() of each hit's page for the excerpt under it (a CORS error per
  hit). On ``search.html`` a small script turns the excerpts off for file:// pages only and
  puts a one-line note above the results (:data:`SEARCH_NOTE`); over http nothing changes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

_LOG = logging.getLogger(__name__)

#: An inline script (no src) on a line of its own, with its indentation and line break.
_INLINE = re.compile(r"[ \t]*<script>(?P<body>[^<]*)</script>\n?")

#: Runs right after documentation_options.js, before searchtools.js lists any hit.
SEARCH_NOTE = """<script>
if (location.protocol === "file:") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  document.addEventListener("DOMContentLoaded", () => {
    const note = document.createElement("p");
    note.className = "sb-search-note";
    note.textContent = "Opened from disk, the browser lets search list the matching pages but " +
      "not quote them; served over http (make serve) each result shows an excerpt.";
    const results = document.getElementById("search-results");
    if (results) results.before(note);
  });
}
</script>
"""
_OPTIONS_TAG = re.compile(r'(<script src="(?:\.\./)*_static/documentation_options\.js[^"]*">'
                          r'</script>\n)')


def without_repeats(html: str) -> str:
    """``html`` without any inline ``<script>`` whose text repeats an earlier one's."""
    seen: set[str] = set()

    def keep_first(match: re.Match) -> str:
        body = match.group("body")
        if body in seen:
            return ""
        seen.add(body)
        return match.group(0)

    return _INLINE.sub(keep_first, html)


def with_search_note(html: str) -> str:
    """The search page with :data:`SEARCH_NOTE` after its documentation options (once)."""
    if "sb-search-note" in html:
        return html
    return _OPTIONS_TAG.sub(lambda m: m.group(1) + SEARCH_NOTE, html, count=1)


def _clean(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    search_page = outdir / f"search{app.builder.out_suffix}"
    changed = 0
    for page in outdir.rglob(f"*{app.builder.out_suffix}"):
        html = page.read_text(encoding="utf-8")
        clean = without_repeats(html)
        if page == search_page:
            clean = with_search_note(clean)
        if clean != html:
            page.write_text(clean, encoding="utf-8")
            changed += 1
    _LOG.info(f"head_cleanup: {changed} pages cleaned")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _clean)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

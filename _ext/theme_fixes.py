"""Post-build fixes to the pages Sphinx and the theme write: a clean console, a note on what
search can do from disk, and theme buttons whose accessible names match their text.

- Sphinx 7.4 with sphinx-thebe writes thebe's inline configuration twice in every page's
  ``<head>`` (``<script>const THEBE_JS_URL = ...</script>``), so the second ``const``
  throws "Identifier 'THEBE_JS_URL' has already been declared" on every page. An inline
  ``<script>`` identical to an earlier one on the same page is removed (:func:`without_repeats`).
- Opened from disk (file://), the search page lists its hits, but the browser refuses
  searchtools.js's fetch() of each hit's page for the excerpt under it (a CORS error per
  hit). On ``search.html`` a small script turns the excerpts off for file:// pages only and
  puts a one-line note above the results (:data:`SEARCH_NOTE`); over http nothing changes.
- pydata-sphinx-theme's search field buttons show "Search Ctrl+K" but are named "Search"
  (aria-label), and its colour-mode button is named "Color mode" while its icons carry the
  titles "Light", "Dark", "System Settings": a screen reader user who says what they see
  cannot operate them (WCAG 2.5.3, Label in Name; axe's label-content-name-mismatch). The
  search buttons lose the aria-label (their text names them) and the colour-mode icons their
  titles (the button's name and tooltip stay "Color mode"); so do MyST-NB's hidden-cell
  toggles, named "Toggle hidden content" over the text "Show code cell source":
  :func:`with_names_matching_text`.
- Cell outputs that rich renders as HTML (JAX's ``visualize_array_sharding`` tables) write
  white text on light colours ("CPU 0" on #8ca252: 2.6:1); WCAG 1.4.3 asks 4.5:1. Where an
  inline style's text colour falls short on its own background, the text becomes black or
  white, whichever contrasts more; the background, the picture's meaning, stays
  (:func:`with_readable_inline_colours`).
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


_SEARCH_FIELD = re.compile(r'(<button class="btn search-button-field search-button__button[^"]*"'
                           r'[^>]*?) aria-label="Search"')
_MODE_ICON = re.compile(r'(<i class="theme-switch [^"]*" data-mode="[a-z]+")\s+title="[^"]*"')


def with_names_matching_text(html: str) -> str:
    """``html`` with the theme's search-field buttons named by their text and its colour-mode
    icons untitled (the module docstring says why)."""
    html = html.replace('<summary aria-label="Toggle hidden content">', "<summary>")
    return _MODE_ICON.sub(r"\1", _SEARCH_FIELD.sub(r"\1", html))


_COLOURED = re.compile(r'style="color: (#[0-9a-fA-F]{6})(; text-decoration-color: #[0-9a-fA-F]{6})?'
                       r'; background-color: (#[0-9a-fA-F]{6})"')


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two "#rrggbb" colours, 1 to 21."""
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def with_readable_inline_colours(html: str) -> str:
    """``html`` with each inline text colour under 4.5:1 on its inline background replaced by
    black or white, whichever contrasts more with that background."""
    def fix(match: re.Match) -> str:
        text, background = match.group(1), match.group(3)
        if contrast(text, background) >= 4.5:
            return match.group(0)
        better = max(("#000000", "#ffffff"), key=lambda c: contrast(c, background))
        return f'style="color: {better}; text-decoration-color: {better}; background-color: {background}"'

    return _COLOURED.sub(fix, html)


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
        clean = with_readable_inline_colours(with_names_matching_text(without_repeats(html)))
        if page == search_page:
            clean = with_search_note(clean)
        if clean != html:
            page.write_text(clean, encoding="utf-8")
            changed += 1
    _LOG.info(f"theme_fixes: {changed} pages fixed")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _clean)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

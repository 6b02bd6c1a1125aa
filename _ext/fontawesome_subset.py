"""Ship only the Font Awesome icons the book shows, so a chapter page stays light.

pydata-sphinx-theme (under sphinx-book-theme) puts ``_static/scripts/fontawesome.js`` on every
page: Font Awesome Free 6's SVG+JS bundle (``@fortawesome/fontawesome-free/js/all.min.js``
wrapped by webpack), which turns each ``<i class="fa-solid fa-bars">`` into an inline ``<svg>``.
It holds every icon of the solid, regular and brands packs, about 1.49 MB of the 3 MB a page
may weigh before the reader touches a widget; the book shows some twenty icons.

When the HTML build finishes, this extension rewrites that file with the same code and only
the icons some page can show:

- the icon names are the ``fa-<name>`` words in every built HTML page and in every local
  script those pages load (the theme's own JavaScript adds e.g. ``fa-xmark`` to its banners);
  words that are not icons (``fa-solid``, ``fa-lg``) simply match nothing;
- the bundle keeps its code byte for byte; in each of its icon tables (one per pack, the
  object literal ``{name: [width, height, [aliases], unicode, svgPath], ...}``) only the
  entries whose name or alias is used stay. An icon missing from the subset would show as
  Font Awesome's animated "missing" placeholder, which tests/test_page_weight.py looks for.

The bundle is read from the theme's own static directory (Sphinx copies it to the output on
every build, before this runs), so every build subsets the original. Font Awesome Free is
free to subset: icons CC BY 4.0, code MIT; the written file starts with Font Awesome's
licence header, and its source map (which describes the full bundle) is dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

_LOG = logging.getLogger(__name__)

#: The bundle, relative to a theme directory's ``static`` and to the output's ``_static``.
BUNDLE = Path("scripts") / "fontawesome.js"

#: A Font Awesome class word: ``fa-`` and the icon (or modifier) name.
_CLASS_WORD = re.compile(r"(?<![\w-])fa-([a-z0-9]+(?:-[a-z0-9]+)*)")
#: Where an icon table starts: ``={`` followed by ``name:[width,height,[``.
_TABLE_START = re.compile(r'=(\{)(?=(?:[A-Za-z_$][\w$]*|\d+|"[^"\\]*"):\[\d+,\d+,\[)')
#: An object key in minified JavaScript: an identifier, a number, or a double-quoted string.
_KEY = re.compile(r'[A-Za-z_$][\w$]*|\d+|"[^"\\]*"')
_SCRIPT_SRC = re.compile(r"""<script\b[^>]*?\bsrc=["']([^"']+)["']""", re.I)
_SOURCE_MAP = re.compile(r"\n?//# sourceMappingURL=\S+\s*$")
_JSON = json.JSONDecoder()

Table = dict[str, list]


def class_words(texts: Iterable[str]) -> set[str]:
    """The names after ``fa-`` in ``texts`` ("fa-solid fa-bars" gives {"solid", "bars"})."""
    return {m.group(1) for text in texts for m in _CLASS_WORD.finditer(text)}


def parse_table(js: str, start: int) -> tuple[Table, int]:
    """The icon table whose ``{`` is at ``js[start]``, and the index just past its ``}``.

    Each entry is ``key:[width, height, [aliases], unicode, path]``, the array in JSON; raises
    ValueError at anything else, so a changed bundle fails the build instead of losing icons.
    """
    if js[start] != "{":
        raise ValueError(f"no icon table at {start}")
    table: Table = {}
    i = start + 1
    while True:
        key = _KEY.match(js, i)
        if key is None or js[key.end()] != ":":
            raise ValueError(f"unexpected icon table text at {i}: {js[i:i + 40]!r}")
        value, i = _JSON.raw_decode(js, key.end() + 1)
        if not (isinstance(value, list) and len(value) >= 5 and isinstance(value[2], list)):
            raise ValueError(f"not an icon at {key.start()}: {js[key.start():key.start() + 40]!r}")
        name = key.group()
        table[json.loads(name) if name.startswith('"') else name] = value
        if js[i] == "}":
            return table, i + 1
        if js[i] != ",":
            raise ValueError(f"unexpected icon table text at {i}: {js[i:i + 40]!r}")
        i += 1


def icon_tables(js: str) -> list[tuple[int, int, Table]]:
    """Every icon table in the bundle: (start of ``{``, end past ``}``, entries)."""
    out = []
    for match in _TABLE_START.finditer(js):
        table, end = parse_table(js, match.start(1))
        out.append((match.start(1), end, table))
    return out


def keep(name: str, icon: list, used: set[str]) -> bool:
    """Whether an icon is used: by its name or one of its alias names (the aliases also hold
    old code points, as numbers)."""
    return name in used or any(alias in used for alias in icon[2] if isinstance(alias, str))


def table_js(table: Table) -> str:
    """An icon table as a JavaScript object literal (JSON: every key quoted)."""
    return "{" + ",".join(f"{json.dumps(name)}:{json.dumps(icon, separators=(',', ':'))}"
                          for name, icon in table.items()) + "}"


def subset_bundle(js: str, used: set[str], header: str = "") -> str:
    """The bundle ``js`` with only the icons in ``used`` (names or aliases), its code as it
    was, ``header`` (a comment) first and no source-map link (the map is the full bundle's)."""
    tables = icon_tables(js)
    if not tables:
        raise ValueError("no icon table found: is this Font Awesome's SVG+JS bundle?")
    parts, last = [], 0
    for start, end, table in tables:
        parts += [js[last:start], table_js({n: i for n, i in table.items() if keep(n, i, used)})]
        last = end
    parts.append(js[last:])
    return header + _SOURCE_MAP.sub("\n", "".join(parts))


def local_scripts(page: Path, html: str, outdir: Path) -> set[Path]:
    """The site files that ``page``'s ``<script src>`` tags load (no query strings, nothing
    from outside ``outdir``)."""
    out = set()
    for src in _SCRIPT_SRC.findall(html):
        url = urlparse(src)
        if url.scheme or url.netloc:
            continue
        path = (page.parent / unquote(url.path)).resolve()
        if path.is_file() and path.is_relative_to(outdir.resolve()):
            out.add(path)
    return out


def used_icons(outdir: Path) -> set[str]:
    """The ``fa-`` names of every HTML page under ``outdir`` and of the local scripts they
    load, Font Awesome's own bundle excepted (it names every icon)."""
    bundle = (outdir / "_static" / BUNDLE).resolve()
    texts, scripts = [], set()
    for page in outdir.rglob("*.html"):
        html = page.read_text(encoding="utf-8", errors="replace")
        texts.append(html)
        scripts |= local_scripts(page, html, outdir)
    texts += [s.read_text(encoding="utf-8", errors="replace") for s in scripts - {bundle}]
    return class_words(texts)


def theme_bundle(theme_dirs: Iterable[str]) -> Path | None:
    """The theme's full bundle: the first theme directory (most derived first) that has one,
    as Sphinx's copy leaves it in ``_static``."""
    for directory in theme_dirs:
        path = Path(directory) / "static" / BUNDLE
        if path.is_file():
            return path
    return None


def license_header(bundle: Path) -> str:
    """Font Awesome's licence header (webpack moved it to ``fontawesome.js.LICENSE.txt``),
    with a note on what this file is."""
    notice = bundle.with_name(bundle.name + ".LICENSE.txt")
    text = notice.read_text(encoding="utf-8").strip() if notice.is_file() else ""
    if "Font Awesome" not in text:
        raise ExtensionError(f"fontawesome_subset: no Font Awesome licence header at {notice}")
    return (f"{text}\n/* The theme's {bundle.name} with only the icons this site's pages use "
            "(written by _ext/fontawesome_subset.py). */\n")


def _write_subset(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    target = outdir / "_static" / BUNDLE
    if not target.is_file():
        return
    source = theme_bundle(app.builder.theme.get_theme_dirs())
    if source is None:
        raise ExtensionError(f"fontawesome_subset: {target} is in the site but in no theme")
    used = used_icons(outdir)
    try:
        js = subset_bundle(source.read_text(encoding="utf-8"), used, license_header(source))
    except ValueError as err:
        raise ExtensionError(f"fontawesome_subset: cannot read {source}: {err}") from err
    target.write_text(js, encoding="utf-8")
    target.with_name(target.name + ".map").unlink(missing_ok=True)
    _LOG.info(f"fontawesome_subset: {target.name} {source.stat().st_size:,} -> "
              f"{target.stat().st_size:,} bytes")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _write_subset)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Make the book's widgets live on the static site: no kernel, no server, no network.

An explorer with a live view writes its figure, numbers and controls as static HTML
(``<div class="sb-live">``, :mod:`scalebook.widgets.live_html`). This extension

- builds the browser runtime once per change of its inputs (``web/build_live.py``: Pyodide,
  scalebook as .pyc, Chart.js, our JavaScript; cached under ``_build/live/<key>``) when the
  build starts, so a failure stops the build early;
- adds ``_static/live/widgets.js`` and ``widgets.css`` (a few KB) to the pages that hold a
  widget, and nothing to the others: the heavy files load only when a reader touches a widget;
- copies the runtime into ``_static/live/`` when the HTML build finishes: one copy the pages
  share, every path relative, so the site works from disk and from any static host.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

_LOG = logging.getLogger(__name__)
_RUNTIME_KEY = "live_widgets_runtime"
_MARKER = "class='sb-live'"
#: A practice block (scalebook/widgets/practice.py): its own small script and style sheet.
_PRACTICE_MARKER = "class='practice"


def _build_module(srcdir: Path):
    """web/build_live.py, imported from the book's source tree."""
    path = srcdir / "web" / "build_live.py"
    spec = importlib.util.spec_from_file_location("build_live", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_runtime(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    srcdir = Path(app.srcdir)
    build_live = _build_module(srcdir)
    runtime = build_live.build(Path(app.outdir).parent / "live", repo=srcdir)
    setattr(app, _RUNTIME_KEY, runtime)
    _LOG.info(f"live widgets: runtime {runtime.name}")


def _add_assets(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                doctree: Any) -> None:
    """Only pages with a widget get its (small) script and style sheet."""
    if _MARKER in context.get("body", ""):
        app.add_js_file("live/widgets.js", defer="defer")
        app.add_css_file("live/widgets.css")
    if _PRACTICE_MARKER in context.get("body", ""):
        app.add_js_file("live/practice.js", defer="defer")
        app.add_css_file("live/practice.css")


def _copy_runtime(app: Sphinx, exception: Exception | None) -> None:
    runtime = getattr(app, _RUNTIME_KEY, None)
    if exception is not None or runtime is None:
        return
    target = Path(app.outdir) / "_static" / "live"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(runtime, target)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _build_runtime)
    app.connect("html-page-context", _add_assets)
    app.connect("build-finished", _copy_runtime)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Files written for people (CSV, text): one place that makes a cell safe to open.

Every person-facing file this package writes that is not the per-question export (keys,
unmatched-student lists, the override trail) goes through :func:`safe_cell` and
:func:`write_text`, so that the course-wide helpers of issue 31 replace them in one line.
A cell that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, a tab or a
carriage return first) is prefixed with ``'``; control and bidi characters are shown as escapes
(``collect.visible``).
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(text) -> str:
    """A CSV cell a spreadsheet shows as text: no formula, no hidden control character."""
    from .collect import visible

    text = visible("" if text is None else str(text))
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_text(rows: list[list]) -> str:
    """Rows as CSV, every cell through :func:`safe_cell` (numbers are written as they are)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([c if isinstance(c, (int, float)) else safe_cell(c) for c in row])
    return out.getvalue()


def write_text(path: Path, text: str, *, private: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file; ``private``: mode 0600
    (files that hold keys)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.writing")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    return path

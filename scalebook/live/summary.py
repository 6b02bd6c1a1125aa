"""HTML tables for the widgets' summaries, readable without the book's stylesheet.

A summary is shown by the page (styled by ``web/src/widgets.css``) and by the Jupyter widget
(an ``ipywidgets.HTML``, unstyled): the cells carry their own padding, so two numbers in
neighbouring columns never run together ("8.08×10¹¹1.62×10¹²"), and numbers are right-aligned.
"""

from __future__ import annotations

import html
from typing import Iterable, Sequence

__all__ = ["table", "CELL_STYLE"]

#: Padding between columns (em) and the alignment of every cell after the first.
CELL_STYLE = "padding:0.1em 0.6em;text-align:right"
_FIRST_STYLE = "padding:0.1em 0.6em 0.1em 0;text-align:left"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, escape: bool = True,
          style: str = "border-collapse:collapse") -> str:
    """An HTML table: ``header`` as ``<th>`` cells, then one ``<tr>`` per row; the first
    column left-aligned (labels), the others right-aligned (numbers), every cell padded.
    Cells are HTML-escaped unless ``escape`` is False (cells that hold markup already)."""
    text = html.escape if escape else (lambda cell: cell)

    def row(cells: Sequence[str], tag: str) -> str:
        return "<tr>" + "".join(
            f"<{tag} style='{_FIRST_STYLE if i == 0 else CELL_STYLE}'>{text(c)}</{tag}>"
            for i, c in enumerate(cells)) + "</tr>"

    return (f"<table style='{style}'>{row(header, 'th')}"
            + "".join(row(r, "td") for r in rows) + "</table>")

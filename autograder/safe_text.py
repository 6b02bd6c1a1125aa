"""Text the grader shows a person, made safe for where it is shown: a spreadsheet, a browser, a terminal.

Much of what the grader writes came from students: ids and display names from an LMS roster,
answers and messages from their notebooks, names of the files they handed in. A student chooses
those characters, so every writer of a file or line meant for a person passes its text through
the one function here for its format:

- :func:`csv_cell` / :func:`csv_text` (exports, keys, the report's CSV). A text cell that
  starts with ``=``, ``+``, ``-``, ``@``, TAB or CR (OWASP's list of what a spreadsheet may read
  as a formula) gets a leading apostrophe, which spreadsheets take as "this cell is text" and
  show without it; a number (int or float) is written as a number and is never changed, so a
  score of -1.5 stays a number. Hidden characters (below) become visible escapes.
- :func:`html_text` (the item-analysis report, feedback pages, released solutions): HTML-escaped
  (``&``, ``<``, ``>``, both quotes) with hidden characters made visible.
- :func:`visible` / :func:`terminal_text` (the instructor's terminal): every character that
  ``str.isprintable`` refuses becomes an escape, so a name cannot move the cursor, retitle the
  terminal, erase lines or hide itself.

*Hidden characters* (:data:`HIDDEN`), for CSV and HTML: C0 controls other than newline and
TAB (which lay text out and show as such), DEL, C1 controls, lone surrogates, the line and
paragraph separators U+2028/U+2029, and the characters that change the direction text is
shown in: U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069 (an answer ``"\\u202eexe.txt"``
would otherwise read ``txt.exe``). Each is written as Python writes the escape, ``\\x1b``,
``\\u202e``, the same in all three formats. Other format characters, such as the zero-width
joiners that Persian and Indic names need, are kept in files (the terminal escapes them too:
it is the stricter reader).
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP, CSV injection
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# C0 controls but TAB and newline, DEL and C1 controls, lone surrogates, line/paragraph separators, bidi
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029" + BIDI + "]")


def escape_char(c: str) -> str:
    """One character as a visible escape: ``\\x1b``, ``\\u202e``, ``\\U000e0001``."""
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def shown(text: str) -> str:
    """``text`` with each :data:`HIDDEN` character written as its escape; all else unchanged."""
    return HIDDEN.sub(lambda m: escape_char(m.group()), text)


def visible(text: str) -> str:
    """``text`` as it may be shown on a terminal: every character that ``str.isprintable``
    refuses (C0/C1 controls such as ESC, CR, BEL and newline, format characters such as the
    bidi override U+202E, separators other than the space, lone surrogates, unassigned and
    private-use code points) becomes a visible escape: ``\\x1b``, ``\\u202e``, ``\\U000e0001``.
    Printable text, accented and non-Latin letters included, is unchanged."""
    return "".join(c if c.isprintable() else escape_char(c) for c in text)


def terminal_text(text: str) -> str:
    """Several lines for the terminal: each line :func:`visible`, the line breaks kept."""
    return "\n".join(visible(line) for line in text.split("\n"))


def number_text(value: float | int) -> str:
    """A number for a CSV cell: an int as it is, a float rounded to 6 decimals in ``g`` form
    (``2.5``, ``-1.5``, ``1e+12``)."""
    return str(value) if isinstance(value, int) else f"{round(value, 6):g}"


def csv_cell(value) -> str:
    """One CSV cell: None -> empty; a number (not a bool) -> :func:`number_text`, never changed;
    anything else -> its text with hidden characters shown and, when it starts with one of
    :data:`FORMULA_START`, a leading apostrophe (``"=1+1"`` -> ``"'=1+1"``, ``"-2+3"`` ->
    ``"'-2+3"``)."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_text(value)
    text = str(value)
    safe = shown(text)
    return "'" + safe if text[:1] in FORMULA_START else safe


def csv_text(rows: Iterable[Iterable]) -> str:
    """A whole CSV file (``\\n`` line ends), every cell through :func:`csv_cell`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([csv_cell(v) for v in row] for row in rows)
    return out.getvalue()


def html_text(value) -> str:
    """``value`` as text inside an HTML page or attribute: hidden characters shown, then
    HTML-escaped (quotes included)."""
    return html.escape(shown(str(value)), quote=True)

"""Reading a chapter page as built (_build/html/book/<name>.html), for the page tests.

`make test` builds the book (`make book`) before pytest, so a missing page is a failure, not a
skip.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

BUILT = Path(__file__).resolve().parent.parent / "_build" / "html" / "book"


def built_page(name: str) -> str:
    """The HTML of chapter ``name`` (``"inference"``); fails the test if it was not built."""
    path = BUILT / f"{name}.html"
    if not path.is_file():
        pytest.fail(f"{path} is missing: build the book first with `make book` "
                    "(`make test` does this before running pytest)")
    return path.read_text(encoding="utf-8")


def visible_text(page: str) -> str:
    """What a reader sees: tags, scripts and styles removed, entities decoded, spaces squeezed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def has_number(text: str, value: str) -> bool:
    """Whether ``value`` ("8,030,261,248", "7.49") stands in ``text`` as a whole number, not
    as part of a longer one."""
    return re.search(r"(?<![\d.,])" + re.escape(value) + r"(?![\d])", text) is not None

"""Put the practice blocks into the chapters: ``python -m scalebook.practice.embed [--check]``.

For every chapter ``book/<name>.md`` with problems in :data:`scalebook.practice.CHAPTERS`:

- after the answer dropdown of each worked problem N (the N-th ``{dropdown}`` of the
  "## Problems" section, before "### Think about it", the count tests/test_practice.py uses) that
  has a Problem with ``worked="N"``, a hidden cell ``practice("<chapter>.wN")``;
- at the end of the chapter, before "## Further reading" (or at the very end), a section
  "## Practice set" with a hidden cell ``practice_set("<chapter>")``.

Every cell it writes carries the tag ``practice`` and nothing else of the chapter is touched:
running it again first removes the cells (and the section heading) it wrote, then writes them
for the problems that exist now, so it is idempotent and follows the chapters' modules as
they land. ``--check`` writes nothing and exits 1 when a chapter is not up to date (a test
runs it).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

from . import CHAPTERS

__all__ = ["embed", "worked_dropdown_ends", "strip", "main"]

ROOT = Path(__file__).resolve().parents[2]
_CELL = ("```{{code-cell}} ipython3\n:tags: [remove-input, practice]\n\n"
         "# practice sources {digest} (python -m scalebook.practice.embed)\n"
         "from scalebook.widgets.practice import {name}\n{name}({arg!r})\n```\n")
#: What a block's HTML is made from, besides the chapter's module: a change to any of them
#: changes the cells' digest, so the book's execution cache runs the cells again.
_SOURCES = ("scalebook/practice/problem.py", "scalebook/live/practice.py",
            "scalebook/widgets/practice.py", "scalebook/homework/parts.py",
            "scalebook/homework/alternatives.py")
_HEADING = "## Practice set\n"
_INTRO = ("Every problem of this chapter, with new numbers each time you ask, checked in your\n"
          "browser by the course grader's own rules.\n")
_OPEN = re.compile(r"^(:{3,}) ?\{dropdown\}", re.M)
_TAGGED = re.compile(r"\n?```\{code-cell\} ipython3\n:tags: \[remove-input, practice\]\n.*?\n```\n",
                     re.S)


def digest(chapter: str, root: Path = ROOT) -> str:
    """12 hex digits of sha256 over the chapter's problem module and :data:`_SOURCES`. The
    book's execution cache keys a page on its cells' code only; with the digest in every
    practice cell, a changed problem re-executes the page."""
    h = hashlib.sha256()
    for name in (f"scalebook/practice/{chapter}.py", *_SOURCES):
        h.update(name.encode() + b"\0" + (root / name).read_bytes())
    return h.hexdigest()[:12]


def cell(name: str, arg: str, sources: str) -> str:
    """A hidden cell calling ``scalebook.widgets.practice.<name>(arg)``; ``sources`` is the
    chapter's :func:`digest`."""
    return _CELL.format(name=name, arg=arg, digest=sources)


def strip(text: str) -> str:
    """``text`` without the cells and the section this module wrote."""
    text = _TAGGED.sub("", text)
    return text.replace(f"{_HEADING}\n{_INTRO}\n", "")


def worked_dropdown_ends(text: str) -> list[int]:
    """Offsets just past the closing fence of each worked problem's answer dropdown, in order
    (problem 1 first)."""
    start = text.find("\n## Problems")
    if start < 0:
        return []
    end = text.find("\n### Think about it", start)
    section_end = end if end > 0 else len(text)
    ends = []
    for match in _OPEN.finditer(text, start, section_end):
        fence = match.group(1)
        close = re.compile(rf"^{fence}[ \t]*$", re.M).search(text, match.end())
        if close is None:
            raise ValueError(f"a dropdown at offset {match.start()} is never closed")
        ends.append(close.end() + 1 if text[close.end():close.end() + 1] == "\n" else close.end())
    return ends


def embed(text: str, chapter: str, root: Path = ROOT) -> str:
    """The chapter's text with its practice cells, as the module docstring says."""
    text = strip(text)
    problems = CHAPTERS[chapter]
    if not problems:
        return text
    sources = digest(chapter, root)
    by_label = {p.worked: p for p in problems if p.worked}
    ends = worked_dropdown_ends(text)
    inserts = []
    for number, offset in enumerate(ends, 1):
        problem = by_label.get(str(number))
        if problem is not None:
            inserts.append((offset, "\n" + cell("practice", problem.id, sources)))
    reading = text.find("\n## Further reading")
    section = f"{_HEADING}\n{_INTRO}\n{cell('practice_set', chapter, sources)}\n"
    if reading >= 0:
        inserts.append((reading + 1, section))
    else:
        inserts.append((len(text), ("\n" if text.endswith("\n") else "\n\n") + section))
    for offset, piece in sorted(inserts, reverse=True):
        text = text[:offset] + piece + text[offset:]
    return text


def page(chapter: str, root: Path = ROOT) -> Path:
    return root / "book" / f"{chapter.replace('_', '-')}.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    stale = []
    for chapter in CHAPTERS:
        path = page(chapter, args.root)
        old = path.read_text(encoding="utf-8")
        new = embed(old, chapter, args.root)
        if new != old:
            stale.append(path.name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "not up to date" if args.check else "updated"
    print(f"practice blocks {verb}: {', '.join(stale) or 'none'}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())

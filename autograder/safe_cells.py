"""Student-written markdown and raw cells, made safe to show in the autograded copy.

Instructors read the autograded notebook in nbgrader's formgrader, which renders markdown with
nbconvert -- raw HTML and ``javascript:`` links pass through it unsanitized -- and pastes raw
cells into its page as they are. So a markdown or raw cell the student wrote is judged in the
form a browser would get it: a markdown cell rendered by nbconvert's renderer (with math, as
formgrader does) and by a CommonMark one (markdown-it, which knows no math), a raw cell as it
is. Every tag in that HTML must be a formatting tag with harmless attributes, and every link
or image address http(s), mailto, relative, an attachment or (for images) base64 raster data.
A cell that passes is kept byte for byte: ordinary text, math and code never change. One that
does not is shown as text: a markdown cell as its source in a fenced code block, a raw cell
with each "<" that could open a tag followed by a zero-width space, which no markdown renderer
or HTML parser reads as markup (it is invisible in the text). Attachments keep only raster
images with base64 data. (Outputs never come from the submission, only the sandbox's text
streams and errors, nor does any of the student's cell metadata but tags: ``grading/autograded.py``.)

Why not a sanitizer such as bleach: it escapes ``<`` inside math (``$a<b$`` becomes
``$a&lt;b$``), mangling ordinary markdown; judging the rendered HTML keeps such text as written.
"""

from __future__ import annotations

import copy
import html
import re

MAX_RENDER_CELL = 64_000      # characters of one markdown cell rendered to check it
MAX_RENDER_TOTAL = 128_000    # characters of a submission's markdown rendered in all


class RenderBudget:
    """Characters of markdown still to be rendered for one submission (bounds the grader's work)."""

    def __init__(self, n: int = MAX_RENDER_TOTAL):
        self.n = n

SHOWN_AS_TEXT = ("*The grader shows this cell as text: its HTML or links could run code in the "
                 "instructor's browser.*")

_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")   # where an HTML parser may start a tag or comment
_DEFANGED_OPEN = "<\u200b"                     # "<" + ZERO WIDTH SPACE: text to any parser
_TAG = re.compile(r"""<(/?)([A-Za-z][A-Za-z0-9]*+)((?:[ \t\n\f\r]++[A-Za-z][A-Za-z0-9_:.-]*+"""
                  r"""(?:[ \t\n\f\r]*+=[ \t\n\f\r]*+(?:"[^"<>]*+"|'[^'<>]*+'|[^ \t\n\f\r"'=<>`]++))?)*+)"""
                  r"""[ \t\n\f\r]*+/?>""")
_ATTR = re.compile(r"""[ \t\n\f\r]+([A-Za-z][A-Za-z0-9_:.-]*)"""
                   r"""(?:[ \t\n\f\r]*=[ \t\n\f\r]*("[^"<>]*"|'[^'<>]*'|[^ \t\n\f\r"'=<>`]+))?""")
_SAFE_TAGS = frozenset(
    "a abbr b blockquote br caption cite code dd del details div dl dt em figcaption figure h1 h2 "
    "h3 h4 h5 h6 hr i img input ins kbd li mark ol p pre q s samp small span strong sub summary "
    "sup table tbody td tfoot th thead tr u ul var".split())
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# class names the renderers write: pygments tokens, code languages, task lists, heading anchors
_SAFE_CLASS = re.compile(r"[a-z][a-z0-9]{0,2}|language-[^\s\"'<>]{1,60}|highlight|anchor-link"
                         r"|task-list-item(?:-checkbox)?")
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_RASTER = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_C0_AND_SPACE = "".join(map(chr, range(33)))


def _url_ok(value: str, image: bool) -> bool:
    """A link (or image) address that runs nothing: read as a browser's URL parser does (tab and
    newline removed, C0 controls and spaces trimmed), its scheme must be http(s), attachment,
    mailto (links) or base64 raster data (images); no scheme is a relative address."""
    url = re.sub(r"[\t\n\r]", "", value).strip(_C0_AND_SPACE)
    scheme = _URL_SCHEME.match(url)
    if scheme is None:
        return True
    name = scheme.group(1).lower()
    if name in ("http", "https", "attachment"):
        return True
    if name == "mailto":
        return not image
    return image and name == "data" and re.fullmatch(
        r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*", url, re.I) is not None


def _attribute_ok(tag: str, key: str, value: str) -> bool:
    number = re.fullmatch(r"\s*\d{1,5}\s*", value) is not None
    if key in ("alt", "title"):
        return True
    if key == "class":
        return all(_SAFE_CLASS.fullmatch(c) for c in value.split())
    if key == "id":
        return tag in _HEADINGS
    if key == "href":
        return tag == "a" and _url_ok(value, image=False)
    if key == "src":
        return tag == "img" and _url_ok(value, image=True)
    if key in ("width", "height"):
        size = re.fullmatch(r"\s*\d{1,5}(?:px|%)?\s*", value) is not None
        return tag in ("img", "table", "td", "th") and size
    if key == "align":
        return value.strip().lower() in ("left", "right", "center", "justify")
    if key == "style":  # table column alignment, as the renderers write it
        return tag in ("td", "th") and re.fullmatch(r"\s*text-align\s*:\s*(?:left|right|center)\s*;?\s*",
                                                    value, re.I) is not None
    if key in ("colspan", "rowspan"):
        return tag in ("td", "th") and number
    if key == "start":
        return tag == "ol" and number
    if key in ("type", "disabled", "checked"):  # a task list's disabled checkbox
        return tag == "input" and (key != "type" or value.strip().lower() == "checkbox")
    return key == "open" and tag == "details"


def _tag_ok(tag: re.Match) -> bool:
    name = tag.group(2).lower()
    if name not in _SAFE_TAGS:
        return False
    keys = set()
    for attr in _ATTR.finditer(tag.group(3)):
        key, raw = attr.group(1).lower(), attr.group(2) or ""
        value = html.unescape(raw[1:-1] if raw[:1] in ("'", '"') else raw)
        if not _attribute_ok(name, key, value):
            return False
        keys.add(key)
    return name != "input" or tag.group(1) == "/" or {"type", "disabled"} <= keys


def inert_html(text: str) -> bool:
    """Whether HTML ``text`` has nothing active: each place a browser could start a tag starts a
    whitelisted formatting tag, written plainly, with harmless attributes. Conservative: unusual
    but harmless HTML (a comment, a style attribute, single-letter tricks) counts as active."""
    for opener in _TAG_OPEN.finditer(text):
        tag = _TAG.match(text, opener.start())
        if tag is None or not _tag_ok(tag):
            return False
    return True


def _renderings(source: str, attachments: dict) -> list[str]:
    """The markdown as formgrader renders it (nbconvert) and as a CommonMark renderer does."""
    from markdown_it import MarkdownIt
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    formgrader = MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments))
    return [formgrader.render(source), MarkdownIt("commonmark").render(source)]


def _markdown_inert(source: str, attachments: dict, budget: RenderBudget) -> bool:
    """Whether every renderer makes inert HTML of ``source``; False beyond the render budget."""
    if len(source) > MAX_RENDER_CELL or len(source) > budget.n:
        return False
    budget.n -= len(source)
    try:
        return all(inert_html(h) for h in _renderings(source, attachments))
    except Exception:  # a renderer failed on it (a missing attachment, too deep, ...)
        return False


def markdown_as_text(source: str) -> str:
    """Markdown that shows ``source`` as text: a note, then a fenced code block longer than any
    run of backticks in it, with every tag opener defanged as well."""
    longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{SHOWN_AS_TEXT}\n\n{fence}text\n{_TAG_OPEN.sub(_DEFANGED_OPEN, source)}\n{fence}\n"


def safe_cell_text(kind: str, source: str, attachments: dict, budget: RenderBudget) -> str:
    """A student's markdown or raw cell source as the autograded copy keeps it (see above)."""
    if kind == "markdown":
        return source if _markdown_inert(source, attachments, budget) else markdown_as_text(source)
    if kind == "raw":
        return source if inert_html(source) else _TAG_OPEN.sub(_DEFANGED_OPEN, source)
    return source


def safe_attachments(value) -> dict:
    """The raster images (base64 data) of a cell's attachments; nothing else of them. ``value``
    must already have nbformat's shape (``grading.autograded._valid_attachments``)."""
    kept = {}
    for name, bundle in value.items():
        images = {m: copy.deepcopy(d) for m, d in bundle.items() if m in _RASTER
                  and _BASE64.fullmatch(d if isinstance(d, str) else "".join(d))}
        if images:
            kept[name] = images
    return kept

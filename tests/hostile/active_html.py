"""Submissions that put active HTML where the instructor will look: the autograded notebook.

``active_html_submission(release)`` answers every question right (so it earns full marks) and
adds markdown and raw cells of its own carrying script, event handlers, ``javascript:`` links,
SVG, an iframe and fence-breaking tricks, code cells whose (stale, submitted) outputs carry
HTML, SVG, JavaScript and a widget view, and non-image attachments. ``ORDINARY`` are markdown
cells a careful student writes (math with ``<``, code spans, fenced code, links, a table): the
grader must keep them byte for byte.

``active_dom(html)`` is the test's own judge, independent of the grader's: what a browser would
run in an HTML fragment, found with the standard library's HTML parser.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from . import fixture

ACTIVE_MARKDOWN = [
    "<script>alert(1)</script>",
    "Look: <img src=x onerror=alert(document.domain)>",
    '<a href="javascript:alert(1)">my answer</a>',
    "<svg onload=alert(1)><circle r=5 /></svg>",
    "<iframe src=\"https://evil.example/\"></iframe>",
    "[click](javascript:alert(1)) and [also](&#106;avascript:alert(2))",
    "[ref]\n\n[ref]: javascript:alert(3)",
    "<javascript:alert(4)>",
    "$ <script>alert(5)</script> $",
    "<IMG SRC=x OnError=alert(6)>",
    '<img src="x" alt=">" onerror="alert(7)">',
    "<details open ontoggle=alert(9)><summary>s</summary></details>",
    "<a href=\"java&#x0A;script:alert(10)\">x</a>",
    "<!--><script>alert(11)</script>-->",
    "```\n<script>alert(12)</script>\n````\n<script>alert(13)</script>\n``````",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(14)>",
    "<object data=\"data:text/html,<script>alert(15)</script>\"></object>",
    "<embed src=\"javascript:alert(16)\">",
    "<form action=\"javascript:alert(17)\"><button>go</button></form>",
    "<style>body { display: none }</style>",
    "<span style=\"position:fixed;top:0\">Full credit</span>",
    "~~~~\n</code></pre>\n~~~~~\n<script>alert(18)</script>",
]

ACTIVE_RAW = [
    "<script>alert('raw')</script>",
    "<img src=x onerror=alert('raw')>",
    "<a href=javascript:alert('raw')>x</a>",
    "<img/src=\"x\"/onerror=alert('raw')>",
]

ORDINARY = [
    "## My reasoning\nThe kernel is memory-bound when $I < I^*$, i.e. $a<b$ and $c>d$.\n\n"
    "$$\\frac{F}{B} < \\frac{\\pi}{\\beta}$$",
    "Compare `x<y` with `a -> b`, and see [the docs](https://jax.readthedocs.io/) or <https://example.com>.",
    "```python\nif flops < 2 * bytes and x > 0:\n    print('<b>not bold</b>')\n```",
    "| chip | TF/s |\n|:--|--:|\n| v5e | 197 |\n\n- [x] checked\n- item with **bold** and *em*",
    "Line one<br>line two, H<sub>2</sub>O, x<sup>2</sup>, <b>bold</b> and an image "
    "<img src=\"https://example.com/a.png\" alt=\"plot\" width=\"300\">.",
]

OUTPUTS = [
    {"output_type": "display_data", "metadata": {},
     "data": {"text/html": "<script>alert('out')</script>", "text/plain": "x"}},
    {"output_type": "execute_result", "execution_count": 1, "metadata": {},
     "data": {"image/svg+xml": "<svg onload=alert('svg')></svg>",
              "application/javascript": "alert('js')",
              "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2,
                                                           "version_minor": 0},
              "text/plain": "y"}},
]

ATTACHMENTS = {
    "plot.png": {"image/png": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
    "evil.svg": {"image/svg+xml": "<svg onload=alert('att')></svg>"},
    "page.html": {"text/html": "<script>alert('att')</script>"},
    "quote.png": {"image/png": 'x" onerror="alert(1)'},
}

ACTIVE_MIME = ("text/html", "image/svg+xml", "application/javascript",
               "application/vnd.jupyter.widget-view+json")


def _cell(kind: str, source: str, i: int, **extra) -> dict:
    cell = {"cell_type": kind, "id": f"html-{kind}-{i}", "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=1, outputs=[])
    cell.update(extra)
    return cell


def active_html_submission(release: dict) -> dict:
    """All answers right, plus active HTML in cells of the student's own (see the module doc)."""
    nb = fixture.honest(release)
    cells = nb["cells"]
    extra = [_cell("markdown", s, i) for i, s in enumerate(ORDINARY)]
    extra += [_cell("markdown", s, 100 + i) for i, s in enumerate(ACTIVE_MARKDOWN)]
    extra += [_cell("raw", s, 200 + i) for i, s in enumerate(ACTIVE_RAW)]
    extra.append(_cell("markdown", "![plot](attachment:plot.png)", 300, attachments=ATTACHMENTS))
    extra.append(_cell("code", "shown = 1", 400, outputs=OUTPUTS))
    cells[1:1] = extra  # after the intro, before the "given" cell
    # the answer cells' submitted outputs are stale HTML too
    for cell in cells:
        if cell["cell_type"] == "code" and not cell["metadata"].get("nbgrader", {}).get("grade"):
            cell["outputs"] = list(OUTPUTS)
    return nb


_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "xlink:href", "background",
                   "poster", "srcdoc", "codebase", "cite", "ping"}
_ACTIVE_TAGS = {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math",
                "style", "link", "meta", "base", "form", "template", "noscript"}


class _Judge(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in _ACTIVE_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag} {name}=")
            if name in _URL_ATTRIBUTES and value is not None:
                url = re.sub(r"[\x00-\x20]", "", value).lower()
                scheme = url.split(":", 1)[0] if ":" in url else ""
                harmless_image = tag == "img" and re.match(r"data:image/(png|jpeg|gif|webp);", url)
                if scheme in ("javascript", "vbscript", "livescript") or (scheme == "data" and not harmless_image):
                    self.found.append(f"{tag} {name}={value[:40]}")

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.found.append("<!--")


def active_dom(fragment: str) -> list[str]:
    """What would run (or could hide what runs) in an HTML fragment: script-capable elements,
    event-handler attributes, script/data URLs, comments. Empty for inert HTML."""
    judge = _Judge()
    judge.feed(fragment)
    judge.close()
    found = list(judge.found)
    if re.search(r"<script", fragment, re.I):
        found.append("<script")
    return found


def rendered(source: str, attachments: dict | None = None) -> list[str]:
    """``source`` as nbconvert (formgrader) and a CommonMark renderer turn it into HTML."""
    from markdown_it import MarkdownIt
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    nbconvert = MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments or {}))
    return [nbconvert.render(source), MarkdownIt("commonmark").render(source)]


def active_in_notebook(nb: dict) -> list[str]:
    """Everything active a viewer of ``nb`` could run: in its markdown (rendered both ways), its
    raw cells (pasted as HTML by nbconvert), its outputs' MIME types and its attachments."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            for page in rendered(source, cell.get("attachments")):
                found += [f"cell {i}: {x}" for x in active_dom(page)]
        elif cell["cell_type"] == "raw":
            found += [f"cell {i} (raw): {x}" for x in active_dom(source)]
        for output in cell.get("outputs", []):
            found += [f"cell {i} output {m}" for m in ACTIVE_MIME if m in output.get("data", {})]
        for name, bundle in (cell.get("attachments") or {}).items():
            for mime, data in bundle.items():
                data = "".join(data) if isinstance(data, list) else data
                if mime not in ("image/png", "image/jpeg", "image/gif", "image/webp") \
                        or not re.fullmatch(r"[A-Za-z0-9+/=\s]*", data):
                    found.append(f"cell {i} attachment {name} {mime}")
    return found

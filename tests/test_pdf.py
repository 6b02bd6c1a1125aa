"""`make pdf`: the whole book as one PDF, printed from the built HTML (web/make_pdf.py).

Reads _build/pdf (`make pdf` writes it after `make book`); a missing PDF is a failure.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

pytestmark = pytest.mark.book  # reads the built site (make test: after the build)

REPO = Path(__file__).resolve().parent.parent
PDF = REPO / "_build" / "pdf"


def _make_pdf():
    spec = importlib.util.spec_from_file_location("make_pdf", REPO / "web" / "make_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chapters_follow_the_table_of_contents():
    names = _make_pdf().chapters(REPO / "_toc.yml")
    assert names[0] == "book/rooflines" and "book/index" not in names
    assert all((REPO / f"{n}.md").is_file() for n in names)


def test_pages_and_images_are_counted_from_the_pdf_objects():
    mp = _make_pdf()
    data = (b"%PDF-1.4\n1 0 obj <</Type /Pages /Kids [2 0 R 3 0 R]>>\n2 0 obj <</Type /Page>>\n"
            b"3 0 obj <</Type/Page>>\n4 0 obj <</Type /XObject /Subtype /Image>>\n")
    assert mp.pdf_pages(data) == 2 and mp.pdf_images(data) == 1


def test_figures_are_counted_per_chapter():
    article = BeautifulSoup(
        "<article><figure id='a'><img alt='x'><figcaption><span class='caption-number'>Fig. 1"
        "</span></figcaption></figure><figure><img></figure>"
        "<div class='sb-live'><div class='sb-live-figure'><img></div></div></article>",
        "html.parser")
    assert _make_pdf().count_figures(article) == 2  # the numbered figure and the widget


@pytest.mark.slow
def test_make_pdf_printed_the_whole_book():
    pdf = PDF / "scalebook.pdf"
    if not pdf.is_file():
        pytest.fail(f"{pdf} is missing: run `make pdf` (after `make book`)")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    summary = json.loads((PDF / "scalebook.json").read_text())
    mp = _make_pdf()
    assert summary["pages"] == mp.pdf_pages(data) and summary["pages"] >= 10 * summary["chapters"]
    assert summary["chapters"] == len(mp.chapters(REPO / "_toc.yml"))
    # every figure of the built chapters went in, and is in the PDF as an image
    built = 0
    for name in mp.chapters(REPO / "_toc.yml"):
        page = BeautifulSoup((REPO / "_build" / "html" / f"{name}.html").read_text(), "html.parser")
        built += mp.count_figures(page.find("article"))
    assert summary["figures"] == built
    assert mp.pdf_images(data) >= summary["figures"]
    # widgets print as their pictures with captions, not as controls
    source = BeautifulSoup((PDF / "book.html").read_text(), "html.parser")
    widgets = source.select(".sb-live-figure")
    assert all(w.select_one(".sb-live-caption").get_text(strip=True) for w in widgets)

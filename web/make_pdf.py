"""The whole book as one PDF, printed by headless Chromium from the built HTML (`make pdf`).

For instructors who hand out chapters and readers offline. Nothing is downloaded: the pages,
their images and MathJax come from ``_build/html`` (``make book``), the printer is the Debian
Chromium the browser tests use.

1. The chapters, in ``_toc.yml``'s order, are put into one page, ``_build/pdf/book.html``: a
   title page with the contents, then each chapter's article (its ``<article>``), each starting
   on a new page. The page's ``<base>`` is the chapters' folder, so every image and style
   sheet resolves as it does on the site. Only MathJax's scripts come along: a widget prints
   as its static picture, with its chart in words as the caption (``_ext/static/book.css``'s
   print rules show the caption and hide the controls; no widget script runs).
2. Chromium opens it from disk, waits for MathJax to typeset every formula and for every image
   to load, and prints it (A4, backgrounds on) to ``_build/pdf/scalebook.pdf``.
3. ``_build/pdf/scalebook.json`` records what went in: chapters, figures (numbered figures and
   widget pictures) per chapter, pages.

    .venv/bin/python web/make_pdf.py [--html _build/html] [--out _build/pdf]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def chapters(toc: Path) -> list[str]:
    """The chapters' docnames ("book/rooflines"), in the table of contents' order (the root
    page, the book's cover, is left out: the PDF has its own title page)."""
    import yaml

    data = yaml.safe_load(toc.read_text(encoding="utf-8"))
    names = []
    for part in data.get("parts", []):
        for chapter in part.get("chapters", []):
            names.append(chapter["file"])
    return names


def count_figures(article) -> int:
    """Numbered figures plus widget pictures in one chapter's article."""
    numbered = [f for f in article.find_all("figure") if f.find(class_="caption-number")]
    return len(numbered) + len(article.select(".sb-live-figure"))


def combined_page(html_dir: Path, names: list[str], title: str) -> tuple[str, dict]:
    """The chapters as one HTML page (module docstring) and {chapter title: figures}."""
    from bs4 import BeautifulSoup

    first = BeautifulSoup((html_dir / f"{names[0]}.html").read_text(encoding="utf-8"),
                          "html.parser")
    head = [str(link) for link in first.find_all("link", rel="stylesheet")]
    head += [str(s) for s in first.find_all("script")
             if s.get("src") and "mathjax" in s["src"].lower()
             or (not s.get("src") and "MathJax" in s.get_text())]
    base = (html_dir / names[0]).parent.resolve().as_uri() + "/"
    bodies, figures, contents = [], {}, []
    for name in names:
        page = BeautifulSoup((html_dir / f"{name}.html").read_text(encoding="utf-8"),
                             "html.parser")
        article = page.find("article")
        if article is None:
            raise ValueError(f"{name}.html has no <article>: is the book built?")
        heading = article.find("h1")
        chapter = heading.get_text(" ", strip=True).rstrip("#").strip() if heading else name
        figures[chapter] = count_figures(article)
        contents.append(f"<li>{chapter}</li>")
        bodies.append(f"<section class='sb-pdf-chapter'>{article.decode_contents()}</section>")
    cover = (f"<section class='sb-pdf-cover'><h1>{title}</h1>"
             f"<p>{sum(figures.values())} figures in {len(names)} chapters. Printed from the "
             "built book; each widget appears as its picture at the book's settings.</p>"
             f"<ol>{''.join(contents)}</ol></section>")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><base href='{base}'>"
            f"<title>{title}</title>{''.join(head)}"
            "<style>.sb-pdf-cover{break-after:page} .sb-live-caption{display:block}"
            " body{margin:0} .headerlink{display:none}</style></head>"
            f"<body><main class='bd-main'><div class='bd-content'><article class='bd-article'>"
            f"{cover}{''.join(bodies)}</article></div></main></body></html>")
    return page, figures


def pdf_pages(data: bytes) -> int:
    """The number of pages of PDF ``data`` (its ``/Type /Page`` objects)."""
    return len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data))


def pdf_images(data: bytes) -> int:
    """The number of image objects in PDF ``data``."""
    return len(re.findall(rb"/Subtype\s*/Image", data))


def print_pdf(page: Path, timeout: float = 300.0) -> bytes:
    """``page`` printed by headless Chromium once MathJax and every image are done."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).is_file():
            raise SystemExit(f"make pdf needs {binary} (apt-get install chromium chromium-driver)")
    profile = tempfile.mkdtemp(prefix="scalebook-pdf-")
    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--allow-file-access-from-files", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_script_timeout(timeout)
    driver.set_page_load_timeout(timeout)
    try:
        driver.get(page.resolve().as_uri())
        driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const images = Promise.all([...document.images].map(i => i.decode().catch(() => {})));
            const wait = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
              ? MathJax.startup.promise.then(() => images).then(() => done(true), () => done(false))
              : setTimeout(wait, 100);
            wait();""")
        # Page.printToPDF over the DevTools protocol: WebDriver's print command gives up
        # after the renderer's 10 s, too short for a book of this size on a busy machine
        result = driver.execute_cdp_cmd("Page.printToPDF", {
            "printBackground": True, "preferCSSPageSize": True,
            "paperWidth": 8.27, "paperHeight": 11.69,  # A4, inches (the @page rule wins)
            "marginTop": 0.6, "marginBottom": 0.6, "marginLeft": 0.6, "marginRight": 0.6})
        return base64.b64decode(result["data"])
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=REPO / "_build" / "html")
    parser.add_argument("--out", type=Path, default=REPO / "_build" / "pdf")
    args = parser.parse_args()
    names = chapters(REPO / "_toc.yml")
    missing = [n for n in names if not (args.html / f"{n}.html").is_file()]
    if missing:
        raise SystemExit(f"not built: {', '.join(missing)}; run `make book` first")
    import yaml

    title = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["title"]
    args.out.mkdir(parents=True, exist_ok=True)
    page, figures = combined_page(args.html, names, title)
    source = args.out / "book.html"
    source.write_text(page, encoding="utf-8")
    start = time.monotonic()
    data = print_pdf(source)
    target = args.out / "scalebook.pdf"
    target.write_bytes(data)
    summary = {"pdf": target.name, "pages": pdf_pages(data), "images": pdf_images(data),
               "figures": sum(figures.values()), "figures_per_chapter": figures,
               "chapters": len(names)}
    (args.out / "scalebook.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(f"{target}: {summary['pages']} pages, {summary['figures']} figures "
          f"({len(names)} chapters, {time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())

"""A chapter page weighs under 3 MB before the reader touches anything, and still shows every
icon, formula and search result it showed with the theme's full Font Awesome bundle.

The weight is what the browser reads from disk for the page: the HTML and every script, style
sheet, font and image it loads before any interaction (Chromium's DevTools network log,
tests/live_browser.py). Most of it used to be the theme's Font Awesome bundle (1.49 MB, every
icon); _ext/fontawesome_subset.py cuts it to the icons the pages use, and
_ext/search_scripts.py leaves the search index to the search page. Three layers:

- the subsetter on small made-up bundles and on the theme's real one, the search index tag's
  removal (no build);
- the built site (after ``make book``): every icon a page names is in the subset;
- Chromium opening the built pages from disk: the weight, and every icon drawn as an SVG
  (none as Font Awesome's "missing" placeholder), the math typeset, search answering.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import live_browser as lb

pytestmark = pytest.mark.book  # reads the built site (make test: after the build)

REPO = Path(__file__).resolve().parent.parent

#: The issue's budget: bytes read from disk for a page before any touch.
PAGE_BYTES_BEFORE_TOUCH = 3_000_000
#: The subset holds Font Awesome's code (about 60 KB) and a few dozen icons.
SUBSET_BYTES = 150_000


def _ext(name: str):
    """A module of the book's _ext/, imported from the source tree."""
    spec = importlib.util.spec_from_file_location(name, REPO / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fs = _ext("fontawesome_subset")
search_scripts = _ext("search_scripts")


def _theme_bundle() -> Path:
    import pydata_sphinx_theme

    path = fs.theme_bundle([Path(pydata_sphinx_theme.__file__).parent / "theme"
                            / "pydata_sphinx_theme"])
    assert path is not None, "pydata-sphinx-theme ships no static/scripts/fontawesome.js"
    return path


def _icons(js: str) -> dict[str, set[str]]:
    """Per icon table (keyed by the prefix its pack registers, e.g. "fas"), the icon names
    and alias names it holds."""
    out = {}
    for start, end, table in fs.icon_tables(js):
        prefix = re.search(r'\("(fa[a-z]*)",', js[end:end + 400]).group(1)
        out[prefix] = {n for n, icon in table.items()
                       for n in [n, *(a for a in icon[2] if isinstance(a, str))]}
    return out


# --------------------------------------------------------------------------- the subsetter

#: Two packs in the shape of Font Awesome's all.min.js: code, then ``var p={...}`` per pack.
TOY = ('/*! For license information please see fontawesome.js.LICENSE.txt */\n'
       '!function(){var p={monero:[496,512,[],"f3d0","M1"],"42-group":[640,512,["innosoft"],'
       '"e080","M2"]};d("fab",p)}(),!function(){var p={0:[320,512,[],"30","M3"],'
       '"magnifying-glass":[512,512,[128269,"search"],"f002","M4"],bars:[448,512,["navicon"],'
       '"f0c9","M5"]};d("fas",p)}();\n//# sourceMappingURL=fontawesome.js.map')


def _without_tables(js: str) -> str:
    """``js`` with every icon table emptied: the code around them."""
    for start, end, _ in reversed(fs.icon_tables(js)):
        js = js[:start] + "{}" + js[end:]
    return js


def test_subset_keeps_the_code_and_only_the_icons_named():
    out = fs.subset_bundle(TOY, {"solid", "search", "bars", "lg"}, "/* licence */\n")
    assert out.startswith("/* licence */\n/*! For license information")
    assert "sourceMappingURL" not in out  # the map describes the full bundle
    assert 'var p={};d("fab",p)' in out  # no brand icon used: an empty table, same code
    assert 'var p={"magnifying-glass":[512,512,[128269,"search"],"f002","M4"],' \
           '"bars":[448,512,["navicon"],"f0c9","M5"]};d("fas",p)' in out
    assert _without_tables(out) == "/* licence */\n" + _without_tables(TOY).replace(
        "\n//# sourceMappingURL=fontawesome.js.map", "\n")


def test_every_icon_kept_by_name_alias_or_number_key():
    names = {"monero", "innosoft", "0", "navicon"}
    kept = fs.icon_tables(fs.subset_bundle(TOY, names))
    assert [sorted(t) for _, _, t in kept] == [["42-group", "monero"], ["0", "bars"]]


@pytest.mark.parametrize("broken", [
    TOY.replace('bars:[448', 'bars:f([448'),  # an entry that is not data
    TOY.replace('"f0c9","M5"]}', '"f0c9","M5"];'),  # a table that does not end
    "(()=>{var c={};})();",  # no table at all
])
def test_a_bundle_of_another_shape_is_refused(broken):
    with pytest.raises(ValueError):
        fs.subset_bundle(broken, {"bars"})


def test_class_words_are_the_names_after_fa():
    words = fs.class_words(['<i class="fa-solid fa-magnifying-glass fa-lg"></i>',
                            'f.classList="fa-solid fa-xmark"', 'data-fa-symbol="x" sofa-bed'])
    assert words == {"solid", "magnifying-glass", "lg", "xmark"}


def test_icons_come_from_the_pages_and_the_scripts_they_load(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "_static" / "scripts").mkdir(parents=True)
    (tmp_path / "book" / "page.html").write_text(
        '<script src="../_static/theme.js?digest=1"></script>'
        '<script defer src="../_static/scripts/fontawesome.js?digest=1"></script>'
        '<script src="https://cdn.example/other.js"></script><i class="fa-solid fa-bars"></i>')
    (tmp_path / "_static" / "theme.js").write_text('e.classList="fa-solid fa-xmark"')
    (tmp_path / "_static" / "unused.js").write_text('e.classList="fa-solid fa-skull"')
    (tmp_path / "_static" / "scripts" / "fontawesome.js").write_text("fa-every-icon")
    assert fs.used_icons(tmp_path) == {"solid", "bars", "xmark"}


def test_the_theme_bundle_is_subset_to_a_few_icons():
    bundle = _theme_bundle()
    js = bundle.read_text(encoding="utf-8")
    full = _icons(js)
    assert set(full) == {"fab", "far", "fas"} and len(full["fas"]) > 1000
    header = fs.license_header(bundle)
    assert "Font Awesome Free" in header and "CC BY 4.0" in header and "MIT" in header
    out = fs.subset_bundle(js, {"solid", "magnifying-glass", "xmark", "github"}, header)
    assert len(out.encode()) < SUBSET_BYTES
    assert out.startswith(header)
    assert _icons(out) == {"fab": {"github"}, "fas": {"magnifying-glass", "search", "xmark",
                                                      "close", "multiply", "remove", "times"}}


def test_only_the_search_index_tag_goes():
    head = ('    <script src="{up}_static/searchtools.js"></script>\n'
            '    <script src="{up}_static/language_data.js"></script>\n'
            '    <script src="{up}searchindex.js"></script>\n'
            '  \n  </head>')
    for up in ("", "../", "../../"):
        page = head.format(up=up)
        lighter = search_scripts.without_search_index(page)
        assert lighter == page.replace(f'    <script src="{up}searchindex.js"></script>\n', "")
        assert search_scripts.without_search_index(lighter) == lighter
    other = '<script src="../_static/live/widgets.js"></script><p>searchindex.js</p>'
    assert search_scripts.without_search_index(other) == other


# --------------------------------------------------------------------------- the built site

def _built_pages() -> list[Path]:
    pages = sorted((lb.HTML / "book").glob("*.html"))
    if not pages:
        pytest.fail(f"no pages in {lb.HTML / 'book'}: run `make book` first", pytrace=False)
    return pages


#: Class attributes in the built HTML, and the theme's scripts' literal class lists.
_CLASSES = re.compile(r"""\bclass(?:List)?\s*=\s*["']([^"']*)["']""")


@pytest.mark.slow
def test_every_icon_the_site_names_is_in_its_subset():
    shipped = lb.HTML / "_static" / "scripts" / "fontawesome.js"
    size = shipped.stat().st_size
    assert size < SUBSET_BYTES, f"the site ships the full Font Awesome bundle ({size:,} bytes)"
    js = shipped.read_text(encoding="utf-8")
    assert js.startswith("/*!\n * Font Awesome Free")
    full = set().union(*_icons(_theme_bundle().read_text(encoding="utf-8")).values())
    subset = set().union(*_icons(js).values())
    texts = [p.read_text(encoding="utf-8") for p in lb.HTML.rglob("*.html")]
    texts += [p.read_text(encoding="utf-8") for p in (lb.HTML / "_static" / "scripts").glob("*.js")
              if p.name != "fontawesome.js"]
    named = {w[3:] for text in texts for attr in _CLASSES.findall(text) for w in attr.split()
             if w.startswith("fa-")}
    icons = named & full  # fa-solid, fa-lg and the like are no icons
    assert {"magnifying-glass", "bars", "xmark"} <= icons  # the header's, the theme's banners'
    assert icons <= subset, f"named on a page but not shipped: {sorted(icons - subset)}"


# --------------------------------------------------------------------------- in Chromium


def _wait(driver, script: str, what: str, timeout: float = 20.0) -> None:
    if not lb.wait_for(driver, script, timeout=timeout):
        raise TimeoutError(what)


#: Font Awesome's icons as the page shows them: the SVGs it drew (prefix, name, whether it
#: is the "missing" placeholder) and the <i>/<span> icon elements it left undrawn.
_DRAWN = """
return {
  svgs: [...document.querySelectorAll('svg.svg-inline--fa')].map(s =>
    [s.dataset.prefix, s.dataset.icon, !!s.querySelector('.missing')]),
  left: [...document.querySelectorAll('i, span')].filter(e =>
    [...e.classList].some(c => c.startsWith('fa-'))).map(e => e.className),
};
"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("page", [p.stem for p in sorted((lb.HTML / "book").glob("*.html"))]
                         or ["index"])  # (before a build: one case, which fails saying why)
def test_page_is_light_and_shows_every_icon_and_formula(browser, page):
    _built_pages()
    html = (lb.HTML / "book" / f"{page}.html").read_text(encoding="utf-8")
    lb.console_errors(browser)
    urls = lb.open_page(browser, page)
    assert not lb.outside(urls), lb.outside(urls)
    assert not [u for u in urls if "searchindex.js" in u], f"{page} loads the search index"
    weight = lb.page_weight(urls)
    assert weight < PAGE_BYTES_BEFORE_TOUCH, f"{page}: {weight:,} bytes before a touch"

    _wait(browser, "return document.documentElement.classList"
                   ".contains('fontawesome-i2svg-complete')", f"{page}: Font Awesome never ran")
    drawn = browser.execute_script(_DRAWN)
    assert drawn["left"] == [], f"{page}: icons not drawn: {drawn['left']}"
    assert not [s for s in drawn["svgs"] if s[2]], f"{page}: missing icons: {drawn['svgs']}"
    in_html = len(re.findall(r"<(?:i|span)\b[^>]*\bclass=\"[^\"]*\bfa-", html))
    assert in_html > 10 and len(drawn["svgs"]) == in_html
    # an icon the theme's script adds later (its banners' close button) is drawn too
    browser.execute_script("const i = document.createElement('i'); i.id = 'sb-test-icon';"
                           "i.className = 'fa-solid fa-xmark'; document.body.append(i);")
    _wait(browser, "return document.querySelector('svg.svg-inline--fa[data-icon=\"xmark\"]"
                   ":not(:has(.missing))')", f"{page}: a late fa-xmark is not drawn")

    if 'class="math' in html:
        typeset = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "MathJax.startup.promise.then(() => done(["
            "  document.querySelectorAll('mjx-container').length,"
            "  document.querySelectorAll('mjx-merror').length]));")
        assert typeset[0] > 0 and typeset[1] == 0, f"{page}: math typeset {typeset}"
    assert not lb.console_errors(browser)


@pytest.mark.browser
@pytest.mark.slow
def test_search_from_a_chapter_lists_the_chapter(browser):
    """The header's search box, as a reader uses it: open it, type, press Enter; the search
    page (which loads the index) lists the matching chapters."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _built_pages()
    lb.open_page(browser, "hardware")
    browser.find_element(By.CSS_SELECTOR, "button.search-button__button").click()
    field = browser.find_element(By.CSS_SELECTOR, "#pst-search-dialog input[name=q]")
    field.send_keys("roofline", Keys.ENTER)
    _wait(browser, "return location.pathname.endsWith('/search.html') && document"
                   ".querySelectorAll('#search-results ul.search li').length > 0",
          "search found nothing for 'roofline'")
    hits = browser.execute_script("return [...document.querySelectorAll("
                                  "'#search-results ul.search li a')].map(a => a.href)")
    assert any("book/rooflines.html" in h for h in hits), hits
    assert browser.execute_script(_DRAWN)["left"] == []
    # From disk (file://) Chromium refuses searchtools.js's fetch of each hit's page for an
    # excerpt: _ext/theme_fixes.py turns excerpts off there and says so in one line, so the
    # console stays clean.
    note = browser.execute_script(
        "const n = document.querySelector('.sb-search-note'); return n && n.textContent")
    assert note and "served over http" in note
    assert not lb.console_errors(browser)

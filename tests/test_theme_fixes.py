"""_ext/theme_fixes.py: what it changes in the built pages, and that it changes nothing else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("theme_fixes", REPO / "_ext" / "theme_fixes.py")
tf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tf)

THEBE = '    <script>const THEBE_JS_URL = "x"; const a = 1</script>\n'


def test_a_repeated_inline_script_goes_and_the_first_stays():
    head = (THEBE + '    <script src="../_static/a.js"></script>\n' + THEBE
            + "    <script>var b = 2;</script>\n")
    assert tf.without_repeats(head) == (THEBE + '    <script src="../_static/a.js"></script>\n'
                                        + "    <script>var b = 2;</script>\n")
    assert tf.without_repeats(tf.without_repeats(head)) == tf.without_repeats(head)


def test_theme_buttons_are_named_by_what_they_show():
    field = ('<button class="btn search-button-field search-button__button pst-js-only" '
             'title="Search" aria-label="Search" data-bs-toggle="tooltip">')
    icon_only = ('<button class="btn btn-sm pst-navbar-icon search-button search-button__button" '
                 'title="Search" aria-label="Search">')
    mode = '<i class="theme-switch fa-solid fa-sun fa-lg" data-mode="light" title="Light"></i>'
    toggle = '<summary aria-label="Toggle hidden content">'
    fixed = tf.with_names_matching_text(field + icon_only + mode + toggle)
    assert fixed == (field.replace(' aria-label="Search"', "") + icon_only
                     + mode.replace(' title="Light"', "") + "<summary>")


def test_low_contrast_inline_text_turns_black_or_white():
    assert round(tf.contrast("#ffffff", "#8ca252"), 2) < 4.5
    light = 'style="color: #ffffff; text-decoration-color: #ffffff; background-color: #8ca252"'
    dark = 'style="color: #ffffff; text-decoration-color: #ffffff; background-color: #393b79"'
    assert tf.with_readable_inline_colours(light) == light.replace("#ffffff", "#000000")
    assert tf.with_readable_inline_colours(dark) == dark  # 10:1 already
    assert tf.contrast("#000000", "#8ca252") >= 4.5


def test_search_note_goes_after_the_options_once():
    page = ('<script src="_static/documentation_options.js?v=1"></script>\n'
            '<script src="_static/searchtools.js"></script>\n')
    once = tf.with_search_note(page)
    assert once.count("sb-search-note") == 1 and tf.with_search_note(once) == once
    assert once.index("SHOW_SEARCH_SUMMARY = false") < once.index("searchtools.js")
    assert "location.protocol === \"file:\"" in once

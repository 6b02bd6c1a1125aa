"""Printed numbers stay readable at the limits (issue 28): the formatting helpers of
scalebook.units, and what the widgets print for the largest and smallest inputs they accept."""

from __future__ import annotations

import re

import pytest

from scalebook.live import NUMBER_LIMIT, render
from scalebook.live.summary import table
from scalebook.units import format_bytes, format_count, format_integer, format_seconds

#: A run of more than 15 digits (with or without thousands separators) is not readable.
LONG_NUMBER = re.compile(r"\d(?:,?\d){15,}")


@pytest.mark.parametrize("call, text", [
    (lambda: format_integer(16384), "16,384"),
    (lambda: format_integer(999_999_999_999_999), "999,999,999,999,999"),
    (lambda: format_integer(8e33), "8\u202f×\u202f10³³"),
    (lambda: format_integer(float("inf")), "∞"),
    (lambda: format_count(7.2e24, unit="FLOPs"), "7.2\u202f×\u202f10²⁴ FLOPs"),
    (lambda: format_count(8.08e11, unit="FLOPs"), "808 GFLOPs"),
    (lambda: format_count(999.9), "1000"),  # rounding up: a plain integer, no exponent
    (lambda: format_seconds(1e-15), "1\u202f×\u202f10⁻⁶ ns"),  # never "0 ns" for a time that is not 0
    (lambda: format_seconds(0), "0 ns"),  # a time that is 0 (no collective on one chip)
    (lambda: format_seconds(5e-11), "0.05 ns"),
    (lambda: format_seconds(3e30), "3.47\u202f×\u202f10²⁵ days"),
    (lambda: format_bytes(1e40), "8.88\u202f×\u202f10²⁴ PiB"),
])
def test_numbers_at_the_limits_stay_one_readable_word(call, text):
    assert call() == text


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        format_integer(-1)


def test_summary_tables_pad_every_cell_so_numbers_never_run_together():
    out = table(("what", "forward", "backward"), [("total", "8.08×10¹¹", "1.62×10¹²")])
    cells = re.findall(r"<t[dh] style='([^']*)'>", out)
    assert len(cells) == 6 and all("padding" in c for c in cells)
    assert out.count("text-align:right") == 4  # the numbers' columns
    assert "&lt;b&gt;" in table(("a",), [("<b>",)])  # escaped unless told otherwise


#: The largest (and smallest) values each widget accepts, typed into its fields.
EXTREMES = [
    ("scalebook.live.calculator", {"preset": "custom", "n_layers": NUMBER_LIMIT,
                                   "d_model": NUMBER_LIMIT, "n_chips": 1,
                                   "tokens_trillions": NUMBER_LIMIT}),
    ("scalebook.live.calculator", {"n_chips": NUMBER_LIMIT, "seq_len": 1}),
    ("scalebook.live.serving", {"n_chips": 1, "prompt_len": 16, "gen_len": 1, "batch": 1}),
    ("scalebook.live.layout_planner", {"preset": "custom", "d_model": 2 ** 20, "n_chips": 1,
                                       "dp": 1, "fsdp": 1, "tp": 1, "global_batch": NUMBER_LIMIT}),
    ("scalebook.live.roofline", {"B": 1.0, "D": 128.0, "F": 128.0, "per_example": True}),
]


@pytest.mark.parametrize("module, controls", EXTREMES)
def test_widgets_print_no_unreadable_number_at_their_limits(module, controls):
    out = render(module, controls)
    words = [out.get("error", ""), out.get("summary_html", "")]
    chart = out.get("chart", {})
    words += [t["text"] for t in chart.get("texts", [])]
    words += [p["title"] for p in chart.get("panels", [])]
    for word in words:
        assert not LONG_NUMBER.search(word), LONG_NUMBER.search(word).group()
        assert not re.search("×\u202f10\\S+[A-Za-z]", word), word  # a unit after a space
        assert "^" not in word and not re.search(r"\de[+-]?\d", word), word  # typeset powers

"""The chart description's series kinds (scalebook/live/chart.py) that web/src/widgets.js
draws: horizontal bars with their texts after each bar, and texts at data points."""

from __future__ import annotations

import pytest

from scalebook.live import chart


def test_horizontal_bars_and_annotations():
    bars = chart.bars([1.0, 2], ["#000000", "#ffffff"], ["a", "b"], horizontal=True)
    assert bars == {"kind": "bars", "values": [1.0, 2.0], "colours": ["#000000", "#ffffff"],
                    "texts": ["a", "b"], "horizontal": True}
    assert chart.bars([1], ["#000000"], ["a"])["horizontal"] is False
    notes = chart.annotations([[1, 2]], ["← here"], "#4d4d4d", align="right")
    assert notes == {"kind": "annotations", "points": [[1.0, 2.0]], "texts": ["← here"],
                     "colour": "#4d4d4d", "align": "right", "size": 11.0}
    with pytest.raises(ValueError, match="as many texts"):
        chart.annotations([[1, 2]], [], "#000000")
    with pytest.raises(ValueError, match="align"):
        chart.annotations([[1, 2]], ["x"], "#000000", align="top")

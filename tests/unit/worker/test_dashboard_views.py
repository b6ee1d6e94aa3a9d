"""The dashboard's pure views: what a person reads, without a browser."""

from __future__ import annotations

import re

from fairway.dashboard.views import readable, sparkline


def test_a_payload_reads_indented_and_a_broken_one_as_stored() -> None:
    assert readable('{"id":"x","args":[1]}').splitlines() == ["{", '  "id": "x",', '  "args": [', "    1", "  ]", "}"]
    assert readable("not json {") == "not json {"
    assert readable("[" * 5000) == "[" * 5000


def test_a_sparkline_with_one_minute_is_a_level_across_not_a_dot() -> None:
    svg = sparkline([None, 40.0, None])
    [points] = re.findall(r'points="([^"]+)"', svg)
    xs = [float(p.split(",")[0]) for p in points.split()]
    assert xs[0] == 2.0 and xs[-1] == 98.0 and svg.count("<circle") == 1
    assert sparkline([10.0, 20.0, None, 40.0]).count("<circle") == 3

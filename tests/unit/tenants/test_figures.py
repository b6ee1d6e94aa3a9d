"""Per-tenant wait percentiles from log-scale buckets: bounded error, the right order, the right sort."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from fairway.queue.access.figures import (
    TenantFigures,
    add_minute,
    bucket_lower_ms,
    bucket_upper_ms,
    duration,
    quantile_ms,
    ranked,
    wait_bucket,
)


@given(st.floats(min_value=0, max_value=3_600_000))
def test_a_wait_lies_below_its_bucket_upper_edge_within_19_percent(wait_ms: float) -> None:
    upper = bucket_upper_ms(wait_bucket(wait_ms))
    assert wait_ms <= upper <= wait_ms * 1.19 + 1


def test_percentiles_of_known_waits() -> None:
    waits = [float(i) for i in range(1, 1001)]  # 1 ms .. 1000 ms
    random.Random(1).shuffle(waits)
    histogram: dict[int, int] = {}
    for wait in waits:
        histogram[wait_bucket(wait)] = histogram.get(wait_bucket(wait), 0) + 1
    p50, p99 = quantile_ms(histogram, 0.5), quantile_ms(histogram, 0.99)
    assert p50 is not None and 500 <= p50 <= 500 * 1.19 + 1
    assert p99 is not None and 990 <= p99 <= 990 * 1.19 + 1
    assert quantile_ms({}, 0.99) is None


def test_a_percentile_is_interpolated_inside_its_bucket_not_pinned_to_the_upper_edge() -> None:
    # Every tenant waited ~101 s: one bucket. The old upper edge said 110217ms for p50 and p99 alike.
    bucket = wait_bucket(101_000)
    histogram = {bucket: 200}
    p50, p99 = quantile_ms(histogram, 0.5), quantile_ms(histogram, 0.99)
    assert p50 is not None and p99 is not None
    assert bucket_lower_ms(bucket) < p50 < p99 < bucket_upper_ms(bucket)
    assert abs(p50 - 101_000) / 101_000 < 0.1
    assert duration(p50 / 1000) == "1m41s"


def test_one_duration_format_for_every_table() -> None:
    assert [duration(s) for s in (None, 0.0004, 0.85, 4.567, 12.34, 245, 7380)] == [
        "-",
        "0ms",
        "850ms",
        "4.57s",
        "12.3s",
        "4m05s",
        "2h03m",
    ]


def test_minutes_fold_into_counts_and_histogram() -> None:
    figures = TenantFigures("42", waiting=3)
    add_minute(figures, {b"c": b"8", b"f": b"2", b"w10": b"5"})
    add_minute(figures, {"c": "2", "w10": "1", "w20": "4"})
    assert (figures.completed, figures.failed) == (10, 2)
    assert figures.histogram == {10: 6, 20: 4}
    assert abs(figures.failure_rate - 2 / 12) < 1e-9
    assert bucket_lower_ms(20) <= figures.as_dict()["p99_wait_ms"] <= bucket_upper_ms(20)  # type: ignore[operator]


def test_ranking_by_p99_failures_and_waiting() -> None:
    slow = TenantFigures("slow", waiting=1, histogram={30: 1})
    failing = TenantFigures("failing", waiting=2, completed=1, failed=9, histogram={5: 1})
    deep = TenantFigures("deep", waiting=900, histogram={10: 1})
    rows = [slow, failing, deep]
    assert [f.tenant for f in ranked(rows, "p99", None)] == ["slow", "deep", "failing"]
    assert [f.tenant for f in ranked(rows, "failures", None)] == ["failing", "deep", "slow"]
    assert [f.tenant for f in ranked(rows, "waiting", 2)] == ["deep", "failing"]


def test_nearest_rank_percentile_of_exact_waits() -> None:
    import pytest

    from fairway.queue.access.figures import percentile

    waits = [float(v) for v in range(1, 101)]
    assert (percentile(waits, 0.5), percentile(waits, 0.99), percentile(waits, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 0.99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 0.5)

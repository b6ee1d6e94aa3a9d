"""The planner's windows (least growth over a cooldown, most keep over scaleDownDelay) read from
monotonic deques equal a scan of the samples, whatever the order of the clock."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fairway.plan.scaling import _Track

steps = st.lists(
    st.tuples(st.floats(-3.0, 40.0), st.integers(0, 9), st.integers(0, 9)),  # (clock advance, grow, keep)
    min_size=1,
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(steps=steps, cooldown=st.sampled_from([1.0, 10.0, 30.0]), delay=st.sampled_from([10.0, 60.0, 300.0]))
def test_window_extremes_equal_a_scan_of_the_samples(
    steps: list[tuple[float, int, int]], cooldown: float, delay: float
) -> None:
    track, now = _Track(replicas=1, kept_s=max(cooldown, delay)), 0.0
    for advance, grow, kept in steps:
        now += advance
        track.add(now, grow, kept)  # (which drops the samples older than kept_s, as the planner did)
        low = [g for t, g, _ in track.samples if t >= now - cooldown - 1e-9]
        high = [k for t, _, k in track.samples if t >= now - delay - 1e-9]
        assert track.least_grow(now, cooldown) == (min(low) if low else None)
        assert track.most_keep(now, delay) == (max(high) if high else None)

"""The worker's ticker without Redis: which schedules it ticks when, when it wakes next, and how often
it registers them (its Redis side is tests/integration/worker/test_schedules.py's)."""

from __future__ import annotations

from typing import Any

from fairway.queue.access.schedules import Ticked
from fairway.queue.runtime.ticker import REGISTER_EVERY_S, Ticker
from fairway.resource.schedules import Schedule

T0 = 1_800_000_000


class Recorded:
    """Stands in for access.schedules.Schedules: records the calls, answers as tick.lua would."""

    def __init__(self) -> None:
        self.ticks: list[tuple[str, float, int | None]] = []
        self.registered = 0

    def tick(self, schedule: Schedule, now: float, last: int | None = None) -> Ticked:
        self.ticks.append((schedule.name, now, last))
        return Ticked(schedule.latest_tick(now), 1, False)

    def register(self, schedules: Any) -> None:
        self.registered += 1


def test_each_schedule_is_ticked_when_its_next_tick_comes_and_registered_every_minute() -> None:
    now = [T0 + 0.5]
    store = Recorded()
    fast = Schedule(name="fast", every=1, handler="h", queue="q")
    slow = Schedule(name="slow", every=10, handler="h", queue="q")
    ticker = Ticker(store, [fast, slow], clock=lambda: now[0])  # type: ignore[arg-type]
    assert ticker.tick_due() == T0 + 1, "the earliest next tick"
    assert [(n, last) for n, _, last in store.ticks] == [("fast", None), ("slow", None)], "first: state read"
    now[0] = T0 + 1.0
    assert ticker.tick_due() == T0 + 2
    assert store.ticks[-1] == ("fast", T0 + 1.0, T0), "slow is not due; fast passes what it knows"
    now[0] = T0 + 10.2
    ticker.tick_due()
    assert [n for n, _, _ in store.ticks[-2:]] == ["fast", "slow"]
    assert store.registered == 1
    now[0] = T0 + 0.5 + REGISTER_EVERY_S
    ticker.tick_due()
    assert store.registered == 2, "written again after a minute"

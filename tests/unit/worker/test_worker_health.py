"""A worker's probes (pure): live unless its loop is stuck past its window (a job in this thread is not
stuck), ready once a reserve call came back and while it is not stopping."""

from __future__ import annotations

from typing import cast

from fairway.queue.runtime.health import STALE_MARGIN_S, WorkerHealth
from fairway.queue.runtime.lifecycle import StopSignals
from fairway.queue.runtime.runner import Runner


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Inline:
    running_inline = False


def make(block_for_s: float = 5.0) -> tuple[WorkerHealth, Clock, Inline, StopSignals]:
    clock, runner, signals = Clock(), Inline(), StopSignals()
    return WorkerHealth(cast(Runner, runner), signals, block_for_s, clock), clock, runner, signals


def test_a_loop_that_stops_going_round_is_not_live_after_its_window() -> None:
    health, clock, _, _ = make(block_for_s=5)
    assert health.live(), "alive while starting"
    health.ticked()
    clock.now += 5 + STALE_MARGIN_S - 1
    assert health.live()
    clock.now += 2
    assert not health.live(), "stuck past block_for + the margin: the kubelet restarts it"
    health.ticked()
    assert health.live()


def test_a_long_job_in_the_loops_thread_is_not_a_stuck_loop() -> None:
    health, clock, runner, _ = make()
    health.ticked()
    runner.running_inline = True
    clock.now += 3600
    assert health.live(), "the watchdog, not the kubelet, ends a job past its timeout"


def test_ready_once_it_serves_and_not_while_stopping() -> None:
    health, _, _, signals = make()
    health.ticked()
    assert not health.ready(), "not before a reserve call came back"
    health.served()
    assert health.ready()
    signals.stopping = True
    assert not health.ready(), "a draining worker is not ready"

"""A worker's timer work, once per `maintenance_interval_s` (and once when it goes idle), never per job:
publish what it serves, move due delayed jobs and expired reservations back to ready, write the
run-time figures the balancer reads, and beat (the workers hash, for dashboards and process counts).

Writes that only add data (registry, figures, heartbeat) wait while Redis is out of memory; moving
jobs, which frees memory, goes on. Figures that could not be written are kept for the next tick and
written at shutdown, so the balancer never reads low because a worker stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import redis

from fairway.queue.access.figures import RunTally
from fairway.queue.protocol.job import now_ms
from fairway.queue.runtime.fetch import Fetcher

log = logging.getLogger("fairway.worker")


class BeatSource(Protocol):
    """What the heartbeat says of this process (the worker's `Slots`)."""

    def beat(self) -> dict[str, object]: ...


class Housekeeping:
    def __init__(
        self, fetcher: Fetcher, interval_s: float, clock: Callable[[], float], name: str, source: BeatSource
    ) -> None:
        self.fetcher = fetcher
        self.interval_s = interval_s
        self.clock = clock
        self.name = name  # this process in the workers hash: host:pid
        self.source = source
        self.next_at = 0.0  # on `clock`: due at once
        self.delayed_at = float("inf")  # on `clock`: when the earliest delayed job known falls due
        self._runtimes: dict[str, RunTally] = {}
        self._out_of_memory_since: float | None = None

    def due(self) -> bool:
        """The timer's tick is due, or a delayed job fell due (which `run` then moves, alone)."""
        return self.clock() >= min(self.next_at, self.delayed_at)

    def until_due_s(self) -> float:
        return max(0.0, min(self.next_at, self.delayed_at) - self.clock())

    def expect_delayed(self, at: float) -> None:
        """A delayed job falls due at `at` (on `clock`): `due` says so then, so it starts on time
        instead of at the next tick."""
        self.delayed_at = min(self.delayed_at, at)

    def tally(self, served_name: str, run_ms: float, wait_bucket: int) -> None:
        """One finished job's run time and wait, added up until the next tick writes them."""
        tally = self._runtimes.get(served_name)
        if tally is None:
            tally = self._runtimes[served_name] = RunTally()
        tally.add(run_ms, wait_bucket)

    def run(self) -> None:
        """One tick; an outage propagates (the caller backs off) and the timer still moves on. Before
        the tick is due, only the delayed jobs that fell due are moved."""
        now = self.clock()
        if now < self.next_at:
            self._move_due()
            return
        self.next_at = now + self.interval_s
        self._unless_out_of_memory(self.fetcher.refresh)
        self._move_due()
        self._unless_out_of_memory(self.write_runtimes)
        self._unless_out_of_memory(lambda: self.fetcher.heartbeat(self.name, self.source.beat()))

    def _move_due(self) -> None:
        """Due delayed jobs and expired reservations back to ready; note when the next delayed one is due."""
        self.delayed_at = float("inf")
        next_due_ms = self.fetcher.maintain()[3]
        if next_due_ms is not None:
            self.delayed_at = self.clock() + next_due_ms / 1000

    def beat_now(self) -> None:
        """The heartbeat alone, from the lease thread: a job running in the main thread holds up the
        timer, not the heartbeat (its busy slots are what the operator spares on a scale-down)."""
        self.fetcher.heartbeat(self.name, self.source.beat())

    def write_runtimes(self) -> None:
        """The figures gathered since the last write; kept when the write fails."""
        if self._runtimes:
            self.fetcher.record_runtimes(self._runtimes, now_ms())
            self._runtimes = {}

    def leave(self) -> None:
        """Out of the workers hash: this process is gone."""
        self.fetcher.heartbeat(self.name, None)

    def _unless_out_of_memory(self, write: Callable[[], Any]) -> None:
        """A housekeeping write that adds data is skipped while Redis is full (maxmemory, noeviction):
        draining, which frees memory, goes on; the condition is logged once, and its end once."""
        try:
            write()
        except redis.exceptions.OutOfMemoryError:
            if self._out_of_memory_since is None:
                self._out_of_memory_since = self.clock()
                log.error("Redis is out of memory (maxmemory reached); draining goes on, writes that add data wait")
            return
        if self._out_of_memory_since is not None:
            log.warning("Redis accepts writes again after %.1f s", self.clock() - self._out_of_memory_since)
            self._out_of_memory_since = None

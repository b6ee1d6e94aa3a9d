"""The ticker: a worker's thread that writes its schedules' jobs when their ticks come (docs/schedules.md).

Every worker with a schedule runs one, and so does the operator; each tick still gives one job, since
`tick.lua` writes a tick's job only if no ticker handled that tick (or a later one) before. The thread
sleeps until the earliest next tick; an outage is retried every second, and the ticks it delayed are
caught up when Redis is back, within each schedule's grace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from fairway.queue.access.schedules import Schedules
from fairway.queue.connection import is_outage
from fairway.queue.runtime.handlers import Registry
from fairway.resource.schedules import Schedule
from fairway.resource.worker_settings import WorkerSettings

log = logging.getLogger("fairway.worker")
RETRY_S = 1.0  # after an outage
REGISTER_EVERY_S = 60.0  # the registry written again (a Redis that restarted empty learns it back)


def declared_schedules(settings: WorkerSettings, registry: Registry) -> list[Schedule]:
    """The schedules of the worker's settings and of its handler modules (`fairway.schedule`), by name;
    a ValueError when one name means two schedules."""
    found = {s.name: s for s in settings.schedules}
    for name, declared in registry.schedules.items():
        if name in found and found[name] != declared:
            raise ValueError(
                f"schedule {name!r} is declared by the worker's settings and by a handler module, differently; "
                "rename one of them"
            )
        found[name] = declared
    return list(found.values())


class Ticker:
    def __init__(
        self, schedules: Schedules, declared: Sequence[Schedule], clock: Callable[[], float] = time.time
    ) -> None:
        self.schedules, self.declared, self.clock = schedules, tuple(declared), clock
        self._last: dict[str, int | None] = {s.name: None for s in self.declared}
        self._next: dict[str, float] = {s.name: 0.0 for s in self.declared}
        self._registered_at: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def start(self) -> None:
        if not self.declared:
            return
        for s in self.declared:
            log.info("schedule %s", s.describe())
        self._thread = threading.Thread(target=self._run, name="fairway-ticker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def tick_due(self) -> float:
        """Handle every schedule whose next tick has come; the time of the earliest next one."""
        now = self.clock()
        if self._registered_at is None or now - self._registered_at >= REGISTER_EVERY_S:
            self.schedules.register(self.declared)
            self._registered_at = now
        for s in self.declared:
            if now < self._next[s.name]:
                continue
            ticked = self.schedules.tick(s, now, self._last[s.name])
            self._last[s.name] = ticked.last
            self._next[s.name] = s.next_ticks(max(now, ticked.last), 1)[0]
            if ticked.written:
                log.debug("schedule %s: %d job(s) written", s.name, ticked.written)
        return min(self._next.values())

    def _run(self) -> None:
        wake_at = 0.0
        while not self._stop.wait(max(0.0, min(wake_at - self.clock(), REGISTER_EVERY_S))):
            try:
                wake_at = self.tick_due()
                if self._failing:
                    log.info("schedules: Redis answers again; late ticks caught up within their grace")
                self._failing = False
            except Exception as exc:  # an outage (or a failover): the next round catches up
                if not self._failing:
                    what = "cannot reach Redis" if is_outage(exc) or isinstance(exc, OSError) else "a tick failed"
                    log.warning("schedules: %s (%s: %s); retrying every %.0f s", what, type(exc).__name__, exc, RETRY_S)
                self._failing = True
                wake_at = self.clock() + RETRY_S

"""Leases: a job this worker reserved stays its own while the worker lives, and comes back within
`retry_after` once it dies.

A reservation's deadline is only `retry_after` ahead (4 s by default). A thread renews every job this
process holds (reserved, running in the pool or in the main thread, or finished but not yet settled
in Redis) every third of that, so a live worker keeps its jobs for however long they run, and a
worker that was killed stops renewing and its jobs are handed out again seconds later, without
spending a try. The price: a process that cannot run this thread for a whole `retry_after` (a C
extension holding the GIL, a frozen VM) or that cannot reach Redis for that long loses its jobs to
other workers, which may then run them twice; raise `retryAfter` where that is likelier than a crash.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Protocol

from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import JobContext
from fairway.queue.runtime.fetch import Fetcher

log = logging.getLogger("fairway.worker")
MAX_RENEW_EVERY_S = 2.0  # however long retryAfter is, leases are renewed at least this often


class Heartbeat(Protocol):
    def beat_now(self) -> None: ...


class Leases:
    def __init__(self, fetcher: Fetcher, retry_after_s: float, heartbeat: Heartbeat | None = None) -> None:
        self.fetcher = fetcher
        self.heartbeat = heartbeat  # written with each round while this process holds jobs (housekeeping's)
        self.every_s = min(retry_after_s / 3, MAX_RENEW_EVERY_S)
        self._held: dict[int, Reservation] = {}  # by id(): two copies of one document are two leases
        self._running: dict[int, JobContext] = {}  # the context of each held job that has started
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, reservations: Iterable[Reservation]) -> None:
        with self._lock:
            for reservation in reservations:
                self._held[id(reservation)] = reservation

    def started(self, reservation: Reservation, context: JobContext) -> None:
        """Its handler runs now with `context`: a cancel learnt at renewal is told to it."""
        self._running[id(reservation)] = context

    def settled(self, reservation: Reservation) -> None:
        """Redis has its outcome (or it was dropped): no more renewing."""
        with self._lock:
            self._held.pop(id(reservation), None)
            self._running.pop(id(reservation), None)
            self._lost.discard(id(reservation))

    def lost(self, reservation: Reservation) -> bool:
        """Its lease ran out (this worker could not renew it in time): it may be running elsewhere."""
        with self._lock:
            return id(reservation) in self._lost

    def renew(self) -> None:
        """One round of renewals; an outage is logged by the worker's own loop, not here."""
        with self._lock:
            held = list(self._held.values())
        if not held:
            return
        if self.heartbeat is not None:
            self.heartbeat.beat_now()
        renewal = self.fetcher.renew(held)
        for reservation in renewal.gone:
            # Gone: its lease ran out, or (the usual case) its acknowledgement reached Redis while this
            # round was under way. Only a job that has not started yet is acted on (`lost`).
            with self._lock:
                if id(reservation) in self._held:
                    self._lost.add(id(reservation))
        for reservation in renewal.cancelled:
            context = self._running.get(id(reservation))
            if context is not None and not context.cancelled:
                log.info("job %s: cancelled while it runs; telling its handler", context.id)
                context.request_cancel()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fairway-leases", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.renew()
            except Exception as exc:  # an outage: the next round tries again
                log.debug("lease renewal failed: %s", exc)

"""Reserve calls on the wire while jobs run: how a pooled worker keeps its slots busy when Redis is a
network hop away.

With N slots, waiting for each reserve call's reply before the next leaves freed slots idle for a
whole round trip or more (and a no-op drain bound by the round trip, not by CPU). So the pooled
worker on a standalone Redis sends a reserve call as soon as a slot is free, without waiting for the
calls already on the wire (at most MAX_ON_WIRE of them), and starts each reply's jobs as it arrives.
Each call asks for no more than the slots free and not yet asked for when it is sent, so a process
never holds more jobs than it has slots and never hoards what an idle one could run; fairness is the
script's, per job, as before. Acks ride along: each call carries those not yet sent (the ledger's
`AckBatch`), confirmed when its reply comes back.

A reply with fewer jobs than asked means the served queues ran short: no further call goes out
until a job finishes (its ack has to go anyway) or SHORT_RETRY_S has passed, so an emptied queue is
not polled in a tight loop. Calls on the wire when the line breaks are forgotten: their jobs, if
Redis reserved any, are never renewed here and come back when their leases run out; their acks go
with the next call.
"""

from __future__ import annotations

import select
from collections.abc import Callable
from dataclasses import dataclass

from fairway.queue.protocol.calls import Reservation
from fairway.queue.runtime.fetch import POLL_S, StandaloneFetcher
from fairway.queue.runtime.ledger import AckBatch, Ledger
from fairway.queue.runtime.pool import JobPool

MAX_ON_WIRE = 4  # reserve calls in flight at once: enough that a freed slot never waits for one to return
SHORT_RETRY_S = POLL_S / 2  # after a short reply, ask again this soon at the latest (while jobs run)


@dataclass(frozen=True)
class Asked:
    batch: AckBatch
    count: int


class Overlap:
    def __init__(self, fetcher: StandaloneFetcher, ledger: Ledger, pool: JobPool, clock: Callable[[], float]) -> None:
        self.fetcher = fetcher
        self.ledger = ledger
        self.pool = pool
        self.clock = clock
        self._asked: dict[int, Asked] = {}
        self._short_at: float | None = None  # when a reply last came back with fewer jobs than asked

    @property
    def on_wire(self) -> int:
        return len(self._asked)

    @property
    def asked(self) -> int:
        """Slots asked for by the calls on the wire."""
        return sum(a.count for a in self._asked.values())

    def until_may_ask_s(self) -> float:
        """Seconds until a call may go out although nothing finished: 0 unless the queues ran short."""
        if self._short_at is None:
            return 0.0
        return max(0.0, SHORT_RETRY_S - (self.clock() - self._short_at))

    def ask(self, count: int) -> bool:
        """Send a reserve call for `count` jobs, carrying every ack not yet sent, if the rules allow:
        room on the wire, and the queues not known to be short (unless an ack is waiting)."""
        if len(self._asked) >= MAX_ON_WIRE:
            return False
        if not self.ledger.acks and (count == 0 or self.until_may_ask_s() > 0):
            return False
        batch = self.ledger.take_acks()
        try:
            number = self.fetcher.send_reserve(batch.acks, count)
        except BaseException:
            self.ledger.returned(batch)
            self._forget()
            raise
        self._asked[number] = Asked(batch, count)
        return True

    def ask_for(self, wanted: int) -> int:
        """Put a reserve call on the wire for the `wanted` slots no call asks for yet (with the acks not
        yet sent), where the rules allow; the slots still unasked for."""
        unasked = wanted - self.asked
        if (unasked > 0 or not self._asked) and self.ask(max(0, unasked)):
            return 0
        return unasked

    def wait(self, timeout_s: float) -> None:
        """Until a reply or a job's completion is there, at most `timeout_s`."""
        hot = self.fetcher.hot
        fds = [self.pool.wake_fd]
        if self._asked:
            try:
                if hot.ready():
                    return
            except BaseException:
                self._forget()
                raise
            fds.append(hot.fileno())
        self.pool.waiting = True  # from here on a completion writes to the wake pipe
        try:
            if not self.pool.has_completions():
                select.select(fds, [], [], max(0.0, timeout_s))
        finally:
            self.pool.waiting = False
        self.pool.clear_wake()  # (the completions it announced are taken next)

    def take_replies(self, start: Callable[[list[Reservation]], None], *, block: bool) -> None:
        """Give each reply already there (with `block`: of every call on the wire) to `start`, its acks
        confirmed first; a reply taken is started even if the next one fails."""
        hot = self.fetcher.hot
        while self._asked:
            try:
                if not block and not hot.ready():
                    return
                got = self.fetcher.reserve_reply()
            except BaseException:  # the line broke (and forgot its calls): so does the overlap
                self._forget()
                raise
            if got is None:
                continue  # sent again: Redis had forgotten the script
            number, reservations = got
            asked = self._asked.pop(number)
            self.ledger.acked(asked.batch)
            if asked.count:
                self._short_at = self.clock() if len(reservations) < asked.count else None
            start(reservations)

    def _forget(self) -> None:
        """The line broke: every call on it is gone; their acks go with the next call."""
        for asked in reversed(self._asked.values()):  # (each goes to the front: the oldest ends up first)
            self.ledger.returned(asked.batch)
        self._asked.clear()

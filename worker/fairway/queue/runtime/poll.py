"""One poll of the worker loop: settle what finished, reserve up to the free slots (the acks riding
on the call), start what came back, or wait for work without spinning.

Two shapes: a worker whose jobs run in this thread (or on a cluster) makes one reserve call at a
time; a pooled worker on a standalone Redis keeps calls on the wire while its jobs run (`overlap.py`)
and refills a slot as soon as it frees. Housekeeping runs on its timer, and once when going idle.
"""

from __future__ import annotations

from enum import StrEnum

from fairway.queue.protocol.calls import Reservation
from fairway.queue.runtime.fetch import POLL_S
from fairway.queue.runtime.lifecycle import Interrupted
from fairway.queue.runtime.overlap import Overlap
from fairway.queue.runtime.parts import WorkerParts


class Tick(StrEnum):
    WORKED = "worked"
    IDLE = "idle"
    DRAINED = "drained"  # burst mode: nothing ready, nothing delayed, nothing running


class Poll:
    def __init__(self, parts: WorkerParts) -> None:
        self.parts = parts
        self.busy = True  # the last tick found work: the next idle one runs housekeeping first

    def tick(self) -> Tick:
        p = self.parts
        if p.overlap is not None and (p.runner.pooled or p.overlap.on_wire):
            return self._tick_overlapped(p.overlap)
        if p.housekeeping.due():
            # What finished is settled first: after an outage longer than retryAfter, its lease may have
            # run out, and housekeeping would hand the finished job out again.
            p.ledger.flush(p.fetcher.send_acks)
            self.housekeep()
        p.ledger.write_settles()  # (left over from an outage: written in order before anything new)
        reservations = self._reserve()
        p.health.served()
        if not reservations and not p.runner.pooled and self.busy:
            self.housekeep()  # going idle (once, not on every poll): move due jobs, heal the active index
            reservations = self._reserve()
        self.busy = bool(reservations or p.runner.pooled)
        if not self.busy:
            if p.settings.burst and p.fetcher.pending_delayed() == 0:
                return Tick.DRAINED
            self._wait_for_work()
            return Tick.IDLE
        for reservation in reservations:
            p.starter.start(reservation)
        if p.runner.pooled and p.overlap is None:
            # Busy: wait for a completion, briefly when slots are free (new work may come), longer
            # when every slot is taken (nothing to do but wait).
            wait_s = p.completions.wait_s()
            p.completions.collect(wait_s if p.slots.free == 0 else min(POLL_S / 2, wait_s))
        p.ledger.write_settles()
        return Tick.WORKED

    def _tick_overlapped(self, overlap: Overlap) -> Tick:
        """Jobs run in the pool: wait for whichever comes first, a reply (its jobs start at once) or a
        completion (settled, and its slot asked for again before anything else), with the free slots
        always asked for by a call on the wire."""
        p = self.parts
        if p.housekeeping.due():
            overlap.take_replies(self.start_reply, block=True)  # the hot line clear for the flush's acks
            p.ledger.flush(p.fetcher.send_acks)
            self.housekeep()
        p.ledger.write_settles()
        unasked = overlap.ask_for(p.slots.wanted())
        p.completions.account()
        self.busy = True
        if not overlap.on_wire and not p.runner.pooled:
            return Tick.WORKED  # the queues ran short and nothing runs: the next tick goes idle
        wait_s = p.completions.wait_s()
        if unasked > 0 and not p.ledger.acks:
            wait_s = min(wait_s, max(overlap.until_may_ask_s(), 0.001))
        overlap.wait(wait_s)
        overlap.take_replies(self.start_reply, block=False)
        p.completions.collect(0)
        p.ledger.write_settles()
        overlap.ask_for(p.slots.wanted())
        return Tick.WORKED

    def start_reply(self, reservations: list[Reservation]) -> None:
        """A reply's jobs: held (leases renewed from now on) and started."""
        p = self.parts
        p.leases.hold(reservations)
        p.metrics.reserve_round_trip(len(reservations))
        for reservation in reservations:
            p.starter.start(reservation)

    def housekeep(self) -> None:
        p = self.parts
        p.completions.account()  # (the run-time tally goes out with this tick)
        p.housekeeping.run()
        p.memory.check()
        p.joblog.flush()

    def _reserve(self) -> list[Reservation]:
        """Acknowledge what finished and reserve up to the free slots, in one call; the acks leave the
        ledger only when the call returned."""
        p = self.parts
        wanted = p.slots.wanted()
        if wanted == 0 and not p.ledger.acks:
            p.completions.account()
            return []  # every slot busy and nothing to acknowledge: no round trip
        try:
            reservations = p.ledger.carry(lambda acks: p.fetcher.reserve(acks, wanted, p.completions.account))
        finally:
            p.completions.account()  # (done while the call was on the wire, unless it failed first)
        p.leases.hold(reservations)
        p.metrics.reserve_round_trip(len(reservations))
        return reservations

    def _wait_for_work(self) -> None:
        p = self.parts
        began = p.clock()
        try:
            due_s = p.signals.idle_wait(
                lambda: p.fetcher.wait_for_work(p.settings.block_for_s, p.housekeeping.until_due_s())
            )
            if due_s is not None and due_s != float("inf"):
                p.housekeeping.expect_delayed(began + due_s)  # moved at once, started on time
        except Interrupted:
            p.fetcher.abandon_wait()  # the connection was cut mid-read; we are leaving anyway
            raise

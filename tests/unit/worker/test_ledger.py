"""The settle ledger: nothing leaves it before the call that carries it returned (pure, no Redis)."""

from __future__ import annotations

import pytest

from fairway.queue.protocol.calls import Reservation
from fairway.queue.runtime.ledger import Ledger


class Outage(Exception):
    pass


class Settled(list[Reservation]):
    """The ledger's listener, keeping what it was told."""

    def settled(self, reservation: Reservation) -> None:
        self.append(reservation)


def job(n: int) -> Reservation:
    return Reservation("default", f'{{"id":"j{n}"}}'.encode(), 1)


def test_acks_leave_only_when_their_call_returned() -> None:
    settled = Settled()
    ledger = Ledger(settled)
    ledger.ack(job(1), 0)
    ledger.ack(job(2), 0)
    sent = ledger.take_acks()
    ledger.ack(job(3), 0)  # finished while the call was on the wire: not in it
    assert len(ledger) == 3 and settled == []
    ledger.acked(sent)
    assert [r.payload for r, _ in ledger.acks] == [job(3).payload]
    assert settled == [job(1), job(2)]


def test_two_calls_on_the_wire_settle_in_either_order_and_a_failed_one_gives_its_acks_back_first() -> None:
    settled = Settled()
    ledger = Ledger(settled)
    ledger.ack(job(1), 0)
    first = ledger.take_acks()
    ledger.ack(job(2), 0)
    second = ledger.take_acks()
    assert first.acks != second.acks and ledger.acks == ()
    ledger.ack(job(3), 0)
    ledger.acked(second)  # the later call answered first
    assert settled == [job(2)]
    ledger.returned(first)  # the earlier one failed: its ack goes out next, before job 3's
    assert [r for r, _ in ledger.acks] == [job(1), job(3)] and len(ledger) == 2
    ledger.returned(first)  # given back once only
    assert len(ledger) == 2


def test_a_failed_call_keeps_every_ack() -> None:
    ledger = Ledger()
    ledger.ack(job(1), 0)

    def cut(_: object) -> None:
        raise Outage

    with pytest.raises(Outage):
        ledger.flush(cut)
    assert len(ledger) == 1 and ledger.acks[0][0] == job(1)


def test_settles_are_written_in_order_and_a_failing_one_stays_with_those_after_it() -> None:
    written: list[int] = []
    settled = Settled()
    ledger = Ledger(settled)
    down = {"now": True}

    def write(n: int) -> None:
        if n == 2 and down["now"]:
            raise Outage
        written.append(n)

    for n in (1, 2, 3):
        ledger.later(job(n), lambda n=n: write(n))
    with pytest.raises(Outage):
        ledger.write_settles()
    assert written == [1] and len(ledger) == 2 and settled == [job(1)]
    down["now"] = False
    ledger.write_settles()
    assert written == [1, 2, 3] and len(ledger) == 0 and settled == [job(1), job(2), job(3)]

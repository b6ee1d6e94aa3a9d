"""The pooled worker's overlapping reserve calls (overlap.py) and the hot line's choice of waiting awake
or asleep (hotline.ReplyWait): pure logic, the hot line replaced by a recorder and a clock the test
moves (no I/O)."""

from __future__ import annotations

from collections import deque
from typing import cast

import pytest
import redis

from fairway.queue.protocol.calls import Ack, Reservation
from fairway.queue.protocol.hotline import SPIN_WINDOW_S, ReplyWait
from fairway.queue.runtime.fetch import StandaloneFetcher
from fairway.queue.runtime.ledger import Ledger
from fairway.queue.runtime.overlap import MAX_ON_WIRE, SHORT_RETRY_S, Overlap
from fairway.queue.runtime.pool import JobPool


class Line:
    """The hot line's side the overlap uses: calls go on the wire, replies are taken in order."""

    def __init__(self) -> None:
        self.wire: deque[int] = deque()
        self.replies: dict[int, list[Reservation]] = {}
        self.broken = False

    @property
    def on_wire(self) -> int:
        return len(self.wire)

    def ready(self) -> bool:
        if self.broken:
            self.wire.clear()
            raise redis.ConnectionError("cut")
        return bool(self.wire) and self.wire[0] in self.replies

    def fileno(self) -> int:
        return -1


class Fetcher:
    """send_reserve / reserve_reply over `Line`; records what each call asked for and carried."""

    def __init__(self) -> None:
        self.hot = Line()
        self.sent: list[tuple[int, int, tuple[bytes, ...]]] = []  # (number, count, ack members)
        self._numbers = iter(range(1, 1000))

    def send_reserve(self, acks: tuple[Ack, ...], count: int) -> int:
        if self.hot.broken:
            raise redis.ConnectionError("cut")
        number = next(self._numbers)
        self.hot.wire.append(number)
        self.sent.append((number, count, tuple(r.member for r, _ in acks)))
        return number

    def reserve_reply(self) -> tuple[int, list[Reservation]]:
        number = self.hot.wire.popleft()
        return number, self.hot.replies.pop(number)

    def answer(self, number: int, jobs: int) -> None:
        self.hot.replies[number] = [job(number * 100 + n) for n in range(jobs)]


def job(n: int) -> Reservation:
    return Reservation("q", b"{}", 1, member=f"j{n}\tw:1.{n}".encode())


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def overlap() -> tuple[Overlap, Fetcher, Ledger, Clock]:
    fetcher, ledger, clock = Fetcher(), Ledger(), Clock()
    pool = cast(JobPool, object())
    return Overlap(cast(StandaloneFetcher, fetcher), ledger, pool, clock), fetcher, ledger, clock


def test_calls_overlap_up_to_the_limit_and_each_carries_only_the_acks_not_yet_sent() -> None:
    ov, fetcher, ledger, _ = overlap()
    ledger.ack(job(1), 0)
    assert ov.ask(3)
    ledger.ack(job(2), 0)
    assert ov.ask(2)
    assert [(count, acks) for _, count, acks in fetcher.sent] == [(3, (job(1).member,)), (2, (job(2).member,))]
    assert ov.on_wire == 2 and ov.asked == 5
    for _ in range(MAX_ON_WIRE - 2):
        assert ov.ask(1)
    assert not ov.ask(1), "never more than MAX_ON_WIRE calls on the wire"


def test_replies_start_their_jobs_in_order_and_confirm_their_acks() -> None:
    ov, fetcher, ledger, _ = overlap()
    ledger.ack(job(1), 0)
    ov.ask(2)
    ov.ask(1)
    fetcher.answer(1, 2)
    started: list[list[Reservation]] = []
    ov.take_replies(started.append, block=False)  # the second reply is not there yet
    assert [len(r) for r in started] == [2] and ov.asked == 1 and len(ledger) == 0
    fetcher.answer(2, 1)
    ov.take_replies(started.append, block=False)
    assert [len(r) for r in started] == [2, 1] and ov.on_wire == 0


def test_a_short_reply_holds_further_calls_until_a_job_finishes_or_the_retry_interval_passes() -> None:
    ov, fetcher, ledger, clock = overlap()
    ov.ask(4)
    fetcher.answer(1, 1)  # asked 4, got 1: the queues ran short
    ov.take_replies(lambda _: None, block=False)
    assert not ov.ask(3), "an emptied queue is not polled in a tight loop"
    assert ov.until_may_ask_s() == pytest.approx(SHORT_RETRY_S)
    ledger.ack(job(7), 0)  # a job finished: its ack must go anyway, and it may ask with it
    assert ov.ask(3)
    fetcher.answer(2, 0)
    ov.take_replies(lambda _: None, block=False)
    assert not ov.ask(3)
    clock.now += SHORT_RETRY_S + 1e-6
    assert ov.ask(3), "asked again after the retry interval"


def test_a_full_reply_clears_the_short_state_and_ack_only_calls_do_not_change_it() -> None:
    ov, fetcher, ledger, _ = overlap()
    ov.ask(2)
    fetcher.answer(1, 0)
    ov.take_replies(lambda _: None, block=False)
    ledger.ack(job(1), 0)
    assert ov.ask(0)  # acks only
    fetcher.answer(2, 0)
    ov.take_replies(lambda _: None, block=False)
    assert ov.until_may_ask_s() > 0, "an ack-only reply says nothing about the queues"
    ledger.ack(job(2), 0)
    ov.ask(2)
    fetcher.answer(3, 2)
    ov.take_replies(lambda _: None, block=False)
    assert ov.until_may_ask_s() == 0.0


def test_a_broken_line_forgets_its_calls_and_gives_their_acks_back_in_order() -> None:
    ov, fetcher, ledger, _ = overlap()
    ledger.ack(job(1), 0)
    ov.ask(1)
    ledger.ack(job(2), 0)
    ov.ask(1)
    ledger.ack(job(3), 0)  # not sent yet
    fetcher.hot.broken = True
    with pytest.raises(redis.ConnectionError):
        ov.take_replies(lambda _: None, block=False)
    assert ov.on_wire == 0 and ov.asked == 0
    assert [r.member for r, _ in ledger.acks] == [job(1).member, job(2).member, job(3).member]
    fetcher.hot.broken = False
    assert ov.ask(2)
    assert fetcher.sent[-1][2] == (job(1).member, job(2).member, job(3).member)


def test_a_failed_send_keeps_its_acks() -> None:
    ov, fetcher, ledger, _ = overlap()
    ledger.ack(job(1), 0)
    fetcher.hot.broken = True
    with pytest.raises(redis.ConnectionError):
        ov.ask(1)
    assert [r.member for r, _ in ledger.acks] == [job(1).member] and ov.on_wire == 0


def test_replies_that_usually_come_fast_are_waited_for_awake_and_slow_ones_asleep() -> None:
    wait = ReplyWait()
    assert wait.poll_until(10.0) == pytest.approx(10.0 + SPIN_WINDOW_S), "near until told otherwise"
    for _ in range(50):
        wait.replied(0.00008)  # Redis on the same host: ~80 us
    assert wait.poll_until(10.0) > 10.0
    for _ in range(3):
        wait.replied(0.002)  # a hop away: 2 ms
    assert wait.poll_until(10.0) < 10.0, "a distant Redis is never polled for (no CPU spent)"
    for _ in range(60):
        wait.replied(0.00008)
    assert wait.poll_until(10.0) > 10.0, "and polled for again once it answers fast"

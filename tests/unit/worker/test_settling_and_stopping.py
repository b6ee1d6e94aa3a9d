"""What an outcome is settled as (settling.py), and how a worker drains and shuts down (stopping.py):
pure logic, with the Redis side replaced by recorders and a clock the test moves (no I/O)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, cast

import pytest
import redis

from fairway.queue.protocol.calls import Ack, Kept, Reservation
from fairway.queue.protocol.job import JobError, decode, new_job
from fairway.queue.runtime.execution import Attempt, Outcome
from fairway.queue.runtime.handlers import Registry
from fairway.queue.runtime.housekeeping import Housekeeping
from fairway.queue.runtime.ledger import Ledger
from fairway.queue.runtime.runner import Runner
from fairway.queue.runtime.settling import Settler
from fairway.queue.runtime.stopping import SETTLE_ON_STOP_S, Stopping
from fairway.resource.worker_settings import WorkerSettings


class Outage(redis.ConnectionError):
    pass


class RedisSide:
    """Records the settling calls; `down` makes each raise a connection error."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.down = False

    def release(self, reservation: Reservation, delay_ms: int, wait_bucket: int = -1) -> bool:
        self._call("release", reservation.member, delay_ms)
        return True

    def ack(self, reservation: Reservation, wait_bucket: int = -1, kept: Kept | None = None) -> bool:
        self._call("ack", reservation.member, kept and json.loads(kept.entry), kept and kept.ttl_ms)
        return True

    def fail(
        self,
        reservation: Reservation,
        job_id: str,
        record: dict[str, Any],
        wait_bucket: int = -1,
        kept: Kept | None = None,
    ) -> None:
        self._call("fail", reservation.member, job_id, record["exception"], *([json.loads(kept.entry)] if kept else []))

    def hand_back(self, reservation: Reservation, delay_ms: int, grace_ms: int) -> bool:
        self._call("hand_back", reservation.member, delay_ms, grace_ms)
        return not self.grace_over

    grace_over = False

    def send_acks(self, acks: Sequence[Ack]) -> None:
        self._call("acks", *[r.member for r, _ in acks])

    def _call(self, *call: Any) -> None:
        if self.down:
            raise Outage("cut")
        self.calls.append(call)


def reservation(
    n: int, attempts: int = 1, *, max_tries: int | None = None, result_ttl: float | None = None
) -> Reservation:
    doc = new_job("h", "default", [], {}, job_id=f"j{n}", max_tries=max_tries, result_ttl=result_ttl).encode()
    return Reservation("default", doc, attempts, member=f"j{n}\tw:1.{n}".encode())


def settle(attempt: Attempt, attempts: int = 1, tries: int = 3) -> tuple[Outcome, Ledger, RedisSide]:
    side, ledger = RedisSide(), Ledger()
    r = reservation(1, attempts)
    outcome = Settler(ledger, side, WorkerSettings(queues=["default"], tries=tries), Registry()).settle(
        r, decode(r.payload), attempt, 0
    )
    return outcome, ledger, side


def test_a_success_is_an_ack_sent_with_the_next_call() -> None:
    outcome, ledger, side = settle(Attempt(Outcome.OK))
    assert outcome is Outcome.OK and [r.member for r, _ in ledger.acks] == [b"j1\tw:1.1"] and side.calls == []


def test_a_job_keeping_its_result_is_acked_by_a_call_of_its_own_that_writes_it() -> None:
    side, ledger = RedisSide(), Ledger()
    settler = Settler(ledger, side, WorkerSettings(queues=["default"], tries=1), Registry())
    kept = reservation(1, result_ttl=90)
    assert settler.settle(kept, decode(kept.payload), Attempt(Outcome.OK, value={"n": 1}), 0) is Outcome.OK
    assert ledger.acks == (), "not on the next reserve call: the result goes with its ack"
    failing = reservation(2, result_ttl=90)
    settler.settle(failing, decode(failing.payload), Attempt(Outcome.RETRY, "Boom: x"), 0)
    ledger.write_settles()
    [(ack, member, entry, ttl), fail] = side.calls
    assert (ack, member, entry["status"], entry["value"], ttl) == ("ack", b"j1\tw:1.1", "done", {"n": 1}, 90_000)
    assert fail[0] == "fail" and fail[4]["status"] == "failed" and fail[4]["exception"] == "Boom"


def test_a_failed_attempt_with_tries_left_is_released_after_its_backoff() -> None:
    outcome, ledger, side = settle(Attempt(Outcome.RETRY, "Boom: x"), attempts=1, tries=3)
    ledger.write_settles()
    delay_ms = 0  # the worker's default backoff: at once
    assert outcome is Outcome.RETRY and side.calls == [("release", b"j1\tw:1.1", delay_ms)]


def test_the_last_try_and_a_refusal_are_failure_records() -> None:
    outcome, ledger, side = settle(Attempt(Outcome.RETRY, "Boom: x"), attempts=3, tries=3)
    ledger.write_settles()
    assert outcome is Outcome.FAILED and side.calls == [("fail", b"j1\tw:1.1", "j1", "Boom")]
    outcome, ledger, side = settle(Attempt(Outcome.FAILED, "UnknownHandler: h"), attempts=1)
    ledger.write_settles()
    assert outcome is Outcome.FAILED and side.calls == [("fail", b"j1\tw:1.1", "j1", "UnknownHandler")]


def test_an_unknown_handler_is_handed_back_until_its_grace_is_over_then_failed() -> None:
    outcome, ledger, side = settle(Attempt(Outcome.HANDED_BACK, "UnknownHandler: h"), attempts=1)
    ledger.write_settles()
    grace_ms = int(WorkerSettings(queues=["default"]).unknown_handler_grace_s * 1000)
    assert outcome is Outcome.HANDED_BACK and side.calls == [("hand_back", b"j1\tw:1.1", 5000, grace_ms)]

    outcome, ledger, side = settle(Attempt(Outcome.HANDED_BACK, "UnknownHandler: h"), attempts=1)
    side.grace_over, side.down = True, True
    with pytest.raises(Outage):  # an outage: kept, and the whole step runs again
        ledger.write_settles()
    assert len(ledger) == 1
    side.down = False
    ledger.write_settles()
    assert [c[0] for c in side.calls] == ["hand_back", "fail"] and side.calls[1][3] == "UnknownHandler"
    assert len(ledger) == 0


def test_a_malformed_document_is_failed_under_its_id_or_its_digest() -> None:
    side, ledger = RedisSide(), Ledger()
    settler = Settler(ledger, side, WorkerSettings(queues=["default"]), Registry())
    bad = Reservation("default", b"not json", 1, member=b"#x\tw:1.1")
    assert settler.malformed(bad, JobError("not JSON")) == hashlib.sha1(b"not json").hexdigest()
    assert settler.malformed(bad, JobError("bad", job_id="given")) == "given"
    ledger.write_settles()
    assert [(c[0], c[2], c[3]) for c in side.calls] == [
        ("fail", hashlib.sha1(b"not json").hexdigest(), "MalformedJob"),
        ("fail", "given", "MalformedJob"),
    ]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


class Timer:
    """Housekeeping as the drain sees it: never due; records the shutdown steps."""

    def __init__(self, steps: list[str], fail: bool = False) -> None:
        self.steps, self.fail = steps, fail

    def due(self) -> bool:
        return False

    def run(self) -> None: ...

    def write_runtimes(self) -> None:
        self.steps.append("runtimes")
        if self.fail:
            raise Outage("cut")

    def leave(self) -> None:
        self.steps.append("leave")


class Pool:
    """The runner as the drain sees it: jobs running, one finishing per collect."""

    def __init__(self, running: list[Reservation]) -> None:
        self.running = running

    @property
    def pooled(self) -> int:
        return len(self.running)


class Completions:
    """The worker's completions as the drain sees them: one job finishes per collect."""

    def __init__(self, ledger: Ledger, pool: Pool) -> None:
        self.ledger, self.pool = ledger, pool

    def collect(self, _: float) -> None:
        if self.pool.running:
            self.ledger.ack(self.pool.running.pop(0), 0)

    def wait_s(self) -> float:
        return 0.1


def make(
    ledger: Ledger, side: RedisSide, clock: Clock, pool: Pool, steps: list[str], *, fail: bool = False
) -> Stopping:
    timer = cast(Housekeeping, Timer(steps, fail=fail))
    return Stopping(cast(Runner, pool), ledger, timer, clock, Completions(ledger, pool), side, clock.sleep)


def test_the_drain_acknowledges_each_job_as_it_finishes() -> None:
    side, ledger = RedisSide(), Ledger()
    assert make(ledger, side, Clock(), Pool([reservation(1), reservation(2)]), []).drain()
    assert side.calls == [("acks", b"j1\tw:1.1"), ("acks", b"j2\tw:1.2")], (
        "one call per finished job, not one at the end"
    )
    assert len(ledger) == 0


def test_with_redis_down_and_nothing_running_the_drain_gives_up_after_its_grace() -> None:
    side, ledger, clock = RedisSide(), Ledger(), Clock()
    ledger.ack(reservation(1), 0)
    side.down = True
    assert not make(ledger, side, clock, Pool([]), []).drain()
    assert SETTLE_ON_STOP_S <= clock.now <= SETTLE_ON_STOP_S + 2, "backoff up to 1 s between tries"
    assert len(ledger) == 1, "kept: its lease runs out and it runs again"


def test_shutdown_never_raises_and_runs_every_step() -> None:
    side, ledger, steps = RedisSide(), Ledger(), list[str]()
    ledger.ack(reservation(1), 0)
    side.down = True

    def closer(name: str, fail: bool = False) -> Any:
        def close() -> None:
            steps.append(name)
            if fail:
                raise RuntimeError(name)

        return close

    make(ledger, side, Clock(), Pool([]), steps, fail=True).shutdown(
        [closer("leases", fail=True), closer("pool"), closer("log")]
    )
    assert steps == ["runtimes", "leave", "leases", "pool", "log"]

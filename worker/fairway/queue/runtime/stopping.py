"""How a worker stops: the drain (take nothing more, let the running jobs finish and settle each as it
finishes) and the shutdown (the last settles and figures, out of the workers hash).

Both outlive outages: the drain keeps settling with backoff while jobs run, and gives finished
outcomes SETTLE_ON_STOP_S more once nothing runs; the shutdown logs what it could not write and
never raises, so a stopping worker always exits and a job it could not settle runs again once its
lease runs out (seconds, since no one renews it any more).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fairway.queue.connection import OUTAGE_ERRORS, is_outage
from fairway.queue.protocol.calls import Ack
from fairway.queue.runtime.housekeeping import Housekeeping
from fairway.queue.runtime.ledger import Ledger
from fairway.queue.runtime.lifecycle import Backoff
from fairway.queue.runtime.runner import Runner

log = logging.getLogger("fairway.worker")
SETTLE_ON_STOP_S = 10.0  # stopping with Redis down: how long finished jobs' outcomes keep being retried


class Collecting(Protocol):
    """The worker's completions: settle what the pool finished, waiting at most `timeout_s`."""

    def collect(self, timeout_s: float) -> None: ...

    def wait_s(self) -> float: ...


class AckSender(Protocol):
    """The call that carries acknowledgements alone (the fetcher's)."""

    def send_acks(self, acks: Sequence[Ack]) -> Any: ...


@dataclass
class Stopping:
    runner: Runner
    ledger: Ledger
    housekeeping: Housekeeping
    clock: Callable[[], float]
    completions: Collecting
    redis_side: AckSender
    sleep: Callable[[float], None] = time.sleep

    def drain(self) -> bool:
        """Until nothing runs and the ledger is empty (True), or, with Redis down and nothing running,
        until SETTLE_ON_STOP_S have passed (False: what is left runs again once its lease runs out)."""
        backoff = Backoff(self.clock)
        give_up_at: float | None = None
        while self.runner.pooled or len(self.ledger):
            try:
                if self.runner.pooled:
                    self.completions.collect(self.completions.wait_s())
                self.ledger.flush(self.redis_side.send_acks)
                if self.housekeeping.due():
                    self.housekeeping.run()
                backoff.succeeded()
            except OUTAGE_ERRORS as exc:
                if not is_outage(exc):
                    raise
                if not self.runner.pooled:
                    give_up_at = give_up_at or self.clock() + SETTLE_ON_STOP_S
                    if self.clock() >= give_up_at:
                        return False
                self.sleep(backoff.failed(exc, "while draining"))
        return True

    def shutdown(self, closers: Sequence[Callable[[], Any]]) -> None:
        """The last settles, the run-time figures, out of the workers hash, then `closers` in order;
        every step logs or is suppressed, none raises."""
        try:
            self.ledger.flush(self.redis_side.send_acks)
        except Exception as exc:
            log.error(
                "could not settle %d finished job(s) on shutdown (%s); they run again once their reservations expire",
                len(self.ledger),
                exc,
            )
        for step in (self.housekeeping.write_runtimes, self.housekeeping.leave, *closers):
            with contextlib.suppress(Exception):
                step()

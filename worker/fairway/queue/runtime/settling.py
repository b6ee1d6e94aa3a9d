"""How a job's outcome becomes what Redis is told: an acknowledgement, a release after its backoff,
or a failure record, each put in the ledger (which owns it until Redis confirms it).

Both run paths (a job run in the main thread, a job run in the pool) and the jobs that must not run
at all (tries used up, lost too often, unknown handler, a malformed document) end here, so there is
one rule for what a finished attempt turns into.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from typing import Any, Protocol

from fairway.queue.protocol.calls import NO_WAIT_BUCKET, Kept, Reservation
from fairway.queue.protocol.job import Job, JobError, now_ms
from fairway.queue.protocol.results import cancelled_entry, done_entry, failed_entry, ttl_ms
from fairway.queue.runtime.execution import Attempt, Outcome, failure_record
from fairway.queue.runtime.handlers import Registry
from fairway.queue.runtime.ledger import Ledger
from fairway.resource.worker_settings import WorkerSettings

log = logging.getLogger("fairway.worker")

# How long a handed-back job waits before another worker may take it: a rollout replaces pods in
# seconds to minutes, and a job cycling faster only keeps the old pods busy refusing it.
HAND_BACK_DELAY_MS = 5_000


class Settles(Protocol):
    """The Redis calls a settle is made of (the fetcher's)."""

    def ack(
        self, reservation: Reservation, wait_bucket: int = ..., kept: Kept | None = ..., cancelled: bool = ...
    ) -> bool: ...

    def release(self, reservation: Reservation, delay_ms: int, wait_bucket: int = ...) -> bool: ...

    def hand_back(self, reservation: Reservation, delay_ms: int, grace_ms: int) -> bool: ...

    def fail(
        self,
        reservation: Reservation,
        job_id: str,
        record: dict[str, Any],
        wait_bucket: int = ...,
        kept: Kept | None = ...,
    ) -> None: ...


class Settler:
    def __init__(self, ledger: Ledger, redis_side: Settles, settings: WorkerSettings, registry: Registry) -> None:
        self.ledger = ledger
        self.redis_side = redis_side
        self.settings = settings
        self.registry = registry  # each handler's declared tries and backoff

    def settle(self, reservation: Reservation, job: Job, attempt: Attempt, bucket: int) -> Outcome:
        """A finished (or refused) attempt into the ledger; the outcome it was settled as. A job that
        keeps its result is acknowledged by a call of its own that writes the result in the same step;
        the others' acks ride on the next reserve call."""
        if attempt.outcome is Outcome.HANDED_BACK:
            self.ledger.later(reservation, functools.partial(self._hand_back, reservation, job, attempt, bucket))
            return Outcome.HANDED_BACK
        limits = self.registry.limits_for(job, self.settings)
        if attempt.outcome is Outcome.CANCELLED:  # done with, not retried; a kept result says cancelled
            kept = None if limits.result_ttl_s is None else Kept(cancelled_entry(now_ms()), ttl_ms(limits.result_ttl_s))
            ack = functools.partial(self.redis_side.ack, reservation, bucket, kept, cancelled=True)
            self.ledger.later(reservation, ack)
            return Outcome.CANCELLED
        if attempt.outcome is Outcome.OK:
            if limits.result_ttl_s is None:
                self.ledger.ack(reservation, bucket)
            else:
                kept = Kept(done_entry(attempt.value, now_ms()), ttl_ms(limits.result_ttl_s))
                self.ledger.later(reservation, functools.partial(self.redis_side.ack, reservation, bucket, kept))
            return Outcome.OK
        if attempt.outcome is Outcome.RETRY and reservation.attempts < limits.tries:
            delay_ms = int(limits.backoff_for(reservation.attempts) * 1000)
            self.ledger.later(reservation, functools.partial(self.redis_side.release, reservation, delay_ms, bucket))
            return Outcome.RETRY
        record = failure_record(reservation, job.id, attempt)
        last = None if limits.result_ttl_s is None else Kept(failed_entry(record), ttl_ms(limits.result_ttl_s))
        self.ledger.later(
            reservation, functools.partial(self.redis_side.fail, reservation, job.id, record, bucket, last)
        )
        return Outcome.FAILED

    def _hand_back(self, reservation: Reservation, job: Job, attempt: Attempt, bucket: int) -> None:
        """Back for another worker; once the job's grace is over, failed here (run again after an
        outage, this is safe: the hand-back changes nothing then, and the failure is written)."""
        grace_ms = int(self.settings.unknown_handler_grace_s * 1000)
        if self.redis_side.hand_back(reservation, HAND_BACK_DELAY_MS, grace_ms):
            return
        log.warning(
            "job %s: no worker ran handler %r within the unknown-handler grace of %g s; failed",
            job.id,
            job.handler,
            self.settings.unknown_handler_grace_s,
        )
        record = failure_record(reservation, job.id, Attempt(Outcome.FAILED, attempt.error))
        self.redis_side.fail(reservation, job.id, record, bucket)

    def malformed(self, reservation: Reservation, error: JobError) -> str:
        """A document no handler may see: failed once, under its own id when it has a readable one
        (else the sha1 of its bytes); returns that id."""
        job_id = error.job_id or hashlib.sha1(reservation.payload).hexdigest()
        record = failure_record(reservation, job_id, Attempt(Outcome.FAILED, f"MalformedJob: {error}"))
        self.ledger.later(
            reservation, functools.partial(self.redis_side.fail, reservation, job_id, record, NO_WAIT_BUCKET)
        )
        return job_id

"""How a job's outcome becomes what Redis is told: an acknowledgement, a release after its backoff,
or a failure record, each put in the ledger (which owns it until Redis confirms it).

Both run paths (a job run in the main thread, a job run in the pool) and the jobs that must not run
at all (tries used up, lost too often, unknown handler, a malformed document) end here, so there is
one rule for what a finished attempt turns into.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Protocol

from fairway.queue.protocol.calls import NO_WAIT_BUCKET, Reservation
from fairway.queue.protocol.job import Job, JobError
from fairway.queue.runtime.execution import Attempt, Outcome, failure_record
from fairway.queue.runtime.ledger import Ledger
from fairway.resource.worker_settings import WorkerSettings


class Settles(Protocol):
    """The Redis calls a settle is made of (the fetcher's)."""

    def release(self, reservation: Reservation, delay_ms: int, wait_bucket: int = ...) -> bool: ...

    def fail(self, reservation: Reservation, job_id: str, record: dict[str, Any], wait_bucket: int = ...) -> None: ...


class Settler:
    def __init__(self, ledger: Ledger, redis_side: Settles, settings: WorkerSettings) -> None:
        self.ledger = ledger
        self.redis_side = redis_side
        self.settings = settings

    def settle(self, reservation: Reservation, job: Job, attempt: Attempt, bucket: int) -> Outcome:
        """A finished (or refused) attempt into the ledger; the outcome it was settled as."""
        if attempt.outcome is Outcome.OK:
            self.ledger.ack(reservation, bucket)
            return Outcome.OK
        max_tries = job.max_tries or self.settings.tries
        if attempt.outcome is Outcome.RETRY and reservation.attempts < max_tries:
            delay_ms = int(self.settings.backoff_for(reservation.attempts) * 1000)
            self.ledger.later(reservation, functools.partial(self.redis_side.release, reservation, delay_ms, bucket))
            return Outcome.RETRY
        record = failure_record(reservation, job.id, attempt)
        self.ledger.later(reservation, functools.partial(self.redis_side.fail, reservation, job.id, record, bucket))
        return Outcome.FAILED

    def malformed(self, reservation: Reservation, error: JobError) -> str:
        """A document no handler may see: failed once, under its own id when it has a readable one
        (else the sha1 of its bytes); returns that id."""
        job_id = error.job_id or hashlib.sha1(reservation.payload).hexdigest()
        record = failure_record(reservation, job_id, Attempt(Outcome.FAILED, f"MalformedJob: {error}"))
        self.ledger.later(
            reservation, functools.partial(self.redis_side.fail, reservation, job_id, record, NO_WAIT_BUCKET)
        )
        return job_id

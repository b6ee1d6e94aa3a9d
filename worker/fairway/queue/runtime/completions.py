"""Finished jobs: each settled into the ledger at once (exactly once), then counted and logged by
`account`, which the loop runs while its next reserve call is on the wire (none of that talks to
Redis, so it need not delay the next job)."""

from __future__ import annotations

from collections.abc import Callable

from fairway.queue.access.figures import wait_bucket
from fairway.queue.protocol.calls import NO_WAIT_BUCKET, Reservation
from fairway.queue.protocol.job import JobError
from fairway.queue.runtime.execution import Outcome
from fairway.queue.runtime.housekeeping import Housekeeping
from fairway.queue.runtime.joblog import Finished, JobLog
from fairway.queue.runtime.lifecycle import MemoryGuard
from fairway.queue.runtime.metrics import UNREGISTERED, WorkerMetrics
from fairway.queue.runtime.runner import Done, Runner
from fairway.queue.runtime.settling import Settler
from fairway.queue.runtime.slots import Slots


class Completions:
    def __init__(
        self,
        settler: Settler,
        runner: Runner,
        slots: Slots,
        housekeeping: Housekeeping,
        metrics: WorkerMetrics,
        joblog: JobLog,
        memory: MemoryGuard,
        clock: Callable[[], float],
    ) -> None:
        self.settler = settler
        self.runner = runner
        self.slots = slots
        self.housekeeping = housekeeping
        self.metrics = metrics
        self.joblog = joblog
        self.memory = memory
        self.clock = clock
        self._unaccounted: list[tuple[Done, Outcome, int, int]] = []  # finished, not yet counted and logged

    def collect(self, timeout_s: float) -> None:
        """Settle what the pool finished (and overdue sync jobs, as timed out)."""
        stuck = self.runner.stuck
        for done in self.runner.collect(timeout_s):
            self.finish(done)
        for _ in range(self.runner.stuck - stuck):
            self.metrics.recycled("stuck_job")

    def wait_s(self) -> float:
        """How long to wait for completions: until the next timeout or housekeeping, at most a second."""
        soonest = self.runner.next_deadline()
        until = 1.0 if soonest is None else soonest - self.clock()
        return max(0.0, min(until, self.housekeeping.until_due_s(), 1.0))

    def finish(self, done: Done) -> None:
        """One finished (or refused) job: settled at once; counted and logged by `account`."""
        started = done.started
        job = started.job
        waited_ms = started.started_ms - started.reservation.ready_since_ms(job)
        bucket = wait_bucket(waited_ms) if job.enqueued_at else NO_WAIT_BUCKET
        outcome = self.settler.settle(started.reservation, job, done.attempt, bucket)
        self.slots.jobs_done += 1
        self._unaccounted.append((done, outcome, bucket, waited_ms))
        self.memory.check()

    def malformed(self, reservation: Reservation, error: JobError) -> None:
        """A document no handler may see: failed once, under its own id when it has a readable one;
        the queue moves on."""
        job_id = self.settler.malformed(reservation, error)
        self.slots.jobs_done += 1
        self.metrics.job_finished(reservation.queue, UNREGISTERED, "malformed", 0.0, None)
        self.joblog.malformed(reservation.queue, reservation.tenant, job_id, reservation.attempts, str(error))

    def account(self) -> None:
        """The finished jobs' metrics, run-time tally and log lines."""
        pending, self._unaccounted = self._unaccounted, []
        for done, outcome, bucket, waited_ms in pending:
            started, attempt = done.started, done.attempt
            reservation, job = started.reservation, started.job
            wait_s = waited_ms / 1000 if job.enqueued_at else None
            self.metrics.job_finished(reservation.queue, job.handler, outcome.value, done.run_ms / 1000, wait_s)
            self.housekeeping.tally(reservation.queue, done.run_ms, bucket)
            if self.joblog.fmt != "none":
                self.joblog.finished(
                    Finished(
                        job,
                        reservation,
                        outcome,
                        started.started_ms,
                        done.finished_ms,
                        done.run_ms,
                        attempt.error,
                        started.seq,
                    )
                )

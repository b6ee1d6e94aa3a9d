"""Starting a reserved job: decoded and checked against where it was reserved from, refused when it
must not run (tries used up, lost too often, an unknown handler, its lease already gone), else run
here or handed to the pool. Starting does no I/O, so nothing can strand the rest of a batch."""

from __future__ import annotations

import logging
import time

from fairway.queue.access.progress import ProgressBoard
from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import JobContext
from fairway.queue.protocol.job import JobError, check_placement, decode, now_ms
from fairway.queue.runtime.completions import Completions
from fairway.queue.runtime.execution import Attempt, Outcome, refusal_of
from fairway.queue.runtime.handlers import Registry, UnknownHandler
from fairway.queue.runtime.leases import Leases
from fairway.queue.runtime.runner import Done, Runner, Started
from fairway.resource.worker_settings import WorkerSettings

log = logging.getLogger("fairway.worker")


class Starter:
    def __init__(
        self,
        settings: WorkerSettings,
        registry: Registry,
        runner: Runner,
        leases: Leases,
        progress: ProgressBoard,
        completions: Completions,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.runner = runner
        self.leases = leases
        self.progress = progress
        self.completions = completions
        self._seq = 0  # the order this process reserved its jobs in

    def start(self, reservation: Reservation) -> None:
        self._seq += 1
        try:
            job = check_placement(decode(reservation.payload), reservation.queue, reservation.tenant)
        except JobError as exc:
            self.completions.malformed(reservation, exc)
            return
        limits = self.registry.limits_for(job, self.settings)
        started = Started(self._seq, reservation, job, limits.timeout_s, now_ms(), time.perf_counter())
        if self.leases.lost(reservation):
            log.warning(
                "job %s: its lease ran out before it could start here (Redis unreachable for longer than "
                "retryAfter?) and it may be running elsewhere; not running it twice",
                job.id,
            )
            self.leases.settled(reservation)
            return
        refusal = refusal_of(reservation, limits.tries, self.settings.lost_limit)
        if refusal is None:
            try:
                func = self.registry.get(job.handler)
            except UnknownHandler as exc:
                refusal = f"UnknownHandler: {exc}"
                if self.settings.unknown_handler_grace_s > 0:  # a rollout: a newer worker may know it
                    self.completions.finish(Done(started, Attempt(Outcome.HANDED_BACK, refusal), now_ms(), 0.0))
                    return
        if refusal is not None:
            self.completions.finish(Done(started, Attempt(Outcome.FAILED, refusal), now_ms(), 0.0))
            return
        context = JobContext(
            job.id,
            job.queue,
            job.handler,
            job.tenant,
            reservation.attempts,
            limits.tries,
            job.enqueued_at,
            reservation.queue,
            self.progress.report,
        )
        self.leases.started(reservation, context)
        done = self.runner.run(func, started, context)
        if done is not None:
            self.completions.finish(done)

"""The two ways a worker runs a job: in its own thread (one slot: under SIGALRM, the cheapest path and
the only one that can interrupt a plain `def`), or handed to the `JobPool` (N slots), whose jobs
only report back. Either way what comes out is a `Done`, which the worker settles exactly once.

A pooled sync job past its timeout cannot be killed: it is given back as a timed-out `Done`, its
slot is written off (`stuck`), and the worker, once its other jobs are settled, exits so that its
supervisor restarts it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import JobContext
from fairway.queue.protocol.job import Job, now_ms
from fairway.queue.runtime.execution import Attempt, run_handler
from fairway.queue.runtime.lifecycle import Watchdog
from fairway.queue.runtime.pool import Completion, JobPool, Running
from fairway.queue.runtime.tracing import INSTALLED as TRACING
from fairway.queue.runtime.tracing import traced

log = logging.getLogger("fairway.worker")


@dataclass(frozen=True)
class Started:
    """A job about to run: what settling it needs afterwards."""

    seq: int  # the order this process reserved it in
    reservation: Reservation
    job: Job
    timeout_s: float
    started_ms: int
    started: float  # perf_counter, for the run time

    @classmethod
    def of(cls, running: Running) -> Started:
        return cls(
            running.seq, running.reservation, running.job, running.timeout_s, running.started_ms, running.started
        )


@dataclass(frozen=True)
class Done:
    started: Started
    attempt: Attempt
    finished_ms: int
    run_ms: float


class Runner:
    def __init__(self, concurrency: int, clock: Callable[[], float], kill_grace_s: float) -> None:
        self.clock = clock
        self.kill_grace_s = kill_grace_s
        self.pool = JobPool(concurrency) if concurrency > 1 else None
        self.watchdog = Watchdog(clock, self._describe_inline)
        self.stuck = 0  # slots written off to sync jobs that ran past their timeout
        self._inline: Job | None = None
        self._running: dict[int, Running] = {}

    @property
    def running(self) -> int:
        """Jobs running now, in the pool or in this thread."""
        return len(self._running) + (self._inline is not None)

    @property
    def running_inline(self) -> bool:
        """A job runs in this thread now (the loop waits for it)."""
        return self._inline is not None

    @property
    def pooled(self) -> int:
        return len(self._running)

    def next_deadline(self) -> float | None:
        return min((running.deadline for running in self._running.values()), default=None)

    def run(self, func: Callable[..., Any], started: Started, context: JobContext) -> Done | None:
        """In this thread: run it now and return what came of it. With a pool: hand it over (None);
        `collect` returns it when it is done."""
        job = started.job
        if TRACING:
            func = traced(func, job, context)
        if self.pool is not None:
            running = Running(
                started.seq,
                started.reservation,
                job,
                started.timeout_s,
                started.started_ms,
                started.started,
                self.clock() + started.timeout_s,
                JobPool.is_async(func),
                context,
            )
            self._running[started.seq] = running
            self.pool.submit(running, func)
            return None
        self._inline = job
        try:
            attempt = run_handler(func, job, context, started.timeout_s, self.watchdog, self.kill_grace_s)
        finally:
            self._inline = None
        return Done(started, attempt, now_ms(), (time.perf_counter() - started.started) * 1000)

    def collect(self, timeout_s: float) -> list[Done]:
        """The pool's finished jobs (waiting up to `timeout_s` for the first), then any overdue sync
        job as timed out, its slot written off."""
        if self.pool is None:
            return []
        out = [done for done in map(self._completed, self.pool.completions(timeout_s)) if done is not None]
        now = self.clock()
        overdue = [
            running
            for running in self._running.values()
            if now > running.deadline + (self.kill_grace_s if running.is_async else 0)
        ]
        for running in overdue:
            # A thread cannot be stopped, and an async job that blocks its loop cannot be cancelled:
            # settle it as timed out now, write its slot off, and let the process be replaced.
            del self._running[running.seq]
            self.stuck += 1
            log.error(
                "job %s (%s) ran past its %g s timeout and cannot be stopped; its slot is written off and "
                "this process will exit once its other jobs are settled",
                running.job.id,
                running.job.handler,
                running.timeout_s,
            )
            run_ms = (time.perf_counter() - running.started) * 1000
            out.append(Done(Started.of(running), Attempt.timed_out(running.timeout_s), now_ms(), run_ms))
        return out

    def _completed(self, completion: Completion) -> Done | None:
        running = self._running.pop(completion.seq, None)
        if running is None:
            return None  # settled already as timed out: never twice
        return Done(Started.of(running), completion.attempt, completion.finished_ms, completion.run_ms)

    def _describe_inline(self) -> str:
        job = self._inline
        return f"{job.id} ({job.handler})" if job else "?"

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.watchdog.stop()

"""The worker loop: reserve, run, settle; idle without spinning; stop cleanly; never lose a job.

At-least-once delivery: a job is reserved in Redis before it runs (never only in this process's
memory), and its acknowledgement rides on the next reserve call, so the steady state costs one
round trip per job. If this process dies, the reservation expires after `retry_after` and the next
worker's housekeeping puts the job back. Signals: SIGTERM/SIGINT stop taking jobs, let the running
one finish and exit 0; an idle worker is interrupted out of its wait at once. The Redis side (which
strategy, which scripts) is the fetcher's (fairway.queue.fetch); running a handler is
fairway.queue.execution's; the job log is fairway.queue.joblog's.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import sys
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TextIO

import redis

from fairway.queue.calls import NO_WAIT_BUCKET, Reservation
from fairway.queue.connection import CONNECTION_ERRORS
from fairway.queue.execution import Attempt, Outcome, run_handler
from fairway.queue.fetch import Fetcher, StandaloneFetcher
from fairway.queue.figures import wait_bucket
from fairway.queue.handlers import Registry, UnknownHandler
from fairway.queue.job import Job, JobError, decode
from fairway.queue.joblog import Finished, JobLog
from fairway.queue.lifecycle import Interrupted, RssProbe, StopSignals, Watchdog
from fairway.queue.settings import WorkerSettings

log = logging.getLogger("fairway.worker")
OUTAGE_BACKOFF_MAX_S = 1.0  # short: a worker is back within about a second of Redis
RESERVATION_MARGIN_S = 1  # a reservation outlives its job's timeout and kill grace by at least this


class Tick(StrEnum):
    WORKED = "worked"
    IDLE = "idle"
    DRAINED = "drained"  # burst mode: nothing ready, nothing delayed


def _now_ms() -> int:
    return int(time.time() * 1000)


class Worker:
    def __init__(
        self,
        settings: WorkerSettings,
        fetcher: Fetcher,
        registry: Registry,
        *,
        out: TextIO = sys.stdout,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.fetcher = fetcher
        self.registry = registry
        self.clock = clock
        self.joblog = JobLog(out, settings.log_format)
        self.signals = StopSignals()
        self._running: Job | None = None
        self.watchdog = Watchdog(clock, self._describe_running)
        self.rss = RssProbe()
        self._pending_ack: Reservation | None = None
        self._pending_bucket = NO_WAIT_BUCKET
        self._runtimes: dict[str, tuple[float, int]] = {}
        self._jobs_done = 0
        self._started = clock()
        self._next_maintenance = 0.0
        self._out_of_memory_since: float | None = None

    @property
    def exit_reason(self) -> str:
        return self.signals.reason

    # -- lifecycle -------------------------------------------------------------------------------

    def stop(self) -> None:
        self.signals.stopping = True

    def run(self) -> int:
        """Serve until stopped, recycled or (with --burst) drained; the exit code is always 0 then."""
        if self.signals.install():
            self.watchdog.start()
        try:
            self._serve()
        finally:
            self._shutdown()
            self.signals.restore()
        return 0

    def _serve(self) -> None:
        outage_started: float | None = None
        backoff = 0.1
        while not self.signals.stopping and not self._should_recycle():
            try:
                if self._tick() is Tick.DRAINED:
                    self.signals.reason = "burst: queues empty"
                    break
                if outage_started is not None:
                    log.warning("Redis is reachable again after %.1f s", self.clock() - outage_started)
                    outage_started, backoff = None, 0.1
            except Interrupted:
                break
            except CONNECTION_ERRORS as exc:
                if outage_started is None:
                    outage_started = self.clock()
                    log.error("Redis is unreachable (%s); retrying with backoff, nothing is lost", exc)
                if isinstance(self.fetcher, StandaloneFetcher):
                    self.fetcher.forget_registration()  # Redis may have restarted empty
                with contextlib.suppress(Interrupted):  # a stop during the backoff: the loop ends
                    self._idle(functools.partial(time.sleep, backoff))
                backoff = min(backoff * 2, OUTAGE_BACKOFF_MAX_S)

    def _shutdown(self) -> None:
        """Flush the last acknowledgement; shutdown paths log and never raise."""
        if self._pending_ack is not None:
            try:
                self.fetcher.ack(self._pending_ack, self._pending_bucket)
                self._pending_ack = None
            except Exception as exc:  # the job stays reserved and is handed out again after retry_after
                log.error("could not acknowledge the last job on shutdown: %s", exc)
        self.watchdog.stop()
        self.rss.close()
        with contextlib.suppress(Exception):
            self.joblog.flush()
        log.info("worker stopped after %d jobs (%s)", self._jobs_done, self.exit_reason or "stopped")

    def _should_recycle(self) -> bool:
        s = self.settings
        if s.max_jobs and self._jobs_done >= s.max_jobs:
            self.signals.reason = f"max jobs ({s.max_jobs})"
        elif s.max_time_s and self.clock() - self._started >= s.max_time_s:
            self.signals.reason = f"max time ({s.max_time_s:g} s)"
        else:
            return False
        return True

    def _idle(self, wait: Callable[[], Any]) -> None:
        """Wait with stop signals allowed to cut the wait short (Interrupted propagates)."""
        self.signals.idle = True
        try:
            if not self.signals.stopping:
                wait()
        finally:
            self.signals.idle = False

    # -- one poll --------------------------------------------------------------------------------

    def _tick(self) -> Tick:
        if self.clock() >= self._next_maintenance:
            self._maintain()
        reservation = self._reserve()
        if reservation is None:
            self._maintain()  # going idle: move due jobs and heal the active index before blocking
            reservation = self._reserve()
        if reservation is None:
            if self.settings.burst and self.fetcher.pending_delayed() == 0:
                return Tick.DRAINED
            self._wait_for_work()
            return Tick.IDLE
        self._process(reservation)
        return Tick.WORKED

    def _maintain(self) -> None:
        self._unless_out_of_memory(self.fetcher.refresh)
        self.fetcher.maintain()
        if self._runtimes:
            runtimes, self._runtimes = self._runtimes, {}
            self._unless_out_of_memory(lambda: self.fetcher.record_runtimes(runtimes, _now_ms()))
        self._next_maintenance = self.clock() + self.settings.maintenance_interval_s
        self._check_memory()
        self.joblog.flush()

    def _unless_out_of_memory(self, write: Callable[[], Any]) -> None:
        """A housekeeping write that adds data is skipped while Redis is full (maxmemory, noeviction):
        draining, which frees memory, goes on; the condition is logged once, and its end once."""
        try:
            write()
        except redis.exceptions.OutOfMemoryError:
            if self._out_of_memory_since is None:
                self._out_of_memory_since = self.clock()
                log.error("Redis is out of memory (maxmemory reached); draining goes on, writes that add data wait")
            return
        if self._out_of_memory_since is not None:
            log.warning("Redis accepts writes again after %.1f s", self.clock() - self._out_of_memory_since)
            self._out_of_memory_since = None

    def _check_memory(self) -> None:
        """Recycle above the memory limit: checked after every job and on the housekeeping timer, so a
        leaking handler is caught at the job that crossed the line, not a second later."""
        limit = self.settings.memory_mib
        if limit and self.rss.mib() > limit:
            self.signals.reason = f"memory above {limit} MiB"
            self.signals.stopping = True

    def _reserve(self) -> Reservation | None:
        reservation = self.fetcher.reserve(self._pending_ack, self._pending_bucket)
        self._pending_ack = None
        return reservation

    def _wait_for_work(self) -> None:
        until_maintenance = self._next_maintenance - self.clock()
        try:
            self._idle(lambda: self.fetcher.wait_for_work(self.settings.block_for_s, until_maintenance))
        except Interrupted:
            self.fetcher.abandon_wait()  # the connection was cut mid-read; we are leaving anyway
            raise

    # -- running a job ---------------------------------------------------------------------------

    def _describe_running(self) -> str:
        job = self._running
        return f"{job.id} ({job.handler})" if job else "?"

    def _process(self, reservation: Reservation) -> None:
        started_ms = _now_ms()
        started = time.perf_counter()
        try:
            job = decode(reservation.payload)
        except JobError as exc:
            self._fail_malformed(reservation, exc)
            return
        max_tries = job.max_tries or self.settings.tries
        timeout = job.timeout or self.settings.timeout_s
        if reservation.lost >= self.settings.lost_limit:
            attempt = Attempt(
                Outcome.FAILED,
                f"WorkerLost: the job was running when its worker vanished {reservation.lost} times (killed, "
                "OOM-killed, its node lost, or Redis unreachable past the reservation); it is not run again, "
                "since it may be what kills its workers. Fix the cause, then `fairway failed retry` it.",
            )
        elif reservation.attempts > max_tries:
            attempt = Attempt(Outcome.FAILED, f"MaxAttemptsExceeded: attempt {reservation.attempts} of {max_tries}")
        elif not self._reserved_for(reservation, timeout):
            log.warning("job %s was handed out again before it could start here; not running it twice", job.id)
            return
        else:
            try:
                func = self.registry.get(job.handler)
            except UnknownHandler as exc:
                attempt = Attempt(Outcome.FAILED, f"UnknownHandler: {exc}")
            else:
                self._running = job
                try:
                    attempt = run_handler(func, job, timeout, self.watchdog, self.settings.kill_grace_s)
                finally:
                    self._running = None
        finished_ms = _now_ms()
        run_ms = (time.perf_counter() - started) * 1000
        bucket = wait_bucket(started_ms - job.ready_since_ms) if job.enqueued_at else NO_WAIT_BUCKET
        outcome = self._settle(reservation, job, attempt, max_tries, bucket)
        self._jobs_done += 1
        total, count = self._runtimes.get(reservation.queue, (0.0, 0))
        self._runtimes[reservation.queue] = (total + run_ms, count + 1)
        self.joblog.finished(Finished(job, reservation, outcome, started_ms, finished_ms, run_ms, attempt.error))
        self._check_memory()

    def _reserved_for(self, reservation: Reservation, timeout_s: float) -> bool:
        """Make sure the reservation outlives the job: its timeout, the watchdog's grace, a margin. The
        usual case costs nothing (retryAfter already covers it); a job with a longer timeout of its own
        gets its reservation extended first. False if the reservation was already gone."""
        needed_ms = int((timeout_s + self.settings.kill_grace_s + RESERVATION_MARGIN_S) * 1000)
        if needed_ms <= self.settings.retry_after_ms:
            return True
        return self.fetcher.extend(reservation, needed_ms)

    def _settle(self, reservation: Reservation, job: Job, attempt: Attempt, max_tries: int, bucket: int) -> Outcome:
        if attempt.outcome is Outcome.OK:
            self._pending_ack, self._pending_bucket = reservation, bucket
            return Outcome.OK
        if attempt.outcome is Outcome.RETRY and reservation.attempts < max_tries:
            delay_s = self.settings.backoff_for(reservation.attempts)
            self.fetcher.release(reservation, int(delay_s * 1000), bucket)
            return Outcome.RETRY
        self.fetcher.fail(reservation, job.id, _failure_record(reservation, job.id, attempt), bucket)
        return Outcome.FAILED

    def _fail_malformed(self, reservation: Reservation, error: JobError) -> None:
        """Settled once, under its own id when it has a readable one; the queue moves on."""
        job_id = error.job_id or hashlib.sha1(reservation.payload).hexdigest()
        attempt = Attempt(Outcome.FAILED, f"MalformedJob: {error}")
        self.fetcher.fail(reservation, job_id, _failure_record(reservation, job_id, attempt))
        self._jobs_done += 1
        self.joblog.malformed(reservation.queue, reservation.tenant, job_id, reservation.attempts, str(error))


def _failure_record(reservation: Reservation, job_id: str, attempt: Attempt) -> dict[str, Any]:
    detail = attempt.detail or {}
    return {
        "id": job_id,
        "queue": reservation.queue,
        "tenant": reservation.tenant,
        "payload": reservation.payload.decode("utf-8", "replace"),
        "attempts": reservation.attempts,
        "exception": detail.get("exception") or (attempt.error or "").split(":", 1)[0],
        "message": detail.get("message") or attempt.error,
        "traceback": detail.get("traceback"),
        "failed_at": _now_ms(),
    }

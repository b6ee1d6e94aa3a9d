"""The worker loop: reserve, run, acknowledge; idle without spinning; stop cleanly; never lose a job.

At-least-once delivery: a job is reserved in Redis before it runs (never only in this process's
memory), and its acknowledgement rides on the next reserve call, so the steady state costs one
round trip per job. If this process dies, the reservation expires after `retry_after` and the next
worker's housekeeping puts the job back. Signals: SIGTERM/SIGINT stop taking jobs, let the running
one finish and exit 0; an idle worker is interrupted out of its blocking read at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
import os
import random
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TextIO

from fairway.figures import wait_bucket
from fairway.handlers import Registry, UnknownHandler
from fairway.job import Job, JobError, decode
from fairway.scheduling import rank_table, weighted_order
from fairway.settings import WorkerSettings
from fairway.store import CLUSTER_POLL_S, CONNECTION_ERRORS, Reservation, Store

log = logging.getLogger("fairway.worker")
HARD_EXIT_CODE = 70
OUTAGE_BACKOFF_MAX_S = 5.0


class JobTimeout(BaseException):
    """Raised inside a job that ran past its timeout (BaseException, so `except Exception` cannot eat it)."""


class _Interrupted(BaseException):
    """A stop signal arrived while idle: leave the blocking read now."""


@dataclass(frozen=True)
class Outcome:
    status: str  # "ok", "retry", "failed"
    error: str | None = None
    detail: dict[str, Any] | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _rss_mib() -> float:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Worker:
    def __init__(
        self,
        settings: WorkerSettings,
        store: Store,
        registry: Registry,
        *,
        rng: random.Random | None = None,
        out: TextIO = sys.stdout,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.store = store
        self.registry = registry
        self.rng = rng or random.Random()
        self.out = out
        self.clock = clock
        self.queues = [q for q in settings.queues if q not in settings.paused]
        group = store.group
        self.served = [*self.queues, *([group.name] if group else [])]
        self.weights = settings.served_weights()
        self.strict, self._ranks = rank_table(self.served, self.weights)
        self._served: tuple[str, str] | None = None
        self._pending_ack: Reservation | None = None
        self._pending_bucket = -1
        self._runtimes: dict[str, tuple[float, int]] = {}
        self._stopping = False
        self._watchdog_stop = threading.Event()
        self._idle = False
        self._jobs_done = 0
        self._started = clock()
        self._next_maintenance = 0.0
        self._hard_deadline: float | None = None
        self._running: Job | None = None
        self.exit_reason = ""

    # -- lifecycle -------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stopping = True

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._stopping = True
        self.exit_reason = signal.Signals(signum).name
        if self._idle:
            raise _Interrupted()

    def _install_signals(self) -> dict[int, Any]:
        """Our handlers for the run; the previous ones are put back after it (the worker is embeddable)."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {
            sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)
        }
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGALRM, _raise_timeout)
        threading.Thread(target=self._watchdog, name="fairway-watchdog", daemon=True).start()
        return previous

    def run(self) -> int:
        """Serve until stopped, recycled or (with --burst) drained; the exit code is always 0 then."""
        previous = self._install_signals()
        try:
            self._serve()
        finally:
            self._shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return 0

    def _serve(self) -> None:
        outage_started: float | None = None
        backoff = 0.1
        while not self._stopping and not self._should_recycle():
            try:
                if self._tick() == "drained":
                    self.exit_reason = "burst: queues empty"
                    break
                if outage_started is not None:
                    log.warning("Redis is reachable again after %.1f s", self.clock() - outage_started)
                    outage_started, backoff = None, 0.1
            except _Interrupted:
                break
            except CONNECTION_ERRORS as exc:
                if outage_started is None:
                    outage_started = self.clock()
                    log.error("Redis is unreachable (%s); retrying with backoff, nothing is lost", exc)
                self._served = None  # re-register after the outage: Redis may have restarted empty
                self._sleep(backoff)
                backoff = min(backoff * 2, OUTAGE_BACKOFF_MAX_S)

    def _shutdown(self) -> None:
        """Flush the last acknowledgement; shutdown paths log and never raise."""
        if self._pending_ack is not None:
            try:
                self.store.ack(self._pending_ack, self._pending_bucket)
                self._pending_ack = None
            except Exception as exc:  # the job stays reserved and is handed out again after retry_after
                log.error("could not acknowledge the last job on shutdown: %s", exc)
        self._watchdog_stop.set()
        with contextlib.suppress(Exception):
            self.out.flush()
        log.info("worker stopped after %d jobs (%s)", self._jobs_done, self.exit_reason or "stopped")

    def _should_recycle(self) -> bool:
        s = self.settings
        if s.max_jobs and self._jobs_done >= s.max_jobs:
            self.exit_reason = f"max jobs ({s.max_jobs})"
        elif s.max_time_s and self.clock() - self._started >= s.max_time_s:
            self.exit_reason = f"max time ({s.max_time_s:g} s)"
        else:
            return False
        return True

    def _sleep(self, seconds: float) -> None:
        self._idle = True
        try:
            if not self._stopping:
                time.sleep(seconds)
        except _Interrupted:
            pass
        finally:
            self._idle = False

    # -- one poll --------------------------------------------------------------------------------

    def _tick(self) -> str:
        if self.clock() >= self._next_maintenance:
            self._maintain()
        reservation = self._reserve()
        if reservation is None:
            self._maintain()  # going idle: move due jobs and heal the active index before blocking
            reservation = self._reserve()
        if reservation is None:
            if self.settings.burst and self.store.pending_delayed(self.queues) == 0:
                return "drained"
            self._wait_for_work()
            return "idle"
        self._process(reservation)
        return "worked"

    def _maintain(self) -> None:
        self._served = self.store.register_served(self.served, self.strict, self._ranks)
        self.store.maintain(self.queues)
        if self._runtimes:
            runtimes, self._runtimes = self._runtimes, {}
            self.store.record_runtimes(runtimes)
        self._next_maintenance = self.clock() + self.settings.maintenance_interval_s
        if self.settings.memory_mib and _rss_mib() > self.settings.memory_mib:
            self.exit_reason = f"memory above {self.settings.memory_mib} MiB"
            self._stopping = True
        self.out.flush()

    def _reserve(self) -> Reservation | None:
        retry_after_ms = self.settings.retry_after_ms
        if self.store.cluster:
            if self._pending_ack is not None:
                self.store.ack(self._pending_ack, self._pending_bucket)
                self._pending_ack = None
            order = weighted_order(self.served, self.weights, (), self.rng)
            return self.store.reserve_in_order(order, retry_after_ms, self.rng.random())
        if self._served is None:
            self._served = self.store.register_served(self.served, self.strict, self._ranks)
        reservation = self.store.reserve_weighted(
            self._served, self.strict, self.rng.random(), retry_after_ms, self._pending_ack, self._pending_bucket
        )
        self._pending_ack = None
        return reservation

    def _wait_for_work(self) -> None:
        block_for = self.settings.block_for_s
        if self.store.cluster or block_for == 0:
            self._sleep(CLUSTER_POLL_S)  # cluster: no blocking read across slots; poll every 100 ms
            return
        timeout = min(block_for, max(0.01, self._next_maintenance - self.clock()))
        self._idle = True
        try:
            if not self._stopping:
                self.store.wait_for_work(self.queues, timeout)
        except _Interrupted:
            self.store.client.close()  # the connection was cut mid-read; we are leaving anyway
            raise
        finally:
            self._idle = False

    # -- running a job ---------------------------------------------------------------------------

    def _process(self, reservation: Reservation) -> None:
        started_ms = _now_ms()
        started = time.perf_counter()
        try:
            job = decode(reservation.payload)
        except JobError as exc:
            self._fail_malformed(reservation, str(exc))
            return
        max_tries = job.max_tries or self.settings.tries
        if reservation.attempts > max_tries:
            outcome = Outcome(
                "failed",
                f"MaxAttemptsExceeded: attempt {reservation.attempts} of {max_tries}; an earlier attempt "
                "never finished (the worker was killed, crashed or timed out)",
            )
        else:
            try:
                func = self.registry.get(job.handler)
            except UnknownHandler as exc:
                outcome = Outcome("failed", f"UnknownHandler: {exc}")
            else:
                outcome = self._execute(func, job)
        finished_ms = _now_ms()
        run_ms = (time.perf_counter() - started) * 1000
        bucket = wait_bucket(started_ms - job.ready_since_ms) if job.enqueued_at else -1
        status = self._settle(reservation, job, outcome, max_tries, bucket)
        self._jobs_done += 1
        total, count = self._runtimes.get(reservation.queue, (0.0, 0))
        self._runtimes[reservation.queue] = (total + run_ms, count + 1)
        self._log(job, reservation, status, started_ms, finished_ms, run_ms, outcome.error)

    def _execute(self, func: Callable[..., Any], job: Job) -> Outcome:
        timeout = job.timeout or self.settings.timeout_s
        self._running = job
        self._hard_deadline = self.clock() + timeout + self.settings.kill_grace_s
        alarm = threading.current_thread() is threading.main_thread()
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            result = func(*job.args, **job.kwargs)
            if inspect.iscoroutine(result):
                asyncio.run(result)
            return Outcome("ok")
        except JobTimeout:
            return Outcome("retry", f"JobTimeout: ran past its {timeout:g} s timeout")
        except Exception as exc:
            return Outcome(
                "retry",
                f"{type(exc).__name__}: {exc}",
                {"exception": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()},
            )
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
            self._hard_deadline = None
            self._running = None

    def _settle(self, reservation: Reservation, job: Job, outcome: Outcome, max_tries: int, bucket: int) -> str:
        if outcome.status == "ok":
            self._pending_ack, self._pending_bucket = reservation, bucket
            return "ok"
        if outcome.status == "retry" and reservation.attempts < max_tries:
            delay_s = self.settings.backoff_for(reservation.attempts)
            self.store.release(reservation, int(delay_s * 1000), bucket)
            return "retry"
        self.store.fail(reservation, job.id, self._failure_record(reservation, job.id, outcome), bucket)
        return "failed"

    def _failure_record(self, reservation: Reservation, job_id: str, outcome: Outcome) -> dict[str, Any]:
        detail = outcome.detail or {}
        return {
            "id": job_id,
            "queue": reservation.queue,
            "tenant": reservation.tenant,
            "payload": reservation.payload.decode("utf-8", "replace"),
            "attempts": reservation.attempts,
            "exception": detail.get("exception") or (outcome.error or "").split(":", 1)[0],
            "message": detail.get("message") or outcome.error,
            "traceback": detail.get("traceback"),
            "failed_at": _now_ms(),
        }

    def _fail_malformed(self, reservation: Reservation, reason: str) -> None:
        job_id = hashlib.sha1(reservation.payload).hexdigest()
        outcome = Outcome("failed", f"MalformedJob: {reason}")
        self.store.fail(reservation, job_id, self._failure_record(reservation, job_id, outcome))
        self._jobs_done += 1
        log.error("moved a malformed job on %s to the failed store: %s", reservation.queue, reason)

    def _watchdog(self) -> None:
        """A job that ignores its timeout interrupt makes the worker exit, so its supervisor restarts it."""
        while not self._watchdog_stop.wait(0.25):
            deadline = self._hard_deadline
            if deadline is not None and self.clock() > deadline:
                job = self._running
                log.critical(
                    "job %s (%s) ignored its timeout; exiting so the worker is restarted; the job stays "
                    "reserved and is handed out again after retry_after",
                    job.id if job else "?",
                    job.handler if job else "?",
                )
                os._exit(HARD_EXIT_CODE)

    def _log(
        self,
        job: Job,
        reservation: Reservation,
        status: str,
        started_ms: int,
        finished_ms: int,
        run_ms: float,
        error: str | None,
    ) -> None:
        fmt = self.settings.log_format
        if fmt == "none":
            return
        wait_ms = max(0, started_ms - job.ready_since_ms)
        queue = job.queue if reservation.tenant else reservation.queue  # tenant jobs show tenant-<id>
        if fmt == "json":
            line = {
                "event": "job.finished",
                "id": job.id,
                "queue": queue,
                "tenant": reservation.tenant or job.tenant,
                "handler": job.handler,
                "attempt": reservation.attempts,
                "enqueued_at": job.enqueued_at,
                "started_at": started_ms,
                "finished_at": finished_ms,
                "wait_ms": wait_ms,
                "run_ms": round(run_ms, 3),
                "outcome": status,
            }
            if error:
                line["error"] = error
            self.out.write(json.dumps(line) + "\n")
        else:
            tail = f" error={error!r}" if error else ""
            self.out.write(
                f"{status:<6} {queue} {job.handler} {job.id} attempt={reservation.attempts} "
                f"wait={wait_ms}ms run={run_ms:.1f}ms{tail}\n"
            )


def _raise_timeout(_signum: int, _frame: FrameType | None) -> None:
    raise JobTimeout()

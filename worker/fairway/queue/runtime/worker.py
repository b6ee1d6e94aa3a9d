"""The worker loop: reserve, run, settle; idle without spinning; stop cleanly; never lose a job.

At-least-once delivery: a job is reserved in Redis before it runs (never only in this process's
memory), and acknowledgements ride on the next reserve call, which also reserves up to as many jobs
as there are free slots (`concurrency`): one round trip per batch of jobs. Reservations are leases
this process renews while it holds the job (`leases.py`); if it dies, they run out within
`retry_after` and the next worker's housekeeping puts the jobs back.
Signals: SIGTERM/SIGINT stop taking jobs, let the running ones finish and exit 0; an idle worker is
interrupted out of its wait at once.

With one slot a job runs in the main thread under SIGALRM (the cheapest path, and the only one that
can interrupt a plain `def`); with more, jobs run in a `JobPool` and only report back, so everything
that talks to Redis stays in this thread and a job is settled exactly once. A pooled worker on a
standalone Redis keeps reserve calls on the wire while its jobs run and refills a slot as soon as it
frees (`overlap.py`), so a round trip to a distant Redis is not idle time for every slot. A sync job past its
timeout cannot be killed: it is settled as timed out, its slot written off, and a process with
written-off slots stops reserving, drains and exits so its supervisor restarts it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, TextIO

from fairway.queue.access.figures import wait_bucket
from fairway.queue.access.progress import ProgressBoard
from fairway.queue.connection import OUTAGE_ERRORS, is_outage
from fairway.queue.protocol.calls import NO_WAIT_BUCKET, Ack, Reservation
from fairway.queue.protocol.context import JobContext
from fairway.queue.protocol.job import JobError, check_placement, decode, now_ms
from fairway.queue.runtime.execution import Attempt, Outcome, refusal_of
from fairway.queue.runtime.fetch import POLL_S, Fetcher, StandaloneFetcher
from fairway.queue.runtime.handlers import Registry, UnknownHandler
from fairway.queue.runtime.housekeeping import Housekeeping
from fairway.queue.runtime.joblog import Finished, JobLog
from fairway.queue.runtime.leases import Leases
from fairway.queue.runtime.ledger import Ledger
from fairway.queue.runtime.lifecycle import HARD_EXIT_CODE, Backoff, Interrupted, RssProbe, StopSignals
from fairway.queue.runtime.metrics import UNREGISTERED, WorkerMetrics
from fairway.queue.runtime.metrics import serve as serve_metrics
from fairway.queue.runtime.overlap import Overlap
from fairway.queue.runtime.runner import Done, Runner, Started
from fairway.queue.runtime.settling import Settler
from fairway.queue.runtime.stopping import Stopping
from fairway.resource.worker_settings import WorkerSettings

log = logging.getLogger("fairway.worker")


class Tick(StrEnum):
    WORKED = "worked"
    IDLE = "idle"
    DRAINED = "drained"  # burst mode: nothing ready, nothing delayed, nothing running


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
        self.rss = RssProbe()
        self.runner = Runner(settings.concurrency, clock, settings.kill_grace_s)
        self.progress = ProgressBoard(fetcher.client, settings.prefix)
        self.metrics = WorkerMetrics(registry.names(), lambda: self.runner.running, lambda: self.free_slots)
        self.leases = Leases(fetcher, settings.retry_after_ms / 1000, lambda: self.housekeeping.beat_now())
        self.ledger = Ledger(self.leases.settled)
        self.settler = Settler(self.ledger, fetcher, settings)
        self.housekeeping = Housekeeping(fetcher, settings.maintenance_interval_s, clock, fetcher.identity, self._beat)
        self.stopping = Stopping(
            self.runner, self.ledger, self.housekeeping, clock, self._collect, self._wait_s, self._send_acks
        )
        pool = self.runner.pool
        self.overlap = (
            Overlap(fetcher, self.ledger, pool, clock)
            if pool is not None and isinstance(fetcher, StandaloneFetcher)
            else None
        )
        self._seq = 0
        self._unaccounted: list[tuple[Done, Outcome, int, int]] = []  # finished, not yet counted and logged
        self._jobs_done = 0
        self._started = clock()
        self._busy = True  # the last tick found work: the next idle one runs housekeeping first

    @property
    def exit_reason(self) -> str:
        return self.signals.reason

    @property
    def free_slots(self) -> int:
        return self.settings.concurrency - self.runner.pooled - self.runner.stuck

    # -- lifecycle -------------------------------------------------------------------------------

    def stop(self) -> None:
        self.signals.stopping = True

    def banner(self) -> str:
        """What this process serves, said once at start."""
        return self.settings.describe(self.registry.names())

    def run(self) -> int:
        """Serve until stopped, recycled or (with --burst) drained: 0. With slots written off to stuck
        jobs: HARD_EXIT_CODE once the others are settled, so the process is replaced."""
        log.info("worker %d started: %s", os.getpid(), self.banner())
        if self.settings.metrics_port:
            serve_metrics(self.metrics, self.settings.metrics_port)
        if self.signals.install():
            self.runner.watchdog.start()
        self.leases.start()
        try:
            self._serve()
            self._drain()
        finally:
            self._shutdown()
            self.signals.restore()
        if self.runner.stuck:
            os._exit(HARD_EXIT_CODE)  # a stuck thread must not keep the process alive
        return 0

    def _serve(self) -> None:
        backoff = Backoff(self.clock)
        while not self.signals.stopping and not self._should_recycle() and not self.runner.stuck:
            try:
                if self._tick() is Tick.DRAINED:
                    self.signals.reason = "burst: nothing ready or delayed in the served, unpaused queues"
                    break
                backoff.succeeded()
            except Interrupted:
                break
            except OUTAGE_ERRORS as exc:
                if not is_outage(exc):
                    raise
                self.metrics.redis_error()
                wait_s = backoff.failed(exc, "")
                self.fetcher.forget_registration()  # Redis may have restarted empty
                with contextlib.suppress(Interrupted):  # a stop during the backoff: the loop ends
                    self._idle(functools.partial(time.sleep, wait_s))

    def _drain(self) -> None:
        """Take nothing more; let every running job finish (or time out) and settle each as it finishes."""
        if self.runner.stuck and not self.signals.reason:
            self.signals.reason = f"{self.runner.stuck} slot(s) stuck in jobs past their timeout"
        if self.overlap is not None and self.overlap.on_wire:
            # Jobs Redis already leased to this process run here (their slots were free when asked for).
            try:
                self.overlap.take_replies(self._start_reply, block=True)
            except OUTAGE_ERRORS as exc:
                if not is_outage(exc):
                    raise
                log.warning("jobs reserved just before stopping were not received (%s); they run again", exc)
        self.stopping.drain()  # (what it could not settle, _shutdown reports)

    def _shutdown(self) -> None:
        self._account()
        self.stopping.shutdown((self.leases.stop, self.runner.close, self.rss.close, self.joblog.flush))
        jobs = f"{self._jobs_done} job{'' if self._jobs_done == 1 else 's'}"
        log.info("worker stopped after %s (%s)", jobs, self.exit_reason or "stopped")

    def _should_recycle(self) -> bool:
        s = self.settings
        if s.max_jobs and self._jobs_done + self.runner.pooled >= s.max_jobs:
            self.signals.reason = f"max jobs ({s.max_jobs})"
            self.metrics.recycled("max_jobs")
        elif s.max_time_s and self.clock() - self._started >= s.max_time_s:
            self.signals.reason = f"max time ({s.max_time_s:g} s)"
            self.metrics.recycled("max_time")
        else:
            return False
        return True

    def _idle(self, wait: Callable[[], Any]) -> Any:
        """Wait with stop signals allowed to cut the wait short (Interrupted propagates); what `wait` gave."""
        self.signals.idle = True
        try:
            return None if self.signals.stopping else wait()
        finally:
            self.signals.idle = False

    # -- one poll --------------------------------------------------------------------------------

    def _wanted(self) -> int:
        """Jobs to reserve now: the free slots, never beyond max_jobs."""
        wanted = self.free_slots
        if self.settings.max_jobs:
            wanted = min(wanted, self.settings.max_jobs - self._jobs_done - self.runner.pooled)
        return max(0, wanted)

    def _tick(self) -> Tick:
        if self.overlap is not None and (self.runner.pooled or self.overlap.on_wire):
            return self._tick_overlapped(self.overlap)
        if self.housekeeping.due():
            # What finished is settled first: after an outage longer than retryAfter, its lease may have
            # run out, and housekeeping would hand the finished job out again.
            self.ledger.flush(self._send_acks)
            self._housekeep()
        self.ledger.write_settles()  # (left over from an outage: written in order before anything new)
        reservations = self._reserve()
        if not reservations and not self.runner.pooled and self._busy:
            self._housekeep()  # going idle (once, not on every poll): move due jobs, heal the active index
            reservations = self._reserve()
        self._busy = bool(reservations or self.runner.pooled)
        if not self._busy:
            if self.settings.burst and self.fetcher.pending_delayed() == 0:
                return Tick.DRAINED
            self._wait_for_work()
            return Tick.IDLE
        for reservation in reservations:  # starting does no I/O: nothing can strand the rest of a batch
            self._start(reservation)
        if self.runner.pooled and self.overlap is None:
            # Busy: wait for a completion, briefly when slots are free (new work may come), longer
            # when every slot is taken (nothing to do but wait).
            self._collect(self._wait_s() if self.free_slots == 0 else min(POLL_S / 2, self._wait_s()))
        self.ledger.write_settles()
        return Tick.WORKED

    def _tick_overlapped(self, overlap: Overlap) -> Tick:
        """Jobs run in the pool: wait for whichever comes first, a reply (its jobs start at once) or a
        completion (settled, and its slot asked for again before anything else), with the free slots
        always asked for by a call on the wire."""
        if self.housekeeping.due():
            overlap.take_replies(self._start_reply, block=True)  # the hot line clear for the flush's acks
            self.ledger.flush(self._send_acks)
            self._housekeep()
        self.ledger.write_settles()
        unasked = self._ask(overlap)
        self._account()
        self._busy = True
        if not overlap.on_wire and not self.runner.pooled:
            return Tick.WORKED  # the queues ran short and nothing runs: the next tick goes idle
        wait_s = self._wait_s()
        if unasked > 0 and not self.ledger.acks:
            wait_s = min(wait_s, max(overlap.until_may_ask_s(), 0.001))
        overlap.wait(wait_s)
        overlap.take_replies(self._start_reply, block=False)
        self._collect(0)
        self.ledger.write_settles()
        self._ask(overlap)
        return Tick.WORKED

    def _ask(self, overlap: Overlap) -> int:
        """Put a reserve call on the wire for the free slots no call asks for yet (with the acks not
        yet sent), where the overlap's rules allow; the slots still unasked for."""
        unasked = self._wanted() - overlap.asked
        if (unasked > 0 or not overlap.on_wire) and overlap.ask(max(0, unasked)):
            return 0
        return unasked

    def _start_reply(self, reservations: list[Reservation]) -> None:
        self.leases.hold(reservations)
        self.metrics.reserve_round_trip(len(reservations))
        for reservation in reservations:
            self._start(reservation)

    def _housekeep(self) -> None:
        self._account()  # (the run-time tally goes out with this tick)
        self.housekeeping.run()
        self._check_memory()
        self.joblog.flush()

    def _beat(self) -> dict[str, object]:
        s = self.settings
        return {"served": s.served_names(), "concurrency": s.concurrency, "busy": self.runner.running, "at": now_ms()}

    def _check_memory(self) -> None:
        """Recycle above the memory limit: checked after every job and on the housekeeping timer, so a
        leaking handler is caught at the job that crossed the line, not a second later."""
        limit = self.settings.memory_mib
        if limit and self.rss.mib() > limit:
            if not self.signals.stopping:
                self.metrics.recycled("memory")
            self.signals.reason = f"memory above {limit} MiB"
            self.signals.stopping = True

    def _reserve(self) -> list[Reservation]:
        """Acknowledge what finished and reserve up to the free slots, in one call; the acks leave the
        ledger only when the call returned."""
        wanted = self._wanted()
        if wanted == 0 and not self.ledger.acks:
            self._account()
            return []  # every slot busy and nothing to acknowledge: no round trip
        try:
            reservations = self.ledger.carry(lambda acks: self.fetcher.reserve(acks, wanted, self._account))
        finally:
            self._account()  # (done while the call was on the wire, unless it failed first)
        self.leases.hold(reservations)
        self.metrics.reserve_round_trip(len(reservations))
        return reservations

    def _send_acks(self, acks: Sequence[Ack]) -> None:
        self.fetcher.reserve(acks, 0)

    def _wait_for_work(self) -> None:
        began = self.clock()
        try:
            due_s = self._idle(
                lambda: self.fetcher.wait_for_work(self.settings.block_for_s, self.housekeeping.until_due_s())
            )
            if due_s is not None and due_s != float("inf"):
                self.housekeeping.expect_delayed(began + due_s)  # moved at once, started on time
        except Interrupted:
            self.fetcher.abandon_wait()  # the connection was cut mid-read; we are leaving anyway
            raise

    def _wait_s(self) -> float:
        """How long to wait for completions: until the next timeout or housekeeping, at most a second."""
        now = self.clock()
        soonest = self.runner.next_deadline()
        until = 1.0 if soonest is None else soonest - now
        return max(0.0, min(until, self.housekeeping.until_due_s(), 1.0))

    # -- running a job ---------------------------------------------------------------------------

    def _start(self, reservation: Reservation) -> None:
        """Run a reserved job (here or in the pool), or settle it at once when it must not run."""
        self._seq += 1
        try:
            job = check_placement(decode(reservation.payload), reservation.queue, reservation.tenant)
        except JobError as exc:
            self._fail_malformed(reservation, exc)
            return
        max_tries = job.max_tries or self.settings.tries
        timeout = job.timeout or self.settings.timeout_s
        started = Started(self._seq, reservation, job, timeout, now_ms(), time.perf_counter())
        refusal = refusal_of(reservation, max_tries, self.settings.lost_limit)
        if self.leases.lost(reservation):
            log.warning(
                "job %s: its lease ran out before it could start here (Redis unreachable for longer than "
                "retryAfter?) and it may be running elsewhere; not running it twice",
                job.id,
            )
            self.leases.settled(reservation)
            return
        if refusal is None:
            try:
                func = self.registry.get(job.handler)
            except UnknownHandler as exc:
                refusal = f"UnknownHandler: {exc}"
        if refusal is not None:
            self._finish(Done(started, Attempt(Outcome.FAILED, refusal), now_ms(), 0.0))
            return
        context = JobContext(
            job.id,
            job.queue,
            job.handler,
            job.tenant,
            reservation.attempts,
            max_tries,
            job.enqueued_at,
            reservation.queue,
            self.progress.report,
        )
        done = self.runner.run(func, started, context)
        if done is not None:
            self._finish(done)

    def _collect(self, timeout_s: float) -> None:
        """Settle what the pool finished (and overdue sync jobs, as timed out)."""
        stuck = self.runner.stuck
        for done in self.runner.collect(timeout_s):
            self._finish(done)
        for _ in range(self.runner.stuck - stuck):
            self.metrics.recycled("stuck_job")

    def _finish(self, done: Done) -> None:
        """One finished job: settled (into the ledger) at once, exactly once; counted and logged by
        `_account`, which runs while the next reserve call is on the wire."""
        started = done.started
        job = started.job
        waited_ms = started.started_ms - started.reservation.ready_since_ms(job)
        bucket = wait_bucket(waited_ms) if job.enqueued_at else NO_WAIT_BUCKET
        outcome = self.settler.settle(started.reservation, job, done.attempt, bucket)
        self._jobs_done += 1
        self._unaccounted.append((done, outcome, bucket, waited_ms))
        self._check_memory()

    def _account(self) -> None:
        """The finished jobs' metrics, run-time tally and log lines (none of them talks to Redis)."""
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

    def _fail_malformed(self, reservation: Reservation, error: JobError) -> None:
        """Settled once, under its own id when it has a readable one; the queue moves on."""
        job_id = self.settler.malformed(reservation, error)
        self._jobs_done += 1
        self.metrics.job_finished(reservation.queue, UNREGISTERED, "malformed", 0.0, None)
        self.joblog.malformed(reservation.queue, reservation.tenant, job_id, reservation.attempts, str(error))

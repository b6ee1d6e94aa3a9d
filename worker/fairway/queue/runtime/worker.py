"""A worker process: poll until stopped, recycled or drained (each poll: reserve, run, settle, or idle
without spinning, `poll.py`); back off through outages; stop cleanly; never lose a job.

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
import threading
import time
from collections.abc import Callable
from typing import TextIO

from fairway.probes import serve_probes
from fairway.queue.connection import OUTAGE_ERRORS, is_outage
from fairway.queue.runtime.fetch import Fetcher
from fairway.queue.runtime.handlers import Registry
from fairway.queue.runtime.lifecycle import HARD_EXIT_CODE, Backoff, Interrupted
from fairway.queue.runtime.metrics import serve as serve_metrics
from fairway.queue.runtime.overlap import Overlap
from fairway.queue.runtime.parts import WorkerParts
from fairway.queue.runtime.poll import Poll, Tick
from fairway.resource.worker_settings import WorkerSettings

log = logging.getLogger("fairway.worker")


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
        self.registry = registry
        self.parts = WorkerParts.build(settings, fetcher, registry, out, clock)
        self.poll = Poll(self.parts)
        self._started = clock()

    @property
    def overlap(self) -> Overlap | None:
        """The reserve calls kept on the wire, when this worker overlaps them (None: one at a time)."""
        return self.parts.overlap

    @property
    def exit_reason(self) -> str:
        return self.parts.signals.reason

    def stop(self) -> None:
        self.parts.signals.stopping = True

    def banner(self) -> str:
        """What this process serves, said once at start."""
        return self.settings.describe(self.registry.names())

    def run(self, asked_to_stop: threading.Event | None = None) -> int:
        """Serve until stopped, recycled or (with --burst) drained: 0. With slots written off to stuck
        jobs: HARD_EXIT_CODE once the others are settled, so the process is replaced. `asked_to_stop`:
        set by a SIGTERM that came while the worker was starting (it then stops before taking a job)."""
        p = self.parts
        log.info("worker %d started: %s", os.getpid(), self.banner())
        if self.settings.metrics_port:
            serve_metrics(p.metrics, self.settings.metrics_port)
        if self.settings.health_port:
            try:
                serve_probes("0.0.0.0", self.settings.health_port, p.health.live, p.health.ready)
            except OSError as exc:  # (a clash never stops a worker from working)
                log.warning("probes not served: cannot listen on port %d (%s)", self.settings.health_port, exc)
        if p.signals.install():
            p.runner.watchdog.start()
        if asked_to_stop is not None and asked_to_stop.is_set():  # a SIGTERM before our handlers were in
            log.info("SIGTERM received while starting: taking no jobs")
            p.signals.stopping, p.signals.reason = True, "SIGTERM"
        p.leases.start()
        p.ticker.start()
        try:
            self._serve()
            self._drain()
        finally:
            self._shutdown()
            p.signals.restore()
        if p.runner.stuck:
            os._exit(HARD_EXIT_CODE)  # a stuck thread must not keep the process alive
        return 0

    def _serve(self) -> None:
        p = self.parts
        backoff = Backoff(p.clock)
        while not p.signals.stopping and not self._should_recycle() and not p.runner.stuck:
            p.health.ticked()  # (an outage's backoff goes round too: Redis down is no reason to restart)
            try:
                if self.poll.tick() is Tick.DRAINED:
                    p.signals.reason = "burst: nothing ready or delayed in the served, unpaused queues"
                    break
                backoff.succeeded()
            except Interrupted:
                break
            except OUTAGE_ERRORS as exc:
                if not is_outage(exc):
                    raise
                p.metrics.redis_error()
                wait_s = backoff.failed(exc, "")
                p.fetcher.forget_registration()  # Redis may have restarted empty
                with contextlib.suppress(Interrupted):  # a stop during the backoff: the loop ends
                    p.signals.idle_wait(functools.partial(time.sleep, wait_s))

    def _drain(self) -> None:
        """Take nothing more; let every running job finish (or time out) and settle each as it finishes."""
        p = self.parts
        if p.runner.stuck and not p.signals.reason:
            p.signals.reason = f"{p.runner.stuck} slot(s) stuck in jobs past their timeout"
        if p.overlap is not None and p.overlap.on_wire:
            # Jobs Redis already leased to this process run here (their slots were free when asked for).
            try:
                p.overlap.take_replies(self.poll.start_reply, block=True)
            except OUTAGE_ERRORS as exc:
                if not is_outage(exc):
                    raise
                log.warning("jobs reserved just before stopping were not received (%s); they run again", exc)
        p.stopping.drain()  # (what it could not settle, _shutdown reports)

    def _shutdown(self) -> None:
        p = self.parts
        p.completions.account()
        p.stopping.shutdown((p.ticker.stop, p.leases.stop, p.runner.close, p.memory.close, p.joblog.flush))
        done = p.slots.jobs_done
        log.info("worker stopped after %d job%s (%s)", done, "" if done == 1 else "s", self.exit_reason or "stopped")

    def _should_recycle(self) -> bool:
        p, s = self.parts, self.settings
        if p.slots.used_up():
            p.signals.reason = f"max jobs ({s.max_jobs})"
            p.metrics.recycled("max_jobs")
        elif s.max_time_s and p.clock() - self._started >= s.max_time_s:
            p.signals.reason = f"max time ({s.max_time_s:g} s)"
            p.metrics.recycled("max_time")
        else:
            return False
        return True

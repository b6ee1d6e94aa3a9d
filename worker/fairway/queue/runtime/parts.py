"""A worker's parts, each built once and handed the parts it works with (named objects, not
callbacks), so the import graph shows how the loop is wired."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from fairway.queue.access.progress import ProgressBoard
from fairway.queue.access.schedules import Schedules
from fairway.queue.runtime.completions import Completions
from fairway.queue.runtime.fetch import Fetcher, StandaloneFetcher
from fairway.queue.runtime.handlers import Registry
from fairway.queue.runtime.health import WorkerHealth
from fairway.queue.runtime.housekeeping import Housekeeping
from fairway.queue.runtime.joblog import JobLog
from fairway.queue.runtime.leases import Leases
from fairway.queue.runtime.ledger import Ledger
from fairway.queue.runtime.lifecycle import MemoryGuard, StopSignals
from fairway.queue.runtime.metrics import WorkerMetrics
from fairway.queue.runtime.overlap import Overlap
from fairway.queue.runtime.runner import Runner
from fairway.queue.runtime.settling import Settler
from fairway.queue.runtime.slots import Slots
from fairway.queue.runtime.starting import Starter
from fairway.queue.runtime.stopping import Stopping
from fairway.queue.runtime.ticker import Ticker, declared_schedules
from fairway.resource.worker_settings import WorkerSettings


@dataclass(frozen=True)
class WorkerParts:
    settings: WorkerSettings
    fetcher: Fetcher
    clock: Callable[[], float]
    signals: StopSignals
    runner: Runner  # runs the jobs: in this thread, or in the pool
    slots: Slots  # free, running, jobs done
    metrics: WorkerMetrics
    housekeeping: Housekeeping  # the timer's work and the heartbeat
    leases: Leases  # renews what this process holds
    ledger: Ledger  # owns each outcome until Redis confirms it
    joblog: JobLog
    memory: MemoryGuard
    completions: Completions  # finished jobs: settled, then counted and logged
    starter: Starter  # a reserved job: refused, run here or handed to the pool
    stopping: Stopping
    overlap: Overlap | None  # reserve calls on the wire while jobs run (a pooled worker, standalone Redis)
    health: WorkerHealth  # what the probes read
    ticker: Ticker  # the schedules' jobs, written when their ticks come

    @classmethod
    def build(
        cls,
        settings: WorkerSettings,
        fetcher: Fetcher,
        registry: Registry,
        out: TextIO = sys.stdout,
        clock: Callable[[], float] = time.monotonic,
    ) -> WorkerParts:
        signals = StopSignals()
        runner = Runner(settings.concurrency, clock, settings.kill_grace_s)
        slots = Slots(settings, runner)
        metrics = WorkerMetrics(registry.names(), slots)
        housekeeping = Housekeeping(fetcher, settings.maintenance_interval_s, clock, fetcher.identity, slots)
        leases = Leases(fetcher, settings.retry_after_ms / 1000, housekeeping)
        ledger = Ledger(leases)
        joblog = JobLog(out, settings.log_format)
        memory = MemoryGuard(settings.memory_mib, signals, metrics)
        settler = Settler(ledger, fetcher, settings, registry)
        completions = Completions(settler, runner, slots, housekeeping, metrics, joblog, memory, clock)
        progress = ProgressBoard(fetcher.client, settings.prefix)
        starter = Starter(settings, registry, runner, leases, progress, completions)
        stopping = Stopping(runner, ledger, housekeeping, clock, completions, fetcher)
        pool = runner.pool
        overlap = (
            Overlap(fetcher, ledger, pool, clock)
            if pool is not None and isinstance(fetcher, StandaloneFetcher)
            else None
        )
        health = WorkerHealth(runner, signals, settings.block_for_s, clock)
        schedules = Schedules(fetcher.client, settings.prefix, settings.group_prefix)
        ticker = Ticker(schedules, declared_schedules(settings, registry))
        return cls(
            settings,
            fetcher,
            clock,
            signals,
            runner,
            slots,
            metrics,
            housekeeping,
            leases,
            ledger,
            joblog,
            memory,
            completions,
            starter,
            stopping,
            overlap,
            health,
            ticker,
        )

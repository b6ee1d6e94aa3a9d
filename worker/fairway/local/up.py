"""`fairway up`: a QueueSupervisor's pools as local worker processes, supervised like `php artisan horizon`.

The same pools, worker settings and autoscaler as on Kubernetes (fairway.plan), with processes instead
of pods: the autoscaler is stepped every POLL_S with the same inputs as the operator's (a process
counts as starting until its worker's first heartbeat, as a pod does until it is ready); a worker that
crashes is restarted (after a short pause, so a crash loop does not spin), one that recycles itself
(max jobs, max time, memory) is replaced, and Ctrl-C or SIGTERM drains every worker (each finishes its
job) before exiting.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any, Protocol, TextIO

from fairway.plan.autoscaler import POLL_S, Autoscaler
from fairway.plan.pools import Pool, initial_replicas, pools
from fairway.plan.worker_config import local_worker_settings
from fairway.queue.access.admin import Admin
from fairway.queue.access.demand import DemandReader
from fairway.queue.access.figures import QueueStats, duration
from fairway.queue.access.inspector import Inspector
from fairway.queue.access.schedules import tick_spec
from fairway.queue.connection import CONNECTION_ERRORS, connect, redacted
from fairway.queue.protocol.keys import served_name_of_group
from fairway.queue.runtime.identity import pod_name
from fairway.resource.names import REDIS_URL_ENV
from fairway.resource.plain import yaml_text
from fairway.resource.spec import QueueSupervisorSpec

RESTART_DELAY_S = 1.0
LOG_EVERY_S = 10.0  # without a terminal, the table is a log entry at most this often
RATE_WINDOW_MIN = 5  # throughput and average run time are over this many recent minutes


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


@dataclass
class Process:
    proc: subprocess.Popen[bytes]
    started: float
    ready: bool = False  # its worker has written a heartbeat (a pod's readiness, for the autoscaler)

    @property
    def worker_name(self) -> str:
        """Its worker's name in the workers hash (fairway.queue.runtime.identity)."""
        return f"{pod_name()}:{self.proc.pid}"


@dataclass
class LocalPool:
    supervisor: str
    pool: Pool
    config_path: Path
    log: IO[bytes]
    replicas: int
    processes: list[Process] = field(default_factory=list)
    restarts: int = 0
    last_crash: float = 0.0

    def starting(self) -> int:
        """Processes asked for whose worker is not up yet (as the operator counts a Deployment's
        replicas that are not ready): a long wait adds none while one is on its way."""
        return max(0, self.replicas - sum(1 for p in self.processes if p.ready))


class DemandSource(Protocol):
    """One Redis's demand and runtimes (a DemandReader)."""

    def read(self, names: Iterable[str]) -> dict[str, QueueStats]: ...

    def runtimes(self, names: Sequence[str]) -> dict[str, float | None]: ...


@dataclass
class LocalSupervisor:
    """One supervisor's pools, the Redis views the table and the autoscaler read, and its autoscaler."""

    name: str
    spec: QueueSupervisorSpec
    inspector: Inspector
    demand: DemandSource
    pools: list[LocalPool]
    autoscaler: Autoscaler | None = None  # resized pools only: the operator's autoscaler, on local processes


class Up:
    def __init__(
        self,
        supervisors: list[tuple[str, QueueSupervisorSpec]],
        redis_url: str,
        *,
        log_dir: Path | None = None,
        out: TextIO = sys.stdout,
        quiet: bool = False,
        tick_s: float = POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis_url = redis_url
        self.out = out
        self.quiet = quiet
        self.tick_s = tick_s  # each tick supervises the processes and steps the autoscalers
        self.clock = clock
        self.worker_command = [sys.executable, "-m", "fairway.cli", "worker"]
        self._own_log_dir = log_dir is None  # a temporary folder of ours: removed when this stops
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="fairway-up-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._stop = threading.Event()
        self._last_table, self._last_render = "", -LOG_EVERY_S
        self.supervisors: list[LocalSupervisor] = []
        for name, spec in supervisors:
            client = connect(redis_url, spec.redis.cluster)
            Admin(client).push_spec(spec)  # pauses and tenant settings, as the operator writes them
            replicas = initial_replicas(spec, {})
            local_pools = []
            for pool in pools(spec):
                slug = f"{name}-{pool.name.lstrip('@')}".replace(":", "_")
                config_path = self.log_dir / f"{slug}.yaml"
                # The URL (it may hold a password) reaches workers through their environment, as on
                # Kubernetes, never through a file; files are the user's alone (0600).
                settings = local_worker_settings(spec, pool)
                _write_private(config_path, yaml_text(settings.to_config(), sort_keys=True))
                log = os.fdopen(
                    os.open(self.log_dir / f"{slug}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab"
                )
                local_pools.append(LocalPool(name, pool, config_path, log, replicas[pool.name]))
            autoscaler = Autoscaler(spec, replicas) if spec.policy.resized else None
            self.supervisors.append(
                LocalSupervisor(name, spec, Inspector(client), DemandReader(client), local_pools, autoscaler)
            )

    # -- lifecycle -------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        self._stop.set()

    def run(self, until: Callable[[], bool] | None = None) -> int:
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT.value, signal.SIGTERM.value):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            kept = " (removed when this stops; --logs DIR keeps them)" if self._own_log_dir else ""
            self._say(f"fairway up: worker logs and settings in {self.log_dir}{kept}")
            while not self._stop.is_set():
                self._supervise()
                self._balance()
                self._tick()
                if not self.quiet:
                    self._render()
                if until is not None and until():
                    break
                self._stop.wait(self.tick_s)
        finally:
            self._drain()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self._own_log_dir:
                shutil.rmtree(self.log_dir, ignore_errors=True)
        return 0

    def _spawn(self, pool: LocalPool) -> None:
        cmd = [*self.worker_command, "--config", str(pool.config_path)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", REDIS_URL_ENV: self.redis_url}
        proc = subprocess.Popen(cmd, stdout=pool.log, stderr=pool.log, env=env)
        pool.processes.append(Process(proc, self.clock()))

    def _supervise(self) -> None:
        """Reap exited workers, then start or stop processes until each pool has its replicas."""
        now = self.clock()
        for sup in self.supervisors:
            for pool in sup.pools:
                alive = []
                for process in pool.processes:
                    code = process.proc.poll()
                    if code is None:
                        alive.append(process)
                    elif code != 0:  # crashed (0 is a clean recycle: replace it at once)
                        pool.restarts += 1
                        pool.last_crash = now
                pool.processes = alive
                while len(pool.processes) < pool.replicas and now - pool.last_crash >= RESTART_DELAY_S:
                    self._spawn(pool)
                while len(pool.processes) > pool.replicas:
                    pool.processes.pop().proc.send_signal(signal.SIGTERM)  # finishes its job, then exits

    def _balance(self) -> None:
        """Step every autoscaler, as the operator's scaling poll does: the demand read, the runtimes
        every RUNTIMES_EVERY_S, the processes not up yet; then the pools take the sizes it decided."""
        for sup in self.supervisors:
            autoscaler = sup.autoscaler
            if autoscaler is None:
                continue
            try:
                rows = sup.demand.read(autoscaler.served)
                now = self.clock()
                if autoscaler.runtimes_due(now):
                    autoscaler.note_runtimes(sup.demand.runtimes(autoscaler.served), now)
                self._note_ready(sup)
            except CONNECTION_ERRORS as exc:
                self._say(f"fairway up: Redis unreachable, keeping the current processes ({exc})")
                continue
            stats = [rows[n] for n in autoscaler.served if n in rows]
            replicas = {pool.pool.name: pool.replicas for pool in sup.pools}
            starting = {pool.pool.name: pool.starting() for pool in sup.pools}
            for change in autoscaler.poll(autoscaler.demand(stats), replicas, starting, now):
                self._say(f"fairway up: {sup.name}: {change.message}")
            for pool in sup.pools:
                pool.replicas = autoscaler.replicas[pool.pool.name]

    def _tick(self) -> None:
        """Tick the supervisors' schedules, as the operator's status pass does: a pool scaled to zero
        has no worker to tick them (tick.lua keeps one job per tick whoever else ticks)."""
        for sup in self.supervisors:
            if sup.spec.schedules:
                try:
                    tick_spec(sup.inspector.client, sup.spec)
                except CONNECTION_ERRORS:
                    continue  # (said by _balance; the workers and the next tick catch up within grace)

    def _note_ready(self, sup: LocalSupervisor) -> None:
        """Mark the processes whose worker has beaten (one read, only while some are not up yet)."""
        waiting = [p for pool in sup.pools for p in pool.processes if not p.ready]
        if not waiting:
            return
        live = {str(beat["name"]) for beat in sup.inspector.workers()}
        for process in waiting:
            process.ready = process.worker_name in live

    def _drain(self) -> None:
        """SIGTERM every worker (each finishes its job), then wait; SIGKILL only past the grace period."""
        everyone = [
            (sup.spec.effective_grace_period, p)
            for sup in self.supervisors
            for pool in sup.pools
            for p in pool.processes
        ]
        for _, process in everyone:
            if process.proc.poll() is None:
                process.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + max((grace for grace, _ in everyone), default=0)
        for _, process in everyone:
            try:
                process.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.proc.kill()
                process.proc.wait()
        for sup in self.supervisors:
            for pool in sup.pools:
                pool.processes.clear()
                pool.log.close()
        self._say("fairway up: every worker stopped")

    # -- the live table --------------------------------------------------------------------------

    def _say(self, line: str) -> None:
        if not self.quiet:
            print(line, file=self.out, flush=True)

    def table(self) -> str:
        return self._tables()[0]

    def _tables(self) -> tuple[str, str]:
        """The live table, and the same with the OLDEST column blank: what tells a change from time
        passing. One read of Redis for both."""
        lines: list[str] = []
        keys: list[str] = []  # the lines as compared: the same, but for the queue rows' ages

        def both(line: str) -> None:
            lines.append(line)
            keys.append(line)

        # the runtime figures are kept per minute: the last RATE_WINDOW_MIN - 1 whole ones and this one
        covered_min = RATE_WINDOW_MIN - 1 + (time.time() % 60) / 60
        for sup in self.supervisors:
            spec = sup.spec
            processes: dict[str, int] = {}
            for pool in sup.pools:
                for name in pool.pool.served:
                    processes[name] = processes.get(name, 0) + len(pool.processes)
            both(f"supervisor {sup.name} (balance {spec.balance}) on {redacted(self.redis_url)}")
            both(
                f"  {'QUEUE':<20} {'READY':>7} {'RESERVED':>8} {'FAILED':>6} {'JOBS/MIN':>8} {'AVG RUN':>8} "
                f"{'PROCS':>5} {'PAUSED':>6} {'OLDEST':>8}"
            )
            names = [*spec.queues, *([served_name_of_group(spec.tenants.queue_prefix)] if spec.tenants else [])]
            try:
                runs = sup.inspector.runs(names, RATE_WINDOW_MIN)
                for s in sup.inspector.stats(names) if names else []:
                    run = runs[s.queue]
                    row = (
                        f"  {s.queue:<20} {s.ready:>7} {s.reserved:>8} {s.failed:>6} {run.jobs / covered_min:>8.1f} "
                        f"{duration(None if run.average_ms is None else run.average_ms / 1000):>8} "
                        f"{processes.get(s.queue, 0):>5} {'yes' if s.paused else 'no':>6} "
                    )
                    lines.append(f"{row}{duration(s.oldest_age_s):>8}")
                    keys.append(row)
                if spec.tenants is not None:
                    figures = sup.inspector.tenant_figures(spec.tenants.queue_prefix)
                    waiting = sum(f.waiting for f in figures)
                    tenants = sum(1 for f in figures if f.waiting or f.in_flight)
                    worst = max((f.p99_wait_ms for f in figures if f.p99_wait_ms is not None), default=None)
                    quarantined = sum(1 for f in figures if f.quarantined)
                    paused = sum(1 for f in figures if f.paused)
                    both(
                        f"  tenants {spec.tenants.queue_prefix}*: {waiting} jobs waiting across {tenants} tenants, "
                        f"{quarantined} quarantined, {paused} paused, worst p99 wait "
                        f"{duration(None if worst is None else worst / 1000)}"
                    )
            except CONNECTION_ERRORS as exc:
                both(f"  Redis unreachable: {exc}")
            restarts = sum(p.restarts for p in sup.pools)
            if restarts:
                both(f"  crashed workers restarted: {restarts}")
        both(f"  (JOBS/MIN and AVG RUN over the last {RATE_WINDOW_MIN} min)")
        return "\n".join(lines), "\n".join(keys)

    def _render(self) -> None:
        """A screen redrawn every tick on a terminal; otherwise a log: a timestamped table at most every
        LOG_EVERY_S, and only when something in it changed."""
        if self.out.isatty():
            self.out.write("\x1b[H\x1b[J" + self.table() + "\n")
            self.out.flush()
            return
        if time.monotonic() - self._last_render < LOG_EVERY_S:
            return
        # What counts as a change: every figure but the oldest job's age, which grows by itself.
        text, key = self._tables()
        self._last_render = time.monotonic()
        if key == self._last_table:
            return
        self._last_table = key
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.out.write(f"--- {stamp}\n{text}\n")
        self.out.flush()

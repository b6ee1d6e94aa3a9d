"""The operator's Prometheus metrics: what each pass already reads from Redis, per supervisor.

Per queue: depth, reserved, delayed, failed, oldest age, paused, processes. Per tenant: only the top
`spec.tenants.metricsTopN` by waiting jobs and by p99 wait (their union), so 10,000 tenants never
become 10,000 series; the group's totals are exported whole. Plus reconcile passes, errors and
latency. A supervisor that is deleted leaves the exported set (`forget`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from fairway.queue.access.figures import TenantFigures
from fairway.resource.status import QueueStatus

Key = tuple[str, str]  # (namespace, supervisor)

QUEUE_GAUGES = (
    ("fairway_queue_ready_jobs", "Jobs ready to run", lambda q: q.depth),
    ("fairway_queue_reserved_jobs", "Jobs reserved by workers (running)", lambda q: q.reserved),
    ("fairway_queue_delayed_jobs", "Jobs scheduled for later (delays and retry backoffs)", lambda q: q.delayed),
    ("fairway_queue_failed_jobs", "Jobs in the failed store", lambda q: q.failed),
    ("fairway_queue_paused", "1 while the queue is paused", lambda q: float(q.paused)),
    ("fairway_queue_processes", "Worker processes serving the queue", lambda q: q.processes),
)
TENANT_GAUGES = (
    ("fairway_tenant_waiting_jobs", "A tenant's jobs waiting", lambda f: f.waiting),
    ("fairway_tenant_in_flight_jobs", "A tenant's jobs running now", lambda f: f.in_flight),
    (
        "fairway_tenant_failure_ratio",
        "A tenant's failed attempts over its attempts, last 5 minutes",
        lambda f: f.failure_rate,
    ),
    ("fairway_tenant_quarantined", "1 while the tenant is in the slow lane", lambda f: float(f.quarantined)),
    (
        "fairway_tenant_quarantined_slow",
        "1 while the tenant is in the slow lane for its share of the run time (not its failures)",
        lambda f: float(f.quarantined and f.quarantine_reason == "slow"),
    ),
    ("fairway_tenant_weight", "The tenant's weight in effect (turns among tenants with work)", lambda f: f.weight),
    (
        "fairway_tenant_max_in_flight",
        "The tenant's in-flight cap in effect (0 = none): compare with fairway_tenant_in_flight_jobs",
        lambda f: f.max_in_flight or 0,
    ),
    ("fairway_tenant_rate", "The tenant's rate in effect, jobs per second (0 = none)", lambda f: f.rate or 0.0),
    ("fairway_tenant_capped", "Times the tenant's turn was skipped at its in-flight cap", lambda f: f.capped),
    ("fairway_tenant_throttled", "Times the tenant's turn was skipped for want of a rate token", lambda f: f.throttled),
)


@dataclass(frozen=True)
class Snapshot:
    queues: tuple[QueueStatus, ...]
    tenants: tuple[TenantFigures, ...] | None  # the exported (top) tenants; None without a tenant group
    tenants_total: int
    tenants_waiting: int


def top_tenants(figures: Sequence[TenantFigures], n: int) -> list[TenantFigures]:
    """The union of the top n by waiting jobs and the top n by p99 wait, worst first, ties by id."""
    by_waiting = sorted(figures, key=lambda f: (-f.waiting, f.tenant))[:n]
    by_p99 = sorted(figures, key=lambda f: (-(f.p99_wait_ms or 0.0), f.tenant))[:n]
    chosen = {f.tenant: f for f in (*by_waiting, *by_p99)}
    return sorted(chosen.values(), key=lambda f: f.tenant)


class OperatorMetrics(Collector):
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._snapshots: dict[Key, Snapshot] = {}
        self._lock = threading.Lock()
        self.passes = Counter(
            "fairway_reconcile_passes",
            "Reconcile passes, by kind: full, observe, or settled (a supervisor's event found nothing to write)",
            ["kind"],
            registry=self.registry,
        )
        self.errors = Counter(
            "fairway_reconcile_errors",
            "Passes that met an error, by source (kubernetes or redis)",
            ["source"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "fairway_reconcile_duration_seconds",
            "Time one reconcile pass took",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=self.registry,
        )
        self.registry.register(self)

    def observe(
        self, key: Key, queues: Sequence[QueueStatus], figures: Sequence[TenantFigures] | None, top_n: int
    ) -> None:
        tenants = None if figures is None else tuple(top_tenants(figures, top_n))
        total = 0 if figures is None else sum(1 for f in figures if f.waiting or f.in_flight)
        waiting = 0 if figures is None else sum(f.waiting for f in figures)
        with self._lock:
            self._snapshots[key] = Snapshot(tuple(queues), tenants, total, waiting)

    def forget(self, key: Key) -> None:
        with self._lock:
            self._snapshots.pop(key, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            snapshots = dict(self._snapshots)
        labels = ["namespace", "supervisor", "queue"]
        for name, text, read in QUEUE_GAUGES:
            family = GaugeMetricFamily(name, text, labels=labels)
            for (namespace, supervisor), snap in snapshots.items():
                for q in snap.queues:
                    family.add_metric([namespace, supervisor, q.name], read(q))
            yield family
        oldest = GaugeMetricFamily("fairway_queue_oldest_job_age_seconds", "Age of the oldest ready job", labels=labels)
        for (namespace, supervisor), snap in snapshots.items():
            for q in snap.queues:
                if q.oldest_age_seconds is not None:
                    oldest.add_metric([namespace, supervisor, q.name], q.oldest_age_seconds)
        yield oldest
        group = ["namespace", "supervisor"]
        active = GaugeMetricFamily("fairway_tenants_active", "Tenants with jobs waiting or running", labels=group)
        waiting = GaugeMetricFamily("fairway_tenants_waiting_jobs", "Jobs waiting across all tenants", labels=group)
        for (namespace, supervisor), snap in snapshots.items():
            if snap.tenants is not None:
                active.add_metric([namespace, supervisor], snap.tenants_total)
                waiting.add_metric([namespace, supervisor], snap.tenants_waiting)
        yield active
        yield waiting
        tenant_labels = ["namespace", "supervisor", "tenant"]
        for name, text, read_tenant in TENANT_GAUGES:
            family = GaugeMetricFamily(name, text, labels=tenant_labels)
            for (namespace, supervisor), snap in snapshots.items():
                for f in snap.tenants or ():
                    family.add_metric([namespace, supervisor, f.tenant], read_tenant(f))
            yield family
        for quantile, name in ((0.5, "p50"), (0.99, "p99")):
            family = GaugeMetricFamily(
                f"fairway_tenant_wait_{name}_seconds", f"A tenant's {name} wait, last 5 minutes", labels=tenant_labels
            )
            for (namespace, supervisor), snap in snapshots.items():
                for f in snap.tenants or ():
                    value = f.p50_wait_ms if quantile == 0.5 else f.p99_wait_ms
                    if value is not None:
                        family.add_metric([namespace, supervisor, f.tenant], value / 1000)
            yield family

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        start_http_server(port, addr=addr, registry=self.registry)

"""A worker's Prometheus metrics: counted in plain Python on the hot path, turned into metric
families only when scraped.

prometheus_client's own Counter and Histogram take a lock per update (about 1-2 us each, three per
job); a job here costs tens of microseconds, so the worker counts into dicts and lists (no lock: one
thread writes, the GIL keeps each update whole) and a custom collector reads copies at scrape time.
Label values are bounded: `queue` is a served name from the worker's settings, `handler` a registered
handler's name (anything else is "unregistered"), `outcome` one of a few words.
"""

from __future__ import annotations

import bisect
import logging
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger("fairway.worker")

RUN_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
WAIT_BUCKETS_S = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
UNREGISTERED = "unregistered"


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)  # one per bound, then +Inf; not cumulative
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        running, out = 0, list[tuple[str, float]]()
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


class SlotGauge(Protocol):
    """What the gauges read at scrape time (the worker's `Slots`)."""

    @property
    def running(self) -> int: ...

    @property
    def free(self) -> int: ...


class WorkerMetrics(Collector):
    def __init__(self, handlers: Iterable[str], slots: SlotGauge) -> None:
        self.handlers = set(handlers)
        self.slots = slots
        self.finished: dict[tuple[str, str, str], int] = {}
        self.run: dict[str, Histogram] = {}
        self.wait: dict[str, Histogram] = {}
        self.round_trips = 0
        self.reserved = 0
        self.redis_errors = 0
        self.recycles: dict[str, int] = {}

    # -- counting (the worker's thread) ----------------------------------------------------------

    def job_finished(self, queue: str, handler: str, outcome: str, run_s: float, wait_s: float | None) -> None:
        key = (queue, handler if handler in self.handlers else UNREGISTERED, outcome)
        finished = self.finished
        finished[key] = finished.get(key, 0) + 1
        try:
            run = self.run[queue]
        except KeyError:
            run = self.run[queue] = Histogram(RUN_BUCKETS_S)
        run.counts[bisect_left(RUN_BUCKETS_S, run_s)] += 1
        run.total += run_s
        if wait_s is not None:
            try:
                wait = self.wait[queue]
            except KeyError:
                wait = self.wait[queue] = Histogram(WAIT_BUCKETS_S)
            wait.observe(wait_s if wait_s > 0 else 0.0)

    def reserve_round_trip(self, jobs: int) -> None:
        self.round_trips += 1
        self.reserved += jobs

    def redis_error(self) -> None:
        self.redis_errors += 1

    def recycled(self, reason: str) -> None:
        self.recycles[reason] = self.recycles.get(reason, 0) + 1

    # -- scraping (the HTTP server's thread) -----------------------------------------------------

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        finished = CounterMetricFamily(
            "fairway_jobs_finished",
            "Jobs finished, by queue, handler and outcome",
            labels=["queue", "handler", "outcome"],
        )
        for (queue, handler, outcome), n in self.finished.copy().items():
            finished.add_metric([queue, handler, outcome], n)
        yield finished
        for name, text, histograms in (
            ("fairway_job_run_seconds", "Time a handler ran, by queue", self.run),
            (
                "fairway_job_wait_seconds",
                "Wait for a slot: from when the job became ready (enqueue, due, backoff over) to start",
                self.wait,
            ),
        ):
            family = HistogramMetricFamily(name, text, labels=["queue"])
            for queue, histogram in histograms.copy().items():
                family.add_metric([queue], histogram.buckets(), histogram.total)
            yield family
        yield GaugeMetricFamily("fairway_jobs_in_flight", "Jobs this worker is running now", value=self.slots.running)
        yield GaugeMetricFamily("fairway_free_slots", "Job slots free in this worker", value=self.slots.free)
        yield CounterMetricFamily(
            "fairway_reserve_round_trips",
            "Reserve calls to Redis (each acknowledges and reserves a batch)",
            value=self.round_trips,
        )
        yield CounterMetricFamily(
            "fairway_reserved_jobs",
            "Jobs reserved; divided by round trips, the jobs per round trip",
            value=self.reserved,
        )
        yield CounterMetricFamily(
            "fairway_redis_errors", "Redis connection errors the worker rode out", value=self.redis_errors
        )
        recycles = CounterMetricFamily(
            "fairway_recycles", "Times this process recycled itself, by reason", labels=["reason"]
        )
        for reason, n in self.recycles.copy().items():
            recycles.add_metric([reason], n)
        yield recycles


def serve(metrics: Collector, port: int, addr: str = "0.0.0.0") -> bool:
    """Expose /metrics on `port` in a daemon thread; False (logged) when the port cannot be bound, so a
    clash never stops a worker from working."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(metrics)
    try:
        start_http_server(port, addr=addr, registry=registry)
    except OSError as exc:
        log.warning("metrics not served: cannot listen on port %d (%s)", port, exc.strerror or exc)
        return False
    log.info("metrics on http://%s:%d/metrics", addr, port)
    return True

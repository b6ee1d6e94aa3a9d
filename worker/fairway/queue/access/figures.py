"""Per-tenant figures from fixed log-scale wait-time buckets (pure: no Redis, no clock).

A wait of w ms falls in bucket floor(4 * log2(w + 1)): four buckets per doubling, so a bucket is
under 19 % wide and a percentile interpolated inside its bucket is off by less than that. Buckets are
counted per tenant and minute in Redis (incremented in the acknowledging call) and summed over the
window when read, so memory per tenant is bounded by minutes x occupied buckets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fairway.queue.protocol.job import JobError, decode

TENANT_WINDOW_S = 300  # per-tenant figures summarise the last 5 minutes unless asked otherwise


@dataclass(frozen=True)
class QueueStats:
    queue: str
    ready: int
    reserved: int
    delayed: int
    failed: int
    paused: bool
    oldest_age_s: float | None
    due: int = 0  # delayed jobs whose time has come (housekeeping moves them to ready within a second)


@dataclass
class RunTally:
    """Jobs a served name finished in one housekeeping tick: their run time and wait buckets."""

    total_ms: float = 0.0
    jobs: int = 0
    waits: dict[int, int] = field(default_factory=dict)

    def add(self, run_ms: float, wait_bucket: int) -> None:
        self.total_ms += run_ms
        self.jobs += 1
        if wait_bucket >= 0:
            self.waits[wait_bucket] = self.waits.get(wait_bucket, 0) + 1


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile of exact values (0 < q <= 1): for job logs, demos and benchmarks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def wait_bucket(wait_ms: float) -> int:
    return int(4 * math.log2(max(0.0, wait_ms) + 1))


def bucket_upper_ms(bucket: int) -> float:
    return float(2 ** ((bucket + 1) / 4) - 1)


def bucket_lower_ms(bucket: int) -> float:
    return float(2 ** (bucket / 4) - 1)


def quantile_ms(histogram: Mapping[int, int], q: float) -> float | None:
    """The q-quantile (0 < q <= 1) of a bucket histogram, interpolated linearly inside the bucket it
    falls in (as Prometheus's histogram_quantile does): off by at most that bucket's width, under 19 %
    of the value. None if empty."""
    total = sum(histogram.values())
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for bucket in sorted(histogram):
        count = histogram[bucket]
        if count > 0 and seen + count >= rank:
            lower, upper = bucket_lower_ms(bucket), bucket_upper_ms(bucket)
            return lower + (upper - lower) * max(0.0, rank - seen) / count
        seen += count
    return bucket_upper_ms(max(histogram))


def timestamp(ms_since_epoch: int) -> str:
    """One way to print a moment in every table (failed list, dashboard): UTC, to the second."""
    return datetime.fromtimestamp(ms_since_epoch / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def duration(seconds: float | None) -> str:
    """One way to print a duration in every table (queues, tenants, up): 850ms, 12.3s, 4m05s, 2h03m;
    three significant figures at most, since the figures behind them are no more precise."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes}m{rest:02d}s"
    hours, rest = divmod(round(seconds) // 60, 60)
    return f"{hours}h{rest:02d}m"


@dataclass
class TenantFigures:
    tenant: str
    waiting: int = 0
    in_flight: int = 0
    completed: int = 0
    failed: int = 0
    quarantined: bool = False
    paused: bool = False
    weight: int = 1  # the settings in effect (docs/tenants.md, "Tenant controls")
    max_in_flight: int | None = None
    rate: float | None = None
    capped: int = 0  # times skipped at its in-flight cap
    throttled: int = 0  # times skipped for want of a rate token
    quarantine_reason: str | None = None  # "failures" or "slow" while quarantined
    histogram: dict[int, int] = field(default_factory=dict)
    recent_p99_ms: list[float | None] = field(default_factory=list)  # per minute of the window, oldest first

    @property
    def failure_rate(self) -> float:
        attempts = self.completed + self.failed
        return self.failed / attempts if attempts else 0.0

    @property
    def p50_wait_ms(self) -> float | None:
        return quantile_ms(self.histogram, 0.50)

    @property
    def p99_wait_ms(self) -> float | None:
        return quantile_ms(self.histogram, 0.99)

    def as_dict(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "waiting": self.waiting,
            "in_flight": self.in_flight,
            "completed": self.completed,
            "failed": self.failed,
            "failure_rate": round(self.failure_rate, 4),
            "p50_wait_ms": self.p50_wait_ms,
            "p99_wait_ms": self.p99_wait_ms,
            "quarantined": self.quarantined,
            "quarantine_reason": self.quarantine_reason,
            "paused": self.paused,
            "weight": self.weight,
            "max_in_flight": self.max_in_flight,
            "rate": self.rate,
            "capped": self.capped,
            "throttled": self.throttled,
        }


def add_minute(figures: TenantFigures, minute: Mapping[bytes | str, bytes | str]) -> None:
    """Fold one stats:<tenant>:<minute> hash (c, f, w<k>) into the figures (minutes oldest first)."""
    this_minute: dict[int, int] = {}
    for raw_key, raw_value in minute.items():
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        value = int(raw_value)
        if key == "c":
            figures.completed += value
        elif key == "f":
            figures.failed += value
        elif key.startswith("w"):
            bucket = int(key[1:])
            this_minute[bucket] = value
            figures.histogram[bucket] = figures.histogram.get(bucket, 0) + value
    figures.recent_p99_ms.append(quantile_ms(this_minute, 0.99))


SORTS: dict[str, Callable[[TenantFigures], tuple[float, ...]]] = {
    "p99": lambda f: (-(f.p99_wait_ms or 0.0),),
    "failures": lambda f: (-f.failure_rate, -f.failed),
    "waiting": lambda f: (-f.waiting,),
}


def ranked(figures: Iterable[TenantFigures], sort: str, limit: int | None) -> list[TenantFigures]:
    """Worst first by `sort` (a key of SORTS, which the CLI offers as its choices), ties by tenant id."""
    try:
        key = SORTS[sort]
    except KeyError:
        raise ValueError(f"unknown sort {sort!r}: {', '.join(SORTS)}") from None
    rows = sorted(figures, key=lambda f: (*key(f), f.tenant))
    return rows[:limit] if limit else rows


@dataclass(frozen=True)
class FailedJob:
    served_name: str  # the queue, or the tenant group '@<queuePrefix>', whose failed store holds it
    id: str
    failed_at_ms: int
    handler: str  # from the document; "-" when it was malformed
    tenant: str | None
    record: dict[str, Any]  # payload, exception, message, traceback, attempts

    @classmethod
    def of(cls, served_name: str, job_id: str, failed_at_ms: int, record: dict[str, Any]) -> FailedJob:
        try:
            handler = decode(record["payload"].encode()).handler
        except (JobError, KeyError, AttributeError):
            handler = "-"
        return cls(served_name, job_id, failed_at_ms, handler, record.get("tenant"), record)


@dataclass(frozen=True)
class RunningJob:
    """A job some worker holds now (its lease in `leased`)."""

    served_name: str
    id: str
    handler: str
    tenant: str | None
    worker: str  # the holder's identity, `<pod or host>:<pid>`


@dataclass(frozen=True)
class FoundJob:
    """A job looked up by id, with the status its handle reads."""

    served: str
    id: str
    tenant: str | None
    status: str


@dataclass(frozen=True)
class BatchStatus:
    id: str
    served_name: str  # its queue, or '@<queuePrefix>' for a tenant's batch
    tenant: str | None
    total: int
    pending: int
    succeeded: int
    failed: int
    cancelled: int
    sealed: bool
    opened_at_ms: int | None
    done_at_ms: int | None

    @property
    def done(self) -> bool:
        return self.done_at_ms is not None

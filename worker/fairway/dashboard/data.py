"""What the dashboard's pages show, read from Redis (the only module here that does I/O).

The overview must stay fast with 10,000 tenants: it reads the tenant group as a whole (ring lengths,
set sizes, one pipelined LLEN per active tenant), never per-tenant figures; those are the tenants
page's, which reads them once and sorts and pages in memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fairway.queue.access.admin import Admin
from fairway.queue.access.batches import Batches
from fairway.queue.access.figures import (
    TENANT_WINDOW_S,
    BatchStatus,
    FailedJob,
    FoundJob,
    QueueStats,
    RunningJob,
    TenantFigures,
    ranked,
)
from fairway.queue.access.inspector import Inspector, Runs
from fairway.queue.access.producer import Producer
from fairway.queue.access.results import Handle, Where
from fairway.queue.access.tenant_settings import TenantSettingsStore
from fairway.queue.connection import RedisClient
from fairway.queue.protocol.job import now_ms
from fairway.queue.protocol.keys import TenantGroupKeys, family_keys, is_group_name

RATE_MINUTES = 5  # throughput and average run time: this minute and the four before


@dataclass(frozen=True)
class QueueRow:
    stats: QueueStats
    runs: Runs
    group: GroupSummary | None  # for a tenant group's row


@dataclass(frozen=True)
class GroupSummary:
    waiting: int  # tenants with jobs waiting for a slot now (both rings): 0 while every job starts at once
    recent: int  # tenants with any activity in the last 5 minutes: what the tenants page lists
    quarantined: int
    paused_tenants: int


@dataclass(frozen=True)
class Overview:
    rows: list[QueueRow]

    @property
    def jobs_per_minute(self) -> float:
        return sum(row.runs.jobs for row in self.rows) / RATE_MINUTES

    @property
    def failed(self) -> int:
        return sum(row.stats.failed for row in self.rows)

    @property
    def ready(self) -> int:
        return sum(row.stats.ready for row in self.rows)


class Board:
    """The dashboard's reads and writes over one Redis."""

    def __init__(self, client: RedisClient) -> None:
        self.client = client
        self.inspector = Inspector(client)
        self.admin = Admin(client)
        self.tenant_settings = TenantSettingsStore(client)

    def names(self) -> list[str]:
        return self.inspector.known_queues()

    def overview(self) -> Overview:
        names = self.names()
        stats = self.inspector.stats(names)
        runs = self.inspector.runs(names, RATE_MINUTES)
        groups = [n for n in names if is_group_name(n)]
        summaries: dict[str, GroupSummary] = {}
        if groups:
            since_ms = now_ms() - TENANT_WINDOW_S * 1000  # the tenants page's window, on the same clock
            with self.client.pipeline(transaction=False) as pipe:
                for name in groups:
                    g = family_keys(self.inspector.prefix, name)
                    assert isinstance(g, TenantGroupKeys)
                    pipe.llen(g.ring)
                    pipe.llen(g.qring)
                    pipe.scard(g.quarantined)
                    pipe.scard(g.paused_tenants)
                    pipe.zcount(g.seen, since_ms, "+inf")
                raw = pipe.execute()
            for index, name in enumerate(groups):
                ring, qring, quarantined, paused, recent = raw[index * 5 : index * 5 + 5]
                summaries[name] = GroupSummary(int(ring) + int(qring), int(recent), int(quarantined), int(paused))
        return Overview([QueueRow(s, runs[s.queue], summaries.get(s.queue)) for s in stats])

    def tenants(self, queue_prefix: str, sort: str, search: str, limit: int) -> tuple[list[TenantFigures], int]:
        """(the first `limit` tenants, worst first by `sort`, whose id contains `search`; how many matched)."""
        figures = self.inspector.tenant_figures(queue_prefix)
        if search:
            figures = [f for f in figures if search.lower() in f.tenant.lower()]
        return ranked(figures, sort, limit), len(figures)

    def failures(
        self, served: list[str], handler: str | None, tenant: str | None, limit: int | None
    ) -> list[FailedJob]:
        return self.inspector.failures(served, handler=handler, tenant=tenant, limit=limit)

    def running(self, served: list[str], limit: int) -> list[RunningJob]:
        """Up to `limit` jobs held by workers now, over `served` (one HSCAN page per name)."""
        found: list[RunningJob] = []
        for name in served:
            keys = family_keys(self.inspector.prefix, name)
            for field, value in self.client.hscan_iter(keys.leased, count=limit):
                if len(found) >= limit:
                    return found
                found.append(_running(name, field, value))
        return found

    def batches(self, limit: int) -> list[BatchStatus]:
        """The newest batches and their progress (docs/batches.md)."""
        return Batches(Producer(self.client, self.inspector.prefix)).listed(limit)

    def find(self, served: str, job_id: str, tenant: str | None) -> FoundJob:
        return FoundJob(served, job_id, tenant, self.handle(served, job_id, tenant).status())

    def handle(self, served: str, job_id: str, tenant: str | None) -> Handle:
        """A job by its id where it was enqueued: a queue, or a tenant of a group ('@<prefix>')."""
        if is_group_name(served) != (tenant is not None):
            raise ValueError("a tenant job names its group (@prefix) and its tenant; a queue's job names no tenant")
        return Handle(self.client, job_id, Where(family_keys(self.inspector.prefix, served), tenant))


def _running(served: str, field: bytes, value: bytes) -> RunningJob:
    """A `leased` entry: field `<job id>` (`<tenant>\t<job id>` in a group), value `<tag>\t<document>`."""
    key = field.decode(errors="replace")
    tenant, _, job_id = key.rpartition("\t")
    tag, _, document = value.partition(b"\t")
    try:
        handler = str(json.loads(document).get("handler", "?"))
    except (ValueError, AttributeError):
        handler = "?"
    worker = tag.decode(errors="replace").rsplit(":", 1)[0]  # `<worker>:<call>.<n>`
    return RunningJob(served, job_id, handler, tenant or None, worker)

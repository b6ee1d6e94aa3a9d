"""Writing jobs into Redis: one queue's documents, or one tenant's, ready now or after a delay."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fairway.queue import calls
from fairway.queue.connection import RedisClient, is_cluster
from fairway.queue.keys import DEFAULT_PREFIX, GlobalKeys, QueueKeys, TenantGroupKeys, is_group_name
from fairway.queue.scripts import Scripts

BATCH = 1000  # documents per call or transaction: short script runs, bounded request sizes


class Producer:
    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX, scripts: Scripts | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self.cluster = is_cluster(client)
        self.globals = GlobalKeys(prefix)
        self.scripts = scripts or Scripts(client)

    @property
    def active(self) -> str | None:
        """The active-set key where there is one (standalone Redis only)."""
        return None if self.cluster else self.globals.active

    def enqueue(self, queue: str, payload: bytes, delay_ms: int = 0) -> None:
        """One atomic step on a standalone Redis (the queue is registered in the same script): an error
        means nothing was written. On a cluster the registry lives in another slot, so it is written
        first: an error can leave the queue listed, never a job half-written."""
        if self.cluster:
            self.remember([queue])
        standalone = None if self.cluster else self.globals
        self.scripts.run(calls.enqueue(QueueKeys(self.prefix, queue), standalone, payload, delay_ms))

    def enqueue_many(self, queue: str, payloads: Sequence[bytes]) -> None:
        """Bulk enqueue: one transaction per batch (the registry in it on a standalone Redis), all or
        nothing per batch."""
        k = QueueKeys(self.prefix, queue)
        if self.cluster and payloads:
            self.remember([queue])
        for start in range(0, len(payloads), BATCH):
            part = payloads[start : start + BATCH]
            with self.client.pipeline(transaction=not self.cluster) as pipe:
                pipe.rpush(k.ready, *part)
                pipe.rpush(k.notify, *([b"1"] * len(part)))
                if not self.cluster:
                    pipe.sadd(self.globals.active, queue)
                    pipe.sadd(self.globals.queues, queue)
                pipe.execute()

    def enqueue_tenant(self, queue_prefix: str, tenant: str, payloads: Sequence[bytes], delay_ms: int = 0) -> None:
        """Tenant jobs: onto the tenant's list, the tenant onto the ring if it was idle; one call per batch."""
        g = TenantGroupKeys(self.prefix, queue_prefix)
        for start in range(0, len(payloads), BATCH):
            self.scripts.run(calls.enqueue_tenant(g, self.active, tenant, payloads[start : start + BATCH], delay_ms))

    def remember(self, queues: Iterable[str]) -> None:
        """Register queues for `fairway queues` (tenant groups are listed by `fairway tenants`)."""
        names = [q for q in queues if not is_group_name(q)]
        if names:
            self.client.sadd(self.globals.queues, *names)

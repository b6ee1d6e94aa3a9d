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
        self.scripts.run(calls.enqueue(QueueKeys(self.prefix, queue), self.active, payload, delay_ms))
        self.remember([queue])

    def enqueue_many(self, queue: str, payloads: Sequence[bytes]) -> None:
        """Bulk enqueue: one pipelined transaction per batch, all-or-nothing per batch."""
        k = QueueKeys(self.prefix, queue)
        for start in range(0, len(payloads), BATCH):
            part = payloads[start : start + BATCH]
            with self.client.pipeline(transaction=not self.cluster) as pipe:
                pipe.rpush(k.ready, *part)
                pipe.rpush(k.notify, *([b"1"] * len(part)))
                if self.active is not None:
                    pipe.sadd(self.active, queue)
                pipe.execute()
        self.remember([queue])

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

"""Writing jobs into Redis: one queue's documents, or one tenant's, ready now or after a delay."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import redis

from fairway.queue.connection import RedisClient, is_cluster
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import MAX_DOCUMENTS_PER_CALL as BATCH
from fairway.queue.protocol.job import REFUSALS, JobError
from fairway.queue.protocol.keys import DEFAULT_PREFIX, GlobalKeys, QueueKeys, TenantGroupKeys
from fairway.queue.protocol.scripts import Scripts


@contextmanager
def refusals_as_job_errors() -> Iterator[None]:
    """A script's refusal (docs/protocol.md; nothing was written) is the caller's bad input, not a
    Redis failure: raise it as a JobError with the script's code."""
    try:
        yield
    except redis.ResponseError as exc:
        code = str(exc).split(" ", 1)[0]
        if code in REFUSALS:
            raise JobError(str(exc), code=code) from None
        raise


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
        with refusals_as_job_errors():
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
        """Tenant jobs: onto the tenant's list, the tenant onto the ring if it was idle; one call per batch
        (the group registered in it on a standalone Redis, before it on a cluster)."""
        g = TenantGroupKeys(self.prefix, queue_prefix)
        if self.cluster and payloads:
            self.remember([g.name])
        standalone = None if self.cluster else self.globals
        for start in range(0, len(payloads), BATCH):
            with refusals_as_job_errors():
                self.scripts.run(calls.enqueue_tenant(g, standalone, tenant, payloads[start : start + BATCH], delay_ms))

    def remember(self, names: Iterable[str]) -> None:
        """Register served names (queues, tenant groups) for `fairway queues`."""
        names = list(names)
        if names:
            self.client.sadd(self.globals.queues, *names)

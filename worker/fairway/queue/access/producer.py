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


def holder_of(reply: object) -> str | None:
    """An enqueue script's reply for one document: a string is the id of the job holding its unique key
    (the document was not written); a number means it was written."""
    if isinstance(reply, bytes):
        return reply.decode()
    return reply if isinstance(reply, str) else None


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

    def enqueue(self, queue: str, payload: bytes, delay_ms: int = 0) -> str | None:
        """One atomic step on a standalone Redis (the queue is registered in the same script): an error
        means nothing was written. On a cluster the registry lives in another slot, so it is written
        first: an error can leave the queue listed, never a job half-written. Returns None, or for a
        unique job whose key another job holds, that job's id (nothing was written)."""
        if self.cluster:
            self.remember([queue])
        standalone = None if self.cluster else self.globals
        with refusals_as_job_errors():
            reply = self.scripts.run(calls.enqueue(QueueKeys(self.prefix, queue), standalone, payload, delay_ms))
        return holder_of(reply)

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

    def enqueue_tenant(
        self, queue_prefix: str, tenant: str, payloads: Sequence[bytes], delay_ms: int = 0
    ) -> list[str | None]:
        """Tenant jobs: onto the tenant's list, the tenant onto the ring if it was idle; one call per batch
        (the group registered in it on a standalone Redis, before it on a cluster). Returns, per
        payload, None, or for a unique job whose key another job holds, that job's id."""
        g = TenantGroupKeys(self.prefix, queue_prefix)
        if self.cluster and payloads:
            self.remember([g.name])
        standalone = None if self.cluster else self.globals
        holders: list[str | None] = []
        for start in range(0, len(payloads), BATCH):
            part = payloads[start : start + BATCH]
            with refusals_as_job_errors():
                reply = self.scripts.run(calls.enqueue_tenant(g, standalone, tenant, part, delay_ms))
            holders.extend(map(holder_of, reply) if isinstance(reply, list) else [None] * len(part))
        return holders

    def remember(self, names: Iterable[str]) -> None:
        """Register served names (queues, tenant groups) for `fairway queues`."""
        names = list(names)
        if names:
            self.client.sadd(self.globals.queues, *names)

"""Changing a queue's state on a person's (or the operator's) behalf: pausing, retrying and
forgetting failed jobs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from fairway.queue.connection import RedisClient, is_cluster
from fairway.queue.keys import DEFAULT_PREFIX, QueueKeys, TenantGroupKeys, family_keys
from fairway.queue.producer import Producer


class Admin:
    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.producer = Producer(client, prefix)

    def pause(self, queue: str) -> None:
        self.client.set(QueueKeys(self.prefix, queue).paused, b"1")
        self.producer.remember([queue])

    def resume(self, queue: str) -> None:
        self.client.delete(QueueKeys(self.prefix, queue).paused)

    def set_paused(self, queues: Sequence[str], paused: Iterable[str]) -> None:
        """Make exactly `paused` (a subset of `queues`) paused; what the operator pushes from the spec."""
        wanted = set(paused)
        with self.client.pipeline(transaction=False) as pipe:
            for queue in queues:
                key = QueueKeys(self.prefix, queue).paused
                if queue in wanted:
                    pipe.set(key, b"1")
                else:
                    pipe.delete(key)
            pipe.execute()

    def retry_failed(self, served_name: str, job_id: str) -> bool:
        """Put a failed job back on its queue with a fresh attempt count; False when there is no such job."""
        k = family_keys(self.prefix, served_name)
        raw = self.client.hget(k.failed, job_id)
        if raw is None:
            return False
        record = json.loads(raw)
        if isinstance(k, TenantGroupKeys):
            self.producer.enqueue_tenant(k.queue_prefix, record["tenant"], [record["payload"].encode()])
        else:
            self.producer.enqueue(served_name, record["payload"].encode())
        self.forget_failed(served_name, job_id)
        return True

    def forget_failed(self, served_name: str, job_id: str) -> bool:
        k = family_keys(self.prefix, served_name)
        with self.client.pipeline(transaction=not is_cluster(self.client)) as pipe:
            pipe.hdel(k.failed, job_id)
            pipe.zrem(k.failed_index, job_id)
            removed, _ = pipe.execute()
        return bool(removed)

"""Changing a queue's state on a person's (or the operator's) behalf: pausing, retrying and
forgetting failed jobs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fairway.queue.access.figures import FailedJob
from fairway.queue.access.producer import Producer
from fairway.queue.access.tenant_settings import TenantSettingsStore
from fairway.queue.connection import RedisClient, is_cluster
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import JobError, check_tenant_id
from fairway.queue.protocol.keys import DEFAULT_PREFIX, READY_FIELD, QueueKeys, TenantGroupKeys, family_keys
from fairway.resource.spec import QueueSupervisorSpec


@dataclass
class Settled:
    done: list[FailedJob] = field(default_factory=list)
    refused: list[tuple[FailedJob, str]] = field(default_factory=list)  # and why: kept in the failed store


class Admin:
    def __init__(self, client: RedisClient, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.producer = Producer(client, prefix)

    def pause(self, served_name: str) -> None:
        """Pause a queue, or a whole tenant group ('@<queuePrefix>'): workers take none of its jobs
        (they finish the ones they hold). Registered, so `fairway queues` shows it paused."""
        self.client.set(family_keys(self.prefix, served_name).paused, b"1")
        self.producer.remember([served_name])

    def resume(self, served_name: str) -> None:
        self.client.delete(family_keys(self.prefix, served_name).paused)

    def pause_tenant(self, queue_prefix: str, tenant: str) -> None:
        """One tenant of a group: it leaves the ring at its next turn; its jobs wait, others go on.
        JobError for a tenant id that could not be one (every caller, CLI or dashboard, gets the check)."""
        self.client.sadd(TenantGroupKeys(self.prefix, queue_prefix).paused_tenants, check_tenant_id(tenant))

    def continue_tenant(self, queue_prefix: str, tenant: str) -> int:
        """Serve a paused tenant again; its waiting jobs, or -1 when it was not paused."""
        check_tenant_id(tenant)
        g = TenantGroupKeys(self.prefix, queue_prefix)
        active = None if is_cluster(self.client) else self.producer.globals.active
        return int(self.producer.scripts.run(calls.continue_tenant(g, active, tenant)))

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

    def push_spec(self, spec: QueueSupervisorSpec) -> None:
        """What a supervisor's spec asks Redis to hold: its paused queues, its tenant group's defaults and
        overrides. The one copy the operator (on change, and every minute) and `fairway up` both call."""
        self.set_paused(spec.queues, spec.paused_queues)
        if spec.tenants is not None:
            tenants = spec.tenants
            TenantSettingsStore(self.client, self.prefix).configure(
                tenants.queue_prefix, tenants.defaults, tenants.overrides
            )

    def settle_failures(self, action: str, failures: Iterable[FailedJob]) -> Settled:
        """Retry or forget each failed job (`action`: "retry" or "forget"); a job that cannot be
        enqueued as it is (a malformed document, say) is refused and kept, the others go on."""
        settled = Settled()
        for failure in failures:
            try:
                if action == "retry":
                    acted = self.retry_failed(failure.served_name, failure.id)
                else:
                    acted = self.forget_failed(failure.served_name, failure.id)
            except JobError as exc:
                settled.refused.append((failure, str(exc)))
                continue
            if acted:
                settled.done.append(failure)
        return settled

    def retry_failed(self, served_name: str, job_id: str) -> bool:
        """Put a failed job back on its queue with a fresh attempt count; False when there is no such job."""
        k = family_keys(self.prefix, served_name)
        raw = self.client.hget(k.failed, job_id)
        if raw is None:
            return False
        record = json.loads(raw)
        # Ready again now, by hand: its next wait runs from here, not from its first enqueue (lib.lua's
        # mark_ready; written first, so the worker that takes it reads it).
        job_key = f"{record['tenant']}\t{job_id}" if isinstance(k, TenantGroupKeys) else job_id
        seconds, micros = self.client.time()
        self.client.hset(k.attempts, f"{job_key}{READY_FIELD}", seconds * 1000 + micros // 1000)
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

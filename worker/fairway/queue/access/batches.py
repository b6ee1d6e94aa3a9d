"""Batches (docs/batches.md): jobs enqueued together, and callback jobs once all of them have ended.

A batch's jobs share one queue or one tenant's queue, so its hash (`<family base>batch:<id>`) sits in
their slot: `batch.lua` adds jobs and seals the batch, and the settle scripts count each job that ends
for good (succeeded, failed after its tries, cancelled) in the same step as its settle. The call that
ends the last job of a sealed batch makes its callbacks due, exactly once, whoever runs it; a worker
killed after running the last job but before settling it leaves it leased, it runs again, and its
settle is the one that counts. Nothing polls.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.access.figures import BatchStatus
from fairway.queue.access.producer import Producer, refusals_as_job_errors
from fairway.queue.access.tracecontext import current_traceparent
from fairway.queue.connection import reply_text
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import MAX_DOCUMENTS_PER_CALL, Job, JobError, check_job_id, new_job
from fairway.queue.protocol.keys import QueueKeys, TenantGroupKeys

MAX_BATCH_JOBS = 100_000  # jobs one batch may hold (its hash stays a few counters whatever the size)
DEFAULT_BATCH_TTL_S = 86_400  # a finished batch's figures are kept this long
OPEN_BATCH_TTL_S = 86_400
MAX_TTL_S = 30 * 86_400  # a batch never sealed (its producer died) is forgotten after this long


@dataclass(frozen=True)
class Call:
    """A callback job: its handler, args and kwargs."""

    handler: str
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Destination:
    """Where a batch's or a chain's jobs go: one queue, or one tenant's queue in its group (one slot,
    so every script that counts them is atomic on a cluster too)."""

    producer: Producer
    queue: str  # the documents' queue (a tenant's: `<queuePrefix><tenant>`)
    tenant: str | None
    keys: QueueKeys | TenantGroupKeys
    max_payload_bytes: int
    ttl_s: float  # how long a finished batch's figures (and a chain's results) are kept

    @classmethod
    def of(
        cls, producer: Producer, queue: str, tenant: str | None, group_prefix: str, max_payload_bytes: int, ttl_s: float
    ) -> Destination:
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float) or not 1 <= ttl_s <= MAX_TTL_S:
            raise JobError(f"ttl {ttl_s!r} must be seconds from 1 to {MAX_TTL_S}", code="BAD_BATCH")
        keys = (
            TenantGroupKeys(producer.prefix, group_prefix) if tenant is not None else QueueKeys(producer.prefix, queue)
        )
        return cls(producer, queue, tenant, keys, max_payload_bytes, ttl_s)

    @property
    def served_name(self) -> str:
        return self.keys.name if isinstance(self.keys, TenantGroupKeys) else self.queue

    def jobs(
        self, handler: str, calls_: Iterable[Sequence[Any]], kwargs: Mapping[str, Any] | None, **options: Any
    ) -> list[Job]:
        """One job per argument tuple, carrying the current trace context."""
        trace = current_traceparent()
        return [
            new_job(handler, self.queue, list(a), dict(kwargs or {}), tenant=self.tenant, traceparent=trace, **options)
            for a in calls_
        ]


class Batch:
    """Add jobs with `enqueue`/`enqueue_many`, name callbacks with `on_complete`/`on_success`, then
    `seal()` (or leave the `with` block): the callbacks run once every job has ended."""

    def __init__(self, to: Destination) -> None:
        self.id = uuid.uuid4().hex
        self.to = to
        self.producer, self.queue, self.tenant, self.keys = to.producer, to.queue, to.tenant, to.keys
        self.ttl_ms = int(to.ttl_s * 1000)
        self.total = 0
        self.sealed = False
        self._callbacks: dict[str, bytes] = {}
        self._registered = False

    def enqueue(self, handler: str, *args: Any, kwargs: Mapping[str, Any] | None = None) -> str:
        (job_id,) = self.enqueue_many(handler, [args], kwargs=kwargs)
        return job_id

    def enqueue_many(
        self, handler: str, calls_: Iterable[Sequence[Any]], *, kwargs: Mapping[str, Any] | None = None
    ) -> list[str]:
        """One job per argument tuple, written with the batch's bookkeeping in one call per 1,000."""
        self._check_open()
        jobs = self.to.jobs(handler, calls_, kwargs)
        if self.total + len(jobs) > MAX_BATCH_JOBS:
            raise JobError(
                f"a batch holds at most {MAX_BATCH_JOBS:,} jobs; this one would hold {self.total + len(jobs):,}: "
                "split the work into several batches",
                code="BAD_BATCH",
            )
        payloads = [job.encode(self.to.max_payload_bytes) for job in jobs]
        self._register()
        standalone = None if self.producer.cluster else self.producer.globals
        open_ms = OPEN_BATCH_TTL_S * 1000
        for start in range(0, len(payloads), MAX_DOCUMENTS_PER_CALL):
            part = payloads[start : start + MAX_DOCUMENTS_PER_CALL]
            call = calls.batch_add(self.keys, standalone, self.id, self.tenant, self.queue, open_ms, part)
            with refusals_as_job_errors():
                self.total = int(self.producer.scripts.run(call))
        return [job.id for job in jobs]

    def on_complete(self, handler: str, *args: Any, kwargs: Mapping[str, Any] | None = None) -> Batch:
        """A job run once every job of the batch has ended, whatever each outcome."""
        return self._callback("on_complete", Call(handler, args, kwargs))

    def on_success(self, handler: str, *args: Any, kwargs: Mapping[str, Any] | None = None) -> Batch:
        """A job run once every job of the batch has succeeded (none if any failed or was cancelled)."""
        return self._callback("on_success", Call(handler, args, kwargs))

    def _callback(self, kind: str, call: Call) -> Batch:
        self._check_open()
        (job,) = self.to.jobs(call.handler, [call.args], call.kwargs)
        self._callbacks[kind] = job.encode(self.to.max_payload_bytes)
        return self

    def seal(self) -> str:
        """No more jobs: the callbacks run when the last job ends (at once if all have). The batch id."""
        self._check_open()
        if self.total == 0:
            raise JobError("a batch needs at least one job: add its jobs, then seal it", code="BAD_BATCH")
        call = calls.batch_seal(
            self.keys,
            self.id,
            self.tenant,
            self.queue,
            self.ttl_ms,
            self._callbacks.get("on_complete"),
            self._callbacks.get("on_success"),
        )
        with refusals_as_job_errors():
            self.producer.scripts.run(call)
        self.sealed = True
        return self.id

    def _check_open(self) -> None:
        if self.sealed:
            raise JobError(f"batch {self.id} is sealed: add jobs and callbacks before seal()", code="BAD_BATCH")

    def _register(self) -> None:
        """Listed for `fairway batches` (a separate write: on a cluster the list lives in another slot)."""
        if not self._registered:
            Batches(self.producer).remember(self.to.served_name, self.tenant, self.id)
            self._registered = True

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        if kind is None and not self.sealed:  # (an exception leaves it open: unsealed, it is forgotten)
            self.seal()


class Batches:
    """Reading batches back: one by id, or the listed ones."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer

    def remember(self, served: str, tenant: str | None, batch_id: str) -> None:
        """List a batch for `fairway batches` (a write of its own: on a cluster the list is in another slot)."""
        member = f"{served}\t{tenant or ''}\t{batch_id}"
        self.producer.client.zadd(self.producer.globals.batches, {member: int(time.time() * 1000)})

    def listed(self, limit: int = 100) -> list[BatchStatus]:
        """The newest `limit` batches still in Redis (entries of expired ones are dropped)."""
        client = self.producer.client
        found: list[BatchStatus] = []
        gone: list[str] = []
        for raw in client.zrevrange(self.producer.globals.batches, 0, limit * 2):
            member = raw.decode() if isinstance(raw, bytes) else str(raw)
            served, tenant, batch_id = member.split("\t")
            status = self.read(batch_id, served, tenant or None)
            if status is None:
                gone.append(member)
            elif len(found) < limit:
                found.append(status)
        if gone:
            client.zrem(self.producer.globals.batches, *gone)
        return found

    def find(self, batch_id: str) -> BatchStatus | None:
        check_job_id(batch_id)
        for raw in self.producer.client.zrevrange(self.producer.globals.batches, 0, -1):
            member = raw.decode() if isinstance(raw, bytes) else str(raw)
            served, tenant, listed_id = member.split("\t")
            if listed_id == batch_id:
                return self.read(batch_id, served, tenant or None)
        return None

    def read(self, batch_id: str, served: str, tenant: str | None) -> BatchStatus | None:
        keys: QueueKeys | TenantGroupKeys = (
            TenantGroupKeys(self.producer.prefix, served[1:])
            if served.startswith("@")
            else QueueKeys(self.producer.prefix, served)
        )
        raw = self.producer.client.hgetall(keys.batch(batch_id))
        if not raw:
            return None
        fields = {reply_text(k): reply_text(v) for k, v in raw.items()}

        def count(name: str) -> int:
            return int(fields.get(name, "0"))

        return BatchStatus(
            batch_id,
            served,
            tenant,
            count("total"),
            count("pending"),
            count("succeeded"),
            count("failed"),
            count("cancelled"),
            fields.get("sealed") == "1",
            int(fields["opened_at"]) if "opened_at" in fields else None,
            int(fields["done_at"]) if "done_at" in fields else None,
        )

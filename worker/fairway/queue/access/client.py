"""The producer API: `fairway.Client(redis_url).enqueue("handler", *args, queue=...)`."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fairway.queue.access.batches import DEFAULT_BATCH_TTL_S, Batch, Batches, Call, Destination
from fairway.queue.access.chains import Chain, ChainStatus, chain_status
from fairway.queue.access.figures import BatchStatus
from fairway.queue.access.producer import Producer
from fairway.queue.access.progress import ProgressBoard
from fairway.queue.access.results import Handle, Where
from fairway.queue.access.tenant_settings import TenantSettingsStore, TenantView, checked_settings
from fairway.queue.access.tracecontext import current_traceparent
from fairway.queue.connection import RedisClient, connect, redis_url_from_env
from fairway.queue.protocol.declared import Declared, declared_by
from fairway.queue.protocol.job import (
    MAX_DOCUMENT_BYTES,
    OPTION_NAMES,
    JobError,
    check_delay_ms,
    check_job_id,
    check_tenant_id,
    new_job,
)
from fairway.queue.protocol.keys import DEFAULT_PREFIX, QueueKeys, TenantGroupKeys, served_name_of_group
from fairway.resource.names import DEFAULT_TENANT_PREFIX, QUEUE_NAME, QUEUE_NAME_RULE


def check_queue(queue: str) -> str:
    if not isinstance(queue, str) or not QUEUE_NAME.fullmatch(queue):
        raise JobError(f"queue {queue!r} is invalid: {QUEUE_NAME_RULE}", code="BAD_QUEUE")
    return queue


# The keywords `Client.enqueue` takes as options; everything a handler takes by name goes in `kwargs=`.
ENQUEUE_OPTIONS = ("kwargs", "queue", "tenant", "delay", *OPTION_NAMES, "job_id")


def refuse_unknown_options(call: str, unknown: Mapping[str, Any]) -> None:
    """A keyword that is no option is refused, never passed to the handler: a misspelt `delay_s` would
    otherwise run the job at once, and a handler's own `timeout` would become the job's."""
    if not unknown:
        return
    name = sorted(unknown)[0]
    close = difflib.get_close_matches(name, ENQUEUE_OPTIONS, n=1)
    hint = f"did you mean {close[0]}=? " if close else ""
    raise JobError(
        f"{call}() has no option {name!r}: {hint}the options are {', '.join(ENQUEUE_OPTIONS)}; the handler's "
        f"keyword arguments go in kwargs={{{name!r}: ...}}",
        code="BAD_OPTION",
    )


def check_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The handler's keyword arguments: a mapping of string names (any name: they are not options)."""
    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping) or not all(isinstance(name, str) for name in kwargs):
        raise JobError(f"kwargs must be a dict of str names to values; got {kwargs!r:.80}", code="BAD_VALUE")
    return dict(kwargs)


class Enqueued(str):
    """What `Client.enqueue` returns: the job's id (a str) and a handle on it: `status()`,
    `result(timeout=)`, `await result_async(timeout=)` (docs/results.md). `duplicate` is True when the
    job was not enqueued because a waiting or running job holds its unique key; the id is that job's."""

    duplicate: bool
    handle: Handle

    def __new__(cls, job_id: str, handle: Handle, duplicate: bool = False) -> Enqueued:
        made = super().__new__(cls, job_id)
        made.duplicate, made.handle = duplicate, handle
        return made

    def status(self) -> str:
        return self.handle.status()

    def cancel(self) -> str:
        return self.handle.cancel()

    def result(self, timeout: float | None = None) -> Any:
        return self.handle.result(timeout)

    async def result_async(self, timeout: float | None = None) -> Any:
        return await self.handle.result_async(timeout)


# A handler as producers name it: its registered name, or the function `@fairway.job` registered.
HandlerRef = str | Callable[..., Any]


def declaration_of(handler: HandlerRef) -> Declared:
    """What `@fairway.job(...)` declared for a registered function; nothing declared for a name."""
    declared = None if isinstance(handler, str) else declared_by(handler)
    return declared or Declared("")


def handler_and_queue(handler: HandlerRef, queue: str | None, tenant: str | None) -> tuple[str, str | None]:
    """The handler's name and the queue to use: a function `@fairway.job` registered brings its name
    and, when the call names no queue or tenant, its declared `queue`."""
    if isinstance(handler, str):
        return handler, queue
    declared = declared_by(handler)
    if declared is None:
        raise JobError(
            f"handler {handler!r:.80} is neither a handler name nor a function registered with @fairway.job; "
            "pass its name, e.g. enqueue('emails.send', ...)",
            code="BAD_HANDLER",
        )
    return declared.name, queue if queue is not None or tenant is not None else declared.queue


class BatchIds(list[str]):
    """The ids of a batch's jobs, and the batch's id."""

    def __init__(self, ids: list[str], batch_id: str) -> None:
        super().__init__(ids)
        self.batch_id = batch_id


class Client:
    def __init__(
        self,
        redis_url: str | None = None,
        *,
        client: RedisClient | None = None,
        cluster: bool | None = None,
        prefix: str = DEFAULT_PREFIX,
        tenant_prefix: str = DEFAULT_TENANT_PREFIX,
        max_payload_bytes: int = MAX_DOCUMENT_BYTES,
    ) -> None:
        if isinstance(max_payload_bytes, bool) or not 1 <= max_payload_bytes <= MAX_DOCUMENT_BYTES:
            raise ValueError(
                f"max_payload_bytes must be from 1 to {MAX_DOCUMENT_BYTES} (the protocol's limit, which the "
                f"enqueue scripts and the workers enforce too); got {max_payload_bytes!r}"
            )
        if client is None:
            client = connect(redis_url or redis_url_from_env(), cluster)
        self.redis = client
        self.producer = Producer(client, prefix)
        self.tenant_prefix = tenant_prefix
        self.max_payload_bytes = max_payload_bytes

    def _queue_for(self, queue: str | None, tenant: str | None) -> str:
        """The document's `queue`: a queue name, or for a tenant job `<tenant prefix><tenant id>` (up to
        32 + 64 characters: a tenant's list, not a queue name, so the queue-name rule does not apply)."""
        if tenant is not None:
            return f"{self.tenant_prefix}{check_tenant_id(tenant)}"
        return check_queue(queue or "default")

    def enqueue(
        self,
        handler: HandlerRef,
        *args: Any,
        kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        tenant: str | None = None,
        delay: float | None = None,
        max_tries: int | None = None,
        timeout: float | None = None,
        unique_key: str | None = None,
        unique_for: float | None = None,
        result_ttl: float | None = None,
        traceparent: str | None = None,
        job_id: str | None = None,
        **unknown: Any,
    ) -> Enqueued:
        """Enqueue one job; returns its id (`Enqueued`, a str). Positional arguments after the handler are its args; its
        keyword arguments go in `kwargs={...}` (any names, `queue` or `timeout` included), so they never
        mix with the options: `delay` and `timeout` in seconds, `job_id` to replace the generated id
        (after a timeout, outcome unknown, enqueue again with the same id so handlers can dedupe).
        Any other keyword is refused (JobError BAD_OPTION), never passed on to the handler. `handler` is
        a name, or the function itself when `@fairway.job` registered it (its `queue=` and `unique_for=`
        are the defaults). A unique job (`unique_key`, or `unique_for` seconds: keyed by handler and
        arguments) whose key a waiting or running job holds is not enqueued: that job's id is returned,
        with `duplicate` True (docs/unique.md)."""
        refuse_unknown_options("enqueue", unknown)
        declared = declaration_of(handler)
        if unique_for is None and unique_key is None:
            unique_for = declared.unique_for
        keeps_known = result_ttl is not None or not isinstance(handler, str)  # else a worker may declare it
        result_ttl = result_ttl if result_ttl is not None else declared.result_ttl
        handler, queue = handler_and_queue(handler, queue, tenant)
        target = self._queue_for(queue, tenant)
        job = new_job(
            handler,
            target,
            list(args),
            check_kwargs(kwargs),
            tenant=tenant,
            delay_s=delay,
            max_tries=max_tries,
            timeout=timeout,
            unique_key=unique_key,
            unique_for=unique_for,
            result_ttl=result_ttl,
            traceparent=traceparent or current_traceparent(),
            job_id=job_id,
        )
        payload, delay_ms = job.encode(self.max_payload_bytes), check_delay_ms(delay)
        if tenant is not None:
            [holder] = self.producer.enqueue_tenant(self.tenant_prefix, tenant, [payload], delay_ms)
        else:
            holder = self.producer.enqueue(target, payload, delay_ms)
        if holder is not None:  # another job's: its document and options are not this call's
            return Enqueued(holder, Handle(self.redis, holder, self._where(target, tenant)), duplicate=True)
        # The document lets status() find a waiting job; kept only for jobs that keep a result, so a
        # producer holding a million returned ids does not hold a million documents.
        document = payload if job.result_ttl is not None else None
        where = self._where(target, tenant, document, job.result_ttl, keeps_known)
        return Enqueued(job.id, Handle(self.redis, job.id, where))

    def job(self, job_id: str, *, queue: str | None = None, tenant: str | None = None) -> Enqueued:
        """A handle on a job enqueued elsewhere (another process, another language): name its queue or
        tenant. Without its document it cannot tell waiting from finished-without-a-result: `status()`
        says `unknown` for both, and `result()` waits."""
        check_job_id(job_id)
        if tenant is not None:
            check_tenant_id(tenant)
        target = self._queue_for(queue, tenant)
        return Enqueued(job_id, Handle(self.redis, job_id, self._where(target, tenant)))

    def cancel(self, job_id: str, *, queue: str | None = None, tenant: str | None = None) -> str:
        """Cancel a job (docs/cancel.md); name its queue or tenant. `cancelled` (it was waiting or
        delayed: it never starts), `running` (its worker tells it within seconds), `finished` or
        `unknown`, each said, never raised."""
        return self.job(job_id, queue=queue, tenant=tenant).cancel()

    def _where(
        self,
        target: str,
        tenant: str | None,
        document: bytes | None = None,
        result_ttl_s: float | None = None,
        keeps_known: bool = False,
    ) -> Where:
        prefix = self.producer.prefix
        keys = TenantGroupKeys(prefix, self.tenant_prefix) if tenant is not None else QueueKeys(prefix, target)
        return Where(keys, tenant, document, result_ttl_s, keeps_known)

    def enqueue_many(
        self,
        handler: HandlerRef,
        calls: Iterable[Sequence[Any]],
        *,
        kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        tenant: str | None = None,
        **unknown: Any,
    ) -> list[str]:
        """Enqueue one job per argument tuple in `calls`, pipelined; returns the ids in order (an empty
        `calls` writes nothing and returns []). `kwargs`, when given, goes to every job."""
        refuse_unknown_options("enqueue_many", unknown)
        if declaration_of(handler).unique_for is not None:
            raise JobError(
                f"{getattr(handler, '__name__', handler)!r} declares unique_for, and enqueue_many writes in bulk "
                "without checking keys: enqueue its jobs one by one with enqueue()",
                code="BAD_OPTION",
            )
        handler, queue = handler_and_queue(handler, queue, tenant)
        target = self._queue_for(queue, tenant)
        shared = check_kwargs(kwargs)
        trace = current_traceparent()
        jobs = [new_job(handler, target, list(call), shared, tenant=tenant, traceparent=trace) for call in calls]
        payloads = [job.encode(self.max_payload_bytes) for job in jobs]
        if payloads and tenant is not None:
            self.producer.enqueue_tenant(self.tenant_prefix, tenant, payloads)
        elif payloads:
            self.producer.enqueue_many(target, payloads)
        return [job.id for job in jobs]

    def enqueue_chunked(
        self,
        handler: HandlerRef,
        rows: Sequence[Any],
        *,
        chunk_size: int = 500,
        kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        tenant: str | None = None,
        on_complete: Call | None = None,
        on_success: Call | None = None,
        **unknown: Any,
    ) -> list[str]:
        """Split large work at dispatch: one job per `chunk_size` rows (args: [rows]), in one pipeline.
        With `on_complete`/`on_success` (a `fairway.Call`), the chunks are one batch (docs/batches.md)
        and the callback runs when the last chunk ends; the ids returned then carry `batch_id`.

        One 200,000-row job blocks a worker for the whole import, and per-tenant fairness cannot
        interleave inside a job; many small jobs let every other tenant through between chunks.
        """
        refuse_unknown_options("enqueue_chunked", unknown)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise JobError(f"chunk_size {chunk_size!r} must be a whole number, at least 1", code="BAD_CHUNK_SIZE")
        chunks = [[list(rows[start : start + chunk_size])] for start in range(0, len(rows), chunk_size)]
        if on_complete is None and on_success is None:
            return self.enqueue_many(handler, chunks, kwargs=kwargs, queue=queue, tenant=tenant)
        name, queue = handler_and_queue(handler, queue, tenant)
        batch = self.batch(queue=queue, tenant=tenant)
        ids = batch.enqueue_many(name, chunks, kwargs=kwargs)
        for kind, call in (("on_complete", on_complete), ("on_success", on_success)):
            if call is not None:
                getattr(batch, kind)(call.handler, *call.args, kwargs=call.kwargs)
        return BatchIds(ids, batch.seal())

    def batch(self, *, queue: str | None = None, tenant: str | None = None, ttl: float = DEFAULT_BATCH_TTL_S) -> Batch:
        """A new batch for one queue or one tenant (docs/batches.md): add jobs, name callbacks, seal.
        `ttl`: seconds its figures are kept once it is done."""
        return Batch(self._destination(queue, tenant, ttl))

    def chain(self, *, queue: str | None = None, tenant: str | None = None, ttl: float = DEFAULT_BATCH_TTL_S) -> Chain:
        """A new chain for one queue or one tenant (docs/batches.md, "Chains"): steps with `then` and
        `then_group`, then `start()`. `ttl`: seconds its steps' results and figures are kept."""
        return Chain(self._destination(queue, tenant, ttl))

    def _destination(self, queue: str | None, tenant: str | None, ttl: float) -> Destination:
        target = self._queue_for(queue, tenant)
        return Destination.of(self.producer, target, tenant, self.tenant_prefix, self.max_payload_bytes, ttl)

    def chain_status(self, chain_id: str) -> ChainStatus | None:
        """Each step's counts, and the step that stopped the chain (`failed_step`); None once expired."""
        return chain_status(self.producer, chain_id)

    def batch_status(self, batch_id: str) -> BatchStatus | None:
        """A batch's counts (total, pending, succeeded, failed, cancelled) and whether it is done; None
        once it expired (or never was)."""
        return Batches(self.producer).find(batch_id)

    def progress(self, job_id: str, *, queue: str | None = None, tenant: str | None = None) -> dict[str, Any] | None:
        """A job's last progress report ({fraction, message, at (ms), attempt}), or None when it has not
        reported (or reported over a day ago). Name the queue (or the tenant) it was enqueued to."""
        served = served_name_of_group(self.tenant_prefix) if tenant is not None else self._queue_for(queue, None)
        if tenant is not None:
            check_tenant_id(tenant)
        return ProgressBoard(self.redis, self.producer.prefix).read(served, job_id)

    def set_tenant(
        self,
        tenant: str,
        *,
        weight: int | None = None,
        max_in_flight: int | None = None,
        rate: float | None = None,
        burst: int | None = None,
    ) -> TenantView:
        """Change a tenant's run-time settings (the fields given; the others stay), as `fairway tenant
        set` does: they win over the resource's. JobError for a bad tenant id, ValueError (naming the
        field) for a bad value; nothing is written then. Returns the settings now in effect."""
        settings = checked_settings(weight=weight, max_in_flight=max_in_flight, rate=rate, burst=burst)
        store = TenantSettingsStore(self.redis, self.producer.prefix)
        store.set(self.tenant_prefix, tenant, settings)
        return store.show(self.tenant_prefix, tenant)

    def tenant(self, tenant: str) -> TenantView:
        """A tenant's settings in effect (and where each comes from), in flight, parked, quarantined."""
        return TenantSettingsStore(self.redis, self.producer.prefix).show(self.tenant_prefix, tenant)

    def reset_tenant(self, tenant: str) -> TenantView:
        """Drop a tenant's run-time settings: the resource's (or the built-in defaults) apply again."""
        store = TenantSettingsStore(self.redis, self.producer.prefix)
        store.reset(self.tenant_prefix, tenant)
        return store.show(self.tenant_prefix, tenant)

    def close(self) -> None:
        self.redis.close()

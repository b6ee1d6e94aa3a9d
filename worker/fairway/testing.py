"""Testing with Fairway (docs/testing.md): no fake Redis, no mocked worker.

- `running_job(...)`: call a handler that uses `fairway.current_job()` in a unit test, no worker:

      with running_job(tenant="42") as job:
          import_rows(["a", "b"])          # calls fairway.current_job().progress(...)
      assert job.reports[-1].fraction == 1.0

- `TestWorker(redis_url).drain()`: run what was enqueued, in this process, with the real worker (the
  real scripts on a real Redis), and get back what each job returned or raised.
- The pytest plugin (`fairway.pytest_plugin`, loaded by pytest when fairway is installed) gives a test
  a real embedded Redis (`fairway_redis_url`), a `fairway_client` on it and a `fairway_worker`.
"""

from __future__ import annotations

import functools
import inspect
import io
import json
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fairway.queue.connection import connect
from fairway.queue.protocol.context import JobContext, Progress, current_job, running
from fairway.queue.protocol.keys import DEFAULT_PREFIX, GlobalKeys, is_group_name
from fairway.queue.runtime.handlers import Handler, Registry
from fairway.resource.names import DEFAULT_TENANT_PREFIX


@dataclass
class TestJob:
    """The job a test runs a handler as: its context, and the progress the handler reported."""

    __test__ = False  # not a pytest test class, whatever its name

    context: JobContext
    reports: list[Progress] = field(default_factory=list)


@contextmanager
def running_job(
    *,
    job_id: str | None = None,
    queue: str = "default",
    handler: str = "test",
    tenant: str | None = None,
    attempt: int = 1,
    max_tries: int = 1,
    enqueued_at: datetime | None = None,
    tenant_prefix: str = DEFAULT_TENANT_PREFIX,
) -> Iterator[TestJob]:
    """`fairway.current_job()` answers this job inside the block; a tenant job's queue is the tenant's
    (`tenant-42`), as on a worker. Progress reports land in the yielded `TestJob.reports`."""
    if attempt < 1 or max_tries < 1:
        raise ValueError(f"attempt ({attempt}) and max_tries ({max_tries}) count from 1")
    reports: list[Progress] = []
    when = enqueued_at or datetime.now(UTC)
    served = f"@{tenant_prefix}" if tenant is not None else queue
    context = JobContext(
        job_id or uuid.uuid4().hex,
        f"{tenant_prefix}{tenant}" if tenant is not None else queue,
        handler,
        tenant,
        attempt,
        max_tries,
        int(when.timestamp() * 1000),
        served,
        lambda _served, _id, progress: reports.append(progress),
    )
    with running(context):
        yield TestJob(context, reports)


@dataclass(frozen=True)
class Ran:
    """One attempt `drain()` ran: its outcome (`ok`, `retry`, `failed`, ...) and what the handler
    returned (`value`) or raised (`error`, the exception itself)."""

    id: str
    handler: str
    queue: str
    tenant: str | None
    attempt: int
    outcome: str
    value: Any = None
    error: BaseException | None = None


class TestWorker:
    """A real worker in this process, for tests: `drain()` runs every ready job (and delayed ones as
    they fall due, retries included) until the queues are empty, and returns what ran."""

    __test__ = False  # not a pytest test class

    def __init__(self, redis_url: str, *, registry: Registry | None = None, prefix: str = DEFAULT_PREFIX) -> None:
        self.redis_url = redis_url
        self.registry = registry
        self.prefix = prefix

    def drain(
        self,
        queues: list[str] | None = None,
        *,
        tenant_prefix: str | None = None,
        tries: int = 1,
        backoff_s: list[int] | None = None,
    ) -> list[Ran]:
        """Run until every served queue is empty. Serves `queues` (default: every queue enqueued to on
        this Redis) and the tenant group of `tenant_prefix` (default: any enqueued to). `tries` and
        `backoff_s` are the worker's (a job's or handler's own win, as on a real worker)."""
        import fairway.builtins  # noqa: F401  (noop, sleep and fail, as on every worker)
        from fairway.queue.runtime.fetch import fetcher_for
        from fairway.queue.runtime.handlers import registry as default_registry
        from fairway.queue.runtime.worker import Worker
        from fairway.resource.spec import TenantsSpec
        from fairway.resource.worker_settings import WorkerSettings

        client = connect(self.redis_url)
        known = sorted(
            m.decode() if isinstance(m, bytes) else m for m in client.smembers(GlobalKeys(self.prefix).queues)
        )
        groups = [name[1:] for name in known if is_group_name(name)]
        served = queues if queues is not None else [name for name in known if not is_group_name(name)]
        prefix = tenant_prefix or (groups[0] if groups else None)
        if not served and prefix is None:
            return []
        settings = WorkerSettings(
            redis_url=self.redis_url,
            prefix=self.prefix,
            queues=served,
            tenants=TenantsSpec(queue_prefix=prefix) if prefix is not None else None,
            burst=True,
            tries=tries,
            backoff_s=backoff_s or [],
            log_format="json",
            metrics_port=0,
            health_port=0,
            unknown_handler_grace_s=0,
        )
        seen: dict[tuple[str, int], tuple[Any, BaseException | None]] = {}
        registry = (self.registry or default_registry).wrapped(functools.partial(_recording, seen))
        out = io.StringIO()
        Worker(settings, fetcher_for(client, settings, random.Random()), registry, out=out).run()
        ran = []
        for line in out.getvalue().splitlines():
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("event") != "job.finished":
                continue
            value, error = seen.get((event["id"], event["attempt"]), (None, None))
            ran.append(
                Ran(
                    event["id"],
                    event["handler"],
                    event["queue"],
                    event.get("tenant"),
                    event["attempt"],
                    event["outcome"],
                    value,
                    error,
                )
            )
        return ran


def _recording(seen: dict[tuple[str, int], tuple[Any, BaseException | None]], name: str, func: Handler) -> Handler:
    """`func`, keeping what each attempt returned or raised under (job id, attempt)."""

    def remember(value: Any, error: BaseException | None) -> None:
        job = current_job()
        seen[(job.id, job.attempt)] = (value, error)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def recorded_async(*args: Any, **kwargs: Any) -> Any:
            try:
                value = await func(*args, **kwargs)
            except BaseException as exc:
                remember(None, exc)
                raise
            remember(value, None)
            return value

        return recorded_async

    @functools.wraps(func)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        try:
            value = func(*args, **kwargs)
        except BaseException as exc:
            remember(None, exc)
            raise
        remember(value, None)
        return value

    return recorded

"""Testing handlers: run a handler that calls `fairway.current_job()` in a unit test, no worker needed.

    from fairway.testing import running_job

    def test_import_reports_progress():
        with running_job(tenant="42") as job:
            import_rows(["a", "b"])          # calls fairway.current_job().progress(...)
        assert job.reports[-1].fraction == 1.0

`running_job` makes a `JobContext` current for the code inside (the thread's or task's own, as the
worker does) and keeps what the handler reports instead of writing it to Redis.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fairway.queue.protocol.context import JobContext, Progress, running
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

"""`fairway.current_job()`: every handler sees its own job (id, queue, tenant, attempt, enqueue time)
and can report progress, one slot or many, threads or coroutines."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

import fairway
from fairway.queue.access.client import Client
from support.workers import run_in_process

SEEN: list[dict[str, Any]] = []
LOCK = threading.Lock()


def _record(extra: str) -> None:
    job = fairway.current_job()
    job.progress(0.5, f"half of {job.id}")
    with LOCK:
        SEEN.append(
            {
                "id": job.id,
                "queue": job.queue,
                "tenant": job.tenant,
                "attempt": job.attempt,
                "max_tries": job.max_tries,
                "enqueued_at": job.enqueued_at,
                "handler": job.handler,
                "extra": extra,
            }
        )


@fairway.job(name="ctx.sync")
def context_sync(extra: str, pause: float = 0.0) -> None:
    time.sleep(pause)  # other jobs run meanwhile: each must still see its own context
    _record(extra)


@fairway.job(name="ctx.async")
async def context_async(extra: str, pause: float = 0.0) -> None:
    await asyncio.sleep(pause)
    _record(extra)


FAILED_ONCE: set[str] = set()


@fairway.job(name="ctx.flaky")
def flaky() -> None:
    job = fairway.current_job()
    with LOCK:
        SEEN.append({"id": job.id, "attempt": job.attempt})
    if job.id not in FAILED_ONCE:
        FAILED_ONCE.add(job.id)
        raise RuntimeError("first attempt fails")


@pytest.mark.parametrize(("handler", "concurrency"), [("ctx.sync", 1), ("ctx.sync", 8), ("ctx.async", 8)])
def test_each_handler_sees_its_own_job_and_reports_progress(redis_url: str, handler: str, concurrency: int) -> None:
    SEEN.clear()
    client = Client(redis_url)
    before = datetime.now(UTC)
    expected = {}
    for n in range(24):
        pause = 0.02 * (n % 4)
        job_id = client.enqueue(handler, f"plain-{n}", pause, queue="emails")
        expected[job_id] = ("emails", None, f"plain-{n}")
        job_id = client.enqueue(handler, f"tenant-{n}", pause, tenant=f"t{n % 3}", max_tries=4)
        expected[job_id] = (f"tenant-t{n % 3}", f"t{n % 3}", f"tenant-{n}")
    lines = run_in_process(redis_url, queues=["emails"], tenants={}, burst=True, concurrency=concurrency)
    assert len(lines) == 48 and {line["outcome"] for line in lines} == {"ok"}
    assert sorted(s["id"] for s in SEEN) == sorted(expected)
    for seen in SEEN:
        queue, tenant, extra = expected[seen["id"]]
        assert (seen["queue"], seen["tenant"], seen["extra"], seen["handler"]) == (queue, tenant, extra, handler)
        assert seen["attempt"] == 1
        assert seen["max_tries"] == (4 if tenant else 1)
        assert before.timestamp() - 1 <= seen["enqueued_at"].timestamp() <= time.time() + 1
        progress = client.progress(seen["id"], queue=None if tenant else queue, tenant=tenant)
        assert progress is not None
        assert (progress["fraction"], progress["message"], progress["attempt"]) == (0.5, f"half of {seen['id']}", 1)


def test_a_retried_job_sees_its_attempt_number(redis_url: str) -> None:
    SEEN.clear()
    job_id = Client(redis_url).enqueue("ctx.flaky", queue="emails", max_tries=2)
    lines = run_in_process(redis_url, queues=["emails"], burst=True, backoff_s=[0])
    assert [line["outcome"] for line in lines] == ["retry", "ok"]
    assert [(s["id"], s["attempt"]) for s in SEEN] == [(job_id, 1), (job_id, 2)]


def test_outside_a_worker_current_job_says_where_it_works() -> None:
    with pytest.raises(RuntimeError, match="only available inside a handler"):
        fairway.current_job()


def test_progress_refuses_a_fraction_outside_0_to_1() -> None:
    from fairway.queue.protocol.context import JobContext, running

    reports: list[Any] = []
    context = JobContext("j1", "emails", "h", None, 1, 1, 0, "emails", lambda *report: reports.append(report[2]))
    with running(context):
        with pytest.raises(ValueError, match=r"outside 0\.0 to 1\.0"):
            fairway.current_job().progress(1.5)
        with pytest.raises(ValueError, match=r"number from 0\.0 to 1\.0"):
            fairway.current_job().progress(float("nan"))
        fairway.current_job().progress(1, "done")
    assert [(r.fraction, r.message) for r in reports] == [(1.0, "done")]

"""Results: a handler's return value kept for `result_ttl` when the job (or its handler) asks; the
handle waits with a blocking read, raises the failure after the last try, and says when a result
expired, was never kept or could not be kept. Real Redis, real worker processes, standalone and the
3-node cluster."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis

from fairway import JobFailedError, ResultUnavailable
from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.protocol.job import JobError
from support.workers import job_lines, start_worker

KINDS = ["standalone", "cluster"]


def run_burst(url: str, *flags: str, cluster: bool = False) -> list[dict[str, object]]:
    worker = start_worker(url, "--queues", "default", "--tenants", "tenant-", "--burst", *flags,
                          *(["--cluster"] if cluster else []))  # fmt: skip
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    return job_lines(out)


@pytest.mark.parametrize("kind", KINDS)
def test_a_kept_result_is_returned_and_a_failure_raised_with_its_type(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url: str = request.getfixturevalue("redis_url" if kind == "standalone" else "cluster_url")
    client = Client(url)
    summed = client.enqueue("compute", 2, 3, result_ttl=60)
    tenant = client.enqueue("acompute", 4, 5, tenant="acme", result_ttl=60)
    failed = client.enqueue("fail", "card declined", result_ttl=60, max_tries=2)
    plain = client.enqueue("compute", 1, 1)  # keeps nothing: no extra call for it
    assert summed.status() == "waiting" and tenant.status() == "waiting"
    run_burst(url, "--concurrency", "4", cluster=kind == "cluster")
    assert summed.result(timeout=5) == {"sum": 5, "product": 6} and summed.status() == "done"
    assert tenant.result(timeout=5) == [9, 20]
    with pytest.raises(JobFailedError) as caught:
        failed.result(timeout=5)
    assert (caught.value.exception, caught.value.message, caught.value.attempts) == ("JobFailed", "card declined", 2)
    assert str(caught.value) == f"job {failed} failed after 2 attempts: JobFailed: card declined"
    assert failed.status() == "failed"
    assert plain.status() == "unknown", "a job keeping no result keeps no document in its handle"
    with pytest.raises(TimeoutError, match=r"no result within 0.5 s \(it is not running and no result is kept"):
        plain.result(timeout=0.5)
    assert 55_000 < connect(url).pttl(summed.handle.where.keys.result(summed)) <= 60_000, "kept result_ttl"


def test_a_wait_is_one_blocking_read_not_polling(redis_url: str) -> None:
    client = Client(redis_url)
    handle = client.enqueue("compute", 6, 7, result_ttl=60, delay=3)  # due in 3 s
    watcher = redis.Redis.from_url(redis_url)
    watcher.config_resetstat()
    worker = start_worker(redis_url, "--queues", "default")
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(handle.result(timeout=20)))
    try:
        waiter.start()
        waiter.join(30)
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
    assert got == [{"sum": 13, "product": 42}]
    stats = watcher.info("commandstats")
    assert stats["cmdstat_blmove"]["calls"] == 1, "one blocking read for a 3 s wait"
    assert stats["cmdstat_evalsha"]["calls"] >= 1  # the worker's calls, and one status read before the wait


def test_expired_too_large_and_unjsonable_results_say_why(redis_url: str) -> None:
    client = Client(redis_url)
    brief = client.enqueue("compute", 1, 2, result_ttl=1)
    huge = client.enqueue("huge_result", 600, result_ttl=60)
    odd = client.enqueue("unjsonable_result", result_ttl=60)
    lines = run_burst(redis_url)
    assert {line["id"]: line["outcome"] for line in lines} == {brief: "ok", huge: "ok", odd: "ok"}, "the jobs did run"
    time.sleep(1.3)
    with pytest.raises(ResultUnavailable, match=r"its result expired \(kept 1 s after it settled\)") as expired:
        brief.result(timeout=1)
    assert expired.value.reason == "expired"
    with pytest.raises(ResultUnavailable, match="over the 524,288-byte limit") as large:
        huge.result()
    assert large.value.reason == "RESULT_TOO_LARGE"
    with pytest.raises(ResultUnavailable, match="set is not JSON") as unjsonable:
        odd.result()
    assert unjsonable.value.reason == "RESULT_NOT_JSON"


def test_a_handler_that_declares_result_ttl_keeps_results_of_jobs_enqueued_by_name(redis_url: str) -> None:
    producer = Client(redis_url)
    job_id = str(producer.enqueue("kept_by_handler", 4))  # by name: this producer knows no declaration
    elsewhere = Client(redis_url).job(job_id, queue="default")  # e.g. a job id from a web request
    assert elsewhere.status() == "unknown", "without its document, waiting cannot be told"
    run_burst(redis_url)
    assert elsewhere.result(timeout=5) == 40 and elsewhere.status() == "done"


def test_result_async_waits_without_blocking_the_loop_and_times_out_clearly(redis_url: str) -> None:
    client = Client(redis_url)
    handle = client.enqueue("acompute", 2, 2, 1.0, result_ttl=60)
    worker = start_worker(redis_url, "--queues", "default")

    async def main() -> tuple[object, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())
        value = await handle.result_async(timeout=20)
        ticker.cancel()
        return value, ticks

    try:
        value, ticks = asyncio.run(main())
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
    assert value == [4, 4] and ticks >= 10, "the event loop ran while the result was awaited"
    slow = client.enqueue("compute", 1, 1, result_ttl=60)  # no worker now
    with pytest.raises(TimeoutError, match=rf"job {slow}: no result within 0.5 s \(it is waiting\)"):
        slow.result(timeout=0.5)


def test_a_bad_result_ttl_is_refused_naming_it(redis_url: str) -> None:
    with pytest.raises(JobError, match=r"result_ttl 0 is out of range: give seconds from 1") as caught:
        Client(redis_url).enqueue("compute", 1, 1, result_ttl=0)
    assert caught.value.code == "BAD_RESULT_TTL" and connect(redis_url).keys("*") == []


def test_waiting_on_a_job_known_to_keep_no_result_says_so_at_once(redis_url: str) -> None:
    from fairway.queue.runtime.handlers import Registry, job

    @job(name="report", registry=Registry())
    def report() -> None: ...

    handle = Client(redis_url).enqueue(report)  # the function: its declaration (no result_ttl) is known
    started = time.monotonic()
    with pytest.raises(ResultUnavailable, match="its result is not kept: enqueue it with result_ttl") as caught:
        handle.result(timeout=30)
    assert caught.value.reason == "never_kept" and time.monotonic() - started < 1

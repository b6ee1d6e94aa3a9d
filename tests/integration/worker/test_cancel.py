"""Cancellation: a waiting or delayed job never starts; a running one is told (a flag a `def` handler
checks; an `async def` handler's task is cancelled) and ends as cancelled, not failed and not
retried; a finished or unknown job is said to be so. Real Redis, real worker processes, standalone and
the 3-node cluster."""

from __future__ import annotations

import signal

import pytest
import redis

from fairway import JobCancelled
from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.cli import fairway
from support.redis_procs import free_port
from support.scrape import scrape, value
from support.workers import job_lines, start_worker, wait_until

KINDS = ["standalone", "cluster"]


def url_for(kind: str, request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("redis_url" if kind == "standalone" else "cluster_url")
    return url


@pytest.mark.parametrize("kind", KINDS)
def test_waiting_and_delayed_jobs_cancelled_never_start(kind: str, request: pytest.FixtureRequest) -> None:
    url = url_for(kind, request)
    client = Client(url)
    keep = client.enqueue("noop", queue="work")
    waiting = client.enqueue("noop", 1, queue="work", result_ttl=60, unique_key="nightly")
    delayed = client.enqueue("noop", 2, queue="work", delay=1)
    tenant = client.enqueue("noop", 3, tenant="acme")
    tenant_keep = client.enqueue("noop", 4, tenant="acme")
    assert [waiting.cancel(), client.cancel(delayed, queue="work"), client.cancel(tenant, tenant="acme")] == [
        "cancelled"
    ] * 3
    assert waiting.status() == "cancelled" and waiting.cancel() == "finished"
    with pytest.raises(JobCancelled):
        waiting.result(timeout=1)
    assert not client.enqueue("noop", queue="work", unique_key="nightly").duplicate, "its unique key was released"
    worker = start_worker(url, "--queues", "work", "--tenants", "tenant-", "--burst",
                          *(["--cluster"] if kind == "cluster" else []))  # fmt: skip
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    ran = {line["id"] for line in job_lines(out)}
    assert keep in ran and tenant_keep in ran and not {waiting, delayed, tenant} & ran
    assert client.cancel(keep, queue="work") == "unknown", "done without a kept result: nothing to find"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("handler", ["until_cancelled", "async_until_cancelled"])
@pytest.mark.parametrize("slots", ["1", "4"])  # the main thread's path, and the pool's
def test_a_running_job_is_told_and_ends_as_cancelled_not_retried(
    kind: str, handler: str, slots: str, request: pytest.FixtureRequest
) -> None:
    url = url_for(kind, request)
    notes: str = request.getfixturevalue("redis_url")  # where the handler writes what it saw (a plain Redis)
    client = Client(url)
    job = client.enqueue(handler, f"seen-{handler}", tenant="acme", max_tries=3, result_ttl=60)
    concurrency = ["--concurrency", slots]
    worker = start_worker(url, "--tenants", "tenant-", *concurrency, *(["--cluster"] if kind == "cluster" else []),
                          test_redis=notes)  # fmt: skip
    seen = connect(notes)
    try:
        wait_until(lambda: seen.lrange(f"seen-{handler}", 0, -1), 20)
        assert job.status() == "running"
        assert job.cancel() == "running"
        with pytest.raises(JobCancelled):
            job.result(timeout=20)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    told = b"task cancelled" if handler.startswith("async") else b"saw cancel"
    assert seen.lrange(f"seen-{handler}", 0, -1) == [b"started", told], "started once, told once"
    assert [(line["outcome"], line["attempt"]) for line in job_lines(out)] == [("cancelled", 1)], err[-2000:]
    assert Inspector(connect(url)).failed_records("@tenant-") == [], "not failed"
    assert not client.tenant("acme").quarantined


def test_fairway_cancel_says_what_each_id_was(redis_url: str) -> None:
    client = Client(redis_url)
    waiting = client.enqueue("noop", queue="work")
    failed = client.enqueue("fail", "x", queue="work")
    worker = start_worker(redis_url, "--queues", "work", "--burst")
    worker.communicate(timeout=60)
    again = client.enqueue("noop", queue="work")
    result = fairway("cancel", again, failed, "no-such-job", "--queue", "work", redis=redis_url)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"{again}: cancelled (it was waiting or delayed: it will not run)",
        f"{failed}: already finished: nothing to cancel",
        "no-such-job: no such job waiting, running or finished in queue work",
    ]
    assert fairway("cancel", waiting, "--queue", "work", redis=redis_url).returncode == 1  # ran: unknown now
    bad = fairway("cancel", "bad id", redis=redis_url)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "job id 'bad id' is invalid" in bad.stderr
    assert redis.Redis.from_url(redis_url).llen("fairway:{work}:ready") == 0


def test_a_cancelled_job_is_counted_in_metrics(redis_url: str) -> None:
    job = Client(redis_url).enqueue("until_cancelled", "seen-metrics", queue="work")
    port = free_port()
    worker = start_worker(redis_url, "--queues", "work", "--metrics-port", str(port), test_redis=redis_url)
    seen = connect(redis_url)
    try:
        wait_until(lambda: seen.lrange("seen-metrics", 0, -1), 20)
        assert Client(redis_url).cancel(job, queue="work") == "running"
        counted = wait_until(
            lambda: value(scrape(port), "fairway_jobs_finished_total", queue="work", handler="until_cancelled",
                          outcome="cancelled"), 20)  # fmt: skip
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)
    assert counted == 1

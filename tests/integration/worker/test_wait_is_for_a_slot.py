"""A job's wait is time spent waiting for a slot: from the moment it became ready (enqueue, due time, end
of its backoff, a retry by hand, its worker lost) to its start. A job's own backoff is not wait, so a
flaky tenant does not float to the top of "worst p99 first", and a bulk retry fires no wait alert."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.runtime.fetch import fetcher_for
from fairway.resource.worker_settings import WorkerSettings
from support.cli import fairway
from support.workers import done_keys, job_lines, start_worker, wait_until


def _config(tmp_path: Path) -> str:
    config = tmp_path / "w.yaml"
    config.write_text("backoff_s: [2]\nmaintenance_interval_s: 0.1\n")
    return str(config)


def test_a_queues_oldest_age_does_not_count_a_backoff(redis_url: str, tmp_path: Path) -> None:
    """`fairway queues` (and the planner, and the dashboard) read the oldest ready job's age: a job back
    from its backoff is as old as its wait for a slot, not as its first enqueue."""
    Client(redis_url).enqueue("flaky", "k", 1, queue="default")
    config = tmp_path / "w.yaml"
    config.write_text("backoff_s: [2]\nmaintenance_interval_s: 0.1\n")
    first = start_worker(redis_url, "--queues", "default", "--tries", "2", "--config", str(config), "--max-jobs", "1")
    first.communicate(timeout=30)
    time.sleep(2.3)  # its backoff runs out; move it to ready as a worker's timer does
    settings = WorkerSettings(redis_url=redis_url, queues=["default"])
    assert fetcher_for(connect(redis_url), settings).maintain()[0] == 1
    [row] = [r for r in json.loads(fairway("queues", "--json", redis=redis_url).stdout) if r["queue"] == "default"]
    assert row["ready"] == 1 and row["oldest_age_s"] < 1.0, row


@pytest.mark.parametrize("where", ["queue", "tenant"])
def test_a_retry_does_not_count_its_backoff_as_wait(redis_url: str, tmp_path: Path, where: str) -> None:
    target = {"tenant": "flaky"} if where == "tenant" else {"queue": "default"}
    Client(redis_url).enqueue("flaky", "k", 1, **target)
    serve = ["--tenants", "tenant-"] if where == "tenant" else ["--queues", "default"]
    worker = start_worker(redis_url, *serve, "--tries", "2", "--config", _config(tmp_path))
    try:
        assert wait_until(lambda: done_keys(redis_url) == ["k"], 15)
        time.sleep(0.3)  # the figures of the last job ride on the next call
    finally:
        worker.terminate()
        out, _ = worker.communicate(timeout=10)
    lines = job_lines(out)
    assert [(line["attempt"], line["outcome"]) for line in lines] == [(1, "retry"), (2, "ok")]
    assert lines[1]["started_at"] - lines[0]["finished_at"] >= 2000, "the backoff itself was kept"
    assert lines[1]["wait_ms"] < 500, f"the retry's wait counted its 2 s backoff: {lines[1]['wait_ms']} ms"
    if where == "tenant":
        [row] = json.loads(fairway("tenants", "--json", redis=redis_url).stdout)
        assert row["p99_wait_ms"] < 1000, row


def test_a_retry_by_hand_waits_from_the_retry_not_the_first_enqueue(redis_url: str, tmp_path: Path) -> None:
    client = Client(redis_url)
    client.enqueue("flaky", "k", 1, tenant="t1")
    first = start_worker(redis_url, "--tenants", "tenant-", "--burst")
    out, _ = first.communicate(timeout=30)
    assert [line["outcome"] for line in job_lines(out)] == ["failed"]
    time.sleep(2.5)  # the failure sits in the store a while before someone retries it
    retried_at = time.monotonic()
    retried = fairway("failed", "retry", "--all", "--tenant", "t1", redis=redis_url)
    assert retried.returncode == 0, retried.stderr
    [group] = json.loads(fairway("queues", "--json", redis=redis_url).stdout)
    assert group["ready"] == 1 and group["oldest_age_s"] < 1.0, f"the retried job's age counts from the retry: {group}"
    second = start_worker(redis_url, "--tenants", "tenant-", "--burst")
    out, _ = second.communicate(timeout=30)
    since_retry_ms = (time.monotonic() - retried_at) * 1000  # a bound; the first enqueue is 2.5 s older still
    [line] = job_lines(out)
    assert line["outcome"] == "ok" and line["wait_ms"] <= since_retry_ms, (line, since_retry_ms)
    rows = json.loads(fairway("tenants", "--json", redis=redis_url).stdout)
    assert rows[0]["p99_wait_ms"] <= since_retry_ms, (rows, since_retry_ms)

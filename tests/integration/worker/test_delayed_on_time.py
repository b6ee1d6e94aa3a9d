"""Delayed jobs start when they fall due, not at the worker's next housekeeping tick: an idle worker
blocks until the earliest due time it knows of, and an enqueue that brings an earlier one wakes it
(one token on the queue's notify list). Lateness counts as wait, so it matters to every tenant figure.
The timer is set to 5 s here, so a worker that waits for its tick is seconds late, not milliseconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fairway.queue.access.client import Client
from support.workers import done_keys, job_lines, start_worker, wait_until

SLOW_TIMER = "maintenance_interval_s: 5\nblock_for_s: 30\n"


@pytest.mark.parametrize("where", ["queue", "tenant"])
def test_an_idle_worker_starts_delayed_jobs_when_they_fall_due(redis_url: str, tmp_path: Path, where: str) -> None:
    config = tmp_path / "w.yaml"
    config.write_text(SLOW_TIMER)
    serve = ["--tenants", "tenant-"] if where == "tenant" else ["--queues", "default"]
    worker = start_worker(redis_url, *serve, "--config", str(config))
    client = Client(redis_url)
    target = {"tenant": "t1"} if where == "tenant" else {"queue": "default"}
    delays = {"late": 2.0, "early": 0.4, "middle": 1.2}
    try:
        time.sleep(1.0)  # the worker has gone idle, blocked in its read
        client.enqueue("record", "late", delay=delays["late"], **target)
        time.sleep(0.3)  # blocked until "late" is due; "early" falls due before it: it must wake
        client.enqueue("record", "early", delay=delays["early"], **target)
        client.enqueue("record", "middle", delay=delays["middle"], **target)
        assert wait_until(lambda: len(done_keys(redis_url)) == 3, 10)
    finally:
        worker.terminate()
        out, _ = worker.communicate(timeout=10)
    lines = {line["tenant"] or line["queue"]: line for line in job_lines(out)}
    started = sorted(job_lines(out), key=lambda line: line["started_at"])
    assert len(started) == 3 and all(line["outcome"] == "ok" for line in started)
    late = [line["started_at"] - line["enqueued_at"] for line in started]
    expected = sorted(delays.values())
    lateness = [round(got - want * 1000) for got, want in zip(late, expected, strict=True)]
    assert all(-5 <= ms <= 250 for ms in lateness), f"lateness per job, ms: {lateness} ({lines})"
    assert all(line["wait_ms"] <= 250 for line in started), [line["wait_ms"] for line in started]

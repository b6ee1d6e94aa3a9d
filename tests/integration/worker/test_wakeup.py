"""An idle worker wakes the moment a job lands on any served queue: one blocking read across all of them."""

from __future__ import annotations

import statistics
import time

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from support.workers import job_lines, start_worker, wait_until


def measure_wakeups(url: str, extra: list[str], rounds: int = 7) -> list[float]:
    worker = start_worker(url, "--queues", "high,default,low", "--block-for", "5", *extra)
    client = Client(url)
    try:
        client.enqueue("noop", queue="high")  # warm-up: the worker is up and has gone idle afterwards
        assert wait_until(lambda: Inspector(client.redis).stats(["high"])[0].ready == 0, 15)
        for _ in range(rounds):
            time.sleep(0.3)  # idle, inside its blocking read (or poll loop)
            client.enqueue("noop", queue="low")
            time.sleep(0.35)
        time.sleep(0.3)
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=10)
    assert worker.returncode == 0, err
    assert "CROSSSLOT" not in err
    lines = [line for line in job_lines(out) if line["queue"] == "low"]
    assert len(lines) == rounds
    latencies = [line["started_at"] - line["enqueued_at"] for line in lines]
    return latencies


def test_idle_worker_starts_a_job_on_the_last_queue_within_50ms(redis_url: str) -> None:
    latencies = measure_wakeups(redis_url, [])
    print("standalone wake-up ms", latencies)
    assert statistics.median(latencies) < 50, latencies
    assert max(latencies) < 150, latencies  # a noisy neighbour on a 2-core machine, never a block_for window


@pytest.mark.cluster
def test_idle_worker_on_a_cluster_wakes_within_300ms(cluster_url: str) -> None:
    latencies = measure_wakeups(cluster_url, ["--cluster"])
    print("cluster wake-up ms", latencies)
    assert max(latencies) < 300, latencies

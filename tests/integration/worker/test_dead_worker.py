"""A worker killed with kill -9 holds its jobs only until their leases run out (retryAfter, 4 s by
default: it renewed them every third of that while it lived); an idle worker then runs them, without
spending a try. Measured on standalone Redis and on a 3-node cluster, with default settings."""

from __future__ import annotations

import signal
import time

import pytest

from fairway.queue.access.client import Client
from support.redis_procs import RedisCluster, RedisProcess
from support.workers import job_lines, start_worker, started_keys, wait_until

TARGET_S = 5.0


def recovery_s(url: str, test_redis: str, *extra: str) -> float:
    client = Client(url, cluster=bool(extra) or None)
    client.enqueue("record", "long", 5.0)
    doomed = start_worker(url, "--queues", "default", *extra, test_redis=test_redis)
    assert wait_until(lambda: started_keys(test_redis) == ["long"], 10)
    rescuer = start_worker(url, "--queues", "default", *extra, test_redis=test_redis)
    time.sleep(2.5)  # both up; the doomed one has renewed its lease since it started the job
    doomed.kill()
    killed_at = time.monotonic()
    try:
        assert wait_until(lambda: started_keys(test_redis) == ["long", "long"], 30), "the job came back"
        took = time.monotonic() - killed_at
    finally:
        rescuer.send_signal(signal.SIGTERM)
        out, err = rescuer.communicate(timeout=40)
        doomed.wait(10)
    assert rescuer.returncode == 0, err[-2000:]
    (line,) = job_lines(out)
    assert (line["outcome"], line["attempt"]) == ("ok", 1), "a lost attempt is given back, not spent"
    assert line["redelivered"] == 1, "its log line says it ran again because its worker vanished"
    print(f"\nkill -9 to the job running elsewhere: {took:.1f} s")
    return took


def test_a_killed_workers_job_runs_elsewhere_within_seconds(redis_url: str) -> None:
    assert recovery_s(redis_url, redis_url) < TARGET_S + 0.5


@pytest.mark.cluster
def test_on_a_cluster_too(_redis_cluster: RedisCluster, cluster_url: str) -> None:
    test_redis = RedisProcess().start()
    try:
        assert recovery_s(cluster_url, test_redis.url, "--cluster") < TARGET_S + 0.5
    finally:
        test_redis.cleanup()

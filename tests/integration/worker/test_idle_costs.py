"""Idle costs nothing, and nothing is dropped at the end (issue 21's defects 11-13): a drain sleeps
instead of spinning, the run-time figures of the last jobs are written at shutdown, and an idle
worker on Redis Cluster housekeeps once a second, not on every 100 ms poll."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import redis

from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from support.redis_procs import RedisCluster
from support.workers import done_keys, start_worker, started_keys, wait_until


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_a_drain_sleeps_while_its_jobs_run(redis_url: str) -> None:
    Client(redis_url).enqueue("record", "long", 3.0)
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "2")
    try:
        assert wait_until(lambda: started_keys(redis_url) == ["long"], 10)
        worker.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        before = cpu_s(worker.pid)
        time.sleep(2.0)
        spent = cpu_s(worker.pid) - before
    finally:
        _, err = worker.communicate(timeout=20)
    assert worker.returncode == 0, err[-2000:]
    assert spent < 0.2, f"the drain used {spent:.2f} s of CPU in 2 s"
    assert done_keys(redis_url) == ["long"]


def test_the_last_jobs_run_times_are_written_at_shutdown(redis_url: str, tmp_path: Path) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("maintenance_interval_s: 60\n")  # no timer tick after the first one
    client = Client(redis_url)
    for key in "abc":
        client.enqueue("record", key, 0.3)
    worker = start_worker(redis_url, "--queues", "default", "--config", str(config))
    try:
        assert wait_until(lambda: len(done_keys(redis_url)) == 2, 10)
        worker.send_signal(signal.SIGTERM)  # the third job is running: it finishes, then the worker exits
    finally:
        _, err = worker.communicate(timeout=20)
    assert worker.returncode == 0, err[-2000:]
    runtime = redis.Redis.from_url(redis_url).hgetall("fairway:{default}:runtime")
    jobs = sum(int(v) for k, v in runtime.items() if k.endswith(b":n"))
    assert jobs == 3, runtime


def test_an_idle_cluster_worker_housekeeps_once_a_second(_redis_cluster: RedisCluster, cluster_url: str) -> None:
    nodes = [redis.Redis(port=node.port) for node in _redis_cluster.nodes]
    worker = start_worker(cluster_url, "--queues", "high,default,low", "--cluster")
    try:
        time.sleep(1.5)  # started and idle
        before = [int(n.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)) for n in nodes]
        time.sleep(3.0)
        after = [int(n.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)) for n in nodes]
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=20)
    assert worker.returncode == 0, err[-2000:]
    per_s = (sum(after) - sum(before)) / 3.0
    # 10 polls a second over 3 queues are 30 reserve calls; housekeeping adds 3 a second, not 30.
    assert per_s < 40, f"{per_s:.0f} script calls a second from one idle worker"
    assert connect(cluster_url, True).ping()

"""Failures: retries with backoff, the failed store, timeouts, stubborn jobs, bad payloads, unknown handlers."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time

import redis

from fairway.queue.client import Client
from fairway.queue.connection import connect
from fairway.queue.inspector import Inspector
from support.redis_procs import RedisProcess
from support.workers import done_keys, job_lines, start_worker, wait_until, worker_env


def fairway(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fairway.cli", *args], capture_output=True, text=True, env=worker_env(url), timeout=30
    )


def test_retries_wait_out_their_backoff_then_succeed(redis_url: str, tmp_path) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("backoff_s: [1, 2]\nmaintenance_interval_s: 0.1\n")
    Client(redis_url).enqueue("flaky", "k", 2, queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--tries", "3", "--config", str(config))
    try:
        assert wait_until(lambda: done_keys(redis_url) == ["k"], 15)
    finally:
        worker.terminate()
        out, _ = worker.communicate(timeout=10)
    lines = job_lines(out)
    assert [(line["attempt"], line["outcome"]) for line in lines] == [(1, "retry"), (2, "retry"), (3, "ok")]
    gaps = [b["started_at"] - a["finished_at"] for a, b in itertools.pairwise(lines)]
    assert 1000 <= gaps[0] < 1600 and 2000 <= gaps[1] < 2600, gaps


def test_exhausted_tries_land_in_the_failed_store_and_can_be_retried_or_forgotten(redis_url: str) -> None:
    client = Client(redis_url)
    first = client.enqueue("fail", "first boom", queue="default")
    second = client.enqueue("fail", "second boom", queue="default")
    out = fairway(
        "worker",
        "--redis",
        redis_url,
        "--queues",
        "default",
        "--tries",
        "2",
        "--burst",
        "--log-format",
        "json",
        url=redis_url,
    )
    assert out.returncode == 0
    assert [line["outcome"] for line in job_lines(out.stdout)] == ["retry", "retry", "failed", "failed"]

    listed = fairway("failed", "list", "--redis", redis_url, "--queue", "default", "--json", url=redis_url)
    records = {r["id"]: r for r in json.loads(listed.stdout)}
    assert set(records) == {first, second}
    assert records[first]["exception"] == "JobFailed"
    assert records[first]["message"] == "first boom"
    assert records[first]["attempts"] == 2
    assert "Traceback" in records[first]["traceback"]

    assert (
        fairway("failed", "forget", second, "--redis", redis_url, "--queue", "default", url=redis_url).returncode == 0
    )
    assert fairway("failed", "retry", first, "--redis", redis_url, "--queue", "default", url=redis_url).returncode == 0
    assert fairway("failed", "retry", "nope", "--redis", redis_url, "--queue", "default", url=redis_url).returncode == 1
    stats = Inspector(connect(redis_url)).stats(["default"])[0]
    assert (stats.ready, stats.failed) == (1, 0)


def test_a_job_past_its_timeout_is_stopped_and_counts_as_a_failed_attempt(redis_url: str) -> None:
    Client(redis_url).enqueue("sleep", 30, queue="default", timeout=0.5)
    started = time.monotonic()
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", url=redis_url
    )
    assert time.monotonic() - started < 10
    (line,) = job_lines(out.stdout)
    assert line["outcome"] == "failed"
    assert "JobTimeout" in line["error"]
    assert 450 < line["run_ms"] < 2000


def test_a_job_that_ignores_its_timeout_makes_the_worker_exit_for_a_restart(redis_url: str, tmp_path) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("kill_grace_s: 0.5\n")
    Client(redis_url).enqueue("stubborn", 30, queue="default", timeout=0.5)
    worker = start_worker(redis_url, "--queues", "default", "--config", str(config))
    _, err = worker.communicate(timeout=20)
    assert worker.returncode == 70
    assert "ignored its timeout" in err
    assert Inspector(connect(redis_url)).stats(["default"])[0].reserved == 1, "still reserved: handed out again later"


def test_malformed_payload_goes_to_the_failed_store_and_the_worker_carries_on(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    r.rpush("fairway:{default}:ready", b"{not json")
    Client(redis_url).enqueue("noop", queue="default")
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", url=redis_url
    )
    assert out.returncode == 0
    assert [line["outcome"] for line in job_lines(out.stdout)] == ["ok"]
    (record,) = Inspector(connect(redis_url)).failed_records("default")
    assert record["payload"] == "{not json"
    assert "MalformedJob: payload is not JSON" in record["message"]


def test_a_payload_naming_an_arbitrary_function_fails_as_unregistered(redis_url: str, tmp_path) -> None:
    marker = tmp_path / "pwned"
    doc = {"id": "evil", "handler": "os:system", "queue": "default", "args": [f"touch {marker}"]}
    redis.Redis.from_url(redis_url).rpush("fairway:{default}:ready", json.dumps(doc))
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", url=redis_url
    )
    (line,) = job_lines(out.stdout)
    assert line["outcome"] == "failed"
    assert "UnknownHandler" in line["error"]
    assert not marker.exists()
    (record,) = Inspector(connect(redis_url)).failed_records("default")
    assert record["id"] == "evil"


def test_redis_restarted_under_a_running_worker(tmp_path) -> None:
    server = RedisProcess(persistent=True).start()
    try:
        client = Client(server.url)
        client.enqueue_many("record", [[f"before-{i}", 0.0] for i in range(20)], queue="default")
        worker = start_worker(server.url, "--queues", "default", "--block-for", "1")
        assert wait_until(lambda: len(done_keys(server.url)) == 20, 15)
        server.stop()  # SIGTERM: Redis writes its AOF and exits
        time.sleep(2.5)  # the worker sees the outage for a while
        server.start()
        Client(server.url).enqueue_many("record", [[f"after-{i}", 0.0] for i in range(20)], queue="default")
        assert wait_until(lambda: len(done_keys(server.url)) == 40, 20), done_keys(server.url)
        worker.terminate()
        _, err = worker.communicate(timeout=10)
        assert worker.returncode == 0
        assert err.count("Redis is unreachable") == 1, "logged once per outage, not per retry"
        assert "Redis is reachable again" in err
        assert "Traceback" not in err
    finally:
        server.cleanup()

"""What a log pipeline or a script reads: with `--log-format json` a worker writes only JSON lines, on
stdout and on stderr, and `fairway queues --json` gives every row its figures (tenant groups too)."""

from __future__ import annotations

import json
import time

import redis

from fairway.queue.access.client import Client
from support.cli import fairway


def test_a_json_worker_writes_only_json_lines(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue("noop")
    client.enqueue("fail")
    client.enqueue("no.such.handler")
    redis.Redis.from_url(redis_url).rpush("fairway:{default}:ready", b"{not json")
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", "--metrics-port", "0",
        test_redis=redis_url,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):
        lines = [line for line in stream.splitlines() if line.strip()]
        assert lines
        parsed = [json.loads(line) for line in lines]  # every line, or this raises
        assert all(isinstance(p, dict) and p.get("event") for p in parsed)
    events = [json.loads(line)["event"] for line in out.stdout.splitlines()]
    assert events.count("job.finished") == 3 and events.count("job.malformed") == 1
    logs = [json.loads(line) for line in out.stderr.splitlines()]
    assert {"time", "level", "logger", "message"} <= set(logs[0]) and logs[0]["level"] == "INFO"
    assert any("stopped after" in line["message"] for line in logs)


def test_queues_json_gives_a_tenant_group_its_oldest_age(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue("noop", tenant="a")
    time.sleep(0.3)
    client.enqueue("noop", tenant="b")
    client.enqueue("noop", queue="plain")
    out = fairway("queues", "--redis", redis_url, "--json", test_redis=redis_url)
    assert out.returncode == 0, out.stderr
    rows = {row["queue"]: row for row in json.loads(out.stdout)}
    assert rows["@tenant-"]["ready"] == 2
    assert rows["@tenant-"]["oldest_age_s"] is not None and rows["@tenant-"]["oldest_age_s"] >= 0.3
    assert (
        rows["plain"]["oldest_age_s"] is not None and rows["plain"]["oldest_age_s"] < rows["@tenant-"]["oldest_age_s"]
    )

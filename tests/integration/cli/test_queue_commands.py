"""`fairway enqueue`, `queues`, `pause` and `continue` against a real Redis."""

from __future__ import annotations

import json
import time

from fairway.queue.access.client import Client
from support.cli import fairway
from support.workers import job_lines


def test_enqueue_count_then_queues_reports_depths(redis_url: str) -> None:
    assert (
        fairway(
            "enqueue", "--redis", redis_url, "--queue", "emails", "--count", "25", "noop", test_redis=redis_url
        ).stdout.strip()
        == "enqueued 25 jobs"
    )
    assert (
        fairway(
            "enqueue",
            "--redis",
            redis_url,
            "--queue",
            "reports",
            "--delay",
            "60",
            "--args",
            "[1.5]",
            "sleep",
            test_redis=redis_url,
        ).returncode
        == 0
    )
    time.sleep(0.2)
    rows = {
        r["queue"]: r
        for r in json.loads(fairway("queues", "--redis", redis_url, "--json", test_redis=redis_url).stdout)
    }
    assert rows["emails"]["ready"] == 25
    assert rows["emails"]["oldest_age_s"] >= 0.1
    assert rows["reports"]["ready"] == 0 and rows["reports"]["delayed"] == 1
    table = fairway("queues", "--redis", redis_url, test_redis=redis_url).stdout
    assert table.splitlines()[0].split() == ["QUEUE", "READY", "RESERVED", "DELAYED", "FAILED", "PAUSED", "OLDEST"]
    assert any(line.split()[:2] == ["emails", "25"] for line in table.splitlines())


def test_pause_takes_effect_without_a_restart(redis_url: str) -> None:
    paused = fairway("pause", "--redis", redis_url, "--force", "high", test_redis=redis_url).stdout.strip()
    assert paused == "high: paused (0 jobs wait; workers finish the jobs they hold)"
    Client(redis_url).enqueue_many("noop", [[]] * 3, queue="high")
    Client(redis_url).enqueue_many("noop", [[]] * 3, queue="low")
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "high,low", "--burst", "--log-format", "json", test_redis=redis_url
    )
    assert [line["queue"] for line in job_lines(out.stdout)] == ["low"] * 3
    rows = json.loads(
        fairway("queues", "--redis", redis_url, "--queues", "high", "--json", test_redis=redis_url).stdout
    )
    assert rows[0]["paused"] is True and rows[0]["ready"] == 3
    fairway("continue", "--redis", redis_url, "high", test_redis=redis_url)
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "high,low", "--burst", "--log-format", "json", test_redis=redis_url
    )
    assert [line["queue"] for line in job_lines(out.stdout)] == ["high"] * 3


def test_enqueue_rejects_bad_input_clearly(redis_url: str) -> None:
    bad_args = fairway("enqueue", "--redis", redis_url, "--args", "[1,", "noop", test_redis=redis_url)
    assert bad_args.returncode == 2 and "--args is not JSON" in bad_args.stderr
    bad_queue = fairway("enqueue", "--redis", redis_url, "--queue", "a b", "noop", test_redis=redis_url)
    assert bad_queue.returncode == 1 and "queue 'a b' is invalid" in bad_queue.stderr
    bad_tenant = fairway("enqueue", "--redis", redis_url, "--tenant", "{x}", "noop", test_redis=redis_url)
    assert bad_tenant.returncode == 1 and "tenant id '{x}' is invalid" in bad_tenant.stderr
    assert "Traceback" not in bad_args.stderr + bad_queue.stderr + bad_tenant.stderr


def test_worker_rejects_bad_settings_with_the_field_named(redis_url: str) -> None:
    out = fairway("worker", "--redis", redis_url, "--queues", "a", "--weight", "b=2", test_redis=redis_url)
    assert out.returncode == 2
    assert "weights" in out.stderr and "not served queues" in out.stderr
    out = fairway("worker", "--redis", redis_url, "--queues", "a", "--weight", "a:2", test_redis=redis_url)
    assert out.returncode == 2 and "write QUEUE=N" in out.stderr
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "a", "--tries", "0", "--concurrency", "0", test_redis=redis_url
    )
    assert out.returncode == 2
    assert "--tries: must be at least 1, not 0" in out.stderr and "--concurrency: must be at least 1" in out.stderr
    assert "Input should" not in out.stderr and "Value error" not in out.stderr


def test_bulk_enqueue_keeps_order_and_returns_ids(redis_url: str) -> None:
    client = Client(redis_url)
    ids = client.enqueue_many("noop", [[i] for i in range(2500)], queue="bulk")
    assert len(ids) == len(set(ids)) == 2500
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "bulk", "--burst", "--log-format", "json", test_redis=redis_url
    )
    assert [line["id"] for line in job_lines(out.stdout)] == ids

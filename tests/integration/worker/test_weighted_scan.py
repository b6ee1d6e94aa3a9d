"""The weighted scan against a real Redis: proportional shares, strict priority, no starvation, pausing."""

from __future__ import annotations

from collections import Counter

from fairway.queue.access.admin import Admin
from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from support.workers import run_in_process


def fill(redis_url: str, counts: dict[str, int]) -> None:
    client = Client(redis_url)
    for queue, count in counts.items():
        client.enqueue_many("noop", [[]] * count, queue=queue)


def shares(lines: list[dict[str, object]]) -> dict[str, float]:
    counts = Counter(str(line["queue"]) for line in lines)
    return {queue: n / len(lines) for queue, n in counts.items()}


def test_weights_3_2_1_serve_50_33_17_percent(redis_url: str) -> None:
    fill(redis_url, {"high": 6000, "default": 6000, "low": 6000})
    lines = run_in_process(
        redis_url, queues=["high", "default", "low"], weights={"high": 3, "default": 2}, max_jobs=6000
    )
    assert len(lines) == 6000
    got = shares(lines)
    for queue, expected in (("high", 3 / 6), ("default", 2 / 6), ("low", 1 / 6)):
        assert abs(got[queue] - expected) < 0.02, got


def test_equal_weights_serve_uniformly(redis_url: str) -> None:
    fill(redis_url, {"a": 3000, "b": 3000, "c": 3000})
    lines = run_in_process(redis_url, seed=2, queues=["a", "b", "c"], weights={"a": 5, "b": 5, "c": 5}, max_jobs=6000)
    for queue, share in shares(lines).items():
        assert abs(share - 1 / 3) < 0.02, (queue, share)


def test_without_weights_order_is_strict_left_to_right(redis_url: str) -> None:
    fill(redis_url, {"low": 50, "default": 50, "high": 50})
    lines = run_in_process(redis_url, queues=["high", "default", "low"], burst=True)
    assert [line["queue"] for line in lines] == ["high"] * 50 + ["default"] * 50 + ["low"] * 50


def test_a_weight_1_queue_among_always_full_heavy_queues_keeps_being_served(redis_url: str) -> None:
    fill(redis_url, {"heavy1": 6000, "heavy2": 6000, "light": 200})
    lines = run_in_process(
        redis_url, queues=["heavy1", "heavy2", "light"], weights={"heavy1": 100, "heavy2": 100}, max_jobs=6000
    )
    for window in range(3):
        served = [line["queue"] for line in lines[window * 2000 : (window + 1) * 2000]]
        assert served.count("light") >= 1, f"light starved in window {window}"


def test_only_the_last_of_300_queues_has_work(redis_url: str) -> None:
    queues = [f"q{i}" for i in range(300)]
    fill(redis_url, {"q299": 20})
    lines = run_in_process(redis_url, queues=queues, weights={"q0": 5}, burst=True)
    assert [line["queue"] for line in lines] == ["q299"] * 20


def test_paused_queue_is_skipped_until_continued(redis_url: str) -> None:
    fill(redis_url, {"high": 5, "low": 5})
    store = Admin(connect(redis_url))
    store.pause("high")
    first = run_in_process(redis_url, queues=["high", "low"], burst=True)
    assert [line["queue"] for line in first] == ["low"] * 5
    store.resume("high")
    second = run_in_process(redis_url, queues=["high", "low"], burst=True)
    assert [line["queue"] for line in second] == ["high"] * 5


def test_jobs_pushed_with_plain_commands_are_found(redis_url: str) -> None:
    """A producer in another language that only RPUSHes (skipping the active-set SADD) is still served."""
    import json

    import redis

    r = redis.Redis.from_url(redis_url)
    for i in range(3):
        r.rpush("fairway:{php}:ready", json.dumps({"id": f"p{i}", "handler": "noop", "queue": "php"}))
    lines = run_in_process(redis_url, queues=["php"], burst=True)
    assert [line["id"] for line in lines] == ["p0", "p1", "p2"]

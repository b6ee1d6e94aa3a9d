"""Concurrency in one process: N jobs at once (threads for def, one event loop for async def), reserved
in batches of free slots, with every rule of one-at-a-time still holding: weighted shares, K in a row,
the noisy-neighbour result, at-least-once under kill -9, SIGTERM draining, timeouts."""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter
from typing import Any

from fairway.queue.access.client import Client
from fairway.queue.access.figures import percentile
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.workers import (
    done_keys,
    drain_under_kill_9,
    job_lines,
    run_in_process,
    start_worker,
    started_keys,
    wait_until,
)


def in_reservation_order(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Jobs finish out of order at concurrency N; the draw is judged on the order they were reserved."""
    return sorted(lines, key=lambda line: line["reserve_seq"])


def runs(items: list[str]) -> list[tuple[str, int]]:
    return [(item, len(list(group))) for item, group in itertools.groupby(items)]


def test_weights_3_2_1_hold_at_concurrency_16(redis_url: str) -> None:
    client = Client(redis_url)
    for queue in ("high", "default", "low"):
        client.enqueue_many("noop", [[]] * 6000, queue=queue)
    lines = run_in_process(
        redis_url, queues=["high", "default", "low"], weights={"high": 3, "default": 2}, concurrency=16, max_jobs=6000
    )
    assert len(lines) == 6000
    shares = {queue: n / len(lines) for queue, n in Counter(line["queue"] for line in lines).items()}
    for queue, expected in (("high", 3 / 6), ("default", 2 / 6), ("low", 1 / 6)):
        assert abs(shares[queue] - expected) < 0.03, shares


def test_k_5_and_k_1_hold_at_concurrency_8(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 60, tenant="a")
    client.enqueue_many("noop", [[]] * 23, tenant="b")
    lines = run_in_process(redis_url, tenants={"max_consecutive_jobs": 5}, concurrency=8, burst=True)
    order = [line["tenant"] for line in in_reservation_order(lines)]
    assert all(length <= 5 for _, length in runs(order[: 2 * 23])), runs(order)
    assert runs(order)[:4] == [("a", 5), ("b", 5), ("a", 5), ("b", 5)]
    assert Counter(order) == {"a": 60, "b": 23}

    client.enqueue_many("noop", [[]] * 20, tenant="a")
    client.enqueue_many("noop", [[]] * 20, tenant="b")
    lines = run_in_process(redis_url, tenants={"max_consecutive_jobs": 1}, concurrency=8, burst=True)
    assert [line["tenant"] for line in in_reservation_order(lines)] == ["a", "b"] * 20


def test_a_noisy_tenant_only_slows_itself_with_one_worker_at_concurrency_4(redis_url: str) -> None:
    client = Client(redis_url)
    worker = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "4", "--block-for", "1")
    try:
        time.sleep(1.0)
        client.enqueue_many("sleep", [[0.004]] * 3000, tenant="A")
        time.sleep(0.3)
        small = {job_id for i in range(20) for job_id in client.enqueue_many("sleep", [[0.004]] * 10, tenant=f"s{i}")}
        store = Inspector(connect(redis_url))

        def small_done() -> bool:
            figures = {f.tenant: f for f in store.tenant_figures("tenant-")}
            return all(figures.get(f"s{i}") and figures[f"s{i}"].completed == 10 for i in range(20))

        assert wait_until(small_done, 60, 0.05)
    finally:
        worker.send_signal(signal.SIGTERM)
        lines = job_lines(worker.communicate(timeout=30)[0])
    small_lines = [line for line in lines if line["id"] in small]
    last_small = max(line["finished_at"] for line in small_lines)
    noisy_before = sum(1 for line in lines if line["tenant"] == "A" and line["finished_at"] <= last_small)
    assert noisy_before < 0.25 * 3000, f"A ran {noisy_before} of its 3000 jobs first"
    print(f"concurrency 4: small p99 {percentile([x['wait_ms'] for x in small_lines], 0.99)} ms; A {noisy_before}")


def test_2000_jobs_with_random_kills_of_concurrent_workers_all_complete(redis_url: str, tmp_path) -> None:
    config = tmp_path / "worker.yaml"
    config.write_text("retry_after_s: 2.5\ntimeout_s: 1\nkill_grace_s: 0.2\nmaintenance_interval_s: 0.2\n")
    keys = [f"job-{i}" for i in range(2000)]
    Client(redis_url).enqueue_many("record", [[key, 0.02] for key in keys], queue="bulk")
    args = ["--queues", "bulk", "--config", str(config), "--concurrency", "8", "--log-format", "none"]
    kills = drain_under_kill_9(redis_url, keys, args, workers=2, pause_s=(0.3, 1.0), max_kills=8, seed=3)
    done = done_keys(redis_url)
    assert set(done) == set(keys) and kills == 8
    assert len(done) - len(set(done)) <= 8 * 8, "a kill can repeat at most the jobs its 8 slots had finished"
    stats = Inspector(connect(redis_url)).stats(["bulk"])[0]
    assert (stats.failed, stats.ready, stats.reserved) == (0, 0, 0)


def test_sigterm_lets_16_running_jobs_finish_and_acknowledges_them(redis_url: str) -> None:
    Client(redis_url).enqueue_many("record", [[f"j{i}", 2.0] for i in range(16)], queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "16")
    assert wait_until(lambda: len(started_keys(redis_url)) == 16, 15), "16 jobs run at once"
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=20)
    assert worker.returncode == 0, err
    assert sorted(done_keys(redis_url)) == sorted(f"j{i}" for i in range(16))
    lines = job_lines(out)
    assert [line["outcome"] for line in lines] == ["ok"] * 16 and all(line["attempt"] == 1 for line in lines)
    stats = Inspector(connect(redis_url)).stats(["default"])[0]
    assert (stats.ready, stats.reserved, stats.delayed) == (0, 0, 0), "acknowledged on the way out, none retried"


def test_an_async_job_past_its_timeout_is_cancelled_and_retried_and_the_process_keeps_going(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue("arecord", "slow", 5.0, queue="default", timeout=0.5, max_tries=2)
    client.enqueue_many("arecord", [[f"q{i}", 0.0] for i in range(5)], queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "4", "--burst")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    slow = [(line["attempt"], line["outcome"]) for line in job_lines(out) if "JobTimeout" in (line.get("error") or "")]
    assert slow == [(1, "retry"), (2, "failed")], "cancelled at its timeout, retried per tries"
    assert sorted(done_keys(redis_url)) == [f"q{i}" for i in range(5)], "the others ran, the slow one never finished"


def test_a_sync_job_past_its_timeout_is_settled_its_slot_written_off_and_the_process_replaced(
    redis_url: str,
) -> None:
    client = Client(redis_url)
    client.enqueue("record", "stuck", 4.0, queue="default", timeout=0.5, max_tries=2)
    client.enqueue_many("record", [[f"q{i}", 0.3] for i in range(3)], queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "4", "--block-for", "1")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 70, err
    assert "cannot be stopped" in err and "Traceback" not in err
    lines = job_lines(out)
    stuck = [
        (line["attempt"], line["outcome"]) for line in lines if line["id"] and "JobTimeout" in str(line.get("error"))
    ]
    assert stuck == [(1, "retry")], "settled as timed out once, retried per tries"
    assert sorted(done_keys(redis_url)) == ["q0", "q1", "q2"], "its other jobs were settled before it exited"
    stats = Inspector(connect(redis_url)).stats(["default"])[0]
    assert (stats.ready, stats.reserved) == (1, 0), "the timed-out job waits for the next process, not lost"


def test_async_and_sync_handlers_share_one_process(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("arecord", [[f"a{i}", 0.5] for i in range(8)], queue="default")
    client.enqueue_many("thread_name", [[f"s{i}"] for i in range(8)], queue="default")
    started = time.monotonic()
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "16", "--burst")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert time.monotonic() - started < 5, "eight 0.5 s async jobs ran at once"
    assert sorted(done_keys(redis_url)) == sorted(f"a{i}" for i in range(8))
    threads = [t.decode().split(":", 1)[1] for t in connect(redis_url).lrange("test:threads", 0, -1)]
    assert len(threads) == 8 and all(name.startswith("fairway-job") for name in threads)
    assert Counter(line["outcome"] for line in job_lines(out)) == {"ok": 16}

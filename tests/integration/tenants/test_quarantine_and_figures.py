"""Quarantine (slow lane at sampleRate, back on its own) and per-tenant figures from known waits."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.access.producer import Producer
from fairway.queue.connection import connect
from fairway.queue.protocol.job import new_job
from support.workers import run_in_process, worker_env

QUARANTINE = {"max_consecutive_jobs": 5, "quarantine": {"failures": 5, "window_seconds": 2, "sample_rate": 0.1}}


@pytest.fixture
def test_handlers(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIRWAY_TEST_REDIS", redis_url)
    import support.jobs  # noqa: F401  (registers switchable, record, ...)


def test_a_failing_tenant_is_served_at_sample_rate_then_returns(redis_url: str, test_handlers: None) -> None:
    r = redis.Redis.from_url(redis_url)
    r.set("test:failing", 1)
    client = Client(redis_url)
    client.enqueue_many("switchable", [[]] * 400, tenant="bad")
    for tenant in ("h1", "h2"):
        client.enqueue_many("noop", [[]] * 3000, tenant=tenant)

    lines = run_in_process(redis_url, tenants=QUARANTINE, max_jobs=2100)
    settled = Counter(line["tenant"] for line in lines[100:])  # after the first failures quarantined it
    ratio = settled["bad"] / ((settled["h1"] + settled["h2"]) / 2)
    assert 0.06 <= ratio <= 0.15, settled
    assert (settled["h1"] + settled["h2"]) / sum(settled.values()) > 0.9, "healthy tenants keep their throughput"
    assert all(line["outcome"] == "failed" for line in lines if line["tenant"] == "bad")
    figures = {f.tenant: f for f in Inspector(connect(redis_url)).tenant_figures("tenant-")}
    assert figures["bad"].quarantined and not figures["h1"].quarantined
    assert figures["bad"].waiting > 0, "a quarantined tenant's jobs wait; none is dropped"

    r.delete("test:failing")  # the tenant's bug is fixed...
    time.sleep(2.3)  # ...and its failures age out of the 2 s window
    lines = run_in_process(redis_url, tenants=QUARANTINE, max_jobs=600)
    later = Counter(line["tenant"] for line in lines[20:])
    assert 0.7 <= later["bad"] / ((later["h1"] + later["h2"]) / 2) <= 1.3, later
    assert not {f.tenant: f for f in Inspector(connect(redis_url)).tenant_figures("tenant-")}["bad"].quarantined


def test_figures_from_known_waits(redis_url: str) -> None:
    store = Producer(connect(redis_url))
    now = int(time.time() * 1000)
    waits = {"slow": [i * 1000 for i in range(1, 101)], "quick": [10] * 50}
    for tenant, tenant_waits in waits.items():
        payloads = [
            new_job("noop", f"tenant-{tenant}", [], {}, tenant=tenant, now_ms=now - w).encode() for w in tenant_waits
        ]
        store.enqueue_tenant("tenant-", tenant, payloads)
    store.enqueue_tenant("tenant-", "quick", [new_job("fail", "tenant-quick", [], {}, tenant="quick").encode()])
    run_in_process(redis_url, tenants={"max_consecutive_jobs": 1000}, burst=True)
    store.enqueue_tenant(
        "tenant-", "backlog", [new_job("noop", "tenant-backlog", [], {}, tenant="backlog").encode()] * 7
    )

    figures = {f.tenant: f for f in Inspector(store.client).tenant_figures("tenant-")}
    slow = figures["slow"]
    assert (slow.completed, slow.failed, slow.waiting, slow.in_flight) == (100, 0, 0, 0)
    assert slow.p99_wait_ms is not None and 99_000 <= slow.p99_wait_ms <= 99_000 * 1.19 + 500
    assert slow.p50_wait_ms is not None and 50_000 <= slow.p50_wait_ms <= 50_000 * 1.19 + 500
    quick = figures["quick"]
    assert (quick.completed, quick.failed) == (50, 1)
    assert abs(quick.failure_rate - 1 / 51) < 1e-9
    assert quick.p99_wait_ms is not None and quick.p99_wait_ms < 200
    assert figures["backlog"].waiting == 7

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "fairway.cli",
            "tenants",
            "--redis",
            redis_url,
            "--json",
            "--sort",
            "p99",
            "--limit",
            "2",
        ],
        capture_output=True,
        text=True,
        env=worker_env(redis_url),
    )
    rows = json.loads(out.stdout)
    assert [row["tenant"] for row in rows] == ["slow", "quick"]
    table = subprocess.run(
        [sys.executable, "-m", "fairway.cli", "tenants", "--redis", redis_url, "--sort", "waiting"],
        capture_output=True,
        text=True,
        env=worker_env(redis_url),
    ).stdout
    assert table.splitlines()[1].split()[:3] == ["backlog", "1", "7"], "tenant, weight, waiting"


def test_figures_memory_is_bounded_and_expires(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 500, tenant="t")
    run_in_process(redis_url, tenants={}, burst=True)
    r = redis.Redis.from_url(redis_url)
    stats_keys = [k for k in r.scan_iter(match="fairway:{tenants:tenant-}:stats:*")]
    assert 1 <= len(stats_keys) <= 2  # one hash per tenant and minute
    for key in stats_keys:
        assert 0 < r.ttl(key) <= 3900
        assert r.hlen(key) <= 3 + 90  # c, f and at most the occupied wait buckets

"""Per-tenant controls on real Redis and real worker processes: weights, a fleet-wide in-flight cap, a
rate, the slow-tenant quarantine, and `fairway tenant set|show|reset` (issue #23). Starts and ends of
jobs are recorded by the `span` handler against the Redis clock, so overlaps are counted across
every worker process."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections import Counter
from typing import Any

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.tenant_settings import TenantSettingsStore
from fairway.queue.connection import connect
from fairway.queue.protocol.keys import TenantGroupKeys
from fairway.resource.spec import TenantOverride, TenantSettings
from support.cli import fairway
from support.spans import most_at_once
from support.spans import spans as read_spans
from support.workers import WorkerProcess, job_lines, run_in_process, start_worker, wait_until

GROUP = TenantGroupKeys("fairway", "tenant-")


def spans(redis_url: str) -> list[tuple[str, int, int]]:
    return read_spans(redis.Redis.from_url(redis_url))


def stop(workers: list[WorkerProcess]) -> list[dict[str, Any]]:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    return [line for worker in workers for line in job_lines(worker.communicate(timeout=30)[0])]


@pytest.mark.parametrize("concurrency", [1, 16])
def test_weights_3_1_1_give_shares_within_2_points(redis_url: str, concurrency: int) -> None:
    client = Client(redis_url)
    for tenant, jobs in (("heavy", 3000), ("b", 1000), ("c", 1000)):
        client.enqueue_many("noop", [[]] * jobs, tenant=tenant)
    assert fairway("tenant", "set", "heavy", "--weight", "3", redis=redis_url).returncode == 0
    worker = start_worker(redis_url, "--tenants", "tenant-", "--burst", "--concurrency", str(concurrency))
    out, _ = worker.communicate(timeout=120)  # --burst: it exits once the backlog is done
    lines = job_lines(out)
    assert len(lines) == 5000
    first = Counter(line["tenant"] for line in lines[:4000])  # every tenant still has a backlog here
    shares = {tenant: first[tenant] / 4000 for tenant in ("heavy", "b", "c")}
    assert abs(shares["heavy"] - 0.6) <= 0.02 and abs(shares["b"] - 0.2) <= 0.02, shares


def test_a_cap_of_5_holds_across_4_workers_at_concurrency_8(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("span", [[0.05]] * 120, tenant="capped")
    for tenant in ("x", "y"):
        client.enqueue_many("span", [[0.02]] * 150, tenant=tenant)
    assert fairway("tenant", "set", "capped", "--max-in-flight", "5", redis=redis_url).returncode == 0
    workers = [start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "8") for _ in range(4)]
    try:
        assert wait_until(lambda: len(spans(redis_url)) == 420, 60, 0.1), len(spans(redis_url))
    finally:
        stop(workers)
    rows = spans(redis_url)
    assert most_at_once(rows, "capped") <= 5
    assert most_at_once(rows, "capped") == 5, "work-conserving: the cap is used, not under-run"
    assert most_at_once(rows, "x") > 5, "other tenants are not held to it"
    assert not redis.Redis.from_url(redis_url).hgetall(GROUP.inflight), "every slot given back"


def test_a_rate_of_20_per_second_holds_within_10_percent_and_others_go_on(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("span", [[]] * 80, tenant="metered")
    client.enqueue_many("span", [[]] * 300, tenant="free")
    assert fairway("tenant", "set", "metered", "--rate", "20/s", "--burst", "1", redis=redis_url).returncode == 0
    workers = [start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "4") for _ in range(4)]
    try:
        assert wait_until(lambda: len(spans(redis_url)) == 380, 30, 0.1), len(spans(redis_url))
    finally:
        stop(workers)
    rows = spans(redis_url)
    metered = sorted(a for t, a, _ in rows if t == "metered")
    rate = (len(metered) - 1) / ((metered[-1] - metered[0]) / 1000)
    assert abs(rate - 20) <= 2, f"{rate:.1f} jobs/s"
    free_done = max(b for t, _, b in rows if t == "free")
    assert free_done < metered[len(metered) // 2], "the free tenant was never held behind the metered one"
    view = TenantSettingsStore(connect(redis_url)).show("tenant-", "metered")
    assert view.throttled > 0 and view.rate == 20


def test_every_tenant_at_its_cap_leaves_workers_blocked_not_spinning(redis_url: str) -> None:
    """One worker holds the two jobs the cap allows (its slots all busy: it waits for them); a second,
    idle worker finds only a capped tenant's jobs: it blocks, and a finished job wakes it."""
    client = Client(redis_url)
    client.enqueue_many("span", [[1.5]] * 2, tenant="a")
    client.enqueue_many("span", [[]] * 200, tenant="a")  # 200 wake-up tokens a spinning worker would chase
    TenantSettingsStore(connect(redis_url)).set("tenant-", "a", TenantSettings(max_in_flight=2))
    r = redis.Redis.from_url(redis_url)
    holder = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "2")
    workers = [holder]
    try:
        assert wait_until(lambda: int(r.hget(GROUP.inflight, "a") or 0) == 2, 10)

        def scripts_run() -> int:
            return int(r.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

        before = scripts_run()
        workers.append(start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "4"))
        time.sleep(1.2)  # it starts, registers, finds only capped work (200 jobs wait), and blocks
        assert scripts_run() - before <= 12, "the idle worker chased tokens instead of blocking"
        holder.send_signal(signal.SIGTERM)  # it finishes its two; the other worker takes the rest
        assert wait_until(lambda: len(spans(redis_url)) == 202, 15), "a freed slot wakes the blocked worker"
    finally:
        stop(workers)
    assert most_at_once(spans(redis_url), "a") == 2


def test_kill_9_of_a_worker_holding_capped_jobs_gives_the_cap_back(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("span", [[2.0]] * 7, tenant="capped")
    TenantSettingsStore(connect(redis_url)).set("tenant-", "capped", TenantSettings(max_in_flight=3))
    r = redis.Redis.from_url(redis_url)
    doomed = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "8")
    assert wait_until(lambda: int(r.hget(GROUP.inflight, "capped") or 0) == 3, 10)
    doomed.send_signal(signal.SIGKILL)
    doomed.communicate(timeout=10)
    survivor = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "8")
    try:
        assert wait_until(lambda: len(spans(redis_url)) == 7, 40, 0.1), spans(redis_url)
    finally:
        stop([survivor])
    assert most_at_once(spans(redis_url), "capped") == 3, "the dead worker's three slots came back, no more"
    assert not r.hgetall(GROUP.inflight)


def test_a_cap_raised_while_jobs_run_takes_effect_at_once(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("span", [[0.3]] * 16, tenant="t")
    store = TenantSettingsStore(connect(redis_url))
    store.set("tenant-", "t", TenantSettings(max_in_flight=1))
    worker = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "4")
    r = redis.Redis.from_url(redis_url)
    try:
        assert wait_until(lambda: len(spans(redis_url)) >= 2, 10)
        seconds, micros = r.time()
        changed_ms = int(seconds) * 1000 + int(micros) // 1000
        assert fairway("tenant", "set", "t", "--max-in-flight", "4", redis=redis_url).returncode == 0
        assert wait_until(lambda: len(spans(redis_url)) == 16, 20)
    finally:
        stop([worker])
    rows = spans(redis_url)
    before = [row for row in rows if row[2] <= changed_ms]
    after = [row for row in rows if row[1] >= changed_ms]
    assert most_at_once(before, "t") == 1 and most_at_once(after, "t") == 4


def test_a_slow_tenant_is_quarantined_for_its_share_of_the_run_time_and_gives_slots_back(redis_url: str) -> None:
    """Three tenants of 50 ms jobs and one of 4 s jobs, K = 1, four slots: the slow one takes a turn
    in four, and its jobs pile up in the slots. It is quarantined for its share of the run time (not
    for failures; after 10 s of evidence), and from then on holds at most half of the slots as its
    running jobs end."""
    client = Client(redis_url)
    for tenant in ("q1", "q2", "q3"):
        client.enqueue_many("span", [[0.05]] * 600, tenant=tenant)
    client.enqueue_many("span", [[4.0]] * 30, tenant="slow")
    r = redis.Redis.from_url(redis_url)
    worker = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "4", "--max-consecutive", "1")

    def slow_done() -> int:
        return sum(1 for t, _, _ in spans(redis_url) if t == "slow")

    try:
        store = TenantSettingsStore(connect(redis_url))
        assert wait_until(lambda: store.show("tenant-", "slow").quarantined == "slow", 30, 0.1)
        running_then, done_then = int(r.hget(GROUP.inflight, "slow") or 0), slow_done()
        assert json.loads(fairway("tenant", "show", "slow", "--json", redis=redis_url).stdout)["quarantined"] == "slow"
        # The slow jobs started before the quarantine end; every one after it started under its rule.
        assert wait_until(lambda: slow_done() >= done_then + running_then, 20, 0.1)
        held = []
        for _ in range(60):
            held.append(int(r.hget(GROUP.inflight, "slow") or 0))
            time.sleep(0.05)
        assert max(held) <= 2, f"a slow tenant held {max(held)} of 4 slots after its quarantine"
        assert any(t.startswith("q") and a > 0 for t, a, _ in spans(redis_url)), "the quick tenants go on"
    finally:
        stop([worker])


def test_settings_survive_a_worker_restart_and_the_resource_layers_fall_through(redis_url: str) -> None:
    store = TenantSettingsStore(connect(redis_url))
    store.configure(
        "tenant-",
        TenantSettings(weight=2, rate=50),
        [TenantOverride(tenant="gold", weight=5, max_in_flight=10)],
    )
    store.set("tenant-", "gold", TenantSettings(max_in_flight=3))
    run_in_process(redis_url, tenants={}, burst=True)  # a worker came and went: nothing of this is its
    gold = store.show("tenant-", "gold")
    assert (gold.weight, gold.max_in_flight, gold.rate, gold.burst) == (5, 3, 50.0, 50)
    assert gold.sources == {"weight": "override", "max_in_flight": "run-time", "rate": "defaults", "burst": "built-in"}
    store.reset("tenant-", "gold")
    assert store.show("tenant-", "gold").max_in_flight == 10
    assert store.show("tenant-", "never-seen").weight == 2, "a tenant never seen shows the defaults"
    r = redis.Redis.from_url(redis_url)
    assert r.hget(GROUP.tmeta, "wmax") == b"5"
    again = [TenantOverride(tenant="gold", weight=5, max_in_flight=10)]
    assert store.configure("tenant-", TenantSettings(weight=2, rate=50), again) is False, "unchanged: not written"
    assert store.configure("tenant-", TenantSettings(weight=2), again) is True
    assert r.hget(GROUP.tconf, "*") == b"2,,,"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["set", "t", "--weight", "0"], "--weight: must be at least 1, not 0"),
        (["set", "t", "--weight", "-3"], "--weight: must be at least 1"),
        (["set", "t", "--max-in-flight", "0"], "--max-in-flight: must be at least 1, not 0"),
        (["set", "t", "--rate", "ten/s"], "--rate: 'ten/s' is not a rate"),
        (["set", "t", "--burst", "1.5"], "--burst: '1.5' is not a whole number"),
        (["set", "bad id:{x}", "--weight", "2"], "is not a tenant id"),
        (["set", "t"], "nothing to set"),
        (["show", "t", "--group", "bad prefix"], "--group: 'bad prefix' is not a tenant group"),
        (["reset", "-x"], "error"),
    ],
)
def test_bad_input_to_fairway_tenant_is_one_line_exit_2_and_writes_nothing(
    redis_url: str, args: list[str], words: str
) -> None:
    done = fairway("tenant", *args, redis=redis_url)
    assert done.returncode == 2, done
    assert words in done.stderr and "Traceback" not in done.stderr
    if args[1] != "-x":
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert redis.Redis.from_url(redis_url).dbsize() == 0, "nothing written"


@pytest.mark.cluster
def test_weights_and_caps_on_a_cluster(cluster_url: str) -> None:
    client = Client(cluster_url)
    for tenant, jobs in (("heavy", 300), ("b", 100), ("c", 100)):
        client.enqueue_many("noop", [[]] * jobs, tenant=tenant)
    cluster = connect(cluster_url)
    store = TenantSettingsStore(cluster)
    store.set("tenant-", "heavy", TenantSettings(weight=3))
    lines = run_in_process(cluster_url, tenants={}, burst=True, maintenance_interval_s=0.05)
    first = Counter(line["tenant"] for line in lines[:400])
    assert abs(first["heavy"] / 400 - 0.6) <= 0.02, first
    client.enqueue_many("sleep", [[0.2]] * 8, tenant="capped")
    store.set("tenant-", "capped", TenantSettings(max_in_flight=2))
    seen: list[int] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            seen.append(int(cluster.hget(GROUP.inflight, "capped") or 0))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        lines = run_in_process(cluster_url, tenants={}, burst=True, concurrency=8, maintenance_interval_s=0.05)
    finally:
        watching.set()
        watcher.join()
    assert len(lines) == 8 and max(seen) == 2

"""Round-robin over active tenants with a cap of K in a row, shared through Redis, O(1) per pop."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.job import JobError, new_job
from fairway.queue.protocol.keys import TenantGroupKeys
from fairway.queue.runtime.fetch import StandaloneFetcher
from fairway.resource.worker_settings import WorkerSettings
from support.workers import run_in_process


def runs(tenants: list[str]) -> list[tuple[str, int]]:
    return [(t, len(list(group))) for t, group in itertools.groupby(tenants)]


def tenant_lines(lines: list[dict[str, Any]]) -> list[str]:
    return [str(line["tenant"]) for line in lines]


def test_cap_of_5_never_serves_more_than_5_in_a_row_while_the_other_has_work(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 60, tenant="a")
    client.enqueue_many("noop", [[]] * 23, tenant="b")
    order = tenant_lines(run_in_process(redis_url, tenants={"max_consecutive_jobs": 5}, burst=True))
    both_busy = order[: 2 * 23]
    assert all(length <= 5 for _, length in runs(both_busy)), runs(both_busy)
    assert runs(order)[:4] == [("a", 5), ("b", 5), ("a", 5), ("b", 5)]
    assert order.count("a") == 60 and order.count("b") == 23


def test_cap_of_1_alternates_strictly(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 20, tenant="a")
    client.enqueue_many("noop", [[]] * 20, tenant="b")
    order = tenant_lines(run_in_process(redis_url, tenants={"max_consecutive_jobs": 1}, burst=True))
    assert order == ["a", "b"] * 20


def test_empty_tenants_are_skipped_and_new_ones_join_the_rotation(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 2, tenant="small")
    client.enqueue_many("noop", [[]] * 12, tenant="big")
    order = tenant_lines(run_in_process(redis_url, tenants={"max_consecutive_jobs": 3}, burst=True))
    assert order == ["small", "small"] + ["big"] * 12
    group = TenantGroupKeys("fairway", "tenant-")
    r = redis.Redis.from_url(redis_url)
    assert r.llen(group.ring) == 0 and r.llen(group.qring) == 0, "drained tenants leave the ring"


def test_the_rotation_is_shared_by_every_worker(redis_url: str) -> None:
    """Two workers taking turns on one Redis still see one rotation: the cap counts across them."""
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 20, tenant="a")
    client.enqueue_many("noop", [[]] * 20, tenant="b")
    settings = WorkerSettings(tenants={"max_consecutive_jobs": 2})
    workers = [StandaloneFetcher(connect(redis_url), settings) for _ in range(2)]
    order = []
    acks: list[tuple[Reservation, int]] = []
    for turn in range(12):  # alternate between two workers, each acknowledging the other's last job
        (got,) = workers[turn % 2].reserve(acks, 1)
        acks = [(got, -1)]
        order.append(got.tenant)
    assert order == ["a", "a", "b", "b"] * 3


def test_the_tenant_group_takes_part_in_the_weighted_scan(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 3000, queue="default")
    for tenant in ("1", "2", "3"):
        client.enqueue_many("noop", [[]] * 1000, tenant=tenant)
    lines = run_in_process(redis_url, queues=["default"], tenants={"weight": 3}, max_jobs=2000)
    from_tenants = sum(1 for line in lines if line["tenant"]) / len(lines)
    assert abs(from_tenants - 0.75) < 0.03
    assert {line["queue"] for line in lines if line["tenant"]} == {"tenant-1", "tenant-2", "tenant-3"}


def test_delayed_and_retried_tenant_jobs_return_to_their_tenant(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue("noop", tenant="later", delay=0.3)
    client.enqueue("fail", "once", tenant="retry")
    lines = run_in_process(redis_url, tenants={}, burst=True, tries=2, maintenance_interval_s=0.05)
    assert sorted((line["tenant"], line["outcome"]) for line in lines) == [
        ("later", "ok"),
        ("retry", "failed"),
        ("retry", "retry"),
    ]
    (record,) = Inspector(connect(redis_url)).failed_records("@tenant-")
    assert record["tenant"] == "retry"


def test_an_expired_tenant_reservation_goes_back_to_its_tenant(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="t1")
    # Reserved for 1 ms (retry_after 0.001 s): the worker "died".
    dying = StandaloneFetcher(connect(redis_url), WorkerSettings(tenants={}, timeout_s=0.0005, retry_after_s=0.001))
    (got,) = dying.reserve()
    assert got.tenant == "t1"
    time.sleep(0.01)
    alive = StandaloneFetcher(connect(redis_url), WorkerSettings(tenants={}))
    assert alive.maintain()[1] == 1
    (again,) = alive.reserve()
    assert again.payload == got.payload
    assert (again.attempts, again.lost) == (1, 1), "a lost attempt is given back and counted as lost"
    r = redis.Redis.from_url(redis_url)
    assert int(r.hget(TenantGroupKeys("fairway", "tenant-").inflight, "t1") or 0) == 1


@pytest.mark.parametrize("tenant", ["{42}", "a b", "x:y", "*", ""])
def test_bad_tenant_ids_are_refused_at_enqueue(redis_url: str, tenant: str) -> None:
    with pytest.raises(JobError, match="tenant id"):
        Client(redis_url).enqueue("noop", tenant=tenant)
    assert redis.Redis.from_url(redis_url).dbsize() == 0


def test_enqueue_chunked_splits_rows_in_one_pipeline(redis_url: str) -> None:
    client = Client(redis_url)
    rows = [{"row": i} for i in range(1234)]
    ids = client.enqueue_chunked("noop", rows, chunk_size=500, tenant="importer")
    assert len(ids) == 3
    r = redis.Redis.from_url(redis_url)
    import json

    docs = [json.loads(d) for d in r.lrange(TenantGroupKeys("fairway", "tenant-").tenant("importer"), 0, -1)]
    assert [len(doc["args"][0]) for doc in docs] == [500, 500, 234]
    assert docs[2]["args"][0][-1] == {"row": 1233}
    assert {doc["queue"] for doc in docs} == {"tenant-importer"}
    with pytest.raises(JobError, match="enqueue_chunked"):
        client.enqueue("noop", ["x" * 600_000], tenant="importer")
    assert len(new_job("noop", "q", [rows], {}).encode()) > 10_000

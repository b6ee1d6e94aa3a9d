"""One reservation per job: reservations and attempt counters are keyed by the job's id plus the
holding worker's reservation tag, never by the document's bytes (issue 21, defect 10: two copies of
one document shared a reservation and a counter; the second was failed as MaxAttemptsExceeded and its
failure removed the running copy's reservation).

A copy of a job (the same document sent twice, as docs/protocol.md advises after an enqueue timed out,
or a new document with the same id) taken while the job is held by a worker is that job, and is
dropped; one taken after the job was settled runs as a job of its own, from attempt 1. A worker whose
lease ran out cannot settle the reservation of the worker that holds the job now."""

from __future__ import annotations

import time

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.access.producer import Producer
from fairway.queue.connection import connect
from fairway.queue.protocol.job import new_job
from fairway.queue.protocol.keys import QueueKeys, TenantGroupKeys
from fairway.queue.runtime.fetch import StandaloneFetcher, fetcher_for
from fairway.resource.worker_settings import WorkerSettings
from support.workers import job_lines, start_worker, started_keys


def enqueue_twice(redis_url: str, seconds: float, *, same_bytes: bool) -> None:
    producer = Producer(connect(redis_url))
    document = new_job("record", "default", ["same", seconds], {}, job_id="same-doc").encode()
    producer.enqueue("default", document)
    if not same_bytes:
        time.sleep(0.002)  # a new enqueued_at: other bytes, the same id
        document = new_job("record", "default", ["same", seconds], {}, job_id="same-doc").encode()
    producer.enqueue("default", document)


@pytest.mark.parametrize("same_bytes", [True, False], ids=["same-bytes", "same-id"])
def test_a_copy_taken_while_the_other_runs_is_the_same_job(redis_url: str, same_bytes: bool) -> None:
    enqueue_twice(redis_url, 0.5, same_bytes=same_bytes)
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "2", "--burst")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert started_keys(redis_url) == ["same"], "one run"
    assert [(line["outcome"], line["attempt"]) for line in job_lines(out)] == [("ok", 1)]
    (stats,) = Inspector(connect(redis_url)).stats(["default"])
    assert (stats.ready, stats.reserved, stats.failed) == (0, 0, 0)


@pytest.mark.parametrize("same_bytes", [True, False], ids=["same-bytes", "same-id"])
def test_a_copy_taken_after_the_first_was_settled_runs_as_its_own_job(redis_url: str, same_bytes: bool) -> None:
    enqueue_twice(redis_url, 0.0, same_bytes=same_bytes)
    worker = start_worker(redis_url, "--queues", "default", "--burst")  # one slot: one copy at a time
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert started_keys(redis_url) == ["same", "same"]
    assert [(line["outcome"], line["attempt"]) for line in job_lines(out)] == [("ok", 1), ("ok", 1)]
    (stats,) = Inspector(connect(redis_url)).stats(["default"])
    assert (stats.reserved, stats.failed) == (0, 0)


def test_a_tenant_jobs_copy_is_dropped_while_held_and_same_ids_of_two_tenants_are_two_jobs(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue("record", "a", 0.5, tenant="t1", job_id="order-1")
    client.enqueue("record", "a", 0.5, tenant="t1", job_id="order-1")  # the same job, sent again
    client.enqueue("record", "b", 0.5, tenant="t2", job_id="order-1")  # another tenant's job
    worker = start_worker(redis_url, "--tenants", "tenant-", "--concurrency", "3", "--burst")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert sorted(started_keys(redis_url)) == ["a", "b"]
    assert sorted((line["tenant"], line["outcome"]) for line in job_lines(out)) == [("t1", "ok"), ("t2", "ok")]


def test_reservations_name_their_worker_and_are_keyed_by_job_id(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", job_id="job-7")
    fetcher = StandaloneFetcher(connect(redis_url), WorkerSettings(queues=["default"]), identity="pod-a:42")
    (got,) = fetcher.reserve()
    r = redis.Redis.from_url(redis_url)
    k = QueueKeys("fairway", "default")
    assert r.zrange(k.reserved, 0, -1) == [got.member] and got.member == b"job-7\tpod-a:42:1.1"
    assert r.hget(k.leased, "job-7") == b"pod-a:42:1.1\t" + got.payload
    assert r.hget(k.attempts, "job-7") == b"1"
    assert fetcher.ack(got) and r.zcard(k.reserved) == r.hlen(k.leased) == r.hlen(k.attempts) == 0


@pytest.mark.parametrize("settle", ["ack", "release", "fail", "renew"])
@pytest.mark.parametrize("tenant", [False, True], ids=["queue", "tenant"])
def test_a_worker_whose_lease_ran_out_cannot_settle_the_new_holders_reservation(
    redis_url: str, settle: str, tenant: bool
) -> None:
    client = Client(redis_url)
    client.enqueue("noop", job_id="job-1", **({"tenant": "t1"} if tenant else {}))
    group: dict[str, object] = {"tenants": {}} if tenant else {"queues": ["default"]}
    stale = fetcher_for(
        connect(redis_url), WorkerSettings(**group, timeout_s=0.0005, retry_after_s=0.001), identity="a"
    )
    (old,) = stale.reserve()
    time.sleep(0.01)
    holder = fetcher_for(connect(redis_url), WorkerSettings(**group), identity="b")
    assert holder.maintain()[1] == 1, "the stale lease ran out: back to ready"
    (new,) = holder.reserve()
    assert new.payload == old.payload and new.member != old.member and (new.attempts, new.lost) == (1, 1)
    if settle == "ack":
        assert not stale.ack(old)
    elif settle == "release":
        assert not stale.release(old, 0)
    elif settle == "fail":
        stale.fail(old, "job-1", {"exception": "Boom"})
    else:
        assert stale.renew([old]).gone == [old]
    r = redis.Redis.from_url(redis_url)
    keys = TenantGroupKeys("fairway", "tenant-") if tenant else QueueKeys("fairway", "default")
    assert r.zrange(keys.reserved, 0, -1) == [new.member], "the new holder's reservation is untouched"
    assert holder.renew([new]).gone == [] and holder.ack(new)
    assert r.zcard(keys.reserved) == r.hlen(keys.leased) == r.hlen(keys.attempts) == 0

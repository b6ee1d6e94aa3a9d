"""Unique jobs: while a job with the same unique key waits, is delayed or runs, an enqueue returns its
id and writes nothing; settling the job (done or failed for good) or `unique_for` running out frees
the key. The claim is made in the enqueue script, so racing producers get one job. Real Redis, real
worker processes, standalone and the 3-node cluster."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.queue.protocol.job import JobError
from fairway.queue.protocol.keys import QueueKeys, TenantGroupKeys
from support.cli import fairway
from support.workers import job_lines, start_worker, wait_until, worker_env

KINDS = ["standalone", "cluster"]


def url_of(kind: str, request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("redis_url" if kind == "standalone" else "cluster_url")
    return url


@pytest.mark.parametrize("kind", KINDS)
def test_a_held_key_returns_the_holders_id_until_the_job_settles(kind: str, request: pytest.FixtureRequest) -> None:
    url = url_of(kind, request)
    client, queue = Client(url), f"u-{kind}"
    first = client.enqueue("noop", 1, queue=queue, unique_key="invoice:42")
    again = client.enqueue("noop", 2, queue=queue, unique_key="invoice:42")
    assert (first.duplicate, again.duplicate, again) == (False, True, first)
    other = client.enqueue("noop", queue=queue, unique_key="invoice:43")
    assert not other.duplicate
    redis = connect(url)
    assert redis.llen(QueueKeys("fairway", queue).ready) == 2, "the duplicate wrote nothing"

    worker = start_worker(url, "--queues", queue, "--burst", *(["--cluster"] if kind == "cluster" else []))
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    assert sorted(line["id"] for line in job_lines(out)) == sorted([first, other])
    assert redis.get(QueueKeys("fairway", queue).unique("invoice:42")) is None, "settling released the key"
    assert redis.hgetall(QueueKeys("fairway", queue).attempts) == {}, "nothing left behind"
    fresh = client.enqueue("noop", queue=queue, unique_key="invoice:42")
    assert not fresh.duplicate and fresh != first


@pytest.mark.parametrize("kind", KINDS)
def test_tenant_jobs_are_unique_per_tenant_and_a_failure_frees_the_key(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url = url_of(kind, request)
    client = Client(url)
    acme = client.enqueue("fail", "boom", tenant="acme", unique_key="sync")
    assert client.enqueue("noop", tenant="acme", unique_key="sync") == acme
    globex = client.enqueue("noop", tenant="globex", unique_key="sync")
    assert not globex.duplicate, "another tenant's key is another key"
    worker = start_worker(url, "--tenants", "tenant-", "--burst", *(["--cluster"] if kind == "cluster" else []))
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    outcomes = {line["id"]: line["outcome"] for line in job_lines(out)}
    assert outcomes == {acme: "failed", globex: "ok"}
    assert [r["id"] for r in Inspector(connect(url)).failed_records("@tenant-")] == [acme]
    assert not client.enqueue("noop", tenant="acme", unique_key="sync").duplicate, "failing for good frees it"
    assert connect(url).exists(TenantGroupKeys("fairway", "tenant-").unique("acme", "sync")) == 1


def test_a_retry_and_a_delay_keep_the_key_and_unique_for_bounds_it(redis_url: str) -> None:
    client = Client(redis_url)
    delayed = client.enqueue("noop", queue="later", delay=30, unique_key="report")
    assert client.enqueue("noop", queue="later", unique_key="report") == delayed, "a delayed job holds its key"

    retried = client.enqueue("fail", "once", queue="default", unique_key="flaky", max_tries=2)
    worker = start_worker(redis_url, "--queues", "default", "--backoff", "60")  # the retry waits 60 s
    try:
        wait_until(lambda: connect(redis_url).zcard(QueueKeys("fairway", "default").delayed), 20)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=30)
    assert [(line["id"], line["outcome"]) for line in job_lines(out)] == [(retried, "retry")]
    assert client.enqueue("noop", unique_key="flaky") == retried, "a job waiting for its retry holds its key"

    short = client.enqueue("noop", queue="brief", unique_for=0.3)
    assert client.enqueue("noop", queue="brief", unique_for=0.3) == short
    time.sleep(0.5)
    assert not client.enqueue("noop", queue="brief", unique_for=0.3).duplicate, "unique_for ran out"
    assert connect(redis_url).llen(QueueKeys("fairway", "brief").ready) == 2


def test_unique_for_alone_keys_by_handler_and_arguments(redis_url: str) -> None:
    client = Client(redis_url)
    one = client.enqueue("noop", 1, kwargs={"b": 2, "a": 1}, unique_for=60)
    assert client.enqueue("noop", 1, kwargs={"a": 1, "b": 2}, unique_for=60) == one, "kwargs order is not the key"
    assert not client.enqueue("noop", 2, kwargs={"a": 1, "b": 2}, unique_for=60).duplicate
    assert not client.enqueue("sleep", 1, kwargs={"a": 1, "b": 2}, unique_for=60).duplicate
    assert connect(redis_url).llen(QueueKeys("fairway", "default").ready) == 3


RACER = """
import json, sys
from fairway import Client
client = Client(sys.argv[1])
print(json.dumps([client.enqueue("noop", n, queue="race", unique_key=f"k{n}") for n in range(300)]))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_two_racing_producers_make_one_job_per_key(kind: str, request: pytest.FixtureRequest) -> None:
    url = url_of(kind, request)
    env = worker_env(url)
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, url], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    a, b = (json.loads(racer.communicate(timeout=60)[0]) for racer in racers)
    assert a == b, "both producers were told the same job for each key"
    ready = connect(url).lrange(QueueKeys("fairway", "race").ready, 0, -1)
    assert sorted(json.loads(doc)["id"] for doc in ready) == sorted(a), "exactly one job per key"


def test_bad_unique_options_are_refused_naming_the_field_and_write_nothing(redis_url: str) -> None:
    client = Client(redis_url)
    for options, words in [
        ({"unique_key": "x" * 201}, "unique_key"),
        ({"unique_key": "a\nb"}, "control characters"),
        ({"unique_for": 0}, "unique_for 0 is out of range"),
        ({"unique_for": "60"}, "unique_for '60'"),
    ]:
        with pytest.raises(JobError, match=words) as caught:
            client.enqueue("noop", queue="bad", **options)  # type: ignore[arg-type]
        assert caught.value.code == "BAD_UNIQUE"
    redis = connect(redis_url)
    keys = QueueKeys("fairway", "bad")
    # a producer writing documents itself meets the script's own refusal
    for document, words in [
        ({"unique_for": 5}, "unique_for needs unique_key"),
        ({"unique_key": "x" * 201}, "unique_key must be 1-200 bytes"),
        ({"unique_key": "k", "unique_for": -1}, "unique_for must be seconds"),
    ]:
        raw = json.dumps({"id": "j1", "handler": "noop", "queue": "bad", **document})
        with pytest.raises(Exception, match=f"BAD_UNIQUE {words}"):
            redis.evalsha(client.producer.scripts._registered["enqueue"].sha, 3, keys.ready, keys.notify,
                          keys.delayed, raw, "0", "bad")  # fmt: skip
    assert redis.keys("*bad*") == []

    result = fairway("enqueue", "noop", "--queue", "bad", "--unique-key", "x" * 201, redis=redis_url)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--unique-key" in result.stderr


def test_fairway_enqueue_says_which_job_holds_the_key(redis_url: str) -> None:
    first = fairway("enqueue", "noop", "--unique-key", "nightly", redis=redis_url, check=True).stdout.strip()
    second = fairway("enqueue", "noop", "--unique-key", "nightly", redis=redis_url, check=True)
    assert second.stdout.strip() == first
    assert f"job {first} holds this unique key" in second.stderr and "1 job not enqueued" in second.stderr
    third = fairway("enqueue", "noop", "--unique-for", "60", "--count", "3", redis=redis_url, check=True)
    assert third.stdout.strip() == "enqueued 1 job" and "2 jobs not enqueued" in third.stderr


def test_enqueue_many_refuses_a_handler_declaring_unique_for_and_writes_nothing(redis_url: str) -> None:
    from fairway.queue.runtime.handlers import Registry, job

    @job(name="report", registry=Registry(), unique_for=60)
    def report(day: str) -> None: ...

    client = Client(redis_url)
    with pytest.raises(JobError, match="'report' declares unique_for") as caught:
        client.enqueue_many(report, [["mon"], ["tue"]])
    assert caught.value.code == "BAD_OPTION"
    assert connect(redis_url).keys("*") == []
    assert client.enqueue(report, "mon", queue="reports") == client.enqueue(report, "mon", queue="reports")

"""Batches (docs/batches.md): a callback runs exactly once when every job of a sealed batch has ended,
however workers die; each job is counted once (succeeded, failed, cancelled); tenant batches from
enqueue_chunked; refusals write nothing; the CLI. Real Redis and real worker processes, standalone
and the 3-node cluster."""

from __future__ import annotations

import json
import random
import signal
import time

import pytest

from fairway import Call
from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.protocol.job import JobError
from support.cli import fairway
from support.workers import WorkerProcess, start_worker, wait_until

KINDS = ["standalone", "cluster"]


def url_for(kind: str, request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("redis_url" if kind == "standalone" else "cluster_url")
    return url


def done(notes: str) -> list[str]:
    return [v.decode() for v in connect(notes).lrange("test:done", 0, -1)]


def burst(url: str, notes: str, kind: str, *args: str) -> None:
    cluster = ["--cluster"] if kind == "cluster" else []
    worker = start_worker(url, "--burst", *cluster, *args, test_redis=notes)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err[-2000:]


@pytest.mark.parametrize("kind", KINDS)
def test_on_complete_runs_once_with_every_job_counted_and_on_success_not_after_a_failure(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url, notes = url_for(kind, request), request.getfixturevalue("redis_url")
    client = Client(url)
    with client.batch(queue="imports") as batch:
        batch.enqueue_many("record", [[f"row-{i}"] for i in range(30)])
        batch.enqueue_many("fail", [["bad row"]] * 10)
        batch.on_complete("record", "complete")
        batch.on_success("record", "success")
    assert client.batch_status(batch.id).pending == 40  # type: ignore[union-attr]
    burst(url, notes, kind, "--queues", "imports")
    status = client.batch_status(batch.id)
    assert status is not None and status.done
    assert (status.total, status.pending, status.succeeded, status.failed, status.cancelled) == (40, 0, 30, 10, 0)
    ran = done(notes)
    assert ran.count("complete") == 1 and "success" not in ran and ran[-1] == "complete", ran
    assert sorted(ran[:-1]) == sorted(f"row-{i}" for i in range(30))


@pytest.mark.parametrize("kind", KINDS)
def test_a_tenants_chunked_import_stays_in_its_queue_and_its_callback_runs_after_the_last_chunk(
    kind: str, request: pytest.FixtureRequest
) -> None:
    url, notes = url_for(kind, request), request.getfixturevalue("redis_url")
    client = Client(url)
    rows = [f"r{i}" for i in range(10)]
    ids = client.enqueue_chunked(
        "import_rows", rows, chunk_size=1, tenant="acme", on_success=Call("record", ["imported"])
    )
    assert len(ids) == 10 and ids.batch_id  # type: ignore[attr-defined]
    group = connect(url)
    assert group.llen("fairway:{tenants:tenant-}:t:acme") == 10, "the chunks wait in the tenant's own queue"
    burst(url, notes, kind, "--tenants", "tenant-")
    ran = done(notes)
    assert ran[-1] == "imported" and ran.count("imported") == 1 and sorted(ran[:-1]) == sorted(rows), ran
    status = client.batch_status(ids.batch_id)  # type: ignore[attr-defined]
    assert status is not None and (status.succeeded, status.tenant, status.served_name) == (10, "acme", "@tenant-")


def test_kill_9_and_sigterm_never_run_the_callback_twice_nor_lose_a_job(redis_url: str) -> None:
    """3 workers run a 300-job batch while one is killed (-9, or TERM) and replaced every 0.5-1.5 s:
    the callback runs exactly once, after every job; each job is counted exactly once."""
    client = Client(redis_url)
    with client.batch(queue="storm") as batch:
        batch.enqueue_many("record", [[f"job-{i}", 0.02] for i in range(300)])
        batch.on_complete("record", "callback")
    rng = random.Random(42)
    workers: list[WorkerProcess] = [start_worker(redis_url, "--queues", "storm") for _ in range(3)]
    kills = 0
    try:
        deadline = time.monotonic() + 120
        while not (client.batch_status(batch.id) or batch).done and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(rng.uniform(0.5, 1.5))
            victim = rng.randrange(3)
            workers[victim].send_signal(rng.choice([signal.SIGKILL, signal.SIGKILL, signal.SIGTERM]))
            workers[victim].communicate(timeout=30)
            workers[victim] = start_worker(redis_url, "--queues", "storm")
            kills += 1
        assert wait_until(lambda: "callback" in done(redis_url), 30), "the callback ran"
        time.sleep(2)  # (a second callback, were there one, would come within a maintenance round)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.communicate(timeout=30)
    ran = done(redis_url)
    status = client.batch_status(batch.id)
    assert status is not None and (status.total, status.succeeded, status.pending) == (300, 300, 0)
    assert ran.count("callback") == 1, "exactly once"
    assert ran.index("callback") == len(ran) - 1 or set(ran[ran.index("callback") + 1 :]) <= {
        f"job-{i}" for i in range(300)
    }, "runs again only of jobs whose worker died before settling them"
    assert {f"job-{i}" for i in range(300)} <= set(ran), "every job ran"
    assert kills >= 3, kills


def test_a_cancelled_job_is_counted_and_on_success_does_not_run(redis_url: str) -> None:
    client = Client(redis_url)
    batch = client.batch(queue="c")
    first, second = batch.enqueue("record", "kept"), batch.enqueue("record", "dropped")
    batch.on_complete("record", "complete").on_success("record", "success")
    batch.seal()
    assert client.cancel(second, queue="c") == "cancelled"
    burst(redis_url, redis_url, "standalone", "--queues", "c")
    status = client.batch_status(batch.id)
    assert status is not None and (status.succeeded, status.cancelled) == (1, 1), status
    assert done(redis_url) == ["kept", "complete"], first


def test_refusals_write_nothing(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(redis_url)
    empty = client.batch(queue="q")
    with pytest.raises(JobError, match="at least one job") as caught:
        empty.seal()
    assert caught.value.code == "BAD_BATCH"
    batch = client.batch(queue="q")
    batch.enqueue("noop")
    batch.seal()
    with pytest.raises(JobError, match="sealed"):
        batch.enqueue("noop")
    with pytest.raises(JobError, match="ttl"):
        client.batch(queue="q", ttl=0)
    import fairway.queue.access.batches as batches

    monkeypatch.setattr(batches, "MAX_BATCH_JOBS", 5)
    big = client.batch(queue="big")
    with pytest.raises(JobError, match="at most 5 jobs"):
        big.enqueue_many("noop", [[]] * 6)
    r = connect(redis_url)
    assert r.llen("fairway:{big}:ready") == 0 and not r.keys("fairway:{big}:batch:*")
    # The script refuses a bad document in the middle of a call: nothing of the call is written.
    from fairway.queue.protocol import calls
    from fairway.queue.protocol.keys import QueueKeys
    from fairway.queue.protocol.scripts import Scripts

    good = b'{"id":"a","handler":"noop","queue":"raw","args":[],"kwargs":{}}'
    with pytest.raises(Exception, match="BAD_HANDLER"):
        Scripts(r).run(calls.batch_add(QueueKeys("fairway", "raw"), None, "b1", None, "raw", 60_000,
                                       [good, good.replace(b"noop", b"no op")]))  # fmt: skip
    assert r.llen("fairway:{raw}:ready") == 0 and not r.exists("fairway:{raw}:batch:b1")


def test_the_cli_lists_and_shows_batches(redis_url: str) -> None:
    client = Client(redis_url)
    with client.batch(tenant="acme") as batch:
        batch.enqueue_many("noop", [[]] * 3)
    listed = fairway("batches", redis=redis_url)
    assert listed.returncode == 0 and batch.id in listed.stdout and "@tenant- acme" in listed.stdout
    shown = json.loads(fairway("batch", "show", batch.id, "--json", redis=redis_url).stdout)
    assert (shown["total"], shown["pending"], shown["sealed"]) == (3, 3, True)
    missing = fairway("batch", "show", "nope", redis=redis_url)
    assert missing.returncode == 1 and "no batch nope" in missing.stderr
    assert fairway("batch", "show", "bad id!", redis=redis_url).returncode == 2


def test_a_chain_runs_a_step_then_a_group_then_a_step_that_reads_their_results(redis_url: str) -> None:
    client = Client(redis_url)
    chain = client.chain(queue="etl")
    first = chain.then("step", "fetch")
    group = chain.then_group("step", [[f"part-{i}"] for i in range(5)])
    chain.then("gather", "etl", first, *group)  # a chord: after the whole group
    chain_id = chain.start()
    assert connect(redis_url).llen("fairway:{etl}:ready") == 1, "only the first step is ready"
    burst(redis_url, redis_url, "standalone", "--queues", "etl", "--concurrency", "4")
    ran = done(redis_url)
    assert ran[0] == "fetch" and sorted(ran[1:6]) == [f"part-{i}" for i in range(5)], ran
    assert ran[6:] == ["gathered:fetch,part-0,part-1,part-2,part-3,part-4"], ran
    status = client.chain_status(chain_id)
    assert status is not None and status.done and status.failed_step is None
    assert [(s.total, s.succeeded) for s in status.steps] == [(1, 1), (5, 5), (1, 1)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_step_stops_the_chain_and_the_status_says_which(kind: str, request: pytest.FixtureRequest) -> None:
    url, notes = url_for(kind, request), request.getfixturevalue("redis_url")
    client = Client(url)
    chain = client.chain(tenant="acme")
    chain.then("step", "one")
    chain.then("fail", "step two fails")
    chain.then("step", "never")
    chain_id = chain.start()
    burst(url, notes, kind, "--tenants", "tenant-")
    assert done(notes) == ["one"]
    status = client.chain_status(chain_id)
    assert status is not None and status.done and status.failed_step == 2
    assert [s.pending for s in status.steps] == [0, 0, 1], "the third step never started"
    with pytest.raises(JobError, match="at least one step"):
        client.chain(queue="q").start()


def test_a_chain_under_kill_9_runs_each_step_after_the_one_before_and_its_last_step_once(redis_url: str) -> None:
    """3 workers run a chain of 100 jobs, then 100 more, then one, while one worker is killed (-9 or TERM)
    and replaced every 0.5-1.5 s: no job of a step starts before every job of the step before ended,
    every job is counted once, and the last step runs exactly once."""
    client = Client(redis_url)
    chain = client.chain(queue="chained")
    chain.then_group("record", [[f"one-{i}", 0.02] for i in range(100)])
    chain.then_group("record", [[f"two-{i}", 0.02] for i in range(100)])
    chain.then("record", "last")
    chain_id = chain.start()
    rng = random.Random(7)
    workers: list[WorkerProcess] = [start_worker(redis_url, "--queues", "chained") for _ in range(3)]
    kills = 0
    try:
        deadline = time.monotonic() + 120
        while "last" not in done(redis_url) and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.5, 1.5))
            victim = rng.randrange(3)
            workers[victim].send_signal(rng.choice([signal.SIGKILL, signal.SIGKILL, signal.SIGTERM]))
            workers[victim].communicate(timeout=30)
            workers[victim] = start_worker(redis_url, "--queues", "chained")
            kills += 1
        time.sleep(2)  # (a second run of the last step, were there one, would come within a maintenance round)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.communicate(timeout=30)
    started = [v.decode() for v in connect(redis_url).lrange("test:started", 0, -1)]
    first_two = min(i for i, label in enumerate(started) if label.startswith("two-"))
    assert all(label.startswith("one-") for label in started[:first_two]), "step 2 waited for step 1"
    assert {f"one-{i}" for i in range(100)} <= set(started[:first_two]), "every step-1 job ran first"
    assert done(redis_url).count("last") == 1 and started.count("last") == 1, "the last step exactly once"
    status = client.chain_status(chain_id)
    assert status is not None and status.done and status.failed_step is None
    assert [(s.total, s.succeeded, s.pending) for s in status.steps] == [(100, 100, 0), (100, 100, 0), (1, 1, 0)]
    assert kills >= 3, kills

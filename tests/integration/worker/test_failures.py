"""Failures: retries with backoff, the failed store, timeouts, stubborn jobs, bad payloads, unknown handlers."""

from __future__ import annotations

import hashlib
import itertools
import json
import signal
import time

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.cli import fairway
from support.redis_procs import RedisProcess, free_port
from support.workers import done_keys, job_lines, start_worker, started_keys, wait_until


def test_retries_wait_out_their_backoff_then_succeed(redis_url: str, tmp_path) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("backoff_s: [1, 2]\nmaintenance_interval_s: 0.1\n")
    Client(redis_url).enqueue("flaky", "k", 2, queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--tries", "3", "--config", str(config))
    try:
        assert wait_until(lambda: done_keys(redis_url) == ["k"], 15)
    finally:
        worker.terminate()
        out, _ = worker.communicate(timeout=10)
    lines = job_lines(out)
    assert [(line["attempt"], line["outcome"]) for line in lines] == [(1, "retry"), (2, "retry"), (3, "ok")]
    gaps = [b["started_at"] - a["finished_at"] for a, b in itertools.pairwise(lines)]
    assert 1000 <= gaps[0] < 1600 and 2000 <= gaps[1] < 2600, gaps


def test_exhausted_tries_land_in_the_failed_store_and_can_be_retried_or_forgotten(redis_url: str) -> None:
    client = Client(redis_url)
    first = client.enqueue("fail", "first boom", queue="default")
    second = client.enqueue("fail", "second boom", queue="default")
    out = fairway(
        "worker",
        "--redis",
        redis_url,
        "--queues",
        "default",
        "--tries",
        "2",
        "--burst",
        "--log-format",
        "json",
        test_redis=redis_url,
    )
    assert out.returncode == 0
    assert [line["outcome"] for line in job_lines(out.stdout)] == ["retry", "retry", "failed", "failed"]

    listed = fairway("failed", "list", "--redis", redis_url, "--queue", "default", "--json", test_redis=redis_url)
    records = {r["id"]: r for r in json.loads(listed.stdout)}
    assert set(records) == {first, second}
    assert records[first]["exception"] == "JobFailed"
    assert records[first]["message"] == "first boom"
    assert records[first]["attempts"] == 2
    assert "Traceback" in records[first]["traceback"]

    assert (
        fairway("failed", "forget", second, "--redis", redis_url, "--queue", "default", test_redis=redis_url).returncode
        == 0
    )
    assert (
        fairway("failed", "retry", first, "--redis", redis_url, "--queue", "default", test_redis=redis_url).returncode
        == 0
    )
    assert (
        fairway("failed", "retry", "nope", "--redis", redis_url, "--queue", "default", test_redis=redis_url).returncode
        == 1
    )
    stats = Inspector(connect(redis_url)).stats(["default"])[0]
    assert (stats.ready, stats.failed) == (1, 0)


def test_a_job_past_its_timeout_is_stopped_and_counts_as_a_failed_attempt(redis_url: str) -> None:
    Client(redis_url).enqueue("sleep", 30, queue="default", timeout=0.5)
    started = time.monotonic()
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", test_redis=redis_url
    )  # a burst run fails a job for a handler it lacks at once
    assert time.monotonic() - started < 10
    (line,) = job_lines(out.stdout)
    assert line["outcome"] == "failed"
    assert "JobTimeout" in line["error"]
    assert 450 < line["run_ms"] < 2000


def test_a_job_that_ignores_its_timeout_makes_the_worker_exit_for_a_restart(redis_url: str, tmp_path) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("kill_grace_s: 0.5\n")
    Client(redis_url).enqueue("stubborn", 30, queue="default", timeout=0.5)
    worker = start_worker(redis_url, "--queues", "default", "--config", str(config))
    _, err = worker.communicate(timeout=20)
    assert worker.returncode == 70
    assert "ignored its timeout" in err
    assert Inspector(connect(redis_url)).stats(["default"])[0].reserved == 1, "still reserved: handed out again later"


def test_malformed_payload_goes_to_the_failed_store_and_the_worker_carries_on(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    r.rpush("fairway:{default}:ready", b"{not json")
    Client(redis_url).enqueue("noop", queue="default")
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", test_redis=redis_url
    )  # a burst run fails a job for a handler it lacks at once
    assert out.returncode == 0
    assert [line["outcome"] for line in job_lines(out.stdout)] == ["ok"]
    (record,) = Inspector(connect(redis_url)).failed_records("default")
    assert record["payload"] == "{not json"
    assert record["exception"] == "MalformedJob" and record["message"].startswith("payload is not JSON")


DEEP = b'{"id":"deep","handler":"noop","queue":"default","args":[' + b"[" * 2000 + b"]" * 2000 + b"]}"


@pytest.mark.parametrize(
    ("poison", "key"),
    [
        (DEEP, hashlib.sha1(DEEP).hexdigest()),  # not parseable at all: keyed by its digest
        (b'{"id":"nan","handler":"noop","queue":"default","timeout":NaN}', "nan"),
        (b'{"id":"neg","handler":"noop","queue":"default","timeout":-1}', "neg"),
        (b'{"id":"huge","handler":"noop","queue":"default","timeout":1e300}', "huge"),
        (b'{"id":"tries","handler":"noop","queue":"default","max_tries":0}', "tries"),
    ],
)
def test_a_poison_document_is_failed_once_and_the_queue_moves_on(redis_url: str, poison: bytes, key: str) -> None:
    """Any producer can write these: each is settled as MalformedJob once, under its id when it has a
    readable one, the worker keeps running (no crash, no exit), and the jobs behind it run."""
    r = redis.Redis.from_url(redis_url)
    r.rpush("fairway:{default}:ready", poison)
    r.rpush("fairway:{default}:notify", 1)
    Client(redis_url).enqueue_many("noop", [[]] * 3, queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--tries", "2")
    try:
        assert wait_until(lambda: Inspector(connect(redis_url)).stats(["default"])[0].ready == 0, 15)
        time.sleep(0.3)
        assert worker.poll() is None, "the worker is still running"
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=10)
    assert worker.returncode == 0 and "Traceback" not in err
    assert [line["outcome"] for line in job_lines(out)] == ["ok"] * 3
    (malformed,) = job_lines(out, "job.malformed")
    (record,) = Inspector(connect(redis_url)).failed_records("default")
    assert record["id"] == malformed["id"] == key
    assert record["exception"] == "MalformedJob" and record["attempts"] == 1
    assert r.hlen("fairway:{default}:attempts") == 0 and r.zcard("fairway:{default}:reserved") == 0


def test_a_payload_naming_an_arbitrary_function_fails_as_unregistered(redis_url: str, tmp_path) -> None:
    marker = tmp_path / "pwned"
    doc = {"id": "evil", "handler": "os:system", "queue": "default", "args": [f"touch {marker}"]}
    redis.Redis.from_url(redis_url).rpush("fairway:{default}:ready", json.dumps(doc))
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", test_redis=redis_url
    )  # a burst run fails a job for a handler it lacks at once
    (line,) = job_lines(out.stdout)
    assert line["outcome"] == "failed"
    assert "UnknownHandler" in line["error"]
    assert not marker.exists()
    (record,) = Inspector(connect(redis_url)).failed_records("default")
    assert record["id"] == "evil"


def test_redis_restarted_under_a_running_worker(tmp_path) -> None:
    server = RedisProcess(persistent=True).start()
    try:
        client = Client(server.url)
        client.enqueue_many("record", [[f"before-{i}", 0.0] for i in range(20)], queue="default")
        worker = start_worker(server.url, "--queues", "default", "--block-for", "1")
        assert wait_until(lambda: len(done_keys(server.url)) == 20, 15)
        server.stop()  # SIGTERM: Redis writes its AOF and exits
        time.sleep(2.5)  # the worker sees the outage for a while
        server.start()
        Client(server.url).enqueue_many("record", [[f"after-{i}", 0.0] for i in range(20)], queue="default")
        assert wait_until(lambda: len(done_keys(server.url)) == 40, 20), done_keys(server.url)
        worker.terminate()
        _, err = worker.communicate(timeout=10)
        assert worker.returncode == 0
        assert err.count("Redis is unreachable") == 1, "logged once per outage, not per retry"
        assert "Redis is reachable again" in err
        assert "Traceback" not in err
    finally:
        server.cleanup()


def test_the_memory_limit_is_checked_after_every_job(redis_url: str) -> None:
    """20 jobs of 40 MiB each, back to back (faster than the 1 s housekeeping tick): the worker recycles
    at the job that crossed the limit, not 800 MiB later."""
    Client(redis_url).enqueue_many("leak", [[40]] * 20, queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--memory", "150")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "memory above 150 MiB" in err
    done = len(job_lines(out))
    assert 1 <= done <= 4, f"{done} jobs of 40 MiB ran before the worker recycled"
    assert Inspector(connect(redis_url)).stats(["default"])[0].ready == 20 - done, "the rest wait for the next worker"


def test_a_worker_started_before_its_redis_waits_for_it_then_serves() -> None:
    port = free_port()
    server = RedisProcess(port=port)
    url = server.url
    worker = start_worker(url, "--queues", "default")  # no --cluster: it must ask the server, once it answers
    try:
        time.sleep(1.5)
        assert worker.poll() is None, "still waiting, not crashed"
        server.start()
        Client(url).enqueue("record", "late", 0.0, queue="default")
        assert wait_until(lambda: done_keys(url) == ["late"], 15)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=10)
        server.cleanup()
    assert worker.returncode == 0
    assert err.count("is unreachable") == 1 and "Traceback" not in err


def test_a_worker_is_back_within_about_a_second_of_an_outage_ending() -> None:
    server = RedisProcess(persistent=True).start()
    try:
        worker = start_worker(server.url, "--queues", "default", "--block-for", "1")
        Client(server.url).enqueue("record", "before", 0.0, queue="default")
        assert wait_until(lambda: done_keys(server.url) == ["before"], 15)
        server.stop()
        time.sleep(3)
        server.start()
        back = time.monotonic()
        Client(server.url).enqueue("record", "after", 0.0, queue="default")
        assert wait_until(lambda: "after" in done_keys(server.url), 15)
        assert time.monotonic() - back < 3.0, "not kept away by a long backoff"
        worker.terminate()
        worker.communicate(timeout=10)
    finally:
        server.cleanup()


def test_an_acl_user_without_info_needs_no_cluster_flag(redis_url: str) -> None:
    admin = redis.Redis.from_url(redis_url)
    admin.acl_setuser(
        "jobs", enabled=True, passwords=["+pw"], keys=["fairway:*", "test:*"], commands=["+@all", "-@dangerous"]
    )
    try:
        url = redis_url.replace("redis://", "redis://jobs:pw@")
        Client(url).enqueue("noop", queue="default")
        out = fairway(
            "worker", "--redis", url, "--queues", "default", "--burst", "--log-format", "json", test_redis=url
        )
        assert out.returncode == 0, out.stderr
        assert [line["outcome"] for line in job_lines(out.stdout)] == ["ok"], out.stdout
    finally:
        admin.acl_deluser("jobs")


def test_a_full_redis_is_drained_and_a_refused_enqueue_wrote_nothing() -> None:
    """maxmemory with noeviction: producers are refused (and a refused enqueue left nothing behind),
    while workers start, take, run and acknowledge jobs, which is what frees the memory."""
    server = RedisProcess().start()
    try:
        admin = redis.Redis.from_url(server.url)
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) + 2 * 2**20)
        client = Client(server.url)
        accepted = 0
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(100_000):
                client.enqueue("noop", f"j{i}", "x" * 2000, queue="default")
                accepted += 1
        assert admin.llen("fairway:{default}:ready") == accepted, "the refused enqueue wrote nothing"
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            client.enqueue_many("noop", [["more", "x" * 2000]] * 10, queue="default")
        assert admin.llen("fairway:{default}:ready") == accepted, "a refused batch wrote nothing"
        worker = start_worker(server.url, "--queues", "default", "--burst")
        out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        assert "Traceback" not in err and err.count("out of memory") <= 1
        assert [line["outcome"] for line in job_lines(out)] == ["ok"] * accepted
        stats = Inspector(connect(server.url)).stats(["default"])[0]
        assert (stats.ready, stats.reserved, stats.failed) == (0, 0, 0)
    finally:
        server.cleanup()


def test_a_document_pushed_to_another_queue_than_it_names_never_runs(redis_url: str) -> None:
    """Plain commands skip the scripts' MISMATCH check; the worker makes it, so `current_job().queue`
    always names the queue the job came from."""
    r = redis.Redis.from_url(redis_url)
    r.rpush("fairway:{default}:ready", b'{"id":"wrong-q","v":1,"handler":"noop","queue":"elsewhere","args":[]}')
    r.rpush("fairway:{default}:ready", b'{"id":"has-t","v":1,"handler":"noop","queue":"default","tenant":"7"}')
    Client(redis_url).enqueue("noop", queue="default")
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--burst", "--log-format", "json", test_redis=redis_url
    )  # a burst run fails a job for a handler it lacks at once
    assert out.returncode == 0, out.stderr
    assert [line["outcome"] for line in job_lines(out.stdout)] == ["ok"]
    records = {rec["id"]: rec for rec in Inspector(connect(redis_url)).failed_records("default")}
    assert set(records) == {"wrong-q", "has-t"}
    assert records["wrong-q"]["exception"] == "MalformedJob"
    assert "says queue 'elsewhere' but was taken from queue 'default'" in records["wrong-q"]["message"]
    assert "and tenant '7'" in records["has-t"]["message"]


def test_a_second_ctrl_c_stops_at_once_and_the_running_job_runs_again(redis_url: str) -> None:
    Client(redis_url).enqueue("record", "long", 30.0, queue="default")
    worker = start_worker(redis_url, "--queues", "default")
    assert wait_until(lambda: b"long" in redis.Redis.from_url(redis_url).lrange("test:started", 0, -1), 10)
    worker.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert worker.poll() is None, "one Ctrl-C drains: the job may finish"
    began = time.monotonic()
    worker.send_signal(signal.SIGINT)
    _, err = worker.communicate(timeout=10)
    assert worker.returncode == 130 and time.monotonic() - began < 3, err[-2000:]
    assert "Ctrl-C again: stop now" in err and "second interrupt: stopping now" in err and "Traceback" not in err
    again = start_worker(redis_url, "--queues", "default")
    try:
        assert wait_until(lambda: started_keys(redis_url) == ["long", "long"], 15), (
            "it runs again once its lease ran out"
        )
    finally:
        again.kill()
        again.communicate(timeout=10)


def test_a_memory_limit_below_the_workers_own_size_is_refused(redis_url: str) -> None:
    out = fairway(
        "worker", "--redis", redis_url, "--queues", "default", "--memory", "5", "--burst", test_redis=redis_url
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "below this worker's own size after start-up" in out.stderr and "MiB" in out.stderr


def test_no_memory_limit_unless_one_is_set(redis_url: str) -> None:
    """The default recycles no one: a 60 MiB handler that keeps its memory runs 5 jobs in one process."""
    Client(redis_url).enqueue_many("leak", [[60]] * 5, queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--burst")
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0 and len(job_lines(out)) == 5, err[-2000:]
    assert "memory above" not in err

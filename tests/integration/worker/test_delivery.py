"""Never lose a job: SIGKILL mid-job, random kills over 2,000 jobs, SIGTERM drains, recycling exits 0."""

from __future__ import annotations

import json
import signal
import time

import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.queue.protocol.keys import DEFAULT_PREFIX, QueueKeys
from support.workers import done_keys, drain_under_kill_9, job_lines, start_worker, started_keys, wait_until


def test_a_job_killed_mid_run_runs_again_on_another_worker(redis_url: str, tmp_path) -> None:
    config = tmp_path / "worker.yaml"
    config.write_text("retry_after_s: 3\nkill_grace_s: 0.2\nmaintenance_interval_s: 0.2\n")
    Client(redis_url).enqueue("record", "the-job", 3.0, queue="default")
    first = start_worker(redis_url, "--queues", "default", "--config", str(config), "--timeout", "1.5", "--tries", "3")
    assert wait_until(lambda: started_keys(redis_url) == ["the-job"], 15)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)
    assert done_keys(redis_url) == []
    store = Inspector(connect(redis_url))
    assert store.stats(["default"])[0].reserved == 1, "the job is left reserved, not lost"

    second = start_worker(redis_url, "--queues", "default", "--config", str(config), "--timeout", "1.5", "--tries", "3")
    try:
        assert wait_until(lambda: started_keys(redis_url) == ["the-job", "the-job"], 15)
    finally:
        second.terminate()
        out, _ = second.communicate(timeout=15)
    lines = job_lines(out)
    assert lines and lines[0]["attempt"] == 1, "the attempt of the killed worker was given back, not spent"


def test_2000_jobs_with_random_kills_are_all_done_at_least_once(redis_url: str, tmp_path) -> None:
    config = tmp_path / "worker.yaml"
    config.write_text("retry_after_s: 2.5\ntimeout_s: 1\nkill_grace_s: 0.2\ntries: 100\nmaintenance_interval_s: 0.2\n")
    keys = [f"job-{i}" for i in range(2000)]
    Client(redis_url).enqueue_many("record", [[key, 0.005] for key in keys], queue="bulk")
    args = ["--queues", "bulk", "--config", str(config), "--log-format", "none"]
    kills = drain_under_kill_9(redis_url, keys, args, workers=2, pause_s=(0.3, 1.0), max_kills=8, seed=42)
    assert kills >= 4
    assert set(done_keys(redis_url)) == set(keys)
    assert len(started_keys(redis_url)) > len(keys), "kills landed mid-job and those jobs ran again"


def test_sigterm_mid_job_finishes_the_job_and_exits_0(redis_url: str) -> None:
    Client(redis_url).enqueue("record", "long", 1.0, queue="default")
    Client(redis_url).enqueue("record", "next", 0.0, queue="default")
    worker = start_worker(redis_url, "--queues", "default")
    assert wait_until(lambda: started_keys(redis_url) == ["long"], 15)
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=10)
    assert worker.returncode == 0, err
    assert done_keys(redis_url) == ["long"], "the running job completes; no new job is taken"
    stats = Inspector(connect(redis_url)).stats(["default"])[0]
    assert (stats.ready, stats.reserved) == (1, 0), "the finished job was acknowledged on the way out"
    assert [line["outcome"] for line in job_lines(out)] == ["ok"]


def test_sigterm_while_idle_exits_at_once(redis_url: str) -> None:
    worker = start_worker(redis_url, "--queues", "default", "--block-for", "30")
    time.sleep(1.5)
    started = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    worker.communicate(timeout=10)
    assert worker.returncode == 0
    assert time.monotonic() - started < 2


def test_max_jobs_recycles_the_worker_cleanly(redis_url: str) -> None:
    Client(redis_url).enqueue_many("noop", [[]] * 10, queue="default")
    worker = start_worker(redis_url, "--queues", "default", "--max-jobs", "4")
    out, err = worker.communicate(timeout=20)
    assert worker.returncode == 0
    assert len(job_lines(out)) == 4
    assert "max jobs (4)" in err
    stats = Inspector(connect(redis_url)).stats(["default"])[0]
    assert (stats.ready, stats.reserved) == (6, 0)


def test_max_time_recycles_the_worker(redis_url: str) -> None:
    worker = start_worker(redis_url, "--queues", "default", "--max-time", "1", "--block-for", "5")
    worker.communicate(timeout=20)
    assert worker.returncode == 0


def test_burst_exits_0_when_the_queues_are_empty(redis_url: str) -> None:
    Client(redis_url).enqueue_many("noop", [[]] * 5, queue="a")
    worker = start_worker(redis_url, "--queues", "a,b", "--burst")
    out, _ = worker.communicate(timeout=20)
    assert worker.returncode == 0
    assert len(job_lines(out)) == 5


def test_a_job_whose_timeout_outlasts_retry_after_runs_once(redis_url: str, tmp_path) -> None:
    """Its reservation is extended before it starts, so a second worker never takes it mid-run."""
    config = tmp_path / "worker.yaml"
    config.write_text("retry_after_s: 2\ntimeout_s: 1\nkill_grace_s: 0.5\ntries: 3\nmaintenance_interval_s: 0.1\n")
    Client(redis_url).enqueue("record", "long", 3.0, queue="default", timeout=5)
    workers = [start_worker(redis_url, "--queues", "default", "--config", str(config)) for _ in range(2)]
    try:
        assert wait_until(lambda: done_keys(redis_url) == ["long"], 15)
        time.sleep(1.0)  # long enough for a second run to have started, were the reservation to expire
    finally:
        for worker in workers:
            worker.terminate()
        outs = [worker.communicate(timeout=10)[0] for worker in workers]
    assert started_keys(redis_url) == ["long"], "ran once"
    lines = [line for out in outs for line in job_lines(out)]
    assert [(line["attempt"], line["outcome"]) for line in lines] == [(1, "ok")]
    assert Inspector(connect(redis_url)).stats(["default"])[0].failed == 0


def leased_keys(redis_url: str, queue: str) -> list[str]:
    """The `record` key (its first argument) of each job leased now in `queue`."""
    r, k = redis.Redis.from_url(redis_url), QueueKeys(DEFAULT_PREFIX, queue)
    keys = []
    for member in r.zrange(k.reserved, 0, -1):
        held = r.hget(k.leased, member.rsplit(b"\t", 1)[0])
        document = json.loads(held.split(b"\t", 1)[1]) if held else {"args": ["<no lease record>"]}
        keys.append(str(document["args"][0]))
    return keys


def test_chaos_5000_jobs_3_workers_random_kill_9_for_60_s_with_the_default_tries(redis_url: str, tmp_path) -> None:
    """tries stays at its default of 1: a job whose worker is killed must still run again (a lost
    attempt is not a failed one). Every job completes; none is failed. Duplicates, completions of a
    job beyond its first, can only come from a kill that landed after the job's handler finished and
    before its acknowledgement reached Redis, so there are never more of them than kills."""
    config = tmp_path / "worker.yaml"
    config.write_text("retry_after_s: 2.5\ntimeout_s: 1\nkill_grace_s: 0.2\nmaintenance_interval_s: 0.2\n")
    keys = [f"job-{i}" for i in range(5000)]
    Client(redis_url).enqueue_many("record", [[key, 0.03] for key in keys], queue="chaos")
    args = ["--queues", "chaos", "--config", str(config), "--log-format", "none"]
    kills = drain_under_kill_9(
        redis_url, keys, args, workers=3, pause_s=(0.5, 2.0), kill_for_s=60, seed=7, timeout_s=150
    )
    done = done_keys(redis_url)
    duplicates = len(done) - len(set(done))
    assert set(done) == set(keys), "every job completed"
    assert kills >= 25
    assert duplicates <= kills, f"{duplicates} duplicate completions for {kills} kills"
    stats = Inspector(connect(redis_url)).stats(["chaos"])[0]
    assert (stats.failed, stats.ready) == (0, 0), "nothing failed for losing its worker"
    # A lease still held now can only be a redelivered copy of a job that already completed (it ran, its
    # worker was killed before the ack reached Redis, the copy went to a worker killed in turn): it runs
    # out within retryAfter. Any other lease would be a job stranded.
    assert all(key in set(done) for key in leased_keys(redis_url, "chaos")), "a reserved job never completed"
    print(f"chaos: {kills} kills, {duplicates} duplicate completions, {len(started_keys(redis_url))} starts")


def test_a_job_that_kills_every_worker_is_failed_as_worker_lost_after_three(redis_url: str, tmp_path) -> None:
    config = tmp_path / "worker.yaml"
    config.write_text("retry_after_s: 2\ntimeout_s: 0.5\nkill_grace_s: 0.1\nmaintenance_interval_s: 0.1\n")
    Client(redis_url).enqueue("kill_my_worker", queue="default", max_tries=5)
    for _ in range(3):  # each worker takes the pill and dies; its reservation expires; the next takes it
        worker = start_worker(redis_url, "--queues", "default", "--config", str(config))
        worker.communicate(timeout=20)
        assert worker.returncode == -signal.SIGKILL
    time.sleep(2.3)  # the third reservation expires (retry_after 2 s covers timeout + kill grace: no extension)
    last = start_worker(redis_url, "--queues", "default", "--config", str(config), "--burst")
    out, err = last.communicate(timeout=20)
    assert last.returncode == 0, err
    assert started_keys(redis_url) == ["pill"] * 3, "run three times, then not again"
    (line,) = job_lines(out)
    assert line["outcome"] == "failed" and line["attempt"] == 1, "losing workers spent none of its 5 tries"
    (record,) = Inspector(connect(redis_url)).failed_records("default")
    assert record["exception"] == "WorkerLost"
    assert record["message"].startswith("the job was running when its worker vanished 3 times")

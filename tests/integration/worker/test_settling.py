"""A finished job's outcome reaches Redis whatever the connection does (issue 21's defects 1-4): real
worker processes behind a proxy that cuts the connection when a chosen script is called. A succeeded
job never runs again while its worker lives; one failed settle never drops another; a drain
acknowledges each job as it finishes; a batch whose start was cut short still starts every job."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.queue.protocol.scripts import source
from support.cutting_proxy import CuttingProxy
from support.redis_procs import RedisProcess
from support.workers import done_keys, job_lines, start_worker, started_keys, wait_until

FAST = "retry_after_s: 3\ntimeout_s: 2\nmaintenance_interval_s: 0.2\n"  # an expired reservation comes back in ~3 s


@pytest.fixture
def proxy(_redis_server: RedisProcess, redis_url: str) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy(_redis_server.port)
    yield proxy
    proxy.close()


def config(tmp_path: Path, text: str = FAST) -> str:
    path = tmp_path / "worker.yaml"
    path.write_text(text)
    return str(path)


def reserved(redis_url: str, queue: str = "default") -> int:
    return Inspector(connect(redis_url)).stats([queue])[0].reserved


def test_acks_carried_by_a_reserve_call_that_never_ran_are_sent_again(
    redis_url: str, proxy: CuttingProxy, tmp_path: Path
) -> None:
    client = Client(redis_url)
    for key in "abcde":
        client.enqueue("record", key)
    redis.Redis.from_url(redis_url).script_load(source("reserve"))  # so the 1st EVALSHA is not a NOSCRIPT
    cut = proxy.cut_when("reserve", skip=1, times=2)  # the 2nd and 3rd calls carry acknowledgements
    worker = start_worker(proxy.url, "--queues", "default", "--config", config(tmp_path), test_redis=redis_url)
    try:
        assert wait_until(lambda: sorted(done_keys(redis_url)) == list("abcde"), 20)
        time.sleep(4.5)  # past retry_after: an acknowledgement that was dropped would show as a rerun
        assert cut.cut == 2
        assert sorted(started_keys(redis_url)) == list("abcde"), "no job ran twice"
        assert reserved(redis_url) == 0
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=20)
    assert worker.returncode == 0, err[-2000:]
    assert all(line["attempt"] == 1 for line in job_lines(out))


def test_a_release_cut_short_drops_no_other_settle(redis_url: str, proxy: CuttingProxy, tmp_path: Path) -> None:
    client = Client(redis_url)
    client.enqueue("flaky", "f", 1)  # fails once, then succeeds
    for key in "abc":
        client.enqueue("record", key, 0.3)
    proxy.cut_when("release")
    worker = start_worker(
        proxy.url, "--queues", "default", "--concurrency", "4", "--tries", "2", "--burst",
        "--config", config(tmp_path), test_redis=redis_url,
    )  # fmt: skip
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert "ran past its" not in err
    assert sorted(done_keys(redis_url)) == ["a", "b", "c", "f"]
    assert sorted(started_keys(redis_url)) == ["a", "b", "c"], "the record jobs ran once each"
    outcomes = sorted((line["handler"], line["attempt"], line["outcome"]) for line in job_lines(out))
    assert outcomes == [("flaky", 1, "retry"), ("flaky", 2, "ok"), *[("record", 1, "ok")] * 3]
    assert reserved(redis_url) == 0


def test_a_drain_acknowledges_each_job_as_it_finishes(redis_url: str, tmp_path: Path) -> None:
    client = Client(redis_url)
    client.enqueue("record", "quick", 0.2)
    client.enqueue("record", "long", 6, timeout=10)  # its own timeout is above retry_after
    worker = start_worker(redis_url, "--queues", "default", "--concurrency", "2", "--config", config(tmp_path))
    try:
        assert wait_until(lambda: sorted(started_keys(redis_url)) == ["long", "quick"], 10)
        worker.send_signal(signal.SIGTERM)
        assert wait_until(lambda: done_keys(redis_url) == ["quick"], 5)
        # The quick job's acknowledgement is in Redis now, not when the long job ends 5 s later: had
        # it waited, its 3 s reservation would expire and another worker would run it again.
        assert wait_until(lambda: reserved(redis_url) == 1, 2), "the quick job was acknowledged during the drain"
        held = list(redis.Redis.from_url(redis_url).hgetall("fairway:{default}:leased").values())
        assert len(held) == 1 and b'"long"' in held[0]
    finally:
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-2000:]
    assert sorted(done_keys(redis_url)) == ["long", "quick"] and reserved(redis_url) == 0


def test_jobs_running_past_retry_after_keep_their_leases_and_run_once(redis_url: str, tmp_path: Path) -> None:
    """A batch of jobs longer than retryAfter starts at once (nothing to extend first, so nothing an
    outage can cut short between the jobs of a batch) and no other worker gets them while they run:
    their leases are renewed."""
    client = Client(redis_url)
    for key in "abcd":
        client.enqueue("record", key, 4.0, timeout=10)  # 4 s jobs, retryAfter 2 s
    lease = config(tmp_path, "retry_after_s: 2\nmaintenance_interval_s: 0.2\n")
    busy = start_worker(redis_url, "--queues", "default", "--concurrency", "4", "--burst", "--config", lease)
    assert wait_until(lambda: len(started_keys(redis_url)) == 4, 5), "the whole batch started at once"
    idle = start_worker(redis_url, "--queues", "default", "--config", lease)  # housekeeps every 0.2 s
    out, err = busy.communicate(timeout=30)
    idle.send_signal(signal.SIGTERM)
    idle_out, idle_err = idle.communicate(timeout=30)
    assert busy.returncode == 0 and idle.returncode == 0, err[-2000:] + idle_err[-2000:]
    assert sorted(started_keys(redis_url)) == list("abcd"), "no job was handed to the idle worker"
    assert job_lines(idle_out) == [] and len(job_lines(out)) == 4

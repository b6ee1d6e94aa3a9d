"""Redis saying "not now" is an outage, never a crash (issue 21's defects 8 and 9): a failover that
turns the worker's Redis into a replica (READONLY) while a job runs, and a Redis that is full. The
worker backs off, keeps its running job, settles it when Redis takes writes again, and exits 0."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.delaying_proxy import DelayingProxy
from support.redis_procs import RedisProcess
from support.workers import done_keys, job_lines, start_worker, started_keys, wait_until


@pytest.fixture
def pair() -> Iterator[tuple[RedisProcess, RedisProcess]]:
    primary, other = RedisProcess().start(), RedisProcess().start()
    yield primary, other
    primary.cleanup()
    other.cleanup()


def synced(replica: redis.Redis) -> bool:
    info = replica.info("replication")
    return info.get("master_link_status") == "up" and not info.get("master_sync_in_progress")


def test_a_failover_to_readonly_is_an_outage_and_the_running_job_is_settled_after_it(
    pair: tuple[RedisProcess, RedisProcess], redis_url: str
) -> None:
    primary, other = pair
    a, b = redis.Redis(port=primary.port), redis.Redis(port=other.port)
    for server in (a, b):
        server.config_set("repl-diskless-sync-delay", 0)  # Redis 7 waits 5 s for more replicas by default
    Client(primary.url).enqueue("record", "during", 3.0)
    Client(primary.url).enqueue("record", "next")
    worker = start_worker(primary.url, "--queues", "default", "--burst", test_redis=redis_url)
    try:
        assert wait_until(lambda: started_keys(redis_url) == ["during"], 10)
        # The failover, as a real one looks to the worker: its server becomes a replica of a new
        # primary that holds the same data, so every write is answered READONLY.
        b.replicaof("127.0.0.1", primary.port)
        assert wait_until(lambda: synced(b), 10)
        b.replicaof("no", "one")
        a.replicaof("127.0.0.1", other.port)
        assert wait_until(lambda: synced(a), 10)
        with pytest.raises(redis.exceptions.ReadOnlyError):
            a.set("probe", 1)
        assert wait_until(lambda: done_keys(redis_url) == ["during"], 10)
        time.sleep(1.5)  # the worker meets READONLY for a while: it must wait, not die
        assert worker.poll() is None, "the worker is still alive"
        a.replicaof("no", "one")  # and back: the worker's server takes writes again
    finally:
        out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err[-3000:]
    assert "Redis is unreachable" in err and "ReadOnlyError" in err
    assert sorted(done_keys(redis_url)) == ["during", "next"]
    assert started_keys(redis_url) == ["during", "next"], "the running job was settled, not run again"
    assert [line["outcome"] for line in job_lines(out)] == ["ok", "ok"]
    assert Inspector(connect(primary.url)).stats(["default"])[0].reserved == 0


def test_progress_on_a_full_redis_is_logged_and_the_job_succeeds(redis_url: str) -> None:
    full = RedisProcess().start()
    try:
        r = redis.Redis(port=full.port)
        Client(full.url).enqueue("report_progress", "k", job_id="progress-job")
        used = int(r.info("memory")["used_memory"])
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", str(used + 200_000))
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(10_000):
                r.set(f"filler:{i}", "x" * 1000)
        worker = start_worker(full.url, "--queues", "default", "--burst", test_redis=redis_url)
        out, err = worker.communicate(timeout=30)
        assert worker.returncode == 0, err[-3000:]
        assert done_keys(redis_url) == ["k"]
        assert [line["outcome"] for line in job_lines(out)] == ["ok"], "the job did not fail for its progress"
        assert "progress not recorded" in err
    finally:
        full.cleanup()


class MovingAddress(DelayingProxy):
    """The worker's Redis address as a Sentinel-aware service or a managed endpoint gives it: it leads to
    whichever server is primary, and a failover cuts the connections that led to the old one."""

    def __init__(self, upstream_port: int) -> None:
        self.open: list[socket.socket] = []
        super().__init__(upstream_port, 0.0)

    def _handle(self, client: socket.socket) -> None:
        self.open.append(client)
        super()._handle(client)

    def move_to(self, port: int) -> None:
        self.upstream = ("127.0.0.1", port)
        for sock in self.open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.open.clear()


def test_an_idle_worker_blocked_in_its_read_survives_a_failover_then_serves(
    pair: tuple[RedisProcess, RedisProcess], redis_url: str, tmp_path
) -> None:
    """REPLICAOF while the worker waits in BLMPOP (what Sentinel or a managed failover does): Redis answers
    the blocked read UNBLOCKED ("instance state changed"). The worker backs off as for any outage; its
    address then leads to the new primary, and the jobs enqueued there run."""
    primary, other = pair
    a, b = redis.Redis(port=primary.port), redis.Redis(port=other.port)
    for server in (a, b):
        server.config_set("repl-diskless-sync-delay", 0)
    address = MovingAddress(primary.port)
    config = tmp_path / "w.yaml"
    config.write_text("maintenance_interval_s: 30\nblock_for_s: 30\n")  # one long blocking read, nothing else
    worker = start_worker(address.url, "--queues", "default", "--config", str(config), test_redis=redis_url)
    try:
        assert wait_until(lambda: any(c.get("cmd") == "blmpop" for c in a.client_list()), 10), "not blocked"
        b.replicaof("127.0.0.1", primary.port)  # the new primary catches up, then takes over
        assert wait_until(lambda: synced(b), 10)
        b.replicaof("no", "one")
        a.replicaof("127.0.0.1", other.port)  # the old one steps down: the blocked read is UNBLOCKED
        assert wait_until(lambda: synced(a), 10)
        time.sleep(0.5)
        assert worker.poll() is None, "the idle worker died in the failover"
        address.move_to(other.port)
        Client(other.url).enqueue_many("record", [["after-1"], ["after-2"]], queue="default")  # on the new primary
        assert wait_until(lambda: sorted(done_keys(redis_url)) == ["after-1", "after-2"], 15)
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=30)
        address.close()
    assert worker.returncode == 0, err[-3000:]
    assert "UNBLOCKED" in err and "Traceback" not in err
    assert [line["outcome"] for line in job_lines(out)] == ["ok", "ok"]

"""Chaos: 5,000 jobs through 3 real worker processes at concurrency 8 while they are stopped with
SIGTERM, killed with kill -9 and (standalone) have their connections cut at random in the middle of
reserving, acknowledging, releasing and failing. Every job completes. Every run is recorded by the
handler with the process that ran it, and every rerun is explained: a job that finished runs again
only when the process that ran it was killed with kill -9 (its acknowledgement may not have reached
Redis); never after SIGTERM or a cut connection.

On the cluster the connections are not cut: the proxy speaks to one node, and a cluster client
follows redirects to the nodes' own addresses."""

from __future__ import annotations

import random
import signal
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fairway.queue.access.client import Client
from support.cutting_proxy import CuttingProxy
from support.redis_procs import RedisCluster, RedisProcess
from support.workers import WorkerProcess, start_worker

JOBS = 5_000
WORKERS = 3
CHAOS_S = 12.0  # stops and kills for this long; then the workers run undisturbed until all is done
STARTUP_S = 1.5  # a new worker process is serving by then
CONFIG = "retry_after_s: 3\ntimeout_s: 2\nmaintenance_interval_s: 0.25\nblock_for_s: 1\n"


class Fleet:
    """Three workers, restarted as they are stopped or killed; remembers which pids died by kill -9."""

    def __init__(self, url: str, test_redis: str, config: Path, extra: tuple[str, ...]) -> None:
        self.url, self.test_redis, self.config, self.extra = url, test_redis, config, extra
        self.workers: list[WorkerProcess] = [self._start() for _ in range(WORKERS)]
        self.started = [time.monotonic()] * WORKERS
        self.killed: set[int] = set()  # pids ended with kill -9
        self.stopped: set[int] = set()  # pids ended with SIGTERM
        self.exit_codes: list[int] = []

    def _start(self) -> WorkerProcess:
        return start_worker(
            self.url, "--queues", "default", "--concurrency", "8", "--tries", "3",
            "--config", str(self.config), *self.extra, test_redis=self.test_redis,
        )  # fmt: skip

    def disturb(self, rng: random.Random) -> None:
        # Only a worker that is up: one still importing dies of SIGTERM's default action (-15),
        # holding nothing, which is not what this measures.
        ready = [i for i in range(WORKERS) if time.monotonic() - self.started[i] > STARTUP_S and self.up(i)]
        if not ready:
            return
        index = rng.choice(ready)
        worker = self.workers[index]
        if rng.random() < 0.4:
            self.killed.add(worker.pid)
            worker.kill()
            worker.wait(10)
        else:
            self.stopped.add(worker.pid)
            worker.send_signal(signal.SIGTERM)
            worker.wait(30)
            self.exit_codes.append(worker.returncode)
        self.workers[index] = self._start()
        self.started[index] = time.monotonic()

    def up(self, index: int) -> bool:
        """Past its imports: it logged that it is connecting (from then on a SIGTERM stops it cleanly,
        however slow this loaded machine makes its start)."""
        return '"message": "Redis ' in self.workers[index].stderr_so_far()

    def close(self) -> None:
        youngest = max(self.started)
        time.sleep(max(0.0, youngest + STARTUP_S - time.monotonic()))  # (see disturb)
        deadline = time.monotonic() + 30
        while not all(self.up(i) or self.workers[i].poll() is not None for i in range(WORKERS)):
            assert time.monotonic() < deadline, "a worker never got past its imports"
            time.sleep(0.1)
        for worker in self.workers:
            if worker.poll() is None:
                self.stopped.add(worker.pid)
                worker.send_signal(signal.SIGTERM)
        for worker in self.workers:
            worker.wait(30)
            self.exit_codes.append(worker.returncode)


def runs(test_redis: str) -> dict[str, list[tuple[int, str]]]:
    by_key: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for raw in redis.Redis.from_url(test_redis).lrange("test:runs", 0, -1):
        key, pid, what = raw.decode().split("|")
        by_key[key].append((int(pid), what))
    return by_key


def unexplained_reruns(by_key: dict[str, list[tuple[int, str]]], killed: set[int]) -> list[str]:
    """Keys that ran again after a run that finished on a process that was not killed with kill -9."""
    bad = []
    for key, events in by_key.items():
        finished = [pid for pid, what in events if what == "done"]
        starts = [pid for pid, what in events if what == "start"]
        if len(starts) > 1 and any(pid not in killed for pid in finished[:-1]):
            bad.append(f"{key}: {events}")
    return bad


def run_chaos(url: str, test_redis: str, tmp_path: Path, extra: tuple[str, ...] = ()) -> Fleet:
    rng = random.Random(2121)
    client = Client(url, cluster="--cluster" in extra or None)
    client.enqueue_many("chaos", [[f"k{i}", rng.choice((0, 1, 2, 5))] for i in range(JOBS)])
    # every 10th job fails its first attempt, so releases happen under the chaos too
    client.enqueue_many("flaky_chaos", [[f"f{i}"] for i in range(JOBS // 10)])
    config = tmp_path / "w.yaml"
    config.write_text(CONFIG)
    fleet = Fleet(url, test_redis, config, extra)
    expected = {f"k{i}" for i in range(JOBS)} | {f"f{i}" for i in range(JOBS // 10)}
    try:
        until = time.monotonic() + CHAOS_S
        while time.monotonic() < until:
            time.sleep(rng.uniform(0.3, 0.9))
            fleet.disturb(rng)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            done = {k for k, events in runs(test_redis).items() if any(what == "done" for _, what in events)}
            if done >= expected:
                break
            time.sleep(0.5)
    finally:
        fleet.close()
    by_key = runs(test_redis)
    missing = sorted(expected - {k for k, ev in by_key.items() if any(w == "done" for _, w in ev)})
    assert not missing, f"{len(missing)} jobs never completed, e.g. {missing[:5]}"
    assert unexplained_reruns(by_key, fleet.killed) == []
    assert all(code == 0 for code in fleet.exit_codes), [c for c in fleet.exit_codes if c != 0]
    assert fleet.killed and fleet.stopped, "both kinds of stop happened"
    reruns = sum(1 for ev in by_key.values() if sum(w == "start" for _, w in ev) > 1)
    print(f"\nchaos: {len(expected)} jobs, {len(fleet.killed)} kill -9, {len(fleet.stopped)} SIGTERM, {reruns} reruns")
    return fleet


@pytest.fixture
def proxy(_redis_server: RedisProcess, redis_url: str) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy(_redis_server.port)
    for script in ("reserve", "release", "fail", "maintain"):
        proxy.cut_when(script, times=10_000, probability=0.01, after_reply=script == "reserve")
    proxy.cut_when("reserve", times=10_000, probability=0.01)  # and before Redis sees it
    yield proxy
    proxy.close()


def test_chaos_on_standalone_redis(redis_url: str, proxy: CuttingProxy, tmp_path: Path) -> None:
    run_chaos(proxy.url, redis_url, tmp_path)
    assert sum(rule.cut for rule in proxy.cuts) > 10, "connections were cut"


@pytest.mark.cluster
def test_chaos_on_a_redis_cluster(_redis_cluster: RedisCluster, cluster_url: str, tmp_path: Path) -> None:
    test_redis = RedisProcess().start()
    try:
        run_chaos(cluster_url, test_redis.url, tmp_path, ("--cluster",))
    finally:
        test_redis.cleanup()


def test_unexplained_reruns_are_found() -> None:
    """The check itself: a job that finished on a process that was only stopped must not run again."""
    by_key = {"a": [(1, "start"), (1, "done"), (2, "start"), (2, "done")], "b": [(3, "start"), (4, "start")]}
    assert unexplained_reruns(by_key, killed=set()) == ["a: [(1, 'start'), (1, 'done'), (2, 'start'), (2, 'done')]"]
    assert unexplained_reruns(by_key, killed={1}) == []

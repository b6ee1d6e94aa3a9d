"""Schedules (docs/schedules.md): each tick gives exactly one job whatever the number of tickers and
restarts; ticks missed within the grace are caught up, older ones skipped or run once; pausing and
resuming; tenant schedules; a schedule declared in a handler module; the operator as one more ticker
and its status; bad declarations refused. Real Redis, real worker processes, standalone and the 3-node
cluster."""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from fairway.queue.access.schedules import Schedules, tick_spec
from fairway.queue.connection import connect
from fairway.queue.protocol.job import decode
from fairway.queue.protocol.keys import QueueKeys, TenantGroupKeys
from fairway.resource.schedules import Schedule
from fairway.resource.spec import QueueSupervisorSpec
from support.cli import fairway
from support.workers import WorkerProcess, job_lines, start_worker, wait_until

KINDS = ["standalone", "cluster"]
T0 = 1_800_000_000


def url_for(kind: str, request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("redis_url" if kind == "standalone" else "cluster_url")
    return url


def config(tmp_path: Path, *schedules: dict[str, Any], queues: tuple[str, ...] = ("other",)) -> str:
    path = tmp_path / "worker.yaml"
    path.write_text(yaml.safe_dump({"queues": list(queues), "schedules": list(schedules)}))
    return str(path)


def ticks_in(url: str, queue: str) -> list[int]:
    """The ticks of the jobs waiting in `queue` (ids `<schedule>:<tick>`), in queue order."""
    client = connect(url)
    return [int(decode(doc).id.rsplit(":", 1)[1]) for doc in client.lrange(QueueKeys("fairway", queue).ready, 0, -1)]


def tickers(url: str, path: str, count: int, kind: str = "standalone") -> list[WorkerProcess]:
    extra = ["--cluster"] if kind == "cluster" else []
    return [start_worker(url, "--config", path, *extra) for _ in range(count)]


def stop_all(workers: list[WorkerProcess]) -> None:
    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    for w in workers:
        w.communicate(timeout=30)


@pytest.mark.parametrize("kind", KINDS)
def test_three_workers_write_each_tick_once(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = url_for(kind, request)
    path = config(tmp_path, {"name": "pulse", "every": 1, "handler": "noop", "queue": "ticks"})
    workers = tickers(url, path, 3, kind)
    try:
        wait_until(lambda: len(ticks_in(url, "ticks")) >= 5, 30)
    finally:
        stop_all(workers)
    ticks = ticks_in(url, "ticks")
    assert ticks == list(range(ticks[0], ticks[0] + len(ticks))), f"each tick once, in order: {ticks}"


def test_a_restart_storm_over_two_minutes_of_one_second_ticks_gives_every_tick_exactly_once(
    redis_url: str, tmp_path: Path
) -> None:
    """3 workers; for 120 s one of them is killed (-9 or TERM) and restarted every 1-4 s, and twice all
    three are down together for 5 s (within the 60 s grace). Every tick from the first to the last
    has exactly one job."""
    path = config(tmp_path, {"name": "storm", "every": 1, "handler": "noop", "queue": "storm"})
    rng = random.Random(41)
    workers = tickers(redis_url, path, 3)
    started = time.time()
    outages = {40.0, 85.0}
    restarts = 0
    try:
        while time.time() - started < 120:
            time.sleep(rng.uniform(1, 4))
            if outages and time.time() - started > min(outages):
                outages.discard(min(outages))
                for w in workers:
                    w.send_signal(signal.SIGKILL)
                    w.communicate(timeout=30)
                time.sleep(5)
                workers = tickers(redis_url, path, 3)
                restarts += 3
                continue
            victim = rng.randrange(3)
            workers[victim].send_signal(rng.choice([signal.SIGKILL, signal.SIGTERM]))
            workers[victim].communicate(timeout=30)
            time.sleep(rng.uniform(0, 2))
            workers[victim] = tickers(redis_url, path, 1)[0]
            restarts += 1
        ended = time.time()
    finally:
        stop_all(workers)
    ticks = ticks_in(redis_url, "storm")
    print(f"storm: {len(ticks)} ticks over {ended - started:.0f} s, {restarts} worker restarts")
    assert len(ticks) == len(set(ticks)), "no tick twice"
    assert ticks == list(range(ticks[0], ticks[-1] + 1)), "no tick lost, in order"
    assert ticks[0] <= started + 5 and ticks[-1] >= ended - 2, (ticks[0] - started, ticks[-1] - ended)
    assert len(ticks) >= 118 and restarts >= 30, (len(ticks), restarts)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("missed", ["skip", "once"])
def test_ticks_after_a_gap_are_caught_up_within_grace(kind: str, missed: str, request: pytest.FixtureRequest) -> None:
    url = url_for(kind, request)
    s = Schedule(name="gap", every=10, handler="noop", queue="gaps", grace=30, missed=missed)
    one, two = Schedules(connect(url)), Schedules(connect(url))  # two tickers
    assert one.tick(s, T0 + 5).written == 0, "a new schedule starts at its next tick"
    assert one.tick(s, T0 + 10).written == 1
    assert two.tick(s, T0 + 10).written == 0, "the other ticker finds the tick handled"
    assert two.tick(s, T0 + 10, last=T0).written == 0, "even with a stale view of the state"
    ticked = two.tick(s, T0 + 100)
    expected = [T0 + 70, T0 + 80, T0 + 90, T0 + 100]
    if missed == "once":
        expected = [T0 + 60, *expected]
    assert (ticked.last, ticked.written) == (T0 + 100, len(expected))
    assert ticks_in(url, "gaps") == [T0 + 10, *expected]


@pytest.mark.parametrize("kind", KINDS)
def test_pause_and_resume(kind: str, request: pytest.FixtureRequest) -> None:
    url = url_for(kind, request)
    cluster = ["--cluster"] if kind == "cluster" else []
    s = Schedule(name="paused-one", every=10, handler="noop", queue="p")
    schedules = Schedules(connect(url))
    schedules.register([s])
    schedules.tick(s, T0 + 1)
    said = fairway("schedules", "pause", "paused-one", *cluster, redis=url)
    assert (said.returncode, said.stdout.strip()) == (0, "paused-one: paused: its ticks pass without a job")
    assert schedules.tick(s, T0 + 10).written == 0 and schedules.tick(s, T0 + 20).paused
    listed = fairway("schedules", *cluster, redis=url)
    assert "paused-one" in listed.stdout and listed.stdout.rstrip().endswith("paused"), listed.stdout
    assert fairway("schedules", "resume", "paused-one", *cluster, redis=url).returncode == 0
    assert schedules.tick(s, T0 + 30).written == 1, "jobs again from the next tick, none for the pause"
    assert ticks_in(url, "p") == [T0 + 30]
    shown = json.loads(fairway("schedules", "--json", *cluster, redis=url).stdout)
    assert [(v["name"], v["lastRun"], v["paused"]) for v in shown] == [("paused-one", T0 + 30, False)]
    unknown = fairway("schedules", "pause", "nope", *cluster, redis=url)
    assert unknown.returncode == 1 and "no schedule named nope; known: paused-one" in unknown.stderr
    assert fairway("schedules", "pause", "Bad Name", *cluster, redis=url).returncode == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_tenant_schedule_runs_in_the_tenant_group(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = url_for(kind, request)
    path = tmp_path / "worker.yaml"
    schedule = {"name": "sync", "every": 1, "handler": "noop", "args": ["acme"], "tenant": "acme"}
    path.write_text(yaml.safe_dump({"tenants": {"queue_prefix": "t-"}, "schedules": [schedule]}))
    workers = tickers(url, str(path), 2, kind)
    try:
        wait_until(lambda: connect(url).hget(TenantGroupKeys("fairway", "t-").schedule("sync"), "ran"), 20)
        time.sleep(2)
    finally:
        stop_all(workers)
    lines = [line for w in workers for line in job_lines(w.communicate()[0])]
    ran = sorted(line["id"] for line in lines)
    assert ran and all(line["queue"] == "t-acme" and line["tenant"] == "acme" for line in lines), lines
    assert len(ran) == len(set(ran)), "each tick ran once"


def test_a_schedule_declared_in_a_handler_module(redis_url: str) -> None:
    worker = start_worker(redis_url, "--queues", "beats", "--handlers", "support.scheduled_jobs")
    try:
        wait_until(lambda: connect(redis_url).hget(QueueKeys("fairway", "beats").schedule("beat"), "ran"), 20)
        time.sleep(1.5)
    finally:
        stop_all([worker])
    lines = job_lines(worker.communicate()[0])
    assert lines and all(line["handler"] == "beat" and line["id"].startswith("beat:") for line in lines), lines


def test_the_operator_ticks_and_reports_runs_in_the_status(redis_url: str) -> None:
    from fairway.resource.manifests import validate_document
    from fairway_operator.report import Observations, build_status, parse_status

    spec = QueueSupervisorSpec.model_validate(
        {
            "redis": {"url": redis_url},
            "queues": ["reports"],
            "schedules": [{"name": "op", "every": 1, "handler": "noop", "queue": "reports"}],
        }
    )
    client = connect(redis_url)
    tick_spec(client, spec)
    wait_until(lambda: tick_spec(client, spec)[0].ran is not None, 5, interval=0.2)
    views = tick_spec(client, spec)
    assert ticks_in(redis_url, "reports") and views[0].ran == ticks_in(redis_url, "reports")[-1]
    manifest = {"apiVersion": "fairway.dev/v1alpha1", "kind": "QueueSupervisor", "metadata": {"name": "x"}}
    report = validate_document({**manifest, "spec": spec.model_dump(by_alias=True, mode="json")})
    status = build_status(Observations(1, report, schedules=views), parse_status(None), "2026-12-06T00:00:00Z")
    (shown,) = status.schedules
    assert shown.name == "op" and shown.last_run_time is not None and len(shown.next_run_times) == 3
    listed = fairway("schedules", redis=redis_url).stdout.splitlines()
    assert [line.split()[0] for line in listed[1:]] == ["op"], "registered for `fairway schedules`"


def test_a_bad_schedule_stops_a_worker_naming_the_field(redis_url: str, tmp_path: Path) -> None:
    path = config(tmp_path, {"name": "bad", "cron": "61 * * * *", "handler": "noop", "queue": "q"})
    out = fairway("worker", "--config", path, redis=redis_url, timeout=30)
    assert out.returncode == 2 and "schedules.0.cron" in out.stderr and "is not a cron expression" in out.stderr
    assert "Traceback" not in out.stderr
    assert not connect(redis_url).keys("*schedule*"), "nothing written"

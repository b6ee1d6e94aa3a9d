"""`fairway up`: local pools supervised like `php artisan horizon`, on a given or a private Redis."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis
import yaml

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.workers import worker_env


def manifest(tmp_path: Path, **spec: object) -> Path:
    body = {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": "local"},
        "spec": {
            "redis": {"secretRef": {"name": "x", "key": "url"}},
            "queues": ["high", "low"],
            "worker": {"handlers": ["support.jobs"]},
            **spec,
        },
    }
    path = tmp_path / "sup.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def start_up(path: Path, url: str | None, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "fairway.cli", "up", "-f", str(path), "--logs", str(tmp_path / "logs"), *extra]
    if url:
        cmd += ["--redis", url]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=worker_env(url or "redis://127.0.0.1:1/0")
    )


def worker_pids(tmp_path: Path) -> list[int]:
    pattern = f"worker --config {tmp_path / 'logs'}/"
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_for(predicate, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_up_serves_pauses_restarts_crashed_workers_and_drains(redis_url: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, balance="simple", maxProcesses=2, pausedQueues=["low"])
    up = start_up(path, redis_url, tmp_path, "--quiet")
    try:
        client = Client(redis_url)
        client.enqueue_many("record", [[f"h{i}", 0.0] for i in range(10)], queue="high")
        client.enqueue_many("record", [["l0", 0.0]], queue="low")
        r = redis.Redis.from_url(redis_url)
        assert wait_for(lambda: r.llen("test:done") == 10), "the high jobs ran"
        assert Inspector(connect(redis_url)).stats(["low"])[0].paused and r.llen("test:done") == 10, "low stays paused"
        assert wait_for(lambda: len(worker_pids(tmp_path)) == 2)
        victim = worker_pids(tmp_path)[0]
        os.kill(victim, signal.SIGKILL)
        assert wait_for(lambda: len(worker_pids(tmp_path)) == 2 and victim not in worker_pids(tmp_path)), (
            "the crashed worker was restarted"
        )
        client.enqueue("record", "long", 1.5, queue="high")
        assert wait_for(lambda: b"long" in r.lrange("test:started", 0, -1))
    finally:
        up.send_signal(signal.SIGTERM)
        out, _ = up.communicate(timeout=30)
    assert up.returncode == 0, out
    assert b"long" in redis.Redis.from_url(redis_url).lrange("test:done", 0, -1), "draining let the job finish"
    assert worker_pids(tmp_path) == []


def test_up_starts_a_private_redis_when_none_is_reachable(tmp_path: Path) -> None:
    path = manifest(tmp_path, balance="auto", maxProcesses=4, balanceCooldown=1, autoScalingStrategy="size")
    up = start_up(path, None, tmp_path)
    try:
        assert up.stdout is not None
        url = None
        deadline = time.monotonic() + 20
        lines = []
        while url is None and time.monotonic() < deadline:
            line = up.stdout.readline()
            lines.append(line)
            match = re.search(r"private redis-server at (redis://127\.0\.0\.1:\d+/0)", line)
            url = match.group(1) if match else None
        assert url and ":6379/" not in url, lines
        Client(url).enqueue_many("sleep", [[0.05]] * 200, queue="high")
        store = Inspector(connect(url))
        assert wait_for(lambda: len(worker_pids(tmp_path)) >= 3, 15), "auto-balancing grew the busy pool"
        assert wait_for(lambda: store.stats(["high"])[0].ready == 0, 30)
    finally:
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=30)
    assert up.returncode == 0
    assert "supervisor local (balance auto)" in out and "every worker stopped" in out
    assert not redis_alive(url)


def redis_alive(url: str | None) -> bool:
    try:
        return bool(url and redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.ConnectionError:
        return False


def test_up_never_shows_or_writes_the_password(redis_url: str, tmp_path: Path) -> None:
    admin = redis.Redis.from_url(redis_url)
    admin.acl_setuser("app", enabled=True, passwords=["+hunter2"], keys=["*"], channels=["*"], commands=["+@all"])
    secret_url = redis_url.replace("redis://", "redis://app:hunter2@")
    try:
        path = manifest(tmp_path, maxProcesses=1)
        up = start_up(path, secret_url, tmp_path)
        try:
            Client(secret_url).enqueue_many("record", [[f"j{i}", 0.0] for i in range(5)], queue="high")
            assert wait_for(lambda: admin.llen("test:done") == 5), "workers reached Redis with the password"
            time.sleep(1.5)  # at least one table was printed after the jobs ran
        finally:
            up.send_signal(signal.SIGTERM)
            out, _ = up.communicate(timeout=30)
        assert up.returncode == 0 and "supervisor local" in out
        assert "hunter2" not in out and "app:***@" in out
        files = [p for p in (tmp_path / "logs").iterdir() if p.is_file()]
        assert files and all((p.stat().st_mode & 0o777) == 0o600 for p in files), "config and logs are private"
        assert not any("hunter2" in p.read_text() for p in files), "the URL never lands in a file"
        unreachable = secret_url.rsplit(":", 1)[0] + ":1/0"
        refused = start_up(path, unreachable, tmp_path, "--no-embedded-redis")
        out, _ = refused.communicate(timeout=30)
        assert refused.returncode == 2 and "is not reachable" in out and "hunter2" not in out
    finally:
        admin.acl_deluser("app")


def test_the_table_shows_failures_throughput_run_time_and_tenant_jobs_and_logs_only_changes(
    redis_url: str, tmp_path: Path
) -> None:
    import io

    from fairway.local.up import LOG_EVERY_S, Up
    from fairway.resource.manifests import validate_document
    from support.workers import run_in_process

    body = yaml.safe_load(manifest(tmp_path, balance="none", tenants={"queuePrefix": "tenant-"}).read_text())
    spec = validate_document(body).spec
    assert spec is not None
    client = Client(redis_url)
    client.enqueue_many("sleep", [[0.01]] * 12, queue="high")
    client.enqueue("fail", queue="low")
    client.enqueue_many("noop", [[]] * 3, tenant="a")
    run_in_process(redis_url, queues=["high", "low"], burst=True)
    client.enqueue_many("noop", [[]] * 4, tenant="b")
    out = io.StringIO()
    up = Up([("local", spec)], redis_url, log_dir=tmp_path / "logs", out=out)
    table = up.table()
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith("  ")}
    assert rows["QUEUE"] == [
        "QUEUE",
        "READY",
        "RESERVED",
        "FAILED",
        "JOBS/MIN",
        "AVG",
        "RUN",
        "PROCS",
        "PAUSED",
        "OLDEST",
    ]
    assert rows["high"][1:4] == ["0", "0", "0"]
    assert 12 / 5 <= float(rows["high"][4]) <= 12 / 4, "12 jobs in the 5-minute window"
    assert rows["high"][5].endswith("ms") and 10 <= float(rows["high"][5][:-2]) < 100
    assert rows["low"][3] == "1", "the failed job"
    assert "7 jobs waiting across 2 tenants" in table
    assert "(JOBS/MIN and AVG RUN over the last 5 min)" in table

    up._render()
    first = out.getvalue()
    assert re.match(r"--- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", first), first[:60]
    up._render()
    assert out.getvalue() == first, "not again within LOG_EVERY_S"
    up._last_render -= LOG_EVERY_S
    up._render()
    assert out.getvalue() == first, "nothing changed: nothing printed"
    client.enqueue("noop", queue="high")
    up._last_render -= LOG_EVERY_S
    up._render()
    assert out.getvalue().count("--- ") == 2 and out.getvalue() != first


def test_up_scales_a_pool_from_zero_at_its_first_job_and_back(redis_url: str, tmp_path: Path) -> None:
    """The operator's planner on local processes: min 0, woken by a job, back to zero once idle."""
    path = manifest(tmp_path, balance="auto", minProcesses=0, maxProcesses=2, scaleDownDelay=2, balanceCooldown=1)
    up = start_up(path, redis_url, tmp_path)
    try:
        time.sleep(2)
        assert worker_pids(tmp_path) == [], "no job, no process"
        Client(redis_url).enqueue("noop", queue="high")
        assert wait_for(lambda: len(worker_pids(tmp_path)) == 1, 10), "woken by the first job"
        assert wait_for(lambda: Inspector(connect(redis_url)).stats(["high"])[0].ready == 0, 20)
        assert wait_for(lambda: worker_pids(tmp_path) == [], 20), "back to zero after scaleDownDelay"
    finally:
        up.send_signal(signal.SIGTERM)
        out, _ = up.communicate(timeout=30)
    assert up.returncode == 0, out
    assert "pool high: 0 -> 1 pod (1 ready" in out and "pool high: 1 -> 0 pods" in out, out


def test_up_runs_the_supervisors_schedules_even_with_its_pools_at_zero(redis_url: str, tmp_path: Path) -> None:
    """`fairway up` ticks the spec's schedules itself (as the operator does): a pool at zero has no
    worker to tick them; the tick's job wakes the pool, whose worker runs it."""
    beat = {"name": "beat", "every": 1, "handler": "record", "args": ["beat", 0.0], "queue": "high"}
    path = manifest(tmp_path, balance="auto", minProcesses=0, maxProcesses=2, balanceCooldown=1, schedules=[beat])
    up = start_up(path, redis_url, tmp_path, "--quiet")
    try:
        r = redis.Redis.from_url(redis_url)
        assert wait_for(lambda: r.llen("test:done") >= 3, 30), "ticks written by up, run by the woken pool"
    finally:
        up.send_signal(signal.SIGTERM)
        out, _ = up.communicate(timeout=30)
    assert up.returncode == 0, out
    logs = "".join(log.read_text() for log in (tmp_path / "logs").glob("*.log"))
    ticks = sorted({int(tick) for tick in re.findall(r"\bbeat:(\d{9,})", logs)})  # the jobs' ids
    assert len(ticks) >= 3 and ticks == list(range(ticks[0], ticks[-1] + 1)), ticks


def test_up_writes_the_supervisors_tenant_settings_as_the_operator_does(redis_url: str, tmp_path: Path) -> None:
    from fairway.local.up import Up
    from fairway.queue.access.tenant_settings import TenantSettingsStore
    from fairway.queue.connection import connect
    from fairway.resource.manifests import validate_document

    tenants = {"queuePrefix": "tenant-", "defaults": {"rate": 5}, "overrides": [{"tenant": "acme", "maxInFlight": 2}]}
    spec = validate_document(yaml.safe_load(manifest(tmp_path, balance="none", tenants=tenants).read_text())).spec
    assert spec is not None
    Up([("local", spec)], redis_url, log_dir=tmp_path / "logs")
    acme = TenantSettingsStore(connect(redis_url)).show("tenant-", "acme")
    assert (acme.max_in_flight, acme.rate, acme.sources["max_in_flight"]) == (2, 5.0, "override")


def test_up_uses_fairway_redis_url_as_every_verb_does(redis_url: str, tmp_path: Path) -> None:
    """A supervisor with a secretRef, FAIRWAY_REDIS_URL exported (the README's way): the jobs enqueued there
    are served, not left behind while a private Redis idles."""
    path = manifest(tmp_path, balance="none", maxProcesses=1)
    cmd = [sys.executable, "-m", "fairway.cli", "up", "-f", str(path), "--logs", str(tmp_path / "logs"), "--quiet"]
    env = {**worker_env(redis_url), "FAIRWAY_REDIS_URL": redis_url}
    up = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        Client(redis_url).enqueue_many("record", [["a"], ["b"]], queue="high")
        r = redis.Redis.from_url(redis_url)
        assert wait_for(lambda: r.llen("test:done") == 2), "the jobs on FAIRWAY_REDIS_URL ran"
    finally:
        up.send_signal(signal.SIGTERM)
        out, _ = up.communicate(timeout=30)
    assert "private redis-server" not in out and up.returncode == 0, out


def test_up_refuses_an_unreachable_url_the_user_named(tmp_path: Path) -> None:
    path = manifest(tmp_path)
    cmd = [sys.executable, "-m", "fairway.cli", "up", "-f", str(path), "--logs", str(tmp_path / "logs")]
    env = {**os.environ, "FAIRWAY_REDIS_URL": "redis://:pw@127.0.0.1:1/0"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "FAIRWAY_REDIS_URL) is not reachable" in out.stderr and "pw" not in out.stderr


def test_up_removes_the_temporary_folder_it_made(redis_url: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, balance="none", maxProcesses=1)
    temp = tmp_path / "tmp"
    temp.mkdir()
    cmd = [sys.executable, "-m", "fairway.cli", "up", "-f", str(path), "--redis", redis_url, "--quiet"]
    env = {**worker_env(redis_url), "TMPDIR": str(temp)}
    up = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert wait_for(lambda: any(temp.glob("fairway-up-*")))
    time.sleep(1.0)
    up.send_signal(signal.SIGINT)
    out, _ = up.communicate(timeout=30)
    assert up.returncode == 0, out
    assert list(temp.iterdir()) == [], "fairway up left its folder behind"

"""Per-tenant controls under load (issue #23's targets): four real worker processes, a real Redis,
job starts and ends recorded by the `span` handler on the Redis clock.

    .venv/bin/python bench/tenant_controls.py [--only cap,rate,noisy,slow] [--slow-job-s 120]

- cap: a tenant capped at 5 next to three others, 4 workers x concurrency 8: the most of its jobs
  running at once, and the others' jobs/s alone, next to it uncapped, and next to it capped.
- rate: a tenant at 20/s for 30 s next to others, 4 workers: its start rate after the first burst,
  and the others' jobs/s with and without it.
- noisy: one tenant with 5,000 jobs next to 50 quiet tenants of 10 jobs: the quiet tenants' p99
  wait with the noisy one uncapped, capped at 2, and throttled to 200/s.
- slow: a tenant of `--slow-job-s` jobs next to ten tenants sending a 100 ms job every 200 ms each:
  how long until it is quarantined for its run time share, and the quick tenants' p99 wait in each
  window of `--slow-job-s` after it arrived, against the same run with runTimeShare 1 (off).
Results: bench/results/tenant_controls.json; docs/benchmarks.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))

import redis  # noqa: E402

from fairway.queue.access.client import Client  # noqa: E402
from fairway.queue.access.figures import percentile  # noqa: E402
from fairway.queue.access.tenant_settings import TenantSettingsStore  # noqa: E402
from fairway.resource.spec import TenantSettings  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402
from support.spans import most_at_once, spans  # noqa: E402

WORKERS = 4


def workers(url: str, concurrency: int, *extra: str) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests"), "FAIRWAY_TEST_REDIS": url, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", url, "--handlers", "support.jobs"]
    cmd += ["--tenants", "tenant-", "--concurrency", str(concurrency), "--metrics-port", "0", *extra]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(WORKERS)
    ]
    time.sleep(1.5)
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_for(r: redis.Redis, count: int, limit_s: float = 600) -> list[tuple[str, int, int]]:
    deadline = time.monotonic() + limit_s
    while r.llen("test:spans") < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {r.llen('test:spans')} of {count} jobs ran")
        time.sleep(0.1)
    return spans(r)


def jobs_per_s(rows: list[tuple[str, int, int]], tenants: set[str]) -> float:
    mine = [(a, b) for t, a, b in rows if t in tenants]
    return len(mine) / ((max(b for _, b in mine) - min(a for a, _ in mine)) / 1000)


def cap(url: str) -> dict[str, Any]:
    r, client = redis.Redis.from_url(url), Client(url)
    others = {"x", "y", "z"}
    out: dict[str, Any] = {}
    for case in ("others alone", "next to it uncapped", "next to it capped at 5"):
        r.flushdb()
        for tenant in sorted(others):
            client.enqueue_many("span", [[0.05]] * 800, tenant=tenant)
        total = 2400
        if case != "others alone":
            client.enqueue_many("span", [[0.05]] * 800, tenant="capped")
            total += 800
            if "capped at" in case:
                client.set_tenant("capped", max_in_flight=5)
        procs = workers(url, 8)
        try:
            rows = wait_for(r, total)
        finally:
            stop(procs)
        out[case] = {"others_jobs_per_s": round(jobs_per_s(rows, others)), "most_at_once": most_at_once(rows, "capped")}
    return out


def rate(url: str) -> dict[str, Any]:
    r, client = redis.Redis.from_url(url), Client(url)
    out: dict[str, Any] = {}
    for case in ("others alone", "next to a tenant at 20/s"):
        r.flushdb()
        for tenant in ("x", "y", "z"):
            client.enqueue_many("span", [[0.005]] * 1500, tenant=tenant)
        total = 4500
        if case != "others alone":
            client.enqueue_many("span", [[]] * 620, tenant="metered")  # 20 at once (the burst), then 30 s
            client.set_tenant("metered", rate=20)
            total += 620
        procs = workers(url, 4)
        try:
            rows = wait_for(r, total, 120)
        finally:
            stop(procs)
        out[case] = {"others_jobs_per_s": round(jobs_per_s(rows, {"x", "y", "z"}))}
        starts = sorted(a for t, a, _ in rows if t == "metered")[20:]
        if starts:
            out[case]["metered_jobs_per_s"] = round((len(starts) - 1) / ((starts[-1] - starts[0]) / 1000), 2)
            out[case]["metered_seconds"] = round((starts[-1] - starts[0]) / 1000, 1)
    return out


def noisy(url: str) -> dict[str, Any]:
    r, client = redis.Redis.from_url(url), Client(url)
    out: dict[str, Any] = {}
    for case, settings in (
        ("uncapped", None),
        ("capped at 2", TenantSettings(max_in_flight=2)),
        ("throttled to 200/s", TenantSettings(rate=200)),
    ):
        r.flushdb()
        if settings is not None:
            TenantSettingsStore(r).set("tenant-", "noisy", settings)
        procs = workers(url, 4)
        try:
            client.enqueue_many("sleep", [[0.002]] * 5000, tenant="noisy")
            time.sleep(0.5)
            quiet = set()
            for t in range(50):
                quiet |= set(client.enqueue_many("span", [[0.002]] * 10, tenant=f"q{t}"))
            rows = [row for row in wait_for(r, 500)]
        finally:
            stop(procs)
        figures = {f.tenant: f for f in _figures(url)}
        p99s = [figures[f"q{t}"].p99_wait_ms or 0.0 for t in range(50)]
        out[case] = {"quiet_worst_p99_ms": round(max(p99s)), "quiet_median_p99_ms": round(sorted(p99s)[25])}
        assert len(rows) == 500 and len(quiet) == 500
    return out


def _figures(url: str) -> list[Any]:
    from fairway.queue.access.inspector import Inspector
    from fairway.queue.connection import connect

    return Inspector(connect(url)).tenant_figures("tenant-")


def slow(url: str, job_s: float) -> dict[str, Any]:
    """Quick tenants busy (a 100 ms job each every 200 ms), then a slow tenant with 40 jobs of `job_s`:
    the quick tenants' p99 wait (enqueue to start) over each `job_s` window after it arrives."""
    r, client = redis.Redis.from_url(url), Client(url)
    out: dict[str, Any] = {}
    for case, share in (("runTimeShare 0.5 (default)", None), ("runTimeShare 1 (off)", "1")):
        r.flushdb()
        extra = ["--timeout", str(int(job_s * 2))]  # the slow jobs run to their end, not into the timeout
        extra += [] if share is None else ["--config", str(_config(share))]
        procs = workers(url, 4, *extra)
        stop_sending = threading.Event()
        sender = threading.Thread(target=send_quick_jobs, args=(client, stop_sending))
        sender.start()
        quarantined_after = None
        try:
            time.sleep(5)
            client.enqueue_many("span", [[job_s]] * 40, tenant="slow")
            slow_at_ms = _redis_ms(r)
            while _redis_ms(r) - slow_at_ms < 4 * job_s * 1000:
                if quarantined_after is None and r.hget("fairway:{tenants:tenant-}:qreason", "slow") == b"slow":
                    quarantined_after = round((_redis_ms(r) - slow_at_ms) / 1000, 1)
                time.sleep(0.2)
            slow_held = int(r.hget("fairway:{tenants:tenant-}:inflight", "slow") or 0)
            never_started = sum(int(r.llen(f"fairway:{{tenants:tenant-}}:t:quick{t}")) for t in range(10))
        finally:
            stop_sending.set()
            sender.join()
            for proc in procs:  # the slow jobs would hold a drain for minutes: this run is over
                proc.kill()
                proc.wait()
        rows = [row.decode().split("\t") for row in r.lrange("test:spans", 0, -1)]
        waits: dict[int, list[float]] = {}
        for tenant, started, _, enqueued in rows:
            if tenant.startswith("quick"):
                window = int((int(enqueued) - slow_at_ms) // (job_s * 1000)) + 1  # 0: before the slow tenant
                waits.setdefault(max(window, 0), []).append(int(started) - int(enqueued))
        out[case] = {
            "quarantined_after_s": quarantined_after,
            "slow_jobs_running_at_the_end": slow_held,
            "quick_jobs_never_started": never_started,
            "quick_p99_wait_ms_by_window": {
                ("before" if w == 0 else f"{(w - 1) * job_s:g}-{w * job_s:g} s"): round(percentile(v, 0.99))
                for w, v in sorted(waits.items())
            },
        }
    return out


def _redis_ms(r: redis.Redis) -> int:
    seconds, micros = r.time()
    return int(seconds) * 1000 + int(micros) // 1000


def send_quick_jobs(client: Client, stop_sending: threading.Event) -> None:
    """Ten quick tenants, a 100 ms job each every 200 ms, until told to stop."""
    while not stop_sending.is_set():
        for t in range(10):
            client.enqueue("span", 0.1, tenant=f"quick{t}")
        time.sleep(0.2)


def _config(share: str) -> Path:
    path = Path("/tmp/fairway-bench-slow.yaml")
    path.write_text(f"tenants:\n  quarantine:\n    runTimeShare: {share}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="cap,rate,noisy,slow")
    parser.add_argument("--slow-job-s", type=float, default=120.0)
    args = parser.parse_args()
    server = RedisProcess().start()
    results: dict[str, Any] = {}
    try:
        for name in args.only.split(","):
            started = time.monotonic()
            results[name] = slow(server.url, args.slow_job_s) if name == "slow" else globals()[name](server.url)
            print(f"{name} ({time.monotonic() - started:.0f} s): {json.dumps(results[name])}", flush=True)
    finally:
        server.cleanup()
    out = BENCH / "results" / "tenant_controls.json"
    kept = json.loads(out.read_text()) if out.exists() else {}  # an --only run replaces its scenarios alone
    out.write_text(json.dumps({**kept, **results}, indent=2) + "\n")


if __name__ == "__main__":
    main()

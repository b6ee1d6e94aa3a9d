"""Redis a network hop away: one worker process draining jobs through a proxy that adds ~1 ms per
round trip (bench/proxy.py), Fairway at concurrency 1, 8 and 32 against the peers at the same N.

    bench/setup.sh && .venv-bench/bin/python bench/latency.py [--delay-ms 1] [--rounds 1]

Workloads: no-op jobs, and jobs that wait 20 ms (`time.sleep` on threads, `asyncio.sleep` for arq).
Every subject is one worker process started on a full queue (filled directly, not through the proxy)
and timed from its first job taken to an empty queue, so start-up is not counted; its CPU time (the
process and its children, from /proc) is read at the end. Subjects: Fairway (`--concurrency N`), arq
(`max_jobs` = N), Dramatiq (1 process x N threads), Celery (`--pool threads`, N) and RQ (no
concurrency: N = 1). Slow subjects get fewer jobs (--slow-jobs) so a run stays within minutes; rates
are per second either way. Results go to bench/results/latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from support.redis_procs import RedisProcess, free_port  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live descendants."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
            for task in Path(f"/proc/{current}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


def drain(cmd: list[str], env: dict[str, str], jobs: int, remaining: Callable[[], int]) -> tuple[float, float]:
    """(jobs/s, CPU ms per job) of one worker process draining a full queue."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        deadline = time.monotonic() + 600
        while remaining() >= jobs:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{cmd[:4]} never took a job")
            time.sleep(0.001)
        cpu_before, started = tree_cpu_s(proc.pid), time.perf_counter()
        while remaining() > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{cmd[:4]} did not drain the queue")
            time.sleep(0.005)
        elapsed = time.perf_counter() - started
        cpu = tree_cpu_s(proc.pid) - cpu_before
        return jobs / elapsed, cpu / jobs * 1000
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


class Subjects:
    def __init__(self, direct: str, proxied: str) -> None:
        self.direct, self.proxied = direct, proxied
        self.r = redis.Redis.from_url(direct)
        self.env = {**os.environ, "BENCH_REDIS_URL": proxied, "PYTHONPATH": str(ROOT)}

    def fairway(self, n: int, jobs: int, sleep: bool) -> tuple[float, float]:
        from fairway.queue.access.client import Client

        self.r.flushdb()
        Client(self.direct).enqueue_many("sleep" if sleep else "noop", [[0.02] if sleep else []] * jobs, queue="q")
        cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", self.proxied, "--queues", "q"]
        cmd += ["--concurrency", str(n), "--log-format", "none", "--block-for", "1"]
        return drain(
            cmd,
            self.env,
            jobs,
            lambda: int(self.r.llen("fairway:{q}:ready")) + int(self.r.zcard("fairway:{q}:reserved")),
        )

    def dramatiq(self, n: int, jobs: int, sleep: bool) -> tuple[float, float]:
        import dramatiq
        from dramatiq.brokers.redis import RedisBroker

        self.r.flushdb()
        dramatiq.set_broker(RedisBroker(url=self.direct))
        from bench.peers import tasks

        actor = tasks.dramatiq_sleep if sleep else tasks.dramatiq_noop
        for _ in range(jobs):
            actor.send()
        cmd = [sys.executable, "-m", "dramatiq", "bench.peers.tasks", "--processes", "1", "--threads", str(n)]
        return drain(cmd, self.env, jobs, lambda: int(self.r.hlen("dramatiq:default.msgs")))

    def celery(self, n: int, jobs: int, sleep: bool) -> tuple[float, float]:
        from bench.peers.tasks import celery_app

        self.r.flushdb()
        celery_app.conf.broker_url = self.direct
        with celery_app.connection_for_write() as conn, conn.Producer() as producer:
            for _ in range(jobs):
                celery_app.send_task("sleep" if sleep else "noop", producer=producer)
        cmd = [sys.executable, "-m", "celery", "-A", "bench.peers.tasks:celery_app", "worker", "--pool=threads"]
        cmd += [f"--concurrency={n}", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=ERROR"]
        return drain(cmd, self.env, jobs, lambda: int(self.r.llen("celery")) + int(self.r.hlen("unacked")))

    def arq(self, n: int, jobs: int, sleep: bool) -> tuple[float, float]:
        import asyncio

        from arq import create_pool
        from arq.connections import RedisSettings

        self.r.flushdb()

        async def fill() -> None:
            pool = await create_pool(RedisSettings.from_dsn(self.direct))
            for _ in range(jobs):
                await pool.enqueue_job("arq_sleep" if sleep else "arq_noop")
            await pool.aclose()

        asyncio.run(fill())
        cmd = [sys.executable, "-m", "arq", "bench.peers.tasks.ArqSettings"]

        def remaining() -> int:
            return int(self.r.zcard("arq:queue")) + len(self.r.keys("arq:in-progress:*"))

        return drain(cmd, {**self.env, "ARQ_MAX_JOBS": str(n)}, jobs, remaining)

    def rq(self, n: int, jobs: int, sleep: bool) -> tuple[float, float]:
        from bench.peers.tasks import rq_noop, rq_sleep
        from rq import Queue
        from rq.registry import StartedJobRegistry

        self.r.flushdb()
        queue = Queue("default", connection=self.r)
        func = rq_sleep if sleep else rq_noop
        for start in range(0, jobs, 1000):
            queue.enqueue_many([Queue.prepare_data(func) for _ in range(min(1000, jobs - start))])
        started = StartedJobRegistry(queue=queue)
        cmd = [sys.executable, "-m", "rq.cli", "worker", "--burst", "-w", "rq.SimpleWorker", "--url", self.proxied]
        cmd += ["--logging_level", "ERROR", "default"]
        return drain(cmd, self.env, jobs, lambda: queue.count + started.count)


def measured_rtt_ms(url: str) -> float:
    r = redis.Redis.from_url(url)
    r.ping()
    samples = []
    for _ in range(50):
        t = time.perf_counter()
        r.ping()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=20_000, help="no-op jobs for fast subjects")
    parser.add_argument("--sleep-jobs", type=int, default=5_000, help="20 ms jobs at N = 8 and 32")
    parser.add_argument("--slow-jobs", type=int, default=1_000, help="jobs for subjects at N = 1, and arq/RQ")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="subject names, e.g. fairway dramatiq")
    args = parser.parse_args()
    server = RedisProcess().start()
    os.environ["BENCH_REDIS_URL"] = server.url  # peers' tasks bind their broker at import: fill directly
    port = free_port()
    upstream = f"127.0.0.1:{server.port}"
    proxy_cmd = [sys.executable, str(BENCH / "proxy.py"), "--listen", str(port), "--upstream", upstream]
    proxy = subprocess.Popen([*proxy_cmd, "--delay-ms", str(args.delay_ms)], stdout=subprocess.DEVNULL)
    proxied = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    subjects = Subjects(server.url, proxied)
    plan: list[tuple[str, int]] = [
        ("fairway", 1),
        ("fairway", 8),
        ("fairway", 32),
        ("arq", 8),
        ("arq", 32),
        ("dramatiq", 8),
        ("dramatiq", 32),
        ("celery", 8),
        ("celery", 32),
        ("rq", 1),
    ]
    plan = [(name, n) for name, n in plan if not args.only or name in args.only]
    results: dict[str, dict[str, Any]] = {}
    try:
        rtt = {"direct": measured_rtt_ms(server.url), "proxied": measured_rtt_ms(proxied)}
        for workload in ("noop", "sleep20ms"):
            sleep = workload == "sleep20ms"
            for name, n in plan:
                slow = n == 1 or name in ("arq", "rq")
                jobs = args.slow_jobs if slow else (args.sleep_jobs if sleep else args.jobs)
                rounds = [getattr(subjects, name)(n, jobs, sleep) for _ in range(args.rounds)]
                rate = statistics.median(r[0] for r in rounds)
                cpu = statistics.median(r[1] for r in rounds)
                results[f"{workload}/{name}/{n}"] = {
                    "jobs": jobs,
                    "jobs_per_s": round(rate),
                    "cpu_ms_per_job": round(cpu, 3),
                }
                print(f"{workload:<10} {name:<9} N={n:<3} {rate:>8.0f} jobs/s  {cpu:6.3f} ms CPU/job  ({jobs} jobs)")
    finally:
        proxy.terminate()
        server.cleanup()
    print(f"round trip: direct {rtt['direct']:.3f} ms, through the proxy {rtt['proxied']:.3f} ms")
    report = {"delay_ms": args.delay_ms, "rtt_ms": rtt, "results": results}
    (BENCH / "results" / "latency.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

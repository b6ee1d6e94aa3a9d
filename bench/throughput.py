"""Throughput ceiling: one Fairway worker draining no-op jobs over 3 weighted queues, against what Redis allows
and against the workers people use today, all on one local Redis in the same run.

    bench/setup.sh && .venv-bench/bin/python bench/throughput.py [--jobs 20000] [--rounds 3]

Baselines measured in the same run, median of rounds:
  (a) the ceiling for a queue that never loses a job: per job, one small Lua script pops a payload and
      adds it to a reserved set (one round trip), then the payload is decoded;
  (b) a plain LPOP + decode loop (information only: it can lose jobs);
  (c) RQ SimpleWorker (burst), arq (burst), Celery (--pool=solo) and Dramatiq (1 process, 1 thread).
Fairway, RQ and arq run in this process and are timed around their burst run; Celery and Dramatiq run
as their own worker processes, timed from the first job taken until the queue is empty (so their start-up
is not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests"))
sys.path.insert(0, str(BENCH.parent))

import redis  # noqa: E402

from support.redis_procs import RedisProcess  # noqa: E402

POP_AND_RESERVE = """
local doc = redis.call('LPOP', KEYS[1])
if doc then redis.call('ZADD', KEYS[2], ARGV[1], doc) end
return doc
"""
DOC = json.dumps({"id": "x", "handler": "noop", "queue": "q", "args": [], "kwargs": {}, "enqueued_at": 0})


def fill_list(r: redis.Redis, key: str, jobs: int) -> None:
    with r.pipeline(transaction=False) as pipe:
        for start in range(0, jobs, 5000):
            pipe.rpush(key, *[DOC] * min(5000, jobs - start))
        pipe.execute()


def baseline_lua(url: str, jobs: int) -> float:
    r = redis.Redis.from_url(url)
    r.flushdb()
    fill_list(r, "q", jobs)
    script = r.register_script(POP_AND_RESERVE)
    started = time.perf_counter()
    for _ in range(jobs):
        json.loads(script(keys=["q", "reserved"], args=[0]))
    return jobs / (time.perf_counter() - started)


def baseline_lpop(url: str, jobs: int) -> float:
    r = redis.Redis.from_url(url)
    r.flushdb()
    fill_list(r, "q", jobs)
    started = time.perf_counter()
    for _ in range(jobs):
        json.loads(r.lpop("q"))  # type: ignore[arg-type]
    return jobs / (time.perf_counter() - started)


def fairway_rate(url: str, jobs: int, concurrency: int = 1) -> float:
    import fairway.builtins  # noqa: F401
    from fairway.queue.access.client import Client
    from fairway.queue.connection import connect
    from fairway.queue.runtime.fetch import fetcher_for
    from fairway.queue.runtime.handlers import registry
    from fairway.queue.runtime.worker import Worker
    from fairway.resource.worker_settings import WorkerSettings

    redis.Redis.from_url(url).flushdb()
    client = Client(url)
    shares = {"high": 3, "default": 2, "low": 1}
    counts = {q: jobs * w // 6 for q, w in shares.items()}
    counts["low"] += jobs - sum(counts.values())
    for queue, count in counts.items():
        client.enqueue_many("noop", [[]] * count, queue=queue)
    settings = WorkerSettings(
        redis_url=url,
        queues=list(shares),
        weights={"high": 3, "default": 2},
        burst=True,
        log_format="none",
        concurrency=concurrency,
    )
    fetcher = fetcher_for(connect(url, False), settings, random.Random(1))
    worker = Worker(settings, fetcher, registry, out=io.StringIO())
    started = time.perf_counter()
    worker.run()
    return jobs / (time.perf_counter() - started)


def rq_rate(url: str, jobs: int) -> float:
    from bench.peers.tasks import rq_noop
    from rq import Queue, SimpleWorker

    r = redis.Redis.from_url(url)
    r.flushdb()
    queue = Queue("default", connection=r)
    for start in range(0, jobs, 1000):
        queue.enqueue_many([Queue.prepare_data(rq_noop) for _ in range(min(1000, jobs - start))])
    worker = SimpleWorker([queue], connection=r)
    started = time.perf_counter()
    worker.work(burst=True, logging_level="ERROR")
    return jobs / (time.perf_counter() - started)


def arq_rate(url: str, jobs: int) -> float:
    from arq import create_pool
    from arq.connections import RedisSettings
    from arq.worker import Worker as ArqWorker
    from bench.peers.tasks import arq_noop

    redis.Redis.from_url(url).flushdb()
    settings = RedisSettings.from_dsn(url)

    async def fill() -> None:
        pool = await create_pool(settings)
        for _ in range(jobs):
            await pool.enqueue_job("arq_noop")
        await pool.aclose()

    asyncio.run(fill())
    import logging

    logging.getLogger("arq").setLevel(logging.ERROR)
    worker = ArqWorker(functions=[arq_noop], redis_settings=settings, burst=True, handle_signals=False)
    started = time.perf_counter()
    worker.run()
    elapsed = time.perf_counter() - started
    asyncio.run(worker.close()) if hasattr(worker, "close") else None
    return jobs / elapsed


def _drain_subprocess(url: str, jobs: int, cmd: list[str], remaining: Callable[[redis.Redis], int]) -> float:
    """Start a peer's worker process on a full queue; time from its first job to an empty queue."""
    r = redis.Redis.from_url(url)
    env = {**os.environ, "BENCH_REDIS_URL": url, "PYTHONPATH": str(BENCH.parent)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=BENCH.parent)
    try:
        deadline = time.monotonic() + 300
        while remaining(r) >= jobs:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} never took a job")
            time.sleep(0.001)
        started = time.perf_counter()
        while remaining(r) > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{cmd[0]} did not drain the queue")
            time.sleep(0.002)
        return jobs / (time.perf_counter() - started)
    finally:
        proc.terminate()
        proc.wait(30)


def celery_rate(url: str, jobs: int) -> float:
    from bench.peers.tasks import celery_app

    redis.Redis.from_url(url).flushdb()
    with celery_app.connection_for_write() as conn, conn.Producer() as producer:
        for _ in range(jobs):
            celery_app.send_task("noop", producer=producer)
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "bench.peers.tasks:celery_app",
        "worker",
        "--pool=solo",
        "--concurrency=1",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel=ERROR",
    ]
    return _drain_subprocess(url, jobs, cmd, lambda r: int(r.llen("celery")) + int(r.hlen("unacked")))


def dramatiq_rate(url: str, jobs: int) -> float:
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    redis.Redis.from_url(url).flushdb()
    dramatiq.set_broker(RedisBroker(url=url))
    from bench.peers import tasks

    for _ in range(jobs):
        tasks.dramatiq_noop.send()
    cmd = [sys.executable, "-m", "dramatiq", "bench.peers.tasks", "--processes", "1", "--threads", "1"]
    return _drain_subprocess(url, jobs, cmd, lambda r: int(r.hlen("dramatiq:default.msgs")))


SUBJECTS: dict[str, Callable[[str, int], float]] = {
    "(a) Lua pop+reserve loop": baseline_lua,
    "(b) LPOP loop": baseline_lpop,
    "fairway worker": fairway_rate,
    "fairway worker, concurrency 32": lambda url, jobs: fairway_rate(url, jobs, 32),
    "RQ SimpleWorker": rq_rate,
    "arq": arq_rate,
    "Celery solo": celery_rate,
    "Dramatiq 1x1": dramatiq_rate,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--peer-jobs", type=int, default=5_000, help="jobs for the (much slower) peers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    server = RedisProcess().start()
    os.environ["BENCH_REDIS_URL"] = server.url  # before bench.peers.tasks is first imported
    rates: dict[str, list[float]] = {name: [] for name in SUBJECTS if not args.only or name in args.only}
    try:
        for _ in range(args.rounds):
            for name in rates:
                peer = not name.startswith(("(a)", "(b)", "fairway"))
                rates[name].append(SUBJECTS[name](server.url, args.peer_jobs if peer else args.jobs))
    finally:
        server.cleanup()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    ceiling = medians.get("(a) Lua pop+reserve loop")
    peers = [medians[n] for n in ("RQ SimpleWorker", "arq", "Celery solo", "Dramatiq 1x1") if n in medians]
    print(f"{'subject':<26} {'jobs/s':>8} {'vs (a)':>7} {'fairway is':>11}")
    fairway = medians.get("fairway worker")
    report: dict[str, Any] = {}
    for name, rate in medians.items():
        vs_a = f"{rate / ceiling:.2f}" if ceiling else "-"
        vs_fw = f"{fairway / rate:.1f}x" if fairway and not name.startswith("fairway") else ""
        print(f"{name:<26} {rate:>8.0f} {vs_a:>7} {vs_fw:>11}")
        report[name] = {"jobs_per_s": round(rate), "ratio_to_a": round(rate / ceiling, 3) if ceiling else None}
    if fairway and peers:
        print(f"\nfairway / fastest single-threaded peer: {fairway / max(peers):.1f}x")
        report["fairway_vs_fastest_peer"] = round(fairway / max(peers), 2)
    out = BENCH / "results" / "throughput.json"
    out.write_text(
        json.dumps({"jobs": args.jobs, "peer_jobs": args.peer_jobs, "rounds": args.rounds, "results": report}, indent=2)
        + "\n"
    )


if __name__ == "__main__":
    main()

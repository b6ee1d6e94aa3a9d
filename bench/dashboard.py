"""The dashboard's first screen with 10,000 tenants in Redis: must load in under 300 ms.

Seeds a private Redis with 10,000 tenants (each with jobs waiting and a minute of figures, from a real
worker draining part of them) and four plain queues with jobs and failures, starts `fairway dashboard`
as its own process, and times full page loads over HTTP (the first screen, `/`, and the tenants page),
median and p95 of `--requests` loads after one warm-up.

    .venv/bin/python bench/dashboard.py [--tenants 10000] [--requests 30]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fairway.queue.access.client import Client
from fairway.queue.access.producer import Producer
from fairway.queue.connection import connect
from fairway.queue.protocol.job import new_job
from support.redis_procs import RedisProcess, free_port
from support.workers import run_in_process

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 300


def seed(url: str, tenants: int) -> None:
    client, producer, rng = Client(url), Producer(connect(url)), random.Random(7)
    now = int(time.time() * 1000)
    for t in range(tenants):
        waited = rng.expovariate(1 / 2000)
        doc = new_job("noop", f"tenant-t{t}", [], {}, tenant=f"t{t}", now_ms=now - int(waited)).encode()
        producer.enqueue_tenant("tenant-", f"t{t}", [doc] * 3)
    run_in_process(url, tenants={"max_consecutive_jobs": 1}, max_jobs=tenants)  # a minute of figures each
    for queue in ("emails", "reports", "billing", "default"):
        client.enqueue_many("noop", [[]] * 500, queue=queue)
        client.enqueue_many("fail", [[]] * 20, queue=queue)
    run_in_process(url, queues=["emails", "reports", "billing", "default"], max_jobs=1000)


def load_ms(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    server = RedisProcess().start()
    try:
        seed(server.url, args.tenants)
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "fairway.cli", "dashboard", "--redis", server.url, "--port", str(port)],
            stdout=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    load_ms(base + "/healthz")
                    break
                except OSError:
                    time.sleep(0.1)
            results = {}
            for page in ("/", "/tenants", "/failed"):
                load_ms(base + page)  # warm-up
                times = sorted(load_ms(base + page) for _ in range(args.requests))
                results[page] = {
                    "median_ms": round(statistics.median(times), 1),
                    "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
                }
                print(f"{page:<10} median {results[page]['median_ms']:7.1f} ms   p95 {results[page]['p95_ms']:7.1f} ms")
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        server.cleanup()
    first = results["/"]["median_ms"]
    print(f"first screen with {args.tenants} tenants: {first:.1f} ms median (target < {TARGET_MS} ms)")
    out = ROOT / "bench" / "results" / "dashboard.json"
    out.write_text(json.dumps({"tenants": args.tenants, "requests": args.requests, "pages": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Cost per job versus number of active tenants (10, 1,000, 10,000): the O(1) ring.

Every tenant keeps work for the whole measurement, so the ring really holds N tenants. Each round
pops (and acknowledges, in the same call) `--jobs` jobs through the worker's real hot path. Reports
jobs/s and the cost ratio to the 10-tenant case, median of rounds; the 10-tenant case is re-measured
in every round, interleaved, so drift on a noisy machine cancels out.

    .venv/bin/python bench/tenants_scaling.py [--jobs 10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fairway.queue.access.producer import Producer
from fairway.queue.connection import RedisClient, connect
from fairway.queue.runtime.fetch import StandaloneFetcher
from fairway.queue.runtime.settings import WorkerSettings
from support.redis_procs import RedisProcess


def rate(client: RedisClient, tenants: int, jobs: int) -> float:
    client.flushdb()
    producer = Producer(client)
    per_tenant = jobs // tenants + 2
    for t in range(tenants):
        doc = b'{"id":"x","handler":"noop","queue":"tenant-t%d","tenant":"t%d","args":[],"enqueued_at":0}' % (t, t)
        producer.enqueue_tenant("tenant-", f"t{t}", [doc] * per_tenant)
    settings = WorkerSettings(tenants={"max_consecutive_jobs": 5}, retry_after_s=60, timeout_s=30)
    fetcher = StandaloneFetcher(client, settings)
    fetcher.refresh()
    ack = None
    started = time.perf_counter()
    for _ in range(jobs):
        got = fetcher.reserve([(ack, 3)] if ack else [])
        ack = got[0]
    elapsed = time.perf_counter() - started
    assert ack is not None
    return jobs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = RedisProcess().start()
    counts = (10, 1_000, 10_000)
    rates: dict[int, list[float]] = {n: [] for n in counts}
    ratios: dict[int, list[float]] = {n: [] for n in counts}
    try:
        client = connect(server.url, False)
        for _ in range(args.rounds):
            for n in counts:
                baseline = rate(client, 10, args.jobs)
                measured = rate(client, n, args.jobs)
                rates[n].append(measured)
                ratios[n].append(baseline / measured)
    finally:
        server.cleanup()
    print(f"{'active tenants':>14} {'jobs/s':>8} {'cost vs 10 tenants':>19}")
    report = {}
    for n in counts:
        r, ratio = statistics.median(rates[n]), statistics.median(ratios[n])
        report[str(n)] = {"jobs_per_s": round(r), "cost_ratio_vs_10": round(ratio, 2)}
        print(f"{n:>14} {r:>8.0f} {ratio:>18.2f}x")
    out = Path(__file__).parent / "results" / "tenants_scaling.json"
    out.write_text(json.dumps({"jobs": args.jobs, "rounds": args.rounds, "results": report}, indent=2) + "\n")


if __name__ == "__main__":
    main()

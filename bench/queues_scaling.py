"""Cost per job versus number of served queues (3, 30, 300), only the last queue holding work.

Compares, in the same run on the same Redis:
- fairway: the worker's real hot path (`StandaloneFetcher.reserve`: ack + reserve in one call, drawing
  among served queues that hold work);
- order-in-argv: DESIGN.md's sketch, a script that receives this poll's whole weighted order and
  walks it (LPOP per queue), which is what the active-set design replaced.
Reports jobs/s and each figure as a ratio to its own 3-queue case (median of rounds).

    .venv/bin/python bench/queues_scaling.py [--jobs 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fairway.queue.access.producer import Producer
from fairway.queue.connection import RedisClient, connect
from fairway.queue.protocol.scheduling import weighted_order
from fairway.queue.runtime.fetch import StandaloneFetcher
from fairway.resource.worker_settings import WorkerSettings
from support.redis_procs import RedisProcess

WALK_ORDER = """
for i = 1, #ARGV do
  local doc = redis.call('LPOP', 'fairway:{' .. ARGV[i] .. '}:ready')
  if doc then
    redis.call('ZADD', 'fairway:{' .. ARGV[i] .. '}:reserved', 0, doc)
    return doc
  end
end
return false
"""


def fill(client: RedisClient, queue: str, jobs: int) -> None:
    doc = json.dumps({"id": "x", "handler": "noop", "queue": queue, "args": [], "enqueued_at": 0})
    client.flushdb()
    payloads = [doc.replace('"x"', f'"{i}"').encode() for i in range(jobs)]
    Producer(client).enqueue_many(queue, payloads)


def fairway_rate(client: RedisClient, queues: list[str], jobs: int) -> float:
    weights = {q: 1 + (i % 3) for i, q in enumerate(queues)}
    settings = WorkerSettings(queues=queues, weights=weights, retry_after_s=60, timeout_s=30)
    fetcher = StandaloneFetcher(client, settings, random.Random(1))
    fill(client, queues[-1], jobs)
    fetcher.refresh()
    ack = None
    started = time.perf_counter()
    for _ in range(jobs):
        ack = fetcher.reserve([(ack, -1)] if ack else [])[0]
    return jobs / (time.perf_counter() - started)


def order_in_argv_rate(client: RedisClient, queues: list[str], jobs: int) -> float:
    script = client.register_script(WALK_ORDER)
    weights = {q: 1 + (i % 3) for i, q in enumerate(queues)}
    fill(client, queues[-1], jobs)
    rng = random.Random(1)
    started = time.perf_counter()
    for _ in range(jobs):
        script(keys=[], args=weighted_order(queues, weights, (), rng))
    return jobs / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = RedisProcess().start()
    try:
        client = connect(server.url, False)
        results: dict[str, dict[int, float]] = {"fairway": {}, "order-in-argv": {}}
        for name, fn in (("fairway", fairway_rate), ("order-in-argv", order_in_argv_rate)):
            for count in (3, 30, 300):
                queues = [f"q{i}" for i in range(count)]
                rates = [fn(client, queues, args.jobs) for _ in range(args.rounds)]
                results[name][count] = statistics.median(rates)
    finally:
        server.cleanup()
    print(f"{'design':<15} {'queues':>6} {'jobs/s':>9} {'cost vs 3 queues':>17}")
    report = {}
    for name, by_count in results.items():
        for count, rate in by_count.items():
            ratio = by_count[3] / rate
            report[f"{name}/{count}"] = {"jobs_per_s": round(rate), "cost_ratio_vs_3": round(ratio, 2)}
            print(f"{name:<15} {count:>6} {rate:>9.0f} {ratio:>16.2f}x")
    out = Path(__file__).parent / "results" / "queues_scaling.json"
    out.write_text(json.dumps({"jobs": args.jobs, "rounds": args.rounds, "results": report}, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Cost per job versus number of served queues (3, 30, 300), only the last queue holding work.

Compares, in the same run on the same Redis:
- fairway: the worker's real hot path (`Store.reserve_weighted`: ack + reserve in one call, drawing
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

from fairway.scheduling import rank_table, weighted_order
from fairway.store import Store, connect
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


def fill(store: Store, queue: str, jobs: int) -> None:
    doc = json.dumps({"id": "x", "handler": "noop", "queue": queue, "args": [], "enqueued_at": 0})
    store.client.flushdb()
    payloads = [doc.replace('"x"', f'"{i}"').encode() for i in range(jobs)]
    store.enqueue_many(queue, payloads, chunk=5000)


def fairway_rate(store: Store, queues: list[str], jobs: int) -> float:
    weights = {q: 1 + (i % 3) for i, q in enumerate(queues)}
    strict, table = rank_table(queues, weights)
    served = store.register_served(queues, strict, table)
    fill(store, queues[-1], jobs)
    served = store.register_served(queues, strict, table)
    rng = random.Random(1)
    ack = None
    started = time.perf_counter()
    for _ in range(jobs):
        ack = store.reserve_weighted(served, strict, rng.random(), 60_000, ack)
    return jobs / (time.perf_counter() - started)


def order_in_argv_rate(store: Store, queues: list[str], jobs: int) -> float:
    script = store.client.register_script(WALK_ORDER)
    weights = {q: 1 + (i % 3) for i, q in enumerate(queues)}
    fill(store, queues[-1], jobs)
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
        store = Store(connect(server.url, False))
        results: dict[str, dict[int, float]] = {"fairway": {}, "order-in-argv": {}}
        for name, fn in (("fairway", fairway_rate), ("order-in-argv", order_in_argv_rate)):
            for count in (3, 30, 300):
                queues = [f"q{i}" for i in range(count)]
                rates = [fn(store, queues, args.jobs) for _ in range(args.rounds)]
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

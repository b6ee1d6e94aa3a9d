"""What #13-#15 added to each job's path in the worker, per job, in this process: the job context
(built, made current, put back), the Prometheus counters and histograms, the per-tick tally (run time
and wait bucket). Each is timed against the same process's cost of reserving and acknowledging one job
through the real hot path (reserve.lua on a private Redis), so the share is a ratio, not a clock time.

    .venv/bin/python bench/bookkeeping.py
"""

from __future__ import annotations

import json
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fairway.queue.access.client import Client
from fairway.queue.access.figures import RunTally
from fairway.queue.connection import connect
from fairway.queue.protocol.context import JobContext, enter, leave
from fairway.queue.runtime.fetch import StandaloneFetcher
from fairway.queue.runtime.metrics import WorkerMetrics
from fairway.queue.runtime.runner import Runner
from fairway.queue.runtime.slots import Slots
from fairway.resource.worker_settings import WorkerSettings
from support.redis_procs import RedisProcess

N = 200_000


def per_call_us(stmt: object, number: int = N) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number * 1e6  # type: ignore[arg-type]


def round_trip_us(url: str, jobs: int = 20_000) -> float:
    """One job reserved and acknowledged through reserve.lua, the worker's real hot path."""
    Client(url).enqueue_many("noop", [[]] * jobs, queue="default")
    fetcher = StandaloneFetcher(connect(url), WorkerSettings(redis_url=url, queues=["default"]))
    acks: list = []
    started = time.perf_counter()
    for _ in range(jobs):
        got = fetcher.reserve(acks, 1)
        acks = [(got[0], -1)] if got else []
    return (time.perf_counter() - started) / jobs * 1e6


def main() -> None:
    metrics = WorkerMetrics(["noop"], Slots(WorkerSettings(queues=["default"]), Runner(1, time.monotonic, 1.0)))
    tally = RunTally()

    def context() -> None:
        token = enter(JobContext("0123456789abcdef", "default", "noop", None, 1, 3, 1, "default", print))
        leave(token)

    costs = {
        "job context (build, enter, leave)": per_call_us(context),
        "metrics.job_finished": per_call_us(lambda: metrics.job_finished("default", "noop", "ok", 1e-4, 2e-3)),
        "metrics.reserve_round_trip": per_call_us(lambda: metrics.reserve_round_trip(1)),
        "RunTally.add": per_call_us(lambda: tally.add(0.1, 12)),
    }
    server = RedisProcess().start()
    try:
        trip = round_trip_us(server.url)
    finally:
        server.cleanup()
    total = sum(costs.values())
    for name, us in costs.items():
        print(f"{name:<36} {us:6.3f} us  ({us / trip:6.2%} of a job's reserve+ack)")
    print(f"{'all of them':<36} {total:6.3f} us  ({total / trip:6.2%}); reserve+ack on loopback: {trip:.1f} us")
    out = Path(__file__).resolve().parent / "results" / "bookkeeping.json"
    out.write_text(json.dumps({"costs_us": costs, "round_trip_us": trip, "share": total / trip}, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""What keeping results costs, and what jobs that keep none pay for the feature: one run, three subjects.

    git worktree add /tmp/before <commit before results>
    .venv/bin/python bench/results_cost.py /tmp/before .

Subjects, each in a fresh process importing its checkout's code, on a fresh Redis, visited in the order
A B C C B A per round (a drift of this machine's speed falls on all alike):
  A  the checkout before results, jobs keep nothing;
  B  this checkout, jobs keep nothing (the price every job pays: one HGET when it is acknowledged,
     for its unique key, and the handler's limits read when it succeeds);
  C  this checkout, every job keeps its result for an hour (an acknowledgement call of its own).
Each visit: one worker (concurrency 1) drains 20,000 no-op jobs from 3 weighted queues, then the bare
Lua pop+reserve loop runs in the same process; the figure is the ratio of the two, so the machine's
speed cancels. Also from Redis's INFO commandstats: the script time per job (all EVALSHA, µs) and
script calls per job. Results: bench/results/results_cost.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent

PROBE = """
import io, json, random, sys, time
root, keep = sys.argv[1], sys.argv[2] == "keep"
for sub in ("worker", "bench", "tests", ""):
    sys.path.insert(0, f"{root}/{sub}".rstrip("/"))
import redis, throughput
from support.redis_procs import RedisProcess
import fairway.builtins
from fairway.queue.connection import connect
from fairway.queue.protocol.job import new_job
from fairway.queue.protocol.keys import QueueKeys
from fairway.queue.runtime.fetch import fetcher_for
from fairway.queue.runtime.handlers import registry
from fairway.queue.runtime.worker import Worker
from fairway.resource.worker_settings import WorkerSettings

JOBS = 20_000
server = RedisProcess().start()
try:
    r = redis.Redis.from_url(server.url)
    shares = {"high": 3, "default": 2, "low": 1}
    counts = {q: JOBS * w // 6 for q, w in shares.items()}
    counts["low"] += JOBS - sum(counts.values())
    options = {"result_ttl": 3600} if keep else {}
    with r.pipeline(transaction=False) as pipe:
        for queue, count in counts.items():
            keys = QueueKeys("fairway", queue)
            docs = [new_job("noop", queue, [], {}, **options).encode() for _ in range(count)]
            pipe.rpush(keys.ready, *docs)
            pipe.rpush(keys.notify, *([b"1"] * count))
            pipe.sadd("fairway:active", queue)
            pipe.sadd("fairway:queues", queue)
        pipe.execute()
    settings = WorkerSettings(redis_url=server.url, queues=list(shares), weights={"high": 3, "default": 2},
                              burst=True, log_format="none")
    worker = Worker(settings, fetcher_for(connect(server.url, False), settings, random.Random(1)), registry,
                    out=io.StringIO())
    r.config_resetstat()
    started = time.perf_counter()
    worker.run()
    rate = JOBS / (time.perf_counter() - started)
    evalsha = r.info("commandstats").get("cmdstat_evalsha", {})
    kept = len(r.keys("fairway:*:result:*"))
    lua = throughput.baseline_lua(server.url, JOBS)
    redis_us, calls = evalsha.get("usec", 0) / JOBS, evalsha.get("calls", 0) / JOBS
    print(json.dumps({"rate": rate, "lua": lua, "ratio": rate / lua, "results_kept": kept,
                      "redis_us_per_job": redis_us, "calls_per_job": calls}))
finally:
    server.cleanup()
"""


def visit(root: Path, keep: bool) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(root), "keep" if keep else "none"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=Path("."))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    subjects = {
        "A before, no results": (args.before.resolve(), False),
        "B after, no results": (args.after.resolve(), False),
        "C after, results kept": (args.after.resolve(), True),
    }
    seen: dict[str, list[dict[str, float]]] = {name: [] for name in subjects}
    order = list(subjects)
    for _ in range(args.rounds):
        for name in order + order[::-1]:
            seen[name].append(visit(*subjects[name]))
            print(f"{name}: ratio {seen[name][-1]['ratio']:.3f} ({seen[name][-1]['rate']:.0f} jobs/s)", flush=True)
    report = {
        name: {
            "ratio_median": round(statistics.median(v["ratio"] for v in visits), 3),
            "ratios": [round(v["ratio"], 3) for v in visits],
            "jobs_per_s_median": round(statistics.median(v["rate"] for v in visits)),
            "results_kept": visits[-1]["results_kept"],
            "redis_us_per_job_median": round(statistics.median(v["redis_us_per_job"] for v in visits), 2),
            "script_calls_per_job": round(statistics.median(v["calls_per_job"] for v in visits), 3),
        }
        for name, visits in seen.items()
    }
    print(json.dumps(report, indent=2))
    (BENCH / "results" / "results_cost.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

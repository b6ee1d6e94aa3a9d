"""What batches and traces cost a job, in one run (docs/benchmarks.md, section 16).

    git worktree add /tmp/before-traces <commit before traces>
    .venv/bin/python bench/batch_cost.py /tmp/before-traces .

Subjects, each visit a fresh process importing its checkout's code, on a fresh Redis, in the order
A B C D D C B A per round:
  A  the checkout before traces: 10,000 plain jobs;
  B  this checkout, OpenTelemetry not importable (an import hook refuses it): 10,000 plain jobs;
  C  this checkout, OpenTelemetry with an SDK tracer provider (spans made, no exporter): 10,000 plain jobs;
  D  this checkout, OpenTelemetry not importable: one batch of 10,000 jobs with an on_complete callback.
One worker (concurrency 1) drains the jobs on loopback, then the bare Lua pop+reserve loop runs in the
same process; the figure is the ratio of the two (the machine's speed cancels). Also Redis's script
time per job (INFO commandstats). Results: bench/results/batch_cost.json.
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
import importlib.abc, io, json, random, sys, time
root, mode = sys.argv[1], sys.argv[2]
for sub in ("worker", "bench", "tests", ""):
    sys.path.insert(0, f"{root}/{sub}".rstrip("/"))
if mode != "sdk":
    class NoOtel(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(name)
    sys.meta_path.insert(0, NoOtel())
else:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    trace.set_tracer_provider(TracerProvider())
import redis, throughput
from support.redis_procs import RedisProcess
import fairway.builtins
from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.runtime.fetch import fetcher_for
from fairway.queue.runtime.handlers import registry
from fairway.queue.runtime.worker import Worker
from fairway.resource.worker_settings import WorkerSettings

JOBS = 10_000
server = RedisProcess().start()
try:
    r = redis.Redis.from_url(server.url)
    client = Client(server.url)
    if mode == "batch":
        batch = client.batch(queue="q")
        batch.enqueue_many("noop", [[] for _ in range(JOBS)])
        batch.on_complete("noop")
        batch.seal()
    else:
        client.enqueue_many("noop", [[] for _ in range(JOBS)], queue="q")
    settings = WorkerSettings(redis_url=server.url, queues=["q"], burst=True, log_format="none")
    worker = Worker(settings, fetcher_for(connect(server.url, False), settings, random.Random(1)), registry,
                    out=io.StringIO())
    r.config_resetstat()
    started = time.perf_counter()
    worker.run()
    rate = JOBS / (time.perf_counter() - started)
    evalsha = r.info("commandstats").get("cmdstat_evalsha", {})
    done = client.batch_status(batch.id).done if mode == "batch" else None  # (before the baseline empties Redis)
    lua = throughput.baseline_lua(server.url, JOBS)
    print(json.dumps({"rate": rate, "lua": lua, "ratio": rate / lua, "redis_us_per_job": evalsha.get("usec", 0) / JOBS,
                      "batch_done": done}))
finally:
    server.cleanup()
"""


def visit(root: Path, mode: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(root), mode], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path, nargs="?", default=Path("."))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    subjects = {
        "A before traces, plain jobs": (args.before.resolve(), "plain"),
        "B after, plain jobs, no OpenTelemetry": (args.after.resolve(), "plain"),
        "C after, plain jobs, OpenTelemetry SDK": (args.after.resolve(), "sdk"),
        "D after, one 10,000-job batch, no OpenTelemetry": (args.after.resolve(), "batch"),
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
            "redis_us_per_job_median": round(statistics.median(v["redis_us_per_job"] for v in visits), 2),
            "batch_done": visits[-1]["batch_done"],
        }
        for name, visits in seen.items()
    }
    print(json.dumps(report, indent=2))
    (BENCH / "results" / "batch_cost.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Delayed jobs on time: how late a delayed job starts after its due time, on an idle and a busy worker.

    .venv/bin/python bench/delayed.py [--rounds 2] [--jobs 150] [--baseline /tmp/before]

Each round, on a fresh local Redis: a real `fairway worker` process (JSON job lines), and this process
enqueueing `--jobs` no-op jobs at random moments over about 12 s, each delayed 0.05-2 s (uniform).
Lateness = the job's start (worker clock) - its enqueue (producer clock, the same machine) - its delay.
  idle: nothing else runs;
  busy: concurrency 8 with 0.05 s `sleep` jobs arriving at ~80/s (half the slots busy on average).
With `--baseline DIR` (a checkout, e.g. `git worktree add /tmp/before <commit>`), that checkout's worker
runs the same rounds, alternating order with this tree's, so both are measured in the same hour.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fairway.queue.access.client import Client  # noqa: E402
from fairway.queue.access.figures import percentile  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402

SPREAD_S = 12.0
DELAY_S = (0.05, 2.0)


def run_round(checkout: Path, scenario: str, jobs: int, seed: int) -> list[float]:
    """Lateness in ms of each delayed job, in one round of one checkout's worker."""
    server = RedisProcess().start()
    out = tempfile.TemporaryFile("w+")  # noqa: SIM115
    env = {**os.environ, "PYTHONPATH": f"{checkout / 'worker'}{os.pathsep}{ROOT / 'tests'}"}
    concurrency = "8" if scenario == "busy" else "1"
    cmd = [sys.executable, "-m", "fairway.cli", "worker", "--redis", server.url, "--queues", "default"]
    cmd += ["--log-format", "json", "--metrics-port", "0", "--concurrency", concurrency]
    worker = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL, text=True)
    stop = threading.Event()
    try:
        client = Client(server.url)
        time.sleep(1.5)  # started and idle
        if scenario == "busy":
            background = threading.Thread(target=_stream, args=(server.url, stop), daemon=True)
            background.start()
        rng = random.Random(seed)
        delays: dict[str, float] = {}
        moments = sorted(rng.uniform(0, SPREAD_S) for _ in range(jobs))
        began = time.monotonic()
        for moment in moments:
            time.sleep(max(0.0, began + moment - time.monotonic()))
            delay = rng.uniform(*DELAY_S)
            delays[client.enqueue("noop", delay=delay)] = delay
        time.sleep(DELAY_S[1] + 1.5)
    finally:
        stop.set()
        worker.terminate()
        worker.wait(timeout=30)
        server.cleanup()
    out.seek(0)
    lines = [json.loads(line) for line in out if line.startswith("{")]
    started = {line["id"]: line for line in lines if line.get("event") == "job.finished" and line["id"] in delays}
    assert len(started) == len(delays), f"{len(started)} of {len(delays)} delayed jobs ran"
    return [line["started_at"] - line["enqueued_at"] - int(delays[job_id] * 1000) for job_id, line in started.items()]


def _stream(url: str, stop: threading.Event) -> None:
    """0.05 s jobs at about 80/s until stopped: half of 8 slots busy on average."""
    client = Client(url)
    while not stop.is_set():
        client.enqueue_many("sleep", [[0.05]] * 8)
        stop.wait(0.1)


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(percentile(ordered, 0.5), 1),
        "p99_ms": round(percentile(ordered, 0.99), 1),
        "max_ms": round(max(ordered), 1),
        "mean_ms": round(statistics.fmean(ordered), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout, run alternating with this one")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "delayed.json")
    args = parser.parse_args()
    subjects = {"this tree": ROOT} | ({f"baseline ({args.baseline})": args.baseline} if args.baseline else {})
    got: dict[str, dict[str, list[float]]] = {name: {"idle": [], "busy": []} for name in subjects}
    for round_no in range(args.rounds):
        order = list(subjects.items()) if round_no % 2 == 0 else list(reversed(subjects.items()))
        for scenario in ("idle", "busy"):
            for name, checkout in order:
                late = run_round(checkout, scenario, args.jobs, seed=round_no)
                got[name][scenario] += late
                print(f"round {round_no + 1} {scenario:<4} {name}: {summary(late)}", flush=True)
    result: dict[str, Any] = {
        "command": " ".join(["bench/delayed.py", *sys.argv[1:]]),
        "jobs_per_round": args.jobs,
        "rounds": args.rounds,
        "lateness": {name: {s: summary(v) for s, v in scenarios.items()} for name, scenarios in got.items()},
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["lateness"], indent=1))


if __name__ == "__main__":
    main()

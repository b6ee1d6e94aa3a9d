"""Wake-up latency: push-to-start for an idle Fairway worker, standalone and on a 3-node Redis Cluster, against a
bare BLMPOP measured in the same run on the same server.

    .venv/bin/python bench/wakeup.py [--rounds 60]

Standalone: the worker blocks in one BLMPOP across its queues' notify lists, so its latency should sit
near the bare BLMPOP's. Cluster: a blocking read across slots is illegal, so the worker polls every
100 ms and its latency is ~50 ms on average, bounded by 100 ms plus a scan. The cluster baseline is a
BLMPOP on one key (legal on a cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fairway.queue.access.client import Client  # noqa: E402
from fairway.queue.access.figures import percentile  # noqa: E402
from fairway.queue.connection import connect  # noqa: E402
from support.redis_procs import RedisCluster, RedisProcess  # noqa: E402


def baseline(url: str, cluster: bool, rounds: int) -> list[float]:
    keys = ["bench:{k}:a", "bench:{k}:b", "bench:{k}:c"] if not cluster else ["bench:{k}:c"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "bench.peers.blmpop_waiter", url, *keys, *(["--cluster"] if cluster else [])]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    client = connect(url, cluster)
    latencies = []
    try:
        time.sleep(1.0)
        for _ in range(rounds):
            time.sleep(0.15)
            pushed = time.time() * 1000
            client.rpush(keys[-1], b"x")
            assert proc.stdout is not None
            latencies.append(float(proc.stdout.readline()) - pushed)
    finally:
        proc.terminate()
        proc.wait(10)
    return latencies


def fairway(url: str, cluster: bool, rounds: int) -> list[float]:
    with tempfile.TemporaryFile("w+") as log:
        cmd = [
            sys.executable,
            "-m",
            "fairway.cli",
            "worker",
            "--redis",
            url,
            "--queues",
            "high,default,low",
            "--block-for",
            "5",
            "--log-format",
            "json",
            *(["--cluster"] if cluster else []),
        ]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        client = Client(url, cluster=cluster)
        try:
            time.sleep(1.5)
            for _ in range(rounds):
                time.sleep(0.15 if not cluster else 0.137)  # off the 100 ms poll grid on a cluster
                client.enqueue("noop", queue="low")
            time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(10)
        log.seek(0)
        lines = [json.loads(x) for x in log.read().splitlines() if x.startswith("{")]
    return [float(x["started_at"] - x["enqueued_at"]) for x in lines]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    report = {}
    for where, server in (("standalone", RedisProcess()), ("cluster", RedisCluster())):
        server.start()
        try:
            clustered = where == "cluster"
            report[where] = {
                "bare BLMPOP": baseline(server.url, clustered, args.rounds),
                "fairway": fairway(server.url, clustered, args.rounds),
            }
        finally:
            server.cleanup()
    out = {}
    print(f"{'server':<11} {'subject':<12} {'p50 ms':>7} {'p99 ms':>7}")
    for where, subjects in report.items():
        for subject, values in subjects.items():
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            out[f"{where}/{subject}"] = {"p50_ms": round(p50, 2), "p99_ms": round(p99, 2), "samples": len(values)}
            print(f"{where:<11} {subject:<12} {p50:>7.2f} {p99:>7.2f}")
    (BENCH / "results" / "wakeup.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

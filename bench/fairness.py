"""Fairness under a noisy neighbour: per-tenant waits for Fairway's tenant group, one FIFO queue, and the seed
article's design (round-robin over a key scan cached 250 ms), in the same run.

    bench/setup.sh && .venv-bench/bin/python bench/fairness.py [--noisy 20000] [--tenants 100] [--each 20]

One tenant enqueues `--noisy` jobs of `--job-ms`; one second later `--tenants` tenants enqueue `--each`
jobs each; four worker processes serve them. Reports the quiet tenants' p50/p99 waits (enqueue to start)
and ratios, writes bench/results/fairness.json and plots each quiet tenant's p99 wait to docs/fairness.png.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from fairway.queue.access.client import Client  # noqa: E402
from fairway.queue.access.figures import percentile  # noqa: E402
from fairway.queue.protocol.job import new_job  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402

WORKERS = 4


def run(design: str, url: str, noisy: int, tenants: int, each: int, job_s: float, folder: Path) -> list[dict[str, Any]]:
    r = redis.Redis.from_url(url)
    r.flushdb()
    logs = [folder / f"{design}-{i}.log" for i in range(WORKERS)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    if design == "seed":
        cmds = [[sys.executable, "-m", "bench.peers.seed_round_robin", url, str(log)] for log in logs]
        outs = [subprocess.DEVNULL] * WORKERS
    else:
        serve = ["--tenants", "tenant-"] if design == "fairway" else ["--queues", "fifo"]
        cmds = [
            [
                sys.executable,
                "-m",
                "fairway.cli",
                "worker",
                "--redis",
                url,
                *serve,
                "--block-for",
                "1",
                "--log-format",
                "json",
            ]
            for _ in logs
        ]
        outs = [log.open("w") for log in logs]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
        for cmd, out in zip(cmds, outs, strict=True)
    ]
    time.sleep(1.5)
    client = Client(url)

    def enqueue(tenant: str, count: int) -> set[str]:
        if design == "fairway":
            return set(client.enqueue_many("sleep", [[job_s]] * count, tenant=tenant))
        jobs = [new_job("sleep", "fifo", [job_s], {}, tenant=tenant) for _ in range(count)]
        key = "fairway:{fifo}:ready" if design == "fifo" else f"queues:tenant-{tenant}"
        with r.pipeline(transaction=False) as pipe:
            for start in range(0, count, 2000):
                pipe.rpush(key, *[j.encode() for j in jobs[start : start + 2000]])
            if design == "fifo":
                pipe.rpush("fairway:{fifo}:notify", *[b"1"] * min(count, 1000))
                pipe.sadd("fairway:active", "fifo")
            pipe.execute()
        return {j.id for j in jobs}

    enqueue("noisy", noisy)
    time.sleep(1.0)
    quiet: set[str] = set()
    for t in range(tenants):
        quiet |= enqueue(f"q{t}", each)

    def lines() -> list[dict[str, Any]]:
        return [
            json.loads(x) for log in logs if log.exists() for x in log.read_text().splitlines() if x.startswith("{")
        ]

    deadline = time.monotonic() + 900
    while sum(1 for x in lines() if x["id"] in quiet) < len(quiet):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{design}: the quiet tenants never finished")
        time.sleep(0.25)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    done = lines()
    for x in done:
        x["quiet"] = x["id"] in quiet
    return done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--noisy", type=int, default=20_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--job-ms", type=float, default=1.0)
    args = parser.parse_args()
    server = RedisProcess().start()
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for design in ("fairway", "seed", "fifo"):
                started = time.monotonic()
                results[design] = run(
                    design, server.url, args.noisy, args.tenants, args.each, args.job_ms / 1000, Path(folder)
                )
                print(f"{design}: done in {time.monotonic() - started:.1f} s", flush=True)
    finally:
        server.cleanup()

    summary: dict[str, Any] = {}
    per_tenant: dict[str, list[float]] = {}
    for design, done in results.items():
        quiet = [x for x in done if x["quiet"]]
        by_tenant: dict[str, list[float]] = {}
        for x in quiet:  # FIFO and seed documents carry the tenant too; only their queue differs
            by_tenant.setdefault(str(x["tenant"]), []).append(x["wait_ms"])
        p99s = sorted(percentile(w, 0.99) for w in by_tenant.values())
        per_tenant[design] = p99s
        waits = [x["wait_ms"] for x in quiet]
        last = max(x["finished_at"] for x in quiet)
        noisy_before = sum(1 for x in done if not x["quiet"] and x["finished_at"] <= last)
        summary[design] = {
            "quiet_p50_ms": round(percentile(waits, 0.5), 1),
            "quiet_p99_ms": round(percentile(waits, 0.99), 1),
            "median_tenant_p99_ms": round(statistics.median(p99s), 1),
            "worst_tenant_p99_ms": round(max(p99s), 1),
            "noisy_jobs_before_last_quiet": noisy_before,
        }
    print(f"\n{'design':<10} {'quiet p50':>10} {'quiet p99':>10} {'worst tenant p99':>17} {'noisy done first':>17}")
    for design, s in summary.items():
        print(
            f"{design:<10} {s['quiet_p50_ms']:>8.0f}ms {s['quiet_p99_ms']:>8.0f}ms {s['worst_tenant_p99_ms']:>15.0f}ms "
            f"{s['noisy_jobs_before_last_quiet']:>17}"
        )
    fair = summary["fairway"]["quiet_p99_ms"]
    ratios = {
        "fifo_p99_over_fairway": round(summary["fifo"]["quiet_p99_ms"] / fair, 1),
        "seed_p99_over_fairway": round(summary["seed"]["quiet_p99_ms"] / fair, 1),
    }
    print(
        f"\nquiet tenants' p99 wait, as a multiple of Fairway's: FIFO {ratios['fifo_p99_over_fairway']}x, "
        f"seed design {ratios['seed_p99_over_fairway']}x"
    )
    (BENCH / "results" / "fairness.json").write_text(
        json.dumps({"args": vars(args), "summary": summary, "ratios": ratios}, indent=2) + "\n"
    )
    plot(per_tenant, ROOT / "docs" / "fairness.png", args)


def plot(per_tenant: dict[str, list[float]], path: Path, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    labels = {
        "fairway": "Fairway tenant group",
        "seed": "seed design (key scan, 250 ms cache)",
        "fifo": "one FIFO queue",
    }
    for design, p99s in per_tenant.items():
        ax.plot(range(1, len(p99s) + 1), p99s, label=labels[design], linewidth=2)
    ax.set_yscale("log")
    ax.set_xlabel("quiet tenants, sorted by their p99 wait")
    ax.set_ylabel("p99 wait, enqueue to start (ms, log scale)")
    ax.set_title(
        f"{args.tenants} quiet tenants x {args.each} jobs next to one tenant with {args.noisy} jobs, 4 workers"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    main()

"""The operator's idle cost of scaling: one tick of its loop (each supervisor's cached spec looked up,
then the scaling poll: every pool's demand in one pipelined read per Redis, each planner stepped)
for N supervisors whose pools sit at zero, on a real Redis, in CPU seconds per tick.

    .venv/bin/python bench/scaling_poll.py [--supervisors 500] [--ticks 30]

The loop ticks once a second, so CPU seconds per tick is the share of one core the idle operator
spends on it. Nothing changes (no queue holds work), so no Kubernetes call is made; the Kube client
points nowhere to prove it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import kubernetes  # noqa: E402

from fairway_operator.kube import Kube  # noqa: E402
from fairway_operator.reconcile import Reconciler  # noqa: E402
from fairway_operator.scaling import Scaler, Supervised  # noqa: E402
from fairway_operator.secret_watch import SecretWatches  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402


def body(i: int, url: str) -> dict:
    return {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": f"s{i}", "namespace": f"ns{i}", "uid": f"uid-{i}"},
        "spec": {
            "redis": {"url": url},
            "queues": [f"q{i}-a", f"q{i}-b", f"q{i}-c"],
            "balance": "auto",
            "minProcesses": 0,
            "maxProcesses": 6,
        },
    }


def deployments(i: int) -> list[dict]:
    return [
        {"metadata": {"name": f"s{i}-{q}", "annotations": {"fairway.dev/pool": f"q{i}-{q}"}}, "spec": {"replicas": 0}}
        for q in "abc"
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--supervisors", type=int, default=500)
    parser.add_argument("--ticks", type=int, default=30)
    args = parser.parse_args()
    server = RedisProcess().start()
    try:
        api = kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9"))
        # (the supervisors name their Redis by URL: no Secret is ever followed)
        reconciler = Reconciler(Kube(api), SecretWatches(api, asyncio.new_event_loop()))
        scaler = Scaler(reconciler.kube, reconciler.autoscalers, reconciler, reconciler.scaled)
        bodies = [body(i, server.url) for i in range(args.supervisors)]
        owned = [deployments(i) for i in range(args.supervisors)]
        cpu = []
        for _ in range(args.ticks):
            started = time.process_time()
            supervised = []
            for b, deps in zip(bodies, owned, strict=True):
                spec = reconciler.specs.report(b).spec
                assert spec is not None
                supervised.append(Supervised(b, spec, deps))
            assert scaler.poll(supervised) == []
            cpu.append(time.process_time() - started)
        import redis

        stats = redis.Redis.from_url(server.url).info("commandstats")
        calls = stats.get("cmdstat_evalsha", {}).get("calls", 0) + stats.get("cmdstat_eval", {}).get("calls", 0)
        print(
            f"{args.supervisors} supervisors x 3 pools at zero: "
            f"{statistics.median(cpu[3:]) * 1000:.1f} ms CPU per tick "
            f"(median of {args.ticks - 3}; max {max(cpu[3:]) * 1000:.1f} ms) = "
            f"{statistics.median(cpu[3:]) * 100:.1f} % of one core at one tick a second; "
            f"{calls / args.ticks:.0f} Redis command(s) per tick"
        )
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()

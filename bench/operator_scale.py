"""One operator, many QueueSupervisors: time to reconcile them all, the cost of one pass, and the steady
load on Redis. The real kopf operator runs here; the Kubernetes emulator (kmock) runs in its own process,
as an API server would, so the two do not share one interpreter lock.

    .venv/bin/python bench/operator_scale.py [--supervisors 500] [--steady 20]

Each supervisor lives in its own namespace (the emulator lists without label filtering, which would
make the run quadratic for a reason a real API server does not have). All share one Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import kubernetes  # noqa: E402
import redis  # noqa: E402

import fairway_operator.reconcile as reconcile_module  # noqa: E402
from support.kopf_kmock import running_operator, secret  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402

PASSES: list[tuple[bool, float]] = []
_original = reconcile_module.Reconciler.reconcile


def _timed(self: Any, body: Any, **kw: Any) -> Any:
    started = time.perf_counter()
    try:
        return _original(self, body, **kw)
    finally:
        PASSES.append((kw.get("apply", True), time.perf_counter() - started))


reconcile_module.Reconciler.reconcile = _timed  # type: ignore[method-assign]


async def main_async(count: int, steady_s: float) -> dict[str, Any]:
    server = RedisProcess().start()
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    emulator = subprocess.Popen(
        [sys.executable, "-m", "support.kmock_server"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert emulator.stdout is not None
        url = emulator.stdout.readline().strip()
        kubernetes.client.Configuration.set_default(kubernetes.client.Configuration(host=url))
        client = kubernetes.client.ApiClient()
        core, custom = kubernetes.client.CoreV1Api(client), kubernetes.client.CustomObjectsApi(client)
        for i in range(count):
            core.create_namespaced_secret(f"team-{i}", secret(f"team-{i}", "redis", server.url))
        async with running_operator(url, status_interval_s=10.0, loop_tick_s=1.0):
            started = time.monotonic()
            for i in range(count):
                body = {
                    "apiVersion": "fairway.dev/v1alpha1",
                    "kind": "QueueSupervisor",
                    "metadata": {"name": "sup", "namespace": f"team-{i}"},
                    "spec": {
                        "redis": {"secretRef": {"name": "redis", "key": "url"}},
                        "queues": ["a", "b", "c"],
                        "balance": "auto" if i % 2 else "none",
                        "maxProcesses": 6,
                    },
                }
                await asyncio.to_thread(
                    custom.create_namespaced_custom_object,
                    "fairway.dev",
                    "v1alpha1",
                    f"team-{i}",
                    "queuesupervisors",
                    body,
                )

            def reconciled() -> int:
                items = custom.list_cluster_custom_object("fairway.dev", "v1alpha1", "queuesupervisors")["items"]
                return sum(1 for o in items if (o.get("status") or {}).get("conditions"))

            while await asyncio.to_thread(reconciled) < count:
                if time.monotonic() - started > 900:
                    raise RuntimeError(f"only {reconciled()} of {count} reconciled in 900 s")
                await asyncio.sleep(1.0)
            all_reconciled_s = time.monotonic() - started
            r = redis.Redis.from_url(server.url)
            redis_before = int(r.info("stats")["total_commands_processed"])
            passes_before = len(PASSES)
            await asyncio.sleep(steady_s)
            redis_rate = (int(r.info("stats")["total_commands_processed"]) - redis_before) / steady_s
            steady = PASSES[passes_before:]
    finally:
        emulator.kill()
        server.cleanup()
    full = [d for applied, d in PASSES if applied]
    observe = [d for applied, d in steady if not applied]
    return {
        "supervisors": count,
        "all_reconciled_s": round(all_reconciled_s, 1),
        "full_pass_median_ms": round(statistics.median(full) * 1000, 1),
        "steady_passes_per_s": round(len(steady) / steady_s, 1),
        "observe_pass_median_ms": round(statistics.median(observe) * 1000, 1) if observe else None,
        "steady_redis_commands_per_s": round(redis_rate, 1),
        "redis_commands_per_observe_pass": round(redis_rate * steady_s / max(1, len(steady)), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--supervisors", type=int, default=500)
    parser.add_argument("--steady", type=float, default=20.0)
    args = parser.parse_args()
    result = asyncio.run(main_async(args.supervisors, args.steady))
    for key, value in result.items():
        print(f"{key:>34}: {value}")
    (Path(__file__).parent / "results" / "operator_scale.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

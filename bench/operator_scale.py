"""One operator process, many QueueSupervisors, against any API server: for each N, the time until every
Deployment is applied and every status written, the operator's CPU and peak memory, its API requests by verb and
resource per supervisor, its writes while nothing changes, and the same after a restart over all N.

    .venv/bin/python bench/operator_scale.py --supervisors 100 1000 [--kubeconfig PATH]

Without --kubeconfig it starts kmock's emulator in a process of its own (a fresh one per N); with it,
it uses that cluster (the QueueSupervisor CRD installed; namespaces fwbench-* are created and deleted).
`fairway operator --all-namespaces` runs as a subprocess, as in a pod, reaching the server through
a recording proxy (tests/support/recording_proxy.py) that counts its requests the same way for both.
Supervisors: a third each balance none/simple/auto, every fourth with a tenant group, ten to a
namespace, one Redis. Results: bench/results/operator_scale.json; docs/benchmarks.md section 7.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import kubernetes  # noqa: E402

from fairway_operator.handlers import STATUS_INTERVAL_S  # noqa: E402
from support.operator_fleet import (  # noqa: E402
    Operator,
    api_server,
    create_secrets,
    create_supervisors,
    deployments_of,
    statuses_current,
    supervisor,
    wait_for,
    writes,
)
from support.recording_proxy import RecordingProxy  # noqa: E402
from support.redis_procs import RedisProcess  # noqa: E402


def by_kind(log: list[Any], since: float, until: float, n: int) -> dict[str, float]:
    """The operator's requests in a window, per supervisor, keyed "verb group/resource"."""
    counts: collections.Counter[str] = collections.Counter()
    for entry in log:
        r = entry.request
        if since <= entry.at < until and r.by_operator and r.resource:
            counts[f"{r.verb} {r.group + '/' if r.group else ''}{r.resource}"] += 1
    return {k: round(v / n, 2) for k, v in sorted(counts.items())}


def run(n: int, kubeconfig: str | None, per_namespace: int, quiet_s: float, timeout_s: float) -> dict[str, Any]:
    redis = RedisProcess().start()
    workdir = Path(tempfile.mkdtemp(prefix="fairway-opscale-"))
    bodies = [supervisor(i, per_namespace) for i in range(n)]
    expected = sum(deployments_of(b) for b in bodies)
    namespaces = sorted({b["metadata"]["namespace"] for b in bodies})
    try:
        with api_server(kubeconfig) as upstream, RecordingProxy(upstream) as proxy:
            client = kubernetes.client.ApiClient(upstream)
            core, apps = kubernetes.client.CoreV1Api(client), kubernetes.client.AppsV1Api(client)
            custom = kubernetes.client.CustomObjectsApi(client)
            if kubeconfig:  # (kmock cannot create namespaces, nor needs them)
                with concurrent.futures.ThreadPoolExecutor(8) as pool:
                    list(pool.map(lambda ns: core.create_namespace({"metadata": {"name": ns}}), namespaces))
            create_secrets(core, namespaces, redis.url)
            operator = Operator(proxy.url, workdir)
            operator.start()
            cpu_idle = operator.cpu_s()

            def applied() -> bool:
                items = apps.list_deployment_for_all_namespaces(label_selector="app.kubernetes.io/managed-by=fairway")
                return sum(1 for d in items.items if d.metadata.namespace.startswith("fwbench-")) >= expected

            def reported() -> bool:
                return statuses_current(custom) >= n

            started = time.monotonic()
            create_supervisors(custom, bodies)
            created_s = time.monotonic() - started
            all_applied_s = wait_for(applied, timeout_s, "every Deployment", 1.0) + created_s
            all_reported_s = wait_for(reported, timeout_s, "every status", 1.0) + all_applied_s
            time.sleep(STATUS_INTERVAL_S + 2)  # the first periodic pass over every supervisor
            settled = time.monotonic()
            cpu_create = operator.cpu_s() - cpu_idle
            time.sleep(quiet_s)
            quiet_end = time.monotonic()
            quiet_writes = writes(proxy.log, settled, quiet_end)
            cpu_quiet = operator.cpu_s() - cpu_idle - cpu_create
            rss_mb = operator.peak_rss_mb()
            operator.stop()

            restarted = time.monotonic()
            operator.start()
            resumed_s = wait_for(lambda: (operator.full_passes() or 0) >= n, timeout_s, "every supervisor resumed")
            time.sleep(STATUS_INTERVAL_S + 2)
            restart_end = time.monotonic()
            cpu_restart = operator.cpu_s()
            deployments = apps.list_deployment_for_all_namespaces(label_selector="app.kubernetes.io/managed-by=fairway")
            names = [
                (d.metadata.namespace, d.metadata.name)
                for d in deployments.items
                if d.metadata.namespace.startswith("fwbench-")
            ]
            operator.stop()
            if kubeconfig:
                for ns in namespaces:
                    core.delete_namespace(ns)
    finally:
        redis.cleanup()
    return {
        "supervisors": n,
        "supervisors_per_namespace_and_secret": per_namespace,
        "deployments": expected,
        "create_requests_s": round(created_s, 1),
        "all_deployments_s": round(all_applied_s, 1),
        "all_statuses_s": round(all_reported_s, 1),
        "operator_cpu_s": round(cpu_create, 1),
        "operator_cpu_ms_per_supervisor": round(cpu_create / n * 1000, 1),
        "requests_per_supervisor": by_kind(proxy.log, started, settled, n),
        "writes_per_supervisor": round(writes(proxy.log, started, settled) / n, 2),
        "quiet_s": quiet_s,
        "quiet_writes": quiet_writes,
        "quiet_requests": by_kind(proxy.log, settled, quiet_end, 1),
        "quiet_cpu_s": round(cpu_quiet, 1),
        "operator_peak_rss_mb": round(rss_mb),
        "restart_resumed_s": round(resumed_s, 1),
        "restart_cpu_s": round(cpu_restart, 1),
        "restart_writes": writes(proxy.log, restarted, restart_end),
        "restart_requests_per_supervisor": by_kind(proxy.log, restarted, restart_end, n),
        "deployments_after_restart": len(names),
        "duplicate_children": len(names) - len(set(names)) + max(0, len(names) - expected),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--supervisors", type=int, nargs="+", default=[100, 1000], help="each N to run (default 100 1000)"
    )
    parser.add_argument("--kubeconfig", default=None, help="run against this cluster instead of the emulator")
    parser.add_argument(
        "--per-namespace",
        type=int,
        default=10,
        dest="per_namespace",
        help="supervisors per namespace (each namespace has one Redis Secret they all name)",
    )
    parser.add_argument("--quiet", type=float, default=30.0, help="seconds of nothing changing, writes counted")
    parser.add_argument("--timeout", type=float, default=900.0, help="give up on a phase after this long")
    parser.add_argument(
        "--out", type=Path, default=None, help="results file (default bench/results/operator_scale*.json)"
    )
    args = parser.parse_args()
    results = []
    for n in args.supervisors:
        result = run(n, args.kubeconfig, args.per_namespace, args.quiet, args.timeout)
        results.append(result)
        print(json.dumps(result, indent=2), flush=True)
    suffix = "" if args.per_namespace == 10 else f"-{args.per_namespace}-per-namespace"
    out = args.out or Path(__file__).parent / "results" / f"operator_scale{suffix}.json"
    out.write_text(json.dumps({"server": args.kubeconfig or "kmock emulator", "runs": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()

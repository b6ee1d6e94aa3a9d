"""Cost per job versus number of active tenants (10, 1,000, 10,000): the O(1) ring, with and without
per-tenant controls, and against another checkout's pop.

Every tenant keeps work for the whole measurement, so the ring really holds N tenants. Each case pops
(and acknowledges, in the same call) `--jobs` jobs through the worker's real hot path, in a fresh
process that imports its checkout's code, on one Redis. `controls`: 10 % of the tenants have a
setting (a third each: weight 3, an in-flight cap of 1,000, a rate of 1,000,000/s; none binds, so
the ring holds every tenant and what is measured is the cost of reading and applying them). With
`--before DIR` (a `git worktree` of an earlier commit) its 10-tenant pop is measured too. Cases run
in a shuffled order each round (seeded), so drift on a noisy machine spreads over all of them.

    git worktree add /tmp/before HEAD~1     # optional: the pop before the change under test
    .venv/bin/python bench/tenants_scaling.py [--jobs 10000] [--rounds 3] [--before /tmp/before]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.redis_procs import RedisProcess  # noqa: E402

PROBE = """
import sys, time
root, url, tenants, jobs, controls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
sys.path.insert(0, f"{root}/worker")
from fairway.queue.access.producer import Producer
from fairway.queue.connection import connect
from fairway.queue.runtime.fetch import StandaloneFetcher
from fairway.resource.worker_settings import WorkerSettings
client = connect(url, False)
client.flushdb()
producer = Producer(client)
per_tenant = jobs // tenants + 2
for t in range(tenants):
    doc = b'{"id":"x","handler":"noop","queue":"tenant-t%d","tenant":"t%d","args":[],"enqueued_at":0}' % (t, t)
    producer.enqueue_tenant("tenant-", f"t{t}", [doc] * per_tenant)
if controls:
    from fairway.queue.access.tenant_settings import TenantSettingsStore
    from fairway.resource.spec import TenantSettings
    store = TenantSettingsStore(client)
    kinds = [TenantSettings(weight=3), TenantSettings(max_in_flight=1000), TenantSettings(rate=1_000_000)]
    for i, t in enumerate(range(0, tenants, 10)):
        store.set("tenant-", f"t{t}", kinds[i % 3])
settings = WorkerSettings(tenants={"max_consecutive_jobs": 5}, retry_after_s=60, timeout_s=30)
fetcher = StandaloneFetcher(client, settings)
fetcher.refresh()
ack = None
client.config_resetstat()
started = time.perf_counter()
for _ in range(jobs):
    got = fetcher.reserve([(ack, 3)] if ack else [])
    ack = got[0]
elapsed = time.perf_counter() - started
server_us = client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"]
print(jobs / elapsed, server_us)
"""


def rate(root: Path, url: str, tenants: int, jobs: int, controls: bool) -> tuple[float, float]:
    """(jobs/s through the worker's hot path, the reserve script's server time per call in us)."""
    cmd = [sys.executable, "-c", PROBE, str(root), url, str(tenants), str(jobs), "1" if controls else "0"]
    jobs_per_s, server_us = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return float(jobs_per_s), float(server_us)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, help="another checkout: its 10-tenant pop, same run")
    args = parser.parse_args()
    cases = [(ROOT, n, controls) for controls in (False, True) for n in (10, 1_000, 10_000)]
    if args.before:
        cases.append((args.before.resolve(), 10, False))
    rates: dict[tuple[Path, int, bool], list[float]] = {case: [] for case in cases}
    server: dict[tuple[Path, int, bool], list[float]] = {case: [] for case in cases}
    rng = random.Random(23)
    redis_process = RedisProcess().start()
    try:
        for _ in range(args.rounds):
            for case in rng.sample(cases, len(cases)):
                jobs_per_s, server_us = rate(case[0], redis_process.url, case[1], args.jobs, case[2])
                rates[case].append(jobs_per_s)
                server[case].append(server_us)
    finally:
        redis_process.cleanup()
    median = {case: statistics.median(r) for case, r in rates.items()}
    server_median = {case: statistics.median(us) for case, us in server.items()}
    base = median[(ROOT, 10, False)]
    before = median.get((args.before.resolve(), 10, False)) if args.before else None
    print(
        f"{'active tenants':>14} {'controls':>9} {'jobs/s':>8} {'cost vs 10, none':>17} {'cost vs before, 10':>19} "
        f"{'script us/call':>15}"
    )
    report = {}
    for case in cases:
        root, n, controls = case
        label = "before" if root != ROOT else ("10 %" if controls else "none")
        vs_before = f"{before / median[case]:>18.2f}x" if before else f"{'-':>19}"
        print(
            f"{n:>14} {label:>9} {median[case]:>8.0f} {base / median[case]:>16.2f}x {vs_before} "
            f"{server_median[case]:>15.1f}"
        )
        report[f"{n}:{label}"] = {
            "jobs_per_s": round(median[case]),
            "cost_vs_10_none": round(base / median[case], 3),
            "cost_vs_before_10": round(before / median[case], 3) if before else None,
            "script_us_per_call": server_median[case],
        }
    out = Path(__file__).parent / "results" / "tenants_scaling.json"
    out.write_text(json.dumps({"jobs": args.jobs, "rounds": args.rounds, "results": report}, indent=2) + "\n")


if __name__ == "__main__":
    main()

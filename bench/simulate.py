"""The autoscaler on the benchmark traces: Fairway's planner against Horizon's arithmetic and a
KEDA-like policy, each replayed by `fairway simulate` in the same run, with the issue's targets.

    .venv/bin/python bench/traces/make_traces.py      # writes bench/traces/*.csv (seeded)
    .venv/bin/python bench/simulate.py [--plots docs]

Prints one markdown table per trace and the ratios the targets are stated in, and times the replay
of the 24-hour trace (the simulator aggregates by time step, so millions of jobs take seconds).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

TRACES = Path(__file__).resolve().parent / "traces"
RUNS = [
    ("steady", "three-queues.yaml", "steady.csv", []),
    ("near-idle jitter", "three-queues.yaml", "jitter.csv", []),
    ("burst of 10,000", "three-queues.yaml", "burst.csv", []),
    ("diurnal, 24 h", "diurnal.yaml", "diurnal.csv", []),
    ("diurnal, 24 h, targetWait 2 s", "diurnal-targetwait.yaml", "diurnal.csv", []),
    ("noisy tenant", "tenants.yaml", "noisy_tenant.csv", ["--duration", "500"]),
]


def replay(supervisor: str, trace: str, extra: list[str], plot: Path | None) -> tuple[dict, float]:
    cmd = [
        sys.executable,
        "-m",
        "fairway.cli",
        "simulate",
        "-f",
        str(TRACES / supervisor),
        "--trace",
        str(TRACES / trace),
    ]
    cmd += ["--compare", "horizon,keda", "--json", *extra, *(["--plot", str(plot)] if plot else [])]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["policies"], time.perf_counter() - started


def worst_p99(result: dict) -> float:
    return max(w["p99"] for w in result["wait_ms"].values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plots", type=Path, default=None, help="write scaling-<trace>.png pictures here")
    args = parser.parse_args()
    for title, supervisor, trace, extra in RUNS:
        plot = (
            args.plots / f"scaling-{supervisor.removesuffix('.yaml')}-{trace.removesuffix('.csv')}.png"
            if args.plots
            else None
        )
        policies, seconds = replay(supervisor, trace, extra, plot)
        print(f"\n### {title} ({trace}, replayed in {seconds:.1f} s for all three)\n")
        print("| policy | replica changes | pod starts | pod kills | pod-seconds | worst wait p99 (ms) | jobs done |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, r in policies.items():
            print(
                f"| {name} | {r['replica_changes']:,} | {r['pod_starts']:,} | {r['pod_kills']:,} | "
                f"{r['pod_seconds']:,.0f} | {worst_p99(r):,.0f} | {r['jobs_done']:,} |"
            )
        fw, hz, keda = policies["fairway"], policies["horizon"], policies["keda"]
        late = [c for c in fw["changes"] if c["t_s"] >= 60]
        print(
            f"\nfairway/horizon pod-seconds {fw['pod_seconds'] / hz['pod_seconds']:.2f}, "
            f"fairway/keda pod-seconds {fw['pod_seconds'] / keda['pod_seconds']:.2f}; "
            f"fairway changes after 60 s: {len(late)}; peak pods per pool: "
            f"{max((c['to'] for c in fw['changes']), default=0)}"
        )


if __name__ == "__main__":
    main()

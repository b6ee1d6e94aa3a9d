"""A redesign that must change no figure, measured: the benchmarks run on two checkouts in one run.

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/traces/make_traces.py
    .venv/bin/python bench/before_after.py /tmp/before .

Each checkout's code is imported through PYTHONPATH (its worker/ and operator/ first), in a fresh
process per measurement, in the order A B B A (then A B B A again with --rounds 2), so a drift of this
machine's speed during the run falls on both alike:
- throughput on loopback: one worker draining 20,000 no-op jobs, as a ratio to the bare Lua
  pop+reserve loop in the same process (bench/ab_commits.py's probe);
- latency behind a delaying proxy (0.85 ms each way) and on loopback: bench/latency.py for Fairway
  alone (N 1 and 32 no-op, N 32 and 50 with 20 ms jobs), one round per visit;
- operator scale: bench/scaling_poll.py, 500 supervisors x 3 pools at zero (CPU per tick of the
  scaling poll, Redis commands per tick), and bench/operator_scale.py, `fairway operator` with 300
  supervisors on kmock's emulator (time to every status, CPU, writes, peak memory);
- the simulator: every trace of bench/simulate.py replayed by `fairway simulate --compare
  horizon,keda --json`: the decisions must be equal (the replay is deterministic), and the time taken.
Results: bench/results/before_after.json; docs/benchmarks.md says what they showed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from ab_commits import PROBE  # noqa: E402
from simulate import RUNS, TRACES  # noqa: E402


def env_for(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "worker"), str(tree / "operator")])}


def throughput(tree: Path) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tree)], capture_output=True, text=True, check=True, env=env_for(tree)
    ).stdout
    ratios = re.search(r"fairway/\(a\) ([\d., ]+);", out)
    assert ratios, out
    return [float(x) for x in ratios.group(1).split(",")]


def latency(tree: Path, scratch: Path) -> dict[str, float]:
    out_file = scratch / f"latency-{os.getpid()}-{time.monotonic_ns()}.json"
    cmd = [sys.executable, str(BENCH / "latency.py"), "--only", "fairway", "--rounds", "1", "--out", str(out_file)]
    subprocess.run(cmd, capture_output=True, text=True, check=True, env=env_for(tree))
    results = json.loads(out_file.read_text())["results"]
    out_file.unlink()
    return {key: float(r["jobs_per_s"]) for key, r in results.items()}


def scaling_poll(tree: Path) -> tuple[float, float]:
    # (the checkout's own script: it builds the operator's objects, whose wiring the redesign changed)
    cmd = [sys.executable, str(tree / "bench" / "scaling_poll.py"), "--supervisors", "500", "--ticks", "30"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env_for(tree)).stdout
    match = re.search(r"([\d.]+) ms CPU per tick .* (\d+) Redis command", out)
    assert match, out
    return float(match.group(1)), float(match.group(2))


def operator_scale(tree: Path, scratch: Path, supervisors: int) -> dict[str, float]:
    """The operator as a process against kmock's emulator (bench/operator_scale.py, run from this checkout
    on the other's code: its driver only starts `fairway operator` and reads what it wrote)."""
    out_file = scratch / f"operator-scale-{os.getpid()}-{time.monotonic_ns()}.json"
    cmd = [sys.executable, str(BENCH / "operator_scale.py"), "--supervisors", str(supervisors), "--quiet", "10"]
    subprocess.run([*cmd, "--out", str(out_file)], capture_output=True, text=True, check=True, env=env_for(tree))
    (run,) = json.loads(out_file.read_text())["runs"]
    out_file.unlink()
    return {
        f"operator, {supervisors} supervisors: s to every status": run["all_statuses_s"],
        f"operator, {supervisors} supervisors: CPU s": run["operator_cpu_s"],
        f"operator, {supervisors} supervisors: writes per supervisor": run["writes_per_supervisor"],
        f"operator, {supervisors} supervisors: peak RSS MB": run["operator_peak_rss_mb"],
    }


def replays(tree: Path) -> tuple[dict[str, Any], float]:
    decided: dict[str, Any] = {}
    started = time.perf_counter()
    for title, supervisor, trace, extra in RUNS:
        cmd = [sys.executable, "-m", "fairway.cli", "simulate", "-f", str(TRACES / supervisor)]
        cmd += ["--trace", str(TRACES / trace), "--compare", "horizon,keda", "--json", *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env_for(tree))
        decided[title] = json.loads(done.stdout)["policies"]
    return decided, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=1, help="visits per checkout: 2 per round (A B B A)")
    parser.add_argument("--operator-supervisors", type=int, default=300, help="QueueSupervisors in the operator run")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "before_after.json")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    figures: dict[str, dict[str, list[Any]]] = {name: {} for name in trees}
    decisions: dict[str, Any] = {}
    order = [*["before", "after", "after", "before"] * args.rounds]
    for visit, name in enumerate(order, 1):
        tree = trees[name]
        got = figures[name]
        got.setdefault("throughput_ratio", []).extend(throughput(tree))
        for key, rate in latency(tree, BENCH / "results").items():
            got.setdefault(f"latency {key} jobs/s", []).append(rate)
        cpu_ms, commands = scaling_poll(tree)
        got.setdefault("scaling poll ms CPU per tick (500 supervisors)", []).append(cpu_ms)
        got.setdefault("scaling poll Redis commands per tick", []).append(commands)
        for key, value in operator_scale(tree, BENCH / "results", args.operator_supervisors).items():
            got.setdefault(key, []).append(value)
        decided, seconds = replays(tree)
        got.setdefault("simulator seconds (every trace, 3 policies)", []).append(round(seconds, 2))
        decisions.setdefault(name, decided)
        print(f"visit {visit} ({name}) done", flush=True)
    report: dict[str, Any] = {"trees": {k: str(v) for k, v in trees.items()}, "order": order, "figures": {}}
    print("\n| figure | before (median) | after (median) | after/before | every visit, before; after |")
    print("|---|---:|---:|---:|---|")
    for key in figures["before"]:
        before, after = figures["before"][key], figures["after"][key]
        b, a = statistics.median(before), statistics.median(after)
        report["figures"][key] = {"before": before, "after": after, "ratio": round(a / b, 3) if b else None}
        print(f"| {key} | {b:,.2f} | {a:,.2f} | {a / b if b else float('nan'):.3f} | {before}; {after} |")
    same = decisions["before"] == decisions["after"]
    report["simulator_decisions_equal"] = same
    print(f"\nsimulator decisions, every trace and policy: {'equal' if same else 'DIFFERENT'}")
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()

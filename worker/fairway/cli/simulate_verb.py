"""`fairway simulate`: replay an arrival trace through the operator's planner (and, with --compare,
through Horizon's arithmetic and a KEDA-like policy) and print what each would have done."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fairway.cli.common import OK, UNUSABLE, Verbs, valid_supervisors


def cmd_simulate(args: argparse.Namespace) -> int:
    from fairway.simulate.policies import POLICY_NAMES
    from fairway.simulate.run import simulate
    from fairway.simulate.trace import TraceError, parse

    supervisors = valid_supervisors("simulate", args.file)
    if len(supervisors) != 1:
        print(f"fairway simulate: {args.file} holds {len(supervisors)} QueueSupervisors; give one", file=sys.stderr)
        return UNUSABLE
    spec = supervisors[0].report.spec
    assert spec is not None
    compare = [name.strip() for name in (args.compare or "").split(",") if name.strip()]
    unknown = [name for name in compare if name not in POLICY_NAMES]
    if unknown:
        print(f"fairway simulate: --compare: unknown policy {unknown[0]!r}; choose from horizon, keda", file=sys.stderr)
        return UNUSABLE
    if args.pod_start_s < 0 or (args.duration is not None and args.duration <= 0):
        print("fairway simulate: --pod-start-s must be 0 or more, --duration above 0", file=sys.stderr)
        return UNUSABLE
    try:
        with open(args.trace, encoding="utf-8") as handle:
            prefix = spec.tenants.queue_prefix if spec.tenants else None
            arrivals = parse(handle, args.trace, set(spec.queues), prefix)
    except OSError as exc:
        print(f"fairway simulate: cannot read {args.trace}: {exc.strerror}", file=sys.stderr)
        return UNUSABLE
    except UnicodeDecodeError:
        print(f"fairway simulate: {args.trace}: not a CSV text file (not UTF-8)", file=sys.stderr)
        return UNUSABLE
    except TraceError as exc:
        print(f"fairway simulate: {exc}", file=sys.stderr)
        return UNUSABLE
    policies = ["fairway", *[name for name in compare if name != "fairway"]]
    results = [
        simulate(
            spec, arrivals, name, pod_start_s=args.pod_start_s, duration_s=args.duration, keep_timeline=bool(args.plot)
        )
        for name in policies
    ]
    if args.json:
        json.dump({"policies": {r.policy: r.to_json() for r in results}}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(table(results))
    if args.plot:
        from fairway.simulate.plot import PlotUnavailable, plot

        try:
            plot(results, args.plot)
        except PlotUnavailable as exc:
            print(f"fairway simulate: --plot: {exc}", file=sys.stderr)
            return UNUSABLE
        print(f"fairway simulate: wrote {args.plot}", file=sys.stderr)
    return OK


def table(results: list[Any]) -> str:
    rows = [("policy", "changes", "starts", "kills", "pod-s", "busy slot-s", "done", "wait p50/p99 (ms) per queue")]
    for r in results:
        waits = "  ".join(f"{q} {w['p50']:g}/{w['p99']:g}" for q, w in r.wait_ms.items())
        rows.append(
            (
                r.policy,
                str(r.replica_changes),
                str(r.pod_starts),
                str(r.pod_kills),
                f"{r.pod_seconds:,.0f}",
                f"{r.busy_slot_seconds:,.0f}",
                f"{r.jobs_done:,}",
                waits,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1] + "\n" for row in rows
    )


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None


def register(verbs: Verbs) -> None:
    sim = verbs.add_parser(
        "simulate",
        help="replay an arrival trace through the autoscaler (and Horizon's and KEDA's) and compare",
        description="Replay TRACE.csv (its format: docs/scaling.md, 'The trace') through the planner the "
        "operator runs, on simulated pods.",
    )
    sim.add_argument("-f", "--file", required=True, help="YAML file holding one QueueSupervisor")
    sim.add_argument("--trace", required=True, help="CSV: t_s,queue,jobs,run_ms[,tenant], sorted by t_s")
    sim.add_argument(
        "--pod-start-s", dest="pod_start_s", type=_seconds, default=5.0, help="seconds a pod takes to be ready (5)"
    )
    sim.add_argument(
        "--duration", type=_seconds, default=None, help="simulated seconds (default: until every job is done)"
    )
    sim.add_argument("--compare", default=None, help="baselines to run too: horizon,keda")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.add_argument(
        "--plot", default=None, metavar="OUT.png", help="draw replicas and waiting jobs over time (matplotlib)"
    )
    sim.set_defaults(run=cmd_simulate)

"""`fairway schedules`: the schedules tickers registered, their last and next runs; pause and resume
(docs/schedules.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fairway.cli.common import INVALID, OK, UNUSABLE, Verbs, add_redis_options, redis_for

NEXT_RUNS = 3


def cmd_schedules(args: argparse.Namespace) -> int:
    from fairway.queue.access.schedules import Schedules, epoch_text
    from fairway.resource.schedules import SCHEDULE_NAME_PATTERN

    schedules = Schedules(redis_for(args))
    if args.action in ("pause", "resume"):
        if not args.names:
            print(f"fairway schedules {args.action}: name the schedules, e.g. fairway schedules pause nightly",
                  file=sys.stderr)  # fmt: skip
            return UNUSABLE
        import re

        bad = [n for n in args.names if not re.fullmatch(SCHEDULE_NAME_PATTERN, n)]
        if bad:
            print(f"fairway schedules: {bad[0]!r} is not a schedule name: lowercase letters, digits, - _ .",
                  file=sys.stderr)  # fmt: skip
            return UNUSABLE
        unknown = [n for n in args.names if not schedules.set_paused(n, args.action == "pause")]
        for name in args.names:
            if name not in unknown:
                print(f"{name}: {'paused: its ticks pass without a job' if args.action == 'pause' else 'resumed'}")
        if unknown:
            known = ", ".join(schedules.names()) or "none yet (a worker registers its schedules when it starts)"
            print(f"fairway schedules: no schedule named {', '.join(unknown)}; known: {known}", file=sys.stderr)
            return INVALID
        return OK
    if args.names:
        print("fairway schedules: names go with pause or resume; the list shows every schedule", file=sys.stderr)
        return UNUSABLE
    views = schedules.views(runs=NEXT_RUNS)
    if args.json:
        print(json.dumps([_plain(v) for v in views], indent=2))
        return OK
    if not views:
        print("no schedules yet: a worker registers its schedules when it starts (docs/schedules.md)")
        return OK
    print(f"{'SCHEDULE':<20} {'WHEN':<22} {'HANDLER':<20} {'TARGET':<22} {'LAST RUN':<21} {'NEXT RUNS'}")
    for v in views:
        s = v.schedule
        when = s.cron if s.cron is not None else f"every {s.every}s"
        if s.cron is not None and s.timezone != "UTC":
            when += f" {s.timezone}"
        nexts = "paused" if v.paused else ", ".join(epoch_text(t) for t in v.next_runs)
        print(f"{s.name:<20} {when:<22} {s.handler:<20} {v.target:<22} {epoch_text(v.ran):<21} {nexts}")
    return OK


def _plain(view: Any) -> dict[str, Any]:
    s = view.schedule
    return {
        "name": s.name,
        "schedule": s.model_dump(mode="json", by_alias=True),
        "groupPrefix": view.group_prefix,
        "lastTick": view.last,
        "lastRun": view.ran,
        "paused": view.paused,
        "nextRuns": view.next_runs,
    }


def register(verbs: Verbs) -> None:
    sub = verbs.add_parser("schedules", help="list schedules (last and next runs), or pause and resume them")
    add_redis_options(sub)
    sub.add_argument("action", nargs="?", choices=["list", "pause", "resume"], default="list",
                     help="list (the default), pause or resume")  # fmt: skip
    sub.add_argument("names", nargs="*", metavar="NAME", help="schedules to pause or resume")
    sub.add_argument("--json", action="store_true", help="print JSON instead of a table (times in epoch seconds)")
    sub.set_defaults(run=cmd_schedules)

"""The tenant verbs: `fairway tenants` (every active tenant's figures, worst first) and `fairway tenant
set|show|reset ID` (one tenant's weight, in-flight cap and rate, at run time).

What is set here wins over the resource's `spec.tenants.overrides` and `defaults` (which the operator
writes), field by field; `reset` drops it. Every value is checked before anything is written, and a
refusal is one line naming the flag and the fix, with the usage-error exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fairway.cli.common import INVALID, OK, UNUSABLE, Verbs, add_group_option, add_redis_options, redis_for
from fairway.cli.queue_verbs import at_least_1, check_served_name
from fairway.queue.access.figures import SORTS, TENANT_WINDOW_S, duration
from fairway.resource.names import DEFAULT_TENANT_PREFIX, TENANT_ID, TENANT_ID_RULE, TENANT_PREFIX

FLAGS = {"weight": "--weight", "max_in_flight": "--max-in-flight", "rate": "--rate", "burst": "--burst"}


class Refused(ValueError):
    pass


def _whole(text: str, flag: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise Refused(f"{flag}: {text!r} is not a whole number; give e.g. {flag} 5") from None


def _rate(text: str) -> float:
    """`20`, `20/s` or `0.5/s`: jobs per second."""
    number = text.strip().removesuffix("/s")
    try:
        value = float(number)
    except ValueError:
        raise Refused(f"--rate: {text!r} is not a rate; give jobs per second, e.g. --rate 20/s or --rate 0.5") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise Refused(f"--rate: {text!r} is not a finite number of jobs per second")
    return value


def settings_from(args: argparse.Namespace) -> Any:
    """The flags given, as TenantSettings (the spec's model: the same limits as the resource's fields)."""
    from fairway.queue.access.tenant_settings import checked_settings

    given: dict[str, Any] = {}
    for field, flag in FLAGS.items():
        text = getattr(args, field)
        if text is not None:
            given[field] = _rate(text) if field == "rate" else _whole(text, flag)
    if not given:
        raise Refused("nothing to set: give --weight, --max-in-flight, --rate or --burst")
    try:
        return checked_settings(FLAGS, **given)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def _check_names(args: argparse.Namespace) -> None:
    if not TENANT_ID.fullmatch(args.id):
        raise Refused(f"{args.id!r} is not a tenant id: {TENANT_ID_RULE}")
    if not TENANT_PREFIX.fullmatch(args.group):
        raise Refused(f"--group: {args.group!r} is not a tenant group's queue prefix, e.g. {DEFAULT_TENANT_PREFIX}")


def cmd_tenant(args: argparse.Namespace) -> int:
    from fairway.queue.access.tenant_settings import TenantSettingsStore

    try:
        _check_names(args)
        settings = settings_from(args) if args.action == "set" else None
    except Refused as refused:
        print(f"fairway tenant {args.action}: {refused}", file=sys.stderr)
        return UNUSABLE
    store = TenantSettingsStore(redis_for(args))
    if settings is not None:
        store.set(args.group, args.id, settings)
    elif args.action == "reset":
        store.reset(args.group, args.id)
    view = store.show(args.group, args.id)
    if args.action == "show" and args.json:
        print(json.dumps(view.to_json(), indent=2))
        return OK
    if args.action == "set":
        print(f"tenant {args.id} of {args.group}: set")
    elif args.action == "reset":
        print(f"tenant {args.id} of {args.group}: run-time settings dropped")
    print(describe(view))
    return OK


def describe(view: Any) -> str:
    def shown(field: str, value: Any, unit: str = "") -> str:
        text = "none" if value is None else f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"
        return f"  {field:<14} {text:<10} ({view.sources[field]})"

    parked = {None: "no", "cap": "at its cap"}.get(view.to_json()["parked"], "waiting for a rate token")
    quarantine = {"failures": "yes, for its failures", "slow": "yes, for its share of the run time"}
    lines = [
        shown("weight", view.weight),
        shown("max_in_flight", view.max_in_flight),
        shown("rate", view.rate, "/s"),
        shown("burst", view.burst),
        f"  in flight      {view.in_flight}" + (f" of {view.max_in_flight}" if view.max_in_flight else ""),
        f"  parked         {parked}",
        f"  skipped        {view.capped} at its cap, {view.throttled} for its rate",
        f"  quarantined    {quarantine.get(view.quarantined, 'no')}",
        f"  paused         {'yes (fairway continue --tenant ' + view.tenant + ')' if view.paused else 'no'}",
    ]
    return "\n".join(lines).replace("max_in_flight ", "maxInFlight   ")


def cmd_tenants(args: argparse.Namespace) -> int:
    from fairway.queue.access.figures import ranked
    from fairway.queue.access.inspector import Inspector

    problem = check_served_name(f"@{args.prefix}")
    if problem:
        print(f"fairway tenants: --group/--prefix: {problem}", file=sys.stderr)
        return INVALID
    rows = ranked(Inspector(redis_for(args)).tenant_figures(args.prefix, args.window), args.sort, args.limit)
    if args.json:
        print(json.dumps([row.as_dict() for row in rows], indent=2))
        return OK
    if not rows:
        print(f"no tenants of @{args.prefix} active in the last {duration(args.window)}")
        return OK

    def ms(value: float | None) -> str:
        return duration(None if value is None else value / 1000)

    print(
        f"{'TENANT':<24} {'WEIGHT':>6} {'WAITING':>8} {'IN FLIGHT':>9} {'DONE':>7} {'TRIES FAILED':>12} {'FAIL%':>6} "
        f"{'P50 WAIT':>9} {'P99 WAIT':>9}  STATE"
    )
    for r in rows:
        flight = f"{r.in_flight}/{r.max_in_flight}" if r.max_in_flight else str(r.in_flight)
        print(
            f"{r.tenant:<24} {r.weight:>6} {r.waiting:>8} {flight:>9} {r.completed:>7} {r.failed:>12} "
            f"{r.failure_rate:>6.1%} {ms(r.p50_wait_ms):>9} {ms(r.p99_wait_ms):>9}  {tenant_state(r)}"
        )
    return OK


def tenant_state(r: Any) -> str:
    """What limits a tenant now, in words: quarantined (and why), paused, its rate, how often it was skipped."""
    parts = []
    if r.quarantined:
        parts.append(
            {"slow": "quarantined (slow)", "failures": "quarantined (failures)"}.get(r.quarantine_reason, "quarantined")
        )
    if r.paused:
        parts.append("paused")
    if r.rate is not None:
        parts.append(f"rate {r.rate:g}/s")
    if r.capped or r.throttled:
        parts.append(f"skipped {r.capped} capped, {r.throttled} throttled")
    return ", ".join(parts)


def register(verbs: Verbs) -> None:
    tenant = verbs.add_parser("tenant", help="one tenant's weight, in-flight cap and rate: set, show, reset")
    add_redis_options(tenant)
    tenant.add_argument("action", choices=["set", "show", "reset"], help="set run-time settings, show them, or reset")
    tenant.add_argument("id", metavar="ID", help="the tenant id")
    add_group_option(tenant, "group")
    tenant.add_argument("--weight", default=None, help="turns among busy tenants in proportion to it (default 1)")
    tenant.add_argument("--max-in-flight", default=None, help="at most N of its jobs running at once, fleet-wide")
    tenant.add_argument("--rate", default=None, metavar="R/s", help="jobs per second it may start, e.g. 20/s")
    tenant.add_argument("--burst", default=None, help="jobs it may start at once (default: one second of --rate)")
    tenant.add_argument("--json", action="store_true", help="show: print JSON")
    tenant.set_defaults(run=cmd_tenant)

    tenants = verbs.add_parser(
        "tenants",
        help="per-tenant figures: waiting, in flight, failed tries, p50/p99 wait",
        description="Per tenant, over the window: jobs waiting and in flight, attempts done and failed (TRIES "
        "FAILED and FAIL% count failed attempts, retries included; jobs that failed for good are in `fairway "
        "failed list`), and the p50/p99 wait for a slot (from when a job became ready to its start).",
    )
    add_redis_options(tenants)
    add_group_option(tenants, "prefix")
    tenants.add_argument("--window", type=at_least_1, default=TENANT_WINDOW_S, help="seconds of history to summarise")
    tenants.add_argument("--sort", choices=list(SORTS), default="p99", help="worst first by this (default p99)")
    tenants.add_argument("--limit", type=at_least_1, default=None, help="show only the first N tenants")
    tenants.add_argument("--json", action="store_true", help="print JSON instead of a table")
    tenants.set_defaults(run=cmd_tenants)

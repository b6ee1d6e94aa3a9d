"""`fairway tenant set|show|reset ID`: one tenant's weight, in-flight cap and rate, at run time.

What is set here wins over the resource's `spec.tenants.overrides` and `defaults` (which the operator
writes), field by field; `reset` drops it. Every value is checked before anything is written, and a
refusal is one line naming the flag and the fix, with the usage-error exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fairway.cli.common import OK, UNUSABLE, Verbs, add_group_option, add_redis_options
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
    from fairway.queue.connection import connect

    try:
        _check_names(args)
        settings = settings_from(args) if args.action == "set" else None
    except Refused as refused:
        print(f"fairway tenant {args.action}: {refused}", file=sys.stderr)
        return UNUSABLE
    store = TenantSettingsStore(connect(args.redis, True if args.cluster else None))
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

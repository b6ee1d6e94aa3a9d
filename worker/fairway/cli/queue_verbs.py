"""Verbs for people working a queue by hand: enqueue, queues, pause/continue, failed."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fairway.cli.common import INVALID, OK, UNUSABLE, Verbs, add_group_option, add_redis_options, redis_for
from fairway.queue.access.figures import duration, timestamp
from fairway.queue.protocol.job import JOB_OPTIONS


def split_queues(text: str) -> list[str]:
    return [q.strip() for q in text.split(",") if q.strip()]


def _json_option(text: str | None, flag: str, kind: type) -> Any:
    """A JSON flag's value, or ValueError naming the flag and the shape it needs."""
    if text is None:
        return kind()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{flag} is not JSON: {exc}") from None
    if not isinstance(value, kind):
        shape = "an array, e.g. '[1, \"a\"]'" if kind is list else "an object, e.g. '{\"timeout\": 5}'"
        raise ValueError(f"{flag} must be {shape}")
    return value


def cmd_enqueue(args: argparse.Namespace) -> int:
    from fairway.queue.access.client import Client
    from fairway.queue.protocol.job import JobError

    try:
        given = json.loads(args.args) if args.args else []
    except json.JSONDecodeError as exc:
        print(f"fairway enqueue: --args is not JSON: {exc}", file=sys.stderr)
        return UNUSABLE
    # --args takes the handler's arguments only: an array is its args, an object its kwargs (any names:
    # a handler's own `timeout` or `queue` is never read as an option). Options are flags of their own.
    call_args, call_kwargs = (given, {}) if isinstance(given, list) else ([], given)
    if not isinstance(call_kwargs, dict):
        print("fairway enqueue: --args must be a JSON array (args) or object (kwargs)", file=sys.stderr)
        return UNUSABLE
    try:
        more_kwargs = _json_option(args.kwargs, "--kwargs", dict)
    except ValueError as exc:
        print(f"fairway enqueue: {exc}", file=sys.stderr)
        return UNUSABLE
    both = sorted(set(call_kwargs) & set(more_kwargs))
    if both:
        print(f"fairway enqueue: {both[0]!r} is in both --args and --kwargs: give it once", file=sys.stderr)
        return UNUSABLE
    if args.job_id is not None and args.count > 1:
        print("fairway enqueue: --job-id names one job: drop --count, or drop --job-id", file=sys.stderr)
        return UNUSABLE
    options = {"queue": args.queue, "tenant": args.tenant, "kwargs": {**call_kwargs, **more_kwargs}}
    job_options = {o.name: getattr(args, o.name) for o in JOB_OPTIONS}
    for option in JOB_OPTIONS:  # (bad input is said before Redis is asked anything)
        if job_options[option.name] is not None:
            try:
                option.check(job_options[option.name])
            except JobError as exc:
                print(f"fairway enqueue: --{option.name.replace('_', '-')}: {exc}", file=sys.stderr)
                return UNUSABLE
    client = Client(args.redis, cluster=True if args.cluster else None)
    try:
        if args.count > 1 and args.delay is None and all(v is None for v in job_options.values()):
            ids = client.enqueue_many(args.handler, [call_args] * args.count, **options)
        else:
            ids = [
                client.enqueue(
                    args.handler,
                    *call_args,
                    delay=args.delay,
                    job_id=args.job_id,
                    **job_options,
                    **options,
                )
                for _ in range(args.count)
            ]
    except JobError as exc:
        print(f"fairway enqueue: {exc}", file=sys.stderr)
        return INVALID
    held = [job_id for job_id in ids if getattr(job_id, "duplicate", False)]
    if held:  # a unique job: the key's holder is said on stderr, its id printed as the job's
        print(
            f"fairway enqueue: job {held[0]} holds this unique key (waiting or running): "
            f"{plural(len(held), 'job')} not enqueued",
            file=sys.stderr,
        )
    print(ids[0] if len(ids) == 1 else f"enqueued {plural(len(ids) - len(held), 'job')}")
    return OK


def at_least_1(text: str) -> int:
    """argparse type for counts and limits: a whole number of at least 1 (argparse names the flag)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value


def cmd_queues(args: argparse.Namespace) -> int:
    from fairway.queue.access.inspector import Inspector

    queues = split_queues(args.queues) if args.queues else None
    problems = [p for p in map(check_served_name, queues or []) if p]
    if problems:
        for problem in problems:
            print(f"fairway queues: {problem}", file=sys.stderr)
        return INVALID
    inspector = Inspector(redis_for(args))
    queues = queues or inspector.known_queues()
    rows = inspector.stats(queues)
    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))
        return OK
    if not rows:
        print("no queues yet: enqueue a job or start a worker, and its queues appear here")
        return OK
    print(f"{'QUEUE':<24} {'READY':>8} {'RESERVED':>9} {'DELAYED':>8} {'FAILED':>7} {'PAUSED':>7} {'OLDEST':>9}")
    for r in rows:
        oldest = duration(r.oldest_age_s)
        print(
            f"{r.queue:<24} {r.ready:>8} {r.reserved:>9} {r.delayed:>8} {r.failed:>7} "
            f"{'yes' if r.paused else 'no':>7} {oldest:>9}"
        )
    return OK


def check_served_name(name: str) -> str | None:
    """Why `name` is neither a queue name nor a tenant group's '@<queuePrefix>', or None."""
    from fairway.queue.protocol.keys import is_group_name
    from fairway.resource.names import QUEUE_NAME, QUEUE_NAME_RULE, TENANT_PREFIX

    if is_group_name(name):
        if TENANT_PREFIX.fullmatch(name[1:]):
            return None
        return f"{name!r} is not a tenant group: write @ and its queue prefix, e.g. @tenant-"
    if QUEUE_NAME.fullmatch(name):
        return None
    return f"{name!r} is not a queue name: {QUEUE_NAME_RULE}"


def tenant_hint(name: str, known: list[str]) -> str:
    """For a name like tenant-42 when a group @tenant- is known: how to say that tenant."""
    for group in (k for k in known if k.startswith("@")):
        if name.startswith(group[1:]) and len(name) > len(group) - 1:
            return f"; {name} is tenant {name[len(group) - 1 :]} of {group}: use --tenant {name[len(group) - 1 :]}"
    return ""


def cmd_pause(args: argparse.Namespace) -> int:
    from fairway.queue.access.admin import Admin
    from fairway.queue.access.inspector import Inspector
    from fairway.queue.protocol.job import JobError, check_tenant_id
    from fairway.queue.protocol.keys import served_name_of_group

    pausing = args.verb == "pause"
    verb = f"fairway {args.verb}"
    if not args.names and not args.tenant:
        print(f"{verb}: name a queue, a tenant group (@tenant-) or --tenant ID", file=sys.stderr)
        return UNUSABLE
    problems = [p for p in map(check_served_name, [*args.names, f"@{args.prefix}"]) if p]
    for tenant in args.tenant or []:
        try:
            check_tenant_id(tenant)
        except JobError as exc:
            problems.append(str(exc))
    if problems:
        for problem in problems:
            print(f"{verb}: {problem}", file=sys.stderr)
        return INVALID
    client = redis_for(args)
    inspector, admin = Inspector(client), Admin(client)
    known = inspector.known_queues()
    group = served_name_of_group(args.prefix)
    unknown = [n for n in args.names if n not in known]
    if args.tenant and group not in known:
        unknown.append(group)
    unseen = inspector.unseen_tenants(args.prefix, args.tenant) if args.tenant and pausing and group in known else []
    if (unknown or unseen) and not args.force:
        for name in unknown:
            print(
                f"{verb}: no queue or tenant group {name!r} has had jobs or workers (known: "
                f"{', '.join(known) or 'none'}){tenant_hint(name, known)}; check the name, or pass --force "
                "to pause it before its first job",
                file=sys.stderr,
            )
        for tenant in unseen:
            print(
                f"{verb}: tenant {tenant} of {group} has had no jobs in the last hour (`fairway tenants` lists "
                "the active ones); check the id, or pass --force to pause it before its first job",
                file=sys.stderr,
            )
        return INVALID
    for name, row in zip(args.names, inspector.stats(args.names), strict=True):
        if pausing:
            admin.pause(name)
            print(f"{name}: paused ({plural(row.ready, 'job')} wait; workers finish the jobs they hold)")
        else:
            admin.resume(name)
            print(f"{name}: serving again ({plural(row.ready, 'job')} ready)")
    for tenant in args.tenant or []:
        if pausing:
            admin.pause_tenant(args.prefix, tenant)
            print(f"tenant {tenant} of {group}: paused (its jobs wait; the group's other tenants go on)")
        else:
            waiting = admin.continue_tenant(args.prefix, tenant)
            state = "was not paused" if waiting < 0 else f"serving again ({plural(waiting, 'job')} ready)"
            print(f"tenant {tenant} of {group}: {state}")
    return OK


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def failed_scope(args: argparse.Namespace, known: list[str]) -> tuple[list[str], str | None]:
    """(served names to look in, tenant filter) for `fairway failed`: every known queue and group
    without --queue; a tenant's queue name (tenant-42) means its group, filtered to that tenant."""
    if args.queue is None:
        return known, args.tenant
    if args.queue in known:
        return [args.queue], args.tenant
    problem = check_served_name(args.queue)
    if problem:
        raise ValueError(problem)
    for group in (k for k in known if k.startswith("@")):
        tenant = args.queue[len(group) - 1 :]
        if args.queue.startswith(group[1:]) and tenant and args.tenant in (None, tenant):
            return [group], tenant
    raise ValueError(f"no queue or tenant group {args.queue!r} is known (known: {', '.join(known) or 'none'})")


def cmd_failed(args: argparse.Namespace) -> int:
    from fairway.queue.access.admin import Admin
    from fairway.queue.access.inspector import Inspector

    verb = f"fairway failed {args.action}"
    client = redis_for(args)
    inspector = Inspector(client)
    try:
        names, tenant = failed_scope(args, inspector.known_queues())
    except ValueError as exc:
        print(f"{verb}: {exc}", file=sys.stderr)
        return INVALID
    where = ", ".join(names) or "any queue"
    filters = "".join(f" {k} {v}" for k, v in (("handler", args.handler), ("tenant", tenant)) if v)
    if args.action == "list":
        failures = inspector.failures(names, handler=args.handler, tenant=tenant, limit=args.limit)
        if args.json:
            print(
                json.dumps(
                    [{**f.record, "failed_at": f.failed_at_ms, "handler": f.handler} for f in failures], indent=2
                )
            )
            return OK
        if not failures:
            print(f"no failed jobs in {where}{' with' + filters if filters else ''}")
            return OK
        print(f"{'FAILED AT':<20} {'QUEUE':<16} {'ID':<32} {'HANDLER':<20} {'TENANT':<12} {'TRIES':>5}  ERROR")
        for f in failures:
            error = f"{f.record.get('exception') or ''}: {f.record.get('message') or ''}".strip(": ")
            print(
                f"{timestamp(f.failed_at_ms):<20} {f.served_name:<16} {f.id:<32} {f.handler:<20} {f.tenant or '-':<12} "
                f"{f.record.get('attempts', '-'):>5}  {error[:120]}"
            )
        return OK
    if not args.ids and not (args.all or args.handler or tenant):
        print(
            f"{verb}: name job ids, or pass --all (or --handler / --tenant) to {args.action} every matching failed job",
            file=sys.stderr,
        )
        return UNUSABLE
    failures = inspector.failures(names, handler=args.handler, tenant=tenant)
    if args.ids:
        by_id = {f.id: f for f in failures}
        chosen, unknown = [by_id[i] for i in args.ids if i in by_id], [i for i in args.ids if i not in by_id]
    else:
        chosen, unknown = failures, []
    settled = Admin(client).settle_failures(args.action, chosen)
    done = "retried" if args.action == "retry" else "forgot"
    if args.ids:
        for f in settled.done:
            target = f"onto {f.served_name}" if args.action == "retry" else f"from {f.served_name}"
            print(f"{done} {f.id} ({f.handler}) {target}")
    for f, reason in settled.refused:
        print(f"{f.id}: not retried, it cannot be enqueued as it is: {reason}", file=sys.stderr)
    for job_id in unknown:
        print(f"{job_id}: no failed job with this id in {where}{' with' + filters if filters else ''}", file=sys.stderr)
    if not args.ids:
        print(f"{done} {plural(len(settled.done), 'failed job')} of {where}{' with' + filters if filters else ''}")
    return INVALID if unknown or settled.refused else OK


def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel jobs by id: each said on its own line; exit 1 when any was finished or unknown."""
    from fairway.queue.access.client import Client, check_queue
    from fairway.queue.access.results import CANCEL_SAYS
    from fairway.queue.protocol.job import JobError, check_job_id, check_tenant_id

    try:
        for job_id in args.ids:
            check_job_id(job_id)
        if args.tenant is not None:
            check_tenant_id(args.tenant)
        else:
            check_queue(args.queue)
    except JobError as exc:
        print(f"fairway cancel: {exc}", file=sys.stderr)
        return UNUSABLE
    client = Client(args.redis, cluster=True if args.cluster else None)
    where = f"tenant {args.tenant}" if args.tenant is not None else f"queue {args.queue}"
    results = {job_id: client.cancel(job_id, queue=args.queue, tenant=args.tenant) for job_id in args.ids}
    for job_id, said in results.items():
        print(f"{job_id}: {CANCEL_SAYS[said].format(where=where)}")
    return OK if all(said in ("cancelled", "running") for said in results.values()) else INVALID


def register(verbs: Verbs) -> None:
    enqueue = verbs.add_parser("enqueue", help="enqueue jobs")
    add_redis_options(enqueue)
    enqueue.add_argument("--queue", default=None, help="queue to enqueue to (default: default)")
    enqueue.add_argument("--tenant", default=None, help="tenant id: enqueue to that tenant's queue instead")
    enqueue.add_argument("--count", type=at_least_1, default=1, help="enqueue this many copies (default 1)")
    enqueue.add_argument("--delay", type=float, default=None, help="seconds before the job is ready")
    for option in JOB_OPTIONS:
        flag = f"--{option.name.replace('_', '-')}"
        enqueue.add_argument(flag, type=option.flag_type, default=None, help=option.help)
    enqueue.add_argument("--job-id", default=None, help="your own id for the job (with --count 1 only)")
    enqueue.add_argument(
        "--args", default=None, help="the handler's arguments: a JSON array (args) or object (kwargs, any names)"
    )
    enqueue.add_argument("--kwargs", default=None, help="the handler's keyword arguments as a JSON object")
    enqueue.add_argument("handler", help="the name a handler was registered under with @fairway.job")
    enqueue.set_defaults(run=cmd_enqueue)

    queues = verbs.add_parser("queues", help="per-queue figures")
    add_redis_options(queues)
    queues.add_argument("--queues", default=None, help="only these queues (comma-separated)")
    queues.add_argument("--json", action="store_true", help="print JSON instead of a table")
    queues.set_defaults(run=cmd_queues)

    for verb, text in (
        ("pause", "pause queues, a tenant group, or single tenants"),
        ("continue", "serve paused queues, groups or tenants again"),
    ):
        sub = verbs.add_parser(verb, help=text)
        add_redis_options(sub)
        sub.add_argument("names", nargs="*", metavar="NAME", help="queue names, or @PREFIX for a whole tenant group")
        sub.add_argument("--tenant", action="append", metavar="ID", help="a single tenant of the group (repeatable)")
        add_group_option(sub, "prefix")
        sub.add_argument("--force", action="store_true", help="act on a queue that has had no jobs or workers yet")
        sub.set_defaults(run=cmd_pause)

    cancel = verbs.add_parser("cancel", help="cancel jobs: waiting ones never start, running ones are told to stop")
    add_redis_options(cancel)
    cancel.add_argument("ids", nargs="+", help="job ids")
    cancel.add_argument("--queue", default="default", help="the queue they were enqueued to (default: default)")
    cancel.add_argument("--tenant", default=None, help="the tenant they were enqueued for (instead of --queue)")
    cancel.set_defaults(run=cmd_cancel)

    failed = verbs.add_parser("failed", help="list, retry or forget failed jobs")
    add_redis_options(failed)
    failed.add_argument("action", choices=["list", "retry", "forget"], help="list, retry or forget failed jobs")
    failed.add_argument("ids", nargs="*", help="job ids (retry, forget)")
    failed.add_argument(
        "--queue", default=None, help="a queue, @PREFIX for a tenant group, or a tenant's queue (default: every queue)"
    )
    failed.add_argument("--handler", default=None, help="only jobs of this handler")
    failed.add_argument("--tenant", default=None, help="only jobs of this tenant")
    failed.add_argument("--all", action="store_true", help="retry or forget every matching failed job")
    failed.add_argument("--limit", type=at_least_1, default=50, help="most records to list, newest first (default 50)")
    failed.add_argument("--json", action="store_true", help="print JSON instead of a table")
    failed.set_defaults(run=cmd_failed)

"""Verbs for people working a queue by hand: enqueue, queues, pause/continue, failed, tenants."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fairway.cli.common import INVALID, OK, UNUSABLE, Verbs, add_redis_options
from fairway.queue.figures import SORTS
from fairway.resource.names import DEFAULT_TENANT_PREFIX


def _client(args: argparse.Namespace) -> Any:
    from fairway.queue.connection import connect

    return connect(args.redis, True if args.cluster else None)


def split_queues(text: str) -> list[str]:
    return [q.strip() for q in text.split(",") if q.strip()]


def cmd_enqueue(args: argparse.Namespace) -> int:
    from fairway.queue.client import Client
    from fairway.queue.job import JobError

    try:
        payload = json.loads(args.args) if args.args else []
    except json.JSONDecodeError as exc:
        print(f"fairway enqueue: --args is not JSON: {exc}", file=sys.stderr)
        return UNUSABLE
    call_args, call_kwargs = (payload, {}) if isinstance(payload, list) else ([], payload)
    if not isinstance(call_kwargs, dict):
        print("fairway enqueue: --args must be a JSON array (args) or object (kwargs)", file=sys.stderr)
        return UNUSABLE
    client = Client(args.redis, cluster=True if args.cluster else None)
    try:
        if args.count == 1 and not call_kwargs:
            ids = [client.enqueue(args.handler, *call_args, queue=args.queue, tenant=args.tenant, delay=args.delay)]
        elif args.delay or call_kwargs:
            ids = [
                client.enqueue(
                    args.handler, *call_args, queue=args.queue, tenant=args.tenant, delay=args.delay, **call_kwargs
                )
                for _ in range(args.count)
            ]
        else:
            ids = client.enqueue_many(args.handler, [call_args] * args.count, queue=args.queue, tenant=args.tenant)
    except JobError as exc:
        print(f"fairway enqueue: {exc}", file=sys.stderr)
        return INVALID
    print(ids[0] if len(ids) == 1 else f"enqueued {len(ids)} jobs")
    return OK


def cmd_queues(args: argparse.Namespace) -> int:
    from fairway.queue.inspector import Inspector

    inspector = Inspector(_client(args))
    queues = split_queues(args.queues) if args.queues else inspector.known_queues()
    rows = inspector.stats(queues)
    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))
        return OK
    print(f"{'QUEUE':<24} {'READY':>8} {'RESERVED':>9} {'DELAYED':>8} {'FAILED':>7} {'PAUSED':>7} {'OLDEST':>9}")
    for r in rows:
        oldest = f"{r.oldest_age_s:.1f}s" if r.oldest_age_s is not None else "-"
        print(
            f"{r.queue:<24} {r.ready:>8} {r.reserved:>9} {r.delayed:>8} {r.failed:>7} "
            f"{'yes' if r.paused else 'no':>7} {oldest:>9}"
        )
    return OK


def cmd_pause(args: argparse.Namespace) -> int:
    from fairway.queue.admin import Admin

    admin = Admin(_client(args))
    for queue in args.queue:
        admin.pause(queue) if args.verb == "pause" else admin.resume(queue)
        print(f"{queue}: {'paused' if args.verb == 'pause' else 'serving'}")
    return OK


def cmd_failed(args: argparse.Namespace) -> int:
    from fairway.queue.admin import Admin
    from fairway.queue.inspector import Inspector

    client = _client(args)
    if args.action == "list":
        records = Inspector(client).failed_records(args.queue, args.limit)
        if args.json:
            print(json.dumps(records, indent=2))
        for record in [] if args.json else records:
            print(f"{record['id']}  attempts={record['attempts']}  {record['message']}")
        return OK
    if not args.ids:
        print(f"fairway failed {args.action}: name at least one job id", file=sys.stderr)
        return UNUSABLE
    admin = Admin(client)
    missing = 0
    for job_id in args.ids:
        done = (
            admin.retry_failed(args.queue, job_id)
            if args.action == "retry"
            else admin.forget_failed(args.queue, job_id)
        )
        print(f"{job_id}: {'done' if done else 'no such failed job'}")
        missing += not done
    return INVALID if missing else OK


def cmd_tenants(args: argparse.Namespace) -> int:
    from fairway.queue.figures import ranked
    from fairway.queue.inspector import Inspector

    rows = ranked(Inspector(_client(args)).tenant_figures(args.prefix, args.window), args.sort, args.limit)
    if args.json:
        print(json.dumps([row.as_dict() for row in rows], indent=2))
        return OK

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}ms"

    print(
        f"{'TENANT':<24} {'WAITING':>8} {'IN FLIGHT':>9} {'DONE':>7} {'FAILED':>7} {'FAIL%':>6} "
        f"{'P50 WAIT':>9} {'P99 WAIT':>9}  QUARANTINED"
    )
    for r in rows:
        print(
            f"{r.tenant:<24} {r.waiting:>8} {r.in_flight:>9} {r.completed:>7} {r.failed:>7} "
            f"{r.failure_rate:>6.1%} {ms(r.p50_wait_ms):>9} {ms(r.p99_wait_ms):>9}  {'yes' if r.quarantined else ''}"
        )
    return OK


def register(verbs: Verbs) -> None:
    enqueue = verbs.add_parser("enqueue", help="enqueue jobs")
    add_redis_options(enqueue)
    enqueue.add_argument("--queue", default=None, help="queue to enqueue to (default: default)")
    enqueue.add_argument("--tenant", default=None, help="tenant id: enqueue to that tenant's queue instead")
    enqueue.add_argument("--count", type=int, default=1, help="enqueue this many copies (default 1)")
    enqueue.add_argument("--delay", type=float, default=None, help="seconds before the job is ready")
    enqueue.add_argument("--args", default=None, help="JSON array of args or object of kwargs")
    enqueue.add_argument("handler", help="the name a handler was registered under with @fairway.job")
    enqueue.set_defaults(run=cmd_enqueue)

    queues = verbs.add_parser("queues", help="per-queue figures")
    add_redis_options(queues)
    queues.add_argument("--queues", default=None, help="only these queues (comma-separated)")
    queues.add_argument("--json", action="store_true", help="print JSON instead of a table")
    queues.set_defaults(run=cmd_queues)

    for verb, text in (("pause", "pause queues"), ("continue", "serve paused queues again")):
        sub = verbs.add_parser(verb, help=text)
        add_redis_options(sub)
        sub.add_argument("queue", nargs="+", help="queue names")
        sub.set_defaults(run=cmd_pause)

    failed = verbs.add_parser("failed", help="list, retry or forget failed jobs")
    add_redis_options(failed)
    failed.add_argument("action", choices=["list", "retry", "forget"], help="list, retry or forget failed jobs")
    failed.add_argument("ids", nargs="*", help="job ids (retry, forget)")
    failed.add_argument("--queue", required=True, help="the queue, or @PREFIX for a tenant group (@tenant-)")
    failed.add_argument("--limit", type=int, default=50, help="most records to list, newest first (default 50)")
    failed.add_argument("--json", action="store_true", help="print JSON instead of lines")
    failed.set_defaults(run=cmd_failed)

    tenants = verbs.add_parser("tenants", help="per-tenant figures: waiting, in flight, failures, p50/p99 wait")
    add_redis_options(tenants)
    tenants.add_argument("--prefix", default=DEFAULT_TENANT_PREFIX, help="the tenant group's queue prefix")
    tenants.add_argument("--window", type=int, default=300, help="seconds of history to summarise")
    tenants.add_argument("--sort", choices=list(SORTS), default="p99", help="worst first by this (default p99)")
    tenants.add_argument("--limit", type=int, default=None, help="show only the first N tenants")
    tenants.add_argument("--json", action="store_true", help="print JSON instead of a table")
    tenants.set_defaults(run=cmd_tenants)

"""`fairway batches` and `fairway batch show ID`: batches' progress (docs/batches.md)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from fairway.cli.common import INVALID, OK, UNUSABLE, Verbs, add_redis_options, redis_for
from fairway.cli.queue_verbs import at_least_1


def _producer(args: argparse.Namespace) -> Any:
    from fairway.queue.access.producer import Producer

    return Producer(redis_for(args))


def cmd_batches(args: argparse.Namespace) -> int:
    from fairway.queue.access.batches import Batches

    found = Batches(_producer(args)).listed(args.limit)
    if args.json:
        print(json.dumps([dataclasses.asdict(b) for b in found], indent=2))
        return OK
    if not found:
        print("no batches: client.batch(...) or enqueue_chunked(..., on_complete=...) makes one (docs/batches.md)")
        return OK
    print(f"{'BATCH':<34} {'WHERE':<24} {'TOTAL':>7} {'PENDING':>8} {'OK':>7} {'FAILED':>7} {'CANCELLED':>9}  STATE")
    for b in found:
        print(f"{b.id:<34} {_where(b):<24} {b.total:>7} {b.pending:>8} {b.succeeded:>7} {b.failed:>7} "
              f"{b.cancelled:>9}  {_state(b)}")  # fmt: skip
    return OK


def cmd_batch(args: argparse.Namespace) -> int:
    from fairway.queue.access.batches import Batches
    from fairway.queue.protocol.job import JobError

    try:
        found = Batches(_producer(args)).find(args.id)
    except JobError as exc:
        print(f"fairway batch show: {exc}", file=sys.stderr)
        return UNUSABLE
    if found is None:
        print(f"fairway batch show: no batch {args.id} (never made, or expired after its ttl)", file=sys.stderr)
        return INVALID
    if args.json:
        print(json.dumps(dataclasses.asdict(found), indent=2))
        return OK
    rows = [
        ("batch", found.id),
        ("where", _where(found)),
        ("state", _state(found)),
        ("total", found.total),
        ("pending", found.pending),
        ("succeeded", found.succeeded),
        ("failed", found.failed),
        ("cancelled", found.cancelled),
    ]
    for label, value in rows:
        print(f"{label:<10} {value}")
    return OK


def _where(b: Any) -> str:
    return f"{b.served_name} {b.tenant}" if b.tenant else b.served_name


def _state(b: Any) -> str:
    if b.done:
        return "done"
    return "running" if b.sealed else "open (not sealed yet)"


def register(verbs: Verbs) -> None:
    listed = verbs.add_parser("batches", help="batches and their progress, newest first")
    add_redis_options(listed)
    listed.add_argument("--limit", type=at_least_1, default=50, help="most batches listed (default 50)")
    listed.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listed.set_defaults(run=cmd_batches)

    batch = verbs.add_parser("batch", help="one batch's progress")
    add_redis_options(batch)
    actions = batch.add_subparsers(dest="action", required=True, metavar="ACTION", help="show: one batch's progress")
    show = actions.add_parser("show", help="one batch: total, pending, succeeded, failed, cancelled")
    add_redis_options(show)
    show.add_argument("id", help="the batch id (Batch.id, or the batch_id enqueue_chunked returned)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(run=cmd_batch)

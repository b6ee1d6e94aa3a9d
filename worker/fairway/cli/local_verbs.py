"""Verbs that run Fairway on this machine: `fairway up` and `fairway demo`."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from fairway.cli.common import OK, UNUSABLE, Verbs, valid_supervisors
from fairway.resource.names import REDIS_URL_ENV


def _reachable(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1).ping()
        return True
    except (redis.RedisError, OSError, ValueError):
        return False


def cmd_up(args: argparse.Namespace) -> int:
    from fairway.local.embedded import EmbeddedRedis, EmbeddedRedisError
    from fairway.local.up import Up
    from fairway.queue.connection import redacted

    supervisors = [(s.report.name, s.report.spec) for s in valid_supervisors("up", args.file) if s.report.spec]
    if args.dry_run:
        sys.stdout.write(dry_run_plan(supervisors))
        return OK
    # The same rule as every verb: --redis, then FAIRWAY_REDIS_URL; then the spec's redis.url (a secretRef
    # names a Kubernetes Secret, which cannot be read here); a private Redis only when none is given.
    chosen = args.redis or os.environ.get(REDIS_URL_ENV)
    if chosen and not _reachable(chosen):  # named by the user: never swapped for a private Redis
        where = "--redis" if args.redis else REDIS_URL_ENV
        print(f"fairway up: {redacted(chosen)} ({where}) is not reachable; start it or fix the URL", file=sys.stderr)
        return UNUSABLE
    url = chosen or next((s.redis.url for _, s in supervisors if s.redis.url), None)
    with contextlib.ExitStack() as stack:
        if url is None or (not _reachable(url) and args.embedded_redis is not False):
            if url is not None:
                print(
                    f"fairway up: {redacted(url)} is not reachable; starting a private Redis instead", file=sys.stderr
                )
            try:
                url = stack.enter_context(EmbeddedRedis()).url
            except EmbeddedRedisError as exc:
                print(f"fairway up: {exc}", file=sys.stderr)
                return UNUSABLE
            print(f"fairway up: started a private redis-server at {url} (it goes away when this stops)")
        elif not _reachable(url):
            print(f"fairway up: {redacted(url)} is not reachable (and --no-embedded-redis was given)", file=sys.stderr)
            return UNUSABLE
        up = Up(supervisors, url, log_dir=Path(args.logs) if args.logs else None, quiet=args.quiet)
        return up.run()


def dry_run_plan(supervisors: list[tuple[str, Any]]) -> str:
    """What `fairway up` would start, without Redis or processes: each pool's processes and the
    worker settings they would read, as YAML."""
    from fairway.plan.pools import initial_replicas, pools
    from fairway.plan.worker_config import local_worker_settings
    from fairway.resource.plain import yaml_text

    plan = []
    for name, spec in supervisors:
        replicas = initial_replicas(spec, {})
        plan.append(
            {
                "supervisor": name,
                "balance": spec.balance,
                "pools": [
                    {
                        "pool": pool.name,
                        "serves": list(pool.served),
                        "processes": replicas[pool.name],
                        "settings": local_worker_settings(spec, pool).to_config(),
                    }
                    for pool in pools(spec)
                ],
            }
        )
    return yaml_text(plan)


def cmd_demo(_: argparse.Namespace) -> int:
    from fairway.local.demo import run_demo
    from fairway.local.embedded import EmbeddedRedisError

    try:
        return run_demo()
    except EmbeddedRedisError as exc:
        print(f"fairway demo: {exc}", file=sys.stderr)
        return UNUSABLE


def register(verbs: Verbs) -> None:
    up = verbs.add_parser("up", help="run a QueueSupervisor's pools as local worker processes")
    up.add_argument("-f", "--file", required=True, help="YAML file of QueueSupervisors, or -")
    up.add_argument(
        "--redis",
        default=None,
        help=f"Redis URL (default: ${REDIS_URL_ENV}, else the spec's redis.url, else a private redis-server)",
    )
    up.add_argument(
        "--embedded-redis",
        dest="embedded_redis",
        action="store_true",
        default=None,
        help="start a private redis-server when no reachable URL is given (the default)",
    )
    up.add_argument(
        "--no-embedded-redis", dest="embedded_redis", action="store_false", help="fail instead of starting one"
    )
    up.add_argument("--logs", default=None, help="folder for worker logs (default: a new temporary folder)")
    up.add_argument("--quiet", action="store_true", help="no live table")
    up.add_argument(
        "--dry-run",
        dest="dry_run",
        action="store_true",
        help="print the pools, their processes and worker settings, and start nothing",
    )
    up.set_defaults(run=cmd_up)

    demo = verbs.add_parser("demo", help="see Fairway's fairness on a private Redis it starts itself")
    demo.set_defaults(run=cmd_demo)

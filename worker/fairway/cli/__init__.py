"""The `fairway` command: one entry point, one verb per job.

Each verb's parser sits next to its command in the module for its layer; verbs that belong to
another package (the operator's `render` and `operator`) join through the `fairway.verbs` entry-point
group, so this package never imports them. Verbs import what they need when they run, so
`fairway validate` does not pay for redis or kopf.
Exit codes: 0 success, 1 the input is invalid (or the work failed), 2 the input is unusable or
Redis is not reachable. No verb shows a traceback for either, and none for a closed pipe
(`fairway tenants | head`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

import fairway
from fairway.cli import (
    batch_verb,
    dashboard_verb,
    local_verbs,
    protocol_verbs,
    queue_verbs,
    resource_verbs,
    schedule_verb,
    simulate_verb,
    tenant_verb,
    worker_verb,
)
from fairway.cli.common import UNUSABLE, Verb, VerbFailed

PLUGIN_GROUP = "fairway.verbs"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fairway",
        description="Fair Redis job queues on Kubernetes.",
        epilog="Exit codes: 0 success; 1 invalid input or failed work; 2 unusable input or Redis not reachable.",
    )
    parser.add_argument("--version", action="version", version=f"fairway {fairway.__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for module in (
        resource_verbs,
        worker_verb,
        queue_verbs,
        batch_verb,
        schedule_verb,
        tenant_verb,
        protocol_verbs,
        local_verbs,
        dashboard_verb,
        simulate_verb,
    ):
        module.register(verbs)
    for plugin in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        plugin.load()(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    ids = getattr(args, "ids", None)
    if extra and ids is not None and not any(item.startswith("-") for item in extra):
        ids.extend(extra)  # `failed retry --queue default ID...`: ids after the options, as README shows
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    run: Verb = args.run
    try:
        return run(args)
    except VerbFailed as failed:
        return failed.code
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and keep Python's exit-time flush quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        reason = _redis_trouble(args, exc)
        if reason is None:
            raise
        print(f"fairway {args.verb}: {reason}", file=sys.stderr)
        return UNUSABLE


def _redis_trouble(args: argparse.Namespace, exc: Exception) -> str | None:
    """One line for a Redis that cannot be reached, a URL that is not one, or any error reply or garbled
    reply from what the URL names; None for anything else (a bug: its traceback is wanted)."""
    import redis

    from fairway.queue.connection import CONNECTION_ERRORS, BadRedisUrl, redacted

    url = getattr(args, "redis", None)
    shown = redacted(url) if isinstance(url, str) else "the Redis URL"
    where = "(--redis or FAIRWAY_REDIS_URL)"
    if isinstance(exc, BadRedisUrl):
        return str(exc)
    if isinstance(exc, CONNECTION_ERRORS):
        return f"cannot reach Redis at {shown} ({redacted(str(exc))}); check that it runs and the URL {where}"
    if isinstance(exc, redis.exceptions.AuthenticationError | redis.exceptions.NoPermissionError):
        return f"Redis at {shown} refused the credentials ({type(exc).__name__}); check the user and password"
    if isinstance(exc, redis.exceptions.InvalidResponse):
        reply = redacted(str(exc))
        return f"{shown} does not answer as Redis does ({reply}): is that port another service? Check the URL {where}"
    if isinstance(exc, redis.exceptions.ResponseError) and "DB index is out of range" in str(exc):
        return (
            f"Redis at {shown} has no such database (DB index is out of range); "
            f"name one it has (0-15 by default) {where}"
        )
    if isinstance(exc, redis.RedisError):
        return f"Redis at {shown} answered with an error: {type(exc).__name__}: {redacted(str(exc))}"
    return None

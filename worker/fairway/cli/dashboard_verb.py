"""`fairway dashboard`: serve the web dashboard (fairway.dashboard) over one Redis."""

from __future__ import annotations

import argparse
import os
import socket
import sys

from fairway.cli.common import OK, UNUSABLE, Verbs, add_redis_options, port_number

TOKEN_ENV = "FAIRWAY_DASHBOARD_TOKEN"  # how the chart passes the token from a Secret


def cmd_dashboard(args: argparse.Namespace) -> int:
    from aiohttp import web

    from fairway.dashboard.app import Settings, make_app
    from fairway.queue.connection import connect, redacted

    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is not None and len(token) < 12:
        print("fairway dashboard: the token must be at least 12 characters", file=sys.stderr)
        return UNUSABLE
    client = connect(args.redis, True if args.cluster else None)
    client.ping()  # unreachable: one line from the CLI's handler, before the server starts
    settings = Settings(args.redis, token=token, read_only=args.read_only)
    try:  # bound before the URL is printed: a taken port must not send a user to someone else's service
        family = socket.AF_INET6 if ":" in args.bind else socket.AF_INET
        listener = socket.create_server((args.bind, args.port), family=family)
    except OSError as exc:
        print(
            f"fairway dashboard: cannot listen on {args.bind}:{args.port} ({exc.strerror or exc}); "
            "pick a free one with --port (or another address with --bind)",
            file=sys.stderr,
        )
        return UNUSABLE
    mode = "read-only" if not settings.can_act else "actions need the token"
    port = listener.getsockname()[1]
    print(f"fairway dashboard: http://{args.bind}:{port}/ over {redacted(args.redis)} ({mode})", flush=True)
    web.run_app(make_app(client, settings), sock=listener, print=None, access_log=None)
    return OK


def register(verbs: Verbs) -> None:
    dashboard = verbs.add_parser("dashboard", help="serve the web dashboard: queues, tenants, failed jobs")
    add_redis_options(dashboard)
    dashboard.add_argument(
        "--port", type=port_number, default=8080, help="port to listen on (default 8080; 0: any free one)"
    )
    dashboard.add_argument(
        "--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    dashboard.add_argument(
        "--token", default=None, help=f"token every action (retry, forget, pause) needs; default ${TOKEN_ENV}"
    )
    dashboard.add_argument("--read-only", action="store_true", help="no actions at all, even with a token")
    dashboard.set_defaults(run=cmd_dashboard)

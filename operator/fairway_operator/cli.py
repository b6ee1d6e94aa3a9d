"""The operator's verbs, `fairway render` and `fairway operator`: they join the `fairway` command
through the `fairway.verbs` entry-point group (see pyproject.toml), so the worker package never
imports the operator."""

from __future__ import annotations

import argparse
import gc
import os
import re
import socket
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from fairway.cli.common import OK, valid_supervisors
from fairway_operator.exits import EXIT_CODES

if TYPE_CHECKING:
    from fairway_operator.health import Health

# The garbage collector's thresholds while the operator runs (Python's are 700, 10, 10). kopf wraps each
# watch event in objects that refer to each other, so only the collector frees them, and a thousand
# supervisors keep a large heap of watched objects that every full collection walks: with the defaults,
# collections were a fifth of the operator's CPU at 1,000 supervisors (docs/benchmarks.md section 7).
GC_THRESHOLDS = (50_000, 20, 10)
NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def cmd_render(args: argparse.Namespace) -> int:
    from fairway_operator.desired import DEFAULT_IMAGE, desired, to_yaml

    objects = [
        obj
        for sup in valid_supervisors("render", args.file)
        if sup.report.spec is not None
        for child in desired(sup.document, sup.report.spec, {}, args.image or DEFAULT_IMAGE)
        for obj in child.objects
    ]
    sys.stdout.write(to_yaml(objects))
    return OK


def operator_identity(environ: Mapping[str, str], host: str, pid: int, now_s: float) -> str:
    """This replica's name in kopf's peering: the pod's name (the chart sets POD_ID from the downward
    API), else host, pid and start time. kopf's own default starts from the user name, which a
    numeric uid with no passwd entry (the image's 10001) does not have: it crashed at start-up."""
    pod = environ.get("POD_ID") or environ.get("POD_NAME")
    if pod:
        return pod
    return f"{host}/{pid}/{time.strftime('%Y%m%d%H%M%S', time.gmtime(now_s))}"


def cmd_operator(args: argparse.Namespace) -> int:
    """Check what start-up needs (fairway_operator.startup), then run kopf. A start-up that cannot work
    ends in one line and its exit code (docs/deploy.md); an API server not reachable yet is waited for."""
    import logging

    from fairway_operator.exits import StartupError

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        health = _serve_probes(args)
        if not _ready_to_start(args):
            return OK  # stopped while waiting for the API server
        return _run_kopf(args, health)
    except StartupError as exc:
        print(f"fairway operator: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return OK


def _serve_probes(args: argparse.Namespace) -> Health:
    """The probes answer from now on (fairway_operator.health): alive while start-up waits, ready once
    kopf runs."""
    from fairway_operator.exits import PORT_TAKEN, StartupError
    from fairway_operator.health import Health
    from fairway_operator.startup import check_port, liveness_address

    if args.metrics_port:
        check_port(args.metrics_port, "0.0.0.0", "--metrics-port")
    host, port = liveness_address(args.liveness)
    check_port(port, host, "--liveness")
    health = Health()
    try:
        health.serve(host, port)
    except OSError as exc:  # taken between the check and the bind
        raise StartupError(PORT_TAKEN, f"port {port} (--liveness) cannot be used ({exc.strerror})") from None
    return health


def _ready_to_start(args: argparse.Namespace) -> bool:
    import signal
    import threading

    from fairway_operator.startup import check_namespaces, load_credentials, wait_for_api

    load_credentials()
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())  # (a pod stopped while waiting: exit 0)
    try:
        if not wait_for_api(sleep=stop.wait, stopping=stop.is_set):
            return False
        check_namespaces(tuple(args.namespace or ()))
        return True
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_kopf(args: argparse.Namespace, health: Health) -> int:
    import asyncio
    import errno

    import kopf

    import fairway_operator.handlers  # noqa: F401  (registers the handlers)
    from fairway_operator.exits import PORT_TAKEN, StartupError
    from fairway_operator.metrics import OperatorMetrics

    metrics = OperatorMetrics()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        if args.metrics_port:
            metrics.serve(args.metrics_port)
        memo = kopf.Memo(
            worker_image=args.worker_image,
            metrics=metrics,
            namespaces=tuple(args.namespace or ()),
            redis_secrets=args.redis_secrets,
            health=health,
        )
        asyncio.run(
            kopf.operator(
                clusterwide=args.all_namespaces,
                namespaces=args.namespace or (),
                standalone=args.peering is None,
                peering_name=args.peering,
                priority=args.priority,
                # kopf types it as its private NewType of str; a str is what it is at run time
                identity=cast(Any, operator_identity(os.environ, socket.gethostname(), os.getpid(), time.time())),
                memo=memo,
            )
        )
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        # taken between the check and the bind (another process was quicker)
        raise StartupError(
            PORT_TAKEN,
            f"a port it listens on was taken ({exc.strerror}): free it, or pass another --metrics-port or --liveness",
        ) from None
    return OK


def secret_names(value: str) -> frozenset[str]:
    """--redis-secrets: names separated by commas; empty means none."""
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def namespace_name(value: str) -> str:
    """--namespace: one namespace by its exact name (kopf's patterns need to list Namespaces, which
    the chart's Roles do not grant)."""
    if not NAMESPACE_NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a namespace name (lowercase letters, digits and '-', at most 63): "
            "name each namespace with its own --namespace, or watch all with --all-namespaces"
        )
    return value


def register(verbs: Any) -> None:
    render = verbs.add_parser("render", help="print the Kubernetes objects the operator would create")
    render.add_argument("-f", "--file", required=True, help="YAML file of QueueSupervisors, or -")
    render.add_argument("--image", default=None, help="worker image when spec.worker.image is not set")
    render.set_defaults(run=cmd_render)

    operator = verbs.add_parser(
        "operator",
        help="run the Kubernetes operator (kopf)",
        description="Exit codes: "
        + "; ".join(f"{code} {cause.replace('`', '')}" for code, cause in EXIT_CODES.items())
        + ". An API server not reachable yet is retried with backoff.",
    )
    scope = operator.add_mutually_exclusive_group(required=True)
    scope.add_argument("--namespace", action="append", type=namespace_name, help="watch this namespace (repeatable)")
    scope.add_argument("--all-namespaces", action="store_true", dest="all_namespaces", help="watch every namespace")
    operator.add_argument("--peering", default=None, help="kopf peering name (a standby replica waits on it)")
    operator.add_argument("--priority", type=int, default=0, help="peering priority of this replica")
    operator.add_argument(
        "--liveness",
        default="http://0.0.0.0:8080/healthz",
        help="where the probes are served: /healthz (liveness) and /readyz (readiness) on this address",
    )
    operator.add_argument(
        "--log-level",
        dest="log_level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="log level (default info)",
    )
    operator.add_argument(
        "--metrics-port",
        dest="metrics_port",
        type=int,
        default=9100,
        help="serve Prometheus /metrics on this port (default 9100; 0 = off)",
    )
    operator.add_argument(
        "--redis-secrets",
        dest="redis_secrets",
        type=secret_names,
        default=None,
        help="comma-separated names of the Secrets it may read a Redis URL from (what its RBAC grants; "
        "the chart passes redisSecrets.names); others are never requested. Default: any",
    )
    operator.add_argument(
        "--worker-image", dest="worker_image", default=None, help="image for workers whose spec.worker.image is not set"
    )
    operator.set_defaults(run=cmd_operator)

"""`fairway worker`: flags (or the config file the operator renders) to WorkerSettings, then the loop.

Flags keep the names users and scripts already type, settings carry their unit: the renames are
`fairway.resource.worker_settings.SETTING_NAMES`, the one table the operator's renderer reads too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic_core import ErrorDetails

from fairway.cli.common import OK, UNUSABLE, Verbs
from fairway.cli.queue_verbs import split_queues
from fairway.resource.manifests import ManifestError
from fairway.resource.names import REDIS_URL_ENV
from fairway.resource.worker_settings import FLAG_TO_SETTING

# argparse dest -> field of the tenant group's settings (the spec's `tenants` block)
TENANT_FLAG_TO_SETTING: dict[str, str] = {
    "tenants": "queue_prefix",
    "tenant_weight": "weight",
    "max_consecutive": "max_consecutive_jobs",
}


def backoff_list(text: str) -> list[int]:
    """`--backoff 1,5,30`: whole seconds before retry 1, 2, 3... (the last repeats)."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not whole seconds separated by commas, e.g. 1,5,30") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: a backoff cannot be negative")
    return values


def parse_weights(items: list[str]) -> dict[str, int]:
    weights = {}
    for item in items:
        queue, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--weight {item!r}: write QUEUE=N, e.g. --weight high=3")
        try:
            weights[queue.strip()] = int(value)
        except ValueError:
            raise ValueError(f"--weight {item!r}: the weight must be a whole number") from None
    return weights


def load_config(path: str) -> dict[str, Any]:
    """A YAML or JSON mapping of WorkerSettings fields (what the operator mounts)."""
    import json

    import yaml

    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of worker settings")
    return data


def worker_settings(args: argparse.Namespace) -> Any:
    """The config file's settings, overridden by every flag given; validated once, here."""
    from pydantic import ValidationError

    from fairway.resource.worker_settings import WorkerSettings

    data: dict[str, Any] = load_config(args.config) if args.config else {}
    flags: dict[str, Any] = {setting: getattr(args, flag) for flag, setting in FLAG_TO_SETTING.items()}
    flags.update(
        redis_url=args.redis or os.environ.get(REDIS_URL_ENV),
        queues=split_queues(args.queues) if args.queues else None,
        weights=parse_weights(args.weight) if args.weight else None,
        cluster=True if args.cluster else None,
        handlers=args.handlers or None,
        burst=True if args.burst else None,
    )
    if args.tenants:
        tenants = dict(data.get("tenants") or {})
        tenants.update({s: getattr(args, f) for f, s in TENANT_FLAG_TO_SETTING.items() if getattr(args, f) is not None})
        flags["tenants"] = tenants
    data.update({k: v for k, v in flags.items() if v is not None})
    try:
        settings = WorkerSettings.model_validate(data)
    except ValidationError as exc:
        lines = [setting_problem(error, bool(args.config)) for error in exc.errors()]
        raise ManifestError("invalid worker settings:\n  " + "\n  ".join(lines)) from None
    if settings.redis_url is None:
        raise ManifestError(f"no Redis URL: pass --redis URL or set {REDIS_URL_ENV}")
    return settings


def setting_problem(error: ErrorDetails, from_config: bool) -> str:
    """One settings error, named as the user wrote it: the flag (--tries), else the config key."""
    from fairway.resource.wording import plain_message

    flags = {setting: f"--{flag.replace('_', '-')}" for flag, setting in FLAG_TO_SETTING.items()}
    flags.update(
        redis_url=f"--redis (or {REDIS_URL_ENV})", queues="--queues", weights="--weight", handlers="--handlers"
    )
    location = [str(part) for part in error["loc"]]
    if not location:
        return plain_message(error)
    name = flags.get(location[0], ".".join(location)) if len(location) == 1 else ".".join(location)
    if from_config and len(location) == 1 and location[0] in flags:
        name = f"{name} / {location[0]}"
    return f"{name}: {plain_message(error)}"


def cmd_worker(args: argparse.Namespace) -> int:
    import logging

    import fairway.builtins  # noqa: F401  (registers noop, sleep, fail)
    from fairway.queue.connection import connect_patiently, redacted
    from fairway.queue.runtime.fetch import fetcher_for
    from fairway.queue.runtime.handlers import load_modules, registry
    from fairway.queue.runtime.joblog import configure_logging
    from fairway.queue.runtime.worker import Worker

    try:
        settings = worker_settings(args)
    except (ManifestError, ValueError, OSError) as exc:
        print(f"fairway worker: {exc}", file=sys.stderr)
        return UNUSABLE
    configure_logging(settings.log_format)
    load_modules(settings.handlers)
    try:
        from fairway.queue.runtime.ticker import declared_schedules

        declared_schedules(settings, registry)
    except ValueError as exc:
        print(f"fairway worker: {exc}", file=sys.stderr)
        return UNUSABLE
    too_small = memory_below_own_size(settings.memory_mib)
    if too_small:
        print(f"fairway worker: {too_small}", file=sys.stderr)
        return UNUSABLE
    # A SIGTERM from here until the worker's own handlers are in (a pod deleted while it starts, a
    # Redis Cluster still being asked for its nodes) sets `stop`, which the worker honours: never lost,
    # never the default action's kill.
    with stop_on_signals() as stop:
        logging.getLogger("fairway.worker").info("Redis %s", redacted(settings.redis_url))
        client = connect_patiently(
            settings.redis_url, settings.cluster, stop, socket_timeout_s=settings.block_for_s + 10
        )
        if client is None:
            return OK  # stopped while waiting for Redis: nothing was taken, nothing is lost
        return Worker(settings, fetcher_for(client, settings), registry).run(asked_to_stop=stop)


def memory_below_own_size(limit_mib: int) -> str | None:
    """Why the memory limit cannot work, when this process (handlers loaded) is already above it: it
    would recycle after every job, forever. None when the limit is off or above the size."""
    from fairway.queue.runtime.lifecycle import RssProbe

    if not limit_mib:
        return None
    probe = RssProbe()
    try:
        size = probe.mib()
    finally:
        probe.close()
    if size < limit_mib:
        return None
    return (
        f"--memory / memory {limit_mib} MiB is below this worker's own size after start-up ({size:.0f} MiB, "
        f"handlers loaded): it would recycle after every job. Raise it above {size * 1.5:.0f} MiB, or 0 for no limit"
    )


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """SIGTERM/SIGINT set the event (and are put back afterwards): a wait that can be stopped cleanly."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(verbs: Verbs) -> None:
    worker = verbs.add_parser("worker", help="run a worker process")
    worker.add_argument("--redis", default=None, help=f"Redis URL (default: ${REDIS_URL_ENV}, or from --config)")
    worker.add_argument("--config", help="YAML/JSON file of worker settings (the operator renders one)")
    worker.add_argument("--queues", help="served queues in priority order, comma-separated")
    worker.add_argument("--weight", action="append", metavar="QUEUE=N", help="a queue's weight (repeatable)")
    worker.add_argument("--block-for", type=float, dest="block_for", help="seconds an idle worker blocks")
    worker.add_argument(
        "--concurrency", type=int, metavar="N", help="jobs this process runs at once (threads / async; default 1)"
    )
    worker.add_argument("--cluster", action="store_true", help="the Redis is a Redis Cluster")
    worker.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus /metrics here, on every interface, as Prometheus scrapes a pod's address "
        "(default 9100; 0 = off, e.g. on a shared host; the dashboard, which acts, binds loopback instead)",
    )
    worker.add_argument(
        "--health-port",
        type=int,
        metavar="PORT",
        help="serve /healthz and /readyz here, on every interface, for a pod's probes (default 8081; 0 = off)",
    )
    worker.add_argument("--handlers", action="append", metavar="MODULE", help="module registering handlers")
    worker.add_argument("--tenants", metavar="PREFIX", help="serve the tenant group of queues PREFIX<id>")
    worker.add_argument("--tenant-weight", type=int, dest="tenant_weight", help="the tenant group's weight")
    worker.add_argument("--max-consecutive", type=int, dest="max_consecutive", help="K: jobs in a row per tenant")
    worker.add_argument("--tries", type=int, help="attempts per job unless the job says otherwise (default 1)")
    worker.add_argument(
        "--backoff",
        type=backoff_list,
        metavar="S,S,...",
        help="seconds before each retry, e.g. 1,5,30 (the last repeats; 0 = at once; default: at once)",
    )
    worker.add_argument("--timeout", type=float, help="seconds a job may run")
    worker.add_argument(
        "--unknown-handler-grace",
        type=float,
        dest="unknown_handler_grace",
        metavar="SECONDS",
        help="hand a job whose handler this worker lacks back to other workers for this long (a rolling "
        "deploy; no try spent) before failing it (default 300; with --burst 0; 0 = fail at once)",
    )
    worker.add_argument("--max-jobs", type=int, dest="max_jobs", help="jobs before this process recycles (0 = never)")
    worker.add_argument("--max-time", type=float, dest="max_time", help="seconds before recycling")
    worker.add_argument("--memory", type=int, help="MiB of RSS before recycling")
    worker.add_argument("--burst", action="store_true", help="exit once every served queue is empty")
    worker.add_argument(
        "--log-format", choices=["text", "json", "none"], dest="log_format", help="one line per job (default text)"
    )
    worker.set_defaults(run=cmd_worker)

"""The `fairway` command: one entry point, one verb per job.

Verbs import what they need when they run, so `fairway validate` does not pay for redis or kopf.
Exit codes: 0 success, 1 the input is invalid (or the work failed), 2 the input is unusable.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from fairway.manifests import ManifestError, load_documents, validate_document

Verb = Callable[[argparse.Namespace], int]


def _read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(f"cannot read {path}: not UTF-8 text") from exc


def cmd_crd(_: argparse.Namespace) -> int:
    from fairway.crd import crd_yaml

    sys.stdout.write(crd_yaml())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    label = "stdin" if args.file == "-" else args.file
    try:
        documents = load_documents(_read_input(args.file))
        if not documents:
            raise ManifestError("no documents found")
        reports = [validate_document(doc) for doc in documents]
    except ManifestError as exc:
        print(f"fairway validate: {label}: {exc}", file=sys.stderr)
        return 2
    failed = False
    for index, report in enumerate(reports, start=1):
        where = f"{label}: document {index} ({report.name or 'unnamed'})"
        for problem in report.errors:
            print(f"{where}: {problem}", file=sys.stderr)
        for warning in report.warnings:
            print(f"{where}: warning: {warning}")
        if report.valid:
            print(f"{where}: valid")
        failed = failed or not report.valid
    return 1 if failed else 0


def _split_queues(text: str) -> list[str]:
    return [q.strip() for q in text.split(",") if q.strip()]


def _parse_weights(items: list[str]) -> dict[str, int]:
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


def _worker_settings(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from fairway.settings import WorkerSettings, load_config

    data: dict[str, Any] = load_config(args.config) if args.config else {}
    flags = {
        "redis_url": args.redis or os.environ.get("FAIRWAY_REDIS_URL"),
        "queues": _split_queues(args.queues) if args.queues else None,
        "weights": _parse_weights(args.weight) if args.weight else None,
        "block_for_s": args.block_for,
        "cluster": True if args.cluster else None,
        "handlers": args.handlers or None,
        "tries": args.tries,
        "timeout_s": args.timeout,
        "max_jobs": args.max_jobs,
        "max_time_s": args.max_time,
        "memory_mib": args.memory,
        "burst": True if args.burst else None,
        "log_format": args.log_format,
    }
    if args.tenants:
        tenants = dict(data.get("tenants") or {})
        tenants["queue_prefix"] = args.tenants
        if args.tenant_weight is not None:
            tenants["weight"] = args.tenant_weight
        if args.max_consecutive is not None:
            tenants["max_consecutive"] = args.max_consecutive
        flags["tenants"] = tenants
    data.update({k: v for k, v in flags.items() if v is not None})
    try:
        return WorkerSettings.model_validate(data)
    except ValidationError as exc:
        lines = [f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()]
        raise ManifestError("invalid worker settings:\n  " + "\n  ".join(lines)) from None


def cmd_worker(args: argparse.Namespace) -> int:
    import logging

    import fairway.builtins  # noqa: F401  (registers noop, sleep, fail)
    from fairway.handlers import load_modules, registry
    from fairway.loop import Worker
    from fairway.store import Store, connect, group_for

    try:
        settings = _worker_settings(args)
    except (ManifestError, ValueError, OSError) as exc:
        print(f"fairway worker: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    load_modules(settings.handlers)
    client = connect(settings.redis_url, settings.cluster, socket_timeout_s=settings.block_for_s + 10)
    store = Store(client, settings.prefix, group_for(settings.prefix, settings.tenants))
    return Worker(settings, store, registry).run()


def cmd_enqueue(args: argparse.Namespace) -> int:
    import json

    from fairway.client import Client
    from fairway.job import JobError

    try:
        payload = json.loads(args.args) if args.args else []
    except json.JSONDecodeError as exc:
        print(f"fairway enqueue: --args is not JSON: {exc}", file=sys.stderr)
        return 2
    call_args, call_kwargs = (payload, {}) if isinstance(payload, list) else ([], payload)
    if not isinstance(call_kwargs, dict):
        print("fairway enqueue: --args must be a JSON array (args) or object (kwargs)", file=sys.stderr)
        return 2
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
        return 1
    print(ids[0] if len(ids) == 1 else f"enqueued {len(ids)} jobs")
    return 0


def _store(args: argparse.Namespace) -> Any:
    from fairway.store import Store, connect

    return Store(connect(args.redis, True if args.cluster else None))


def cmd_queues(args: argparse.Namespace) -> int:
    import json

    store = _store(args)
    queues = _split_queues(args.queues) if args.queues else store.known_queues()
    rows = store.stats(queues)
    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))
        return 0
    print(f"{'QUEUE':<24} {'READY':>8} {'RESERVED':>9} {'DELAYED':>8} {'FAILED':>7} {'PAUSED':>7} {'OLDEST':>9}")
    for r in rows:
        oldest = f"{r.oldest_age_s:.1f}s" if r.oldest_age_s is not None else "-"
        print(
            f"{r.queue:<24} {r.ready:>8} {r.reserved:>9} {r.delayed:>8} {r.failed:>7} "
            f"{'yes' if r.paused else 'no':>7} {oldest:>9}"
        )
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    store = _store(args)
    for queue in args.queue:
        store.pause(queue) if args.verb == "pause" else store.resume(queue)
        print(f"{queue}: {'paused' if args.verb == 'pause' else 'serving'}")
    return 0


def cmd_failed(args: argparse.Namespace) -> int:
    import json

    store = _store(args)
    if args.action == "list":
        records = store.failed_records(args.queue, args.limit)
        if args.json:
            print(json.dumps(records, indent=2))
        for record in [] if args.json else records:
            print(f"{record['id']}  attempts={record['attempts']}  {record['message']}")
        return 0
    if not args.ids:
        print(f"fairway failed {args.action}: name at least one job id", file=sys.stderr)
        return 2
    missing = 0
    for job_id in args.ids:
        done = (
            store.retry_failed(args.queue, job_id)
            if args.action == "retry"
            else store.forget_failed(args.queue, job_id)
        )
        print(f"{job_id}: {'done' if done else 'no such failed job'}")
        missing += not done
    return 1 if missing else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from fairway.demo import run_demo
    from fairway.embedded import EmbeddedRedisError

    try:
        return run_demo()
    except EmbeddedRedisError as exc:
        print(f"fairway demo: {exc}", file=sys.stderr)
        return 2


def cmd_tenants(args: argparse.Namespace) -> int:
    import json

    from fairway.figures import ranked
    from fairway.store import tenant_figures

    rows = ranked(tenant_figures(_store(args), args.prefix, args.window), args.sort, args.limit)
    if args.json:
        print(json.dumps([row.as_dict() for row in rows], indent=2))
        return 0

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
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from fairway_operator.desired import DEFAULT_IMAGE, desired, to_yaml

    label = "stdin" if args.file == "-" else args.file
    try:
        documents = load_documents(_read_input(args.file))
        reports = [(doc, validate_document(doc)) for doc in documents]
    except ManifestError as exc:
        print(f"fairway render: {label}: {exc}", file=sys.stderr)
        return 2
    bad = False
    objects = []
    for index, (doc, report) in enumerate(reports, start=1):
        for problem in report.errors:
            print(f"{label}: document {index} ({report.name or 'unnamed'}): {problem}", file=sys.stderr)
        if report.spec is None or not report.valid:
            bad = True
            continue
        objects.extend(desired(doc, report.spec, {}, args.image or DEFAULT_IMAGE))
    if bad:
        return 1
    sys.stdout.write(to_yaml(objects))
    return 0


def cmd_operator(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    import kopf

    import fairway_operator.handlers  # noqa: F401  (registers the handlers)
    from fairway_operator.kube import load_config

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    load_config()
    memo = kopf.Memo(worker_image=args.worker_image)
    asyncio.run(
        kopf.operator(
            clusterwide=args.all_namespaces,
            namespaces=args.namespace or (),
            standalone=args.peering is None,
            peering_name=args.peering,
            priority=args.priority,
            liveness_endpoint=args.liveness,
            memo=memo,
        )
    )
    return 0


def _reachable(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1).ping()
        return True
    except (redis.RedisError, OSError, ValueError):
        return False


def cmd_up(args: argparse.Namespace) -> int:
    import contextlib
    from pathlib import Path

    from fairway.embedded import EmbeddedRedis, EmbeddedRedisError
    from fairway.local import Up

    try:
        documents = load_documents(_read_input(args.file))
        reports = [validate_document(doc) for doc in documents]
    except ManifestError as exc:
        print(f"fairway up: {exc}", file=sys.stderr)
        return 2
    bad = [f"{r.name}: {p}" for r in reports for p in r.errors]
    if bad or not reports:
        print(
            "fairway up: " + ("\n  ".join(["invalid supervisors:", *bad]) if bad else "no supervisors"), file=sys.stderr
        )
        return 1
    supervisors = [(r.name, r.spec) for r in reports if r.spec is not None]
    url = args.redis or next((s.redis.url for _, s in supervisors if s.redis.url), None)
    with contextlib.ExitStack() as stack:
        if url is None or (not _reachable(url) and args.embedded_redis is not False):
            if url is not None:
                print(f"fairway up: {url} is not reachable; starting a private Redis instead", file=sys.stderr)
            try:
                url = stack.enter_context(EmbeddedRedis()).url
            except EmbeddedRedisError as exc:
                print(f"fairway up: {exc}", file=sys.stderr)
                return 2
            print(f"fairway up: started a private redis-server at {url} (it goes away when this stops)")
        elif not _reachable(url):
            print(f"fairway up: {url} is not reachable (and --no-embedded-redis was given)", file=sys.stderr)
            return 2
        up = Up(supervisors, url, log_dir=Path(args.logs) if args.logs else None, quiet=args.quiet)
        return up.run()
    return 0


def _redis_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="Redis URL")
    parser.add_argument("--cluster", action="store_true", help="the Redis is a Redis Cluster")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairway", description="Fair Redis job queues on Kubernetes.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    crd = verbs.add_parser("crd", help="print the QueueSupervisor CustomResourceDefinition")
    crd.set_defaults(run=cmd_crd)

    validate = verbs.add_parser("validate", help="validate QueueSupervisor manifests")
    validate.add_argument("-f", "--file", required=True, help="YAML file with one or more documents, or -")
    validate.set_defaults(run=cmd_validate)

    worker = verbs.add_parser("worker", help="run a worker process")
    worker.add_argument("--redis", default=None, help="Redis URL (default from --config)")
    worker.add_argument("--config", help="YAML/JSON file of worker settings (the operator renders one)")
    worker.add_argument("--queues", help="served queues in priority order, comma-separated")
    worker.add_argument("--weight", action="append", metavar="QUEUE=N", help="a queue's weight (repeatable)")
    worker.add_argument("--block-for", type=float, dest="block_for", help="seconds an idle worker blocks")
    worker.add_argument("--cluster", action="store_true", help="the Redis is a Redis Cluster")
    worker.add_argument("--handlers", action="append", metavar="MODULE", help="module registering handlers")
    worker.add_argument("--tenants", metavar="PREFIX", help="serve the tenant group of queues PREFIX<id>")
    worker.add_argument("--tenant-weight", type=int, dest="tenant_weight", help="the tenant group's weight")
    worker.add_argument("--max-consecutive", type=int, dest="max_consecutive", help="K: jobs in a row per tenant")
    worker.add_argument("--tries", type=int)
    worker.add_argument("--timeout", type=float, help="seconds a job may run")
    worker.add_argument("--max-jobs", type=int, dest="max_jobs")
    worker.add_argument("--max-time", type=float, dest="max_time", help="seconds before recycling")
    worker.add_argument("--memory", type=int, help="MiB of RSS before recycling")
    worker.add_argument("--burst", action="store_true", help="exit once every served queue is empty")
    worker.add_argument("--log-format", choices=["text", "json", "none"], dest="log_format")
    worker.set_defaults(run=cmd_worker)

    enqueue = verbs.add_parser("enqueue", help="enqueue jobs")
    _redis_args(enqueue)
    enqueue.add_argument("--queue", default=None)
    enqueue.add_argument("--tenant", default=None)
    enqueue.add_argument("--count", type=int, default=1)
    enqueue.add_argument("--delay", type=float, default=None, help="seconds before the job is ready")
    enqueue.add_argument("--args", default=None, help="JSON array of args or object of kwargs")
    enqueue.add_argument("handler")
    enqueue.set_defaults(run=cmd_enqueue)

    queues = verbs.add_parser("queues", help="per-queue figures")
    _redis_args(queues)
    queues.add_argument("--queues", default=None, help="only these queues (comma-separated)")
    queues.add_argument("--json", action="store_true")
    queues.set_defaults(run=cmd_queues)

    for verb, text in (("pause", "pause queues"), ("continue", "serve paused queues again")):
        sub = verbs.add_parser(verb, help=text)
        _redis_args(sub)
        sub.add_argument("queue", nargs="+")
        sub.set_defaults(run=cmd_pause)

    failed = verbs.add_parser("failed", help="list, retry or forget failed jobs")
    _redis_args(failed)
    failed.add_argument("action", choices=["list", "retry", "forget"])
    failed.add_argument("ids", nargs="*", help="job ids (retry, forget)")
    failed.add_argument("--queue", required=True)
    failed.add_argument("--limit", type=int, default=50)
    failed.add_argument("--json", action="store_true")
    failed.set_defaults(run=cmd_failed)

    render = verbs.add_parser("render", help="print the Kubernetes objects the operator would create")
    render.add_argument("-f", "--file", required=True, help="YAML file of QueueSupervisors, or -")
    render.add_argument("--image", default=None, help="worker image when spec.worker.image is not set")
    render.set_defaults(run=cmd_render)

    operator = verbs.add_parser("operator", help="run the Kubernetes operator (kopf)")
    scope = operator.add_mutually_exclusive_group(required=True)
    scope.add_argument("--namespace", action="append", help="watch this namespace (repeatable)")
    scope.add_argument("--all-namespaces", action="store_true", dest="all_namespaces")
    operator.add_argument("--peering", default=None, help="kopf peering name (a standby replica waits on it)")
    operator.add_argument("--priority", type=int, default=0, help="peering priority of this replica")
    operator.add_argument("--liveness", default="http://0.0.0.0:8080/healthz", help="liveness endpoint URL")
    operator.add_argument(
        "--log-level", dest="log_level", default="info", choices=["debug", "info", "warning", "error"]
    )
    operator.add_argument(
        "--worker-image", dest="worker_image", default=None, help="image for workers whose spec.worker.image is not set"
    )
    operator.set_defaults(run=cmd_operator)

    up = verbs.add_parser("up", help="run a QueueSupervisor's pools as local worker processes")
    up.add_argument("-f", "--file", required=True, help="YAML file of QueueSupervisors, or -")
    up.add_argument("--redis", default=None, help="Redis URL (default: the spec's redis.url)")
    up.add_argument(
        "--embedded-redis",
        dest="embedded_redis",
        action="store_true",
        default=None,
        help="start a private redis-server when no reachable URL is given (the default)",
    )
    up.add_argument("--no-embedded-redis", dest="embedded_redis", action="store_false")
    up.add_argument("--logs", default=None, help="folder for worker logs (default: a new temporary folder)")
    up.add_argument("--quiet", action="store_true", help="no live table")
    up.set_defaults(run=cmd_up)

    tenants = verbs.add_parser("tenants", help="per-tenant figures: waiting, in flight, failures, p50/p99 wait")
    _redis_args(tenants)
    tenants.add_argument("--prefix", default="tenant-", help="the tenant group's queue prefix")
    tenants.add_argument("--window", type=int, default=300, help="seconds of history to summarise")
    tenants.add_argument("--sort", choices=["p99", "failures", "waiting"], default="p99")
    tenants.add_argument("--limit", type=int, default=None)
    tenants.add_argument("--json", action="store_true")
    tenants.set_defaults(run=cmd_tenants)

    demo = verbs.add_parser("demo", help="see Fairway's fairness on a private Redis it starts itself")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Verb = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

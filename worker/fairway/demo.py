"""`fairway demo`: see weighted queues work in seconds, on a private Redis the demo starts itself."""

from __future__ import annotations

import io
import json
import random
from collections import Counter

from fairway.client import Client
from fairway.embedded import EmbeddedRedis
from fairway.handlers import registry
from fairway.loop import Worker
from fairway.settings import WorkerSettings
from fairway.store import Store, connect

QUEUES = ["high", "default", "low"]
WEIGHTS = {"high": 3, "default": 2}


def _serve(url: str, jobs: int, weights: dict[str, int]) -> Counter[str]:
    settings = WorkerSettings(redis_url=url, queues=QUEUES, weights=weights, max_jobs=jobs, log_format="json")
    out = io.StringIO()
    Worker(settings, Store(connect(url, False)), registry, rng=random.Random(), out=out).run()
    return Counter(json.loads(line)["queue"] for line in out.getvalue().splitlines())


def run_demo(jobs: int = 3000) -> int:
    import fairway.builtins  # noqa: F401

    with EmbeddedRedis() as server:
        print(f"fairway demo: started a private redis-server at {server.url}")
        client = Client(server.url)
        for weights, title in (
            ({}, "strict priority (Horizon balance=false)"),
            (WEIGHTS, "weighted 3:2:1 (queueWeights)"),
        ):
            client.store.client.flushdb()
            for queue in QUEUES:
                client.enqueue_many("noop", [[]] * jobs, queue=queue)
            served = _serve(server.url, jobs, weights)
            print(f"\n{title}: the first {jobs} jobs, with every queue full")
            print(f"  {'queue':<8} {'weight':>6} {'served':>7} {'share':>6}")
            for queue in QUEUES:
                weight = weights.get(queue, 1) if weights else "-"
                print(f"  {queue:<8} {weight!s:>6} {served[queue]:>7} {served[queue] / jobs:>6.0%}")
        print("\nStrict priority starves `low` while `high` is never empty; weights serve every queue in proportion.")
    return 0

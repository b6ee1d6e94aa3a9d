"""A SIGTERM that comes while a worker starts (its Redis Cluster still answering who its nodes are, a
pod deleted at once) is never lost: the worker stops before taking a job. The chaos test found a
cluster worker that had connected after such a signal serving on, deaf to it."""

from __future__ import annotations

import io
import threading
import time

from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.protocol.keys import QueueKeys
from fairway.queue.runtime.fetch import fetcher_for
from fairway.queue.runtime.handlers import registry
from fairway.queue.runtime.worker import Worker
from fairway.resource.worker_settings import WorkerSettings


def test_a_stop_asked_before_the_worker_ran_is_honoured_before_any_job(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", queue="work")
    settings = WorkerSettings(
        redis_url=redis_url, queues=["work"], log_format="none", metrics_port=0, health_port=0, block_for_s=5
    )
    asked = threading.Event()
    asked.set()  # what stop_on_signals' handler does with a SIGTERM during the start
    started = time.monotonic()
    worker = Worker(settings, fetcher_for(connect(redis_url), settings), registry, out=io.StringIO())
    assert worker.run(asked_to_stop=asked) == 0
    assert time.monotonic() - started < 3, "it stopped at once instead of serving"
    assert connect(redis_url).llen(QueueKeys("fairway", "work").ready) == 1, "no job was taken"

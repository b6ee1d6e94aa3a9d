"""No-op tasks for each peer worker, importable by their worker processes (BENCH_REDIS_URL picks the server)."""

from __future__ import annotations

import os

import dramatiq
from celery import Celery
from dramatiq.brokers.redis import RedisBroker

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6399/0")


def rq_noop() -> None:
    """RQ imports functions by path."""


async def arq_noop(ctx: dict[str, object]) -> None:
    """arq's task signature takes a context."""


celery_app = Celery("bench", broker=URL)
celery_app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=4, worker_hijack_root_logger=False)


@celery_app.task(name="noop")
def celery_noop() -> None:
    """A Celery task."""


dramatiq.set_broker(RedisBroker(url=URL))


@dramatiq.actor(queue_name="default")
def dramatiq_noop() -> None:
    """A Dramatiq actor."""

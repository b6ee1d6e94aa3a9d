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


# The latency benchmark's 20 ms jobs: asyncio.sleep for async runners, time.sleep for threads.
SLEEP_S = 0.02


def rq_sleep() -> None:
    import time

    time.sleep(SLEEP_S)


async def arq_sleep(ctx: dict[str, object]) -> None:
    import asyncio

    await asyncio.sleep(SLEEP_S)


@celery_app.task(name="sleep")
def celery_sleep() -> None:
    import time

    time.sleep(SLEEP_S)


@dramatiq.actor(queue_name="default")
def dramatiq_sleep() -> None:
    import time

    time.sleep(SLEEP_S)


class ArqSettings:
    """`arq bench.peers.tasks.ArqSettings`: max_jobs from ARQ_MAX_JOBS, Redis from BENCH_REDIS_URL."""

    from arq.connections import RedisSettings

    functions = [arq_noop, arq_sleep]
    redis_settings = RedisSettings.from_dsn(URL)
    max_jobs = int(os.environ.get("ARQ_MAX_JOBS", "10"))
    burst = True
    handle_signals = True

"""The pool's run time is the handler's own: `fairway_job_run_seconds` and the job log's run_ms must not
count the hand-over to a thread or to the event loop (a thread's wake-up, a loop busy with another
job), or a busy worker reports its jobs as slower than they are. Real threads, no I/O."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import JobContext
from fairway.queue.protocol.job import Job
from fairway.queue.runtime.pool import JobPool, Running

HANDED_OVER_S = 1.0  # the worker's clock at hand-over, this long before the pool takes the job up
SLEEP_S = 0.03


def running(seq: int, func: Callable[..., Any]) -> Running:
    job = Job(f"job-{seq}", "h", "q", args=[SLEEP_S])
    context = JobContext(job.id, "q", "h", None, 1, 3, 0, "q", lambda *_: None)
    handed_over = time.perf_counter() - HANDED_OVER_S
    reservation = Reservation("q", b"{}", 1)
    return Running(seq, reservation, job, 10.0, 0, handed_over, time.monotonic() + 10, JobPool.is_async(func), context)


def finished_run_ms(pool: JobPool, count: int) -> list[float]:
    out: list[float] = []
    deadline = time.monotonic() + 5
    while len(out) < count and time.monotonic() < deadline:
        out += [done.run_ms for done in pool.completions(0.1)]
    return out


def sync_sleep(seconds: float) -> None:
    time.sleep(seconds)


async def async_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


@pytest.mark.parametrize("func", [sync_sleep, async_sleep], ids=["def", "async def"])
def test_run_time_starts_when_the_handler_does_not_at_hand_over(func: Callable[..., Any]) -> None:
    pool = JobPool(1)
    try:
        pool.submit(running(1, func), func)
        (run_ms,) = finished_run_ms(pool, 1)
    finally:
        pool.close()
    assert SLEEP_S * 1000 <= run_ms < HANDED_OVER_S * 1000 / 2, run_ms


def test_a_job_waiting_for_the_only_thread_is_not_charged_for_the_wait() -> None:
    pool = JobPool(1)
    try:
        pool.submit(running(1, sync_sleep), sync_sleep)
        pool.submit(running(2, sync_sleep), sync_sleep)
        run_ms = finished_run_ms(pool, 2)
    finally:
        pool.close()
    assert len(run_ms) == 2
    assert all(SLEEP_S * 1000 <= ms < HANDED_OVER_S * 1000 / 2 for ms in run_ms), run_ms

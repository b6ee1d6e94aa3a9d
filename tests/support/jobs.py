"""Handlers the integration tests load into real worker processes (--handlers support.jobs)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time

import redis

from fairway import job

_client: redis.Redis | None = None


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ["FAIRWAY_TEST_REDIS"])
    return _client


@job(name="record")
def record(key: str, seconds: float = 0.0) -> None:
    """Note that the job started, optionally work for a while, then note that it finished."""
    _redis().rpush("test:started", key)
    if seconds:
        time.sleep(seconds)
    _redis().rpush("test:done", key)


@job(name="stubborn")
def stubborn(seconds: float) -> None:
    """Ignores the timeout interrupt, like C code that never returns to the interpreter."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(BaseException):
            time.sleep(0.05)


@job(name="flaky")
def flaky(key: str, failures: int) -> None:
    """Fails the first `failures` attempts of `key`, then succeeds."""
    count = _redis().incr(f"test:flaky:{key}")
    if count <= failures:
        raise RuntimeError(f"attempt {count} fails on purpose")
    _redis().rpush("test:done", key)


@job(name="switchable")
def switchable(seconds: float = 0.0) -> None:
    """Fails while the key test:failing exists: a tenant whose jobs break, then get fixed."""
    if seconds:
        time.sleep(seconds)
    if _redis().exists("test:failing"):
        raise RuntimeError("failing while test:failing is set")


_leaked: list[bytearray] = []


@job(name="leak")
def leak(mib: int) -> None:
    """Keeps `mib` MiB alive for the life of the process, like a handler with a growing cache."""
    _leaked.append(bytearray(mib * 2**20))
    _redis().rpush("test:done", "leak")


@job(name="kill_my_worker")
def kill_my_worker() -> None:
    """A poison pill: the process running it dies at once (as a segfault or an OOM kill would)."""
    _redis().rpush("test:started", "pill")
    os.kill(os.getpid(), 9)


@job(name="arecord")
async def arecord(key: str, seconds: float = 0.0) -> None:
    """`record` as an async handler: waits without holding a thread."""
    import asyncio

    _redis().rpush("test:started", key)
    if seconds:
        await asyncio.sleep(seconds)
    _redis().rpush("test:done", key)


@job(name="thread_name")
def thread_name(key: str) -> None:
    """Notes which thread ran it: sync handlers run on the pool's threads."""
    import threading

    _redis().rpush("test:threads", f"{key}:{threading.current_thread().name}")


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("this exception cannot be printed")


class _Recursive(Exception):
    def __str__(self) -> str:
        return str(self)


class _SlowToPrint(Exception):
    def __str__(self) -> str:
        time.sleep(1.5)  # past the job's timeout: the alarm must be disarmed before anything prints it
        return "slow to print"


@job(name="raise_unprintable")
def raise_unprintable(kind: str) -> None:
    """Raises what no handler should be able to kill a worker with."""
    _redis().rpush("test:started", kind)
    if kind == "unprintable":
        raise _Unprintable()
    if kind == "recursive":
        raise _Recursive()
    if kind == "slow_to_print":
        raise _SlowToPrint()
    if kind == "exit":
        import sys

        sys.exit(3)
    if kind == "keyboard":
        raise KeyboardInterrupt
    raise AssertionError(kind)


@job(name="report_progress")
def report_progress(key: str) -> None:
    """Reports progress (which may fail to be written), then notes it finished."""
    from fairway import current_job

    current_job().progress(0.5, "half way")
    _redis().rpush("test:done", key)


@job(name="chaos")
def chaos(key: str, ms: float) -> None:
    """Notes each run's start and end with the process that ran it, so a test can explain every rerun."""
    pid = os.getpid()
    _redis().rpush("test:runs", f"{key}|{pid}|start")
    time.sleep(ms / 1000)
    _redis().rpush("test:runs", f"{key}|{pid}|done")


@job(name="flaky_chaos")
def flaky_chaos(key: str) -> None:
    """`chaos` whose first attempt fails, so retries (releases) happen under the chaos too."""
    pid = os.getpid()
    _redis().rpush("test:runs", f"{key}|{pid}|start")
    if _redis().incr(f"test:flaky:{key}") == 1:
        raise RuntimeError("the first attempt fails on purpose")
    _redis().rpush("test:runs", f"{key}|{pid}|done")


@job(name="span")
def span(seconds: float = 0.0) -> None:
    """Record (tenant, start ms, end ms, enqueued ms) on the Redis clock: overlaps of one tenant's jobs
    are what a fleet-wide in-flight cap bounds, counted across every worker process; start minus
    enqueued is the job's wait."""
    from fairway import current_job

    def now_ms() -> int:
        s, us = _redis().time()
        return int(s) * 1000 + int(us) // 1000

    started = now_ms()
    if seconds:
        time.sleep(seconds)
    job = current_job()
    _redis().rpush("test:spans", f"{job.tenant}\t{started}\t{now_ms()}\t{job.enqueued_at_ms}")


@job(name="say")
def say(words: str) -> None:
    """Write one log line from inside the handler (the worker tags it with the job)."""
    logging.getLogger("app.handler").warning("handler says %s", words)


@job(name="say_async")
async def say_async(words: str) -> None:
    logging.getLogger("app.handler").warning("async handler says %s", words)


@job(name="compute")
def compute(a: int, b: int, seconds: float = 0.0) -> dict[str, int]:
    """A result to keep: the sum and product, after `seconds`."""
    time.sleep(seconds)
    return {"sum": a + b, "product": a * b}


@job(name="acompute")
async def acompute(a: int, b: int, seconds: float = 0.0) -> list[int]:
    await asyncio.sleep(seconds)
    return [a + b, a * b]


@job(name="huge_result")
def huge_result(kib: int) -> str:
    return "x" * (kib * 1024)


@job(name="unjsonable_result")
def unjsonable_result() -> object:
    return {1, 2, 3}


@job(name="kept_by_handler", result_ttl=60)
def kept_by_handler(n: int) -> int:
    """Its declaration keeps its results, whoever enqueues it (by name, from another language)."""
    return n * 10


@job(name="until_cancelled")
def until_cancelled(key: str, seconds: float = 60.0) -> str:
    """Works in 50 ms steps until its job is cancelled (then says so and stops) or `seconds` pass."""
    from fairway import JobCancelled, current_job

    _redis().rpush(key, "started")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if current_job().cancelled:
            _redis().rpush(key, "saw cancel")
            raise JobCancelled("stopping at a step boundary")
        time.sleep(0.05)
    return "finished"


@job(name="async_until_cancelled")
async def async_until_cancelled(key: str, seconds: float = 60.0) -> str:
    """Sleeps `seconds`; its task is cancelled when its job is."""
    _redis().rpush(key, "started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _redis().rpush(key, "task cancelled")
        raise
    return "finished"


@job(name="import_rows")
def import_rows(rows: list[str]) -> int:
    """A chunk of an import (enqueue_chunked's args: [rows]): each row noted as done."""
    if rows:
        _redis().rpush("test:done", *rows)
    return len(rows)


@job(name="step")
def step(label: str) -> str:
    """A chain's step: noted as done, its label its result."""
    _redis().rpush("test:done", label)
    return label


@job(name="gather")
def gather(queue: str, *ids: str) -> None:
    """A chain's last step: reads the results of the steps before (by their ids) from the test's Redis."""
    import fairway

    client = fairway.Client(os.environ["FAIRWAY_TEST_REDIS"])
    values = [client.job(job_id, queue=queue).result(timeout=5) for job_id in ids]
    _redis().rpush("test:done", "gathered:" + ",".join(values))


@job(name="import_chunk")
def import_chunk(rows: list[object], seconds: float = 0.0) -> int:
    """A chunk of an import that takes `seconds` (bench/batch_fairness.py): its rows are not looked at."""
    if seconds:
        time.sleep(seconds)
    return len(rows)

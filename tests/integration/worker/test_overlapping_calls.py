"""Overlapping reserve calls on a real Redis behind a delaying proxy (~2 ms round trip): calls really
are on the wire together, a pooled worker still never holds more jobs than it has slots, every job
runs once; and calls on the wire survive a Redis that forgot its scripts."""

from __future__ import annotations

import io
import json
import random
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
import redis

import fairway.builtins  # noqa: F401
from fairway.queue.access.client import Client
from fairway.queue.connection import connect
from fairway.queue.protocol import calls
from fairway.queue.protocol.scripts import Scripts
from fairway.queue.runtime.fetch import StandaloneFetcher, fetcher_for
from fairway.queue.runtime.handlers import registry
from fairway.queue.runtime.worker import Worker
from fairway.resource.worker_settings import WorkerSettings
from support.delaying_proxy import DelayingProxy
from support.redis_procs import RedisProcess
from support.workers import job_lines


@pytest.fixture
def hop(_redis_server: RedisProcess, redis_url: str) -> Iterator[DelayingProxy]:
    proxy = DelayingProxy(_redis_server.port, 0.001)
    yield proxy
    proxy.close()


def test_calls_overlap_behind_a_hop_and_never_reserve_more_than_the_free_slots(
    redis_url: str, hop: DelayingProxy
) -> None:
    Client(redis_url).enqueue_many("sleep", [[0.02]] * 400, queue="q")
    settings = WorkerSettings(
        redis_url=hop.url, queues=["q"], concurrency=8, burst=True, log_format="json", metrics_port=0
    )
    fetcher = fetcher_for(connect(hop.url, False), settings, random.Random(1))
    assert isinstance(fetcher, StandaloneFetcher)
    out = io.StringIO()
    worker = Worker(settings, fetcher, registry, out=out)
    assert worker.overlap is not None
    direct = redis.Redis.from_url(redis_url)
    held, on_wire, stop = [], [], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            held.append(int(direct.zcard("fairway:{q}:reserved")))
            on_wire.append(worker.overlap.on_wire if worker.overlap else 0)
            stop.wait(0.0005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        worker.run()
    finally:
        stop.set()
        sampler.join()
    lines = job_lines(out.getvalue())
    ran = Counter(line["id"] for line in lines)
    assert len(ran) == 400 and set(ran.values()) == {1}, "every job ran, and once"
    assert all(line["outcome"] == "ok" for line in lines)
    assert max(held) <= 8, f"never more jobs held than slots (saw {max(held)})"
    assert max(on_wire) >= 2, "reserve calls were on the wire together"
    assert direct.zcard("fairway:{q}:reserved") == 0 and direct.llen("fairway:{q}:ready") == 0


def test_calls_on_the_wire_are_sent_again_when_redis_forgot_the_script(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    Client(redis_url).enqueue_many("noop", [[]] * 3, queue="q")
    settings = WorkerSettings(redis_url=redis_url, queues=["q"], concurrency=4)
    fetcher = fetcher_for(connect(redis_url, False), settings, random.Random(1))
    assert isinstance(fetcher, StandaloneFetcher)
    fetcher.refresh()
    client.script_flush()  # (as a restarted Redis would have)
    first = fetcher.send_reserve((), 2)
    second = fetcher.send_reserve((), 2)
    replies = {}
    while len(replies) < 2:
        got = fetcher.reserve_reply()
        if got is not None:
            replies[got[0]] = got[1]
    assert sorted(replies) == [first, second]
    assert sum(len(jobs) for jobs in replies.values()) == 3
    assert {json.loads(r.payload)["handler"] for jobs in replies.values() for r in jobs} == {"noop"}


def test_the_one_call_path_keeps_nothing_on_the_wire_between_calls(redis_url: str) -> None:
    scripts = Scripts(redis.Redis.from_url(redis_url))
    for _ in range(3):
        scripts.hot.run(calls.renew("fairway:{q}:reserved", [b"x\ty:1.1"], 1000))
        assert scripts.hot.on_wire == 0

"""Fairway's pytest plugin (docs/testing.md), loaded by pytest when fairway is installed (entry point
`pytest11`): a real redis-server for the session, flushed for each test; a client and an in-process
worker on it. No fake Redis: the tests run the scripts production runs.

    def test_signup_sends_a_welcome(fairway_client, fairway_worker):
        job = fairway_client.enqueue("emails.send", "ada@example.com", result_ttl=60)
        [ran] = fairway_worker.drain()
        assert ran.outcome == "ok" and job.result() == "sent"
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from fairway.local.embedded import EmbeddedRedis
from fairway.queue.access.client import Client
from fairway.testing import TestWorker


@pytest.fixture(scope="session")
def _fairway_redis_server() -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis() as server:
        yield server


@pytest.fixture
def fairway_redis_url(_fairway_redis_server: EmbeddedRedis) -> str:
    """A real, private Redis (redis-server on a free loopback port), empty for this test."""
    redis.Redis.from_url(_fairway_redis_server.url).flushall()
    return _fairway_redis_server.url


@pytest.fixture
def fairway_client(fairway_redis_url: str) -> Iterator[Client]:
    client = Client(fairway_redis_url)
    yield client
    client.close()


@pytest.fixture
def fairway_worker(fairway_redis_url: str) -> TestWorker:
    """`drain()` runs what was enqueued, in this process, with the handlers your modules registered."""
    return TestWorker(fairway_redis_url)

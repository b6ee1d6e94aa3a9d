"""Shared fixtures: real Redis processes (standalone and a 3-node cluster), each test on a clean database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from support.redis_procs import RedisCluster, RedisProcess


@pytest.fixture(scope="session")
def _redis_server() -> Iterator[RedisProcess]:
    server = RedisProcess().start()
    yield server
    server.cleanup()


@pytest.fixture
def redis_url(_redis_server: RedisProcess) -> str:
    """A standalone Redis 7 of the tests' own, flushed for this test."""
    redis.Redis.from_url(_redis_server.url).flushall()
    return _redis_server.url


@pytest.fixture(scope="session")
def _redis_cluster() -> Iterator[RedisCluster]:
    cluster = RedisCluster().start()
    yield cluster
    cluster.cleanup()


@pytest.fixture
def cluster_url(_redis_cluster: RedisCluster) -> str:
    """A real 3-master Redis Cluster, flushed for this test."""
    _redis_cluster.flush()
    return _redis_cluster.url

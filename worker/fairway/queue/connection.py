"""Connecting to Redis, and which errors mean "Redis is not reachable right now" (an outage, retried)."""

from __future__ import annotations

from typing import Any

import redis
from redis.cluster import RedisCluster

RedisClient = redis.Redis | RedisCluster
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    ConnectionResetError,
)


def connect(url: str, cluster: bool | None = None, *, socket_timeout_s: float = 10.0) -> RedisClient:
    """A client for `url`; Redis Cluster when `cluster` is true, or when None and the server says so."""
    options: dict[str, Any] = {
        "socket_timeout": socket_timeout_s,
        "socket_connect_timeout": 5.0,
        "socket_keepalive": True,
    }
    if cluster is None:
        probe = redis.Redis.from_url(url, **options)
        try:
            cluster = bool(probe.info("cluster").get("cluster_enabled"))
        finally:
            probe.close()
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)

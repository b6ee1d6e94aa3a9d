"""Connecting to Redis, and which errors mean "Redis is not reachable right now" (an outage, retried)."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import redis
from redis.cluster import RedisCluster

from fairway.resource.names import DEFAULT_REDIS_URL, REDIS_URL_ENV

log = logging.getLogger("fairway.worker")
RedisClient = redis.Redis | RedisCluster


def redis_url_from_env() -> str:
    """One rule for every entry point: FAIRWAY_REDIS_URL, else the local default."""
    return os.environ.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL


CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    ConnectionResetError,
)

# Replies that mean "not now" rather than "wrong": the server is loading, became a replica in a
# failover (READONLY to a write; UNBLOCKED, "instance state changed", to a client blocked in BLMPOP
# at that moment: an idle worker), lost its master, lacks the replicas it must write to, lost
# cluster slots, or is full. A worker treats each as an outage (back off, keep its jobs, settle them
# when Redis is back), never as a crash: idle, busy or draining, standalone or cluster alike.
OUTAGE_REPLIES = ("LOADING", "READONLY", "UNBLOCKED", "MASTERDOWN", "NOREPLICAS", "CLUSTERDOWN", "TRYAGAIN", "OOM")
_OUTAGE_TYPES: tuple[type[BaseException], ...] = (
    *CONNECTION_ERRORS,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.SlotNotCoveredError,
)
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (*_OUTAGE_TYPES, redis.ResponseError)  # narrowed by is_outage


def is_outage(exc: BaseException) -> bool:
    """Whether `exc` (caught as one of OUTAGE_ERRORS) is an outage; any other error reply is a bug,
    to be raised. redis-py gives some codes a class of their own and leaves others in the text."""
    if isinstance(exc, _OUTAGE_TYPES):
        return True
    return isinstance(exc, redis.ResponseError) and str(exc).split(" ", 1)[0] in OUTAGE_REPLIES


_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/]*)(?::[^@/]*)?@")
_QUERY_SECRET = re.compile(r"(?i)([?&]password=)[^&]*")


def redacted(url: str) -> str:
    """The URL as it may be printed or logged: any password (in user:password@ or ?password=) masked."""
    masked = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}{':***' if m['user'] or ':' in m[0] else ''}@", url)
    return _QUERY_SECRET.sub(r"\1***", masked)


class BadRedisUrl(ValueError):
    """A Redis URL that cannot be used as written; the message says what to write instead."""


REDIS_URL_SCHEMES = ("redis://", "rediss://", "unix://")
REDIS_URL_FORM = "redis://[user:password@]host:6379/0, rediss://... or unix:///path/to/redis.sock"


def check_url(url: str) -> str:
    """`url` if redis-py can connect with it as written, else BadRedisUrl naming the fault (the scheme,
    the port) and the form to use. The message never holds the password."""
    shown = redacted(url) if isinstance(url, str) else repr(url)
    if not isinstance(url, str) or not url.startswith(REDIS_URL_SCHEMES):
        raise BadRedisUrl(f"{shown!r} is not a Redis URL; write {REDIS_URL_FORM}")
    try:
        redis.connection.parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:
        raise BadRedisUrl(
            f"{shown!r} is not a usable Redis URL ({redacted(str(exc))}); write {REDIS_URL_FORM}"
        ) from None
    if not url.startswith("unix://") and urlsplit(url).port == 0:  # redis-py would quietly use 6379
        raise BadRedisUrl(f"{shown!r} has port 0; write the port Redis listens on (6379 by default)")
    return url


def connect(url: str, cluster: bool | None = None, *, socket_timeout_s: float = 10.0) -> RedisClient:
    """A client for `url`; Redis Cluster when `cluster` is true, or when None and the server says so."""
    check_url(url)
    options: dict[str, Any] = {"socket_timeout": socket_timeout_s, "socket_connect_timeout": 5.0}
    if not url.startswith("unix:"):
        options["socket_keepalive"] = True  # (TCP's: a Unix socket's connection takes no such option)
    if cluster is None:
        probe = redis.Redis.from_url(url, **options)
        try:
            cluster = bool(probe.info("cluster").get("cluster_enabled"))
        except redis.exceptions.NoPermissionError:
            # An ACL user without INFO (@dangerous) cannot be asked; a cluster says so with --cluster.
            log.info("this Redis user may not run INFO; assuming a standalone Redis (pass --cluster for a cluster)")
            cluster = False
        finally:
            probe.close()
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def connect_patiently(
    url: str, cluster: bool | None, stop: threading.Event, *, socket_timeout_s: float = 10.0
) -> RedisClient | None:
    """`connect`, waiting out an outage with backoff (logged once) until Redis answers; None if `stop`
    was set first. A worker that starts before its Redis must wait, not crash."""
    backoff, waiting_since = 0.1, None
    while not stop.is_set():
        try:
            client = connect(url, cluster, socket_timeout_s=socket_timeout_s)
            if not is_cluster(client):  # a cluster client has already talked to its nodes
                client.ping()
        except CONNECTION_ERRORS as exc:
            if waiting_since is None:
                waiting_since = time.monotonic()
                log.error("Redis at %s is unreachable (%s); waiting for it, with backoff", redacted(url), exc)
            stop.wait(backoff)
            backoff = min(backoff * 2, 1.0)
            continue
        if waiting_since is not None:
            log.warning("Redis is reachable after %.1f s", time.monotonic() - waiting_since)
        return client
    return None


def reply_text(value: bytes | str) -> str:
    """A reply's bytes as text (clients made with decode_responses give str already)."""
    return value.decode() if isinstance(value, bytes) else value


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)

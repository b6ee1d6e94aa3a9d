"""The Secrets that hold supervisors' Redis URLs, each kept by a watch of that one Secret.

Why a watch per Secret, as kubelet keeps the Secrets its pods mount: the chart grants Secrets by name
(RBAC `resourceNames`), and an API server authorizes a list or watch by name only when it carries the
field selector `metadata.name=<name>` (it takes the name for the authorization from there). So the
operator may follow exactly the Secrets it was granted and no other. A watch costs one list and then
one request per server timeout (5 to 10 minutes); a rotated Secret is seen at once, and status passes
read the value from memory: no GET per pass, none repeated while nothing changes.

The watches run on kopf's event loop (through `kube.NamedWatch`, as every request the operator makes
goes through `kube.py`); passes, which run in threads, read through `value`, which starts the watch on first use
and waits for its first answer. A Secret no supervisor names any more stops being watched (`retain`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiClient

from fairway_operator import kube
from fairway_operator.kube import STREAM_ERRORS, NamedWatch, Refused

log = logging.getLogger("fairway.operator")

SECRETS = "/api/v1/namespaces/{ns}/secrets"  # (the namespace is quoted where the URL is built)
FIRST_ANSWER_S = 10.0  # how long a pass waits for a new watch's first answer
UNUSED_S = 60.0  # a Secret no supervisor names, and no pass asked for this long, stops being watched
WATCH_TIMEOUT_S = (300, 600)  # the server closes each watch request after a random time in this range
BACKOFF_S = (1.0, 60.0)  # after a refused or failed request: first delay, and the most it doubles to


class SecretUnreadable(Exception):
    """The Secret cannot be read (absent, not granted, no answer): the message says which and why."""


class SecretForbidden(SecretUnreadable):
    """The API server refused the operator this Secret (401, 403): RBAC, not an outage."""


@dataclass
class _Followed:
    """What the watch of one Secret last saw (its `data`, None when it does not exist) or why it cannot."""

    known: threading.Event = field(default_factory=threading.Event)
    data: dict[str, str] | None = None
    error: str | None = None
    forbidden: bool = False  # the error is a refusal (401, 403)
    asked: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None


class SecretWatches:
    def __init__(self, api_client: ApiClient, loop: asyncio.AbstractEventLoop) -> None:
        self._api = NamedWatch(api_client)
        self._loop = loop
        self._followed: dict[tuple[str, str], _Followed] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._loop_thread = threading.get_ident()  # (made on the loop)

    # -- for passes (any thread but the loop's) -------------------------------------------------

    def value(self, namespace: str, name: str, key: str, timeout: float = FIRST_ANSWER_S) -> str:
        """The decoded value of `key`, from the watch (started now when there is none)."""
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("SecretWatches.value waits for the loop: call it from a pass's thread")
        with self._lock:
            if self._closed:
                raise SecretUnreadable("the operator is stopping")
            followed = self._followed.get((namespace, name))
            if followed is None:
                followed = self._followed[(namespace, name)] = _Followed()
                self._loop.call_soon_threadsafe(self._start, namespace, name, followed)
            followed.asked = time.monotonic()
        if not followed.known.wait(timeout):
            raise SecretUnreadable(f"no answer yet from the API server about Secret {namespace}/{name}")
        if followed.error is not None:
            raise (SecretForbidden if followed.forbidden else SecretUnreadable)(followed.error)
        if followed.data is None:
            raise SecretUnreadable(f"Secret {namespace}/{name} does not exist")
        if key not in followed.data:
            raise SecretUnreadable(f"Secret {namespace}/{name} has no key {key!r}")
        return base64.b64decode(followed.data[key]).decode()

    # -- on the loop ----------------------------------------------------------------------------

    def retain(self, named: Collection[tuple[str, str]]) -> None:
        """Stop watching Secrets no supervisor names (namespace, name) and no pass asked for lately."""
        now = time.monotonic()
        with self._lock:
            gone = [k for k, f in self._followed.items() if k not in named and now - f.asked > UNUSED_S]
            stopped = [self._followed.pop(k) for k in gone]
        for followed in stopped:
            if followed.task is not None:
                followed.task.cancel()

    def watched(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._followed)

    async def close(self) -> None:
        with self._lock:
            self._closed = True
            tasks = [f.task for f in self._followed.values() if f.task is not None]
            self._followed.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._api.close()

    def _start(self, namespace: str, name: str, followed: _Followed) -> None:
        followed.task = asyncio.create_task(self._follow(namespace, name, followed), name=f"secret {namespace}/{name}")

    async def _follow(self, namespace: str, name: str, followed: _Followed) -> None:
        """List the one Secret, then watch it from the list's resourceVersion, for as long as it is
        wanted: again from the last version seen when a watch ends, listed again when that is too old
        (410). Refused (401, 403): the value is dropped and the refusal is the reason until an answer
        replaces it. Other trouble (no answer, a 5xx) keeps the last value (the Redis URL rarely
        changes, and passes need it) and tries again with backoff."""
        since: str | None = None
        delay = BACKOFF_S[0]
        while True:
            began = time.monotonic()
            try:
                if since is None:
                    reply = await self._api.list_named(SECRETS.format(ns=namespace), name)
                    items = [i for i in reply.get("items") or [] if i.get("metadata", {}).get("name") == name]
                    followed.data, followed.error, followed.forbidden = (
                        (items[0].get("data") or {}) if items else None,
                        None,
                        False,
                    )
                    followed.known.set()
                    since = str(reply.get("metadata", {}).get("resourceVersion") or "")
                timeout_s = random.randint(*WATCH_TIMEOUT_S)
                async for event in self._api.watch_named(SECRETS.format(ns=namespace), name, since, timeout_s):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        if obj.get("code") == 410:  # too old: list again
                            since = None
                            break
                        raise Refused(int(obj.get("code") or 500), str(obj.get("message") or obj))
                    if obj.get("metadata", {}).get("name") == name:
                        if kind in ("ADDED", "MODIFIED"):
                            followed.data, followed.error, followed.forbidden = obj.get("data") or {}, None, False
                        elif kind == "DELETED":
                            followed.data, followed.error, followed.forbidden = None, None, False
                    since = str(obj.get("metadata", {}).get("resourceVersion") or since)
                if time.monotonic() - began > BACKOFF_S[0] or since is None:
                    delay = BACKOFF_S[0]
                    continue
                problem = "the watch ended at once"  # (a front that closes streams: no busy loop)
            except Refused as exc:
                since = None
                problem = _refusal(namespace, name, exc)
                if exc.status in (401, 403):  # no longer granted: no longer used
                    followed.data, followed.error, followed.forbidden = None, problem, True
                    followed.known.set()
            except STREAM_ERRORS as exc:
                problem = f"the API server did not answer about Secret {namespace}/{name}: {exc!r}"
            if not followed.known.is_set():  # nothing to go on with: a waiting pass learns why
                followed.error, followed.forbidden = problem, False
                followed.known.set()
            log.warning("watching Secret %s/%s: %s; again in %.0f s", namespace, name, problem, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_S[1])


def _refusal(namespace: str, name: str, exc: Refused) -> str:
    if exc.status in (401, 403):
        return (
            f"the API server refused to let the operator watch Secret {namespace}/{name} ({exc.status}); "
            "grant it through the chart's redisSecrets.names (RBAC list and watch on that name)"
        )
    try:
        reason = json.loads(exc.message).get("message") or exc.message
    except (ValueError, AttributeError):
        reason = exc.message
    return f"the API server answered {exc.status} about Secret {namespace}/{name}: {reason}"


def request_for(client: ApiClient, namespace: str, name: str, query: dict[str, str]) -> tuple[str, Any]:
    """The request a watch of Secret `namespace/name` sends (kube.request_for on the Secrets collection)."""
    return kube.request_for(client, SECRETS.format(ns=namespace), name, query)

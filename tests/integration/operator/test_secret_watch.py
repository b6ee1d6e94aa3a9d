"""The Redis URL's Secret is followed by a watch of that one Secret (fairway_operator.secret_watch), never
read with a GET: a rotated Secret is seen without a restart, a Secret made after its supervisor is picked
up, a refusal is reported with the fix, and a Secret no supervisor names stops being watched.

The emulator serves list and watch narrowed by `fieldSelector=metadata.name=...` as a real server does
(tests/support/kopf_kmock.py); it never closes a watch by timeout or answers 410 (too old), so the
re-watch and re-list paths are not staged here: they follow the API's documented semantics.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from test_reconcile import NS, api, create, degraded, get, supervisor

from fairway_operator import secret_watch
from support.kopf_kmock import REQUESTS, Emulator, eventually, running_operator, secret

pytestmark = pytest.mark.asyncio


def secret_requests(start: int) -> list[tuple[str, str | None]]:
    return [(r.verb, r.name) for r in REQUESTS[start:] if r.by_operator and r.resource == "secrets"]


def depths(name: str = "shop") -> Any:
    """For `eventually`: the status's queue rows once a pass has read them from Redis."""

    async def check() -> dict[str, Any] | None:
        rows = {q["name"]: q for q in ((await get(name)).get("status") or {}).get("queues", [])}
        return rows if rows and rows["high"].get("depth") is not None else None

    return check


async def set_url(name: str, url: str) -> None:
    _, _, core = api()
    body = {"data": {"url": base64.b64encode(url.encode()).decode()}}
    await asyncio.to_thread(core.patch_namespaced_secret, name, NS, body)


async def test_a_rotated_secret_is_seen_at_once_from_one_list_and_one_watch(
    k8s: Emulator, operator: Any, redis_url: str
) -> None:
    from fairway.queue.access.client import Client

    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", "redis://127.0.0.1:1/0"))
    Client(redis_url).enqueue_many("noop", [[]] * 3, queue="high")
    start = len(REQUESTS)
    await create(supervisor())
    found = await eventually(degraded("shop"))
    assert found and found["reason"] == "RedisUnreachable", found
    await set_url("redis", redis_url)  # the Secret is rotated to the Redis that is there
    rows = await eventually(depths(), 5)
    assert rows and rows["high"]["depth"] == 3, rows
    await asyncio.sleep(3)  # more status passes (one a second here)
    assert secret_requests(start) == [("list", "redis"), ("watch", "redis")], "no GET, no second read"


async def test_a_secret_made_after_its_supervisor_is_picked_up(k8s: Emulator, operator: Any, redis_url: str) -> None:
    await create(supervisor())
    found = await eventually(degraded("shop"))
    assert found and "Secret jobs/redis does not exist" in found["message"], found
    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", redis_url))
    assert await eventually(depths(), 5), "seen by the watch that was already open"


async def test_a_refused_watch_is_reported_with_the_fix_and_tried_again(
    k8s: Emulator, operator: Any, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secret_watch, "BACKOFF_S", (0.5, 1.0))
    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", redis_url))
    k8s.refuse_next.append(("list", "secrets", 403))  # as a server without the RBAC rule answers
    await create(supervisor())
    found = await eventually(degraded("shop"))
    assert found and "redisSecrets.names" in found["message"] and "jobs/redis" in found["message"], found
    assert await eventually(depths(), 10), "granted again (the refusal was once): read and reported"


async def test_a_secret_no_supervisor_names_stops_being_watched(
    k8s: Emulator, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secret_watch, "UNUSED_S", 0.5)
    _, _, core = api()
    for name in ("redis", "other-redis"):
        await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, name, redis_url))
    async with running_operator(k8s) as thread:
        await create(supervisor())
        await create(supervisor("billing", redis={"secretRef": {"name": "other-redis", "key": "url"}}))
        assert await eventually(depths("billing"), 10)
        watches = thread.memo.state.reconciler.secrets  # type: ignore[attr-defined]
        assert watches.watched() == {(NS, "redis"), (NS, "other-redis")}
        custom, _, _ = api()
        await asyncio.to_thread(
            custom.delete_namespaced_custom_object, "fairway.dev", "v1alpha1", NS, "queuesupervisors", "billing"
        )
        assert await eventually(lambda: watches.watched() == {(NS, "redis")}, 10), watches.watched()

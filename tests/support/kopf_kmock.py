"""The real kopf operator against kmock's KubernetesEmulator over HTTP, with a real Redis.

Adapted from shared/reference/kopf_kmock_conftest.py (kopf 1.45.2, kmock 0.8). The emulator lacks what
a real API server does (see shared/KOPF-KMOCK.md): no garbage collection, no controllers filling in
Deployment status, server-side apply as a plain merge. Tests that need those set the state
themselves and say so.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime
import itertools
import logging
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import jsonpatch
import kmock
import kopf
import kubernetes
import pytest_asyncio
from aiohttp import web

import fairway_operator.handlers  # noqa: F401  (registers the operator's handlers)

logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}


@dataclass(frozen=True)
class Requested:
    """One API request as RBAC sees it (verb, API group, resource with its subresource, namespace),
    and who made it (its User-Agent: the operator's say fairway-operator/..., kopf's kopf/...)."""

    verb: str
    group: str
    resource: str  # plural, "/subresource" appended when there is one; "" for discovery
    namespace: str | None
    name: str | None
    agent: str

    @property
    def by_operator(self) -> bool:
        return self.agent.startswith(("fairway-operator/", "kopf/"))


REQUESTS: list[Requested] = []  # every request any emulator in this process served, in order


def requested(request: kmock.Request) -> Requested:
    action = str(getattr(request.action, "value", request.action) or "").lower()
    verb = {"fetch": "get", "none": ""}.get(action, action)
    if verb == "update":
        verb = "patch" if str(getattr(request.method, "value", request.method)).upper() == "PATCH" else "update"
    res = request.resource
    plural = str(getattr(res, "plural", "") or "") if res is not None else ""
    sub = f"/{request.subresource}" if request.subresource else ""
    agent = str(request.headers.get("User-Agent", "")) if request.headers else ""
    group = str(getattr(res, "group", "") or "") if res is not None else ""
    # A list or watch narrowed to one name by its field selector is authorized for that name (the
    # apiserver's RequestInfo takes it from the selector), so RBAC resourceNames can grant it.
    name = request.name or (selected_name(request) if verb in ("list", "watch") else None)
    return Requested(verb, group, plural + sub if plural else "", request.namespace, name, agent)


def selected_name(request: kmock.Request) -> str | None:
    """The name a request's field selector requires; a field a server does not index for every resource
    is refused with 400, as a real server refuses it."""
    try:
        return required_name(str((request.params or {}).get("fieldSelector", "") or ""))
    except ValueError as exc:
        raise kmock.KubernetesError(status=400, reason="BadRequest", message=str(exc)) from exc


def required_name(selector: str) -> str | None:
    """The name a field selector requires (`metadata.name=<name>`), as the apiserver reads it."""
    name = None
    for term in filter(None, (t.strip() for t in selector.split(","))):
        field, operator, value = term.partition("!=") if "!=" in term else term.partition("=")
        field, value = field.strip(), value.lstrip("=").strip()
        if field not in ("metadata.name", "metadata.namespace"):
            raise ValueError(f'field label not supported: "{field}"')
        if field == "metadata.name" and operator == "=":
            name = value
    return name


class Emulator(kmock.KubernetesEmulator):  # type: ignore[misc]
    """kmock 0.8 + what kopf needs: stamped uid/resourceVersion/generation, 422 on conflicts, gap-free watches."""

    _rv = itertools.count(1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Every write as it arrived: (monotonic time, action, resource plural, name, body), so a test can
        # assert what the operator sent and in which order (the emulator runs no controllers).
        self.writes: list[tuple[float, str, str, str | None, Any]] = []
        # Answers to give instead of serving: (verb, resource plural, HTTP status), each used once, for
        # what a real server answers now and then (a 409 Conflict, a 500 from etcd).
        self.refuse_next: list[tuple[str, str, int]] = []

    async def _handle(self, request: kmock.Request) -> Any:
        REQUESTS.append(requested(request))
        asked = (REQUESTS[-1].verb, REQUESTS[-1].resource)
        refusal = next((r for r in self.refuse_next if r[:2] == asked), None)
        if refusal is not None:
            self.refuse_next.remove(refusal)
            raise kmock.KubernetesError(status=refusal[2], reason="Conflict" if refusal[2] == 409 else "Refused")
        data, rv = request.data, str(next(self._rv))
        if self._applies_a_missing_object(request):
            # Server-side apply creates what is missing, as a real server does; its RBAC check then asks
            # for `create` as well as `patch` (the apiserver's patch handler authorizes the create).
            REQUESTS.append(replace(REQUESTS[-1], verb="create"))
            async with self._lock:
                created = {**copy.deepcopy(data), "metadata": {**data.get("metadata", {}), "resourceVersion": rv}}
                created["metadata"].setdefault("uid", str(uuid.uuid4()))
                created["metadata"].setdefault("generation", 1)
                created["metadata"].setdefault("creationTimestamp", datetime.datetime.now(datetime.UTC).isoformat())
                created["metadata"].setdefault("namespace", request.namespace)
                key = (request.resource, request.namespace, request.name)
                if key not in self._objects:
                    self._objects[key] = created
                else:
                    self._objects[key].create(created)
                created = self._objects[key].last.raw
                await self._buses[request.resource].put({"type": "ADDED", "object": created})
            self.writes.append((time.monotonic(), "create", request.resource.plural, request.name, copy.deepcopy(data)))
            return await self._respond(created)
        if request.action in (kmock.action.CREATE, kmock.action.UPDATE, kmock.action.DELETE):
            plural = getattr(request.resource, "plural", str(request.resource))
            self.writes.append((time.monotonic(), str(request.action), plural, request.name, copy.deepcopy(data)))
        if request.action == kmock.action.CREATE and isinstance(data, dict):
            meta = data.setdefault("metadata", {})
            meta.setdefault("uid", str(uuid.uuid4()))
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + meta["uid"][:5]
            meta.setdefault("creationTimestamp", datetime.datetime.now(datetime.UTC).isoformat())
            meta.setdefault("generation", 1)
            meta["resourceVersion"] = rv
        elif request.action == kmock.action.UPDATE and isinstance(data, dict):
            meta = data.setdefault("metadata", {})
            meta["resourceVersion"] = rv
            if "spec" in data and request.subresource != "status":  # a real server bumps generation on spec changes
                key = (request.resource, request.namespace, request.name)
                current = self._objects[key] if key in self._objects else None  # noqa: SIM401 (no .get)
                meta["generation"] = int((current.raw if current else {}).get("metadata", {}).get("generation", 1)) + 1
        elif request.action == kmock.action.UPDATE and isinstance(data, list):
            data.append({"op": "add", "path": "/metadata/resourceVersion", "value": rv})
        try:
            return await super()._handle(request)
        except jsonpatch.JsonPatchTestFailed as e:
            raise kmock.KubernetesError(status=422, reason="Invalid", message=str(e)) from e

    def _applies_a_missing_object(self, request: kmock.Request) -> bool:
        if request.action != kmock.action.UPDATE or request.name is None or not isinstance(request.data, dict):
            return False
        if "apply-patch" not in str(request.headers.get("Content-Type", "")):
            return False
        found = self._objects._objects.get((request.resource, request.namespace, request.name))
        return found is None or bool(found.deleted)

    async def _respond(self, payload: dict[str, Any]) -> Any:
        return web.json_response(payload, status=201)

    def _KubernetesEmulator__get_objs(self, request: kmock.Request, strict: bool) -> list[Any]:
        """kmock scans every stored object for every request; a request naming its object (a get, a
        patch, a delete) is one lookup here, so a thousand supervisors do not make each request slow."""
        objects = self._objects._objects
        if request.name is not None and (strict or request.namespace is not None):
            found = objects.get((request.resource, request.namespace, request.name))
            return [found] if found is not None else []
        return [
            obj
            for (resource, namespace, name), obj in objects.items()
            if resource == request.resource
            and (namespace == request.namespace if strict else request.namespace in (None, namespace))
            and request.name in (None, name)
        ]

    async def _serve_version(self, request: kmock.Request) -> Any:
        # A real server names the core group's version "v1"; kmock 0.8 says "/v1", which kubectl rejects.
        result = await super()._serve_version(request)
        return {**result, "groupVersion": str(result["groupVersion"]).lstrip("/")}

    async def _serve_list(self, request: kmock.Request) -> Any:
        name = selected_name(request)  # (kmock ignores field selectors)
        if name is not None and request.namespace is not None:
            items = [obj.raw for _, obj in self._named(request, name) if not obj.deleted]
            return {"metadata": {"resourceVersion": str(next(self._rv))}, "items": items}
        result = await super()._serve_list(request)
        if name is not None:
            result = {**result, "items": [i for i in result.get("items") or [] if i["metadata"].get("name") == name]}
        return {**result, "metadata": {"resourceVersion": str(next(self._rv))}}

    def _named(self, request: kmock.Request, name: str | None) -> list[tuple[Any, Any]]:
        """The one object of this resource, namespace and name, as (key, object): one lookup, as a real
        server's watch cache serves a list or watch by name."""
        key = (request.resource, request.namespace, name)
        found = self._objects._objects.get(key)
        return [(key, found)] if found is not None else []

    async def _serve_watch(self, request: kmock.Request) -> Any:
        yield b""
        wanted = request.name or selected_name(request)
        since = request.params.get("resourceVersion", "")
        since = int(since) if since.isdigit() else 0
        async with self._lock:
            marker = await self._buses[request.resource].mark()
            named = wanted is not None and request.namespace is not None
            candidates = self._named(request, wanted) if named else self.objects.items()
            objs = [
                obj.raw
                for (res, ns, name), obj in candidates
                if res == request.resource
                and not obj.deleted
                and request.namespace in (None, ns)
                and wanted in (None, name)
                and int(obj.raw.get("metadata", {}).get("resourceVersion", 0)) > since
            ]
        for raw in objs:
            yield {"type": "ADDED", "object": raw}
        async for event in marker:
            meta = event["object"].get("metadata", {})
            if request.namespace in (None, meta.get("namespace")) and wanted in (None, meta.get("name")):
                yield event


@kopf.on.login()  # test-only: point kopf at the emulator
def login_to_kmock(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
    return kopf.ConnectionInfo(server=getattr(memo, "kmock_url", None) or os.environ["KMOCK_URL"])


def declare_resources(emulator: Emulator) -> None:
    """What the operator and kopf need in discovery (kopf watches nothing without v1/namespaces)."""
    R = kmock.ResourceInfo
    emulator.resources["fairway.dev/v1alpha1/queuesupervisors"] = R(
        kind="QueueSupervisor", singular="queuesupervisor", namespaced=True, verbs=VERBS, subresources={"status"}
    )
    emulator.resources["apps/v1/deployments"] = R(
        kind="Deployment", singular="deployment", namespaced=True, verbs=VERBS, subresources={"status"}
    )
    emulator.resources["v1/configmaps"] = R(kind="ConfigMap", singular="configmap", namespaced=True, verbs=VERBS)
    emulator.resources["v1/secrets"] = R(kind="Secret", singular="secret", namespaced=True, verbs=VERBS)
    emulator.resources["v1/pods"] = R(kind="Pod", singular="pod", namespaced=True, verbs=VERBS)
    emulator.resources["v1/events"] = R(kind="Event", singular="event", namespaced=True, verbs=VERBS)
    emulator.resources["v1/namespaces"] = R(kind="Namespace", singular="namespace", namespaced=False, verbs=VERBS)
    # What a real server also serves, and kopf uses: CRDs (followed when every namespace is watched) and
    # its peering objects (with more than one operator replica).
    emulator.resources["apiextensions.k8s.io/v1/customresourcedefinitions"] = R(
        kind="CustomResourceDefinition", singular="customresourcedefinition", namespaced=False, verbs=VERBS
    )
    emulator.resources["kopf.dev/v1/kopfpeerings"] = R(
        kind="KopfPeering", singular="kopfpeering", namespaced=True, verbs=VERBS
    )
    emulator.resources["kopf.dev/v1/clusterkopfpeerings"] = R(
        kind="ClusterKopfPeering", singular="clusterkopfpeering", namespaced=False, verbs=VERBS
    )


@pytest_asyncio.fixture
async def k8s() -> AsyncIterator[Emulator]:
    async with Emulator() as emulator, kmock.Server(emulator):
        declare_resources(emulator)
        kubernetes.client.Configuration.set_default(kubernetes.client.Configuration(host=str(emulator.url).rstrip("/")))
        yield emulator


@contextlib.asynccontextmanager
async def running_operator(
    k8s: Emulator | str, *, namespaces: tuple[str, ...] = (), peering: str | None = None, **memo: Any
) -> AsyncIterator[threading.Thread]:
    """kopf in its own thread and loop: kopf cancels every task of its loop on exit. Every namespace is
    watched unless `namespaces` names some; `peering` names kopf's peering object (as with more than one
    operator replica), else the operator runs standalone."""
    stop, ready = threading.Event(), threading.Event()
    url = k8s if isinstance(k8s, str) else str(k8s.url).rstrip("/")
    settings = {"kmock_url": url, "loop_tick_s": 0.2, "status_interval_s": 1.0, "namespaces": namespaces, **memo}
    shared = kopf.Memo(**settings)
    thread = threading.Thread(
        target=lambda: asyncio.run(
            kopf.operator(
                clusterwide=not namespaces,
                namespaces=namespaces,
                standalone=peering is None,
                peering_name=peering,
                stop_flag=stop,
                ready_flag=ready,
                memo=shared,
            )
        )
    )
    thread.memo = shared  # type: ignore[attr-defined]  # (kopf shallow-copies it per object; what startup sets is shared)
    thread.start()
    try:
        assert await asyncio.to_thread(ready.wait, 10)
        yield thread
    finally:
        stop.set()
        await asyncio.to_thread(thread.join, 15)
    assert not thread.is_alive()


@pytest_asyncio.fixture
async def operator(k8s: Emulator) -> AsyncIterator[threading.Thread]:
    async with running_operator(k8s) as thread:
        yield thread


async def eventually(fn: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Poll a predicate or getter until it returns something truthy or the timeout passes."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = fn()
        result = await result if asyncio.iscoroutine(result) else result
        if result or asyncio.get_running_loop().time() > deadline:
            return result
        await asyncio.sleep(interval)


def secret(namespace: str, name: str, url: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"url": base64.b64encode(url.encode()).decode()},
    }

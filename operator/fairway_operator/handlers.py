"""kopf handlers: thin. Each calls the one reconcile pass and writes its status once.

No handler here makes kopf put a finalizer on a QueueSupervisor (no per-object timers, daemons or
delete handlers): deleting one never hangs, even with the operator down, and its children go by
ownerReference garbage collection. Scaling and status refresh are one loop over a kopf index.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import functools
import logging
import time
from typing import Any

import kopf

from fairway.plan.pools import initial_replicas
from fairway.resource.spec import API_GROUP, API_VERSION, KIND, PLURAL
from fairway_operator.desired import DEFAULT_IMAGE, MANAGED_BY, POOL_KEY
from fairway_operator.drift import drifted
from fairway_operator.kube import Kube
from fairway_operator.reconcile import Outcome, Reconciler
from fairway_operator.scaling import Scaler, Supervised
from fairway_operator.settings import configure_persistence

log = logging.getLogger("fairway.operator")
RESOURCE = (API_GROUP, API_VERSION, PLURAL)
LOOP_TICK_S = 1.0
STATUS_INTERVAL_S = 10.0
PASS_CONCURRENCY = 16


def _reconciler(memo: kopf.Memo) -> Reconciler:
    if getattr(memo, "reconciler", None) is None:
        memo.reconciler = Reconciler(
            Kube(),
            default_image=getattr(memo, "worker_image", None) or DEFAULT_IMAGE,
            metrics=getattr(memo, "metrics", None),
        )
    reconciler: Reconciler = memo.reconciler
    return reconciler


@kopf.on.startup()
async def startup(
    settings: kopf.OperatorSettings, memo: kopf.Memo, supervisors: kopf.Index, pool_deployments: kopf.Index, **_: Any
) -> None:
    configure_persistence(settings)
    settings.posting.level = logging.WARNING
    _reconciler(memo)
    memo.loop_task = asyncio.create_task(_balance_and_refresh(memo, supervisors, pool_deployments))


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    task = getattr(memo, "loop_task", None)
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@kopf.index(*RESOURCE)
def supervisors(body: kopf.Body, namespace: str, name: str, **_: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """Every supervisor's latest body, for the balancing loop and for drift checks on child events."""
    return {(namespace, name): copy.deepcopy(dict(body))}


@kopf.index("apps", "v1", "deployments", labels={MANAGED_BY: "fairway"})
def pool_deployments(body: kopf.Body, namespace: str, **_: Any) -> dict[tuple[str, str], dict[str, Any]] | None:
    """Each supervisor's pool Deployments as the watch last saw them: the periodic loop's observations."""
    owner = next((r for r in body.metadata.get("ownerReferences", []) if r.get("kind") == KIND), None)
    if owner is None:
        return None
    return {
        (namespace, owner["name"]): {
            "kind": "Deployment",
            "metadata": {
                k: copy.deepcopy(body.metadata.get(k)) for k in ("name", "labels", "annotations", "ownerReferences")
            },
            "spec": {"replicas": body.spec.get("replicas")},
            "status": {k: body.status.get(k) for k in ("availableReplicas", "readyReplicas")},
        }
    }


def _report(body: kopf.Body, outcome: Outcome) -> None:
    if not outcome.valid:
        kopf.warn(body, reason="SpecInvalid", message="; ".join(outcome.errors))


@kopf.on.resume(*RESOURCE)
@kopf.on.create(*RESOURCE)
@kopf.on.update(*RESOURCE)
async def reconcile_supervisor(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, **_: Any) -> None:
    outcome = await asyncio.to_thread(_reconciler(memo).reconcile, copy.deepcopy(dict(body)))
    if outcome.status is not None:
        patch.setdefault("status", {}).update(outcome.status)  # one write, together with kopf's annotations
    _report(body, outcome)
    if outcome.api_error:
        raise kopf.TemporaryError(outcome.api_error, delay=10)


async def _repair(memo: kopf.Memo, parent: dict[str, Any]) -> None:
    reconciler = _reconciler(memo)
    outcome = await asyncio.to_thread(reconciler.reconcile, parent)
    if outcome.status is not None:
        meta = parent["metadata"]
        await asyncio.to_thread(reconciler.kube.patch_status, meta["namespace"], meta["name"], outcome.status)


@kopf.on.event("apps", "v1", "deployments", labels={MANAGED_BY: "fairway"})
@kopf.on.event("v1", "configmaps", labels={MANAGED_BY: "fairway"})
async def child_changed(
    event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, supervisors: kopf.Index, **_: Any
) -> None:
    """A child deleted or edited by hand comes back; our own applies never count as drift."""
    owner = next((r for r in body.metadata.get("ownerReferences", []) if r.get("kind") == KIND), None)
    if owner is None:
        return
    parents = supervisors.get((body.metadata.namespace, owner["name"]))
    parent = next(iter(parents), None) if parents else None
    if parent is None or parent["metadata"].get("uid") != owner.get("uid"):
        return  # the supervisor is gone (garbage collection removes the child) or it is not ours
    if parent["metadata"].get("deletionTimestamp"):
        return
    if event.get("type") == "DELETED" or _child_drifted(_reconciler(memo), parent, dict(body)):
        await _repair(memo, parent)


def _child_drifted(reconciler: Reconciler, parent: dict[str, Any], child: dict[str, Any]) -> bool:
    report = reconciler.specs.report(parent)
    if report.spec is None:
        return False  # invalid specs leave the children alone
    rendered = reconciler.specs.children(parent, report.spec, reconciler.default_image)
    kind, name = child.get("kind"), child["metadata"]["name"]
    pool = next((c for c in rendered for obj in c.objects if obj["kind"] == kind and c.name == name), None)
    if pool is None:
        return True  # no longer desired: the pass prunes it
    if kind == "Deployment" and POOL_KEY not in (child["metadata"].get("labels") or {}):
        return True
    wanted = pool.config_map if kind == "ConfigMap" else pool.deployment
    if kind == "Deployment":
        # Replicas the balancer set are not drift; replicas outside what the spec allows are.
        current = {pool.pool.name: (child.get("spec") or {}).get("replicas") or 0}
        replicas = initial_replicas(report.spec, current)[pool.pool.name]
        wanted = {**wanted, "spec": {**wanted["spec"], "replicas": replicas}}
    return drifted(wanted, child)


async def _balance_and_refresh(memo: kopf.Memo, index: kopf.Index, children: kopf.Index) -> None:
    """Every tick (a second): the scaling poll over every resized supervisor (one pipelined read per
    Redis, fairway_operator.scaling); every STATUS_INTERVAL_S: each supervisor's status pass.

    Status passes run concurrently (PASS_CONCURRENCY at a time, in their own threads), so hundreds of
    supervisors keep their intervals; one supervisor's trouble never holds up the others. The poll
    runs in a thread of its own, one at a time: a slow Redis delays the next poll, never stacks them.
    """
    refreshed: dict[tuple[str, str], float] = {}
    reconciler = _reconciler(memo)
    scaler = Scaler(reconciler)
    pool = concurrent.futures.ThreadPoolExecutor(PASS_CONCURRENCY, thread_name_prefix="fairway-pass")
    poller = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fairway-scale")
    loop = asyncio.get_running_loop()
    running: set[tuple[str, str]] = set()
    polling: asyncio.Future[Any] | None = None

    def owned_by(key: tuple[str, str], body: dict[str, Any]) -> list[dict[str, Any]]:
        uid = body["metadata"].get("uid")
        return [
            dep
            for dep in children.get(key) or []
            if any(r.get("uid") == uid for r in dep["metadata"].get("ownerReferences") or [])
        ]

    async def visit(key: tuple[str, str], body: dict[str, Any]) -> None:
        try:
            outcome = await loop.run_in_executor(
                pool, functools.partial(reconciler.reconcile, body, apply=False, owned=owned_by(key, body))
            )
            if outcome.status is not None:
                meta = body["metadata"]
                await loop.run_in_executor(
                    pool, reconciler.kube.patch_status, meta["namespace"], meta["name"], outcome.status
                )
        except Exception as exc:
            log.warning("periodic pass for %s/%s failed: %s", key[0], key[1], exc)
        finally:
            running.discard(key)

    tasks: set[asyncio.Task[None]] = set()
    try:
        while True:
            await asyncio.sleep(getattr(memo, "loop_tick_s", LOOP_TICK_S))
            now = time.monotonic()
            resized: list[Supervised] = []
            for key in list(index):
                body = next(iter(index.get(key) or []), None)
                if body is None or body["metadata"].get("deletionTimestamp"):
                    continue
                spec = reconciler.specs.report(body).spec
                if spec is not None and spec.policy.resized:
                    resized.append(Supervised(body, spec, owned_by(key, body)))
                due_status = now - refreshed.get(key, 0) >= getattr(memo, "status_interval_s", STATUS_INTERVAL_S)
                if not due_status or key in running:
                    continue
                running.add(key)
                refreshed[key] = now
                task = asyncio.create_task(visit(key, body))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if resized and (polling is None or polling.done()):
                polling = loop.run_in_executor(poller, scaler.poll, resized)
            for gone in set(refreshed) - set(index):
                refreshed.pop(gone, None)
                reconciler.planners.forget(*gone)
                if reconciler.metrics is not None:
                    reconciler.metrics.forget(gone)
    finally:
        for task in tasks:
            task.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
        poller.shutdown(wait=False, cancel_futures=True)

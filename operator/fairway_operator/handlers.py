"""kopf handlers: thin. Each calls the one reconcile pass and writes its status once.

Every handler is an event handler (level-triggered, as controllers are): a pass compares the
supervisor's children, as the watches last saw them (fairway_operator.watched), with what it renders,
and writes only the difference; a supervisor whose children and status are as they should be costs no
request, after a restart too. kopf stores nothing on the object: no annotations, no finalizer (deleting
one never hangs, even with the operator down; its children go by ownerReference garbage collection).
Scaling, status refresh and retries are one loop over what the watches saw.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import kopf
from kubernetes.client import ApiException

from fairway.plan.autoscaler import POLL_S
from fairway.resource.spec import API_GROUP, API_VERSION, PLURAL
from fairway_operator.desired import DEFAULT_IMAGE, MANAGED_BY
from fairway_operator.health import Health
from fairway_operator.kube import Kube
from fairway_operator.reconcile import Outcome, Reconciler
from fairway_operator.scaling import Scaler, Supervised
from fairway_operator.secret_watch import SecretWatches
from fairway_operator.settings import configure_persistence, configure_scanning
from fairway_operator.watched import Watched, owner_of, supervisor_key

log = logging.getLogger("fairway.operator")
RESOURCE = (API_GROUP, API_VERSION, PLURAL)
LOOP_TICK_S = POLL_S  # the scaling poll steps every autoscaler this often, as `fairway up` and the simulator do
STATUS_INTERVAL_S = 10.0
PASS_CONCURRENCY = 16
INDEX_EVERY_S = 2.0  # which supervisors serve a queue on one Redis (for SharedQueue) is looked at this often
RETRY_DELAY_S = 10.0  # a full pass that met an API error runs again after this long


Key = tuple[str, str]  # a supervisor: (namespace, name)


@dataclass
class OperatorState:
    """What the operator keeps between events, typed: built once at start-up from the options kopf's memo
    carries (`fairway operator`'s flags, or a test's), and shared by every handler as `memo.state`."""

    reconciler: Reconciler
    watched: Watched = field(default_factory=Watched)
    namespaces: tuple[str, ...] = ()
    loop_tick_s: float = LOOP_TICK_S
    status_interval_s: float = STATUS_INTERVAL_S
    retry_delay_s: float = RETRY_DELAY_S
    retries: dict[Key, float] = field(default_factory=dict)  # a full pass due again at this time
    statuses: dict[Key, tuple[str | None, dict[str, Any]]] = field(default_factory=dict)  # last written (uid, status)
    locks: dict[Key, asyncio.Lock] = field(default_factory=dict)  # one pass at a time per supervisor
    refreshed: dict[Key, float] = field(default_factory=dict)  # when each was last observed
    loop_task: asyncio.Task[None] | None = None
    health: Health = field(default_factory=Health)  # the probes' view: the loop's last tick

    @classmethod
    def from_memo(cls, memo: kopf.Memo) -> OperatorState:
        """The options as `fairway operator` (or a test) put them on kopf's memo; each has its default."""
        kube = Kube()
        options = {name: getattr(memo, name) for name in OPTIONS if getattr(memo, name, None) is not None}
        reconciler = Reconciler(
            kube,
            SecretWatches(kube.core.api_client, asyncio.get_running_loop()),
            default_image=getattr(memo, "worker_image", None) or DEFAULT_IMAGE,
            metrics=getattr(memo, "metrics", None),
            readable_secrets=getattr(memo, "redis_secrets", None),
        )
        health = getattr(memo, "health", None) or Health()
        return cls(reconciler, namespaces=tuple(options.pop("namespaces", ())), health=health, **options)


OPTIONS = ("namespaces", "loop_tick_s", "status_interval_s", "retry_delay_s")  # memo -> OperatorState


def _state(memo: kopf.Memo) -> OperatorState:
    state: OperatorState = memo.state
    return state


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Before any handler runs: kopf's settings, and the children as they are (one list per kind)."""
    configure_persistence(settings)
    configure_scanning(settings)
    settings.posting.level = logging.WARNING
    memo.state = state = OperatorState.from_memo(memo)
    state.watched.fill(await asyncio.to_thread(state.reconciler.kube.children, state.namespaces))
    state.loop_task = asyncio.create_task(_balance_and_refresh(state))
    state.health.running()


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    state: OperatorState | None = getattr(memo, "state", None)
    if state is None:
        return
    if state.loop_task is not None:
        state.loop_task.cancel()
        await asyncio.gather(state.loop_task, return_exceptions=True)
    await state.reconciler.secrets.close()


def _report(body: Mapping[str, Any], outcome: Outcome) -> None:
    if not outcome.valid and outcome.status is not None:  # once per change, not on every event
        kopf.warn(dict(body), reason="SpecInvalid", message="; ".join(outcome.errors))


def _lock(state: OperatorState, key: Key) -> asyncio.Lock:
    """One pass at a time per supervisor (its own event, its children's, the periodic loop's): a pass
    starts from what the one before it wrote, never alongside it."""
    return state.locks.setdefault(key, asyncio.Lock())


def _latest(state: OperatorState, body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the supervisor with the newest status known: the one this operator wrote last, until
    the watch delivers it (a pass that started from an older copy would write the same status again)."""
    latest = dict(body)  # (a pass only reads it: no copy of the whole body per event)
    written = state.statuses.get(supervisor_key(body))
    if written is not None and written[0] == latest["metadata"].get("uid"):
        latest["status"] = written[1]
    return latest


def _remember(state: OperatorState, body: Mapping[str, Any], patch: dict[str, Any]) -> None:
    merged = {**(body.get("status") or {}), **patch}
    state.statuses[supervisor_key(body)] = (
        body["metadata"].get("uid"),
        {k: v for k, v in merged.items() if v is not None},
    )


async def _write_status(state: OperatorState, body: Mapping[str, Any], patch: dict[str, Any]) -> None:
    namespace, name = supervisor_key(body)
    await asyncio.to_thread(state.reconciler.kube.patch_status, namespace, name, patch)
    _remember(state, body, patch)


async def _full_pass(state: OperatorState, body: dict[str, Any], owned: list[dict[str, Any]]) -> None:
    """Apply what is missing or drifted, prune what is stale, write the status when it changed. An API
    error is retried by the periodic loop after RETRY_DELAY_S, from the watches' state at that time."""
    outcome = await asyncio.to_thread(state.reconciler.reconcile, body, owned=owned)
    key = supervisor_key(body)
    state.refreshed[key] = time.monotonic()  # (a full pass observes too: the next status pass can wait)
    if outcome.status is not None:
        try:
            await _write_status(state, body, outcome.status)
        except ApiException as exc:
            outcome.api_error = outcome.api_error or f"Kubernetes API error {exc.status}: {exc.reason}"
    _report(body, outcome)
    if outcome.api_error:
        delay = state.retry_delay_s
        log.warning("pass for %s/%s failed (%s); retrying in %.0f s", *key, outcome.api_error, delay)
        state.retries[key] = time.monotonic() + delay
    else:
        state.retries.pop(key, None)


async def _converge(state: OperatorState, body: Mapping[str, Any], *, force: bool = False) -> None:
    """The one entry to a full pass: under the supervisor's lock, from its newest known state, and only
    when something differs (`force`: a child was deleted, whatever the watches say)."""
    reconciler = state.reconciler
    async with _lock(state, supervisor_key(body)):
        parent = _latest(state, body)
        owned = state.watched.owned(parent)
        if not force and reconciler.settled(parent, owned):
            if reconciler.metrics is not None:
                reconciler.metrics.passes.labels("settled").inc()
            return
        await _full_pass(state, parent, owned)


@kopf.on.event(*RESOURCE)
async def supervisor_changed(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Level-triggered: every event of a supervisor (created, changed, seen again after a restart, or
    its own status written) compares what is with what should be, and writes only the difference.
    Nothing of kopf's is stored on the object (no annotations, no finalizer)."""
    state = _state(memo)
    watched = state.watched
    if event.get("type") == "DELETED":
        watched.supervisor_gone(supervisor_key(body))
        return
    watched.supervisor_seen(body)
    if body.metadata.get("deletionTimestamp"):
        return
    await _converge(state, body)


@kopf.on.event("apps", "v1", "deployments", labels={MANAGED_BY: "fairway"})
@kopf.on.event("v1", "configmaps", labels={MANAGED_BY: "fairway"})
async def child_changed(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A child deleted or edited by hand comes back; our own applies never count as drift."""
    state = _state(memo)
    watched = state.watched
    namespace, kind, name = str(body.metadata.namespace), str(body.get("kind")), str(body.metadata.name)
    state.reconciler.seen(namespace, kind, name)
    deleted = event.get("type") == "DELETED"
    if deleted:
        watched.child_gone(namespace, kind, name)
    else:
        watched.child_seen(body, kind)
    owner = owner_of(body)
    if owner is None:
        return
    parent = watched.supervisors.get((namespace, str(owner["name"])))
    if parent is None or parent["metadata"].get("uid") != owner.get("uid"):
        return  # the supervisor is gone (garbage collection removes the child) or it is not ours
    if parent["metadata"].get("deletionTimestamp"):
        return
    if kind == "Deployment" and not deleted and _pods_moved(body, parent):
        state.refreshed[supervisor_key(parent)] = 0.0  # a status pass at the next tick: Ready follows the pods
    await _converge(state, parent, force=deleted)


def _pods_moved(deployment: Mapping[str, Any], parent: Mapping[str, Any]) -> bool:
    """The Deployment's available pods differ from what the supervisor's status shows for its pool."""
    name = deployment["metadata"]["name"]
    available = (deployment.get("status") or {}).get("availableReplicas") or 0
    pools = (parent.get("status") or {}).get("pools") or []
    shown = next((p.get("readyReplicas") or 0 for p in pools if p.get("name") == name), None)
    return shown is not None and shown != available


async def _balance_and_refresh(state: OperatorState) -> None:
    """Every tick (a second): the scaling poll over every resized supervisor (one pipelined read per
    Redis, fairway_operator.scaling), and a full pass for each supervisor whose last one met an API
    error and is due again; every STATUS_INTERVAL_S: each supervisor's status pass.

    Status passes run concurrently (PASS_CONCURRENCY at a time, in their own threads), so hundreds of
    supervisors keep their intervals; one supervisor's trouble never holds up the others. The poll
    runs in a thread of its own, one at a time: a slow Redis delays the next poll, never stacks them.
    """
    refreshed = state.refreshed
    reconciler = state.reconciler
    scaler = Scaler(reconciler.kube, reconciler.autoscalers, reconciler, reconciler.scaled)
    pool = concurrent.futures.ThreadPoolExecutor(PASS_CONCURRENCY, thread_name_prefix="fairway-pass")
    poller = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fairway-scale")
    loop = asyncio.get_running_loop()
    running: set[tuple[str, str]] = set()
    polling: asyncio.Future[Any] | None = None
    retries = state.retries
    watched = state.watched
    index = watched.supervisors

    async def visit(key: tuple[str, str], body: dict[str, Any]) -> None:
        try:
            async with _lock(state, key):
                latest = _latest(state, body)
                outcome = await loop.run_in_executor(
                    pool,
                    functools.partial(
                        reconciler.reconcile, latest, apply=False, owned=watched.owned(latest, "Deployment")
                    ),
                )
                if outcome.status is not None:
                    await _write_status(state, latest, outcome.status)
        except Exception as exc:
            log.warning("periodic pass for %s/%s failed: %s", key[0], key[1], exc)
        finally:
            running.discard(key)

    tasks: set[asyncio.Task[None]] = set()
    indexed_at = -INDEX_EVERY_S
    indexing: asyncio.Future[Any] | None = None
    try:
        # Once before any status pass: what each pass says of shared queues is whole from the start.
        await loop.run_in_executor(pool, reconciler.index_served, list(index.values()))
        indexed_at = time.monotonic()
        while True:
            await asyncio.sleep(state.loop_tick_s)
            state.health.ticked()
            now = time.monotonic()
            if now - indexed_at >= INDEX_EVERY_S and (indexing is None or indexing.done()):
                # (in a thread: a Secret's URL is read from its watch, which this loop serves)
                indexing = loop.run_in_executor(pool, reconciler.index_served, list(index.values()))
                indexed_at = now
            for key in watched.unconfirmed():  # listed at start-up, gone before the watch began
                retries[key] = now
            resized: list[Supervised] = []
            named: set[tuple[str, str]] = set()  # the Redis URLs' Secrets, (namespace, name)
            for key in list(index):
                body = index.get(key)
                if body is None or body["metadata"].get("deletionTimestamp"):
                    continue
                spec = reconciler.specs.report(body).spec
                if spec is not None and spec.redis.secret_ref is not None:
                    named.add((key[0], spec.redis.secret_ref.name))
                if spec is not None and spec.policy.resized:
                    resized.append(Supervised(body, spec, watched.owned(body, "Deployment")))
                if key in retries and retries[key] <= now and key not in running:
                    running.add(key)
                    retries[key] = now + state.retry_delay_s  # (again if it fails)
                    task = asyncio.create_task(_retry(state, running, body))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    continue
                due_status = now - refreshed.get(key, 0) >= state.status_interval_s
                if not due_status or key in running:
                    continue
                running.add(key)
                refreshed[key] = now
                task = asyncio.create_task(visit(key, body))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            reconciler.secrets.retain(named)
            if resized and (polling is None or polling.done()):
                polling = loop.run_in_executor(poller, scaler.poll, resized)
            for gone in (set(refreshed) | set(retries) | set(state.statuses)) - set(index):
                refreshed.pop(gone, None)
                retries.pop(gone, None)
                state.statuses.pop(gone, None)
                state.locks.pop(gone, None)
                reconciler.forget(gone)
                if reconciler.metrics is not None:
                    reconciler.metrics.forget(gone)
    finally:
        for task in tasks:
            task.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
        poller.shutdown(wait=False, cancel_futures=True)


async def _retry(state: OperatorState, running: set[Key], body: dict[str, Any]) -> None:
    try:
        await _converge(state, body, force=True)
    finally:
        running.discard(supervisor_key(body))

"""The operator's scaling poll: every second, every resized supervisor's demand in one pipelined
round trip per Redis, the planner stepped, and only the pools that change patched.

A scale-down first sets `controller.kubernetes.io/pod-deletion-cost` on the pool's pods from the busy
slots their workers report in their heartbeats (a pod with no live worker, or an idle one, costs
0), so the ReplicaSet controller removes idle pods before busy ones. Each change emits one Event
(reason `Scaled`) on the QueueSupervisor. A supervisor whose Redis cannot be read is held where it is:
no decision is made on missing figures (the status pass says why in its Degraded condition).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fairway.plan.load import pool_samples, served_names
from fairway.plan.scaling import Change
from fairway.queue.access.demand import DemandReader
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import RedisClient
from fairway.resource.spec import QueueSupervisorSpec
from fairway_operator.conditions import now_iso
from fairway_operator.desired import POOL_KEY, SUPERVISOR_LABEL, pool_selector
from fairway_operator.watched import supervisor_key

log = logging.getLogger("fairway.operator")
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@dataclass(frozen=True)
class Supervised:
    """One resized supervisor as the poll sees it: its latest body, spec and pool Deployments."""

    body: Mapping[str, Any]
    spec: QueueSupervisorSpec
    deployments: Sequence[Mapping[str, Any]]

    @property
    def key(self) -> tuple[str, str]:
        return supervisor_key(self.body)

    def replicas(self) -> dict[str, int]:
        return {_pool_of(d): (d.get("spec") or {}).get("replicas") or 0 for d in self.deployments}

    def starting(self) -> dict[str, int]:
        """Pods each pool asked for that are not ready yet (the Deployment's status, which the
        Deployment controller keeps; before it has written any, every asked-for pod is starting)."""
        out = {}
        for d in self.deployments:
            wanted = (d.get("spec") or {}).get("replicas") or 0
            out[_pool_of(d)] = max(0, wanted - ((d.get("status") or {}).get("readyReplicas") or 0))
        return out

    def deployment_of(self, pool: str) -> str | None:
        return next((d["metadata"]["name"] for d in self.deployments if _pool_of(d) == pool), None)


def _pool_of(deployment: Mapping[str, Any]) -> str:
    return str((deployment["metadata"].get("annotations") or {}).get(POOL_KEY, ""))


def deletion_costs(pods: Sequence[Mapping[str, Any]], beats: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Pod name -> deletion cost (pure): the busy slots of the pod's live workers; 0 for a pod with
    none (starting, or idle), so those go first."""
    busy: dict[str, int] = {}
    for beat in beats:
        pod = str(beat.get("name", "")).rsplit(":", 1)[0]
        try:
            busy[pod] = busy.get(pod, 0) + int(beat.get("busy") or 0)
        except (TypeError, ValueError):
            continue
    return {p["metadata"]["name"]: busy.get(p["metadata"]["name"], 0) for p in pods}


class Scaler:
    def __init__(self, reconciler: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.reconciler = reconciler  # (fairway_operator.reconcile.Reconciler: its Kube, Redis views, planners)
        self.clock = clock
        self._readers: dict[int, DemandReader] = {}

    def poll(self, supervised: Sequence[Supervised]) -> list[tuple[tuple[str, str], Change]]:
        """One poll over every resized supervisor; the changes made."""
        groups: dict[int, tuple[RedisClient, list[Supervised]]] = {}
        for sup in supervised:
            try:
                client = self.reconciler.redis_client(sup.body["metadata"].get("namespace", "default"), sup.spec)
            except Exception as exc:  # a Secret that cannot be read: held; the status pass says why
                log.debug("no Redis for %s/%s: %s", *sup.key, exc)
                continue
            groups.setdefault(id(client), (client, []))[1].append(sup)
        made: list[tuple[tuple[str, str], Change]] = []
        for client, members in groups.values():
            try:
                reader = self._readers.get(id(client))
                if reader is None or reader.client is not client:
                    reader = self._readers[id(client)] = DemandReader(client)
                rows = reader.read([n for sup in members for n in served_names(sup.spec)])
            except Exception as exc:  # Redis down: no decision on missing figures
                log.debug("demand poll failed: %s", exc)
                continue
            now = self.clock()
            for sup in members:
                try:
                    made += [(sup.key, c) for c in self._step(sup, client, rows, now)]
                except Exception as exc:
                    log.warning("scaling %s/%s failed: %s", *sup.key, exc)
        return made

    def _step(self, sup: Supervised, client: RedisClient, rows: Mapping[str, Any], now: float) -> list[Change]:
        namespace, name = sup.key
        stats = [rows[n] for n in served_names(sup.spec) if n in rows]
        starting = sup.starting()
        samples = {
            pool: replace(sample, starting=starting.get(pool, 0))
            for pool, sample in pool_samples(sup.spec, stats, self.reconciler.runtimes.get(sup.key)).items()
        }
        current = sup.replicas()
        planner = self.reconciler.planners.get((namespace, name, sup.body["metadata"].get("uid")), sup.spec, current)
        changes = [c for c in planner.step(now, samples) if sup.deployment_of(c.pool)]
        if any(c.after < c.before for c in changes):
            self._spare_busy_pods(namespace, sup, client, [c.pool for c in changes if c.after < c.before])
        kube = self.reconciler.kube
        for change in changes:
            deployment = sup.deployment_of(change.pool)
            assert deployment is not None
            kube.scale(namespace, deployment, change.after)
            self.reconciler.record_scaled(sup.key, change.pool, now_iso(), change.message)
            try:
                kube.event(sup.body, "Scaled", change.message)
            except Exception as exc:  # an Event is for people; the change itself has been made
                log.warning("could not post the Scaled event for %s/%s: %s", namespace, name, exc)
        return changes

    def _spare_busy_pods(self, namespace: str, sup: Supervised, client: RedisClient, pools: Sequence[str]) -> None:
        """Before lowering these pools' replicas: each of their pods' deletion cost from its workers'
        busy slots (idle pods cheapest), so the ReplicaSet controller removes idle pods first."""
        beats = Inspector(client).workers()
        kube = self.reconciler.kube
        for pool in pools:
            deployment = next(d for d in sup.deployments if _pool_of(d) == pool)
            labels = deployment["metadata"].get("labels") or {}
            if SUPERVISOR_LABEL not in labels or POOL_KEY not in labels:
                continue  # not labelled as ours: its pods cannot be told apart
            pods = kube.pods(namespace, pool_selector(labels))
            costs = deletion_costs(pods, beats)
            for pod in pods:
                name = pod["metadata"]["name"]
                if (pod["metadata"].get("annotations") or {}).get(DELETION_COST) != str(costs[name]):
                    kube.annotate_pod(namespace, name, DELETION_COST, str(costs[name]))

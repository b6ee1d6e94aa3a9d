"""The operator's scaling poll: every POLL_S, every resized supervisor's demand in one pipelined
round trip per Redis, its autoscaler stepped (fairway.plan.autoscaler, the same one `fairway up` and
`fairway simulate` step), and the changes carried out here: Kubernetes effects only.

A scale-down first sets `controller.kubernetes.io/pod-deletion-cost` on the pool's pods from the busy
slots their workers report in their heartbeats (a pod with no live worker, or an idle one, costs
0), so the ReplicaSet controller removes idle pods before busy ones. Each change is patched, emits one
Event (reason `Scaled`) on the QueueSupervisor and is kept for the next status pass. A supervisor whose
Redis cannot be read is held where it is: no decision is made on missing figures (the status pass
says why in its Degraded condition).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fairway.plan.autoscaler import Autoscaler, Autoscalers
from fairway.plan.scaling import Change
from fairway.queue.access.demand import DemandReader
from fairway.queue.access.figures import QueueStats
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import RedisClient
from fairway.resource.spec import QueueSupervisorSpec
from fairway_operator.conditions import now_iso
from fairway_operator.desired import POOL_KEY, SUPERVISOR_LABEL, pool_selector
from fairway_operator.kube import Kube
from fairway_operator.report import Scaled
from fairway_operator.watched import supervisor_key

log = logging.getLogger("fairway.operator")
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


class RedisSource(Protocol):
    """Where a supervisor's Redis client comes from (the reconciler's shared views)."""

    def redis_client(self, namespace: str, spec: QueueSupervisorSpec) -> RedisClient: ...


class DemandSource(Protocol):
    """One Redis's demand and runtimes (a DemandReader)."""

    def read(self, names: Iterable[str]) -> dict[str, QueueStats]: ...

    def runtimes(self, names: Sequence[str]) -> dict[str, float | None]: ...


class ScaledLog:
    """The changes the poll made, per supervisor and pool, for the next status pass to show."""

    def __init__(self) -> None:
        self._scaled: dict[tuple[str, str], dict[str, Scaled]] = {}
        self._lock = threading.Lock()

    def record(self, key: tuple[str, str], pool: str, when: str, message: str) -> None:
        with self._lock:
            self._scaled.setdefault(key, {})[pool] = Scaled(when, message)

    def take(self, key: tuple[str, str]) -> dict[str, Scaled]:
        with self._lock:
            return self._scaled.pop(key, {})


@dataclass(frozen=True)
class Supervised:
    """One resized supervisor as the poll sees it: its latest body, spec and pool Deployments."""

    body: Mapping[str, Any]
    spec: QueueSupervisorSpec
    deployments: Sequence[Mapping[str, Any]]

    @property
    def key(self) -> tuple[str, str]:
        return supervisor_key(self.body)

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"].get("namespace", "default"))

    @property
    def uid(self) -> str | None:
        """Its identity: a supervisor deleted and created again under its name is another one."""
        uid = self.body["metadata"].get("uid")
        return None if uid is None else str(uid)

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
    def __init__(
        self,
        kube: Kube,
        autoscalers: Autoscalers,
        redis: RedisSource,
        scaled: ScaledLog,
        clock: Callable[[], float] = time.monotonic,
        demand_of: Callable[[RedisClient], DemandSource] = DemandReader,
    ) -> None:
        self.kube = kube
        self.autoscalers = autoscalers
        self.redis = redis
        self.scaled = scaled
        self.clock = clock
        self.demand_of = demand_of  # one reader per Redis, kept between polls (its scripts)
        self._readers: dict[int, tuple[RedisClient, DemandSource]] = {}

    def poll(self, supervised: Sequence[Supervised]) -> list[tuple[tuple[str, str], Change]]:
        """One poll over every resized supervisor; the changes made."""
        groups: dict[int, tuple[RedisClient, list[Supervised]]] = {}
        for sup in supervised:
            try:
                client = self.redis.redis_client(sup.namespace, sup.spec)
            except Exception as exc:  # a Secret that cannot be read: held; the status pass says why
                log.debug("no Redis for %s/%s: %s", *sup.key, exc)
                continue
            groups.setdefault(id(client), (client, []))[1].append(sup)
        made: list[tuple[tuple[str, str], Change]] = []
        for client, members in groups.values():
            scalers = [(sup, self.autoscalers.get(sup.key, sup.spec, sup.replicas(), sup.uid)) for sup in members]
            try:
                reader = self._reader(client)
                rows = reader.read([n for _, a in scalers for n in a.served])
                now = self.clock()
                self._note_runtimes(reader, [a for _, a in scalers if a.runtimes_due(now)], now)
            except Exception as exc:  # Redis down: no decision on missing figures
                log.debug("demand poll failed: %s", exc)
                continue
            for sup, autoscaler in scalers:
                try:
                    made += [(sup.key, c) for c in self._step(sup, autoscaler, client, rows, now)]
                except Exception as exc:
                    log.warning("scaling %s/%s failed: %s", *sup.key, exc)
        return made

    def _reader(self, client: RedisClient) -> DemandSource:
        found = self._readers.get(id(client))
        if found is None or found[0] is not client:
            found = self._readers[id(client)] = (client, self.demand_of(client))
        return found[1]

    @staticmethod
    def _note_runtimes(reader: DemandSource, due: Sequence[Autoscaler], now: float) -> None:
        """The runtimes of every autoscaler due to read them, in one read of their names."""
        if not due:
            return
        runtimes = reader.runtimes(sorted({n for a in due for n in a.served}))
        for autoscaler in due:
            autoscaler.note_runtimes({n: runtimes.get(n) for n in autoscaler.served}, now)

    def _step(
        self, sup: Supervised, autoscaler: Autoscaler, client: RedisClient, rows: Mapping[str, QueueStats], now: float
    ) -> list[Change]:
        stats = [rows[n] for n in autoscaler.served if n in rows]
        decided = autoscaler.poll(autoscaler.demand(stats), sup.replicas(), sup.starting(), now)
        changes = [c for c in decided if sup.deployment_of(c.pool)]
        if any(c.after < c.before for c in changes):
            self._spare_busy_pods(sup, client, [c.pool for c in changes if c.after < c.before])
        for change in changes:
            deployment = sup.deployment_of(change.pool)
            assert deployment is not None
            self.kube.scale(sup.namespace, deployment, change.after)
            self.scaled.record(sup.key, change.pool, now_iso(), change.message)
            try:
                self.kube.event(sup.body, "Scaled", change.message)
            except Exception as exc:  # an Event is for people; the change itself has been made
                log.warning("could not post the Scaled event for %s/%s: %s", *sup.key, exc)
        return changes

    def _spare_busy_pods(self, sup: Supervised, client: RedisClient, pools: Sequence[str]) -> None:
        """Before lowering these pools' replicas: each of their pods' deletion cost from its workers'
        busy slots (idle pods cheapest), so the ReplicaSet controller removes idle pods first."""
        beats = Inspector(client).workers()
        kube, namespace = self.kube, sup.namespace
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

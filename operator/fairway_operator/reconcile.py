"""One reconcile pass for one QueueSupervisor: apply children, prune the stale ones, observe, report.

Every trigger (create, update, resume, a child deleted or edited, the periodic loop) runs this same
pass, so there is one path to test. It returns the status to write (or None when nothing changed);
the caller writes it once. A spec is validated, and its children rendered, once per distinct spec
(`SpecCache`), however many child events and periodic passes look at it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiException

from fairway.plan.autoscaler import Autoscalers
from fairway.plan.load import pool_samples, served_names
from fairway.plan.pools import initial_replicas
from fairway.plan.scaling import PoolSample
from fairway.queue.access.admin import Admin
from fairway.queue.access.figures import QueueStats, TenantFigures
from fairway.queue.access.inspector import Inspector
from fairway.queue.access.schedules import tick_spec
from fairway.queue.connection import CONNECTION_ERRORS, RedisClient, connect
from fairway.resource.manifests import ValidationReport, validate_spec
from fairway.resource.schedules import ScheduleView
from fairway.resource.spec import QueueSupervisorSpec
from fairway_operator.conditions import BAD_REDIS_URL, REDIS_UNREACHABLE, SECRET_FORBIDDEN, SECRET_UNREADABLE, now_iso
from fairway_operator.desired import DEFAULT_IMAGE, POOL_KEY, PoolChildren, all_objects, desired
from fairway_operator.drift import drifted
from fairway_operator.kube import Kube, names_of
from fairway_operator.metrics import OperatorMetrics
from fairway_operator.report import Observations, PoolObservation, build_status, parse_status
from fairway_operator.scaling import ScaledLog
from fairway_operator.secret_watch import SecretForbidden, SecretUnreadable, SecretWatches

REDIS_ERRORS: tuple[type[BaseException], ...] = (*CONNECTION_ERRORS, OSError)
REPUSH_S = 60.0  # pauses and tenant settings are pushed to Redis again after this long, changed or not
SHARED_NAMED = 3  # others named per shared queue in the status (the rest are counted)
SPEC_CACHE_SIZE = 4096  # specs remembered; far more than the supervisors one operator watches


class SecretNotGranted(Exception):
    """The supervisor's Redis Secret is not among those the operator was told it may read."""


@dataclass
class Outcome:
    status: dict[str, Any] | None  # the merge patch to write; None: unchanged, write nothing
    valid: bool
    errors: list[str] = field(default_factory=list)
    api_error: str | None = None


@dataclass(frozen=True)
class RedisReading:
    """What one pass read from a supervisor's Redis, or why it could not (`trouble`: reason, message)."""

    stats: list[QueueStats] | None = None
    figures: list[TenantFigures] | None = None
    schedules: list[ScheduleView] | None = None
    trouble: tuple[str, str] | None = None


class RedisViews:
    """One client per Redis URL, shared by every supervisor that uses it; pipelined reads only."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, bool], RedisClient] = {}
        self._lock = threading.Lock()

    def client(self, url: str, cluster: bool) -> RedisClient:
        with self._lock:
            key = (url, cluster)
            if key not in self._clients:
                self._clients[key] = connect(url, cluster, socket_timeout_s=5)
            return self._clients[key]


class SpecCache:
    """A supervisor's validated spec and rendered children, keyed by its identity and the spec itself
    (not the generation, which a server may not bump for every change)."""

    def __init__(self) -> None:
        self._reports: dict[tuple[Any, ...], ValidationReport] = {}
        self._children: dict[tuple[Any, ...], list[PoolChildren]] = {}
        # Per supervisor, the spec object last keyed and its key: the periodic loop asks again for the
        # same body every second, and status passes for copies of it sharing its spec (handlers._latest);
        # serializing a thousand specs a second showed in profiles.
        self._last: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...]]] = {}
        self._lock = threading.Lock()

    def _key(self, body: Mapping[str, Any]) -> tuple[Any, ...]:
        meta = body["metadata"]
        who = (meta.get("uid"), meta["name"], meta.get("namespace"))
        spec = body.get("spec")
        last = self._last.get(who)
        if last is not None and last[0] is spec and spec is not None:
            return last[1]
        key = (*who, json.dumps(spec, sort_keys=True, default=str))
        with self._lock:
            self._last[who] = (spec, key)  # (holding the spec: its id cannot be reused while it is here)
        return key

    def report(self, body: Mapping[str, Any]) -> ValidationReport:
        key = self._key(body)
        with self._lock:
            found = self._reports.get(key)
        if found is None:
            found = validate_spec(body.get("spec"), body["metadata"]["name"])
            with self._lock:
                if len(self._reports) >= SPEC_CACHE_SIZE:
                    self._reports.clear()
                    self._children.clear()
                self._reports[key] = found
        return found

    def forget(self, namespace: str, name: str) -> None:
        with self._lock:
            for who in [w for w in self._last if w[1:] == (name, namespace)]:
                del self._last[who]

    def children(
        self, body: Mapping[str, Any], spec: QueueSupervisorSpec, image: str, current: Mapping[str, int]
    ) -> list[PoolChildren]:
        """The rendered children, their replicas kept where the balancer put them (`current`, by pool)
        within the spec's limits. Rendered once per spec; only the replicas differ by `current`."""
        key = (*self._key(body), image)
        with self._lock:
            found = self._children.get(key)
        if found is None:
            found = desired(body, spec, {}, image)
            with self._lock:
                self._children[key] = found
        wanted = initial_replicas(spec, current)
        return [c if c.replicas == wanted[c.pool.name] else c.with_replicas(wanted[c.pool.name]) for c in found]


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        secrets: SecretWatches,
        redis: RedisViews | None = None,
        default_image: str = DEFAULT_IMAGE,
        metrics: OperatorMetrics | None = None,
        readable_secrets: frozenset[str] | None = None,
    ) -> None:
        self.kube = kube
        self.secrets = secrets  # the Redis URLs' Secrets, each followed by a watch
        # The Secret names RBAC lets the operator read (the chart's redisSecrets.names); None: any.
        self.readable_secrets = readable_secrets
        self.redis = redis or RedisViews()
        self.default_image = default_image
        self.metrics = metrics
        self.specs = SpecCache()
        self.autoscalers = Autoscalers()  # stepped by the scaling poll (scaling.Scaler)
        self.scaled = ScaledLog()  # what the scaling poll changed, for the next status pass
        # (Redis, served name) -> the supervisors serving it (index_served, from the loop): _shared reads it.
        self._served_index: dict[tuple[tuple[str, bool], str], list[tuple[str, str]]] = {}
        self._pushed: dict[tuple[str, str], tuple[QueueSupervisorSpec, RedisClient, float]] = {}
        # Children applied whose watch event has not come back yet: (namespace, kind, name) -> what was
        # applied. A pass that runs before the watch catches up does not apply them again.
        self._in_flight: dict[tuple[str, str, str], dict[str, Any]] = {}
        # Children last found as rendered: (namespace, kind, name) -> (the rendered object, the watch's
        # copy) compared; dropped at the child's next event.
        self._agreed: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        self._in_flight_lock = threading.Lock()

    # -- Redis -----------------------------------------------------------------------------------

    def redis_client(self, namespace: str, spec: QueueSupervisorSpec) -> RedisClient:
        return self._redis(namespace, spec)

    def redis_url(self, namespace: str, spec: QueueSupervisorSpec) -> str:
        if spec.redis.url:
            return spec.redis.url
        ref = spec.redis.secret_ref
        assert ref is not None  # the spec rules require exactly one of url and secretRef
        if self.readable_secrets is not None and ref.name not in self.readable_secrets:
            raise SecretNotGranted(ref.name)  # never requested: the API server would refuse it
        return self.secrets.value(namespace, ref.name, ref.key)

    def index_served(self, supervisors: Iterable[Mapping[str, Any]]) -> None:
        """Which supervisors serve each name on each Redis, from every supervisor the watches hold (so the
        answer is whole from the first pass after a restart, and the same on every pass): `_shared`
        reads it. The Redis is told apart by its URL (kept in memory only, never shown)."""
        index: dict[tuple[tuple[str, bool], str], list[tuple[str, str]]] = {}
        for body in supervisors:
            spec = self.specs.report(body).spec
            if spec is None or body["metadata"].get("deletionTimestamp"):
                continue
            key = (body["metadata"].get("namespace", "default"), body["metadata"]["name"])
            try:
                where = (self.redis_url(key[0], spec), spec.redis.cluster)
            except Exception:  # a Secret not readable yet: its status says so; it shares nothing known
                continue
            for name in served_names(spec):
                index.setdefault((where, name), []).append(key)
        self._served_index = index

    def _shared(self, key: tuple[str, str], spec: QueueSupervisorSpec) -> str | None:
        """Which of this supervisor's served names another supervisor serves on the same Redis, in words
        (None: none). Two pools taking from one queue split its jobs by chance, each with its own
        handlers and settings; both statuses say so (at most SHARED_NAMED others named per name)."""
        where = (self.redis_url(key[0], spec), spec.redis.cluster)
        parts = []
        for name in served_names(spec):
            others = sorted(k for k in self._served_index.get((where, name), ()) if k != key)
            if others:
                named = ", ".join(f"{ns}/{n}" for ns, n in others[:SHARED_NAMED])
                more = f" and {len(others) - SHARED_NAMED} more" if len(others) > SHARED_NAMED else ""
                parts.append(f"{name} also served by {named}{more}")
        if not parts:
            return None
        return (
            f"on the same Redis: {'; '.join(parts)}: their jobs go to whichever supervisor's workers take them "
            "first; give each supervisor its own queues (or its own Redis)"
        )

    def forget(self, key: tuple[str, str]) -> None:
        """A supervisor is gone: drop what was kept for it."""
        self.autoscalers.forget(key)
        self.specs.forget(*key)
        self._pushed.pop(key, None)
        self.scaled.take(key)

    def _push_due(self, key: tuple[str, str], spec: QueueSupervisorSpec, client: RedisClient) -> bool:
        """(The spec object is SpecCache's, one per distinct spec: another object is another spec.)"""
        pushed = self._pushed.get(key)
        return (
            pushed is None
            or pushed[0] is not spec
            or pushed[1] is not client
            or time.monotonic() - pushed[2] > REPUSH_S
        )

    def _redis(self, namespace: str, spec: QueueSupervisorSpec) -> RedisClient:
        return self.redis.client(self.redis_url(namespace, spec), spec.redis.cluster)

    def observe_redis(self, namespace: str, name: str, spec: QueueSupervisorSpec) -> RedisReading:
        """Push pauses and the tenant group's settings (when the spec changed, and every REPUSH_S in case
        Redis lost them), tick the schedules (so a pool scaled to zero still gets their jobs, within their
        grace), read queue figures, tenant figures and the schedules' runs; only `trouble` when they
        cannot be read, its reason one of conditions.py's (a forbidden Secret is not an outage)."""
        try:
            client = self._redis(namespace, spec)
            if self._push_due((namespace, name), spec, client):
                Admin(client).push_spec(spec)
                self._pushed[(namespace, name)] = (spec, client, time.monotonic())
            inspector = Inspector(client)
            names = served_names(spec)
            stats = inspector.stats(names) if names else []
            figures = inspector.tenant_figures(spec.tenants.queue_prefix) if spec.tenants else None
            return RedisReading(stats, figures, tick_spec(client, spec))
        except REDIS_ERRORS as exc:
            return RedisReading(trouble=(REDIS_UNREACHABLE, f"Redis is unreachable: {exc}"))
        except SecretNotGranted as exc:
            message = (
                f"the operator may not read Secret {exc.args[0]!r}: add it to the chart's redisSecrets.names "
                "(the operator's --redis-secrets), or set spec.redis.url"
            )
            return RedisReading(trouble=(SECRET_FORBIDDEN, message))
        except SecretUnreadable as exc:
            reason = SECRET_FORBIDDEN if isinstance(exc, SecretForbidden) else SECRET_UNREADABLE
            return RedisReading(trouble=(reason, f"cannot read the Redis URL from its Secret: {exc}"))
        except ValueError as exc:  # not a Redis URL at all; the message of a parser may quote it, so not shown
            message = f"{_url_source(spec)} is not a usable Redis URL ({type(exc).__name__}); {_URL_FIX}"
            return RedisReading(trouble=(BAD_REDIS_URL, message))

    # -- the pass --------------------------------------------------------------------------------

    def seen(self, namespace: str, kind: str, name: str) -> None:
        """A child's watch event arrived: from now on the watch's copy of it is the truth."""
        with self._in_flight_lock:
            self._in_flight.pop((namespace, kind, name), None)
            self._agreed.pop((namespace, kind, name), None)

    def _missing_or_drifted(self, objects: list[dict[str, Any]], owned: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rendered objects to apply: missing or drifted (drift.py), and not applied already with
        the watch yet to show it. A child found to agree is not compared again until either side is
        another object (every child event checks all of a supervisor's children)."""
        found = {(o["kind"], o["metadata"]["name"]): o for o in owned}
        out = []
        for obj in objects:
            key = (obj["metadata"]["namespace"], obj["kind"], obj["metadata"]["name"])
            current = found.get(key[1:])
            with self._in_flight_lock:
                agreed, applied = self._agreed.get(key), self._in_flight.get(key)
            if current is not None and agreed is not None and agreed[0] is obj and agreed[1] is current:
                continue
            if current is not None and not drifted(obj, current):
                with self._in_flight_lock:
                    self._agreed[key] = (obj, current)  # (holding both: neither id can be reused meanwhile)
            elif applied != obj:
                out.append(obj)
        return out

    def settled(self, body: Mapping[str, Any], owned: list[dict[str, Any]], *, status: bool = True) -> bool:
        """Nothing to write: every child there and as rendered, none stale, and (`status`) the status
        written for this generation. Reads only what the caller passes (the watches' state)."""
        meta = body["metadata"]
        if status and (body.get("status") or {}).get("observedGeneration") != meta.get("generation"):
            return False
        spec = self.specs.report(body).spec
        if spec is None:
            return True  # an invalid spec leaves the children alone
        objects = all_objects(self.specs.children(body, spec, self.default_image, replicas_by_pool(owned)))
        return not self._missing_or_drifted(objects, owned) and names_of(owned) <= names_of(objects)

    def reconcile(
        self,
        body: Mapping[str, Any],
        *,
        owned: list[dict[str, Any]],
        apply: bool = True,
    ) -> Outcome:
        """The whole pass (`apply`), or, from the periodic loop, observe + rebalance + scale only.

        `owned`: the supervisor's children as the operator's watches hold them (watched.py), so a pass
        reads nothing from the API server. A full pass applies only the children that are missing or
        differ from what it renders.
        """
        if self.metrics is None:
            return self._pass(body, apply=apply, owned=owned)
        started = time.perf_counter()
        try:
            return self._pass(body, apply=apply, owned=owned)
        finally:
            self.metrics.passes.labels("full" if apply else "observe").inc()
            self.metrics.latency.observe(time.perf_counter() - started)

    def _pass(self, body: Mapping[str, Any], *, apply: bool, owned: list[dict[str, Any]]) -> Outcome:
        meta = body["metadata"]
        name, namespace = meta["name"], meta.get("namespace", "default")
        previous_raw = dict(body.get("status") or {})
        previous = parse_status(previous_raw)
        report = self.specs.report(body)
        if not report.valid or report.spec is None:
            status = build_status(Observations(meta.get("generation"), report), previous, now_iso())
            return Outcome(_changed(previous_raw, status.to_api()), False, [str(p) for p in report.errors])
        spec = report.spec
        api_error = None
        pool_obs: list[PoolObservation] = []
        scaled = self.scaled.take((namespace, name))
        try:
            deployments = [o for o in owned if o["kind"] == "Deployment"]
            current = replicas_by_pool(deployments)
            ready = {o["metadata"]["name"]: (o.get("status") or {}).get("availableReplicas") or 0 for o in deployments}
            reading = self.observe_redis(namespace, name, spec)
            stats, figures, redis_trouble, schedules = (
                reading.stats,
                reading.figures,
                reading.trouble,
                reading.schedules,
            )
            shared = self._shared((namespace, name), spec) if redis_trouble is None else None
            samples: dict[str, PoolSample] = pool_samples(spec, stats) if stats is not None else {}
            children = self.specs.children(body, spec, self.default_image, current)
            if apply:
                self._apply(namespace, meta.get("uid"), children, owned)
            else:
                existing = {o["metadata"]["name"] for o in deployments}
                for child in children:
                    # A missing child is the full pass's job (drift repair or resume); replicas
                    # outside the spec's limits (the limits changed) are brought inside them.
                    if child.name in existing and child.replicas != current.get(child.pool.name):
                        self.kube.scale(namespace, child.name, child.replicas)
            pool_obs = [
                PoolObservation(c.pool, c.name, c.replicas, ready.get(c.name, 0), samples.get(c.pool.name))
                for c in children
            ]
        except ApiException as exc:
            api_error = f"Kubernetes API error {exc.status}: {exc.reason}"
            stats, figures, redis_trouble, shared, schedules = None, None, None, None, None
        redis_error = redis_trouble[1] if redis_trouble else None
        observations = Observations(
            meta.get("generation"),
            report,
            pool_obs,
            stats,
            figures,
            redis_error,
            api_error,
            weights=spec.effective_weights(),
            scaled=scaled,
            redis_reason=redis_trouble[0] if redis_trouble else REDIS_UNREACHABLE,
            shared=shared,
            schedules=schedules,
        )
        status = build_status(observations, previous, now_iso())
        if self.metrics is not None:
            for source, error in (("kubernetes", api_error), ("redis", redis_error)):
                if error:
                    self.metrics.errors.labels(source).inc()
            if stats is not None:
                top_n = spec.tenants.metrics_top_n if spec.tenants else 0
                self.metrics.observe((namespace, name), status.queues, figures, top_n)
        return Outcome(_changed(previous_raw, status.to_api()), True, api_error=api_error)

    def _apply(
        self, namespace: str, uid: str | None, children: list[PoolChildren], owned: list[dict[str, Any]]
    ) -> None:
        objects = all_objects(children)
        ours = [
            o for o in owned if not uid or any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])
        ]
        for obj in self._missing_or_drifted(objects, ours):  # (a same-named child of another owner becomes ours)
            self.kube.apply(obj)
            with self._in_flight_lock:
                self._in_flight[(namespace, obj["kind"], obj["metadata"]["name"])] = obj
        keep = names_of(objects)
        for obj in ours:
            if (obj["kind"], obj["metadata"]["name"]) not in keep:
                self.kube.delete(obj["kind"], namespace, obj["metadata"]["name"])


def replicas_by_pool(owned: list[dict[str, Any]]) -> dict[str, int]:
    """Each pool's replicas as its Deployment has them (the balancer's, or a person's)."""
    return {
        (o["metadata"].get("annotations") or {}).get(POOL_KEY, ""): (o.get("spec") or {}).get("replicas") or 0
        for o in owned
        if o.get("kind") == "Deployment"
    }


_URL_FIX = "write it as redis://host:6379/0, rediss://... or unix:///path"


def _url_source(spec: QueueSupervisorSpec) -> str:
    ref = spec.redis.secret_ref
    return f"the value of key {ref.key!r} in Secret {ref.name!r}" if ref else "spec.redis.url"


def _changed(previous: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch that turns `previous` into `status`, or None when they are equal."""
    if all(previous.get(k) == v for k, v in status.items()) and set(previous) <= set(status):
        return None
    patch: dict[str, Any] = dict(status)
    for key in set(previous) - set(status):
        patch[key] = None
    return patch

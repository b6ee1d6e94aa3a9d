"""One reconcile pass for one QueueSupervisor: apply children, prune the stale ones, observe, report.

Every trigger (create, update, resume, a child deleted or edited, the periodic loop) runs this same
pass, so there is one path to test. It returns the status to write (or None when nothing changed);
the caller writes it once.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import ApiException

from fairway.figures import QueueStats, TenantFigures
from fairway.load import rebalanced
from fairway.manifests import validate_spec
from fairway.pools import Pool, pools
from fairway.spec import QueueSupervisorSpec
from fairway.store import CONNECTION_ERRORS, Store, connect, tenant_figures
from fairway_operator.desired import DEFAULT_IMAGE, desired
from fairway_operator.kube import Kube, names_of
from fairway_operator.report import Observations, PoolObservation, build_status

log = logging.getLogger("fairway.operator")
POOL_ANNOTATION = "fairway.dev/pool"
REDIS_ERRORS: tuple[type[BaseException], ...] = (*CONNECTION_ERRORS, OSError)


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Outcome:
    status: dict[str, Any] | None  # None: unchanged, write nothing
    valid: bool
    errors: list[str] = field(default_factory=list)
    api_error: str | None = None


class RedisViews:
    """One Store per Redis URL, shared by every supervisor that uses it; pipelined reads only."""

    def __init__(self) -> None:
        self._stores: dict[tuple[str, bool], Store] = {}
        self._lock = threading.Lock()

    def store(self, url: str, cluster: bool) -> Store:
        with self._lock:
            key = (url, cluster)
            if key not in self._stores:
                self._stores[key] = Store(connect(url, cluster, socket_timeout_s=5))
            return self._stores[key]


SECRET_CACHE_S = 30.0


class Reconciler:
    def __init__(self, kube: Kube, redis: RedisViews | None = None, default_image: str = DEFAULT_IMAGE) -> None:
        self.kube = kube
        self.redis = redis or RedisViews()
        self.default_image = default_image
        self._secrets: dict[tuple[str, str, str], tuple[float, str]] = {}

    # -- Redis -----------------------------------------------------------------------------------

    def redis_url(self, namespace: str, spec: QueueSupervisorSpec) -> str:
        if spec.redis.url:
            return spec.redis.url
        ref = spec.redis.secret_ref
        assert ref is not None  # the spec rules require exactly one of url and secretRef
        key = (namespace, ref.name, ref.key)
        cached = self._secrets.get(key)
        if cached is not None and time.monotonic() - cached[0] < SECRET_CACHE_S:
            return cached[1]  # a rotated Secret is picked up within SECRET_CACHE_S
        url = self.kube.secret_value(namespace, ref.name, ref.key)
        self._secrets[key] = (time.monotonic(), url)
        return url

    def _store(self, namespace: str, spec: QueueSupervisorSpec) -> Store:
        return self.redis.store(self.redis_url(namespace, spec), spec.redis.cluster)

    def observe_redis(
        self, namespace: str, spec: QueueSupervisorSpec
    ) -> tuple[list[QueueStats] | None, list[TenantFigures] | None, str | None]:
        """Push pauses, read queue figures and tenant figures; (None, None, reason) when unreachable."""
        try:
            store = self._store(namespace, spec)
            store.set_paused(spec.queues, spec.paused_queues)
            stats = store.stats(spec.queues) if spec.queues else []
            figures = tenant_figures(store, spec.tenants.queue_prefix) if spec.tenants else None
            return stats, figures, None
        except REDIS_ERRORS as exc:
            return None, None, f"Redis is unreachable: {exc}"
        except (ApiException, KeyError) as exc:
            return None, None, f"cannot read the Redis URL from its Secret: {exc}"

    # -- the pass --------------------------------------------------------------------------------

    def reconcile(
        self,
        body: Mapping[str, Any],
        *,
        apply: bool = True,
        rebalance_now: bool = False,
        owned: list[dict[str, Any]] | None = None,
    ) -> Outcome:
        """The whole pass (`apply`), or, from the periodic loop, observe + rebalance + scale only.

        `owned`: the supervisor's Deployments as a kopf index already holds them (observe passes), so
        the periodic loop reads nothing from the API server; None lists them.
        """
        meta = body["metadata"]
        name, namespace = meta["name"], meta.get("namespace", "default")
        previous = dict(body.get("status") or {})
        report = validate_spec(body.get("spec"), name)
        if not report.valid or report.spec is None:
            status = build_status(Observations(meta.get("generation"), report), previous, now_iso())
            return Outcome(_changed(previous, status), False, [str(p) for p in report.errors])
        spec = report.spec
        api_error = None
        pool_obs: list[PoolObservation] = []
        try:
            if owned is None or apply:
                owned = self.kube.owned(namespace, name, ("Deployment", "ConfigMap") if apply else ("Deployment",))
            current = {
                (o["metadata"].get("annotations") or {}).get(POOL_ANNOTATION, ""): o["spec"].get("replicas") or 0
                for o in owned
                if o["kind"] == "Deployment"
            }
            ready = {
                o["metadata"]["name"]: (o.get("status") or {}).get("availableReplicas") or 0
                for o in owned
                if o["kind"] == "Deployment"
            }
            stats, figures, redis_error = self.observe_redis(namespace, spec)
            before = dict(current)
            if rebalance_now and spec.balance != "simple" and redis_error is None:
                current = rebalanced(self._store(namespace, spec), spec, current, stats, figures)
            children = desired(body, spec, current, self.default_image)
            if apply:
                self._apply(namespace, meta.get("uid"), children, owned)
            else:
                existing = {o["metadata"]["name"] for o in owned if o["kind"] == "Deployment"}
                for child in children:
                    if child["kind"] != "Deployment" or child["metadata"]["name"] not in existing:
                        continue  # a missing child is the full pass's job (drift repair or resume)
                    pool = child["metadata"]["annotations"][POOL_ANNOTATION]
                    if child["spec"]["replicas"] != before.get(pool):
                        self.kube.scale(namespace, child["metadata"]["name"], child["spec"]["replicas"])
            for child in children:
                if child["kind"] == "Deployment":
                    pool = _pool_of(spec, child)
                    pool_obs.append(
                        PoolObservation(
                            pool,
                            child["metadata"]["name"],
                            child["spec"]["replicas"],
                            ready.get(child["metadata"]["name"], 0),
                        )
                    )
        except ApiException as exc:
            api_error = f"Kubernetes API error {exc.status}: {exc.reason}"
            stats, figures, redis_error = None, None, None
        observations = Observations(
            meta.get("generation"),
            report,
            pool_obs,
            stats,
            figures,
            redis_error,
            api_error,
            weights=spec.effective_weights(),
        )
        status = build_status(observations, previous, now_iso())
        return Outcome(_changed(previous, status), True, api_error=api_error)

    def _apply(
        self, namespace: str, uid: str | None, children: list[dict[str, Any]], owned: list[dict[str, Any]]
    ) -> None:
        for child in children:
            self.kube.apply(child)
        keep = names_of(children)
        for obj in owned:
            refs = obj["metadata"].get("ownerReferences") or []
            ours = not uid or any(r.get("uid") == uid for r in refs)
            if ours and (obj["kind"], obj["metadata"]["name"]) not in keep:
                self.kube.delete(obj["kind"], namespace, obj["metadata"]["name"])


def _pool_of(spec: QueueSupervisorSpec, deployment: Mapping[str, Any]) -> Pool:
    wanted = deployment["metadata"]["annotations"][POOL_ANNOTATION]
    return next(p for p in pools(spec) if p.name == wanted)


def _changed(previous: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch that turns `previous` into `status`, or None when they are equal."""
    if all(previous.get(k) == v for k, v in status.items()) and set(previous) <= set(status):
        return None
    patch: dict[str, Any] = dict(status)
    for key in set(previous) - set(status):
        patch[key] = None
    return patch

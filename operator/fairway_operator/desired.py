"""Spec -> the Kubernetes objects a QueueSupervisor should own (pure: what `fairway render` prints).

One pool per Deployment: `balance: none` runs one pool serving every queue (and the tenant group) in
weighted order; `simple` and `auto` run one pool per queue plus one for the tenant group. Each pool's
worker settings live in a ConfigMap whose hash sits on the pod template, so pods roll exactly when
the settings change. Paused queues are not in the ConfigMap: pausing is pushed to Redis, no rollout.
Replicas of `none` and `auto` pools belong to the balancer; the caller passes the current ones in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fairway.plan.pools import Pool, initial_replicas, pools
from fairway.plan.worker_config import worker_settings
from fairway.resource.names import REDIS_URL_ENV
from fairway.resource.plain import plain, yaml_documents, yaml_text
from fairway.resource.spec import API_GROUP, API_VERSION, KIND, QueueSupervisorSpec
from fairway_operator.names import dns_label, pool_label

DEFAULT_IMAGE = "ghcr.io/fairway-dev/fairway:0.1.0"
MANAGED_BY = "app.kubernetes.io/managed-by"
SUPERVISOR_LABEL = f"{API_GROUP}/supervisor"
# The pool a child belongs to: as a label (DNS-safe, for selectors) and as an annotation (the exact
# pool name, from which a pass reads the balancer's current replicas back). One key for both.
POOL_KEY = f"{API_GROUP}/pool"
CONFIG_HASH = f"{API_GROUP}/config-hash"
CONFIG_PATH = "/etc/fairway/worker.yaml"
RUN_AS = 10001


@dataclass(frozen=True)
class PoolChildren:
    """One pool's objects: its ConfigMap (the worker settings) and its Deployment."""

    pool: Pool
    config_map: dict[str, Any]
    deployment: dict[str, Any]

    @property
    def objects(self) -> list[dict[str, Any]]:
        """In apply order: the ConfigMap first, so new pods find their settings."""
        return [self.config_map, self.deployment]

    @property
    def name(self) -> str:
        return str(self.deployment["metadata"]["name"])

    @property
    def replicas(self) -> int:
        return int(self.deployment["spec"]["replicas"])

    def with_replicas(self, replicas: int) -> PoolChildren:
        spec = {**self.deployment["spec"], "replicas": replicas}
        return replace(self, deployment={**self.deployment, "spec": spec})


def child_name(supervisor: str, pool: Pool, shared_pool: bool) -> str:
    if shared_pool:
        return dns_label("fairway", supervisor)
    # A hash of (supervisor, pool) keeps names unique when they are cut or when two pairs join alike.
    digest = hashlib.sha1(f"{supervisor}\0{pool.name}".encode()).hexdigest()[:6]
    return f"{dns_label('fairway', supervisor, pool.name.lstrip('@'))[: 63 - 7].rstrip('-')}-{digest}"


def _owner(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    meta = body.get("metadata", {})
    if not meta.get("uid"):
        return []  # rendered from a file: the API server fills the owner in once the supervisor exists
    return [
        {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": KIND,
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _redis_env(spec: QueueSupervisorSpec) -> dict[str, Any]:
    ref = spec.redis.secret_ref
    if ref is not None:
        return {"name": REDIS_URL_ENV, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
    return {"name": REDIS_URL_ENV, "value": spec.redis.url}


def pool_selector(labels: Mapping[str, str]) -> dict[str, str]:
    """A pool Deployment's matchLabels, from its labels: what selects the pool's pods."""
    return {SUPERVISOR_LABEL: labels[SUPERVISOR_LABEL], POOL_KEY: labels[POOL_KEY]}


POD_NAME_ENV = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def worker_probes() -> dict[str, Any]:
    """A worker container's probes (fairway.queue.runtime.health): restarted after its loop was stuck
    for about a minute past its own staleness window, ready once it takes jobs. Answered from memory."""
    return {
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "health"},
            "periodSeconds": 10,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
            # A wedged loop cannot drain: killed after this, not after the pod's grace (timeout + 30 s).
            "terminationGracePeriodSeconds": 15,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "health"},
            "periodSeconds": 2,
            "timeoutSeconds": 5,
            "failureThreshold": 1,
        },
    }


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, as `fairway render` prints it and `kubectl apply -f -` reads it."""
    return yaml_documents(objects)


def desired(
    body: Mapping[str, Any],
    spec: QueueSupervisorSpec,
    current_replicas: Mapping[str, int] | None = None,
    default_image: str = DEFAULT_IMAGE,
) -> list[PoolChildren]:
    """Every pool's children, in pool order."""
    meta = body.get("metadata", {})
    name, namespace = meta["name"], meta.get("namespace", "default")
    replicas = initial_replicas(spec, current_replicas or {})
    out: list[PoolChildren] = []
    for pool in pools(spec):
        child = child_name(name, pool, spec.policy.shared_pool)
        labels = {
            MANAGED_BY: "fairway",
            SUPERVISOR_LABEL: dns_label(name),
            POOL_KEY: pool_label(pool.name.lstrip("@")),
            "app.kubernetes.io/name": "fairway-worker",
        }
        config_text = yaml_text(worker_settings(spec, pool).to_config(), sort_keys=True)
        config_hash = hashlib.sha256(config_text.encode()).hexdigest()[:16]
        child_meta = {"name": child, "namespace": namespace, "labels": labels, "ownerReferences": _owner(body)}
        if not child_meta["ownerReferences"]:
            del child_meta["ownerReferences"]
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": child_meta,
            "data": {"worker.yaml": config_text},
        }
        container: dict[str, Any] = {
            "name": "worker",
            "image": spec.worker.image or default_image,
            "args": ["worker", "--config", CONFIG_PATH],
            # POD_NAME: the worker's identity (its heartbeat and its reservations' tags), so the
            # operator can set each pod's deletion cost from its busy slots before a scale-down.
            "env": [_redis_env(spec), POD_NAME_ENV, *(spec.worker.env or [])],
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/fairway", "readOnly": True},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
        }
        if spec.worker.resources:
            container["resources"] = spec.worker.resources
        pod_annotations = {CONFIG_HASH: config_hash}
        ports = []
        if spec.worker.health_port:
            ports.append({"name": "health", "containerPort": spec.worker.health_port, "protocol": "TCP"})
            container.update(worker_probes())
        if spec.worker.metrics_port:
            ports.append({"name": "metrics", "containerPort": spec.worker.metrics_port, "protocol": "TCP"})
            pod_annotations.update(
                {
                    "prometheus.io/scrape": "true",
                    "prometheus.io/port": str(spec.worker.metrics_port),
                    "prometheus.io/path": "/metrics",
                }
            )
        if ports:
            container["ports"] = ports
        pod_spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": spec.effective_grace_period,
            "automountServiceAccountToken": spec.worker.automount_service_account_token,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": RUN_AS,
                "runAsGroup": RUN_AS,
                "fsGroup": RUN_AS,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
            "volumes": [
                {"name": "config", "configMap": {"name": child}},
                {"name": "tmp", "emptyDir": {}},
            ],
        }
        if spec.worker.node_selector:
            pod_spec["nodeSelector"] = dict(spec.worker.node_selector)
        if spec.worker.tolerations:
            pod_spec["tolerations"] = list(spec.worker.tolerations)
        selector = pool_selector(labels)
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**child_meta, "annotations": {POOL_KEY: pool.name}},
            "spec": {
                "replicas": replicas[pool.name],
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": labels, "annotations": pod_annotations},
                    "spec": pod_spec,
                },
            },
        }
        out.append(PoolChildren(pool, plain(config_map), plain(deployment)))
    return out


def all_objects(children: list[PoolChildren]) -> list[dict[str, Any]]:
    return [obj for child in children for obj in child.objects]

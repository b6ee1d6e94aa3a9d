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
from dataclasses import dataclass
from typing import Any

import yaml

from fairway.spec import API_GROUP, API_VERSION, KIND, QueueSupervisorSpec
from fairway_operator.names import dns_label, pool_label

DEFAULT_IMAGE = "ghcr.io/fairway-dev/fairway:0.1.0"
MANAGED_BY = "app.kubernetes.io/managed-by"
SUPERVISOR_LABEL = f"{API_GROUP}/supervisor"
POOL_LABEL = f"{API_GROUP}/pool"
CONFIG_HASH = f"{API_GROUP}/config-hash"
CONFIG_PATH = "/etc/fairway/worker.yaml"
TENANTS_POOL = "@tenants"
ALL_POOL = "@all"
RUN_AS = 10001


@dataclass(frozen=True)
class Pool:
    name: str  # the queue it serves, or @tenants / @all
    queues: tuple[str, ...]
    tenants: bool

    @property
    def label(self) -> str:
        return pool_label(self.name.lstrip("@"))


def pools(spec: QueueSupervisorSpec) -> list[Pool]:
    if spec.balance == "none":
        return [Pool(ALL_POOL, tuple(spec.queues), spec.tenants is not None)]
    out = [Pool(queue, (queue,), False) for queue in spec.queues]
    if spec.tenants is not None:
        out.append(Pool(TENANTS_POOL, (), True))
    return out


def child_name(supervisor: str, pool: Pool, balance: str) -> str:
    if balance == "none":
        return dns_label("fairway", supervisor)
    # A hash of (supervisor, pool) keeps names unique when they are cut or when two pairs join alike.
    digest = hashlib.sha1(f"{supervisor}\0{pool.name}".encode()).hexdigest()[:6]
    return f"{dns_label('fairway', supervisor, pool.name.lstrip('@'))[: 63 - 7].rstrip('-')}-{digest}"


def split_evenly(total: int, parts: int, least: int) -> list[int]:
    """Horizon's simple balancing: maxProcesses split evenly, the remainder to the first pools."""
    base, extra = divmod(total, parts)
    return [max(least, base + (1 if index < extra else 0)) for index in range(parts)]


def initial_replicas(spec: QueueSupervisorSpec, current: Mapping[str, int]) -> dict[str, int]:
    """Replicas per pool name: fixed for simple; for none/auto, the balancer's current value or min."""
    all_pools = pools(spec)
    if spec.balance == "simple":
        return dict(
            zip(
                (p.name for p in all_pools),
                split_evenly(spec.max_processes, len(all_pools), spec.min_processes),
                strict=True,
            )
        )
    return {
        p.name: min(spec.max_processes, max(spec.min_processes, current.get(p.name, spec.min_processes)))
        for p in all_pools
    }


def worker_config(spec: QueueSupervisorSpec, pool: Pool) -> dict[str, Any]:
    """The WorkerSettings a pool's workers read (everything but the Redis URL, which comes from env)."""
    config: dict[str, Any] = {
        "queues": list(pool.queues),
        "block_for_s": spec.block_for,
        "tries": spec.tries,
        "backoff_s": list(spec.backoff),
        "timeout_s": spec.timeout,
        "retry_after_s": spec.effective_retry_after,
        "max_jobs": spec.max_jobs,
        "max_time_s": spec.max_time,
        "memory_mib": spec.memory,
        "handlers": list(spec.worker.handlers),
        "log_format": "json",
        "cluster": spec.redis.cluster,
    }
    if spec.balance == "none" and spec.queue_weights:
        config["weights"] = {q: w for q, w in spec.effective_weights().items() if q in pool.queues}
    if pool.tenants and spec.tenants is not None:
        t = spec.tenants
        config["tenants"] = {
            "queue_prefix": t.queue_prefix,
            "max_consecutive": t.max_consecutive_jobs,
            "quarantine_failures": t.quarantine.failures,
            "quarantine_window_s": t.quarantine.window_seconds,
            "sample_rate": t.quarantine.sample_rate,
        }
        if spec.balance == "none" and t.weight is not None:
            config["tenants"]["weight"] = spec.tenant_weight
    return config


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
        return {"name": "FAIRWAY_REDIS_URL", "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}
    return {"name": "FAIRWAY_REDIS_URL", "value": spec.redis.url}


class _ManifestDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (readable ConfigMaps), and never YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ManifestDumper.add_representer(str, _str)


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, as `fairway render` prints it and `kubectl apply -f -` reads it."""
    return yaml.dump_all(objects, Dumper=_ManifestDumper, sort_keys=False)


def desired(
    body: Mapping[str, Any],
    spec: QueueSupervisorSpec,
    current_replicas: Mapping[str, int] | None = None,
    default_image: str = DEFAULT_IMAGE,
) -> list[dict[str, Any]]:
    """Every child object, ConfigMap before Deployment for each pool, in pool order."""
    meta = body.get("metadata", {})
    name, namespace = meta["name"], meta.get("namespace", "default")
    replicas = initial_replicas(spec, current_replicas or {})
    out: list[dict[str, Any]] = []
    for pool in pools(spec):
        child = child_name(name, pool, spec.balance)
        labels = {
            MANAGED_BY: "fairway",
            SUPERVISOR_LABEL: dns_label(name),
            POOL_LABEL: pool.label,
            "app.kubernetes.io/name": "fairway-worker",
        }
        config_text = yaml.safe_dump(worker_config(spec, pool), sort_keys=True)
        config_hash = hashlib.sha256(config_text.encode()).hexdigest()[:16]
        child_meta = {"name": child, "namespace": namespace, "labels": labels, "ownerReferences": _owner(body)}
        if not child_meta["ownerReferences"]:
            del child_meta["ownerReferences"]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": child_meta,
                "data": {"worker.yaml": config_text},
            }
        )
        container: dict[str, Any] = {
            "name": "worker",
            "image": spec.worker.image or default_image,
            "args": ["worker", "--config", CONFIG_PATH],
            "env": [_redis_env(spec), *(spec.worker.env or [])],
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
        pod_spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": spec.effective_grace_period,
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
        selector = {SUPERVISOR_LABEL: labels[SUPERVISOR_LABEL], POOL_LABEL: labels[POOL_LABEL]}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {**child_meta, "annotations": {f"{API_GROUP}/pool": pool.name}},
                "spec": {
                    "replicas": replicas[pool.name],
                    "selector": {"matchLabels": selector},
                    "template": {
                        "metadata": {"labels": labels, "annotations": {CONFIG_HASH: config_hash}},
                        "spec": pod_spec,
                    },
                },
            }
        )
    return out

"""`desired()` / `fairway render`: pools per balance mode, names, security, owners, config hash, validity."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from fairway.resource.manifests import validate_document
from fairway.resource.worker_settings import WorkerSettings
from fairway_operator.desired import CONFIG_HASH, all_objects, desired

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def supervisor(name: str = "shop", uid: str | None = "u-1", **spec: Any) -> dict[str, Any]:
    base = {"redis": {"secretRef": {"name": "redis", "key": "url"}}, "queues": ["high", "default", "low"]}
    meta = {"name": name, "namespace": "jobs", **({"uid": uid} if uid else {})}
    return {"apiVersion": "fairway.dev/v1alpha1", "kind": "QueueSupervisor", "metadata": meta, "spec": {**base, **spec}}


def render(body: dict[str, Any], current: dict[str, int] | None = None) -> list[dict[str, Any]]:
    report = validate_document(body)
    assert report.spec is not None, report.errors
    return all_objects(desired(body, report.spec, current or {}))


def deployments(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["annotations"]["fairway.dev/pool"]: o for o in objs if o["kind"] == "Deployment"}


def config(objs: list[dict[str, Any]], deployment: dict[str, Any]) -> dict[str, Any]:
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == deployment["metadata"]["name"])
    return yaml.safe_load(cm["data"]["worker.yaml"])


def test_balance_none_is_one_weighted_pool_for_everything() -> None:
    objs = render(supervisor(queueWeights={"high": 3}, tenants={"weight": 2}, minProcesses=2))
    (pool,) = deployments(objs).values()
    assert pool["metadata"]["name"] == "fairway-shop"
    assert pool["spec"]["replicas"] == 2
    cfg = config(objs, pool)
    assert cfg["queues"] == ["high", "default", "low"]
    assert cfg["weights"] == {"high": 3, "default": 1, "low": 1}
    assert cfg["tenants"]["weight"] == 2 and cfg["tenants"]["queue_prefix"] == "tenant-"


def test_balance_simple_splits_max_processes_evenly_with_a_tenant_pool() -> None:
    objs = render(supervisor(balance="simple", maxProcesses=10, tenants={}))
    pools = deployments(objs)
    assert set(pools) == {"high", "default", "low", "@tenants"}
    assert sorted(p["spec"]["replicas"] for p in pools.values()) == [2, 2, 3, 3]
    assert config(objs, pools["@tenants"])["queues"] == []
    assert config(objs, pools["high"])["weights"] == {}, "one queue per pool: no weights"


def test_balance_auto_starts_every_pool_at_min_processes_and_keeps_the_balancers_count() -> None:
    pools = deployments(render(supervisor(balance="auto", minProcesses=2, maxProcesses=12)))
    assert {p["spec"]["replicas"] for p in pools.values()} == {2}
    kept = deployments(render(supervisor(balance="auto", minProcesses=2, maxProcesses=12), {"high": 7, "low": 40}))
    assert kept["high"]["spec"]["replicas"] == 7
    assert kept["low"]["spec"]["replicas"] == 12, "clamped to maxProcesses"


def test_every_child_is_owned_and_labelled() -> None:
    for obj in render(supervisor(balance="simple")):
        meta = obj["metadata"]
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "fairway.dev/v1alpha1",
                "kind": "QueueSupervisor",
                "name": "shop",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "fairway"
        assert meta["labels"]["fairway.dev/supervisor"] == "shop"
        assert meta["namespace"] == "jobs"


def test_pods_are_locked_down() -> None:
    (pool,) = deployments(render(supervisor())).values()
    pod = pool["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {"name": "FAIRWAY_REDIS_URL", "valueFrom": {"secretKeyRef": {"name": "redis", "key": "url"}}} in container[
        "env"
    ]
    assert container["args"] == ["worker", "--config", "/etc/fairway/worker.yaml"]
    assert pod["terminationGracePeriodSeconds"] == 90
    assert pod["automountServiceAccountToken"] is False, "workers never call the Kubernetes API"
    (opted_in,) = deployments(render(supervisor(worker={"automountServiceAccountToken": True}))).values()
    assert opted_in["spec"]["template"]["spec"]["automountServiceAccountToken"] is True


def test_names_stay_dns_safe_and_within_63_characters() -> None:
    long_name = "a" * 200
    queues = ["Q" * 63, "q" * 63, "x.y:z_w", "x-y-z-w"]
    objs = render(supervisor(name=long_name, balance="simple", queues=queues, maxProcesses=10))
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Deployment"]
    assert len(set(names)) == 4, "different queues never collide"
    for obj in objs:
        for value in (obj["metadata"]["name"], *obj["metadata"]["labels"].values()):
            assert len(value) <= 63
            assert value == value.lower() and all(ch.isalnum() or ch == "-" for ch in value), value
    again = [
        o["metadata"]["name"]
        for o in render(supervisor(name=long_name, balance="simple", queues=queues, maxProcesses=10))
        if o["kind"] == "Deployment"
    ]
    assert again == names, "stable across renders"


def test_config_hash_changes_with_settings_and_only_then() -> None:
    def hashes(body: dict[str, Any]) -> dict[str, str]:
        return {
            k: d["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH]
            for k, d in deployments(render(body)).items()
        }

    base = hashes(supervisor(queueWeights={"high": 3}))
    assert hashes(supervisor(queueWeights={"high": 3})) == base
    assert hashes(supervisor(queueWeights={"high": 3}, pausedQueues=["low"])) == base, "pausing never rolls pods"
    assert hashes(supervisor(queueWeights={"high": 3}, minProcesses=3)) == base, "replicas are not settings"
    assert hashes(supervisor(queueWeights={"high": 4})) != base
    assert hashes(supervisor(queueWeights={"high": 3}, timeout=61)) != base


def test_rendered_config_is_what_the_worker_accepts() -> None:
    body = supervisor(balance="none", queueWeights={"high": 3}, tenants={"weight": 2}, backoff=[1, 5], tries=3)
    objs = render(body)
    for pool in deployments(objs).values():
        settings = WorkerSettings.model_validate({**config(objs, pool), "redis_url": "redis://r:6379/0"})
        assert settings.tries == 3 and settings.backoff_s == [1, 5]
        assert settings.served_weights()["@tenant-"] == 2


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_rendered_objects_validate_against_the_kubernetes_schema(path: Path) -> None:
    body = copy.deepcopy(yaml.safe_load(path.read_text()))
    body["metadata"]["uid"] = "0000"
    for obj in render(body):
        kubernetes_validate.validate(obj, "1.37.0", strict=True)


def test_render_command_prints_multi_document_yaml() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "fairway.cli", "render", "-f", str(EXAMPLES / "auto-balanced.yaml")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    docs = list(yaml.safe_load_all(out.stdout))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Deployment"] * 3
    assert "&id" not in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "fairway.cli", "render", "-f", "-"],
        capture_output=True,
        text=True,
        input=yaml.safe_dump(supervisor(balance="auto", queueWeights={"high": 2})),
    )
    assert bad.returncode == 1 and "queueWeights" in bad.stderr


@pytest.mark.parametrize("balance", ["simple", "auto", "none"])
def test_min_processes_zero_is_valid_with_a_tenant_group_in_every_mode(balance: str) -> None:
    body = supervisor(balance=balance, minProcesses=0, maxProcesses=4, tenants={}, scaleDownDelay=30, targetWait=5)
    report = validate_document(body)
    assert report.valid, report.errors
    pools = deployments(render(body))
    replicas = sorted(p["spec"]["replicas"] for p in pools.values())
    if balance == "simple":
        assert replicas == [1, 1, 1, 1], "simple keeps its fixed split; 0 is only the floor"
    else:
        assert set(replicas) == {0}, "resized pools start at zero and wake at their first job"
    for deployment in pools.values():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        pod_name = next(e for e in container["env"] if e["name"] == "POD_NAME")
        assert pod_name == {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [("minProcesses", -1, "minProcesses"), ("scaleDownDelay", -5, "scaleDownDelay"), ("targetWait", 0, "targetWait")],
)
def test_scaling_fields_out_of_range_name_the_field(field: str, value: int, says: str) -> None:
    report = validate_document(supervisor(balance="auto", **{field: value}))
    assert not report.valid and any(says in str(p) for p in report.errors), report.errors


def test_worker_pods_have_probes_on_their_health_port_and_requests_by_default() -> None:
    (deployment,) = deployments(render(supervisor())).values()
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "health", "containerPort": 8081, "protocol": "TCP"} in container["ports"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}}, "Burstable, not BestEffort"
    (cm,) = [o for o in render(supervisor()) if o["kind"] == "ConfigMap"]
    assert yaml.safe_load(cm["data"]["worker.yaml"])["health_port"] == 8081, "the worker serves where probed"

    own = {"limits": {"memory": "1Gi"}, "requests": {"cpu": "1"}}
    (deployment,) = deployments(render(supervisor(worker={"resources": own, "healthPort": 0}))).values()
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == own, "the spec's resources replace the default"
    assert "livenessProbe" not in container and "readinessProbe" not in container, "healthPort 0: no probes"

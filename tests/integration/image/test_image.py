"""The image, built from the Dockerfile and run the way Kubernetes runs it: as uid 10001 with no passwd
entry and no home, a read-only root, every capability dropped, the pod's env and volumes. The worker
runs jobs from a Redis on this host and drains on `docker stop`; the operator starts from the chart's
own Deployment (its args, env, user and securityContext, rendered by Helm) against the test API
server and reconciles a supervisor. Skipped, naming the reason, where no Docker engine can run.

Out of a cluster, two things stand in for what a pod gets: a kubeconfig (mounted read-only, named by
KUBECONFIG) for the ServiceAccount token, and `--network host` for the pod network (this engine runs
without a bridge)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import helm_python as helm
import kubernetes
import pytest
import yaml

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.resource.manifests import validate_document
from fairway_operator.desired import desired
from support.image import ROOT, build_image, docker, engine_or_skip, pod_flags
from support.kopf_kmock import Emulator, eventually, secret
from support.redis_procs import free_port


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    engine_or_skip()
    built = build_image()
    assert built["size_bytes"] < 450e6, f"the image grew to {built['size_bytes'] / 1e6:.0f} MB"
    return built


@pytest.fixture
def containers() -> Iterator[list[str]]:
    """Names of the containers a test starts; removed afterwards whatever happened (registered first)."""
    names: list[str] = []
    yield names
    for name in names:
        docker("rm", "-f", name, check=False)


def run_as_a_pod(image: dict[str, Any], *args: str) -> list[str]:
    return ["run", "--rm", "--read-only", "--user", "10001:10001", "--cap-drop=ALL", image["tag"], *args]


def test_the_cli_answers_in_the_image_as_a_numeric_user(image: dict[str, Any]) -> None:
    version = docker(*run_as_a_pod(image, "--version"))
    assert version.stdout.strip() == "fairway 0.1.0"
    help_text = docker(*run_as_a_pod(image, "operator", "--help")).stdout
    assert "--all-namespaces" in help_text and "--liveness" in help_text
    whoami = docker("run", "--rm", "--read-only", "--user", "10001:10001", "--entrypoint", "id", image["tag"])
    assert whoami.stdout.startswith("uid=10001 gid=10001"), whoami.stdout


def test_the_layers_keep_dependencies_apart_from_the_source(image: dict[str, Any]) -> None:
    """A change to the source rebuilds only the last layers: the dependencies' layer comes from the lock."""
    history = docker("history", "--no-trunc", "--format", "{{.CreatedBy}}", image["tag"]).stdout
    assert "requirements/runtime.txt" not in history  # the final stage copies only the venv
    dockerfile = (ROOT / "Dockerfile").read_text()
    lock_at = dockerfile.index("--require-hashes -r /src/requirements/runtime.txt")
    assert lock_at < dockerfile.index("COPY worker"), "dependencies are installed before the source is copied"


def worker_pod(redis_url: str, tmp_path: Path) -> tuple[list[str], dict[str, Any]]:
    """A worker pod as the operator renders it for a one-queue supervisor: flags and its config folder."""
    document = {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": "img", "namespace": "jobs"},
        "spec": {"redis": {"url": redis_url}, "queues": ["default"], "concurrency": 4},
    }
    spec = validate_document(document).spec
    assert spec is not None
    (child,) = desired(document, spec, {}, "unused")
    config = tmp_path / "config"
    config.mkdir()
    (config / "worker.yaml").write_text(child.config_map["data"]["worker.yaml"])
    pod = child.deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["worker", "--config", "/etc/fairway/worker.yaml"]
    return pod_flags(pod, container, {"config": config}, {"metadata.name": POD}), container


POD = "img-default-7d9f8-x2k4q"  # the pod name the downward API gives the worker as POD_NAME


def test_the_worker_runs_jobs_and_drains_on_docker_stop(
    image: dict[str, Any], redis_url: str, tmp_path: Path, containers: list[str]
) -> None:
    flags, container = worker_pod(redis_url, tmp_path)
    client = Client(redis_url)
    ids = [client.enqueue("noop", i) for i in range(20)] + [client.enqueue("sleep", 0.05) for _ in range(8)]
    name = f"fairway-worker-{uuid.uuid4().hex[:8]}"
    containers.append(name)
    # The image's default command is the pod's args: the ConfigMap's settings, the URL from the env.
    docker("run", "-d", "--name", name, "--network", "host", *flags, image["tag"], timeout=60)
    inspector = Inspector(connect(redis_url))

    def drained() -> bool:
        (stats,) = inspector.stats(["default"])
        return stats.ready == 0 and stats.reserved == 0

    assert asyncio.run(eventually(drained, 60)), docker("logs", name).stderr[-2000:]
    long_job = client.enqueue("sleep", 3)
    assert asyncio.run(eventually(lambda: inspector.stats(["default"])[0].reserved == 1, 20))
    # Its heartbeat names its pod and counts the running job: what the operator's scale-in reads.
    assert asyncio.run(
        eventually(lambda: [(w["name"].rsplit(":", 1)[0], w["busy"]) for w in inspector.workers()] == [(POD, 1)], 10)
    )
    docker("stop", "-t", "30", name, timeout=60)  # SIGTERM mid-job: it finishes the job, then exits
    state = json.loads(docker("inspect", name).stdout)[0]["State"]
    logs = docker("logs", name)
    assert state["ExitCode"] == 0, logs.stderr[-2000:]
    finished = [json.loads(line) for line in logs.stdout.splitlines() if line.startswith("{")]
    outcomes = {line["id"]: line["outcome"] for line in finished if line["event"] == "job.finished"}
    assert outcomes == dict.fromkeys([*ids, long_job], "ok")
    assert inspector.stats(["default"])[0].reserved == 0
    assert "Traceback" not in logs.stderr
    assert "FAIRWAY_REDIS_URL" in {e["name"] for e in container["env"]}


def chart_operator(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The chart's operator Deployment, rendered by Helm: its pod spec and container."""
    chart = helm.Chart.load(ROOT / "charts" / "fairway")
    manifests = chart.render(values, name="fairway", namespace="fairway-system", is_install=True)
    docs = [d for path, text in manifests.items() if path.endswith(".yaml") for d in yaml.safe_load_all(text) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "fairway"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, container


@pytest.mark.asyncio
async def test_the_operator_starts_in_the_image_exactly_as_the_chart_runs_it(
    image: dict[str, Any], k8s: Emulator, redis_url: str, tmp_path: Path, containers: list[str]
) -> None:
    health, metrics = free_port(), free_port()
    pod, container = chart_operator({"healthPort": health, "metrics": {"port": metrics}})
    kubeconfig = tmp_path / "kube"
    kubeconfig.mkdir()
    (kubeconfig / "config").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test",
                "clusters": [{"name": "test", "cluster": {"server": str(k8s.url).rstrip("/")}}],
                "users": [{"name": "test", "user": {"token": "t"}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
            }
        )
    )
    kubeconfig.chmod(0o755)
    (kubeconfig / "config").chmod(0o644)
    pod_name = f"fairway-{uuid.uuid4().hex[:10]}"
    flags = pod_flags(pod, container, {}, {"metadata.name": pod_name})
    assert "--read-only" in flags and "--cap-drop=ALL" in flags and "POD_ID=" + pod_name in flags
    name = f"fairway-operator-{uuid.uuid4().hex[:8]}"
    containers.append(name)
    docker(
        "run", "-d", "--name", name, "--network", "host", *flags,
        "-v", f"{kubeconfig}:/etc/kube:ro", "-e", "KUBECONFIG=/etc/kube/config",
        image["tag"], *container["args"],
        timeout=60,
    )  # fmt: skip
    client = kubernetes.client.ApiClient()
    core, custom = kubernetes.client.CoreV1Api(client), kubernetes.client.CustomObjectsApi(client)
    await asyncio.to_thread(core.create_namespaced_secret, "jobs", secret("jobs", "redis", redis_url))
    body = {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": "image", "namespace": "jobs"},
        "spec": {
            "redis": {"secretRef": {"name": "redis", "key": "url"}},
            "queues": ["high", "low"],
            "balance": "simple",
        },
    }
    await asyncio.to_thread(
        custom.create_namespaced_custom_object, "fairway.dev", "v1alpha1", "jobs", "queuesupervisors", body
    )

    def live(kind: str) -> list[dict[str, Any]]:
        return [o.raw for (res, ns, _), o in list(k8s.objects.items()) if res.plural == kind and not o.deleted]

    def logs() -> str:
        out = docker("logs", name, check=False)
        return (out.stdout + out.stderr)[-3000:]

    deployments = await eventually(lambda: len(live("deployments")) == 2 and live("deployments"), 60)
    assert deployments, logs()
    worker_image = next(a for a in container["args"] if a.startswith("--worker-image=")).split("=", 1)[1]
    assert {d["spec"]["template"]["spec"]["containers"][0]["image"] for d in deployments} == {worker_image}

    def status() -> dict[str, Any] | None:
        (sup,) = live("queuesupervisors")
        return sup.get("status") if sup.get("status", {}).get("conditions") else None

    assert await eventually(status, 30), logs()

    async def answers(port: int, path: str) -> str | None:
        try:
            async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as r:
                return await r.text() if r.status == 200 else None
        except aiohttp.ClientError:
            return None

    assert await eventually(lambda: answers(health, "/healthz"), 20), logs()
    scraped = await eventually(lambda: answers(metrics, "/metrics"), 20)
    assert scraped and "fairway_reconcile_passes_total" in scraped
    await asyncio.to_thread(docker, "stop", "-t", "20", name, timeout=60)
    state = json.loads(docker("inspect", name).stdout)[0]["State"]
    assert state["ExitCode"] == 0, logs()
    assert "Traceback" not in logs() and "getpwuid" not in logs()

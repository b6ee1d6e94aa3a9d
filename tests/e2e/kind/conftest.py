"""End-to-end on a kind cluster (the second backend, where kind can run; tests/e2e/ runs on the node of
cluster/node.py): build the image, install Redis and the chart, drive it with kubectl.

Runs where kind, kubectl, helm and a working Docker engine exist; everywhere else every test here is
skipped with a reason naming what is missing. See docs/e2e.md.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.kind import IMAGE, NAMESPACE, REDIS, ROOT, Cluster, eventually, missing_tools, sh


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = missing_tools()
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"e2e needs kind, kubectl, helm and Docker; missing: {', '.join(missing)}")
    here = Path(__file__).parent
    for item in items:
        if "e2e" in item.keywords and here in Path(item.path).parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    name = f"fairway-e2e-{uuid.uuid4().hex[:6]}"
    kubeconfig = tmp_path_factory.mktemp("kind") / "kubeconfig"
    request.addfinalizer(lambda: sh("kind", "delete", "cluster", "--name", name, check=False))  # cleanup first
    sh("kind", "create", "cluster", "--name", name, "--kubeconfig", str(kubeconfig), "--wait", "120s", timeout=900)
    # --network host: a daemon without a bridge (as on this project's machines) has no other network to build on
    sh("docker", "build", "--network", "host", "-t", IMAGE, str(ROOT), timeout=1200)
    sh("kind", "load", "docker-image", IMAGE, "--name", name, timeout=600)
    c = Cluster(name, kubeconfig)
    sh("kubectl", "--kubeconfig", str(kubeconfig), "create", "namespace", NAMESPACE)
    c.kubectl("apply", "-f", "-", input=REDIS)
    c.kubectl("rollout", "status", "deployment/redis", "--timeout=180s", timeout=200)
    c.kubectl("create", "secret", "generic", "fairway-redis", "--from-literal=url=redis://redis:6379/0")
    request.addfinalizer(
        lambda: sh("helm", "--kubeconfig", str(kubeconfig), "uninstall", "fairway", "-n", NAMESPACE, check=False)
    )
    sh(
        "helm",
        "--kubeconfig",
        str(kubeconfig),
        "install",
        "fairway",
        str(ROOT / "charts" / "fairway"),
        "-n",
        NAMESPACE,
        "--set",
        "image.repository=fairway",
        "--set",
        "image.tag=e2e",
        "--set",
        "image.pullPolicy=Never",
        "--wait",
        "--timeout",
        "5m",
        timeout=400,
    )
    yield c


@pytest.fixture
def redis_forward(cluster: Cluster) -> Iterator[str]:
    """A port-forward to the in-cluster Redis, for the fairway CLI on this machine."""
    from support.redis_procs import free_port

    port = free_port()
    proc = subprocess.Popen(
        [
            "kubectl",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "-n",
            NAMESPACE,
            "port-forward",
            "service/redis",
            f"{port}:6379",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        import redis

        url = f"redis://127.0.0.1:{port}/0"
        eventually("port-forward to redis", lambda: redis.Redis.from_url(url).ping(), 60, 1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)

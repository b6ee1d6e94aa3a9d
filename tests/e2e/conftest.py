"""The e2e suite on a real single-node Kubernetes (cluster/node.py): the image built as users build it
and loaded into the node, Redis for the pods, the chart installed by helm as a user installs it (only
the image repository, tag and pull policy set). tests/e2e/kind/ is the same idea on kind, where kind runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.image import IMAGE, build_image, engine_or_skip
from support.real_cluster import NAMESPACE, ROOT, SAID, RealCluster, eventually, start_or_reuse

OPERATOR = "deployment/fairway"  # the release is named as the chart: its full name is "fairway"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The cluster's start-up, phase by phase, in the run's output (CI's log keeps its time)."""
    if SAID:
        terminalreporter.write_sep("-", "the e2e cluster")
        for line in SAID:
            terminalreporter.write_line(line)


def unavailable(reason: str) -> None:
    if os.environ.get("FAIRWAY_E2E_REQUIRED"):
        pytest.fail(f"the e2e cluster must run here (FAIRWAY_E2E_REQUIRED) but cannot: {reason}")
    pytest.skip(f"e2e on a real cluster: {reason}")


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    got = start_or_reuse(tmp_path_factory.mktemp("cluster"))
    if isinstance(got, str):
        unavailable(got)
    assert isinstance(got, RealCluster)
    try:
        yield got
    finally:
        got.stop()


@pytest.fixture(scope="session")
def installed(node: RealCluster) -> Iterator[RealCluster]:
    """The image loaded, Redis running, the chart installed; uninstalled at the end (the uninstall
    test checks what it leaves)."""
    if os.environ.get("FAIRWAY_E2E_REQUIRED"):
        engine = os.popen("docker info >/dev/null 2>&1; echo $?").read().strip()
        if engine != "0":
            pytest.fail("the e2e cluster needs a Docker engine to build the image (.ci/docker-engine)")
    engine_or_skip()
    build_image()
    node.load_images(IMAGE)
    node.start_redis()
    node.kubectl("create", "namespace", NAMESPACE, namespace=None, check=False)
    node.kubectl("delete", "secret", "fairway-redis", check=False)
    node.kubectl("create", "secret", "generic", "fairway-redis", f"--from-literal=url={node.pod_redis_url}")
    repo, tag = IMAGE.split(":")
    # FAIRWAY_E2E_CHART: another copy of the chart (e.g. one with an RBAC rule removed, to see the suite fail)
    chart = os.environ.get("FAIRWAY_E2E_CHART") or str(ROOT / "charts" / "fairway")
    node.helm(
        "install", "fairway", chart,
        "--set", f"image.repository={repo}", "--set", f"image.tag={tag}", "--set", "image.pullPolicy=Never",
        "--wait", "--timeout", "3m", timeout=240,
    )  # fmt: skip
    eventually("the operator Ready", lambda: node.kubectl("rollout", "status", OPERATOR, "--timeout=5s"), 120)
    yield node
    node.helm("uninstall", "fairway", "--wait", check=False, timeout=240)


@pytest.fixture
def cluster_dir(node: RealCluster) -> Path:
    return node.dir

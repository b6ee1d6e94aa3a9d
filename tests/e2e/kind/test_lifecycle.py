"""One scenario on kind: the three examples come up Ready, jobs drain, status shows depths, balance and
weights change, a worker pod deleted mid-job loses nothing, uninstall leaves the CRD."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from support.kind import NAMESPACE, ROOT, Cluster, eventually, sh

pytestmark = pytest.mark.e2e
EXAMPLES = ["weighted-shared-pool", "auto-balanced", "tenant-fair"]


def fairway(url: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "fairway.cli", *args, "--redis", url],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout


def example(name: str) -> str:
    doc = yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text())
    doc["spec"].setdefault("worker", {})["image"] = "fairway:e2e"  # loaded into kind, never pulled
    return yaml.safe_dump(doc)


def test_examples_come_up_drain_rebalance_and_survive_a_pod_deletion(
    cluster: Cluster, redis_forward: str, tmp_path: Path
) -> None:
    names = {n: yaml.safe_load((ROOT / "examples" / f"{n}.yaml").read_text())["metadata"]["name"] for n in EXAMPLES}
    for n in EXAMPLES:
        cluster.kubectl("apply", "-f", "-", input=example(n))
    for n in EXAMPLES:
        eventually(f"{n} Ready", lambda n=n: cluster.condition(names[n], "Ready") == "True", 300)

    fairway(redis_forward, "enqueue", "--queue", "high", "--count", "200", "noop")
    fairway(redis_forward, "enqueue", "--tenant", "42", "--count", "50", "noop")

    def drained() -> bool:
        rows = json.loads(fairway(redis_forward, "queues", "--json"))
        return all(r["ready"] == 0 and r["reserved"] == 0 for r in rows if r["queue"] == "high")

    eventually("jobs drain", drained, 180)
    fairway(redis_forward, "enqueue", "--queue", "low", "--count", "30", "--args", "[0.5]", "sleep")

    def depth_shown() -> bool:
        status = cluster.get("queuesupervisor", names["weighted-shared-pool"]).get("status") or {}
        return any(q["name"] == "low" and q["depth"] > 0 for q in status.get("queues", []))

    eventually("status shows the depth", depth_shown, 60, 1)

    weighted = names["weighted-shared-pool"]
    cluster.kubectl(
        "patch", "queuesupervisor", weighted, "--type=merge", "-p", json.dumps({"spec": {"queueWeights": {"high": 5}}})
    )
    eventually("new weights rolled out", lambda: cluster.condition(weighted, "Ready") == "True", 180)
    cluster.kubectl(
        "patch",
        "queuesupervisor",
        weighted,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"queueWeights": None, "balance": "simple", "maxProcesses": 3}}),
    )
    eventually(
        "balance simple: one Deployment per queue",
        lambda: (
            len(
                json.loads(
                    cluster.kubectl("get", "deployments", "-l", f"fairway.dev/supervisor={weighted}", "-o", "json")
                )["items"]
            )
            == 3
        ),
        180,
    )

    marker = fairway(redis_forward, "enqueue", "--queue", "default", "--args", "[20]", "sleep").strip()

    def running_pod() -> str | None:
        pods = json.loads(cluster.kubectl("get", "pods", "-l", f"fairway.dev/supervisor={weighted}", "-o", "json"))
        for pod in pods["items"]:
            logs = cluster.kubectl("logs", pod["metadata"]["name"], check=False)
            if "sleep" in logs or pod["metadata"]["labels"].get("fairway.dev/pool") == "default":
                return str(pod["metadata"]["name"])
        return None

    time.sleep(5)
    pod = eventually("a worker picked the long job", running_pod, 120)
    cluster.kubectl("delete", "pod", pod, "--wait=false")

    def finished() -> bool:
        rows = json.loads(fairway(redis_forward, "queues", "--json"))
        return all(r["ready"] == 0 and r["reserved"] == 0 for r in rows if r["queue"] == "default")

    eventually("the job survives its pod", finished, 300, 5)
    failed = json.loads(fairway(redis_forward, "failed", "list", "--queue", "default", "--json"))
    assert not [r for r in failed if r["id"] == marker]

    sh("helm", "--kubeconfig", str(cluster.kubeconfig), "uninstall", "fairway", "-n", NAMESPACE)
    crd = sh("kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "crd", "queuesupervisors.fairway.dev")
    assert "queuesupervisors.fairway.dev" in crd, "the CRD is kept on uninstall"

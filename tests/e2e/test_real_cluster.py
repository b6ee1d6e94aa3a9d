"""The chart's operator and workers as pods on a real Kubernetes (cluster/node.py): every controller
real (Deployments, ReplicaSets honouring pod-deletion-cost, the garbage collector, the scheduler, a
kubelet that sends SIGTERM), RBAC enforced, the operator under the chart's service account only.

The cases run in file order on one installation (the last uninstalls it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
import redis
import yaml

from fairway.resource.schedules import CRON_MESSAGE
from support.image import IMAGE
from support.real_cluster import ROOT, RealCluster, eventually

# (the first case also builds the cluster where no build is cached: 6-10 minutes on 2 cores)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
POOL = "fairway.dev/pool"
SUPERVISOR = "fairway.dev/supervisor"
OPERATOR_PODS = "app.kubernetes.io/instance=fairway,app.kubernetes.io/name=fairway"


def fairway(node: RealCluster, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "fairway.cli", *args, "--redis", node.redis_url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def supervisor(name: str, **spec: Any) -> str:
    body = {
        "apiVersion": "fairway.dev/v1alpha1",
        "kind": "QueueSupervisor",
        "metadata": {"name": name},
        "spec": {
            "redis": {"secretRef": {"name": "fairway-redis", "key": "url"}},
            "worker": {"image": IMAGE, "handlers": ["fairway.builtins"]},
            **spec,
        },
    }
    return yaml.safe_dump(body)


def direct(node: RealCluster) -> redis.Redis:
    return redis.Redis(unix_socket_path=str(node.redis_socket))


def jobs_run(node: RealCluster, queue: str) -> int:
    """Jobs the queue's workers finished, from the per-minute run figures they write (a job run twice
    counts twice)."""
    fields = direct(node).hgetall(f"fairway:{{{queue}}}:runtime")
    return sum(int(v) for k, v in fields.items() if k.decode().endswith(":n"))


def pods_of(node: RealCluster, name: str) -> list[dict[str, Any]]:
    return [p for p in node.items("pods", "-l", f"{SUPERVISOR}={name}") if not p["metadata"].get("deletionTimestamp")]


def holder_pod(node: RealCluster, name: str, queue: str) -> str:
    """The pod whose worker holds the queue's one reserved job (its lease is tagged with the pod's name)."""
    (member,) = direct(node).zrange(f"fairway:{{{queue}}}:reserved", 0, -1)
    return next(p["metadata"]["name"] for p in pods_of(node, name) if p["metadata"]["name"] in member.decode())


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p.get("status", {}).get("phase") == "Running"]


def test_a_supervisor_comes_up_runs_jobs_and_shows_its_state(installed: RealCluster) -> None:
    node = installed
    # A schedule of its own queue, so the later cases' counts of e2e-basic's jobs stay theirs alone.
    beat = {"name": "beat", "every": 1, "handler": "noop", "queue": "e2e-beat"}
    spec = {"queues": ["e2e-basic", "e2e-beat"], "maxProcesses": 2, "timeout": 60, "schedules": [beat]}
    node.kubectl("apply", "-f", "-", input=supervisor("basic", **spec))
    eventually("basic Ready", lambda: node.condition("basic", "Ready") == "True", 120)
    assert running(pods_of(node, "basic")), "its worker pods run"
    fairway(node, "enqueue", "--queue", "e2e-basic", "--count", "20", "noop")
    eventually("20 jobs run by the pods", lambda: jobs_run(node, "e2e-basic") >= 20, 90)
    table = node.kubectl("get", "qsup", "basic")
    assert "True" in table.splitlines()[1], table

    bad = supervisor("bad", queues=["a", "b"], balance="auto", queueWeights={"a": 3})
    refused = subprocess.run(
        [str(node.bin / "kubectl"), "--kubeconfig", str(node.kubeconfig), "-n", "fairway-e2e", "apply", "-f", "-"],
        input=bad, capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "The [bad.queueWeights] option only applies when [balance] is none" in refused.stderr, refused.stderr

    # Its schedule ticks (the pods and the operator), and the status shows its runs.
    shown = eventually(
        "the schedule's runs in the status",
        lambda: [x for x in node.get("queuesupervisor", "basic").get("status", {}).get("schedules", [])
                 if x.get("lastRunTime") and len(x.get("nextRunTimes", [])) == 3],
        60,
    )  # fmt: skip
    assert [x["name"] for x in shown] == ["beat"]
    # A bad cron expression: the real API server refuses it with the words `fairway validate` prints.
    bad_cron = supervisor(
        "bad-cron", queues=["a"], schedules=[{"name": "c", "cron": "61 * * * *", "handler": "noop", "queue": "a"}]
    )
    refused = subprocess.run(
        [str(node.bin / "kubectl"), "--kubeconfig", str(node.kubeconfig), "-n", "fairway-e2e", "apply", "-f", "-"],
        input=bad_cron, capture_output=True, text=True,
    )  # fmt: skip
    assert refused.returncode != 0 and CRON_MESSAGE in refused.stderr, refused.stderr


def test_a_pool_wakes_from_zero_grows_and_shrinks_sparing_its_busy_pod(installed: RealCluster) -> None:
    node = installed
    spec = {
        "queues": ["e2e-burst"], "balance": "auto", "concurrency": 2, "minProcesses": 0, "maxProcesses": 4,
        "balanceMaxShift": 4, "balanceCooldown": 2, "scaleDownDelay": 10, "timeout": 120,
    }  # fmt: skip
    node.kubectl("apply", "-f", "-", input=supervisor("burst", **spec))
    eventually("burst Ready at zero pods", lambda: node.condition("burst", "Ready") == "True", 120)
    assert not pods_of(node, "burst"), "minProcesses 0: no pod while nothing waits"

    r = direct(node)
    enqueued = time.monotonic()
    long_job = fairway(node, "enqueue", "--queue", "e2e-burst", "--args", "[45]", "sleep").strip()
    eventually("the first job started", lambda: r.zcard("fairway:{e2e-burst}:reserved") >= 1, 90, 0.1)
    wake_s = time.monotonic() - enqueued
    busy_pod = holder_pod(node, "burst", "e2e-burst")
    print(f"\nwake from zero: {wake_s:.1f} s from enqueue to the job's start")  # (the note quotes it)
    assert wake_s < 30

    fairway(node, "enqueue", "--queue", "e2e-burst", "--count", "40", "--args", "[3]", "sleep")
    eventually("the pool grew to 4 pods", lambda: len(running(pods_of(node, "burst"))) == 4, 90)
    eventually("the short jobs drained", lambda: jobs_run(node, "e2e-burst") >= 40, 180, 2)
    # Only the long job runs now: the pool shrinks, and the ReplicaSet removes the idle pods first.
    eventually("the pool shrank to the busy pod", lambda: len(pods_of(node, "burst")) == 1, 90, 2)
    (left,) = pods_of(node, "burst")
    assert left["metadata"]["name"] == busy_pod, "the ReplicaSet removed the idle pods (deletion cost 0) first"
    assert r.zcard("fairway:{e2e-burst}:reserved") == 1, "the long job still runs, on the pod that was spared"
    eventually("the long job finished", lambda: jobs_run(node, "e2e-burst") >= 41, 90, 2)
    assert jobs_run(node, "e2e-burst") == 41, "every job ran once"
    assert not json.loads(fairway(node, "failed", "list", "--queue", "e2e-burst", "--json"))
    events = node.kubectl("get", "events", "--field-selector", "reason=Scaled", "-o", "json")
    assert len(json.loads(events)["items"]) >= 2, "each change posts a Scaled event"
    eventually("back to zero pods", lambda: not pods_of(node, "burst"), 60, 2)
    assert long_job


def test_a_worker_pod_deleted_mid_job_drains_it(installed: RealCluster) -> None:
    node = installed
    before = jobs_run(node, "e2e-basic")
    job = fairway(node, "enqueue", "--queue", "e2e-basic", "--args", "[12]", "sleep").strip()
    r = direct(node)
    eventually("the job started", lambda: r.zcard("fairway:{e2e-basic}:reserved") == 1, 60, 0.2)
    pod = holder_pod(node, "basic", "e2e-basic")
    node.kubectl("delete", "pod", pod, "--wait=false")
    eventually("the job finished on its stopping pod", lambda: jobs_run(node, "e2e-basic") == before + 1, 60, 1)
    assert r.zcard("fairway:{e2e-basic}:reserved") == 0 and r.llen("fairway:{e2e-basic}:ready") == 0
    assert not json.loads(fairway(node, "failed", "list", "--queue", "e2e-basic", "--json"))
    assert job


def restarts(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["restartCount"])


def test_a_wedged_worker_is_restarted_by_the_kubelet(installed: RealCluster) -> None:
    """Its process stopped (SIGSTOP from the node: its loop and its probe thread stand still): the
    liveness probe fails and the kubelet restarts the container; the new one serves."""
    node = installed
    pod = running(pods_of(node, "basic"))[0]
    name, before = pod["metadata"]["name"], restarts(pod)
    os.kill(node.container_pid(name), signal.SIGSTOP)
    eventually("the kubelet restarted the wedged worker", lambda: restarts(node.get("pod", name)) > before, 150, 2)
    eventually(
        "the restarted worker ready",
        lambda: node.get("pod", name)["status"]["containerStatuses"][0].get("ready"),
        60,
        1,
    )
    done = jobs_run(node, "e2e-basic")
    fairway(node, "enqueue", "--queue", "e2e-basic", "--count", "3", "noop")
    eventually("jobs run after the restart", lambda: jobs_run(node, "e2e-basic") >= done + 3, 60)


def test_an_api_server_outage_never_restarts_the_operator(installed: RealCluster) -> None:
    """Pods cut off the API server for longer than the operator's liveness budget (3 x 20 s): its
    /healthz keeps answering, so the kubelet leaves it running; once the API is back it works on."""
    node = installed
    (operator,) = node.items("pods", "-l", OPERATOR_PODS)
    name, before = operator["metadata"]["name"], restarts(operator)
    node.api_rule("-D")
    try:
        time.sleep(75)
    finally:
        node.api_rule("-A")
    assert restarts(node.get("pod", name)) == before, node.kubectl("describe", "pod", name)[-3000:]
    node.kubectl("patch", "queuesupervisor", "basic", "--type=merge", "-p", json.dumps({"spec": {"maxProcesses": 3}}))
    eventually(
        "the operator acts on a change after the outage",
        lambda: (
            node.get("queuesupervisor", "basic").get("status", {}).get("observedGeneration")
            == node.get("queuesupervisor", "basic")["metadata"]["generation"]
        ),
        90,
    )


def test_the_operator_rescheduled_rewrites_nothing(installed: RealCluster) -> None:
    node = installed
    children = {
        (o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
        for kind in ("deployments", "configmaps")
        for o in node.items(kind, "-l", SUPERVISOR)
    }
    (operator,) = [p["metadata"]["name"] for p in node.items("pods", "-l", OPERATOR_PODS)]
    node.kubectl("delete", "pod", operator)
    eventually(
        "a new operator Ready",
        lambda: any(
            p["metadata"]["name"] != operator
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
            for p in node.items("pods", "-l", OPERATOR_PODS)
        ),
        120,
    )
    time.sleep(15)  # more than a status pass: the quiet operator writes nothing
    after = {
        (o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
        for kind in ("deployments", "configmaps")
        for o in node.items(kind, "-l", SUPERVISOR)
    }
    assert after == children, "no child rewritten, none added or lost"


def test_the_operators_requests_are_all_allowed_by_the_charts_rbac(installed: RealCluster) -> None:
    logs = installed.kubectl("logs", "deployment/fairway")
    assert "403" not in logs and "Forbidden" not in logs and "forbidden" not in logs, logs[-3000:]
    assert "Traceback" not in logs, logs[-3000:]


def test_helm_upgrade_then_uninstall_leaves_nothing_behind(installed: RealCluster) -> None:
    node = installed
    node.helm(
        "upgrade", "fairway", str(ROOT / "charts" / "fairway"), "--reuse-values", "--set", "logLevel=debug",
        "--wait", "--timeout", "3m", timeout=240,
    )  # fmt: skip
    eventually("the operator rolled", lambda: node.kubectl("rollout", "status", "deployment/fairway"), 120)
    node.helm("uninstall", "fairway", "--wait", timeout=240)
    for name in ("basic", "burst"):
        node.kubectl("delete", "queuesupervisor", name, "--wait=true", timeout=120)
    eventually(
        "the garbage collector removed every child",
        lambda: not node.items("deployments", "-l", SUPERVISOR) and not node.items("configmaps", "-l", SUPERVISOR),
        120,
    )
    eventually("no pod left", lambda: not node.items("pods"), 120, 2)
    assert node.kubectl("get", "crd", "queuesupervisors.fairway.dev", namespace=None), "the CRD is kept"
    leftovers = node.kubectl("get", "clusterroles,clusterrolebindings", "-o", "name", namespace=None)
    assert not [o for o in leftovers.split() if o.split("/", 1)[1].startswith("fairway")], leftovers

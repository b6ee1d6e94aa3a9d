"""The operator's scaling, run as it runs: `fairway operator` in its own process (the wake-up) or kopf
with the real handlers in this one (the rest), against the Kubernetes emulator over HTTP, a real Redis
and real `fairway worker` processes. The emulator runs no ReplicaSet
controller (no pods come or go), so these tests assert what the operator *sends*, from the emulator's
log of writes, in order."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_operator_command import kubeconfig
from test_reconcile import NS, api, children, condition, create, get, supervisor

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway_operator.scaling import DELETION_COST
from support.kopf_kmock import Emulator, eventually, running_operator, secret
from support.workers import start_worker

pytestmark = pytest.mark.asyncio


async def make_secret(redis_url: str) -> None:
    _, _, core = api()
    await asyncio.to_thread(core.create_namespaced_secret, NS, secret(NS, "redis", redis_url))


def replica_patches(k8s: Emulator) -> list[tuple[float, str | None, int]]:
    return [
        (t, name, body["spec"]["replicas"])
        for t, action, plural, name, body in k8s.writes
        if plural == "deployments" and isinstance(body, dict) and set(body) == {"spec"} and "replicas" in body["spec"]
    ]


def scaled_events(k8s: Emulator) -> list[dict[str, Any]]:
    return [
        obj.raw
        for (res, ns, _), obj in list(k8s.objects.items())
        if res.plural == "events" and ns == NS and obj.raw.get("reason") == "Scaled"
    ]


@contextlib.asynccontextmanager
async def operator_process(k8s: Emulator, tmp_path: Path) -> AsyncIterator[None]:
    """`fairway operator` in its own process, as users run it (its default 1 s tick), logged in to
    the emulator with a kubeconfig."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig(tmp_path / "config", str(k8s.url).rstrip("/")))}
    log = (tmp_path / "operator.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fairway.cli", "operator", "--all-namespaces", env=env, stdout=log, stderr=log
    )
    try:
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 20)
        log.close()
    assert code == 0, (tmp_path / "operator.log").read_text()[-3000:]


async def test_a_pool_at_zero_is_woken_by_its_first_job_within_1_5_s(
    k8s: Emulator, redis_url: str, tmp_path: Path
) -> None:
    await make_secret(redis_url)
    async with operator_process(k8s, tmp_path):
        await create(supervisor(balance="auto", queues=["mail"], minProcesses=0, maxProcesses=4))
        assert await eventually(
            lambda: [d["spec"]["replicas"] for d in children(k8s, "Deployment").values()] == [0], 10
        )
        await asyncio.sleep(1.5)  # a few idle polls: nothing is scaled while nothing waits
        assert replica_patches(k8s) == []
        enqueued = time.monotonic()
        Client(redis_url).enqueue("noop", queue="mail")
        assert await eventually(lambda: replica_patches(k8s), 5)
        (t, name, replicas) = replica_patches(k8s)[0]
        assert replicas == 1 and name in children(k8s, "Deployment")
        assert t - enqueued <= 1.5, f"woken {t - enqueued:.2f} s after the enqueue"
        assert await eventually(lambda: scaled_events(k8s), 5)
        (event,) = scaled_events(k8s)
        assert event["involvedObject"]["kind"] == "QueueSupervisor" and event["type"] == "Normal"
        assert event["message"].startswith("pool mail: 0 -> 1 pod (1 ready")

        async def status_shows_it() -> bool:
            pools = ((await get("shop")).get("status") or {}).get("pools") or []
            return bool(pools and pools[0].get("lastScaledReason") == event["message"])

        assert await eventually(status_shows_it, 10)
        (pool,) = (await get("shop"))["status"]["pools"]
        assert (pool["desiredReplicas"], pool["waiting"], pool["slots"]) == (1, 1, 1) and pool["lastScaledTime"]


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "worker", "image": "fairway"}]},
    }


async def test_scale_in_sets_deletion_costs_from_live_heartbeats_before_lowering_replicas(
    k8s: Emulator, redis_url: str
) -> None:
    await make_secret(redis_url)
    _, apps, core = api()
    async with running_operator(k8s, loop_tick_s=0.5):
        await create(
            supervisor(
                balance="auto", queues=["mail"], minProcesses=1, maxProcesses=3, scaleDownDelay=2, balanceMaxShift=2
            )
        )
        assert await eventually(lambda: children(k8s, "Deployment"), 10)
        (deployment,) = children(k8s, "Deployment").values()
        labels = deployment["spec"]["selector"]["matchLabels"]
        for name in ("pod-busy", "pod-idle", "pod-new"):
            await asyncio.to_thread(core.create_namespaced_pod, NS, pod(name, labels))
        Client(redis_url).enqueue("record", "long", 20, queue="mail", timeout=60)
        busy = start_worker(redis_url, "--queues", "mail", env={"POD_NAME": "pod-busy"})
        idle = start_worker(redis_url, "--queues", "other", env={"POD_NAME": "pod-idle"})  # ("pod-new": no worker yet)
        try:
            inspector = Inspector(connect(redis_url))
            assert await eventually(lambda: sum(w.get("busy", 0) for w in inspector.workers()) == 1, 15)
            # Three pods, as a ReplicaSet would have them after someone scaled the pool to 3.
            await asyncio.to_thread(
                apps.patch_namespaced_deployment, deployment["metadata"]["name"], NS, {"spec": {"replicas": 3}}
            )
            assert await eventually(lambda: [r for _, _, r in replica_patches(k8s)][-1:] == [1], 20)
        finally:
            for worker in (busy, idle):
                worker.terminate()
                worker.wait(30)
    print(
        [
            (round(t, 2), a, p, n, b if p != "deployments" or set(b) == {"spec"} else "...")
            for t, a, p, n, b in k8s.writes
            if p in ("deployments", "pods")
        ]
    )
    costs = {
        name: body["metadata"]["annotations"][DELETION_COST]
        for t, action, plural, name, body in k8s.writes
        if plural == "pods"
        and isinstance(body, dict)
        and DELETION_COST in (body.get("metadata") or {}).get("annotations", {})
    }
    assert costs == {"pod-busy": "1", "pod-idle": "0", "pod-new": "0"}, "idle and starting pods cheapest"
    first_down = next(t for t, _, r in replica_patches(k8s) if r < 3)
    last_cost = max(t for t, _, plural, _, body in k8s.writes if plural == "pods")
    assert last_cost < first_down, "every pod's cost is set before the replicas go down"


async def test_no_scaling_decision_on_missing_figures(k8s: Emulator, operator: Any) -> None:
    await make_secret("redis://127.0.0.1:1/0")  # nothing listens there
    await create(supervisor(balance="auto", queues=["mail"], minProcesses=0, maxProcesses=4))
    assert await eventually(lambda: children(k8s, "Deployment"), 10)

    async def degraded() -> dict[str, Any] | None:
        return condition(await get("shop"), "Degraded")

    found = await eventually(degraded, 10)
    assert found and found["status"] == "True" and "unreachable" in found["message"]
    await asyncio.sleep(2)
    assert replica_patches(k8s) == [], "the pool holds its size while Redis cannot be read"

"""`fairway operator` as users run it: its own process, kopf's default login (a kubeconfig), liveness, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes
import pytest
import yaml

from support.kopf_kmock import Emulator, eventually, secret
from support.redis_procs import free_port

pytestmark = pytest.mark.asyncio


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "kmock",
                "clusters": [{"name": "kmock", "cluster": {"server": server}}],
                "users": [{"name": "kmock", "user": {"token": "t"}}],
                "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "kmock"}}],
            }
        )
    )
    return path


async def test_the_operator_command_reconciles_serves_liveness_and_stops_on_sigterm(
    k8s: Emulator, redis_url: str, tmp_path: Path
) -> None:
    port = free_port()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig(tmp_path / "config", str(k8s.url).rstrip("/")))}
    log = (tmp_path / "operator.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fairway.cli",
        "operator",
        "--all-namespaces",
        "--liveness",
        f"http://127.0.0.1:{port}/healthz",
        "--worker-image",
        "example/worker:1",
        env=env,
        stdout=log,
        stderr=log,
    )
    try:
        client = kubernetes.client.ApiClient()
        core, custom = kubernetes.client.CoreV1Api(client), kubernetes.client.CustomObjectsApi(client)
        await asyncio.to_thread(core.create_namespaced_secret, "jobs", secret("jobs", "redis", redis_url))
        body: dict[str, Any] = {
            "apiVersion": "fairway.dev/v1alpha1",
            "kind": "QueueSupervisor",
            "metadata": {"name": "cli", "namespace": "jobs"},
            "spec": {"redis": {"secretRef": {"name": "redis", "key": "url"}}, "queues": ["q"]},
        }
        await asyncio.to_thread(
            custom.create_namespaced_custom_object, "fairway.dev", "v1alpha1", "jobs", "queuesupervisors", body
        )

        def deployment() -> dict[str, Any] | None:
            return next(
                (
                    o.raw
                    for (res, _, name), o in list(k8s.objects.items())
                    if res.plural == "deployments" and name == "fairway-cli" and not o.deleted
                ),
                None,
            )

        found = await eventually(deployment, 20)
        assert found, (tmp_path / "operator.log").read_text()[-3000:]
        assert found["spec"]["template"]["spec"]["containers"][0]["image"] == "example/worker:1"

        async def answers(path: str) -> bool:
            try:
                async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as r:
                    return r.status == 200
            except aiohttp.ClientError:
                return False

        assert await eventually(lambda: answers("/healthz"), 10)
        assert await eventually(lambda: answers("/readyz"), 10), "ready once kopf runs and its loop ticks"
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 20)
        log.close()
    assert code == 0, (tmp_path / "operator.log").read_text()[-3000:]

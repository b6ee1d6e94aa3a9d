"""`fairway operator`'s start-up as a new user meets it: each way it cannot work ends in one line naming
the cause and the fix, with its documented exit code and no traceback; an API server that is not
reachable yet is waited for with backoff (and a SIGTERM while waiting is a clean exit).

The refused-credentials case is staged by a small HTTP server that answers 401 to everything, as a
real API server does for a token it does not accept (kmock's emulator does no authentication). The
CRD-missing case uses kmock's emulator without the QueueSupervisor resource declared: its discovery
answers 404 for the group version, as a real server does. A missing namespace is staged by a small server that answers
a create there with 404, as a real server's namespace admission does (kmock stores objects in any
namespace).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import kmock
import pytest
import pytest_asyncio
from aiohttp import web
from test_operator_command import kubeconfig

from support.kopf_kmock import Emulator, declare_resources
from support.redis_procs import free_port


def operator(env: dict[str, str], *extra: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "fairway.cli", "operator", "--all-namespaces"]
    cmd += ["--liveness", f"http://127.0.0.1:{free_port()}/healthz", *extra]
    return subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """What it printed to stderr besides log lines: exactly one line, and no traceback anywhere."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("fairway operator:")]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


def no_cluster(tmp_path: Path) -> dict[str, str]:
    """Not in a pod (no service host), and a kubeconfig path of the test's choosing."""
    env = {"KUBECONFIG": str(tmp_path / "missing"), "HOME": str(tmp_path)}
    os.environ.pop("KUBERNETES_SERVICE_HOST", None)
    return env


def test_a_taken_metrics_port_is_one_line_and_exit_3(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = operator(no_cluster(tmp_path), "--metrics-port", str(port))
    assert result.returncode == 3
    line = one_line(result)
    assert f"port {port} (--metrics-port) is in use" in line and "pass another --metrics-port" in line


def test_a_taken_liveness_port_is_one_line_and_exit_3(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cmd = [sys.executable, "-m", "fairway.cli", "operator", "--all-namespaces", "--metrics-port", "0"]
        cmd += ["--liveness", f"http://127.0.0.1:{port}/healthz"]
        result = subprocess.run(cmd, env={**os.environ, **no_cluster(tmp_path)}, capture_output=True, text=True)
    assert result.returncode == 3
    assert f"port {port} (--liveness) is in use" in one_line(result)


def test_no_kubeconfig_is_one_line_and_exit_4(tmp_path: Path) -> None:
    result = operator(no_cluster(tmp_path), "--metrics-port", "0")
    assert result.returncode == 4
    line = one_line(result)
    assert "no usable Kubernetes credentials" in line and "KUBECONFIG" in line


def test_an_invalid_kubeconfig_is_one_line_and_exit_4(tmp_path: Path) -> None:
    env = no_cluster(tmp_path)
    Path(env["KUBECONFIG"]).write_text("apiVersion: v1\nkind: Config\nclusters: [oops\n")
    result = operator(env, "--metrics-port", "0")
    assert result.returncode == 4
    assert "no usable Kubernetes credentials" in one_line(result)


@contextlib.asynccontextmanager
async def staged(app: web.Application) -> AsyncIterator[str]:
    """A small HTTP server answering as a real API server would in a case the emulator cannot stage."""
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest_asyncio.fixture
async def refusing_server() -> AsyncIterator[str]:
    async def refuse(_: web.Request) -> web.Response:
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Unauthorized", "code": 401},
            status=401,
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    async with staged(app) as url:
        yield url


@pytest.mark.asyncio
async def test_refused_credentials_are_one_line_and_exit_4(refusing_server: str, tmp_path: Path) -> None:
    env = {**no_cluster(tmp_path), "KUBECONFIG": str(kubeconfig(tmp_path / "config", refusing_server))}
    result = await asyncio.to_thread(operator, env, "--metrics-port", "0")
    assert result.returncode == 4
    line = one_line(result)
    assert "refused the credentials (401" in line and refusing_server in line


@pytest_asyncio.fixture
async def cluster_without_the_crd() -> AsyncIterator[str]:
    async with Emulator() as emulator, kmock.Server(emulator):
        declare_resources(emulator)
        del emulator.resources["fairway.dev/v1alpha1/queuesupervisors"]
        yield str(emulator.url).rstrip("/")


@pytest.mark.asyncio
async def test_a_missing_crd_is_one_line_and_exit_5(cluster_without_the_crd: str, tmp_path: Path) -> None:
    env = {**no_cluster(tmp_path), "KUBECONFIG": str(kubeconfig(tmp_path / "config", cluster_without_the_crd))}
    result = await asyncio.to_thread(operator, env, "--metrics-port", "0")
    assert result.returncode == 5
    line = one_line(result)
    assert "fairway.dev/v1alpha1" in line and "install the QueueSupervisor CRD" in line


@pytest_asyncio.fixture
async def cluster_without_the_namespace() -> AsyncIterator[str]:
    """Serves the QueueSupervisor API, and answers a create in namespace `ghost` as a real server does
    when the namespace does not exist (kmock's emulator stores objects in any namespace)."""

    async def discovery(_: web.Request) -> web.Response:
        return web.json_response({"kind": "APIResourceList", "groupVersion": "fairway.dev/v1alpha1", "resources": []})

    async def missing(_: web.Request) -> web.Response:
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
        return web.json_response({**status, "message": 'namespaces "ghost" not found'}, status=404)

    app = web.Application()
    app.router.add_get("/apis/fairway.dev/v1alpha1", discovery)
    app.router.add_post("/api/v1/namespaces/ghost/configmaps", missing)
    async with staged(app) as url:
        yield url


@pytest.mark.asyncio
async def test_a_missing_namespace_is_one_line_and_exit_6(cluster_without_the_namespace: str, tmp_path: Path) -> None:
    env = {**no_cluster(tmp_path), "KUBECONFIG": str(kubeconfig(tmp_path / "config", cluster_without_the_namespace))}
    cmd = [sys.executable, "-m", "fairway.cli", "operator", "--namespace", "ghost", "--metrics-port", "0"]
    cmd += ["--liveness", f"http://127.0.0.1:{free_port()}/healthz"]
    result = await asyncio.to_thread(
        subprocess.run, cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 6, result.stderr[-2000:]
    line = one_line(result)
    assert "namespace 'ghost' does not exist: create it" in line


def test_a_namespace_pattern_is_refused_as_bad_arguments(tmp_path: Path) -> None:
    """kopf's namespace patterns need Namespace reads the chart's Roles do not grant: exact names only."""
    cmd = [sys.executable, "-m", "fairway.cli", "operator", "--namespace", "team-*"]
    result = subprocess.run(cmd, env={**os.environ, **no_cluster(tmp_path)}, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "'team-*' is not a namespace name" in result.stderr and "--all-namespaces" in result.stderr


def probe(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_an_unreachable_api_server_is_retried_with_backoff_and_sigterm_ends_it_cleanly(tmp_path: Path) -> None:
    """While it waits, the liveness probe answers (an API-server outage never gets it restarted) and
    the readiness probe says not ready."""
    env = {
        **no_cluster(tmp_path),
        "KUBECONFIG": str(kubeconfig(tmp_path / "config", f"http://127.0.0.1:{free_port()}")),
    }
    health = free_port()
    cmd = [sys.executable, "-m", "fairway.cli", "operator", "--all-namespaces", "--metrics-port", "0"]
    cmd += ["--liveness", f"http://127.0.0.1:{health}/healthz"]
    log = tmp_path / "operator.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + 20
            while log.read_text().count("is not reachable") < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert probe(health, "/healthz") == 200, "alive while waiting for the API server"
            assert probe(health, "/readyz") == 503, "not ready before kopf runs"
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(20)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = log.read_text()
    assert "Traceback" not in text, text[-2000:]
    retries = [line for line in text.splitlines() if "is not reachable" in line]
    assert len(retries) >= 2, text[-2000:]
    assert "retrying in 1 s" in retries[0] and "retrying in 2 s" in retries[1], "the wait doubles"
    assert code == 0


def test_the_documented_exit_codes_are_the_ones_it_uses() -> None:
    from fairway_operator.exits import EXIT_CODES

    text = (Path(__file__).parents[3] / "docs" / "deploy.md").read_text()
    rows = {int(code): cause for code, cause in re.findall(r"^\| (\d+) \| (.+) \|$", text, re.M)}
    assert rows == EXIT_CODES
    help_text = subprocess.run(
        [sys.executable, "-m", "fairway.cli", "operator", "--help"], capture_output=True, text=True
    ).stdout
    assert all(f"{code} " in " ".join(help_text.split()) for code in EXIT_CODES)

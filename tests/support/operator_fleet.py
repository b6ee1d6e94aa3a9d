"""A fleet of QueueSupervisors and `fairway operator` run as a pod runs it, against the emulator in a
process of its own or any API server: shared by bench/operator_scale.py and the restart-at-scale test.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import yaml

from fairway.resource.manifests import validate_spec
from fairway_operator.desired import desired
from support.kopf_kmock import secret
from support.redis_procs import free_port

TESTS = Path(__file__).resolve().parents[1]
GROUP, VERSION, PLURAL = "fairway.dev", "v1alpha1", "queuesupervisors"
WRITES = {"create", "update", "patch", "delete"}
TICKS = os.sysconf("SC_CLK_TCK")


def supervisor(i: int, per_namespace: int) -> dict[str, Any]:
    balance = ("none", "simple", "auto")[i % 3]
    spec: dict[str, Any] = {
        "redis": {"secretRef": {"name": "redis", "key": "url"}},
        # Each supervisor its own queues and tenant group, as teams sharing one Redis have them (two serving
        # one queue would each be told so: SharedQueue).
        "queues": [f"s{i}-high", f"s{i}-default", f"s{i}-low"],
        "balance": balance,
        "maxProcesses": 6,
        "worker": {"handlers": ["fairway.builtins"]},
    }
    if balance == "none":
        spec["queueWeights"] = {f"s{i}-high": 3, f"s{i}-default": 2}
    if i % 4 == 0:
        spec["tenants"] = {"queuePrefix": f"t{i}-", "maxConsecutiveJobs": 5}
        if balance == "none":
            spec["tenants"]["weight"] = 3
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "QueueSupervisor",
        "metadata": {"name": f"sup-{i}", "namespace": namespace_of(i, per_namespace)},
        "spec": spec,
    }


def namespace_of(i: int, per_namespace: int) -> str:
    return f"fwbench-{i // per_namespace}"


def deployments_of(body: dict[str, Any]) -> int:
    spec = validate_spec(body["spec"], body["metadata"]["name"]).spec
    assert spec is not None, body
    return len(desired(body, spec, {}, "fairway:bench"))


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise LookupError(f"no VmHWM for pid {pid}")


@contextlib.contextmanager
def api_server(kubeconfig: str | None) -> Iterator[kubernetes.client.Configuration]:
    if kubeconfig:
        config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=config)
        yield config
        return
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    emulator = subprocess.Popen(
        [sys.executable, "-m", "support.kmock_server"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert emulator.stdout is not None
        yield kubernetes.client.Configuration(host=emulator.stdout.readline().strip())
    finally:
        emulator.kill()
        emulator.wait()


class Operator:
    """`fairway operator` as a pod runs it, talking to `server` (a kubeconfig written for it)."""

    def __init__(self, server: str, workdir: Path) -> None:
        self.kubeconfig = workdir / "operator-kubeconfig"
        cluster = {"name": "c", "cluster": {"server": server}}
        context = {"name": "c", "context": {"cluster": "c", "user": "u"}}
        doc = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "contexts": [context]}
        doc |= {"current-context": "c", "users": [{"name": "u", "user": {}}]}
        self.kubeconfig.write_text(yaml.safe_dump(doc))
        self.metrics_port, self.log = free_port(), workdir / "operator.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        cmd = [sys.executable, "-m", "fairway.cli", "operator", "--all-namespaces", "--log-level", "warning"]
        cmd += ["--metrics-port", str(self.metrics_port), "--liveness", f"http://127.0.0.1:{free_port()}/healthz"]
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
        wait_for(lambda: self.full_passes() is not None, 60, "the operator's metrics")

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)

    def cpu_s(self) -> float:
        assert self.process is not None
        return cpu_s(self.process.pid)

    def peak_rss_mb(self) -> float:
        assert self.process is not None
        return peak_rss_mb(self.process.pid)

    def full_passes(self) -> float | None:
        """Supervisor events handled: full passes plus those that found nothing to write."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2) as answer:
                text = answer.read().decode()
        except OSError:
            return None
        found = re.findall(r'^fairway_reconcile_passes_total\{kind="(?:full|settled)"\} (\S+)$', text, re.M)
        return sum(float(v) for v in found)


def wait_for(check: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.5) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(every_s)
    return time.monotonic() - started


def writes(log: list[Any], since: float, until: float) -> int:
    """The operator's writes in a window of a RecordingProxy's log."""
    return sum(1 for e in log if since <= e.at < until and e.request.by_operator and e.request.verb in WRITES)


def create_secrets(core: Any, namespaces: list[str], redis_url: str) -> None:
    """The Secret `redis` (key `url`) every supervisor of the fleet names, in each of its namespaces."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda ns: core.create_namespaced_secret(ns, secret(ns, "redis", redis_url)), namespaces))


def create_supervisors(custom: Any, bodies: list[dict[str, Any]]) -> None:
    """All at once, as `kubectl apply` of a large manifest would (8 requests at a time)."""

    def create(body: dict[str, Any]) -> Any:
        return custom.create_namespaced_custom_object(GROUP, VERSION, body["metadata"]["namespace"], PLURAL, body)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(create, bodies))


def statuses_current(custom: Any) -> int:
    """Supervisors whose status was written for their current generation."""
    items = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]
    return sum(1 for o in items if (o.get("status") or {}).get("observedGeneration") == o["metadata"].get("generation"))

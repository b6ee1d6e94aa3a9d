"""The e2e suite's cluster: the real single-node Kubernetes of cluster/node.py (`./dev cluster up`),
with Redis for the pods inside its network namespace, the image loaded into its containerd and the
chart installed by the helm built from its Go module, as a user installs it.

A cluster already up (`./dev cluster up`, FAIRWAY_CLUSTER_DIR) is used as it is; otherwise the session
starts one in a temporary directory and stops it at the end. Where the node cannot run (no root, no
Go), every e2e test is skipped with node.py's one line naming what is missing, or fails with it when
FAIRWAY_E2E_REQUIRED is set (CI on this project's machines, where it must run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NODE_PY = ROOT / "cluster" / "node.py"
NAMESPACE = "fairway-e2e"
REDIS_PORT = 6390  # inside the node's namespace (never this machine's 6379)
SAID: list[str] = []  # what `./dev cluster up` printed (each phase's time): the e2e conftest shows it at the end


def sh(*args: str, input: str | None = None, timeout: float = 600, check: bool = True) -> str:
    proc = subprocess.run(args, input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args[:6])} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def eventually(what: str, predicate: Callable[[], Any], deadline_s: float, interval_s: float = 1.0) -> Any:
    """Poll until `predicate` is truthy; fail naming the phase when the deadline passes."""
    end = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < end:
        try:
            last = predicate()
            if last:
                return last
        except AssertionError as exc:  # a kubectl call that failed for now
            last = exc
        time.sleep(interval_s)
    raise AssertionError(f"phase '{what}' did not finish within {deadline_s:.0f} s (last: {last!r})")


def read_env(cluster_dir: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (cluster_dir / "env").read_text().splitlines() if "=" in line)


@dataclass
class RealCluster:
    """A running node: kubectl and helm as a user runs them, and the Redis its pods use."""

    dir: Path
    env: dict[str, str]
    redis_proc: subprocess.Popen[bytes] | None = None
    started_here: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.env["KUBECONFIG"])

    @property
    def bin(self) -> Path:
        return Path(self.env["CLUSTER_BIN"])

    @property
    def redis_socket(self) -> Path:
        return self.dir / "redis.sock"

    @property
    def redis_url(self) -> str:
        """Redis as this machine's tests reach it (a Unix socket: no address outside the namespace)."""
        return f"unix://{self.redis_socket}"

    @property
    def pod_redis_url(self) -> str:
        """Redis as pods reach it: the node address inside the namespace."""
        return f"redis://{self.env['NODE_IP']}:{REDIS_PORT}/0"

    def kubectl(self, *args: str, namespace: str | None = NAMESPACE, **kw: Any) -> str:
        ns = ["-n", namespace] if namespace else []
        return sh(str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), *ns, *args, **kw)

    def helm(self, *args: str, **kw: Any) -> str:
        return sh(str(self.bin / "helm"), "--kubeconfig", str(self.kubeconfig), "-n", NAMESPACE, *args, **kw)

    def get(self, kind: str, name: str) -> dict[str, Any]:
        return dict(json.loads(self.kubectl("get", kind, name, "-o", "json")))

    def items(self, kind: str, *selector: str) -> list[dict[str, Any]]:
        return list(json.loads(self.kubectl("get", kind, *selector, "-o", "json"))["items"])

    def condition(self, name: str, kind: str) -> str | None:
        status = self.get("queuesupervisor", name).get("status") or {}
        return next((c["status"] for c in status.get("conditions", []) if c["type"] == kind), None)

    def load_images(self, *images: str) -> None:
        sh(sys.executable, str(NODE_PY), "--dir", str(self.dir), "images", *images, timeout=600)

    def container_pid(self, pod: str, namespace: str = NAMESPACE) -> int:
        """The host PID of the pod's first container (containerd's task), to act on it from outside."""
        status = self.get("pod", pod)["status"]["containerStatuses"][0]
        container = status["containerID"].split("://", 1)[1]
        tasks = sh("ctr", "--address", self.env["CONTAINERD_SOCK"], "-n", "k8s.io", "tasks", "ls")
        for line in tasks.splitlines()[1:]:
            task, pid, *_ = line.split()
            if task == container:
                return int(pid)
        raise AssertionError(f"no task for {pod}'s container {container}:\n{tasks}")

    def api_rule(self, action: str) -> None:
        """Add ("-A") or delete ("-D") the DNAT rule that takes pods to the API server (the stand-in for
        kube-proxy): deleting it cuts every pod off the API server, nothing else."""
        for chain in ("PREROUTING", "OUTPUT"):
            rule = ["-d", "10.219.0.1/32", "-p", "tcp", "--dport", "443", "-j", "DNAT"]
            rule += ["--to-destination", f"{self.env['NODE_IP']}:6443"]
            sh("ip", "netns", "exec", self.env["NETNS"], "iptables", "-t", "nat", action, chain, *rule)

    def start_redis(self) -> None:
        self.redis_socket.unlink(missing_ok=True)
        cmd = ["nsenter", f"--net=/run/netns/{self.env['NETNS']}", "redis-server", "--bind", self.env["NODE_IP"]]
        cmd += ["--port", str(REDIS_PORT), "--unixsocket", str(self.redis_socket), "--unixsocketperm", "700"]
        cmd += ["--save", "", "--appendonly", "no", "--protected-mode", "no"]
        self.redis_proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        eventually("Redis inside the node's namespace", self.redis_socket.exists, 20, 0.1)

    def stop(self) -> None:
        if self.redis_proc is not None:
            self.redis_proc.terminate()
            self.redis_proc.wait(10)
        if self.started_here:
            subprocess.run([sys.executable, str(NODE_PY), "down", "--dir", str(self.dir)], timeout=300, check=False)


def start_or_reuse(tmp: Path) -> RealCluster | str:
    """The running cluster, or one started for this session; a string: why none can run here."""
    existing = Path(os.environ.get("FAIRWAY_CLUSTER_DIR", "/tmp/fairway-cluster"))
    if (existing / "env").exists():
        return RealCluster(existing, read_env(existing))
    d = tmp / "node"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(NODE_PY), "up", "--dir", str(d)], capture_output=True, text=True, timeout=3600
    )
    SAID.extend(line for line in proc.stderr.splitlines() if line.startswith("cluster:"))
    if proc.returncode == 2:
        return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "cluster/node.py cannot run here"
    if proc.returncode != 0:
        raise AssertionError(f"./dev cluster up failed:\n{proc.stderr[-4000:]}")
    cluster = RealCluster(d, read_env(d), started_here=True)
    cluster.notes.append(f"cluster up in {time.monotonic() - started:.0f} s")
    return cluster

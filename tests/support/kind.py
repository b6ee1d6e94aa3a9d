"""Helpers for the kind end-to-end suite (tests/e2e): tools check, shell, deadlines, the cluster handle."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.real_cluster import eventually, sh  # noqa: F401  (the kind suite imports them from here)

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "fairway:e2e"
NAMESPACE = "fairway-e2e"

REDIS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: redis}
spec:
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec:
      containers:
      - name: redis
        image: redis:7-alpine
        args: ["--save", "", "--appendonly", "no"]
        ports: [{containerPort: 6379}]
---
apiVersion: v1
kind: Service
metadata: {name: redis}
spec:
  selector: {app: redis}
  ports: [{port: 6379, targetPort: 6379}]
"""


def missing_tools() -> list[str]:
    missing = [tool for tool in ("kind", "kubectl", "helm", "docker") if shutil.which(tool) is None]
    if "docker" not in missing:
        engine = subprocess.run(["docker", "info"], capture_output=True, timeout=30)
        if engine.returncode != 0:
            missing.append("a running Docker engine")
    return missing


@dataclass
class Cluster:
    name: str
    kubeconfig: Path

    def kubectl(self, *args: str, **kw: Any) -> str:
        return sh("kubectl", "--kubeconfig", str(self.kubeconfig), "-n", NAMESPACE, *args, **kw)

    def get(self, kind: str, name: str) -> dict[str, Any]:
        return json.loads(self.kubectl("get", kind, name, "-o", "json"))

    def condition(self, name: str, kind: str) -> str | None:
        status = self.get("queuesupervisor", name).get("status") or {}
        return next((c["status"] for c in status.get("conditions", []) if c["type"] == kind), None)

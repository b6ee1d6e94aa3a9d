"""What the test cluster's scripts share: the node's layout (addresses, names), its one-line refusal
and running a command with its error said."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE = "fairway-node"
NODE_IP = "10.217.0.1"  # on lo inside the namespace: the API server, the kubelet, Redis for the pods
POD_CIDR = "10.218.0.0/24"
SERVICE_CIDR = "10.219.0.0/24"
KUBERNETES_SERVICE_IP = "10.219.0.1"
API_PORT = 6443
PAUSE_IMAGE = "docker.io/library/fairway-pause:local"
DEFAULT_DIR = Path(os.environ.get("FAIRWAY_CLUSTER_DIR", "/tmp/fairway-cluster"))


class Missing(Exception):
    """What this machine lacks for a cluster, in one line with the fix."""


def say(text: str) -> None:
    print(f"cluster: {text}", file=sys.stderr, flush=True)


def run(*cmd: str, check: bool = True, **kw: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}")
    return done  # type: ignore[no-any-return]

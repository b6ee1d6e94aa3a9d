"""Who a worker process is, in one place: its heartbeat's field, the tag on every reservation it
holds (so `reserved` shows which worker holds a job), and the pod the operator can match it to.

`POD_NAME` (set from the downward API in the Deployment the operator renders) names the pod; outside
Kubernetes the host name stands in. The pid tells apart processes that share a pod or a host.
"""

from __future__ import annotations

import os
import socket


def pod_name() -> str:
    return os.environ.get("POD_NAME") or socket.gethostname()


def worker_identity() -> str:
    return f"{pod_name()}:{os.getpid()}"

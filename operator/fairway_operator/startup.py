"""What `fairway operator` checks before kopf starts: a start-up that cannot work ends in one line that
names the cause and the fix, with a documented exit code (docs/deploy.md), never a traceback; one
that may work in a moment (the API server not reachable yet) waits, with backoff, and says so.

Checked, in order: the ports it must listen on (metrics, liveness), the Kubernetes credentials (in a
pod its ServiceAccount, else the kubeconfig), then one discovery request for the QueueSupervisor API
(`/apis/fairway.dev/v1alpha1`): 401 means the credentials are refused, 404 that the CRD is not
installed; a refused connection, a timeout or a 5xx is retried. Discovery needs no RBAC rule (every
authenticated user may read it), so the check adds nothing to the operator's privileges.
"""

from __future__ import annotations

import errno
import logging
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import urllib3
from kubernetes.client import ApiClient, ApiException

from fairway.resource.spec import API_GROUP, API_VERSION
from fairway_operator.exits import NO_CREDENTIALS, NO_NAMESPACE, NOT_INSTALLED, PORT_TAKEN, StartupError
from fairway_operator.kube import api_host, discover, dry_run_config_map, load_config, operator_client

log = logging.getLogger("fairway.operator")

BACKOFF_MAX_S = 30.0


def check_port(port: int, host: str, flag: str) -> None:
    """StartupError(PORT_TAKEN) when `port` cannot be listened on (checked by binding it once)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            cause = (
                "is in use by another process" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
            )
            raise StartupError(
                PORT_TAKEN, f"port {port} ({flag}) {cause}: stop that process or pass another {flag}"
            ) from None


def liveness_address(url: str) -> tuple[str, int]:
    """The host and port the probes are served on (fairway_operator.health)."""
    parts = urlsplit(url)
    return parts.hostname or "0.0.0.0", parts.port or 80


def load_credentials() -> None:
    """In-cluster credentials when running in a pod, else the kubeconfig; StartupError when neither
    is usable."""
    try:
        load_config()
    except Exception as exc:  # the loaders raise what their YAML parser, file reads and checks raise
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise StartupError(
            NO_CREDENTIALS,
            f"no usable Kubernetes credentials ({detail}): run it in a pod with a ServiceAccount, or point "
            "KUBECONFIG (default ~/.kube/config) at a valid kubeconfig",
        ) from None


def wait_for_api(
    api: ApiClient | None = None,
    sleep: Callable[[float], object] = time.sleep,
    stopping: Callable[[], bool] = lambda: False,
) -> bool:
    """One discovery request for the QueueSupervisor API until it answers: True when it is served,
    False when stopped while waiting; StartupError for refused credentials or a missing CRD."""
    client = api or operator_client()
    host = api_host(client)
    wait_s = 1.0
    while not stopping():
        try:
            discover(client)
            return True
        except ApiException as exc:
            if exc.status in (401, 403):
                raise StartupError(
                    NO_CREDENTIALS,
                    f"the API server at {host} refused the credentials ({exc.status} "
                    f"{exc.reason}): check the kubeconfig's user or the ServiceAccount token",
                ) from None
            if exc.status == 404:
                raise StartupError(
                    NOT_INSTALLED,
                    f"the API server does not serve {API_GROUP}/{API_VERSION}: install the QueueSupervisor CRD "
                    "(kubectl apply -f crds/, or helm install the chart)",
                ) from None
            cause = f"{exc.status} {exc.reason}"
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            cause = " ".join(str(exc).split())[:200] or type(exc).__name__
        log.warning(
            "the Kubernetes API at %s is not reachable (%s); retrying in %.0f s",
            host,
            cause,
            wait_s,
        )
        sleep(wait_s)
        wait_s = min(wait_s * 2, BACKOFF_MAX_S)
    return False


def check_namespaces(namespaces: tuple[str, ...], api: ApiClient | None = None) -> None:
    """Each watched namespace exists and the operator may work in it: a dry-run create of a ConfigMap
    there (the Role grants that; nothing is stored), which a real API server answers 404 for a missing
    namespace and 403 where no Role was bound. Other errors are left to the watches to report."""
    client = api or operator_client()
    for namespace in namespaces:
        try:
            dry_run_config_map(client, namespace)
        except ApiException as exc:
            if exc.status == 404:
                raise StartupError(
                    NO_NAMESPACE,
                    f"namespace {namespace!r} does not exist: create it, or fix --namespace "
                    "(the chart's watchNamespaces)",
                ) from None
            if exc.status == 403:
                raise StartupError(
                    NO_NAMESPACE,
                    f"the operator is not allowed to work in namespace {namespace!r} (403): install the chart "
                    "with it in watchNamespaces, so it gets its Role there",
                ) from None
            log.warning("could not check namespace %s (%s %s); going on", namespace, exc.status, exc.reason)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            log.warning("could not check namespace %s (%s); going on", namespace, exc)

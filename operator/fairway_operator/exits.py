"""`fairway operator`'s exit codes, in one place: the start-up checks raise them, `--help` and
docs/deploy.md list them (a test keeps the docs' table equal to this one)."""

from __future__ import annotations

PORT_TAKEN = 3
NO_CREDENTIALS = 4
NOT_INSTALLED = 5
NO_NAMESPACE = 6

EXIT_CODES: dict[int, str] = {
    0: "stopped (SIGTERM or Ctrl-C), also while still waiting for the API server",
    2: "bad arguments",
    PORT_TAKEN: "a port it must listen on is in use: `--metrics-port` (default 9100) or the `--liveness` URL's",
    NO_CREDENTIALS: "no usable Kubernetes credentials (not in a pod, and no valid kubeconfig), "
    "or the API server refuses them (401/403)",
    NOT_INSTALLED: "the QueueSupervisor CRD is not installed (the API server does not serve `fairway.dev/v1alpha1`)",
    NO_NAMESPACE: "a `--namespace` it should watch does not exist, or its RBAC grants nothing there (403)",
}


class StartupError(Exception):
    """A start-up that cannot work: `code` is the exit code, the message one line (cause and fix)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

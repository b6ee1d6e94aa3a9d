"""The operator's probes, served from the moment the process starts, on the `--liveness` address:

- `/healthz` (liveness): 200 while the process is sound. Waiting for an API server that is not
  reachable yet counts as sound (docs/deploy.md: an unreachable API server is no reason to exit), so
  an outage never gets the operator restarted; once kopf runs, 200 while its loop has ticked within
  LIVENESS_STALE_S, 503 when the loop is wedged (then a restart is the cure).
- `/readyz` (readiness): 200 once kopf runs and its loop ticks; 503 while waiting for the API server
  or after the loop stopped ticking.

Each answer reads two numbers kept in memory (fairway.probes serves them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from fairway.probes import serve_probes

LIVENESS_STALE_S = 60.0  # the loop ticks every second: a minute without a tick is a wedged operator
READINESS_STALE_S = 10.0


class Health:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.running_since: float | None = None  # kopf's loop started (None: still starting)
        self.last_tick: float | None = None

    def running(self) -> None:
        self.running_since = self.clock()

    def ticked(self) -> None:
        self.last_tick = self.clock()

    def _since_tick_s(self) -> float:
        assert self.running_since is not None
        return self.clock() - (self.last_tick if self.last_tick is not None else self.running_since)

    def live(self) -> bool:
        return self.running_since is None or self._since_tick_s() < LIVENESS_STALE_S

    def ready(self) -> bool:
        return (
            self.running_since is not None and self.last_tick is not None and self._since_tick_s() < READINESS_STALE_S
        )

    def serve(self, host: str, port: int) -> ThreadingHTTPServer:
        """Answer the probes from a thread of their own (OSError when the port cannot be bound)."""
        return serve_probes(host, port, self.live, self.ready)

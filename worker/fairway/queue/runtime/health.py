"""A worker's probes (served by fairway.probes on `health_port`): what the kubelet restarts and what
counts as a ready pod.

- live: the loop is not wedged: it ticked within `stale_s`, or a job runs in this thread (a long job
  holds up the loop; the watchdog, not the kubelet, ends one that ignores its timeout).
- ready: a reserve call has come back (the worker registered with Redis and takes jobs), and the
  worker is not stopping. A pod starting counts as not ready, so the autoscaler sees it as starting.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fairway.queue.runtime.lifecycle import StopSignals
from fairway.queue.runtime.runner import Runner

STALE_MARGIN_S = 60.0  # beyond the longest wait a healthy loop makes (an idle read, an outage's backoff)


class WorkerHealth:
    def __init__(
        self, runner: Runner, signals: StopSignals, block_for_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.runner = runner
        self.signals = signals
        self.clock = clock
        self.stale_s = block_for_s + STALE_MARGIN_S
        self.started = clock()
        self.last_tick: float | None = None
        self.serving = False  # a reserve call has come back: registered with Redis, taking jobs

    def ticked(self) -> None:
        """The loop went round (a poll, or an outage's backoff)."""
        self.last_tick = self.clock()

    def served(self) -> None:
        self.serving = True

    def live(self) -> bool:
        since = self.clock() - (self.last_tick if self.last_tick is not None else self.started)
        return since < self.stale_s or self.runner.running_inline

    def ready(self) -> bool:
        return self.serving and not self.signals.stopping and self.live()

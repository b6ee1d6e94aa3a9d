"""One autoscaler per supervisor, stepped the same way by every driver (pure: demand, sizes and a clock
in, changes out).

The operator (each QueueSupervisor), `fairway up` (each local supervisor) and `fairway simulate` (a
replay) hold an `Autoscaler` and step it every POLL_S with the same inputs: each pool's demand as a
look at Redis sees it (busy slots, waiting jobs, the oldest wait), its size, the pods asked for that
are not ready yet, and the served names' average runtimes, read again every RUNTIMES_EVERY_S. So a
laptop, a cluster and a replay make the same decisions for the same demand. What a driver does with
a change (patch a Deployment, start a process, resize a simulated pool) is the driver's.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

from fairway.plan.load import pool_samples, served_names
from fairway.plan.scaling import Change, Planner, PoolSample, ScalingRules
from fairway.queue.access.figures import QueueStats
from fairway.resource.spec import QueueSupervisorSpec

POLL_S = 1.0  # how often every driver steps its autoscalers (the operator's scaling poll)
RUNTIMES_EVERY_S = 10.0  # average runtimes (the `time` strategy's weights, targetWait's sizing) are read this often


class Autoscaler:
    def __init__(self, spec: QueueSupervisorSpec, replicas: Mapping[str, int]) -> None:
        self.spec = spec
        self.rules = ScalingRules.from_spec(spec)
        self.served = served_names(spec)  # every name whose demand it reads, computed once
        self.planner = Planner(self.rules, replicas)
        self.runtimes: dict[str, float | None] = {}  # served name -> recent average runtime (ms)
        self._runtimes_at: float | None = None

    @property
    def replicas(self) -> dict[str, int]:
        return self.planner.replicas

    def fits(self, spec: QueueSupervisorSpec, replicas: Mapping[str, int]) -> bool:
        """Whether this autoscaler still serves `spec` (same scaling rules, same pools); else a new one
        is made, as its memory of demand was for other rules."""
        return ScalingRules.from_spec(spec) == self.rules and sorted(replicas) == sorted(self.planner.tracks)

    def runtimes_due(self, now: float) -> bool:
        return self._runtimes_at is None or now - self._runtimes_at >= RUNTIMES_EVERY_S - 1e-9

    def note_runtimes(self, runtimes: Mapping[str, float | None], now: float) -> None:
        self.runtimes = dict(runtimes)
        self._runtimes_at = now

    def demand(self, stats: Sequence[QueueStats]) -> dict[str, PoolSample]:
        """Each pool's demand from its served names' figures, with the runtimes last noted."""
        return pool_samples(self.spec, stats, self.runtimes)

    def poll(
        self, demand: Mapping[str, PoolSample], replicas: Mapping[str, int], starting: Mapping[str, int], now: float
    ) -> list[Change]:
        """One step: the pools' sizes as they are (someone may have changed one), their demand, and the
        pods on their way (`starting`: a long wait adds no pod while one is still starting)."""
        self.planner.sync(replicas)
        samples = {pool: replace(sample, starting=starting.get(pool, 0)) for pool, sample in demand.items()}
        return self.planner.step(now, samples)


class Autoscalers:
    """The operator's autoscalers, one per supervisor (its scaling poll and status pass run on two
    threads). A supervisor whose rules or pools changed, or that was recreated, gets a new one."""

    def __init__(self) -> None:
        self._found: dict[Hashable, tuple[Hashable, Autoscaler]] = {}
        self._lock = threading.Lock()

    def get(
        self, key: Hashable, spec: QueueSupervisorSpec, replicas: Mapping[str, int], identity: Hashable = None
    ) -> Autoscaler:
        with self._lock:
            found = self._found.get(key)
            if found is None or found[0] != identity or not found[1].fits(spec, replicas):
                found = (identity, Autoscaler(spec, replicas))
                self._found[key] = found
            elif found[1].spec is not spec:
                found[1].spec = spec  # (the same rules and pools, another object: demand reads it)
            return found[1]

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._found.pop(key, None)

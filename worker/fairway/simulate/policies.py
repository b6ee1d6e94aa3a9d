"""The scaling policies `fairway simulate` compares, each a function from samples to replicas.

- `fairway`: the autoscaler the operator and `fairway up` step (fairway.plan.autoscaler), every POLL_S.
- `horizon`: Laravel Horizon's AutoScaler arithmetic (horizon.py), every cooldown, never below one
  process per pool (Horizon cannot scale to zero); `balance: none` sizes one process per ready job.
- `keda`: a KEDA ScaledObject per pool on its queue length: desired = ceil(ready / concurrency),
  polled every 30 s, scale-up at once, scale-down to the highest desired of the last 300 s
  (the HPA's default stabilization), min 0.
Baselines live here, never in the operator.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fairway.plan.autoscaler import POLL_S, Autoscaler
from fairway.plan.scaling import Change, PoolSample, ScalingRules, describe
from fairway.resource.spec import QueueSupervisorSpec
from fairway.simulate.horizon import Limits, PoolLoad, rebalance

POLICY_NAMES = ("fairway", "horizon", "keda")
KEDA_POLL_S = 30.0
KEDA_STABILIZATION_S = 300.0


@dataclass
class Policy(ABC):
    name: str
    poll_s: float
    replicas: dict[str, int]
    changes: list[Change] = field(default_factory=list)

    @abstractmethod
    def decide(self, t: float, samples: Mapping[str, PoolSample]) -> dict[str, int]:
        """New replicas per pool after one look at them."""

    def _record(self, t: float, new: Mapping[str, int], reason: str) -> dict[str, int]:
        for pool in sorted(new):
            if new[pool] != self.replicas[pool]:
                before = self.replicas[pool]
                self.changes.append(
                    Change(t, pool, before, new[pool], reason, describe(pool, before, new[pool], None, 1))
                )
                self.replicas[pool] = new[pool]
        return dict(self.replicas)


class FairwayPolicy(Policy):
    """As the operator and `fairway up` run it: the autoscaler stepped every POLL_S with each pool's
    demand, size and starting pods (a simulated pool knows its runtime: no Redis averages to read)."""

    def __init__(self, spec: QueueSupervisorSpec, pools: Sequence[str], fixed: Mapping[str, int]) -> None:
        resized = spec.policy.resized
        start = dict.fromkeys(pools, spec.min_processes) if resized else dict(fixed)
        super().__init__("fairway", POLL_S, dict(start))
        self.autoscaler = Autoscaler(spec, start) if resized else None

    def decide(self, t: float, samples: Mapping[str, PoolSample]) -> dict[str, int]:
        if self.autoscaler is None:
            return dict(self.replicas)
        starting = {pool: sample.starting for pool, sample in samples.items()}
        self.changes += self.autoscaler.poll(samples, self.replicas, starting, t)
        self.replicas = self.autoscaler.replicas
        return dict(self.replicas)


class HorizonPolicy(Policy):
    def __init__(
        self, rules: ScalingRules, pools: Sequence[str], by_share: bool, resized: bool, fixed: Mapping[str, int]
    ) -> None:
        least = max(1, rules.min_processes)
        super().__init__("horizon", rules.cooldown_s, {p: least for p in pools} if resized else dict(fixed))
        self.limits = Limits(least, rules.max_processes, rules.max_shift, rules.strategy)
        self.by_share, self.resized = by_share, resized

    def decide(self, t: float, samples: Mapping[str, PoolSample]) -> dict[str, int]:
        if not self.resized:
            return dict(self.replicas)
        loads = [PoolLoad(p, round(s.ready), s.runtime_ms, self.replicas[p]) for p, s in samples.items()]
        return self._record(t, rebalance(loads, self.limits, self.by_share), "horizon")


class KedaPolicy(Policy):
    def __init__(self, rules: ScalingRules, pools: Sequence[str]) -> None:
        super().__init__("keda", KEDA_POLL_S, dict.fromkeys(pools, 0))
        self.rules = rules
        self.history: dict[str, deque[tuple[float, int]]] = {p: deque() for p in pools}

    def decide(self, t: float, samples: Mapping[str, PoolSample]) -> dict[str, int]:
        new = {}
        for pool, sample in samples.items():
            desired = min(self.rules.max_processes, math.ceil(sample.ready / self.rules.concurrency))
            history = self.history[pool]
            history.append((t, desired))
            while history[0][0] < t - KEDA_STABILIZATION_S:
                history.popleft()
            current = self.replicas[pool]
            new[pool] = desired if desired >= current else max(d for _, d in history)
        return self._record(t, new, "keda")


def build(name: str, spec: QueueSupervisorSpec, pools: Sequence[str], fixed: Mapping[str, int]) -> Policy:
    rules = ScalingRules.from_spec(spec)
    if name == "fairway":
        return FairwayPolicy(spec, pools, fixed)
    if name == "horizon":
        return HorizonPolicy(rules, pools, spec.policy.by_share, spec.policy.resized, fixed)
    if name == "keda":
        return KedaPolicy(rules, pools)
    raise ValueError(f"unknown policy {name!r}: choose from {', '.join(POLICY_NAMES)}")

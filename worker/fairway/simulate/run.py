"""One replay: a supervisor's pools, a trace and a policy in, the figures `fairway simulate` prints out."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fairway.plan.pools import initial_replicas, pools
from fairway.plan.scaling import Change
from fairway.resource.spec import QueueSupervisorSpec
from fairway.simulate.model import STEP_S, Cluster, SimPool, percentile_ms
from fairway.simulate.policies import build
from fairway.simulate.trace import Arrival

SNAPSHOT_SEED = 26
DRAIN_LIMIT_S = 7 * 86_400  # without --duration, a run that never drains stops this long after the last arrival


@dataclass(frozen=True)
class Result:
    policy: str
    replica_changes: int
    pod_starts: int
    pod_kills: int
    pod_seconds: float
    busy_slot_seconds: float
    jobs_done: int
    wait_ms: dict[str, dict[str, float]]
    changes: list[Change]
    timeline: list[tuple[float, dict[str, int], dict[str, int]]]  # (t, replicas, waiting) per poll

    def to_json(self) -> dict[str, Any]:
        return {
            "replica_changes": self.replica_changes,
            "pod_starts": self.pod_starts,
            "pod_kills": self.pod_kills,
            "pod_seconds": round(self.pod_seconds, 1),
            "busy_slot_seconds": round(self.busy_slot_seconds, 1),
            "jobs_done": self.jobs_done,
            "wait_ms": self.wait_ms,
            "changes": [
                {"t_s": round(c.t_s, 3), "pool": c.pool, "from": c.before, "to": c.after, "reason": c.reason}
                for c in self.changes
            ],
        }


def simulate(
    spec: QueueSupervisorSpec,
    arrivals: Sequence[Arrival],
    policy_name: str,
    *,
    pod_start_s: float = 5.0,
    duration_s: float | None = None,
    step_s: float = STEP_S,
    keep_timeline: bool = False,
) -> Result:
    all_pools = pools(spec)
    pool_of = {q: p.name for p in all_pools for q in p.queues}
    tenant_pool = next((p.name for p in all_pools if p.tenants), None)

    def lane_of(arrival: Arrival) -> tuple[str, str, str]:
        if arrival.tenant is not None and tenant_pool is not None:
            return tenant_pool, f"t:{arrival.tenant}", arrival.queue
        return pool_of[arrival.queue], f"q:{arrival.queue}", arrival.queue

    cluster = Cluster([SimPool(p.name, spec.concurrency) for p in all_pools], lane_of)
    names = [p.name for p in all_pools]
    policy = build(policy_name, spec, names, initial_replicas(spec, {}))
    for name, n in policy.replicas.items():
        cluster.pools[name].resize(0.0, n, 0.0)  # the starting size is up before the trace begins
    end = duration_s if duration_s is not None else (arrivals[-1].t_s if arrivals else 0.0) + DRAIN_LIMIT_S
    timeline: list[tuple[float, dict[str, int], dict[str, int]]] = []
    # Each policy looks once per poll, at a moment drawn at random inside the poll (seeded: the same
    # moments for every policy), as an operator's read lands anywhere between a trace's bursts.
    rng = random.Random(SNAPSHOT_SEED)
    i, t, next_poll, steps = 0, 0.0, 0.0, 0
    look_at = 0.0
    samples = {name: pool.sample(0.0) for name, pool in cluster.pools.items()}
    while t < end:
        while i < len(arrivals) and arrivals[i].t_s < t + step_s:
            cluster.arrive(arrivals[i])
            i += 1
        cluster.step(t, step_s)
        if t + 1e-9 >= look_at and look_at >= 0:
            samples = {name: pool.sample(t) for name, pool in cluster.pools.items()}
            look_at = -1.0
        if t + 1e-9 >= next_poll:
            for name, n in policy.decide(t, samples).items():
                cluster.pools[name].resize(t, n, pod_start_s)
            if keep_timeline:
                timeline.append((t, dict(policy.replicas), {n: round(s.ready) for n, s in samples.items()}))
            look_at = next_poll + rng.random() * policy.poll_s
            next_poll += policy.poll_s
        steps += 1
        t = steps * step_s
        if duration_s is None and i == len(arrivals) and cluster.idle():
            break
    changes = policy.changes
    totals = cluster.totals
    return Result(
        policy_name,
        len(changes),
        sum(max(0, c.after - c.before) for c in changes),
        sum(max(0, c.before - c.after) for c in changes),
        totals.pod_seconds,
        totals.busy_slot_seconds,
        totals.jobs_done,
        {
            queue: {"p50": percentile_ms(w, 0.50), "p99": percentile_ms(w, 0.99)}
            for queue, w in sorted(totals.waits_ms.items())
        },
        changes,
        timeline,
    )

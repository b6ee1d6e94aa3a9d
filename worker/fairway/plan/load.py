"""What each pool has to do right now, from its served names' figures (pure): the planner's samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairway.plan.pools import pools
from fairway.plan.scaling import PoolSample
from fairway.queue.access.figures import QueueStats
from fairway.resource.spec import QueueSupervisorSpec


def served_names(spec: QueueSupervisorSpec) -> list[str]:
    """Every name whose figures the planner reads: the queues, then the tenant group."""
    return [name for pool in pools(spec) for name in pool.served]


def pool_samples(
    spec: QueueSupervisorSpec,
    stats: Sequence[QueueStats],
    runtimes: Mapping[str, float | None] | None = None,
) -> dict[str, PoolSample]:
    """Per pool: busy slots (its reserved jobs), waiting jobs (ready and due delayed, the tenant
    group's included), the oldest ready job's wait, and the recent average runtime."""
    by_name = {s.queue: s for s in stats}
    runtimes = runtimes or {}
    out = {}
    for pool in pools(spec):
        rows = [by_name[name] for name in pool.served if name in by_name]
        ages = [r.oldest_age_s for r in rows if r.oldest_age_s is not None]
        known = [(r.ready + r.due, ms) for r in rows if (ms := runtimes.get(r.queue))]
        weight = sum(n for n, _ in known)
        runtime = sum(n * ms for n, ms in known) / weight if weight else None
        out[pool.name] = PoolSample(
            busy=sum(r.reserved for r in rows),
            ready=sum(r.ready + r.due for r in rows),
            oldest_s=max(ages, default=None),
            runtime_ms=runtime,
        )
    return out

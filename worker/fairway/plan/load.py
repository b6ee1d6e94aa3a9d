"""What each pool has to do right now, read from Redis: the planner's samples (operator and `fairway up`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairway.plan.pools import pools
from fairway.plan.scaling import PoolSample
from fairway.queue.access.figures import QueueStats
from fairway.queue.access.inspector import Inspector
from fairway.resource.balance import ScalingStrategy
from fairway.resource.spec import QueueSupervisorSpec


def served_names(spec: QueueSupervisorSpec) -> list[str]:
    """Every name whose figures the planner reads: the queues, then the tenant group."""
    return [name for pool in pools(spec) for name in pool.served]


def read_stats(inspector: Inspector, spec: QueueSupervisorSpec) -> list[QueueStats]:
    """One pipelined read (plus one for a tenant group's lists) of every served name's figures."""
    names = served_names(spec)
    return inspector.stats(names) if names else []


def pool_samples(
    spec: QueueSupervisorSpec,
    stats: Sequence[QueueStats],
    runtimes: Mapping[str, float | None] | None = None,
) -> dict[str, PoolSample]:
    """Per pool (pure): busy slots (its reserved jobs), waiting jobs (ready and due delayed, the
    tenant group's included), the oldest ready job's wait, and the recent average runtime."""
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


def read_samples(inspector: Inspector, spec: QueueSupervisorSpec, stats: Sequence[QueueStats]) -> dict[str, PoolSample]:
    """`pool_samples`, with the runtimes read from Redis when the `time` strategy weighs by them."""
    names = served_names(spec)
    runtimes = inspector.average_runtimes_ms(names) if spec.auto_scaling_strategy == ScalingStrategy.TIME else None
    return pool_samples(spec, stats, runtimes)


def wakes(replicas: Mapping[str, int], stats: Sequence[QueueStats], spec: QueueSupervisorSpec) -> bool:
    """Whether a pool at zero has work (read from figures already fetched): then the planner steps
    now, not at the next cooldown."""
    samples = pool_samples(spec, stats)
    return any(replicas.get(name) == 0 and (s.ready or s.busy) for name, s in samples.items())

"""What each pool has to do right now, read from Redis: the balancer's input (operator and `fairway up`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairway.plan.balancing import Limits, PoolLoad, pool_load, rebalance
from fairway.plan.pools import pools
from fairway.queue.access.figures import QueueStats, TenantFigures
from fairway.queue.access.inspector import Inspector
from fairway.queue.protocol.keys import served_name_of_group
from fairway.resource.spec import QueueSupervisorSpec

FIGURES_WINDOW_S = 3600  # tenants active within the last hour count toward the group's backlog


def pool_loads(
    inspector: Inspector,
    spec: QueueSupervisorSpec,
    current: Mapping[str, int],
    stats: Sequence[QueueStats] | None = None,
    figures: Sequence[TenantFigures] | None = None,
) -> list[PoolLoad]:
    """Ready jobs and recent average runtime per pool, in pipelined round trips; reuses figures already read."""
    if stats is None:
        stats = inspector.stats(spec.queues) if spec.queues else []
    sizes = {s.queue: s.ready for s in stats}
    if spec.tenants is not None:
        if figures is None:
            figures = inspector.tenant_figures(spec.tenants.queue_prefix, FIGURES_WINDOW_S)
        sizes[served_name_of_group(spec.tenants.queue_prefix)] = sum(f.waiting for f in figures)
    runtimes = inspector.average_runtimes_ms(list(sizes))
    return [pool_load(p.name, p.served, sizes, runtimes, current.get(p.name, spec.min_processes)) for p in pools(spec)]


def rebalanced(
    inspector: Inspector,
    spec: QueueSupervisorSpec,
    current: Mapping[str, int],
    stats: Sequence[QueueStats] | None = None,
    figures: Sequence[TenantFigures] | None = None,
) -> dict[str, int]:
    """Replicas per pool after one cooldown (Horizon's AutoScaler; see fairway.plan.balancing)."""
    limits = Limits(spec.min_processes, spec.max_processes, spec.balance_max_shift, spec.auto_scaling_strategy)
    loads = pool_loads(inspector, spec, current, stats, figures)
    return rebalance(loads, limits, by_share=spec.policy.by_share)

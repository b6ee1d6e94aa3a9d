"""What each pool has to do right now, read from Redis: the auto-balancer's input (operator and `fairway up`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fairway.balancing import Limits, PoolLoad, pool_load, rebalance
from fairway.figures import QueueStats, TenantFigures
from fairway.pools import pools
from fairway.spec import QueueSupervisorSpec
from fairway.store import Store, tenant_figures


def pool_loads(
    store: Store,
    spec: QueueSupervisorSpec,
    current: Mapping[str, int],
    stats: Sequence[QueueStats] | None = None,
    figures: Sequence[TenantFigures] | None = None,
) -> list[PoolLoad]:
    """Ready jobs and recent average runtime per pool, in pipelined round trips; reuses figures already read."""
    group = f"@{spec.tenants.queue_prefix}" if spec.tenants else None
    if stats is None:
        stats = store.stats(spec.queues) if spec.queues else []
    sizes = {s.queue: s.ready for s in stats}
    if spec.tenants is not None and group is not None:
        if figures is None:
            figures = tenant_figures(store, spec.tenants.queue_prefix, 3600)
        sizes[group] = sum(f.waiting for f in figures)
    runtimes = store.average_runtimes_ms(list(sizes))
    return [
        pool_load(
            p.name,
            [*p.queues, *([group] if p.tenants and group else [])],
            sizes,
            runtimes,
            current.get(p.name, spec.min_processes),
        )
        for p in pools(spec)
    ]


def rebalanced(
    store: Store,
    spec: QueueSupervisorSpec,
    current: Mapping[str, int],
    stats: Sequence[QueueStats] | None = None,
    figures: Sequence[TenantFigures] | None = None,
) -> dict[str, int]:
    """Replicas per pool after one cooldown (Horizon's AutoScaler; see fairway.balancing)."""
    limits = Limits(spec.min_processes, spec.max_processes, spec.balance_max_shift, spec.auto_scaling_strategy)
    return rebalance(pool_loads(store, spec, current, stats, figures), limits, balancing=spec.balance == "auto")

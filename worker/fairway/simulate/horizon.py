"""Laravel Horizon's AutoScaler arithmetic, kept as `fairway simulate --compare horizon`'s baseline (pure).

Each cooldown, every pool gets a target share of `maxProcesses`: by time to clear (ready jobs x average
runtime, strategy `time`) or by ready jobs alone (`size`). Pools are visited smallest target first and
move toward their target by at most `balanceMaxShift`, never below `minProcesses`, never taking the
supervisor above `maxProcesses` when growing. A `balance: none` supervisor has one pool, sized by the
backlog: one process per ready job, between min and max (Horizon's balance=false sizing). Pools start
at `minProcesses` (see `fairway.plan.pools.initial_replicas`), not at the maximum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fairway.resource.balance import DEFAULT_STRATEGY, STRATEGIES, ScalingStrategy


@dataclass(frozen=True)
class PoolLoad:
    name: str
    size: int  # ready jobs now
    runtime_ms: float | None  # average job runtime; None when nothing ran recently
    replicas: int  # current


@dataclass(frozen=True)
class Limits:
    min_processes: int
    max_processes: int
    max_shift: int
    strategy: ScalingStrategy = DEFAULT_STRATEGY


def pool_load(
    name: str, served: Sequence[str], sizes: Mapping[str, int], runtimes: Mapping[str, float | None], replicas: int
) -> PoolLoad:
    """One pool's load from its served queues: summed sizes, size-weighted average runtime."""
    size = sum(sizes.get(q, 0) for q in served)
    known = [(sizes.get(q, 0), runtimes[q]) for q in served if runtimes.get(q)]
    weight = sum(s for s, _ in known)
    runtime = (
        sum(s * (r or 0.0) for s, r in known) / weight
        if weight
        else sum(r or 0.0 for _, r in known) / len(known)
        if known
        else None
    )
    return PoolLoad(name, size, runtime, replicas)


def targets(loads: Sequence[PoolLoad], limits: Limits, by_share: bool) -> dict[str, float]:
    """Unrounded process targets per pool: by each pool's share of the load, or (one shared pool) by backlog."""
    if not by_share:
        return {p.name: min(limits.max_processes, max(limits.min_processes, p.size)) for p in loads}
    # Unknown runtimes count as 1 ms, so `time` degrades to `size` instead of to "all or nothing".
    times = {p.name: p.size * (p.runtime_ms if p.runtime_ms else 1.0) for p in loads}
    total_time = sum(times.values())
    total_size = sum(p.size for p in loads)
    by_runtime = STRATEGIES[ScalingStrategy(limits.strategy)].weighs_runtime
    if not by_runtime and total_size > 0:
        return {p.name: p.size / total_size * limits.max_processes for p in loads}
    if by_runtime and total_time > 0:
        return {p.name: times[p.name] / total_time * limits.max_processes for p in loads}
    return {p.name: float(limits.min_processes) for p in loads}


def rebalance(loads: Sequence[PoolLoad], limits: Limits, by_share: bool = True) -> dict[str, int]:
    """New replicas per pool after one cooldown."""
    goal = targets(loads, limits, by_share)
    replicas = {p.name: p.replicas for p in loads}
    ceiling = max(limits.min_processes, limits.max_processes - (len(loads) - 1) * limits.min_processes)
    for pool in sorted(loads, key=lambda p: (goal[p.name], p.name)):
        current = replicas[pool.name]
        wanted = math.ceil(goal[pool.name] - 1e-9)
        total = sum(replicas.values())
        if wanted > current:
            up = min(max(0, limits.max_processes - total), limits.max_shift)
            replicas[pool.name] = max(current, min(current + up, ceiling, wanted))
        elif wanted < current:
            down = min(max(0, total - limits.min_processes), limits.max_shift)
            replicas[pool.name] = max(current - down, limits.min_processes, wanted)
    return replicas

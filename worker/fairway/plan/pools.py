"""A supervisor's pools and their initial sizes (pure): shared by the operator and `fairway up`.

The balance policy decides the shape: a shared pool serves every queue (and the tenant group) in
weighted order; otherwise there is one pool per queue plus one for the tenant group. Paused queues
stay in the pools: pausing is pushed to Redis, so it never restarts a worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from fairway.queue.protocol.keys import served_name_of_group
from fairway.resource.spec import QueueSupervisorSpec


class SpecialPool(StrEnum):
    """Names of the pools that are not one queue's; queue names cannot start with '@'."""

    SHARED = "@all"
    TENANTS = "@tenants"


@dataclass(frozen=True)
class Pool:
    name: str  # the queue it serves, or a SpecialPool
    queues: tuple[str, ...]
    group: str | None  # the tenant group's served name ('@<queuePrefix>') when the pool serves it

    @property
    def tenants(self) -> bool:
        return self.group is not None

    @property
    def served(self) -> tuple[str, ...]:
        """Every served name: the queues, then the tenant group."""
        return (*self.queues, *((self.group,) if self.group else ()))


def pools(spec: QueueSupervisorSpec) -> list[Pool]:
    group = served_name_of_group(spec.tenants.queue_prefix) if spec.tenants is not None else None
    if spec.policy.shared_pool:
        return [Pool(SpecialPool.SHARED, tuple(spec.queues), group)]
    out = [Pool(queue, (queue,), None) for queue in spec.queues]
    if group is not None:
        out.append(Pool(SpecialPool.TENANTS, (), group))
    return out


def split_evenly(total: int, parts: int, least: int) -> list[int]:
    """Horizon's simple balancing: maxProcesses split evenly, the remainder to the first pools."""
    base, extra = divmod(total, parts)
    return [max(least, base + (1 if index < extra else 0)) for index in range(parts)]


def initial_replicas(spec: QueueSupervisorSpec, current: Mapping[str, int]) -> dict[str, int]:
    """Replicas per pool name: fixed by the spec unless the balancer resizes pools, when it is the
    balancer's current value (or minProcesses), kept within the limits."""
    all_pools = pools(spec)
    if not spec.policy.resized:
        sizes = split_evenly(spec.max_processes, len(all_pools), spec.min_processes)
        return dict(zip((p.name for p in all_pools), sizes, strict=True))
    return {
        p.name: min(spec.max_processes, max(spec.min_processes, current.get(p.name, spec.min_processes)))
        for p in all_pools
    }

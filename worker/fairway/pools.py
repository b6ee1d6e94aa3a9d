"""A supervisor's pools and each pool's worker settings (pure): shared by the operator and `fairway up`.

`balance: none` is one pool serving every queue (and the tenant group) in weighted order; `simple` and
`auto` are one pool per queue plus one for the tenant group. Paused queues stay in the settings:
pausing is pushed to Redis, so it never restarts a worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fairway.spec import QueueSupervisorSpec

TENANTS_POOL = "@tenants"
ALL_POOL = "@all"


@dataclass(frozen=True)
class Pool:
    name: str  # the queue it serves, or @tenants / @all
    queues: tuple[str, ...]
    tenants: bool


def pools(spec: QueueSupervisorSpec) -> list[Pool]:
    if spec.balance == "none":
        return [Pool(ALL_POOL, tuple(spec.queues), spec.tenants is not None)]
    out = [Pool(queue, (queue,), False) for queue in spec.queues]
    if spec.tenants is not None:
        out.append(Pool(TENANTS_POOL, (), True))
    return out


def split_evenly(total: int, parts: int, least: int) -> list[int]:
    """Horizon's simple balancing: maxProcesses split evenly, the remainder to the first pools."""
    base, extra = divmod(total, parts)
    return [max(least, base + (1 if index < extra else 0)) for index in range(parts)]


def initial_replicas(spec: QueueSupervisorSpec, current: Mapping[str, int]) -> dict[str, int]:
    """Replicas per pool name: fixed for simple; for none/auto, the balancer's current value or min."""
    all_pools = pools(spec)
    if spec.balance == "simple":
        return dict(
            zip(
                (p.name for p in all_pools),
                split_evenly(spec.max_processes, len(all_pools), spec.min_processes),
                strict=True,
            )
        )
    return {
        p.name: min(spec.max_processes, max(spec.min_processes, current.get(p.name, spec.min_processes)))
        for p in all_pools
    }


def worker_config(spec: QueueSupervisorSpec, pool: Pool) -> dict[str, Any]:
    """The WorkerSettings a pool's workers read (everything but the Redis URL, which comes from env)."""
    config: dict[str, Any] = {
        "queues": list(pool.queues),
        "block_for_s": spec.block_for,
        "tries": spec.tries,
        "backoff_s": list(spec.backoff),
        "timeout_s": spec.timeout,
        "retry_after_s": spec.effective_retry_after,
        "max_jobs": spec.max_jobs,
        "max_time_s": spec.max_time,
        "memory_mib": spec.memory,
        "handlers": list(spec.worker.handlers),
        "log_format": "json",
        "cluster": spec.redis.cluster,
    }
    if spec.balance == "none" and spec.queue_weights:
        config["weights"] = {q: w for q, w in spec.effective_weights().items() if q in pool.queues}
    if pool.tenants and spec.tenants is not None:
        t = spec.tenants
        config["tenants"] = {
            "queue_prefix": t.queue_prefix,
            "max_consecutive": t.max_consecutive_jobs,
            "quarantine_failures": t.quarantine.failures,
            "quarantine_window_s": t.quarantine.window_seconds,
            "sample_rate": t.quarantine.sample_rate,
        }
        if spec.balance == "none" and t.weight is not None:
            config["tenants"]["weight"] = spec.tenant_weight
    return config

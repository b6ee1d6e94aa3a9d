"""What the status says, computed from what was observed (pure: observations in, the typed status out)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from fairway.plan.pools import Pool, SpecialPool
from fairway.plan.scaling import PoolSample
from fairway.queue.access.figures import QueueStats, TenantFigures
from fairway.queue.protocol.keys import SERVED_NAME_MARK
from fairway.resource.manifests import ValidationReport
from fairway.resource.names import DEFAULT_WEIGHT
from fairway.resource.schedules import ScheduleView
from fairway.resource.status import (
    ConditionType,
    PoolStatus,
    QueueStatus,
    QueueSupervisorStatus,
    ScheduleStatus,
    TenantsStatus,
)
from fairway_operator import conditions as c

QUARANTINED_LISTED = 100  # the status lists at most this many tenants of a kind (the schema's bound)


@dataclass(frozen=True)
class PoolObservation:
    pool: Pool
    deployment: str
    desired: int
    ready: int
    demand: PoolSample | None = None  # busy slots and waiting jobs, when Redis answered


@dataclass(frozen=True)
class Scaled:
    """A pool's replica change in this pass: when, and the Scaled event's message."""

    time: str
    message: str


@dataclass
class Observations:
    generation: int | None
    validation: ValidationReport
    pools: Sequence[PoolObservation] = ()
    queue_stats: Sequence[QueueStats] | None = None
    tenants: Sequence[TenantFigures] | None = None
    redis_error: str | None = None
    api_error: str | None = None
    weights: Mapping[str, int] = field(default_factory=dict)
    scaled: Mapping[str, Scaled] = field(default_factory=dict)  # pool name -> this pass's change
    redis_reason: str = c.REDIS_UNREACHABLE  # what kind of trouble redis_error is (conditions.py)
    shared: str | None = None  # queues another supervisor serves on the same Redis, said in words
    schedules: Sequence[ScheduleView] | None = None  # each schedule's runs, when Redis answered


def parse_status(raw: Mapping[str, Any] | None) -> QueueSupervisorStatus:
    """The status as the API server returned it; one this version cannot read starts afresh."""
    try:
        return QueueSupervisorStatus.model_validate(raw or {})
    except ValidationError:
        return QueueSupervisorStatus()


def _pool(p: PoolObservation, obs: Observations, before: PoolStatus | None) -> PoolStatus:
    """A pool's status: sizes, what it was doing, and its last change (kept from the previous status
    until the next one)."""
    scaled = obs.scaled.get(p.pool.name)
    demand = p.demand
    return PoolStatus(
        name=p.deployment,
        queues=[*p.pool.queues, *([SpecialPool.TENANTS.value] if p.pool.tenants else [])],
        desired_replicas=p.desired,
        ready_replicas=p.ready,
        slots=p.desired * (obs.validation.spec.concurrency if obs.validation.spec else 1),
        busy_slots=round(demand.busy) if demand else (before.busy_slots if before else 0),
        waiting=round(demand.ready) if demand else (before.waiting if before else 0),
        last_scaled_time=scaled.time if scaled else (before.last_scaled_time if before else None),
        last_scaled_reason=scaled.message[:1024] if scaled else (before.last_scaled_reason if before else None),
    )


def _queues(obs: Observations) -> list[QueueStatus]:
    processes: dict[str, int] = {}
    for p in obs.pools:
        for queue in p.pool.queues:
            processes[queue] = processes.get(queue, 0) + p.desired
    spec = obs.validation.spec
    paused = set(spec.paused_queues) if spec else set()
    return [
        QueueStatus(
            name=s.queue,
            weight=obs.weights.get(s.queue, DEFAULT_WEIGHT),
            paused=s.queue in paused or s.paused,
            depth=s.ready,
            reserved=s.reserved,
            delayed=s.delayed,
            failed=s.failed,
            oldest_age_seconds=float(round(s.oldest_age_s)) if s.oldest_age_s is not None else None,
            processes=processes.get(s.queue, 0),
        )
        for s in obs.queue_stats or ()
        if not s.queue.startswith(SERVED_NAME_MARK)  # the tenant group's row feeds the planner, not this list
    ]


def _tenants(figures: Sequence[TenantFigures]) -> TenantsStatus:
    worst = max((f.p99_wait_ms for f in figures if f.p99_wait_ms is not None), default=None)
    return TenantsStatus(
        active=sum(1 for f in figures if f.waiting or f.in_flight),
        quarantined=sorted(f.tenant for f in figures if f.quarantined)[:QUARANTINED_LISTED],
        quarantined_slow=sorted(f.tenant for f in figures if f.quarantined and f.quarantine_reason == "slow")[
            :QUARANTINED_LISTED
        ],
        at_cap=sorted(f.tenant for f in figures if f.max_in_flight and f.in_flight >= f.max_in_flight)[
            :QUARANTINED_LISTED
        ],
        worst_p99_wait_ms=round(worst) if worst is not None else None,
    )


def build_status(obs: Observations, previous: QueueSupervisorStatus, now: str) -> QueueSupervisorStatus:
    gen = obs.generation
    conds = list(previous.conditions)
    report = obs.validation
    status = QueueSupervisorStatus(observed_generation=gen, warnings=list(report.warnings)[:100])
    if not report.valid:
        message = "; ".join(str(p) for p in report.errors)
        conds = c.set_condition(conds, ConditionType.VALID, False, c.SPEC_INVALID, message, gen, now)
        conds = c.set_condition(
            conds,
            ConditionType.READY,
            False,
            c.WAITING_FOR_VALID_SPEC,
            "the spec is invalid; existing workers are left as they were",
            gen,
            now,
        )
        conds = c.set_condition(
            conds,
            ConditionType.PROGRESSING,
            False,
            c.WAITING_FOR_VALID_SPEC,
            "nothing is rolled out until the spec is fixed",
            gen,
            now,
        )
        return status.model_copy(
            update={
                "conditions": conds,
                "pools": previous.pools,
                "queues": previous.queues,
                "tenants": previous.tenants,
                "schedules": previous.schedules,
            }
        )

    conds = c.set_condition(conds, ConditionType.VALID, True, c.SPEC_VALID, "the spec is valid", gen, now)
    behind = [p for p in obs.pools if p.ready < p.desired]
    ready = not behind and not obs.api_error and not obs.redis_error
    waiting = ", ".join(f"{p.deployment} {p.ready}/{p.desired}" for p in behind)
    # READY says at a glance why not: the trouble first (no Redis to serve, or no API to act through;
    # workers without Redis are not ready either), else the pools still starting.
    reason, message = c.POOLS_READY, "every pool has its replicas available"
    if obs.api_error:
        reason, message = c.API_ERROR, obs.api_error
    elif obs.redis_error:
        state = f"pools not ready: {waiting}; " if behind else "pools are up but cannot work: "
        reason, message = obs.redis_reason, state + obs.redis_error
    elif behind:
        reason, message = c.POOLS_NOT_READY, f"pools not ready: {waiting}"
    conds = c.set_condition(conds, ConditionType.READY, ready, reason, message, gen, now)
    if behind:
        conds = c.set_condition(
            conds, ConditionType.PROGRESSING, True, c.ROLLING_OUT, f"rolling out: {waiting}", gen, now
        )
    else:
        conds = c.set_condition(conds, ConditionType.PROGRESSING, False, c.STABLE, "every pool is rolled out", gen, now)
    if obs.api_error:
        conds = c.set_condition(conds, ConditionType.DEGRADED, True, c.API_ERROR, obs.api_error, gen, now)
    elif obs.redis_error:
        conds = c.set_condition(conds, ConditionType.DEGRADED, True, obs.redis_reason, obs.redis_error, gen, now)
    elif obs.shared:
        conds = c.set_condition(conds, ConditionType.DEGRADED, True, c.SHARED_QUEUE, obs.shared, gen, now)
    else:
        conds = c.set_condition(
            conds, ConditionType.DEGRADED, False, c.AS_EXPECTED, "workers and Redis are reachable", gen, now
        )
    pools = [_pool(p, obs, {q.name: q for q in previous.pools}.get(p.deployment)) for p in obs.pools]
    # Redis unreachable: keep the last figures; Degraded says why.
    queues = _queues(obs) if obs.queue_stats is not None else previous.queues
    tenants = _tenants(obs.tenants) if obs.tenants is not None else previous.tenants
    schedules = [_schedule(v) for v in obs.schedules] if obs.schedules is not None else previous.schedules
    update = {"conditions": conds, "pools": pools, "queues": queues, "tenants": tenants, "schedules": schedules}
    return status.model_copy(update=update)


def _schedule(view: ScheduleView) -> ScheduleStatus:
    return ScheduleStatus(
        name=view.schedule.name,
        paused=view.paused,
        last_run_time=rfc3339(view.ran) if view.ran is not None else None,
        next_run_times=[] if view.paused else [rfc3339(t) for t in view.next_runs],
    )


def rfc3339(epoch_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))

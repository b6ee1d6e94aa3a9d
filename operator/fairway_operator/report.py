"""What the status says, computed from what was observed (pure: observations in, status dict out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fairway.figures import QueueStats, TenantFigures
from fairway.manifests import ValidationReport
from fairway.pools import Pool
from fairway_operator import conditions as c


@dataclass(frozen=True)
class PoolObservation:
    pool: Pool
    deployment: str
    desired: int
    ready: int


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


def _queues(obs: Observations) -> list[dict[str, Any]]:
    processes: dict[str, int] = {}
    for p in obs.pools:
        for queue in p.pool.queues:
            processes[queue] = processes.get(queue, 0) + p.desired
    spec = obs.validation.spec
    paused = set(spec.paused_queues) if spec else set()
    rows = []
    for s in obs.queue_stats or ():
        row: dict[str, Any] = {
            "name": s.queue,
            "weight": obs.weights.get(s.queue, 1),
            "paused": s.queue in paused or s.paused,
            "depth": s.ready,
            "reserved": s.reserved,
            "delayed": s.delayed,
            "failed": s.failed,
            "processes": processes.get(s.queue, 0),
        }
        if s.oldest_age_s is not None:
            row["oldestAgeSeconds"] = float(round(s.oldest_age_s))
        rows.append(row)
    return rows


def _tenants(figures: Sequence[TenantFigures]) -> dict[str, Any]:
    active = [f for f in figures if f.waiting or f.in_flight]
    worst = max((f.p99_wait_ms for f in figures if f.p99_wait_ms is not None), default=None)
    out: dict[str, Any] = {
        "active": len(active),
        "quarantined": sorted(f.tenant for f in figures if f.quarantined)[:100],
    }
    if worst is not None:
        out["worstP99WaitMs"] = round(worst)
    return out


def build_status(obs: Observations, previous: Mapping[str, Any], now: str) -> dict[str, Any]:
    gen = obs.generation
    conds: list[dict[str, Any]] = list(previous.get("conditions") or [])
    report = obs.validation
    status: dict[str, Any] = {"observedGeneration": gen, "warnings": list(report.warnings)[:100]}
    if not report.valid:
        message = "; ".join(str(p) for p in report.errors)
        conds = c.set_condition(conds, c.VALID, False, c.SPEC_INVALID, message, gen, now)
        conds = c.set_condition(
            conds,
            c.READY,
            False,
            c.WAITING_FOR_VALID_SPEC,
            "the spec is invalid; existing workers are left as they were",
            gen,
            now,
        )
        conds = c.set_condition(
            conds,
            c.PROGRESSING,
            False,
            c.WAITING_FOR_VALID_SPEC,
            "nothing is rolled out until the spec is fixed",
            gen,
            now,
        )
        status["conditions"] = conds
        for key in ("pools", "queues", "tenants"):
            if key in previous:
                status[key] = previous[key]
        return status

    conds = c.set_condition(conds, c.VALID, True, c.SPEC_VALID, "the spec is valid", gen, now)
    behind = [p for p in obs.pools if p.ready < p.desired]
    ready = not behind and not obs.api_error
    if behind:
        waiting = ", ".join(f"{p.deployment} {p.ready}/{p.desired}" for p in behind)
        conds = c.set_condition(conds, c.READY, False, c.POOLS_NOT_READY, f"pools not ready: {waiting}", gen, now)
        conds = c.set_condition(conds, c.PROGRESSING, True, c.ROLLING_OUT, f"rolling out: {waiting}", gen, now)
    else:
        conds = c.set_condition(
            conds,
            c.READY,
            ready,
            c.POOLS_READY if ready else c.POOLS_NOT_READY,
            "every pool has its replicas available" if ready else "see Degraded",
            gen,
            now,
        )
        conds = c.set_condition(conds, c.PROGRESSING, False, c.STABLE, "every pool is rolled out", gen, now)
    if obs.api_error:
        conds = c.set_condition(conds, c.DEGRADED, True, c.API_ERROR, obs.api_error, gen, now)
    elif obs.redis_error:
        conds = c.set_condition(conds, c.DEGRADED, True, c.REDIS_UNREACHABLE, obs.redis_error, gen, now)
    else:
        conds = c.set_condition(conds, c.DEGRADED, False, c.AS_EXPECTED, "workers and Redis are reachable", gen, now)
    status["conditions"] = conds
    status["pools"] = [
        {
            "name": p.deployment,
            "queues": [*p.pool.queues, *(["@tenants"] if p.pool.tenants else [])],
            "desiredReplicas": p.desired,
            "readyReplicas": p.ready,
        }
        for p in obs.pools
    ]
    if obs.queue_stats is not None:
        status["queues"] = _queues(obs)
    elif "queues" in previous:
        status["queues"] = previous["queues"]  # Redis unreachable: keep the last figures, Degraded says why
    if obs.tenants is not None:
        status["tenants"] = _tenants(obs.tenants)
    elif "tenants" in previous:
        status["tenants"] = previous["tenants"]
    return status

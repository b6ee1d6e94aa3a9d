"""A pool's worker settings from the spec (pure): what the operator renders into each pool's
ConfigMap and `fairway up` writes for its processes.

The renames between the CRD and the worker are the spec column of the one table,
`fairway.resource.worker_settings.SETTING_NAMES`: the worker's names carry their unit (STYLE:
`timeout_s`), the CRD's are the public API.
"""

from __future__ import annotations

from typing import Any

from fairway.plan.pools import Pool
from fairway.resource.spec import QueueSupervisorSpec
from fairway.resource.worker_settings import SPEC_TO_SETTING, WorkerSettings


def worker_settings(spec: QueueSupervisorSpec, pool: Pool) -> WorkerSettings:
    """Everything a pool's workers need but the Redis URL, which reaches them from a Secret or env."""
    fields: dict[str, Any] = {worker: getattr(spec, field) for field, worker in SPEC_TO_SETTING.items()}
    fields.update(
        queues=list(pool.queues),
        retry_after_s=spec.effective_retry_after,
        handlers=list(spec.worker.handlers),
        metrics_port=spec.worker.metrics_port,
        health_port=spec.worker.health_port,
        log_format="json",
        cluster=spec.redis.cluster,
        schedules=list(spec.schedules),  # every pool ticks them: tick.lua keeps one job per tick
    )
    if spec.policy.shared_pool and spec.queue_weights:
        fields["weights"] = {q: w for q, w in spec.effective_weights().items() if q in pool.queues}
    if pool.tenants and spec.tenants is not None:
        # The group's weight only means something in a shared pool's weighted scan.
        keep_weight = spec.policy.shared_pool and spec.tenants.weight is not None
        fields["tenants"] = spec.tenants if keep_weight else spec.tenants.model_copy(update={"weight": None})
    return WorkerSettings.model_validate(fields)


def local_worker_settings(spec: QueueSupervisorSpec, pool: Pool) -> WorkerSettings:
    """A pool's settings for processes sharing one host (`fairway up`): no metrics and no probes, whose
    one port each would clash."""
    return worker_settings(spec, pool).model_copy(update={"metrics_port": 0, "health_port": 0})

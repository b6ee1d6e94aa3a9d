"""The `QueueSupervisor` spec as typed, validated settings.

This model is the single source of truth for the resource: the CRD's `openAPIV3Schema` is generated
from it (`fairway crd`), the operator and the CLI validate with it. Field-level limits (patterns,
ranges, list sizes) live on the fields, so the CRD and Python enforce the same numbers; rules that
span fields live in `fairway.spec_rules`, written once as CEL for the API server and once as Python.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel

from fairway.resource.balance import DEFAULT_STRATEGY, POLICIES, Balance, BalancePolicy, ScalingStrategy
from fairway.resource.names import (
    DEFAULT_TENANT_PREFIX,
    DEFAULT_WEIGHT,
    MODULE_PATTERN,
    QUEUE_NAME_PATTERN,
    TENANT_ID_PATTERN,
    TENANT_PREFIX_PATTERN,
    effective_weight,
)
from fairway.resource.rules import SpecRuleViolation, spec_violations
from fairway.resource.schedules import MAX_SCHEDULES, Schedule

API_GROUP = "fairway.dev"
API_VERSION = "v1alpha1"
KIND = "QueueSupervisor"
PLURAL = "queuesupervisors"

MAX_QUEUES = 64
MARGIN_OVER_TIMEOUT_S = 30  # default pod grace period over the timeout: a job at its timeout still gets to finish
# Seconds a reservation outlives its worker's last renewal (retryAfter): a worker renews its leases every
# third of it, so a few seconds tell a dead worker from a busy one without handing live jobs out twice.
DEFAULT_RETRY_AFTER_S = 4


def after_timeout(timeout_s: float) -> float:
    """The default pod grace period for jobs of `timeout_s`."""
    return timeout_s + MARGIN_OVER_TIMEOUT_S


def spec_default(field: str) -> Any:
    """A spec field's default, for settings of other layers that mirror it (one default, one place)."""
    info = QueueSupervisorSpec.model_fields[field]
    return info.get_default(call_default_factory=True)


QueueName = Annotated[str, Field(pattern=QUEUE_NAME_PATTERN, max_length=63)]


class SpecModel(BaseModel):
    """camelCase on the wire (as Kubernetes users write it), snake_case in Python; unknown keys fail."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class SecretRef(SpecModel):
    name: str = Field(
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="Name of a Secret in the supervisor's namespace.",
    )
    key: str = Field(
        max_length=253,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="Key in the Secret whose value is the Redis URL.",
    )


class RedisSpec(SpecModel):
    url: str | None = Field(
        default=None,
        max_length=2048,
        pattern=r"^(redis|rediss|unix)://",
        description="Redis URL without credentials; use secretRef when the server needs a password.",
    )
    secret_ref: SecretRef | None = Field(
        default=None, description="Secret holding the full Redis URL (credentials never go inline)."
    )
    cluster: bool = Field(
        default=False,
        description="Set for Redis Cluster: workers poll instead of blocking across hash slots.",
    )


class QuarantineSpec(SpecModel):
    failures: int = Field(
        default=20, ge=1, le=1_000_000, description="Failed jobs within the window that quarantine a tenant."
    )
    window_seconds: int = Field(
        default=300, ge=1, le=86_400, description="Sliding window (seconds) over which failures count."
    )
    sample_rate: float = Field(
        default=0.1, gt=0, le=1, description="Share of turns a quarantined tenant gets (0.1 = one in ten)."
    )
    run_time_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="A tenant whose jobs held more than this share of the group's run time over the last minute, "
        "while other tenants waited, is quarantined too (slow, not failing); 1 turns this off.",
    )


MAX_TENANT_WEIGHT = 1000
MAX_TENANT_OVERRIDES = 100


class TenantSettings(SpecModel):
    """One tenant's share and limits; every field optional (a field not set falls through: run-time
    settings, then the tenant's override, then `defaults`, then the built-in default)."""

    weight: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TENANT_WEIGHT,
        description="Turns among tenants with ready jobs in proportion to weight (default 1); K still caps "
        "jobs in a row.",
    )
    max_in_flight: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="At most this many of the tenant's jobs reserved at once, across every worker of the group.",
    )
    rate: float | None = Field(
        default=None,
        ge=0.001,
        le=1_000_000,
        description="Jobs per second the tenant may start (a token bucket on the Redis clock).",
    )
    burst: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Jobs the tenant may start at once after a quiet spell (default: one second of rate, at least 1).",
    )


class TenantOverride(TenantSettings):
    tenant: str = Field(max_length=64, pattern=TENANT_ID_PATTERN, description="The tenant id these settings are for.")


class TenantsSpec(SpecModel):
    queue_prefix: str = Field(
        default=DEFAULT_TENANT_PREFIX,
        max_length=32,
        pattern=TENANT_PREFIX_PATTERN,
        description="Tenant queues are named <queuePrefix><tenant id>.",
    )
    weight: int | None = Field(
        default=None,
        ge=-1_000_000,
        le=1_000_000,
        description="The tenant group's weight in the weighted scan (balance: none only); default 1.",
    )
    max_consecutive_jobs: int = Field(
        default=5,
        ge=1,
        le=1000,
        description="K: jobs served from one tenant in a row before the rotation moves on.",
    )
    quarantine: QuarantineSpec = Field(default_factory=QuarantineSpec)
    defaults: TenantSettings = Field(
        default_factory=TenantSettings, description="Every tenant's weight and limits unless overridden."
    )
    overrides: list[TenantOverride] = Field(
        default_factory=list,
        max_length=MAX_TENANT_OVERRIDES,
        description="Named tenants' own settings (run-time settings from `fairway tenant set` win over these).",
    )
    metrics_top_n: int = Field(
        default=50,
        ge=0,
        le=1000,
        description="Tenants the operator exports to Prometheus: the top N by waiting jobs and the top N by "
        "p99 wait (so 10,000 tenants never become 10,000 series); 0 exports none.",
    )


# A worker pod's requests unless spec.worker.resources says otherwise: enough to be scheduled as
# Burstable (not BestEffort, the first evicted), no limit (a limit would recycle a real app).
DEFAULT_WORKER_RESOURCES: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "128Mi"}}


class WorkerSpec(SpecModel):
    image: str | None = Field(
        default=None, max_length=512, description="Worker image; the operator's default when omitted."
    )
    handlers: list[Annotated[str, Field(pattern=MODULE_PATTERN, max_length=200)]] = Field(
        default_factory=list,
        max_length=32,
        description="Python modules the worker imports to register its job handlers.",
    )
    resources: dict[str, Any] = Field(
        default_factory=lambda: dict(DEFAULT_WORKER_RESOURCES),
        description="Container resources (default: requests of 100m CPU and 128Mi memory, no limit).",
    )
    env: list[dict[str, Any]] | None = Field(
        default=None, max_length=128, description="Extra container environment variables."
    )
    node_selector: dict[str, str] | None = Field(default=None, max_length=64)
    tolerations: list[dict[str, Any]] | None = Field(default=None, max_length=64)
    automount_service_account_token: bool = Field(
        default=False,
        description="Mount a service-account token into worker pods; off, since workers never call the "
        "Kubernetes API. Turn on only for handlers that do.",
    )
    termination_grace_period_seconds: int | None = Field(
        default=None,
        ge=0,
        le=86_400,
        description="Pod grace period; default timeout + 30 so a job can finish on scale-down.",
    )
    metrics_port: int = Field(
        default=9100,
        ge=0,
        le=65_535,
        description="Port of the workers' Prometheus /metrics (pods are annotated for scraping); 0 turns it off.",
    )
    health_port: int = Field(
        default=8081,
        ge=0,
        le=65_535,
        description="Port of the workers' /healthz (liveness: the loop is not wedged) and /readyz (it serves); "
        "the pods' probes use it. 0 turns both off.",
    )


class QueueSupervisorSpec(SpecModel):
    redis: RedisSpec
    queues: list[QueueName] = Field(
        default_factory=list,
        max_length=MAX_QUEUES,
        description="Queues in priority order (strict left-to-right unless queueWeights are set).",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    balance: Balance = Field(
        default=Balance.NONE,
        description="none: one shared pool; simple: one pool per queue, even split; auto: pools follow load.",
    )
    queue_weights: dict[QueueName, int] | None = Field(
        default=None,
        max_length=MAX_QUEUES,
        description="Queue -> weight; omitted queues weigh 1; zero or negative weights count as 1.",
    )
    paused_queues: list[QueueName] = Field(
        default_factory=list,
        max_length=MAX_QUEUES,
        description="Queues the workers skip until they are removed from this list.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    concurrency: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Jobs one worker process runs at once: plain def handlers on that many threads, async "
        "def handlers on one event loop. minProcesses/maxProcesses still count processes (pods).",
    )
    min_processes: int = Field(
        default=1,
        ge=0,
        le=1000,
        description="Least worker processes per pool; 0 lets an idle pool scale to zero (it wakes at its first job).",
    )
    max_processes: int = Field(default=10, ge=1, le=1000, description="Most worker processes in total.")
    balance_max_shift: int = Field(
        default=1, ge=1, le=100, description="Most processes a pool gains or loses per cooldown."
    )
    balance_cooldown: int = Field(
        default=3,
        ge=1,
        le=3600,
        description="Seconds between scaling steps, and how long demand must persist before a pool grows.",
    )
    scale_down_delay: int = Field(
        default=60,
        ge=0,
        le=86_400,
        description="Seconds demand must stay below a pool's size before it shrinks (the HPA's stabilization window).",
    )
    target_wait: int | None = Field(
        default=None,
        ge=1,
        le=86_400,
        description="Seconds: a pool grows while its oldest ready job has waited longer (unset: by demand alone).",
    )
    auto_scaling_strategy: ScalingStrategy = Field(
        default=DEFAULT_STRATEGY, description="time: queue size x average runtime; size: queue size alone."
    )
    block_for: int = Field(
        default=5,
        ge=0,
        le=60,
        description="Seconds an idle worker blocks waiting for work; 0 polls without blocking.",
    )
    tries: int = Field(default=1, ge=1, le=1000, description="Attempts per job before it is failed.")
    backoff: list[Annotated[int, Field(ge=0, le=86_400)]] = Field(
        default_factory=list,
        max_length=20,
        description="Seconds to wait before each retry; the last value repeats.",
    )
    timeout: int = Field(default=60, ge=1, le=86_400, description="Seconds a job may run.")
    retry_after: int | None = Field(
        default=None,
        ge=1,
        le=172_800,
        description="Seconds after its worker stopped renewing it (the worker died, or lost Redis) that a "
        "reserved job is handed out again. Workers renew their jobs' reservations while they run, so any "
        "job timeout is safe; default 4.",
    )
    unknown_handler_grace: int = Field(
        default=300,
        ge=0,
        le=86_400,
        description="Seconds a job whose handler its worker does not know is handed back for another worker "
        "(no try spent; from its first hand-back) before it fails: in a rolling deploy, old pods give a new "
        "handler's jobs to the new pods instead of failing them. 0 = fail at once.",
    )
    max_jobs: int = Field(default=0, ge=0, description="Jobs before a worker recycles itself; 0 = never.")
    max_time: int = Field(default=0, ge=0, description="Seconds before a worker recycles itself; 0 = never.")
    memory: int = Field(
        default=0,
        ge=0,
        le=1_048_576,
        description="MiB of RSS after which a worker finishes its jobs and recycles; 0 (the default) = never. "
        "Set it below the pod's memory limit (about 90 %) to recycle a leaking worker before the kernel kills "
        "it; a worker whose own size after start-up is already above it refuses to start.",
    )
    tenants: TenantsSpec | None = None
    schedules: list[Schedule] = Field(
        default_factory=list,
        max_length=MAX_SCHEDULES,
        description="Periodic jobs: each tick of each schedule is enqueued exactly once (docs/schedules.md).",
    )
    worker: WorkerSpec = Field(default_factory=WorkerSpec)

    @model_validator(mode="after")
    def _check_rules(self, info: ValidationInfo) -> QueueSupervisorSpec:
        name = _name(info)
        _raise_violations(spec_violations(self.redis, "spec.redis", name) + spec_violations(self, "spec", name))
        return self

    @property
    def policy(self) -> BalancePolicy:
        return POLICIES[self.balance]

    @property
    def effective_retry_after(self) -> int:
        return self.retry_after if self.retry_after is not None else DEFAULT_RETRY_AFTER_S

    @property
    def effective_grace_period(self) -> int:
        grace = self.worker.termination_grace_period_seconds
        return grace if grace is not None else int(after_timeout(self.timeout))

    def effective_weights(self) -> dict[str, int]:
        """Every queue's weight: omitted, zero and negative weights count as the default of 1."""
        given = self.queue_weights or {}
        return {q: effective_weight(given.get(q)) for q in self.queues}

    def warnings(self) -> list[str]:
        """Accepted but probably not meant: surfaced by `fairway validate` and in status."""
        found: list[str] = []
        for queue, weight in (self.queue_weights or {}).items():
            if weight <= 0:
                found.append(
                    f"spec.queueWeights.{queue}: weight {weight} is ignored and counts as 1; "
                    "give a positive weight or remove the entry (to stop serving a queue, "
                    "remove it from queues)."
                )
            elif weight == DEFAULT_WEIGHT:
                found.append(f"spec.queueWeights.{queue}: weight 1 is the default; the entry can be removed.")
        if self.tenants and self.tenants.weight is not None:
            if self.tenants.weight <= 0:
                found.append(
                    f"spec.tenants.weight: weight {self.tenants.weight} is ignored and counts as 1; "
                    "give a positive weight or remove it."
                )
            elif self.tenants.weight == DEFAULT_WEIGHT:
                found.append("spec.tenants.weight: weight 1 is the default; it can be removed.")
        if self.effective_grace_period < self.timeout:
            found.append(
                f"spec.worker.terminationGracePeriodSeconds: {self.effective_grace_period}s is shorter "
                f"than timeout ({self.timeout}s), so a scale-down can kill a running job; "
                "raise it above timeout."
            )
        if self.queues and set(self.queues) <= set(self.paused_queues) and not self.tenants:
            found.append("spec.pausedQueues: every queue is paused, so the workers will sit idle.")
        return found


class QueueSupervisor(SpecModel):
    """The whole resource as read from a manifest; metadata is passed through untyped."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    api_version: Literal["fairway.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["QueueSupervisor"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: QueueSupervisorSpec

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))


class SpecRuleError(ValueError):
    """Raised inside validation; carries every broken cross-field rule so each is reported on its own."""

    def __init__(self, violations: list[SpecRuleViolation]) -> None:
        super().__init__("; ".join(f"{v.field}: {v.message}" for v in violations))
        self.violations = violations


def _raise_violations(violations: list[SpecRuleViolation]) -> None:
    if violations:
        raise SpecRuleError(violations)


def _name(info: ValidationInfo) -> str:
    """The supervisor's metadata.name, passed as validation context, for messages that name it."""
    context = info.context if isinstance(info.context, dict) else {}
    return str(context.get("name", ""))

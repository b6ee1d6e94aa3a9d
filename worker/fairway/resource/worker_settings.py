"""Worker settings: the contract between the operator (and `fairway up`) and the worker (pure).

Typed and validated once where they enter (the `fairway worker` flags, or the config file the operator
renders). Fields mirror the spec's and take their defaults from it (`spec_default`); the tenant group
is the spec's own `tenants` block (`TenantsSpec`), so its settings have one name from the CRD to Lua.
Field names carry their unit (`timeout_s`); SETTING_NAMES is the one table of renames between a spec
field, its setting and its `fairway worker` flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fairway.resource.names import (
    DEFAULT_PREFIX,
    DEFAULT_TENANT_PREFIX,
    QUEUE_NAME,
    QUEUE_NAME_RULE,
    effective_weight,
    served_name_of_group,
)
from fairway.resource.schedules import MAX_SCHEDULES, Schedule
from fairway.resource.spec import DEFAULT_RETRY_AFTER_S, TenantsSpec, WorkerSpec, spec_default


@dataclass(frozen=True)
class SettingName:
    """One setting under each of its names: the spec's field (snake_case of the CRD's), the worker's
    (with its unit), and the `fairway worker` flag's argparse dest (None where there is none)."""

    setting: str
    spec: str | None
    flag: str | None


# The one rename table: the operator's renderer reads the spec column, `fairway worker` the flag column.
SETTING_NAMES: tuple[SettingName, ...] = (
    SettingName("concurrency", "concurrency", "concurrency"),
    SettingName("block_for_s", "block_for", "block_for"),
    SettingName("tries", "tries", "tries"),
    SettingName("backoff_s", "backoff", "backoff"),
    SettingName("timeout_s", "timeout", "timeout"),
    SettingName("unknown_handler_grace_s", "unknown_handler_grace", "unknown_handler_grace"),
    SettingName("max_jobs", "max_jobs", "max_jobs"),
    SettingName("max_time_s", "max_time", "max_time"),
    SettingName("memory_mib", "memory", "memory"),
    SettingName("log_format", None, "log_format"),
    SettingName("metrics_port", None, "metrics_port"),
    SettingName("health_port", None, "health_port"),
)
SPEC_TO_SETTING = {n.spec: n.setting for n in SETTING_NAMES if n.spec is not None}
FLAG_TO_SETTING = {n.flag: n.setting for n in SETTING_NAMES if n.flag is not None}


class WorkerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    redis_url: str | None = Field(
        default=None, description="Redis URL (redis://, rediss:// or unix://); required to run, never rendered."
    )
    cluster: bool | None = Field(
        default=None, description="Redis Cluster; None asks the server (INFO cluster) at start."
    )
    prefix: str = Field(
        default=DEFAULT_PREFIX,
        pattern=r"^[A-Za-z0-9_.-]{1,32}$",
        description="Key prefix in Redis (producers and workers sharing queues use the same).",
    )
    queues: list[str] = Field(default_factory=list, description="Served queues, in priority order.")
    weights: dict[str, int] = Field(
        default_factory=dict, description="Queue -> weight; empty means strict left-to-right priority."
    )
    paused: list[str] = Field(default_factory=list, description="Queues never served by this worker.")
    tenants: TenantsSpec | None = Field(default=None, description="Serve a tenant group too.")
    schedules: list[Schedule] = Field(
        default_factory=list,
        max_length=MAX_SCHEDULES,
        description="Periodic jobs this worker ticks (docs/schedules.md); a tenant schedule's jobs go to this "
        "worker's tenant group (queue prefix `tenant-` when it serves none).",
    )
    metrics_port: int = Field(
        default=WorkerSpec.model_fields["metrics_port"].default,
        ge=0,
        le=65_535,
        description="Port of this worker's Prometheus /metrics; 0 turns it off.",
    )
    health_port: int = Field(
        default=WorkerSpec.model_fields["health_port"].default,
        ge=0,
        le=65_535,
        description="Port of this worker's /healthz and /readyz; 0 turns them off.",
    )
    concurrency: int = Field(
        default=spec_default("concurrency"), ge=1, le=256, description="Jobs this process runs at once."
    )
    block_for_s: float = Field(
        default=spec_default("block_for"), ge=0, le=60, description="Longest idle blocking read; 0 polls every 100 ms."
    )
    handlers: list[str] = Field(default_factory=list, description="Modules that register handlers.")
    tries: int = Field(
        default=spec_default("tries"), ge=1, description="Attempts per job unless the job says otherwise."
    )
    backoff_s: list[int] = Field(
        default_factory=lambda: list(spec_default("backoff")),
        description="Seconds before retry n (the last value repeats); none = at once.",
    )
    timeout_s: float = Field(default=spec_default("timeout"), gt=0, description="Seconds a job may run.")
    retry_after_s: float | None = Field(
        default=None,
        gt=0,
        description="Seconds a reservation outlives this worker's last renewal of it (renewed every third "
        "of it while the job runs or waits to be settled): how soon a dead worker's jobs come back.",
    )
    lost_limit: int = Field(
        default=3,
        ge=1,
        description="Times a job may be lost with its worker (kill -9, OOM kill, node loss, a Redis stall "
        "past its reservation) and run again without spending a try; the next time it is failed as a "
        "poison pill (Sidekiq Pro's rule), since it probably kills whatever runs it.",
    )
    unknown_handler_grace_s: float = Field(
        default=spec_default("unknown_handler_grace"),
        ge=0,
        le=86_400,
        description="Seconds a job for a handler this worker does not know is handed back for another "
        "worker (no try spent) before it fails; 0 = fail at once (a burst run's default).",
    )
    kill_grace_s: float = Field(
        default=10,
        ge=0,
        description="After a timeout, seconds a job that ignores the interrupt gets before the worker exits.",
    )
    max_jobs: int = Field(
        default=spec_default("max_jobs"), ge=0, description="Recycle after this many jobs; 0 = never."
    )
    max_time_s: float = Field(default=spec_default("max_time"), ge=0, description="Recycle after this long; 0 = never.")
    memory_mib: int = Field(
        default=spec_default("memory"),
        ge=0,
        description="Recycle above this RSS; 0 = never: the spec's default, so a plain worker, `fairway up` and "
        "the operator's pods agree, and a limit nobody set recycles no one.",
    )
    burst: bool = Field(default=False, description="Exit 0 once every served queue is empty.")
    log_format: Literal["text", "json", "none"] = Field(
        default="text", description="text, json (one object a line: job lines and log lines) or none."
    )
    maintenance_interval_s: float = Field(
        default=1.0, gt=0, description="How often due delayed jobs and expired reservations are moved."
    )

    @model_validator(mode="before")
    @classmethod
    def _burst_fails_unknown_handlers(cls, data: Any) -> Any:
        """A burst run does what it can and exits: a job for a handler it lacks fails at once (it would
        otherwise keep the run alive for the whole grace), unless a grace is set explicitly."""
        if isinstance(data, dict) and data.get("burst") and "unknown_handler_grace_s" not in data:
            return {**data, "unknown_handler_grace_s": 0}
        return data

    @field_validator("queues", "paused")
    @classmethod
    def _queue_names(cls, value: list[str]) -> list[str]:
        bad = [q for q in value if not QUEUE_NAME.fullmatch(q)]
        if bad:
            raise ValueError(f"invalid queue name(s) {bad}: {QUEUE_NAME_RULE}")
        if len(set(value)) != len(value):
            raise ValueError("a queue is listed twice")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WorkerSettings:
        if not self.queues and self.tenants is None:
            raise ValueError(
                "queues: serve at least one queue (--queues high,default,low) or tenants (--tenants PREFIX)"
            )
        names = [s.name for s in self.schedules]
        if len(set(names)) != len(names):
            raise ValueError("schedules: a schedule name is used twice; give each schedule its own name")
        unknown = sorted(set(self.weights) - set(self.queues))
        if unknown:
            raise ValueError(f"weights: {unknown} are not served queues; add them to queues")
        return self

    @property
    def group_prefix(self) -> str:
        """The queue prefix of the tenant group this worker's tenant schedules write to."""
        return self.tenants.queue_prefix if self.tenants is not None else DEFAULT_TENANT_PREFIX

    def served_names(self) -> list[str]:
        """What this worker serves: its queues, then the tenant group as '@<prefix>'."""
        group = [served_name_of_group(self.tenants.queue_prefix)] if self.tenants is not None else []
        return [*self.queues, *group]

    def served_weights(self) -> dict[str, int]:
        """Weights of the served set, the tenant group included under its '@<prefix>' name."""
        weights = dict(self.weights)
        if self.tenants is not None and self.tenants.weight is not None:
            weights[served_name_of_group(self.tenants.queue_prefix)] = self.tenants.weight
        return weights

    def describe(self, handlers: list[str]) -> str:
        """What a worker with these settings serves, in one line (said once at start)."""
        weights = self.served_weights()
        queues = ", ".join(f"{q}(weight {effective_weight(weights.get(q))})" if weights else q for q in self.queues)
        parts = [f"queues {queues or '-'} ({'weighted' if weights else 'strict left-to-right'})"]
        if self.paused:
            parts.append(f"paused {', '.join(self.paused)}")
        if self.tenants is not None:
            t = self.tenants
            parts.append(f"tenant group {t.queue_prefix}* (K {t.max_consecutive_jobs}, weight {t.weight or 1})")
        parts.append(f"handlers {', '.join(handlers)}")
        parts.append(f"concurrency {self.concurrency}")
        return "; ".join(parts)

    @property
    def retry_after_ms(self) -> int:
        return int((self.retry_after_s if self.retry_after_s is not None else DEFAULT_RETRY_AFTER_S) * 1000)

    def to_config(self) -> dict[str, Any]:
        """The config file's contents (what the operator mounts): never the Redis URL, which holds secrets."""
        config = self.model_dump(mode="json", exclude={"redis_url"}, exclude_none=True)
        if not self.schedules:
            del config["schedules"]  # (most pools have none: their files stay as they were)
        return config

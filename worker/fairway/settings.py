"""Worker settings: typed, validated once where they enter (CLI flags or the config file the operator renders)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fairway.keys import DEFAULT_PREFIX
from fairway.spec import QUEUE_NAME, TENANT_PREFIX_PATTERN


class TenantSettings(BaseModel):
    """The tenant group a worker serves next to (or instead of) its queues."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queue_prefix: str = Field(default="tenant-", pattern=TENANT_PREFIX_PATTERN)
    weight: int | None = Field(default=None, description="The group's weight in the weighted scan; default 1.")
    max_consecutive: int = Field(default=5, ge=1, le=1000, description="K: jobs in a row per tenant.")
    quarantine_failures: int = Field(default=20, ge=1, description="Failed attempts in the window that quarantine.")
    quarantine_window_s: float = Field(default=300, gt=0, description="Sliding window for counting failures.")
    sample_rate: float = Field(default=0.1, gt=0, le=1, description="Turns of a quarantined tenant vs a healthy one.")


class WorkerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    redis_url: str = Field(description="Redis URL (redis://, rediss:// or unix://).")
    cluster: bool | None = Field(
        default=None, description="Redis Cluster; None asks the server (INFO cluster) at start."
    )
    prefix: str = Field(default=DEFAULT_PREFIX, pattern=r"^[A-Za-z0-9_.-]{1,32}$")
    queues: list[str] = Field(default_factory=list, description="Served queues, in priority order.")
    weights: dict[str, int] = Field(
        default_factory=dict, description="Queue -> weight; empty means strict left-to-right priority."
    )
    paused: list[str] = Field(default_factory=list, description="Queues never served by this worker.")
    tenants: TenantSettings | None = Field(default=None, description="Serve a tenant group too.")
    block_for_s: float = Field(
        default=5.0, ge=0, le=60, description="Longest idle blocking read; 0 polls every 100 ms."
    )
    handlers: list[str] = Field(default_factory=list, description="Modules that register handlers.")
    tries: int = Field(default=1, ge=1, description="Attempts per job unless the job says otherwise.")
    backoff_s: list[int] = Field(
        default_factory=list, description="Seconds before retry n (the last value repeats); none = at once."
    )
    timeout_s: float = Field(default=60, gt=0, description="Seconds a job may run before it is stopped.")
    retry_after_s: float | None = Field(
        default=None, gt=0, description="Reservation length; default timeout + 30 s so only crashes expire."
    )
    kill_grace_s: float = Field(
        default=10,
        ge=0,
        description="After a timeout, seconds a job that ignores the interrupt gets before the worker exits.",
    )
    max_jobs: int = Field(default=0, ge=0, description="Recycle after this many jobs; 0 = never.")
    max_time_s: float = Field(default=0, ge=0, description="Recycle after this long; 0 = never.")
    memory_mib: int = Field(default=0, ge=0, description="Recycle above this RSS; 0 = never.")
    burst: bool = Field(default=False, description="Exit 0 once every served queue is empty.")
    log_format: Literal["text", "json", "none"] = "text"
    maintenance_interval_s: float = Field(
        default=1.0, gt=0, description="How often due delayed jobs and expired reservations are moved."
    )

    @field_validator("queues", "paused")
    @classmethod
    def _queue_names(cls, value: list[str]) -> list[str]:
        bad = [q for q in value if not QUEUE_NAME.match(q)]
        if bad:
            raise ValueError(f"invalid queue name(s) {bad}: letters, digits, _ . : - (at most 63)")
        if len(set(value)) != len(value):
            raise ValueError("a queue is listed twice")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> WorkerSettings:
        if not self.queues and self.tenants is None:
            raise ValueError(
                "queues: serve at least one queue (--queues high,default,low) or tenants (--tenants PREFIX)"
            )
        unknown = sorted(set(self.weights) - set(self.queues))
        if unknown:
            raise ValueError(f"weights: {unknown} are not served queues; add them to queues")
        if self.retry_after_s is not None and self.retry_after_s <= self.timeout_s:
            raise ValueError("retry_after_s must be greater than timeout_s, or running jobs are handed out twice")
        return self

    def served_weights(self) -> dict[str, int]:
        """Weights of the served set, the tenant group included under its '@<prefix>' name."""
        weights = dict(self.weights)
        if self.tenants is not None and self.tenants.weight is not None:
            weights[f"@{self.tenants.queue_prefix}"] = self.tenants.weight
        return weights

    @property
    def retry_after_ms(self) -> int:
        return int((self.retry_after_s if self.retry_after_s is not None else self.timeout_s + 30) * 1000)

    def backoff_for(self, attempt: int) -> float:
        """Seconds before retrying after failed attempt number `attempt` (1-based)."""
        if not self.backoff_s:
            return 0.0
        return float(self.backoff_s[min(attempt, len(self.backoff_s)) - 1])


def load_config(path: str) -> dict[str, Any]:
    """A YAML or JSON mapping of WorkerSettings fields (what the operator mounts)."""
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of worker settings")
    return data

"""The QueueSupervisor status as a typed model: the CRD's status schema is generated from it, and the
operator builds an instance of it and serialises that, so a field it writes is always a field the
API server keeps (a field missing from the schema would be pruned silently).

kopf keeps its own bookkeeping in annotations, never in `status` (see `fairway_operator.settings`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ConditionType(StrEnum):
    VALID = "Valid"
    READY = "Ready"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"


class StatusModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_api(self) -> dict[str, Any]:
        """The camelCase JSON the API server stores; unset optional fields are left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Condition(StatusModel):
    type: ConditionType
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    message: str = Field(default="", max_length=32768)
    observed_generation: int | None = Field(default=None, ge=0)
    last_transition_time: str = Field(description="RFC 3339 time of the last status change.")


class PoolStatus(StatusModel):
    name: str = Field(max_length=253)
    queues: list[str] = Field(default_factory=list, max_length=65)
    desired_replicas: int = 0
    ready_replicas: int = 0
    slots: int = Field(default=0, description="Jobs the pool runs at once: desired replicas x concurrency.")
    busy_slots: int = Field(default=0, description="Slots running a job when the operator last looked.")
    waiting: int = Field(default=0, description="Jobs waiting for the pool: ready and due delayed.")
    last_scaled_time: str | None = Field(default=None, description="RFC 3339 time of the last replica change.")
    last_scaled_reason: str | None = Field(
        default=None, max_length=1024, description="Why: the message of the Scaled event it emitted."
    )


class QueueStatus(StatusModel):
    name: str = Field(max_length=63)
    weight: int = 1
    paused: bool = False
    depth: int = 0
    reserved: int = 0
    delayed: int = 0
    failed: int = 0
    oldest_age_seconds: float | None = None
    processes: int = 0


class TenantsStatus(StatusModel):
    active: int = 0
    quarantined: list[str] = Field(default_factory=list, max_length=100)
    quarantined_slow: list[str] = Field(
        default_factory=list, max_length=100, description="Of the quarantined: those there for their run time share."
    )
    at_cap: list[str] = Field(
        default_factory=list, max_length=100, description="Tenants with their maxInFlight jobs running now."
    )
    worst_p99_wait_ms: float | None = None


class ScheduleStatus(StatusModel):
    name: str = Field(max_length=63)
    paused: bool = False
    last_run_time: str | None = Field(default=None, description="RFC 3339 time of the latest tick that got a job.")
    next_run_times: list[str] = Field(
        default_factory=list, max_length=3, description="RFC 3339 times of the next ticks (none while paused)."
    )


class QueueSupervisorStatus(StatusModel):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=8,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    pools: list[PoolStatus] = Field(default_factory=list, max_length=70)
    queues: list[QueueStatus] = Field(default_factory=list, max_length=70)
    tenants: TenantsStatus | None = None
    schedules: list[ScheduleStatus] = Field(default_factory=list, max_length=50)
    warnings: list[str] = Field(default_factory=list, max_length=100)

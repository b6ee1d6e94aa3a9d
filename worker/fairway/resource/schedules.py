"""Schedules (periodic jobs): what one declares, and its ticks (pure).

A tick is a moment a schedule's cron expression (in its time zone) or interval names, in whole epoch
seconds. Every ticker (each worker that has the schedule, and the operator) computes the same ticks
from the same declaration; `tick.lua` writes a tick's job only when the tick is later than the last one
handled for that schedule in Redis, so each tick gives exactly one job however many tickers run
(docs/schedules.md). The rules a schedule's fields follow are written once here, for Python and, as
CEL, for the API server, with the same words.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from fairway.resource.names import QUEUE_NAME_PATTERN, TENANT_ID_PATTERN

MAX_SCHEDULES = 50
MAX_CRON_LENGTH = 100
DEFAULT_GRACE_S = 60
DEFAULT_TIMEZONE = "UTC"
# Late ticks one call catches up at most (older ones count as missed): a 1-second schedule down for
# a day is not a burst of 86,400 jobs.
MAX_LATE_TICKS = 1000
SCHEDULE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$"
HANDLER_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.:]{0,199}$"

_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_DAYS = "sun|mon|tue|wed|thu|fri|sat"
_FIELD_VALUES = (
    "[0-5]?[0-9]",  # minute
    "[01]?[0-9]|2[0-3]",  # hour
    "0?[1-9]|[12][0-9]|3[01]",  # day of month
    f"0?[1-9]|1[0-2]|{_MONTHS}",  # month
    f"[0-7]|{_DAYS}",  # day of week (0 and 7 are Sunday)
)


def _field(values: str) -> str:
    item = f"([*]|({values})(-({values}))?)(/[1-9][0-9]{{0,2}})?"
    return f"{item}(,{item})*"


# Five fields (minute hour day-of-month month day-of-week) or a macro: what the CRD's rule (RE2) and
# Python both match, before croniter reads it.
CRON_PATTERN = (
    "(?i)^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|"
    + " +".join(_field(v) for v in _FIELD_VALUES)
    + ")$"
)
_CRON = re.compile(CRON_PATTERN)

CRON_MESSAGE = (
    "[cron] is not a cron expression: give five fields, minute hour day-of-month month day-of-week, each *, "
    "a number in range, a range a-b, a list a,b or a step */n (e.g. '*/5 * * * *', '0 3 * * mon-fri'), "
    "or @hourly, @daily, @weekly, @monthly, @yearly"
)
WHEN_MESSAGE = "A schedule needs exactly one of [cron] or [every] (seconds between ticks)."
WHERE_MESSAGE = "A schedule needs exactly one of [queue] or [tenant] (the tenant's job goes to the tenant group)."


def _fires(cron: str) -> bool:
    try:
        croniter(cron).get_next(float)
    except CroniterBadDateError:
        return False
    return True


class Missed(StrEnum):
    """What ticks missed while nothing ran (older than the grace) become."""

    SKIP = "skip"  # none: the next job is at the next tick
    ONCE = "once"  # one job, for the latest of them


class Schedule(BaseModel):
    """One periodic job: when (cron + timezone, or every), what (handler, args, kwargs) and where."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "has(self.cron) != has(self.every)", "message": WHEN_MESSAGE},
                {"rule": "has(self.queue) != has(self.tenant)", "message": WHERE_MESSAGE},
                {
                    "rule": f"!has(self.cron) || self.cron.matches('{CRON_PATTERN}')",
                    "message": CRON_MESSAGE,
                    "fieldPath": ".cron",
                },
            ]
        },
    )

    name: str = Field(
        pattern=SCHEDULE_NAME_PATTERN,
        max_length=63,
        description="The schedule's name: lowercase letters, digits, - _ . (its jobs' ids start with it).",
    )
    cron: str | None = Field(
        default=None,
        max_length=MAX_CRON_LENGTH,
        description="Cron expression (minute hour day-of-month month day-of-week, or @daily ...), read in timezone.",
    )
    every: int | None = Field(
        default=None,
        ge=1,
        le=604_800,
        description="Seconds between ticks instead of cron, counted from the Unix epoch (every: 60 ticks on "
        "each minute).",
    )
    timezone: str = Field(
        default=DEFAULT_TIMEZONE,
        max_length=64,
        pattern=r"^[A-Za-z0-9_+/-]+$",
        description="IANA time zone the cron expression is read in (Europe/Paris); daylight-saving changes "
        "are croniter's rules.",
    )
    handler: str = Field(pattern=HANDLER_NAME_PATTERN, description="The handler each tick's job runs.")
    args: list[Any] = Field(
        default_factory=list,
        max_length=64,
        description="Positional arguments of each job.",
        json_schema_extra={"items": {"x-kubernetes-preserve-unknown-fields": True}},
    )
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of each job.")
    queue: Annotated[str, Field(pattern=QUEUE_NAME_PATTERN, max_length=63)] | None = Field(
        default=None, description="The queue the jobs go to (one of the supervisor's queues)."
    )
    tenant: Annotated[str, Field(pattern=TENANT_ID_PATTERN, max_length=64)] | None = Field(
        default=None, description="The tenant whose queue the jobs go to (the supervisor's tenant group)."
    )
    missed: Missed = Field(
        default=Missed.SKIP,
        description="Ticks missed while nothing ran, older than grace: skip (none) or once (one job for them).",
    )
    grace: int = Field(
        default=DEFAULT_GRACE_S,
        ge=0,
        le=86_400,
        description="Seconds a tick may be late and still get its job (a restart within it loses no tick).",
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None and not (_CRON.fullmatch(value) and croniter.is_valid(value)):
            raise ValueError(CRON_MESSAGE)
        if value is not None and not _fires(value):
            raise ValueError(f"[cron] {value!r} never falls on a real date (31 February?): fix its day or month")
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"[timezone] {value!r} is not an IANA time zone: use a name like UTC, Europe/Paris or America/New_York"
            ) from None
        return value

    @model_validator(mode="after")
    def _one_of_each(self) -> Schedule:
        if (self.cron is None) == (self.every is None):
            raise ValueError(WHEN_MESSAGE)
        if (self.queue is None) == (self.tenant is None):
            raise ValueError(WHERE_MESSAGE)
        return self

    def describe(self) -> str:
        when = f"cron {self.cron!r} ({self.timezone})" if self.cron else f"every {self.every}s"
        where = f"queue {self.queue}" if self.queue else f"tenant {self.tenant}"
        return f"{self.name}: {when} -> {self.handler} on {where}"

    # -- ticks ------------------------------------------------------------------------------------

    def latest_tick(self, at: float) -> int:
        """The latest tick at or before `at`."""
        if self.every is not None:
            return math.floor(at / self.every) * self.every
        zone = ZoneInfo(self.timezone)
        after = datetime.fromtimestamp(math.floor(at) + 1, zone)  # croniter's get_prev is strict
        return int(croniter(self.cron, after).get_prev(float))

    def next_ticks(self, after: float, count: int) -> list[int]:
        """The next `count` ticks strictly after `after`."""
        if self.every is not None:
            first = (math.floor(after / self.every) + 1) * self.every
            return [first + i * self.every for i in range(count)]
        found = croniter(self.cron, datetime.fromtimestamp(math.floor(after), ZoneInfo(self.timezone)))
        return [int(found.get_next(float)) for _ in range(count)]

    def due(self, last: int, now: float) -> list[int]:
        """The ticks to write a job for, ascending: each tick after `last` and at most `grace` late (the
        latest MAX_LATE_TICKS of them), and with missed: once the latest older one too."""
        late: list[int] = []
        missed: int | None = None
        tick = self.latest_tick(now)
        while tick > last:
            if tick < now - self.grace or len(late) == MAX_LATE_TICKS:
                missed = tick
                break
            late.append(tick)
            tick = self.previous_tick(tick)
        if missed is not None and self.missed is Missed.ONCE:
            late.append(missed)
        return late[::-1]

    def previous_tick(self, tick: int) -> int:
        return self.latest_tick(tick - 1)

    def job_id(self, tick: int) -> str:
        """The job of a tick: the same id from every ticker, for logs and `fairway schedules`."""
        return f"{self.name}:{tick}"


@dataclass(frozen=True)
class ScheduleView:
    """One schedule as `fairway schedules` and the status show it."""

    schedule: Schedule
    group_prefix: str
    last: int | None  # the latest tick handled; None: no ticker has run it yet
    ran: int | None  # the latest tick that got a job
    paused: bool
    next_runs: list[int]

    @property
    def target(self) -> str:
        s = self.schedule
        return f"queue {s.queue}" if s.queue is not None else f"tenant {s.tenant} ({self.group_prefix}*)"

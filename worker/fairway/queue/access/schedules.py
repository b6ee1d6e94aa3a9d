"""Schedules in Redis (docs/schedules.md): a tick's jobs written, the registry `fairway schedules`
reads, pausing and resuming.

A schedule's state (`<family base>schedule:<name>`) sits in the slot of the queue or tenant group its
jobs go to, so `tick.lua` checks the tick and writes its job in one step, on a cluster too. The
registry (`<prefix>:schedules`: name -> declaration) is what tickers say they run; it is only read by
people, so on a cluster it is written apart from the ticks.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fairway.queue.access.producer import Producer
from fairway.queue.connection import RedisClient, reply_text
from fairway.queue.protocol import calls
from fairway.queue.protocol.job import new_job
from fairway.queue.protocol.keys import DEFAULT_PREFIX, QueueKeys, TenantGroupKeys
from fairway.resource.names import DEFAULT_TENANT_PREFIX
from fairway.resource.schedules import Schedule, ScheduleView
from fairway.resource.spec import QueueSupervisorSpec

TICKS_PER_CALL = 100  # one call's documents: a catch-up of many late ticks goes in several, in order


@dataclass(frozen=True)
class Target:
    """Where a schedule's jobs and state live."""

    keys: QueueKeys | TenantGroupKeys
    queue: str  # the documents' queue (a tenant's queue name in a group)
    tenant: str | None

    @classmethod
    def of(cls, schedule: Schedule, prefix: str, group_prefix: str) -> Target:
        if schedule.tenant is not None:
            return cls(TenantGroupKeys(prefix, group_prefix), group_prefix + schedule.tenant, schedule.tenant)
        assert schedule.queue is not None, "a schedule has a queue or a tenant"
        return cls(QueueKeys(prefix, schedule.queue), schedule.queue, None)

    @property
    def served_name(self) -> str:
        return self.keys.name if isinstance(self.keys, TenantGroupKeys) else self.keys.queue


@dataclass(frozen=True)
class Ticked:
    last: int  # the latest tick handled (by anyone)
    written: int  # jobs this call wrote
    paused: bool


class Schedules:
    def __init__(
        self,
        client: RedisClient,
        prefix: str = DEFAULT_PREFIX,
        group_prefix: str = DEFAULT_TENANT_PREFIX,
        producer: Producer | None = None,
    ) -> None:
        self.producer = producer or Producer(client, prefix)
        self.client, self.prefix, self.group_prefix = client, prefix, group_prefix

    def target(self, schedule: Schedule) -> Target:
        return Target.of(schedule, self.prefix, self.group_prefix)

    def document(self, schedule: Schedule, tick: int) -> bytes:
        """A tick's job document (its id names the schedule and the tick)."""
        t = self.target(schedule)
        job = new_job(
            schedule.handler,
            t.queue,
            schedule.args,
            schedule.kwargs,
            tenant=t.tenant,
            job_id=schedule.job_id(tick),
        )
        return job.encode()

    def tick(self, schedule: Schedule, now: float, last: int | None = None) -> Ticked:
        """Write the jobs of the ticks due at `now` that no one wrote yet. `last`: the latest tick this
        ticker knows was handled (None: read it; a schedule never seen starts a second before now)."""
        t = self.target(schedule)
        state = t.keys.schedule(schedule.name)
        if last is None:
            stored = self.client.hget(state, "last")
            last = int(stored) if stored is not None else schedule.latest_tick(now - 1)
        due = schedule.due(last, now)
        standalone = None if self.producer.cluster else self.producer.globals
        if self.producer.cluster and due:
            self.producer.remember([t.served_name])
        written, paused = 0, False
        for start in range(0, max(len(due), 1), TICKS_PER_CALL):
            jobs = [(tick, self.document(schedule, tick)) for tick in due[start : start + TICKS_PER_CALL]]
            reply = self.producer.scripts.run(calls.tick(t.keys, standalone, schedule.name, t.tenant, last, jobs))
            last, written, paused = int(reply[0]), written + int(reply[1]), bool(int(reply[2]))
        return Ticked(last, written, paused)

    def register(self, schedules: Iterable[Schedule]) -> None:
        """Say what this ticker runs, for `fairway schedules` (written again from time to time, so a
        Redis that restarted empty learns it again)."""
        entries = [item for s in schedules for item in (s.name, json.dumps(self._entry(s)))]
        if entries:
            self.client.hset(self.producer.globals.schedules, items=entries)

    def _entry(self, schedule: Schedule) -> dict[str, Any]:
        return {
            "schedule": schedule.model_dump(mode="json", by_alias=True, exclude_defaults=True),
            "groupPrefix": self.group_prefix,
        }

    def views(self, now: float | None = None, runs: int = 3) -> list[ScheduleView]:
        """Every registered schedule with its state and next `runs` ticks, by name."""
        now = time.time() if now is None else now
        raw = self.client.hgetall(self.producer.globals.schedules)
        found: list[tuple[Schedule, str]] = []
        for value in raw.values():
            try:
                entry = json.loads(value)
                found.append((Schedule.model_validate(entry["schedule"]), str(entry["groupPrefix"])))
            except (ValueError, KeyError, TypeError):
                continue  # written by another version: not ours to show
        return [self.view(schedule, group, now, runs) for schedule, group in sorted(found, key=lambda f: f[0].name)]

    def view(self, schedule: Schedule, group_prefix: str, now: float, runs: int = 3) -> ScheduleView:
        """One schedule's state in Redis and its next `runs` ticks after `now` (none while paused)."""
        target = Target.of(schedule, self.prefix, group_prefix)
        stored = self.client.hgetall(target.keys.schedule(schedule.name))
        state = {reply_text(k): reply_text(v) for k, v in stored.items()}
        last = int(state["last"]) if "last" in state else None
        ran = int(state["ran"]) if "ran" in state else None
        paused = state.get("paused") == "1"
        after = max(now, last) if last is not None else now
        return ScheduleView(schedule, group_prefix, last, ran, paused, schedule.next_ticks(after, runs))

    def set_paused(self, name: str, paused: bool) -> bool:
        """Pause or resume a registered schedule: False when no ticker registered `name`. Ticks due
        while paused are handled without a job, so resuming starts at the next tick."""
        view = next((v for v in self.views(runs=1) if v.schedule.name == name), None)
        if view is None:
            return False
        state = Target.of(view.schedule, self.prefix, view.group_prefix).keys.schedule(name)
        if paused:
            self.client.hset(state, "paused", "1")
        else:
            self.client.hdel(state, "paused")
        return True

    def names(self) -> list[str]:
        return sorted(reply_text(k) for k in self.client.hkeys(self.producer.globals.schedules))


def tick_spec(client: RedisClient, spec: QueueSupervisorSpec) -> list[ScheduleView]:
    """A supervisor's schedules ticked once more (the operator's status pass and `fairway up` are
    tickers too, so a pool scaled to zero still gets their jobs), then read back for its status."""
    if not spec.schedules:
        return []
    group_prefix = spec.tenants.queue_prefix if spec.tenants is not None else DEFAULT_TENANT_PREFIX
    schedules = Schedules(client, group_prefix=group_prefix)
    now = time.time()
    schedules.register(spec.schedules)
    for schedule in spec.schedules:
        schedules.tick(schedule, now)
    return [schedules.view(s, group_prefix, now) for s in spec.schedules]


def epoch_text(tick: int | None) -> str:
    """A tick as people read it (UTC, ISO 8601), '-' for none."""
    if tick is None:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(math.floor(tick)))

"""A schedule's ticks and its rules (pure): which ticks are due after a gap (grace, skip or once, the
cap), cron in a time zone across daylight-saving changes, and the refusals, with the words the CRD's
rule says."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

import fairway
from fairway.queue.runtime.handlers import Registry
from fairway.queue.runtime.ticker import declared_schedules
from fairway.resource.schedules import CRON_MESSAGE, CRON_PATTERN, MAX_LATE_TICKS, Schedule
from fairway.resource.worker_settings import WorkerSettings

T0 = 1_800_000_000  # a multiple of 60 and of 10


def every(seconds: int, **fields: Any) -> Schedule:
    return Schedule(name="s", every=seconds, handler="h", queue="q", **fields)


def test_interval_ticks_are_aligned_to_the_epoch() -> None:
    s = every(10)
    assert s.latest_tick(T0 + 9.99) == T0
    assert s.latest_tick(T0) == T0
    assert s.next_ticks(T0, 3) == [T0 + 10, T0 + 20, T0 + 30]
    assert s.next_ticks(T0 + 0.5, 1) == [T0 + 10]
    assert s.previous_tick(T0) == T0 - 10


def test_due_ticks_within_grace_each_get_a_job_older_ones_are_skipped() -> None:
    s = every(10, grace=30)
    assert s.due(T0, T0 + 5) == [], "nothing after last yet"
    assert s.due(T0, T0 + 10) == [T0 + 10]
    assert s.due(T0, T0 + 35) == [T0 + 10, T0 + 20, T0 + 30], "late ticks within grace, in order"
    assert s.due(T0, T0 + 100) == [T0 + 70, T0 + 80, T0 + 90, T0 + 100], "older than 30 s: skipped"


def test_missed_once_adds_one_job_for_the_latest_missed_tick() -> None:
    s = every(10, grace=30, missed="once")
    assert s.due(T0, T0 + 100) == [T0 + 60, T0 + 70, T0 + 80, T0 + 90, T0 + 100]
    assert s.due(T0, T0 + 35) == [T0 + 10, T0 + 20, T0 + 30], "nothing missed: nothing more"
    assert every(10, grace=0, missed="once").due(T0, T0 + 100) == [T0 + 90, T0 + 100]


def test_late_ticks_are_capped() -> None:
    s = every(1, grace=86_400)
    due = s.due(T0, T0 + 5000)
    assert len(due) == MAX_LATE_TICKS and due[-1] == T0 + 5000 and due == sorted(due)


def test_cron_in_a_time_zone_across_daylight_saving() -> None:
    paris = Schedule(name="s", cron="30 2 * * *", timezone="Europe/Paris", handler="h", queue="q")
    before = datetime(2026, 3, 28, 12, tzinfo=ZoneInfo("Europe/Paris")).timestamp()
    runs = [datetime.fromtimestamp(t, ZoneInfo("Europe/Paris")) for t in paris.next_ticks(before, 3)]
    # 29 March 2026: 02:00 -> 03:00, so 02:30 does not exist that day; croniter runs it at 03:00
    assert [(r.day, r.hour, r.minute) for r in runs] == [(29, 3, 0), (30, 2, 30), (31, 2, 30)]
    assert all(t == paris.latest_tick(t) for t in paris.next_ticks(before, 3)), "a tick is its own latest"
    utc = Schedule(name="s", cron="*/5 * * * *", handler="h", queue="q")
    assert utc.latest_tick(T0 + 299) == T0 and utc.due(T0 - 300, T0 + 1) == [T0]


@pytest.mark.parametrize(
    "cron", ["* * * * *", "*/5 * * * *", "0 3 * * mon-fri", "0 0 1,15 * *", "@daily", "@HOURLY", "0 9 * JAN-MAR 1-5"]
)
def test_good_cron_expressions(cron: str) -> None:
    assert re.fullmatch(CRON_PATTERN, cron)
    Schedule(name="s", cron=cron, handler="h", queue="q")


@pytest.mark.parametrize(
    "cron", ["61 * * * *", "* * * *", "* * * * * *", "*/0 * * * *", "0 0 * * 8", "every day", "0 24 * * *", ""]
)
def test_bad_cron_expressions_are_refused_in_the_rules_words(cron: str) -> None:
    assert not re.fullmatch(CRON_PATTERN, cron), "the CRD's rule refuses it too"
    with pytest.raises(ValidationError) as caught:
        Schedule(name="s", cron=cron, handler="h", queue="q")
    assert CRON_MESSAGE in str(caught.value) and caught.value.errors()[0]["loc"] == ("cron",)


def test_a_date_that_never_comes_is_refused() -> None:
    with pytest.raises(ValidationError, match="never falls on a real date"):
        Schedule(name="s", cron="0 0 31 2 *", handler="h", queue="q")


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"cron": "* * * * *", "every": 5}, "exactly one of [cron] or [every]"),
        ({}, "exactly one of [cron] or [every]"),
        ({"every": 5, "tenant": "acme"}, "exactly one of [queue] or [tenant]"),
        ({"every": 5, "timezone": "Mars/Olympus"}, "is not an IANA time zone"),
        ({"every": 0}, "greater than or equal to 1"),
        ({"every": 5, "missed": "all"}, "'skip' or 'once'"),
    ],
)
def test_other_refusals_name_the_fix(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(words)):
        Schedule.model_validate({"name": "s", "handler": "h", "queue": "q", **fields})


def test_job_ids_name_the_schedule_and_tick() -> None:
    assert every(10).job_id(T0) == f"s:{T0}"


def test_fairway_schedule_declares_in_a_registry_and_refuses_in_one_line() -> None:
    registry = Registry()

    @fairway.job(registry=registry, queue="reports")
    def report() -> None: ...

    made = fairway.schedule("nightly", cron="0 3 * * *", handler=report, registry=registry)
    assert (made.handler, made.queue, made.tenant) == ("report", "reports", None)
    assert registry.schedules == {"nightly": made}
    assert fairway.schedule("t", every=60, handler="sync", tenant="acme", registry=registry).queue is None
    assert fairway.schedule("d", every=60, handler="sync", registry=registry).queue == "default"
    with pytest.raises(ValueError, match=r"^fairway.schedule\('bad'\): cron: \[cron\] is not a cron expression"):
        fairway.schedule("bad", cron="soon", handler="sync", registry=registry)
    with pytest.raises(ValueError, match="declared twice"):
        fairway.schedule("nightly", cron="0 4 * * *", handler=report, registry=registry)


def test_a_worker_merges_its_settings_and_modules_schedules_by_name() -> None:
    registry = Registry()
    from_module = fairway.schedule("a", every=5, handler="h", queue="q", registry=registry)
    settings = WorkerSettings(queues=["q"], schedules=[every(5).model_copy(update={"name": "b"}), from_module])
    assert sorted(s.name for s in declared_schedules(settings, registry)) == ["a", "b"]
    clash = WorkerSettings(queues=["q"], schedules=[Schedule(name="a", every=6, handler="h", queue="q")])
    with pytest.raises(ValueError, match="by the worker's settings and by a handler module"):
        declared_schedules(clash, registry)
    with pytest.raises(ValidationError, match="used twice"):
        WorkerSettings(queues=["q"], schedules=[every(5), every(6)])

"""`@fairway.job(tries=, timeout=, backoff=, queue=)`: a handler's defaults for its jobs. The job's own
option wins, then the handler's, then the worker's; a bad default stops the import naming the argument."""

from __future__ import annotations

import pytest

from fairway.queue.protocol.declared import Declared, declared_by, limits
from fairway.queue.protocol.job import new_job
from fairway.queue.runtime.handlers import Registry, job
from fairway.resource.worker_settings import WorkerSettings

WORKER = WorkerSettings(queues=["default"], tries=2, timeout_s=60, backoff_s=[7])


def registered(**options: object) -> Registry:
    reg = Registry()

    @job(name="send", registry=reg, **options)  # type: ignore[arg-type]
    def send() -> None: ...

    return reg


def test_the_job_wins_then_the_handler_then_the_worker() -> None:
    reg = registered(tries=5, timeout=10, backoff=[1, 5, 30])
    declared = reg.limits_for(new_job("send", "default", [], {}), WORKER)
    assert (declared.tries, declared.timeout_s, declared.backoff_s) == (5, 10.0, (1, 5, 30))
    own = reg.limits_for(new_job("send", "default", [], {}, max_tries=9, timeout=3), WORKER)
    assert (own.tries, own.timeout_s, own.backoff_s) == (9, 3.0, (1, 5, 30))
    plain = registered().limits_for(new_job("send", "default", [], {}), WORKER)
    assert (plain.tries, plain.timeout_s, plain.backoff_s) == (2, 60.0, (7,))
    unknown = reg.limits_for(new_job("other", "default", [], {}), WORKER)
    assert unknown.tries == 2


def test_an_empty_declared_backoff_means_at_once_not_the_workers() -> None:
    assert registered(backoff=[]).limits_for(new_job("send", "default", [], {}), WORKER).backoff_for(1) == 0


def test_backoff_repeats_its_last_value() -> None:
    got = limits(None, None, Declared("h", backoff=(1, 5, 30)), 1, 60, [])
    assert [got.backoff_for(n) for n in (1, 2, 3, 4, 9)] == [1, 5, 30, 30, 30]
    assert limits(None, None, None, 1, 60, []).backoff_for(3) == 0


MODULE_REGISTRY = Registry()


@job(registry=MODULE_REGISTRY, tries=4)
def bare() -> None: ...


def test_a_module_qualified_name_finds_the_declaration_too() -> None:
    qualified = f"{bare.__module__}.{bare.__qualname__}"
    assert MODULE_REGISTRY.limits_for(new_job(qualified, "default", [], {}), WORKER).tries == 4


def test_the_decorated_function_carries_its_declaration() -> None:
    reg = Registry()

    @job(name="emails.send", registry=reg, queue="mail", tries=3)
    def send() -> None: ...

    assert declared_by(send) == Declared("emails.send", tries=3, queue="mail")
    assert declared_by(lambda: None) is None


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"tries": 0}, "max_tries 0 is out of range"),
        ({"timeout": -1}, "timeout -1 s is out of range"),
        ({"backoff": [1, -5]}, "backoff [1, -5] must be a list"),
        ({"backoff": "1,5"}, "backoff '1,5' must be a list"),
        ({"queue": "no spaces"}, "queue 'no spaces' is invalid"),
    ],
)
def test_a_bad_default_stops_the_import_naming_it(options: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=r"@fairway.job for 'send': ") as caught:
        registered(**options)
    assert words in str(caught.value)


def test_the_limits_kept_per_handler_follow_the_settings_and_a_new_registration() -> None:
    reg = registered(tries=5)
    plain = new_job("send", "default", [], {})
    assert reg.limits_for(plain, WORKER).tries == 5
    assert reg.limits_for(plain, WORKER) is reg.limits_for(plain, WORKER), "kept for jobs without options"
    other = WorkerSettings(queues=["default"], tries=2, timeout_s=9)
    assert reg.limits_for(plain, other).timeout_s == 9, "other settings are not served the kept limits"

    kept = reg.limits_for(plain, other)

    @job(name="notify", registry=reg, tries=7)
    def notify() -> None: ...

    assert reg.limits_for(plain, other) is not kept, "a new registration drops what was kept"
    assert reg.limits_for(new_job("notify", "default", [], {}), other).tries == 7
    assert reg.limits_for(new_job("made_up", "default", [], {}), other).tries == 2
    assert "made_up" not in reg._common_limits, "a producer's made-up names are not kept"

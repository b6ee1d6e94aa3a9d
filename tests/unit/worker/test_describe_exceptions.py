"""Describing a handler's exception is total: whatever it raised, a name, a message and a traceback."""

from __future__ import annotations

from fairway.queue.runtime.execution import Attempt, Outcome, describe, outcome_of
from fairway.queue.runtime.lifecycle import JobTimeout


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no")


class Recursive(Exception):
    def __str__(self) -> str:
        return str(self)


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_an_exception_whose_str_raises_or_recurses_is_described_safely() -> None:
    for exc in (Unprintable(), Recursive()):
        name, message, trace = describe(raised(exc))
        assert name == type(exc).__name__ and "whose str() raised" in message
        assert trace is not None and trace.startswith("Traceback (most recent call last):") and name in trace


def test_the_exception_it_was_raised_from_is_in_the_traceback() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as exc:
        _, message, trace = describe(exc)
    assert message == "outer" and trace is not None
    assert trace.index("KeyError: 'inner'") < trace.index("direct cause") < trace.index("RuntimeError: outer")


def test_base_exceptions_are_failed_attempts_and_the_timeout_is_a_timeout() -> None:
    assert outcome_of(raised(SystemExit(3)), 0.1, 60).error == "SystemExit: 3"
    assert outcome_of(raised(KeyboardInterrupt()), 0.1, 60).outcome is Outcome.RETRY
    assert outcome_of(raised(JobTimeout()), 60, 60) == Attempt.timed_out(60)
    assert outcome_of(raised(TimeoutError("socket")), 1, 60).error == "TimeoutError: socket", "its own, early"
    assert outcome_of(raised(TimeoutError()), 60, 60) == Attempt.timed_out(60), "asyncio's, at the deadline"

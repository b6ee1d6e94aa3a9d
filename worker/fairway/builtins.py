"""Built-in handlers for smoke tests, demos and benchmarks; always registered."""

from __future__ import annotations

import time

from fairway.queue.runtime.handlers import job


@job(name="noop")
def noop(*_args: object, **_kwargs: object) -> None:
    """Does nothing: measures the queue's own cost per job."""


@job(name="sleep")
def sleep(seconds: float = 0.0) -> None:
    time.sleep(float(seconds))


class JobFailed(RuntimeError):
    pass


@job(name="fail")
def fail(message: str = "failed on purpose") -> None:
    raise JobFailed(message)

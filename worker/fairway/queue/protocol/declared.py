"""What `@fairway.job(...)` declares for a handler's jobs (pure): defaults where the handler is written.

A job's own option wins (the document's `max_tries`, `timeout`), then the handler's declaration, then
the worker's setting: `limits` is that rule, used by the worker when it starts a job and when it
settles one. The producer reads the declaration too when it is handed the function itself
(`client.enqueue(send, ...)`): the handler's registered name, its `queue`, `unique_for` and
`result_ttl` (so the handle it returns knows a result is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fairway.queue.protocol.job import JobError, check_result_ttl, check_timeout, check_tries, check_unique_for
from fairway.resource.names import QUEUE_NAME, QUEUE_NAME_RULE

MAX_BACKOFF_S = 86_400  # one retry's wait (the spec's `backoff` bound)
MAX_BACKOFF_STEPS = 20

# The attribute `@fairway.job` sets on the function it registers.
DECLARATION_ATTRIBUTE = "fairway_job"


@dataclass(frozen=True)
class Declared:
    """A handler's registered name and the defaults it declared for its jobs (None: not declared)."""

    name: str
    tries: int | None = None
    timeout: float | None = None
    backoff: tuple[int, ...] | None = None
    queue: str | None = None
    unique_for: float | None = None  # the producer's default when handed the function (docs/unique.md)
    result_ttl: float | None = None  # keep its jobs' results this long (docs/results.md)


def declare(
    name: str,
    *,
    tries: int | None = None,
    timeout: float | None = None,
    backoff: Sequence[int] | None = None,
    queue: str | None = None,
    unique_for: float | None = None,
    result_ttl: float | None = None,
) -> Declared:
    """Checked where the decorator runs, so a bad default stops the import with the argument named."""
    try:
        return Declared(
            name,
            tries=None if tries is None else check_tries(tries),
            timeout=None if timeout is None else check_timeout(timeout),
            backoff=None if backoff is None else _backoff(backoff),
            queue=None if queue is None else _queue(queue),
            unique_for=None if unique_for is None else check_unique_for(unique_for),
            result_ttl=None if result_ttl is None else check_result_ttl(result_ttl),
        )
    except JobError as exc:
        raise ValueError(f"@fairway.job for {name!r}: {exc}") from None


def _backoff(backoff: Sequence[int]) -> tuple[int, ...]:
    steps = tuple(backoff) if isinstance(backoff, list | tuple) else None
    if (
        steps is None
        or len(steps) > MAX_BACKOFF_STEPS
        or not all(type(s) is int and 0 <= s <= MAX_BACKOFF_S for s in steps)
    ):
        raise JobError(
            f"backoff {backoff!r} must be a list of at most {MAX_BACKOFF_STEPS} whole seconds from 0 to "
            f"{MAX_BACKOFF_S}, e.g. backoff=[1, 5, 30] (the last repeats)",
            code="BAD_VALUE",
        )
    return steps


def _queue(queue: str) -> str:
    if not isinstance(queue, str) or not QUEUE_NAME.fullmatch(queue):
        raise JobError(f"queue {queue!r} is invalid: {QUEUE_NAME_RULE}", code="BAD_QUEUE")
    return queue


def declared_by(func: Any) -> Declared | None:
    """The declaration of a function `@fairway.job` registered, else None."""
    found = getattr(func, DECLARATION_ATTRIBUTE, None)
    return found if isinstance(found, Declared) else None


@dataclass(frozen=True)
class Limits:
    """One job's tries, timeout and retry waits, after the rule above."""

    tries: int
    timeout_s: float
    backoff_s: tuple[int, ...]
    result_ttl_s: float | None = None  # keep the result this long; None: keep none

    def backoff_for(self, attempt: int) -> float:
        """Seconds before retrying after failed attempt number `attempt` (1-based; the last repeats)."""
        if not self.backoff_s:
            return 0.0
        return float(self.backoff_s[min(attempt, len(self.backoff_s)) - 1])


def limits(
    job_tries: int | None,
    job_timeout: float | None,
    declared: Declared | None,
    tries: int,
    timeout_s: float,
    backoff_s: Sequence[int],
    job_result_ttl: float | None = None,
) -> Limits:
    """The job's own option, else the handler's declaration, else the worker's setting (results: the
    job's, else the handler's, else none kept)."""
    d = declared or Declared("")
    return Limits(
        tries=job_tries or d.tries or tries,
        timeout_s=job_timeout or d.timeout or timeout_s,
        backoff_s=d.backoff if d.backoff is not None else tuple(backoff_s),
        result_ttl_s=job_result_ttl or d.result_ttl,
    )

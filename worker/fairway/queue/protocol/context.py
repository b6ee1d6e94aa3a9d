"""What a running handler can know about its job: `fairway.current_job()` (pure: no Redis here).

The worker sets the context around each handler call in the thread or asyncio task that runs it (a
`ContextVar`), so every job sees its own at any concurrency, threads and coroutines alike. Progress
goes through the callable the worker supplies (fairway.queue.access.progress writes it to Redis).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from datetime import UTC, datetime

MAX_PROGRESS_MESSAGE = 1000  # characters kept of a progress message


@dataclass(frozen=True)
class Progress:
    fraction: float  # 0.0 to 1.0
    message: str | None
    at_ms: int  # when it was reported, ms since the epoch (worker's clock)
    attempt: int

    def to_json(self) -> dict[str, object]:
        return {"fraction": self.fraction, "message": self.message, "at": self.at_ms, "attempt": self.attempt}


Reporter = Callable[[str, str, Progress], None]  # (served name, job id, report): one per worker, not per job


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 1.8 us a job, this 0.4 us
class JobContext:
    id: str
    queue: str  # the queue it was enqueued to (a tenant's queue, e.g. tenant-42, for tenant jobs)
    handler: str
    tenant: str | None
    attempt: int  # this attempt, from 1
    max_tries: int
    enqueued_at_ms: int  # ms since the epoch, producer's clock; 0 when the document did not say
    served_name: str = field(repr=False)  # the queue, or the tenant group '@<queuePrefix>', it was served from
    _report: Reporter = field(repr=False, compare=False)
    _cancelled: bool = field(default=False, repr=False, compare=False)
    _on_cancel: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    @property
    def cancelled(self) -> bool:
        """True once someone cancelled this job (`client.cancel`, `fairway cancel`; docs/cancel.md). A
        `def` handler checks it between steps and stops (return, or raise `fairway.JobCancelled`); an
        `async def` handler's task is cancelled for it. Either way the job ends as cancelled, not
        failed, and is not retried."""
        return self._cancelled

    def request_cancel(self) -> None:
        """Called by the worker when its lease renewal learns the job was cancelled (any thread)."""
        self._cancelled = True
        if self._on_cancel is not None:
            self._on_cancel()

    @property
    def enqueued_at(self) -> datetime | None:
        """When it was enqueued (UTC, producer's clock); None when the document did not say."""
        return datetime.fromtimestamp(self.enqueued_at_ms / 1000, UTC) if self.enqueued_at_ms > 0 else None

    def progress(self, fraction: float, message: str | None = None) -> None:
        """Report how far the job is (0.0 to 1.0), with an optional message; readable with
        `Client.progress(job_id, ...)` for a day. One Redis write per call: report per chunk of work,
        not per row. Best effort: a failed write is logged, never raised into the handler."""
        if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not math.isfinite(fraction):
            raise ValueError(f"progress fraction must be a number from 0.0 to 1.0, not {fraction!r}")
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"progress fraction {fraction!r} is outside 0.0 to 1.0")
        if message is not None and not isinstance(message, str):
            raise ValueError(f"progress message must be a string, not {type(message).__name__}")
        at_ms = int(datetime.now(UTC).timestamp() * 1000)
        kept = message[:MAX_PROGRESS_MESSAGE] if message else message
        self._report(self.served_name, self.id, Progress(float(fraction), kept, at_ms, self.attempt))


_current: ContextVar[JobContext] = ContextVar("fairway_current_job")


def current_job() -> JobContext:
    """The job this handler is running: id, queue, handler, tenant, attempt, max_tries, enqueued_at,
    and `progress(fraction, message)`. Only inside a handler a Fairway worker runs."""
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError(
            "fairway.current_job() is only available inside a handler run by a Fairway worker; in a unit test, "
            "run the handler inside `with fairway.testing.running_job(...) as job:` (README, 'Producing and working')"
        ) from None


def job_running_here() -> JobContext | None:
    """The job this thread or task runs, or None (for log records: no exception outside a job)."""
    return _current.get(None)


@contextmanager
def running(context: JobContext) -> Iterator[None]:
    """Make `context` the current job for the code inside (a thread's or a task's own copy)."""
    token = enter(context)
    try:
        yield
    finally:
        leave(token)


def enter(context: JobContext) -> Token[JobContext]:
    """`running` without a context manager's cost (about 1 us a job): the worker's hot path pairs it
    with `leave` in a try/finally."""
    return _current.set(context)


def leave(token: Token[JobContext]) -> None:
    _current.reset(token)


class JobCancelled(Exception):
    """Raised by a handler that stops because its job was cancelled, and by `result()` of a cancelled
    job: the job ends as cancelled, not failed, and is not retried."""

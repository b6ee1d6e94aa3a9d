"""Running one job's handler under its timeout, and what came of it (an `Attempt`)."""

from __future__ import annotations

import asyncio
import inspect
import signal
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fairway.queue.context import JobContext, enter, leave
from fairway.queue.job import Job
from fairway.queue.lifecycle import JobTimeout, Watchdog


class Outcome(StrEnum):
    OK = "ok"  # acknowledged
    RETRY = "retry"  # the attempt failed and the job has tries left: released, after its backoff
    FAILED = "failed"  # moved to the failed store for good


@dataclass(frozen=True)
class Attempt:
    outcome: Outcome
    error: str | None = None  # "<Exception>: <message>", for the job log and the failure record
    detail: dict[str, Any] | None = None  # exception, message, traceback

    @classmethod
    def failed(cls, exc: BaseException) -> Attempt:
        """The handler raised: retried or failed by tries, with the traceback for the failure record.
        Call it inside the `except` block, where the traceback is the one being handled."""
        return cls(
            Outcome.RETRY,
            f"{type(exc).__name__}: {exc}",
            {"exception": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()},
        )

    @classmethod
    def timed_out(cls, timeout_s: float) -> Attempt:
        return cls(Outcome.RETRY, f"JobTimeout: ran past its {timeout_s:g} s timeout")


def run_handler(
    func: Callable[..., Any], job: Job, context: JobContext, timeout_s: float, watchdog: Watchdog, kill_grace_s: float
) -> Attempt:
    """Call the handler (awaiting it when it is a coroutine); SIGALRM stops it at `timeout_s`, and the
    watchdog exits the process if it ignores that for `kill_grace_s` more."""
    watchdog.deadline = watchdog.clock() + timeout_s + kill_grace_s
    alarm = threading.current_thread() is threading.main_thread()
    try:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
        token = enter(context)
        try:
            result = func(*job.args, **job.kwargs)
            if inspect.iscoroutine(result):
                asyncio.run(result)
        finally:
            leave(token)
        return Attempt(Outcome.OK)
    except JobTimeout:
        return Attempt.timed_out(timeout_s)
    except Exception as exc:
        return Attempt.failed(exc)
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
        watchdog.deadline = None

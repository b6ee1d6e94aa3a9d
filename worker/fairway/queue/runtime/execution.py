"""Running one job's handler under its timeout, and what came of it (an `Attempt`)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import JobContext, enter, leave
from fairway.queue.protocol.job import Job
from fairway.queue.runtime.lifecycle import JobTimeout, Watchdog


class Outcome(StrEnum):
    OK = "ok"  # acknowledged
    RETRY = "retry"  # the attempt failed and the job has tries left: released, after its backoff
    FAILED = "failed"  # moved to the failed store for good
    HANDED_BACK = "handed_back"  # this worker does not know its handler: back for another, no try spent
    CANCELLED = "cancelled"  # someone cancelled it while it ran: acknowledged, not retried


@dataclass(frozen=True)
class Attempt:
    outcome: Outcome
    error: str | None = None  # "<Exception>: <message>", for the job log and the failure record
    detail: dict[str, Any] | None = None  # exception, message, traceback
    value: Any = None  # what the handler returned (kept when the job keeps its result)

    @classmethod
    def failed(cls, exc: BaseException) -> Attempt:
        """The handler raised: retried or failed by tries, with the traceback for the failure record.
        Total: whatever `exc` is (an exception whose str() raises, a recursion error, SystemExit),
        this returns an Attempt with a safe description and never raises."""
        name, message, trace = describe(exc)
        return cls(Outcome.RETRY, f"{name}: {message}", {"exception": name, "message": message, "traceback": trace})

    @classmethod
    def timed_out(cls, timeout_s: float) -> Attempt:
        return cls(Outcome.RETRY, f"JobTimeout: ran past its {timeout_s:g} s timeout")


MAX_MESSAGE_CHARS = 2_000  # of an exception's text kept in the failure record (tracebacks: 20,000)
MAX_TRACEBACK_CHARS = 20_000


def describe(exc: BaseException) -> tuple[str, str, str | None]:
    """(type name, message, traceback) of any exception, each computed so that nothing it calls (a
    __str__ that raises, a traceback too deep to format) can escape."""
    try:
        name = type(exc).__name__
    except BaseException:
        name = "BaseException"
    try:
        message = str(exc)[:MAX_MESSAGE_CHARS]
    except BaseException:
        try:
            message = f"<{name} whose str() raised; repr: {object.__repr__(exc)}>"
        except BaseException:
            message = f"<{name} whose str() raised>"
    return name, message, _traceback(exc, name, message)


def _traceback(exc: BaseException, name: str, message: str) -> str | None:
    """Python's traceback text, with the message computed once above (str() is never called again:
    it may be slow, or raise), and the exception it was raised from, as Python prints it."""
    try:
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_tb(exc.__traceback__))
        text += f"{name}: {message}\n"
        chained = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if chained is not None:
            with contextlib.suppress(BaseException):
                link = (
                    "The above exception was the direct cause of the following exception:"
                    if exc.__cause__ is not None
                    else "During handling of the above exception, another exception occurred:"
                )
                text = "".join(traceback.format_exception(chained)) + f"\n{link}\n\n" + text
        return text[-MAX_TRACEBACK_CHARS:]
    except BaseException:
        return None


def outcome_of(exc: BaseException, elapsed_s: float, timeout_s: float) -> Attempt:
    """What a handler's exception means, for the single-slot path and the pool alike: the timeout
    (SIGALRM's JobTimeout, or asyncio's cancellation at the deadline) is a timed-out attempt; a
    TimeoutError of the job's own (a socket's, say) raised before its time was up, and every other
    exception or BaseException (SystemExit, KeyboardInterrupt in a thread), is a failed attempt."""
    if isinstance(exc, JobTimeout):
        return Attempt.timed_out(timeout_s)
    if isinstance(exc, TimeoutError) and elapsed_s >= timeout_s * 0.99:
        return Attempt.timed_out(timeout_s)
    return Attempt.failed(exc)


def run_handler(
    func: Callable[..., Any], job: Job, context: JobContext, timeout_s: float, watchdog: Watchdog, kill_grace_s: float
) -> Attempt:
    """Call the handler (awaiting it when it is a coroutine); SIGALRM stops it at `timeout_s`, and the
    watchdog exits the process if it ignores that for `kill_grace_s` more. The alarm is disarmed
    before anything describes the outcome, so it cannot go off while a failure is being recorded."""
    watchdog.deadline = watchdog.clock() + timeout_s + kill_grace_s
    alarm = threading.current_thread() is threading.main_thread()
    started = time.perf_counter()
    try:
        try:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, timeout_s)
            token = enter(context)
            try:
                result = func(*job.args, **job.kwargs)
                if inspect.iscoroutine(result):
                    result = asyncio.run(cancellable(result, context))
            finally:
                leave(token)
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
            watchdog.deadline = None
    except BaseException as exc:  # a handler never ends the worker: SystemExit included
        if context.cancelled:
            return CANCELLED
        return outcome_of(exc, time.perf_counter() - started, timeout_s)
    return CANCELLED if context.cancelled else Attempt(Outcome.OK, value=result)


CANCELLED = Attempt(Outcome.CANCELLED, "JobCancelled: cancelled while it ran")


def cancel_from_any_thread(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any]) -> Callable[[], None]:
    """What cancelling a running async job does: its task is cancelled on its own loop."""

    def cancel() -> None:
        loop.call_soon_threadsafe(task.cancel)

    return cancel


async def cancellable(coroutine: Any, context: JobContext) -> Any:
    """Await a handler's coroutine as a task that `context.request_cancel()` cancels (from any thread)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(coroutine)
    context._on_cancel = cancel_from_any_thread(loop, task)
    if context.cancelled:  # cancelled before it could be told
        task.cancel()
    return await task


def failure_record(reservation: Reservation, job_id: str, attempt: Attempt) -> dict[str, Any]:
    """The failed store's record of an attempt: the one way any path turns an outcome into one."""
    detail = attempt.detail or {}
    name, _, message = (attempt.error or "").partition(": ")  # "<Exception>: <message>"
    return {
        "id": job_id,
        "queue": reservation.queue,
        "tenant": reservation.tenant,
        "payload": reservation.payload.decode("utf-8", "replace"),
        "attempts": reservation.attempts,
        "exception": detail.get("exception") or name,
        "message": detail.get("message") or message,
        "traceback": detail.get("traceback"),
        "failed_at": int(time.time() * 1000),
    }


def refusal_of(reservation: Reservation, max_tries: int, lost_limit: int) -> str | None:
    """Why a reserved job must not run (it is failed for good instead), or None."""
    if reservation.lost >= lost_limit:
        return (
            f"WorkerLost: the job was running when its worker vanished {reservation.lost} times (killed, "
            "OOM-killed, its node lost, or Redis unreachable past the reservation); it is not run again, "
            "since it may be what kills its workers. Fix the cause, then `fairway failed retry` it."
        )
    if reservation.attempts > max_tries:
        return f"MaxAttemptsExceeded: attempt {reservation.attempts} of {max_tries}"
    return None

"""Running up to N jobs at once in one process: plain `def` handlers on a pool of N threads, `async def`
handlers on one asyncio event loop (in its own thread), N at a time between them.

The worker's main thread keeps everything that talks to Redis; jobs only report back through a
queue of completions, so a job is settled (acknowledged, released or failed) exactly once, by one
thread; each completion also writes a byte to a pipe (`wake_fd`), so the main thread can wait on
completions and on Redis replies in one `select`. An async job past its timeout is cancelled; a
thread cannot be killed, so the worker settles an overdue sync job as timed out itself and writes its
slot off (see fairway.queue.runtime.worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fairway.queue.protocol.calls import Reservation
from fairway.queue.protocol.context import JobContext, enter, leave
from fairway.queue.protocol.job import Job
from fairway.queue.runtime.execution import CANCELLED, Attempt, Outcome, cancel_from_any_thread, cancellable, outcome_of


@dataclass
class Running:
    """A job handed to the pool; `deadline` is on the worker's monotonic clock."""

    seq: int  # the order it was reserved in, in this process
    reservation: Reservation
    job: Job
    timeout_s: float
    started_ms: int
    started: float  # perf_counter when the worker handed it over: its timeout runs from here
    deadline: float
    is_async: bool
    context: JobContext


@dataclass(frozen=True)
class Completion:
    seq: int
    attempt: Attempt
    finished_ms: int
    run_ms: float


class JobPool:
    """N threads taking jobs from one inbox (lighter than a ThreadPoolExecutor: no future per job),
    and the event loop for `async def` jobs."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._inbox: queue.SimpleQueue[tuple[Running, Callable[..., Any]] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._done: queue.SimpleQueue[Completion] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.wake_fd, self._wake_w = os.pipe()
        for fd in (self.wake_fd, self._wake_w):
            os.set_blocking(fd, False)
        self.waiting = False  # the main thread is (about to be) asleep in a select on wake_fd
        self._woken = False  # a byte may be in the pipe

    def submit(self, running: Running, func: Callable[..., Any]) -> None:
        if running.is_async:
            asyncio.run_coroutine_threadsafe(self._run_async(running, func), self._event_loop())
            return
        if not self._threads:
            for n in range(self.size):
                thread = threading.Thread(target=self._serve, name=f"fairway-job-{n}", daemon=True)
                thread.start()
                self._threads.append(thread)
        self._inbox.put((running, func))

    def _serve(self) -> None:
        while (item := self._inbox.get()) is not None:
            self._run_sync(*item)

    @staticmethod
    def is_async(func: Callable[..., Any]) -> bool:
        return inspect.iscoroutinefunction(func)

    def _report(self, running: Running, attempt: Attempt, began: float) -> None:
        """`began`: when this thread or task took the job up, so its run time is the handler's alone,
        without the hand-over (a thread's wake-up, the event loop's turn)."""
        run_ms = (time.perf_counter() - began) * 1000
        self._done.put(Completion(running.seq, attempt, int(time.time() * 1000), run_ms))
        if self.waiting:  # (a main thread that is not waiting finds it on its next look: no syscall)
            self._woken = True
            with contextlib.suppress(OSError):  # full (a wake-up is pending anyway) or closed (shutting down)
                os.write(self._wake_w, b"\0")

    def has_completions(self) -> bool:
        return not self._done.empty()

    def clear_wake(self) -> None:
        """Empty the wake pipe (before taking the completions it announced)."""
        if not self._woken:
            return
        self._woken = False
        with contextlib.suppress(OSError):  # empty (non-blocking) or closed
            while os.read(self.wake_fd, 4096):
                pass

    def _run_sync(self, running: Running, func: Callable[..., Any]) -> None:
        job = running.job
        began = time.perf_counter()
        try:
            token = enter(running.context)
            try:
                result = func(*job.args, **job.kwargs)
                if inspect.iscoroutine(result):  # a plain def that returned a coroutine: run it here
                    result = asyncio.run(asyncio.wait_for(cancellable(result, running.context), running.timeout_s))
            finally:
                leave(token)
            attempt = CANCELLED if running.context.cancelled else Attempt(Outcome.OK, value=result)
        except BaseException as exc:  # a job's exception never escapes into the pool
            attempt = CANCELLED if running.context.cancelled else self._outcome_of(running, exc)
        self._report(running, attempt, began)  # (describing it is total: the report always happens)

    async def _run_async(self, running: Running, func: Callable[..., Any]) -> None:
        job = running.job
        began = time.perf_counter()
        try:
            token = enter(running.context)  # this task's own context: wait_for's task copies it
            try:
                task, loop = asyncio.current_task(), asyncio.get_running_loop()
                if task is not None:  # cancelling the job cancels this task, from the lease thread
                    running.context._on_cancel = cancel_from_any_thread(loop, task)
                result = await asyncio.wait_for(func(*job.args, **job.kwargs), running.timeout_s)
            finally:
                leave(token)
            attempt = CANCELLED if running.context.cancelled else Attempt(Outcome.OK, value=result)
        except BaseException as exc:
            attempt = CANCELLED if running.context.cancelled else self._outcome_of(running, exc)
        self._report(running, attempt, began)

    @staticmethod
    def _outcome_of(running: Running, exc: BaseException) -> Attempt:
        return outcome_of(exc, time.perf_counter() - running.started, running.timeout_s)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="fairway-async", daemon=True).start()
            self._loop = loop
        return self._loop

    def completions(self, timeout_s: float) -> list[Completion]:
        """Every completion waiting, after waiting up to `timeout_s` for the first."""
        out: list[Completion] = []
        try:
            out.append(self._done.get(timeout=max(0.0, timeout_s)) if timeout_s > 0 else self._done.get_nowait())
        except queue.Empty:
            return out
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def close(self) -> None:
        """Leave without joining: a stuck thread must not keep the process alive."""
        for _ in self._threads:
            self._inbox.put(None)
        for fd in (self.wake_fd, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

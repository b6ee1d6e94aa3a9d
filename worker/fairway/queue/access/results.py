"""Reading a job's status and result (docs/results.md): the handle `Client.enqueue` returns.

`status()` is one read-only script call. `result(timeout=)` waits with a blocking `BLMOVE key key` on
the job's result list (it leaves the entry there, so any number of readers may wait), never polling:
one command per `WAIT_CHUNK_S` of waiting, below the connection's socket timeout. A job that failed
for good raises `JobFailedError` with its exception's type and message; a result that expired, was
never kept or could not be kept raises `ResultUnavailable` saying which.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from fairway.queue.connection import RedisClient
from fairway.queue.protocol import calls
from fairway.queue.protocol.context import JobCancelled
from fairway.queue.protocol.keys import QueueKeys, TenantGroupKeys
from fairway.queue.protocol.results import Entry, JobStatus, read_entry
from fairway.queue.protocol.scripts import Scripts

# What each answer of cancel() means, in the words the CLI and the dashboard print ({where}: the queue or tenant).
CANCEL_SAYS = {
    "cancelled": "cancelled (it was waiting or delayed: it will not run)",
    "running": "running: its worker tells it to stop within seconds; it ends as cancelled",
    "finished": "already finished: nothing to cancel",
    "unknown": "no such job waiting, running or finished in {where}",
}
WAIT_CHUNK_S = 5.0  # one blocking read's longest wait: under the client's socket timeout (10 s)


class JobFailedError(Exception):
    """The job failed for good: `exception` is its exception's type name, `message` its text."""

    def __init__(self, job_id: str, exception: str, message: str, attempts: int | None) -> None:
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
        super().__init__(f"job {job_id} failed{tries}: {exception}: {message}")
        self.job_id, self.exception, self.message, self.attempts = job_id, exception, message, attempts


class ResultUnavailable(LookupError):
    """The job finished but its result cannot be read: `reason` is `never_kept`, `expired`,
    `RESULT_TOO_LARGE` or `RESULT_NOT_JSON`."""

    def __init__(self, job_id: str, reason: str, message: str) -> None:
        super().__init__(f"job {job_id}: {message}")
        self.job_id, self.reason = job_id, reason


@dataclass(frozen=True)
class Where:
    """Where a job lives, and what its producer knows of it."""

    keys: QueueKeys | TenantGroupKeys
    tenant: str | None = None
    document: bytes | None = None  # its exact bytes, when this producer wrote them: waiting can be told
    result_ttl_s: float | None = None  # what the producer knows; None with a document: kept by no one
    keeps_known: bool = False  # True when the producer built the job (its option and declaration known)


class Handle:
    """A job's status and result, read from Redis."""

    def __init__(self, redis: RedisClient, job_id: str, where: Where) -> None:
        self.redis, self.job_id, self.where = redis, job_id, where

    def _read(self) -> tuple[JobStatus, Entry | None, dict[str, Any] | None]:
        w = self.where
        reply = Scripts(self.redis).run(calls.job_status(w.keys, self.job_id, w.tenant, w.document))
        kind = reply[0].decode() if isinstance(reply[0], bytes) else reply[0]
        if kind == "result":
            entry = read_entry(reply[1])
            return entry.status, entry, None
        if kind == "failed":
            return JobStatus.FAILED, None, json.loads(reply[1])
        if kind == "running":
            return JobStatus.RUNNING, None, None
        return (JobStatus.WAITING if kind == "waiting" else JobStatus.UNKNOWN), None, None

    def cancel(self) -> str:
        """Cancel the job (docs/cancel.md): `cancelled` (it was waiting or delayed: it never starts),
        `running` (its worker tells it within seconds; it ends as cancelled), `finished` (nothing to
        cancel) or `unknown` (no such job in its queue or tenant)."""
        reply = Scripts(self.redis).run(calls.cancel(self.where.keys, self.job_id, self.where.tenant))
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def status(self) -> str:
        """`waiting`, `running`, `done`, `failed`, `cancelled` or `unknown` (finished with no kept result, its result
        expired, or never enqueued here; a handle made from an id alone says `unknown` for waiting too)."""
        return self._read()[0].value

    def result(self, timeout: float | None = None) -> Any:
        """The handler's return value, waiting up to `timeout` seconds (None: as long as it takes).
        Raises JobFailedError (it failed for good), ResultUnavailable (expired, never kept, or too
        large to keep), TimeoutError (not finished in time; the message says where it is)."""
        return self._wait(timeout, threading.Event())

    async def result_async(self, timeout: float | None = None) -> Any:
        """`result()` for async code: the wait runs in a thread, and a cancelled task stops it within
        one blocking read (WAIT_CHUNK_S)."""
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._wait, timeout, stop)
        except asyncio.CancelledError:
            stop.set()
            raise

    def _wait(self, timeout: float | None, stop: threading.Event) -> Any:
        status, entry, record = self._read()
        if self._ended(status, entry, record):
            return self._answer(status, entry, record)
        if self.where.keeps_known and self.where.result_ttl_s is None:
            raise ResultUnavailable(
                self.job_id,
                "never_kept",
                "its result is not kept: enqueue it with result_ttl=<seconds>, or declare "
                "@fairway.job(result_ttl=...) and pass the function to enqueue()",
            )
        deadline = None if timeout is None else time.monotonic() + timeout
        key = self.where.keys.result(self.job_id)
        while not stop.is_set():
            left = WAIT_CHUNK_S if deadline is None else min(WAIT_CHUNK_S, deadline - time.monotonic())
            if left <= 0:
                break
            raw = self.redis.blmove(key, key, max(left, 0.01), "LEFT", "LEFT")  # type: ignore[arg-type]  # (a float: Redis takes one)
            if raw is not None:
                entry = read_entry(raw)
                return self._answer(entry.status, entry, None)
            status, entry, record = self._read()  # between reads: it may have ended without a result
            if self._ended(status, entry, record):
                return self._answer(status, entry, record)
        if stop.is_set():
            raise asyncio.CancelledError
        where = (
            "it is not running and no result is kept: waiting, finished without a kept result, or expired"
            if status is JobStatus.UNKNOWN
            else f"it is {status.value}"
        )
        raise TimeoutError(f"job {self.job_id}: no result within {timeout:g} s ({where})")

    def _ended(self, status: JobStatus, entry: Entry | None, record: dict[str, Any] | None) -> bool:
        """Nothing more will come: a result or failure record is there, or (its document known) the job
        is neither waiting nor running."""
        return entry is not None or record is not None or (status is JobStatus.UNKNOWN and bool(self.where.document))

    def _answer(self, status: JobStatus, entry: Entry | None, record: dict[str, Any] | None) -> Any:
        if record is not None:
            raise JobFailedError(
                self.job_id, str(record.get("exception")), str(record.get("message")), record.get("attempts")
            )
        if entry is None:  # finished, nothing kept: expired, or never kept
            if self.where.result_ttl_s is not None:
                raise ResultUnavailable(
                    self.job_id, "expired", f"its result expired (kept {self.where.result_ttl_s:g} s after it settled)"
                )
            raise ResultUnavailable(
                self.job_id,
                "never_kept",
                "it finished and no result was kept (or it expired): enqueue it with result_ttl=<seconds>",
            )
        if entry.status is JobStatus.CANCELLED:
            raise JobCancelled(f"job {self.job_id} was cancelled")
        if entry.status is JobStatus.FAILED:
            raise JobFailedError(self.job_id, entry.exception or "Exception", entry.message or "", entry.attempts)
        if entry.code is not None:
            raise ResultUnavailable(self.job_id, entry.code, f"{entry.code}: {entry.message}")
        if entry.status is JobStatus.UNKNOWN:
            raise ResultUnavailable(self.job_id, "unreadable", entry.message or "the kept result is unreadable")
        return entry.value

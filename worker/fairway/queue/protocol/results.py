"""A job's result as Redis keeps it (pure; docs/results.md).

A job that keeps its result (`result_ttl`, the job's or its handler's) leaves one JSON entry in the
list `<family base>result:<job id>` when it settles for good, written by the same script that
acknowledges it (or stores its failure), and expiring `result_ttl` later. A list, so a reader waits
for it with one blocking `BLMOVE key key` (which leaves the entry where it is) instead of polling.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

MAX_RESULT_BYTES = 512 * 1024  # one kept result's JSON; a bigger return value is kept as an error entry

# What a result entry may say instead of the value (docs/protocol.md, "Results"); code -> meaning.
RESULT_CODES: dict[str, str] = {
    "RESULT_TOO_LARGE": f"the handler returned a value whose JSON is over {MAX_RESULT_BYTES:,} bytes",
    "RESULT_NOT_JSON": "the handler returned a value JSON cannot hold (an object, NaN, Infinity, a set)",
}


class JobStatus(StrEnum):
    """Where a job is, as `status()` tells it."""

    WAITING = "waiting"  # ready, delayed, or waiting for a retry
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"  # failed for good (its result, or its failure record)
    CANCELLED = "cancelled"  # cancelled: removed while it waited, or stopped while it ran
    UNKNOWN = "unknown"  # finished without a kept result, its result expired, or never enqueued here


@dataclass(frozen=True)
class Entry:
    """A result entry read back."""

    status: JobStatus
    value: Any = None
    exception: str | None = None  # failed: the exception's type name
    message: str | None = None  # failed: its message; an error code's explanation
    code: str | None = None  # a value that could not be kept: RESULT_TOO_LARGE or RESULT_NOT_JSON
    attempts: int | None = None
    at_ms: int | None = None


def done_entry(value: Any, now_ms: int) -> str:
    """The entry of a job that succeeded: its return value, or the code that says why it is not kept."""
    try:
        text = json.dumps(
            {"status": "done", "value": value, "at": now_ms}, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError, RecursionError) as exc:
        return _error_entry("RESULT_NOT_JSON", f"{type(value).__name__} is not JSON: {exc}", now_ms)
    if len(text.encode()) > MAX_RESULT_BYTES:
        return _error_entry(
            "RESULT_TOO_LARGE",
            f"the result is {len(text.encode()):,} bytes, over the {MAX_RESULT_BYTES:,}-byte limit: keep large "
            "results elsewhere (object storage) and return where",
            now_ms,
        )
    return text


def _error_entry(code: str, message: str, now_ms: int) -> str:
    return json.dumps({"status": "done", "code": code, "message": message, "at": now_ms}, separators=(",", ":"))


def cancelled_entry(now_ms: int) -> str:
    """The entry of a cancelled job (cancel.lua writes the same for one cancelled while it waited)."""
    return json.dumps({"status": "cancelled", "at": now_ms}, separators=(",", ":"))


def failed_entry(record: dict[str, Any]) -> str:
    """The entry of a job failed for good, from its failure record (no traceback: that stays there)."""
    return json.dumps(
        {
            "status": "failed",
            "exception": record.get("exception"),
            "message": record.get("message"),
            "attempts": record.get("attempts"),
            "at": record.get("failed_at"),
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def read_entry(raw: bytes | str) -> Entry:
    """An entry as written above (or by any worker of this protocol); anything else is UNKNOWN."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return Entry(JobStatus.UNKNOWN, message="the kept result is not JSON")
    if not isinstance(doc, dict) or doc.get("status") not in ("done", "failed", "cancelled"):
        return Entry(JobStatus.UNKNOWN, message="the kept result is not a result entry")
    at = doc.get("at")
    at_ms = at if isinstance(at, int) else None
    if doc["status"] == "cancelled":
        return Entry(JobStatus.CANCELLED, at_ms=at_ms)
    if doc["status"] == "failed":
        attempts = doc.get("attempts")
        return Entry(
            JobStatus.FAILED,
            exception=str(doc.get("exception") or "Exception"),
            message=str(doc.get("message") or ""),
            attempts=attempts if isinstance(attempts, int) else None,
            at_ms=at_ms,
        )
    code = doc.get("code")
    if isinstance(code, str):
        return Entry(
            JobStatus.DONE, code=code, message=str(doc.get("message") or RESULT_CODES.get(code, "")), at_ms=at_ms
        )
    return Entry(JobStatus.DONE, value=doc.get("value"), at_ms=at_ms)


def ttl_ms(seconds: float) -> int:
    return max(1, math.floor(seconds * 1000))

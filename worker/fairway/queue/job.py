"""The job document: a language-neutral JSON object, immutable once enqueued.

The document travels as the exact bytes the producer wrote: the reserved set uses it as its member
and its SHA-1 keys the attempt counter, so nothing (worker, script) ever re-encodes it. Attempts are
counted in Redis, not in the document. See docs/protocol.md.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

MAX_PAYLOAD_BYTES = 512 * 1024
TENANT_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HANDLER_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:]{0,199}$")


class JobError(ValueError):
    """A job that cannot be enqueued or decoded; the message says which field and how to fix it."""


class PayloadTooLarge(JobError):
    pass


@dataclass(frozen=True)
class Job:
    id: str
    handler: str
    queue: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    tenant: str | None = None
    attempts: int = 0
    max_tries: int | None = None
    timeout: float | None = None
    enqueued_at: int = 0  # ms since the epoch, producer's clock
    available_at: int | None = None  # ms; set for delayed jobs, so their wait starts when they are due

    def encode(self, limit: int = MAX_PAYLOAD_BYTES) -> bytes:
        document: dict[str, Any] = {
            "id": self.id,
            "handler": self.handler,
            "queue": self.queue,
            "args": self.args,
            "kwargs": self.kwargs,
            "attempts": self.attempts,
            "enqueued_at": self.enqueued_at,
        }
        for name in ("tenant", "max_tries", "timeout", "available_at"):
            value = getattr(self, name)
            if value is not None:
                document[name] = value
        try:
            payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        except (TypeError, ValueError) as exc:
            raise JobError(f"args/kwargs must be JSON-serialisable: {exc}") from exc
        if len(payload) > limit:
            raise PayloadTooLarge(
                f"job payload is {len(payload)} bytes, over the {limit}-byte limit; split the work into "
                "smaller jobs with Client.enqueue_chunked(handler, rows, chunk_size=...)"
            )
        return payload

    @property
    def ready_since_ms(self) -> int:
        return self.available_at if self.available_at is not None else self.enqueued_at


def new_job(
    handler: str,
    queue: str,
    args: list[Any],
    kwargs: dict[str, Any],
    *,
    tenant: str | None = None,
    delay_s: float | None = None,
    max_tries: int | None = None,
    timeout: float | None = None,
    now_ms: int | None = None,
) -> Job:
    if not HANDLER_PATTERN.match(handler):
        raise JobError(f"handler {handler!r} is not a handler name (letters, digits, _ . :)")
    if tenant is not None:
        check_tenant_id(tenant)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return Job(
        id=uuid.uuid4().hex,
        handler=handler,
        queue=queue,
        args=list(args),
        kwargs=dict(kwargs),
        tenant=tenant,
        max_tries=max_tries,
        timeout=timeout,
        enqueued_at=now,
        available_at=now + int(delay_s * 1000) if delay_s else None,
    )


def check_tenant_id(tenant: str) -> str:
    if not isinstance(tenant, str) or not TENANT_ID_PATTERN.match(tenant):
        raise JobError(
            f"tenant id {tenant!r} is invalid: use 1-64 letters, digits, '_', '.' or '-', starting with a "
            "letter or digit (no braces, colons, spaces or wildcards)"
        )
    return tenant


def decode(payload: bytes) -> Job:
    """Parse a document taken from Redis; JobError (moved to the failed store) when it is malformed."""
    try:
        doc = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JobError(f"payload is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise JobError("payload is not a JSON object")
    missing = [name for name in ("id", "handler", "queue") if not isinstance(doc.get(name), str)]
    if missing:
        raise JobError(f"payload lacks string field(s): {', '.join(missing)}")
    args, kwargs = doc.get("args", []), doc.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise JobError("payload args must be a JSON array and kwargs a JSON object")
    try:
        return Job(
            id=doc["id"],
            handler=doc["handler"],
            queue=doc["queue"],
            args=args,
            kwargs=kwargs,
            tenant=doc.get("tenant"),
            attempts=int(doc.get("attempts", 0)),
            max_tries=int(doc["max_tries"]) if doc.get("max_tries") is not None else None,
            timeout=float(doc["timeout"]) if doc.get("timeout") is not None else None,
            enqueued_at=int(doc.get("enqueued_at", 0)),
            available_at=int(doc["available_at"]) if doc.get("available_at") is not None else None,
        )
    except (TypeError, ValueError) as exc:
        raise JobError(f"payload has a field of the wrong type: {exc}") from exc

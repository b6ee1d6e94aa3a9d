"""The job document: a language-neutral JSON object, immutable once enqueued.

The document travels as the exact bytes the producer wrote: nothing (worker, script) ever re-encodes
it. Reservations and attempt counters are keyed by its id (lib.lua's job key), and attempts are
counted in Redis, not in the document. See docs/protocol.md.

Any producer in any language can write any bytes, so `decode` is total: whatever it is given, it
returns a Job or raises JobError (the worker settles that job as `MalformedJob`, once, and moves on).
Size and nesting depth are bounded before anything else looks at the document; numbers must be
finite and in range, so no field of a document can crash the code that uses it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fairway.resource.names import TENANT_ID

# The protocol's limits (docs/protocol.md): producers, the producer scripts and workers apply the same.
MAX_DOCUMENT_BYTES = 512 * 1024  # one job document; bigger work is chunked at dispatch
MAX_DOCUMENTS_PER_CALL = 1000  # per script call or transaction: short script runs, bounded requests
MAX_DEPTH = 64  # nesting of arrays and objects in a document, args and kwargs included
MAX_TIMEOUT_S = 7 * 86_400  # a job's own timeout: positive, finite, at most a week
MAX_DELAY_S = 366 * 86_400  # how far ahead a job may be scheduled
MAX_TRIES = 1000
MAX_ID_LENGTH = 256
ID_PATTERN = re.compile(rf"[A-Za-z0-9_.:-]{{1,{MAX_ID_LENGTH}}}")  # what a producer may choose as a job id
PROTOCOL_VERSION = 1  # the document's `v`; absent means 1. Additive changes keep it (docs/protocol.md)
TENANT_ID_PATTERN = TENANT_ID  # resource/names.py: the spec's overrides name tenants with it too
MAX_HANDLER_LENGTH = 200
MAX_UNIQUE_KEY_BYTES = 200  # a unique job's key (UTF-8 bytes): it is part of a Redis key name
MAX_UNIQUE_FOR_S = MAX_DELAY_S  # how long a unique job's key may be held at most
MAX_RESULT_TTL_S = 30 * 86_400  # how long a job's result may be kept
HANDLER_PATTERN = re.compile(rf"[A-Za-z_][A-Za-z0-9_.:]{{0,{MAX_HANDLER_LENGTH - 1}}}")
MS_RANGE = (0, 2**53)  # timestamps in ms: non-negative and exact in any language's double

# The protocol's refusal codes (docs/protocol.md, "Refusals"): the first word of an enqueue script's
# error reply, and `JobError.code` when a producer refuses the same input before sending it.
# code -> (who refuses it, what it means). A test keeps docs/protocol.md's table equal to this one.
REFUSALS: dict[str, tuple[str, str]] = {
    "TOO_LARGE": ("producers, both scripts", f"a document is over {MAX_DOCUMENT_BYTES:,} bytes"),
    "TOO_MANY": ("producers split; enqueue_tenant", f"more than {MAX_DOCUMENTS_PER_CALL:,} documents in one call"),
    "NO_DOCUMENTS": ("enqueue_tenant", "a call with no documents"),
    "BAD_DOCUMENT": ("both scripts", "not a JSON object with string fields id, handler and queue"),
    "BAD_ID": ("producers, both scripts", f"the id is not 1-{MAX_ID_LENGTH} of A-Z a-z 0-9 _ . : -"),
    "BAD_HANDLER": (
        "producers, both scripts",
        f"the handler is not [A-Za-z_][A-Za-z0-9_.:]*, 1-{MAX_HANDLER_LENGTH}",
    ),
    "BAD_QUEUE": ("producers, enqueue", "the queue name breaks the queue-name rule"),
    "BAD_TENANT": ("producers, enqueue_tenant", "the tenant id breaks the tenant-id rule"),
    "MISMATCH": ("both scripts", "the document's queue (or tenant) field is not the queue (or tenant) of the call"),
    "BAD_DELAY": ("producers, both scripts", "the delay is not a whole number of ms (digits only) in range"),
    "BAD_KEYS": ("enqueue_tenant", "KEYS[1] is not ARGV[1] .. 'ring', or ARGV[4] is not '@' and the group's prefix"),
    "TOO_DEEP": ("producers", f"arrays/objects nested deeper than {MAX_DEPTH} levels, the document included"),
    "BAD_VALUE": ("producers", "args/kwargs hold something that is not JSON (NaN, Infinity, an object)"),
    "BAD_TRIES": ("producers", f"max_tries is not a whole number from 1 to {MAX_TRIES:,}"),
    "BAD_TIMEOUT": ("producers", f"timeout is not seconds above 0 and at most {MAX_TIMEOUT_S:,}"),
    "BAD_CHUNK_SIZE": ("producers", "chunk_size is not a whole number of at least 1"),
    "BAD_OPTION": ("producers", "a call names an option the producer does not have (handler kwargs go in kwargs)"),
    "BAD_RESULT_TTL": ("producers", f"result_ttl is not seconds from 1 to {MAX_RESULT_TTL_S:,}"),
    "BAD_UNIQUE": (
        "producers, both scripts",
        f"unique_key is not 1-{MAX_UNIQUE_KEY_BYTES} bytes without control characters, unique_for is not ms "
        f"to {MAX_UNIQUE_FOR_S:,} s, or unique_for comes without unique_key in a document",
    ),
    "BAD_TRACE": ("producers", "traceparent is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, ids not zero)"),
    "BAD_BATCH": (
        "producers, batch and chain scripts",
        "a batch or chain with no jobs, sealed or started twice, added to after sealing, a unique job in it, or over "
        "its size",
    ),
}


def now_ms() -> int:
    """Wall-clock ms since the epoch: the clock of a document's enqueued_at and of a worker's job times."""
    return int(time.time() * 1000)


class JobError(ValueError):
    """A job that cannot be enqueued or decoded; the message says which field and how to fix it, and
    `code` is the protocol's refusal code for it (REFUSALS)."""

    def __init__(self, message: str, job_id: str | None = None, code: str = "BAD_DOCUMENT") -> None:
        super().__init__(message)
        self.job_id = job_id  # the document's id, when it had a readable one
        self.code = code


class PayloadTooLarge(JobError):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="TOO_LARGE")


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
    unique_key: str | None = None  # while a job with this key waits or runs, an enqueue returns its id instead
    unique_for: float | None = None  # seconds the unique key is held at most (None: until the job settles)
    result_ttl: float | None = None  # seconds its result is kept after it settles (None: its handler's, else none)
    traceparent: str | None = None  # the producer's trace context (W3C), the parent of each attempt's span

    def encode(self, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
        document: dict[str, Any] = {
            "id": self.id,
            "v": PROTOCOL_VERSION,
            "handler": self.handler,
            "queue": self.queue,
            "args": self.args,
            "kwargs": self.kwargs,
            "attempts": self.attempts,
            "enqueued_at": self.enqueued_at,
        }
        for name in _OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                document[name] = value
        try:
            payload = json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            raise JobError(
                f"args/kwargs must be JSON-serialisable (no NaN or Infinity, no objects): {exc}", code="BAD_VALUE"
            ) from None
        if len(payload) > limit:
            raise PayloadTooLarge(
                f"job payload is {len(payload)} bytes, over the {limit}-byte limit; split the work into "
                "smaller jobs with Client.enqueue_chunked(handler, rows, chunk_size=...)"
            )
        if payload.count(b"[") + payload.count(b"{") > MAX_DEPTH and _depth(document) > MAX_DEPTH:
            raise JobError(f"args/kwargs are nested deeper than {MAX_DEPTH - 2} levels; flatten them", code="TOO_DEEP")
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
    now_ms: int | None = None,
    job_id: str | None = None,
    **options: Any,
) -> Job:
    """A new job, every option checked here, where the producer can still be told what to fix.
    `options`: the JOB_OPTIONS by name (None: not set)."""
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise JobError(f"no job option {unknown[0]!r}: the options are {', '.join(OPTION_NAMES)}", code="BAD_OPTION")
    if not isinstance(handler, str) or not HANDLER_PATTERN.fullmatch(handler):
        raise JobError(
            f"handler {handler!r} is not a handler name: start with a letter or _, then letters, digits, _ . : "
            f"(at most {MAX_HANDLER_LENGTH})",
            code="BAD_HANDLER",
        )
    if tenant is not None:
        check_tenant_id(tenant)
    delay_ms = check_delay_ms(delay_s)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if options.get("unique_for") is not None and options.get("unique_key") is None:
        options["unique_key"] = default_unique_key(handler, args, kwargs)
    return Job(
        id=uuid.uuid4().hex if job_id is None else check_job_id(job_id),
        handler=handler,
        queue=queue,
        args=list(args),
        kwargs=dict(kwargs),
        tenant=tenant,
        enqueued_at=now,
        available_at=now + delay_ms if delay_ms else None,
        **{o.name: o.check(options[o.name]) for o in JOB_OPTIONS if options.get(o.name) is not None},
    )


def check_job_id(job_id: str) -> str:
    """A producer-chosen id (to enqueue the same job again after a timeout, say): safe in keys and logs."""
    if not isinstance(job_id, str) or not ID_PATTERN.fullmatch(job_id):
        raise JobError(
            f"job id {job_id!r} is invalid: use 1-{MAX_ID_LENGTH} letters, digits, '_', '.', ':' or '-'", code="BAD_ID"
        )
    return job_id


def check_tenant_id(tenant: str) -> str:
    if not isinstance(tenant, str) or not TENANT_ID_PATTERN.fullmatch(tenant):
        raise JobError(
            f"tenant id {tenant!r} is invalid: use 1-64 letters, digits, '_', '.' or '-', starting with a "
            "letter or digit (no braces, colons, spaces or wildcards)",
            code="BAD_TENANT",
        )
    return tenant


def check_delay_ms(delay_s: float | None) -> int:
    """A delay in seconds as whole ms: finite, not negative, at most MAX_DELAY_S."""
    if delay_s is None:
        return 0
    if isinstance(delay_s, bool) or not isinstance(delay_s, int | float) or not math.isfinite(delay_s):
        raise JobError(f"delay {delay_s!r} is not a number of seconds; pass e.g. delay=30", code="BAD_DELAY")
    if not 0 <= delay_s <= MAX_DELAY_S:
        raise JobError(f"delay {delay_s!r} s is out of range: give 0 to {MAX_DELAY_S} seconds", code="BAD_DELAY")
    return delay_ms(delay_s)


def delay_ms(delay_s: float) -> int:
    """The protocol's rounding of a delay: seconds to whole ms, rounded down, of the decimal as written
    (0.0019 s is 1 ms; 1.001 s is 1001 ms, though 1.001 * 1000 is 1000.9999999999999 as a float)."""
    return math.floor(round(delay_s * 1000, 6))


def check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout):
        raise JobError(f"timeout {timeout!r} is not a number of seconds; pass e.g. timeout=120", code="BAD_TIMEOUT")
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise JobError(
            f"timeout {timeout!r} s is out of range: give more than 0 and at most {MAX_TIMEOUT_S}", code="BAD_TIMEOUT"
        )
    return float(timeout)


def check_tries(tries: int) -> int:
    if isinstance(tries, bool) or not isinstance(tries, int) or not 1 <= tries <= MAX_TRIES:
        raise JobError(
            f"max_tries {tries!r} is out of range: give a whole number from 1 to {MAX_TRIES}", code="BAD_TRIES"
        )
    return tries


def check_unique_key(key: str) -> str:
    """A unique job's key: any text of 1-MAX_UNIQUE_KEY_BYTES UTF-8 bytes without control characters."""
    if (
        not isinstance(key, str)
        or not 1 <= len(key.encode(errors="replace")) <= MAX_UNIQUE_KEY_BYTES
        or any(ord(c) < 32 or ord(c) == 127 for c in key)
    ):
        raise JobError(
            f"unique_key {key!r:.80} is invalid: give 1-{MAX_UNIQUE_KEY_BYTES} bytes of text without control "
            "characters (e.g. 'invoice:42')",
            code="BAD_UNIQUE",
        )
    return key


def check_unique_for(seconds: float) -> float:
    """How long a unique key is held at most: from 1 ms to MAX_UNIQUE_FOR_S seconds."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or not 0.001 <= seconds <= MAX_UNIQUE_FOR_S
    ):
        raise JobError(
            f"unique_for {seconds!r} is out of range: give seconds from 0.001 to {MAX_UNIQUE_FOR_S} "
            "(e.g. unique_for=60), or leave it out to hold the key until the job settles",
            code="BAD_UNIQUE",
        )
    return float(seconds)


# W3C Trace Context's header, and the document's field of the same name (docs/traces.md).
TRACE_HEADER = "traceparent"
# W3C Trace Context's traceparent, version 00, with a trace id and a span id that are not all zeros.
TRACEPARENT = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}")


def check_traceparent(value: str) -> str:
    """A producer's trace context (docs/traces.md): a W3C traceparent, or the enqueue is refused."""
    if not isinstance(value, str) or not TRACEPARENT.fullmatch(value):
        raise JobError(
            f"traceparent {value!r} is not a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, "
            "lowercase, ids not all zeros (what OpenTelemetry's propagator writes)",
            code="BAD_TRACE",
        )
    return value


def read_traceparent(value: Any) -> str | None:
    """A document's trace context: a malformed one is dropped (the job runs, untraced), never a failure."""
    return value if isinstance(value, str) and TRACEPARENT.fullmatch(value) else None


def check_result_ttl(seconds: float) -> float:
    """How long a job's result is kept: from 1 s to MAX_RESULT_TTL_S."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or not 1 <= seconds <= MAX_RESULT_TTL_S
    ):
        raise JobError(
            f"result_ttl {seconds!r} is out of range: give seconds from 1 to {MAX_RESULT_TTL_S} (e.g. result_ttl=3600)",
            code="BAD_RESULT_TTL",
        )
    return float(seconds)


def default_unique_key(handler: str, args: Any, kwargs: Any) -> str:
    """The key of a job that sets unique_for and no unique_key: its handler and arguments, so the same
    call is one job (docs/protocol.md gives the rule every producer follows)."""
    try:
        canonical = json.dumps(
            [handler, list(args), dict(kwargs)], sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise JobError(f"args/kwargs must be JSON-serialisable (no objects): {exc}", code="BAD_VALUE") from None
    return "sha1:" + hashlib.sha1(canonical.encode()).hexdigest()


def read_tries(value: Any) -> int:
    """A document's max_tries (any producer's: a whole float is accepted, some languages only have doubles)."""
    return int(_whole({"max_tries": value}, "max_tries", None, (1, MAX_TRIES)))


@dataclass(frozen=True)
class JobOption:
    """An option a producer sets on one job, kept as the document field of its name (docs/protocol.md).
    Its row is read by the producer's check (`new_job`), the encoding and decoding of the document and
    `fairway enqueue`'s flag; a test holds `Client.enqueue`, the Node client and the docs to the table."""

    name: str  # the keyword, the document's field; `--name-with-dashes` on the command line
    check: Callable[[Any], Any]  # a producer's value -> the document's; JobError (its refusal code) when wrong
    read: Callable[[Any], Any]  # a document's value, written by any producer -> the Job's; JobError when wrong
    flag_type: Callable[[str], Any]  # how `fairway enqueue` parses the flag
    help: str


JOB_OPTIONS: tuple[JobOption, ...] = (
    JobOption("max_tries", check_tries, read_tries, int, "this job's tries (default: the worker's tries)"),
    JobOption("timeout", check_timeout, check_timeout, float, "this job's timeout in seconds (default: the worker's)"),
    JobOption(
        "unique_key",
        check_unique_key,
        check_unique_key,
        str,
        "while a job with this key waits or runs here, return its id instead of enqueuing (docs/unique.md)",
    ),
    JobOption(
        "unique_for",
        check_unique_for,
        check_unique_for,
        float,
        "hold the unique key at most this many seconds (alone: the key is the handler and its arguments)",
    ),
    JobOption(
        "result_ttl",
        check_result_ttl,
        check_result_ttl,
        float,
        "keep the handler's return value this many seconds after the job settles (docs/results.md)",
    ),
    JobOption(
        TRACE_HEADER,
        check_traceparent,
        read_traceparent,
        str,
        "the W3C traceparent of the span that enqueued it (docs/traces.md; by default the current OpenTelemetry "
        "span's, when the otel extra is installed)",
    ),
)
OPTION_NAMES = tuple(o.name for o in JOB_OPTIONS)
_OPTIONAL_FIELDS = ("tenant", *OPTION_NAMES, "available_at")  # written only when set
_OPTIONAL_SET = frozenset(_OPTIONAL_FIELDS) - {"tenant"}  # absent from the common document


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion (so any depth is measured safely)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


# A too-large document is not parsed; its id is still read when it is the first field, as producers write it.
_decode_json = json.JSONDecoder().decode  # (json.loads without its per-call checks and encoding sniffing)
_LEADING_ID = re.compile(rb'\s*\{\s*"id"\s*:\s*"(%s)"' % ID_PATTERN.pattern.encode())


def decode(payload: bytes) -> Job:
    """Parse a document taken from Redis; JobError for anything that is not a well-formed job."""
    if len(payload) > MAX_DOCUMENT_BYTES:
        leading_id = _LEADING_ID.match(payload)
        raise JobError(
            f"payload is {len(payload)} bytes, over the protocol's {MAX_DOCUMENT_BYTES}-byte limit; the producer "
            "must split the work into smaller jobs",
            leading_id.group(1).decode() if leading_id else None,
        )
    constants: list[str] = []  # NaN, Infinity or -Infinity met while parsing (the id stays readable)
    # Python's json reads NaN and Infinity; only a document that spells one is parsed with a collector.
    collect = b"NaN" in payload or b"Infinity" in payload
    try:
        doc = json.loads(payload, parse_constant=constants.append) if collect else _decode_json(payload.decode())
    except RecursionError:
        raise JobError(f"payload is nested deeper than {MAX_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        raise JobError(f"payload is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise JobError("payload is not a JSON object")
    raw_id = doc.get("id")
    job_id = raw_id if isinstance(raw_id, str) and 0 < len(raw_id) <= MAX_ID_LENGTH else None
    try:
        if constants:
            raise JobError(f"payload is not JSON: {constants[0]} is not allowed (NaN and Infinity are not JSON)")
        # Deeper than MAX_DEPTH needs more brackets than that: most documents skip the walk.
        if payload.count(b"[") + payload.count(b"{") > MAX_DEPTH and _depth(doc) > MAX_DEPTH:
            raise JobError(f"payload is nested deeper than {MAX_DEPTH} levels")
        return _job(doc, job_id)
    except JobError as exc:
        exc.job_id = job_id
        raise


def check_placement(job: Job, served_name: str, tenant: str | None) -> Job:
    """The document's queue and tenant are where it was taken from (the enqueue scripts refuse others
    with MISMATCH; a document pushed with plain commands is checked here, so a handler's
    `current_job().queue` never names a queue the job did not come from)."""
    expected = served_name if tenant is None else f"{served_name.removeprefix('@')}{tenant}"
    if job.queue != expected or job.tenant != tenant:
        where = f"queue {expected!r}" + (f" (tenant {tenant!r})" if tenant else "")
        raise JobError(
            f"payload says queue {job.queue!r}"
            + (f" and tenant {job.tenant!r}" if job.tenant else "")
            + f" but was taken from {where}: the producer must set the fields to where it pushes the document",
            job.id,
            code="MISMATCH",
        )
    return job


def _job(doc: dict[str, Any], job_id: str | None) -> Job:
    missing = [name for name in ("id", "handler", "queue") if not isinstance(doc.get(name), str)]
    if missing:
        raise JobError(f"payload lacks string field(s): {', '.join(missing)}")
    if job_id is None:
        raise JobError(f"payload id must be a string of 1 to {MAX_ID_LENGTH} characters")
    version = doc.get("v", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION or isinstance(version, bool):
        raise JobError(
            f"payload v {version!r} is not a protocol version this worker reads (it reads {PROTOCOL_VERSION}): "
            "upgrade the workers, then retry it with `fairway failed retry`"
        )
    args, kwargs = doc.get("args", []), doc.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise JobError("payload args must be a JSON array and kwargs a JSON object")
    tenant = doc.get("tenant")
    if tenant is not None and not (isinstance(tenant, str) and TENANT_ID_PATTERN.fullmatch(tenant)):
        raise JobError("payload tenant must be a tenant id (1-64 letters, digits, _ . -)")
    if _OPTIONAL_SET.isdisjoint(doc):
        attempts, enqueued_at = doc.get("attempts", 0), doc.get("enqueued_at", 0)
        if type(attempts) is int and type(enqueued_at) is int and 0 <= attempts < 2**31 and 0 <= enqueued_at <= 2**53:
            # The common document: nothing optional to check (the full path below says the same).
            return Job(job_id, doc["handler"], doc["queue"], args, kwargs, tenant, attempts, enqueued_at=enqueued_at)
    try:
        return Job(
            id=job_id,
            handler=doc["handler"],
            queue=doc["queue"],
            args=args,
            kwargs=kwargs,
            tenant=tenant,
            attempts=_whole(doc, "attempts", 0, (0, 2**31)),
            enqueued_at=_whole(doc, "enqueued_at", 0, MS_RANGE),
            available_at=_whole(doc, "available_at", None, MS_RANGE),
            **{o.name: o.read(doc[o.name]) for o in JOB_OPTIONS if doc.get(o.name) is not None},
        )
    except JobError as exc:
        raise JobError(f"payload field {exc}") from None


def _whole(doc: dict[str, Any], name: str, default: Any, bounds: tuple[int, int]) -> Any:
    """A whole number field (a float that is whole is accepted: some languages only have doubles)."""
    value = doc.get(name, default)
    if value is None:
        return default
    if type(value) is int and bounds[0] <= value <= bounds[1]:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JobError(f"{name} must be a whole number, not {type(value).__name__}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise JobError(f"{name} must be a whole number, not {value!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise JobError(f"{name} {value!r} is out of range")
    return int(value)

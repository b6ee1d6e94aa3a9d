"""Job documents: round trip, size limit pointing to chunking, malformed payloads, tenant ids."""

from __future__ import annotations

import json
import re

import pytest

from fairway.queue.job import MAX_PAYLOAD_BYTES, JobError, PayloadTooLarge, check_tenant_id, decode, new_job


def test_round_trip_keeps_every_field() -> None:
    job = new_job(
        "emails.send", "high", [1, "x"], {"to": "a@b"}, tenant="42", delay_s=2, max_tries=3, timeout=9, now_ms=1_000
    )
    back = decode(job.encode())
    assert back == job
    assert back.available_at == 3_000
    assert back.ready_since_ms == 3_000


def test_document_is_plain_json_any_language_can_write() -> None:
    doc = json.loads(new_job("noop", "default", [], {}, now_ms=5).encode())
    assert doc == {
        "id": doc["id"],
        "handler": "noop",
        "queue": "default",
        "args": [],
        "kwargs": {},
        "attempts": 0,
        "enqueued_at": 5,
    }
    minimal = decode(b'{"id":"1","handler":"noop","queue":"q"}')
    assert (minimal.args, minimal.kwargs, minimal.attempts) == ([], {}, 0)


def test_oversized_payload_is_rejected_with_a_pointer_to_chunking() -> None:
    job = new_job("import", "default", ["x" * MAX_PAYLOAD_BYTES], {})
    with pytest.raises(PayloadTooLarge, match="enqueue_chunked"):
        job.encode()
    assert len(new_job("import", "default", ["x" * 1000], {}).encode(limit=2000)) < 2000


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"handler": "noop", "queue": "q"}', "lacks string field(s): id"),
        (b'{"id": "1", "handler": "noop", "queue": "q", "args": {}}', "args must be a JSON array"),
        (b'{"id": "1", "handler": "noop", "queue": "q", "max_tries": "many"}', "max_tries must be a whole number"),
    ],
)
def test_malformed_payloads_are_named(payload: bytes, reason: str) -> None:
    with pytest.raises(JobError, match=re.escape(reason)):
        decode(payload)


@pytest.mark.parametrize("tenant", ["", "a b", "{42}", "t:1", "*", "x" * 65, "-lead"])
def test_bad_tenant_ids_are_refused(tenant: str) -> None:
    with pytest.raises(JobError, match="tenant id"):
        check_tenant_id(tenant)


def test_good_tenant_ids_pass() -> None:
    for tenant in ("42", "acme-co", "a.b_c", "x" * 64):
        assert check_tenant_id(tenant) == tenant


def test_unserialisable_args_are_refused() -> None:
    with pytest.raises(JobError, match="JSON-serialisable"):
        new_job("noop", "q", [object()], {}).encode()

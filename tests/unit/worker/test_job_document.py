"""Job documents: round trip, size limit pointing to chunking, malformed payloads, tenant ids."""

from __future__ import annotations

import json
import re

import pytest

from fairway.queue.protocol.job import MAX_DOCUMENT_BYTES, JobError, PayloadTooLarge, check_tenant_id, decode, new_job


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
        "v": 1,
        "handler": "noop",
        "queue": "default",
        "args": [],
        "kwargs": {},
        "attempts": 0,
        "enqueued_at": 5,
    }
    assert next(iter(doc)) == "id", "id first: a document too large to parse is still filed under it"
    minimal = decode(b'{"id":"1","handler":"noop","queue":"q"}')
    assert (minimal.args, minimal.kwargs, minimal.attempts) == ([], {}, 0)


def test_a_document_of_a_protocol_version_this_worker_does_not_read_is_refused_by_name() -> None:
    assert decode(b'{"id":"1","v":1,"handler":"noop","queue":"q"}').id == "1"
    for version in (b"2", b"0", b'"1"', b"true"):
        with pytest.raises(JobError, match="upgrade the workers") as refused:
            decode(b'{"id":"7","v":%s,"handler":"noop","queue":"q"}' % version)
        assert refused.value.job_id == "7"


def test_a_too_large_document_is_filed_under_its_leading_id() -> None:
    with pytest.raises(JobError, match="split the work") as refused:
        decode(b'{"id":"big-1","handler":"noop","queue":"q","args":["' + b"x" * MAX_DOCUMENT_BYTES + b'"]}')
    assert refused.value.job_id == "big-1"
    with pytest.raises(JobError) as unnamed:
        decode(b'{"args":["' + b"x" * MAX_DOCUMENT_BYTES + b'"],"id":"late"}')
    assert unnamed.value.job_id is None


def test_a_producer_chosen_job_id_is_kept_or_refused_by_name() -> None:
    assert new_job("noop", "q", [], {}, job_id="order-42:v2").id == "order-42:v2"
    for bad in ("", "has space", "x" * 257, "brace{"):
        with pytest.raises(JobError, match="job id"):
            new_job("noop", "q", [], {}, job_id=bad)


def test_oversized_payload_is_rejected_with_a_pointer_to_chunking() -> None:
    job = new_job("import", "default", ["x" * MAX_DOCUMENT_BYTES], {})
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

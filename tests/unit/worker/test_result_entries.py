"""A kept result's entry (pure): what a worker writes for each ending and what a reader makes of it,
any producer's bytes included."""

from __future__ import annotations

import json

from fairway.queue.protocol.results import MAX_RESULT_BYTES, JobStatus, done_entry, failed_entry, read_entry


def test_a_value_round_trips_and_what_cannot_be_kept_says_why() -> None:
    assert read_entry(done_entry({"rows": [1, 2]}, 5)) == read_entry(done_entry({"rows": [1, 2]}, 5))
    entry = read_entry(done_entry({"rows": [1, "é"]}, 5))
    assert (entry.status, entry.value, entry.at_ms, entry.code) == (JobStatus.DONE, {"rows": [1, "é"]}, 5, None)
    large = read_entry(done_entry("x" * MAX_RESULT_BYTES, 5))
    assert large.code == "RESULT_TOO_LARGE" and "524,288-byte limit" in (large.message or "")
    for odd in ({1, 2}, float("nan"), object()):
        assert read_entry(done_entry(odd, 5)).code == "RESULT_NOT_JSON"
    assert len(done_entry("x" * (MAX_RESULT_BYTES - 100), 5).encode()) <= MAX_RESULT_BYTES


def test_a_failure_entry_carries_type_message_and_attempts_not_the_traceback() -> None:
    record = {"exception": "ValueError", "message": "bad", "attempts": 3, "traceback": "...", "failed_at": 9}
    assert "traceback" not in json.loads(failed_entry(record))
    entry = read_entry(failed_entry(record))
    assert (entry.status, entry.exception, entry.message, entry.attempts) == (JobStatus.FAILED, "ValueError", "bad", 3)


def test_any_bytes_read_as_an_entry_or_unknown_never_raise() -> None:
    for raw in (b"", b"\xff", b"[]", b'{"status":"maybe"}', b"null", b'{"status":"failed","attempts":"x"}'):
        assert read_entry(raw).status in (JobStatus.UNKNOWN, JobStatus.FAILED)

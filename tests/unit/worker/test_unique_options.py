"""The unique-job options where the producer can still be told (pure): each bad value refused with
BAD_UNIQUE and the option named; `unique_for` alone derives the documented key; the document carries
both fields and a worker reads them back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fairway.queue.protocol.declared import declare
from fairway.queue.protocol.job import JobError, decode, default_unique_key, new_job

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"unique_key": ""}, "unique_key '' is invalid"),
        ({"unique_key": "é" * 101}, "1-200 bytes"),  # 101 characters, 202 bytes
        ({"unique_key": "tab\there"}, "without control characters"),
        ({"unique_key": 42}, "unique_key 42 is invalid"),
        ({"unique_for": 0.0001}, "from 0.001"),
        ({"unique_for": float("inf")}, "unique_for inf is out of range"),
        ({"unique_for": True}, "unique_for True"),
        ({"unique_for": 400 * 86_400}, "out of range"),
    ],
)
def test_a_bad_unique_option_is_refused_naming_it(options: dict[str, object], words: str) -> None:
    with pytest.raises(JobError) as caught:
        new_job("noop", "default", [], {}, **options)
    assert caught.value.code == "BAD_UNIQUE" and words in str(caught.value)


def test_unique_for_alone_derives_the_documented_key() -> None:
    job = new_job("noop", "default", [1], {"b": 2, "a": "é"}, unique_for=60)
    assert job.unique_key == default_unique_key("noop", [1], {"a": "é", "b": 2})
    protocol = (ROOT / "docs/protocol.md").read_text()
    assert f"key `{job.unique_key}`" in protocol, "docs/protocol.md's vector is the rule's"
    assert re.fullmatch(r"sha1:[0-9a-f]{40}", job.unique_key or "")
    assert (
        new_job("noop", "default", [2], {}, unique_for=60).unique_key
        != new_job("noop", "default", [1], {}, unique_for=60).unique_key
    )
    own = new_job("noop", "default", [1], {}, unique_for=60, unique_key="mine")
    assert own.unique_key == "mine"


def test_the_document_carries_the_fields_and_a_worker_reads_them() -> None:
    job = new_job("noop", "default", [], {}, unique_key="invoice:42", unique_for=30)
    document = json.loads(job.encode())
    assert (document["unique_key"], document["unique_for"]) == ("invoice:42", 30)
    assert decode(job.encode()) == job
    assert "unique_key" not in json.loads(new_job("noop", "default", [], {}).encode()), "written only when set"


def test_a_handler_declares_unique_for_and_a_bad_one_stops_the_import() -> None:
    assert declare("send", unique_for=60).unique_for == 60
    with pytest.raises(ValueError, match=r"@fairway.job for 'send': unique_for 0 is out of range"):
        declare("send", unique_for=0)

"""No document can crash a worker: decoding is total (a Job or JobError, nothing else), bounded in size
and depth, and every number a worker uses is finite and in range. Producers are refused the same
values at enqueue, with the field named."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairway.queue.protocol.job import MAX_DEPTH, MAX_DOCUMENT_BYTES, Job, JobError, decode, new_job

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
FIELDS = ["id", "handler", "queue", "args", "kwargs", "tenant", "attempts", "max_tries", "timeout", "enqueued_at"]


def _decoded_or_refused(payload: bytes) -> Job | None:
    try:
        return decode(payload)
    except JobError:
        return None


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_decode_to_a_job_or_a_job_error(payload: bytes) -> None:
    _decoded_or_refused(payload)


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=len(FIELDS)))
def test_any_object_of_any_field_values_decodes_to_a_usable_job_or_a_job_error(doc: dict[str, object]) -> None:
    base = {"id": "1", "handler": "noop", "queue": "q"}
    payload = json.dumps({**base, **doc}).encode()  # NaN and Infinity included, as some encoders write them
    job = _decoded_or_refused(payload)
    if job is not None:  # whatever passed is safe to use as the worker uses it
        assert job.timeout is None or (math.isfinite(job.timeout) and job.timeout > 0)
        assert job.max_tries is None or job.max_tries >= 1
        assert 0 <= job.ready_since_ms <= 2**53
        json.dumps(job.args, allow_nan=False)  # no NaN reaches a handler or a log line


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 2_000, 100_000])
def test_deep_nesting_is_refused_not_a_recursion_error(depth: int) -> None:
    payload = b'{"id":"deep","handler":"noop","queue":"q","args":[' + b"[" * depth + b"]" * depth + b"]}"
    with pytest.raises(JobError, match="nested deeper") as refused:
        decode(payload)
    assert refused.value.job_id in (None, "deep")


def test_a_readable_id_is_kept_on_a_malformed_document() -> None:
    with pytest.raises(JobError) as refused:
        decode(b'{"id":"job-7","handler":"noop","queue":"q","timeout":-1}')
    assert refused.value.job_id == "job-7"


def test_oversized_documents_are_refused_before_parsing() -> None:
    with pytest.raises(JobError, match="524288-byte limit"):
        decode(b" " * (MAX_DOCUMENT_BYTES + 1))


@pytest.mark.parametrize(
    ("field", "value"),
    [("timeout", -1), ("timeout", 0), ("timeout", 1e300), ("max_tries", 0), ("enqueued_at", -5), ("attempts", 1.5)],
)
def test_out_of_range_numbers_are_malformed(field: str, value: float) -> None:
    with pytest.raises(JobError, match=field):
        decode(json.dumps({"id": "1", "handler": "noop", "queue": "q", field: value}).encode())


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_standard_json_constants_are_malformed(constant: str) -> None:
    with pytest.raises(JobError, match="not JSON"):
        decode(f'{{"id":"1","handler":"noop","queue":"q","timeout":{constant}}}'.encode())


@pytest.mark.parametrize("timeout", [-1, 0, math.nan, math.inf, 1e300, True, "5"])
def test_bad_timeouts_are_refused_at_enqueue(timeout: object) -> None:
    with pytest.raises(JobError, match="timeout"):
        new_job("noop", "q", [], {}, timeout=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("delay", [-1, math.nan, math.inf, -math.inf, 1e300])
def test_bad_delays_are_refused_at_enqueue(delay: float) -> None:
    with pytest.raises(JobError, match="delay"):
        new_job("noop", "q", [], {}, delay_s=delay)


@pytest.mark.parametrize("value", [math.nan, math.inf, {"x": [math.nan]}])
def test_nan_arguments_are_refused_at_enqueue(value: object) -> None:
    with pytest.raises(JobError, match="NaN"):
        new_job("noop", "q", [value], {}).encode()


def test_names_with_a_trailing_newline_are_refused() -> None:
    with pytest.raises(JobError, match="handler"):
        new_job("noop\n", "q", [], {})
    with pytest.raises(JobError, match="tenant id"):
        new_job("noop", "q", [], {}, tenant="acme\n")


def test_queue_names_with_a_trailing_newline_are_refused_everywhere() -> None:
    from pydantic import ValidationError

    from fairway.queue.access.client import check_queue
    from fairway.resource.manifests import validate_spec
    from fairway.resource.worker_settings import WorkerSettings

    with pytest.raises(JobError, match="queue"):
        check_queue("default\n")
    with pytest.raises(ValidationError, match="invalid queue name"):
        WorkerSettings(queues=["default\n"])
    report = validate_spec({"redis": {"url": "redis://r"}, "queues": ["default\n"]}, "shop")
    assert not report.valid and report.errors[0].field == "spec.queues.0"

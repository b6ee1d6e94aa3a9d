"""The conformance vectors in docs/conformance/, run against the Python client (calls.json) and the
complete producer scripts (scripts.json) on a real Redis. The Node client runs the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from fairway.queue.access.client import Client
from fairway.queue.protocol import scripts
from fairway.queue.protocol.job import JobError
from support import conformance

COMPLETE = Path(scripts.__file__).parent / "scripts" / "complete"


def call_python_client(client: Client, call: dict[str, Any] | list[dict[str, Any]]) -> list[str]:
    """A vector's call (or calls, in order: their ids joined) through fairway.Client (the names map one
    to one)."""
    if isinstance(call, list):
        return [job_id for one in call for job_id in call_python_client(client, one)]
    ((op, spec),) = call.items()
    spec = conformance.expand(spec)
    where = {"queue": spec.get("queue"), "tenant": spec.get("tenant")}
    if op == "enqueue":
        options = {
            name: spec.get(name)
            for name in ("delay", "max_tries", "timeout", "unique_key", "unique_for", "traceparent")
        }
        job_id = client.enqueue(
            spec["handler"],
            *spec.get("args", []),
            **where,
            **options,
            job_id=spec.get("job_id"),
            kwargs=spec.get("kwargs"),
        )
        return [job_id]
    if op == "enqueue_many":
        return client.enqueue_many(spec["handler"], spec["calls"], kwargs=spec.get("kwargs"), **where)
    if op == "enqueue_chunked":
        return client.enqueue_chunked(spec["handler"], spec["rows"], chunk_size=spec["chunk_size"], **where)
    raise AssertionError(f"unknown call {op}")


@pytest.mark.parametrize("vector", conformance.load("calls"), ids=lambda v: v["name"])
def test_the_python_client_meets_each_call_vector(redis_url: str, vector: dict[str, Any]) -> None:
    r = redis.Redis.from_url(redis_url)
    client = Client(redis_url)
    clock = conformance.Clock(r)
    expect = vector["expect"]
    if "refused" in expect:
        with pytest.raises(JobError) as refused:
            call_python_client(client, vector["call"])
        assert refused.value.code == expect["refused"], str(refused.value)
    else:
        ids = call_python_client(client, vector["call"])
        assert ids == expect.get("ids", ids)
        assert len(set(ids)) == len(ids) or isinstance(vector["call"], list), "one id per job"
    clock.stop()
    assert conformance.mismatches(expect["redis"], conformance.dump(r), clock) == []


def text_of(reply: Any) -> Any:
    """A script's reply with its bulk strings as text, as the vectors write them."""
    if isinstance(reply, list):
        return [text_of(item) for item in reply]
    return reply.decode() if isinstance(reply, bytes) else reply


@pytest.mark.parametrize("vector", conformance.load("scripts"), ids=lambda v: v["name"])
def test_the_complete_scripts_meet_each_script_vector(redis_url: str, vector: dict[str, Any]) -> None:
    r = redis.Redis.from_url(redis_url)
    script = (COMPLETE / f"{vector['script']}.lua").read_text()
    clock = conformance.Clock(r)
    expect = vector["expect"]
    argv = conformance.expand(vector["argv"])
    if "error" in expect:
        with pytest.raises(redis.ResponseError) as refused:
            r.eval(script, len(vector["keys"]), *vector["keys"], *argv)
        assert str(refused.value).split(" ", 1)[0] == expect["error"], str(refused.value)
    else:
        reply = r.eval(script, len(vector["keys"]), *vector["keys"], *argv)
        assert text_of(reply) == expect["reply"]
    clock.stop()
    assert conformance.mismatches(expect["redis"], conformance.dump(r), clock) == []

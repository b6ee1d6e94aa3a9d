"""Options and handler arguments never share a namespace: whatever a handler's keyword arguments are
called (`queue`, `timeout`, `job_id`, `kwargs`, any text), they reach it through a real worker, and a
keyword that is no option is refused instead of becoming one of them."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairway
from fairway.queue.access.client import ENQUEUE_OPTIONS, Client
from fairway.queue.protocol.job import JobError
from support.cli import fairway as run_fairway
from support.workers import run_in_process

RECEIVED: list[dict[str, Any]] = []


@fairway.job(name="test.echo_kwargs")
def echo_kwargs(*args: Any, **kwargs: Any) -> None:
    RECEIVED.append({"args": list(args), "kwargs": kwargs})


NAMES = st.one_of(
    st.sampled_from([*ENQUEUE_OPTIONS, "args", "handler", "self", "count", "delay_s", "maxTries", "id"]),
    st.text(min_size=1, max_size=12),
)
VALUES = st.one_of(st.integers(-5, 5), st.text(max_size=5), st.booleans(), st.none())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    calls=st.lists(
        st.tuples(st.lists(VALUES, max_size=2), st.dictionaries(NAMES, VALUES, max_size=5)), min_size=1, max_size=4
    ),
    timeout=st.one_of(st.none(), st.integers(1, 60)),
)
def test_any_kwarg_name_reaches_the_handler(
    redis_url: str, calls: list[tuple[list[Any], dict[str, Any]]], timeout: int | None
) -> None:
    redis.Redis.from_url(redis_url).flushall()
    RECEIVED.clear()
    client = Client(redis_url)
    for args, kwargs in calls:
        client.enqueue("test.echo_kwargs", *args, kwargs=kwargs, queue="args", timeout=timeout)
    lines = run_in_process(redis_url, queues=["args"], burst=True)
    assert [line["outcome"] for line in lines] == ["ok"] * len(calls)
    sent = [{"args": args, "kwargs": kwargs} for args, kwargs in calls]
    assert sent == RECEIVED


@pytest.mark.parametrize("option", ["delay_s", "delays", "queues", "max_try", "url", "kwarg"])
def test_a_keyword_that_is_no_option_is_refused_and_nothing_is_written(redis_url: str, option: str) -> None:
    client = Client(redis_url)
    with pytest.raises(JobError) as refused:
        client.enqueue("test.echo_kwargs", 1, **{option: 60})
    assert refused.value.code == "BAD_OPTION"
    assert repr(option) in str(refused.value) and "kwargs=" in str(refused.value)
    with pytest.raises(JobError, match="no option"):
        client.enqueue_many("test.echo_kwargs", [[1]], **{option: 60})
    with pytest.raises(JobError, match="no option"):
        client.enqueue_chunked("test.echo_kwargs", [1, 2], **{option: 60})
    assert redis.Redis.from_url(redis_url).keys("*") == []


def test_delay_s_is_refused_with_the_option_it_meant(redis_url: str) -> None:
    with pytest.raises(JobError, match="did you mean delay="):
        Client(redis_url).enqueue("test.echo_kwargs", delay_s=60)


def _documents(redis_url: str, queue: str = "default") -> list[dict[str, Any]]:
    return [json.loads(d) for d in redis.Redis.from_url(redis_url).lrange(f"fairway:{{{queue}}}:ready", 0, -1)]


def test_cli_args_object_is_all_kwargs_options_are_flags(redis_url: str) -> None:
    payload = '{"url": "http://d", "timeout": 1, "queue": "x", "tenant": "t", "delay": 5, "job_id": "j"}'
    out = run_fairway("enqueue", "fetch", "--redis", redis_url, "--args", payload, "--count", "2")
    assert out.returncode == 0, out.stderr
    docs = _documents(redis_url)
    assert len(docs) == 2 and docs[0]["id"] != docs[1]["id"]
    for doc in docs:
        assert doc["kwargs"] == json.loads(payload)
        assert "timeout" not in doc and "available_at" not in doc and "tenant" not in doc


def test_cli_options_as_flags_and_kwargs_beside_args(redis_url: str) -> None:
    out = run_fairway(
        "enqueue", "fetch", "--redis", redis_url, "--args", "[1]", "--kwargs", '{"timeout": 3}',
        "--timeout", "9", "--max-tries", "2", "--job-id", "mine",
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "mine", out.stderr
    [doc] = _documents(redis_url)
    assert (doc["args"], doc["kwargs"], doc["timeout"], doc["max_tries"]) == ([1], {"timeout": 3}, 9, 2)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--job-id", "one", "--count", "2"], "--job-id names one job"),
        (["--kwargs", "[1]"], "--kwargs must be an object"),
        (["--args", '{"a": 1}', "--kwargs", '{"a": 2}'], "'a' is in both --args and --kwargs"),
    ],
)
def test_cli_refuses_what_would_lose_or_merge_arguments(redis_url: str, flags: list[str], words: str) -> None:
    out = run_fairway("enqueue", "fetch", "--redis", redis_url, *flags)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
    assert redis.Redis.from_url(redis_url).keys("*") == []

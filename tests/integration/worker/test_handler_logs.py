"""Log records written inside a handler carry its job (id, handler, queue, tenant), in JSON and in text
logs, for sync and async handlers at any concurrency: one tenant's or one job's lines can be found."""

from __future__ import annotations

import json

import pytest

from fairway.queue.access.client import Client
from support.workers import start_worker


@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_json_log_lines_from_a_handler_carry_the_job(redis_url: str, concurrency: str) -> None:
    client = Client(redis_url)
    plain = client.enqueue("say", "hello", queue="default")
    tenant = client.enqueue("say_async", "hi", tenant="acme")
    worker = start_worker(
        redis_url, "--queues", "default", "--tenants", "tenant-", "--concurrency", concurrency, "--burst"
    )
    _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    said = {line["message"]: line.get("job") for line in lines if line.get("logger") == "app.handler"}
    assert said["handler says hello"] == {"id": plain, "handler": "say", "queue": "default", "tenant": None}
    assert said["async handler says hi"] == {
        "id": tenant,
        "handler": "say_async",
        "queue": "tenant-acme",
        "tenant": "acme",
    }
    assert all("job" not in line for line in lines if line.get("logger") != "app.handler"), "the worker's own lines"


def test_text_log_lines_from_a_handler_carry_the_job(redis_url: str) -> None:
    job_id = Client(redis_url).enqueue("say", "hello", tenant="acme")
    worker = start_worker(redis_url, "--tenants", "tenant-", "--burst", "--log-format", "text")
    _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err[-2000:]
    (line,) = [line for line in err.splitlines() if "handler says hello" in line]
    assert line.endswith(f"[job={job_id} handler=say queue=tenant-acme tenant=acme]"), line

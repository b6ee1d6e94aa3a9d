"""`fairway failed`: a table with a header, time, handler and tenant; a message when empty; retry or
forget by id, by handler, by tenant or all; a tenant's queue name finds its group's failures."""

from __future__ import annotations

import json

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.cli import fairway


def fail_some(url: str) -> dict[str, str]:
    """Failures: two `fail` jobs on emails, a `record` on emails that fails, one per tenant 0 and 1."""
    client = Client(url)
    ids = {
        "emails-1": client.enqueue("fail", "boom one", queue="emails"),
        "emails-2": client.enqueue("fail", "boom two", queue="emails"),
        "other": client.enqueue("flaky", "k", 1000, queue="emails"),
        "t0": client.enqueue("fail", "tenant zero", tenant="0"),
        "t1": client.enqueue("fail", "tenant one", tenant="1"),
    }
    out = fairway(
        "worker", "--queues", "emails", "--tenants", "tenant-", "--handlers", "support.jobs", "--burst", redis=url
    )
    assert out.returncode == 0, out.stderr
    assert len(Inspector(connect(url)).failures(["emails", "@tenant-"])) == 5
    return ids


def test_failed_list_has_a_header_time_handler_and_tenant_and_says_when_empty(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", queue="emails")
    empty = fairway("failed", "list", "--queue", "emails", redis=redis_url)
    assert empty.returncode == 0 and empty.stdout.strip() == "no failed jobs in emails"
    ids = fail_some(redis_url)
    lines = fairway("failed", "list", redis=redis_url).stdout.splitlines()
    assert lines[0].split() == ["FAILED", "AT", "QUEUE", "ID", "HANDLER", "TENANT", "TRIES", "ERROR"]
    rows = {line.split()[3]: line.split() for line in lines[1:]}
    assert set(rows) == set(ids.values())
    assert rows[ids["t0"]][2:6] == ["@tenant-", ids["t0"], "fail", "0"]
    assert rows[ids["emails-1"]][2:6] == ["emails", ids["emails-1"], "fail", "-"]
    assert rows[ids["other"]][4] == "flaky"
    assert "JobFailed: boom one" in " ".join(rows[ids["emails-1"]])
    assert rows[ids["t0"]][0].startswith("20") and rows[ids["t0"]][1].endswith("Z")


def test_a_tenants_queue_name_finds_its_failures_in_the_group(redis_url: str) -> None:
    ids = fail_some(redis_url)
    out = fairway("failed", "list", "--queue", "tenant-0", "--json", redis=redis_url)
    assert [record["id"] for record in json.loads(out.stdout)] == [ids["t0"]]
    out = fairway("failed", "list", "--queue", "nosuch", redis=redis_url)
    assert out.returncode == 1 and "no queue or tenant group 'nosuch' is known" in out.stderr


def test_retry_and_forget_by_id_handler_tenant_and_all(redis_url: str) -> None:
    ids = fail_some(redis_url)
    out = fairway("failed", "retry", "--queue", "emails", redis=redis_url)
    assert out.returncode == 2 and "pass --all" in out.stderr
    out = fairway("failed", "retry", "--queue", "emails", ids["emails-1"], redis=redis_url)
    assert out.stdout.strip() == f"retried {ids['emails-1']} (fail) onto emails"
    out = fairway("failed", "forget", "--handler", "flaky", redis=redis_url)
    assert out.stdout.strip() == "forgot 1 failed job of @tenant-, emails with handler flaky"
    out = fairway("failed", "retry", "--tenant", "1", redis=redis_url)
    assert out.stdout.strip() == "retried 1 failed job of @tenant-, emails with tenant 1"
    out = fairway("failed", "forget", "nope", ids["t0"], redis=redis_url)
    assert out.returncode == 1 and out.stdout.strip() == f"forgot {ids['t0']} (fail) from @tenant-"
    assert "nope: no failed job with this id" in out.stderr
    left = Inspector(connect(redis_url)).failures(["emails", "@tenant-"])
    assert [f.id for f in left] == [ids["emails-2"]]
    out = fairway("failed", "retry", "--all", redis=redis_url)
    assert out.stdout.strip() == "retried 1 failed job of @tenant-, emails"
    rows = {r["queue"]: r for r in json.loads(fairway("queues", "--json", redis=redis_url).stdout)}
    assert (rows["emails"]["ready"], rows["emails"]["failed"]) == (2, 0)
    assert (rows["@tenant-"]["ready"], rows["@tenant-"]["failed"]) == (1, 0)

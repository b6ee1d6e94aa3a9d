"""`fairway pause` / `continue` do what they say or refuse with a reason: a queue, a whole tenant group,
a single tenant; names checked; an unknown queue refused unless forced (no phantom queues)."""

from __future__ import annotations

import json
from collections import Counter

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.cli import fairway
from support.workers import job_lines


def burst(url: str) -> Counter[str]:
    """What one burst worker serving `emails` and the tenant group runs: jobs per tenant (or queue)."""
    out = fairway("worker", "--queues", "emails", "--tenants", "tenant-", "--burst", "--log-format", "json", redis=url)
    assert out.returncode == 0, out.stderr
    return Counter(line.get("tenant") or line["queue"] for line in job_lines(out.stdout))


def test_pausing_one_tenant_holds_its_jobs_while_the_others_run_and_continue_brings_them_back(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 4, tenant="0")
    client.enqueue_many("noop", [[]] * 3, tenant="1")
    out = fairway("pause", "--tenant", "0", redis=redis_url)
    assert out.returncode == 0 and out.stdout.strip().startswith("tenant 0 of @tenant-: paused")
    client.enqueue_many("noop", [[]] * 2, tenant="0")  # enqueued while paused: held too
    assert burst(redis_url) == {"1": 3}
    tenants = {row["tenant"]: row for row in json.loads(fairway("tenants", "--json", redis=redis_url).stdout)}
    assert tenants["0"]["paused"] is True and tenants["0"]["waiting"] == 6
    assert "paused" in fairway("tenants", redis=redis_url).stdout
    out = fairway("continue", "--tenant", "0", redis=redis_url)
    assert out.stdout.strip() == "tenant 0 of @tenant-: serving again (6 jobs ready)"
    assert burst(redis_url) == {"0": 6}
    assert (
        fairway("continue", "--tenant", "0", redis=redis_url).stdout.strip() == "tenant 0 of @tenant-: was not paused"
    )


def test_pausing_the_tenant_group_holds_every_tenant(redis_url: str) -> None:
    client = Client(redis_url)
    client.enqueue_many("noop", [[]] * 2, tenant="a")
    client.enqueue_many("noop", [[]] * 2, queue="emails")
    out = fairway("pause", "@tenant-", redis=redis_url)
    assert out.stdout.strip() == "@tenant-: paused (2 jobs wait; workers finish the jobs they hold)"
    assert burst(redis_url) == {"emails": 2}
    rows = {r["queue"]: r for r in json.loads(fairway("queues", "--json", redis=redis_url).stdout)}
    assert rows["@tenant-"]["paused"] is True and rows["@tenant-"]["ready"] == 2
    fairway("continue", "@tenant-", redis=redis_url)
    assert burst(redis_url) == {"a": 2}


def test_bad_and_unknown_names_are_refused_and_leave_nothing_behind(redis_url: str) -> None:
    Client(redis_url).enqueue("noop", tenant="0")
    Client(redis_url).enqueue("noop", queue="emails")
    for args, says in [
        (["bad name{"], "'bad name{' is not a queue name"),
        (["@bad{"], "is not a tenant group"),
        (["--tenant", "a:b"], "tenant id 'a:b' is invalid"),
        (["nosuchqueue"], "no queue or tenant group 'nosuchqueue' has had jobs or workers (known: @tenant-, emails)"),
        (["tenant-0"], "tenant-0 is tenant 0 of @tenant-: use --tenant 0"),
    ]:
        out = fairway("pause", *args, redis=redis_url)
        assert out.returncode == 1 and says in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    assert Inspector(connect(redis_url)).known_queues() == ["@tenant-", "emails"]
    r = connect(redis_url)
    assert not [k for k in r.keys("*") if b"paused" in k], "nothing was paused"
    out = fairway("pause", "--force", "later", redis=redis_url)
    assert out.returncode == 0 and out.stdout.strip().startswith("later: paused")
    assert "later" in Inspector(connect(redis_url)).known_queues()


def test_admin_refuses_a_tenant_id_that_could_not_be_one_whoever_calls_it(redis_url: str) -> None:
    """The check is in Admin, so the dashboard's pause button gets it as the CLI does."""
    import pytest

    from fairway.queue.access.admin import Admin
    from fairway.queue.protocol.job import JobError

    admin = Admin(connect(redis_url))
    for bad in ("a:b", "x{y}", "has space"):
        with pytest.raises(JobError, match="is invalid"):
            admin.pause_tenant("tenant-", bad)
        with pytest.raises(JobError, match="is invalid"):
            admin.continue_tenant("tenant-", bad)
    assert connect(redis_url).keys("*") == []

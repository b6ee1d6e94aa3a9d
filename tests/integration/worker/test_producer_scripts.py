"""The scripts other languages call are complete files: committed, equal to what the loader builds,
and runnable with a bare EVAL (no Python splicing), with their jobs run by a real worker."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from fairway.queue.protocol import scripts
from support.workers import run_in_process

COMPLETE = Path(scripts.__file__).parent / "scripts" / "complete"


@pytest.mark.parametrize("name", scripts.PRODUCER_SCRIPTS)
def test_the_committed_complete_script_is_what_the_loader_builds(name: str) -> None:
    committed = (COMPLETE / f"{name}.lua").read_text()
    assert committed == scripts.complete_source(name), f"regenerate it: fairway scripts --out {COMPLETE}"


def test_a_bare_eval_of_the_complete_scripts_enqueues_jobs_a_worker_runs(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    enqueue = r.register_script((COMPLETE / "enqueue.lua").read_text())
    enqueue_tenant = r.register_script((COMPLETE / "enqueue_tenant.lua").read_text())
    plain = b'{"id":"p1","handler":"noop","queue":"emails","args":[],"enqueued_at":1}'
    tenant = b'{"id":"t1","handler":"noop","queue":"tenant-7","tenant":"7","args":[],"enqueued_at":1}'
    q = "fairway:{emails}:"
    keys = [q + "ready", q + "notify", q + "delayed", "fairway:active", "fairway:queues"]
    assert enqueue(keys=keys, args=[plain, 0, "emails"]) == 1
    g = "fairway:{tenants:tenant-}:"
    assert enqueue_tenant(keys=[g + "ring", "fairway:active"], args=[g, "7", 0, "@tenant-", tenant]) == 1
    assert Inspector(connect(redis_url)).known_queues() == ["emails"], "registered in the same step"
    lines = run_in_process(redis_url, queues=["emails"], tenants={}, burst=True)
    assert sorted((line["id"], line["outcome"]) for line in lines) == [("p1", "ok"), ("t1", "ok")]

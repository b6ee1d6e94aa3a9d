"""A rolling deploy: jobs for a handler only the new pods know, taken by an old pod, are handed back
(no try spent, no tenant failure counted) until a worker that knows the handler runs them; past the
grace they fail as UnknownHandler. Real worker processes, on a standalone Redis and a 3-node cluster."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.workers import job_lines, start_worker, wait_until, worker_env

NEW_HANDLERS = """
import fairway


@fairway.job
def fresh(n):
    return n
"""


def new_release(tmp_path: Path, url: str) -> dict[str, str]:
    """The environment of a pod of the new release: a module registering `fresh` importable too."""
    (tmp_path / "newjobs.py").write_text(NEW_HANDLERS)
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), worker_env(url)["PYTHONPATH"]])}


@pytest.mark.parametrize("redis_kind", ["standalone", "cluster"])
def test_an_old_worker_hands_new_jobs_back_and_a_new_one_runs_each_once(
    redis_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url: str = request.getfixturevalue("redis_url" if redis_kind == "standalone" else "cluster_url")
    cluster = ["--cluster"] if redis_kind == "cluster" else []
    client = Client(url)
    plain = client.enqueue_many("fresh", [[n] for n in range(20)], queue="default")
    tenant = client.enqueue_many("fresh", [[n] for n in range(5)], tenant="acme")

    old = start_worker(url, "--queues", "default", "--tenants", "tenant-", "--concurrency", "4", *cluster)
    try:
        time.sleep(4)  # long enough to take every job once (each goes back for 5 s)
    finally:
        old.send_signal(signal.SIGTERM)
        out, err = old.communicate(timeout=30)
    handed = job_lines(out)
    assert {line["outcome"] for line in handed} == {"handed_back"}, err[-2000:]
    assert {line["id"] for line in handed} == set(plain + tenant)
    inspector = Inspector(connect(url))
    assert inspector.failed_records("default") == [] and inspector.failed_records("@tenant-") == []
    assert not client.tenant("acme").quarantined, "a hand-back is not the tenant's failure"

    new = start_worker(url, "--queues", "default", "--tenants", "tenant-", "--handlers", "newjobs", "--burst",
                       *cluster, env=new_release(tmp_path, url))  # fmt: skip
    out, err = new.communicate(timeout=60)
    assert new.returncode == 0, err[-2000:]
    ran = job_lines(out)
    assert sorted(line["id"] for line in ran) == sorted(plain + tenant), "each job ran once"
    assert {(line["outcome"], line["attempt"]) for line in ran} == {("ok", 1)}, "no try was spent"


def test_past_its_grace_a_job_no_worker_knows_fails_as_unknown_handler(redis_url: str) -> None:
    job_id = Client(redis_url).enqueue("never_deployed", tenant="acme")
    worker = start_worker(redis_url, "--tenants", "tenant-", "--unknown-handler-grace", "1")
    try:
        inspector = Inspector(connect(redis_url))
        records = wait_until(lambda: inspector.failed_records("@tenant-"), 20)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=30)
    (record,) = records
    assert record["id"] == job_id and record["exception"] == "UnknownHandler", record
    assert record["attempts"] == 1, "hand-backs spent no try"
    outcomes = [line["outcome"] for line in job_lines(out)]
    assert outcomes[0] == "handed_back" and len(outcomes) >= 2, outcomes  # handed back, then failed on return


@pytest.mark.parametrize("flags", [["--unknown-handler-grace", "0"], ["--burst"]], ids=["no grace", "burst"])
def test_with_no_grace_or_in_a_burst_run_an_unknown_handler_fails_at_once(redis_url: str, flags: list[str]) -> None:
    Client(redis_url).enqueue("never_deployed", queue="default")
    worker = start_worker(redis_url, "--queues", "default", *flags)
    try:
        records = wait_until(lambda: Inspector(connect(redis_url)).failed_records("default"), 15)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    assert records and records[0]["exception"] == "UnknownHandler", err[-2000:]
    (line,) = job_lines(out)
    assert line["outcome"] == "failed" and line["error"].startswith("UnknownHandler"), line

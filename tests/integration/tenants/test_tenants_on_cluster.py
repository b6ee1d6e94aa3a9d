"""The tenant group on a real Redis Cluster: one slot per group, round-robin, retries, figures, no CROSSSLOT."""

from __future__ import annotations

import itertools

import pytest

from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect
from support.workers import job_lines, run_in_process, start_worker

pytestmark = pytest.mark.cluster


def test_round_robin_retries_and_figures_on_a_cluster(cluster_url: str) -> None:
    client = Client(cluster_url)
    for tenant in ("a", "b", "c"):
        client.enqueue_many("noop", [[]] * 9, tenant=tenant)
    client.enqueue("fail", "boom", tenant="c")
    client.enqueue_many("noop", [[]] * 5, queue="default")
    lines = run_in_process(
        cluster_url,
        queues=["default"],
        tenants={"max_consecutive_jobs": 3},
        burst=True,
        tries=2,
        maintenance_interval_s=0.05,
    )
    tenants = [line["tenant"] for line in lines if line["tenant"]]
    assert [t for t, _ in itertools.groupby(tenants)][:6] == ["a", "b", "c", "a", "b", "c"]
    assert sorted(line["outcome"] for line in lines if line["handler"] == "fail") == ["failed", "retry"]
    figures = {f.tenant: f for f in Inspector(connect(cluster_url)).tenant_figures("tenant-")}
    assert figures["a"].completed == 9 and figures["c"].failed == 2
    assert Inspector(connect(cluster_url)).failed_records("@tenant-")[0]["message"] == "boom"


def test_a_worker_process_serves_tenants_on_a_cluster_without_crossslot(cluster_url: str) -> None:
    client = Client(cluster_url)
    for tenant in ("x", "y"):
        client.enqueue_many("noop", [[]] * 4, tenant=tenant)
    worker = start_worker(cluster_url, "--tenants", "tenant-", "--queues", "default", "--burst")
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "CROSSSLOT" not in err and "non local key" not in err
    assert sorted(line["queue"] for line in job_lines(out)) == ["tenant-x"] * 4 + ["tenant-y"] * 4

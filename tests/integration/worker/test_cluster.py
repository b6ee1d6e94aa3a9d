"""Every worker path on a real 3-master Redis Cluster: no CROSSSLOT anywhere, same behaviour."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from fairway.queue.access.admin import Admin
from fairway.queue.access.client import Client
from fairway.queue.access.inspector import Inspector
from fairway.queue.connection import connect, is_cluster
from fairway.queue.protocol.keys import QueueKeys
from support.workers import job_lines, run_in_process, start_worker, wait_until

pytestmark = pytest.mark.cluster


def test_queues_live_on_different_shards(cluster_url: str) -> None:
    client = connect(cluster_url)
    slots = {client.keyslot(QueueKeys("fairway", q).ready) for q in ("high", "default", "low")}
    nodes = {client.get_node_from_key(QueueKeys("fairway", q).ready).port for q in ("high", "default", "low")}
    assert len(slots) == 3 and len(nodes) >= 2, "the test would not catch a cross-slot script"


def test_weighted_draining_on_a_cluster(cluster_url: str) -> None:
    client = Client(cluster_url)
    for queue in ("high", "default", "low"):
        client.enqueue_many("noop", [[]] * 1500, queue=queue)
    lines = run_in_process(
        cluster_url, queues=["high", "default", "low"], weights={"high": 3, "default": 2}, max_jobs=1500
    )
    shares = Counter(line["queue"] for line in lines)
    assert abs(shares["high"] / 1500 - 0.5) < 0.05, shares
    assert abs(shares["low"] / 1500 - 1 / 6) < 0.05, shares


def test_strict_order_pause_and_delayed_retries_on_a_cluster(cluster_url: str) -> None:
    client = Client(cluster_url)
    store, admin = Inspector(connect(cluster_url)), Admin(connect(cluster_url))
    client.enqueue_many("noop", [[]] * 3, queue="low")
    client.enqueue_many("noop", [[]] * 3, queue="high")
    client.enqueue("fail", "boom", queue="default")
    client.enqueue("noop", queue="default", delay=0.3)
    admin.pause("high")
    lines = run_in_process(
        cluster_url, queues=["high", "default", "low"], burst=True, tries=2, backoff_s=[0], maintenance_interval_s=0.1
    )
    served = [(line["queue"], line["outcome"]) for line in lines]
    assert ("high", "ok") not in served
    assert served[:2] == [("default", "retry"), ("default", "failed")]
    assert served.count(("low", "ok")) == 3 and served.count(("default", "ok")) == 1
    (record,) = store.failed_records("default")
    assert record["message"] == "boom"
    admin.resume("high")
    assert [line["queue"] for line in run_in_process(cluster_url, queues=["high", "low"], burst=True)] == ["high"] * 3
    assert store.stats(["high", "default", "low"])[0].ready == 0


def test_kill_9_on_a_cluster_leaves_the_job_reserved_then_it_runs_again(cluster_url: str, tmp_path) -> None:
    config = tmp_path / "w.yaml"
    config.write_text("retry_after_s: 2.5\ntimeout_s: 1\nkill_grace_s: 0.2\ntries: 3\nmaintenance_interval_s: 0.2\n")
    Client(cluster_url).enqueue("sleep", 30, queue="default")
    first = start_worker(cluster_url, "--queues", "default", "--cluster", "--config", str(config))
    store = Inspector(connect(cluster_url))
    assert wait_until(lambda: store.stats(["default"])[0].reserved == 1, 15)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)
    second = start_worker(cluster_url, "--queues", "default", "--cluster", "--config", str(config))
    try:
        assert wait_until(lambda: store.failed_records("default"), 20)
    finally:
        second.terminate()
        out, err = second.communicate(timeout=10)
    assert "CROSSSLOT" not in err
    attempts = [line["attempt"] for line in job_lines(out)]
    assert attempts == [1, 2, 3], "handed out again; the attempt its killed worker started was given back"


def test_cluster_is_detected_without_the_flag(cluster_url: str) -> None:
    assert is_cluster(connect(cluster_url))
